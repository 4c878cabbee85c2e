#include "controllers/podgc/pod_gc.h"

#include <algorithm>
#include <set>
#include <utility>

#include "api/nodes.h"
#include "api/pods.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/metrics.h"

namespace draplane::controllers {

namespace cv1 = api::corev1;

namespace {

constexpr std::string_view kGcKey = "gc";
constexpr std::string_view kOutOfServiceTaint = "node.kubernetes.io/out-of-service";
// The reason label values of upstream's metrics (pkg/controller/podgc/metrics).
constexpr std::string_view kReasonTerminated = "terminated";
constexpr std::string_view kReasonOutOfService = "out-of-service";
constexpr std::string_view kReasonOrphaned = "orphaned";
constexpr std::string_view kReasonUnscheduled = "unscheduled";

metrics::CounterFamily ForceDeletesMetric() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "pod_gc_collector_force_delete_pods_total",
      "Number of pods that are being forcefully deleted since the Pod GC Controller started.",
      {"namespace", "reason"});
  return family;
}
metrics::CounterFamily ForceDeleteErrorsMetric() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "pod_gc_collector_force_delete_pod_errors_total",
      "Number of errors encountered when forcefully deleting the pods since the Pod GC "
      "Controller started.",
      {"namespace", "reason"});
  return family;
}

bool Evicted(const cv1::Pod& pod) {
  return pod.status.phase == cv1::kPodPhaseFailed && pod.status.reason == "Evicted";
}

}  // namespace

PodGCController::PodGCController(client::ApiClient& api, client::SharedInformers& informers,
                                 const Clock& clock, PodGCOptions options)
    : api_(api),
      clock_(clock),
      options_(std::move(options)),
      nodes_(informers.Get<cv1::Node>()),
      pods_(informers.Get<cv1::Pod>()),
      queue_(clock, {}, "orphaned_pods_nodes"),
      workers_("pod-gc", queue_, [this](const std::string&) {
        Status s = Sync();
        queue_.AddAfter(std::string(kGcKey), options_.check_period);
        return s;
      }) {
  ForceDeletesMetric();
  ForceDeleteErrorsMetric();
}

PodGCController::~PodGCController() { Stop(); }

void PodGCController::Start() {
  queue_.Add(std::string(kGcKey));
  workers_.Start(1);
}

void PodGCController::Stop() { workers_.Stop(); }

Status PodGCController::Sync() {
  std::vector<PodPtr> pods = pods_.List();
  // Namespace and name order, so that a pass acts (and logs) the same way on the same cluster.
  std::sort(pods.begin(), pods.end(), [](const PodPtr& a, const PodPtr& b) {
    return std::tie(a->metadata.namespace_, a->metadata.name) <
           std::tie(b->metadata.namespace_, b->metadata.name);
  });
  Status first;
  for (Status s : {options_.terminated_pod_threshold > 0 ? CollectTerminated(pods) : Status::Ok(),
                   CollectTerminatingOutOfService(pods), CollectOrphaned(pods),
                   CollectUnscheduledTerminating(pods)}) {
    if (!s.ok() && first.ok()) first = std::move(s);
  }
  return first;
}

Status PodGCController::CollectTerminated(const std::vector<PodPtr>& pods) {
  std::vector<PodPtr> terminated;
  for (const PodPtr& p : pods) {
    if (api::IsPodTerminal(*p)) terminated.push_back(p);
  }
  const auto excess = static_cast<ptrdiff_t>(terminated.size()) - options_.terminated_pod_threshold;
  if (excess <= 0) return Status::Ok();
  log::Info("pod-gc: {} terminated pods, {} over --terminated-pod-gc-threshold; deleting those",
            terminated.size(), excess);
  // Evicted Pods first (they are rarely what a controller's owner looks at), then the oldest;
  // names break ties (upstream byEvictionAndCreationTimestamp).
  std::sort(terminated.begin(), terminated.end(), [](const PodPtr& a, const PodPtr& b) {
    const bool a_evicted = Evicted(*a), b_evicted = Evicted(*b);
    if (a_evicted != b_evicted) return a_evicted;
    return std::tie(a->metadata.creation_timestamp, a->metadata.name) <
           std::tie(b->metadata.creation_timestamp, b->metadata.name);
  });
  Status first;
  for (ptrdiff_t i = 0; i < excess; ++i) {
    Status s = MarkFailedAndDelete(*terminated[i], kReasonTerminated);
    if (!s.ok() && first.ok()) first = std::move(s);
  }
  return first;
}

Status PodGCController::CollectTerminatingOutOfService(const std::vector<PodPtr>& pods) {
  Status first;
  for (const PodPtr& p : pods) {
    if (!p->metadata.deletion_timestamp || p->spec.node_name.empty()) continue;
    std::shared_ptr<const cv1::Node> node = nodes_.Get("", p->spec.node_name);
    if (node == nullptr || api::IsNodeReady(*node)) continue;
    const bool out_of_service =
        std::any_of(node->spec.taints.begin(), node->spec.taints.end(),
                    [](const cv1::Taint& t) { return t.key == kOutOfServiceTaint; });
    if (!out_of_service) continue;
    Status s = MarkFailedAndDelete(*p, kReasonOutOfService);
    if (!s.ok() && first.ok()) first = std::move(s);
  }
  return first;
}

Status PodGCController::CollectOrphaned(const std::vector<PodPtr>& pods) {
  const Timestamp now = clock_.Now();
  std::set<std::string> missing;
  for (const PodPtr& p : pods) {
    if (!p->spec.node_name.empty() && nodes_.Get("", p->spec.node_name) == nullptr) {
      missing.insert(p->spec.node_name);
    }
  }
  // Quarantine: a node the cache has not shown yet (created moments ago, a cache behind the
  // API) gets `quarantine` to appear before the API is asked.
  std::erase_if(missing_since_, [&](const auto& entry) { return !missing.contains(entry.first); });
  std::set<std::string> deleted;
  Status first;
  for (const std::string& name : missing) {
    auto [it, added] = missing_since_.emplace(name, now);
    if (added || now - it->second < options_.quarantine) continue;
    missing_since_.erase(it);  // a Pod bound to the name again later waits anew, as upstream
    StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", name);
    if (node.ok()) continue;
    if (node.status().code() != StatusCode::kNotFound) {
      if (first.ok()) first = node.status();
      continue;
    }
    deleted.insert(name);
  }
  for (const PodPtr& p : pods) {
    if (!deleted.contains(p->spec.node_name)) continue;
    Status s =
        MarkFailedAndDelete(*p, kReasonOrphaned, "DeletionByPodGC", "PodGC: node no longer exists");
    if (!s.ok() && first.ok()) first = std::move(s);
  }
  return first;
}

Status PodGCController::CollectUnscheduledTerminating(const std::vector<PodPtr>& pods) {
  Status first;
  for (const PodPtr& p : pods) {
    if (!p->metadata.deletion_timestamp || !p->spec.node_name.empty()) continue;
    Status s = MarkFailedAndDelete(*p, kReasonUnscheduled);
    if (!s.ok() && first.ok()) first = std::move(s);
  }
  return first;
}

Status PodGCController::MarkFailedAndDelete(const cv1::Pod& pod, std::string_view reason,
                                            std::string_view disruption_reason,
                                            std::string_view disruption_message) {
  const std::string& ns = pod.metadata.namespace_;
  ForceDeletesMetric().WithLabels({ns, reason}).Increment();
  auto failed = [&](Status s) {
    if (s.code() == StatusCode::kNotFound) return Status::Ok();  // gone meanwhile
    ForceDeleteErrorsMetric().WithLabels({ns, reason}).Increment();
    log::Warning("pod-gc: force-deleting pod {}/{} ({}): {}", ns, pod.metadata.name, reason,
                 s.ToString());
    return s;
  };
  // Written over the cached Pod; on a conflict (it changed since) once more over a fresh read.
  cv1::Pod current = pod;
  for (int attempt = 0; !api::IsPodTerminal(current); ++attempt) {
    cv1::Pod updated = current;
    updated.status.phase = std::string(cv1::kPodPhaseFailed);
    if (!disruption_reason.empty()) {
      api::SetPodCondition(&updated.status, cv1::kPodConditionTypeDisruptionTarget, "True",
                           disruption_reason, disruption_message,
                           api::Time::FromTimestamp(clock_.Now()));
    }
    Status written = client::UpdateStatusOnly(api_, std::move(updated), options_.field_manager);
    if (written.ok()) break;
    if (written.code() != StatusCode::kConflict || attempt > 0) return failed(std::move(written));
    StatusOr<cv1::Pod> fresh = client::Get<cv1::Pod>(api_, ns, pod.metadata.name);
    if (!fresh.ok()) return failed(fresh.status());
    if (fresh->metadata.uid != pod.metadata.uid) return Status::Ok();  // replaced: not this Pod
    current = *std::move(fresh);
  }
  log::Info("pod-gc: force-deleting pod {}/{} of node \"{}\" ({})", ns, pod.metadata.name,
            pod.spec.node_name, reason);
  client::DeleteOptions options;
  options.grace_period_seconds = 0;
  options.precondition_uid = pod.metadata.uid;
  // A Pod replaced under the same name fails the uid precondition: not this Pod any more.
  Status deleted = client::Delete<cv1::Pod>(api_, ns, pod.metadata.name, options);
  if (deleted.code() == StatusCode::kConflict) return Status::Ok();
  return deleted.ok() ? Status::Ok() : failed(std::move(deleted));
}

}  // namespace draplane::controllers
