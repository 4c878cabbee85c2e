#include "controllers/poolstatus/pool_status.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "allocator/charges.h"
#include "api/device_taints.h"
#include "api/validation/pool_status_request_validation.h"

namespace draplane::controllers::poolstatus {
namespace {

namespace rv1 = api::resourcev1;
namespace ra3 = api::resourcev1alpha3;
using allocator::ResourceList;
using api::Quantity;

// (counter set, counter) -> amount.
using CounterAmounts = std::map<std::pair<std::string, std::string>, Quantity>;

struct PoolDevice {
  const rv1::ResourceSlice* slice;
  const rv1::Device* device;
};

struct Pool {
  std::string name;
  int64_t generation = 0;
  std::vector<const rv1::ResourceSlice*> slices;  // at `generation`, by name
};

// Held devices by (driver, pool): device name -> consumedCapacity summed over its holdings.
struct Held {
  std::map<std::string, ResourceList, std::less<>> devices;
  ResourceList consumed;  // consumedCapacity of every holding in the pool
};

int32_t Int32(size_t n) { return static_cast<int32_t>(std::min<size_t>(n, INT32_MAX)); }

std::string Truncate(std::string message) {
  if (message.size() > api::validation::kPoolStatusMaxValidationError) {
    message.resize(api::validation::kPoolStatusMaxValidationError);
  }
  return message;
}

bool Taints(const rv1::DeviceTaint& taint) {
  return taint.effect == rv1::kDeviceTaintEffectNoSchedule ||
         taint.effect == rv1::kDeviceTaintEffectNoExecute;
}

bool Unavailable(const PoolDevice& d, const std::vector<const rv1::DeviceTaintRule*>& rules) {
  for (const rv1::DeviceTaint& t : d.device->taints) {
    if (Taints(t)) return true;
  }
  for (const rv1::DeviceTaintRule* rule : rules) {
    if (Taints(rule->spec.taint) &&
        api::RuleSelectsDevice(*rule, d.slice->spec.driver, d.slice->spec.pool.name,
                               d.device->name)) {
      return true;
    }
  }
  return false;
}

// The string value of `attribute` on a device: the fully qualified name, or the bare name when
// its domain is the driver's (how drivers abbreviate their own attributes).
std::optional<std::string> StringAttribute(const rv1::Device& device, std::string_view driver,
                                           std::string_view attribute) {
  auto lookup = [&](std::string_view name) -> std::optional<std::string> {
    auto it = device.attributes.find(name);
    if (it == device.attributes.end() || !it->second.string_value) return std::nullopt;
    return *it->second.string_value;
  };
  if (auto v = lookup(attribute)) return v;
  size_t slash = attribute.find('/');
  if (slash != std::string_view::npos && attribute.substr(0, slash) == driver) {
    return lookup(attribute.substr(slash + 1));
  }
  return std::nullopt;
}

CounterAmounts Consumption(const rv1::Device& device) {
  CounterAmounts out;
  for (const rv1::DeviceCounterConsumption& use : device.consumes_counters) {
    for (const auto& [name, counter] : use.counters) {
      auto [it, inserted] = out.try_emplace({use.counter_set, name}, counter.value);
      if (!inserted) it->second = it->second.Add(counter.value);
    }
  }
  return out;
}

// The cost of a partition independent of which physical device's counter set it draws from:
// counter name -> amount.
ResourceList Cost(const CounterAmounts& consumption) {
  ResourceList cost;
  for (const auto& [key, amount] : consumption) allocator::AddResource(cost, key.second, amount);
  return cost;
}

// Sets pool.partition_summary, or returns a validation error.
std::optional<std::string> PartitionSummary(const ra3::ResourcePoolStatusRequestSpec& spec,
                                            const Pool& pool,
                                            const std::vector<PoolDevice>& devices,
                                            const Held& held, ra3::PoolStatus* out) {
  const std::string& driver = spec.driver;
  bool declared = std::any_of(pool.slices.begin(), pool.slices.end(), [](const auto* s) {
    return s->spec.partition_type_attribute.has_value();
  });
  auto attribute_of = [&](const rv1::ResourceSlice& slice) -> std::optional<std::string> {
    if (declared) return slice.spec.partition_type_attribute;
    return spec.default_partition_type_attribute;
  };
  CounterAmounts available;
  for (const rv1::ResourceSlice* slice : pool.slices) {
    for (const rv1::CounterSet& set : slice->spec.shared_counters) {
      for (const auto& [name, counter] : set.counters) available[{set.name, name}] = counter.value;
    }
  }
  struct Group {
    std::vector<const PoolDevice*> fresh;
    int32_t total = 0;
    std::optional<ResourceList> cost;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  bool resolved = false;
  for (const PoolDevice& d : devices) {
    const bool in_use = held.devices.contains(d.device->name);
    CounterAmounts consumption = Consumption(*d.device);
    // Counters are debited once per held device, whatever the number of its holdings.
    if (in_use) {
      for (const auto& [key, amount] : consumption) {
        auto it = available.find(key);
        if (it != available.end()) it->second = it->second.Sub(amount);
      }
    }
    if (d.device->consumes_counters.empty()) continue;  // not a partition
    std::optional<std::string> attribute = attribute_of(*d.slice);
    if (!attribute) continue;
    resolved = true;
    std::optional<std::string> type = StringAttribute(*d.device, driver, *attribute);
    if (!type) {
      return "PartitionTypeMissing: device " + d.device->name + " has no string attribute " +
             *attribute;
    }
    Group& g = groups[{*attribute, *type}];
    ++g.total;
    ResourceList cost = Cost(consumption);
    if (!g.cost) {
      g.cost = std::move(cost);
    } else if (!(*g.cost == cost)) {
      return "PartitionCostMismatch: device " + d.device->name + " of partition type " + *type +
             " consumes other counters than its peers";
    }
    if (!in_use) g.fresh.push_back(&d);
  }
  if (!resolved) return std::nullopt;
  if (std::none_of(pool.slices.begin(), pool.slices.end(),
                   [](const auto* s) { return !s->spec.shared_counters.empty(); })) {
    return "PartitionTypeMissing: pool " + pool.name +
           " has a partition type attribute but publishes no sharedCounters";
  }
  if (groups.size() > api::validation::kPoolStatusMaxSummaryItems) {
    return "PartitionSummaryOverCap: " + std::to_string(groups.size()) +
           " partition types, more than " +
           std::to_string(api::validation::kPoolStatusMaxSummaryItems);
  }
  for (const auto& [key, g] : groups) {
    // Each group against the same baseline: the entries are alternatives, not a sum.
    CounterAmounts left = available;
    int32_t allocatable = 0;
    for (const PoolDevice* d : g.fresh) {
      CounterAmounts need = Consumption(*d->device);
      bool fits = std::all_of(need.begin(), need.end(), [&](const auto& kv) {
        auto it = left.find(kv.first);
        return it != left.end() && it->second.Compare(kv.second) >= 0;
      });
      if (!fits) continue;
      ++allocatable;
      for (const auto& [k, amount] : need) left[k] = left[k].Sub(amount);
    }
    ra3::PartitionTypeStatus p;
    p.attribute = key.first;
    p.type = key.second;
    p.total = g.total;
    p.allocatable = allocatable;
    out->partition_summary.push_back(std::move(p));
  }
  return std::nullopt;
}

std::optional<std::string> ShareableSummary(const std::vector<PoolDevice>& devices,
                                            const Held& held, ra3::PoolStatus* out) {
  ra3::ShareableSummaryStatus s;
  ResourceList total;
  int32_t fully = 0, partially = 0;
  for (const PoolDevice& d : devices) {
    if (!d.device->allow_multiple_allocations.value_or(false)) continue;
    (held.devices.contains(d.device->name) ? partially : fully) += 1;
    for (const auto& [name, capacity] : d.device->capacity) {
      allocator::AddResource(total, name, capacity.value);
    }
  }
  if (fully + partially == 0) return std::nullopt;
  if (total.size() > api::validation::kPoolStatusMaxSummaryItems) {
    return "ShareableSummaryOverCap: " + std::to_string(total.size()) +
           " shareable capacities, more than " +
           std::to_string(api::validation::kPoolStatusMaxSummaryItems);
  }
  s.fully_available_devices = fully;
  s.partially_available_devices = partially;
  for (const auto& [name, amount] : total) {
    ra3::ShareableCapacityStatus c;
    c.name = name;
    c.total = amount;
    auto it = held.consumed.find(name);
    Quantity consumed = it == held.consumed.end() ? Quantity::FromInt64(0) : it->second;
    c.consumed = consumed;
    Quantity left = amount.Sub(consumed);
    c.available = left.Sign() < 0 ? Quantity::FromInt64(0) : left;
    s.capacity.push_back(std::move(c));
  }
  out->shareable_summary = std::move(s);
  return std::nullopt;
}

}  // namespace

Result Compute(const ra3::ResourcePoolStatusRequestSpec& spec, const Inputs& inputs) {
  allocator::DeviceCatalog catalog;
  for (const rv1::ResourceSlice* slice : inputs.slices) {
    if (slice->spec.driver == spec.driver) catalog.SetSlice(*slice);
  }
  return Compute(spec, inputs, allocator::RecomputeHoldings(inputs.claims, catalog));
}

Result Compute(const ra3::ResourcePoolStatusRequestSpec& spec, const Inputs& inputs,
               const allocator::Holdings& holdings) {
  // Pools of the driver: the slices at the highest generation.
  std::map<std::string, Pool, std::less<>> pools;
  for (const rv1::ResourceSlice* slice : inputs.slices) {
    if (slice->spec.driver != spec.driver) continue;
    if (spec.pool_name && slice->spec.pool.name != *spec.pool_name) continue;
    Pool& pool = pools[slice->spec.pool.name];
    pool.name = slice->spec.pool.name;
    if (pool.slices.empty() || slice->spec.pool.generation > pool.generation) {
      pool.generation = slice->spec.pool.generation;
      pool.slices.clear();
    }
    if (slice->spec.pool.generation == pool.generation) pool.slices.push_back(slice);
  }
  // What the claims hold in each pool of the driver.
  std::map<std::string, Held, std::less<>> held;
  for (const auto& [uid, holding] : holdings.all()) {
    if (holding.in_flight) continue;
    for (const allocator::Holdings::HeldDevice& d : holding.devices) {
      if (d.driver != spec.driver) continue;
      Held& h = held[d.pool];
      ResourceList& device = h.devices[d.device];
      allocator::AddResources(device, d.consumed_capacity);
      allocator::AddResources(h.consumed, d.consumed_capacity);
    }
  }

  Result result;
  const size_t limit = spec.limit.value_or(api::validation::kPoolStatusDefaultLimit);
  result.status.pool_count = Int32(pools.size());
  for (auto& [name, pool] : pools) {
    std::sort(pool.slices.begin(), pool.slices.end(),
              [](const auto* a, const auto* b) { return a->metadata.name < b->metadata.name; });
    const int64_t expected = pool.slices.front()->spec.pool.resource_slice_count;
    if (static_cast<int64_t>(pool.slices.size()) < expected) ++result.incomplete;
    if (result.status.pools.size() >= limit) continue;

    ra3::PoolStatus out;
    out.driver = spec.driver;
    out.pool_name = name;
    out.generation = pool.generation;
    const std::optional<std::string>& node = pool.slices.front()->spec.node_name;
    if (node && !node->empty() &&
        std::all_of(pool.slices.begin(), pool.slices.end(),
                    [&](const auto* s) { return s->spec.node_name == node; })) {
      out.node_name = *node;
    }
    if (static_cast<int64_t>(pool.slices.size()) < expected) {
      out.validation_error = Truncate(
          "PoolIncomplete: pool " + spec.driver + "/" + name + " is incomplete: observed " +
          std::to_string(pool.slices.size()) + "/" + std::to_string(expected) +
          " slices at generation " + std::to_string(pool.generation));
      ++result.errors;
      result.status.pools.push_back(std::move(out));
      continue;
    }
    std::vector<PoolDevice> devices;
    for (const rv1::ResourceSlice* slice : pool.slices) {
      for (const rv1::Device& device : slice->spec.devices) devices.push_back({slice, &device});
    }
    static const Held kNone;
    auto h = held.find(name);
    const Held& pool_held = h == held.end() ? kNone : h->second;
    int32_t unavailable = 0;
    for (const PoolDevice& d : devices) unavailable += Unavailable(d, inputs.rules) ? 1 : 0;
    const int32_t total = Int32(devices.size());
    // Every held device counts, also one a newer generation no longer publishes (upstream).
    const int32_t allocated = Int32(pool_held.devices.size());
    out.resource_slice_count = Int32(pool.slices.size());
    out.total_devices = total;
    out.allocated_devices = allocated;
    out.unavailable_devices = unavailable;
    out.available_devices = std::max(0, total - allocated - unavailable);
    std::optional<std::string> error = PartitionSummary(spec, pool, devices, pool_held, &out);
    if (error) out.partition_summary.clear();
    std::optional<std::string> shareable = ShareableSummary(devices, pool_held, &out);
    if (!error) error = shareable;
    if (error) {
      out.validation_error = Truncate(*error);
      ++result.errors;
    }
    result.status.pools.push_back(std::move(out));
  }
  return result;
}

std::string CompleteMessage(const Result& result) {
  std::string message =
      "Calculated status for " + std::to_string(result.status.pools.size()) + " pools";
  if (result.errors > 0) message += " (" + std::to_string(result.errors) + " incomplete)";
  return message;
}

}  // namespace draplane::controllers::poolstatus
