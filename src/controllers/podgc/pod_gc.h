// The Pod garbage collector (upstream pkg/controller/podgc): Pods that nothing else will ever
// remove are marked Failed and force-deleted (grace period 0), every `check_period`:
//
//   orphaned      a Pod bound to a node that no longer exists (the node missing from the cache
//                 for `quarantine`, then confirmed gone with a GET) gets DisruptionTarget=True
//                 (DeletionByPodGC, "PodGC: node no longer exists"). Without this a node
//                 removed from the cluster (scaled down, replaced) left its Pods Running for
//                 ever, holding their claims and so their devices' quota and fair share.
//   terminated    more than `terminated_pod_threshold` Succeeded or Failed Pods: the excess
//                 goes, evicted ones (Failed, reason Evicted) first, then the oldest.
//   out-of-service  a terminating Pod on a node that is not Ready and carries the
//                 node.kubernetes.io/out-of-service taint an operator sets on a node known to be
//                 down (upstream's non-graceful node shutdown), without waiting for its grace
//                 period.
//   unscheduled   a terminating Pod bound to no node (kept by a finalizer): marked Failed so its
//                 owner sees it end.
// A Pod not yet Succeeded or Failed is first written Failed (no kubelet will ever do it), then
// deleted with its uid as precondition. The API server's own backstop removes terminating Pods
// whose grace period passed on nodes that are not Ready (server/lifecycle); this controller
// covers what that cannot know.
//
// Metrics under upstream's names: pod_gc_collector_force_delete_pods_total and
// pod_gc_collector_force_delete_pod_errors_total by namespace and reason (orphaned, terminated,
// out-of-service, unscheduled).
//
// Thread-safety: Start/Stop from the owner; passes run on one worker thread (or a test's thread
// through Sync, never both).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "client/api_client.h"
#include "client/shared_informers.h"
#include "client/workqueue.h"
#include "common/clock.h"
#include "controllers/internal/queue_workers.h"

namespace draplane::controllers {

struct PodGCOptions {
  // Terminated Pods kept at most; 0 or less keeps them all (kube-controller-manager's
  // --terminated-pod-gc-threshold).
  int terminated_pod_threshold = 12500;
  Duration check_period = std::chrono::seconds(20);
  // How long a node must be missing from the cache before the API is asked whether it is gone.
  Duration quarantine = std::chrono::seconds(40);
  std::string field_manager = "pod-garbage-collector";
};

class PodGCController {
 public:
  // Registers its informers with `informers` (before informers.Start()).
  PodGCController(client::ApiClient& api, client::SharedInformers& informers, const Clock& clock,
                  PodGCOptions options = {});
  ~PodGCController();
  PodGCController(const PodGCController&) = delete;
  PodGCController& operator=(const PodGCController&) = delete;

  void Start();
  void Stop();

  // One pass on the calling thread (tests); the first error of its API calls, the rest of the
  // pass done regardless.
  Status Sync();

 private:
  using PodPtr = std::shared_ptr<const api::corev1::Pod>;

  Status CollectTerminated(const std::vector<PodPtr>& pods);
  Status CollectTerminatingOutOfService(const std::vector<PodPtr>& pods);
  Status CollectOrphaned(const std::vector<PodPtr>& pods);
  Status CollectUnscheduledTerminating(const std::vector<PodPtr>& pods);
  // Writes the Pod Failed (with `disruption_reason` / `disruption_message` as a DisruptionTarget
  // condition when not empty) unless it is terminal, then deletes it with grace period 0;
  // counted under `reason`. A Pod gone or replaced meanwhile is no error.
  Status MarkFailedAndDelete(const api::corev1::Pod& pod, std::string_view reason,
                             std::string_view disruption_reason = {},
                             std::string_view disruption_message = {});

  client::ApiClient& api_;
  const Clock& clock_;
  const PodGCOptions options_;
  client::Informer<api::corev1::Node>& nodes_;
  client::Informer<api::corev1::Pod>& pods_;
  client::WorkQueue queue_;
  internal::QueueWorkers workers_;
  // Node names Pods are bound to that the cache did not have, and since when (upstream's
  // orphaned_pods_nodes delaying queue); the worker's alone.
  std::map<std::string, Timestamp> missing_since_;
};

}  // namespace draplane::controllers
