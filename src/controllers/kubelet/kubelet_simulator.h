// Pods without a kubelet (`--simulate-kubelet`): until node agents run (issue 8), this
// controller plays the kubelet for every node, so bound Pods reach Running and deleted Pods
// terminate.
//
//   - a Pod bound to a node and still Pending, whose claims are allocated and reserved for it (as
//     the kubelet's DRA manager requires), becomes Running with the status every kubelet
//     player in draplane reports (api/pods.h RunningPodStatus, shared with the node agent and
//     the fake kubelet), its hostIP the node's InternalIP, else 127.0.0.1 (so `kubectl get pods`
//     shows 1/1 Running), with each container's allocatedResourcesStatus (KEP-4680,
//     api/resource_health.h): a simulated node has no driver reporting health, so a device
//     counts as Unhealthy while its slice taints it NoSchedule or NoExecute (what drivers do to
//     unhealthy devices, KEP-5055), Healthy while it is published untainted, and Unknown when it
//     is not published;
//   - a bound Pod with a deletionTimestamp is deleted with grace period 0, as the kubelet does
//     once its containers stopped.
//
// Thread-safety: Start/Stop from the owner; syncs run on the worker threads.
#pragma once

#include <boost/json/array.hpp>
#include <map>
#include <string>

#include "client/api_client.h"
#include "client/shared_informers.h"
#include "client/workqueue.h"
#include "common/clock.h"
#include "controllers/internal/queue_workers.h"

namespace draplane::controllers {

struct KubeletSimulatorOptions {
  int workers = 2;
  client::RateLimiterOptions rate_limits{};
};

class KubeletSimulator {
 public:
  KubeletSimulator(client::ApiClient& api, client::SharedInformers& informers, const Clock& clock,
                   KubeletSimulatorOptions options = {});
  ~KubeletSimulator();

  void Start();
  void Stop();
  Status Sync(const std::string& key);  // "ns/name" of a pod

 private:
  // Each container's allocatedResourcesStatus (see above), by container name.
  std::map<std::string, boost::json::array> DeviceHealth(const api::corev1::Pod& pod) const;

  client::ApiClient& api_;
  const Clock& clock_;
  const KubeletSimulatorOptions options_;
  client::Informer<api::corev1::Pod>& pods_;
  client::Informer<api::corev1::Node>& nodes_;
  client::Informer<api::resourcev1::ResourceClaim>& claims_;
  client::Informer<api::resourcev1::ResourceSlice>& slices_;
  client::WorkQueue queue_;
  internal::QueueWorkers workers_;
};

}  // namespace draplane::controllers
