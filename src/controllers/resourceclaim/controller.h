// The resourceclaim controller (upstream pkg/controller/resourceclaim/controller.go, with the
// KEP-4381 structured-parameters lifecycle): the claims of a Pod's life.
//
// Pods (key "pod:<ns>/<name>"):
//   1. For each spec.resourceClaims entry naming a template and not yet recorded in
//      status.resourceClaimStatuses: reuse a claim the pod already owns with the annotation
//      `resource.kubernetes.io/pod-claim-name: <entry>` (a status write that failed earlier),
//      else create one from the template: generateName `<pod>-<entry>-` (both parts cut
//      proportionally when longer than 57 characters, as upstream), the pod as controlling owner
//      with blockOwnerDeletion, the annotation, the template's labels and annotations, its spec.
//      A claim that cannot be made (its template missing, the create refused: a ResourceQuota's
//      "exceeded quota") is retried with the queue's backoff, and recorded as upstream does: a
//      Warning Event `FailedResourceClaimCreation` on the Pod, "PodResourceClaim <entry>:
//      <error>".
//   2. Record the new names in pod.status.resourceClaimStatuses.
//   3. A pod bound to a node without the scheduler (spec.nodeName at creation) gets its
//      allocated claims reserved.
// Claims (key "claim:<ns>/<name>"):
//   4. Drop reservedFor entries of pods that are gone, replaced (uid differs) or done (terminal
//      phase, or deleted while unscheduled). A pod missing from the cache is looked up in the
//      API before its entry is dropped, unless its deletion was observed.
//   5. When no reservation is left and the claim carries the scheduler's finalizer
//      `resource.kubernetes.io/delete-protection`: clear the allocation (and device status), then
//      remove the finalizer. A claim being deleted loses the finalizer once unreserved.
//   6. An unreserved claim generated for a pod (controlling owner Pod) whose pod is done or was
//      replaced is deleted.
//
// Thread-safety: Start/Stop from the owner; syncs run on the worker threads.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <unordered_set>

#include "client/api_client.h"
#include "client/events.h"
#include "client/shared_informers.h"
#include "client/workqueue.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "controllers/internal/queue_workers.h"

namespace draplane::controllers {

// The annotation tying a generated claim to its pod claim entry.
inline constexpr std::string_view kPodClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name";

// The names of the claims a pod uses that exist by name: its `resourceClaimName` entries, the
// generated claims recorded in its status, and its extended-resource claim.
std::vector<std::string> PodClaimNames(const api::corev1::Pod& pod);

struct ResourceClaimControllerOptions {
  int workers = 50;
  std::string field_manager = "draplane-resourceclaim-controller";
  client::RateLimiterOptions rate_limits{};
};

class ResourceClaimController {
 public:
  // Registers its informers and handlers with `informers` (before informers.Start()).
  ResourceClaimController(client::ApiClient& api, client::SharedInformers& informers,
                          const Clock& clock, ResourceClaimControllerOptions options = {});
  ~ResourceClaimController();

  // Starts `options.workers` worker threads (none when 0: the owner calls ProcessReady).
  void Start();
  void Stop();

  // Without workers (the simulator): syncs every queued key that is ready, on the calling thread;
  // returns the number of syncs.
  int ProcessReady() { return workers_.ProcessReady(); }
  // When the next rate-limited retry becomes ready (monotonic), nullopt when none waits.
  std::optional<Duration> NextRetry() const { return queue_.NextDeadline(); }

  // One sync of a queue key ("pod:ns/name" or "claim:ns/name"), on the calling thread.
  Status Sync(const std::string& key);

  // upstream generateName for a claim of `pod_name` from pod claim entry `claim_name`.
  static std::string GenerateName(std::string_view pod_name, std::string_view claim_name);

  // Whether an event for the object queues a sync, judged from the informer caches: a sync that
  // would write nothing is never queued (most events are the controller's own writes, the
  // scheduler's reservation and the binding). Upstream filters pods the same way (podNeedsWork);
  // it queues every claim event.
  //
  // A pod needs work when a template entry has no claim recorded in its status yet, or when it
  // is placed on a node and one of its claims is allocated but not reserved for it.
  bool PodNeedsWork(const api::corev1::Pod& pod) const;
  // A claim needs work when a reservation is stale or not judged from the cache (the pod is not
  // cached yet), when nobody valid uses it and it is allocated or deleted with the finalizer, or
  // when it was generated for a pod that will not run.
  bool ClaimNeedsWork(const api::resourcev1::ResourceClaim& claim);

 private:
  // How a claim's reservation for a consumer looks from the caches.
  enum class Reservation { kValid, kStale, kUnknown };
  Reservation JudgeReservation(const std::string& ns,
                               const api::resourcev1::ResourceClaimConsumerReference& ref);
  // Whether the pod that owns a generated claim (if any) is cached and will not run.
  bool OwnerWillNotRun(const api::resourcev1::ResourceClaim& claim) const;
  Status SyncPod(const std::string& ns, const std::string& name);
  Status SyncClaim(const std::string& ns, const std::string& name);
  void EnqueuePod(const api::corev1::Pod& pod);
  void EnqueueClaim(const api::resourcev1::ResourceClaim& claim);
  void EnqueuePodClaims(const api::corev1::Pod& pod);
  void RememberDeleted(const std::string& uid);
  // Records the failure to make the claim of `pod`'s entry `entry` (step 1) and returns it.
  Status ClaimCreationFailed(const api::corev1::Pod& pod, const std::string& entry, Status error);
  bool WasDeleted(const std::string& uid);

  client::ApiClient& api_;
  const ResourceClaimControllerOptions options_;
  client::Informer<api::corev1::Pod>& pods_;
  client::Informer<api::resourcev1::ResourceClaim>& claims_;
  client::Informer<api::resourcev1::ResourceClaimTemplate>& templates_;
  // Synchronous without workers (the simulator writes nothing from a thread of its own).
  client::EventRecorder events_;
  client::WorkQueue queue_;
  internal::QueueWorkers workers_;
  Mutex mu_;
  // Recently deleted pod uids (bounded); only looked up.
  std::unordered_set<std::string> deleted_ DRAPLANE_GUARDED_BY(mu_);
  std::deque<std::string> deleted_order_ DRAPLANE_GUARDED_BY(mu_);
};

}  // namespace draplane::controllers
