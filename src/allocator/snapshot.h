// The cluster as the allocator sees it: DeviceClasses and ResourceSlices, indexed once and kept
// current incrementally, with the caches that make repeated allocations cheap
// (docs/design/allocator.md §5).
//
// Slices are kept in insertion order and may repeat names (upstream feeds such inputs; the pool
// logic decides what counts). Each added slice version gets a handle. Per slice version the
// snapshot caches the devices' CEL inputs, the verdict of every selector expression evaluated on
// them, and compiled node selectors; per node it caches the gathered pools and which claim sets
// were unsatisfiable for an allocated-state version. Replacing a slice with a new version drops
// its caches; changing any slice or class invalidates the per-node caches.
//
// Thread-safety: not thread-safe. Allocation mutates the caches, so a snapshot is used from one
// thread at a time (the scheduler's loop thread). Ownership: the snapshot copies (or takes, when
// passed by value) the objects it is given; device attributes and capacities are stored
// compactly (about 50 bytes per attribute instead of 300 in the API structs).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "api/gen/resource_v1_types.h"

namespace draplane::allocator {

namespace internal {
class SelectorEngine;
struct SnapshotState;
}  // namespace internal

class Snapshot {
 public:
  using SliceHandle = uint64_t;

  // A snapshot evaluating selectors with draplane's CEL.
  Snapshot();
  // A snapshot with another selector engine (tests).
  explicit Snapshot(std::unique_ptr<internal::SelectorEngine> engine);
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;
  Snapshot(Snapshot&&) noexcept;
  Snapshot& operator=(Snapshot&&) noexcept;
  ~Snapshot();

  // Adds or replaces the class named `metadata.name`.
  void SetClass(std::shared_ptr<const api::resourcev1::DeviceClass> device_class);
  void SetClass(api::resourcev1::DeviceClass device_class);
  // Returns false when no such class exists.
  bool RemoveClass(std::string_view name);
  // The class, or null.
  const api::resourcev1::DeviceClass* FindClass(std::string_view name) const;

  SliceHandle AddSlice(std::shared_ptr<const api::resourcev1::ResourceSlice> slice);
  SliceHandle AddSlice(api::resourcev1::ResourceSlice slice);
  // Returns false when the handle is unknown.
  bool RemoveSlice(SliceHandle handle);
  // Replaces the slice behind `handle` (an informer update) keeping its position. When the new
  // version has the same non-empty uid, metadata.generation and resourceVersion as the old one
  // the CEL inputs and verdicts are kept; otherwise they start over. Returns the handle, which
  // stays valid. Precondition: the handle is known.
  SliceHandle UpdateSlice(SliceHandle handle, api::resourcev1::ResourceSlice slice);
  SliceHandle UpdateSlice(SliceHandle handle,
                          std::shared_ptr<const api::resourcev1::ResourceSlice> slice);
  // The snapshot keeps device attributes and capacities in a compact form of its own
  // (internal/device_data.h), not the objects it was given; there is no accessor returning them.
  // Every slice handle in insertion order.
  std::vector<SliceHandle> Slices() const;

  size_t slice_count() const;
  size_t class_count() const;
  // Bumped by every change of a slice or class.
  uint64_t epoch() const;

  // For the allocator's internals.
  internal::SnapshotState& state() { return *state_; }
  const internal::SnapshotState& state() const { return *state_; }

 private:
  std::unique_ptr<internal::SnapshotState> state_;
};

}  // namespace draplane::allocator
