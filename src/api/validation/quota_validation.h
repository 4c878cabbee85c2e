// Validation of core/v1 ResourceQuota on create, update and status update, with the rules, field
// paths and wording of Kubernetes' pkg/apis/core/validation (ValidateResourceQuota,
// ValidateResourceQuotaUpdate, ValidateResourceQuotaStatusUpdate, ValidateResourceQuotaSpec,
// validateResourceQuotaScopes, validateScopedResourceSelectorRequirement,
// ValidateResourceQuotaResourceName, ValidateResourceQuantityValue) and the name sets of
// pkg/apis/core/helper (standard quota resources, integer resources, scopes).
//
// Resource names: a name without '/' must be one of upstream's standard quota resources; a
// name with a domain only has to be a qualified name, so `count/<resource>.<group>`,
// `<class>.deviceclass.resource.k8s.io/devices` and draplane's own keys
// (`<class>.deviceclass.draplane.dev/counter.<c>`, `<driver>.driver.draplane.dev/counter.<c>`,
// `<class>.deviceclass.draplane.dev/capacity.<c>`) all pass, as they do on an upstream API
// server. Every name with a domain is an extended resource name for upstream, so its quantities
// must be integers (`must be an integer`): counters and capacities are charged in their base
// unit (bytes, bits per second), which is integral.
//
// draplane adds one rule: the annotation `draplane.dev/device-quota-mode`, when present, is
// `Admission` or `Allocation` (api/quota/usage.h).
//
// Where upstream iterates a Go map we iterate the model's sorted map, so the order of errors is
// deterministic.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "api/field_error.h"
#include "api/gen/core_v1_types.h"
#include "api/quantity.h"

namespace draplane::api::validation {

// Create: metadata (namespaced, name a DNS subdomain), spec and status.
FieldErrorList ValidateResourceQuota(const corev1::ResourceQuota& quota);
// Update of the main resource: metadata update, spec, and `spec.scopes` immutable.
FieldErrorList ValidateResourceQuotaUpdate(const corev1::ResourceQuota& quota,
                                           const corev1::ResourceQuota& old);
// Update of the status subresource: metadata update, a resourceVersion (status writes are
// always conditional, which is what makes quota charging safe between writers), and every
// `status.hard` / `status.used` entry.
FieldErrorList ValidateResourceQuotaStatusUpdate(const corev1::ResourceQuota& quota,
                                                 const corev1::ResourceQuota& old);

// One resource name of `hard` / `used` (ValidateResourceQuotaResourceName).
FieldErrorList ValidateResourceQuotaResourceName(std::string_view name, const FieldPath& path);
// One quantity of `hard` / `used`: not negative, an integer for integer resources
// (ValidateResourceQuantityValue).
FieldErrorList ValidateResourceQuantityValue(std::string_view name, const Quantity& value,
                                             const FieldPath& path);

// pkg/apis/core/helper: names known to the quota system without a domain (cpu, pods, ...,
// hugepages-*), resources counted in whole units, and the standard scopes.
bool IsStandardQuotaResourceName(std::string_view name);
bool IsIntegerResourceName(std::string_view name);
bool IsStandardResourceQuotaScope(std::string_view scope);
// `hugepages-*` and `requests.hugepages-*` (helper.IsQuotaHugePageResourceName).
bool IsQuotaHugePageResourceName(std::string_view name);

}  // namespace draplane::api::validation
