// What a device allocation costs its tenant: draplane's Allocation-mode charging rules
// (docs/design/holdings.md), in ResourceQuota resource names.
//
// One rule, one place: the quota constraint inside the search (quota.h), the scheduler's live
// ledger, the recompute that checks it, the quota controller's `status.used` and the simulator
// all charge through the functions below, so they cannot disagree.
//
//   resource name                                        charged per allocated device result
//   <class>.deviceclass.resource.k8s.io/devices          1 (a share counts 1 too)
//   <class>.deviceclass.draplane.dev/counter.<c>         the device's consumesCounters[*][c]
//   <driver>.driver.draplane.dev/counter.<c>             the same amount, keyed by driver
//   <class>.deviceclass.draplane.dev/capacity.<id>       an exclusive device: its full capacity;
//                                                        a share: its consumedCapacity
//
// `<class>` is the class of the (sub)request the device was allocated for (so a firstAvailable
// request charges only the chosen subrequest's class), `<id>` a capacity's identifier without
// its domain. A device without `consumesCounters` is charged its capacities as counters (a
// whole GPU's `memory` counts on the same `counter.memory` key as its MIG slices; a share: its
// consumed capacity). Admin-access results charge nothing. The counters of a share of a
// multi-allocatable device that consumes counters are charged once per namespace and device
// (`ClaimCharge::share_counters`; Holdings applies the rule), not once per share.
//
// Thread-safety: plain functions and values; a DeviceCatalog is not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/gen/resource_v1_types.h"
#include "api/quantity.h"
#include "api/quota/usage.h"

namespace draplane::allocator {

// Amounts by resource name, as ResourceQuota `spec.hard` / `status.used` hold them
// (api/quota/usage.h). Entries are never zero in the values this module returns.
using ResourceList = api::quota::ResourceList;

// `into[k] += from[k]` for every key (sign -1 subtracts); keys that reach zero are erased.
void AddResources(ResourceList& into, const ResourceList& from, int sign = 1);
// `into[key] += amount`, erasing the key when it reaches zero.
void AddResource(ResourceList& into, std::string_view key, const api::Quantity& amount,
                 int sign = 1);

// --- resource names -------------------------------------------------------------------------

// "<class>.deviceclass.draplane.dev/counter.<counter>".
std::string DeviceClassCounterResource(std::string_view device_class, std::string_view counter);
// "<driver>.driver.draplane.dev/counter.<counter>".
std::string DriverCounterResource(std::string_view driver, std::string_view counter);
// "<class>.deviceclass.draplane.dev/capacity.<id>".
std::string DeviceClassCapacityResource(std::string_view device_class, std::string_view id);

// The `devices` key of a class is upstream's, api::quota::DeviceClassResourceName.

// A resource name of the table above, taken apart (api::quota::IsAllocationChargedKey says
// which names the scheduler owns; these are the ones it knows how to charge).
struct DeviceResource {
  enum class Kind { kDevices, kClassCounter, kDriverCounter, kClassCapacity };
  Kind kind = Kind::kDevices;
  std::string subject;  // the device class, or the driver for kDriverCounter
  std::string name;     // the counter or capacity identifier; empty for kDevices
};
// The parts of `resource`, or nullopt when it is not one of the names above.
std::optional<DeviceResource> ParseDeviceResource(std::string_view resource);

// The identifier of a published capacity name: "gpu.example.com/memory" -> "memory".
std::string_view CapacityId(std::string_view published);

// --- device facts ---------------------------------------------------------------------------

// What the charging rules read from a device, independent of feature gates.
struct DeviceFacts {
  std::string driver;
  bool consumes_counters = false;
  bool multi_allocatable = false;
  ResourceList counters;  // counter name -> amount, summed over consumesCounters entries
  ResourceList capacity;  // capacity identifier -> value
};

// Facts from the parts of a device: `capacity` as (published name, value). Where two published
// names share an identifier, the one qualified with the driver's domain wins, then the
// unqualified one (upstream resolveDeviceCapacity), then the first.
DeviceFacts MakeDeviceFacts(
    std::string_view driver,
    const std::vector<api::resourcev1::DeviceCounterConsumption>& consumes_counters,
    std::span<const std::pair<std::string_view, api::Quantity>> capacity, bool multi_allocatable);
DeviceFacts MakeDeviceFacts(std::string_view driver, const api::resourcev1::Device& device);

// The devices of ResourceSlices by (driver, pool, device), for charging allocations after the
// fact. Where a pool has slices of several generations, the newest generation's device wins
// (ties: the slice first by name).
class DeviceCatalog {
 public:
  // Adds or replaces the slice named `slice.metadata.name`.
  void SetSlice(const api::resourcev1::ResourceSlice& slice);
  void RemoveSlice(std::string_view name);
  // The facts of a device, or null when no slice publishes it.
  const DeviceFacts* Find(std::string_view driver, std::string_view pool,
                          std::string_view device) const;
  size_t slice_count() const { return slices_.size(); }

 private:
  struct Entry {
    int64_t generation = 0;
    std::string slice;
    DeviceFacts facts;
  };
  // slice name -> device keys it contributed
  std::map<std::string, std::vector<std::string>, std::less<>> slices_;
  std::map<std::string, std::vector<Entry>, std::less<>> devices_;
};

// "driver/pool/device", the key devices are held under.
std::string DeviceKey(std::string_view driver, std::string_view pool, std::string_view device);

// --- charges --------------------------------------------------------------------------------

// The charge of one allocated device result.
struct DeviceCharge {
  ResourceList additive;  // everything except the counters of a share
  // A share of a device with consumesCounters: its counters, charged once per namespace and
  // device. Empty otherwise.
  ResourceList share_counters;
};

// The charge of one device allocated for a request of class `device_class`. `share_consumed`:
// the consumed capacity of a share (by published name), null for an exclusive device.
DeviceCharge ChargeDevice(std::string_view device_class, const DeviceFacts& facts,
                          bool admin_access, const ResourceList* share_consumed);

// One entry of a device's charge, its resource name in parts (ResourceName joins them). Views
// stay valid for the call only.
struct ChargeItem {
  DeviceResource::Kind kind = DeviceResource::Kind::kDevices;
  std::string_view subject;  // the device class, or the driver for kDriverCounter
  std::string_view name;     // the counter or capacity identifier; empty for kDevices
  const api::Quantity& amount;
  bool share_counter = false;  // DeviceCharge::share_counters rather than additive
};
// The rule behind ChargeDevice, entry by entry and without building names (the quota constraint
// inside the search matches them against the names it limits). An entry may repeat a name or
// carry zero; ChargeDevice sums them.
void ForEachDeviceCharge(std::string_view device_class, const DeviceFacts& facts, bool admin_access,
                         const ResourceList* share_consumed,
                         const std::function<void(const ChargeItem&)>& visit);
// The resource name of a DeviceResource's parts.
std::string ResourceName(DeviceResource::Kind kind, std::string_view subject,
                         std::string_view name);

// The charge of a claim's allocation.
struct ClaimCharge {
  ResourceList additive;
  // Device key -> counters of the claim's shares of that device (once per namespace).
  std::map<std::string, ResourceList, std::less<>> share_counters;
  // Device keys of results the catalog does not know: charged `devices` (and a share its
  // consumed capacity) only.
  std::vector<std::string> unknown_devices;

  friend bool operator==(const ClaimCharge&, const ClaimCharge&) = default;
};

// The class of the request or subrequest a result names ("req" or "req/sub") in `claim`, or ""
// when the claim has no such request.
std::string_view RequestClass(const api::resourcev1::ResourceClaim& claim,
                              std::string_view request);

// The charge of `allocation`, made for `claim`.
ClaimCharge ChargeAllocation(const api::resourcev1::ResourceClaim& claim,
                             const api::resourcev1::AllocationResult& allocation,
                             const DeviceCatalog& catalog);

}  // namespace draplane::allocator
