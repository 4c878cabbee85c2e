// `draplane controller-manager` as a library: the controllers draplane runs next to the
// scheduler, sharing one set of informers (docs/design/scheduler.md, "Controllers").
//
//   resourceclaim     claims from templates, reservations, deallocation, generated-claim cleanup
//   garbagecollector  owner references (pods, claims, slices owned by pods or nodes)
//   namespace         namespace deletion
//   kubelet           (optional, `--simulate-kubelet`) bound pods run, deleted pods terminate
//   devicetaint       NoExecute device taints evict pods; DeviceTaintRule status (dry run for None)
//   nodelifecycle     nodes whose heartbeat stopped become Unknown and are tainted (not-ready,
//                     unreachable, and NoSchedule taints by condition)
//   taint-eviction    NoExecute node taints evict pods once their tolerations end
//   podgc             pods on deleted nodes, terminated pods over a threshold, terminating pods
//                     on out-of-service nodes are force-deleted
//   claim stages      draplane_claim_stage_duration_seconds from claim and Pod watches
//   poolstatus        (optional) answers ResourcePoolStatusRequests once (KEP-5677); needs a
//                     server that serves resource.k8s.io/v1alpha3
//
// Thread-safety: Start/Stop from the owning thread.
#pragma once

#include <memory>

#include "client/api_client.h"
#include "client/shared_informers.h"
#include "common/clock.h"
#include "controllers/devicetaint/controller.h"
#include "controllers/gc/garbage_collector.h"
#include "controllers/kubelet/kubelet_simulator.h"
#include "controllers/namespace/namespace_controller.h"
#include "controllers/nodelifecycle/node_lifecycle.h"
#include "controllers/podgc/pod_gc.h"
#include "controllers/poolstatus/controller.h"
#include "controllers/resourceclaim/controller.h"
#include "controllers/stages/stage_tracker.h"
#include "controllers/tainteviction/controller.h"

namespace draplane::controllers {

struct ControllerManagerOptions {
  bool resource_claims = true;
  bool garbage_collector = true;
  bool namespaces = true;
  bool simulate_kubelet = false;
  bool device_taint_eviction = true;
  bool node_lifecycle = true;
  bool taint_eviction = true;
  bool pod_gc = true;
  bool claim_stage_metrics = true;
  bool resource_pool_status = false;
  ResourceClaimControllerOptions resource_claim{};
  DeviceTaintControllerOptions device_taint{};
  NodeLifecycleOptions node_lifecycle_options{};
  TaintEvictionOptions taint_eviction_options{};
  PodGCOptions pod_gc_options{};
  StageTrackerOptions claim_stages{};
  PoolStatusControllerOptions pool_status{};
};

class ControllerManager {
 public:
  // The ApiClient and clock must outlive the manager. With `shared` the controllers use those
  // informers (for example together with a scheduler in the same process) instead of their own;
  // their owner must stop them before the manager is destroyed, since the controllers' handlers
  // stay registered.
  ControllerManager(client::ApiClient& api, const Clock& clock, ControllerManagerOptions options,
                    client::SharedInformers* shared = nullptr);
  ~ControllerManager();
  ControllerManager(const ControllerManager&) = delete;
  ControllerManager& operator=(const ControllerManager&) = delete;

  // Starts the informers, waits for their first lists, then starts the controllers.
  // Cancelled when stopped meanwhile.
  Status Start();
  // Stops the controllers, and the informers unless they are shared.
  void Stop();

  ResourceClaimController* resource_claims() { return resource_claims_.get(); }
  ClaimStageTracker* claim_stages() { return claim_stages_.get(); }

 private:
  std::unique_ptr<client::SharedInformers> own_informers_;  // null when shared
  client::SharedInformers& informers_;
  std::unique_ptr<ResourceClaimController> resource_claims_;
  std::unique_ptr<GarbageCollector> gc_;
  std::unique_ptr<NamespaceController> namespaces_;
  std::unique_ptr<KubeletSimulator> kubelet_;
  std::unique_ptr<DeviceTaintController> device_taint_;
  std::unique_ptr<NodeLifecycleController> node_lifecycle_;
  std::unique_ptr<TaintEvictionController> taint_eviction_;
  std::unique_ptr<PodGCController> pod_gc_;
  std::unique_ptr<ClaimStageTracker> claim_stages_;
  std::unique_ptr<PoolStatusController> pool_status_;
  bool started_ = false;
};

}  // namespace draplane::controllers
