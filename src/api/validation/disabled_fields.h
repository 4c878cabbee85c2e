// Upstream dropDisabledFields for the feature-gated fields of resource.k8s.io/v1 (the API
// server's strategies call it before validating).
//
// Thread-safety: pure functions.
#pragma once

#include "api/gen/resource_v1_types.h"
#include "api/validation/validation.h"

namespace draplane::api::validation {

// Upstream dropDisabledFields: with a gate off (Features lists which fields each gate covers) a
// new slice or claim spec (also a template's) loses the gate's fields, unless `old` (null on
// create) already uses them, so that turning a gate off keeps stored data intact. The fields are
// removed, not left empty: they are not written back. (A device stored with fields of a gate
// that is off would be unusable: the allocator skips it as upstream does.)
void DropDisabledFields(resourcev1::ResourceSlice& slice, const resourcev1::ResourceSlice* old,
                        const Features& f);
void DropDisabledFields(resourcev1::ResourceClaimSpec& spec,
                        const resourcev1::ResourceClaimSpec* old, const Features& f);

}  // namespace draplane::api::validation
