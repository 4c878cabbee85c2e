#include "allocator/allocated_state.h"

#include <atomic>
#include <utility>

namespace draplane::allocator {
namespace {

uint64_t NextId() {
  // Instance identities only key caches; they never influence a result.
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::string PoolKey(std::string_view driver, std::string_view pool) {
  std::string key;
  key.reserve(driver.size() + pool.size() + 1);
  key.append(driver);
  key.push_back('\0');
  key.append(pool);
  return key;
}

void AddInto(AllocatedState::Capacity& into, const AllocatedState::Capacity& from) {
  for (const auto& [name, q] : from) {
    auto it = into.find(name);
    if (it == into.end()) {
      into.emplace(name, q);
    } else {
      it->second = it->second.Add(q);
    }
  }
}

AllocatedState::Capacity FromResult(const api::resourcev1::DeviceRequestAllocationResult& r) {
  AllocatedState::Capacity out;
  for (const auto& [name, q] : r.consumed_capacity) out.emplace(name, q);
  return out;
}

}  // namespace

AllocatedState::AllocatedState() : id_(NextId()) {}

AllocatedState::AllocatedState(const AllocatedState& other) : id_(NextId()) { *this = other; }

AllocatedState& AllocatedState::operator=(const AllocatedState& other) {
  if (this == &other) return *this;
  pools_.clear();
  for (const auto& [key, record] : other.pools_) {
    pools_.emplace(key, std::make_unique<PoolRecord>(*record));
  }
  version_ = other.version_;
  id_ = NextId();
  return *this;
}

AllocatedState::AllocatedState(AllocatedState&& other) noexcept
    : id_(other.id_), version_(other.version_), pools_(std::move(other.pools_)) {
  other.id_ = NextId();
}

AllocatedState& AllocatedState::operator=(AllocatedState&& other) noexcept {
  id_ = other.id_;
  version_ = other.version_;
  pools_ = std::move(other.pools_);
  other.id_ = NextId();
  return *this;
}

AllocatedState::~AllocatedState() = default;

AllocatedState::PoolRecord& AllocatedState::MutablePool(std::string_view driver,
                                                        std::string_view pool) {
  std::unique_ptr<PoolRecord>& slot = pools_[PoolKey(driver, pool)];
  if (!slot) slot = std::make_unique<PoolRecord>();
  ++slot->version;
  ++version_;
  return *slot;
}

AllocatedState::DeviceRecord& AllocatedState::MutableDevice(std::string_view driver,
                                                            std::string_view pool,
                                                            std::string_view device) {
  PoolRecord& p = MutablePool(driver, pool);
  return p.devices[std::string(device)];
}

void AllocatedState::AddDevice(std::string_view driver, std::string_view pool,
                               std::string_view device) {
  ++MutableDevice(driver, pool, device).exclusive;
}

void AllocatedState::RemoveDevice(std::string_view driver, std::string_view pool,
                                  std::string_view device) {
  DeviceRecord& r = MutableDevice(driver, pool, device);
  if (r.exclusive > 0) --r.exclusive;
}

void AllocatedState::AddShare(std::string_view driver, std::string_view pool,
                              std::string_view device, std::string_view share_id) {
  DeviceRecord& r = MutableDevice(driver, pool, device);
  ++r.shares[std::string(share_id)];
}

void AllocatedState::RemoveShare(std::string_view driver, std::string_view pool,
                                 std::string_view device, std::string_view share_id) {
  DeviceRecord& r = MutableDevice(driver, pool, device);
  auto it = r.shares.find(share_id);
  if (it == r.shares.end()) return;
  if (--it->second == 0) r.shares.erase(it);
}

void AllocatedState::AddConsumedCapacity(std::string_view driver, std::string_view pool,
                                         std::string_view device, const Capacity& consumed) {
  DeviceRecord& r = MutableDevice(driver, pool, device);
  AddInto(r.aggregated, consumed);
  ++r.capacity_entries;
}

void AllocatedState::RemoveConsumedCapacity(std::string_view driver, std::string_view pool,
                                            std::string_view device, const Capacity& consumed) {
  DeviceRecord& r = MutableDevice(driver, pool, device);
  if (r.capacity_entries == 0) return;
  for (const auto& [name, q] : consumed) {
    auto it = r.aggregated.find(name);
    if (it != r.aggregated.end()) it->second = it->second.Sub(q);
  }
  if (--r.capacity_entries == 0) r.aggregated.clear();
}

void AllocatedState::AddAllocation(const api::resourcev1::AllocationResult& allocation) {
  for (const auto& r : allocation.devices.results) AddResult(r);
}

void AllocatedState::RemoveAllocation(const api::resourcev1::AllocationResult& allocation) {
  for (const auto& r : allocation.devices.results) RemoveResult(r);
}

void AllocatedState::AddResult(const api::resourcev1::DeviceRequestAllocationResult& r) {
  if (r.admin_access.value_or(false)) return;
  if (r.share_id.has_value()) {
    AddShare(r.driver, r.pool, r.device, *r.share_id);
    AddConsumedCapacity(r.driver, r.pool, r.device, FromResult(r));
  } else {
    AddDevice(r.driver, r.pool, r.device);
  }
}

void AllocatedState::RemoveResult(const api::resourcev1::DeviceRequestAllocationResult& r) {
  if (r.admin_access.value_or(false)) return;
  if (r.share_id.has_value()) {
    RemoveShare(r.driver, r.pool, r.device, *r.share_id);
    RemoveConsumedCapacity(r.driver, r.pool, r.device, FromResult(r));
  } else {
    RemoveDevice(r.driver, r.pool, r.device);
  }
}

const AllocatedState::PoolRecord* AllocatedState::FindPool(std::string_view driver,
                                                           std::string_view pool) const {
  auto it = pools_.find(PoolKey(driver, pool));
  return it == pools_.end() ? nullptr : it->second.get();
}

const AllocatedState::PoolRecord* AllocatedState::PoolFor(std::string_view driver,
                                                          std::string_view pool) const {
  std::unique_ptr<PoolRecord>& slot = pools_[PoolKey(driver, pool)];
  if (!slot) slot = std::make_unique<PoolRecord>();
  return slot.get();
}

const AllocatedState::DeviceRecord* AllocatedState::Find(std::string_view driver,
                                                         std::string_view pool,
                                                         std::string_view device) const {
  const PoolRecord* p = FindPool(driver, pool);
  if (p == nullptr) return nullptr;
  auto it = p->devices.find(std::string(device));
  return it == p->devices.end() ? nullptr : &it->second;
}

bool AllocatedState::IsExclusivelyAllocated(std::string_view driver, std::string_view pool,
                                            std::string_view device) const {
  const DeviceRecord* r = Find(driver, pool, device);
  return r != nullptr && r->exclusive > 0;
}

bool AllocatedState::IsAllocated(std::string_view driver, std::string_view pool,
                                 std::string_view device) const {
  const DeviceRecord* r = Find(driver, pool, device);
  return r != nullptr && (r->exclusive > 0 || !r->shares.empty() || r->capacity_entries > 0);
}

size_t AllocatedState::size() const {
  size_t n = 0;
  for (const auto& [key, p] : pools_) {
    for (const auto& [name, r] : p->devices) {
      if (r.exclusive > 0 || !r.shares.empty() || r.capacity_entries > 0) ++n;
    }
  }
  return n;
}

}  // namespace draplane::allocator
