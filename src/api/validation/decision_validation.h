// Validation of draplane.dev/v1alpha1 AllocationDecision (docs/design/decisions.md): the record
// a scheduler writes for every allocation it commits. draplane's own kind, so the rules are ours;
// they keep a record small and well formed (every list capped, every name in its upstream
// format) because records are written for every Pod and read by tenants.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>

#include "api/field_error.h"
#include "api/gen/draplane_v1alpha1_types.h"

namespace draplane::api::validation {

// The schema versions of `spec` this server understands.
inline constexpr int32_t kAllocationDecisionSchemaVersion = 1;

// Caps a writer summarises to (and marks `spec.truncated`).
inline constexpr size_t kDecisionMaxClaims = 32;           // a Pod's claims
inline constexpr size_t kDecisionMaxRequests = 32;         // DeviceRequestsMaxSize
inline constexpr size_t kDecisionMaxDevices = 32;          // AllocationResultsMaxSize
inline constexpr size_t kDecisionMaxTiers = 8;             // FirstAvailableDeviceRequestMaxSize
inline constexpr size_t kDecisionMaxReasonsPerTier = 8;    // distinct reasons per tier
inline constexpr size_t kDecisionMaxNodesPerReason = 8;    // exemplar nodes per reason
inline constexpr size_t kDecisionMaxPolicyInputs = 32;     // quotas, sharing policy, ...
inline constexpr size_t kDecisionMaxMessageLength = 1024;  // every free-text field
inline constexpr size_t kDecisionMaxCharges = 64;          // quota keys charged per claim

// Create: metadata (namespaced, name a DNS subdomain) and spec: schemaVersion supported, time,
// pod name, outcome Allocated (needs nodeName) or Unschedulable, every list within its cap,
// names in their upstream formats, charges valid quota keys with non-negative quantities.
FieldErrorList ValidateAllocationDecision(const draplanev1alpha1::AllocationDecision& decision);
// Update: metadata update; the spec is immutable (a record is not rewritten).
FieldErrorList ValidateAllocationDecisionUpdate(
    const draplanev1alpha1::AllocationDecision& decision,
    const draplanev1alpha1::AllocationDecision& old);

}  // namespace draplane::api::validation
