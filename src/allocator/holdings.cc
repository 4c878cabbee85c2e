#include "allocator/holdings.h"

#include <algorithm>
#include <set>

namespace draplane::allocator {

namespace rv1 = api::resourcev1;

Holdings::Holding Holdings::Make(std::string uid, const rv1::ResourceClaim& claim,
                                 const rv1::AllocationResult& allocation,
                                 const DeviceCatalog& catalog, bool in_flight) {
  return Make(std::move(uid), claim, allocation, ChargeAllocation(claim, allocation, catalog),
              in_flight);
}

Holdings::Holding Holdings::Make(std::string uid, const rv1::ResourceClaim& claim,
                                 const rv1::AllocationResult& allocation, ClaimCharge charge,
                                 bool in_flight) {
  Holding h;
  h.uid = std::move(uid);
  h.namespace_ = claim.metadata.namespace_;
  h.claim = claim.metadata.namespace_ + "/" + claim.metadata.name;
  h.in_flight = in_flight;
  h.charge = std::move(charge);
  for (const rv1::DeviceRequestAllocationResult& r : allocation.devices.results) {
    if (r.admin_access.value_or(false)) continue;
    h.devices.push_back(
        HeldDevice{.driver = r.driver,
                   .pool = r.pool,
                   .device = r.device,
                   .request = r.request,
                   .device_class = std::string(RequestClass(claim, r.request)),
                   .share = r.share_id.has_value(),
                   .consumed_capacity = {r.consumed_capacity.begin(), r.consumed_capacity.end()}});
  }
  return h;
}

void Holdings::Apply(const Holding& h, int sign) {
  Tenant& t = tenants_[h.namespace_];
  AddResources(h.in_flight ? t.in_flight : t.committed, h.charge.additive, sign);
  for (const auto& [key, counters] : h.charge.share_counters) {
    SharedCounters& s = t.shares[key];
    if (sign > 0) s.counters = counters;
    (h.in_flight ? s.in_flight : s.committed) += sign;
    if (s.committed <= 0 && s.in_flight <= 0) t.shares.erase(key);
  }
  std::set<std::string> keys;
  for (const HeldDevice& d : h.devices) keys.insert(DeviceKey(d.driver, d.pool, d.device));
  for (const std::string& key : keys) {
    auto held = t.devices.try_emplace(key, 0).first;
    if ((held->second += sign) <= 0) t.devices.erase(held);
    std::vector<std::string>& uids = holders_[key];
    if (sign > 0) {
      uids.insert(std::lower_bound(uids.begin(), uids.end(), h.uid), h.uid);
    } else {
      auto it = std::lower_bound(uids.begin(), uids.end(), h.uid);
      if (it != uids.end() && *it == h.uid) uids.erase(it);
      if (uids.empty()) holders_.erase(key);
    }
  }
  if (t.committed.empty() && t.in_flight.empty() && t.shares.empty() && t.devices.empty()) {
    tenants_.erase(h.namespace_);
  }
}

void Holdings::Put(Holding holding) {
  Erase(holding.uid);
  Apply(holding, +1);
  std::string uid = holding.uid;
  holdings_.emplace(std::move(uid), std::move(holding));
}

bool Holdings::Erase(std::string_view uid) {
  auto it = holdings_.find(uid);
  if (it == holdings_.end()) return false;
  Apply(it->second, -1);
  holdings_.erase(it);
  return true;
}

bool Holdings::MarkCommitted(std::string_view uid) {
  auto it = holdings_.find(uid);
  if (it == holdings_.end() || !it->second.in_flight) return false;
  Holding& h = it->second;
  // Only the split between committed and in flight moves: the devices and their holders stay.
  Tenant& t = tenants_[h.namespace_];
  AddResources(t.in_flight, h.charge.additive, -1);
  AddResources(t.committed, h.charge.additive, +1);
  for (const auto& [key, counters] : h.charge.share_counters) {
    SharedCounters& s = t.shares[key];
    --s.in_flight;
    ++s.committed;
  }
  h.in_flight = false;
  return true;
}

const Holdings::Holding* Holdings::Find(std::string_view uid) const {
  auto it = holdings_.find(uid);
  return it == holdings_.end() ? nullptr : &it->second;
}

ResourceList Holdings::Usage(std::string_view namespace_, Scope scope) const {
  ResourceList out;
  auto it = tenants_.find(namespace_);
  if (it == tenants_.end()) return out;
  const Tenant& t = it->second;
  if (scope != Scope::kInFlight) out = t.committed;
  if (scope != Scope::kCommitted) AddResources(out, t.in_flight);
  for (const auto& [key, s] : t.shares) {
    bool counted = scope == Scope::kCommitted  ? s.committed > 0
                   : scope == Scope::kInFlight ? s.committed <= 0 && s.in_flight > 0
                                               : true;
    if (counted) AddResources(out, s.counters);
  }
  return out;
}

ResourceList Holdings::Increment(std::string_view namespace_,
                                 const std::vector<const ClaimCharge*>& charges,
                                 Scope scope) const {
  ResourceList out;
  std::set<std::string_view> paid;
  for (const ClaimCharge* charge : charges) {
    AddResources(out, charge->additive);
    for (const auto& [key, counters] : charge->share_counters) {
      if (HoldsSharedCounters(namespace_, key, scope) || !paid.insert(key).second) continue;
      AddResources(out, counters);
    }
  }
  return out;
}

bool Holdings::HoldsSharedCounters(std::string_view namespace_, std::string_view device_key,
                                   Scope scope) const {
  auto it = tenants_.find(namespace_);
  if (it == tenants_.end()) return false;
  auto share = it->second.shares.find(device_key);
  if (share == it->second.shares.end()) return false;
  return scope != Scope::kCommitted || share->second.committed > 0;
}

std::vector<std::string> Holdings::Namespaces() const {
  std::vector<std::string> out;
  for (const auto& [ns, t] : tenants_) out.push_back(ns);
  return out;
}

std::map<std::string, int, std::less<>> Holdings::DevicesOf(std::string_view namespace_) const {
  auto it = tenants_.find(namespace_);
  std::map<std::string, int, std::less<>> out;
  if (it == tenants_.end()) return out;
  for (const auto& [key, holdings] : it->second.devices) out.emplace_hint(out.end(), key, holdings);
  return out;
}

std::vector<const Holdings::Holding*> Holdings::HoldersOf(std::string_view device_key) const {
  std::vector<const Holding*> out;
  auto it = holders_.find(device_key);
  if (it == holders_.end()) return out;
  for (const std::string& uid : it->second) out.push_back(Find(uid));
  std::sort(out.begin(), out.end(),
            [](const Holding* a, const Holding* b) { return a->claim < b->claim; });
  return out;
}

Holdings RecomputeHoldings(const std::vector<const rv1::ResourceClaim*>& claims,
                           const DeviceCatalog& catalog) {
  Holdings out;
  for (const rv1::ResourceClaim* claim : claims) {
    if (!claim->status.allocation.has_value()) continue;
    out.Put(Holdings::Make(claim->metadata.uid, *claim, *claim->status.allocation, catalog,
                           /*in_flight=*/false));
  }
  return out;
}

std::vector<HoldingsDifference> CompareHoldings(const Holdings& live, const Holdings& recomputed) {
  std::vector<HoldingsDifference> out;
  std::set<std::string> namespaces;
  for (const auto& [uid, h] : live.all()) {
    if (h.in_flight) continue;
    namespaces.insert(h.namespace_);
    const Holdings::Holding* other = recomputed.Find(uid);
    if (other == nullptr) {
      out.push_back({h.namespace_, h.claim + ": held in the ledger, not allocated in the store"});
    } else if (!(other->devices == h.devices) || !(other->charge == h.charge)) {
      out.push_back(
          {h.namespace_, h.claim + ": the ledger's devices or charge differ from the store's"});
    }
  }
  for (const auto& [uid, h] : recomputed.all()) {
    namespaces.insert(h.namespace_);
    const Holdings::Holding* mine = live.Find(uid);
    if (mine == nullptr || mine->in_flight) {
      out.push_back({h.namespace_, h.claim + ": allocated in the store, not held in the ledger"});
    }
  }
  for (const std::string& ns : namespaces) {
    ResourceList a = live.Usage(ns, Holdings::Scope::kCommitted);
    ResourceList b = recomputed.Usage(ns, Holdings::Scope::kCommitted);
    std::set<std::string> keys;
    for (const auto& [k, q] : a) keys.insert(k);
    for (const auto& [k, q] : b) keys.insert(k);
    for (const std::string& k : keys) {
      auto x = a.find(k);
      auto y = b.find(k);
      api::Quantity qa = x == a.end() ? api::Quantity() : x->second;
      api::Quantity qb = y == b.end() ? api::Quantity() : y->second;
      if (qa.Compare(qb) == 0) continue;
      out.push_back({ns, "namespace " + ns + ": " + k + ": " + qa.ToString() + " in the ledger, " +
                             qb.ToString() + " recomputed"});
    }
  }
  return out;
}

}  // namespace draplane::allocator
