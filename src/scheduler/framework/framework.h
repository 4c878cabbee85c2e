// A scheduling profile: the plugins for each extension point, and the scheduling cycle that
// runs them (upstream pkg/scheduler/schedule_one.go schedulePod / findNodesThatFitPod /
// prioritizeNodes / selectHost).
//
// Algorithm of Schedule():
//   1. PreFilter every plugin; a rejection ends the attempt (every node gets that reason). A
//      PreFilterResult narrows the candidate nodes.
//   2. PreScore: each score plugin reports the best raw score a node could get, or nothing.
//   3. Filter nodes in the stable name order, starting at `next_start` (round robin across
//      attempts, as upstream's nextStartNodeIndex), running every filter plugin per node and
//      stopping at the first rejection. A filter's certain rejection (FilterPlugin::
//      CertainlyRejects, asked first where only pure filters precede it) turns a node away
//      without running the filters; which filter rejects it first is learned by running them
//      only if no node passes. A node that passes is scored right away. The search stops when
//        - `num_to_find` nodes passed (upstream numFeasibleNodesToFind: all nodes below 100,
//          else `percentage`% of them, default 50 − nodes/125 but at least 5%, and at least
//          100 nodes) — or just one when no score plugin is active, because all feasible
//          nodes would tie; or
//        - a node reaches the maximum raw score of every active score plugin (no later node can
//          beat it, and ties go to the earlier node).
//   4. No node passed: PostFilter plugins run, then a second pass over every node records each
//      node's first rejection with explanations (Diagnosis), for the FailedScheduling event.
//   5. Scores are normalized per plugin, weighted and summed; the highest wins, ties go to the
//      node evaluated first (upstream breaks ties at random; a stable choice keeps runs
//      reproducible).
//
// Thread-safety: Schedule, Reserve, Unreserve and PostFilter run on the loop thread; PreBind and
// Bind on binder threads (plugins promise that is safe, see plugin.h).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/metrics.h"
#include "scheduler/cluster_state.h"
#include "scheduler/framework/plugin.h"

namespace draplane::scheduler {

// Why the pod could not go to a node.
struct NodeVerdict {
  std::string node;
  PluginStatus status;
};

struct Diagnosis {
  int total_nodes = 0;
  // Set when PreFilter rejected the pod (for every node).
  std::optional<PluginStatus> pre_filter;
  // Each node's first rejection, in node order (filled by the diagnose pass).
  std::vector<NodeVerdict> nodes;
  // Plugins that rejected the pod somewhere (they decide which events requeue it): complete
  // when no node passed, the only case that reads them.
  std::set<std::string> rejectors;
  std::optional<PluginStatus> post_filter;
};

struct ScheduleResult {
  // Success with `node`, a rejection (unschedulable), or kError.
  PluginStatus status;
  std::string node;
  int evaluated_nodes = 0;
  int feasible_nodes = 0;
  Diagnosis diagnosis;
};

struct FrameworkOptions {
  // 0: adaptive (upstream default); otherwise 1..100.
  int percentage_of_nodes_to_score = 0;
  // Skip the diagnose pass (benchmarks of the unschedulable path only).
  bool diagnose = true;
};

// upstream numFeasibleNodesToFind.
int NumFeasibleNodesToFind(int num_nodes, int percentage);

class Framework {
 public:
  explicit Framework(FrameworkOptions options = {}) : options_(options) {}

  // Registers a plugin at every extension point it implements, in registration order.
  void AddPlugin(std::shared_ptr<Plugin> plugin);
  const std::vector<std::shared_ptr<Plugin>>& plugins() const { return plugins_; }
  const Plugin* FindPlugin(std::string_view name) const;
  // Times every plugin call of the attempts whose CycleState::record_plugin_metrics is set into
  // `family` (scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}: each
  // Filter and Score call on each node is one observation, as upstream's), read from `clock`,
  // which outlives the framework. Call before scheduling starts.
  void RecordPluginMetrics(metrics::HistogramFamily family, const Clock& clock);

  PluginStatus RunPreEnqueue(const api::corev1::Pod& pod);
  // Steps 1–5 above. `next_start` is read and advanced.
  ScheduleResult Schedule(CycleState& state, const PodInfo& pod, ClusterState& cluster,
                          size_t* next_start);
  // For explanations (`draplane explain`): PreFilter, then every filter on every node with
  // explanations on. A PreFilter rejection is returned in `pre_filter` and no node is evaluated;
  // otherwise `nodes` holds every node's verdict (Success for the nodes that fit), in node order.
  struct Evaluation {
    std::optional<PluginStatus> pre_filter;
    std::vector<NodeVerdict> nodes;
  };
  Evaluation Evaluate(CycleState& state, const PodInfo& pod, ClusterState& cluster);
  // Reserve in order; on failure the plugins reserved so far are unreserved.
  PluginStatus RunReserve(CycleState& state, const PodInfo& pod, const std::string& node);
  // Unreserve in reverse order.
  void RunUnreserve(CycleState& state, const PodInfo& pod, const std::string& node);
  // Every PreBind plugin in order: Success, Wait (every plugin ran; some must wait, see
  // CheckPreBindWait) or the first error.
  PluginStatus RunPreBind(CycleState& state, const PodInfo& pod, const std::string& node);
  // After RunPreBind answered Wait: Success when no plugin waits any more, Wait, or the first
  // error (plugin.h).
  PluginStatus CheckPreBindWait(CycleState& state, const PodInfo& pod, const std::string& node,
                                bool timed_out);
  // The first bind plugin that does not skip.
  PluginStatus RunBind(CycleState& state, const PodInfo& pod, const std::string& node);

 private:
  // Runs `filters` (those not skipped for this attempt) on one node: Success, or the first
  // rejection with `*rejector` set to its plugin. The status does not name the plugin: a caller
  // that keeps it adds the name (WithPlugin), the filter loop only counts the plugin.
  PluginStatus FilterNode(CycleState& state, const PodInfo& pod, const NodeInfo& node, bool explain,
                          const std::vector<FilterPlugin*>& filters, FilterPlugin** rejector);

  // Runs `call`, a call of `plugin` at `extension_point`, timing it when the attempt records
  // plugin metrics; `code_of` gives the status label of its result.
  template <typename Call, typename CodeOf>
  auto Timed(const CycleState& state, const Plugin& plugin, std::string_view extension_point,
             Call call, CodeOf code_of) const;

  FrameworkOptions options_;
  std::optional<metrics::HistogramFamily> plugin_seconds_;
  const Clock* clock_ = nullptr;
  std::vector<std::shared_ptr<Plugin>> plugins_;
  std::vector<PreEnqueuePlugin*> pre_enqueue_;
  std::vector<PreFilterPlugin*> pre_filter_;
  std::vector<FilterPlugin*> filter_;
  std::vector<PostFilterPlugin*> post_filter_;
  std::vector<ScorePlugin*> score_;
  std::vector<ReservePlugin*> reserve_;
  std::vector<PreBindPlugin*> pre_bind_;
  std::vector<BindPlugin*> bind_;
};

}  // namespace draplane::scheduler
