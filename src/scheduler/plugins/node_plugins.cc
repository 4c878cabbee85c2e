#include "scheduler/plugins/node_plugins.h"

#include "api/labels/node_isolation.h"
#include "api/labels/node_selector.h"
#include "api/labels/taints.h"
#include "common/saturating.h"

namespace draplane::scheduler {
namespace {

using api::corev1::Pod;

class SchedulingGates final : public PreEnqueuePlugin {
 public:
  std::string_view name() const override { return "SchedulingGates"; }
  std::vector<ClusterEventSpec> EventsToRegister() const override {
    return {{EventResource::kPod, kUpdatePodSpec}};
  }
  PluginStatus PreEnqueue(const Pod& pod) override {
    if (pod.spec.scheduling_gates.empty()) return PluginStatus::Success();
    std::string names;
    for (const auto& g : pod.spec.scheduling_gates) {
      if (!names.empty()) names += ",";
      names += g.name;
    }
    return PluginStatus(Code::kUnschedulableAndUnresolvable,
                        {"waiting for scheduling gates: [" + names + "]"});
  }
};

class NodeName final : public FilterPlugin {
 public:
  bool FilterIsPure() const override { return true; }
  std::string_view name() const override { return "NodeName"; }
  std::vector<ClusterEventSpec> EventsToRegister() const override {
    return {{EventResource::kNode, kAdd}};
  }
  PluginStatus Filter(CycleState&, const PodInfo& pod, const NodeInfo& node, bool) override {
    const std::string& wanted = pod.pod->spec.node_name;
    if (wanted.empty() || wanted == node.name()) return PluginStatus::Success();
    return PluginStatus::Unresolvable(std::string(kReasonNodeName));
  }
};

class NodeUnschedulable final : public FilterPlugin {
 public:
  bool FilterIsPure() const override { return true; }
  std::string_view name() const override { return "NodeUnschedulable"; }
  std::vector<ClusterEventSpec> EventsToRegister() const override {
    return {{EventResource::kNode, kAdd | kUpdateNodeTaint}, {EventResource::kPod, kUpdatePodSpec}};
  }
  PluginStatus Filter(CycleState&, const PodInfo& pod, const NodeInfo& node, bool) override {
    if (!node.node().spec.unschedulable) return PluginStatus::Success();
    api::corev1::Taint taint;
    taint.key = "node.kubernetes.io/unschedulable";
    taint.effect = "NoSchedule";
    if (api::labels::TolerationsTolerateTaint(pod.pod->spec.tolerations, taint)) {
      return PluginStatus::Success();
    }
    return PluginStatus::Unresolvable(std::string(kReasonUnschedulable));
  }
};

struct AffinityState {
  api::labels::RequiredNodeAffinity affinity;
};

class NodeAffinity final : public PreFilterPlugin, public FilterPlugin {
 public:
  bool FilterIsPure() const override { return true; }
  std::string_view name() const override { return "NodeAffinity"; }
  std::vector<ClusterEventSpec> EventsToRegister() const override {
    return {{EventResource::kNode, kAdd | kUpdateNodeLabel}, {EventResource::kPod, kUpdatePodSpec}};
  }
  PluginStatus PreFilter(CycleState& state, const PodInfo& pod, PreFilterResult*) override {
    const api::corev1::PodSpec& spec = pod.pod->spec;
    bool has_affinity = spec.affinity.has_value() && spec.affinity->node_affinity.has_value() &&
                        spec.affinity->node_affinity
                            ->required_during_scheduling_ignored_during_execution.has_value();
    if (spec.node_selector.empty() && !has_affinity) return PluginStatus::Skip();
    state.Set(std::make_shared<AffinityState>(
        AffinityState{api::labels::RequiredNodeAffinity::FromPod(*pod.pod)}));
    return PluginStatus::Success();
  }
  PluginStatus Filter(CycleState& state, const PodInfo&, const NodeInfo& node, bool) override {
    const AffinityState* s = state.Get<AffinityState>();
    if (s == nullptr) return PluginStatus::Success();
    StatusOr<bool> match = s->affinity.Match(node.node());
    if (!match.ok()) return PluginStatus::Unresolvable(std::string(match.status().message()));
    if (*match) return PluginStatus::Success();
    return PluginStatus::Unresolvable(std::string(kReasonNodeAffinity));
  }
};

class TaintToleration final : public FilterPlugin {
 public:
  explicit TaintToleration(const Clock& clock) : clock_(clock) {}
  bool FilterIsPure() const override { return true; }
  std::string_view name() const override { return "TaintToleration"; }
  std::vector<ClusterEventSpec> EventsToRegister() const override {
    return {{EventResource::kNode, kAdd | kUpdateNodeTaint}, {EventResource::kPod, kUpdatePodSpec}};
  }
  PluginStatus Filter(CycleState&, const PodInfo& pod, const NodeInfo& node, bool) override {
    const std::vector<api::corev1::Taint>& taints = node.node().spec.taints;
    if (taints.empty()) return PluginStatus::Success();
    const Timestamp now = clock_.Now();
    std::optional<size_t> bad = api::labels::FindMatchingUntoleratedTaint(
        taints, pod.pod->spec.tolerations, [&](const api::corev1::Taint& t) {
          if (t.key == api::labels::kPrepareFailuresTaintKey &&
              !api::labels::IsIsolated(node.node(), now)) {
            return false;  // the isolation has expired
          }
          return api::labels::IsScheduleBlockingEffect(t.effect);
        });
    if (!bad) return PluginStatus::Success();
    if (taints[*bad].key == api::labels::kPrepareFailuresTaintKey) {
      auto until =
          node.node().metadata.annotations.find(api::labels::kPrepareFailuresUntilAnnotation);
      return PluginStatus::Unresolvable(
          "node isolated after repeated device prepare failures" +
          (until == node.node().metadata.annotations.end() ? std::string()
                                                           : " until " + until->second) +
          " (taint " + std::string(api::labels::kPrepareFailuresTaintKey) + ")");
    }
    return PluginStatus::Unresolvable("untolerated taint {" + taints[*bad].key + ": " +
                                      taints[*bad].value + "}");
  }

 private:
  const Clock& clock_;
};

class NodeResourcesFit final : public FilterPlugin {
 public:
  bool FilterIsPure() const override { return true; }
  explicit NodeResourcesFit(const ClusterState& cluster) : cluster_(cluster) {}
  std::string_view name() const override { return "NodeResourcesFit"; }
  std::vector<ClusterEventSpec> EventsToRegister() const override {
    // A DeviceClass that names an extended resource (created or changed) moves it from the
    // nodes' allocatable to DRA: the Pod short of it may fit now (upstream registers the same
    // with DRAExtendedResource). Without it a Pod created before its class waited for the
    // unschedulable pool's flush.
    return {{EventResource::kNode, kAdd | kUpdateNodeAllocatable},
            {EventResource::kAssignedPod, kDelete},
            {EventResource::kPod, kUpdatePodSpec},
            {EventResource::kDeviceClass, kAdd | kUpdate}};
  }
  PluginStatus Filter(CycleState&, const PodInfo& pod, const NodeInfo& node, bool) override {
    // Most nodes fit: the reasons are collected only for one that does not.
    if (Insufficient(pod, node, nullptr)) {
      std::vector<std::string> insufficient;
      Insufficient(pod, node, &insufficient);
      return PluginStatus(Code::kUnschedulable, std::move(insufficient));
    }
    return PluginStatus::Success();
  }

 private:
  // Whether some resource is short on `node`; `reasons` (when given) gets every shortage.
  bool Insufficient(const PodInfo& pod, const NodeInfo& node,
                    std::vector<std::string>* reasons) const {
    const Resources& want = pod.requests;
    const Resources& have = node.allocatable();
    const Resources& used = node.requested();
    bool short_of_some = false;
    auto shortage = [&](std::string reason) {
      short_of_some = true;
      if (reasons != nullptr) reasons->push_back(std::move(reason));
      return reasons == nullptr;  // without reasons, the first shortage answers
    };
    if (static_cast<int64_t>(node.pod_count()) + 1 > have.pods &&
        shortage(std::string(kReasonTooManyPods))) {
      return true;
    }
    if (want.milli_cpu > 0 && want.milli_cpu > SaturatingSub(have.milli_cpu, used.milli_cpu) &&
        shortage("Insufficient cpu")) {
      return true;
    }
    if (want.memory > 0 && want.memory > SaturatingSub(have.memory, used.memory) &&
        shortage("Insufficient memory")) {
      return true;
    }
    if (want.ephemeral_storage > 0 &&
        want.ephemeral_storage > SaturatingSub(have.ephemeral_storage, used.ephemeral_storage) &&
        shortage("Insufficient ephemeral-storage")) {
      return true;
    }
    for (const auto& [resource, amount] : want.scalar) {
      auto a = have.scalar.find(resource);
      int64_t allocatable = a == have.scalar.end() ? 0 : a->second;
      if (allocatable == 0 && cluster_.extended_resource_classes().contains(resource)) {
        continue;  // served through DRA on this node (DynamicResources checks it)
      }
      auto u = used.scalar.find(resource);
      int64_t in_use = u == used.scalar.end() ? 0 : u->second;
      if (amount > SaturatingSub(allocatable, in_use) && shortage("Insufficient " + resource))
        return true;
    }
    return short_of_some;
  }

  const ClusterState& cluster_;
};

}  // namespace

std::shared_ptr<Plugin> NewSchedulingGatesPlugin() { return std::make_shared<SchedulingGates>(); }
std::shared_ptr<Plugin> NewNodeNamePlugin() { return std::make_shared<NodeName>(); }
std::shared_ptr<Plugin> NewNodeUnschedulablePlugin() {
  return std::make_shared<NodeUnschedulable>();
}
std::shared_ptr<Plugin> NewNodeAffinityPlugin() { return std::make_shared<NodeAffinity>(); }
std::shared_ptr<Plugin> NewTaintTolerationPlugin(const Clock& clock) {
  return std::make_shared<TaintToleration>(clock);
}
std::shared_ptr<Plugin> NewNodeResourcesFitPlugin(const ClusterState& cluster) {
  return std::make_shared<NodeResourcesFit>(cluster);
}

}  // namespace draplane::scheduler
