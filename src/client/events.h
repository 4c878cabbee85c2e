// Kubernetes Events (core/v1), recorded the way client-go's record.EventRecorder does.
//
// Each Record() names the object concerned, a type (Normal / Warning), a CamelCase reason and a
// message. Repeats of the same (object, type, reason, message) are correlated into one Event
// whose `count` and `lastTimestamp` are patched, as client-go's EventCorrelator does, so a Pod
// that fails to schedule a hundred times shows one FailedScheduling Event with count 100. The
// correlation cache is bounded (least recently used entries are dropped).
//
// Writes go through a queue and a worker thread so callers (the scheduler loop) never wait on
// the API; with `synchronous` the event is written before Record() returns (tests, simulator).
// Messages longer than 1024 bytes are cut at a UTF-8 boundary (the API server's limit for
// event notes).
//
// Thread-safety: Record, Flush and Stop are safe from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <string>
#include <string_view>
#include <thread>

#include "api/gen/core_v1_types.h"
#include "client/api_client.h"
#include "client/resource.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace draplane::client {

struct EventRecorderOptions {
  std::string component{};  // source.component / reportingComponent, e.g. "default-scheduler"
  std::string host{};       // source.host / reportingInstance
  bool synchronous = false;
  size_t cache_size = 4096;
  size_t queue_limit = 10'000;  // further events are dropped (and counted)
};

// A reference to `object` for `involvedObject`.
template <typename T>
api::corev1::ObjectReference ReferenceTo(const T& object) {
  api::corev1::ObjectReference ref;
  ref.kind = std::string(ResourceOf<T>().kind);
  ref.api_version = ResourceOf<T>().ApiVersion();
  ref.namespace_ = object.metadata.namespace_;
  ref.name = object.metadata.name;
  ref.uid = object.metadata.uid;
  ref.resource_version = object.metadata.resource_version;
  return ref;
}

class EventRecorder {
 public:
  EventRecorder(ApiClient& api, const Clock& clock, EventRecorderOptions options);
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Records an event (type "Normal" or "Warning").
  void Record(const api::corev1::ObjectReference& object, std::string_view type,
              std::string_view reason, std::string message);
  // Blocks until every queued event has been written.
  void Flush();
  // Writes what is queued, then stops the worker. Later Record() calls are dropped.
  void Stop();
  // Events dropped because the queue was full or the recorder stopped.
  int64_t dropped() const;

 private:
  struct Pending {
    api::corev1::ObjectReference object;
    std::string type;
    std::string reason;
    std::string message;
  };
  struct Correlated {
    std::string namespace_;
    std::string name;
    int32_t count = 0;
    std::string first_timestamp;
    std::list<std::string>::iterator lru;
  };

  void Run();
  void Write(const Pending& event) DRAPLANE_REQUIRES(write_mu_);

  ApiClient& api_;
  const Clock& clock_;
  const EventRecorderOptions options_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Pending> queue_ DRAPLANE_GUARDED_BY(mu_);
  bool busy_ DRAPLANE_GUARDED_BY(mu_) = false;
  bool stopping_ DRAPLANE_GUARDED_BY(mu_) = false;
  int64_t dropped_ DRAPLANE_GUARDED_BY(mu_) = 0;
  // Correlation state; used only by the writing thread (worker or caller when synchronous, which
  // then holds write_mu_).
  Mutex write_mu_;
  std::map<std::string, Correlated> correlated_ DRAPLANE_GUARDED_BY(write_mu_);
  std::list<std::string> lru_ DRAPLANE_GUARDED_BY(write_mu_);
  uint64_t sequence_ DRAPLANE_GUARDED_BY(write_mu_) = 0;  // makes event names unique
  std::thread worker_;
};

}  // namespace draplane::client
