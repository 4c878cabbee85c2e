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
// A device whose attributes upstream cannot convert (an unparsable version, a list attribute
// while list attributes are disabled, an attribute without a value) fails every evaluation with
// upstream's message ("attribute <name>: ...").
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
#include "cel/runtime/arena.h"
#include "cel/runtime/value.h"

namespace draplane::cel {

struct DeviceInputOptions {
  // DRAListTypeAttributes: list attributes (ints, bools, strings, versions) become CEL lists.
  // When false a device with a list attribute fails every evaluation with "unsupported
  // attribute value", as upstream does with the gate off.
  bool list_type_attributes = true;
};

class DeviceInput {
 public:
  using Options = DeviceInputOptions;

  class Builder {
   public:
    explicit Builder(std::string_view driver, Options options = {});
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
  // Set when the device cannot be evaluated (see the header comment).
  const std::optional<std::string>& error() const { return error_; }

  // The CEL value of `device`, `device.attributes` and `device.capacity`.
  Value root() const { return root_; }
  Value attributes() const { return attributes_; }
  Value capacity() const { return capacity_; }

  // The attribute (or capacity) `id` of `domain`, or nullptr. `hash` must be
  // HashQualifiedKey(domain, id).
  const Value* FindAttribute(uint64_t hash, std::string_view domain, std::string_view id) const {
    return Find(attr_, hash, domain, id);
  }
  const Value* FindCapacity(uint64_t hash, std::string_view domain, std::string_view id) const {
    return Find(cap_, hash, domain, id);
  }
  // The per-domain map of attributes (or capacities), or nullptr when the domain has none.
  const Value* FindAttributeDomain(std::string_view domain) const;
  const Value* FindCapacityDomain(std::string_view domain) const;

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

  Arena arena_{size_t{1} << 30};
  std::string_view driver_;
  bool allow_multiple_allocations_ = false;
  std::optional<std::string> error_;
  Value root_, attributes_, capacity_;
  Index attr_;
  Index cap_;

  friend class Builder;
};

}  // namespace draplane::cel
