#include "scheduler/device_ledger.h"

#include <algorithm>
#include <set>

#include "cel/cel.h"
#include "scheduler/framework/types.h"

namespace draplane::scheduler {

namespace rv1 = api::resourcev1;

struct DeviceLedger::ClassEntry {
  uint32_t id = 0;
  std::shared_ptr<const rv1::DeviceClass> device_class;
  // Compiled selectors; a selector that does not compile is left out (the bound stays an upper
  // bound: fewer selectors match more devices).
  std::vector<std::shared_ptr<const cel::Program>> programs;
};

struct DeviceLedger::SliceEntry {
  std::shared_ptr<const rv1::ResourceSlice> slice;
  bool local = false;  // every device is for spec.nodeName only
  std::string node;
  // Per device: ids of the classes matching it.
  std::vector<std::vector<uint32_t>> classes;
  bool contributed = false;
};

namespace {

// The entry of class `id` in a vector by class id (NodeCounts, the non-local counts), grown to
// hold it: ids are dense, handed out by SetClass.
template <typename T>
T& ById(std::vector<T>& by_class, uint32_t id) {
  if (id >= by_class.size()) by_class.resize(id + 1);
  return by_class[id];
}

}  // namespace

DeviceLedger::DeviceLedger() : env_(cel::Environment::NewDra({})) {}
DeviceLedger::~DeviceLedger() = default;

std::string DeviceLedger::DeviceKey(std::string_view driver, std::string_view pool,
                                    std::string_view device) {
  std::string key;
  key.reserve(driver.size() + pool.size() + device.size() + 2);
  key.append(driver).push_back('\0');
  key.append(pool).push_back('\0');
  key.append(device);
  return key;
}

void DeviceLedger::BuildSlice(SliceEntry& entry) {
  const rv1::ResourceSliceSpec& spec = entry.slice->spec;
  entry.node = spec.node_name.value_or("");
  entry.local = !entry.node.empty() && !spec.per_device_node_selection.value_or(false);
  entry.classes.assign(spec.devices.size(), {});
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    std::shared_ptr<const cel::DeviceInput> input =
        cel::DeviceInputFromApi(spec.devices[i], spec.driver);
    // How selectors read a list attribute depends on the release the scheduler runs as
    // (cel/list_attribute_mode.h); a device with one counts as matching every class, which keeps
    // the count an upper bound for every release.
    const bool has_list_attribute = input->ListAttribute(1) != nullptr;
    for (const auto& [name, cls] : classes_) {
      bool matches = true;
      for (const std::shared_ptr<const cel::Program>& program : cls->programs) {
        if (has_list_attribute) break;
        cel::SelectorResult r = program->Match(*input);
        if (!r.is_error() && !r.matches()) {
          matches = false;
          break;
        }
      }
      if (matches) entry.classes[i].push_back(cls->id);
    }
  }
}

void DeviceLedger::Contribute(SliceEntry& entry, int sign) {
  const rv1::ResourceSliceSpec& spec = entry.slice->spec;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const rv1::Device& device = spec.devices[i];
    if (!entry.local) {
      for (uint32_t c : entry.classes[i]) ById(nonlocal_, c) += sign;
      continue;
    }
    std::string key = DeviceKey(spec.driver, spec.pool.name, device.name);
    std::vector<Location>& where = locations_[key];
    if (sign > 0) {
      where.push_back({&entry, i});
    } else {
      std::erase_if(where, [&](const Location& l) { return l.slice == &entry && l.device == i; });
      if (where.empty()) locations_.erase(key);
    }
    bool held = allocated_.IsAllocated(spec.driver, spec.pool.name, device.name);
    bool shared = device.allow_multiple_allocations.value_or(false);
    NodeCounts& counts = CountsFor(entry.node);
    for (uint32_t c : entry.classes[i]) {
      Counts& n = ById(counts, c);
      n.total += sign;
      if (!held) n.free += sign;
      if (shared) n.shared += sign;
    }
  }
  entry.contributed = sign > 0;
}

void DeviceLedger::RebuildAll() {
  nodes_.clear();
  ++nodes_version_;
  nonlocal_.clear();
  locations_.clear();
  for (auto& [name, entry] : slices_) {
    entry->contributed = false;
    BuildSlice(*entry);
    Contribute(*entry, +1);
  }
}

void DeviceLedger::ForEachSlice(
    const std::function<void(const rv1::ResourceSlice&,
                             const std::vector<std::vector<std::string_view>>&)>& fn) const {
  std::vector<std::string_view> names_by_id(next_class_id_);
  for (const auto& [name, entry] : classes_) names_by_id[entry->id] = name;
  std::vector<std::vector<std::string_view>> classes;
  for (const auto& [_, entry] : slices_) {
    classes.assign(entry->classes.size(), {});
    for (size_t i = 0; i < entry->classes.size(); ++i) {
      for (uint32_t id : entry->classes[i]) classes[i].push_back(names_by_id[id]);
      std::sort(classes[i].begin(), classes[i].end());
    }
    fn(*entry->slice, classes);
  }
}

void DeviceLedger::SetClass(std::shared_ptr<const rv1::DeviceClass> device_class) {
  auto& entry = classes_[device_class->metadata.name];
  if (!entry) {
    entry = std::make_unique<ClassEntry>();
    entry->id = next_class_id_++;
  } else if (entry->device_class->spec.selectors == device_class->spec.selectors) {
    entry->device_class = std::move(device_class);
    return;
  }
  entry->device_class = std::move(device_class);
  entry->programs.clear();
  for (const rv1::DeviceSelector& selector : entry->device_class->spec.selectors) {
    if (!selector.cel.has_value()) continue;
    StatusOr<std::shared_ptr<const cel::Program>> program = env_->Compile(
        selector.cel->expression,
        cel::CompileOptions{
            .check = true, .estimate_cost = false, .cost_limit = cel::kSelectorMaxCost});
    if (program.ok()) entry->programs.push_back(std::move(*program));
  }
  RebuildAll();
  DevicesChanged();
}

void DeviceLedger::RemoveClass(std::string_view name) {
  auto it = classes_.find(name);
  if (it == classes_.end()) return;
  classes_.erase(it);
  RebuildAll();
  DevicesChanged();
}

void DeviceLedger::SetSlice(std::shared_ptr<const rv1::ResourceSlice> slice) {
  catalog_.SetSlice(*slice);
  auto& entry = slices_[slice->metadata.name];
  if (entry && entry->contributed) Contribute(*entry, -1);
  if (!entry) entry = std::make_unique<SliceEntry>();
  if (entry->slice) Recharge(*entry->slice);
  entry->slice = std::move(slice);
  BuildSlice(*entry);
  Contribute(*entry, +1);
  Recharge(*entry->slice);
  DevicesChanged();
}

void DeviceLedger::RemoveSlice(std::string_view name) {
  catalog_.RemoveSlice(name);
  auto it = slices_.find(name);
  if (it == slices_.end()) return;
  if (it->second->contributed) Contribute(*it->second, -1);
  std::shared_ptr<const rv1::ResourceSlice> gone = std::move(it->second->slice);
  slices_.erase(it);
  Recharge(*gone);
  DevicesChanged();
}

void DeviceLedger::Recharge(const rv1::ResourceSlice& slice) {
  if (holdings_.size() == 0) return;
  std::set<std::string> uids;
  for (const rv1::Device& d : slice.spec.devices) {
    for (const allocator::Holdings::Holding* h : holdings_.HoldersOf(
             allocator::DeviceKey(slice.spec.driver, slice.spec.pool.name, d.name))) {
      uids.insert(h->uid);
    }
  }
  for (const std::string& uid : uids) {
    if (auto c = committed_.find(uid); c != committed_.end()) {
      PutHolding(allocator::Holdings::Make(uid, *c->second.claim, c->second.result(), catalog_,
                                           /*in_flight=*/false));
    } else if (auto f = in_flight_.find(uid); f != in_flight_.end()) {
      PutHolding(allocator::Holdings::Make(uid, *f->second.spec, f->second.result(), catalog_,
                                           /*in_flight=*/true));
    }
  }
}

void DeviceLedger::AdjustFree(std::string_view driver, std::string_view pool,
                              std::string_view device, int64_t delta) {
  auto it = locations_.find(DeviceKey(driver, pool, device));
  if (it == locations_.end()) return;
  for (const Location& l : it->second) {
    NodeCounts& counts = CountsFor(l.slice->node);
    for (uint32_t c : l.slice->classes[l.device]) ById(counts, c).free += delta;
  }
}

void DeviceLedger::DevicesChanged() {
  ++changes_;
  if (observer_ != nullptr) observer_->OnDevicesChanged();
}

void DeviceLedger::AddResult(const rv1::AllocationResult& allocation) {
  ++changes_;
  for (const rv1::DeviceRequestAllocationResult& r : allocation.devices.results) {
    bool before = allocated_.IsAllocated(r.driver, r.pool, r.device);
    allocated_.AddResult(r);
    if (!before && allocated_.IsAllocated(r.driver, r.pool, r.device)) {
      AdjustFree(r.driver, r.pool, r.device, -1);
    }
  }
}

void DeviceLedger::RemoveResult(const rv1::AllocationResult& allocation) {
  ++changes_;
  for (const rv1::DeviceRequestAllocationResult& r : allocation.devices.results) {
    bool before = allocated_.IsAllocated(r.driver, r.pool, r.device);
    allocated_.RemoveResult(r);
    if (before && !allocated_.IsAllocated(r.driver, r.pool, r.device)) {
      AdjustFree(r.driver, r.pool, r.device, +1);
    }
  }
}

bool DeviceLedger::Commit(std::shared_ptr<const rv1::ResourceClaim> claim) {
  const std::string& uid = claim->metadata.uid;
  if (!claim->status.allocation.has_value()) {
    Uncommit(uid);
    return false;
  }
  auto existing = committed_.find(uid);
  if (existing != committed_.end()) {
    if (existing->second.result() == *claim->status.allocation) {
      existing->second.claim = std::move(claim);  // same devices: keep the accounting
      return false;
    }
    RemoveResult(existing->second.result());
    CountCommitted(existing->second.result(), -1);
    committed_.erase(existing);
  }
  bool conflict = false;
  for (const rv1::DeviceRequestAllocationResult& r : claim->status.allocation->devices.results) {
    if (r.admin_access.value_or(false)) continue;
    const auto& holders = r.share_id.has_value() ? committed_exclusive_ : committed_holders_;
    auto h = holders.find(DeviceKey(r.driver, r.pool, r.device));
    conflict = conflict || (h != holders.end() && h->second > 0);
  }
  // The allocation this scheduler reserved, now written: its devices are held already, only
  // the holding moves from in flight to committed. Removing and adding them again would bump
  // their pools' versions, and so forget the allocator's verdicts for the node
  // (allocated_state.h) for nothing.
  // Its holding too: the in-flight one was made from the same claim (its spec, the request
  // classes, does not change) and the same devices, so only its flag changes.
  bool holding_committed = false;
  auto in_flight = in_flight_.find(uid);
  if (in_flight != in_flight_.end() &&
      in_flight->second.result().devices.results == claim->status.allocation->devices.results) {
    holding_committed = CommitHolding(uid);
    ForgetInFlight(in_flight);
    ++changes_;
  } else {
    RemoveInFlight(uid);
    AddResult(*claim->status.allocation);
  }
  CountCommitted(*claim->status.allocation, +1);
  if (!holding_committed) {
    PutHolding(allocator::Holdings::Make(uid, *claim, *claim->status.allocation, catalog_,
                                         /*in_flight=*/false));
  }
  Record record;
  record.conflicting = conflict;
  record.claim = std::move(claim);
  committed_.emplace(uid, std::move(record));
  return conflict;
}

void DeviceLedger::Uncommit(std::string_view uid) {
  auto it = committed_.find(uid);
  if (it == committed_.end()) return;
  RemoveResult(it->second.result());
  CountCommitted(it->second.result(), -1);
  EraseHolding(uid);
  committed_.erase(it);
}

void DeviceLedger::CountCommitted(const rv1::AllocationResult& allocation, int sign) {
  for (const rv1::DeviceRequestAllocationResult& r : allocation.devices.results) {
    if (r.admin_access.value_or(false)) continue;
    std::string key = DeviceKey(r.driver, r.pool, r.device);
    if (!r.share_id.has_value()) {
      if ((committed_exclusive_[key] += sign) <= 0) committed_exclusive_.erase(key);
    }
    if ((committed_holders_[key] += sign) <= 0) committed_holders_.erase(key);
  }
}

bool DeviceLedger::IsConflicting(std::string_view uid) const {
  auto it = committed_.find(uid);
  return it != committed_.end() && it->second.conflicting;
}

void DeviceLedger::AddInFlight(std::string uid, std::shared_ptr<const rv1::ResourceClaim> claim,
                               std::shared_ptr<const rv1::AllocationResult> allocation,
                               std::optional<allocator::ClaimCharge> charge) {
  RemoveInFlight(uid);
  AddResult(*allocation);
  if (!charge) charge = allocator::ChargeAllocation(*claim, *allocation, catalog_);
  PutHolding(allocator::Holdings::Make(uid, *claim, *allocation, std::move(*charge),
                                       /*in_flight=*/true));
  Record record;
  record.allocation = std::move(allocation);
  record.spec = std::move(claim);
  in_flight_.emplace(std::move(uid), std::move(record));
}

bool DeviceLedger::RemoveInFlight(std::string_view uid) {
  auto it = in_flight_.find(uid);
  if (it == in_flight_.end()) return false;
  RemoveResult(it->second.result());
  ForgetInFlight(it);
  return true;
}

void DeviceLedger::ForgetInFlight(InFlight::iterator it) {
  const allocator::Holdings::Holding* h = holdings_.Find(it->first);
  if (h != nullptr && h->in_flight) EraseHolding(it->first);
  in_flight_.erase(it);
}

void DeviceLedger::PutHolding(allocator::Holdings::Holding holding) {
  if (observer_ == nullptr) {
    holdings_.Put(std::move(holding));
    return;
  }
  if (const allocator::Holdings::Holding* before = holdings_.Find(holding.uid)) {
    observer_->OnHoldingRemoved(*before);
  }
  std::string uid = holding.uid;
  holdings_.Put(std::move(holding));
  observer_->OnHoldingAdded(*holdings_.Find(uid));
}

bool DeviceLedger::CommitHolding(std::string_view uid) {
  const allocator::Holdings::Holding* h = holdings_.Find(uid);
  if (h == nullptr || !h->in_flight) return false;
  if (observer_ != nullptr) observer_->OnHoldingRemoved(*h);
  holdings_.MarkCommitted(uid);
  if (observer_ != nullptr) observer_->OnHoldingAdded(*holdings_.Find(uid));
  return true;
}

void DeviceLedger::EraseHolding(std::string_view uid) {
  if (observer_ != nullptr) {
    if (const allocator::Holdings::Holding* h = holdings_.Find(uid))
      observer_->OnHoldingRemoved(*h);
  }
  holdings_.Erase(uid);
}

const rv1::AllocationResult* DeviceLedger::Committed(std::string_view uid) const {
  auto it = committed_.find(uid);
  return it == committed_.end() ? nullptr : &it->second.result();
}

uint32_t DeviceLedger::ClassId(std::string_view class_name) const {
  auto cls = classes_.find(class_name);
  return cls == classes_.end() ? kNoClass : cls->second->id;
}

template <typename NodeName>
const DeviceLedger::NodeCounts* DeviceLedger::CountsOn(const NodeName& node) const {
  auto n = nodes_.find(node);
  return n == nodes_.end() ? nullptr : &n->second;
}

DeviceLedger::NodeFree DeviceLedger::FreeOn(const HashedString& node, NodeEntryCache* cache) const {
  if (cache->table != this || cache->version != nodes_version_) {
    cache->table = this;
    cache->version = nodes_version_;
    cache->entry = CountsOn(node);
  }
  return NodeFree(this, static_cast<const NodeCounts*>(cache->entry));
}

DeviceLedger::NodeCounts& DeviceLedger::CountsFor(const std::string& node) {
  auto [it, added] = nodes_.try_emplace(node);
  if (added) ++nodes_version_;
  return it->second;
}

int64_t DeviceLedger::FreeDevices(std::string_view class_name, std::string_view node) const {
  return Count(ClassId(class_name), CountsOn(node), &Counts::free);
}

int64_t DeviceLedger::Devices(std::string_view class_name, std::string_view node) const {
  return Count(ClassId(class_name), CountsOn(node), &Counts::total);
}

std::vector<allocator::HeldDeviceId> DeviceLedger::FreeDevicesOn(
    std::string_view node, std::string_view class_name) const {
  std::vector<allocator::HeldDeviceId> out;
  auto cls = classes_.find(class_name);
  if (cls == classes_.end()) return out;
  uint32_t id = cls->second->id;
  std::set<std::string> seen;
  for (const auto& [name, entry] : slices_) {
    if (!entry->local || entry->node != node) continue;
    const rv1::ResourceSliceSpec& spec = entry->slice->spec;
    for (size_t i = 0; i < spec.devices.size() && i < entry->classes.size(); ++i) {
      const std::vector<uint32_t>& ids = entry->classes[i];
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) continue;
      const std::string& device = spec.devices[i].name;
      if (allocated_.IsAllocated(spec.driver, spec.pool.name, device)) continue;
      if (!seen.insert(DeviceKey(spec.driver, spec.pool.name, device)).second) continue;
      out.push_back({.driver = spec.driver, .pool = spec.pool.name, .device = device});
    }
  }
  return out;
}

std::vector<std::string> DeviceLedger::HoldersOf(std::string_view driver, std::string_view pool,
                                                 std::string_view device) const {
  std::vector<std::string> out;
  for (const allocator::Holdings::Holding* h :
       holdings_.HoldersOf(allocator::DeviceKey(driver, pool, device))) {
    out.push_back(h->claim);
  }
  return out;
}

std::vector<allocator::HoldingsDifference> DeviceLedger::Recheck(
    const std::vector<const rv1::ResourceClaim*>& claims) {
  allocator::Holdings recomputed = allocator::RecomputeHoldings(claims, catalog_);
  std::vector<allocator::HoldingsDifference> differences =
      allocator::CompareHoldings(holdings_, recomputed);
  if (differences.empty()) return differences;
  // Rebuild the index from the ledger's own records with today's catalog.
  allocator::Holdings rebuilt;
  for (const auto& [uid, r] : committed_) {
    rebuilt.Put(allocator::Holdings::Make(uid, *r.claim, r.result(), catalog_, false));
  }
  for (const auto& [uid, r] : in_flight_) {
    rebuilt.Put(allocator::Holdings::Make(uid, *r.spec, r.result(), catalog_, true));
  }
  if (observer_ != nullptr) {
    for (const auto& [uid, h] : holdings_.all()) observer_->OnHoldingRemoved(h);
    for (const auto& [uid, h] : rebuilt.all()) observer_->OnHoldingAdded(h);
  }
  holdings_ = std::move(rebuilt);
  return differences;
}

}  // namespace draplane::scheduler
