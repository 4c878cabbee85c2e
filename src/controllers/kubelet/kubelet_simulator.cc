#include "controllers/kubelet/kubelet_simulator.h"

#include <boost/json.hpp>

#include "api/labels/taints.h"
#include "api/meta/time.h"
#include "api/pod_claims.h"
#include "api/pods.h"
#include "api/resource_claims.h"
#include "api/resource_health.h"
#include "api/resource_pool.h"
#include "client/typed.h"

namespace draplane::controllers {

using api::corev1::Pod;

namespace {

bool NeedsWork(const Pod& pod) {
  if (pod.spec.node_name.empty()) return false;
  if (pod.metadata.deletion_timestamp.has_value()) return true;
  if (api::ActiveDeadline(pod).has_value()) return true;  // a running Pod with a deadline
  return pod.status.phase.empty() || pod.status.phase == api::corev1::kPodPhasePending;
}

}  // namespace

KubeletSimulator::KubeletSimulator(client::ApiClient& api, client::SharedInformers& informers,
                                   const Clock& clock, KubeletSimulatorOptions options)
    : api_(api),
      clock_(clock),
      options_(std::move(options)),
      pods_(informers.Get<Pod>()),
      nodes_(informers.Get<api::corev1::Node>()),
      claims_(informers.Get<api::resourcev1::ResourceClaim>()),
      slices_(informers.Get<api::resourcev1::ResourceSlice>()),
      queue_(clock, options_.rate_limits, "kubelet_simulator"),
      workers_("kubelet-simulator", queue_, [this](const std::string& key) { return Sync(key); }) {
  auto enqueue = [this](const Pod& pod) {
    if (NeedsWork(pod)) queue_.Add(client::ObjectKey(pod.metadata.namespace_, pod.metadata.name));
  };
  pods_.AddHandlers({.on_add = [enqueue](const auto& p) { enqueue(*p); },
                     .on_update = [enqueue](const auto&, const auto& p) { enqueue(*p); }});
}

KubeletSimulator::~KubeletSimulator() { Stop(); }

void KubeletSimulator::Start() { workers_.Start(options_.workers); }

void KubeletSimulator::Stop() { workers_.Stop(); }

Status KubeletSimulator::Sync(const std::string& key) {
  std::string ns;
  std::string name;
  client::SplitObjectKey(key, &ns, &name);
  auto pod = pods_.Get(ns, name);
  if (pod == nullptr || !NeedsWork(*pod)) return Status::Ok();
  // A node with a node agent (annotation draplane.dev/agent, agent/agent.h) runs its own Pods.
  if (auto node = nodes_.Get("", pod->spec.node_name);
      node != nullptr && node->metadata.annotations.count("draplane.dev/agent") > 0) {
    return Status::Ok();
  }

  if (pod->metadata.deletion_timestamp.has_value()) {
    // A Pod a finalizer keeps first ends Failed (api/pods.h), or its claims and a foreground
    // deletion waiting on them would hold each other for good.
    if (std::optional<boost::json::object> stopped =
            api::StoppedPodStatusPatch(*pod, api::Time::FromTimestamp(clock_.Now()))) {
      Status s = client::PatchOnly<Pod>(api_, ns, name, client::PatchType::kMerge,
                                        std::move(*stopped), "status", "draplane-kubelet");
      if (!s.ok() && s.code() != StatusCode::kNotFound) return s;  // Conflict: the newer Pod
    }
    client::DeleteOptions options;
    options.grace_period_seconds = 0;
    options.precondition_uid = pod->metadata.uid;
    Status s = client::Delete<Pod>(api_, ns, name, options);
    if (s.ok() || s.code() == StatusCode::kNotFound || s.code() == StatusCode::kConflict) {
      return Status::Ok();
    }
    return s;
  }

  // A started Pod's active deadline: failed once it passes, looked at again when it will.
  if (std::optional<Timestamp> deadline = api::ActiveDeadline(*pod)) {
    const api::Time now = api::Time::FromTimestamp(clock_.Now());
    if (std::optional<boost::json::object> failed = api::DeadlineExceededStatusPatch(*pod, now)) {
      Status s = client::PatchOnly<Pod>(api_, ns, name, client::PatchType::kMerge,
                                        std::move(*failed), "status", "draplane-kubelet");
      if (!s.ok() && s.code() != StatusCode::kNotFound) return s;  // Conflict: the newer Pod
      return Status::Ok();
    }
    queue_.AddAfter(key, *deadline - clock_.Now());
    if (pod->status.phase == api::corev1::kPodPhaseRunning) return Status::Ok();
  }

  // As the kubelet's DRA manager: a Pod starts only once each of its claims is allocated and
  // reserved for it (a Pod placed on a node by hand with an unallocated claim would otherwise
  // run without its devices). Retried with backoff: the claim cache may trail the binding.
  StatusOr<std::vector<api::PodClaimRef>> refs = api::ResolvePodClaims(*pod);
  if (!refs.ok())
    return UnavailableError("pod " + key + ": " + std::string(refs.status().message()));
  for (const api::PodClaimRef& ref : *refs) {
    auto claim = claims_.Get(ns, ref.claim);
    if (claim == nullptr || !claim->status.allocation.has_value() ||
        !api::IsReservedForPod(*pod, *claim)) {
      return UnavailableError("pod " + key + ": claim " + ref.claim +
                              " is not allocated and reserved for it yet");
    }
  }

  api::RunningPodOptions running;
  if (auto node = nodes_.Get("", pod->spec.node_name)) {
    for (const auto& a : node->status.addresses) {
      if (a.type == api::corev1::kNodeAddressTypeInternalIP) running.host_ip = a.address;
    }
  }
  if (running.host_ip.empty()) running.host_ip = "127.0.0.1";
  running.allocated_resources_status = DeviceHealth(*pod);
  // Conditional on the version seen: a Pod changed meanwhile is synced again.
  boost::json::object patch{
      {"metadata", boost::json::object{{"resourceVersion", pod->metadata.resource_version}}},
      {"status", api::RunningPodStatus(*pod, api::Time::FromTimestamp(clock_.Now()), running)}};
  StatusOr<Pod> patched = client::Patch<Pod>(api_, ns, name, client::PatchType::kMerge,
                                             std::move(patch), "status", "draplane-kubelet");
  if (!patched.ok() && patched.status().code() != StatusCode::kNotFound) {
    return patched.status();  // a Conflict retries with the newer pod
  }
  return Status::Ok();
}

std::map<std::string, boost::json::array> KubeletSimulator::DeviceHealth(const Pod& pod) const {
  StatusOr<std::vector<api::PodClaimRef>> refs = api::ResolvePodClaims(pod);
  if (!refs.ok() || refs->empty()) return {};
  std::vector<std::shared_ptr<const api::resourcev1::ResourceClaim>> held;
  std::map<std::string, const api::resourcev1::ResourceClaim*> claims;
  for (const api::PodClaimRef& ref : *refs) {
    if (ref.entry.empty()) continue;
    auto claim = claims_.Get(pod.metadata.namespace_, ref.claim);
    if (claim == nullptr) continue;
    claims[ref.entry] = claim.get();
    held.push_back(std::move(claim));
  }
  if (claims.empty()) return {};
  const std::vector<std::shared_ptr<const api::resourcev1::ResourceSlice>> slices = slices_.List();
  return api::AllocatedResourcesStatus(
      pod, claims, [&](std::string_view driver, std::string_view pool, std::string_view device) {
        std::vector<const api::resourcev1::ResourceSlice*> pool_slices;
        for (const auto& s : slices) {
          if (s->spec.driver == driver && s->spec.pool.name == pool) pool_slices.push_back(s.get());
        }
        const api::resourcev1::Device* d = api::FindPublishedDevice(pool_slices, device);
        if (d == nullptr) return api::kResourceHealthUnknown;
        for (const api::resourcev1::DeviceTaint& t : d->taints) {
          if (api::labels::IsScheduleBlockingEffect(t.effect)) return api::kResourceUnhealthy;
        }
        return api::kResourceHealthy;
      });
}

}  // namespace draplane::controllers
