#include "allocator/internal/device_data.h"

#include <utility>

namespace draplane::allocator::internal {
namespace {

// Presence bits of DeviceAttribute's list fields (its plain fields, in declaration order).
constexpr uint64_t kListsPresent =
    (uint64_t{1} << 0) | (uint64_t{1} << 1) | (uint64_t{1} << 2) | (uint64_t{1} << 3);

}  // namespace

uint32_t NameTable::Intern(std::string_view name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

uint32_t NameTable::Find(std::string_view name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? kMissing : it->second;
}

api::resourcev1::DeviceAttribute Attribute::ToApi() const {
  if (kind == Kind::kFull) return *full;
  api::resourcev1::DeviceAttribute a;
  switch (kind) {
    case Kind::kInt:
      a.int_value = number;
      break;
    case Kind::kBool:
      a.bool_value = number != 0;
      break;
    case Kind::kString:
      a.string_value = text;
      break;
    case Kind::kVersion:
      a.version_value = text;
      break;
    case Kind::kNone:
    case Kind::kFull:
      break;
  }
  return a;
}

const Attribute* DeviceData::Find(uint32_t name_id) const {
  for (const Attribute& a : attributes) {
    if (a.name == name_id) return &a;
  }
  return nullptr;
}

DeviceData Compact(api::resourcev1::Device& device, NameTable& names) {
  DeviceData data;
  data.attributes.reserve(device.attributes.size());
  for (auto& [name, value] : device.attributes) {
    Attribute a;
    a.name = names.Intern(name);
    int set = (value.int_value ? 1 : 0) + (value.bool_value ? 1 : 0) +
              (value.string_value ? 1 : 0) + (value.version_value ? 1 : 0);
    bool lists = !value.ints.empty() || !value.bools.empty() || !value.strings.empty() ||
                 !value.versions.empty() || (value.present & kListsPresent) != 0;
    if (lists || set > 1) {
      a.kind = Attribute::Kind::kFull;
      a.full = std::make_unique<const api::resourcev1::DeviceAttribute>(std::move(value));
    } else if (value.int_value) {
      a.kind = Attribute::Kind::kInt;
      a.number = *value.int_value;
    } else if (value.bool_value) {
      a.kind = Attribute::Kind::kBool;
      a.number = *value.bool_value ? 1 : 0;
    } else if (value.string_value) {
      a.kind = Attribute::Kind::kString;
      a.text = std::move(*value.string_value);
    } else if (value.version_value) {
      a.kind = Attribute::Kind::kVersion;
      a.text = std::move(*value.version_value);
    }
    data.attributes.push_back(std::move(a));
  }
  data.capacity.reserve(device.capacity.size());
  for (auto& [name, value] : device.capacity) {
    Capacity c;
    c.name = names.Intern(name);
    c.value = std::move(value.value);
    if (value.request_policy.has_value()) {
      c.policy = std::make_unique<const api::resourcev1::CapacityRequestPolicy>(
          std::move(*value.request_policy));
    }
    data.capacity.push_back(std::move(c));
  }
  device.attributes.clear();
  device.capacity.clear();
  return data;
}

}  // namespace draplane::allocator::internal
