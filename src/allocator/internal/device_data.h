// Compact storage of device attributes and capacities in the snapshot.
//
// The generated API structs spend about 300 bytes per attribute (a map node plus a struct with
// every possible value field); a 10,000-node cluster with 10 devices of 7 attributes each would
// hold over 300 MB. The snapshot therefore moves each device's attributes and capacities out of
// the API struct into the forms below (a name id plus the one value that is set, about 50 bytes)
// and keeps the rest of the slice as it came. Attributes that do not fit the compact form (lists,
// or more than one value field set, which validation forbids but upstream tolerates) keep their
// full API value.
//
// Thread-safety: plain values; a NameTable is not thread-safe (it belongs to one snapshot).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/gen/resource_v1_types.h"
#include "api/quantity.h"
#include "common/string_hash.h"

namespace draplane::allocator::internal {

// Interned attribute and capacity names, as published ("model" or "gpu.example.com/model").
class NameTable {
 public:
  static constexpr uint32_t kMissing = ~uint32_t{0};
  uint32_t Intern(std::string_view name);
  // The id of `name`, or kMissing when no device uses it.
  uint32_t Find(std::string_view name) const;
  // Stable for the table's life.
  const std::string& Name(uint32_t id) const { return names_[id]; }

 private:
  std::deque<std::string> names_;  // a deque keeps the strings' addresses stable
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> ids_;
};

struct Attribute {
  enum class Kind : uint8_t { kNone, kInt, kBool, kString, kVersion, kFull };
  uint32_t name = 0;
  Kind kind = Kind::kNone;
  int64_t number = 0;                                            // kInt, kBool (0/1)
  std::string text;                                              // kString, kVersion
  std::unique_ptr<const api::resourcev1::DeviceAttribute> full;  // kFull

  // The attribute as the API has it (a full copy for the compact kinds).
  api::resourcev1::DeviceAttribute ToApi() const;
};

struct Capacity {
  uint32_t name = 0;
  api::Quantity value;
  std::unique_ptr<const api::resourcev1::CapacityRequestPolicy> policy;  // null: none
};

// Attributes and capacities of one device, in the API map's order (by published name).
struct DeviceData {
  std::vector<Attribute> attributes;
  std::vector<Capacity> capacity;

  // The attribute published under `name_id`, or null.
  const Attribute* Find(uint32_t name_id) const;
};

// Moves `device`'s attributes and capacities into the compact form, leaving its maps empty.
DeviceData Compact(api::resourcev1::Device& device, NameTable& names);

}  // namespace draplane::allocator::internal
