#include "scheduler/plugins/dynamic_resources.h"

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <charconv>
#include <set>
#include <span>
#include <unordered_map>

#include "allocator/allocator.h"
#include "allocator/contested.h"
#include "allocator/quota.h"
#include "api/labels/node_selector.h"
#include "api/labels/taints.h"
#include "api/meta/resource_version.h"
#include "api/object.h"
#include "api/resource_claims.h"
#include "api/resource_pool.h"
#include "api/validation/validation.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/random.h"
#include "common/saturating.h"
#include "scheduler/explain.h"

namespace draplane::scheduler {

namespace rv1 = api::resourcev1;
using api::corev1::Pod;

namespace {

constexpr std::string_view kPluginName = "DynamicResources";
// resourceapi.FirstAvailableDeviceRequestMaxSize: the score of subrequest i is 8 - i.
constexpr int64_t kFirstAvailableMaxSize = 8;
constexpr std::string_view kSpecialClaimName = "<extended-resources>";

// upstream IsDRAExtendedResourceName.
bool IsDraExtendedResourceName(std::string_view name) {
  return IsExtendedResourceName(name) || name.starts_with(kImplicitExtendedResourcePrefix);
}

struct ClaimEntry {
  ClusterState::ClaimPtr claim;
  bool special = false;
  // The special claim exists in the API (from an earlier attempt).
  bool special_in_api = false;
  std::optional<api::labels::NodeSelectorMatcher> available_on;
  std::string pod_claim_name;
};

struct Alternative {
  uint32_t device_class = DeviceLedger::kNoClass;  // DeviceLedger::ClassId
  int64_t count = 0;
};

// The claims to allocate on nodes that serve the same extended resources through DRA.
struct Variant {
  std::shared_ptr<rv1::ResourceClaim> special;  // null: no special claim on such nodes
  std::vector<api::corev1::ContainerExtendedResourceRequest> mappings;
  std::vector<const rv1::ResourceClaim*> claims;  // user claims to allocate, then the special one
  std::vector<size_t> entries;                    // ClaimEntry index of each of `claims`
  // The name the pod uses for each of `claims` (FailedScheduling messages).
  std::vector<std::string> claim_names;
  std::unique_ptr<allocator::Allocator> allocator;
  // Free-device bounds: every request needs one alternative with enough free devices; the
  // single-alternative requests need their sum per class. Classes by ledger id, resolved when
  // the variant is made (a variant lives one scheduling cycle, the ledger's classes longer).
  std::vector<std::vector<Alternative>> demands;
  std::map<uint32_t, int64_t> sums;
};

struct NodeAllocation {
  const NodeInfo* node = nullptr;
  const Variant* variant = nullptr;
  // Aligned with variant->claims; shared with the allocator's per-node cache.
  std::shared_ptr<const std::vector<rv1::AllocationResult>> results;
  // The search kept the fair-share placement preference (DraState::contested); false when the
  // node fit only without it (the node then scores below every node that kept it).
  bool preference_kept = true;
};

// What PreBind writes and Unreserve undoes, per claim.
struct BindRecord {
  size_t entry = 0;
  std::shared_ptr<const rv1::AllocationResult> allocation;  // null: only reserve
  std::string in_flight_uid;
  // Set by PreBind (binder thread), read by Unreserve afterwards (loop thread).
  std::string name;  // the claim's name in the API
  std::string uid;
  bool reserved = false;
  // The claim's resourceVersion after this attempt's write.
  uint64_t written_version = 0;
  bool lost = false;
  // The write was not seen back in time: whether it won is not known yet, and another replica
  // may already use it if it did, so nothing is undone (unless release_marked). Observers clear
  // it if it lost (Scheduler::Apply).
  bool unconfirmed = false;
  bool created = false;
  // Written with a charge marker: an attempt that fails undoes it whole (reservation and
  // allocation) unless the Pod got bound meanwhile.
  bool release_marked = false;
  // The allocation is charged to quotas after it is written: mark it (kQuotaChargeAnnotation).
  bool mark_charge = false;
  std::string charge_marker;  // the mark, set by PreBind
};

// The Allocation-mode quota charge PreBind started (QuotaCharger::ChargeAsync): decided on a
// charger thread while the binding waits, read by the loop thread.
struct QuotaChargeTicket {
  Mutex mu;
  bool decided DRAPLANE_GUARDED_BY(mu) = false;
  Status result DRAPLANE_GUARDED_BY(mu);
};

struct DraState {
  std::vector<ClaimEntry> claims;
  std::vector<size_t> to_allocate;
  std::optional<size_t> special_index;
  std::map<std::string, int64_t, std::less<>> extended;  // DRA-mappable resource -> amount
  std::map<std::string, std::unique_ptr<Variant>> variants;
  // The variant without extended resources (key ""), once made: what a Pod without extended
  // resources uses on every node.
  Variant* plain_variant = nullptr;
  // Filter reaches its free-device check on every node without a side effect before it: no
  // special claim, no claim allocated already (whose node Filter checks, and whose binding it
  // may find failed). Then CertainlyRejects may answer for it.
  bool certain_rejection = false;
  // The node CertainlyRejects last found the free devices enough on (with the plain variant):
  // Filter, asked next on it, need not count them again.
  const NodeInfo* counted_fit = nullptr;
  // Filter's allocator outcome, overwritten at each node (allocator::Allocator::AllocateInto).
  allocator::Outcome outcome;
  // The nodes Filter found an allocation on, in the order it saw them (the cluster's NodeInfos
  // stay put for the attempt). Score asks for the node Filter has just passed, the last entry;
  // Reserve once. A node seen again (a second pass) has its later entry nearer the end.
  std::vector<NodeAllocation> node_allocations;
  const NodeAllocation* AllocationOn(const NodeInfo* node) const {
    for (auto it = node_allocations.rbegin(); it != node_allocations.rend(); ++it) {
      if (it->node == node) return &*it;
    }
    return nullptr;
  }
  std::set<size_t> unavailable;
  std::map<std::string, std::string> claim_names;
  int explain_left = 0;
  int64_t max_score = 0;
  bool any_first_available = false;
  std::vector<BindRecord> binds;
  const Variant* reserved_variant = nullptr;
  // KEP-5007, set by PreBind when it answers Wait: the pod's claims whose devices have binding
  // conditions, with the version this attempt wrote (0: allocated by an earlier attempt) and when
  // the wait began (wall clock).
  struct Waited {
    std::string namespace_;
    std::string name;
    std::string uid;
    uint64_t written_version = 0;
  };
  std::vector<Waited> waited;
  Timestamp wait_since{};
  // A device failed this binding (binding condition, taint, disappearance, timeout): Unreserve
  // releases the allocations written in this attempt, not only the reservation.
  bool release_allocations = false;
  // Allocator explanations of the nodes explained in this attempt (keep_explanations).
  std::map<std::string, std::shared_ptr<const allocator::Explanation>, std::less<>> explanations;
  // What the attempt's selector evaluations may cost, over all nodes.
  allocator::EvaluationBudget budget;
  // The Allocation-mode quotas of the Pod's namespace, consulted inside every search.
  std::unique_ptr<allocator::QuotaConstraint> quota;
  // The starvation holds of other Pods this attempt must leave alone (null: none applies).
  std::unique_ptr<allocator::HoldConstraint> hold;
  // The classes this Pod leaves to under-served tenants while it can fall back (null: none, or
  // the Pod has no fallback outside them). A preference: Filter drops it where it fits nothing.
  std::unique_ptr<allocator::ContestedClassesConstraint> contested;

  // The policy constraints of the searches of this attempt; `with_preference`: the fair-share
  // placement preference too.
  std::vector<allocator::PolicyConstraint*> Policies(bool with_preference = true) const {
    std::vector<allocator::PolicyConstraint*> out;
    if (quota) out.push_back(quota.get());
    if (hold) out.push_back(hold.get());
    if (contested && with_preference) out.push_back(contested.get());
    return out;
  }
  // Per node: devices or requests a policy (the quota, a hold) refused in its Filter search.
  std::map<std::string, int64_t, std::less<>> quota_refusals;
  std::optional<DeviceDecision> decision;
  // The quota charge of this attempt's allocations (null: nothing to charge), open from Reserve
  // (the charger's recounts leave its claims out until it is decided) and started in PreBind.
  std::unique_ptr<QuotaCharger::Expected> expected;
  std::shared_ptr<QuotaChargeTicket> charge;
};

// Whether a claim the attempt allocates has a firstAvailable request that can leave a contested
// class for a later subrequest of a class nobody contests: only then is the preference worth its
// searches.
bool HasUncontestedFallback(const DraState& state,
                            const allocator::ContestedClassesConstraint& contested) {
  for (size_t i : state.to_allocate) {
    const ClaimEntry& e = state.claims[i];
    if (e.claim == nullptr) continue;
    for (const rv1::DeviceRequest& r : e.claim->spec.devices.requests) {
      bool contested_before = false;
      for (const rv1::DeviceSubRequest& sub : r.first_available) {
        if (contested.Contests(sub.device_class_name)) {
          contested_before = true;
        } else if (contested_before) {
          return true;
        }
      }
    }
  }
  return false;
}

std::string SpecialInFlightUid(std::string_view pod_uid) {
  return std::string(pod_uid) + "/extended-resources";
}

// The effective requests of a container (limits stand in for missing requests).
std::map<std::string, api::Quantity, std::less<>> EffectiveRequests(
    const api::corev1::Container& c) {
  std::map<std::string, api::Quantity, std::less<>> out = c.resources.requests;
  for (const auto& [name, q] : c.resources.limits) out.emplace(name, q);
  return out;
}

// The ExactCount request container `index` makes for `resource` (upstream
// createResourceRequestAndMappings), named container-<i>-request-<j> (i: index in initContainers
// ++ containers, j: index of the resource among the container's sorted requests), and its
// mappings. The container first uses the requests in `reusable` (those of containers that start
// later, null where one makes none), in order, and asks only for the devices they lack; no
// request when they cover it.
std::optional<rv1::DeviceRequest> ContainerRequest(
    size_t index, const api::corev1::Container& container, const std::string& resource,
    const std::string& class_name, std::span<const std::optional<rv1::DeviceRequest>> reusable,
    std::vector<api::corev1::ContainerExtendedResourceRequest>* mappings) {
  std::map<std::string, api::Quantity, std::less<>> requests = EffectiveRequests(container);
  auto found = requests.find(resource);
  if (found == requests.end()) return std::nullopt;
  std::optional<int64_t> count = found->second.AsInt64();
  if (!count || *count == 0) return std::nullopt;
  auto map_to = [&](const std::string& request_name) {
    api::corev1::ContainerExtendedResourceRequest m;
    m.container_name = container.name;
    m.resource_name = resource;
    m.request_name = request_name;
    mappings->push_back(std::move(m));
  };
  int64_t covered = 0;
  for (const std::optional<rv1::DeviceRequest>& r : reusable) {
    if (!r.has_value()) continue;
    covered = SaturatingAdd(covered, r->exactly->count);
    map_to(r->name);
    if (covered >= *count) return std::nullopt;
  }
  size_t ridx = static_cast<size_t>(std::distance(requests.begin(), found));
  rv1::DeviceRequest r;
  r.name = "container-" + std::to_string(index) + "-request-" + std::to_string(ridx);
  r.exactly.emplace();
  r.exactly->device_class_name = class_name;
  r.exactly->allocation_mode = std::string(rv1::kDeviceAllocationModeExactCount);
  r.exactly->count = *count - covered;
  map_to(r.name);
  return r;
}

// upstream createRequestsAndMappings: per resource the node serves through DRA (in name order),
// one request per long-lived container (regular containers and restartable init containers,
// which run side by side) and a single one for all non-restartable init containers, which run
// one at a time before the containers after them: each reuses the devices of long-lived
// containers that start later, the largest remainder is requested and every init container's
// own request is mapped to it. So init gpu: 1 then container gpu: 1 needs one device, not two.
// Requests are sorted by name; mappings go per resource, long-lived then init containers.
void BuildSpecialRequests(const Pod& pod, const std::set<std::string>& resources,
                          const std::map<std::string, std::string, std::less<>>& classes,
                          Variant* variant) {
  std::vector<const api::corev1::Container*> containers;
  for (const auto& c : pod.spec.init_containers) containers.push_back(&c);
  for (const auto& c : pod.spec.containers) containers.push_back(&c);
  const size_t init_count = pod.spec.init_containers.size();
  auto runs_alone = [&](size_t i) {
    return i < init_count && containers[i]->restart_policy.value_or("") != "Always";
  };
  std::vector<rv1::DeviceRequest> requests;
  std::vector<api::corev1::ContainerExtendedResourceRequest>& mappings = variant->mappings;
  for (const std::string& resource : resources) {
    auto cls = classes.find(resource);
    if (cls == classes.end()) continue;
    std::vector<std::optional<rv1::DeviceRequest>> long_lived(containers.size());
    for (size_t i = 0; i < containers.size(); ++i) {
      if (runs_alone(i)) continue;
      long_lived[i] = ContainerRequest(i, *containers[i], resource, cls->second, {}, &mappings);
    }
    std::optional<rv1::DeviceRequest> largest_init;
    std::set<std::string> init_request_names;
    const size_t init_mappings_begin = mappings.size();
    for (size_t i = 0; i < containers.size(); ++i) {
      if (!runs_alone(i)) continue;
      std::span<const std::optional<rv1::DeviceRequest>> later(long_lived.begin() + i,
                                                               long_lived.end());
      std::optional<rv1::DeviceRequest> r =
          ContainerRequest(i, *containers[i], resource, cls->second, later, &mappings);
      if (!r.has_value()) continue;
      init_request_names.insert(r->name);
      if (!largest_init || largest_init->exactly->count < r->exactly->count) largest_init = r;
    }
    if (largest_init.has_value()) {
      for (size_t m = init_mappings_begin; m < mappings.size(); ++m) {
        if (init_request_names.contains(mappings[m].request_name)) {
          mappings[m].request_name = largest_init->name;
        }
      }
      requests.push_back(std::move(*largest_init));
    }
    for (std::optional<rv1::DeviceRequest>& r : long_lived) {
      if (r.has_value()) requests.push_back(std::move(*r));
    }
  }
  std::sort(
      requests.begin(), requests.end(),
      [](const rv1::DeviceRequest& a, const rv1::DeviceRequest& b) { return a.name < b.name; });
  for (rv1::DeviceRequest& r : requests) {
    variant->special->spec.devices.requests.push_back(std::move(r));
  }
}

void AddDemands(const rv1::ResourceClaim& claim, const DeviceLedger& ledger, Variant* v) {
  for (const rv1::DeviceRequest& r : claim.spec.devices.requests) {
    std::vector<Alternative> alternatives;
    bool usable = true;
    if (r.exactly.has_value()) {
      const rv1::ExactDeviceRequest& e = *r.exactly;
      if (e.allocation_mode == rv1::kDeviceAllocationModeAll || e.admin_access.value_or(false)) {
        usable = false;
      } else {
        alternatives.push_back(
            {ledger.ClassId(e.device_class_name), std::max<int64_t>(e.count, 1)});
      }
    } else {
      for (const rv1::DeviceSubRequest& s : r.first_available) {
        if (s.allocation_mode == rv1::kDeviceAllocationModeAll) usable = false;
        alternatives.push_back(
            {ledger.ClassId(s.device_class_name), std::max<int64_t>(s.count, 1)});
      }
    }
    if (!usable || alternatives.empty()) continue;
    // Counts are the tenant's int64s: a sum past the range stays larger than any node.
    if (alternatives.size() == 1) {
      int64_t& sum = v->sums[alternatives[0].device_class];
      sum = SaturatingAdd(sum, alternatives[0].count);
    }
    v->demands.push_back(std::move(alternatives));
  }
}

// The index of the subrequest of `req` that a result's request ("req/sub") names, or -1.
int SubrequestIndex(const rv1::DeviceRequest& req, std::string_view result_request) {
  size_t slash = result_request.find('/');
  if (slash == std::string_view::npos || result_request.substr(0, slash) != req.name) return -1;
  std::string_view sub = result_request.substr(slash + 1);
  for (size_t j = 0; j < req.first_available.size(); ++j) {
    if (req.first_available[j].name == sub) return static_cast<int>(j);
  }
  return -1;
}

// The index of the subrequest of `req` the allocation chose (the last result naming one), or -1.
int ChosenSubrequest(const rv1::DeviceRequest& req, const rv1::AllocationResult& allocation) {
  if (req.first_available.empty()) return -1;
  const auto& results = allocation.devices.results;
  for (auto r = results.rbegin(); r != results.rend(); ++r) {
    int sub = SubrequestIndex(req, r->request);
    if (sub >= 0) return sub;
  }
  return -1;
}

// The index of the subrequest a claim's allocation chose for each request (-1: none).
std::vector<int> ChosenSubrequests(const rv1::ResourceClaim& claim,
                                   const rv1::AllocationResult& allocation) {
  std::vector<int> out;
  out.reserve(claim.spec.devices.requests.size());
  for (const rv1::DeviceRequest& req : claim.spec.devices.requests) {
    out.push_back(ChosenSubrequest(req, allocation));
  }
  return out;
}

// Upstream's tier score of an allocation: ChosenSubrequests summed without building its vector
// (Score asks once per feasible node).
int64_t ScoreAllocation(const rv1::ResourceClaim& claim, const rv1::AllocationResult& allocation) {
  int64_t score = 0;
  for (const rv1::DeviceRequest& req : claim.spec.devices.requests) {
    int chosen = ChosenSubrequest(req, allocation);
    if (chosen >= 0) score += kFirstAvailableMaxSize - chosen;
  }
  return score;
}

class DynamicResources final : public PreEnqueuePlugin,
                               public PreFilterPlugin,
                               public FilterPlugin,
                               public PostFilterPlugin,
                               public ScorePlugin,
                               public ReservePlugin,
                               public PreBindPlugin {
 public:
  DynamicResources(DynamicResourcesDeps deps, DynamicResourcesOptions options)
      : deps_(std::move(deps)), options_(std::move(options)) {}

  std::string_view name() const override { return kPluginName; }

  std::vector<ClusterEventSpec> EventsToRegister() const override {
    return {
        {EventResource::kNode, kAdd | kUpdateNodeLabel | kUpdateNodeAllocatable | kUpdateNodeTaint},
        {EventResource::kResourceClaim, kAdd | kUpdate},
        {EventResource::kPod, kUpdatePodGeneratedResourceClaim},
        {EventResource::kDeviceClass, kAdd | kUpdate},
        {EventResource::kResourceSlice, kAdd | kUpdate},
        {EventResource::kResourceQuota, kAdd | kUpdate | kDelete}};
  }

  // upstream isSchedulableAfterClaimChange / isSchedulableAfterPodChange.
  bool IsSchedulableAfter(const ClusterEvent& event, const Pod& pod) const override {
    if (event.resource == EventResource::kPod) {
      return event.pod != nullptr && event.pod->metadata.uid == pod.metadata.uid &&
             CheckClaims(pod).empty();
    }
    if (event.resource == EventResource::kResourceQuota) return QuotaLeavesMoreRoom(event, pod);
    if (event.resource != EventResource::kResourceClaim || event.new_claim == nullptr) return true;
    const rv1::ResourceClaim& now = *event.new_claim;
    const rv1::ResourceClaim* before = event.old_claim;
    if (before != nullptr && before->status.allocation.has_value() &&
        !now.status.allocation.has_value()) {
      return true;  // a deallocation may have freed devices
    }
    if (!CheckClaims(pod).empty()) return false;
    bool uses = api::IsForPod(pod, now) &&
                now.metadata.annotations.contains(std::string(kExtendedResourceClaimAnnotation));
    for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
      PodClaimName n = ClaimNameForPod(pod, entry);
      if (!n.name.empty() && n.name == now.metadata.name &&
          now.metadata.namespace_ == pod.metadata.namespace_) {
        uses = true;
      }
    }
    if (!uses) return false;
    if (before == nullptr) return true;
    return !(before->status == now.status);
  }

  // Whether a quota event may let a Pod of its namespace in: a quota gone or out of Allocation
  // mode, or more left of some limited resource (a higher hard limit, or usage given back). Every
  // charge is a quota update too, and those must not wake every Pod waiting for the quota.
  static bool QuotaLeavesMoreRoom(const ClusterEvent& event, const Pod& pod) {
    const api::corev1::ResourceQuota* any =
        event.new_quota != nullptr ? event.new_quota : event.old_quota;
    if (any == nullptr || any->metadata.namespace_ != pod.metadata.namespace_) return false;
    if (event.old_quota == nullptr) return false;  // a new quota only limits more
    std::optional<allocator::QuotaBudget> before = allocator::BudgetOf(*event.old_quota);
    if (!before.has_value()) return false;
    if (event.new_quota == nullptr) return true;
    std::optional<allocator::QuotaBudget> after = allocator::BudgetOf(*event.new_quota);
    if (!after.has_value()) return true;
    auto left = [](const allocator::QuotaBudget& b, const std::string& key) {
      auto used = b.used.find(key);
      return used == b.used.end() ? b.hard.at(key) : b.hard.at(key).Sub(used->second);
    };
    for (const auto& [key, hard] : before->hard) {
      if (!after->hard.contains(key) || left(*after, key).Compare(left(*before, key)) > 0) {
        return true;
      }
    }
    return false;
  }

  PluginStatus PreEnqueue(const Pod& pod) override {
    std::string problem = CheckClaims(pod);
    if (problem.empty()) return PluginStatus::Success();
    return PluginStatus::Unschedulable(std::move(problem));
  }

  PluginStatus PreFilter(CycleState& cycle, const PodInfo& info, PreFilterResult*) override {
    const Pod& pod = *info.pod;
    ClusterState& cluster = *deps_.cluster;
    auto state = std::make_shared<DraState>();
    for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
      PodClaimName n = ClaimNameForPod(pod, entry);
      if (!n.error.empty()) return PluginStatus::Unresolvable(n.error);
      if (n.skip) continue;
      ClusterState::ClaimPtr claim = cluster.FindClaim(pod.metadata.namespace_, n.name);
      if (claim == nullptr) {
        return PluginStatus::Unresolvable("resourceclaim.resource.k8s.io \"" + n.name +
                                          "\" not found");
      }
      if (claim->metadata.deletion_timestamp.has_value()) {
        return PluginStatus::Unresolvable("resourceclaim \"" + n.name + "\" is being deleted");
      }
      if (n.must_check_owner && !api::IsForPod(pod, *claim)) {
        return PluginStatus::Unresolvable(
            "ResourceClaim " + ClaimKey(pod.metadata.namespace_, n.name) +
            " was not created for pod " + ClaimKey(pod.metadata.namespace_, pod.metadata.name) +
            " (pod is not owner)");
      }
      // A claim the Pod names twice (two entries, one claim: validation allows it) is allocated
      // and reserved once, as the kubelet prepares it once.
      if (!state->claim_names.emplace(ClaimKey(pod.metadata.namespace_, n.name), entry.name)
               .second) {
        continue;
      }
      ClaimEntry e;
      e.claim = std::move(claim);
      e.pod_claim_name = entry.name;
      state->claims.push_back(std::move(e));
    }

    // Extended resources backed by DRA (upstream preFilterExtendedResources).
    if (options_.extended_resources) {
      const auto& mapping = cluster.extended_resource_classes();
      for (const auto& [resource, amount] : info.requests.scalar) {
        if (amount != 0 && IsDraExtendedResourceName(resource) && mapping.contains(resource)) {
          state->extended[resource] = amount;
        }
      }
      if (!state->extended.empty()) {
        ClaimEntry e;
        e.special = true;
        e.pod_claim_name = "extended-resources";
        e.claim = cluster.FindExtendedResourceClaim(pod.metadata.uid);
        e.special_in_api = e.claim != nullptr;
        state->special_index = state->claims.size();
        if (e.claim) {
          state->claim_names[ClaimKey(e.claim->metadata.namespace_, e.claim->metadata.name)] =
              e.pod_claim_name;
        }
        state->claims.push_back(std::move(e));
      }
    }
    if (state->claims.empty()) return PluginStatus::Skip();

    for (size_t i = 0; i < state->claims.size(); ++i) {
      ClaimEntry& e = state->claims[i];
      if (e.special) continue;
      const rv1::ResourceClaim& claim = *e.claim;
      for (const rv1::DeviceRequest& r : claim.spec.devices.requests) {
        if (!r.first_available.empty()) state->any_first_available = true;
        if (!r.first_available.empty()) state->max_score += kFirstAvailableMaxSize;
      }
      if (claim.status.allocation.has_value()) {
        if (auto r = releasing_.find(claim.metadata.uid); r != releasing_.end()) {
          if (*r->second == *claim.status.allocation) {
            // A device failed this allocation's binding and its release is under way; the
            // deallocation event brings the pod back.
            return PluginStatus::Unschedulable(
                "resource claim " + ClaimKey(claim.metadata.namespace_, claim.metadata.name) +
                " is being deallocated");
          }
          releasing_.erase(r);
        }
        if (PluginStatus pending = ChargePending(claim); !pending.ok()) return pending;
        if (cluster.ledger().IsConflicting(claim.metadata.uid)) {
          // Another scheduler allocated these devices first; the writer of this allocation gives
          // it back (device_ledger.h, "Conflicts").
          return PluginStatus::Unschedulable(
              "resource claim " + ClaimKey(claim.metadata.namespace_, claim.metadata.name) +
              " is in the process of being allocated");
        }
        if (!api::IsReservedForPod(pod, claim) &&
            claim.status.reserved_for.size() >= api::validation::kResourceClaimReservedForMaxSize) {
          return PluginStatus::Unschedulable("resourceclaim in use");
        }
        if (claim.status.allocation->node_selector.has_value()) {
          StatusOr<api::labels::NodeSelectorMatcher> m =
              api::labels::NodeSelectorMatcher::CompileStrict(
                  *claim.status.allocation->node_selector);
          if (!m.ok()) return PluginStatus::Error(m.status());
          e.available_on = std::move(*m);
        }
        continue;
      }
      state->to_allocate.push_back(i);
      if (cluster.ledger().IsInFlight(claim.metadata.uid)) {
        return PluginStatus::Unschedulable(
            "resource claim " + ClaimKey(claim.metadata.namespace_, claim.metadata.name) +
            " is in the process of being allocated");
      }
      for (const rv1::DeviceRequest& r : claim.spec.devices.requests) {
        if (r.exactly.has_value()) {
          PluginStatus s = ValidateClass(r.exactly->device_class_name, r.name);
          if (!s.ok()) return s;
        } else if (!r.first_available.empty()) {
          if (!options_.features.prioritized_list) {
            return PluginStatus::Unschedulable(
                "resource claim " + ClaimKey(claim.metadata.namespace_, claim.metadata.name) +
                ", request " + r.name +
                ": has subrequests, but the DRAPrioritizedList feature is disabled");
          }
          for (const rv1::DeviceSubRequest& s : r.first_available) {
            PluginStatus v = ValidateClass(s.device_class_name, r.name + "/" + s.name);
            if (!v.ok()) return v;
          }
        } else {
          return PluginStatus::Unschedulable(
              "resource claim " + ClaimKey(claim.metadata.namespace_, claim.metadata.name) +
              ", request " + r.name + ": unknown request type");
        }
      }
    }
    if (!state->to_allocate.empty() || state->special_index.has_value()) {
      const std::vector<allocator::QuotaBudget>& budgets =
          cluster.AllocationQuotas(pod.metadata.namespace_);
      if (!budgets.empty()) {
        state->quota = std::make_unique<allocator::QuotaConstraint>(
            pod.metadata.namespace_, budgets, cluster.ledger().holdings());
      }
      if (deps_.holds) {
        std::vector<allocator::DeviceHold> holds = deps_.holds();
        if (!holds.empty()) {
          auto hold = std::make_unique<allocator::HoldConstraint>(holds, pod.metadata.uid,
                                                                  pod.spec.priority.value_or(0));
          if (!hold->empty()) state->hold = std::move(hold);
        }
      }
      if (deps_.contested && state->any_first_available) {  // else nothing to fall back to
        auto contested = deps_.contested(pod);
        if (!contested.empty()) {
          auto constraint = std::make_unique<allocator::ContestedClassesConstraint>(contested);
          if (HasUncontestedFallback(*state, *constraint)) {
            state->contested = std::move(constraint);
          }
        }
      }
    }
    state->explain_left = options_.explain_budget;
    state->budget.limit = options_.evaluation_budget;
    state->certain_rejection =
        !state->special_index &&
        std::none_of(state->claims.begin(), state->claims.end(), [](const ClaimEntry& e) {
          return e.available_on.has_value() ||
                 (e.claim != nullptr && e.claim->status.allocation.has_value());
        });
    cycle.Set(std::move(state));
    return PluginStatus::Success();
  }

  bool HasCertainRejection() const override { return true; }

  // Filter's own free-device check (MayFit) where Filter would reach it with nothing done before
  // (certain_rejection) and the variant it uses on every node is known.
  bool CertainlyRejects(const CycleState& cycle, const PodInfo&,
                        const NodeInfo& node) const override {
    DraState* s = cycle.Get<DraState>();
    if (s == nullptr || !s->certain_rejection || !s->extended.empty() ||
        s->plain_variant == nullptr || s->plain_variant->claims.empty()) {
      return false;
    }
    if (!MayFit(*s->plain_variant, node)) return true;
    s->counted_fit = &node;
    return false;
  }

  PluginStatus Filter(CycleState& cycle, const PodInfo& info, const NodeInfo& node,
                      bool explain) override {
    DraState* s = cycle.Get<DraState>();
    if (s == nullptr) return PluginStatus::Success();
    if (s->special_index && s->claims[*s->special_index].special_in_api) {
      // A special claim from an earlier attempt: PostFilter deletes it, then we start over.
      s->unavailable.insert(*s->special_index);
      return PluginStatus::Unresolvable("cannot schedule extended resource claim");
    }
    for (size_t i = 0; i < s->claims.size(); ++i) {
      const ClaimEntry& e = s->claims[i];
      if (e.available_on) {
        StatusOr<bool> m = e.available_on->Match(node.node());
        if (!m.ok() || !*m) {
          s->unavailable.insert(i);
          return PluginStatus::Unresolvable(explain ? "claim " + e.pod_claim_name +
                                                          " is allocated to devices of other nodes"
                                                    : "resourceclaim not available on the node");
        }
      }
      // upstream Filter: a claim whose binding failed or timed out is unavailable, so that
      // PostFilter deallocates it and a later attempt tries other devices.
      if (e.claim != nullptr && e.claim->status.allocation.has_value() && BindingConditionsOn()) {
        std::string failed = FailedBinding(*e.claim);
        if (!failed.empty()) {
          s->unavailable.insert(i);
          return PluginStatus::Unresolvable(explain ? "claim " + e.pod_claim_name + ": " + failed
                                                    : "resourceclaim binding failed");
        }
      }
    }
    Variant* v = VariantFor(*s, *info.pod, node);
    if (v == nullptr) return PluginStatus::Error(InternalError("no claims variant"));
    if (v->claims.empty()) return PluginStatus::Success();
    if (!explain && !(v == s->plain_variant && s->counted_fit == &node) && !MayFit(*v, node)) {
      return PluginStatus::UnexplainedRejection();
    }
    allocator::Options options;
    options.explain = explain && s->explain_left > 0;
    if (options.explain) --s->explain_left;
    // The summary needs no claim names from the allocator: a remembered explanation is shared.
    options.explain_claim_names = options_.keep_explanations;
    options.random = deps_.random;
    options.max_search_steps = options_.allocation_step_limit;
    options.evaluation_budget = &s->budget;
    options.policies = s->Policies();
    const int64_t preference_refusals = s->contested ? s->contested->refusals() : 0;
    // One outcome per attempt, overwritten node after node (the results it hands on are shared).
    allocator::Outcome& outcome = s->outcome;
    Status searched = v->allocator->AllocateInto(node.node(), deps_.cluster->ledger().allocated(),
                                                 options, outcome);
    bool preference_kept = true;
    if (searched.ok() && s->contested) {
      const int64_t refused = s->contested->refusals() - preference_refusals;
      outcome.stats.policy_rejections -= refused;  // the others' refusals (quota, holds)
      if (refused > 0 && outcome.kind == allocator::Outcome::Kind::kUnsatisfiable) {
        // A preference never leaves a node idle: without it, does the Pod fit here?
        options.policies = s->Policies(/*with_preference=*/false);
        searched = v->allocator->AllocateInto(node.node(), deps_.cluster->ledger().allocated(),
                                              options, outcome);
        preference_kept = false;
      }
    }
    if (!searched.ok()) {
      if (explain) return PluginStatus::Unresolvable(std::string(searched.message()));
      return PluginStatus::Error(std::move(searched));
    }
    if (outcome.stats.policy_rejections > 0) {
      s->quota_refusals[node.name()] += outcome.stats.policy_rejections;
    }
    switch (outcome.kind) {
      case allocator::Outcome::Kind::kAllocated:
        // Room for every node at once: a Pod often fits on dozens.
        if (s->node_allocations.empty()) {
          s->node_allocations.reserve(deps_.cluster->nodes().size());
        }
        s->node_allocations.push_back({.node = &node,
                                       .variant = v,
                                       .results = std::move(outcome.results),
                                       .preference_kept = preference_kept});
        return PluginStatus::Success();
      case allocator::Outcome::Kind::kNodeError:
        return PluginStatus::Unresolvable(outcome.message);
      case allocator::Outcome::Kind::kUnsatisfiable:
        if (outcome.explanation) {
          PluginStatus rejected =
              PluginStatus::Unresolvable(Summarize(outcome.explanation, v->claim_names));
          if (options_.keep_explanations) {
            s->explanations[node.name()] = std::move(outcome.explanation);
          }
          return rejected;
        }
        if (!explain) return PluginStatus::UnexplainedRejection();
        return PluginStatus::Unresolvable("cannot allocate all claims (not explained)");
    }
    return PluginStatus::Unresolvable("cannot allocate all claims");
  }

  PluginStatus PostFilter(CycleState& cycle, const PodInfo& info) override {
    DraState* s = cycle.Get<DraState>();
    if (s == nullptr || s->claims.empty()) {
      return PluginStatus::Unschedulable("no new claims to deallocate");
    }
    const Pod& pod = *info.pod;
    for (size_t i : s->unavailable) {
      const ClaimEntry& e = s->claims[i];
      if (e.special) {
        if (!e.special_in_api) continue;
        DeleteClaimAsync(e.claim->metadata.namespace_, e.claim->metadata.name,
                         e.claim->metadata.uid);
        return PluginStatus::Unschedulable("deletion of ResourceClaim completed");
      }
      const rv1::ResourceClaim& c = *e.claim;
      if (c.status.reserved_for.empty() ||
          (c.status.reserved_for.size() == 1 && c.status.reserved_for[0].uid == pod.metadata.uid)) {
        std::shared_ptr<const rv1::AllocationResult> seen;
        if (c.status.allocation) {
          seen = std::make_shared<const rv1::AllocationResult>(*c.status.allocation);
        }
        DeallocateAsync(c.metadata.namespace_, c.metadata.name, c.metadata.uid, "", "", seen);
        return PluginStatus::Unschedulable("deallocation of ResourceClaim completed");
      }
    }
    return PluginStatus::Unschedulable("still not schedulable");
  }

  std::optional<int64_t> PreScore(CycleState& cycle, const PodInfo&) override {
    DraState* s = cycle.Get<DraState>();
    if (s == nullptr || !options_.features.prioritized_list || !s->any_first_available) {
      return std::nullopt;
    }
    // Under the fair-share preference the nodes that kept it score max_score + 1 more (Score).
    return s->contested ? 2 * s->max_score + 1 : s->max_score;
  }

  int64_t Score(CycleState& cycle, const PodInfo&, const NodeInfo& node) override {
    DraState* s = cycle.Get<DraState>();
    if (s == nullptr) return 0;
    int64_t score = 0;
    for (const ClaimEntry& e : s->claims) {
      if (e.special || e.claim == nullptr || !e.claim->status.allocation.has_value()) continue;
      score += ScoreAllocation(*e.claim, *e.claim->status.allocation);
    }
    const NodeAllocation* na = s->AllocationOn(&node);
    if (na != nullptr) score += TierScore(*s, *na);
    // Every node that kept the fair-share preference before every node that did not; upstream's
    // tier score orders each group.
    if (s->contested && na != nullptr && na->preference_kept) {
      score += s->max_score + 1;
    }
    return score;
  }

  // upstream helper.DefaultNormalizeScore(MaxNodeScore, false, scores).
  void NormalizeScore(CycleState&, std::vector<int64_t>& scores) override {
    int64_t max = 0;
    for (int64_t v : scores) max = std::max(max, v);
    if (max == 0) return;
    for (int64_t& v : scores) v = v * 100 / max;
  }

  PluginStatus Reserve(CycleState& cycle, const PodInfo& info, const std::string& node) override {
    DraState* s = cycle.Get<DraState>();
    if (s == nullptr || s->claims.empty()) return PluginStatus::Success();
    const Pod& pod = *info.pod;
    s->binds.clear();
    const NodeAllocation* na = s->AllocationOn(deps_.cluster->FindNode(node));
    if (na != nullptr) {
      const Variant& v = *na->variant;
      s->reserved_variant = &v;
      // Before the in-flight records: the decision's searches must not see the Pod's own devices.
      // Its charges (one per claim) are the in-flight holdings' too.
      std::vector<allocator::ClaimCharge> charges;
      if (!v.claims.empty()) {
        s->decision = MakeDecision(*s, pod, node, v, *na->results, na->preference_kept, &charges);
      }
      const bool charge = s->decision.has_value() && !s->decision->quotas.empty() &&
                          !s->decision->increment.empty() && deps_.quotas != nullptr;
      if (charge) s->expected = deps_.quotas->Expect(pod.metadata.namespace_);
      for (size_t k = 0; k < v.claims.size(); ++k) {
        BindRecord b;
        b.entry = v.entries[k];
        // Shares the node's results (aliasing: no copy).
        b.allocation =
            std::shared_ptr<const rv1::AllocationResult>(na->results, &(*na->results)[k]);
        b.mark_charge = charge;
        const ClaimEntry& e = s->claims[b.entry];
        std::optional<allocator::ClaimCharge> charge;
        if (k < charges.size()) charge = std::move(charges[k]);
        if (e.special) {
          b.in_flight_uid = SpecialInFlightUid(pod.metadata.uid);
          deps_.cluster->ledger().AddInFlight(b.in_flight_uid, v.special, b.allocation,
                                              std::move(charge));
        } else {
          b.in_flight_uid = e.claim->metadata.uid;
          deps_.cluster->ledger().AddInFlight(b.in_flight_uid, e.claim, b.allocation,
                                              std::move(charge));
        }
        s->binds.push_back(std::move(b));
      }
    } else if (!s->to_allocate.empty()) {
      return PluginStatus::Error(InternalError("claim allocation not found for node " + node));
    }
    for (size_t i = 0; i < s->claims.size(); ++i) {
      const ClaimEntry& e = s->claims[i];
      if (e.special || !e.claim->status.allocation.has_value()) continue;
      if (api::IsReservedForPod(pod, *e.claim)) continue;
      BindRecord b;
      b.entry = i;
      s->binds.push_back(std::move(b));
    }
    return PluginStatus::Success();
  }

  void Unreserve(CycleState& cycle, const PodInfo& info, const std::string&) override {
    DraState* s = cycle.Get<DraState>();
    if (s == nullptr) return;
    // An allocation written with a charge marker is undone whole, whatever became of its
    // charge: left allocated, its marker (naming a Pod that is not bound) would keep everyone,
    // this Pod's next attempt included, from using it until it went stale (ChargePending). A
    // charge still queued is dropped; one that landed, or lands anyway, is given back by the
    // recount the deallocation starts (it runs after that write). Unconfirmed too: nobody else
    // can have used a marked allocation, and the release checks it is still the one written.
    for (BindRecord& b : s->binds) {
      if (!b.in_flight_uid.empty()) deps_.cluster->ledger().RemoveInFlight(b.in_flight_uid);
      if (b.allocation && !b.charge_marker.empty()) b.release_marked = true;
    }
    s->charge.reset();
    s->expected.reset();  // a charge still queued is never written
    const Pod& pod = *info.pod;
    for (const BindRecord& b : s->binds) {
      const ClaimEntry& e = s->claims[b.entry];
      std::string ns = pod.metadata.namespace_;
      if (b.unconfirmed && !b.release_marked) continue;
      if (e.special && b.created) {
        DeleteClaimAsync(ns, b.name, b.uid);
      } else if (b.lost || (s->release_allocations && b.reserved && b.allocation != nullptr)) {
        if (!b.lost) releasing_[b.uid] = b.allocation;
        DeallocateAsync(ns, b.name, b.uid, "", "", b.allocation);
      } else if (b.reserved) {
        DeallocateAsync(ns, b.name, b.uid, pod.metadata.name, pod.metadata.uid, b.allocation,
                        /*release_allocation=*/b.release_marked);
      }
    }
    s->binds.clear();
    s->waited.clear();
    s->release_allocations = false;
  }

  PluginStatus PreBind(CycleState& cycle, const PodInfo& info, const std::string& node) override {
    DraState* s = cycle.Get<DraState>();
    if (s == nullptr || s->claims.empty()) return PluginStatus::Skip();
    const Pod& pod = *info.pod;
    std::string special_name;
    for (size_t i = 0; i < s->binds.size(); ++i) {
      BindRecord& b = s->binds[i];
      const ClaimEntry& e = s->claims[b.entry];
      StatusOr<rv1::ResourceClaim> current =
          e.special ? CreateSpecialClaim(*s, pod, &b) : rv1::ResourceClaim(*e.claim);
      if (!current.ok()) return PluginStatus::Error(current.status());
      b.name = current->metadata.name;
      b.uid = current->metadata.uid;
      if (e.special) special_name = b.name;
      // The decision's claims are the reserved variant's, in the order of the first binds.
      if (s->decision.has_value() && i < s->decision->claims.size()) {
        s->decision->claims[i].name = b.name;
        s->decision->claims[i].uid = b.uid;
      }
      if (b.mark_charge && b.allocation) {
        b.charge_marker = ChargeMarker(pod);
        if (s->expected) s->expected->AddClaim(b.uid, b.charge_marker);
      }
      Status written = WriteClaim(pod, std::move(*current), &b);
      if (!written.ok()) return PluginStatus::Error(written);
    }
    // The allocations are written: charge the Allocation-mode quotas (quota_charger.h) while the
    // writes are confirmed. The binding waits for the answer without holding this thread; a
    // refusal undoes the allocations (Unreserve) and the Pod is tried again. An allocation that
    // lost its devices is undone the same way, and a recount gives back its charge if it landed.
    if (s->expected) {
      StartCharge(*s, pod);
    }
    for (BindRecord& b : s->binds) {
      Status confirmed = ConfirmClaim(pod.metadata.namespace_, &b);
      if (!confirmed.ok()) return PluginStatus::Error(confirmed);
    }
    if (!special_name.empty() && s->reserved_variant != nullptr) {
      Status patched = RecordExtendedResourceClaim(pod, special_name, *s->reserved_variant);
      if (!patched.ok()) return PluginStatus::Error(patched);
    }
    if (BindingConditionsOn()) {
      CollectWaited(*s, pod.metadata.namespace_);
      if (!s->waited.empty()) {
        s->wait_since = deps_.clock->Now();
        Status nominated = Nominate(pod, node);
        if (!nominated.ok()) return PluginStatus::Error(nominated);
        return PluginStatus::Wait("waiting for binding conditions of " + WaitedNames(*s));
      }
    }
    std::string problem = DeviceProblem(*s, pod.metadata.namespace_);
    if (!problem.empty()) {
      s->release_allocations = true;
      return PluginStatus::Error(FailedPreconditionError(problem));
    }
    return s->charge != nullptr ? ChargeOutcome(*s) : PluginStatus::Success();
  }

  PluginStatus CheckPreBindWait(CycleState& cycle, const PodInfo& info, const std::string&,
                                bool timed_out) override {
    DraState* s = cycle.Get<DraState>();
    if (s == nullptr) return PluginStatus::Success();
    // With a charge the devices are checked again right before binding (below), even when only
    // the charge was waited for.
    if (s->charge != nullptr) {
      if (PluginStatus charged = ChargeOutcome(*s); !charged.ok()) return charged;
    } else if (s->waited.empty()) {
      return PluginStatus::Success();
    }
    std::string waiting;
    for (const DraState::Waited& w : s->waited) {
      ClusterState::ClaimPtr claim = deps_.cluster->FindClaim(w.namespace_, w.name);
      std::string key = ClaimKey(w.namespace_, w.name);
      if (claim == nullptr || claim->metadata.uid != w.uid) {
        return FailBinding(*s, "claim " + key + " was deleted while waiting for its devices");
      }
      uint64_t seen = static_cast<uint64_t>(
          api::ParseResourceVersion(claim->metadata.resource_version).value_or(0));
      if (seen < w.written_version) {
        if (waiting.empty()) waiting = "claim " + key + ": this attempt's allocation not seen yet";
        continue;  // the informer has not delivered our own write yet
      }
      if (!claim->status.allocation.has_value()) {
        return FailBinding(*s, "claim " + key + " was deallocated while waiting for its devices");
      }
      BindingReadiness r = ClaimBindingReadiness(*claim);
      if (r.kind == BindingReadiness::Kind::kFailed) return FailBinding(*s, r.message);
      if (r.kind == BindingReadiness::Kind::kWaiting) {
        if (waiting.empty()) waiting = r.message;
        if (!timed_out && TimedOut(*claim, s->wait_since)) timed_out = true;
      }
    }
    std::string problem = DeviceProblem(*s, info.pod->metadata.namespace_);
    if (!problem.empty()) return FailBinding(*s, problem);
    if (waiting.empty()) return PluginStatus::Success();
    if (timed_out) {
      return FailBinding(
          *s, "binding timed out after " + SecondsText(options_.binding_timeout) + ": " + waiting);
    }
    return PluginStatus::Wait(waiting);
  }

 private:
  bool BindingConditionsOn() const { return options_.features.device_binding_and_status; }

  // Hands the Pod's increment to the charger; the answer lands in s.charge and wakes the
  // binding (deps_.charge_decided).
  void StartCharge(DraState& s, const Pod& pod) {
    auto ticket = std::make_shared<QuotaChargeTicket>();
    s.charge = ticket;
    std::vector<std::string> names;
    for (const allocator::QuotaBudget& q : s.decision->quotas) names.push_back(q.name);
    deps_.quotas->ChargeAsync(
        *s.expected, names, s.decision->increment,
        [ticket, wake = deps_.charge_decided, uid = pod.metadata.uid](Status charged) {
          {
            MutexLock lock(ticket->mu);
            ticket->decided = true;
            ticket->result = std::move(charged);
          }
          wake(uid);
        });
  }

  // Success when the charge landed; WaitForWrite while it is in flight; its error (a refusal
  // is a Conflict, retried quietly) once refused, and the allocations are then undone.
  PluginStatus ChargeOutcome(DraState& s) {
    Status result;
    {
      MutexLock lock(s.charge->mu);
      if (!s.charge->decided) return PluginStatus::WaitForWrite("quota charge in flight");
      result = s.charge->result;
    }
    if (result.ok()) return PluginStatus::Success();
    return PluginStatus::Error(std::move(result));
  }

  // ScoreAllocation summed over the claims this node's allocation gives devices to (the user
  // claims of the variant; a special claim does not score). Remembered per results vector (held,
  // so that its address is not reused): the allocator hands the same results to every Pod whose
  // claims have its claims' specs while the node's devices stay as they were, and the score reads
  // only the specs and the results. Which claims count is checked again, cheaply: it depends on
  // the Pod's claim entries, not on the specs. The memory is a direct-mapped table (a slot per
  // address hash, the newest results win it): a lookup is a few instructions, where parsing the
  // results' request names was a few hundred.
  int64_t TierScore(const DraState& s, const NodeAllocation& na) {
    const Variant& v = *na.variant;
    // A user claim of this Pod not allocated yet (a special claim does not score).
    auto scores = [&](size_t k) {
      const size_t i = v.entries[k];
      if (i >= s.claims.size()) return false;
      const ClaimEntry& e = s.claims[i];
      return !e.special && e.claim != nullptr && !e.claim->status.allocation.has_value();
    };
    auto score_of = [&](size_t k) {
      return ScoreAllocation(*s.claims[v.entries[k]].claim, (*na.results)[k]);
    };
    if (v.entries.size() > 64) {
      int64_t score = 0;
      for (size_t k = 0; k < v.entries.size(); ++k) {
        if (scores(k)) score += score_of(k);
      }
      return score;
    }
    uint64_t counted = 0;
    for (size_t k = 0; k < v.entries.size(); ++k) {
      if (scores(k)) counted |= uint64_t{1} << k;
    }
    const auto address = reinterpret_cast<uintptr_t>(na.results.get());
    RememberedTierScore& slot = tier_scores_[(address >> 4) % tier_scores_.size()];
    if (slot.results != na.results || slot.counted != counted) {
      slot.results = na.results;
      slot.counted = counted;
      slot.score = 0;
      for (size_t k = 0; k < v.entries.size(); ++k) {
        if ((counted >> k & 1) != 0) slot.score += score_of(k);
      }
    }
    return slot.score;
  }

  // SummarizeDevices, remembered per explanation: the allocator hands the same explanation to
  // every Pod whose claims have its claims' specs while the node's devices stay as they were, and
  // the summary is the same for all of them (the claim names enter it only with several claims).
  const std::string& Summarize(const std::shared_ptr<const allocator::Explanation>& explanation,
                               const std::vector<std::string>& claim_names) {
    const bool named = explanation->claims.size() > 1;
    auto it = summaries_.find(explanation.get());
    if (it != summaries_.end() && (!named || it->second.claim_names == claim_names)) {
      return it->second.text;
    }
    constexpr size_t kRememberedSummaries = 1024;
    if (it == summaries_.end() && summaries_.size() >= kRememberedSummaries) summaries_.clear();
    RememberedSummary& r = summaries_[explanation.get()];
    r.explanation = explanation;
    r.claim_names = named ? claim_names : std::vector<std::string>{};
    r.text = SummarizeDevices(*explanation, claim_names);
    return r.text;
  }

  // Why an allocated claim's binding failed (a failure condition is True, or it is not ready and
  // was allocated longer than binding_timeout ago), or "" (upstream Filter's check).
  std::string FailedBinding(const rv1::ResourceClaim& claim) const {
    BindingReadiness r = ClaimBindingReadiness(claim);
    if (r.kind == BindingReadiness::Kind::kFailed) return r.message;
    if (r.kind == BindingReadiness::Kind::kWaiting && TimedOut(claim, Timestamp::max())) {
      return "binding timed out after " + SecondsText(options_.binding_timeout) + ": " + r.message;
    }
    return "";
  }

  // upstream isClaimTimeout: allocated (allocationTimestamp, else `since`) longer than
  // binding_timeout ago.
  bool TimedOut(const rv1::ResourceClaim& claim, Timestamp since) const {
    if (claim.status.allocation.has_value() &&
        claim.status.allocation->allocation_timestamp.has_value() &&
        !claim.status.allocation->allocation_timestamp->empty()) {
      since = std::min(since, claim.status.allocation->allocation_timestamp->ToTimestamp());
    }
    if (since == Timestamp::max()) return false;
    return deps_.clock->Now() - since >= options_.binding_timeout;
  }

  static std::string SecondsText(Duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + "s";
  }

  // The pod's claims (in `ns`) whose allocation, as this attempt wrote it or as the claim already
  // had it, has devices with binding conditions.
  static void CollectWaited(DraState& s, const std::string& ns) {
    s.waited.clear();
    std::set<size_t> written;
    for (const BindRecord& b : s.binds) {
      if (!b.reserved) continue;
      written.insert(b.entry);
      const ClaimEntry& e = s.claims[b.entry];
      const rv1::AllocationResult* a = b.allocation.get();
      if (a == nullptr && e.claim != nullptr && e.claim->status.allocation) {
        a = &*e.claim->status.allocation;
      }
      if (a == nullptr || !HasBindingConditions(*a)) continue;
      s.waited.push_back({ns, b.name, b.uid, b.written_version});
    }
    for (size_t i = 0; i < s.claims.size(); ++i) {
      const ClaimEntry& e = s.claims[i];
      if (written.contains(i) || e.claim == nullptr || !e.claim->status.allocation ||
          !HasBindingConditions(*e.claim->status.allocation)) {
        continue;
      }
      s.waited.push_back({ns, e.claim->metadata.name, e.claim->metadata.uid, 0});
    }
  }

  static std::string WaitedNames(const DraState& s) {
    std::string out;
    for (const DraState::Waited& w : s.waited) {
      if (!out.empty()) out += ", ";
      out += "claim " + ClaimKey(w.namespace_, w.name);
    }
    return out;
  }

  PluginStatus FailBinding(DraState& s, std::string message) const {
    s.release_allocations = true;
    return PluginStatus::Error(FailedPreconditionError(std::move(message)));
  }

  // Health at bind time: the first device allocated in this attempt that is gone or tainted, or
  // "".
  std::string DeviceProblem(const DraState& s, const std::string& ns) const {
    if (!deps_.pool_slices || !options_.features.device_taints) return "";
    for (const BindRecord& b : s.binds) {
      if (b.allocation == nullptr) continue;
      std::string problem = AllocatedDeviceProblem(*b.allocation, deps_.pool_slices);
      if (!problem.empty()) return "claim " + ClaimKey(ns, b.name) + ": " + problem;
    }
    return "";
  }

  // KEP-5278: the pod's nominatedNodeName says where its binding is going while it waits, so the
  // controllers that attach its devices (and `kubectl get pods -o wide`) know.
  Status Nominate(const Pod& pod, const std::string& node) {
    if (pod.status.nominated_node_name == node) return Status::Ok();
    boost::json::object patch{{"status", boost::json::object{{"nominatedNodeName", node}}}};
    return client::Patch<Pod>(*deps_.api, pod.metadata.namespace_, pod.metadata.name,
                              client::PatchType::kMerge, std::move(patch), "status",
                              options_.field_manager)
        .status()
        .WithPrefix("nominate pod " + ClaimKey(pod.metadata.namespace_, pod.metadata.name) +
                    " to node " + node);
  }

  // The reason a pod's claims are not ready, or "" (upstream foreachPodResourceClaim).
  std::string CheckClaims(const Pod& pod) const {
    for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
      PodClaimName n = ClaimNameForPod(pod, entry);
      if (!n.error.empty()) return n.error;
      if (n.skip) continue;
      ClusterState::ClaimPtr claim = deps_.cluster->FindClaim(pod.metadata.namespace_, n.name);
      if (claim == nullptr) return "resourceclaim.resource.k8s.io \"" + n.name + "\" not found";
      if (claim->metadata.deletion_timestamp.has_value()) {
        return "resourceclaim \"" + n.name + "\" is being deleted";
      }
      if (n.must_check_owner && !api::IsForPod(pod, *claim)) {
        return "ResourceClaim " + ClaimKey(pod.metadata.namespace_, n.name) +
               " was not created for pod " + ClaimKey(pod.metadata.namespace_, pod.metadata.name) +
               " (pod is not owner)";
      }
    }
    return "";
  }

  // An allocation whose quota charge may still be refused (kQuotaChargeAnnotation names a Pod
  // that is not bound) must not be used by anyone else: in particular not by another replica
  // scheduling the same Pod, which would otherwise bind it on an allocation that ends up
  // uncharged. A marker older than twice the confirmation timeout belongs to a scheduler that
  // went away mid-binding: the allocation is released and allocated again.
  PluginStatus ChargePending(const rv1::ResourceClaim& claim) {
    auto marker = claim.metadata.annotations.find(kQuotaChargeAnnotation);
    if (marker == claim.metadata.annotations.end()) return PluginStatus::Success();
    std::string_view value = marker->second;
    std::string_view pod_uid = value.substr(0, value.find(' '));
    if (deps_.cluster->IsBound(pod_uid)) return PluginStatus::Success();
    // In use by a bound Pod (a shared claim whose marked Pod is gone): charged long ago.
    for (const rv1::ResourceClaimConsumerReference& r : claim.status.reserved_for) {
      if (deps_.cluster->IsBound(r.uid)) return PluginStatus::Success();
    }
    int64_t written = 0;
    if (size_t space = value.find(' '); space != std::string_view::npos) {
      std::string_view seconds = value.substr(space + 1);
      // Unreadable: 0, so the mark counts as stale.
      if (std::from_chars(seconds.data(), seconds.data() + seconds.size(), written).ec !=
          std::errc()) {
        written = 0;
      }
    }
    int64_t now = deps_.clock != nullptr ? std::chrono::duration_cast<std::chrono::seconds>(
                                               deps_.clock->Now().time_since_epoch())
                                               .count()
                                         : written;
    std::string key = ClaimKey(claim.metadata.namespace_, claim.metadata.name);
    auto stale_after =
        std::chrono::duration_cast<std::chrono::seconds>(2 * options_.confirm_timeout);
    if (now - written > stale_after.count()) {
      DeallocateAsync(claim.metadata.namespace_, claim.metadata.name, claim.metadata.uid, "", "",
                      std::make_shared<const rv1::AllocationResult>(*claim.status.allocation));
      return PluginStatus::Unschedulable("resource claim " + key +
                                         " holds a stale allocation that is being released");
    }
    return PluginStatus::Unschedulable("resource claim " + key +
                                       " is in the process of being allocated (quota charge "
                                       "pending)");
  }

  PluginStatus ValidateClass(const std::string& device_class, const std::string& request) const {
    if (device_class.empty()) {
      return PluginStatus::Error(
          InvalidArgumentError("request " + request + ": unsupported request type"));
    }
    if (deps_.cluster->FindClass(device_class) == nullptr) {
      return PluginStatus::Unschedulable("request " + request + ": device class " + device_class +
                                         " does not exist");
    }
    return PluginStatus::Success();
  }

  // The claims to allocate on `node`: the user claims, plus the special claim for the mapped
  // extended resources this node does not advertise (it has no device plugin for them).
  Variant* VariantFor(DraState& s, const Pod& pod, const NodeInfo& node) {
    if (s.extended.empty() && s.plain_variant != nullptr) return s.plain_variant;
    std::set<std::string> dra;
    std::string key;
    for (const auto& [resource, amount] : s.extended) {
      auto a = node.allocatable().scalar.find(resource);
      if (a != node.allocatable().scalar.end() && a->second > 0) continue;  // device plugin
      dra.insert(resource);
      key += resource;
      key.push_back('\n');
    }
    auto it = s.variants.find(key);
    if (it != s.variants.end()) return it->second.get();
    auto v = std::make_unique<Variant>();
    for (size_t i : s.to_allocate) {
      v->claims.push_back(s.claims[i].claim.get());
      v->entries.push_back(i);
    }
    if (!dra.empty() && s.special_index) {
      v->special = std::make_shared<rv1::ResourceClaim>();
      rv1::ResourceClaim& c = *v->special;
      c.metadata.namespace_ = pod.metadata.namespace_;
      c.metadata.name = std::string(kSpecialClaimName);
      c.metadata.uid = SpecialInFlightUid(pod.metadata.uid);
      c.metadata.generate_name = pod.metadata.name + "-extended-resources-";
      c.metadata.owner_references.push_back(api::NewControllerRef(pod));
      c.metadata.annotations[std::string(kExtendedResourceClaimAnnotation)] = "true";
      BuildSpecialRequests(pod, dra, deps_.cluster->extended_resource_classes(), v.get());
      if (!c.spec.devices.requests.empty()) {
        v->claims.push_back(v->special.get());
        v->entries.push_back(*s.special_index);
      }
    }
    for (const rv1::ResourceClaim* c : v->claims) {
      AddDemands(*c, deps_.cluster->ledger(), v.get());
      std::string key = ClaimKey(c->metadata.namespace_, c->metadata.name);
      auto name = s.claim_names.find(key);
      v->claim_names.push_back(name == s.claim_names.end() ? std::move(key) : name->second);
    }
    v->allocator = allocator::NewAllocator(deps_.cluster->snapshot(), v->claims, options_.features);
    Variant* raw = v.get();
    if (key.empty()) s.plain_variant = raw;
    s.variants.emplace(std::move(key), std::move(v));
    return raw;
  }

  // False when the free-device index proves the claims cannot fit on the node.
  bool MayFit(const Variant& v, const NodeInfo& node) const {
    const DeviceLedger::NodeFree free =
        deps_.cluster->ledger().FreeOn(node.hashed_name(), &node.ledger_entry());
    for (const auto& [device_class, needed] : v.sums) {
      if (free.Free(device_class) < needed) return false;
    }
    for (const std::vector<Alternative>& alternatives : v.demands) {
      bool some = false;
      for (const Alternative& a : alternatives) {
        if (free.Free(a.device_class) >= a.count) {
          some = true;
          break;
        }
      }
      if (!some) return false;
    }
    return true;
  }

  // The nodes a fallback's decision explains at most (the chosen one and the quota's; each costs
  // two more searches, for Pods that fell back only).
  static constexpr size_t kMaxExplainedNodes = 8;

  // Why a tier was not taken on `node`, from the allocator's explanation of its subrequest: one
  // reason per candidate status (per refusal text for policies), merged into `reasons` (the same
  // reason on several nodes is one entry counting their devices and naming the nodes).
  static void AddTierReasons(const allocator::RequestExplanation& sub, const std::string& node,
                             std::vector<DeviceDecision::Reason>* reasons) {
    std::map<std::pair<std::string, std::string>, int32_t> groups;
    for (const allocator::CandidateExplanation& c : sub.candidates) {
      if (c.status == allocator::CandidateStatus::kChosen ||
          c.status == allocator::CandidateStatus::kBacktracked ||
          c.status == allocator::CandidateStatus::kNotReached) {
        continue;
      }
      if (c.status == allocator::CandidateStatus::kPolicy) {
        ++groups[{c.policy_code.empty() ? "policy" : c.policy_code, c.detail}];
      } else {
        ++groups[{std::string(allocator::CandidateStatusName(c.status)), ""}];
      }
    }
    // Named references, not a structured binding: the lambda below captures them, which clang
    // accepts only from version 16.
    for (const auto& group : groups) {
      const std::pair<std::string, std::string>& key = group.first;
      const int32_t n = group.second;
      std::string message = key.second.empty() ? key.first : key.second;
      auto it = std::find_if(reasons->begin(), reasons->end(), [&](const auto& r) {
        return r.reason == key.first && r.message == message;
      });
      if (it == reasons->end()) {
        reasons->push_back({.reason = key.first, .message = std::move(message)});
        it = std::prev(reasons->end());
      }
      it->devices += n;
      it->nodes.push_back(node);
    }
  }

  // The Pod's decision on `node` (Reserve): charges, chosen subrequests, and for requests that
  // fell back, why the earlier tiers were not taken and whether the quota made the difference.
  // The extra searches run only for a Pod that fell back. `charges_out` gets each claim's
  // charge (aligned with v.claims).
  DeviceDecision MakeDecision(DraState& s, const Pod& pod, const std::string& node,
                              const Variant& v, const std::vector<rv1::AllocationResult>& results,
                              bool preference_kept,
                              std::vector<allocator::ClaimCharge>* charges_out) {
    const DeviceLedger& ledger = deps_.cluster->ledger();
    DeviceDecision d;
    d.node = node;
    std::vector<allocator::ClaimCharge>& charges = *charges_out;
    charges.clear();
    std::vector<std::vector<int>> chosen;
    bool fell_back = false;
    for (size_t k = 0; k < v.claims.size(); ++k) {
      const rv1::ResourceClaim& claim = *v.claims[k];
      charges.push_back(allocator::ChargeAllocation(claim, results[k], ledger.catalog()));
      chosen.push_back(ChosenSubrequests(claim, results[k]));
      DeviceDecision::Claim c;
      if (!(v.special && v.claims[k] == v.special.get())) {
        c.name = claim.metadata.name;
        c.uid = claim.metadata.uid;
      }
      c.charges = charges.back().additive;
      for (const auto& [key, counters] : charges.back().share_counters) {
        allocator::AddResources(c.charges, counters);
      }
      for (size_t i = 0; i < claim.spec.devices.requests.size(); ++i) {
        const rv1::DeviceRequest& req = claim.spec.devices.requests[i];
        DeviceDecision::Request r;
        r.name = req.name;
        int sub = chosen.back()[i];
        if (sub >= 0) {
          r.subrequest = req.first_available[static_cast<size_t>(sub)].name;
          r.device_class = req.first_available[static_cast<size_t>(sub)].device_class_name;
          fell_back = fell_back || sub > 0;
        } else if (req.exactly.has_value()) {
          r.device_class = req.exactly->device_class_name;
        }
        std::string full = r.subrequest.empty() ? r.name : r.name + "/" + r.subrequest;
        for (const rv1::DeviceRequestAllocationResult& result : results[k].devices.results) {
          if (result.request == full) r.devices.push_back(result);
        }
        c.requests.push_back(std::move(r));
      }
      d.claims.push_back(std::move(c));
    }
    if (s.quota) {
      d.quotas = s.quota->quotas();
      std::vector<const allocator::ClaimCharge*> pointers;
      for (const allocator::ClaimCharge& c : charges) pointers.push_back(&c);
      d.increment = ledger.holdings().Increment(pod.metadata.namespace_, pointers,
                                                allocator::Holdings::Scope::kCommitted);
    }
    if (fell_back && s.contested && preference_kept && s.contested->refusals() > 0) {
      for (size_t k = 0; k < v.claims.size(); ++k) {
        for (size_t i = 0; i < chosen[k].size(); ++i) {
          const rv1::DeviceRequest& req = v.claims[k]->spec.devices.requests[i];
          for (int j = 0; j < chosen[k][i]; ++j) {
            const rv1::DeviceSubRequest& tier = req.first_available[static_cast<size_t>(j)];
            const allocator::PolicyRejection* refusal =
                s.contested->RefusalOf(tier.device_class_name);
            if (refusal == nullptr) continue;
            if (!d.fair_share_fallback.empty()) d.fair_share_fallback += "; ";
            if (v.claims.size() > 1) d.fair_share_fallback += "claim " + d.claims[k].name + " ";
            d.fair_share_fallback += "request " + req.name + ": subrequest " + tier.name + " " +
                                     refusal->message + ", allocated subrequest " +
                                     d.claims[k].requests[i].subrequest;
            break;
          }
        }
      }
    }
    const NodeInfo* info = deps_.cluster->FindNode(node);
    if (!fell_back || info == nullptr) return d;
    // The nodes explained: the chosen one, then, by name, those whose Filter search the quota
    // refused something in. On those a tier may have been kept from the Pod by the quota while
    // the chosen node lacks it altogether (H100 nodes and A100 nodes apart): explaining only the
    // chosen node would give the wrong reason (decisions.md, "summarised over nodes").
    std::vector<const NodeInfo*> explained_nodes = {info};
    if (s.quota) {
      for (const auto& [name, refused] : s.quota_refusals) {
        if (explained_nodes.size() >= kMaxExplainedNodes) break;
        if (name == node) continue;
        if (const NodeInfo* other = deps_.cluster->FindNode(name)) explained_nodes.push_back(other);
      }
    }
    for (size_t k = 0; k < d.claims.size(); ++k) {
      for (size_t i = 0; i < d.claims[k].requests.size(); ++i) {
        const rv1::DeviceRequest& req = v.claims[k]->spec.devices.requests[i];
        for (int j = 0; j < chosen[k][i]; ++j) {
          d.claims[k].requests[i].tiers_not_taken.push_back(
              {.subrequest = req.first_available[static_cast<size_t>(j)].name});
        }
      }
    }
    allocator::Options options;
    options.explain = true;
    options.random = deps_.random;
    options.max_search_steps = options_.allocation_step_limit;
    options.policies = s.Policies(preference_kept);
    for (const NodeInfo* explained_node : explained_nodes) {
      StatusOr<allocator::Outcome> explained =
          v.allocator->Allocate(explained_node->node(), ledger.allocated(), options);
      if (!explained.ok() || explained->explanation == nullptr) continue;
      const allocator::Explanation& e = *explained->explanation;
      for (size_t k = 0; k < d.claims.size() && k < e.claims.size(); ++k) {
        for (size_t i = 0; i < d.claims[k].requests.size() && i < e.claims[k].requests.size();
             ++i) {
          DeviceDecision::Request& r = d.claims[k].requests[i];
          const allocator::RequestExplanation& x = e.claims[k].requests[i];
          for (size_t j = 0; j < r.tiers_not_taken.size() && j < x.subrequests.size(); ++j) {
            AddTierReasons(x.subrequests[j], explained_node->name(), &r.tiers_not_taken[j].reasons);
          }
        }
      }
    }
    for (DeviceDecision::Claim& c : d.claims) {
      for (DeviceDecision::Request& r : c.requests) {
        for (DeviceDecision::Tier& t : r.tiers_not_taken) {
          std::stable_sort(t.reasons.begin(), t.reasons.end(),
                           [](const auto& a, const auto& b) { return a.devices > b.devices; });
          if (t.reasons.size() > DeviceDecision::kMaxReasons) {
            t.reasons.resize(DeviceDecision::kMaxReasons);
          }
          for (DeviceDecision::Reason& reason : t.reasons) {
            reason.node_count = static_cast<int32_t>(reason.nodes.size());
            // The quota's reason applied on every node its Filter search refused something in,
            // explained or not.
            if (reason.reason == allocator::kQuotaPolicyCode) {
              reason.node_count =
                  std::max(reason.node_count, static_cast<int32_t>(s.quota_refusals.size()));
            }
          }
        }
      }
    }
    // Did the quota change the tier? On each explained node whose search the quota refused
    // something in, the same search without it: an earlier tier it would take there is a tier
    // the quota kept the Pod from.
    if (!s.quota) return d;
    allocator::Options plain;
    plain.random = deps_.random;
    plain.max_search_steps = options_.allocation_step_limit;
    plain.policies = s.Policies(preference_kept);  // without the quota only
    std::erase(plain.policies, s.quota.get());
    // Per claim and request: the earliest tier a search without the quota took, and where.
    std::vector<std::vector<int>> earliest = chosen;
    std::vector<std::vector<std::vector<std::string>>> where(chosen.size());
    for (size_t k = 0; k < chosen.size(); ++k) where[k].resize(chosen[k].size());
    for (const NodeInfo* explained_node : explained_nodes) {
      if (s.quota_refusals.find(explained_node->name()) == s.quota_refusals.end()) continue;
      StatusOr<allocator::Outcome> without =
          v.allocator->Allocate(explained_node->node(), ledger.allocated(), plain);
      if (!without.ok() || without->kind != allocator::Outcome::Kind::kAllocated) continue;
      for (size_t k = 0; k < v.claims.size(); ++k) {
        std::vector<int> free_choice = ChosenSubrequests(*v.claims[k], (*without->results)[k]);
        for (size_t i = 0; i < chosen[k].size(); ++i) {
          if (free_choice[i] < 0 || free_choice[i] >= chosen[k][i]) continue;
          if (free_choice[i] < earliest[k][i]) {
            earliest[k][i] = free_choice[i];
            where[k][i].clear();
          }
          if (free_choice[i] == earliest[k][i]) where[k][i].push_back(explained_node->name());
        }
      }
    }
    for (size_t k = 0; k < v.claims.size(); ++k) {
      for (size_t i = 0; i < chosen[k].size(); ++i) {
        if (earliest[k][i] >= chosen[k][i]) continue;
        const DeviceDecision::Request& r = d.claims[k].requests[i];
        std::string from = v.claims[k]
                               ->spec.devices.requests[i]
                               .first_available[static_cast<size_t>(earliest[k][i])]
                               .name;
        std::string refusal;
        for (const DeviceDecision::Tier& t : r.tiers_not_taken) {
          for (const DeviceDecision::Reason& reason : t.reasons) {
            if (t.subrequest == from && reason.reason == allocator::kQuotaPolicyCode) {
              refusal = reason.message;
            }
          }
        }
        std::string nodes;
        if (where[k][i] != std::vector<std::string>{node}) {
          for (const std::string& n : where[k][i]) nodes += (nodes.empty() ? "" : ", ") + n;
          nodes = " on " + std::string(where[k][i].size() == 1 ? "node " : "nodes ") + nodes;
        }
        if (!d.quota_fallback.empty()) d.quota_fallback += "; ";
        if (v.claims.size() > 1) d.quota_fallback += "claim " + d.claims[k].name + " ";
        d.quota_fallback += "request " + r.name + ": subrequest " + from + " refused by " +
                            (refusal.empty() ? std::string("quota") : refusal) + nodes +
                            ", allocated subrequest " + r.subrequest;
        d.fallbacks.push_back({.request = r.name, .from = earliest[k][i], .to = chosen[k][i]});
      }
    }
    return d;
  }

  StatusOr<rv1::ResourceClaim> CreateSpecialClaim(const DraState& s, const Pod& pod,
                                                  BindRecord* b) {
    if (s.reserved_variant == nullptr || s.reserved_variant->special == nullptr) {
      return InternalError("no extended resource claim to create");
    }
    rv1::ResourceClaim claim = *s.reserved_variant->special;
    claim.metadata.name.clear();
    claim.metadata.uid.clear();
    claim.metadata.finalizers = {std::string(api::kClaimFinalizer)};
    (void)pod;
    StatusOr<rv1::ResourceClaim> created =
        client::Create(*deps_.api, claim, options_.field_manager);
    if (!created.ok()) {
      return created.status().WithPrefix("create extended resource claim");
    }
    b->created = true;
    return created;
  }

  // upstream bindClaim: allocation (with the finalizer) and reservation, with retries.
  Status WriteClaim(const Pod& pod, rv1::ResourceClaim current, BindRecord* b) {
    const std::string ns = current.metadata.namespace_;
    const std::string name = current.metadata.name;
    std::string key = ClaimKey(ns, name);
    bool refresh = false;
    for (int attempt = 0; attempt <= options_.conflict_retries; ++attempt) {
      if (refresh) {
        StatusOr<rv1::ResourceClaim> fresh = client::Get<rv1::ResourceClaim>(*deps_.api, ns, name);
        if (!fresh.ok()) return fresh.status().WithPrefix("get updated claim " + key);
        current = std::move(*fresh);
      }
      refresh = true;
      if (current.metadata.deletion_timestamp.has_value()) {
        return FailedPreconditionError("claim " + key + " got deleted in the meantime");
      }
      if (b->allocation) {
        if (current.status.allocation.has_value()) {
          return ConflictError("claim " + key + " got allocated elsewhere in the meantime");
        }
        bool update = api::AddClaimFinalizer(&current);
        if (b->mark_charge) {
          // In the finalizer's write when there is one: no extra round trip.
          current.metadata.annotations[std::string(kQuotaChargeAnnotation)] = b->charge_marker;
          update = true;
        }
        if (update) {
          StatusOr<rv1::ResourceClaim> updated =
              client::Update(*deps_.api, std::move(current), options_.field_manager);
          if (!updated.ok()) {
            if (updated.status().code() == StatusCode::kConflict) continue;
            return updated.status().WithPrefix("add finalizer to claim " + key);
          }
          current = std::move(*updated);
        }
        current.status.allocation = *b->allocation;
        if (BindingConditionsOn() && !current.status.allocation->allocation_timestamp) {
          // upstream bindClaim: when the binding may wait, the timeout is counted from here.
          current.status.allocation->allocation_timestamp =
              api::Time::FromTimestamp(deps_.clock->Now());
        }
      } else {
        if (api::IsReservedForPod(pod, current)) return Status::Ok();
        if (!current.status.allocation.has_value()) {
          return FailedPreconditionError("claim " + key + " is no longer allocated");
        }
        if (current.status.reserved_for.size() >=
            api::validation::kResourceClaimReservedForMaxSize) {
          return FailedPreconditionError("claim " + key + " is reserved for too many consumers");
        }
      }
      current.status.reserved_for.push_back(api::PodConsumerReference(pod));
      StatusOr<std::shared_ptr<const rv1::ResourceClaim>> shared =
          client::UpdateStatusShared(*deps_.api, std::move(current), options_.field_manager);
      if (!shared.ok()) {
        if (shared.status().code() == StatusCode::kConflict) continue;
        return shared.status().WithPrefix(b->allocation
                                              ? "add allocation and reservation to claim " + key
                                              : "add reservation to claim " + key);
      }
      const rv1::ResourceClaim& written = **shared;
      b->reserved = true;
      b->name = written.metadata.name;
      b->uid = written.metadata.uid;
      b->written_version = static_cast<uint64_t>(
          api::ParseResourceVersion(written.metadata.resource_version).value_or(0));
      if (b->allocation && written.status.allocation) {
        // What the claim holds now (with its allocationTimestamp): Unreserve undoes exactly this.
        b->allocation = std::make_shared<const rv1::AllocationResult>(*written.status.allocation);
      }
      return Status::Ok();
    }
    return ConflictError("claim " + key + ": too many conflicts");
  }

  // Waits to learn whether the allocation WriteClaim wrote won its devices (scheduler.md,
  // "Replicas"); OK when there is nothing to confirm.
  Status ConfirmClaim(const std::string& ns, BindRecord* b) {
    if (!b->allocation || !b->reserved || !options_.confirm_allocations ||
        deps_.confirmations == nullptr) {
      return Status::Ok();
    }
    int64_t rv = static_cast<int64_t>(b->written_version);
    if (rv == 0) return Status::Ok();
    std::string key = ClaimKey(ns, b->name);
    AllocationConfirmations::Outcome o =
        deps_.confirmations->Await(b->uid, rv, options_.confirm_timeout);
    deps_.confirmations->Forget(b->uid);
    if (o == AllocationConfirmations::Outcome::kLost) {
      b->lost = true;
      return ConflictError("allocation of claim " + key +
                           " lost to a concurrent allocation of the same devices");
    }
    if (o == AllocationConfirmations::Outcome::kTimedOut) {
      b->unconfirmed = true;
      return ConflictError("allocation of claim " + key + " was not confirmed in time");
    }
    if (o == AllocationConfirmations::Outcome::kUnknown) {
      b->unconfirmed = true;
      return ConflictError("allocation of claim " + key + " changed before it was seen");
    }
    return Status::Ok();
  }

  Status RecordExtendedResourceClaim(const Pod& pod, const std::string& claim_name,
                                     const Variant& v) {
    boost::json::array mappings;
    for (const auto& m : v.mappings) {
      mappings.push_back(boost::json::object{{"containerName", m.container_name},
                                             {"resourceName", m.resource_name},
                                             {"requestName", m.request_name}});
    }
    boost::json::object patch{
        {"status",
         boost::json::object{{"extendedResourceClaimStatus",
                              boost::json::object{{"resourceClaimName", claim_name},
                                                  {"requestMappings", std::move(mappings)}}}}}};
    return client::Patch<Pod>(*deps_.api, pod.metadata.namespace_, pod.metadata.name,
                              client::PatchType::kMerge, std::move(patch), "status",
                              options_.field_manager)
        .status();
  }

  // Clears the allocation (when `pod_uid` is empty) or removes one consumer from reservedFor.
  // `expected`: the allocation to undo (null: whichever the claim has). The work runs later and
  // re-reads the claim, so it checks that what it undoes is still there: another replica may
  // have allocated the claim anew (after a lost allocation was cleared) or bound the pod with
  // this allocation meanwhile, and undoing that would leave a bound pod without devices.
  // `release_allocation`: with a pod, also clear the allocation once nobody else reserved it.
  void DeallocateAsync(std::string ns, std::string name, std::string uid, std::string pod_name,
                       std::string pod_uid, std::shared_ptr<const rv1::AllocationResult> expected,
                       bool release_allocation = false) {
    if (name.empty()) return;
    client::ApiClient* api = deps_.api;
    int retries = options_.conflict_retries;
    std::string manager = options_.field_manager;
    log::Debug("scheduler: releasing claim {}/{} ({})", ns, name,
               pod_uid.empty() ? "allocation" : "reservation for pod " + pod_uid);
    deps_.run_async([=] {
      if (!pod_uid.empty()) {
        // Bound meanwhile (by another replica that adopted the reservation): keep it.
        StatusOr<Pod> current = client::Get<Pod>(*api, ns, pod_name);
        if (current.ok() && current->metadata.uid == pod_uid && !current->spec.node_name.empty()) {
          return;
        }
      }
      Release(*api, ns, name, uid, pod_uid, expected.get(), release_allocation, retries, manager);
    });
  }

  // Deletes a claim this scheduler created (the extended-resource claim). Its allocation and
  // the scheduler's finalizer go too, so that nothing else keeps it; a finalizer another
  // controller added stays, and that controller decides when the claim goes.
  void DeleteClaimAsync(std::string ns, std::string name, std::string uid) {
    client::ApiClient* api = deps_.api;
    int retries = options_.conflict_retries;
    std::string manager = options_.field_manager;
    deps_.run_async([=] {
      client::DeleteOptions options;
      options.precondition_uid = uid;
      Status s = client::Delete<rv1::ResourceClaim>(*api, ns, name, options);
      if (s.ok() || s.code() == StatusCode::kNotFound) {
        Release(*api, ns, name, uid, "", nullptr, /*release_allocation=*/false, retries, manager);
        return;
      }
      log::Warning("scheduler: deleting claim {}/{}: {}", ns, name, s.ToString());
    });
  }

  // The API work of DeallocateAsync and DeleteClaimAsync, with conflict retries: removes the
  // reservation of `pod_uid`, or (empty `pod_uid`) deallocates the claim and then removes the
  // scheduler's finalizer (api/resource_claims.h). Nothing happens when the claim is gone, has
  // another uid, or no longer carries `expected` (when given).
  static void Release(client::ApiClient& api, const std::string& ns, const std::string& name,
                      const std::string& uid, const std::string& pod_uid,
                      const rv1::AllocationResult* expected, bool release_allocation, int retries,
                      const std::string& manager) {
    for (int attempt = 0; attempt <= retries; ++attempt) {
      StatusOr<rv1::ResourceClaim> claim = client::Get<rv1::ResourceClaim>(api, ns, name);
      if (!claim.ok() || claim->metadata.uid != uid) return;
      if (expected != nullptr &&
          !(claim->status.allocation.has_value() && *claim->status.allocation == *expected)) {
        return;  // not our allocation any more
      }
      bool clear = pod_uid.empty();
      if (!clear) {
        api::RemoveReservation(&claim->status, pod_uid);
        clear = release_allocation && claim->status.reserved_for.empty();
      }
      if (clear) api::ClearAllocationAndReservations(&claim->status);
      StatusOr<rv1::ResourceClaim> written = client::UpdateStatus(api, std::move(*claim), manager);
      if (written.ok()) {
        rv1::ResourceClaim next = std::move(*written);
        // Without an allocation the claim needs no protection; the claim controller removes
        // the finalizer when this write loses a race.
        if (clear && api::RemoveClaimFinalizer(&next)) {
          client::UpdateOnly(api, next, manager).IgnoreError();
        }
        return;
      }
      if (written.status().code() != StatusCode::kConflict) {
        log::Warning("scheduler: releasing claim {}/{}: {}", ns, name, written.status().ToString());
        return;
      }
    }
  }

  // kQuotaChargeAnnotation's value for an allocation written now for `pod`.
  std::string ChargeMarker(const Pod& pod) const {
    int64_t seconds =
        std::chrono::duration_cast<std::chrono::seconds>(deps_.clock->Now().time_since_epoch())
            .count();
    return pod.metadata.uid + " " + std::to_string(seconds) + " " + writer_token_;
  }

  DynamicResourcesDeps deps_;
  DynamicResourcesOptions options_;
  // Tells this scheduler's charge markers from a replica's (a quota recount leaves out only its
  // own uncharged allocations). Not a decision input: only ever compared for equality.
  const std::string writer_token_ = SecureRandom().NewUuid().substr(0, 8);
  // Loop thread: claims (uid) whose allocation this scheduler releases because a device failed its
  // binding, until the cache shows the claim without that allocation; PreFilter must not reuse
  // it meanwhile.
  std::map<std::string, std::shared_ptr<const rv1::AllocationResult>> releasing_;
  // Loop thread: Summarize's memory, by explanation (held, so that its address is not reused).
  struct RememberedSummary {
    std::shared_ptr<const allocator::Explanation> explanation;
    std::vector<std::string> claim_names;  // with several claims: the names it was made with
    std::string text;
  };
  std::map<const allocator::Explanation*, RememberedSummary> summaries_;
  // Loop thread: TierScore's memory, by results vector (held, so that its address is not reused).
  struct RememberedTierScore {
    std::shared_ptr<const std::vector<rv1::AllocationResult>> results;
    uint64_t counted = 0;  // bit k: variant claim k was scored
    int64_t score = 0;
  };
  std::array<RememberedTierScore, 1024> tier_scores_;
};

}  // namespace

void AllocationConfirmations::Observe(const std::string& uid, int64_t resource_version, bool lost) {
  std::vector<std::shared_ptr<Waiter>> woken;
  {
    MutexLock lock(mu_);
    verdicts_[uid][resource_version] = lost;
    auto [first, last] = waiters_.equal_range(uid);
    for (auto it = first; it != last; ++it) woken.push_back(it->second);
  }
  // Outside the lock: a binder woken while it is held would only block on it again.
  for (const std::shared_ptr<Waiter>& waiter : woken) waiter->cv.NotifyOne();
}

AllocationConfirmations::Outcome AllocationConfirmations::Await(const std::string& uid,
                                                                int64_t resource_version,
                                                                Duration timeout) {
  MutexLock lock(mu_);
  auto waiter = std::make_shared<Waiter>();
  auto registration = waiters_.emplace(uid, waiter);
  bool seen = waiter->cv.WaitFor(lock, timeout, [&]() DRAPLANE_REQUIRES(mu_) {
    auto it = verdicts_.find(uid);
    return it != verdicts_.end() && !it->second.empty() &&
           it->second.rbegin()->first >= resource_version;
  });
  waiters_.erase(registration);
  if (!seen) return Outcome::kTimedOut;
  const std::map<int64_t, bool>& versions = verdicts_[uid];
  auto exact = versions.find(resource_version);
  if (exact == versions.end()) return Outcome::kUnknown;
  return exact->second ? Outcome::kLost : Outcome::kWon;
}

void AllocationConfirmations::Forget(const std::string& uid) {
  MutexLock lock(mu_);
  verdicts_.erase(uid);
}

bool HasBindingConditions(const rv1::AllocationResult& allocation) {
  for (const rv1::DeviceRequestAllocationResult& r : allocation.devices.results) {
    if (!r.binding_conditions.empty()) return true;
  }
  return false;
}

namespace {

std::string DeviceId(const rv1::DeviceRequestAllocationResult& r) {
  return r.driver + "/" + r.pool + "/" + r.device;
}

// upstream getAllocatedDeviceStatus: the status entry of an allocated device.
const rv1::AllocatedDeviceStatus* DeviceStatusOf(const rv1::ResourceClaim& claim,
                                                 const rv1::DeviceRequestAllocationResult& r) {
  for (const rv1::AllocatedDeviceStatus& d : claim.status.devices) {
    if (d.driver == r.driver && d.pool == r.pool && d.device == r.device) return &d;
  }
  return nullptr;
}

const api::metav1::Condition* FindCondition(const rv1::AllocatedDeviceStatus* status,
                                            std::string_view type) {
  if (status == nullptr) return nullptr;
  for (const api::metav1::Condition& c : status->conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

}  // namespace

BindingReadiness ClaimBindingReadiness(const rv1::ResourceClaim& claim) {
  BindingReadiness out;
  if (!claim.status.allocation.has_value()) {
    out.kind = BindingReadiness::Kind::kWaiting;
    out.message =
        "claim " + ClaimKey(claim.metadata.namespace_, claim.metadata.name) + " is not allocated";
    return out;
  }
  std::string key = ClaimKey(claim.metadata.namespace_, claim.metadata.name);
  for (const rv1::DeviceRequestAllocationResult& r : claim.status.allocation->devices.results) {
    if (r.binding_conditions.empty()) continue;
    const rv1::AllocatedDeviceStatus* status = DeviceStatusOf(claim, r);
    for (const std::string& type : r.binding_failure_conditions) {
      const api::metav1::Condition* c = FindCondition(status, type);
      if (c == nullptr || c->status != "True") continue;
      out.kind = BindingReadiness::Kind::kFailed;
      out.message = "claim " + key + ": device " + DeviceId(r) + ": binding failure condition " +
                    type + " is True";
      if (!c->reason.empty() || !c->message.empty()) {
        out.message += " (" + c->reason + (c->message.empty() ? "" : ": " + c->message) + ")";
      }
      return out;
    }
    if (out.kind != BindingReadiness::Kind::kReady) continue;
    for (const std::string& type : r.binding_conditions) {
      const api::metav1::Condition* c = FindCondition(status, type);
      if (c != nullptr && c->status == "True") continue;
      out.kind = BindingReadiness::Kind::kWaiting;
      out.message = "claim " + key + ": device " + DeviceId(r) + ": binding condition " + type +
                    " is " + (c == nullptr ? "not reported" : "\"" + c->status + "\"");
      break;
    }
  }
  return out;
}

std::string AllocatedDeviceProblem(
    const rv1::AllocationResult& allocation,
    const std::function<std::vector<std::shared_ptr<const rv1::ResourceSlice>>(
        std::string_view driver, std::string_view pool)>& slices) {
  for (const rv1::DeviceRequestAllocationResult& r : allocation.devices.results) {
    std::vector<std::shared_ptr<const rv1::ResourceSlice>> pool = slices(r.driver, r.pool);
    std::vector<const rv1::ResourceSlice*> views;
    for (const auto& slice : pool) views.push_back(slice.get());
    const rv1::Device* device = api::FindPublishedDevice(views, r.device);
    if (device == nullptr) return "device " + DeviceId(r) + " is no longer published";
    std::optional<size_t> taint =
        api::labels::FindUntoleratedDeviceTaint(device->taints, r.tolerations);
    if (taint) {
      const rv1::DeviceTaint& t = device->taints[*taint];
      return "device " + DeviceId(r) + " has the taint " + t.key +
             (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect + ", which is not tolerated";
    }
  }
  return "";
}

const DeviceDecision* DecisionOf(const CycleState& state) {
  const DraState* s = state.Get<DraState>();
  if (s == nullptr || !s->decision.has_value()) return nullptr;
  return &*s->decision;
}

const allocator::Explanation* DeviceExplanation(const CycleState& state, std::string_view node) {
  const DraState* s = state.Get<DraState>();
  if (s == nullptr) return nullptr;
  auto it = s->explanations.find(node);
  return it == s->explanations.end() ? nullptr : it->second.get();
}

std::shared_ptr<Plugin> NewDynamicResourcesPlugin(DynamicResourcesDeps deps,
                                                  DynamicResourcesOptions options) {
  return std::make_shared<DynamicResources>(std::move(deps), std::move(options));
}

}  // namespace draplane::scheduler
