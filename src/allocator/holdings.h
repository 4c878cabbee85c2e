// Holdings: who holds what, per tenant (namespace) — the accounting every tenancy policy reads
// (docs/design/holdings.md, "Holdings ledger"): quota (allocation mode), and later fair share,
// preemption, group pins, grants, the simulator, metrics and the pool status controller.
//
// A Holdings value is a set of claim allocations, each with its charge (charges.h) and the
// devices it holds, marked committed (the API shows it) or in flight (reserved by a scheduler,
// not written yet). It answers, per namespace: usage per resource name (device class, driver
// counter, capacity dimension), split into committed and in flight; the devices held; and per
// device its holders. The counters of shares of one multi-allocatable device are charged once
// per namespace (charges.h), which is the only rule that is not a plain sum.
//
// Readers:
//   - the scheduler keeps one live Holdings in its DeviceLedger, updated from informer events;
//   - RecomputeHoldings builds one from a list of claims (a store read, a simulator state) and
//     Compare says how two differ: the drift check and the quota controller's recompute;
//   - a simulator or controller keeps its own, with the same functions.
//
// Pure: no clock, threads or I/O. Thread-safety: not thread-safe (a value type).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "allocator/charges.h"
#include "api/gen/resource_v1_types.h"
#include "common/sorted_string_map.h"
#include "common/string_hash.h"

namespace draplane::allocator {

class Holdings {
 public:
  // One device a holding has (admin-access results are not holdings: they use a device without
  // taking it, as the scheduler counts them).
  struct HeldDevice {
    std::string driver;
    std::string pool;
    std::string device;
    std::string request;       // "req" or "req/sub"
    std::string device_class;  // the class of that (sub)request
    bool share = false;        // a share of a multi-allocatable device
    // The result's consumedCapacity by published capacity name (a share's; empty otherwise):
    // the pool status controller sums it per pool.
    ResourceList consumed_capacity;

    friend bool operator==(const HeldDevice&, const HeldDevice&) = default;
  };

  // One claim's allocation.
  struct Holding {
    std::string uid;         // the claim's uid (a scheduler's in-flight special claim: any key)
    std::string namespace_;  // the tenant
    std::string claim;       // "namespace/name"
    bool in_flight = false;
    ClaimCharge charge;
    std::vector<HeldDevice> devices;  // in result order

    friend bool operator==(const Holding&, const Holding&) = default;
  };

  // A holding for a claim's allocation, charged with `catalog` (the claim must be `claim`'s
  // namespace; `allocation` need not be its status yet).
  static Holding Make(std::string uid, const api::resourcev1::ResourceClaim& claim,
                      const api::resourcev1::AllocationResult& allocation,
                      const DeviceCatalog& catalog, bool in_flight);
  // The same with the charge already computed (ChargeAllocation of the same claim, allocation
  // and catalog): the scheduler charges a decision once.
  static Holding Make(std::string uid, const api::resourcev1::ResourceClaim& claim,
                      const api::resourcev1::AllocationResult& allocation, ClaimCharge charge,
                      bool in_flight);

  // Adds a holding, replacing one with the same uid.
  void Put(Holding holding);
  // Removes the holding with this uid; false when there was none.
  bool Erase(std::string_view uid);
  // Marks the in-flight holding with this uid committed (its allocation was written): as Put of
  // the same holding with `in_flight` false, without taking its devices back and adding them
  // again. False when there is no such holding in flight.
  bool MarkCommitted(std::string_view uid);
  const Holding* Find(std::string_view uid) const;
  size_t size() const { return holdings_.size(); }

  enum class Scope { kCommitted, kInFlight, kAll };
  // What a namespace holds, per resource name. kInFlight is what the in-flight holdings add to
  // the committed ones (a share's counters already paid by a committed share are not repeated).
  ResourceList Usage(std::string_view namespace_, Scope scope = Scope::kAll) const;
  // What `charges` would add to the namespace's usage in `scope` (kCommitted or kAll): their
  // additive parts, and the counters of shared devices the namespace does not hold yet in that
  // scope. kCommitted is what committing them adds to a quota's status.used.
  ResourceList Increment(std::string_view namespace_,
                         const std::vector<const ClaimCharge*>& charges,
                         Scope scope = Scope::kAll) const;
  // Whether the namespace holds a share of the device (DeviceKey) with consumesCounters, in
  // `scope` (kCommitted or kAll).
  bool HoldsSharedCounters(std::string_view namespace_, std::string_view device_key,
                           Scope scope = Scope::kAll) const;
  // Namespaces holding anything, sorted.
  std::vector<std::string> Namespaces() const;
  // The devices a namespace holds: device key -> number of holdings of it.
  std::map<std::string, int, std::less<>> DevicesOf(std::string_view namespace_) const;
  // The holdings of a device, by claim ("namespace/name"), sorted.
  std::vector<const Holding*> HoldersOf(std::string_view device_key) const;
  // Every holding, by uid.
  const std::map<std::string, Holding, std::less<>>& all() const { return holdings_; }

 private:
  struct SharedCounters {
    int committed = 0;
    int in_flight = 0;
    ResourceList counters;
  };
  struct Tenant {
    ResourceList committed;  // additive charges
    ResourceList in_flight;
    std::map<std::string, SharedCounters, std::less<>> shares;  // by device key
    SortedStringMap<int> devices;                               // device key -> holdings
  };
  void Apply(const Holding& h, int sign);

  std::map<std::string, Holding, std::less<>> holdings_;
  std::map<std::string, Tenant, std::less<>> tenants_;
  // device key -> uids, sorted; only looked up by key.
  std::unordered_map<std::string, std::vector<std::string>, StringHash, std::equal_to<>> holders_;
};

// The committed holdings of every allocated claim in `claims` (a store read), charged with
// `catalog`.
Holdings RecomputeHoldings(const std::vector<const api::resourcev1::ResourceClaim*>& claims,
                           const DeviceCatalog& catalog);

// One way the live holdings differ from a recompute, in the namespace it concerns.
struct HoldingsDifference {
  std::string namespace_;
  // "team-a/c1: held in the ledger, not allocated in the store", "namespace team-a: h100...: 3
  // in the ledger, 2 recomputed".
  std::string text;
};

// How `live` differs from `recomputed` in its committed holdings; empty when they agree.
// In-flight holdings of `live` are ignored.
std::vector<HoldingsDifference> CompareHoldings(const Holdings& live, const Holdings& recomputed);

}  // namespace draplane::allocator
