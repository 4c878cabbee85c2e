// Plugin interfaces of the scheduling framework (upstream k8s.io/kube-scheduler/framework
// interface.go), reduced to the extension points draplane uses:
//
//   PreEnqueue   may the pod enter the active queue at all?      (loop thread)
//   PreFilter    per pod, once per attempt; may restrict nodes   (loop thread)
//   Filter       per (pod, node): can the pod run there?         (loop thread)
//   PostFilter   when no node fits                               (loop thread)
//   Score        per feasible node, then NormalizeScore          (loop thread)
//   Reserve      the chosen node, before binding; Unreserve undoes it (loop thread)
//   PreBind      API writes needed before binding                (binder thread); may answer
//                Wait, and CheckPreBindWait then says when binding may go on (loop thread)
//   Bind         the binding itself                              (binder thread)
//
// A plugin also says which cluster events may make a pod it rejected schedulable
// (EventsToRegister) and may refine that per event (IsSchedulableAfter, upstream's
// QueueingHint).
//
// Thread-safety: loop-thread extension points may read the ClusterState; PreBind and Bind run on
// binder threads and must only use what the cycle state captured plus thread-safe clients.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "scheduler/framework/types.h"

namespace draplane::scheduler {

// One pod being scheduled.
struct PodInfo {
  std::shared_ptr<const api::corev1::Pod> pod;
  Resources requests;  // ComputePodRequests(*pod)
  int attempts = 0;    // scheduling attempts so far, including this one
};

// A change that may make rejected pods schedulable.
struct ClusterEvent {
  EventResource resource = EventResource::kNode;
  uint32_t actions = 0;
  // For claim events: the object before (null on add) and after (null on delete).
  const api::resourcev1::ResourceClaim* old_claim = nullptr;
  const api::resourcev1::ResourceClaim* new_claim = nullptr;
  // For kPod events: the updated pod.
  const api::corev1::Pod* pod = nullptr;
  // For kResourceQuota events: the quota before (null on add) and after (null on delete).
  const api::corev1::ResourceQuota* old_quota = nullptr;
  const api::corev1::ResourceQuota* new_quota = nullptr;
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view name() const = 0;
  virtual std::vector<ClusterEventSpec> EventsToRegister() const { return {}; }
  // Whether `event` may make `pod` (rejected by this plugin) schedulable. Called only for
  // events matching EventsToRegister.
  virtual bool IsSchedulableAfter(const ClusterEvent& event, const api::corev1::Pod& pod) const {
    (void)event;
    (void)pod;
    return true;
  }
};

class PreEnqueuePlugin : public virtual Plugin {
 public:
  virtual PluginStatus PreEnqueue(const api::corev1::Pod& pod) = 0;
};

struct PreFilterResult {
  // When set, only these nodes can fit (upstream PreFilterResult.NodeNames).
  std::optional<std::vector<std::string>> node_names;
};

class PreFilterPlugin : public virtual Plugin {
 public:
  // Skip: the plugin's Filter is not needed for this pod.
  virtual PluginStatus PreFilter(CycleState& state, const PodInfo& pod,
                                 PreFilterResult* result) = 0;
};

class FilterPlugin : public virtual Plugin {
 public:
  // `explain`: the attempt failed everywhere and this pass collects reasons for the user.
  // Without it the framework reads only a rejection's code, so a hot path may return one without
  // a reason (UnexplainedRejection).
  virtual PluginStatus Filter(CycleState& state, const PodInfo& pod, const NodeInfo& node,
                              bool explain) = 0;

  // Pure: Filter only reads (the cycle state, the pod, the node, the cluster) and never returns
  // kError, so the framework may leave it out on a node that a later plugin certainly rejects
  // (below) and run it only to learn which plugin rejected that node first.
  virtual bool FilterIsPure() const { return false; }
  // Whether CertainlyRejects may ever answer true.
  virtual bool HasCertainRejection() const { return false; }
  // A quick test without side effects: true only when Filter(explain = false) would reject
  // `node` and change nothing doing so. The framework asks it before running the filters on a
  // node, when every filter before this one is pure: the node is then rejected without them.
  virtual bool CertainlyRejects(const CycleState& state, const PodInfo& pod,
                                const NodeInfo& node) const {
    (void)state;
    (void)pod;
    (void)node;
    return false;
  }
};

class PostFilterPlugin : public virtual Plugin {
 public:
  virtual PluginStatus PostFilter(CycleState& state, const PodInfo& pod) = 0;
};

class ScorePlugin : public virtual Plugin {
 public:
  // Before filtering: the highest raw score a node can get for this pod, or nullopt when the
  // plugin has nothing to score (upstream PreScore returning Skip). The framework stops
  // searching once a node reaches the maximum of every active score plugin.
  virtual std::optional<int64_t> PreScore(CycleState& state, const PodInfo& pod) = 0;
  virtual int64_t Score(CycleState& state, const PodInfo& pod, const NodeInfo& node) = 0;
  // Maps raw scores to [0, 100] in place (upstream NormalizeScore).
  virtual void NormalizeScore(CycleState& state, std::vector<int64_t>& scores) = 0;
  virtual int64_t weight() const { return 1; }
};

class ReservePlugin : public virtual Plugin {
 public:
  virtual PluginStatus Reserve(CycleState& state, const PodInfo& pod, const std::string& node) = 0;
  virtual void Unreserve(CycleState& state, const PodInfo& pod, const std::string& node) = 0;
};

class PreBindPlugin : public virtual Plugin {
 public:
  // Success, Skip, an error, or Wait: the writes are done but the pod may only be bound once other
  // components have done their part (KEP-5007 binding conditions), or once a write the plugin
  // started has been decided (WaitForWrite: a quota charge). A waiting binding parks no thread:
  // the scheduler asks CheckPreBindWait again whenever a cluster event may concern the pod, when
  // the plugin reports its write decided, and once the wait has lasted its limit.
  virtual PluginStatus PreBind(CycleState& state, const PodInfo& pod, const std::string& node) = 0;
  // Loop thread, after PreBind answered Wait: Success (binding may go on), Wait, or an error
  // saying why the binding failed. With `timed_out` the wait has lasted its limit: the answer is
  // Success or an error naming what was still missing.
  virtual PluginStatus CheckPreBindWait(CycleState& state, const PodInfo& pod,
                                        const std::string& node, bool timed_out) {
    (void)state;
    (void)pod;
    (void)node;
    (void)timed_out;
    return PluginStatus::Success();
  }
};

class BindPlugin : public virtual Plugin {
 public:
  virtual PluginStatus Bind(CycleState& state, const PodInfo& pod, const std::string& node) = 0;
};

}  // namespace draplane::scheduler
