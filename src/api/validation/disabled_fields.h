// Upstream dropDisabledFields for the 1.37 alpha fields of resource.k8s.io/v1 (the API server's
// strategies call it before validating).
//
// Thread-safety: pure functions.
#pragma once

#include "api/gen/resource_v1_types.h"
#include "api/validation/validation.h"

namespace draplane::api::validation {

// Upstream dropDisabledFields for the 1.37 alphas: with DRADeviceCompatibilityGroups off a new
// slice loses consumesCounters[].compatibilityGroups, with DRADerivedAttributes off a new claim
// spec (also a template's) loses derivedAttributes, unless `old` (null on create) already uses
// the field, so that turning a gate off keeps stored data intact. The fields are removed, not
// left empty: they are not written back.
void DropDisabledFields(resourcev1::ResourceSlice& slice, const resourcev1::ResourceSlice* old,
                        const Features& f);
void DropDisabledFields(resourcev1::ResourceClaimSpec& spec,
                        const resourcev1::ResourceClaimSpec* old, const Features& f);

}  // namespace draplane::api::validation
