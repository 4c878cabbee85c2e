#include "scheduler/device_states.h"

#include <algorithm>
#include <memory>
#include <set>
#include <unordered_map>

#include "allocator/allocator.h"
#include "common/random.h"

namespace draplane::scheduler {
namespace {

namespace rv1 = api::resourcev1;

constexpr std::string_view kStates[] = {"idle", "allocated", "unavailable", "fragmented"};

bool Unavailable(const rv1::Device& device) {
  return std::any_of(device.taints.begin(), device.taints.end(), [](const rv1::DeviceTaint& t) {
    return t.effect == "NoSchedule" || t.effect == "NoExecute";
  });
}

std::string Key(std::string_view driver, std::string_view pool, std::string_view name) {
  std::string key(driver);
  key += '\0';
  key += pool;
  key += '\0';
  key += name;
  return key;
}

struct Member {
  const rv1::Device* device = nullptr;
  std::vector<std::string> classes;
  bool allocated = false;
};

struct Physical {
  std::string driver;
  std::string pool;
  std::string node;  // empty: not node-local
  std::vector<Member> members;
  bool held = false;
  std::set<std::string, std::less<>> usable_by;  // classes of the shapes that can use it
};

// counter set key (Key(driver, pool, set)) -> counter -> amount
using Counters = std::map<std::string, std::map<std::string, double, std::less<>>, std::less<>>;

}  // namespace

std::vector<rv1::ExactDeviceRequest> PendingShapes(
    const std::vector<const rv1::ResourceClaim*>& claims) {
  std::vector<rv1::ExactDeviceRequest> shapes;
  auto add = [&](rv1::ExactDeviceRequest shape) {
    if (shape.admin_access.value_or(false)) return;  // takes no device
    if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) {
      shapes.push_back(std::move(shape));
    }
  };
  for (const rv1::ResourceClaim* claim : claims) {
    if (claim->status.allocation.has_value()) continue;
    for (const rv1::DeviceRequest& request : claim->spec.devices.requests) {
      if (request.exactly.has_value()) add(*request.exactly);
      for (const rv1::DeviceSubRequest& sub : request.first_available) {
        rv1::ExactDeviceRequest shape;
        shape.device_class_name = sub.device_class_name;
        shape.selectors = sub.selectors;
        shape.allocation_mode = sub.allocation_mode;
        shape.count = sub.count;
        shape.tolerations = sub.tolerations;
        shape.capacity = sub.capacity;
        add(std::move(shape));
      }
    }
  }
  std::stable_sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
    return a.device_class_name < b.device_class_name;
  });
  return shapes;
}

DeviceStates ComputeDeviceStates(ClusterState& cluster,
                                 const std::vector<rv1::ExactDeviceRequest>& shapes,
                                 const allocator::Features& features, int64_t step_limit,
                                 uint64_t evaluation_budget) {
  DeviceStates out;
  const DeviceLedger& ledger = cluster.ledger();
  const allocator::AllocatedState& allocated = ledger.allocated();

  // Physical devices, counter set totals and what the allocations consume of them, and the
  // shared capacity of multi-allocatable devices.
  std::map<std::string, Physical, std::less<>> physicals;
  std::unordered_map<std::string, std::string> physical_of;  // device key -> physical key
  Counters totals;
  Counters consumed;
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<double, double>> capacity;
  ledger.ForEachSlice([&](const rv1::ResourceSlice& slice,
                          const std::vector<std::vector<std::string_view>>& classes_of) {
    const std::string& driver = slice.spec.driver;
    const std::string& pool = slice.spec.pool.name;
    for (const rv1::CounterSet& set : slice.spec.shared_counters) {
      for (const auto& [name, counter] : set.counters) {
        totals[Key(driver, pool, set.name)][name] = counter.value.AsApproximateDouble();
      }
    }
    for (size_t index = 0; index < slice.spec.devices.size(); ++index) {
      const rv1::Device& device = slice.spec.devices[index];
      const std::vector<std::string_view>& classes = classes_of[index];
      const std::string physical_key =
          device.consumes_counters.empty()
              ? Key(driver, pool, "device/" + device.name)
              : Key(driver, pool, "counters/" + device.consumes_counters.front().counter_set);
      Physical& p = physicals[physical_key];
      p.driver = driver;
      p.pool = pool;
      p.node = device.node_name.value_or(slice.spec.node_name.value_or(""));
      Member m{.device = &device, .classes = {classes.begin(), classes.end()}};
      m.allocated = device.allow_multiple_allocations.value_or(false)
                        ? allocated.IsExclusivelyAllocated(driver, pool, device.name)
                        : allocated.IsAllocated(driver, pool, device.name);
      p.held = p.held || allocated.IsAllocated(driver, pool, device.name);
      if (allocated.IsAllocated(driver, pool, device.name)) {
        for (const rv1::DeviceCounterConsumption& c : device.consumes_counters) {
          for (const auto& [name, counter] : c.counters) {
            consumed[Key(driver, pool, c.counter_set)][name] += counter.value.AsApproximateDouble();
          }
        }
      }
      if (device.allow_multiple_allocations.value_or(false)) {
        const allocator::AllocatedState::DeviceRecord* record =
            allocated.Find(driver, pool, device.name);
        for (const auto& [name, cap] : device.capacity) {
          auto& [used, total] = capacity[{driver, pool, name}];
          total += cap.value.AsApproximateDouble();
          if (record == nullptr) continue;
          auto it = record->aggregated.find(name);
          if (it != record->aggregated.end()) used += it->second.AsApproximateDouble();
        }
      }
      physical_of[Key(driver, pool, device.name)] = physical_key;
      p.members.push_back(std::move(m));
    }
  });

  for (const auto& [set_key, counters] : totals) {
    double ratio = 0;
    auto used = consumed.find(set_key);
    for (const auto& [name, total] : counters) {
      if (total <= 0 || used == consumed.end()) continue;
      auto it = used->second.find(name);
      if (it != used->second.end()) ratio = std::max(ratio, it->second / total);
    }
    std::string driver = set_key.substr(0, set_key.find('\0'));
    std::string rest = set_key.substr(driver.size() + 1);
    std::string pool = rest.substr(0, rest.find('\0'));
    out.counter_used[{driver, pool, rest.substr(pool.size() + 1)}] = ratio;
  }
  for (const auto& [key, amounts] : capacity) {
    if (amounts.second > 0) out.capacity_used[key] = amounts.first / amounts.second;
  }

  // Whether a device could still be given out: unallocated, untainted, and its consumption fits
  // what the allocations left of its counter sets.
  auto free = [&](const Physical& p, const Member& m) {
    if (m.allocated || Unavailable(*m.device)) return false;
    for (const rv1::DeviceCounterConsumption& c : m.device->consumes_counters) {
      const std::string set = Key(p.driver, p.pool, c.counter_set);
      auto total = totals.find(set);
      auto used = consumed.find(set);
      for (const auto& [name, counter] : c.counters) {
        double have = 0;
        if (total != totals.end()) {
          auto it = total->second.find(name);
          if (it != total->second.end()) have = it->second;
        }
        if (used != consumed.end()) {
          auto it = used->second.find(name);
          if (it != used->second.end()) have -= it->second;
        }
        if (counter.value.AsApproximateDouble() > have) return false;
      }
    }
    return true;
  };
  auto free_for = [&](const Physical& p, std::string_view cls) {
    return std::any_of(p.members.begin(), p.members.end(), [&](const Member& m) {
      return std::binary_search(m.classes.begin(), m.classes.end(), cls) && free(p, m);
    });
  };

  // Which physical devices each shape can use: greedy packing by the allocator on each node
  // that has a free remainder for the shape's class.
  std::set<std::string, std::less<>> demanded;
  allocator::EvaluationBudget budget{.limit = evaluation_budget};
  // Marks every physical device of the class usable: what a shape whose evaluation could not
  // finish counts as.
  auto all_usable = [&](const std::string& cls) {
    for (auto& [_, p] : physicals) p.usable_by.insert(cls);
  };
  std::unique_ptr<Random> random = NewSeededRandom(1);  // share IDs of scratch results only
  allocator::AllocatedState scratch = allocated;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const rv1::ExactDeviceRequest& shape = shapes[i];
    if (i >= kMaxShapes || (budget.limit != 0 && budget.spent >= budget.limit)) {
      demanded.insert(shape.device_class_name);
      all_usable(shape.device_class_name);
      ++out.shapes_dropped;
      continue;
    }
    ++out.shapes;
    demanded.insert(shape.device_class_name);
    std::map<std::string, int64_t, std::less<>> free_per_node;
    for (const auto& [_, p] : physicals) {
      if (!p.node.empty() && free_for(p, shape.device_class_name)) ++free_per_node[p.node];
    }
    rv1::ResourceClaim claim;
    claim.metadata.namespace_ = "draplane-device-states";
    claim.metadata.name = "shape-" + std::to_string(i);
    claim.metadata.uid = claim.metadata.name;
    rv1::DeviceRequest request;
    request.name = "shape";
    request.exactly = shape;
    claim.spec.devices.requests.push_back(std::move(request));
    std::vector<rv1::AllocationResult> added;
    for (const auto& [node_name, free_count] : free_per_node) {
      const NodeInfo* node = cluster.FindNode(node_name);
      if (node == nullptr) continue;
      for (int64_t round = 0; round <= free_count; ++round) {
        ++out.allocator_calls;
        StatusOr<allocator::Outcome> outcome =
            allocator::Allocate(cluster.snapshot(), node->node(), {&claim}, scratch, features,
                                {.random = random.get(),
                                 .use_node_cache = false,
                                 .max_search_steps = step_limit,
                                 .evaluation_budget = &budget});
        if (!outcome.ok() && (allocator::IsEvaluationBudgetExceeded(outcome.status()) ||
                              allocator::IsStepLimitExceeded(outcome.status()))) {
          all_usable(shape.device_class_name);  // unknown: never reported as fragmented
          break;
        }
        if (!outcome.ok() || outcome->kind != allocator::Outcome::Kind::kAllocated) break;
        for (const rv1::DeviceRequestAllocationResult& r :
             outcome->results->front().devices.results) {
          auto it = physical_of.find(Key(r.driver, r.pool, r.device));
          if (it != physical_of.end())
            physicals[it->second].usable_by.insert(shape.device_class_name);
        }
        scratch.AddAllocation(outcome->results->front());
        added.push_back(outcome->results->front());
      }
    }
    for (const rv1::AllocationResult& a : added) scratch.RemoveAllocation(a);
  }

  // The states, per (driver, class).
  for (const auto& [_, p] : physicals) {
    std::set<std::string_view> classes;
    for (const Member& m : p.members) classes.insert(m.classes.begin(), m.classes.end());
    for (std::string_view cls : classes) {
      for (std::string_view state : kStates)
        out.devices[{p.driver, std::string(cls), std::string(state)}];
      std::string_view state;
      if (!free_for(p, cls)) {
        state = p.held ? "allocated" : "unavailable";
      } else if (demanded.contains(cls) && !p.node.empty() && !p.usable_by.contains(cls)) {
        state = "fragmented";
      } else {
        state = p.held ? "allocated" : "idle";
      }
      ++out.devices[{p.driver, std::string(cls), std::string(state)}];
    }
  }
  return out;
}

}  // namespace draplane::scheduler
