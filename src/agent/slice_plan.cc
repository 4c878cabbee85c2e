#include "agent/slice_plan.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "agent/health.h"
#include "api/validation/validation.h"

namespace draplane::agent {

namespace rv1 = api::resourcev1;

namespace {

bool IsAdvanced(const rv1::Device& device) {
  if (!device.taints.empty() || !device.consumes_counters.empty()) return true;
  for (const auto& [name, attr] : device.attributes) {
    if (!attr.ints.empty() || !attr.bools.empty() || !attr.strings.empty() ||
        !attr.versions.empty()) {
      return true;
    }
  }
  return false;
}

rv1::ResourceSlice NewSlice(std::string_view node_name, std::string_view driver, size_t index,
                            int64_t generation) {
  rv1::ResourceSlice slice;
  slice.metadata.name = SliceName(node_name, driver, index);
  slice.spec.driver = std::string(driver);
  slice.spec.pool.name = std::string(node_name);
  slice.spec.pool.generation = generation;
  slice.spec.node_name = std::string(node_name);
  return slice;
}

// Merges inventories of the same driver name (two drivers may publish under one name).
std::map<std::string, Inventory> ByDriver(const std::vector<Inventory>& inventories) {
  std::map<std::string, Inventory> out;
  for (const Inventory& inv : inventories) {
    Inventory& merged = out[inv.driver];
    merged.driver = inv.driver;
    merged.counter_sets.insert(merged.counter_sets.end(), inv.counter_sets.begin(),
                               inv.counter_sets.end());
    merged.devices.insert(merged.devices.end(), inv.devices.begin(), inv.devices.end());
  }
  return out;
}

}  // namespace

std::string SliceName(std::string_view node_name, std::string_view driver, size_t index) {
  std::string base = std::string(node_name) + "-" + std::string(driver);
  const std::string suffix = "-" + std::to_string(index);
  if (base.size() + suffix.size() > 253) {
    uint64_t h = 14695981039346656037ULL;
    for (unsigned char c : base) {
      h ^= c;
      h *= 1099511628211ULL;
    }
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
    base = base.substr(0, 200);
    while (!base.empty() && !std::isalnum(static_cast<unsigned char>(base.back()))) {
      base.pop_back();
    }
    base += "-" + std::string(hex);
  }
  return base + suffix;
}

std::vector<rv1::ResourceSlice> BuildPoolSlices(std::string_view node_name,
                                                const Inventory& inventory, int64_t generation) {
  std::vector<rv1::ResourceSlice> out;
  // 2. Counter sets in slices of their own.
  for (size_t i = 0; i < inventory.counter_sets.size();
       i += api::validation::kResourceSliceMaxCounterSets) {
    rv1::ResourceSlice slice = NewSlice(node_name, inventory.driver, out.size(), generation);
    const size_t end =
        std::min(inventory.counter_sets.size(), i + api::validation::kResourceSliceMaxCounterSets);
    slice.spec.shared_counters.assign(inventory.counter_sets.begin() + static_cast<long>(i),
                                      inventory.counter_sets.begin() + static_cast<long>(end));
    out.push_back(std::move(slice));
  }
  // 3. Devices, 128 per slice or 64 when the slice uses taints or counters.
  std::optional<rv1::ResourceSlice> current;
  bool advanced = false;
  for (const DiscoveredDevice& discovered : inventory.devices) {
    rv1::Device device = PublishedDevice(inventory.driver, discovered);
    const bool next_advanced = advanced || IsAdvanced(device);
    const size_t limit = next_advanced
                             ? api::validation::kResourceSliceMaxDevicesWithAdvancedFeatures
                             : api::validation::kResourceSliceMaxDevices;
    if (current && current->spec.devices.size() + 1 > limit) {
      out.push_back(std::move(*current));
      current.reset();
    }
    if (!current) {
      current = NewSlice(node_name, inventory.driver, out.size(), generation);
      advanced = false;
    }
    advanced = advanced || IsAdvanced(device);
    current->spec.devices.push_back(std::move(device));
  }
  if (current) out.push_back(std::move(*current));
  // 4. Every slice knows how many slices the pool has.
  for (rv1::ResourceSlice& slice : out) {
    slice.spec.pool.resource_slice_count = static_cast<int64_t>(out.size());
  }
  return out;
}

namespace {

// A taint already published on a device keeps the time it was published with: the condition
// started then, and a second agent instance (a rolling update) or a restarted one would otherwise
// stamp its own time, and instances would rewrite the pool in turn forever. NoExecute
// tolerationSeconds count from this time too.
void KeepPublishedTaintTimes(std::vector<rv1::ResourceSlice>& desired,
                             const std::map<std::string, const rv1::ResourceSlice*>& current) {
  std::map<std::string, const rv1::Device*> published;
  for (const auto& [name, slice] : current) {
    for (const rv1::Device& device : slice->spec.devices) published[device.name] = &device;
  }
  for (rv1::ResourceSlice& slice : desired) {
    for (rv1::Device& device : slice.spec.devices) {
      auto it = published.find(device.name);
      if (it == published.end()) continue;
      for (rv1::DeviceTaint& taint : device.taints) {
        for (const rv1::DeviceTaint& old : it->second->taints) {
          if (old.key == taint.key && old.value == taint.value && old.effect == taint.effect &&
              old.time_added) {
            taint.time_added = old.time_added;
            break;
          }
        }
      }
    }
  }
}

}  // namespace

SlicePlan PlanSliceSync(std::string_view node_name, const std::vector<Inventory>& inventories,
                        const std::vector<std::string>& managed_drivers,
                        const std::vector<rv1::ResourceSlice>& stored,
                        const std::optional<api::metav1::OwnerReference>& owner) {
  SlicePlan plan;
  auto owned = [&](const rv1::ResourceSlice& slice) {
    return !owner || (slice.metadata.owner_references.size() == 1 &&
                      slice.metadata.owner_references[0].uid == owner->uid);
  };
  std::map<std::string, Inventory> desired_by_driver = ByDriver(inventories);
  std::set<std::string> drivers(managed_drivers.begin(), managed_drivers.end());
  for (const auto& [driver, inv] : desired_by_driver) drivers.insert(driver);

  for (const std::string& driver : drivers) {
    // The pool's stored slices (this node's slices of this driver), by name.
    std::map<std::string, const rv1::ResourceSlice*> current;
    int64_t generation = 0;
    for (const rv1::ResourceSlice& slice : stored) {
      if (slice.spec.driver != driver || slice.spec.node_name.value_or("") != node_name) continue;
      current[slice.metadata.name] = &slice;
      generation = std::max(generation, slice.spec.pool.generation);
    }
    auto it = desired_by_driver.find(driver);
    if (it == desired_by_driver.end() || it->second.devices.empty()) {
      // 4. No devices any more (counter sets alone are useless): the pool goes away.
      for (const auto& [name, slice] : current) plan.deletes.push_back(name);
      continue;
    }
    // 2. Unchanged?
    std::vector<rv1::ResourceSlice> desired = BuildPoolSlices(node_name, it->second, generation);
    KeepPublishedTaintTimes(desired, current);
    bool unchanged = desired.size() == current.size();
    for (const rv1::ResourceSlice& slice : desired) {
      if (!unchanged) break;
      auto found = current.find(slice.metadata.name);
      unchanged =
          found != current.end() && found->second->spec == slice.spec && owned(*found->second);
    }
    if (unchanged) continue;
    // 3. Bump the generation and rewrite the pool.
    desired = BuildPoolSlices(node_name, it->second, generation + 1);
    KeepPublishedTaintTimes(desired, current);
    std::set<std::string> desired_names;
    for (const rv1::ResourceSlice& slice : desired) desired_names.insert(slice.metadata.name);
    for (const auto& [name, slice] : current) {
      if (desired_names.count(name) == 0) plan.deletes.push_back(name);
    }
    for (rv1::ResourceSlice& slice : desired) {
      if (owner) slice.metadata.owner_references = {*owner};
      auto found = current.find(slice.metadata.name);
      if (found == current.end()) {
        plan.creates.push_back(std::move(slice));
        continue;
      }
      rv1::ResourceSlice updated = *found->second;
      updated.spec = std::move(slice.spec);
      if (owner) updated.metadata.owner_references = {*owner};
      plan.updates.push_back(std::move(updated));
    }
  }
  return plan;
}

std::map<std::string, SliceDrift> CompareSlices(std::string_view node_name,
                                                const std::vector<Inventory>& inventories,
                                                const std::vector<std::string>& managed_drivers,
                                                const std::vector<rv1::ResourceSlice>& stored) {
  std::map<std::string, SliceDrift> out;
  // driver -> device name -> the published form of each discovered device
  std::map<std::string, std::map<std::string, rv1::Device>> discovered;
  for (const std::string& driver : managed_drivers) out[driver];
  for (const Inventory& inv : inventories) {
    out[inv.driver];
    for (const DiscoveredDevice& d : inv.devices) {
      discovered[inv.driver][d.device.name] = PublishedDevice(inv.driver, d);
    }
  }
  std::map<std::string, std::set<std::string>> published;
  for (const rv1::ResourceSlice& slice : stored) {
    if (slice.spec.node_name.value_or("") != node_name || !out.contains(slice.spec.driver)) {
      continue;
    }
    SliceDrift& drift = out[slice.spec.driver];
    const auto& found = discovered[slice.spec.driver];
    for (const rv1::Device& device : slice.spec.devices) {
      published[slice.spec.driver].insert(device.name);
      auto it = found.find(device.name);
      if (it == found.end()) {
        ++drift.extra;
      } else if (it->second.attributes != device.attributes ||
                 it->second.capacity != device.capacity) {
        ++drift.attribute;
      }
    }
  }
  for (const auto& [driver, devices] : discovered) {
    for (const auto& [name, _] : devices) {
      if (!published[driver].contains(name)) ++out[driver].missing;
    }
  }
  return out;
}

}  // namespace draplane::agent
