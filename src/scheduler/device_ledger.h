// The scheduler's one view of who holds what (roadmap seam 2): every device allocation the
// scheduler knows about — claims the API shows as allocated ("committed") and allocations this
// scheduler reserved but has not seen written back yet ("in flight", upstream's
// inFlightAllocations) — as an allocator::AllocatedState the allocator reads, plus a
// per-(device class, node) index of free candidate devices that lets the scheduler reject a node
// without running the allocator.
//
// Free-device index. For every node-local slice (spec.nodeName set, no per-device node
// selection) and every device in it, the classes whose selectors match the device are computed
// once per slice and class version (CEL, errors count as a match; a device with a list-typed
// attribute, which selectors read differently per release, counts as a match). `FreeDevices(class,
// node)` is then the number of those devices that are not allocated. It is an upper bound of what
// the allocator can use (taints, counters, request selectors and constraints only remove more), so
// `FreeDevices < needed` proves a request cannot be satisfied on the node. The bound is unknown
// (kUnknown) for a class that matches any device published for more than one node, or a
// multi-allocatable device on the node, where counting devices says nothing.
//
// Holdings. Every allocation is also charged to its claim's namespace in an allocator::Holdings
// (allocator/holdings.h: usage per device class, driver counter and capacity dimension, devices
// and their holders, committed and in flight), with the charges of allocator/charges.h computed
// from the ResourceSlices the ledger is given (and charged again when a slice of their devices
// changes). Tenancy policies read it: the Allocation-mode quota
// constraint, the quota give-back, the periodic recompute that checks it (`Recheck`), explain pod
// and metrics. It is rebuilt at start from the informers' initial lists like the rest.
//
// Conflicts. Several schedulers may allocate concurrently (replicas without leader election).
// Allocations are written in one total order (the API server's resourceVersion) and observed in
// that order, so `Commit` reports whether a newly observed allocation overlaps a committed one
// observed earlier (in-flight allocations do not count: they are not in that order): the later
// writer lost and must give the devices back (scheduler.md, "Replicas").
//
// Thread-safety: not thread-safe; owned by the scheduler's loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "allocator/allocated_state.h"
#include "allocator/charges.h"
#include "allocator/hold.h"
#include "allocator/holdings.h"
#include "api/gen/resource_v1_types.h"
#include "common/string_hash.h"

namespace draplane::cel {
class Environment;
class Program;
class DeviceInput;
}  // namespace draplane::cel

namespace draplane::scheduler {

struct NodeEntryCache;  // framework/types.h

// Told of every change of a DeviceLedger's holdings and devices (the fair-share model,
// fair_share.h, keeps its usage per tenant and domain from these, incrementally).
class HoldingsObserver {
 public:
  virtual ~HoldingsObserver() = default;
  // A holding was added or removed (a replaced one: removed, then its successor added). The
  // reference is valid for the call only.
  virtual void OnHoldingAdded(const allocator::Holdings::Holding& holding) = 0;
  virtual void OnHoldingRemoved(const allocator::Holdings::Holding& holding) = 0;
  // The ledger's slices or classes changed (what devices a class matches may have).
  virtual void OnDevicesChanged() = 0;
};

class DeviceLedger {
 public:
  static constexpr int64_t kUnknown = std::numeric_limits<int64_t>::max();

  DeviceLedger();
  ~DeviceLedger();
  DeviceLedger(const DeviceLedger&) = delete;
  DeviceLedger& operator=(const DeviceLedger&) = delete;

  // Device classes and slices, for the free-device index.
  void SetClass(std::shared_ptr<const api::resourcev1::DeviceClass> device_class);
  void RemoveClass(std::string_view name);
  void SetSlice(std::shared_ptr<const api::resourcev1::ResourceSlice> slice);
  void RemoveSlice(std::string_view name);

  // Records the allocation a claim has in the API (replacing an earlier record of the same claim
  // uid; an unchanged allocation is a no-op). An in-flight record of the claim is dropped.
  // Returns true when one of its devices was already held by another committed claim (a
  // conflict: this allocation was written later).
  bool Commit(std::shared_ptr<const api::resourcev1::ResourceClaim> claim);
  // Forgets a claim's committed allocation (deallocated or deleted).
  void Uncommit(std::string_view uid);
  // True while the claim's committed allocation overlaps one observed earlier: its writer lost
  // the race and will give the devices back, so nobody may use the allocation meanwhile.
  bool IsConflicting(std::string_view uid) const;
  // An allocation this scheduler reserved for `claim` (upstream SignalClaimPendingAllocation);
  // `uid` keys it (the claim's uid, or a made-up one for a claim not created yet). `charge`,
  // when given, is ChargeAllocation(*claim, *allocation, catalog()) computed by the caller (the
  // scheduler's decision has it already).
  void AddInFlight(std::string uid, std::shared_ptr<const api::resourcev1::ResourceClaim> claim,
                   std::shared_ptr<const api::resourcev1::AllocationResult> allocation,
                   std::optional<allocator::ClaimCharge> charge = std::nullopt);
  // Drops an in-flight allocation; false when there was none.
  bool RemoveInFlight(std::string_view uid);
  // upstream ClaimHasPendingAllocation.
  bool IsInFlight(std::string_view uid) const { return in_flight_.contains(uid); }
  // The committed allocation of a claim, or null.
  const api::resourcev1::AllocationResult* Committed(std::string_view uid) const;

  // Everything held: committed plus in flight.
  const allocator::AllocatedState& allocated() const { return allocated_; }

  // Devices of `class_name` on `node` that are not allocated, or kUnknown (see above).
  int64_t FreeDevices(std::string_view class_name, std::string_view node) const;
  // Devices of `class_name` on `node`, allocated or not, or kUnknown (as FreeDevices).
  int64_t Devices(std::string_view class_name, std::string_view node) const;
  // FreeDevices with its two lookups done once each, for checking a Pod's classes against every
  // candidate node: a class's id (kNoClass for an unknown class; valid until the classes
  // change, which they do not within a scheduling cycle), and a node's counts (FreeOn), asked
  // per class id.
  static constexpr uint32_t kNoClass = std::numeric_limits<uint32_t>::max();
  uint32_t ClassId(std::string_view class_name) const;
  // The node's entry is remembered in `cache` (the node's NodeInfo keeps one) and looked up
  // again only after the ledger's table of nodes gained a node or was rebuilt.
  class NodeFree;
  NodeFree FreeOn(const HashedString& node, NodeEntryCache* cache) const;
  // The devices of `class_name` in slices local to `node` that nothing holds (committed or in
  // flight), each once, in slice then device order: what a starvation hold on the node can take.
  std::vector<allocator::HeldDeviceId> FreeDevicesOn(std::string_view node,
                                                     std::string_view class_name) const;

  // Every slice, in name order, with the names of the classes whose selectors match each of
  // its devices as the free-device index computed them (sorted, per device): what the
  // device-state metrics read (device_states.h) instead of evaluating selectors again.
  void ForEachSlice(
      const std::function<void(const api::resourcev1::ResourceSlice& slice,
                               const std::vector<std::vector<std::string_view>>& classes)>& fn)
      const;

  // Counts the changes of devices, classes and allocations (what FreeDevicesOn reads): equal
  // counts mean equal answers.
  uint64_t changes() const { return changes_; }

  // One observer (null: none); it is told of every later change.
  void SetObserver(HoldingsObserver* observer) { observer_ = observer; }
  HoldingsObserver* observer() const { return observer_; }

  // Who holds what per tenant (allocator/holdings.h), committed and in flight.
  const allocator::Holdings& holdings() const { return holdings_; }
  // The devices of the slices the ledger was given, for charging.
  const allocator::DeviceCatalog& catalog() const { return catalog_; }
  // Claim keys holding a device ("namespace/name"), sorted.
  std::vector<std::string> HoldersOf(std::string_view driver, std::string_view pool,
                                     std::string_view device) const;
  // Compares the committed holdings with a recompute from `claims` (the claims as the scheduler
  // caches them) and returns the differences (allocator::CompareHoldings); when there are any,
  // rebuilds the holdings from the ledger's own records.
  std::vector<allocator::HoldingsDifference> Recheck(
      const std::vector<const api::resourcev1::ResourceClaim*>& claims);

 private:
  struct ClassEntry;
  struct SliceEntry;
  struct Counts {
    int64_t total = 0;
    int64_t free = 0;
    int64_t shared = 0;  // multi-allocatable devices
  };
  // One node's counts by class id (ids are dense: next_class_id_): FreeDevices, asked for every
  // candidate node, indexes instead of hashing into a map per node.
  using NodeCounts = std::vector<Counts>;
  struct Location {
    SliceEntry* slice = nullptr;
    size_t device = 0;
  };
  struct Record {
    bool conflicting = false;
    std::shared_ptr<const api::resourcev1::ResourceClaim> claim;          // committed
    std::shared_ptr<const api::resourcev1::AllocationResult> allocation;  // in flight
    std::shared_ptr<const api::resourcev1::ResourceClaim> spec;           // in flight: its claim
    const api::resourcev1::AllocationResult& result() const {
      return claim ? *claim->status.allocation : *allocation;
    }
  };

  // FreeDevices, Devices and NodeFree: `field` of a class's counts on a node (null: the node has
  // no devices), or kUnknown.
  int64_t Count(uint32_t class_id, const NodeCounts* node, int64_t Counts::*field) const;
  // `node`: a name, or a HashedString (FreeOn, asked per candidate node).
  template <typename NodeName>
  const NodeCounts* CountsOn(const NodeName& node) const;
  // The node's counts, made (and nodes_version_ advanced) when the node has none yet.
  NodeCounts& CountsFor(const std::string& node);
  void AddResult(const api::resourcev1::AllocationResult& allocation);
  // Counts a committed allocation in committed_holders_ / committed_exclusive_ (sign +1 or -1).
  void CountCommitted(const api::resourcev1::AllocationResult& allocation, int sign);
  void RemoveResult(const api::resourcev1::AllocationResult& allocation);
  // Moves a device between free and held in the index.
  void AdjustFree(std::string_view driver, std::string_view pool, std::string_view device,
                  int64_t delta);
  void BuildSlice(SliceEntry& entry);
  // Charges again the holdings of the slice's devices (charges follow the published devices).
  void Recharge(const api::resourcev1::ResourceSlice& slice);
  void Contribute(SliceEntry& entry, int sign);
  void RebuildAll();
  // Counts a change of slices or classes and tells the observer.
  void DevicesChanged();
  // holdings_.Put / Erase, telling the observer.
  void PutHolding(allocator::Holdings::Holding holding);
  void EraseHolding(std::string_view uid);
  // holdings_.MarkCommitted, telling the observer (the in-flight holding removed, the committed
  // one added); false when the uid holds nothing in flight.
  bool CommitHolding(std::string_view uid);
  static std::string DeviceKey(std::string_view driver, std::string_view pool,
                               std::string_view device);
  using InFlight = std::unordered_map<std::string, Record, StringHash, std::equal_to<>>;
  // Drops an in-flight record and its holding; its devices stay counted (the caller's part).
  void ForgetInFlight(InFlight::iterator it);

  std::shared_ptr<const cel::Environment> env_;
  std::map<std::string, std::unique_ptr<ClassEntry>, std::less<>> classes_;
  uint32_t next_class_id_ = 0;
  std::map<std::string, std::unique_ptr<SliceEntry>, std::less<>> slices_;
  // node -> counts by class id; the transparent hash lets FreeDevices, asked once per candidate
  // node, look a node up without building a string.
  std::unordered_map<std::string, NodeCounts, StringHash, std::equal_to<>> nodes_;
  // Advanced whenever nodes_ gains a node or is cleared (its entries stay put otherwise): what a
  // NodeEntryCache remembers.
  uint64_t nodes_version_ = 1;
  // class id -> number of matching devices visible to more than one node
  std::vector<int64_t> nonlocal_;
  std::unordered_map<std::string, std::vector<Location>> locations_;

  allocator::AllocatedState allocated_;
  allocator::DeviceCatalog catalog_;
  allocator::Holdings holdings_;
  // By claim uid; only looked up (Recheck rebuilds holdings from them in any order).
  std::unordered_map<std::string, Record, StringHash, std::equal_to<>> committed_;
  // Committed holders per device key (DeviceKey), all and exclusive (no share ID): conflicts are
  // judged against these alone, in the API's write order; this scheduler's in-flight allocations
  // have no place in that order.
  std::unordered_map<std::string, int> committed_holders_;
  std::unordered_map<std::string, int> committed_exclusive_;
  // By claim uid; only looked up (Recheck rebuilds holdings from them in any order).
  InFlight in_flight_;
  HoldingsObserver* observer_ = nullptr;
  uint64_t changes_ = 0;
};

// Inline: asked per candidate node and device class in every scheduling cycle (NodeFree).
inline int64_t DeviceLedger::Count(uint32_t class_id, const NodeCounts* node,
                                   int64_t Counts::*field) const {
  if (class_id == kNoClass) return 0;
  if (class_id < nonlocal_.size() && nonlocal_[class_id] > 0) return kUnknown;
  if (node == nullptr || class_id >= node->size()) return 0;
  const Counts& c = (*node)[class_id];
  if (c.shared > 0) return kUnknown;
  return c.*field;
}

class DeviceLedger::NodeFree {
 public:
  // FreeDevices of the class with this id (ClassId) on the node.
  int64_t Free(uint32_t class_id) const { return ledger_->Count(class_id, counts_, &Counts::free); }

 private:
  friend class DeviceLedger;
  NodeFree(const DeviceLedger* ledger, const NodeCounts* counts)
      : ledger_(ledger), counts_(counts) {}
  const DeviceLedger* ledger_;
  const NodeCounts* counts_;
};

}  // namespace draplane::scheduler
