// Feature flags of the allocator, with upstream's names, and the Kubernetes feature gates and
// release versions they come from.
//
// `Features` mirrors upstream's `structured.Features` (the flags `dynamicresources.go`
// `AllocatorFeatures()` derives from the scheduler's feature gates). A flag that is off makes the
// allocator behave as a cluster where the feature does not exist (a field is ignored, or the claim
// is rejected with upstream's error).
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/validation/validation.h"
#include "cel/list_attribute_mode.h"
#include "common/status.h"

namespace draplane::allocator {

struct Features {
  bool admin_access = false;           // DRAAdminAccess
  bool prioritized_list = false;       // DRAPrioritizedList
  bool partitionable_devices = false;  // DRAPartitionableDevices
  bool device_taints = false;          // DRADeviceTaints
  bool device_binding_and_status =
      false;                          // DRADeviceBindingConditions && DRAResourceClaimDeviceStatus
  bool consumable_capacity = false;   // DRAConsumableCapacity
  bool list_type_attributes = false;  // DRAListTypeAttributes
  // DRADeviceCompatibilityGroups (KEP-5963, alpha in 1.37). Off: a device declaring
  // compatibility groups, or consuming a counter set on which an allocated device declares them,
  // is not allocated (upstream's version-skew safety).
  bool device_compatibility_groups = false;
  // DRADerivedAttributes (KEP-6080, alpha in 1.37). Off: requests' derivedAttributes are ignored.
  bool derived_attributes = false;
  // How selectors read list-typed attributes: not a gate but the release (KEP-5491: lists in
  // 1.36, first element and asList() in 1.37). DefaultFeatures sets it from the version.
  cel::ListAttributeMode list_attributes = cel::ListAttributeMode::kLists;

  friend bool operator==(const Features&, const Features&) = default;
};

// The flags and the list mode in one word: equal words, equal Features (the allocator's memo
// keys compare them on every lookup).
uint64_t PackedFeatures(const Features& f);

// Every flag on (list attributes read as in 1.36).
Features AllFeatures();

// The allocator flag names as upstream spells them in `Features` (and as the conformance
// scenarios list them): "AdminAccess", "PrioritizedList", "PartitionableDevices", "DeviceTaints",
// "DeviceBindingAndStatus", "ConsumableCapacity", "ListTypeAttributes",
// "DeviceCompatibilityGroups", "DerivedAttributes".
std::vector<std::string_view> FeatureNames();

// Sets the flag called `name` (an upstream `Features` name, see FeatureNames()).
// InvalidArgument for an unknown name.
Status SetFeature(std::string_view name, bool value, Features* features);

// The names of the flags that are on, in FeatureNames() order.
std::vector<std::string_view> EnabledFeatureNames(const Features& features);

// The gates of `features` that change how the API server validates objects (the server's
// admission, and the manifests `draplane allocate` reads, are validated with them).
api::validation::Features ValidationFeatures(const Features& features);

// The Kubernetes release versions whose default gate sets are known: "1.34" ... "1.37".
std::vector<std::string_view> KnownKubernetesVersions();

// The allocator flags a cluster of `version` ("1.34", "1.35", "1.36" or "1.37"; a patch suffix
// such as "1.36.2" or a leading "v" is accepted) has with default feature gates
// (upstream-dra.md §5), and the release's reading of list attributes. InvalidArgument for any
// other version.
StatusOr<Features> DefaultFeatures(std::string_view version);

// The reading of list-typed attributes of a release (see DefaultFeatures for the versions).
StatusOr<cel::ListAttributeMode> ListAttributeModeOf(std::string_view version);

// Applies a `--feature-gates` value: comma-separated `Gate=true|false` with Kubernetes gate names
// (DRAAdminAccess, DRAPrioritizedList, DRAPartitionableDevices, DRADeviceTaints,
// DRADeviceBindingConditions, DRAResourceClaimDeviceStatus, DRAConsumableCapacity,
// DRAListTypeAttributes, DRADeviceCompatibilityGroups, DRADerivedAttributes).
// DeviceBindingAndStatus is on only when both of its gates are on; the gates not mentioned keep
// the state implied by `base`, and so does the list-attribute reading. InvalidArgument for an
// unknown gate or a malformed entry.
StatusOr<Features> ApplyFeatureGates(std::string_view gates, const Features& base);

}  // namespace draplane::allocator
