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
  // The features of all devices lie in one buffer, device d's at [start[d], start[d + 1]): each
  // device's count is known before any is written (three per key it is a candidate of, ...), and
  // next[d] is where its next feature goes. One allocation per call, not one per device (the
  // scheduler builds a problem for every node whose verdict it does not remember).
  size_t per_constraints = 0;
  for (const Claim& claim : problem.claims) {
    for (const Constraint& constraint : claim.constraints) {
      per_constraints += 3 * constraint.derived.size() + 2;
    }
  }
  std::vector<size_t> start(n + 1, 0);
  for (size_t d = 0; d < n; ++d) {
    const Device& dev = problem.devices[d];
    size_t size = per_constraints + 3 + 2 * dev.capacities.size();
    for (const GroupUse& use : dev.group_uses) size += 2 + use.groups.size();
    if (dev.consumes_counters) size += 2 + 2 * dev.counter_uses.size();
    start[d + 1] = size;
  }
  for (const RequestKey& key : problem.keys) {
    for (const Candidate& c : key.candidates) start[c.device + 1] += 3;
    for (const Candidate& c : key.all_devices) start[c.device + 1] += 3;
  }
  for (size_t d = 0; d < n; ++d) start[d + 1] += start[d];
  std::vector<uint64_t> features(start[n]);
  std::vector<size_t> next(start.begin(), start.end() - 1);
  auto put = [&](size_t d, uint64_t value) { features[next[d]++] = value; };
  for (size_t d = 0; d < n; ++d) {
    const Device& dev = problem.devices[d];
    put(d, (dev.multi_allocatable ? 1 : 0) | (dev.allocated ? 2 : 0) |
               (dev.capacity_in_use ? 4 : 0) | (dev.consumes_counters ? 8 : 0) |
               (dev.shared_in_use ? 16 : 0) | (dev.groups_unsupported ? 32 : 0));
    put(d, dev.group_uses.size());
    for (const GroupUse& use : dev.group_uses) {
      put(d, use.counter_set);
      put(d, use.groups.size());
      for (uint32_t group : use.groups) put(d, group);
    }
    if (dev.consumes_counters) {
      put(d, dev.pool);
      put(d, dev.counter_uses.size());
      for (const CounterUse& use : dev.counter_uses) {
        put(d, use.counter);
        put(d, text_id(use.amount.ToString()));
      }
    }
    put(d, dev.capacities.size());
    for (const DeviceCapacity& cap : dev.capacities) {
      put(d, text_id(cap.value.ToString()));
      put(d, text_id(cap.allocated.ToString()));
    }
  }
  for (uint32_t k = 0; k < problem.keys.size(); ++k) {
    const RequestKey& key = problem.keys[k];
    for (const Candidate& c : key.candidates) {
      put(c.device, (uint64_t{k} << 2) | 1);
      put(c.device, (c.error != kNone ? 1 : 0) | (c.taint_blocked ? 2 : 0));
      put(c.device, c.plan == kNone ? ~uint64_t{0} : plan_ids[c.plan]);
    }
    for (const Candidate& c : key.all_devices) {
      put(c.device, (uint64_t{k} << 2) | 2);
      put(c.device, c.taint_blocked ? 2 : 0);
      put(c.device, c.plan == kNone ? ~uint64_t{0} : plan_ids[c.plan]);
    }
  }
  for (const Claim& claim : problem.claims) {
    for (const Constraint& constraint : claim.constraints) {
      for (const DerivedValues& derived : constraint.derived) {
        for (size_t d = 0; d < n; ++d) {
          put(d, derived.key);
          put(d, derived.value_of_device[d]);
          put(d, derived.error_of_device[d]);
        }
      }
      for (size_t d = 0; d < n; ++d) {
        const uint32_t value = constraint.value_of_device[d];
        put(d, value);
        // Without a scalar, whether the device passes a scalar constraint depends on the order in
        // which devices are added (the first one is exempt), so a later twin of a device that
        // failed may still succeed: such a device gets a class of its own (d + 1 here, else 0).
        bool scalar = true;
        if (value != kNone) {
          const AttributeValue& v = problem.values[value];
          scalar = v.int_value || v.bool_value || v.string_value || v.version_value;
        }
        put(d, scalar ? 0 : d + 1);
      }
    }
  }
  // Classes are numbered in the order of their first device. Devices with equal features are
  // found through an open-addressing table of each class's first device, keyed by a hash of the
  // features (equal hashes are confirmed by comparing the features).
  auto same = [&](size_t a, size_t b) {
    return std::equal(features.begin() + start[a], features.begin() + start[a + 1],
                      features.begin() + start[b], features.begin() + start[b + 1]);
  };
  std::vector<uint64_t> hashes(n);
  for (size_t d = 0; d < n; ++d) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = start[d]; i < start[d + 1]; ++i) h = (h ^ features[i]) * 0x100000001b3ull;
    hashes[d] = h ^ (h >> 29);
  }
  size_t slots = 16;
  while (slots < 2 * n) slots *= 2;
  std::vector<uint32_t> first_of_slot(slots, kNone);
  uint32_t classes = 0;
  for (size_t d = 0; d < n; ++d) {
    size_t slot = hashes[d] & (slots - 1);
    while (first_of_slot[slot] != kNone) {
      const uint32_t first = first_of_slot[slot];
      if (hashes[first] == hashes[d] && same(first, d)) break;
      slot = (slot + 1) & (slots - 1);
    }
    if (first_of_slot[slot] == kNone) {
      first_of_slot[slot] = static_cast<uint32_t>(d);
      problem.devices[d].symmetry_class = classes++;
    } else {
      problem.devices[d].symmetry_class = problem.devices[first_of_slot[slot]].symmetry_class;
    }
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
