// From discovered devices to ResourceSlices, and from the slices stored now to the API calls
// that publish the new ones. Pure functions: no API access, no clock.
//
// Building (upstream rules, docs/design/agent.md, "Slices"):
//   1. Each DRA driver name is one pool named after the node, with `spec.nodeName` set.
//   2. Counter sets go into slices of their own (`sharedCounters` and `devices` are mutually
//      exclusive since 1.35), at most 8 sets per slice (ResourceSliceMaxCounterSets).
//   3. Devices are cut into slices in discovery order: at most 128 per slice
//      (ResourceSliceMaxDevices), at most 64 when any device of the slice has taints or consumes
//      counters (ResourceSliceMaxDevicesWithAdvancedFeatures).
//   4. Slice `k` of the pool is named `<node>-<driver>-<k>`; every slice carries
//      `resourceSliceCount` = the number of slices of the pool.
//
// Syncing (after upstream's resourceslice controller, syncPool, simplified):
//   1. The pool's current generation is the highest generation of its stored slices.
//   2. If the stored slices are exactly the desired ones (same names, same generation, same
//      spec), nothing is done.
//   3. Otherwise the generation is bumped by one — on every change, also when a single slice
//      changes (upstream keeps the generation when one update suffices; we always bump so that
//      consumers never mix old and new slices of a pool) — and the plan deletes stale slices
//      first, then updates matching names, then creates the missing ones.
//   4. Slices of managed drivers that no longer have devices are deleted; slices of drivers the
//      agent does not manage are left alone.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/driver.h"
#include "api/gen/resource_v1_types.h"

namespace draplane::agent {

// The slices of one pool (one inventory), with `generation`.
std::vector<api::resourcev1::ResourceSlice> BuildPoolSlices(std::string_view node_name,
                                                            const Inventory& inventory,
                                                            int64_t generation);

// `<node>-<driver>-<index>`, shortened with a hash when it would exceed 253 characters.
std::string SliceName(std::string_view node_name, std::string_view driver, size_t index);

struct SlicePlan {
  // In the order they must be executed: deletes, updates, creates.
  std::vector<std::string> deletes;                     // slice names
  std::vector<api::resourcev1::ResourceSlice> updates;  // with the stored resourceVersion
  std::vector<api::resourcev1::ResourceSlice> creates;
  bool empty() const { return deletes.empty() && updates.empty() && creates.empty(); }
};

// What to do so that the node's stored slices of `managed_drivers` become the slices of
// `inventories`. `stored` holds the node's stored slices (any driver; others are ignored).
// `owner` (the Node, as upstream's kubelet plugins publish their slices) becomes every slice's
// only owner reference, so that deleting the Node deletes them; a pool whose slices lack it is
// rewritten. None: the slices keep the owners they have.
SlicePlan PlanSliceSync(std::string_view node_name, const std::vector<Inventory>& inventories,
                        const std::vector<std::string>& managed_drivers,
                        const std::vector<api::resourcev1::ResourceSlice>& stored,
                        const std::optional<api::metav1::OwnerReference>& owner = std::nullopt);

// How the node's stored slices differ from what the drivers discovered, per managed driver (the
// agent's slice drift metric): `missing` discovered devices no stored slice publishes, `extra`
// published devices no driver discovered, `attribute` devices in both whose attributes or
// capacity differ from the published form of the discovered device (health taints are compared
// by the health metrics, not here). Every managed driver has an entry.
struct SliceDrift {
  int64_t missing = 0;
  int64_t extra = 0;
  int64_t attribute = 0;
};
std::map<std::string, SliceDrift> CompareSlices(
    std::string_view node_name, const std::vector<Inventory>& inventories,
    const std::vector<std::string>& managed_drivers,
    const std::vector<api::resourcev1::ResourceSlice>& stored);

}  // namespace draplane::agent
