#include "allocator/snapshot.h"

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <set>
#include <utility>

#include "allocator/allocator.h"
#include "allocator/internal/snapshot_state.h"
#include "api/gen/resource_v1_codec.h"
#include "common/check.h"

namespace draplane::allocator {
namespace internal {

uint32_t SnapshotState::Expression(std::string_view text, const ExpressionSpec& spec) {
  // The key: what the text is compiled as, then the text.
  std::string key;
  key.reserve(text.size() + 2);
  key.push_back(static_cast<char>('0' + static_cast<int>(spec.list_attributes)));
  key.push_back(spec.derived ? 'd' : 's');
  key.append(text);
  auto it = expression_ids.find(key);
  if (it != expression_ids.end()) return it->second;
  CompiledExpression compiled;
  compiled.text = std::string(text);
  compiled.spec = spec;
  StatusOr<std::shared_ptr<const CompiledSelector>> program = engine->Compile(text, spec);
  if (program.ok()) {
    compiled.program = *std::move(program);
  } else {
    compiled.compile_error = std::string(program.status().message());
  }
  uint32_t id = static_cast<uint32_t>(expressions.size());
  expressions.push_back(std::move(compiled));
  expression_ids.emplace(std::move(key), id);
  return id;
}

const DeviceFacts& SnapshotState::Facts(SliceEntry& slice, size_t index) {
  if (slice.facts.size() != slice.spec().devices.size()) {
    slice.facts.resize(slice.spec().devices.size());
  }
  std::optional<DeviceFacts>& cached = slice.facts[index];
  if (cached.has_value()) return *cached;
  const api::resourcev1::Device& device = slice.spec().devices[index];
  std::vector<std::pair<std::string_view, api::Quantity>> capacity;
  for (const Capacity& cap : slice.data[index].capacity) {
    capacity.emplace_back(names.Name(cap.name), cap.value);
  }
  cached = MakeDeviceFacts(slice.spec().driver, device.consumes_counters, capacity,
                           device.allow_multiple_allocations.value_or(false));
  return *cached;
}

const std::vector<ResolvedCapacity>& SnapshotState::Capacities(SliceEntry& slice, size_t index) {
  if (slice.capacities.size() != slice.spec().devices.size()) {
    slice.capacities.resize(slice.spec().devices.size());
  }
  std::optional<std::vector<ResolvedCapacity>>& cached = slice.capacities[index];
  if (cached.has_value()) return *cached;
  const DeviceData& data = slice.data[index];
  const std::string prefix = slice.spec().driver + "/";
  std::vector<ResolvedCapacity> out;
  std::set<std::string> seen;
  for (const Capacity& cap : data.capacity) {
    const std::string& name = names.Name(cap.name);
    if (name.compare(0, prefix.size(), prefix) == 0) {
      out.push_back({&name, name, &cap});
      seen.insert(name);
    }
  }
  for (const Capacity& cap : data.capacity) {
    const std::string& name = names.Name(cap.name);
    if (name.compare(0, prefix.size(), prefix) == 0) continue;
    std::string qualified = name.find('/') == std::string::npos ? prefix + name : name;
    if (seen.count(qualified) != 0) continue;
    seen.insert(qualified);
    out.push_back({&name, std::move(qualified), &cap});
  }
  std::sort(out.begin(), out.end(), [](const ResolvedCapacity& a, const ResolvedCapacity& b) {
    return *a.published < *b.published;
  });
  cached = std::move(out);
  return *cached;
}

void SnapshotState::Store(SliceEntry& entry, api::resourcev1::ResourceSlice slice) {
  entry.data.clear();
  entry.data.reserve(slice.spec.devices.size());
  entry.compatibility_groups = false;
  for (api::resourcev1::Device& device : slice.spec.devices) {
    for (const api::resourcev1::DeviceCounterConsumption& c : device.consumes_counters) {
      entry.compatibility_groups = entry.compatibility_groups || !c.compatibility_groups.empty();
    }
    entry.data.push_back(Compact(device, names));
  }
  entry.slice = std::make_shared<const api::resourcev1::ResourceSlice>(std::move(slice));
}

uint32_t SnapshotState::ErrorId(const std::string& text) {
  auto [it, inserted] = error_ids.emplace(text, static_cast<uint32_t>(error_texts.size()));
  if (inserted) error_texts.push_back(text);
  return it->second;
}

uint32_t& SnapshotState::CachedCode(uint32_t expression, SliceEntry& slice, size_t index) {
  for (auto& [id, codes] : slice.verdicts) {
    if (id == expression) return codes[index];
  }
  slice.verdicts.emplace_back(expression, std::vector<uint32_t>(slice.spec().devices.size(), 0));
  return slice.verdicts.back().second[index];
}

const PreparedDevice& SnapshotState::Input(SliceEntry& slice, size_t index) {
  const std::vector<api::resourcev1::Device>& devices = slice.spec().devices;
  if (slice.inputs.empty()) slice.inputs.resize(devices.size());
  std::unique_ptr<PreparedDevice>& input = slice.inputs[index];
  if (input == nullptr) {
    input = engine->Prepare(DeviceSource{.device = &devices[index],
                                         .data = &slice.data[index],
                                         .names = &names,
                                         .driver = slice.spec().driver});
  }
  return *input;
}

uint32_t SnapshotState::Verdict(uint32_t expression, SliceEntry& slice, size_t index) {
  uint32_t& code = CachedCode(expression, slice, index);
  if (code != kVerdictUnknown) return code;
  const CompiledExpression& compiled = expressions[expression];
  if (compiled.program == nullptr) {
    // Reported by the caller with its own wording; cache "error" without a runtime text.
    code = kVerdictError + ErrorId(compiled.compile_error);
    return code;
  }
  if (budget != nullptr && budget->limit > 0 && budget->spent >= budget->limit) {
    return kVerdictBudgetSpent;
  }
  SelectorVerdict v = engine->Evaluate(*compiled.program, Input(slice, index));
  if (budget != nullptr) budget->spent += v.cost;
  if (v.error) {
    code = kVerdictError + ErrorId(v.message);
  } else {
    code = v.matches ? kVerdictTrue : kVerdictFalse;
  }
  return code;
}

uint32_t SnapshotState::DerivedCode(uint32_t expression, SliceEntry& slice, size_t index) {
  uint32_t& code = CachedCode(expression, slice, index);
  if (code != 0) return code;
  const CompiledExpression& compiled = expressions[expression];
  if (compiled.program == nullptr) {
    code = kDerivedError + 2 * ErrorId(compiled.compile_error);
    return code;
  }
  DerivedValue v = engine->EvaluateValue(*compiled.program, Input(slice, index));
  if (v.error) {
    code = kDerivedError + 2 * ErrorId(v.message);
  } else {
    // Interned by content, so replaced slices do not make the table grow.
    std::string key = boost::json::serialize(api::resourcev1::Encode(v.value));
    auto [it, inserted] =
        derived_value_ids.emplace(std::move(key), static_cast<uint32_t>(derived_values.size()));
    if (inserted) derived_values.push_back(std::move(v.value));
    code = kDerivedValue + 2 * it->second;
  }
  return code;
}

NodeEntry& SnapshotState::Node(const api::corev1::Node& node, bool* same_version) {
  const std::string& uid = node.metadata.uid;
  const std::string& version = node.metadata.resource_version;
  auto gathered_for_this_version = [&](const NodeEntry& entry) {
    return !version.empty() && version == entry.node_version && uid == entry.node_uid;
  };
  auto it = nodes_by_address.find(&node);
  if (it != nodes_by_address.end()) {
    NodeEntry& entry = *it->second;
    *same_version = gathered_for_this_version(entry);
    // A uid and a resourceVersion name one version of one object (an address may be reused by
    // another object, they may not): then the name is the entry's too.
    if ((*same_version && !uid.empty()) || entry.name == node.metadata.name) return entry;
  }
  NodeEntry& entry = nodes[node.metadata.name];
  entry.name = node.metadata.name;
  *same_version = gathered_for_this_version(entry);
  // Transient Node objects must not make the index grow without bound.
  if (nodes_by_address.size() > 4 * nodes.size() + 64) nodes_by_address.clear();
  nodes_by_address[&node] = &entry;
  return entry;
}

uint64_t SnapshotState::ClaimSetId(
    const std::vector<const api::resourcev1::ResourceClaimSpec*>& specs, uint64_t hash) {
  std::vector<ClaimSet>& bucket = claim_sets[hash];
  for (const ClaimSet& set : bucket) {
    if (set.specs.size() == specs.size() &&
        std::equal(set.specs.begin(), set.specs.end(), specs.begin(),
                   [](const api::resourcev1::ResourceClaimSpec& a,
                      const api::resourcev1::ResourceClaimSpec* b) { return a == *b; })) {
      return set.id;
    }
  }
  ClaimSet& set = bucket.emplace_back();
  for (const api::resourcev1::ResourceClaimSpec* spec : specs) set.specs.push_back(*spec);
  set.id = ++claim_set_count;
  return set.id;
}

namespace {

void EraseEntry(std::vector<SliceEntry*>& list, SliceEntry* entry) {
  list.erase(std::remove(list.begin(), list.end(), entry), list.end());
}

// Inserts keeping the list ordered by handle (insertion order).
void InsertOrdered(std::vector<SliceEntry*>& list, SliceEntry* entry) {
  auto it = std::upper_bound(
      list.begin(), list.end(), entry,
      [](const SliceEntry* a, const SliceEntry* b) { return a->handle < b->handle; });
  list.insert(it, entry);
}

}  // namespace

void SnapshotState::Index(SliceEntry* entry) {
  const api::resourcev1::ResourceSliceSpec& spec = entry->spec();
  entry->node_name = spec.node_name.value_or("");
  entry->pool_key = spec.driver + std::string(1, '\0') + spec.pool.name;
  if (entry->node_name.empty()) {
    InsertOrdered(shared, entry);
  } else {
    InsertOrdered(by_node[entry->node_name], entry);
  }
  InsertOrdered(by_pool[entry->pool_key], entry);
}

void SnapshotState::Unindex(SliceEntry* entry) {
  if (entry->node_name.empty()) {
    EraseEntry(shared, entry);
  } else {
    auto it = by_node.find(entry->node_name);
    if (it != by_node.end()) {
      EraseEntry(it->second, entry);
      if (it->second.empty()) by_node.erase(it);
    }
  }
  auto it = by_pool.find(entry->pool_key);
  if (it != by_pool.end()) {
    EraseEntry(it->second, entry);
    if (it->second.empty()) by_pool.erase(it);
  }
}

}  // namespace internal

Snapshot::Snapshot(std::unique_ptr<internal::SelectorEngine> engine)
    : state_(std::make_unique<internal::SnapshotState>(std::move(engine))) {}

Snapshot::Snapshot(Snapshot&&) noexcept = default;
Snapshot& Snapshot::operator=(Snapshot&&) noexcept = default;
Snapshot::~Snapshot() = default;

void Snapshot::SetClass(std::shared_ptr<const api::resourcev1::DeviceClass> device_class) {
  DRAPLANE_CHECK(device_class != nullptr);
  std::string name = device_class->metadata.name;
  state_->classes[name] = std::move(device_class);
  ++state_->epoch;
}

void Snapshot::SetClass(api::resourcev1::DeviceClass device_class) {
  SetClass(std::make_shared<const api::resourcev1::DeviceClass>(std::move(device_class)));
}

bool Snapshot::RemoveClass(std::string_view name) {
  auto it = state_->classes.find(name);
  if (it == state_->classes.end()) return false;
  state_->classes.erase(it);
  ++state_->epoch;
  return true;
}

const api::resourcev1::DeviceClass* Snapshot::FindClass(std::string_view name) const {
  auto it = state_->classes.find(name);
  return it == state_->classes.end() ? nullptr : it->second.get();
}

Snapshot::SliceHandle Snapshot::AddSlice(
    std::shared_ptr<const api::resourcev1::ResourceSlice> slice) {
  DRAPLANE_CHECK(slice != nullptr);
  return AddSlice(api::resourcev1::ResourceSlice(*slice));
}

Snapshot::SliceHandle Snapshot::AddSlice(api::resourcev1::ResourceSlice slice) {
  auto entry = std::make_unique<internal::SliceEntry>();
  entry->handle = state_->next_handle++;
  state_->Store(*entry, std::move(slice));
  internal::SliceEntry* raw = entry.get();
  state_->slices.emplace(raw->handle, std::move(entry));
  state_->Index(raw);
  ++state_->epoch;
  return raw->handle;
}

bool Snapshot::RemoveSlice(SliceHandle handle) {
  auto it = state_->slices.find(handle);
  if (it == state_->slices.end()) return false;
  state_->Unindex(it->second.get());
  state_->slices.erase(it);
  ++state_->epoch;
  return true;
}

Snapshot::SliceHandle Snapshot::UpdateSlice(SliceHandle handle,
                                            api::resourcev1::ResourceSlice slice) {
  auto it = state_->slices.find(handle);
  DRAPLANE_CHECK(it != state_->slices.end());
  internal::SliceEntry& entry = *it->second;
  const api::resourcev1::ResourceSlice& old = *entry.slice;
  bool same_version = !slice.metadata.uid.empty() && slice.metadata.uid == old.metadata.uid &&
                      !slice.metadata.resource_version.empty() &&
                      slice.metadata.resource_version == old.metadata.resource_version &&
                      slice.metadata.generation == old.metadata.generation;
  state_->Unindex(&entry);
  // Resolved capacities and compiled node selectors point into the stored slice.
  entry.capacities.clear();
  entry.facts.clear();
  entry.slice_selector.reset();
  entry.device_selectors.clear();
  if (!same_version) {
    // Prepared CEL inputs own their data (selector_engine.h), so they and the verdicts survive
    // an unchanged version.
    entry.inputs.clear();
    entry.verdicts.clear();
  }
  state_->Store(entry, std::move(slice));
  state_->Index(&entry);
  ++state_->epoch;
  return handle;
}

Snapshot::SliceHandle Snapshot::UpdateSlice(
    SliceHandle handle, std::shared_ptr<const api::resourcev1::ResourceSlice> slice) {
  DRAPLANE_CHECK(slice != nullptr);
  return UpdateSlice(handle, api::resourcev1::ResourceSlice(*slice));
}

std::vector<Snapshot::SliceHandle> Snapshot::Slices() const {
  std::vector<SliceHandle> out;
  out.reserve(state_->slices.size());
  for (const auto& [handle, entry] : state_->slices) out.push_back(handle);
  return out;
}

size_t Snapshot::slice_count() const { return state_->slices.size(); }
size_t Snapshot::class_count() const { return state_->classes.size(); }
uint64_t Snapshot::epoch() const { return state_->epoch; }

}  // namespace draplane::allocator
