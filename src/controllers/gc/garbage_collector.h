// Owner-reference garbage collection (upstream pkg/controller/garbagecollector, reduced): an
// object whose every ownerReference names an owner that no longer exists (or exists with another
// uid) is deleted, in the background, with a uid precondition.
//
// Covered dependents: Pods, ResourceClaims, ResourceSlices. Covered owners: Pods and Nodes (the
// kinds draplane's components create owner references to: generated claims are owned by pods,
// slices by nodes). A dependent with an owner of any other kind is left alone, because its
// absence cannot be verified here. An owner missing from the cache is confirmed with a GET
// before anything is deleted. Foreground deletion and orphaning are not implemented
// (docs/design/scheduler.md, "Controllers").
//
// Thread-safety: Start/Stop from the owner; syncs run on the worker threads.
#pragma once

#include <optional>
#include <string>

#include "client/api_client.h"
#include "client/shared_informers.h"
#include "client/workqueue.h"
#include "common/clock.h"
#include "controllers/internal/queue_workers.h"

namespace draplane::controllers {

struct GarbageCollectorOptions {
  // Worker threads; none with 0 (the simulator): the owner calls ProcessReady.
  int workers = 2;
  client::RateLimiterOptions rate_limits{};
};

class GarbageCollector {
 public:
  GarbageCollector(client::ApiClient& api, client::SharedInformers& informers, const Clock& clock,
                   GarbageCollectorOptions options = {});
  ~GarbageCollector();

  void Start();
  void Stop();
  // Without workers (the simulator): syncs every queued key that is ready, on the calling thread;
  // returns the number of syncs.
  int ProcessReady() { return workers_.ProcessReady(); }
  // When the next rate-limited retry becomes ready (monotonic), nullopt when none waits.
  std::optional<Duration> NextRetry() const { return queue_.NextDeadline(); }
  // Syncs one key ("<resource>:<ns>/<name>", resource one of pods, resourceclaims,
  // resourceslices) on the calling thread.
  Status Sync(const std::string& key);

 private:
  // True/false when the owner is known to exist / not exist; NotFound-free errors propagate.
  StatusOr<bool> OwnerExists(const std::string& ns, const api::metav1::OwnerReference& owner);
  template <typename T>
  void Watch(client::Informer<T>& informer, const std::string& resource);
  template <typename T>
  Status Collect(client::Informer<T>& informer, const std::string& ns, const std::string& name);

  client::ApiClient& api_;
  const GarbageCollectorOptions options_;
  client::Informer<api::corev1::Pod>& pods_;
  client::Informer<api::corev1::Node>& nodes_;
  client::Informer<api::resourcev1::ResourceClaim>& claims_;
  client::Informer<api::resourcev1::ResourceSlice>& slices_;
  client::WorkQueue queue_;
  internal::QueueWorkers workers_;
};

}  // namespace draplane::controllers
