#include "allocator/internal/problem.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>

namespace draplane::allocator::internal {

std::string Problem::RenderSet(const AttributeValue& value) const {
  std::string out = "[";
  for (size_t i = 0; i < value.set.size(); ++i) {
    if (i > 0) out += ", ";
    int64_t v = value.set[i];
    switch (value.set_type) {
      case AttributeValue::SetType::kInt:
        out += std::to_string(v);
        break;
      case AttributeValue::SetType::kBool:
        out += v != 0 ? "true" : "false";
        break;
      case AttributeValue::SetType::kString:
        out += "\"" + interned[static_cast<size_t>(v)] + "\"";
        break;
      case AttributeValue::SetType::kVersion:
        out += interned[static_cast<size_t>(v)];
        break;
      case AttributeValue::SetType::kUnknown:
        break;
    }
  }
  return out + "]";
}

std::string Problem::RenderValue(uint32_t value_index) const {
  if (value_index == kNone) return "<absent>";
  const AttributeValue& v = values[value_index];
  if (v.string_value) return "\"" + interned[static_cast<size_t>(*v.string_value)] + "\"";
  if (v.int_value) return std::to_string(*v.int_value);
  if (v.bool_value) return *v.bool_value ? "true" : "false";
  if (v.version_value) return interned[static_cast<size_t>(*v.version_value)];
  if (v.set_type != AttributeValue::SetType::kUnknown) return RenderSet(v);
  return "<no value>";
}

bool GroupsAdmit(const GroupState& state, const std::vector<uint32_t>& groups) {
  if (groups.empty()) return !state.grouped;
  if (state.ungrouped) return false;
  if (!state.grouped) return true;
  return !SortedDisjoint(state.groups, groups);
}

void FoldGroups(GroupState& state, const std::vector<uint32_t>& groups) {
  if (groups.empty()) {
    state.ungrouped = true;
    return;
  }
  if (!state.grouped) {
    state.grouped = true;
    state.groups = groups;
    return;
  }
  std::vector<uint32_t> both;
  std::set_intersection(state.groups.begin(), state.groups.end(), groups.begin(), groups.end(),
                        std::back_inserter(both));
  state.groups = std::move(both);
}

void AssignSymmetryClasses(Problem& problem) {
  const size_t n = problem.devices.size();
  std::vector<std::vector<uint64_t>> features(n);
  // Quantities are compared by their canonical text: equal text means equal value, so devices
  // that share a class are truly interchangeable (the converse need not hold; that only costs
  // pruning).
  std::map<std::string, uint64_t> text_ids;
  auto text_id = [&](const std::string& text) {
    auto [it, inserted] = text_ids.emplace(text, text_ids.size());
    return it->second;
  };
  std::vector<uint64_t> plan_ids(problem.plans.size());
  for (size_t i = 0; i < problem.plans.size(); ++i) {
    const CapacityPlan& plan = problem.plans[i];
    std::string text = plan.usable ? "1" : "0";
    for (const api::Quantity& q : plan.consumed) text += "|" + q.ToString();
    plan_ids[i] = text_id(text);
  }
  // Each device's features are sized first (one allocation each instead of one per doubling:
  // a device is a candidate of several keys, three features per key).
  size_t per_constraints = 0;
  for (const Claim& claim : problem.claims) {
    for (const Constraint& constraint : claim.constraints) {
      per_constraints += 3 * constraint.derived.size() + 2;
    }
  }
  std::vector<size_t> sizes(n, per_constraints);
  for (size_t d = 0; d < n; ++d) {
    const Device& dev = problem.devices[d];
    sizes[d] += 3 + 2 * dev.capacities.size();
    for (const GroupUse& use : dev.group_uses) sizes[d] += 2 + use.groups.size();
    if (dev.consumes_counters) sizes[d] += 2 + 2 * dev.counter_uses.size();
  }
  for (const RequestKey& key : problem.keys) {
    for (const Candidate& c : key.candidates) sizes[c.device] += 3;
    for (const Candidate& c : key.all_devices) sizes[c.device] += 3;
  }
  for (size_t d = 0; d < n; ++d) features[d].reserve(sizes[d]);
  for (size_t d = 0; d < n; ++d) {
    const Device& dev = problem.devices[d];
    std::vector<uint64_t>& f = features[d];
    f.push_back((dev.multi_allocatable ? 1 : 0) | (dev.allocated ? 2 : 0) |
                (dev.capacity_in_use ? 4 : 0) | (dev.consumes_counters ? 8 : 0) |
                (dev.shared_in_use ? 16 : 0) | (dev.groups_unsupported ? 32 : 0));
    f.push_back(dev.group_uses.size());
    for (const GroupUse& use : dev.group_uses) {
      f.push_back(use.counter_set);
      f.push_back(use.groups.size());
      f.insert(f.end(), use.groups.begin(), use.groups.end());
    }
    if (dev.consumes_counters) {
      f.push_back(dev.pool);
      f.push_back(dev.counter_uses.size());
      for (const CounterUse& use : dev.counter_uses) {
        f.push_back(use.counter);
        f.push_back(text_id(use.amount.ToString()));
      }
    }
    f.push_back(dev.capacities.size());
    for (const DeviceCapacity& cap : dev.capacities) {
      f.push_back(text_id(cap.value.ToString()));
      f.push_back(text_id(cap.allocated.ToString()));
    }
  }
  for (uint32_t k = 0; k < problem.keys.size(); ++k) {
    const RequestKey& key = problem.keys[k];
    for (const Candidate& c : key.candidates) {
      std::vector<uint64_t>& f = features[c.device];
      f.push_back((uint64_t{k} << 2) | 1);
      f.push_back((c.error != kNone ? 1 : 0) | (c.taint_blocked ? 2 : 0));
      f.push_back(c.plan == kNone ? ~uint64_t{0} : plan_ids[c.plan]);
    }
    for (const Candidate& c : key.all_devices) {
      std::vector<uint64_t>& f = features[c.device];
      f.push_back((uint64_t{k} << 2) | 2);
      f.push_back(c.taint_blocked ? 2 : 0);
      f.push_back(c.plan == kNone ? ~uint64_t{0} : plan_ids[c.plan]);
    }
  }
  for (const Claim& claim : problem.claims) {
    for (const Constraint& constraint : claim.constraints) {
      for (const DerivedValues& derived : constraint.derived) {
        for (size_t d = 0; d < n; ++d) {
          features[d].push_back(derived.key);
          features[d].push_back(derived.value_of_device[d]);
          features[d].push_back(derived.error_of_device[d]);
        }
      }
      for (size_t d = 0; d < n; ++d) {
        const uint32_t value = constraint.value_of_device[d];
        features[d].push_back(value);
        // Without a scalar, whether the device passes a scalar constraint depends on the order in
        // which devices are added (the first one is exempt), so a later twin of a device that
        // failed may still succeed: such a device gets a class of its own (d + 1 here, else 0).
        bool scalar = true;
        if (value != kNone) {
          const AttributeValue& v = problem.values[value];
          scalar = v.int_value || v.bool_value || v.string_value || v.version_value;
        }
        features[d].push_back(scalar ? 0 : d + 1);
      }
    }
  }
  std::map<std::vector<uint64_t>, uint32_t> classes;
  for (size_t d = 0; d < n; ++d) {
    auto [it, inserted] =
        classes.emplace(std::move(features[d]), static_cast<uint32_t>(classes.size()));
    problem.devices[d].symmetry_class = it->second;
  }
}

bool UnsatisfiableWhateverIsAllocated(const Problem& problem) {
  if (!problem.errors.empty()) return false;
  for (const Device& d : problem.devices) {
    if (d.multi_allocatable || d.groups_unsupported) return false;
  }
  for (const Claim& claim : problem.claims) {
    for (const Request& request : claim.requests) {
      bool possible = false;
      for (uint32_t k : request.keys) {
        const RequestKey& key = problem.keys[k];
        if (key.all_mode || key.candidates.size() >= static_cast<size_t>(key.num_devices)) {
          possible = true;
          break;
        }
      }
      if (!possible) return true;
    }
  }
  return false;
}

}  // namespace draplane::allocator::internal
