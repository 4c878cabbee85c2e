// String-format checks used by the validation of Kubernetes objects: DNS labels and subdomains,
// label keys ("qualified names") and values, C identifiers, extended resource names, semantic
// versions, UUIDs, interface addresses, and the DRA name rules built from them (driver, pool,
// device and request names, attribute names).
//
// Two families, as upstream:
//   * `Is*` functions return the list of problem messages (empty when valid), mirroring
//     k8s.io/apimachinery/pkg/util/validation and .../api/validate/content. Callers wrap each
//     message into a field error.
//   * `Validate*` functions return field errors at `path`, mirroring the helpers in
//     pkg/apis/core/validation and pkg/apis/resource/validation.
// Messages are Kubernetes' own wording (see docs/design/validation.md for the one place where
// upstream itself is inconsistent: "characters" vs "bytes" in length messages).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/field_error.h"

namespace draplane::api::validation {

// Upstream limits that the format checks use.
inline constexpr size_t kDNS1123LabelMaxLength = 63;
inline constexpr size_t kDNS1123SubdomainMaxLength = 253;
inline constexpr size_t kLabelValueMaxLength = 63;
inline constexpr size_t kLabelKeyNameMaxLength = 63;
inline constexpr size_t kDriverNameMaxLength = 63;    // resource.DriverNameMaxLength
inline constexpr size_t kPoolNameMaxLength = 253;     // resource.PoolNameMaxLength
inline constexpr size_t kDeviceMaxDomainLength = 63;  // resource.DeviceMaxDomainLength
inline constexpr size_t kDeviceMaxIDLength = 32;      // resource.DeviceMaxIDLength

// "<msg> (e.g. 'a',  or 'b', regex used for validation is '<re>')", as upstream RegexError
// (including its double space before "or").
std::string RegexError(std::string_view msg, std::string_view re,
                       const std::vector<std::string_view>& examples);

// RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters (util/validation).
std::vector<std::string> IsDNS1123Label(std::string_view value);
// RFC 1123 subdomain: dot-separated labels, at most 253 characters (util/validation).
std::vector<std::string> IsDNS1123Subdomain(std::string_view value);
// The same checks as worded by validate/content (length in "bytes"), used for label-key prefixes
// and the declarative long/short name formats.
std::vector<std::string> IsDNS1123LabelContent(std::string_view value);
std::vector<std::string> IsDNS1123SubdomainContent(std::string_view value);
// A label key, which upstream also calls a qualified name: `[prefix/]name`
// (content.IsLabelKey).
std::vector<std::string> IsQualifiedName(std::string_view value);
// A label value: empty, or at most 63 alphanumerics plus '-', '_', '.' inside
// (content.IsLabelValue).
std::vector<std::string> IsLabelValue(std::string_view value);
// A C identifier `[A-Za-z_][A-Za-z0-9_]*`; the length is not checked (content.IsCIdentifier).
std::vector<std::string> IsCIdentifier(std::string_view value);
// An extended resource name as v1helper.IsExtendedResourceName: has a domain that is not
// `*kubernetes.io`, does not start with "requests.", and "requests." + name is a qualified name.
bool IsExtendedResourceName(std::string_view name);
// A node allocatable resource name as corehelper.IsNodeAllocatableResourceName: "cpu",
// "memory" or "hugepages-*".
bool IsNodeAllocatableResourceName(std::string_view name);
// A string accepted by the strict semver 2.0.0 regex of the DRA validation (`semverRe`).
bool IsSemver(std::string_view value);

// Object name checks (apimachinery/pkg/api/validation NameIsDNSSubdomain / NameIsDNSLabel).
// With `prefix`, the value is a generateName prefix: a trailing '-' is allowed.
std::vector<std::string> NameIsDNSSubdomain(std::string_view name, bool prefix);
std::vector<std::string> NameIsDNSLabel(std::string_view name, bool prefix);

// Field-error forms. Each reports at `path` with the offending value.
FieldErrorList ValidateDNS1123Label(std::string_view value, const FieldPath& path);
FieldErrorList ValidateDNS1123Subdomain(std::string_view value, const FieldPath& path);
// metav1validation.ValidateLabelName: the value must be a qualified name (includes non-empty).
FieldErrorList ValidateLabelName(std::string_view value, const FieldPath& path);
// The DRA `validateLabelValue`: each IsLabelValue message as Invalid.
FieldErrorList ValidateLabelValue(std::string_view value, const FieldPath& path);

// DRA names (pkg/apis/resource/validation/validation.go).
// Driver: required, at most 63 bytes, a DNS subdomain after lower-casing (ValidateCSIDriverName).
FieldErrorList ValidateDriverName(std::string_view name, const FieldPath& path);
// Pool: required, at most 253 bytes, one or more DNS subdomains separated by '/'.
FieldErrorList ValidatePoolName(std::string_view name, const FieldPath& path);
// Device, request, subrequest and counter names: DNS labels.
FieldErrorList ValidateDeviceName(std::string_view name, const FieldPath& path);
// A device class name: required, a DNS subdomain.
FieldErrorList ValidateDeviceClassName(std::string_view name, const FieldPath& path);
// An attribute or capacity name: a C identifier of at most 32 bytes, optionally prefixed by a
// domain (a driver name) and '/'.
FieldErrorList ValidateQualifiedName(std::string_view name, const FieldPath& path);
// The same, but the domain is required (matchAttribute, distinctAttribute,
// partitionTypeAttribute).
FieldErrorList ValidateFullyQualifiedName(std::string_view name, const FieldPath& path);
// A C identifier of at most 32 bytes.
FieldErrorList ValidateCIdentifier(std::string_view id, const FieldPath& path);
// A node name (a DNS subdomain), reported as Invalid at `path`.
FieldErrorList ValidateNodeName(std::string_view name, const FieldPath& path);
// A UID in RFC 4122 normalized lower-case form (the DRA `validateUID`, used for shareID).
FieldErrorList ValidateUID(std::string_view uid, const FieldPath& path);
// An "ifaddr"-style CIDR value in canonical form, e.g. "192.168.1.5/24"
// (util/validation IsValidInterfaceAddress).
FieldErrorList ValidateInterfaceAddress(std::string_view value, const FieldPath& path);

// Shortens `key` to at most max(`max_length`, 16) bytes with "..." in the middle, as the DRA
// validation does for map keys in field paths (`truncateIfTooLong`).
std::string TruncateIfTooLong(std::string_view key, size_t max_length);

}  // namespace draplane::api::validation
