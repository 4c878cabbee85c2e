#include "allocator/internal/pools.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace draplane::allocator::internal {
namespace {

using api::resourcev1::ResourceSlice;

// upstream addSlice: group by pool, keep only the highest generation seen.
void AddSlice(std::map<std::pair<std::string, std::string>, std::vector<SliceEntry*>>& pools,
              SliceEntry* slice) {
  const auto& spec = slice->spec();
  std::vector<SliceEntry*>& list = pools[{spec.driver, spec.pool.name}];
  if (list.empty()) {
    list.push_back(slice);
    return;
  }
  int64_t generation = list.front()->spec().pool.generation;
  if (spec.pool.generation < generation) return;        // out-dated
  if (spec.pool.generation > generation) list.clear();  // newer, replaces all old slices
  list.push_back(slice);
}

bool SliceHasBindingConditions(const std::vector<SliceEntry*>& slices) {
  for (const SliceEntry* s : slices) {
    for (const auto& device : s->spec().devices) {
      if (HasBindingConditions(device)) return true;
    }
  }
  return false;
}

// upstream buildPool. `all_for_pool` is null when the node sees every slice of the pool.
GatheredPool BuildPool(const std::string& driver, const std::string& pool,
                       std::vector<SliceEntry*> slices, const Features& features,
                       const std::vector<SliceEntry*>* all_for_pool) {
  GatheredPool out;
  out.driver = driver;
  out.pool = pool;
  // Slices sorted by name give a deterministic order that driver authors can steer.
  std::stable_sort(slices.begin(), slices.end(), [](const SliceEntry* a, const SliceEntry* b) {
    return a->slice->metadata.name < b->slice->metadata.name;
  });
  std::vector<SliceEntry*> device_slices;
  std::vector<SliceEntry*> counter_slices;
  if (features.partitionable_devices) {
    for (SliceEntry* s : slices) {
      (s->spec().shared_counters.empty() ? device_slices : counter_slices).push_back(s);
    }
  } else {
    device_slices = slices;
  }
  auto invalid = [&](std::string reason) {
    GatheredPool bad;
    bad.driver = driver;
    bad.pool = pool;
    bad.invalid = true;
    bad.invalid_reason = std::move(reason);
    return bad;
  };
  std::set<std::string_view> device_names;
  for (const SliceEntry* s : device_slices) {
    for (const auto& device : s->spec().devices) {
      if (!device_names.insert(device.name).second) {
        return invalid("duplicate device name " + device.name);
      }
    }
  }
  if (!features.partitionable_devices) {
    out.targeting = std::move(device_slices);
    return out;
  }
  // Slices of the pool this node does not see (identified by name, as upstream does). Their
  // counter sets are pool-wide and their devices may consume counters the node's devices need,
  // so both take part in the counter bookkeeping (upstream master: the counter-set slice of a
  // pool may target another node).
  std::vector<SliceEntry*> not_targeting;
  if (all_for_pool != nullptr && all_for_pool->size() != slices.size()) {
    std::set<std::string_view> seen;
    for (const SliceEntry* s : slices) seen.insert(s->slice->metadata.name);
    for (SliceEntry* s : *all_for_pool) {
      if (seen.count(s->slice->metadata.name) != 0) continue;
      if (s->spec().shared_counters.empty()) {
        not_targeting.push_back(s);
      } else {
        counter_slices.push_back(s);
      }
    }
  }
  std::map<std::string_view, const api::resourcev1::CounterSet*> counter_sets;
  for (const SliceEntry* s : counter_slices) {
    for (const auto& set : s->spec().shared_counters) {
      if (!counter_sets.emplace(set.name, &set).second) {
        return invalid("duplicate counter set name " + set.name);
      }
    }
  }
  auto validate_consumption = [&](const std::vector<SliceEntry*>& list) -> std::string {
    for (const SliceEntry* s : list) {
      for (const auto& device : s->spec().devices) {
        for (const auto& consumption : device.consumes_counters) {
          auto it = counter_sets.find(consumption.counter_set);
          if (it == counter_sets.end()) {
            return "counter set " + consumption.counter_set + " not found";
          }
          for (const auto& [name, counter] : consumption.counters) {
            if (it->second->counters.find(name) == it->second->counters.end()) {
              return "counter " + name + " not found in counter set " + it->second->name;
            }
          }
        }
      }
    }
    return "";
  };
  if (std::string reason = validate_consumption(slices); !reason.empty()) return invalid(reason);
  if (std::string reason = validate_consumption(not_targeting); !reason.empty()) {
    return invalid(reason);
  }
  out.counter_slices = counter_slices;
  out.targeting = device_slices;
  out.not_targeting = std::move(not_targeting);
  return out;
}

}  // namespace

bool HasBindingConditions(const api::resourcev1::Device& device) {
  return !device.binding_conditions.empty() ||
         (device.present & kDeviceBindingConditionsPresent) != 0;
}

StatusOr<bool> NodeMatches(const api::corev1::Node& node, std::string_view node_name,
                           bool all_nodes,
                           const std::optional<api::corev1::NodeSelector>& node_selector,
                           std::optional<StatusOr<api::labels::NodeSelectorMatcher>>* cache) {
  if (!node_name.empty()) return node.metadata.name == node_name;
  if (all_nodes) return true;
  if (!node_selector.has_value()) return false;
  std::optional<StatusOr<api::labels::NodeSelectorMatcher>> local;
  std::optional<StatusOr<api::labels::NodeSelectorMatcher>>& compiled =
      cache != nullptr ? *cache : local;
  if (!compiled.has_value()) {
    compiled.emplace(api::labels::NodeSelectorMatcher::CompileStrict(*node_selector));
  }
  if (!compiled->ok()) {
    return InvalidArgumentError("failed to parse node selector: " +
                                std::string(compiled->status().message()));
  }
  return (*compiled)->Match(node);
}

StatusOr<bool> DeviceNodeMatches(SliceEntry& slice, size_t index, const api::corev1::Node& node) {
  const auto& device = slice.spec().devices[index];
  if (slice.device_selectors.size() != slice.spec().devices.size()) {
    slice.device_selectors.resize(slice.spec().devices.size());
  }
  return NodeMatches(node, device.node_name.value_or(""), device.all_nodes.value_or(false),
                     device.node_selector, &slice.device_selectors[index]);
}

NodeEntry& GatherPools(SnapshotState& state, const api::corev1::Node& node,
                       const Features& features) {
  bool same_version = false;
  NodeEntry& entry = state.Node(node, &same_version);
  const std::string& uid = node.metadata.uid;
  const std::string& version = node.metadata.resource_version;
  if (entry.epoch == state.epoch && entry.partitionable == features.partitionable_devices) {
    if (same_version) return entry;
    if (entry.labels == node.metadata.labels) {
      entry.node_uid = uid;
      entry.node_version = version;
      return entry;
    }
  }
  entry = NodeEntry();
  entry.name = node.metadata.name;
  entry.epoch = state.epoch;
  entry.partitionable = features.partitionable_devices;
  entry.labels = node.metadata.labels;
  entry.node_uid = uid;
  entry.node_version = version;

  std::vector<SliceEntry*> candidates;
  if (auto it = state.by_node.find(node.metadata.name); it != state.by_node.end()) {
    candidates = it->second;
  }
  candidates.insert(candidates.end(), state.shared.begin(), state.shared.end());

  std::map<std::pair<std::string, std::string>, std::vector<SliceEntry*>> pools;
  for (SliceEntry* slice : candidates) {
    const auto& spec = slice->spec();
    if (!features.partitionable_devices &&
        (spec.per_device_node_selection.has_value() || !spec.shared_counters.empty())) {
      continue;
    }
    bool relevant = false;
    std::string node_name = spec.node_name.value_or("");
    bool all_nodes = spec.all_nodes.value_or(false);
    if (!spec.shared_counters.empty() && node_name.empty() && !all_nodes &&
        !spec.node_selector.has_value() && !spec.per_device_node_selection.has_value()) {
      // A counter-set slice without node selection serves the whole pool.
      relevant = true;
    } else if (!node_name.empty() || all_nodes || spec.node_selector.has_value()) {
      // Counter-set slices follow their node selection like device slices: a pool none of whose
      // slices this node sees is not this node's (kubernetes#138917). Counter sets of a pool the
      // node does see are found among the pool's other slices (BuildPool).

      StatusOr<bool> match =
          NodeMatches(node, node_name, all_nodes, spec.node_selector, &slice->slice_selector);
      if (!match.ok()) {
        entry.gather_error = FailedPreconditionError(
            fmt::format("failed to perform node selection for slice {}: {}",
                        slice->slice->metadata.name, match.status().message()));
        return entry;
      }
      relevant = *match;
    } else if (spec.per_device_node_selection.value_or(false)) {
      for (size_t i = 0; i < spec.devices.size() && !relevant; ++i) {
        StatusOr<bool> match = DeviceNodeMatches(*slice, i, node);
        if (!match.ok()) {
          entry.gather_error = FailedPreconditionError(fmt::format(
              "failed to perform node selection for device {} in slice {}: {}",
              spec.devices[i].name, slice->slice->metadata.name, match.status().message()));
          return entry;
        }
        relevant = *match;
      }
    } else {
      // Nothing known was set: some future extension this code does not understand.
      continue;
    }
    if (relevant) AddSlice(pools, slice);
  }

  std::vector<GatheredPool> result;
  std::vector<GatheredPool> with_binding_conditions;
  for (auto& [id, slices] : pools) {
    const auto& first = slices.front()->spec().pool;
    bool complete = static_cast<int64_t>(slices.size()) == first.resource_slice_count;
    GatheredPool pool;
    if (complete) {
      pool = BuildPool(id.first, id.second, slices, features, nullptr);
    } else {
      // Look at every slice of the pool: some may not target this node. upstream
      // checkSlicesInPool.
      std::vector<SliceEntry*> all_for_pool;
      bool obsolete = false;
      auto it = state.by_pool.find(slices.front()->pool_key);
      if (it != state.by_pool.end()) {
        for (SliceEntry* s : it->second) {
          if (s->spec().pool.generation == first.generation) {
            all_for_pool.push_back(s);
          } else if (s->spec().pool.generation > first.generation) {
            obsolete = true;
            break;
          }
        }
      }
      if (obsolete) continue;  // the driver is replacing this generation
      if (static_cast<int64_t>(all_for_pool.size()) != first.resource_slice_count) {
        pool.driver = id.first;
        pool.pool = id.second;
        pool.incomplete = true;
        result.push_back(std::move(pool));
        continue;
      }
      pool = BuildPool(id.first, id.second, slices, features, &all_for_pool);
    }
    if (SliceHasBindingConditions(pool.targeting)) {
      with_binding_conditions.push_back(std::move(pool));
    } else {
      result.push_back(std::move(pool));
    }
  }
  // `pools` is ordered by (driver, pool) already; pools with binding conditions go last so that
  // devices usable without waiting are preferred.
  for (GatheredPool& p : with_binding_conditions) result.push_back(std::move(p));
  entry.pools = std::move(result);
  return entry;
}

}  // namespace draplane::allocator::internal
