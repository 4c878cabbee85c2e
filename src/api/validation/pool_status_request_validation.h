// Validation and defaulting of resource.k8s.io/v1alpha3 ResourcePoolStatusRequest (KEP-5677;
// upstream pkg/apis/resource/validation and the `+k8s:` tags of staging/.../resource/v1alpha3
// types.go): a cluster-scoped request whose spec is immutable and whose status is written once.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "api/field_error.h"
#include "api/gen/resource_v1alpha3_types.h"

namespace draplane::api::validation {

inline constexpr int32_t kPoolStatusDefaultLimit = 100;  // spec.limit default
inline constexpr int32_t kPoolStatusMaxLimit = 1000;  // spec.limit maximum, status.pools maxItems
inline constexpr size_t kPoolStatusMaxSummaryItems = 32;      // partitionSummary, capacity maxItems
inline constexpr size_t kPoolStatusMaxValidationError = 256;  // validationError maxBytes
inline constexpr size_t kPoolStatusMaxConditions = 10;

// `spec.limit` unset -> 100 (the `+default=100` tag).
void SetDefaults(resourcev1alpha3::ResourcePoolStatusRequest* request);

// Create: metadata (cluster-scoped, name a DNS subdomain); spec.driver required and a driver
// name; spec.poolName a pool name when set; spec.limit within [1, 1000];
// spec.defaultPartitionTypeAttribute a fully qualified name when set; a status, if given, valid.
FieldErrorList ValidateResourcePoolStatusRequest(
    const resourcev1alpha3::ResourcePoolStatusRequest& request);
// Update of the main resource: metadata update rules; spec immutable.
FieldErrorList ValidateResourcePoolStatusRequestUpdate(
    const resourcev1alpha3::ResourcePoolStatusRequest& request,
    const resourcev1alpha3::ResourcePoolStatusRequest& old);
// Update of the status subresource: a status once written is immutable (write-once); the new
// status must be valid: poolCount >= 0, at most 1000 pools, each pool with a driver and pool
// name in their formats, a node name, non-negative counts, resourceSliceCount >= 1, a
// validationError of at most 256 bytes, at most 32 partition and capacity entries, unique
// (attribute, type) partitions, at most 10 valid conditions.
FieldErrorList ValidateResourcePoolStatusRequestStatusUpdate(
    const resourcev1alpha3::ResourcePoolStatusRequest& request,
    const resourcev1alpha3::ResourcePoolStatusRequest& old);

}  // namespace draplane::api::validation
