// Pool gathering for one node (upstream `GatherPools` in
// `internal/experimental/pools_experimental.go`; docs/design/allocator.md §2), cached per node in
// the snapshot.
//
// Thread-safety: not thread-safe (mutates the snapshot's caches).
#pragma once

#include <string_view>

#include "allocator/features.h"
#include "allocator/internal/snapshot_state.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "common/status.h"

namespace draplane::allocator::internal {

// The node's pools in search order, from the cache when the snapshot, the node's labels and the
// PartitionableDevices flag are unchanged. A node-selection failure is kept in `gather_error`
// (upstream returns it as a fatal error).
NodeEntry& GatherPools(SnapshotState& state, const api::corev1::Node& node,
                       const Features& features);

// upstream NodeMatches: a node name, all nodes, or a node selector (compiled strictly, cached in
// `cache`). `cache` may be null (no caching).
StatusOr<bool> NodeMatches(const api::corev1::Node& node, std::string_view node_name,
                           bool all_nodes,
                           const std::optional<api::corev1::NodeSelector>& node_selector,
                           std::optional<StatusOr<api::labels::NodeSelectorMatcher>>* cache);

// Whether the device at `index` of `slice` is usable from `node` under per-device node selection.
StatusOr<bool> DeviceNodeMatches(SliceEntry& slice, size_t index, const api::corev1::Node& node);

// True for a device whose `bindingConditions` is set (an explicitly empty list counts).
bool HasBindingConditions(const api::resourcev1::Device& device);

}  // namespace draplane::allocator::internal
