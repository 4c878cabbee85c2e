// DeviceInput: one device converted once into the form CEL selectors evaluate against.
//
// Upstream (dynamic-resource-allocation cel/compile.go `DeviceMatches`) rebuilds Go maps of all
// attributes and capacities on every evaluation. We convert a device once per slice
// generation: attribute and capacity names are split into (domain, id) with the driver as the
// default domain (`parseQualifiedName`), values become CEL values (versions parsed as semver,
// capacities as exact quantities), and a small hash index over (domain, id) lets programs
// resolve `device.attributes["<domain>"].<id>` with one probe. The same data is also exposed as
// the CEL maps `device.attributes` / `device.capacity` with upstream's semantics (an unknown
// domain reads as an empty map; `in`, size() and iteration see only real domains).
//
// A device whose attributes upstream cannot convert (an unparsable version, an attribute without
// a value) fails every evaluation with upstream's message ("attribute <name>: ...").
//
// List-typed attributes (KEP-5491) are read as the release a program was compiled for says
// (list_attribute_mode.h), so one DeviceInput serves every release: it holds the attributes as
// lists (1.36) and, when the device has a list attribute, a second view where each list reads as
// its first element, marked with where its list is (1.37, `asList()`); 1.34/1.35 programs fail
// on a device with a list attribute ("unsupported attribute value").
//
// Thread-safety: immutable after Build(); evaluate it from any number of threads.
// Ownership: a DeviceInput owns all its strings and values; programs evaluated against it hold
// no references after an evaluation returns.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/quantity.h"
#include "cel/list_attribute_mode.h"
#include "cel/runtime/arena.h"
#include "cel/runtime/value.h"

namespace draplane::cel {

class DeviceInput {
 public:
  class Builder {
   public:
    explicit Builder(std::string_view driver);
    Builder(const Builder&) = delete;
    Builder& operator=(const Builder&) = delete;
    Builder(Builder&&) noexcept;
    Builder& operator=(Builder&&) noexcept;
    ~Builder();

    // `device.allowMultipleAllocations` (false when never set).
    Builder& SetAllowMultipleAllocations(bool value);

    // Attributes by qualified name ("gpu.nvidia.com/model" or "model" for the driver's
    // domain). Adding a name twice keeps the last value.
    Builder& AddInt(std::string_view name, int64_t value);
    Builder& AddBool(std::string_view name, bool value);
    Builder& AddString(std::string_view name, std::string_view value);
    // Parsed with blang/semver rules; a parse failure makes every evaluation fail with
    // "attribute <name>: parse semantic version: <reason>".
    Builder& AddVersion(std::string_view name, std::string_view value);
    Builder& AddInts(std::string_view name, const std::vector<int64_t>& values);
    Builder& AddBools(std::string_view name, const std::vector<bool>& values);
    Builder& AddStrings(std::string_view name, const std::vector<std::string>& values);
    Builder& AddVersions(std::string_view name, const std::vector<std::string>& values);
    // An attribute with no value set (upstream: "unsupported attribute value").
    Builder& AddUnsupported(std::string_view name);

    // Capacities by qualified name.
    Builder& AddCapacity(std::string_view name, const api::Quantity& value);

    std::shared_ptr<const DeviceInput> Build() &&;

   private:
    struct State;
    std::unique_ptr<State> state_;
  };

  DeviceInput(const DeviceInput&) = delete;
  DeviceInput& operator=(const DeviceInput&) = delete;
  ~DeviceInput();

  std::string_view driver() const { return driver_; }
  bool allow_multiple_allocations() const { return allow_multiple_allocations_; }
  // Set when no evaluation under `mode` can run on the device (see the header comment).
  const std::optional<std::string>& error(ListAttributeMode mode) const {
    return mode == ListAttributeMode::kLists          ? error_
           : mode == ListAttributeMode::kFirstElement ? first_element_error_
                                                      : unsupported_lists_error_;
  }

  // The CEL value of `device`, `device.attributes` and `device.capacity`.
  Value root(ListAttributeMode mode) const { return View(mode).root; }
  Value attributes(ListAttributeMode mode) const { return View(mode).attributes; }
  Value capacity() const { return capacity_; }

  // The attribute (or capacity) `id` of `domain`, or nullptr. `hash` must be
  // HashQualifiedKey(domain, id).
  const Value* FindAttribute(ListAttributeMode mode, uint64_t hash, std::string_view domain,
                             std::string_view id) const {
    return Find(View(mode).index, hash, domain, id);
  }
  const Value* FindCapacity(uint64_t hash, std::string_view domain, std::string_view id) const {
    return Find(cap_, hash, domain, id);
  }
  // The per-domain map of attributes (or capacities), or nullptr when the domain has none.
  const Value* FindAttributeDomain(ListAttributeMode mode, std::string_view domain) const;
  const Value* FindCapacityDomain(std::string_view domain) const;
  // The whole list of a list attribute read as its first element (Value::list_origin() != 0),
  // or nullptr when `origin` is not one of this device's.
  const Value* ListAttribute(uint32_t origin) const {
    return origin >= 1 && origin <= lists_.size() ? &lists_[origin - 1] : nullptr;
  }

  static uint64_t HashQualifiedKey(std::string_view domain, std::string_view id);

 private:
  // (domain, id) -> value, with the hashes in their own array so the probe is a tight scan;
  // a hash hit is verified against the names.
  struct Index {
    std::vector<uint64_t> hashes;
    struct Entry {
      std::string_view domain;
      std::string_view id;
      Value value;
    };
    std::vector<Entry> entries;
  };
  DeviceInput();
  static const Value* Find(const Index& index, uint64_t hash, std::string_view domain,
                           std::string_view id) {
    const uint64_t* h = index.hashes.data();
    const size_t n = index.hashes.size();
    for (size_t i = 0; i < n; ++i) {
      if (h[i] != hash) continue;
      const Index::Entry& e = index.entries[i];
      if (StringsEqual(e.id, id) && StringsEqual(e.domain, domain)) return &e.value;
    }
    return nullptr;
  }

  // The attributes as one release reads them.
  struct AttributeView {
    Value root, attributes;
    Index index;
  };
  const AttributeView& View(ListAttributeMode mode) const {
    return mode == ListAttributeMode::kFirstElement && first_element_ ? *first_element_
                                                                      : lists_view_;
  }

  Arena arena_{size_t{1} << 30};
  std::string_view driver_;
  bool allow_multiple_allocations_ = false;
  std::optional<std::string> error_;                    // 1.36 (lists readable)
  std::optional<std::string> unsupported_lists_error_;  // 1.34, 1.35 (lists have no value)
  std::optional<std::string> first_element_error_;      // 1.37 (empty lists have no value)
  AttributeView lists_view_;
  // Only when the device has a list attribute; else the 1.37 view is the 1.36 one.
  std::unique_ptr<AttributeView> first_element_;
  std::vector<Value> lists_;  // the list attributes, by origin - 1
  Value capacity_;
  Index cap_;

  friend class Builder;
};

}  // namespace draplane::cel
