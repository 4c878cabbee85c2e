#include "controllers/devicetaint/controller.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <utility>

#include "client/typed.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "controllers/internal/evict_pod.h"

namespace draplane::controllers {

namespace rv1 = api::resourcev1;
namespace cv1 = api::corev1;
using devicetaint::PodEviction;

namespace {

// Upstream's metrics (pkg/controller/devicetainteviction/metrics), under their names.
metrics::Counter PodDeletionsMetric() {
  static const metrics::Counter counter =
      metrics::NewCounterFamily(
          "device_taint_eviction_controller_pod_deletions_total",
          "Total number of Pods deleted by DeviceTaintEvictionController since its start.", {})
          .WithLabels({});
  return counter;
}
metrics::Histogram PodDeletionLatencyMetric() {
  static const metrics::Histogram histogram =
      metrics::NewHistogramFamily(
          "device_taint_eviction_controller_pod_deletion_duration_seconds",
          "Latency, in seconds, between the time when a device taint effect has been activated "
          "and a Pod's deletion via DeviceTaintEvictionController.",
          {}, {0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240})
          .WithLabels({});
  return histogram;
}

constexpr std::string_view kEvictKey = "evict";
constexpr std::string_view kRulePrefix = "rule:";

}  // namespace

DeviceTaintController::DeviceTaintController(client::ApiClient& api,
                                             client::SharedInformers& informers, const Clock& clock,
                                             DeviceTaintControllerOptions options)
    : api_(api),
      clock_(clock),
      options_(std::move(options)),
      slices_(informers.Get<rv1::ResourceSlice>()),
      rules_(informers.Get<rv1::DeviceTaintRule>()),
      claims_(informers.Get<rv1::ResourceClaim>()),
      pods_(informers.Get<cv1::Pod>()),
      events_(api, clock,
              client::EventRecorderOptions{
                  .component = options_.field_manager, .host = "", .synchronous = false}),
      queue_(clock, options_.rate_limits, "device_taint_eviction_controller"),
      workers_("device-taint-eviction", queue_,
               [this](const std::string& key) { return Sync(key); }) {
  // Upstream's families exist from the start (0 evictions), not from the first eviction.
  PodDeletionsMetric();
  PodDeletionLatencyMetric();
  auto evict = [this] { queue_.Add(std::string(kEvictKey)); };
  // Claim and pod changes matter only while some NoExecute taint exists (evaluator.h step 2);
  // without this every allocation would re-evaluate the whole cluster.
  auto evict_if_tainted = [this] {
    if (AnyNoExecuteTaint()) queue_.Add(std::string(kEvictKey));
  };
  slices_.AddHandlers({.on_add =
                           [this, evict](const auto& s) {
                             NoteSlice(*s, false);
                             evict();
                           },
                       .on_update =
                           [this, evict](const auto&, const auto& s) {
                             NoteSlice(*s, false);
                             evict();
                           },
                       .on_delete =
                           [this, evict](const auto& s) {
                             NoteSlice(*s, true);
                             evict();
                           }});
  claims_.AddHandlers(
      {.on_add = [evict_if_tainted](const auto&) { evict_if_tainted(); },
       .on_update = [evict_if_tainted](const auto&, const auto&) { evict_if_tainted(); },
       .on_delete = [evict_if_tainted](const auto&) { evict_if_tainted(); }});
  pods_.AddHandlers(
      {.on_add = [evict_if_tainted](const auto&) { evict_if_tainted(); },
       .on_update = [evict_if_tainted](const auto&, const auto&) { evict_if_tainted(); },
       .on_delete = [evict_if_tainted](const auto&) { evict_if_tainted(); }});
  auto rule = [this, evict](const auto& r) {
    NoteRule(*r, false);
    queue_.Add(std::string(kRulePrefix) + r->metadata.name);
    evict();
  };
  rules_.AddHandlers({.on_add = rule,
                      .on_update = [rule](const auto&, const auto& r) { rule(r); },
                      .on_delete =
                          [this, evict](const auto& r) {
                            NoteRule(*r, true);
                            evict();
                          }});
}

void DeviceTaintController::NoteSlice(const rv1::ResourceSlice& slice, bool deleted) {
  bool tainted = false;
  for (const rv1::Device& device : slice.spec.devices) {
    for (const rv1::DeviceTaint& taint : device.taints) {
      tainted = tainted || taint.effect == rv1::kDeviceTaintEffectNoExecute;
    }
  }
  MutexLock lock(mu_);
  if (tainted && !deleted) {
    noexecute_slices_.insert(slice.metadata.name);
  } else {
    noexecute_slices_.erase(slice.metadata.name);
  }
}

void DeviceTaintController::NoteRule(const rv1::DeviceTaintRule& rule, bool deleted) {
  MutexLock lock(mu_);
  if (!deleted && rule.spec.taint.effect == rv1::kDeviceTaintEffectNoExecute) {
    noexecute_rules_.insert(rule.metadata.name);
  } else {
    noexecute_rules_.erase(rule.metadata.name);
  }
}

bool DeviceTaintController::AnyNoExecuteTaint() const {
  MutexLock lock(mu_);
  return !noexecute_slices_.empty() || !noexecute_rules_.empty();
}

DeviceTaintController::~DeviceTaintController() { Stop(); }

void DeviceTaintController::Start() {
  queue_.Add(std::string(kEvictKey));
  for (const auto& rule : rules_.List()) {
    queue_.Add(std::string(kRulePrefix) + rule->metadata.name);
  }
  workers_.Start(1);
}

void DeviceTaintController::Stop() {
  workers_.Stop();
  events_.Stop();
}

int64_t DeviceTaintController::evicted() const {
  MutexLock lock(mu_);
  return evicted_;
}

int64_t DeviceTaintController::evicted_by_rule(const std::string& rule_uid) const {
  MutexLock lock(mu_);
  auto it = evicted_by_rule_.find(rule_uid);
  return it == evicted_by_rule_.end() ? 0 : it->second;
}

Status DeviceTaintController::Sync(const std::string& key) {
  if (key == kEvictKey) return SyncEvictions();
  if (key.starts_with(kRulePrefix)) return SyncRule(key.substr(kRulePrefix.size()));
  return Status::Ok();
}

void DeviceTaintController::NoteTaints() {
  // Remember when taints without timeAdded were first seen (step 3 of evaluator.h).
  const Timestamp now = clock_.Now();
  MutexLock lock(mu_);
  for (const auto& rule : rules_.List()) {
    if (!rule->spec.taint.time_added) taint_seen_.emplace(devicetaint::RuleTaintKey(*rule), now);
  }
  for (const auto& slice : slices_.List()) {
    for (const rv1::Device& device : slice->spec.devices) {
      for (const rv1::DeviceTaint& taint : device.taints) {
        if (taint.time_added) continue;
        taint_seen_.emplace(devicetaint::SliceTaintKey(slice->spec.driver, slice->spec.pool.name,
                                                       device.name, taint.key),
                            now);
      }
    }
  }
}

devicetaint::Snapshot DeviceTaintController::TakeSnapshot(
    std::vector<std::shared_ptr<const void>>* keep) {
  NoteTaints();
  devicetaint::Snapshot s;
  for (const auto& o : slices_.List()) {
    s.slices.push_back(o.get());
    keep->push_back(o);
  }
  for (const auto& o : rules_.List()) {
    s.rules.push_back(o.get());
    keep->push_back(o);
  }
  for (const auto& o : claims_.List()) {
    s.claims.push_back(o.get());
    keep->push_back(o);
  }
  for (const auto& o : pods_.List()) {
    s.pods.push_back(o.get());
    keep->push_back(o);
  }
  MutexLock lock(mu_);
  s.taint_seen = taint_seen_;
  return s;
}

Status DeviceTaintController::SyncEvictions() {
  if (!AnyNoExecuteTaint()) {
    NoteTaints();  // a taint that later becomes NoExecute counts from when it was first seen
    return Status::Ok();
  }
  std::vector<std::shared_ptr<const void>> keep;
  devicetaint::Snapshot snapshot = TakeSnapshot(&keep);
  const Timestamp now = clock_.Now();
  std::optional<Timestamp> next;
  Status first;
  for (const PodEviction& e : devicetaint::Evaluate(snapshot)) {
    if (e.when > now) {
      next = next ? std::min(*next, e.when) : e.when;
      continue;
    }
    Status s = Evict(e);
    if (!s.ok() && first.ok()) first = s;
  }
  if (next) queue_.AddAfter(std::string(kEvictKey), *next - now);
  return first;
}

Status DeviceTaintController::Evict(const PodEviction& e) {
  std::string reasons;
  for (const devicetaint::TaintReason& r : e.reasons) {
    reasons += (reasons.empty() ? "" : ", ") + r.ToString();
  }
  StatusOr<bool> deleted = internal::EvictPod(
      api_, events_, clock_,
      {.namespace_ = e.namespace_,
       .name = e.name,
       .uid = e.uid,
       .event_reason = "DeviceTaintManagerEviction",
       .event_message = "Marking for deletion",
       .condition_reason = "DeletionByDeviceTaintManager",
       .condition_message = "Device Taint manager: deleting due to NoExecute taint",
       .field_manager = options_.field_manager});
  if (!deleted.ok()) return deleted.status();
  if (!*deleted) return Status::Ok();
  log::Info("device-taint-eviction: evicted pod {}/{} ({})", e.namespace_, e.name, reasons);
  PodDeletionsMetric().Increment();
  // From when the eviction became due (the taint's time plus the toleration) to the delete.
  PodDeletionLatencyMetric().Observe(
      std::max(0.0, std::chrono::duration<double>(clock_.Now() - e.when).count()));
  MutexLock lock(mu_);
  ++evicted_;
  // One Pod counts once per rule, however many of its devices the rule taints.
  std::set<std::string> rules;
  for (const devicetaint::TaintReason& r : e.reasons) {
    if (r.rule.empty() || !rules.insert(r.rule_uid).second) continue;
    ++evicted_by_rule_[r.rule_uid];
    queue_.AddAfter(std::string(kRulePrefix) + r.rule, options_.rule_status_period);
  }
  return Status::Ok();
}

Status DeviceTaintController::SyncRule(const std::string& name) {
  auto cached = rules_.Get("", name);
  if (cached == nullptr) return Status::Ok();
  const Timestamp now = clock_.Now();
  const api::metav1::Condition* existing = nullptr;
  for (const api::metav1::Condition& c : cached->status.conditions) {
    if (c.type == devicetaint::kEvictionInProgress) existing = &c;
  }
  if (existing != nullptr && existing->observed_generation == cached->metadata.generation) {
    const Duration since = now - existing->last_transition_time.ToTimestamp();
    // None is a one-time report per generation; NoExecute refreshes at most every period.
    if (cached->spec.taint.effect == rv1::kDeviceTaintEffectNone) return Status::Ok();
    if (since < options_.rule_status_period) {
      queue_.AddAfter(std::string(kRulePrefix) + name, options_.rule_status_period - since);
      return Status::Ok();
    }
  }
  std::vector<std::shared_ptr<const void>> keep;
  devicetaint::Snapshot snapshot = TakeSnapshot(&keep);
  devicetaint::RuleReport report = devicetaint::ReportRule(snapshot, *cached);
  api::metav1::Condition desired =
      devicetaint::RuleCondition(*cached, report, evicted_by_rule(cached->metadata.uid));
  if (existing != nullptr) desired.last_transition_time = existing->last_transition_time;
  if (existing == nullptr || !(desired == *existing)) {
    desired.last_transition_time = api::Time::FromTimestamp(now);
    rv1::DeviceTaintRule updated = *cached;
    std::erase_if(updated.status.conditions, [](const api::metav1::Condition& c) {
      return c.type == devicetaint::kEvictionInProgress;
    });
    updated.status.conditions.push_back(desired);
    StatusOr<rv1::DeviceTaintRule> written =
        client::UpdateStatus(api_, updated, options_.field_manager);
    if (!written.ok()) {
      if (written.status().code() == StatusCode::kNotFound) return Status::Ok();
      return written.status();  // Conflict: retried with the newer rule
    }
    log::Info("device-taint-eviction: rule {}: {} {} {}", name, desired.status, desired.reason,
              desired.message);
  }
  if (desired.status == "True") {
    queue_.AddAfter(std::string(kRulePrefix) + name, options_.rule_status_period);
  }
  return Status::Ok();
}

}  // namespace draplane::controllers
