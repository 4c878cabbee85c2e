// Kubernetes Events (core/v1), recorded the way client-go records them, in one of two modes.
//
// Each Record() names the object concerned, a type (Normal / Warning), a CamelCase reason, an
// action and a message.
//
// Legacy (client-go tools/record, the default; kubelet-style components): repeats of the same
// (object, type, reason, message) are correlated into one Event whose `count` and
// `lastTimestamp` are patched on every repeat, as client-go's EventCorrelator does, so a Pod that
// fails to schedule a hundred times shows one Event with count 100 after a hundred writes.
// Similar events (same object, type and reason, other messages, such as a retried claim creation
// naming a new generated name each time) are aggregated as client-go's EventAggregator does:
// from the tenth distinct message within ten minutes they go to one Event, "(combined from
// similar events): " and the latest message, whose count grows. The caches are bounded (least
// recently used entries are dropped).
//
// Series (`series`; client-go tools/events, the events.k8s.io broadcaster kube-scheduler uses):
// events are isomorphic when type, action, reason and the whole object reference (its
// resourceVersion included, the message not) agree. The first is created (`eventTime`,
// `reportingComponent`/`reportingInstance`, `action`; no `count`, timestamps or `source`, as the
// API server stores an events.k8s.io Event); the second starts a `series` and patches it (count
// 2); later ones only count in memory. Tick(), driven by the injected clock, writes every open
// series' count every 30 minutes (upstream's refreshExistingEventSeries) and, every 6 minutes,
// writes and forgets a series quiet for 6 minutes and forgets a singleton older than that
// (finishSeries). An event gone from the API (expired) is created again with its series.
//
// Writes go through a queue and a worker thread so callers (the scheduler loop) never wait on
// the API; with `synchronous` the event is written before Record() returns (tests, simulator).
// Messages longer than 1024 bytes are cut at a UTF-8 boundary (the API server's limit for
// event notes).
//
// Thread-safety: Record, Flush and Stop are safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "api/gen/core_v1_types.h"
#include "client/api_client.h"
#include "client/resource.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace draplane::client {

// What an aggregate event's message starts with (client-go's EventAggregator).
inline constexpr std::string_view kCombinedEventPrefix = "(combined from similar events): ";

struct EventRecorderOptions {
  std::string component{};  // source.component / reportingComponent, e.g. "default-scheduler"
  std::string host{};       // source.host / reportingInstance
  bool synchronous = false;
  bool series = false;  // events.k8s.io series semantics (see above) instead of the legacy ones
  size_t cache_size = 4096;     // legacy mode's correlation cache
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

  // Records an event (type "Normal" or "Warning"; `action`: what was being done, e.g.
  // "Scheduling", part of a series' identity).
  void Record(const api::corev1::ObjectReference& object, std::string_view type,
              std::string_view reason, std::string message, std::string_view action = {});
  // Series mode: runs the periodic series writes that are due on the clock (the worker writes
  // them unless synchronous). Cheap when nothing is due; callers tick it from their loop.
  void Tick();
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
    std::string action;
    bool tick = false;  // not an event: run the series timers
  };
  struct Correlated {
    std::string namespace_;
    std::string name;
    int32_t count = 0;
    std::string first_timestamp;
    std::list<std::string>::iterator lru;
  };

  // Series mode: an event as created, and its series (count 0: a singleton so far).
  struct Isomorphic {
    api::corev1::Event event;
    int32_t count = 0;
    Timestamp last_observed;
  };

  void Run();
  // A new Event about the object, named as client-go names them (name.hex-time), unwritten.
  api::corev1::Event NewEvent(const Pending& event, Timestamp now) DRAPLANE_REQUIRES(write_mu_);
  void Write(const Pending& event) DRAPLANE_REQUIRES(write_mu_);
  void WriteSeriesEvent(const Pending& event) DRAPLANE_REQUIRES(write_mu_);
  // Patches the series (creates the event with it when gone); false when worth retrying (the
  // API could not be reached).
  bool WriteSeries(const Isomorphic& entry) DRAPLANE_REQUIRES(write_mu_);
  void RunTimers() DRAPLANE_REQUIRES(write_mu_);

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
  // Legacy aggregation: per (object, type, reason), the distinct messages seen since the last
  // quiet spell of ten minutes, and when the last came.
  struct Similar {
    std::set<std::string> messages;
    Timestamp last;
  };
  std::map<std::string, Similar> similar_ DRAPLANE_GUARDED_BY(write_mu_);
  uint64_t sequence_ DRAPLANE_GUARDED_BY(write_mu_) = 0;  // makes event names unique
  std::map<std::string, Isomorphic> isomorphic_ DRAPLANE_GUARDED_BY(write_mu_);
  // Monotonic deadlines of the series timers; the earlier one is also published in next_due_ so
  // Tick() can tell without the write lock that nothing is due.
  Duration next_refresh_ DRAPLANE_GUARDED_BY(write_mu_);
  Duration next_finish_ DRAPLANE_GUARDED_BY(write_mu_);
  std::atomic<int64_t> next_due_{0};
  bool tick_queued_ DRAPLANE_GUARDED_BY(mu_) = false;
  std::thread worker_;
};

}  // namespace draplane::client
