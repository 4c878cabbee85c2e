#include "scheduler/scheduler.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <set>
#include <tuple>

#include "api/device_taints.h"
#include "api/labels/node_isolation.h"
#include "api/meta/duration.h"
#include "api/meta/resource_version.h"
#include "api/pods.h"
#include "api/quota/metrics.h"
#include "api/quota/usage.h"
#include "api/resource_claims.h"
#include "api/validation/sharing_policy_validation.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/saturating.h"
#include "common/thread_name.h"
#include "scheduler/device_states.h"
#include "scheduler/explain.h"
#include "scheduler/profile.h"

namespace draplane::scheduler {

namespace rv1 = api::resourcev1;
using api::corev1::Pod;

struct Scheduler::InboxItem {
  enum class Kind {
    kPod,
    kPodDelete,
    kNode,
    kNodeDelete,
    kClaim,
    kClaimDelete,
    kClass,
    kClassDelete,
    kSlice,
    kSliceDelete,
    kTaintRule,
    kTaintRuleDelete,
    kBindingWaiting,
    kQuota,
    kQuotaDelete,
    kNamespace,
    kNamespaceDelete,
    kSharingPolicy,
    kSharingPolicyDelete,
    kBindingDone,
    kQuotaRecount,      // a recount's reads are done (`recount`)
    kQuotaRecountDone,  // its writes are done (`recount->conflict`: one must be redone)
    kChargeDecided,     // the quota charge of the binding of Pod `pod_uid` is decided
  };
  // The reads of a quota recount, made off the loop thread: the namespace's quotas, then its
  // claims (in that order: quota_charger.h).
  struct Recount {
    std::string ns;
    bool correction = false;
    bool conflict = false;
    Status error;
    std::vector<api::corev1::ResourceQuota> quotas;
    std::vector<rv1::ResourceClaim> claims;
    // Claims whose charge had not landed: uid -> the charge marker of our allocation (left out
    // when the claim carries it: another replica's allocation of the claim is counted).
    std::map<std::string, std::string> expected;
  };
  Kind kind = Kind::kPod;
  std::shared_ptr<const void> old_object{};
  std::shared_ptr<const void> new_object{};
  std::shared_ptr<Binding> binding{};
  PluginStatus status{};
  std::shared_ptr<Recount> recount{};
  std::string pod_uid{};
};

struct Scheduler::Binding {
  QueuedPod queued;
  PodInfo info;
  std::shared_ptr<CycleState> state;
  std::string node;
  Duration started{0};
  std::vector<std::string> allocated_claims;  // uids allocated in this cycle
  int evaluated_nodes = 0;
  int feasible_nodes = 0;
  // The binding cycle failed but the API shows the pod on a node: another scheduler (a replica
  // without leader election) bound it, using the claims this cycle wrote. Nothing is undone.
  bool bound_by_other = false;
  // Waiting for binding conditions or a write of PreBind (loop thread): since when, until when
  // (monotonic), and the "namespace/claim" keys of the pod's claims. `announced`: the wait is for
  // binding conditions (an Event, the waiting gauge; the Pod was nominated), not only for a write
  // in flight.
  bool announced = false;
  Duration wait_started{0};
  Duration wait_deadline{0};
  std::vector<std::string> claim_keys;
};

namespace {
constexpr char kPoolIndex[] = "draplane.scheduler/pool";
// The pending reason of a Pod held back before its attempts (scheduling gates, PreEnqueue).
constexpr char kGatedReason[] = "Gated";
}  // namespace

namespace {

// The fields whose change may make a pending pod schedulable.
uint32_t PodUpdateActions(const Pod& before, const Pod& after) {
  uint32_t actions = 0;
  if (!(before.status.resource_claim_statuses == after.status.resource_claim_statuses)) {
    actions |= kUpdatePodGeneratedResourceClaim;
  }
  const auto& a = before.spec;
  const auto& b = after.spec;
  if (!(a.tolerations == b.tolerations) || !(a.scheduling_gates == b.scheduling_gates) ||
      !(a.containers == b.containers) || !(a.init_containers == b.init_containers) ||
      a.node_selector != b.node_selector || !(a.affinity == b.affinity) ||
      !(a.resource_claims == b.resource_claims)) {
    actions |= kUpdatePodSpec;
  }
  return actions;
}

uint32_t NodeUpdateActions(const api::corev1::Node& before, const api::corev1::Node& after) {
  uint32_t actions = 0;
  if (before.metadata.labels != after.metadata.labels) actions |= kUpdateNodeLabel;
  if (!(before.spec.taints == after.spec.taints) ||
      before.spec.unschedulable != after.spec.unschedulable) {
    actions |= kUpdateNodeTaint;
  }
  if (before.status.allocatable != after.status.allocatable) actions |= kUpdateNodeAllocatable;
  if (!(before.status.conditions == after.status.conditions)) actions |= kUpdateNodeCondition;
  return actions;
}

bool IsExtendedResourceClaim(const rv1::ResourceClaim& claim, std::string* owner_uid) {
  auto a = claim.metadata.annotations.find(kExtendedResourceClaimAnnotation);
  if (a == claim.metadata.annotations.end() || a->second != "true") return false;
  for (const auto& owner : claim.metadata.owner_references) {
    if (owner.kind == "Pod" && owner.controller.value_or(false)) {
      *owner_uid = owner.uid;
      return true;
    }
  }
  return false;
}

}  // namespace

Scheduler::Scheduler(client::ApiClient& api, const Clock& clock, SchedulerOptions options)
    : api_(api),
      clock_(clock),
      options_(std::move(options)),
      profile_(options_.scheduler_names.empty() ? std::string("default-scheduler")
                                                : options_.scheduler_names.front()),
      metrics_(SchedulerMetrics::For(profile_)),
      random_(NewSeededRandom(options_.random_seed != 0 ? options_.random_seed
                                                        : SecureRandom().Next64())),
      quota_charger_(api, "draplane-scheduler", /*conflict_retries=*/5,
                     [this](std::function<void()> work) { RunAsync(std::move(work), true); }),
      framework_(
          FrameworkOptions{.percentage_of_nodes_to_score = options_.percentage_of_nodes_to_score,
                           .diagnose = true}) {
  tenants_ = metrics::TenantLabels(options_.metrics_tenants);
  framework_.RecordPluginMetrics(metrics_.plugin_seconds, clock_);
  holds_ = std::make_unique<StarvationHolds>(cluster_.ledger());
  DynamicResourcesDeps deps;
  deps.cluster = &cluster_;
  deps.api = &api_;
  deps.confirmations = &confirmations_;
  deps.quotas = &quota_charger_;
  deps.charge_decided = [this](const std::string& pod_uid) {
    Post({.kind = InboxItem::Kind::kChargeDecided, .pod_uid = pod_uid});
  };
  deps.run_async = [this](std::function<void()> work) { RunAsync(std::move(work)); };
  deps.clock = &clock_;
  deps.random = random_.get();
  deps.contested = [this](const Pod& pod) {
    return fair_order_ == nullptr
               ? allocator::ContestedClasses{}
               : fair_order_->Contested(pod.metadata.namespace_, pod.spec.priority.value_or(0));
  };
  deps.holds = [this] {
    return HoldsEnforced() ? holds_->InForce(clock_.MonotonicNow())
                           : std::vector<allocator::DeviceHold>{};
  };
  deps.pool_slices = [this](std::string_view driver, std::string_view pool) {
    std::vector<std::shared_ptr<const rv1::ResourceSlice>> out;
    if (slices_ != nullptr) {
      out = slices_->ByIndex(kPoolIndex, std::string(driver) + "/" + std::string(pool));
    }
    // The devices as Filter saw them: tainted by the DeviceTaintRules too.
    if (taint_rules_ != nullptr && !out.empty()) {
      std::vector<std::shared_ptr<const rv1::DeviceTaintRule>> rules = taint_rules_->List();
      std::vector<const rv1::DeviceTaintRule*> borrowed;
      for (const auto& rule : rules) borrowed.push_back(rule.get());
      // The informer's order is not fixed; the rules' is (by name), as ClusterState's.
      std::sort(borrowed.begin(), borrowed.end(),
                [](const auto* a, const auto* b) { return a->metadata.name < b->metadata.name; });
      for (auto& slice : out) {
        if (std::optional<rv1::ResourceSlice> tainted = api::WithRuleTaints(*slice, borrowed)) {
          slice = std::make_shared<const rv1::ResourceSlice>(std::move(*tainted));
        }
      }
    }
    return out;
  };
  DynamicResourcesOptions dra;
  dra.features = options_.features;
  dra.extended_resources = options_.extended_resources;
  dra.confirm_allocations = options_.confirm_allocations && !options_.synchronous;
  dra.explain_budget = options_.explain_budget;
  dra.allocation_step_limit = options_.allocation_step_limit;
  dra.evaluation_budget = options_.evaluation_budget;
  dra.binding_timeout = options_.binding_timeout;
  AddDefaultPlugins(framework_, std::move(deps), dra, &api_);
  queue_ = std::make_unique<SchedulingQueue>(
      clock_, options_.queue, [this](const Pod& pod) -> std::optional<std::string> {
        PluginStatus s = framework_.RunPreEnqueue(pod);
        // A Pod a PreEnqueue plugin holds back (its claim not created yet) is pending as
        // `Gated`, as scheduler_pending_pods{queue="gated"} counts it, until it is let through.
        const std::string& uid = pod.metadata.uid;
        auto reason = pending_reasons_.find(uid);
        if (s.ok()) {
          if (reason != pending_reasons_.end() && reason->second == kGatedReason) {
            pending_reasons_.erase(reason);
            RecountPending(uid);
          }
          return std::nullopt;
        }
        if (reason == pending_reasons_.end() || reason->second != kGatedReason) {
          pending_reasons_[uid] = kGatedReason;
          RecountPending(uid);
        }
        return s.plugin();
      });
  if (options_.decision_records) {
    decisions_ = std::make_unique<DecisionRecorder>(
        api_, DecisionRecorderOptions{.synchronous = options_.synchronous},
        metrics_.decisions_written, metrics_.decisions_dropped);
  }
  if (options_.record_events) {
    events_ = std::make_unique<client::EventRecorder>(
        api_, clock_,
        client::EventRecorderOptions{
            .component = options_.component,
            // An events.k8s.io-style Event needs a reporting instance (the API server refuses
            // one without).
            .host = options_.identity.empty() ? options_.component : options_.identity,
            .synchronous = options_.synchronous,
            // kube-scheduler records through the events.k8s.io
            // broadcaster (client-go tools/events).
            .series = true});
  }
}

Scheduler::~Scheduler() { Stop(); }

bool Scheduler::Ours(const Pod& pod) const {
  std::string_view name = pod.spec.scheduler_name;
  if (name.empty()) name = "default-scheduler";
  return std::find(options_.scheduler_names.begin(), options_.scheduler_names.end(), name) !=
         options_.scheduler_names.end();
}

void Scheduler::OnSharingPolicy(const api::draplanev1alpha1::DeviceSharingPolicy* old_policy,
                                const api::draplanev1alpha1::DeviceSharingPolicy* policy) {
  const auto& named = policy != nullptr ? *policy : *old_policy;
  if (policy == nullptr) {
    written_sharing_.erase(named.metadata.name);
  } else if (!policy->status ||
             policy->status->observed_generation.value_or(0) != policy->metadata.generation) {
    sharing_status_due_ = true;
  }
  if (named.metadata.name != api::validation::kDefaultSharingPolicyName) return;
  if (policy == nullptr) {
    log::Info("scheduler: DeviceSharingPolicy {} deleted: the queue orders by priority and arrival",
              named.metadata.name);
    sharing_error_.clear();
    ApplySharingPolicy(std::nullopt, nullptr);
    return;
  }
  // The scheduler's own status writes change nothing the order reads.
  if (old_policy != nullptr && old_policy->spec == policy->spec) return;
  StatusOr<FairShareConfig> config = CompileSharingPolicy(*policy);
  if (!config.ok()) {
    // The server validates what it stores; this is a policy written past it (a store edited by
    // hand): the order in force stays, and the status says why.
    sharing_error_ = config.status().message();
    log::Warning("scheduler: DeviceSharingPolicy {} ignored: {}", policy->metadata.name,
                 sharing_error_);
    return;
  }
  sharing_error_.clear();
  log::Info("scheduler: DeviceSharingPolicy {} (generation {}) in force", policy->metadata.name,
            policy->metadata.generation);
  ApplySharingPolicy(*std::move(config), policy->status ? &*policy->status : nullptr);
}

void Scheduler::ReportSharing() {
  namespace d = api::draplanev1alpha1;
  std::vector<DomainShares> shares;
  if (fair_share_ != nullptr) {
    std::vector<PendingShare> pending;
    Duration now = clock_.MonotonicNow();
    Duration threshold = fair_share_->config().starvation_threshold;
    queue_->ForEach([&](const QueuedPod& queued) {
      const std::vector<int>& domains = QueuedDomains(*queued.pod);
      if (domains.empty()) return;
      pending.push_back({.namespace_ = queued.pod->metadata.namespace_,
                         .domains = domains,
                         .starving = now - queued.enqueued_at >= threshold});
    });
    shares = ComputeShares(*fair_share_, pending);
  }
  UpdateShareMetrics(shares);
  for (const std::shared_ptr<const d::DeviceSharingPolicy>& policy : sharing_policies_->List()) {
    const std::string& name = policy->metadata.name;
    bool named_default = name == api::validation::kDefaultSharingPolicyName;
    api::metav1::Condition ready;
    ready.type = "Ready";
    if (named_default && sharing_error_.empty() && fair_share_ != nullptr) {
      ready.status = "True";
      ready.reason = "InForce";
      ready.message = "the scheduler orders its queue by this policy";
      // A class the cluster does not have (yet) counts for nothing: said, since a misspelled
      // name would silently drop out of its domain.
      std::set<std::string> unknown;
      for (const d::SharingDomain& domain : policy->spec.domains) {
        for (const std::string& c : domain.device_classes) {
          if (cluster_.FindClass(c) == nullptr) unknown.insert(c);
        }
      }
      if (!unknown.empty()) {
        std::string names;
        for (const std::string& c : unknown) names += (names.empty() ? "" : ", ") + c;
        ready.message +=
            "; DeviceClasses not found, counting for nothing until they exist: " + names;
      }
    } else if (named_default) {
      ready.status = "False";
      ready.reason = "Invalid";
      ready.message = sharing_error_;
    } else {
      ready.status = "False";
      ready.reason = "NotDefault";
      ready.message = "only the DeviceSharingPolicy named \"default\" is in force";
    }
    // The transition time moves only with the condition's status.
    const api::metav1::Condition* before = nullptr;
    if (auto w = written_sharing_.find(name); w != written_sharing_.end()) {
      before = &w->second.first;
    } else if (policy->status) {
      for (const api::metav1::Condition& c : policy->status->conditions) {
        if (c.type == ready.type) before = &c;
      }
    }
    ready.last_transition_time = before != nullptr && before->status == ready.status
                                     ? before->last_transition_time
                                     : api::Time::FromTimestamp(clock_.Now());
    d::DeviceSharingPolicyStatus status = SharingStatus(
        named_default && fair_share_ != nullptr ? shares : std::vector<DomainShares>{},
        policy->metadata.generation, ready);
    boost::json::object patch;
    patch["status"] = client::ToJson(status);
    // A merge patch keeps what it omits: shares no longer reported are removed.
    if (status.domains.empty()) patch["status"].as_object()["domains"] = nullptr;
    std::string body = boost::json::serialize(patch);
    auto& written = written_sharing_[name];
    if (written.second == body) continue;
    written = {ready, body};
    RunAsync([this, name, patch = std::move(patch)]() mutable {
      StatusOr<d::DeviceSharingPolicy> out = client::Patch<d::DeviceSharingPolicy>(
          api_, "", name, client::PatchType::kMerge, std::move(patch), "status");
      if (!out.ok() && out.status().code() != StatusCode::kNotFound) {
        log::Warning("scheduler: DeviceSharingPolicy {} status: {}", name, out.status().ToString());
      }
    });
  }
}

void Scheduler::UpdateShareMetrics(const std::vector<DomainShares>& shares) {
  double phi = fair_share_ != nullptr ? fair_share_->config().history_fraction : 0;
  // (tenant label, domain) -> summed fractions: fair, current, decayed; starving pods.
  struct Sum {
    double fair = 0, current = 0, decayed = 0;
    int64_t starving = 0;
  };
  std::map<std::pair<std::string, std::string>, Sum> sums;
  for (const DomainShares& domain : shares) {
    for (const TenantShare& t : domain.tenants) {
      Sum& sum = sums[{std::string(tenants_.Of(t.namespace_)), domain.name}];
      sum.fair += t.fair;
      sum.current += t.current;
      sum.decayed += t.decayed;
      sum.starving += t.starving;
    }
  }
  std::set<std::vector<std::string>> share_series, starving_series;
  for (const auto& [key, sum] : sums) {
    const auto& [tenant, domain] = key;
    double used = (1 - phi) * sum.current + phi * sum.decayed;
    for (const auto& [kind, value] : {std::pair<const char*, double>{"fair", sum.fair},
                                      {"current", sum.current},
                                      {"decayed", sum.decayed},
                                      {"effective", sum.fair > 0 ? used / sum.fair : 0}}) {
      std::vector<std::string> labels{tenant, domain, kind};
      metrics_.tenant_share.WithLabels(labels).Set(value);
      share_series.insert(std::move(labels));
    }
    std::vector<std::string> labels{tenant, domain};
    metrics_.starving_pods.WithLabels(labels).Set(static_cast<double>(sum.starving));
    starving_series.insert(std::move(labels));
  }
  for (const auto& labels : reported_shares_) {
    if (!share_series.contains(labels)) metrics_.tenant_share.Remove(labels);
  }
  for (const auto& labels : reported_starving_) {
    if (!starving_series.contains(labels)) metrics_.starving_pods.Remove(labels);
  }
  reported_shares_ = std::move(share_series);
  reported_starving_ = std::move(starving_series);
}

void Scheduler::ApplySharingPolicy(std::optional<FairShareConfig> config,
                                   const api::draplanev1alpha1::DeviceSharingPolicyStatus* status) {
  // The active pods leave the old order (and so the old model's pending counts) first.
  queue_->SetOrder(nullptr);
  fair_order_ = nullptr;
  queued_domains_.clear();
  std::unique_ptr<FairShareModel> previous = std::move(fair_share_);
  if (config.has_value()) {
    fair_share_ = std::make_unique<FairShareModel>(*std::move(config), cluster_.ledger(), clock_);
    if (previous != nullptr) {
      fair_share_->TakeHistory(*previous);
    } else if (status != nullptr) {
      fair_share_->RestoreHistory(*status);
    }
    for (const auto& ns : namespaces_->List()) {
      fair_share_->SetNamespaceLabels(ns->metadata.name, ns->metadata.labels);
    }
  }
  previous.reset();
  if (fair_share_ == nullptr || !fair_share_->config().holds) {
    std::vector<std::string> held;
    for (const auto& [uid, hold] : holds_->holds()) held.push_back(uid);
    for (const std::string& uid : held) {
      auto pod = pending_.find(uid);
      ReleaseHold(uid, "PolicyChanged", pod != pending_.end() ? pod->second.get() : nullptr);
    }
  }
  if (fair_share_ != nullptr) {
    auto order = std::make_unique<FairShareOrder>(
        *fair_share_, [this](const Pod& pod) { return RequestedClasses(pod); });
    fair_order_ = order.get();
    queue_->SetOrder(std::move(order));
  }
}

bool Scheduler::HoldsEnforced() const {
  return fair_share_ != nullptr && fair_share_->config().holds;
}

std::vector<HoldNeed> Scheduler::HoldNeeds(const Pod& pod) const {
  std::vector<HoldNeed> out;
  auto add = [&](const std::string& device_class, const std::string& mode,
                 std::optional<int64_t> count) {
    out.push_back({.device_class = device_class,
                   .count = mode == "All" ? HoldNeed::kAllDevices : count.value_or(1)});
  };
  for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
    PodClaimName name = ClaimNameForPod(pod, entry);
    if (name.name.empty()) continue;
    ClusterState::ClaimPtr claim = cluster_.FindClaim(pod.metadata.namespace_, name.name);
    if (claim == nullptr || claim->status.allocation.has_value()) continue;
    ForEachRequestedClass(*claim, [&](const RequestedClass& c) {
      if (c.tier == 0) add(c.device_class, c.allocation_mode, c.count);
    });
  }
  return out;
}

bool Scheduler::QuotaHasRoomFor(const std::string& namespace_,
                                const std::vector<HoldNeed>& needs) const {
  std::map<std::string, int64_t> wanted;  // per quota key; All: at least one device
  for (const HoldNeed& need : needs) {
    int64_t& want = wanted[api::quota::DeviceClassResourceName(need.device_class)];
    want = SaturatingAdd(want, need.count == HoldNeed::kAllDevices ? 1 : need.count);
  }
  const allocator::ResourceList held =
      cluster_.ledger().holdings().Usage(namespace_, allocator::Holdings::Scope::kAll);
  for (const allocator::QuotaBudget& quota : cluster_.AllocationQuotas(namespace_)) {
    for (const auto& [key, count] : wanted) {
      auto hard = quota.hard.find(key);
      if (hard == quota.hard.end()) continue;
      auto used = held.find(key);
      if (SaturatingAdd(used == held.end() ? 0 : used->second.Value(), count) >
          hard->second.Value()) {
        return false;
      }
    }
  }
  return true;
}

void Scheduler::MaybeStartHold(const Pod& pod, Duration enqueued_at) {
  if (fair_share_ == nullptr) return;
  const std::string& uid = pod.metadata.uid;
  Duration now = clock_.MonotonicNow();
  const FairShareConfig& config = fair_share_->config();
  if (now - enqueued_at < config.starvation_threshold) {
    // Not yet: a Pod waiting in the unschedulable pool may see no attempt when it crosses the
    // threshold (no event moves it), so the crossing is a timer of its own.
    starving_due_.emplace(enqueued_at + config.starvation_threshold, uid, enqueued_at);
    return;
  }
  if (holds_->Has(uid) || holds_->CoolingDown(uid, now)) return;
  std::vector<HoldNeed> needs = HoldNeeds(pod);
  if (needs.empty() || !QuotaHasRoomFor(pod.metadata.namespace_, needs)) return;
  std::vector<std::string> nodes;
  for (const NodeInfo* n : cluster_.nodes()) nodes.push_back(n->name());
  std::optional<std::string> target = holds_->PickTarget(nodes, needs);
  if (!target) return;
  holds_->Start({.pod = pod.metadata.namespace_ + "/" + pod.metadata.name,
                 .uid = uid,
                 .priority = pod.spec.priority.value_or(0),
                 .node = *target,
                 .since = clock_.Now(),
                 .enqueued = enqueued_at,
                 .needs = std::move(needs)});
  if (events_) {
    events_->Record(
        client::ReferenceTo(pod), "Warning", "StarvationDetected",
        "waited " + api::FormatDuration(now - enqueued_at) +
            ", past the DeviceSharingPolicy's starvation threshold of " +
            api::FormatDuration(config.starvation_threshold) + "; target node " + *target +
            (config.holds ? ": devices freeing up there are held for the starving Pods that "
                            "target it, the longest waiting first"
                          : " (holds are off: nothing is held)"),
        "Scheduling");
  }
  GrowHolds();
}

void Scheduler::DetectStarvation() {
  Duration now = clock_.MonotonicNow();
  while (!starving_due_.empty() && std::get<0>(*starving_due_.begin()) <= now) {
    auto [due, uid, enqueued_at] = *starving_due_.begin();
    starving_due_.erase(starving_due_.begin());
    auto pod = pending_.find(uid);
    // Pods in their binding cycle got their devices; deleted or bound ones are gone.
    if (pod == pending_.end() || binding_.contains(uid) || !queue_->Contains(uid)) continue;
    MaybeStartHold(*pod->second, enqueued_at);
  }
}

void Scheduler::GrowHolds() {
  Duration now = clock_.MonotonicNow();
  // The devices held until now are priced before the holds change.
  std::map<std::string, double> held = holds_->TakeHeldDeviceSeconds(now);
  if (holds_->holds().empty()) return;
  double total = 0;
  for (const auto& [device_class, seconds] : held) {
    int domain = fair_share_ != nullptr ? fair_share_->DomainOf(device_class) : -1;
    if (domain < 0 || seconds <= 0) continue;
    metrics_.held_device_seconds
        .WithLabels({fair_share_->config().domains[static_cast<size_t>(domain)].name})
        .Increment(seconds);
    total += seconds;
  }
  if (total > 0) {
    MutexLock lock(mu_);
    stats_.held_device_seconds += total;
  }
  if (!HoldsEnforced()) return;
  for (const std::string& uid : holds_->Grow(now)) {
    auto pod = pending_.find(uid);
    const auto hold = holds_->holds().find(uid);
    if (pod == pending_.end() || hold == holds_->holds().end()) continue;
    PersistHold(*pod->second, &hold->second);
    if (events_) {
      events_->Record(client::ReferenceTo(*pod->second), "Normal", "DevicesHeld",
                      "holding " + std::to_string(hold->second.devices.size()) +
                          " devices on node " + hold->second.node + " for this Pod",
                      "Scheduling");
    }
  }
}

void Scheduler::ExpireHolds() {
  if (holds_->holds().empty() || !HoldsEnforced()) return;
  for (StarvationHold& hold :
       holds_->Expire(clock_.MonotonicNow(), fair_share_->config().max_hold)) {
    auto pod = pending_.find(hold.uid);
    if (pod == pending_.end()) continue;
    PersistHold(*pod->second, nullptr);
    if (events_) {
      events_->Record(client::ReferenceTo(*pod->second), "Normal", "HoldReleased",
                      "MaxHold: the devices held on node " + hold.node + " for " +
                          api::FormatDuration(fair_share_->config().max_hold) +
                          " were not used; no new hold for as long",
                      "Scheduling");
    }
  }
}

void Scheduler::ReleaseHold(const std::string& uid, std::string_view reason, const Pod* pod) {
  if (holds_->holds().empty()) return;
  std::optional<StarvationHold> hold = holds_->Release(uid);
  if (!hold || pod == nullptr) return;
  if (!hold->devices.empty() || pod->metadata.annotations.contains(kHeldDevicesAnnotation)) {
    PersistHold(*pod, nullptr);
  }
  if (events_) {
    events_->Record(
        client::ReferenceTo(*pod), "Normal", "HoldReleased",
        std::string(reason) + ": the hold on node " + hold->node + " ended" +
            (hold->devices.empty() ? " before any device was held for this Pod"
                                   : ", after holding " + std::to_string(hold->devices.size()) +
                                         " device" + (hold->devices.size() == 1 ? "" : "s")),
        "Scheduling");
  }
}

void Scheduler::PersistHold(const Pod& pod, const StarvationHold* hold) {
  boost::json::object annotations;
  if (hold != nullptr) {
    annotations[kHeldDevicesAnnotation] = StarvationHolds::AnnotationOf(*hold);
  } else {
    annotations[kHeldDevicesAnnotation] = nullptr;
  }
  boost::json::object patch{{"metadata", boost::json::object{{"annotations", annotations}}}};
  RunAsync([this, ns = pod.metadata.namespace_, name = pod.metadata.name,
            patch = std::move(patch)]() mutable {
    StatusOr<Pod> out =
        client::Patch<Pod>(api_, ns, name, client::PatchType::kMerge, std::move(patch));
    if (!out.ok() && out.status().code() != StatusCode::kNotFound) {
      log::Warning("scheduler: {}/{}: writing {}: {}", ns, name, kHeldDevicesAnnotation,
                   out.status().ToString());
    }
  });
}

void Scheduler::RestoreHold(const Pod& pod) {
  auto annotation = pod.metadata.annotations.find(kHeldDevicesAnnotation);
  if (annotation == pod.metadata.annotations.end() || holds_->Has(pod.metadata.uid)) return;
  StatusOr<StarvationHold> hold = StarvationHolds::ParseAnnotation(annotation->second);
  if (!hold.ok()) {
    log::Warning("scheduler: {}/{}: {}", pod.metadata.namespace_, pod.metadata.name,
                 hold.status().ToString());
    return;
  }
  hold->pod = pod.metadata.namespace_ + "/" + pod.metadata.name;
  hold->uid = pod.metadata.uid;
  hold->priority = pod.spec.priority.value_or(0);
  // The Pod has waited since its creation as far as the restarted scheduler can tell.
  Duration waited =
      std::max(Duration(0), Duration(clock_.Now() - pod.metadata.creation_timestamp.ToTimestamp()));
  hold->enqueued = clock_.MonotonicNow() - waited;
  holds_->Start(*std::move(hold));
}

void Scheduler::CountOvertakes(const Binding& binding) {
  if (holds_->holds().empty() || fair_share_ == nullptr) return;
  const DeviceDecision* decision = DecisionOf(*binding.state);
  if (decision == nullptr) return;
  std::vector<StarvationHolds::Given> given;
  for (const DeviceDecision::Claim& claim : decision->claims) {
    for (const DeviceDecision::Request& request : claim.requests) {
      for (const rv1::DeviceRequestAllocationResult& d : request.devices) {
        given.push_back({.device_class = request.device_class,
                         .device = {.driver = d.driver, .pool = d.pool, .device = d.device}});
      }
    }
  }
  const Pod& pod = *binding.info.pod;
  for (const StarvationHold* hold :
       holds_->Overtaken(pod.metadata.uid, pod.spec.priority.value_or(0),
                         binding.queued.enqueued_at, binding.node, given)) {
    int domain = hold->needs.empty() ? -1 : fair_share_->DomainOf(hold->needs.front().device_class);
    if (domain >= 0) {
      metrics_.starving_overtakes
          .WithLabels({fair_share_->config().domains[static_cast<size_t>(domain)].name})
          .Increment();
    }
    MutexLock lock(mu_);
    ++stats_.overtakes;
  }
}

std::string Scheduler::QueuePosition(const Pod& pod, Duration enqueued_at) const {
  if (fair_share_ == nullptr) return "";
  FairShareModel& model = *fair_share_;
  const FairShareConfig& config = model.config();
  Duration now = clock_.MonotonicNow();
  const int64_t band = pod.spec.priority.value_or(0);
  // The order's key of a waiting Pod: starving first (oldest first), then Pods in no domain
  // (oldest first), then the tenants' Pods by share minus credit (FairShareOrder).
  std::map<std::pair<std::string, std::vector<int>>, double> shares;  // per tenant and domains
  auto share_of = [&](const std::string& ns, const std::vector<int>& domains) {
    auto [it, fresh] = shares.try_emplace({ns, domains}, 0.0);
    if (fresh) it->second = model.PodShare(ns, domains);
    return it->second;
  };
  using Key = std::tuple<int, double, Duration>;
  auto key_of = [&](const Pod& p, Duration enqueued) -> Key {
    if (now - enqueued >= config.starvation_threshold) return {0, 0.0, enqueued};
    const std::vector<int>& domains = QueuedDomains(p);
    if (domains.empty()) return {1, 0.0, enqueued};
    return {2, share_of(p.metadata.namespace_, domains) - AgingCredit(config, enqueued, now),
            enqueued};
  };
  const Key mine = key_of(pod, enqueued_at);
  int64_t ahead = 0;
  int64_t waiting = 1;
  queue_->ForEach([&](const QueuedPod& q) {
    if (q.pod->metadata.uid == pod.metadata.uid || q.pod->spec.priority.value_or(0) != band) return;
    ++waiting;
    if (key_of(*q.pod, q.enqueued_at) < mine) ++ahead;
  });
  const std::vector<int>& domains = QueuedDomains(pod);
  std::string out = "; queued: tenant " + pod.metadata.namespace_;
  if (!domains.empty()) {
    // The domain its share comes from: the one where it is furthest above its fair share.
    int dominant = domains.front();
    for (int d : domains) {
      if (model.EffectiveShare(pod.metadata.namespace_, d) >
          model.EffectiveShare(pod.metadata.namespace_, dominant)) {
        dominant = d;
      }
    }
    char shares_text[96];
    std::snprintf(shares_text, sizeof(shares_text), " share %.2f of fair %.2f",
                  model.EffectiveShare(pod.metadata.namespace_, dominant) *
                      model.FairShare(pod.metadata.namespace_, dominant),
                  model.FairShare(pod.metadata.namespace_, dominant));
    out += shares_text;
  }
  out += ", position " + std::to_string(ahead + 1) + " of " + std::to_string(waiting) +
         " in band " + std::to_string(band);
  return out;
}

PodClasses Scheduler::RequestedClasses(const Pod& pod) const {
  ClusterState::ClaimPtr special = cluster_.FindExtendedResourceClaim(pod.metadata.uid);
  return ClassesOfPod(
      pod,
      [&](std::string_view name) {
        return cluster_.FindClaim(pod.metadata.namespace_, name).get();
      },
      special.get());
}

void Scheduler::Post(InboxItem item) {
  {
    MutexLock lock(mu_);
    inbox_.push_back(std::move(item));
  }
  // Outside the lock: the loop woken while it is held would only block on it again.
  cv_.NotifyAll();
}

Status Scheduler::Start() {
  using Kind = InboxItem::Kind;
  client::SharedInformers* informers = options_.informers;
  if (informers == nullptr) {
    if (own_informers_ == nullptr) own_informers_ = std::make_unique<client::SharedInformers>(api_);
    informers = own_informers_.get();
  }
  pods_ = &informers->Get<Pod>();
  nodes_ = &informers->Get<api::corev1::Node>();
  claims_ = &informers->Get<rv1::ResourceClaim>();
  classes_ = &informers->Get<rv1::DeviceClass>();
  slices_ = &informers->Get<rv1::ResourceSlice>();
  // PreBind's device re-check reads a pool's slices from any binder thread.
  slices_->AddIndex(kPoolIndex, [](const rv1::ResourceSlice& slice) {
    return std::vector<std::string>{slice.spec.driver + "/" + slice.spec.pool.name};
  });
  taint_rules_ = &informers->Get<rv1::DeviceTaintRule>();
  quotas_ = &informers->Get<api::corev1::ResourceQuota>();
  // Fair share: the policy, and the namespaces' labels its tenant entries may select by (one
  // small list each; the scheduler's role reads both).
  namespaces_ = &informers->Get<api::corev1::Namespace>();
  sharing_policies_ = &informers->Get<api::draplanev1alpha1::DeviceSharingPolicy>();
  auto wire = [this](auto* informer, Kind kind, Kind deleted) {
    using Ptr = typename std::remove_reference_t<decltype(*informer)>::Ptr;
    client::InformerBase::HandlerId id = informer->AddHandlers(
        {.on_add = [this, kind](const Ptr& p) { Post({.kind = kind, .new_object = p}); },
         .on_update = [this, kind](
                          const Ptr& o,
                          const Ptr& n) { Post({.kind = kind, .old_object = o, .new_object = n}); },
         .on_delete = [this, deleted](const Ptr& p) { Post({.kind = deleted, .old_object = p}); }});
    registrations_.emplace_back(informer, id);
  };
  wire(classes_, Kind::kClass, Kind::kClassDelete);
  wire(slices_, Kind::kSlice, Kind::kSliceDelete);
  wire(taint_rules_, Kind::kTaintRule, Kind::kTaintRuleDelete);
  wire(nodes_, Kind::kNode, Kind::kNodeDelete);
  wire(claims_, Kind::kClaim, Kind::kClaimDelete);
  wire(quotas_, Kind::kQuota, Kind::kQuotaDelete);
  wire(namespaces_, Kind::kNamespace, Kind::kNamespaceDelete);
  wire(sharing_policies_, Kind::kSharingPolicy, Kind::kSharingPolicyDelete);
  wire(pods_, Kind::kPod, Kind::kPodDelete);
  informers->Start();
  if (!informers->WaitForSync())
    return CancelledError("scheduler stopped before its caches synced");
  // The holdings are rebuilt from the initial lists; status.used is brought in line with them
  // once those are applied (the first CheckHoldings).
  last_holdings_check_ = clock_.MonotonicNow() - options_.holdings_check_interval;
  // The first device states after one interval: the initial lists are applied and the first
  // attempts made by then.
  last_device_states_ = clock_.MonotonicNow();
  if (options_.synchronous) return Status::Ok();
  {
    MutexLock lock(mu_);
    stopping_ = false;
  }
  for (int i = 0; i < std::max(1, options_.binder_threads); ++i) {
    binders_.emplace_back([this] {
      SetCurrentThreadName("sched-binder");
      BinderLoop();
    });
  }
  loop_ = std::thread([this] {
    SetCurrentThreadName("sched-loop");
    Loop();
  });
  log::Info("scheduler: started ({} nodes, {} pods)", nodes_->size(), pods_->size());
  return Status::Ok();
}

void Scheduler::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    cv_.NotifyAll();
    work_cv_.NotifyAll();
  }
  // No new events: shared informers keep running for their other users.
  for (const auto& [informer, id] : registrations_) informer->RemoveHandlers(id);
  registrations_.clear();
  if (own_informers_) own_informers_->Stop();
  if (loop_.joinable()) loop_.join();
  for (std::thread& t : binders_) t.join();
  binders_.clear();
  if (decisions_) decisions_->Stop();
  if (events_) events_->Stop();
}

void Scheduler::RunAsync(std::function<void()> work, bool first) {
  if (options_.synchronous) {
    work();
    return;
  }
  {
    MutexLock lock(mu_);
    if (first) {
      work_.push_front(std::move(work));
    } else {
      work_.push_back(std::move(work));
    }
  }
  work_cv_.NotifyOne();
}

void Scheduler::BinderLoop() {
  while (true) {
    std::function<void()> work;
    {
      MutexLock lock(mu_);
      work_cv_.Wait(lock, [&]() DRAPLANE_REQUIRES(mu_) { return stopping_ || !work_.empty(); });
      if (work_.empty()) return;  // stopping and drained
      work = std::move(work_.front());
      work_.pop_front();
    }
    work();
  }
}

void Scheduler::Loop() {
  while (true) {
    Drain();
    {
      MutexLock lock(mu_);
      if (stopping_) break;
    }
    MaybeFlushUnschedulable();
    ExpireWaits();
    DetectStarvation();
    ExpireHolds();
    if (events_) events_->Tick();
    Duration now = clock_.MonotonicNow();
    if (now - last_holdings_check_ >= options_.holdings_check_interval) {
      last_holdings_check_ = now;
      CheckHoldings();
    }
    if (options_.device_states_interval > Duration(0) &&
        now - last_device_states_ >= options_.device_states_interval) {
      last_device_states_ = now;
      UpdateDeviceStates();
    }
    if (options_.sharing_status_interval > Duration(0) &&
        (sharing_status_due_ || now - last_sharing_status_ >= options_.sharing_status_interval)) {
      last_sharing_status_ = now;
      sharing_status_due_ = false;
      ReportSharing();
    }
    if (std::optional<QueuedPod> next = queue_->Pop()) {
      ScheduleOne(std::move(*next));
      continue;
    }
    UpdateGauges();
    MutexLock lock(mu_);
    if (!inbox_.empty() || stopping_) continue;
    // Pacing only: sleep until an event arrives, the next backoff expires or a binding's wait
    // times out (the clock decides what is due).
    Duration wait = queue_->NextReady().value_or(std::chrono::seconds(1));
    if (!wait_deadlines_.empty()) {
      wait = std::min(wait, wait_deadlines_.begin()->first - clock_.MonotonicNow());
    }
    cv_.WaitFor(lock, std::max(wait, Duration(std::chrono::milliseconds(1))));
  }
}

namespace {
// upstream flushUnschedulablePodsLeftover runs every 30 s.
constexpr Duration kFlushInterval = std::chrono::seconds(30);
}  // namespace

void Scheduler::MaybeFlushUnschedulable() {
  Duration now = clock_.MonotonicNow();
  if (now - last_flush_ >= kFlushInterval) {
    last_flush_ = now;
    queue_->FlushUnschedulable();
  }
}

std::optional<Duration> Scheduler::NextWakeup() const {
  std::optional<Duration> wakeup;
  if (std::optional<Duration> ready = queue_->NextReady()) {
    wakeup = clock_.MonotonicNow() + *ready;
  }
  if (queue_->unschedulable() > 0) {
    Duration flush = last_flush_ + kFlushInterval;
    if (!wakeup || flush < *wakeup) wakeup = flush;
  }
  // A waiting Pod starts starving (its hold's target is picked).
  if (!starving_due_.empty()) {
    Duration due = std::get<0>(*starving_due_.begin());
    if (!wakeup || due < *wakeup) wakeup = due;
  }
  // A complete hold ends at MaxHold.
  if (HoldsEnforced()) {
    if (std::optional<Duration> expiry = holds_->NextExpiry(fair_share_->config().max_hold);
        expiry && (!wakeup || *expiry < *wakeup)) {
      wakeup = expiry;
    }
  }
  // A binding waiting for binding conditions fails at its deadline.
  if (!wait_deadlines_.empty() && (!wakeup || wait_deadlines_.begin()->first < *wakeup)) {
    wakeup = wait_deadlines_.begin()->first;
  }
  return wakeup;
}

int Scheduler::RunUntilIdle() {
  int attempts = 0;
  while (true) {
    Drain();
    ExpireWaits();
    MaybeFlushUnschedulable();
    if (events_) events_->Tick();
    DetectStarvation();
    ExpireHolds();
    std::optional<QueuedPod> next = queue_->Pop();
    if (!next) break;
    ScheduleOne(std::move(*next));
    ++attempts;
  }
  Drain();
  UpdateGauges();
  return attempts;
}

size_t Scheduler::Drain() {
  std::deque<InboxItem> items;
  {
    MutexLock lock(mu_);
    items.swap(inbox_);
  }
  for (InboxItem& item : items) Apply(item);
  return items.size();
}

namespace {

// Whether `event` may make `pod`, rejected by `plugin_name`, schedulable (upstream's queueing
// hints: a plugin that did not register for the event cannot be helped by it).
bool Interested(const Framework& framework, const ClusterEvent& event,
                const std::string& plugin_name, const Pod& pod) {
  if (event.resource == EventResource::kPod &&
      (event.pod == nullptr || event.pod->metadata.uid != pod.metadata.uid)) {
    return false;
  }
  const Plugin* plugin = framework.FindPlugin(plugin_name);
  if (plugin == nullptr) return true;
  for (const ClusterEventSpec& spec : plugin->EventsToRegister()) {
    if (spec.resource == event.resource && (spec.actions & event.actions) != 0) {
      return plugin->IsSchedulableAfter(event, pod);
    }
  }
  return false;
}

}  // namespace

void Scheduler::MoveOnEvent(const ClusterEvent& event) {
  if (queue_->unschedulable() == 0) return;
  queue_->OnEvent([&](const std::string& plugin_name, const Pod& pod) {
    return Interested(framework_, event, plugin_name, pod);
  });
}

void Scheduler::MoveOnEventFor(const ClusterEvent& event, std::vector<std::string> uids) {
  if (queue_->unschedulable() == 0 || uids.empty()) return;
  queue_->OnEventFor(std::move(uids), [&](const std::string& plugin_name, const Pod& pod) {
    return Interested(framework_, event, plugin_name, pod);
  });
}

void Scheduler::SetPending(const std::string& uid, std::shared_ptr<const Pod> pod) {
  auto reason = pending_reasons_.extract(uid);  // an update keeps the last attempt's reason
  ErasePending(uid);
  if (!reason.empty()) pending_reasons_.insert(std::move(reason));
  for (const api::corev1::PodResourceClaim& entry : pod->spec.resource_claims) {
    PodClaimName n = ClaimNameForPod(*pod, entry);
    if (!n.name.empty()) claim_users_[pod->metadata.namespace_ + "/" + n.name].insert(uid);
  }
  pending_[uid] = std::move(pod);
  RecountPending(uid);
}

bool Scheduler::ErasePending(const std::string& uid) {
  auto it = pending_.find(uid);
  if (it == pending_.end()) return false;
  const Pod& pod = *it->second;
  for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
    PodClaimName n = ClaimNameForPod(pod, entry);
    if (n.name.empty()) continue;
    auto users = claim_users_.find(pod.metadata.namespace_ + "/" + n.name);
    if (users == claim_users_.end()) continue;
    users->second.erase(uid);
    if (users->second.empty()) claim_users_.erase(users);
  }
  pending_.erase(it);
  pending_reasons_.erase(uid);
  queued_domains_.erase(uid);
  RecountPending(uid);
  return true;
}

std::vector<std::string> Scheduler::ClaimUsers(const rv1::ResourceClaim& claim) const {
  std::vector<std::string> users;
  for (const api::metav1::OwnerReference& o : claim.metadata.owner_references) {
    if (o.controller.value_or(false)) users.push_back(o.uid);
  }
  if (auto u = claim_users_.find(claim.metadata.namespace_ + "/" + claim.metadata.name);
      u != claim_users_.end()) {
    users.insert(users.end(), u->second.begin(), u->second.end());
  }
  return users;
}

const std::vector<int>& Scheduler::QueuedDomains(const Pod& pod) const {
  auto it = queued_domains_.find(pod.metadata.uid);
  if (it == queued_domains_.end()) {
    it =
        queued_domains_.emplace(pod.metadata.uid, fair_share_->DomainsOf(RequestedClasses(pod).all))
            .first;
  }
  return it->second;
}

void Scheduler::Apply(InboxItem& item) {
  using Kind = InboxItem::Kind;
  Duration now = clock_.MonotonicNow();
  switch (item.kind) {
    case Kind::kPod: {
      auto pod = std::static_pointer_cast<const Pod>(item.new_object);
      auto old = std::static_pointer_cast<const Pod>(item.old_object);
      const std::string& uid = pod->metadata.uid;
      if (!pod->spec.node_name.empty()) {
        ReleaseHold(uid, "Scheduled", pod.get());
        bool was_pending = ErasePending(uid);
        if (was_pending) queue_->Delete(uid);
        bool was_placed = old && !old->spec.node_name.empty() && !api::IsPodTerminal(*old);
        cluster_.UpsertAssignedPod(pod);
        if (api::IsPodTerminal(*pod) && was_placed) {
          MoveOnEvent({.resource = EventResource::kAssignedPod, .actions = kDelete});
        }
        if (auto f = first_seen_.find(uid); f != first_seen_.end() && !binding_.contains(uid)) {
          first_seen_.erase(f);
        }
        return;
      }
      if (!Ours(*pod) || pod->metadata.deletion_timestamp.has_value() || api::IsPodTerminal(*pod)) {
        ReleaseHold(uid, "Deleted", nullptr);
        if (ErasePending(uid)) queue_->Delete(uid);
        AbortWaiting(uid, "the pod is being deleted");
        return;
      }
      // Bound by this scheduler, not yet seen on its node: an update written before the Binding
      // (the Pod status of a generated or extended-resource claim) that arrives after the binding
      // finished must not queue the pod again, or a second attempt would fail and clean up the
      // first one's claims (upstream skips updates of assumed pods, updatePodInSchedulingQueue).
      if (cluster_.IsAssumed(uid) && !binding_.contains(uid)) return;
      bool known = pending_.contains(uid);
      SetPending(uid, pod);
      if (!known) RestoreHold(*pod);
      if (binding_.contains(uid)) return;
      if (!known) first_seen_.emplace(uid, now);
      queue_->AddOrUpdate(pod);
      if (known && old) {
        uint32_t actions = PodUpdateActions(*old, *pod);
        if (actions != 0) {
          MoveOnEventFor({.resource = EventResource::kPod, .actions = actions, .pod = pod.get()},
                         {uid});
        }
      }
      return;
    }
    case Kind::kPodDelete: {
      auto pod = std::static_pointer_cast<const Pod>(item.old_object);
      const std::string& uid = pod->metadata.uid;
      ReleaseHold(uid, "Deleted", nullptr);
      if (ErasePending(uid)) queue_->Delete(uid);
      AbortWaiting(uid, "the pod was deleted");
      first_seen_.erase(uid);
      bool placed = !pod->spec.node_name.empty() && !api::IsPodTerminal(*pod);
      cluster_.RemovePod(uid);
      if (placed) MoveOnEvent({.resource = EventResource::kAssignedPod, .actions = kDelete});
      return;
    }
    case Kind::kNode: {
      auto node = std::static_pointer_cast<const api::corev1::Node>(item.new_object);
      auto old = std::static_pointer_cast<const api::corev1::Node>(item.old_object);
      cluster_.UpsertNode(node);
      if (api::labels::FindIsolationTaint(*node) != nullptr) {
        isolated_nodes_[node->metadata.name] = node;
      } else {
        isolated_nodes_.erase(node->metadata.name);
      }
      uint32_t actions = old ? NodeUpdateActions(*old, *node) : kAdd;
      if (actions != 0) MoveOnEvent({.resource = EventResource::kNode, .actions = actions});
      return;
    }
    case Kind::kNodeDelete: {
      const std::string& name =
          std::static_pointer_cast<const api::corev1::Node>(item.old_object)->metadata.name;
      isolated_nodes_.erase(name);
      cluster_.RemoveNode(name);
      return;
    }
    case Kind::kClaim: {
      auto claim = std::static_pointer_cast<const rv1::ResourceClaim>(item.new_object);
      auto old = std::static_pointer_cast<const rv1::ResourceClaim>(item.old_object);
      const std::string& uid = claim->metadata.uid;
      if (!old) claim_first_seen_.emplace(uid, now);
      bool ours = false;
      if (claim->status.allocation.has_value()) {
        std::string owner;
        if (cluster_.ledger().IsInFlight(uid)) {
          ours = true;
        } else if (IsExtendedResourceClaim(*claim, &owner) &&
                   cluster_.ledger().RemoveInFlight(owner + "/extended-resources")) {
          ours = true;
        }
      }
      bool conflict = cluster_.UpsertClaim(claim);
      if (ours) {
        confirmations_.Observe(
            uid, api::ParseResourceVersion(claim->metadata.resource_version).value_or(0), conflict);
        if (auto f = claim_first_seen_.find(uid); f != claim_first_seen_.end()) {
          metrics_.claim_allocation_seconds.Observe(
              std::chrono::duration<double>(now - f->second).count());
        }
        // One count per request: the class and index of the (sub)request its first result
        // names.
        for (const rv1::DeviceRequest& spec : claim->spec.devices.requests) {
          for (const rv1::DeviceRequestAllocationResult& r :
               claim->status.allocation->devices.results) {
            if (r.request == spec.name && spec.exactly.has_value()) {
              metrics_.allocations.WithLabels({spec.exactly->device_class_name, "0", "allocated"})
                  .Increment();
              break;
            }
            if (!r.request.starts_with(spec.name + "/")) continue;
            for (size_t i = 0; i < spec.first_available.size(); ++i) {
              if (r.request.substr(spec.name.size() + 1) == spec.first_available[i].name) {
                metrics_.allocations
                    .WithLabels(
                        {spec.first_available[i].device_class_name, std::to_string(i), "allocated"})
                    .Increment();
              }
            }
            break;
          }
        }
      }
      if (claim->status.allocation.has_value()) claim_first_seen_.erase(uid);
      if (conflict && !ours) ReleaseConflictingAllocation(*claim);
      if (!waiting_.empty()) CheckWaitingForClaim(*claim);
      ClusterEvent event{.resource = EventResource::kResourceClaim,
                         .actions = old ? kUpdate : kAdd,
                         .old_claim = old.get(),
                         .new_claim = claim.get()};
      if (old && old->status.allocation.has_value() && !claim->status.allocation.has_value()) {
        // The quotas give the allocation's charge back.
        if (!cluster_.AllocationQuotas(claim->metadata.namespace_).empty()) {
          ScheduleQuotaRecount(claim->metadata.namespace_, /*correction=*/false);
        }
        MoveOnEvent(event);  // a deallocation may make any waiting pod schedulable
        return;
      }
      // Otherwise only the claim's users can care (DynamicResources.IsSchedulableAfter): its
      // controlling owner (a generated or extended-resource claim) and the pods naming it.
      std::vector<std::string> users = ClaimUsers(*claim);
      if (!old) {
        for (const std::string& user : users) queued_domains_.erase(user);
      }
      MoveOnEventFor(event, std::move(users));
      return;
    }
    case Kind::kClaimDelete: {
      auto claim = std::static_pointer_cast<const rv1::ResourceClaim>(item.old_object);
      for (const std::string& user : ClaimUsers(*claim)) queued_domains_.erase(user);
      claim_first_seen_.erase(claim->metadata.uid);
      confirmations_.Forget(claim->metadata.uid);
      cluster_.RemoveClaim(*claim);
      if (!waiting_.empty()) CheckWaitingForClaim(*claim);
      if (claim->status.allocation.has_value() &&
          !cluster_.AllocationQuotas(claim->metadata.namespace_).empty()) {
        ScheduleQuotaRecount(claim->metadata.namespace_, /*correction=*/false);
      }
      return;
    }
    case Kind::kQuota: {
      auto quota = std::static_pointer_cast<const api::corev1::ResourceQuota>(item.new_object);
      auto old = std::static_pointer_cast<const api::corev1::ResourceQuota>(item.old_object);
      cluster_.UpsertQuota(quota);
      // A quota entering Allocation mode, or limiting other resources, starts from a recount.
      std::optional<allocator::QuotaBudget> budget = allocator::BudgetOf(*quota);
      std::optional<allocator::QuotaBudget> before = old ? allocator::BudgetOf(*old) : std::nullopt;
      if (budget.has_value() && (!before.has_value() || budget->hard != before->hard)) {
        ScheduleQuotaRecount(quota->metadata.namespace_, /*correction=*/false);
      }
      MoveOnEvent({.resource = EventResource::kResourceQuota,
                   .actions = old ? kUpdate : kAdd,
                   .old_quota = old.get(),
                   .new_quota = quota.get()});
      return;
    }
    case Kind::kNamespace: {
      auto ns = std::static_pointer_cast<const api::corev1::Namespace>(item.new_object);
      if (fair_share_ != nullptr) {
        fair_share_->SetNamespaceLabels(ns->metadata.name, ns->metadata.labels);
      }
      return;
    }
    case Kind::kNamespaceDelete: {
      auto ns = std::static_pointer_cast<const api::corev1::Namespace>(item.old_object);
      if (fair_share_ != nullptr) fair_share_->RemoveNamespace(ns->metadata.name);
      return;
    }
    case Kind::kSharingPolicy:
      OnSharingPolicy(
          static_cast<const api::draplanev1alpha1::DeviceSharingPolicy*>(item.old_object.get()),
          static_cast<const api::draplanev1alpha1::DeviceSharingPolicy*>(item.new_object.get()));
      return;
    case Kind::kSharingPolicyDelete:
      OnSharingPolicy(
          static_cast<const api::draplanev1alpha1::DeviceSharingPolicy*>(item.old_object.get()),
          nullptr);
      return;
    case Kind::kQuotaDelete: {
      auto quota = std::static_pointer_cast<const api::corev1::ResourceQuota>(item.old_object);
      cluster_.RemoveQuota(*quota);
      MoveOnEvent({.resource = EventResource::kResourceQuota,
                   .actions = kDelete,
                   .old_quota = quota.get()});
      return;
    }
    case Kind::kQuotaRecount:
      FinishQuotaRecount(item);
      return;
    case Kind::kChargeDecided:
      CheckWaiting(item.pod_uid, /*timed_out=*/false);
      return;
    case Kind::kQuotaRecountDone: {
      const InboxItem::Recount& r = *item.recount;
      recounting_.erase(r.ns);
      if (r.conflict) recount_again_[r.ns] = recount_again_[r.ns] || r.correction;
      auto again = recount_again_.find(r.ns);
      if (again != recount_again_.end()) {
        bool correction = again->second;
        recount_again_.erase(again);
        ScheduleQuotaRecount(r.ns, correction);
      }
      return;
    }
    case Kind::kClass: {
      auto c = std::static_pointer_cast<const rv1::DeviceClass>(item.new_object);
      cluster_.UpsertClass(c);
      MoveOnEvent(
          {.resource = EventResource::kDeviceClass, .actions = item.old_object ? kUpdate : kAdd});
      return;
    }
    case Kind::kClassDelete:
      cluster_.RemoveClass(
          std::static_pointer_cast<const rv1::DeviceClass>(item.old_object)->metadata.name);
      return;
    case Kind::kSlice: {
      auto s = std::static_pointer_cast<const rv1::ResourceSlice>(item.new_object);
      cluster_.UpsertSlice(s);
      MoveOnEvent(
          {.resource = EventResource::kResourceSlice, .actions = item.old_object ? kUpdate : kAdd});
      CheckAllWaiting();  // a device of a waiting binding may have been tainted
      return;
    }
    case Kind::kSliceDelete:
      cluster_.RemoveSlice(
          std::static_pointer_cast<const rv1::ResourceSlice>(item.old_object)->metadata.name);
      CheckAllWaiting();
      return;
    case Kind::kTaintRule:
      // The devices the rule selects change as if their slices had (api/device_taints.h).
      cluster_.UpsertTaintRule(
          std::static_pointer_cast<const rv1::DeviceTaintRule>(item.new_object));
      MoveOnEvent({.resource = EventResource::kResourceSlice, .actions = kUpdate});
      CheckAllWaiting();
      return;
    case Kind::kTaintRuleDelete:
      cluster_.RemoveTaintRule(
          std::static_pointer_cast<const rv1::DeviceTaintRule>(item.old_object)->metadata.name);
      MoveOnEvent({.resource = EventResource::kResourceSlice, .actions = kUpdate});
      return;
    case Kind::kBindingWaiting:
      StartWaiting(std::move(item.binding), item.status);
      return;
    case Kind::kBindingDone:
      FinishBinding(std::move(item.binding), std::move(item.status));
      return;
  }
}

void Scheduler::ScheduleOne(QueuedPod queued) {
  const std::string uid = queued.pod->metadata.uid;
  auto pending = pending_.find(uid);
  if (pending == pending_.end()) return;
  queued.pod = pending->second;  // the newest version
  ++queued.attempts;
  ++attempts_;
  Duration start = clock_.MonotonicNow();
  auto binding = std::make_shared<Binding>();
  binding->info.pod = queued.pod;
  binding->info.requests = ComputePodRequests(*queued.pod);
  binding->info.attempts = queued.attempts;
  binding->state = std::make_shared<CycleState>();
  // One attempt in ten, the first included (upstream samples 10 % of its cycles at random).
  binding->state->record_plugin_metrics = (attempts_ - 1) % 10 == 0;
  GrowHolds();
  ScheduleResult result =
      framework_.Schedule(*binding->state, binding->info, cluster_, &next_start_);
  const bool budget_spent = result.status.code() == Code::kError &&
                            allocator::IsEvaluationBudgetExceeded(result.status.error());
  queue_->RecordAttemptCost(queued.pod->metadata.namespace_, budget_spent);
  if (budget_spent) metrics_.evaluation_budget_spent.Increment();
  auto elapsed = [&] {
    return std::chrono::duration<double>(clock_.MonotonicNow() - start).count();
  };

  if (result.status.ok()) {
    PluginStatus reserved = framework_.RunReserve(*binding->state, binding->info, result.node);
    if (!reserved.ok()) {
      metrics_.attempts_error.Increment();
      metrics_.attempt_error_seconds.Observe(elapsed());
      RecordFailure(*queued.pod, "SchedulerError", reserved.Message());
      {
        MutexLock lock(mu_);
        ++stats_.errors;
      }
      queue_->RequeueAfterError(std::move(queued));
      return;
    }
    cluster_.AssumePod(uid, result.node, binding->info.requests);
    binding->queued = std::move(queued);
    binding->node = result.node;
    CountOvertakes(*binding);
    ReleaseHold(uid, "Scheduled", binding->info.pod.get());
    binding->started = start;
    binding->evaluated_nodes = result.evaluated_nodes;
    binding->feasible_nodes = result.feasible_nodes;
    binding_[uid] = binding;
    RecountPending(uid);
    metrics_.attempts_scheduled.Increment();
    metrics_.attempt_scheduled_seconds.Observe(elapsed());
    if (options_.synchronous) {
      PluginStatus s = framework_.RunPreBind(*binding->state, binding->info, binding->node);
      if (s.code() == Code::kWait) {
        StartWaiting(binding, s);
        return;
      }
      if (s.ok()) s = framework_.RunBind(*binding->state, binding->info, binding->node);
      FinishBinding(binding, std::move(s));
    } else {
      RunAsync([this, binding] { RunBinding(binding); });
    }
    return;
  }

  if (result.status.code() == Code::kError) {
    metrics_.attempts_error.Increment();
    metrics_.attempt_error_seconds.Observe(elapsed());
    CountFailedRequests(*queued.pod, "error");
    pending_reasons_[uid] = "SchedulerError";
    RecountPending(uid);
    RecordFailure(*queued.pod, "SchedulerError", result.status.Message());
    {
      MutexLock lock(mu_);
      ++stats_.errors;
    }
    queue_->RequeueAfterError(std::move(queued));
    return;
  }
  metrics_.attempts_unschedulable.Increment();
  metrics_.attempt_unschedulable_seconds.Observe(elapsed());
  CountFailedRequests(*queued.pod, "unschedulable");
  {
    // The filter plugin that rejected the most nodes (ties: the first by name), or PreFilter's.
    std::map<std::string, int> rejections;
    for (const NodeVerdict& v : result.diagnosis.nodes) ++rejections[v.status.plugin()];
    std::string reason = "Unschedulable";
    if (result.diagnosis.pre_filter.has_value() && !result.diagnosis.pre_filter->plugin().empty()) {
      reason = result.diagnosis.pre_filter->plugin();
    } else {
      int most = 0;
      for (const auto& [plugin, n] : rejections) {
        if (n > most && !plugin.empty()) {
          reason = plugin;
          most = n;
        }
      }
    }
    pending_reasons_[uid] = std::move(reason);
    RecountPending(uid);
  }
  // The queue position joins the sentence before its final period (no "...).; queued").
  std::string message = FailedSchedulingMessage(result.diagnosis);
  if (std::string position = QueuePosition(*queued.pod, queued.enqueued_at); !position.empty()) {
    const bool period = message.ends_with('.');
    if (period) message.pop_back();
    message += position + (period ? "." : "");
  }
  RecordFailure(*queued.pod, "Unschedulable", message);
  {
    MutexLock lock(mu_);
    ++stats_.unschedulable;
  }
  MaybeStartHold(*queued.pod, queued.enqueued_at);
  queue_->RequeueUnschedulable(std::move(queued), result.diagnosis.rejectors);
}

void Scheduler::RunBinding(std::shared_ptr<Binding> binding) {
  PluginStatus s = framework_.RunPreBind(*binding->state, binding->info, binding->node);
  if (s.code() == Code::kWait) {
    InboxItem item;
    item.kind = InboxItem::Kind::kBindingWaiting;
    item.binding = std::move(binding);
    item.status = std::move(s);
    Post(std::move(item));
    return;
  }
  if (s.ok()) s = framework_.RunBind(*binding->state, binding->info, binding->node);
  ReportBinding(std::move(binding), std::move(s));
}

void Scheduler::ReportBinding(std::shared_ptr<Binding> binding, PluginStatus s) {
  if (!s.ok()) {
    // Unreserve would release claims a pod bound by another replica uses; ask the API first (the
    // informer may not have delivered that binding yet).
    const Pod& pod = *binding->info.pod;
    StatusOr<Pod> current = client::Get<Pod>(api_, pod.metadata.namespace_, pod.metadata.name);
    binding->bound_by_other = current.ok() && current->metadata.uid == pod.metadata.uid &&
                              !current->spec.node_name.empty();
  }
  InboxItem item;
  item.kind = InboxItem::Kind::kBindingDone;
  item.binding = std::move(binding);
  item.status = std::move(s);
  Post(std::move(item));
}

void Scheduler::FinishBinding(std::shared_ptr<Binding> binding, PluginStatus status) {
  const Pod& pod = *binding->info.pod;
  const std::string& uid = pod.metadata.uid;
  binding_.erase(uid);
  RecountPending(uid);
  if (status.ok()) {
    if (events_) {
      events_->Record(client::ReferenceTo(pod), "Normal", "Scheduled",
                      "Successfully assigned " + pod.metadata.namespace_ + "/" + pod.metadata.name +
                          " to " + binding->node,
                      "Binding");
    }
    RecordDecision(*binding);
    if (auto f = first_seen_.find(uid); f != first_seen_.end()) {
      const double waited =
          std::chrono::duration<double>(clock_.MonotonicNow() - f->second).count();
      metrics_.sli_seconds.WithLabels({std::to_string(std::min(binding->info.attempts, 15))})
          .Observe(waited);
      metrics_.scheduling_attempts.Observe(binding->info.attempts);
      std::string first_class = RequestedClasses(pod).first;
      metrics_.wait_seconds
          .WithLabels({tenants_.Of(pod.metadata.namespace_),
                       first_class.empty() ? std::string_view("none") : first_class})
          .Observe(waited);
      first_seen_.erase(f);
    }
    // The informer confirms the assumed pod; the pod is no longer pending.
    ErasePending(uid);
    MutexLock lock(mu_);
    ++stats_.scheduled;
    return;
  }
  if (cluster_.IsBound(uid) || binding->bound_by_other) {
    // The API already shows the pod on a node (the answer to a successful bind got lost, or
    // another replica bound it): keep everything as it is.
    ErasePending(uid);
    return;
  }
  framework_.RunUnreserve(*binding->state, binding->info, binding->node);
  cluster_.ForgetAssumedPod(uid);
  // Conflicts are races with another writer (a replica allocated the claim or the devices
  // first, or an allocation was not seen back in time): retried quietly, not reported to the
  // user as a scheduling failure (the other writer may be binding the pod right now).
  bool lost = status.error().code() == StatusCode::kConflict;
  {
    MutexLock lock(mu_);
    ++stats_.errors;
    if (lost) ++stats_.lost_races;
  }
  if (!lost)
    log::Info("scheduler: binding {}/{} failed: {}", pod.metadata.namespace_, pod.metadata.name,
              status.Message());
  auto pending = pending_.find(uid);
  if (pending == pending_.end()) return;  // deleted or bound by someone else meanwhile
  // A binding that waited for binding conditions nominated the pod (a newer version than the one
  // that failed).
  if (!lost) {
    RecordFailure(binding->announced ? *pending->second : pod, "SchedulerError", status.Message(),
                  binding->announced);
  }
  binding->queued.pod = pending->second;
  queue_->RequeueAfterError(std::move(binding->queued));
}

void Scheduler::StartWaiting(std::shared_ptr<Binding> binding, const PluginStatus& status) {
  const Pod& pod = *binding->info.pod;
  const std::string uid = pod.metadata.uid;
  Duration now = clock_.MonotonicNow();
  binding->announced = !status.waits_for_write();
  binding->wait_started = now;
  binding->wait_deadline = now + options_.binding_timeout;
  binding->claim_keys.clear();
  for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
    PodClaimName n = ClaimNameForPod(pod, entry);
    if (!n.name.empty()) binding->claim_keys.push_back(ClaimKey(pod.metadata.namespace_, n.name));
  }
  if (ClusterState::ClaimPtr extended = cluster_.FindExtendedResourceClaim(uid)) {
    binding->claim_keys.push_back(ClaimKey(extended->metadata.namespace_, extended->metadata.name));
  }
  for (const std::string& key : binding->claim_keys) waiting_claims_[key].insert(uid);
  waiting_[uid] = binding;
  wait_deadlines_.emplace(binding->wait_deadline, uid);
  if (binding->announced) metrics_.binding_conditions_waiting.Increment();
  if (events_ && binding->announced) {
    // upstream's BindingConditionsPending Event, naming the claims.
    events_->Record(client::ReferenceTo(pod), "Normal", "BindingConditionsPending",
                    status.Message() + " on node " + binding->node, "Binding");
  }
  CheckWaiting(uid, /*timed_out=*/false);
}

void Scheduler::CheckWaiting(const std::string& uid, bool timed_out) {
  auto it = waiting_.find(uid);
  if (it == waiting_.end()) return;
  std::shared_ptr<Binding> binding = it->second;
  PluginStatus s =
      framework_.CheckPreBindWait(*binding->state, binding->info, binding->node, timed_out);
  if (s.code() == Code::kWait) {
    if (!timed_out) return;
    s = PluginStatus::Error(DeadlineExceededError("binding timed out: " + s.Message()));
  }
  EndWaiting(uid, s.ok() ? "ready" : (timed_out ? "timeout" : "failed"));
  if (!s.ok()) {
    if (s.error().code() == StatusCode::kConflict && !options_.synchronous) {
      // A lost race (a refused quota charge): ask the API whether another replica bound the Pod
      // before undoing anything, as a binder thread's failure does.
      RunAsync([this, binding, s] { ReportBinding(binding, s); });
      return;
    }
    FinishBinding(std::move(binding), std::move(s));
    return;
  }
  if (options_.synchronous) {
    PluginStatus bound = framework_.RunBind(*binding->state, binding->info, binding->node);
    FinishBinding(std::move(binding), std::move(bound));
    return;
  }
  // Ahead of the queued bindings: a binding that waited (for its quota charge, for binding
  // conditions) has its devices reserved and its claims written; finishing it first keeps the
  // wait from adding the whole queue's time to its latency.
  RunAsync(
      [this, binding] {
        PluginStatus bound = framework_.RunBind(*binding->state, binding->info, binding->node);
        ReportBinding(binding, std::move(bound));
      },
      /*first=*/true);
}

void Scheduler::CheckWaitingForClaim(const rv1::ResourceClaim& claim) {
  // The pods naming the claim, and its controlling pod (a claim generated from a template or
  // for extended resources may be created after the wait began).
  std::set<std::string> uids;
  auto it = waiting_claims_.find(ClaimKey(claim.metadata.namespace_, claim.metadata.name));
  if (it != waiting_claims_.end()) uids = it->second;
  for (const api::metav1::OwnerReference& o : claim.metadata.owner_references) {
    if (o.controller.value_or(false) && waiting_.contains(o.uid)) uids.insert(o.uid);
  }
  for (const std::string& uid : uids) CheckWaiting(uid, /*timed_out=*/false);
}

void Scheduler::CheckAllWaiting() {
  if (waiting_.empty()) return;
  std::vector<std::string> uids;
  for (const auto& [uid, binding] : waiting_) uids.push_back(uid);
  for (const std::string& uid : uids) CheckWaiting(uid, /*timed_out=*/false);
}

void Scheduler::ExpireWaits() {
  Duration now = clock_.MonotonicNow();
  while (!wait_deadlines_.empty() && wait_deadlines_.begin()->first <= now) {
    std::string uid = wait_deadlines_.begin()->second;
    wait_deadlines_.erase(wait_deadlines_.begin());
    CheckWaiting(uid, /*timed_out=*/true);
  }
}

void Scheduler::EndWaiting(const std::string& uid, std::string_view result) {
  auto it = waiting_.find(uid);
  if (it == waiting_.end()) return;
  const Binding& binding = *it->second;
  for (const std::string& key : binding.claim_keys) {
    auto users = waiting_claims_.find(key);
    if (users == waiting_claims_.end()) continue;
    users->second.erase(uid);
    if (users->second.empty()) waiting_claims_.erase(users);
  }
  for (auto [d, last] = wait_deadlines_.equal_range(binding.wait_deadline); d != last; ++d) {
    if (d->second == uid) {
      wait_deadlines_.erase(d);
      break;
    }
  }
  if (binding.announced) {
    metrics_.binding_conditions_waiting.Decrement();
    metrics_.binding_conditions_wait_seconds.WithLabels({result}).Observe(
        std::chrono::duration<double>(clock_.MonotonicNow() - binding.wait_started).count());
  }
  waiting_.erase(it);
}

void Scheduler::AbortWaiting(const std::string& uid, const std::string& why) {
  auto it = waiting_.find(uid);
  if (it == waiting_.end()) return;
  std::shared_ptr<Binding> binding = it->second;
  EndWaiting(uid, "aborted");
  FinishBinding(std::move(binding),
                PluginStatus::Error(CancelledError("binding abandoned: " + why)));
}

void Scheduler::ReleaseConflictingAllocation(const rv1::ResourceClaim& claim) {
  // Nobody may use an allocation that overlaps one written earlier (the ledger's verdict is the
  // same in every replica: allocations are observed in write order), so any observer may clear
  // it. Its writer normally does; this covers a writer that gave up waiting for the verdict or
  // went away. The observed resourceVersion makes the write conditional: a newer allocation of
  // the claim is never touched. Extended-resource claims are left to their writer, which deletes
  // them.
  std::string owner;
  if (IsExtendedResourceClaim(claim, &owner)) return;
  log::Debug("scheduler: claim {}/{} overlaps an earlier allocation; releasing it",
             claim.metadata.namespace_, claim.metadata.name);
  auto released = std::make_shared<rv1::ResourceClaim>(claim);
  api::ClearAllocationAndReservations(&released->status);
  client::ApiClient* api = &api_;
  RunAsync([api, released] {
    Status s = client::UpdateStatus(*api, *released).status();
    if (!s.ok() && s.code() != StatusCode::kConflict && s.code() != StatusCode::kNotFound) {
      log::Warning("scheduler: releasing claim {}/{}: {}", released->metadata.namespace_,
                   released->metadata.name, s.ToString());
    }
  });
}

void Scheduler::RecordDecision(const Binding& binding) {
  const DeviceDecision* decision = DecisionOf(*binding.state);
  if (decision == nullptr) return;
  const Pod& pod = *binding.info.pod;
  const std::string& ns = pod.metadata.namespace_;
  for (const DeviceDecision::Fallback& f : decision->fallbacks) {
    metrics_.quota_fallbacks.WithLabels({ns, std::to_string(f.from), std::to_string(f.to)})
        .Increment();
  }
  if (events_ && !decision->quota_fallback.empty()) {
    events_->Record(client::ReferenceTo(pod), "Normal", "QuotaFallback", decision->quota_fallback,
                    "Binding");
  }
  if (!decision->fair_share_fallback.empty()) {
    metrics_.fair_share_fallbacks.WithLabels({tenants_.Of(ns)}).Increment();
    if (events_) {
      events_->Record(client::ReferenceTo(pod), "Normal", "FairShareFallback",
                      decision->fair_share_fallback, "Binding");
    }
  }
  if (!decisions_) return;
  // The policy inputs: the Allocation-mode quotas at the versions the search read, and the
  // namespace's other quotas, which admitted the claims.
  std::vector<PolicyInputRef> inputs;
  for (const allocator::QuotaBudget& q : decision->quotas) {
    inputs.push_back({"v1", "ResourceQuota", q.namespace_, q.name, q.resource_version,
                      std::string(api::quota::kDeviceQuotaModeAllocation)});
  }
  for (const auto& q : cluster_.Quotas(ns)) {
    if (api::quota::ModeOf(*q) == api::quota::DeviceQuotaMode::kAllocation) continue;
    inputs.push_back({"v1", "ResourceQuota", ns, q->metadata.name, q->metadata.resource_version,
                      std::string(api::quota::kDeviceQuotaModeAdmission)});
  }
  std::sort(inputs.begin(), inputs.end(), [](const PolicyInputRef& a, const PolicyInputRef& b) {
    return std::tie(a.kind, a.namespace_, a.name) < std::tie(b.kind, b.namespace_, b.name);
  });
  decisions_->Record(MakeAllocationDecision(
      DecisionContext{.pod = &pod,
                      .decision = decision,
                      .inputs = std::move(inputs),
                      .scheduler_name = pod.spec.scheduler_name.empty() ? "default-scheduler"
                                                                        : pod.spec.scheduler_name,
                      .instance = options_.identity,
                      .time = clock_.Now(),
                      .nodes_evaluated = binding.evaluated_nodes,
                      .nodes_feasible = binding.feasible_nodes}));
}

void Scheduler::ScheduleQuotaRecount(const std::string& ns, bool correction) {
  if (recounting_.contains(ns)) {
    recount_again_[ns] = recount_again_[ns] || correction;
    return;
  }
  recounting_.insert(ns);
  auto recount = std::make_shared<InboxItem::Recount>();
  recount->ns = ns;
  recount->correction = correction;
  client::ApiClient* api = &api_;
  // With the namespace's charges held (quota_charger.h): released once the writes are done.
  quota_charger_.Hold(ns, [this, api, recount] {
    // Quotas first, then the claims: an allocation charged before the quota was read is among
    // the claims, and the write's precondition is the quota version read (quota_charger.h).
    StatusOr<client::ObjectList<api::corev1::ResourceQuota>> quotas =
        client::List<api::corev1::ResourceQuota>(*api, recount->ns);
    if (quotas.ok()) {
      recount->quotas = std::move(quotas->items);
      StatusOr<client::ObjectList<rv1::ResourceClaim>> claims =
          client::List<rv1::ResourceClaim>(*api, recount->ns);
      if (claims.ok()) {
        recount->claims = std::move(claims->items);
        // After the claims: a claim listed allocated whose charge was still expected then has
        // not landed either (the namespace is held).
        recount->expected = quota_charger_.ExpectedClaims(recount->ns);
      } else {
        recount->error = claims.status();
      }
    } else {
      recount->error = quotas.status();
    }
    Post({.kind = InboxItem::Kind::kQuotaRecount, .recount = recount});
  });
}

void Scheduler::FinishQuotaRecount(InboxItem& item) {
  std::shared_ptr<InboxItem::Recount> r = item.recount;
  std::vector<std::shared_ptr<api::corev1::ResourceQuota>> writes;
  if (!r->error.ok()) {
    log::Warning("scheduler: recounting the quotas of namespace {}: {}", r->ns,
                 r->error.ToString());
  } else {
    std::vector<const rv1::ResourceClaim*> claims;
    const std::string marker_key(kQuotaChargeAnnotation);
    for (const rv1::ResourceClaim& c : r->claims) {
      auto ours = r->expected.find(c.metadata.uid);
      auto marker = c.metadata.annotations.find(marker_key);
      bool uncharged = ours != r->expected.end() && marker != c.metadata.annotations.end() &&
                       marker->second == ours->second;
      if (!uncharged) claims.push_back(&c);
    }
    allocator::ResourceList usage =
        allocator::RecomputeHoldings(claims, cluster_.ledger().catalog()).Usage(r->ns);
    for (api::corev1::ResourceQuota& quota : r->quotas) {
      std::optional<allocator::QuotaBudget> budget = allocator::BudgetOf(quota);
      if (!budget.has_value()) continue;
      allocator::ResourceList used = QuotaCharger::RecomputedUsed(quota, usage);
      std::string changes;
      bool missing = false;
      for (const auto& [key, hard] : budget->hard) {
        auto was = quota.status.used.find(key);
        missing = missing || was == quota.status.used.end();
        api::Quantity before = was == quota.status.used.end() ? api::Quantity() : was->second;
        if (before.Compare(used.at(key)) == 0) continue;
        if (!changes.empty()) changes += ", ";
        changes += key + " " + before.ToString() + " -> " + used.at(key).ToString();
      }
      if (changes.empty() && !missing && quota.status.hard == quota.spec.hard) continue;
      if (r->correction && !changes.empty()) {
        api::quota::DriftCounter().WithLabels({r->ns, quota.metadata.name}).Increment();
        if (events_) {
          events_->Record(client::ReferenceTo(quota), "Warning", "QuotaUsageCorrected",
                          "status.used recomputed from the allocations: " + changes, "Recounting");
        }
      }
      auto updated = std::make_shared<api::corev1::ResourceQuota>(std::move(quota));
      updated->status.used = std::move(used);
      updated->status.hard = updated->spec.hard;
      writes.push_back(std::move(updated));
    }
  }
  RunAsync([this, r, writes = std::move(writes)] {
    for (const auto& quota : writes) {
      // Conditional on the version read before the claims (quota_charger.h).
      Status s = quota_charger_.WriteRecount(*quota).status();
      if (s.code() == StatusCode::kConflict) {
        r->conflict = true;
      } else if (!s.ok() && s.code() != StatusCode::kNotFound) {
        log::Warning("scheduler: writing the usage of quota {}/{}: {}", quota->metadata.namespace_,
                     quota->metadata.name, s.ToString());
      }
    }
    quota_charger_.Release(r->ns);
    Post({.kind = InboxItem::Kind::kQuotaRecountDone, .recount = r});
  });
}

void Scheduler::CheckHoldings() {
  std::vector<allocator::HoldingsDifference> drift = cluster_.ledger().Recheck(cluster_.Claims());
  if (!drift.empty()) {
    // The differences of each namespace, in the order found.
    std::map<std::string, std::string> by_namespace;
    for (const allocator::HoldingsDifference& d : drift) {
      std::string& texts = by_namespace[d.namespace_];
      texts += (texts.empty() ? "" : "; ") + d.text;
    }
    for (auto& [ns, texts] : by_namespace) {
      metrics_.ledger_drift.WithLabels({ns}).Increment();
      if (events_) {
        api::corev1::ObjectReference ref;
        ref.kind = "Namespace";
        ref.api_version = "v1";
        ref.name = ns;
        events_->Record(ref, "Warning", "LedgerDrift",
                        "the scheduler's holdings ledger differed from a recompute and was "
                        "corrected: " +
                            texts,
                        "Recounting");
      }
    }
    log::Warning("scheduler: holdings ledger drift corrected ({} differences, first: {})",
                 drift.size(), drift.front().text);
  }
  for (const std::string& ns : cluster_.AllocationQuotaNamespaces()) {
    ScheduleQuotaRecount(ns, /*correction=*/true);
  }
}

void Scheduler::RecordFailure(const Pod& pod, const std::string& reason, const std::string& message,
                              bool clear_nomination) {
  if (!options_.record_events) return;
  events_->Record(client::ReferenceTo(pod), "Warning", "FailedScheduling", message, "Scheduling");
  // PodScheduled=False with the explanation, unless the pod already says exactly that.
  std::vector<api::corev1::PodCondition> conditions = pod.status.conditions;
  bool found = false;
  for (api::corev1::PodCondition& c : conditions) {
    if (c.type != api::corev1::kPodConditionTypePodScheduled) continue;
    if (c.status == "False" && c.reason == reason && c.message == message && !clear_nomination) {
      return;
    }
    found = true;
    if (c.status != "False") c.last_transition_time = api::Time::FromTimestamp(clock_.Now());
    c.status = "False";
    c.reason = reason;
    c.message = message;
  }
  if (!found) {
    api::corev1::PodCondition c;
    c.type = std::string(api::corev1::kPodConditionTypePodScheduled);
    c.status = "False";
    c.reason = reason;
    c.message = message;
    c.last_transition_time = api::Time::FromTimestamp(clock_.Now());
    conditions.push_back(std::move(c));
  }
  boost::json::array list;
  for (const api::corev1::PodCondition& c : conditions) list.push_back(api::corev1::Encode(c));
  // Conditional on the pod version that failed: the list replaces the pod's conditions, and a
  // pod bound meanwhile (by another replica) must not be marked unschedulable.
  boost::json::object status{{"conditions", std::move(list)}};
  if (clear_nomination) status["nominatedNodeName"] = nullptr;
  boost::json::object patch{
      {"metadata", boost::json::object{{"resourceVersion", pod.metadata.resource_version}}},
      {"status", std::move(status)}};
  std::string ns = pod.metadata.namespace_;
  std::string name = pod.metadata.name;
  client::ApiClient* api = &api_;
  RunAsync([api, ns, name, patch = std::move(patch)]() mutable {
    Status s =
        client::Patch<Pod>(*api, ns, name, client::PatchType::kMerge, std::move(patch), "status")
            .status();
    if (!s.ok() && s.code() != StatusCode::kNotFound && s.code() != StatusCode::kConflict) {
      log::Debug("scheduler: pod {}/{} condition: {}", ns, name, s.ToString());
    }
  });
}

void Scheduler::CountFailedRequests(const Pod& pod, std::string_view result) {
  for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
    PodClaimName n = ClaimNameForPod(pod, entry);
    if (n.name.empty()) continue;
    ClusterState::ClaimPtr claim = cluster_.FindClaim(pod.metadata.namespace_, n.name);
    if (!claim || claim->status.allocation.has_value()) continue;
    for (const rv1::DeviceRequest& request : claim->spec.devices.requests) {
      const std::string& cls = request.exactly.has_value()
                                   ? request.exactly->device_class_name
                                   : (request.first_available.empty()
                                          ? request.name
                                          : request.first_available.front().device_class_name);
      // A claim may name any class: one series per made-up name would let a tenant grow the
      // series without limit, so classes the cluster does not have count as "unknown".
      std::string_view label =
          cluster_.FindClass(cls) != nullptr ? std::string_view(cls) : "unknown";
      metrics_.allocations.WithLabels({label, "none", result}).Increment();
    }
  }
}

// Sets every series of `family` in `now` and zeroes those of `before` that are not in it.
template <typename Key>
static void SetSeries(const metrics::GaugeFamily& family, const std::map<Key, double>& now,
                      std::set<std::vector<std::string>>& before) {
  std::set<std::vector<std::string>> seen;
  for (const auto& [key, value] : now) {
    std::vector<std::string> labels =
        std::apply([](const auto&... l) { return std::vector<std::string>{l...}; }, key);
    family.WithLabels(labels).Set(value);
    seen.insert(std::move(labels));
  }
  for (const std::vector<std::string>& labels : before) {
    if (!seen.contains(labels)) family.WithLabels(labels).Set(0);
  }
  before = std::move(seen);
}

void Scheduler::RecountPending(const std::string& uid) {
  if (auto counted = pending_series_.find(uid); counted != pending_series_.end()) {
    auto count = pending_counts_.find(counted->second);
    if (--count->second == 0) pending_counts_.erase(count);
    pending_series_.erase(counted);
  }
  pending_reasons_dirty_ = true;
  auto it = pending_.find(uid);
  if (it == pending_.end()) return;
  const Pod& pod = *it->second;
  std::string reason;
  if (binding_.contains(uid)) {
    reason = "Binding";
  } else if (!pod.spec.scheduling_gates.empty()) {
    reason = kGatedReason;
  } else if (auto last = pending_reasons_.find(uid); last != pending_reasons_.end()) {
    reason = last->second;
  } else {
    reason = "Queued";
  }
  PendingSeries series{std::string(tenants_.Of(pod.metadata.namespace_)), std::move(reason)};
  ++pending_counts_[series];
  pending_series_.emplace(uid, std::move(series));
}

void Scheduler::UpdatePendingReasons() {
  SetSeries(metrics_.pending_pods, pending_counts_, reported_pending_);
  pending_reasons_dirty_ = false;
}

void Scheduler::UpdateDeviceStates() {
  // The unallocated claims of Pending Pods, in key order (the shape order decides which shapes
  // the bound keeps).
  std::vector<std::string> keys;
  keys.reserve(claim_users_.size());
  for (const auto& [key, _] : claim_users_) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  std::vector<ClusterState::ClaimPtr> held;
  std::vector<const rv1::ResourceClaim*> claims;
  for (const std::string& key : keys) {
    size_t slash = key.find('/');
    ClusterState::ClaimPtr claim = cluster_.FindClaim(key.substr(0, slash), key.substr(slash + 1));
    if (!claim || claim->status.allocation.has_value()) continue;
    claims.push_back(claim.get());
    held.push_back(std::move(claim));
  }
  DeviceStates states =
      ComputeDeviceStates(cluster_, PendingShapes(claims), options_.features,
                          options_.allocation_step_limit, options_.evaluation_budget);
  std::map<std::tuple<std::string, std::string, std::string>, double> devices;
  for (const auto& [key, n] : states.devices) devices[key] = static_cast<double>(n);
  SetSeries(metrics_.devices, devices, reported_devices_);
  SetSeries(metrics_.counter_used, states.counter_used, reported_counters_);
  SetSeries(metrics_.capacity_used, states.capacity_used, reported_capacity_);
  metrics_.device_state_shapes.WithLabels({"evaluated"}).Set(static_cast<double>(states.shapes));
  metrics_.device_state_shapes.WithLabels({"dropped"})
      .Set(static_cast<double>(states.shapes_dropped));
}

void Scheduler::UpdateGauges() {
  if (pending_reasons_dirty_) UpdatePendingReasons();
  metrics_.pending_active.Set(static_cast<double>(queue_->active()));
  metrics_.pending_backoff.Set(static_cast<double>(queue_->backoff()));
  metrics_.pending_unschedulable.Set(
      static_cast<double>(queue_->unschedulable() - queue_->gated()));
  metrics_.pending_gated.Set(static_cast<double>(queue_->gated()));
  std::map<std::tuple<std::string, std::string>, double> unschedulable;
  for (const auto& [plugin, pods] : queue_->unschedulable_by_plugin()) {
    unschedulable[{plugin, profile_}] = static_cast<double>(pods);
  }
  SetSeries(metrics_.unschedulable_pods, unschedulable, reported_unschedulable_);
  if (!isolated_nodes_.empty() || metrics_.isolated_nodes.Value() != 0) {
    Timestamp now = clock_.Now();
    int isolated = 0;
    for (const auto& [name, node] : isolated_nodes_) {
      if (api::labels::IsIsolated(*node, now)) ++isolated;
    }
    metrics_.isolated_nodes.Set(isolated);
  }
  MutexLock lock(mu_);
  stats_.active = queue_->active();
  stats_.backoff = queue_->backoff();
  stats_.unschedulable_pods = queue_->unschedulable();
  stats_.binding = binding_.size();
  stats_.waiting = waiting_.size();
}

Scheduler::Stats Scheduler::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

}  // namespace draplane::scheduler
