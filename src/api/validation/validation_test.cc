#include "api/validation/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "api/validation/disabled_fields.h"
#include "api/validation/internal/common.h"

namespace draplane::api::validation {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

template <typename T>
T Parse(std::string_view json) {
  T out;
  FieldErrorList decode_errors;
  resourcev1::Decode(boost::json::parse(json), &out, &decode_errors);
  EXPECT_THAT(decode_errors, IsEmpty()) << json;
  return out;
}

std::vector<std::string> Render(const FieldErrorList& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.ToString());
  return out;
}

constexpr std::string_view kClaim = R"({
  "metadata": {"name": "c", "namespace": "ns"},
  "spec": {"devices": {
    "requests": [
      {"name": "small", "exactly": {"deviceClassName": "mig.nvidia.com"}},
      {"name": "gpus", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu.nvidia.com"},
        {"name": "a100", "deviceClassName": "gpu.nvidia.com", "count": 2}]}],
    "constraints": [{"requests": ["small", "gpus/a100"],
                     "matchAttribute": "gpu.nvidia.com/parentUUID"}],
    "config": [{"requests": ["gpus"], "opaque": {"driver": "gpu.nvidia.com",
                                                 "parameters": {"kind": "GpuConfig"}}}]}}})";

resourcev1::ResourceClaim DefaultedClaim(std::string_view json) {
  auto claim = Parse<resourcev1::ResourceClaim>(json);
  SetDefaults(&claim);
  return claim;
}

TEST(ValidationTest, PresentBitsMatchTheCodec) {
  // The validation tells absent lists (Go nil) from empty ones through the codec's `present`
  // bits; this pins the bit numbers it uses.
  auto spec = Parse<resourcev1::ResourceSliceSpec>(R"({"devices": [], "sharedCounters": []})");
  EXPECT_TRUE(internal::PresentBit(spec.present, internal::kSliceSpecDevicesBit));
  EXPECT_TRUE(internal::PresentBit(spec.present, internal::kSliceSpecSharedCountersBit));
  auto attr = Parse<resourcev1::DeviceAttribute>(
      R"({"ints": [], "bools": [], "strings": [], "versions": []})");
  for (int bit : {internal::kAttributeIntsBit, internal::kAttributeBoolsBit,
                  internal::kAttributeStringsBit, internal::kAttributeVersionsBit}) {
    EXPECT_TRUE(internal::PresentBit(attr.present, bit)) << bit;
  }
  auto only_ints = Parse<resourcev1::DeviceAttribute>(R"({"ints": []})");
  EXPECT_TRUE(internal::PresentBit(only_ints.present, internal::kAttributeIntsBit));
  EXPECT_FALSE(internal::PresentBit(only_ints.present, internal::kAttributeBoolsBit));
  auto device =
      Parse<resourcev1::Device>(R"({"bindingConditions": [], "bindingFailureConditions": []})");
  EXPECT_TRUE(internal::PresentBit(device.present, internal::kDeviceBindingConditionsBit));
  EXPECT_TRUE(internal::PresentBit(device.present, internal::kDeviceBindingFailureConditionsBit));
  auto only_failure = Parse<resourcev1::Device>(R"({"bindingFailureConditions": []})");
  EXPECT_FALSE(internal::PresentBit(only_failure.present, internal::kDeviceBindingConditionsBit));
  auto result = Parse<resourcev1::DeviceRequestAllocationResult>(
      R"({"bindingConditions": [], "bindingFailureConditions": []})");
  EXPECT_TRUE(internal::PresentBit(result.present, internal::kResultBindingConditionsBit));
  EXPECT_TRUE(internal::PresentBit(result.present, internal::kResultBindingFailureConditionsBit));
  corev1::NodeSelector selector;
  FieldErrorList errs;
  corev1::Decode(boost::json::parse(R"({"nodeSelectorTerms": []})"), &selector, &errs);
  EXPECT_TRUE(internal::PresentBit(selector.present, internal::kNodeSelectorTermsBit));
  auto consumption = Parse<resourcev1::DeviceCounterConsumption>(R"({"compatibilityGroups": []})");
  EXPECT_TRUE(internal::PresentBit(consumption.present,
                                   internal::kCounterConsumptionCompatibilityGroupsBit));
  auto exact = Parse<resourcev1::ExactDeviceRequest>(R"({"derivedAttributes": []})");
  EXPECT_TRUE(internal::PresentBit(exact.present, internal::kExactRequestDerivedAttributesBit));
  auto sub = Parse<resourcev1::DeviceSubRequest>(R"({"derivedAttributes": []})");
  EXPECT_TRUE(internal::PresentBit(sub.present, internal::kSubRequestDerivedAttributesBit));
  auto gated_device = Parse<resourcev1::Device>(R"({"consumesCounters": [], "taints": []})");
  EXPECT_TRUE(internal::PresentBit(gated_device.present, internal::kDeviceConsumesCountersBit));
  EXPECT_TRUE(internal::PresentBit(gated_device.present, internal::kDeviceTaintsBit));
  auto tolerating = Parse<resourcev1::ExactDeviceRequest>(R"({"tolerations": []})");
  EXPECT_TRUE(internal::PresentBit(tolerating.present, internal::kExactRequestTolerationsBit));
  auto tolerating_sub = Parse<resourcev1::DeviceSubRequest>(R"({"tolerations": []})");
  EXPECT_TRUE(internal::PresentBit(tolerating_sub.present, internal::kSubRequestTolerationsBit));
  auto request = Parse<resourcev1::DeviceRequest>(R"({"firstAvailable": []})");
  EXPECT_TRUE(internal::PresentBit(request.present, internal::kRequestFirstAvailableBit));
}

// Every gate whose fields the strategies drop turned off (1.34's defaults turn off the first four
// of them): the fields go on write.
TEST(ValidationTest, FieldsOfGatesThatAreOffAreRemovedUnlessTheOldObjectUsesThem) {
  const Features off{.consumable_capacity = false,
                     .admin_access = false,
                     .prioritized_list = false,
                     .device_taints = false,
                     .partitionable_devices = false,
                     .binding_conditions = false};
  auto slice = Parse<resourcev1::ResourceSlice>(R"({"spec": {"perDeviceNodeSelection": true,
      "sharedCounters": [{"name": "gpu-0", "counters": {"sm": {"value": "1"}}}],
      "devices": [{"name": "d", "nodeName": "n", "allowMultipleAllocations": true,
        "capacity": {"memory": {"value": "1Gi", "requestPolicy": {"default": "1Gi"}}},
        "taints": [{"key": "k", "effect": "NoSchedule"}], "bindsToNode": true,
        "bindingConditions": ["a"], "bindingFailureConditions": ["f"],
        "consumesCounters": [{"counterSet": "gpu-0", "counters": {}}]}]}})");
  auto dropped = slice;
  DropDisabledFields(dropped, nullptr, off);
  EXPECT_EQ(boost::json::serialize(resourcev1::Encode(dropped.spec)),
            R"({"devices":[{"name":"d","capacity":{"memory":{"value":"1Gi"}}}]})");
  auto kept = slice;
  DropDisabledFields(kept, &slice, off);
  EXPECT_EQ(kept, slice) << "the old object uses every gated field";
  auto on = slice;
  DropDisabledFields(on, nullptr, Features{});
  EXPECT_EQ(on, slice);

  auto claim = Parse<resourcev1::ResourceClaim>(R"({"spec": {"devices": {"requests": [
      {"name": "a", "exactly": {"deviceClassName": "gpu", "adminAccess": true,
       "tolerations": [{"key": "k", "operator": "Exists"}], "capacity": {"requests": {"m": "1"}}}},
      {"name": "b", "firstAvailable": [{"name": "s", "deviceClassName": "gpu"}]}],
      "constraints": [{"requests": ["a"], "distinctAttribute": "x/y"}]}}})");
  auto spec = claim.spec;
  DropDisabledFields(spec, nullptr, off);
  EXPECT_EQ(boost::json::serialize(resourcev1::Encode(spec)),
            R"({"devices":{"requests":[{"name":"a","exactly":{"deviceClassName":"gpu"}},)"
            R"({"name":"b"}],"constraints":[{"requests":["a"]}]}})");
  spec = claim.spec;
  DropDisabledFields(spec, &claim.spec, off);
  EXPECT_EQ(spec, claim.spec);
}

TEST(ValidationTest, DisabledAlphaFieldsAreRemovedUnlessTheOldObjectUsesThem) {
  auto slice = Parse<resourcev1::ResourceSlice>(R"({"spec": {"devices": [{"name": "mig",
      "consumesCounters": [{"counterSet": "gpu-0", "compatibilityGroups": []}]}]}})");
  auto grouped = slice;
  grouped.spec.devices[0].consumes_counters[0].compatibility_groups = {"mig"};
  auto dropped = grouped;
  DropDisabledFields(dropped, nullptr, Features{});
  EXPECT_EQ(boost::json::serialize(resourcev1::Encode(dropped)).find("compatibilityGroups"),
            std::string::npos);
  auto kept = grouped;
  DropDisabledFields(kept, &grouped, Features{});
  EXPECT_EQ(kept, grouped);
  auto gated = grouped;
  DropDisabledFields(gated, nullptr, Features{.device_compatibility_groups = true});
  EXPECT_EQ(gated, grouped);

  auto claim = Parse<resourcev1::ResourceClaim>(R"({"spec": {"devices": {"requests": [
      {"name": "a", "exactly": {"deviceClassName": "gpu",
       "derivedAttributes": [{"name": "x/numa", "expression": "1"}]}},
      {"name": "b", "firstAvailable": [{"name": "s", "deviceClassName": "gpu",
       "derivedAttributes": []}]}]}}})");
  auto spec = claim.spec;
  DropDisabledFields(spec, nullptr, Features{});
  EXPECT_EQ(boost::json::serialize(resourcev1::Encode(spec)).find("derivedAttributes"),
            std::string::npos);
  auto old_spec = claim.spec;
  spec = claim.spec;
  DropDisabledFields(spec, &old_spec, Features{});
  EXPECT_EQ(spec, claim.spec);
}

TEST(ValidationTest, ValidClaimHasNoErrors) {
  EXPECT_THAT(Render(ValidateResourceClaim(DefaultedClaim(kClaim))), IsEmpty());
}

TEST(ValidationTest, DefaultsAllocationModeCountAndOperator) {
  auto claim = DefaultedClaim(R"({"spec": {"devices": {"requests": [
      {"name": "a", "exactly": {"deviceClassName": "c",
                                "tolerations": [{"key": "k", "value": "v"}]}},
      {"name": "b", "exactly": {"deviceClassName": "c", "allocationMode": "All"}}]}}})");
  const auto& a = *claim.spec.devices.requests[0].exactly;
  EXPECT_EQ(a.allocation_mode, "ExactCount");
  EXPECT_EQ(a.count, 1);
  EXPECT_EQ(a.tolerations[0].operator_, "Equal");
  const auto& b = *claim.spec.devices.requests[1].exactly;
  EXPECT_EQ(b.count, 0);  // All keeps a zero count.
}

TEST(ValidationTest, UndefaultedRequestReportsTheEmptyMode) {
  auto claim = Parse<resourcev1::ResourceClaim>(R"({"metadata": {"name": "c", "namespace": "n"},
      "spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "c"}}]}}})");
  EXPECT_THAT(Render(ValidateResourceClaim(claim)),
              ElementsAre("spec.devices.requests[0].exactly.allocationMode: Unsupported value: "
                          "\"\": supported values: \"All\", \"ExactCount\""));
}

TEST(ValidationTest, RequestReferencesResolveRequestsAndSubrequests) {
  resourcev1::DeviceClaim claim = DefaultedClaim(kClaim).spec.devices;
  internal::RequestNames names(claim);
  EXPECT_TRUE(names.Has("small"));
  EXPECT_TRUE(names.Has("gpus"));
  EXPECT_TRUE(names.Has("gpus/h100"));
  EXPECT_FALSE(names.Has("small/x"));  // `exactly` requests have no subrequests.
  EXPECT_FALSE(names.Has("gpus/b200"));
  EXPECT_FALSE(names.Has("gpus/h100/0"));
  EXPECT_THAT(Render(internal::ValidateRequestNameRef("Gpus/h100", FieldPath("r"), names)),
              ElementsAre(::testing::StartsWith("r: Invalid value: \"Gpus\": a lowercase RFC 1123 "
                                                "label"),
                          "r: Invalid value: \"Gpus/h100\": must be the name of a request in the "
                          "claim or the name of a request and a subrequest separated by '/'"));
}

TEST(ValidationTest, ConstraintMessageDependsOnConsumableCapacityGate) {
  auto claim = DefaultedClaim(R"({"metadata": {"name": "c", "namespace": "n"},
      "spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "c"}}],
                           "constraints": [{}]}}})");
  EXPECT_THAT(Render(ValidateResourceClaim(claim)),
              ElementsAre("spec.devices.constraints[0]: Required value: exactly one of "
                          "\"matchAttribute\" or \"distinctAttribute\" is required, but multiple "
                          "fields are set"));
  Features off;
  off.consumable_capacity = false;
  EXPECT_THAT(Render(ValidateResourceClaim(claim, off)),
              ElementsAre("spec.devices.constraints[0].matchAttribute: Required value"));
}

TEST(ValidationTest, ClaimSpecIsImmutable) {
  auto old = DefaultedClaim(kClaim);
  old.metadata.resource_version = "1";
  auto changed = old;
  changed.spec.devices.requests[1].first_available[1].count = 4;
  EXPECT_THAT(Render(ValidateResourceClaimUpdate(changed, old)),
              ElementsAre("spec: Invalid value: null: field is immutable"));
  EXPECT_THAT(Render(ValidateResourceClaimUpdate(old, old)), IsEmpty());
}

constexpr std::string_view kAllocated = R"({
  "metadata": {"name": "c", "namespace": "ns", "resourceVersion": "7"},
  "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}]}},
  "status": {"allocation": {"devices": {"results": [
      {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}},
    "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
    "devices": [{"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}})";

TEST(ValidationTest, AllocationIsSetOnceThenOnlyCleared) {
  auto claim = DefaultedClaim(kAllocated);
  resourcev1::ResourceClaim unallocated = claim;
  unallocated.status = {};
  // Setting an allocation is fine; changing it is not; clearing it is.
  EXPECT_THAT(Render(ValidateResourceClaimStatusUpdate(claim, unallocated)), IsEmpty());
  auto moved = claim;
  moved.status.allocation->devices.results[0].device = "gpu-1";
  moved.status.devices[0].device = "gpu-1";
  EXPECT_THAT(Render(ValidateResourceClaimStatusUpdate(moved, claim)),
              ElementsAre("status.allocation: Invalid value: null: field is immutable"));
  auto cleared = claim;
  cleared.status.allocation.reset();
  cleared.status.reserved_for.clear();
  cleared.status.devices.clear();
  EXPECT_THAT(Render(ValidateResourceClaimStatusUpdate(cleared, claim)), IsEmpty());
}

TEST(ValidationTest, ReservationsNeedAnAllocationAndAreFrozenWhileDeleting) {
  auto claim = DefaultedClaim(kAllocated);
  auto no_alloc = claim;
  no_alloc.status.allocation.reset();
  no_alloc.status.devices.clear();
  EXPECT_THAT(Render(ValidateResourceClaimStatus(no_alloc)),
              ElementsAre("status.reservedFor: Forbidden: may not be specified when `allocated` "
                          "is not set"));
  auto deleting = claim;
  deleting.metadata.deletion_timestamp = *Time::Parse("2025-01-01T00:00:00Z");
  auto more = deleting;
  more.status.reserved_for.push_back(more.status.reserved_for[0]);
  more.status.reserved_for[1].uid = "u2";
  EXPECT_THAT(Render(ValidateResourceClaimStatusUpdate(more, deleting)),
              ElementsAre("status.reservedFor: Forbidden: new entries may not be added while "
                          "`deallocationRequested` or `deletionTimestamp` are set"));
  auto fewer = deleting;
  fewer.status.reserved_for.clear();
  EXPECT_THAT(Render(ValidateResourceClaimStatusUpdate(fewer, deleting)), IsEmpty());
}

TEST(ValidationTest, ReservedForIsLimitedTo256) {
  auto claim = DefaultedClaim(kAllocated);
  claim.status.reserved_for.resize(257, claim.status.reserved_for[0]);
  for (size_t i = 0; i < claim.status.reserved_for.size(); ++i) {
    claim.status.reserved_for[i].uid = "u" + std::to_string(i);
  }
  EXPECT_THAT(Render(ValidateResourceClaimStatus(claim)),
              ElementsAre("status.reservedFor: Too many: 257: must have at most 256 items"));
}

TEST(ValidationTest, DeviceStatusMustReferenceAllocatedDevice) {
  auto claim = DefaultedClaim(kAllocated);
  claim.status.devices[0].share_id = "123e4567-e89b-12d3-a456-426614174000";
  EXPECT_THAT(Render(ValidateResourceClaimStatus(claim)),
              ElementsAre("status.devices[0]: Invalid value: "
                          "gpu.example.com/node-1/gpu-0/123e4567-e89b-12d3-a456-426614174000: "
                          "must be an allocated device in the claim"));
}

resourcev1::ResourceSlice Slice(std::string_view capacity_json) {
  std::string json = R"({"metadata": {"name": "s"}, "spec": {"driver": "nic.example.com",
      "nodeName": "n", "pool": {"name": "n", "resourceSliceCount": 1},
      "devices": [{"name": "eth0", "allowMultipleAllocations": true,
                   "capacity": {"bw": )" +
                     std::string(capacity_json) + "}}]}}";
  return Parse<resourcev1::ResourceSlice>(json);
}

TEST(ValidationTest, CapacityRangePolicy) {
  EXPECT_THAT(Render(ValidateResourceSlice(Slice(
                  R"({"value": "100G", "requestPolicy": {"default": "10G",
                      "validRange": {"min": "1G", "max": "50G", "step": "1G"}}})"))),
              IsEmpty());
  EXPECT_THAT(
      Render(ValidateResourceSlice(Slice(
          R"({"value": "100G", "requestPolicy": {"default": "2G",
              "validRange": {"min": "1G", "max": "8G", "step": "3G"}}})"))),
      ElementsAre("spec.devices[0].capacity[bw].requestPolicy.validRange.step: Invalid value: "
                  "\"2G\": value is not a multiple of a given step (3G) from (1G)",
                  "spec.devices[0].capacity[bw].requestPolicy.validRange.step: Invalid value: "
                  "\"8G\": value is not a multiple of a given step (3G) from (1G)"));
  // Bounds beyond int64 cannot be checked with integer arithmetic.
  EXPECT_THAT(
      Render(ValidateResourceSlice(Slice(
          R"({"value": "100E", "requestPolicy": {"default": "10E",
              "validRange": {"min": "10E", "step": "1"}}})"))),
      ElementsAre("spec.devices[0].capacity[bw].requestPolicy.validRange.default: Invalid value: "
                  "\"10E\": must not be larger than 9223372036854775807",
                  "spec.devices[0].capacity[bw].requestPolicy.validRange.min: Invalid value: "
                  "\"10E\": must not be larger than 9223372036854775807"));
}

TEST(ValidationTest, FractionalRangesUseMilliValuesWithTheGate) {
  std::string_view policy = R"({"value": "2", "requestPolicy": {"default": "500m",
      "validRange": {"min": "250m", "step": "250m"}}})";
  // Without the gate Value() rounds 250m and 500m up to 1: (1 - 1) % 1 == 0, accepted.
  EXPECT_THAT(Render(ValidateResourceSlice(Slice(policy))), IsEmpty());
  Features fractional;
  fractional.fractional_capacity_range = true;
  EXPECT_THAT(Render(ValidateResourceSlice(Slice(policy), fractional)), IsEmpty());
  std::string_view off_step = R"({"value": "2", "requestPolicy": {"default": "600m",
      "validRange": {"min": "250m", "step": "250m"}}})";
  EXPECT_THAT(Render(ValidateResourceSlice(Slice(off_step), fractional)),
              ElementsAre("spec.devices[0].capacity[bw].requestPolicy.validRange.step: Invalid "
                          "value: \"600m\": value is not a multiple of a given step (250m) from "
                          "(250m)"));
}

TEST(ValidationTest, UnchangedCapacityIsNotRevalidatedOnUpdate) {
  // An over-limit policy stored earlier (ratcheting): the update leaves it alone.
  auto old = Slice(R"({"value": "1G", "requestPolicy": {"default": "2G",
      "validValues": ["2G"]}})");
  old.metadata.resource_version = "3";
  EXPECT_EQ(ValidateResourceSlice(old).size(), 1u);
  auto updated = old;
  updated.spec.devices[0].attributes["model"].string_value = "cx7";
  EXPECT_THAT(Render(ValidateResourceSliceUpdate(updated, old)), IsEmpty());
}

TEST(ValidationTest, SliceImmutableFields) {
  auto old = Slice(R"({"value": "1"})");
  old.metadata.resource_version = "3";
  auto moved = old;
  moved.spec.node_name = "other";
  moved.spec.pool.name = "other";
  EXPECT_THAT(Render(ValidateResourceSliceUpdate(moved, old)),
              ElementsAre("spec.pool.name: Invalid value: \"other\": field is immutable",
                          "spec.nodeName: Invalid value: \"other\": field is immutable"));
}

TEST(ValidationTest, ClassSelectorsStoredWhenUnchanged) {
  auto old = Parse<resourcev1::DeviceClass>(R"({"metadata": {"name": "c",
      "resourceVersion": "1"}, "spec": {}})");
  old.spec.selectors.emplace_back().cel.emplace().expression = std::string(11000, 'x');
  EXPECT_THAT(Render(ValidateDeviceClass(old)),
              ElementsAre("spec.selectors[0].cel.expression: Too long: may not be more than "
                          "10240 bytes"));
  EXPECT_THAT(Render(ValidateDeviceClassUpdate(old, old)), IsEmpty());
  auto changed = old;
  changed.spec.selectors[0].cel->expression += "y";
  EXPECT_EQ(ValidateDeviceClassUpdate(changed, old).size(), 1u);
}

TEST(ValidationTest, TaintRuleEffectOnlyCheckedWhenChanged) {
  auto old = Parse<resourcev1::DeviceTaintRule>(R"({"metadata": {"name": "r",
      "resourceVersion": "1"}, "spec": {"taint": {"key": "k", "effect": "Future"}}})");
  EXPECT_THAT(Render(ValidateDeviceTaintRule(old)),
              ElementsAre("spec.taint.effect: Unsupported value: \"Future\": supported values: "
                          "\"NoExecute\", \"NoSchedule\", \"None\""));
  EXPECT_THAT(Render(ValidateDeviceTaintRuleUpdate(old, old)), IsEmpty());
}

TEST(ValidationTest, ParsesFeatureGates) {
  Features f;
  ASSERT_TRUE(
      ParseFeatureGates("DRAConsumableCapacity=false,DRAFractionalCapacityRange=true", &f).ok());
  EXPECT_FALSE(f.consumable_capacity);
  EXPECT_TRUE(f.fractional_capacity_range);
  EXPECT_EQ(ParseFeatureGates("DRAUnknown=true", &f).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFeatureGates("DRAConsumableCapacity=yes", &f).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFeatureGates("DRAConsumableCapacity", &f).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParseFeatureGates("", &f).ok());
}

}  // namespace
}  // namespace draplane::api::validation
