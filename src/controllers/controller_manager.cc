#include "controllers/controller_manager.h"

#include "common/log.h"

namespace draplane::controllers {

ControllerManager::ControllerManager(client::ApiClient& api, const Clock& clock,
                                     ControllerManagerOptions options,
                                     client::SharedInformers* shared)
    : own_informers_(shared != nullptr ? nullptr : std::make_unique<client::SharedInformers>(api)),
      informers_(shared != nullptr ? *shared : *own_informers_) {
  if (options.resource_claims) {
    resource_claims_ =
        std::make_unique<ResourceClaimController>(api, informers_, clock, options.resource_claim);
  }
  if (options.garbage_collector) {
    gc_ = std::make_unique<GarbageCollector>(api, informers_, clock);
  }
  if (options.namespaces) {
    namespaces_ = std::make_unique<NamespaceController>(api, informers_, clock);
  }
  if (options.simulate_kubelet) {
    kubelet_ = std::make_unique<KubeletSimulator>(api, informers_, clock);
  }
  if (options.resource_pool_status) {
    pool_status_ =
        std::make_unique<PoolStatusController>(api, informers_, clock, options.pool_status);
  }
  if (options.device_taint_eviction) {
    device_taint_ =
        std::make_unique<DeviceTaintController>(api, informers_, clock, options.device_taint);
  }
  if (options.node_lifecycle) {
    node_lifecycle_ = std::make_unique<NodeLifecycleController>(api, informers_, clock,
                                                                options.node_lifecycle_options);
  }
  if (options.taint_eviction) {
    taint_eviction_ = std::make_unique<TaintEvictionController>(api, informers_, clock,
                                                                options.taint_eviction_options);
  }
  if (options.pod_gc) {
    pod_gc_ = std::make_unique<PodGCController>(api, informers_, clock, options.pod_gc_options);
  }
  if (options.claim_stage_metrics) {
    claim_stages_ = std::make_unique<ClaimStageTracker>(informers_, clock, options.claim_stages);
  }
}

ControllerManager::~ControllerManager() { Stop(); }

Status ControllerManager::Start() {
  informers_.Start();
  if (!informers_.WaitForSync()) return CancelledError("controller-manager stopped");
  if (resource_claims_) resource_claims_->Start();
  if (gc_) gc_->Start();
  if (namespaces_) namespaces_->Start();
  if (kubelet_) kubelet_->Start();
  if (device_taint_) device_taint_->Start();
  if (node_lifecycle_) node_lifecycle_->Start();
  if (taint_eviction_) taint_eviction_->Start();
  if (pod_gc_) pod_gc_->Start();
  if (pool_status_) pool_status_->Start();
  started_ = true;
  log::Info(
      "controller-manager: started (resourceclaim={}, garbagecollector={}, namespace={}, "
      "kubelet-simulator={}, nodelifecycle={}, taint-eviction={}, podgc={})",
      resource_claims_ != nullptr, gc_ != nullptr, namespaces_ != nullptr, kubelet_ != nullptr,
      node_lifecycle_ != nullptr, taint_eviction_ != nullptr, pod_gc_ != nullptr);
  return Status::Ok();
}

void ControllerManager::Stop() {
  // Informers first: no new work arrives while the workers drain. Shared ones keep running for
  // their other users; work they still queue here is dropped by the shut-down queues.
  if (own_informers_) own_informers_->Stop();
  if (claim_stages_) claim_stages_->Stop();
  if (device_taint_) device_taint_->Stop();
  if (taint_eviction_) taint_eviction_->Stop();
  if (pod_gc_) pod_gc_->Stop();
  if (node_lifecycle_) node_lifecycle_->Stop();
  if (pool_status_) pool_status_->Stop();
  if (kubelet_) kubelet_->Stop();
  if (namespaces_) namespaces_->Stop();
  if (gc_) gc_->Stop();
  if (resource_claims_) resource_claims_->Stop();
  started_ = false;
}

}  // namespace draplane::controllers
