#include "scheduler/framework/framework.h"

#include <algorithm>

namespace draplane::scheduler {

int NumFeasibleNodesToFind(int num_nodes, int percentage) {
  constexpr int kMinFeasibleNodesToFind = 100;
  constexpr int kMinFeasibleNodesPercentageToFind = 5;
  if (num_nodes < kMinFeasibleNodesToFind) return num_nodes;
  if (percentage == 0) {
    percentage = 50 - num_nodes / 125;
    if (percentage < kMinFeasibleNodesPercentageToFind) {
      percentage = kMinFeasibleNodesPercentageToFind;
    }
  }
  int n = static_cast<int>(static_cast<int64_t>(num_nodes) * percentage / 100);
  return std::max(n, kMinFeasibleNodesToFind);
}

void Framework::AddPlugin(std::shared_ptr<Plugin> plugin) {
  Plugin* p = plugin.get();
  if (auto* x = dynamic_cast<PreEnqueuePlugin*>(p)) pre_enqueue_.push_back(x);
  if (auto* x = dynamic_cast<PreFilterPlugin*>(p)) pre_filter_.push_back(x);
  if (auto* x = dynamic_cast<FilterPlugin*>(p)) filter_.push_back(x);
  if (auto* x = dynamic_cast<PostFilterPlugin*>(p)) post_filter_.push_back(x);
  if (auto* x = dynamic_cast<ScorePlugin*>(p)) score_.push_back(x);
  if (auto* x = dynamic_cast<ReservePlugin*>(p)) reserve_.push_back(x);
  if (auto* x = dynamic_cast<PreBindPlugin*>(p)) pre_bind_.push_back(x);
  if (auto* x = dynamic_cast<BindPlugin*>(p)) bind_.push_back(x);
  plugins_.push_back(std::move(plugin));
}

void Framework::RecordPluginMetrics(metrics::HistogramFamily family, const Clock& clock) {
  plugin_seconds_ = std::move(family);
  clock_ = &clock;
}

template <typename Call, typename CodeOf>
auto Framework::Timed(const CycleState& state, const Plugin& plugin,
                      std::string_view extension_point, Call call, CodeOf code_of) const {
  if (!state.record_plugin_metrics || !plugin_seconds_) return call();
  const Duration start = clock_->MonotonicNow();
  auto result = call();
  const double seconds = std::chrono::duration<double>(clock_->MonotonicNow() - start).count();
  plugin_seconds_->WithLabels({plugin.name(), extension_point, CodeName(code_of(result))})
      .Observe(seconds);
  return result;
}

namespace {

Code StatusCode(const PluginStatus& s) { return s.code(); }

}  // namespace

const Plugin* Framework::FindPlugin(std::string_view name) const {
  for (const auto& p : plugins_) {
    if (p->name() == name) return p.get();
  }
  return nullptr;
}

PluginStatus Framework::RunPreEnqueue(const api::corev1::Pod& pod) {
  for (PreEnqueuePlugin* p : pre_enqueue_) {
    PluginStatus s = p->PreEnqueue(pod);
    if (!s.ok()) {
      s.WithPlugin(p->name());
      return s;
    }
  }
  return PluginStatus::Success();
}

namespace {

// Per-attempt bookkeeping of the filter and score loops.
struct CycleFlags {
  std::vector<FilterPlugin*> filters;  // the filters PreFilter did not skip, in order
  // Those of `filters` whose CertainlyRejects the loop asks first: every filter before each is
  // pure (FilterPlugin::FilterIsPure).
  std::vector<const FilterPlugin*> certain;
  std::vector<bool> active_score;
  std::vector<int64_t> max_score;
};

// `all` without the filters of the PreFilter plugins in `skipped`.
std::vector<FilterPlugin*> ActiveFilters(const std::vector<FilterPlugin*>& all,
                                         const std::vector<const Plugin*>& skipped) {
  std::vector<FilterPlugin*> out;
  out.reserve(all.size());
  for (FilterPlugin* f : all) {
    if (std::find(skipped.begin(), skipped.end(), static_cast<const Plugin*>(f)) == skipped.end()) {
      out.push_back(f);
    }
  }
  return out;
}

// The filters of `filters` with a certain rejection that only pure filters precede.
std::vector<const FilterPlugin*> CertainRejecters(const std::vector<FilterPlugin*>& filters) {
  std::vector<const FilterPlugin*> out;
  for (const FilterPlugin* f : filters) {
    if (f->HasCertainRejection()) out.push_back(f);
    if (!f->FilterIsPure()) break;
  }
  return out;
}

bool CertainlyRejected(const CycleState& state, const PodInfo& pod, const NodeInfo& node,
                       const std::vector<const FilterPlugin*>& certain) {
  for (const FilterPlugin* f : certain) {
    if (f->CertainlyRejects(state, pod, node)) return true;
  }
  return false;
}

}  // namespace

ScheduleResult Framework::Schedule(CycleState& state, const PodInfo& pod, ClusterState& cluster,
                                   size_t* next_start) {
  ScheduleResult result;
  const std::vector<NodeInfo*>& all = cluster.nodes();
  result.diagnosis.total_nodes = static_cast<int>(all.size());
  CycleFlags flags;

  // 1. PreFilter.
  std::optional<std::vector<std::string>> restrict;
  std::vector<const Plugin*> skipped;
  for (PreFilterPlugin* p : pre_filter_) {
    PreFilterResult pre;
    PluginStatus s = Timed(
        state, *p, "PreFilter", [&] { return p->PreFilter(state, pod, &pre); }, StatusCode);
    if (s.skipped()) {
      skipped.push_back(p);
      continue;
    }
    if (!s.ok()) {
      s.WithPlugin(p->name());
      if (s.code() != Code::kError) result.diagnosis.rejectors.insert(std::string(p->name()));
      result.diagnosis.pre_filter = s;
      result.status = s;
      return result;
    }
    if (pre.node_names) {
      if (!restrict) {
        restrict = std::move(pre.node_names);
      } else {
        std::vector<std::string> both;
        std::sort(restrict->begin(), restrict->end());
        std::sort(pre.node_names->begin(), pre.node_names->end());
        std::set_intersection(restrict->begin(), restrict->end(), pre.node_names->begin(),
                              pre.node_names->end(), std::back_inserter(both));
        restrict = std::move(both);
      }
    }
  }

  flags.filters = ActiveFilters(filter_, skipped);
  flags.certain = CertainRejecters(flags.filters);

  // The candidate nodes in evaluation order.
  std::vector<NodeInfo*> restricted;
  const std::vector<NodeInfo*>* nodes = &all;
  if (restrict) {
    std::sort(restrict->begin(), restrict->end());
    for (const std::string& name : * restrict) {
      if (NodeInfo* n = cluster.FindNode(name)) restricted.push_back(n);
    }
    nodes = &restricted;
  }

  // 2. PreScore.
  flags.active_score.assign(score_.size(), false);
  flags.max_score.assign(score_.size(), 0);
  bool any_score = false;
  for (size_t i = 0; i < score_.size(); ++i) {
    std::optional<int64_t> max = Timed(
        state, *score_[i], "PreScore", [&] { return score_[i]->PreScore(state, pod); },
        [](const std::optional<int64_t>& m) { return m ? Code::kSuccess : Code::kSkip; });
    if (max) {
      flags.active_score[i] = true;
      flags.max_score[i] = *max;
      any_score = true;
    }
  }

  // 3. Filter (and score what passes).
  size_t n = nodes->size();
  int num_to_find =
      any_score ? NumFeasibleNodesToFind(static_cast<int>(n), options_.percentage_of_nodes_to_score)
                : 1;
  size_t start = (restrict || n == 0) ? 0 : *next_start % n;
  std::vector<const NodeInfo*> feasible;
  std::vector<std::vector<int64_t>> raw(score_.size());
  size_t evaluated = 0;
  const FilterPlugin* last_rejector = nullptr;  // most rejections repeat the last one's plugin
  // Nodes a certain rejection turned away without the filters: which filter rejects each first
  // is learned only if no node passes (the rejectors then decide which events requeue the Pod).
  size_t certainly_rejected = 0;
  for (size_t k = 0; k < n && static_cast<int>(feasible.size()) < num_to_find; ++k) {
    const NodeInfo& node = *(*nodes)[(start + k) % n];
    ++evaluated;
    if (!flags.certain.empty() && CertainlyRejected(state, pod, node, flags.certain)) {
      ++certainly_rejected;
      continue;
    }
    FilterPlugin* rejector = nullptr;
    PluginStatus s = FilterNode(state, pod, node, /*explain=*/false, flags.filters, &rejector);
    if (s.code() == Code::kError) {
      s.WithPlugin(rejector->name());
      result.status = s;
      result.evaluated_nodes = static_cast<int>(evaluated);
      return result;
    }
    if (!s.ok()) {
      if (rejector != last_rejector) {
        result.diagnosis.rejectors.emplace(rejector->name());
        last_rejector = rejector;
      }
      continue;
    }
    feasible.push_back(&node);
    bool perfect = true;
    for (size_t i = 0; i < score_.size(); ++i) {
      if (!flags.active_score[i]) continue;
      int64_t v = Timed(
          state, *score_[i], "Score", [&] { return score_[i]->Score(state, pod, node); },
          [](int64_t) { return Code::kSuccess; });
      raw[i].push_back(v);
      if (v < flags.max_score[i]) perfect = false;
    }
    if (any_score && perfect) break;
  }
  if (feasible.empty() && certainly_rejected > 0) {
    // Every node was evaluated. The filters in order on each node certainly rejected, as the
    // loop would have run them: the filters before a certain rejection are pure, and the
    // rejecting one changes nothing. (Asked again, the certain rejections turn the same nodes
    // away, and perhaps a node whose filters the loop ran: running them again changes nothing.)
    for (size_t k = 0; k < evaluated; ++k) {
      const NodeInfo& node = *(*nodes)[(start + k) % n];
      if (!CertainlyRejected(state, pod, node, flags.certain)) continue;
      FilterPlugin* rejector = nullptr;
      PluginStatus s = FilterNode(state, pod, node, /*explain=*/false, flags.filters, &rejector);
      if (s.code() == Code::kError) {
        s.WithPlugin(rejector->name());
        result.status = s;
        result.evaluated_nodes = static_cast<int>(k + 1);
        return result;
      }
      if (!s.ok()) result.diagnosis.rejectors.emplace(rejector->name());
    }
  }
  if (!restrict && n > 0) *next_start = (start + evaluated) % n;
  result.evaluated_nodes = static_cast<int>(evaluated);
  result.feasible_nodes = static_cast<int>(feasible.size());

  // 4. Nothing fits.
  if (feasible.empty()) {
    for (PostFilterPlugin* p : post_filter_) {
      PluginStatus s = Timed(
          state, *p, "PostFilter", [&] { return p->PostFilter(state, pod); }, StatusCode);
      s.WithPlugin(p->name());
      result.diagnosis.post_filter = s;
      if (s.ok()) break;
    }
    if (options_.diagnose) {
      for (size_t k = 0; k < n; ++k) {
        const NodeInfo& node = *(*nodes)[k];
        FilterPlugin* rejector = nullptr;
        PluginStatus s = FilterNode(state, pod, node, /*explain=*/true, flags.filters, &rejector);
        if (!s.ok()) {
          s.WithPlugin(rejector->name());
          result.diagnosis.nodes.push_back({node.name(), std::move(s)});
        }
      }
    }
    std::string message = "0/" + std::to_string(all.size()) + " nodes are available";
    result.status = PluginStatus(Code::kUnschedulable, {std::move(message)});
    return result;
  }

  // 5. Normalize, weigh, select.
  std::vector<int64_t> total(feasible.size(), 0);
  for (size_t i = 0; i < score_.size(); ++i) {
    if (!flags.active_score[i]) continue;
    score_[i]->NormalizeScore(state, raw[i]);
    for (size_t j = 0; j < feasible.size(); ++j) total[j] += raw[i][j] * score_[i]->weight();
  }
  size_t best = 0;
  for (size_t j = 1; j < feasible.size(); ++j) {
    if (total[j] > total[best]) best = j;
  }
  result.node = feasible[best]->name();
  result.status = PluginStatus::Success();
  return result;
}

Framework::Evaluation Framework::Evaluate(CycleState& state, const PodInfo& pod,
                                          ClusterState& cluster) {
  Evaluation out;
  std::vector<const Plugin*> skipped;
  for (PreFilterPlugin* p : pre_filter_) {
    PreFilterResult pre;
    PluginStatus s = p->PreFilter(state, pod, &pre);
    if (s.skipped()) {
      skipped.push_back(p);
      continue;
    }
    if (!s.ok()) {
      out.pre_filter = s.WithPlugin(p->name());
      return out;
    }
  }
  const std::vector<FilterPlugin*> filters = ActiveFilters(filter_, skipped);
  for (const NodeInfo* node : cluster.nodes()) {
    FilterPlugin* rejector = nullptr;
    PluginStatus s = FilterNode(state, pod, *node, /*explain=*/true, filters, &rejector);
    if (!s.ok()) s.WithPlugin(rejector->name());
    out.nodes.push_back({node->name(), std::move(s)});
  }
  return out;
}

PluginStatus Framework::FilterNode(CycleState& state, const PodInfo& pod, const NodeInfo& node,
                                   bool explain, const std::vector<FilterPlugin*>& filters,
                                   FilterPlugin** rejector) {
  for (FilterPlugin* p : filters) {
    PluginStatus s = Timed(
        state, *p, "Filter", [&] { return p->Filter(state, pod, node, explain); }, StatusCode);
    if (s.ok() || s.skipped()) continue;
    *rejector = p;
    return s;
  }
  return PluginStatus::Success();
}

PluginStatus Framework::RunReserve(CycleState& state, const PodInfo& pod, const std::string& node) {
  for (size_t i = 0; i < reserve_.size(); ++i) {
    PluginStatus s = Timed(
        state, *reserve_[i], "Reserve", [&] { return reserve_[i]->Reserve(state, pod, node); },
        StatusCode);
    if (!s.ok()) {
      for (size_t j = i + 1; j-- > 0;) reserve_[j]->Unreserve(state, pod, node);
      s.WithPlugin(reserve_[i]->name());
      return s;
    }
  }
  return PluginStatus::Success();
}

void Framework::RunUnreserve(CycleState& state, const PodInfo& pod, const std::string& node) {
  for (size_t j = reserve_.size(); j-- > 0;) reserve_[j]->Unreserve(state, pod, node);
}

namespace {

// Asks every PreBind plugin through `ask`: the first error, else the wait to report (the first,
// but a wait the user should hear about goes before a write in flight), else Success.
template <typename Ask>
PluginStatus CollectPreBind(const std::vector<PreBindPlugin*>& plugins, Ask ask) {
  std::optional<PluginStatus> wait;
  for (PreBindPlugin* p : plugins) {
    PluginStatus s = ask(*p);
    if (s.code() == Code::kWait) {
      if (!wait || (wait->waits_for_write() && !s.waits_for_write()))
        wait = s.WithPlugin(p->name());
      continue;
    }
    if (!s.ok() && !s.skipped()) {
      s.WithPlugin(p->name());
      return s;
    }
  }
  return wait ? *wait : PluginStatus::Success();
}

}  // namespace

PluginStatus Framework::RunPreBind(CycleState& state, const PodInfo& pod, const std::string& node) {
  return CollectPreBind(pre_bind_, [&](PreBindPlugin& p) {
    return Timed(
        state, p, "PreBind", [&] { return p.PreBind(state, pod, node); }, StatusCode);
  });
}

PluginStatus Framework::CheckPreBindWait(CycleState& state, const PodInfo& pod,
                                         const std::string& node, bool timed_out) {
  return CollectPreBind(
      pre_bind_, [&](PreBindPlugin& p) { return p.CheckPreBindWait(state, pod, node, timed_out); });
}

PluginStatus Framework::RunBind(CycleState& state, const PodInfo& pod, const std::string& node) {
  for (BindPlugin* p : bind_) {
    PluginStatus s = Timed(
        state, *p, "Bind", [&] { return p->Bind(state, pod, node); }, StatusCode);
    if (s.skipped()) continue;
    s.WithPlugin(p->name());
    return s;
  }
  return PluginStatus::Error(InternalError("no bind plugin bound the pod"));
}

}  // namespace draplane::scheduler
