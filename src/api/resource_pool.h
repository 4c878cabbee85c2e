// A resource pool as its consumers see it: only the slices of the pool's newest generation
// (spec.pool.generation) count (upstream's pool rules; ../shared/docs/upstream-dra.md §1.3, "Pool
// semantics are enforced by consumers").
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "api/gen/resource_v1_types.h"

namespace draplane::api {

// The device `name` as the newest generation of its pool publishes it, or null. `pool_slices`
// are the slices of one pool (one driver and pool name), in any order.
const resourcev1::Device* FindPublishedDevice(
    const std::vector<const resourcev1::ResourceSlice*>& pool_slices, std::string_view name);

}  // namespace draplane::api
