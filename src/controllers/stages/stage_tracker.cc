#include "controllers/stages/stage_tracker.h"

namespace draplane::controllers {
namespace {

namespace rv1 = api::resourcev1;
namespace cv1 = api::corev1;

// Stage pairs observed, each when its end is reached.
struct StagePair {
  ClaimStageTracker::Stage from;
  ClaimStageTracker::Stage to;
  std::string_view label;
};
constexpr StagePair kPairs[] = {
    {ClaimStageTracker::kCreated, ClaimStageTracker::kAllocated, "created_to_allocated"},
    {ClaimStageTracker::kAllocated, ClaimStageTracker::kReserved, "allocated_to_reserved"},
    {ClaimStageTracker::kReserved, ClaimStageTracker::kBound, "reserved_to_bound"},
    {ClaimStageTracker::kBound, ClaimStageTracker::kPrepared, "bound_to_prepared"},
    {ClaimStageTracker::kPrepared, ClaimStageTracker::kReady, "prepared_to_ready"},
    {ClaimStageTracker::kCreated, ClaimStageTracker::kReady, "created_to_ready"},
};

// The class of the claim's first request; for firstAvailable, of the subrequest its allocation
// chose ("<request>/<subrequest>" in the results), else of the first subrequest.
std::string DeviceClassOf(const rv1::ResourceClaim& claim) {
  if (claim.spec.devices.requests.empty()) return "";
  const rv1::DeviceRequest& request = claim.spec.devices.requests.front();
  if (request.exactly.has_value()) return request.exactly->device_class_name;
  if (request.first_available.empty()) return "";
  if (claim.status.allocation.has_value()) {
    const std::string prefix = request.name + "/";
    for (const rv1::DeviceRequestAllocationResult& r : claim.status.allocation->devices.results) {
      if (r.request.rfind(prefix, 0) != 0) continue;
      std::string_view sub = std::string_view(r.request).substr(prefix.size());
      for (const rv1::DeviceSubRequest& s : request.first_available) {
        if (s.name == sub) return s.device_class_name;
      }
    }
  }
  return request.first_available.front().device_class_name;
}

// Every allocated device has a status.devices entry with Ready=True.
bool Prepared(const rv1::ResourceClaim& claim) {
  if (!claim.status.allocation.has_value()) return false;
  const auto& results = claim.status.allocation->devices.results;
  if (results.empty()) return false;
  for (const rv1::DeviceRequestAllocationResult& r : results) {
    bool ready = false;
    for (const rv1::AllocatedDeviceStatus& d : claim.status.devices) {
      if (d.driver != r.driver || d.pool != r.pool || d.device != r.device) continue;
      if (d.share_id != r.share_id) continue;
      for (const api::metav1::Condition& c : d.conditions) {
        if (c.type == "Ready" && c.status == "True") ready = true;
      }
    }
    if (!ready) return false;
  }
  return true;
}

bool PodReady(const cv1::Pod& pod) {
  for (const cv1::PodCondition& c : pod.status.conditions) {
    if (c.type == "Ready") return c.status == "True";
  }
  return false;
}

}  // namespace

const metrics::HistogramFamily& ClaimStageTracker::Durations() {
  static const metrics::HistogramFamily family = metrics::NewHistogramFamily(
      "draplane_claim_stage_duration_seconds",
      "Time a ResourceClaim spends in each stage from created to its Pod ready, as observed "
      "through watches, by stage, device class and tenant (allowlisted namespace or other).",
      {"stage", "device_class", "tenant"},
      {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600});
  return family;
}

ClaimStageTracker::ClaimStageTracker(client::SharedInformers& informers, const Clock& clock,
                                     StageTrackerOptions options)
    : clock_(clock),
      tenants_(std::move(options.tenants)),
      claims_(informers.Get<rv1::ResourceClaim>()),
      pods_(informers.Get<cv1::Pod>()) {
  Durations();  // registered up front, so /metrics shows the family before the first claim
  // A claim added before the first list completed was created at an unknown time.
  claim_handlers_ =
      claims_.AddHandlers({.on_add = [this](const auto& c) { OnClaim(*c, !claims_.HasSynced()); },
                           .on_update = [this](const auto&, const auto& c) { OnClaim(*c, false); },
                           .on_delete = [this](const auto& c) { OnClaimDeleted(*c); }});
  pod_handlers_ = pods_.AddHandlers({.on_add = [this](const auto& p) { OnPod(*p); },
                                     .on_update = [this](const auto&, const auto& p) { OnPod(*p); },
                                     .on_delete = nullptr});
}

ClaimStageTracker::~ClaimStageTracker() { Stop(); }

void ClaimStageTracker::Stop() {
  if (claim_handlers_ != 0) claims_.RemoveHandlers(claim_handlers_);
  if (pod_handlers_ != 0) pods_.RemoveHandlers(pod_handlers_);
  claim_handlers_ = pod_handlers_ = 0;
}

int64_t ClaimStageTracker::events() const {
  MutexLock lock(mu_);
  return events_;
}

size_t ClaimStageTracker::tracked() const {
  MutexLock lock(mu_);
  return by_uid_.size();
}

void ClaimStageTracker::Reach(Claim& claim, Stage s, std::optional<Duration> now) {
  if (claim.reached[s]) return;
  claim.reached[s] = true;
  claim.at[s] = now;
  if (!now.has_value()) return;
  for (const StagePair& pair : kPairs) {
    if (pair.to != s || !claim.at[pair.from].has_value()) continue;
    Duration elapsed = *now - *claim.at[pair.from];
    if (elapsed < Duration::zero()) continue;
    Durations()
        .WithLabels({pair.label, claim.device_class, tenants_.Of(claim.namespace_)})
        .Observe(std::chrono::duration<double>(elapsed).count());
  }
}

void ClaimStageTracker::NotePod(Claim& claim, const cv1::Pod& pod, std::optional<Duration> now) {
  if (pod.metadata.uid != claim.pod_uid) return;
  if (!pod.spec.node_name.empty()) Reach(claim, kBound, now);
  if (PodReady(pod)) Reach(claim, kReady, now);
}

void ClaimStageTracker::OnClaim(const rv1::ResourceClaim& claim, bool listed) {
  std::optional<Duration> now;
  if (!listed) now = clock_.MonotonicNow();
  MutexLock lock(mu_);
  ++events_;
  auto [it, added] = by_uid_.try_emplace(claim.metadata.uid);
  Claim& tracked = it->second;
  if (added) {
    tracked.namespace_ = claim.metadata.namespace_;
    Reach(tracked, kCreated, now);
  }
  if (claim.status.allocation.has_value() && !tracked.reached[kAllocated]) {
    tracked.device_class = DeviceClassOf(claim);
    Reach(tracked, kAllocated, now);
  }
  if (tracked.pod_uid.empty()) {
    for (const rv1::ResourceClaimConsumerReference& ref : claim.status.reserved_for) {
      if (ref.resource != "pods" || !ref.api_group.empty()) continue;
      tracked.pod_name = ref.name;
      tracked.pod_uid = ref.uid;
      claims_of_pod_[ref.uid].insert(claim.metadata.uid);
      Reach(tracked, kReserved, now);
      break;
    }
  }
  // The Pod may have moved on before the claim's reservation was seen.
  if (!tracked.pod_uid.empty() && !tracked.reached[kReady]) {
    client::Informer<cv1::Pod>::Ptr pod = pods_.Get(claim.metadata.namespace_, tracked.pod_name);
    if (pod != nullptr) NotePod(tracked, *pod, now);
  }
  if (Prepared(claim)) {
    Reach(tracked, kPrepared, now);
  }
}

void ClaimStageTracker::OnClaimDeleted(const rv1::ResourceClaim& claim) {
  MutexLock lock(mu_);
  ++events_;
  auto it = by_uid_.find(claim.metadata.uid);
  if (it == by_uid_.end()) return;
  if (!it->second.pod_uid.empty()) {
    auto pod = claims_of_pod_.find(it->second.pod_uid);
    if (pod != claims_of_pod_.end()) {
      pod->second.erase(claim.metadata.uid);
      if (pod->second.empty()) claims_of_pod_.erase(pod);
    }
  }
  by_uid_.erase(it);
}

void ClaimStageTracker::OnPod(const cv1::Pod& pod) {
  Duration now = clock_.MonotonicNow();
  MutexLock lock(mu_);
  ++events_;
  auto it = claims_of_pod_.find(pod.metadata.uid);
  if (it == claims_of_pod_.end()) return;
  for (const std::string& uid : it->second) {
    auto claim = by_uid_.find(uid);
    if (claim != by_uid_.end()) NotePod(claim->second, pod, now);
  }
}

}  // namespace draplane::controllers
