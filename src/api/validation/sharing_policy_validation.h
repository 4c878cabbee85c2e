// Defaulting and validation of draplane.dev/v1alpha1 DeviceSharingPolicy (docs/design/fair-share.md
// §1), with Kubernetes field paths and upstream's wording (field.Required, Invalid, Duplicate,
// NotFound, NotSupported, TooMany). Used by the API server's strategy, `draplane lint` and the
// simulator's policies (ValidateObject). Durations are Go durations (api/meta/duration.h),
// fractions Quantities (exact: "0.5" and "500m" are the same value).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "api/field_error.h"
#include "api/gen/draplane_v1alpha1_types.h"

namespace draplane::api::validation {

inline constexpr size_t kSharingPolicyMaxDomains = 32;
inline constexpr size_t kSharingDomainMaxDeviceClasses = 64;
inline constexpr size_t kSharingPolicyMaxTenants = 256;

// The defaults SetDefaults writes.
inline constexpr int32_t kSharingDefaultWeight = 1;
inline constexpr std::string_view kSharingDefaultHalfLife = "24h";
inline constexpr int64_t kSharingDefaultHistoryFractionMilli = 500;  // 0.5
inline constexpr std::string_view kSharingDefaultFullCreditAfter = "30m";
inline constexpr std::string_view kSharingDefaultStarvationThreshold = "2h";
inline constexpr std::string_view kSharingDefaultMaxHold = "15m";

// The policy in force: the one with this name (others are reported NotDefault in their status).
inline constexpr std::string_view kDefaultSharingPolicyName = "default";

// Writes back what is absent: defaultWeight 1, usage {halfLife 24h, historyFraction 500m},
// aging {fullCreditAfter 30m, starvationThreshold 2h, maxHold 15m, holds true}, priority
// StrictBands. A class without a cost entry costs `perDevice: 1`, but that is not written into
// `cost`: a written entry would outlive the class when an apply later drops it from
// deviceClasses, and then be refused as naming no class of the domain.
void SetDefaults(draplanev1alpha1::DeviceSharingPolicy* policy);

// Create (after SetDefaults): metadata (cluster scoped, name a DNS subdomain) and the spec:
//   spec.domains        required, at most 32, names DNS labels and unique; deviceClasses
//                       required, at most 64, DNS subdomains, unique, each class in one domain
//                       only; every cost key one of the domain's classes; a cost sets exactly one
//                       of perDevice / perCounter / perCapacity, every value and unit > 0,
//                       counter names DNS labels, capacity names qualified names;
//   spec.tenants        at most 256; each exactly one of namespaces (DNS labels, no namespace in
//                       two places) and namespaceSelector (ValidateLabelSelector); weight
//                       required and > 0;
//   spec.defaultWeight  > 0;
//   durations           Go durations > 0 (usage.halfLife, aging.*);
//   historyFraction     between 0 and 1 inclusive;
//   priority            StrictBands only.
// A status present on the object (lint, the simulator) is validated as on a status update.
FieldErrorList ValidateDeviceSharingPolicy(const draplanev1alpha1::DeviceSharingPolicy& policy);
// Update of the main resource: the same rules (nothing is immutable) and metadata update rules.
FieldErrorList ValidateDeviceSharingPolicyUpdate(
    const draplanev1alpha1::DeviceSharingPolicy& policy,
    const draplanev1alpha1::DeviceSharingPolicy& old);
// Update of the status subresource: metadata update rules; observedGeneration, capacities,
// shares, counts not negative; tenants unique per domain; conditions as metav1 conditions.
FieldErrorList ValidateDeviceSharingPolicyStatusUpdate(
    const draplanev1alpha1::DeviceSharingPolicy& policy,
    const draplanev1alpha1::DeviceSharingPolicy& old);

}  // namespace draplane::api::validation
