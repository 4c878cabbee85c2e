#include "allocator/features.h"

#include <gtest/gtest.h>

#include <set>

namespace draplane::allocator {
namespace {

TEST(FeaturesTest, DefaultsFollowTheReleaseTable) {
  Features v134 = DefaultFeatures("1.34").value();
  EXPECT_TRUE(v134.admin_access);
  EXPECT_TRUE(v134.prioritized_list);
  EXPECT_FALSE(v134.device_taints);
  EXPECT_FALSE(v134.partitionable_devices);
  EXPECT_FALSE(v134.consumable_capacity);
  EXPECT_FALSE(v134.device_binding_and_status);
  EXPECT_EQ(DefaultFeatures("v1.35.3").value(), v134);

  Features v136 = DefaultFeatures("1.36").value();
  EXPECT_TRUE(v136.device_taints);
  EXPECT_TRUE(v136.partitionable_devices);
  EXPECT_TRUE(v136.consumable_capacity);
  EXPECT_TRUE(v136.device_binding_and_status);
  EXPECT_FALSE(v136.list_type_attributes);
  EXPECT_EQ(v136.list_attributes, cel::ListAttributeMode::kLists);
  EXPECT_EQ(v134.list_attributes, cel::ListAttributeMode::kUnsupported);

  // 1.37 differs only in how selectors read list attributes; its new features are alpha.
  Features v137 = DefaultFeatures("1.37").value();
  EXPECT_EQ(v137.list_attributes, cel::ListAttributeMode::kFirstElement);
  EXPECT_FALSE(v137.device_compatibility_groups);
  EXPECT_FALSE(v137.derived_attributes);
  v137.list_attributes = cel::ListAttributeMode::kLists;
  EXPECT_EQ(v137, v136);

  EXPECT_EQ(DefaultFeatures("1.33").status().code(), StatusCode::kInvalidArgument);
}

TEST(FeaturesTest, GatesOverrideTheBase) {
  Features base = DefaultFeatures("1.36").value();
  Features f = ApplyFeatureGates("DRAListTypeAttributes=true, DRADeviceTaints=false", base).value();
  EXPECT_TRUE(f.list_type_attributes);
  EXPECT_FALSE(f.device_taints);
  EXPECT_TRUE(f.consumable_capacity);
  Features alpha = ApplyFeatureGates("DRADeviceCompatibilityGroups=true,DRADerivedAttributes=true",
                                     DefaultFeatures("1.37").value())
                       .value();
  EXPECT_TRUE(alpha.device_compatibility_groups);
  EXPECT_TRUE(alpha.derived_attributes);
  EXPECT_EQ(alpha.list_attributes, cel::ListAttributeMode::kFirstElement) << "kept from the base";
}

TEST(FeaturesTest, BindingAndStatusNeedsBothGates) {
  Features base;
  EXPECT_FALSE(
      ApplyFeatureGates("DRADeviceBindingConditions=true", base).value().device_binding_and_status);
  EXPECT_TRUE(
      ApplyFeatureGates("DRADeviceBindingConditions=true,DRAResourceClaimDeviceStatus=true", base)
          .value()
          .device_binding_and_status);
  Features on = DefaultFeatures("1.36").value();
  EXPECT_FALSE(ApplyFeatureGates("DRAResourceClaimDeviceStatus=false", on)
                   .value()
                   .device_binding_and_status);
}

TEST(FeaturesTest, RejectsUnknownGatesAndValues) {
  EXPECT_EQ(ApplyFeatureGates("DRANope=true", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyFeatureGates("DRAAdminAccess=yes", {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyFeatureGates("DRAAdminAccess", {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(FeaturesTest, NamesRoundTrip) {
  Features f;
  for (std::string_view name : FeatureNames()) ASSERT_TRUE(SetFeature(name, true, &f).ok());
  EXPECT_EQ(f, AllFeatures());
  EXPECT_EQ(EnabledFeatureNames(f).size(), 9u);
  EXPECT_FALSE(SetFeature("Bogus", true, &f).ok());
}

// The packed word tells every pair of different Features apart: each flag and the list mode.
TEST(FeaturesTest, PackedFeaturesDifferWhereTheFeaturesDo) {
  const Features none;
  std::set<uint64_t> seen = {PackedFeatures(none)};
  for (std::string_view name : FeatureNames()) {
    Features one;
    ASSERT_TRUE(SetFeature(name, true, &one).ok());
    EXPECT_TRUE(seen.insert(PackedFeatures(one)).second) << name;
  }
  Features other_mode;
  other_mode.list_attributes = cel::ListAttributeMode::kUnsupported;
  ASSERT_NE(other_mode, none);
  EXPECT_TRUE(seen.insert(PackedFeatures(other_mode)).second);
  EXPECT_EQ(PackedFeatures(AllFeatures()), PackedFeatures(AllFeatures()));
  EXPECT_NE(PackedFeatures(AllFeatures()), PackedFeatures(none));
}

}  // namespace
}  // namespace draplane::allocator
