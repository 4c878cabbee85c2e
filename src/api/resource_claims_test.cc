#include "api/resource_claims.h"

#include <gtest/gtest.h>

namespace draplane::api {
namespace {

namespace rv1 = resourcev1;

rv1::ResourceClaim AllocatedClaim() {
  rv1::ResourceClaim claim;
  claim.metadata.finalizers = {"example.com/audit", std::string(kClaimFinalizer), "other/keep"};
  claim.status.allocation.emplace();
  rv1::DeviceRequestAllocationResult result;
  result.request = "gpu";
  result.driver = "gpu.example.com";
  result.pool = "node-a";
  result.device = "gpu-0";
  claim.status.allocation->devices.results.push_back(result);
  rv1::AllocatedDeviceStatus device;
  device.driver = "gpu.example.com";
  device.pool = "node-a";
  device.device = "gpu-0";
  claim.status.devices.push_back(device);
  rv1::ResourceClaimConsumerReference ref;
  ref.resource = "pods";
  ref.name = "p";
  ref.uid = "uid-p";
  claim.status.reserved_for.push_back(ref);
  return claim;
}

TEST(ResourceClaimsTest, OnlyOurFinalizerIsRemoved) {
  rv1::ResourceClaim claim = AllocatedClaim();
  EXPECT_TRUE(HasClaimFinalizer(claim));
  EXPECT_TRUE(RemoveClaimFinalizer(&claim));
  EXPECT_EQ(claim.metadata.finalizers,
            (std::vector<std::string>{"example.com/audit", "other/keep"}));
  EXPECT_FALSE(RemoveClaimFinalizer(&claim));
  EXPECT_TRUE(AddClaimFinalizer(&claim));
  EXPECT_FALSE(AddClaimFinalizer(&claim));
  EXPECT_EQ(claim.metadata.finalizers.back(), kClaimFinalizer);
}

TEST(ResourceClaimsTest, DeallocationTakesTheDeviceStatusAlong) {
  rv1::ResourceClaim claim = AllocatedClaim();
  ClearAllocation(&claim.status);
  EXPECT_FALSE(claim.status.allocation.has_value());
  EXPECT_TRUE(claim.status.devices.empty());
  EXPECT_EQ(claim.status.reserved_for.size(), 1u) << "reservations stay";

  rv1::ResourceClaim unused = AllocatedClaim();
  ClearAllocationAndReservations(&unused.status);
  EXPECT_FALSE(unused.status.allocation.has_value());
  EXPECT_TRUE(unused.status.devices.empty());
  EXPECT_TRUE(unused.status.reserved_for.empty());
}

TEST(ResourceClaimsTest, ReservationsOfPods) {
  corev1::Pod pod;
  pod.metadata.name = "p";
  pod.metadata.uid = "uid-p";
  rv1::ResourceClaim claim = AllocatedClaim();
  EXPECT_TRUE(IsReservedForPod(pod, claim));
  rv1::ResourceClaimConsumerReference ref = PodConsumerReference(pod);
  EXPECT_EQ(ref.resource, "pods");
  EXPECT_EQ(ref.name, "p");
  EXPECT_EQ(ref.uid, "uid-p");
  // Another resource with the same uid is not the pod.
  claim.status.reserved_for[0].api_group = "example.com";
  EXPECT_FALSE(IsReservedForPod(pod, claim));
  EXPECT_TRUE(RemoveReservation(&claim.status, "uid-p"));
  EXPECT_TRUE(claim.status.reserved_for.empty());
  EXPECT_FALSE(RemoveReservation(&claim.status, "uid-p"));
}

}  // namespace
}  // namespace draplane::api
