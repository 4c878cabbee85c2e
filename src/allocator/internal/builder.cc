#include "allocator/internal/builder.h"

#include <fmt/core.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "allocator/internal/pools.h"
#include "api/gen/resource_v1_codec.h"
#include "common/status_macros.h"

namespace draplane::allocator::internal {
namespace {

namespace rv1 = api::resourcev1;

std::vector<uint32_t> InternSelectors(SnapshotState& state,
                                      const std::vector<rv1::DeviceSelector>& selectors,
                                      const Features& features) {
  std::vector<uint32_t> out;
  out.reserve(selectors.size());
  const internal::ExpressionSpec spec{.list_attributes = features.list_attributes};
  for (const rv1::DeviceSelector& s : selectors) {
    out.push_back(s.cel.has_value() ? state.Expression(s.cel->expression, spec) : kNone);
  }
  return out;
}

// The presence bit of CapacityRequestPolicy.validValues (its first plain field): an explicitly
// empty list is not nil for upstream's `ValidValues != nil`.
constexpr uint64_t kValidValuesPresent = uint64_t{1} << 0;

// --- consumable capacity (upstream consumable_capacity.go) -----------------------------------

// upstream resolveCapacityName: the index of the capacity a request name refers to, or kNone.
uint32_t ResolveRequestName(const std::string& request_name, const std::string& driver,
                            const std::vector<ResolvedCapacity>& caps) {
  std::string qualified;
  if (request_name.find('/') == std::string::npos) {
    qualified = driver + "/" + request_name;
  } else {
    std::string domain = request_name.substr(0, request_name.find('/'));
    // A qualified request with another domain only matches that exact key.
    qualified = request_name;
    if (domain != driver) {
      for (uint32_t i = 0; i < caps.size(); ++i) {
        if (*caps[i].published == request_name) return i;
      }
      return kNone;
    }
  }
  for (uint32_t i = 0; i < caps.size(); ++i) {
    if (caps[i].qualified == qualified) return i;
  }
  return kNone;
}

// upstream roundUpRange, in 128 bits: a request rounded up past int64 must not wrap around (Go's
// arithmetic does, and a huge request then "fits"; here it is undefined behaviour).
api::Quantity RoundUpRange(const api::Quantity& requested,
                           const rv1::CapacityRequestPolicyRange& range) {
  if (requested.Compare(*range.min) < 0) return *range.min;
  if (!range.step.has_value()) return requested;
  // A request past int64 (whose Value() saturates) is taken as written: more than any int64
  // capacity already.
  if (requested.Compare(api::Quantity::FromInt64(std::numeric_limits<int64_t>::max())) > 0) {
    return requested;
  }
  const api::Int128 step = range.step->Value();
  if (step <= 0) return requested;
  const api::Int128 min = range.min->Value();
  const api::Int128 added = requested.Value() - min;
  api::Int128 n = added / step;
  if (added % step != 0) ++n;
  const api::Int128 rounded = min + step * n;
  if (rounded <= std::numeric_limits<int64_t>::max()) {
    return api::Quantity::FromInt64(static_cast<int64_t>(rounded), range.step->format());
  }
  // Beyond int64 (and far below 2^127: step and n are below 2^64, min an int64), written out
  // exactly: more than any int64 capacity, so the device cannot serve it.
  std::string digits;
  for (api::Int128 v = rounded; v != 0; v /= 10) {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
  }
  return *api::Quantity::Parse(digits);
}

api::Quantity ConsumedQuantity(const api::Quantity* requested, const internal::Capacity& cap) {
  const rv1::CapacityRequestPolicy* policy = cap.policy.get();
  if (requested == nullptr) {
    if (policy != nullptr && policy->default_value.has_value()) return *policy->default_value;
    return cap.value;
  }
  if (policy == nullptr) return *requested;
  if (policy->valid_range.has_value() && policy->valid_range->min.has_value()) {
    return RoundUpRange(*requested, *policy->valid_range);
  }
  if (!policy->valid_values.empty() || (policy->present & kValidValuesPresent) != 0) {
    for (const api::Quantity& v : policy->valid_values) {
      if (requested->Compare(v) <= 0) return v;
    }
  }
  return *requested;
}

// upstream violatesPolicy.
bool ViolatesPolicy(const api::Quantity& consumed, const internal::Capacity& cap) {
  if (cap.policy == nullptr) return false;
  const rv1::CapacityRequestPolicy& policy = *cap.policy;
  // Upstream compares the Go structs; numerically equal quantities that differ in
  // representation then take the checks below, which the policy's own default passes too.
  if (policy.default_value.has_value() && consumed.Compare(*policy.default_value) == 0) {
    return false;
  }
  if (policy.valid_range.has_value()) {
    const rv1::CapacityRequestPolicyRange& range = *policy.valid_range;
    if (range.max.has_value() && consumed.Compare(*range.max) > 0) return true;
    if (range.step.has_value() && range.step->Value() != 0) {
      const api::Int128 min = range.min.has_value() ? range.min->Value() : 0;
      if ((consumed.Value() - min) % range.step->Value() != 0) return true;
    }
    return false;
  }
  if (!policy.valid_values.empty()) {
    for (const api::Quantity& v : policy.valid_values) {
      if (consumed.Compare(v) == 0) return false;
    }
    return true;
  }
  return false;
}

const api::Quantity* AllocatedCapacity(const AllocatedState::DeviceRecord* record,
                                       const ResolvedCapacity& cap) {
  if (record == nullptr) return nullptr;
  auto it = record->aggregated.find(*cap.published);
  if (it == record->aggregated.end()) it = record->aggregated.find(cap.qualified);
  if (it == record->aggregated.end() && cap.qualified != *cap.published) {
    size_t slash = cap.qualified.find('/');
    it = record->aggregated.find(cap.qualified.substr(slash + 1));
  }
  return it == record->aggregated.end() ? nullptr : &it->second;
}

}  // namespace

KeySpec PrepareKey(SnapshotState& state, const Features& features, const std::string& name,
                   const std::string& parent, const std::string& class_name,
                   const std::vector<rv1::DeviceSelector>& selectors, const std::string& mode,
                   int64_t count, const std::vector<rv1::DeviceToleration>& tolerations,
                   const std::optional<rv1::CapacityRequirements>& capacity,
                   const std::vector<rv1::DeviceDerivedAttribute>& derived) {
  KeySpec k;
  k.name = name;
  k.parent = parent;
  k.is_sub = !parent.empty();
  k.class_name = class_name;
  auto it = state.classes.find(class_name);
  if (!class_name.empty() && it != state.classes.end()) {
    k.device_class = it->second;
    k.class_exprs = InternSelectors(state, k.device_class->spec.selectors, features);
  }
  k.request_exprs = InternSelectors(state, selectors, features);
  if (features.derived_attributes) {
    const internal::ExpressionSpec spec{.list_attributes = features.list_attributes,
                                        .derived = true};
    for (const rv1::DeviceDerivedAttribute& d : derived) {
      k.derived.emplace_back(d.name, state.Expression(d.expression, spec));
    }
  }
  k.mode = mode;
  k.count = count;
  k.tolerations = &tolerations;
  k.capacity = capacity.has_value() ? &*capacity : nullptr;
  return k;
}

Status BudgetSpentError(const EvaluationBudget& budget) {
  return Status(StatusCode::kResourceExhausted,
                fmt::format("the CEL evaluation budget of this scheduling attempt ({} cost units) "
                            "is spent: the Pod's selectors cost too much to evaluate at once; "
                            "the next attempt continues where this one stopped",
                            budget.limit),
                {StatusCause{.type = std::string(kBudgetCause), .message = "", .field = ""}});
}

// --- ProblemBuilder --------------------------------------------------------------------------

ProblemBuilder::ProblemBuilder(SnapshotState& state, const NodeEntry& node_entry,
                               const api::corev1::Node& node, const AllocatedState& allocated,
                               const Features& features, const std::vector<ClaimSpec>& claims,
                               bool explain, bool with_policies)
    : state_(state),
      node_entry_(node_entry),
      node_(node),
      allocated_(allocated),
      f_(features),
      claims_(claims),
      explain_(explain),
      with_policies_(with_policies) {}

Status ProblemBuilder::Build() {
  AddDevices();
  for (uint32_t c = 0; c < claims_.size(); ++c) DRAPLANE_RETURN_IF_ERROR(AddClaim(c));
  for (uint32_t k = 0; k < problem.keys.size() && !budget_spent_; ++k) {
    if (!problem.keys[k].all_mode) FillCandidates(k);
  }
  if (budget_spent_) return BudgetSpentError(*state_.budget);
  AddConstraintValues();
  return Status::Ok();
}

void ProblemBuilder::AddDevices() {
  devices_of_gathered.assign(node_entry_.pools.size(), {0, 0});
  // Room for every device first: a Device moves (strings, vectors) each time the list grows.
  size_t device_count = problem.devices.size();
  for (const GatheredPool& pool : node_entry_.pools) {
    if (pool.incomplete || pool.invalid) continue;
    for (const SliceEntry* slice : pool.targeting) device_count += slice->spec().devices.size();
  }
  problem.devices.reserve(device_count);
  refs.reserve(device_count);
  if (with_policies_) problem.facts.reserve(device_count);
  for (uint32_t gp = 0; gp < node_entry_.pools.size(); ++gp) {
    const GatheredPool& pool = node_entry_.pools[gp];
    if (pool.incomplete || pool.invalid) continue;
    devices_of_gathered[gp].first = static_cast<DeviceIndex>(problem.devices.size());
    uint32_t pool_index = static_cast<uint32_t>(problem.pools.size());
    internal::Pool p;
    p.driver = pool.driver;
    p.name = pool.pool;
    p.first_counter = static_cast<uint32_t>(problem.counters.size());
    std::map<std::pair<std::string_view, std::string_view>, uint32_t> counter_index;
    PoolGroups groups;
    if (f_.partitionable_devices) {
      AddCounters(pool, p, counter_index);
      AddGroups(pool, pool_index, groups);
    }
    problem.pools.push_back(p);
    pool_of_gathered.push_back(gp);
    const AllocatedState::PoolRecord* record = allocated_.FindPool(pool.driver, pool.pool);
    for (SliceEntry* slice : pool.targeting) {
      const auto& devices = slice->spec().devices;
      for (uint32_t i = 0; i < devices.size(); ++i) {
        const rv1::Device& d = devices[i];
        internal::Device dev;
        dev.name = d.name;
        dev.pool = pool_index;
        const AllocatedState::DeviceRecord* rec = nullptr;
        if (record != nullptr) {
          auto it = record->devices.find(d.name);
          if (it != record->devices.end()) rec = &it->second;
        }
        dev.allocated = rec != nullptr && rec->exclusive > 0;
        dev.capacity_in_use = rec != nullptr && rec->capacity_entries > 0;
        dev.shared_in_use = rec != nullptr && !rec->shares.empty();
        dev.consumes_counters = !d.consumes_counters.empty();
        dev.multi_allocatable =
            f_.consumable_capacity && d.allow_multiple_allocations.value_or(false);
        if (f_.partitionable_devices) {
          for (const auto& consumption : d.consumes_counters) {
            for (const auto& [name, counter] : consumption.counters) {
              auto it = counter_index.find({consumption.counter_set, name});
              if (it == counter_index.end()) continue;  // validated by pool gathering
              dev.counter_uses.push_back({it->second, counter.value});
            }
            AddGroupUse(consumption, groups, dev);
          }
        }
        // Capacities matter to the search only for shares; an exclusive device is checked
        // once, statically (MakePlan).
        if (dev.multi_allocatable) {
          for (const ResolvedCapacity& cap : state_.Capacities(*slice, i)) {
            internal::DeviceCapacity dc;
            dc.name = *cap.published;
            dc.value = cap.capacity->value;
            if (const api::Quantity* used = AllocatedCapacity(rec, cap)) dc.allocated = *used;
            dev.capacities.push_back(std::move(dc));
          }
        }
        if (with_policies_) problem.facts.push_back(&state_.Facts(*slice, i));
        problem.devices.push_back(std::move(dev));
        refs.push_back(DeviceRef{slice, i, rec});
      }
    }
    devices_of_gathered[gp].second = static_cast<DeviceIndex>(problem.devices.size());
  }
}

void ProblemBuilder::AddCounters(
    const GatheredPool& pool, internal::Pool& p,
    std::map<std::pair<std::string_view, std::string_view>, uint32_t>& index) {
  std::map<std::string_view, const rv1::CounterSet*> sets;
  for (const SliceEntry* s : pool.counter_slices) {
    for (const rv1::CounterSet& set : s->spec().shared_counters) sets.emplace(set.name, &set);
  }
  for (const auto& [set_name, set] : sets) {
    for (const auto& [name, counter] : set->counters) {
      index[{set_name, name}] = static_cast<uint32_t>(problem.counters.size());
      problem.counters.push_back({set->name, name, counter.value});
      ++p.num_counters;
    }
  }
  for (const auto* list : {&pool.targeting, &pool.not_targeting}) {
    for (const SliceEntry* s : *list) {
      for (const rv1::Device& d : s->spec().devices) {
        if (d.consumes_counters.empty()) continue;
        if (!allocated_.IsAllocated(pool.driver, pool.pool, d.name)) continue;
        for (const auto& consumption : d.consumes_counters) {
          for (const auto& [name, counter] : consumption.counters) {
            auto it = index.find({consumption.counter_set, name});
            if (it == index.end()) continue;
            api::Quantity& available = problem.counters[it->second].available;
            available = available.Sub(counter.value);
          }
        }
      }
    }
  }
  for (uint32_t i = 0; i < p.num_counters; ++i) {
    if (problem.counters[p.first_counter + i].available.Sign() < 0) p.overcommitted = true;
  }
}

std::vector<uint32_t> ProblemBuilder::GroupIds(const std::vector<std::string>& names) {
  std::vector<uint32_t> out;
  for (const std::string& name : names) {
    auto [it, inserted] =
        group_ids_.emplace(name, static_cast<uint32_t>(problem.group_names.size()));
    if (inserted) problem.group_names.push_back(name);
    out.push_back(it->second);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void ProblemBuilder::AddGroups(const GatheredPool& pool, uint32_t pool_index, PoolGroups& groups) {
  bool declared = false;
  for (const auto* list : {&pool.targeting, &pool.not_targeting}) {
    for (const SliceEntry* s : *list) declared = declared || s->compatibility_groups;
  }
  // Ungrouped devices among themselves are always compatible.
  if (!declared) return;
  for (const auto* list : {&pool.targeting, &pool.not_targeting}) {
    for (const SliceEntry* s : *list) {
      for (const rv1::Device& d : s->spec().devices) {
        const bool allocated = allocated_.IsAllocated(pool.driver, pool.pool, d.name);
        for (const auto& consumption : d.consumes_counters) {
          if (!f_.device_compatibility_groups) {
            if (allocated && !consumption.compatibility_groups.empty()) {
              groups.allocated_grouped.insert(consumption.counter_set);
            }
            continue;
          }
          auto [it, inserted] = groups.set_index.emplace(
              consumption.counter_set, static_cast<uint32_t>(problem.counter_sets.size()));
          if (inserted) {
            problem.counter_sets.push_back({pool_index, consumption.counter_set, {}});
          }
          if (allocated) {
            internal::FoldGroups(problem.counter_sets[it->second].allocated,
                                 GroupIds(consumption.compatibility_groups));
          }
        }
      }
    }
  }
}

void ProblemBuilder::AddGroupUse(const rv1::DeviceCounterConsumption& consumption,
                                 const PoolGroups& groups, internal::Device& dev) {
  if (!f_.device_compatibility_groups) {
    if (!consumption.compatibility_groups.empty() ||
        groups.allocated_grouped.count(consumption.counter_set) != 0) {
      dev.groups_unsupported = true;
    }
    return;
  }
  auto it = groups.set_index.find(consumption.counter_set);
  if (it == groups.set_index.end()) return;  // no groups anywhere in the pool
  dev.group_uses.push_back({it->second, GroupIds(consumption.compatibility_groups)});
}

Status ProblemBuilder::AddClaim(uint32_t c) {
  const ClaimSpec& claim = claims_[c];
  internal::Claim pc;
  pc.name = claim.ref;
  problem.claims.push_back(pc);
  int64_t min_devices = 0;
  for (uint32_t r = 0; r < claim.requests.size(); ++r) {
    const RequestSpec& req = claim.requests[r];
    const rv1::DeviceRequest& api_req = *req.request;
    if (!f_.prioritized_list && req.has_sub) {
      return InvalidArgumentError(fmt::format(
          "claim {}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
          claim.ref, api_req.name));
    }
    if (!f_.consumable_capacity) {
      if (api_req.exactly.has_value() && api_req.exactly->capacity.has_value()) {
        return InvalidArgumentError(
            fmt::format("claim {}, request {}: has capacity requests, but the "
                        "DRAConsumableCapacity feature is disabled",
                        claim.ref, api_req.name));
      }
      for (const rv1::DeviceSubRequest& sub : api_req.first_available) {
        if (sub.capacity.has_value()) {
          return InvalidArgumentError(
              fmt::format("claim {}, subrequest {}: has capacity requests, but the "
                          "DRAConsumableCapacity feature is disabled",
                          claim.ref, sub.name));
        }
      }
    }
    internal::Request pr;
    pr.has_subrequests = req.has_sub;
    int64_t min_for_request = req.has_sub ? INT64_MAX : 0;
    for (uint32_t s = 0; s < req.keys.size(); ++s) {
      DRAPLANE_ASSIGN_OR_RETURN(uint32_t key,
                                AddKey(c, r, req.has_sub ? int32_t(s) : -1, req.keys[s]));
      pr.keys.push_back(key);
      int64_t n = problem.keys[key].num_devices;
      min_for_request = req.has_sub ? std::min(min_for_request, n) : n;
    }
    if (req.keys.empty()) min_for_request = 0;
    min_devices += min_for_request;
    problem.claims[c].requests.push_back(std::move(pr));
  }
  // The device count is only a lower bound, so the search checks again.
  if (min_devices > internal::kAllocationResultsMaxSize) {
    return FailedPreconditionError(
        fmt::format("claim {}: number of requested devices {} exceeds the claim limit of {}",
                    claim.ref, min_devices, internal::kAllocationResultsMaxSize));
  }
  const auto& constraints = claim.claim->spec.devices.constraints;
  for (size_t i = 0; i < constraints.size(); ++i) {
    const rv1::DeviceConstraint& dc = constraints[i];
    internal::Constraint constraint;
    if (dc.match_attribute.has_value()) {
      constraint.kind = internal::Constraint::Kind::kMatch;
      constraint.attribute = *dc.match_attribute;
    } else if (dc.distinct_attribute.has_value()) {
      constraint.kind = internal::Constraint::Kind::kDistinct;
      constraint.attribute = *dc.distinct_attribute;
    } else {
      return FailedPreconditionError(
          fmt::format("claim {}, constraint #{}: empty constraint (unsupported constraint type?)",
                      claim.ref, i));
    }
    std::set<std::string_view> names(dc.requests.begin(), dc.requests.end());
    for (uint32_t k = 0; k < problem.keys.size(); ++k) {
      internal::RequestKey& key = problem.keys[k];
      if (key.claim != c) continue;
      bool in_scope = names.empty();
      if (!in_scope) {
        std::string base = key.parent.empty() ? key.name : key.parent;
        in_scope = names.count(base) != 0 || (!key.parent.empty() && names.count(key.FullName()));
      }
      // More than 64 constraints cannot pass validation (at most 32 per claim).
      if (in_scope && i < 64) key.constraint_scope |= uint64_t{1} << i;
    }
    problem.claims[c].constraints.push_back(std::move(constraint));
  }
  return Status::Ok();
}

StatusOr<uint32_t> ProblemBuilder::AddKey(uint32_t c, uint32_t r, int32_t s, const KeySpec& spec) {
  const ClaimSpec& claim = claims_[c];
  for (size_t i = 0; i < spec.request_exprs.size(); ++i) {
    if (spec.request_exprs[i] == kNone) {
      return InvalidArgumentError(
          fmt::format("claim {}, request {}, selector #{}: CEL expression empty (unsupported "
                      "selector type?)",
                      claim.ref, spec.name, i));
    }
  }
  if (!f_.admin_access && spec.has_admin) {
    return InvalidArgumentError(
        fmt::format("claim {}, request {}: admin access is requested, but the feature is disabled",
                    claim.ref, spec.name));
  }
  if (spec.class_name.empty()) {
    return InvalidArgumentError(
        fmt::format("claim {}, request {}: missing device class name (unsupported request type?)",
                    claim.ref, spec.name));
  }
  if (spec.device_class == nullptr) {
    return NotFoundError(fmt::format(
        "claim {}, request {}: could not retrieve device class {}: deviceclass.resource.k8s.io "
        "\"{}\" not found",
        claim.ref, spec.name, spec.class_name, spec.class_name));
  }
  internal::RequestKey key;
  key.claim = c;
  key.request = r;
  key.subrequest = s;
  key.name = spec.name;
  key.parent = spec.parent;
  key.device_class = spec.class_name;
  key.admin_access = spec.admin;
  uint32_t index = static_cast<uint32_t>(problem.keys.size());
  if (explain_) problem.static_rejections.emplace_back(problem.devices.size());
  key_specs.push_back(&spec);
  key_infos.push_back({spec.mode, spec.count});
  if (spec.mode == rv1::kDeviceAllocationModeExactCount) {
    key.num_devices = static_cast<int>(std::min<int64_t>(spec.count, INT_MAX));
    problem.keys.push_back(std::move(key));
    return index;
  }
  if (spec.mode != rv1::kDeviceAllocationModeAll) {
    return FailedPreconditionError(fmt::format("claim {}, request {}: unsupported count mode {}",
                                               claim.ref, spec.name, spec.mode));
  }
  key.all_mode = true;
  problem.keys.push_back(std::move(key));
  // "All" needs to know every device: an incomplete or invalid pool makes that impossible.
  // Pools are visited in search order, each checked before its devices are selected, so the
  // first fatal error is the one upstream's validateDeviceRequest meets (a CEL error in an
  // earlier pool wins over a later incomplete pool).
  for (uint32_t gp = 0; gp < node_entry_.pools.size(); ++gp) {
    const GatheredPool& pool = node_entry_.pools[gp];
    if (pool.incomplete) {
      return FailedPreconditionError(fmt::format(
          "claim {}, request {}: asks for all devices, but resource pool {} is currently being "
          "updated",
          claim.ref, spec.name, pool.Id()));
    }
    if (pool.invalid) {
      return FailedPreconditionError(
          fmt::format("claim {}, request {}: asks for all devices, but resource pool {} is "
                      "currently invalid",
                      claim.ref, spec.name, pool.Id()));
    }
    for (DeviceIndex d = devices_of_gathered[gp].first; d < devices_of_gathered[gp].second; ++d) {
      Selectability sel = Select(c, spec, d);
      if (sel.budget_spent) return BudgetSpentError(*state_.budget);
      if (!sel.error.empty()) return FailedPreconditionError(sel.error);
      if (sel.reason != Reason::kNone) {
        if (explain_) problem.static_rejections[index][d] = {sel.reason, sel.detail};
        continue;
      }
      Candidate cand = MakeCandidate(spec, d);
      if (cand.plan != kNone) {
        // Devices whose remaining capacity cannot hold the request are left out.
        const CapacityPlan& plan = problem.plans[cand.plan];
        if (!plan.usable) {
          if (explain_) {
            problem.static_rejections[index][d] = {
                plan.unservable ? Reason::kCapacityUnservable : Reason::kCapacity, plan.why};
          }
          continue;
        }
      }
      problem.keys[index].all_devices.push_back(std::move(cand));
    }
  }
  problem.keys[index].num_devices = static_cast<int>(problem.keys[index].all_devices.size());
  key_infos.back().count = problem.keys[index].num_devices;
  return index;
}

void ProblemBuilder::FillCandidates(uint32_t k) {
  internal::RequestKey& key = problem.keys[k];
  const KeySpec& spec = *key_specs[k];
  for (DeviceIndex d = 0; d < problem.devices.size(); ++d) {
    Selectability sel = Select(key.claim, spec, d);
    if (sel.budget_spent) {
      budget_spent_ = true;
      return;
    }
    if (sel.error.empty() && sel.reason != Reason::kNone) {
      if (explain_) problem.static_rejections[k][d] = {sel.reason, sel.detail};
      continue;
    }
    Candidate cand = MakeCandidate(spec, d);
    if (!sel.error.empty()) {
      cand.error = static_cast<uint32_t>(problem.errors.size());
      problem.errors.push_back(sel.error);
    }
    key.candidates.push_back(std::move(cand));
  }
}

Selectability ProblemBuilder::Select(uint32_t c, const KeySpec& spec, DeviceIndex d) {
  Selectability out;
  const DeviceRef& ref = refs[d];
  const rv1::Device& device = ref.device();
  if (!f_.device_binding_and_status && internal::HasBindingConditions(device)) {
    out.reason = Reason::kBindingConditionsUnsupported;
    out.detail = "the device has binding conditions; DRADeviceBindingConditions is off";
    return out;
  }
  if (problem.devices[d].groups_unsupported) {
    // upstream skips such devices while the gate is off, so that turning it on later does not
    // find incompatible devices allocated together.
    out.reason = Reason::kCompatibilityGroupsUnsupported;
    out.detail =
        "compatibility groups on its counter sets (the device's or an allocated device's); "
        "DRADeviceCompatibilityGroups is off";
    return out;
  }
  std::string device_id;
  auto id = [&]() -> const std::string& {
    if (device_id.empty()) device_id = problem.DeviceId(d);
    return device_id;
  };
  const std::string& class_name = spec.class_name;
  for (size_t i = 0; i < spec.class_exprs.size(); ++i) {
    uint32_t expr = spec.class_exprs[i];
    if (expr == kNone) {
      out.error = fmt::format(
          "class {}: selector #{}: CEL compile error: CEL expression empty (unsupported selector "
          "type?)",
          class_name, i);
      return out;
    }
    uint32_t v = state_.Verdict(expr, *ref.slice, ref.index);
    if (v == internal::kVerdictBudgetSpent) {
      out.budget_spent = true;
      return out;
    }
    if (v >= internal::kVerdictError) {
      const std::string& text = state_.error_texts[v - internal::kVerdictError];
      out.error =
          state_.expressions[expr].program == nullptr
              ? fmt::format("class {}: selector #{}: CEL compile error: {}", class_name, i, text)
              : fmt::format("class {}: selector #{} on device {}: CEL runtime error: {}",
                            class_name, i, id(), text);
      return out;
    }
    if (v == internal::kVerdictFalse) {
      out.reason = Reason::kClassSelectorFalse;
      if (explain_) {
        out.detail = fmt::format("class {} selector #{} is false: {}", class_name, i,
                                 state_.expressions[expr].text);
      }
      return out;
    }
  }
  const std::string& claim = claims_[c].ref;
  for (size_t i = 0; i < spec.request_exprs.size(); ++i) {
    uint32_t expr = spec.request_exprs[i];
    uint32_t v = state_.Verdict(expr, *ref.slice, ref.index);
    if (v == internal::kVerdictBudgetSpent) {
      out.budget_spent = true;
      return out;
    }
    if (v >= internal::kVerdictError) {
      const std::string& text = state_.error_texts[v - internal::kVerdictError];
      out.error = state_.expressions[expr].program == nullptr
                      ? fmt::format("claim {}: selector #{}: CEL compile error: {}", claim, i, text)
                      : fmt::format("claim {}: selector #{} on device {}: CEL runtime error: {}",
                                    claim, i, id(), text);
      return out;
    }
    if (v == internal::kVerdictFalse) {
      out.reason = Reason::kRequestSelectorFalse;
      if (explain_) {
        out.detail = fmt::format("request {} selector #{} is false: {}", spec.FullName(), i,
                                 state_.expressions[expr].text);
      }
      return out;
    }
  }
  if (ref.slice->spec().per_device_node_selection.value_or(false)) {
    StatusOr<bool> match = internal::DeviceNodeMatches(*ref.slice, ref.index, node_);
    if (!match.ok()) {
      out.error = std::string(match.status().message());
      return out;
    }
    if (!*match) {
      out.reason = Reason::kNodeMismatch;
      if (explain_) {
        out.detail = "the device's node selection does not match node " + node_.metadata.name;
      }
      return out;
    }
  }
  return out;
}

Candidate ProblemBuilder::MakeCandidate(const KeySpec& spec, DeviceIndex d) {
  Candidate cand;
  cand.device = d;
  const rv1::Device& device = refs[d].device();
  if (f_.device_taints) {
    for (const rv1::DeviceTaint& taint : device.taints) {
      // Only the known effects prevent allocation; None and unknown effects are ignored.
      if (taint.effect != rv1::kDeviceTaintEffectNoSchedule &&
          taint.effect != rv1::kDeviceTaintEffectNoExecute) {
        continue;
      }
      bool tolerated = false;
      for (const rv1::DeviceToleration& t : *spec.tolerations) {
        if (ToleratesTaint(t, taint)) {
          tolerated = true;
          break;
        }
      }
      if (!tolerated) {
        cand.taint_blocked = true;
        cand.taint = taint.key + "=" + taint.value + ":" + taint.effect;
        break;
      }
    }
  }
  if (f_.consumable_capacity) cand.plan = MakePlan(spec, d);
  return cand;
}

bool ProblemBuilder::ToleratesTaint(const rv1::DeviceToleration& t, const rv1::DeviceTaint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.operator_.empty() || t.operator_ == rv1::kDeviceTolerationOperatorEqual) {
    return t.value == taint.value;
  }
  return t.operator_ == rv1::kDeviceTolerationOperatorExists;
}

uint32_t ProblemBuilder::MakePlan(const KeySpec& spec, DeviceIndex d) {
  const DeviceRef& ref = refs[d];
  const internal::Device& dev = problem.devices[d];
  const std::vector<ResolvedCapacity>& caps = state_.Capacities(*ref.slice, ref.index);
  const bool requests = spec.capacity != nullptr && !spec.capacity->requests.empty();
  if (caps.empty() && !requests) return dev.multi_allocatable ? EmptyPlan() : kNone;
  CapacityPlan planned;
  const CapacityPlan* plan = &planned;
  if (!requests && (ref.record == nullptr || ref.record->aggregated.empty())) {
    // The same for every attempt while the slice is: computed once.
    SliceEntry& slice = *ref.slice;
    if (slice.unrequested_plans.size() != slice.spec().devices.size()) {
      slice.unrequested_plans.resize(slice.spec().devices.size());
    }
    std::optional<CapacityPlan>& cached = slice.unrequested_plans[ref.index];
    if (!cached.has_value()) cached = PlanCapacities(caps, {}, nullptr, dev.multi_allocatable);
    plan = &*cached;
  } else {
    const std::string& driver = problem.pools[dev.pool].driver;
    std::vector<const api::Quantity*> requested(caps.size(), nullptr);
    if (requests) {
      for (const auto& [name, q] : spec.capacity->requests) {
        uint32_t i = ResolveRequestName(name, driver, caps);
        if (i == kNone) {
          planned.usable = false;
          planned.unservable = true;
          planned.why = "capacity " + name + " is not defined on the device";
          break;
        }
        if (requested[i] != nullptr) {
          planned.usable = false;
          planned.unservable = true;
          planned.why = "capacity " + *caps[i].published + " is requested twice";
          break;
        }
        requested[i] = &q;
      }
    }
    if (planned.usable) {
      planned = PlanCapacities(caps, requested, ref.record, dev.multi_allocatable);
    }
  }
  if (plan->usable && !dev.multi_allocatable) return kNone;
  if (with_policies_) {
    ResourceList named;
    for (size_t i = 0; i < plan->consumed.size(); ++i) {
      named.emplace(*caps[i].published, plan->consumed[i]);
    }
    problem.plan_consumed.push_back(std::move(named));
  }
  problem.plans.push_back(plan == &planned ? std::move(planned) : *plan);
  return static_cast<uint32_t>(problem.plans.size() - 1);
}

CapacityPlan ProblemBuilder::PlanCapacities(const std::vector<ResolvedCapacity>& caps,
                                            const std::vector<const api::Quantity*>& requested,
                                            const AllocatedState::DeviceRecord* record,
                                            bool multi_allocatable) {
  CapacityPlan plan;
  for (size_t i = 0; i < caps.size(); ++i) {
    api::Quantity consumed =
        ConsumedQuantity(requested.empty() ? nullptr : requested[i], *caps[i].capacity);
    if (consumed.Sign() < 0) {
      plan.usable = false;
      plan.unservable = true;
      plan.why = "capacity " + *caps[i].published + " would be negative";
      break;
    }
    if (ViolatesPolicy(consumed, *caps[i].capacity)) {
      plan.usable = false;
      plan.unservable = true;
      plan.why = "capacity " + *caps[i].published + ": " + consumed.ToString() +
                 " violates the device's request policy";
      break;
    }
    const api::Quantity& value = caps[i].capacity->value;
    const api::Quantity* used = AllocatedCapacity(record, caps[i]);
    api::Quantity total = used != nullptr ? used->Add(consumed) : consumed;
    if (total.Compare(value) > 0) {
      plan.usable = false;
      plan.unservable = consumed.Compare(value) > 0;
      plan.why = fmt::format("capacity {}: needs {}, {} of {} already consumed", *caps[i].published,
                             consumed.ToString(), used != nullptr ? used->ToString() : "0",
                             value.ToString());
      break;
    }
    if (multi_allocatable) plan.consumed.push_back(std::move(consumed));
  }
  if (!plan.usable) plan.consumed.clear();
  return plan;
}

uint32_t ProblemBuilder::EmptyPlan() {
  if (empty_plan_ == kNone) {
    empty_plan_ = static_cast<uint32_t>(problem.plans.size());
    problem.plans.emplace_back();
    if (with_policies_) problem.plan_consumed.emplace_back();
  }
  return empty_plan_;
}

void ProblemBuilder::AddConstraintValues() {
  std::map<std::vector<int64_t>, uint32_t> dedupe;
  std::map<std::string, int64_t, std::less<>> interned;
  auto intern = [&](const std::string& s) {
    auto [it, inserted] = interned.emplace(s, static_cast<int64_t>(problem.interned.size()));
    if (inserted) problem.interned.push_back(s);
    return it->second;
  };
  auto add_value = [&](AttributeValue v) {
    std::vector<int64_t> key = Encode(v);
    auto [it, inserted] = dedupe.emplace(key, static_cast<uint32_t>(problem.values.size()));
    if (inserted) problem.values.push_back(std::move(v));
    return it->second;
  };
  for (uint32_t c = 0; c < problem.claims.size(); ++c) {
    internal::Claim& claim = problem.claims[c];
    for (size_t k = 0; k < claim.constraints.size(); ++k) {
      internal::Constraint& constraint = claim.constraints[k];
      if (k < 64) AddDerivedValues(c, k, constraint, intern, add_value);
      constraint.value_of_device.assign(problem.devices.size(), kNone);
      // upstream lookupAttribute: the fully qualified name, else the bare id when the
      // domain is the device's driver.
      const std::string& name = constraint.attribute;
      const uint32_t exact = state_.names.Find(name);
      const size_t slash = name.find('/');
      const std::string_view domain =
          slash == std::string::npos ? std::string_view() : std::string_view(name).substr(0, slash);
      const uint32_t bare = slash == std::string::npos
                                ? internal::NameTable::kMissing
                                : state_.names.Find(std::string_view(name).substr(slash + 1));
      for (DeviceIndex d = 0; d < problem.devices.size(); ++d) {
        const internal::DeviceData& data = refs[d].data();
        const internal::Attribute* attr =
            exact != internal::NameTable::kMissing ? data.Find(exact) : nullptr;
        if (attr == nullptr && bare != internal::NameTable::kMissing &&
            domain == problem.pools[problem.devices[d].pool].driver) {
          attr = data.Find(bare);
        }
        if (attr == nullptr) continue;
        constraint.value_of_device[d] = add_value(ToValue(attr->ToApi(), intern));
      }
    }
  }
}

template <typename Intern, typename AddValue>
void ProblemBuilder::AddDerivedValues(uint32_t c, size_t k, internal::Constraint& constraint,
                                      Intern& intern, AddValue& add_value) {
  for (uint32_t key_index = 0; key_index < problem.keys.size(); ++key_index) {
    const internal::RequestKey& key = problem.keys[key_index];
    if (key.claim != c || ((key.constraint_scope >> k) & 1) == 0) continue;
    const KeySpec& spec = *key_specs[key_index];
    auto found = std::find_if(spec.derived.begin(), spec.derived.end(),
                              [&](const auto& d) { return d.first == constraint.attribute; });
    if (found == spec.derived.end()) continue;
    internal::DerivedValues values;
    values.key = key_index;
    values.value_of_device.assign(problem.devices.size(), kNone);
    values.error_of_device.assign(problem.devices.size(), kNone);
    const uint32_t expression = found->second;
    auto evaluate = [&](const Candidate& cand) {
      if (cand.error != kNone) return;  // the selector's error comes first
      const DeviceRef& ref = refs[cand.device];
      uint32_t code = state_.DerivedCode(expression, *ref.slice, ref.index);
      std::string error;
      if ((code - internal::kDerivedValue) % 2 == 0) {
        const rv1::DeviceAttribute& a = state_.derived_values[(code - internal::kDerivedValue) / 2];
        bool list =
            !a.ints.empty() || !a.bools.empty() || !a.strings.empty() || !a.versions.empty();
        if (!list || f_.list_type_attributes) {
          values.value_of_device[cand.device] = add_value(ToValue(a, intern));
          return;
        }
        error = "CEL runtime error: a list value needs the DRAListTypeAttributes feature";
      } else {
        const std::string& text = state_.error_texts[(code - internal::kDerivedError) / 2];
        error = state_.expressions[expression].program == nullptr ? "CEL compile error: " + text
                                                                  : "CEL runtime error: " + text;
      }
      values.error_of_device[cand.device] = static_cast<uint32_t>(problem.errors.size());
      problem.errors.push_back(
          fmt::format("claim {}, request {}: derived attribute {} on device {}: {}", claims_[c].ref,
                      key.FullName(), found->first, problem.DeviceId(cand.device), error));
    };
    for (const Candidate& cand : key.candidates) evaluate(cand);
    for (const Candidate& cand : key.all_devices) evaluate(cand);
    constraint.derived.push_back(std::move(values));
  }
}

template <typename Intern>
AttributeValue ProblemBuilder::ToValue(const rv1::DeviceAttribute& a, Intern& intern) {
  AttributeValue v;
  v.present = true;
  v.int_value = a.int_value;
  v.bool_value = a.bool_value;
  if (a.string_value) v.string_value = intern(*a.string_value);
  if (a.version_value) v.version_value = intern(*a.version_value);
  using SetType = AttributeValue::SetType;
  // upstream attributeAsSet: non-empty lists first, then the scalars.
  if (!a.ints.empty()) {
    v.set_type = SetType::kInt;
    v.set.assign(a.ints.begin(), a.ints.end());
  } else if (!a.bools.empty()) {
    v.set_type = SetType::kBool;
    for (bool b : a.bools) v.set.push_back(b ? 1 : 0);
  } else if (!a.strings.empty()) {
    v.set_type = SetType::kString;
    for (const std::string& s : a.strings) v.set.push_back(intern(s));
  } else if (!a.versions.empty()) {
    v.set_type = SetType::kVersion;
    for (const std::string& s : a.versions) v.set.push_back(intern(s));
  } else if (a.int_value) {
    v.set_type = SetType::kInt;
    v.set = {*a.int_value};
  } else if (a.bool_value) {
    v.set_type = SetType::kBool;
    v.set = {*a.bool_value ? 1 : 0};
  } else if (v.string_value) {
    v.set_type = SetType::kString;
    v.set = {*v.string_value};
  } else if (v.version_value) {
    v.set_type = SetType::kVersion;
    v.set = {*v.version_value};
  }
  std::sort(v.set.begin(), v.set.end());
  v.set.erase(std::unique(v.set.begin(), v.set.end()), v.set.end());
  return v;
}

std::vector<int64_t> ProblemBuilder::Encode(const AttributeValue& v) {
  std::vector<int64_t> key;
  key.push_back((v.int_value ? 1 : 0) | (v.bool_value ? 2 : 0) | (v.string_value ? 4 : 0) |
                (v.version_value ? 8 : 0));
  key.push_back(v.int_value.value_or(0));
  key.push_back(v.bool_value.value_or(false) ? 1 : 0);
  key.push_back(v.string_value.value_or(-1));
  key.push_back(v.version_value.value_or(-1));
  key.push_back(static_cast<int64_t>(v.set_type));
  key.insert(key.end(), v.set.begin(), v.set.end());
  return key;
}

}  // namespace draplane::allocator::internal
