#include "controllers/tainteviction/controller.h"

#include <algorithm>
#include <utility>

#include "api/labels/taints.h"
#include "common/log.h"
#include "common/metrics.h"
#include "controllers/internal/evict_pod.h"
#include "controllers/internal/pods_by_node.h"

namespace draplane::controllers {

namespace cv1 = api::corev1;

namespace {

// Upstream's metrics (pkg/controller/tainteviction/metrics), under their names.
metrics::Counter NodeTaintPodDeletionsMetric() {
  static const metrics::Counter counter =
      metrics::NewCounterFamily("taint_eviction_controller_pod_deletions_total",
                                "Total number of Pods deleted by TaintEvictionController since "
                                "its start.",
                                {})
          .WithLabels({});
  return counter;
}
metrics::Histogram NodeTaintPodDeletionLatencyMetric() {
  static const metrics::Histogram histogram =
      metrics::NewHistogramFamily(
          "taint_eviction_controller_pod_deletion_duration_seconds",
          "Latency, in seconds, between the time when a taint effect has been activated for the "
          "Pod and its deletion via TaintEvictionController.",
          {}, {0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240})
          .WithLabels({});
  return histogram;
}

bool HasNoExecuteNodeTaint(const cv1::Node& node) {
  return std::any_of(node.spec.taints.begin(), node.spec.taints.end(),
                     [](const cv1::Taint& t) { return t.effect == "NoExecute"; });
}

}  // namespace

TaintEvictionController::TaintEvictionController(client::ApiClient& api,
                                                 client::SharedInformers& informers,
                                                 const Clock& clock, TaintEvictionOptions options)
    : api_(api),
      clock_(clock),
      options_(std::move(options)),
      nodes_(informers.Get<cv1::Node>()),
      pods_(informers.Get<cv1::Pod>()),
      events_(api, clock,
              client::EventRecorderOptions{
                  .component = options_.field_manager, .host = "", .synchronous = false}),
      queue_(clock, {}, "taint_eviction_controller"),
      workers_("taint-eviction", queue_, [this](const std::string& key) { return Sync(key); }) {
  NodeTaintPodDeletionsMetric();
  NodeTaintPodDeletionLatencyMetric();
  internal::AddPodsByNodeIndex(pods_);
  nodes_.AddHandlers({.on_add =
                          [this](const auto& n) {
                            if (HasNoExecuteNodeTaint(*n)) queue_.Add(n->metadata.name);
                          },
                      .on_update =
                          [this](const auto& before, const auto& n) {
                            if (before->spec.taints != n->spec.taints &&
                                HasNoExecuteNodeTaint(*n)) {
                              queue_.Add(n->metadata.name);
                            }
                          },
                      .on_delete = {}});
  auto pod_changed = [this](const auto& p) {
    if (p->spec.node_name.empty() || p->metadata.deletion_timestamp) return;
    auto node = nodes_.Get("", p->spec.node_name);
    if (node != nullptr && HasNoExecuteNodeTaint(*node)) queue_.Add(p->spec.node_name);
  };
  pods_.AddHandlers({.on_add = pod_changed,
                     .on_update = [pod_changed](const auto&, const auto& p) { pod_changed(p); },
                     .on_delete = {}});
}

TaintEvictionController::~TaintEvictionController() { Stop(); }

void TaintEvictionController::Start() {
  for (const auto& node : nodes_.List()) {
    if (HasNoExecuteNodeTaint(*node)) queue_.Add(node->metadata.name);
  }
  workers_.Start(1);
}

void TaintEvictionController::Stop() {
  workers_.Stop();
  events_.Stop();
}

Timestamp TaintEvictionController::FirstSeen(const std::string& node, const cv1::Taint& taint) {
  return first_seen_.try_emplace({node, taint.key, taint.value}, clock_.Now()).first->second;
}

Status TaintEvictionController::Sync(const std::string& name) {
  auto node = nodes_.Get("", name);
  // Forget when taints that are gone were first seen: one added again later counts from then.
  const std::vector<cv1::Taint> none;
  const std::vector<cv1::Taint>& taints = node != nullptr ? node->spec.taints : none;
  std::erase_if(first_seen_, [&](const auto& e) {
    return std::get<0>(e.first) == name &&
           std::none_of(taints.begin(), taints.end(), [&](const cv1::Taint& t) {
             return t.effect == "NoExecute" && t.key == std::get<1>(e.first) &&
                    t.value == std::get<2>(e.first);
           });
  });
  if (node == nullptr || !HasNoExecuteNodeTaint(*node)) return Status::Ok();
  const Timestamp now = clock_.Now();
  std::optional<Timestamp> next;
  Status first;
  for (const auto& pod : pods_.ByIndex(internal::kPodsByNodeIndex, name)) {
    if (pod->metadata.deletion_timestamp) continue;
    std::optional<Timestamp> due = api::labels::NoExecuteEvictionTime(
        *pod, node->spec.taints, [&](const cv1::Taint& t) { return FirstSeen(name, t); });
    if (!due) continue;
    if (*due > now) {
      next = next ? std::min(*next, *due) : *due;
      continue;
    }
    const std::string pod_name = pod->metadata.namespace_ + "/" + pod->metadata.name;
    StatusOr<bool> deleted =
        internal::EvictPod(api_, events_, clock_,
                           {.namespace_ = pod->metadata.namespace_,
                            .name = pod->metadata.name,
                            .uid = pod->metadata.uid,
                            .event_reason = "TaintManagerEviction",
                            .event_message = "Marking for deletion Pod " + pod_name,
                            .condition_reason = "DeletionByTaintManager",
                            .condition_message = "Taint manager: deleting due to NoExecute taint",
                            .field_manager = options_.field_manager});
    if (!deleted.ok()) {
      if (first.ok()) first = deleted.status();
      continue;
    }
    if (!*deleted) continue;
    log::Info("taint-eviction: evicted pod {} from node {}", pod_name, name);
    NodeTaintPodDeletionsMetric().Increment();
    NodeTaintPodDeletionLatencyMetric().Observe(
        std::max(0.0, std::chrono::duration<double>(now - *due).count()));
  }
  if (next) queue_.AddAfter(name, *next - now);
  return first;
}

}  // namespace draplane::controllers
