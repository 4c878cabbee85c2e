#include "allocator/charges.h"

#include <algorithm>

namespace draplane::allocator {

namespace rv1 = api::resourcev1;

namespace {

constexpr std::string_view kClassInfix = ".deviceclass.draplane.dev/";
constexpr std::string_view kDriverInfix = ".driver.draplane.dev/";
constexpr std::string_view kCounterPrefix = "counter.";
constexpr std::string_view kCapacityPrefix = "capacity.";

// The domain of a published capacity name ("" when unqualified).
std::string_view CapacityDomain(std::string_view published) {
  size_t slash = published.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : published.substr(0, slash);
}

// Precedence of a published name among those with the same identifier: lower wins.
int CapacityRank(std::string_view published, std::string_view driver) {
  std::string_view domain = CapacityDomain(published);
  if (domain == driver && !domain.empty()) return 0;
  return domain.empty() ? 1 : 2;
}

// Writes the resource name of a DeviceResource's parts into `out` (replacing its contents): a
// charge builds one name per item, and a reused buffer allocates only when a name outgrows it.
void WriteResourceName(DeviceResource::Kind kind, std::string_view subject, std::string_view name,
                       std::string& out) {
  out.assign(subject);
  switch (kind) {
    case DeviceResource::Kind::kDevices:
      out.append(api::quota::kDevicesPerClassSuffix);  // api::quota::DeviceClassResourceName
      return;
    case DeviceResource::Kind::kClassCounter:
      out.append(kClassInfix).append(kCounterPrefix).append(name);
      return;
    case DeviceResource::Kind::kDriverCounter:
      out.append(kDriverInfix).append(kCounterPrefix).append(name);
      return;
    case DeviceResource::Kind::kClassCapacity:
      out.append(kClassInfix).append(kCapacityPrefix).append(name);
      return;
  }
}

}  // namespace

void AddResource(ResourceList& into, std::string_view key, const api::Quantity& amount, int sign) {
  if (amount.IsZero()) return;
  auto it = into.find(key);
  if (it == into.end()) {
    into.emplace(std::string(key), sign > 0 ? amount : amount.Neg());
    return;
  }
  it->second = sign > 0 ? it->second.Add(amount) : it->second.Sub(amount);
  if (it->second.IsZero()) into.erase(it);
}

void AddResources(ResourceList& into, const ResourceList& from, int sign) {
  for (const auto& [key, amount] : from) AddResource(into, key, amount, sign);
}

std::string DeviceClassCounterResource(std::string_view device_class, std::string_view counter) {
  return ResourceName(DeviceResource::Kind::kClassCounter, device_class, counter);
}

std::string DriverCounterResource(std::string_view driver, std::string_view counter) {
  return ResourceName(DeviceResource::Kind::kDriverCounter, driver, counter);
}

std::string DeviceClassCapacityResource(std::string_view device_class, std::string_view id) {
  return ResourceName(DeviceResource::Kind::kClassCapacity, device_class, id);
}

std::optional<DeviceResource> ParseDeviceResource(std::string_view resource) {
  DeviceResource out;
  if (resource.ends_with(api::quota::kDevicesPerClassSuffix)) {
    std::string_view subject =
        resource.substr(0, resource.size() - api::quota::kDevicesPerClassSuffix.size());
    if (subject.empty()) return std::nullopt;
    out.kind = DeviceResource::Kind::kDevices;
    out.subject = std::string(subject);
    return out;
  }
  for (bool driver : {false, true}) {
    std::string_view infix = driver ? kDriverInfix : kClassInfix;
    size_t at = resource.find(infix);
    if (at == std::string_view::npos || at == 0) continue;
    std::string_view rest = resource.substr(at + infix.size());
    std::string_view name;
    if (rest.starts_with(kCounterPrefix)) {
      name = rest.substr(kCounterPrefix.size());
      out.kind =
          driver ? DeviceResource::Kind::kDriverCounter : DeviceResource::Kind::kClassCounter;
    } else if (!driver && rest.starts_with(kCapacityPrefix)) {
      name = rest.substr(kCapacityPrefix.size());
      out.kind = DeviceResource::Kind::kClassCapacity;
    } else {
      return std::nullopt;
    }
    if (name.empty()) return std::nullopt;
    out.subject = std::string(resource.substr(0, at));
    out.name = std::string(name);
    return out;
  }
  return std::nullopt;
}

std::string_view CapacityId(std::string_view published) {
  size_t slash = published.rfind('/');
  return slash == std::string_view::npos ? published : published.substr(slash + 1);
}

DeviceFacts MakeDeviceFacts(std::string_view driver,
                            const std::vector<rv1::DeviceCounterConsumption>& consumes_counters,
                            std::span<const std::pair<std::string_view, api::Quantity>> capacity,
                            bool multi_allocatable) {
  DeviceFacts facts;
  facts.driver = std::string(driver);
  facts.multi_allocatable = multi_allocatable;
  facts.consumes_counters = !consumes_counters.empty();
  for (const rv1::DeviceCounterConsumption& consumption : consumes_counters) {
    for (const auto& [name, counter] : consumption.counters) {
      AddResource(facts.counters, name, counter.value);
    }
  }
  std::map<std::string_view, int> ranks;
  for (const auto& [published, value] : capacity) {
    std::string_view id = CapacityId(published);
    int rank = CapacityRank(published, driver);
    auto [it, fresh] = ranks.emplace(id, rank);
    if (!fresh && it->second <= rank) continue;
    it->second = rank;
    facts.capacity[std::string(id)] = value;
  }
  return facts;
}

DeviceFacts MakeDeviceFacts(std::string_view driver, const rv1::Device& device) {
  std::vector<std::pair<std::string_view, api::Quantity>> capacity;
  capacity.reserve(device.capacity.size());
  for (const auto& [name, cap] : device.capacity) capacity.emplace_back(name, cap.value);
  return MakeDeviceFacts(driver, device.consumes_counters, capacity,
                         device.allow_multiple_allocations.value_or(false));
}

std::string DeviceKey(std::string_view driver, std::string_view pool, std::string_view device) {
  std::string key;
  key.reserve(driver.size() + pool.size() + device.size() + 2);
  key.append(driver).push_back('/');
  key.append(pool).push_back('/');
  key.append(device);
  return key;
}

void DeviceCatalog::SetSlice(const rv1::ResourceSlice& slice) {
  RemoveSlice(slice.metadata.name);
  const rv1::ResourceSliceSpec& spec = slice.spec;
  std::vector<std::string>& keys = slices_[slice.metadata.name];
  for (const rv1::Device& device : spec.devices) {
    std::string key = DeviceKey(spec.driver, spec.pool.name, device.name);
    std::vector<Entry>& entries = devices_[key];
    entries.push_back(
        Entry{spec.pool.generation, slice.metadata.name, MakeDeviceFacts(spec.driver, device)});
    // Newest generation first, then by slice name: Find reads the front.
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      if (a.generation != b.generation) return a.generation > b.generation;
      return a.slice < b.slice;
    });
    keys.push_back(std::move(key));
  }
}

void DeviceCatalog::RemoveSlice(std::string_view name) {
  auto it = slices_.find(name);
  if (it == slices_.end()) return;
  for (const std::string& key : it->second) {
    auto d = devices_.find(key);
    if (d == devices_.end()) continue;
    std::erase_if(d->second, [&](const Entry& e) { return e.slice == name; });
    if (d->second.empty()) devices_.erase(d);
  }
  slices_.erase(it);
}

const DeviceFacts* DeviceCatalog::Find(std::string_view driver, std::string_view pool,
                                       std::string_view device) const {
  auto it = devices_.find(DeviceKey(driver, pool, device));
  if (it == devices_.end() || it->second.empty()) return nullptr;
  return &it->second.front().facts;
}

void ForEachDeviceCharge(std::string_view device_class, const DeviceFacts& facts, bool admin_access,
                         const ResourceList* share_consumed,
                         const std::function<void(const ChargeItem&)>& visit) {
  if (admin_access) return;
  const bool share_counters = share_consumed != nullptr && facts.consumes_counters;
  auto counter = [&](std::string_view name, const api::Quantity& amount, bool of_share) {
    if (!device_class.empty()) {
      visit({DeviceResource::Kind::kClassCounter, device_class, name, amount, of_share});
    }
    visit({DeviceResource::Kind::kDriverCounter, facts.driver, name, amount, of_share});
  };
  static const api::Quantity kOne = api::Quantity::FromInt64(1);
  if (!device_class.empty()) visit({DeviceResource::Kind::kDevices, device_class, "", kOne, false});
  // The capacity the result takes: all of an exclusive device, a share's consumption (summed
  // per identifier: two published names may share one).
  ResourceList summed;
  const ResourceList* taken = &facts.capacity;
  if (share_consumed != nullptr) {
    for (const auto& [published, amount] : *share_consumed) {
      AddResource(summed, CapacityId(published), amount);
    }
    taken = &summed;
  }
  if (!device_class.empty()) {
    for (const auto& [id, amount] : *taken) {
      visit({DeviceResource::Kind::kClassCapacity, device_class, id, amount, false});
    }
  }
  if (!facts.consumes_counters) {
    for (const auto& [id, amount] : *taken) counter(id, amount, false);
  } else {
    for (const auto& [name, amount] : facts.counters) counter(name, amount, share_counters);
  }
}

namespace {

// Adds a device's charge to `additive` and `share_counters` (ChargeDevice's rule).
void AddDeviceCharge(std::string_view device_class, const DeviceFacts& facts, bool admin_access,
                     const ResourceList* share_consumed, ResourceList& additive,
                     ResourceList& share_counters) {
  std::string name;
  ForEachDeviceCharge(
      device_class, facts, admin_access, share_consumed, [&](const ChargeItem& item) {
        WriteResourceName(item.kind, item.subject, item.name, name);
        AddResource(item.share_counter ? share_counters : additive, name, item.amount);
      });
}

}  // namespace

std::string ResourceName(DeviceResource::Kind kind, std::string_view subject,
                         std::string_view name) {
  std::string out;
  WriteResourceName(kind, subject, name, out);
  return out;
}

DeviceCharge ChargeDevice(std::string_view device_class, const DeviceFacts& facts,
                          bool admin_access, const ResourceList* share_consumed) {
  DeviceCharge out;
  AddDeviceCharge(device_class, facts, admin_access, share_consumed, out.additive,
                  out.share_counters);
  return out;
}

std::string_view RequestClass(const rv1::ResourceClaim& claim, std::string_view request) {
  size_t slash = request.find('/');
  std::string_view parent = request.substr(0, slash);
  for (const rv1::DeviceRequest& r : claim.spec.devices.requests) {
    if (r.name != parent) continue;
    if (slash == std::string_view::npos) {
      return r.exactly.has_value() ? std::string_view(r.exactly->device_class_name) : "";
    }
    std::string_view sub = request.substr(slash + 1);
    for (const rv1::DeviceSubRequest& s : r.first_available) {
      if (s.name == sub) return s.device_class_name;
    }
    return "";
  }
  return "";
}

ClaimCharge ChargeAllocation(const rv1::ResourceClaim& claim,
                             const rv1::AllocationResult& allocation,
                             const DeviceCatalog& catalog) {
  ClaimCharge out;
  for (const rv1::DeviceRequestAllocationResult& r : allocation.devices.results) {
    if (r.admin_access.value_or(false)) continue;
    std::string_view device_class = RequestClass(claim, r.request);
    const bool share = r.share_id.has_value();
    ResourceList consumed;
    for (const auto& [name, amount] : r.consumed_capacity) consumed.emplace(name, amount);
    const DeviceFacts* facts = catalog.Find(r.driver, r.pool, r.device);
    DeviceFacts unknown;
    if (facts == nullptr) {
      out.unknown_devices.push_back(DeviceKey(r.driver, r.pool, r.device));
      unknown.driver = r.driver;
      facts = &unknown;
    }
    // The device's charge goes straight into the claim's sum (exact arithmetic: the same sum
    // as charging each device apart and adding those).
    ResourceList share_counters;
    AddDeviceCharge(device_class, *facts, /*admin_access=*/false, share ? &consumed : nullptr,
                    out.additive, share_counters);
    if (!share_counters.empty()) {
      // The device's counters, once however many shares of it the claim holds.
      out.share_counters[DeviceKey(r.driver, r.pool, r.device)] = std::move(share_counters);
    }
  }
  return out;
}

}  // namespace draplane::allocator
