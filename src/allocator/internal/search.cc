#include "allocator/internal/search.h"

#include <fmt/core.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "allocator/internal/constraints.h"
#include "common/check.h"

namespace draplane::allocator::internal {
namespace {

// The return values of upstream's allocateOne: (true, nil), (false, nil),
// (false, errAllocationResultMaxSizeExceeded), and (false, any other error).
enum class Ret : uint8_t { kNo, kYes, kMaxSize, kError };

constexpr char kSharedDetail[] = "a share of it is allocated";

Status StepLimitError(int64_t steps) {
  return ResourceExhaustedError(fmt::format(
      "allocation search stopped after {} steps (the allocation step limit) without deciding "
      "whether the claims fit on this node",
      steps));
}

struct VectorHash {
  size_t operator()(const std::vector<uint64_t>& v) const {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ v.size();
    for (uint64_t x : v) {
      h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdULL;
      h ^= h >> 32;
    }
    return static_cast<size_t>(h);
  }
};

struct MemoValue {
  Ret ret;
  bool dirty;  // a max-size return happened inside the subtree
};

// One tentatively allocated device, with what is needed to undo it (upstream's
// deviceRollbackState).
struct Entry {
  DeviceChoice choice;
  uint32_t prev_mark = kNone;
  bool marked = false;
  bool counters_reserved = false;
  uint32_t groups_pushed = 0;  // records on the compatibility-group undo stack
  bool policies_added = false;
};

class Searcher {
 public:
  Searcher(const Problem& problem, const SearchOptions& options)
      : p_(problem), o_(options), f_(options.features) {
    size_t n = p_.devices.size();
    use_count_.assign(n, 0);
    last_mark_.assign(n, kNone);
    share_count_.assign(n, 0);
    cap_offset_.resize(n + 1, 0);
    for (size_t d = 0; d < n; ++d) {
      cap_offset_[d + 1] = cap_offset_[d] + static_cast<uint32_t>(p_.devices[d].capacities.size());
    }
    allocating_.resize(cap_offset_[n]);
    consumed_.resize(p_.counters.size());
    groups_.reserve(p_.counter_sets.size());
    for (const CounterSetGroups& set : p_.counter_sets) groups_.push_back(set.allocated);
    results_.resize(p_.claims.size());
    selected_.resize(p_.claims.size());
    constraints_.resize(p_.claims.size());
    for (size_t c = 0; c < p_.claims.size(); ++c) {
      const Claim& claim = p_.claims[c];
      selected_[c].assign(claim.requests.size(), -1);
      for (const Constraint& constraint : claim.constraints) {
        constraints_[c].emplace_back(&constraint, &p_.values, f_.list_type_attributes);
      }
    }
    // Policies only refuse more, so the count bound stays exact under them; symmetry and the
    // memo would also need the policies' view of devices and state, which they do not expose.
    prune_ = o_.prune && PruningIsExact();
    symmetry_ = prune_ && o_.policies.empty();
    size_t total_requests = 0;
    for (const Claim& claim : p_.claims) total_requests += claim.requests.size();
    memo_enabled_ = symmetry_ && total_requests > 1;
    stats_.pruning_enabled = prune_;
  }

  StatusOr<SearchResult> Run() {
    Ret ret = Fresh(0, 0, 0, false);
    if (ret == Ret::kYes && !o_.policies.empty()) {
      // Policies see every accepted device removed again, the solution's included (policy.h).
      for (size_t c = results_.size(); c-- > 0;) {
        for (size_t i = results_[c].size(); i-- > 0;) {
          const Entry& e = results_[c][i];
          RemovePolicies(static_cast<uint32_t>(c), p_.keys[e.choice.key], e.choice.device,
                         e.choice.shared, e.choice.plan, o_.policies.size());
        }
      }
    }
    SearchResult result;
    result.stats = stats_;
    result.stats.memo_entries = static_cast<int64_t>(memo_.size());
    switch (ret) {
      case Ret::kYes:
        result.solved = true;
        for (size_t c = 0; c < results_.size(); ++c) {
          result.choices.emplace_back();
          for (const Entry& e : results_[c]) result.choices.back().push_back(e.choice);
        }
        result.selected_subrequest = selected_;
        return result;
      case Ret::kNo:
        return result;
      case Ret::kMaxSize:
        // Upstream returns errAllocationResultMaxSizeExceeded unwrapped when it escapes the
        // first claim.
        return FailedPreconditionError("allocation max size exceeded");
      case Ret::kError:
        return error_;
    }
    return InternalError("unreachable search result");
  }

 private:
  // Pruning is exact unless the search itself can produce an error: a candidate whose selectors
  // failed with an error, or an `All` request under a claim constraint (the `must` error).
  bool PruningIsExact() const {
    for (const RequestKey& key : p_.keys) {
      for (const Candidate& c : key.candidates) {
        if (c.error != kNone) return false;
      }
      if (key.all_mode && key.constraint_scope != 0) return false;
    }
    for (const Claim& claim : p_.claims) {
      for (const Constraint& constraint : claim.constraints) {
        for (const DerivedValues& derived : constraint.derived) {
          for (uint32_t error : derived.error_of_device) {
            if (error != kNone) return false;
          }
        }
      }
    }
    return true;
  }

  // The value constraint `k` of claim `c` sees for device `d` chosen by `key_index`: a derived
  // attribute of the key when it defines one, else the device's attribute. `error` is set (an
  // index into Problem::errors) when evaluating the derived attribute failed.
  uint32_t ConstraintValue(uint32_t c, size_t k, uint32_t key_index, DeviceIndex d,
                           uint32_t* error) const {
    const Constraint& constraint = p_.claims[c].constraints[k];
    *error = kNone;
    if (const DerivedValues* derived = constraint.DerivedFor(key_index)) {
      *error = derived->error_of_device[d];
      return derived->value_of_device[d];
    }
    return constraint.value_of_device[d];
  }

  bool InUse(DeviceIndex d) const { return p_.devices[d].allocated || use_count_[d] > 0; }
  bool MarkedByClaim(DeviceIndex d, uint32_t c) const {
    return use_count_[d] > 0 && last_mark_[d] == c;
  }
  bool Unused(DeviceIndex d) const { return use_count_[d] == 0 && share_count_[d] == 0; }
  // upstream deviceCapacityInUse with kubernetes#140437: consumed capacity or a share of the
  // device is recorded outside this attempt (a share may be recorded by its ID alone) or taken by
  // this attempt.
  bool SharedOrCapacityInUse(DeviceIndex d) const {
    const Device& dev = p_.devices[d];
    return dev.capacity_in_use || dev.shared_in_use || share_count_[d] > 0;
  }
  bool Multi(const Device& dev) const { return f_.consumable_capacity && dev.multi_allocatable; }

  void Reject(uint32_t key, DeviceIndex d, Reason reason, const std::string& detail) {
    if (o_.observer != nullptr) o_.observer->Rejected(key, d, reason, detail);
  }

  // --- capacity ---------------------------------------------------------------------------

  // Returns kNone when the plan fits, otherwise the index of the capacity that does not (or
  // kNone - 1 for an unusable plan).
  uint32_t CapacityMisfit(const Candidate& cand) const {
    if (cand.plan == kNone) return kNone;
    const CapacityPlan& plan = p_.plans[cand.plan];
    if (!plan.usable) return kNone - 1;
    const Device& dev = p_.devices[cand.device];
    uint32_t base = cap_offset_[cand.device];
    for (size_t i = 0; i < dev.capacities.size(); ++i) {
      const DeviceCapacity& cap = dev.capacities[i];
      api::Quantity total = cap.allocated.Add(allocating_[base + i]).Add(plan.consumed[i]);
      if (total.Compare(cap.value) > 0) return static_cast<uint32_t>(i);
    }
    return kNone;
  }

  // The reason for a capacity misfit: a plan that can never fit the device is told apart from a
  // device that is full now.
  Reason CapacityReason(const Candidate& cand, uint32_t misfit) const {
    return misfit == kNone - 1 && p_.plans[cand.plan].unservable ? Reason::kCapacityUnservable
                                                                 : Reason::kCapacity;
  }

  std::string CapacityDetail(const Candidate& cand, uint32_t misfit) const {
    if (misfit == kNone - 1) return p_.plans[cand.plan].why;
    const Device& dev = p_.devices[cand.device];
    const DeviceCapacity& cap = dev.capacities[misfit];
    api::Quantity used = cap.allocated.Add(allocating_[cap_offset_[cand.device] + misfit]);
    return fmt::format("capacity {}: needs {}, {} of {} already consumed", cap.name,
                       p_.plans[cand.plan].consumed[misfit].ToString(), used.ToString(),
                       cap.value.ToString());
  }

  void AddShare(const Candidate& cand, int sign) {
    const CapacityPlan& plan = p_.plans[cand.plan];
    uint32_t base = cap_offset_[cand.device];
    for (size_t i = 0; i < plan.consumed.size(); ++i) {
      api::Quantity& slot = allocating_[base + i];
      slot = sign > 0 ? slot.Add(plan.consumed[i]) : slot.Sub(plan.consumed[i]);
    }
  }

  // --- counters ---------------------------------------------------------------------------

  // upstream checkAvailableCounters: adds the device's consumption, then requires every counter
  // of the pool to stay within its availability. Counters the device does not touch were within
  // availability before (every reservation is checked), unless the pool is overcommitted by
  // allocations outside this attempt. Returns kNone on success (consumption kept), else the index
  // of the counter that would be oversold (consumption removed).
  uint32_t ReserveCounters(DeviceIndex d) {
    const Device& dev = p_.devices[d];
    const Pool& pool = p_.pools[dev.pool];
    if (pool.overcommitted) {
      for (uint32_t i = 0; i < pool.num_counters; ++i) {
        uint32_t counter = pool.first_counter + i;
        if (p_.counters[counter].available.Sign() < 0) return counter;
      }
    }
    for (const CounterUse& use : dev.counter_uses) {
      consumed_[use.counter] = consumed_[use.counter].Add(use.amount);
    }
    for (const CounterUse& use : dev.counter_uses) {
      if (p_.counters[use.counter].available.Compare(consumed_[use.counter]) < 0) {
        uint32_t failed = use.counter;
        ReleaseCounters(d);
        return failed;
      }
    }
    return kNone;
  }

  void ReleaseCounters(DeviceIndex d) {
    for (const CounterUse& use : p_.devices[d].counter_uses) {
      consumed_[use.counter] = consumed_[use.counter].Sub(use.amount);
    }
  }

  // --- compatibility groups ---------------------------------------------------------------

  // upstream checkCompatibilityGroups: every counter set the device consumes must admit it; then
  // its groups join each set's state (undo records pushed, counted in `pushed`). Returns the use
  // that does not fit (state unchanged), or null.
  const GroupUse* AdmitGroups(DeviceIndex d, uint32_t* pushed) {
    const Device& dev = p_.devices[d];
    for (const GroupUse& use : dev.group_uses) {
      if (!GroupsAdmit(groups_[use.counter_set], use.groups)) return &use;
    }
    for (const GroupUse& use : dev.group_uses) {
      groups_undo_.emplace_back(use.counter_set, groups_[use.counter_set]);
      FoldGroups(groups_[use.counter_set], use.groups);
      ++*pushed;
    }
    return nullptr;
  }

  void UndoGroups(uint32_t records) {
    for (; records > 0; --records) {
      groups_[groups_undo_.back().first] = std::move(groups_undo_.back().second);
      groups_undo_.pop_back();
    }
  }

  std::string GroupNames(const std::vector<uint32_t>& groups) const {
    std::string out = "[";
    for (size_t i = 0; i < groups.size(); ++i) {
      if (i > 0) out += ", ";
      out += p_.group_names[groups[i]];
    }
    return out + "]";
  }

  std::string GroupDetail(const GroupUse& use) const {
    const GroupState& state = groups_[use.counter_set];
    std::string held = state.grouped ? "groups " + GroupNames(state.groups) : "";
    if (state.ungrouped) held += held.empty() ? "ungrouped devices" : " and ungrouped devices";
    return fmt::format("counter set {}: the device has {}, the counter set is used by {}",
                       p_.counter_sets[use.counter_set].name,
                       use.groups.empty() ? "no groups" : "groups " + GroupNames(use.groups), held);
  }

  std::string CounterDetail(DeviceIndex d, uint32_t counter) const {
    const Counter& c = p_.counters[counter];
    api::Quantity needs;
    for (const CounterUse& use : p_.devices[d].counter_uses) {
      if (use.counter == counter) needs = needs.Add(use.amount);
    }
    return fmt::format(
        "counter set {} counter {}: needs {}, {} left of {} available ({} taken by this attempt)",
        c.set, c.name, needs.ToString(), c.available.Sub(consumed_[counter]).ToString(),
        c.available.ToString(), consumed_[counter].ToString());
  }

  // --- constraints and policies -----------------------------------------------------------

  PolicyCandidate MakePolicyCandidate(uint32_t c, const RequestKey& key, DeviceIndex d, bool shared,
                                      uint32_t plan, std::string& request_name) const {
    request_name = key.FullName();
    const Device& dev = p_.devices[d];
    const Pool& pool = p_.pools[dev.pool];
    return PolicyCandidate{
        .claim_index = static_cast<int>(c),
        .claim = p_.claims[c].name,
        .request = request_name,
        .device_class = key.device_class,
        .driver = pool.driver,
        .pool = pool.name,
        .device = dev.name,
        .admin_access = key.admin_access,
        .shared = shared,
        .facts = d < p_.facts.size() ? p_.facts[d] : nullptr,
        .consumed = shared && plan < p_.plan_consumed.size() ? &p_.plan_consumed[plan] : nullptr};
  }

  // Whether the request could get its devices in this branch if no policy refused them. A policy
  // is asked about a request only then: where devices are missing it fails whatever a policy
  // says, and the scheduler counts and explains a policy's refusals per node (a quota did not
  // keep an H100 from a node that has none, or whose H100s are all taken). O(candidates).
  bool EnoughAvailable(uint32_t c, const RequestKey& key) const {
    if (key.all_mode) {
      return std::all_of(key.all_devices.begin(), key.all_devices.end(), [&](const Candidate& d) {
        return Unavailable(key, c, d) == Reason::kNone;
      });
    }
    int available = 0;
    for (const Candidate& cand : key.candidates) {
      if (Unavailable(key, c, cand) == Reason::kNone && ++available >= key.num_devices) {
        return true;
      }
    }
    return available >= key.num_devices;
  }

  // Fewer of the request's candidates from `start` (All: of its devices) are available in this
  // branch than the `needed` it still needs: explains why (each unavailable one by its reason,
  // the others as not enough) and returns kNo.
  Ret TooFewAvailable(uint32_t c, uint32_t key_index, size_t start, int needed) {
    const RequestKey& key = p_.keys[key_index];
    if (o_.observer == nullptr) return Ret::kNo;
    const std::vector<Candidate>& candidates = key.all_mode ? key.all_devices : key.candidates;
    const size_t n = candidates.size();
    int usable = 0;
    for (size_t pos = start; pos < n; ++pos) {
      if (Unavailable(key, c, candidates[pos]) == Reason::kNone) ++usable;
    }
    std::string detail =
        fmt::format("{} more device(s) needed, {} usable candidate(s) left", needed, usable);
    for (size_t pos = start; pos < n; ++pos) {
      Reason why = Unavailable(key, c, candidates[pos]);
      if (why == Reason::kNone) {
        Reject(key_index, candidates[pos].device, Reason::kNotEnoughCandidates, detail);
      } else {
        Reject(key_index, candidates[pos].device, why, UnavailableDetail(why, candidates[pos]));
      }
    }
    return Ret::kNo;
  }

  // upstream has no such step: a policy may refuse a whole request before its devices are tried
  // (policy.h), where the node has enough devices for it (EnoughAvailable). kNo when one does.
  Ret CheckRequestPolicies(uint32_t c, uint32_t key_index) {
    const RequestKey& key = p_.keys[key_index];
    std::string request_name = key.FullName();
    PolicyRequest request{.claim_index = static_cast<int>(c),
                          .claim = p_.claims[c].name,
                          .request = request_name,
                          .device_class = key.device_class,
                          .count = key.num_devices,
                          .admin_access = key.admin_access};
    for (PolicyConstraint* policy : o_.policies) {
      std::optional<PolicyRejection> why = policy->CheckRequest(request);
      if (!why.has_value()) continue;
      ++stats_.policy_rejections;
      if (o_.observer != nullptr) {
        // A device that could not be taken anyway (allocated to another claim, out of counters,
        // tainted) is explained by that: raising the quota would not give it. Reasons of this
        // search's own branch (in use by this attempt, capacity it has taken) are not final.
        for (const Candidate& cand : key.all_mode ? key.all_devices : key.candidates) {
          const Reason unavailable = Unavailable(key, c, cand);
          if (unavailable == Reason::kAllocated || unavailable == Reason::kCounters ||
              unavailable == Reason::kTaintNotTolerated ||
              unavailable == Reason::kPartitionableDevicesDisabled ||
              unavailable == Reason::kCapacityUnservable) {
            Reject(key_index, cand.device, unavailable, UnavailableDetail(unavailable, cand));
          } else {
            o_.observer->PolicyRejected(key_index, cand.device, *why);
          }
        }
      }
      return Ret::kNo;
    }
    return Ret::kYes;
  }

  void RemoveConstraints(uint32_t c, const RequestKey& key, size_t added) {
    for (size_t k = added; k-- > 0;) {
      if ((key.constraint_scope >> k) & 1) constraints_[c][k].Remove();
    }
  }

  void RemovePolicies(uint32_t c, const RequestKey& key, DeviceIndex d, bool shared, uint32_t plan,
                      size_t added) {
    std::string request_name;
    PolicyCandidate candidate = MakePolicyCandidate(c, key, d, shared, plan, request_name);
    for (size_t k = added; k-- > 0;) o_.policies[k]->Remove(candidate);
  }

  std::string ConstraintDetail(uint32_t c, size_t k, uint32_t key_index, DeviceIndex d) const {
    const Constraint& constraint = p_.claims[c].constraints[k];
    const ConstraintState& state = constraints_[c][k];
    const char* kind =
        constraint.kind == Constraint::Kind::kMatch ? "matchAttribute" : "distinctAttribute";
    uint32_t unused_error;
    uint32_t value = ConstraintValue(c, k, key_index, d, &unused_error);
    if (value == kNone) {
      return fmt::format("{} {}: the device does not have the attribute", kind,
                         constraint.attribute);
    }
    std::string held;
    if (constraint.kind == Constraint::Kind::kMatch) {
      if (f_.list_type_attributes && !state.intersections().empty()) {
        // Render the current intersection with the element type of the held values.
        AttributeValue probe;
        probe.set_type = state.set_type();
        probe.set = state.intersections().back();
        held = p_.RenderSet(probe);
      } else if (state.first_value() != kNone) {
        held = p_.RenderValue(state.first_value());
      }
      return fmt::format("{} {}: value {} does not match {}", kind, constraint.attribute,
                         p_.RenderValue(value), held.empty() ? "<unknown type>" : held);
    }
    for (size_t i = 0; i < state.held_values().size(); ++i) {
      if (i > 0) held += ", ";
      held += p_.RenderValue(state.held_values()[i]);
    }
    return fmt::format("{} {}: value {} is not distinct from {}", kind, constraint.attribute,
                       p_.RenderValue(value), held);
  }

  // --- allocateDevice ---------------------------------------------------------------------

  // upstream allocateDevice: checks the candidate against the dynamic state and, if it can be
  // used, records it as allocated. kNo leaves the state unchanged; kError sets error_.
  Ret AllocateDevice(uint32_t c, uint32_t key_index, const Candidate& cand, bool must) {
    ++stats_.devices_tried;
    const RequestKey& key = p_.keys[key_index];
    DeviceIndex d = cand.device;
    const Device& dev = p_.devices[d];
    bool multi = Multi(dev);
    if (!multi && key.admin_access && MarkedByClaim(d, c)) {
      Reject(key_index, d, Reason::kInUseByThisClaim, "");
      return Ret::kNo;
    }
    if (!key.admin_access && InUse(d)) {
      Reject(key_index, d, dev.allocated ? Reason::kAllocated : Reason::kInUseByThisAttempt, "");
      return Ret::kNo;
    }
    // A device that does not allow multiple allocations is not handed out while a share of it
    // is live: its slice may have turned allowMultipleAllocations off since (kubernetes#140797,
    // fixed by #140798).
    if (!key.admin_access && !multi && SharedOrCapacityInUse(d)) {
      Reject(key_index, d, Reason::kAllocated, kSharedDetail);
      return Ret::kNo;
    }
    if (!f_.partitionable_devices && dev.consumes_counters) {
      Reject(key_index, d, Reason::kPartitionableDevicesDisabled, "");
      return Ret::kNo;
    }
    // A multi-allocatable device already shared has had its counters charged, also when the
    // share is recorded by its ID alone (kubernetes#140433, fixed by #140437).
    bool skip_counters = multi && SharedOrCapacityInUse(d);
    bool reserved = false;
    if (!skip_counters && dev.consumes_counters) {
      uint32_t failed = ReserveCounters(d);
      if (failed != kNone) {
        if (o_.observer != nullptr)
          Reject(key_index, d, Reason::kCounters, CounterDetail(d, failed));
        return Ret::kNo;
      }
      reserved = true;
    }
    // Compatibility groups are checked with the counters they qualify (KEP-5963).
    uint32_t compat_pushed = 0;
    if (reserved && f_.device_compatibility_groups && !dev.group_uses.empty()) {
      const GroupUse* clash = AdmitGroups(d, &compat_pushed);
      if (clash != nullptr) {
        ReleaseCounters(d);
        if (o_.observer != nullptr) {
          Reject(key_index, d, Reason::kCompatibilityGroups, GroupDetail(*clash));
        }
        return Ret::kNo;
      }
    }
    if (f_.device_taints && cand.taint_blocked) {
      UndoGroups(compat_pushed);
      if (reserved) ReleaseCounters(d);
      Reject(key_index, d, Reason::kTaintNotTolerated, cand.taint);
      return Ret::kNo;
    }
    std::vector<ConstraintState>& states = constraints_[c];
    for (size_t k = 0; k < states.size(); ++k) {
      if (((key.constraint_scope >> k) & 1) == 0) continue;
      uint32_t derived_error;
      const uint32_t value = ConstraintValue(c, k, key_index, d, &derived_error);
      if (derived_error != kNone) {
        // Like a selector's runtime error, a derived attribute that cannot be evaluated aborts
        // the allocation (KEP-6080).
        RemoveConstraints(c, key, k);
        UndoGroups(compat_pushed);
        if (reserved) ReleaseCounters(d);
        error_ = FailedPreconditionError(p_.errors[derived_error]);
        return Ret::kError;
      }
      if (!states[k].AddValue(value)) {
        std::string detail;
        if (o_.observer != nullptr || must) detail = ConstraintDetail(c, k, key_index, d);
        RemoveConstraints(c, key, k);
        UndoGroups(compat_pushed);
        if (reserved) ReleaseCounters(d);
        if (must) {
          // It does not make sense to declare a claim where a constraint prevents getting all
          // devices: upstream treats this as an error.
          error_ = FailedPreconditionError(fmt::format(
              "claim {}, request {}: cannot add device {} because a claim constraint would not be "
              "satisfied",
              p_.claims[c].name, key.name, p_.DeviceId(d)));
          return Ret::kError;
        }
        Reject(key_index, d, Reason::kConstraint, detail);
        return Ret::kNo;
      }
    }
    Entry entry;
    entry.choice.key = key_index;
    entry.choice.device = d;
    entry.counters_reserved = reserved;
    entry.groups_pushed = compat_pushed;
    if (!multi) {
      entry.marked = true;
      entry.prev_mark = last_mark_[d];
      last_mark_[d] = c;
      ++use_count_[d];
    }
    if (f_.consumable_capacity) {
      uint32_t misfit = CapacityMisfit(cand);
      if (misfit != kNone) {
        std::string detail = o_.observer != nullptr ? CapacityDetail(cand, misfit) : "";
        Undo(c, entry);
        Reject(key_index, d, CapacityReason(cand, misfit), detail);
        return Ret::kNo;
      }
      if (multi) {
        ++share_count_[d];
        AddShare(cand, +1);
        entry.choice.shared = true;
        entry.choice.plan = cand.plan;
      }
    }
    if (!o_.policies.empty()) {
      std::string request_name;
      PolicyCandidate candidate =
          MakePolicyCandidate(c, key, d, entry.choice.shared, entry.choice.plan, request_name);
      for (size_t k = 0; k < o_.policies.size(); ++k) {
        std::optional<PolicyRejection> why = o_.policies[k]->Add(candidate);
        if (why.has_value()) {
          ++stats_.policy_rejections;
          for (size_t j = k; j-- > 0;) o_.policies[j]->Remove(candidate);
          Undo(c, entry);
          if (o_.observer != nullptr) o_.observer->PolicyRejected(key_index, d, *why);
          return Ret::kNo;
        }
      }
      entry.policies_added = true;
    }
    results_[c].push_back(entry);
    if (o_.observer != nullptr) o_.observer->Chosen(key_index, d);
    return Ret::kYes;
  }

  // Reverses an entry's effects except the results list (upstream rollbackDevice).
  void Undo(uint32_t c, const Entry& e) {
    const RequestKey& key = p_.keys[e.choice.key];
    DeviceIndex d = e.choice.device;
    if (e.choice.shared) {
      --share_count_[d];
      Candidate cand;
      cand.device = d;
      cand.plan = e.choice.plan;
      AddShare(cand, -1);
    }
    if (e.marked) {
      last_mark_[d] = e.prev_mark;
      --use_count_[d];
    }
    if (e.policies_added) {
      RemovePolicies(c, key, d, e.choice.shared, e.choice.plan, o_.policies.size());
    }
    RemoveConstraints(c, key, constraints_[c].size());
    UndoGroups(e.groups_pushed);
    if (e.counters_reserved) ReleaseCounters(d);
  }

  void Rollback(uint32_t c) {
    Entry e = results_[c].back();
    results_[c].pop_back();
    Undo(c, e);
  }

  // --- bounds -----------------------------------------------------------------------------

  // Whether a candidate could still be taken by the key in the current state, as far as the
  // checks without side effects can tell: kNone when it could, else the reason it cannot.
  Reason Unavailable(const RequestKey& key, uint32_t c, const Candidate& cand) const {
    DeviceIndex d = cand.device;
    const Device& dev = p_.devices[d];
    if (key.admin_access) {
      if (!Multi(dev) && MarkedByClaim(d, c)) return Reason::kInUseByThisClaim;
    } else if (InUse(d)) {
      return dev.allocated ? Reason::kAllocated : Reason::kInUseByThisAttempt;
    } else if (!Multi(dev) && SharedOrCapacityInUse(d)) {
      return Reason::kAllocated;
    }
    if (f_.consumable_capacity) {
      if (uint32_t misfit = CapacityMisfit(cand); misfit != kNone) {
        return CapacityReason(cand, misfit);
      }
    }
    if (dev.consumes_counters) {
      if (!f_.partitionable_devices) return Reason::kPartitionableDevicesDisabled;
      bool skip = Multi(dev) && SharedOrCapacityInUse(d);
      if (p_.pools[dev.pool].overcommitted && !skip) return Reason::kCounters;
    }
    if (f_.device_taints && cand.taint_blocked) return Reason::kTaintNotTolerated;
    return Reason::kNone;
  }

  // The words for a reason Unavailable gave, for explanations.
  std::string UnavailableDetail(Reason reason, const Candidate& cand) const {
    switch (reason) {
      case Reason::kCapacity:
      case Reason::kCapacityUnservable:
        return CapacityDetail(cand, CapacityMisfit(cand));
      case Reason::kTaintNotTolerated:
        return cand.taint;
      case Reason::kCounters:
        return "a counter of the pool is already overcommitted";
      case Reason::kAllocated:
        return p_.devices[cand.device].allocated ? "" : kSharedDetail;
      default:
        return "";
    }
  }

  // --- memo -------------------------------------------------------------------------------

  void BuildMemoKey(uint32_t c, uint32_t r, int s, bool in_sub) {
    key_.clear();
    key_.push_back(c);
    key_.push_back(r);
    key_.push_back(in_sub ? static_cast<uint64_t>(s) + 1 : 0);
    key_.push_back(results_[c].size());
    for (const ConstraintState& state : constraints_[c]) state.AppendKey(key_);
    auto append_events = [&](uint32_t from, uint32_t to) {
      events_.clear();
      for (uint32_t claim = from; claim < to; ++claim) {
        for (const Entry& e : results_[claim]) {
          uint64_t flags =
              (e.marked ? 1 : 0) | (e.counters_reserved ? 2 : 0) | (e.choice.shared ? 4 : 0);
          uint64_t plan = e.choice.shared ? e.choice.plan : kNone;
          events_.emplace_back((static_cast<uint64_t>(e.choice.device) << 32) | plan, flags);
        }
      }
      std::sort(events_.begin(), events_.end());
      key_.push_back(events_.size());
      for (const auto& [a, b] : events_) {
        key_.push_back(a);
        key_.push_back(b);
      }
    };
    append_events(0, c);
    append_events(c, c + 1);
  }

  // Enters a request (or subrequest) with a fresh start location, consulting the memo of
  // infeasible sub-states.
  Ret Fresh(uint32_t c, uint32_t r, int s, bool in_sub) {
    if (!memo_enabled_ || c >= p_.claims.size() || r >= p_.claims[c].requests.size()) {
      return AllocateOne(c, r, s, 0, in_sub, 0);
    }
    BuildMemoKey(c, r, s, in_sub);
    auto it = memo_.find(key_);
    if (it != memo_.end()) {
      ++stats_.memo_hits;
      if (it->second.dirty) ++max_size_events_;
      return it->second.ret;
    }
    std::vector<uint64_t> key = key_;
    int64_t events_before = max_size_events_;
    Ret ret = AllocateOne(c, r, s, 0, in_sub, 0);
    if ((ret == Ret::kNo || ret == Ret::kMaxSize) && memo_.size() < o_.memo_limit) {
      memo_.emplace(std::move(key), MemoValue{ret, max_size_events_ != events_before});
    }
    return ret;
  }

  // --- allocateOne ------------------------------------------------------------------------

  Ret AllocateOne(uint32_t c, uint32_t r, int s, int i, bool in_sub, uint32_t start) {
    if (++stats_.allocate_one_calls > o_.max_steps && o_.max_steps > 0) {
      error_ = StepLimitError(o_.max_steps);
      return Ret::kError;
    }
    if (c >= p_.claims.size()) return Ret::kYes;
    const Claim& claim = p_.claims[c];
    if (r >= claim.requests.size()) {
      // Done with the claim, continue with the next one. Running out of room further on is not
      // a reason to give up this claim's choices: another subrequest choice of a later claim
      // may need fewer devices.
      Ret ret = Fresh(c + 1, 0, 0, false);
      return ret == Ret::kMaxSize ? Ret::kNo : ret;
    }
    const Request& request = claim.requests[r];
    if (!in_sub && request.has_subrequests) {
      bool all_exceeded = true;
      for (size_t sub = 0; sub < request.keys.size(); ++sub) {
        Ret ret = Fresh(c, r, static_cast<int>(sub), true);
        if (ret == Ret::kMaxSize) continue;  // a later subrequest may need fewer devices
        all_exceeded = false;
        if (ret == Ret::kError) return ret;
        if (ret == Ret::kYes) {
          selected_[c][r] = static_cast<int>(sub);
          return Ret::kYes;
        }
      }
      if (all_exceeded) {
        ++max_size_events_;
        return Ret::kMaxSize;
      }
      return Ret::kNo;
    }
    uint32_t key_index = request.keys[in_sub ? static_cast<size_t>(s) : 0];
    const RequestKey& key = p_.keys[key_index];
    if (key.all_mode && key.all_devices.empty()) return Ret::kNo;
    if (i >= key.num_devices) return Fresh(c, r + 1, 0, false);
    if (static_cast<int>(results_[c].size()) + key.num_devices - i > kAllocationResultsMaxSize) {
      ++max_size_events_;
      return Ret::kMaxSize;
    }
    if (key.all_mode) {
      if (i == 0 && !o_.policies.empty()) {
        if (!EnoughAvailable(c, key)) return TooFewAvailable(c, key_index, 0, key.num_devices);
        if (CheckRequestPolicies(c, key_index) == Ret::kNo) return Ret::kNo;
      }
      // The devices are known; the order does not matter, so only the next one is tried.
      Ret ok = AllocateDevice(c, key_index, key.all_devices[static_cast<size_t>(i)], true);
      if (ok != Ret::kYes) return ok;
      Ret ret = AllocateOne(c, r, s, i + 1, in_sub, 0);
      if (ret != Ret::kYes) Rollback(c);
      return ret;
    }
    return ExactCount(c, r, s, i, in_sub, start, key_index);
  }

  Ret ExactCount(uint32_t c, uint32_t r, int s, int i, bool in_sub, uint32_t start,
                 uint32_t key_index) {
    const RequestKey& key = p_.keys[key_index];
    const std::vector<Candidate>& candidates = key.candidates;
    const size_t n = candidates.size();
    const int needed = key.num_devices - i;
    if (prune_) {
      size_t left = start < n ? n - start : 0;
      int available = 0;
      if (left >= static_cast<size_t>(needed)) {
        for (size_t pos = start; pos < n && available < needed; ++pos) {
          if (Unavailable(key, c, candidates[pos]) == Reason::kNone) ++available;
        }
      }
      if (available < needed) {
        ++stats_.count_bound_prunes;
        return TooFewAvailable(c, key_index, start, needed);
      }
    }
    // The policies are asked about the request once, before its first device, and only where the
    // node could serve it (with pruning on, the bound above has just made sure of that).
    if (i == 0 && !o_.policies.empty()) {
      if (!prune_ && !EnoughAvailable(c, key)) return TooFewAvailable(c, key_index, start, needed);
      if (CheckRequestPolicies(c, key_index) == Ret::kNo) return Ret::kNo;
    }
    // Classes of interchangeable devices whose subtree at this position failed cleanly while
    // the device was unused (§4.1 symmetry).
    uint32_t failed_inline[8];
    std::vector<uint32_t> failed_overflow;
    size_t num_failed = 0;
    auto failed_contains = [&](uint32_t cls) {
      for (size_t k = 0; k < num_failed && k < 8; ++k) {
        if (failed_inline[k] == cls) return true;
      }
      return std::find(failed_overflow.begin(), failed_overflow.end(), cls) !=
             failed_overflow.end();
    };
    auto failed_add = [&](uint32_t cls) {
      if (cls == kNone || failed_contains(cls)) return;
      if (num_failed < 8) {
        failed_inline[num_failed] = cls;
      } else {
        failed_overflow.push_back(cls);
      }
      ++num_failed;
    };

    for (uint32_t pos = start; pos < n; ++pos) {
      const Candidate& cand = candidates[pos];
      DeviceIndex d = cand.device;
      const Device& dev = p_.devices[d];
      // Checking for "in use" is cheap and thus done first.
      if (key.admin_access) {
        if (MarkedByClaim(d, c)) {
          Reject(key_index, d, Reason::kInUseByThisClaim, "");
          continue;
        }
      } else if (InUse(d)) {
        Reject(key_index, d, dev.allocated ? Reason::kAllocated : Reason::kInUseByThisAttempt, "");
        continue;
      }
      if (cand.error != kNone) {
        error_ = FailedPreconditionError(p_.errors[cand.error]);
        return Ret::kError;
      }
      if (f_.consumable_capacity) {
        uint32_t misfit = CapacityMisfit(cand);
        if (misfit != kNone) {
          if (o_.observer != nullptr) {
            Reject(key_index, d, CapacityReason(cand, misfit), CapacityDetail(cand, misfit));
          }
          continue;
        }
      }
      const bool unused = symmetry_ && Unused(d);
      if (unused && failed_contains(dev.symmetry_class)) {
        ++stats_.symmetry_skips;
        Reject(key_index, d, Reason::kEquivalentTried, "");
        continue;
      }
      const int64_t events_before = max_size_events_;
      Ret ok = AllocateDevice(c, key_index, cand, false);
      if (ok == Ret::kError) return ok;
      if (ok == Ret::kNo) {
        if (unused) failed_add(dev.symmetry_class);
        continue;
      }
      // This is the allocation attempt for the next device of the same request; it starts after
      // this device, so combinations rather than permutations are tried.
      Ret ret = AllocateOne(c, r, s, i + 1, in_sub, pos + 1);
      if (ret == Ret::kYes) return ret;
      Rollback(c);
      if (ret != Ret::kNo) return ret;  // max size exceeded or an error: stop here
      if (unused && max_size_events_ == events_before) failed_add(dev.symmetry_class);
    }
    return Ret::kNo;
  }

  const Problem& p_;
  const SearchOptions& o_;
  const Features f_;
  bool prune_ = false;
  bool symmetry_ = false;
  bool memo_enabled_ = false;

  std::vector<uint32_t> use_count_;
  std::vector<uint32_t> last_mark_;
  std::vector<uint32_t> share_count_;
  std::vector<uint32_t> cap_offset_;
  std::vector<api::Quantity> allocating_;
  std::vector<api::Quantity> consumed_;
  std::vector<GroupState> groups_;  // per Problem::counter_sets
  std::vector<std::pair<uint32_t, GroupState>> groups_undo_;
  std::vector<std::vector<Entry>> results_;
  std::vector<std::vector<ConstraintState>> constraints_;
  std::vector<std::vector<int>> selected_;

  int64_t max_size_events_ = 0;
  Status error_;
  SearchStats stats_;
  std::unordered_map<std::vector<uint64_t>, MemoValue, VectorHash> memo_;
  std::vector<uint64_t> key_;
  std::vector<std::pair<uint64_t, uint64_t>> events_;
};

}  // namespace

StatusOr<SearchResult> Search(const Problem& problem, const SearchOptions& options) {
  Searcher searcher(problem, options);
  return searcher.Run();
}

}  // namespace draplane::allocator::internal
