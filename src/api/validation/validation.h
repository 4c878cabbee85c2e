// Validation of the resource.k8s.io/v1 kinds: DeviceClass, ResourceSlice, ResourceClaim (spec
// and status), ResourceClaimTemplate and DeviceTaintRule, on create and on update.
//
// The rules, limits, field paths and messages are those of Kubernetes'
// pkg/apis/resource/validation/validation.go (about 1.36/1.37, see docs/design/validation.md),
// plus the declarative rules of k8s.io/api/resource/v1 that the hand-written validation leaves to
// validation-gen (enum values of `skipNodeOperations`, the format of `partitionTypeAttribute`).
// A validation failure is a value: the functions return the list of field errors, empty when the
// object is valid. Callers that must fail convert it with api::ToInvalidStatus().
//
// Preconditions: objects are defaulted as the API server defaults them before validating
// (SetDefaults below: allocation mode ExactCount, count 1, toleration operator Equal);
// validating an undefaulted object reports the empty values.
//
// CEL selector expressions are only checked for length here (10 KiB); compiling them is the CEL
// module's job (cel/), which the API server and `draplane lint` run in addition.
//
// Upstream's `stored` relaxation is honoured: on update, selectors and opaque parameters that
// did not change are not re-checked against limits introduced later (ratcheting).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "api/field_error.h"
#include "api/gen/resource_v1_types.h"

namespace draplane::api::validation {

// The feature gates the validation rules depend on. The defaults are Kubernetes 1.36's: every
// DRA gate that is beta-and-on or GA there is on (DRAPrioritizedList, DRAAdminAccess,
// DRAResourceClaimDeviceStatus, DRADeviceTaints, DRAPartitionableDevices,
// DRAConsumableCapacity, DRADeviceBindingConditions, DRAExtendedResource); alpha gates are off.
// Only the two gates below change a validation rule; the others only decide which fields the
// API server drops before validating, which is not validation's business (fields of disabled
// features are validated like any other).
struct Features {
  // DRAConsumableCapacity: the message for a constraint without an attribute names both
  // `matchAttribute` and `distinctAttribute`.
  bool consumable_capacity = true;
  // DRAFractionalCapacityRange (beta only from 1.37): capacity request policies compare valid
  // values at milli precision and check steps with milli-values when any bound is fractional.
  bool fractional_capacity_range = false;
  // DRAListTypeAttributes (alpha in 1.36): not a validation rule; passed on to the CEL compiler.
  bool list_type_attributes = false;
  // DRADeviceCompatibilityGroups and DRADerivedAttributes (alpha in 1.37): not validation rules;
  // with a gate off the API server drops its fields (consumesCounters[].compatibilityGroups,
  // derivedAttributes) before validating, unless the old object already uses them.
  bool device_compatibility_groups = false;
  bool derived_attributes = false;
  // Gates whose fields the API server also drops while they are off (upstream's strategies),
  // unless the old object uses them; on by default, as at the default release:
  //   admin_access           DRAAdminAccess: requests' exactly.adminAccess
  //   prioritized_list       DRAPrioritizedList: requests' firstAvailable
  //   device_taints          DRADeviceTaints: devices' taints, requests' tolerations
  //   partitionable_devices  DRAPartitionableDevices: sharedCounters, perDeviceNodeSelection,
  //                          devices' consumesCounters, nodeName, nodeSelector, allNodes
  //   binding_conditions     DRADeviceBindingConditions: devices' bindsToNode,
  //                          bindingConditions, bindingFailureConditions
  // and consumable_capacity above: devices' allowMultipleAllocations and capacity
  // requestPolicy, requests' capacity, constraints' distinctAttribute.
  bool admin_access = true;
  bool prioritized_list = true;
  bool device_taints = true;
  bool partitionable_devices = true;
  bool binding_conditions = true;

  friend bool operator==(const Features&, const Features&) = default;
};

// Parses a `--feature-gates` style list, "Name=true,Other=false", into `features`. Unknown
// gate names and values other than true/false are InvalidArgument.
Status ParseFeatureGates(std::string_view text, Features* features);

// Upstream defaulting (pkg/apis/resource/v1/defaults.go and the `+default` tags):
// `allocationMode` "" -> ExactCount, `count` 0 -> 1 when ExactCount (exactly and each
// subrequest), toleration `operator` "" -> Equal (requests and allocation results).
void SetDefaults(resourcev1::ResourceClaim* claim);
void SetDefaults(resourcev1::ResourceClaimTemplate* tmpl);

// DeviceClass (cluster-scoped; name a DNS subdomain).
FieldErrorList ValidateDeviceClass(const resourcev1::DeviceClass& obj, const Features& f = {});
FieldErrorList ValidateDeviceClassUpdate(const resourcev1::DeviceClass& obj,
                                         const resourcev1::DeviceClass& old,
                                         const Features& f = {});

// ResourceSlice (cluster-scoped). Update checks driver, pool name and node name immutability and
// revalidates the spec (unchanged capacities and taints of a device are not re-checked).
FieldErrorList ValidateResourceSlice(const resourcev1::ResourceSlice& obj, const Features& f = {});
FieldErrorList ValidateResourceSliceUpdate(const resourcev1::ResourceSlice& obj,
                                           const resourcev1::ResourceSlice& old,
                                           const Features& f = {});

// ResourceClaim (namespaced). Create validates metadata and spec (not status, which the API
// server resets on create). Update checks metadata and spec immutability only. A status update
// validates the status against the old one: reservedFor only with an allocation, unique and at
// most 256; no new reservations while the claim is being deleted; an allocation is set once and
// then only cleared; device status entries must name allocated devices.
FieldErrorList ValidateResourceClaim(const resourcev1::ResourceClaim& obj, const Features& f = {});
FieldErrorList ValidateResourceClaimUpdate(const resourcev1::ResourceClaim& obj,
                                           const resourcev1::ResourceClaim& old,
                                           const Features& f = {});
FieldErrorList ValidateResourceClaimStatusUpdate(const resourcev1::ResourceClaim& obj,
                                                 const resourcev1::ResourceClaim& old,
                                                 const Features& f = {});

// ResourceClaimTemplate (namespaced). The spec is immutable on update.
FieldErrorList ValidateResourceClaimTemplate(const resourcev1::ResourceClaimTemplate& obj,
                                             const Features& f = {});
FieldErrorList ValidateResourceClaimTemplateUpdate(const resourcev1::ResourceClaimTemplate& obj,
                                                   const resourcev1::ResourceClaimTemplate& old,
                                                   const Features& f = {});

// DeviceTaintRule (cluster-scoped). The effect is only re-checked on update when it changed.
FieldErrorList ValidateDeviceTaintRule(const resourcev1::DeviceTaintRule& obj,
                                       const Features& f = {});
FieldErrorList ValidateDeviceTaintRuleUpdate(const resourcev1::DeviceTaintRule& obj,
                                             const resourcev1::DeviceTaintRule& old,
                                             const Features& f = {});
FieldErrorList ValidateDeviceTaintRuleStatusUpdate(const resourcev1::DeviceTaintRule& obj,
                                                   const resourcev1::DeviceTaintRule& old,
                                                   const Features& f = {});

// The status rules alone, as a status update from the same object without status would apply
// them: what `draplane lint` checks in a manifest that carries a status (e.g. a `kubectl get -o
// yaml` dump). The API server itself resets the status on create.
FieldErrorList ValidateResourceClaimStatus(const resourcev1::ResourceClaim& obj,
                                           const Features& f = {});
FieldErrorList ValidateDeviceTaintRuleStatus(const resourcev1::DeviceTaintRule& obj,
                                             const Features& f = {});

// Limits of resource.k8s.io/v1 (k8s.io/api/resource/v1/types.go).
inline constexpr size_t kResourceSliceMaxDevices = 128;
inline constexpr size_t kResourceSliceMaxDevicesWithAdvancedFeatures = 64;
inline constexpr size_t kResourceSliceMaxCounterSets = 8;
inline constexpr size_t kResourceSliceMaxCountersPerCounterSet = 32;
inline constexpr size_t kResourceSliceMaxDeviceCounterConsumptionsPerDevice = 2;
inline constexpr size_t kResourceSliceMaxCountersPerDeviceCounterConsumption = 32;
inline constexpr size_t kResourceSliceMaxAttributesAndCapacitiesPerDevice = 32;
inline constexpr size_t kResourceSliceMaxAttributeValuesPerDevice = 48;
inline constexpr size_t kDeviceAttributeMaxValueLength = 64;
inline constexpr size_t kDeviceTaintsMaxLength = 16;
inline constexpr size_t kBindingConditionsMaxSize = 4;
inline constexpr size_t kBindingFailureConditionsMaxSize = 4;
inline constexpr size_t kDeviceRequestsMaxSize = 32;
inline constexpr size_t kAllocationResultsMaxSize = 32;
inline constexpr size_t kDeviceConstraintsMaxSize = 32;
inline constexpr size_t kDeviceConfigMaxSize = 32;
inline constexpr size_t kDeviceSelectorsMaxSize = 32;
inline constexpr size_t kFirstAvailableDeviceRequestMaxSize = 8;
inline constexpr size_t kCELSelectorExpressionMaxLength = 10 * 1024;
inline constexpr size_t kOpaqueParametersMaxLength = 10 * 1024;
inline constexpr size_t kResourceClaimReservedForMaxSize = 256;
inline constexpr size_t kAllocatedDeviceStatusMaxConditions = 8;
inline constexpr size_t kAllocatedDeviceStatusDataMaxLength = 10 * 1024;
inline constexpr size_t kNetworkDeviceDataMaxIPs = 16;
inline constexpr size_t kNetworkDeviceDataInterfaceNameMaxLength = 256;
inline constexpr size_t kNetworkDeviceDataHardwareAddressMaxLength = 128;
inline constexpr size_t kDeviceTaintRuleStatusMaxConditions = 8;
inline constexpr size_t kCapacityRequestPolicyDiscreteMaxOptions = 10;
// KEP-5963 (1.37 alpha): compatibility groups per counter consumption; a group name is an opaque
// string, limited here like a string attribute value.
inline constexpr size_t kDeviceCounterConsumptionMaxCompatibilityGroups = 2;
inline constexpr size_t kCompatibilityGroupMaxLength = 64;
// KEP-6080 (1.37 alpha): derived attributes per request or subrequest.
inline constexpr size_t kDerivedAttributesMaxSize = 32;

}  // namespace draplane::api::validation
