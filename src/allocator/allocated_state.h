// Who holds what: the devices, shares and capacity already allocated outside the allocation at
// hand, in the shape of upstream's `AllocatedState` (`structured/schedulerapi/types.go`):
// exclusively allocated devices, shared device IDs (device + share ID) and the capacity those
// shares consume, aggregated per device.
//
// The scheduler builds one from claim statuses (plus its in-flight allocations) and keeps it
// current with AddAllocation / RemoveAllocation as claims are allocated and deallocated; the
// simulator does the same on its virtual cluster. Devices need not exist in any slice.
//
// Every mutation bumps a version per (driver, pool); the allocator's per-node cache compares
// those versions to know that nothing a node can see has changed (docs/design/allocator.md §5).
//
// Thread-safety: not thread-safe. Ownership: plain value semantics for the data; copying gives
// a new instance identity (caches keyed by the old one do not apply to the copy).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "api/gen/resource_v1_types.h"
#include "api/quantity.h"

namespace draplane::allocator {

class AllocatedState {
 public:
  // Consumed capacity by capacity name (as written in `consumedCapacity`).
  using Capacity = std::map<std::string, api::Quantity, std::less<>>;

  // What is known about one device.
  struct DeviceRecord {
    int exclusive = 0;                               // exclusive allocations holding it
    std::map<std::string, int, std::less<>> shares;  // share ID -> times added
    Capacity aggregated;                             // consumed capacity, summed
    int capacity_entries = 0;  // AddConsumedCapacity calls not yet removed (an entry exists)
  };

  // Everything about one (driver, pool). Records are never erased, so pointers to them stay
  // valid for the life of the state.
  struct PoolRecord {
    uint64_t version = 0;
    std::unordered_map<std::string, DeviceRecord> devices;
  };

  AllocatedState();
  AllocatedState(const AllocatedState& other);
  AllocatedState& operator=(const AllocatedState& other);
  AllocatedState(AllocatedState&&) noexcept;
  AllocatedState& operator=(AllocatedState&&) noexcept;
  ~AllocatedState();

  // An exclusive allocation of a device (upstream AllocatedDevices).
  void AddDevice(std::string_view driver, std::string_view pool, std::string_view device);
  // Undoes one AddDevice; a device not held is ignored.
  void RemoveDevice(std::string_view driver, std::string_view pool, std::string_view device);

  // A share of a multi-allocatable device (upstream AllocatedSharedDeviceIDs).
  void AddShare(std::string_view driver, std::string_view pool, std::string_view device,
                std::string_view share_id);
  void RemoveShare(std::string_view driver, std::string_view pool, std::string_view device,
                   std::string_view share_id);

  // Capacity consumed on a device (upstream AggregatedCapacity.Insert / Remove). The device
  // counts as holding capacity while any added entry is not removed.
  void AddConsumedCapacity(std::string_view driver, std::string_view pool, std::string_view device,
                           const Capacity& consumed);
  void RemoveConsumedCapacity(std::string_view driver, std::string_view pool,
                              std::string_view device, const Capacity& consumed);

  // Adds every device of an allocation result the way the scheduler counts it: admin-access
  // results are not counted; a result with a share ID adds the share and its consumed capacity
  // (an entry even when empty); the others are exclusive.
  void AddAllocation(const api::resourcev1::AllocationResult& allocation);
  void RemoveAllocation(const api::resourcev1::AllocationResult& allocation);
  // One device result of an allocation, counted as AddAllocation counts it.
  void AddResult(const api::resourcev1::DeviceRequestAllocationResult& result);
  void RemoveResult(const api::resourcev1::DeviceRequestAllocationResult& result);

  // Queries. A device never mentioned is free.
  bool IsExclusivelyAllocated(std::string_view driver, std::string_view pool,
                              std::string_view device) const;
  // upstream IsDeviceAllocated: exclusive, any share, or any recorded consumed capacity.
  bool IsAllocated(std::string_view driver, std::string_view pool, std::string_view device) const;
  // The record of a device, or null.
  const DeviceRecord* Find(std::string_view driver, std::string_view pool,
                           std::string_view device) const;
  // The record of a pool, or null when nothing in it was ever recorded.
  const PoolRecord* FindPool(std::string_view driver, std::string_view pool) const;
  // The record of a pool, created (empty, version 0) when missing; stable for the state's life.
  const PoolRecord* PoolFor(std::string_view driver, std::string_view pool) const;

  // Identity of this instance (never reused within the process) and a counter bumped by every
  // mutation.
  uint64_t id() const { return id_; }
  uint64_t version() const { return version_; }
  // Number of devices with any record.
  size_t size() const;

 private:
  PoolRecord& MutablePool(std::string_view driver, std::string_view pool);
  DeviceRecord& MutableDevice(std::string_view driver, std::string_view pool,
                              std::string_view device);

  uint64_t id_;
  uint64_t version_ = 0;
  // Key: driver + '\0' + pool. Mutable so PoolFor can create records for const callers; records
  // are heap-allocated so their addresses survive rehashing.
  mutable std::unordered_map<std::string, std::unique_ptr<PoolRecord>> pools_;
};

}  // namespace draplane::allocator
