#include "allocator/charges.h"

#include <gtest/gtest.h>

#include <string>

#include "allocator/internal/testing_yaml.h"

namespace draplane::allocator {
namespace {

namespace rv1 = api::resourcev1;

api::Quantity Q(std::string_view text) { return *api::Quantity::Parse(text); }

constexpr std::string_view kSlice = R"(
metadata: {name: gpu-node-1}
spec:
  driver: gpu.example.com
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  sharedCounters:
  - name: gpu-0
    counters: {memory: {value: 80Gi}}
  devices:
  - name: gpu-0
    capacity: {memory: {value: 80Gi}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 80Gi}}}]
  - name: gpu-0-mig-1g
    capacity: {memory: {value: 9856Mi}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 9856Mi}}}]
  - name: h100-7
    capacity: {memory: {value: 80Gi}, gpu.example.com/clock: {value: "2"}, other.io/clock: {value: "3"}}
  - name: nic-0
    allowMultipleAllocations: true
    capacity: {bandwidth: {value: 100G}}
  - name: shared-mig
    allowMultipleAllocations: true
    capacity: {memory: {value: 10Gi}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 10Gi}}}]
)";

TEST(ChargesTest, ResourceNamesRoundTrip) {
  EXPECT_EQ(DeviceClassCounterResource("mig.nvidia.com", "memory"),
            "mig.nvidia.com.deviceclass.draplane.dev/counter.memory");
  EXPECT_EQ(DriverCounterResource("gpu.nvidia.com", "memory"),
            "gpu.nvidia.com.driver.draplane.dev/counter.memory");
  EXPECT_EQ(DeviceClassCapacityResource("nic", "bandwidth"),
            "nic.deviceclass.draplane.dev/capacity.bandwidth");
  for (const std::string& name : {api::quota::DeviceClassResourceName("h100"),
                                  DeviceClassCounterResource("mig.nvidia.com", "memory"),
                                  DriverCounterResource("gpu.nvidia.com", "memory"),
                                  DeviceClassCapacityResource("nic", "bandwidth")}) {
    EXPECT_TRUE(ParseDeviceResource(name).has_value()) << name;
  }
  std::optional<DeviceResource> driver =
      ParseDeviceResource("gpu.nvidia.com.driver.draplane.dev/counter.memory");
  ASSERT_TRUE(driver.has_value());
  EXPECT_EQ(driver->kind, DeviceResource::Kind::kDriverCounter);
  EXPECT_EQ(driver->subject, "gpu.nvidia.com");
  EXPECT_EQ(driver->name, "memory");
  for (std::string_view other :
       {"count/resourceclaims.resource.k8s.io", "requests.nvidia.com/gpu", "pods",
        ".deviceclass.resource.k8s.io/devices", "h100.deviceclass.draplane.dev/counter.",
        "h100.deviceclass.draplane.dev/other.x", "gpu.driver.draplane.dev/capacity.bw"}) {
    EXPECT_FALSE(ParseDeviceResource(other).has_value()) << other;
  }
  EXPECT_EQ(CapacityId("gpu.example.com/memory"), "memory");
  EXPECT_EQ(CapacityId("memory"), "memory");
}

TEST(ChargesTest, DeviceFactsPreferTheDriversOwnCapacityName) {
  rv1::ResourceSlice slice = internal::DecodeYaml<rv1::ResourceSlice>(kSlice);
  DeviceFacts facts = MakeDeviceFacts("gpu.example.com", slice.spec.devices[2]);
  EXPECT_EQ(internal::RenderResources(facts.capacity), "clock=2\nmemory=80Gi\n");
  EXPECT_FALSE(facts.consumes_counters);
  DeviceFacts mig = MakeDeviceFacts("gpu.example.com", slice.spec.devices[1]);
  EXPECT_TRUE(mig.consumes_counters);
  EXPECT_EQ(internal::RenderResources(mig.counters), "memory=9856Mi\n");
}

TEST(ChargesTest, WholeGpuAndMigSliceChargeTheSameCounterKey) {
  rv1::ResourceSlice slice = internal::DecodeYaml<rv1::ResourceSlice>(kSlice);
  DeviceCharge whole = ChargeDevice(
      "h100", MakeDeviceFacts("gpu.example.com", slice.spec.devices[2]), false, nullptr);
  EXPECT_EQ(internal::RenderResources(whole.additive),
            "gpu.example.com.driver.draplane.dev/counter.clock=2\n"
            "gpu.example.com.driver.draplane.dev/counter.memory=80Gi\n"
            "h100.deviceclass.draplane.dev/capacity.clock=2\n"
            "h100.deviceclass.draplane.dev/capacity.memory=80Gi\n"
            "h100.deviceclass.draplane.dev/counter.clock=2\n"
            "h100.deviceclass.draplane.dev/counter.memory=80Gi\n"
            "h100.deviceclass.resource.k8s.io/devices=1\n");
  DeviceCharge mig = ChargeDevice("mig", MakeDeviceFacts("gpu.example.com", slice.spec.devices[1]),
                                  false, nullptr);
  EXPECT_EQ(internal::RenderResources(mig.additive),
            "gpu.example.com.driver.draplane.dev/counter.memory=9856Mi\n"
            "mig.deviceclass.draplane.dev/capacity.memory=9856Mi\n"
            "mig.deviceclass.draplane.dev/counter.memory=9856Mi\n"
            "mig.deviceclass.resource.k8s.io/devices=1\n");
  EXPECT_TRUE(mig.share_counters.empty());
}

TEST(ChargesTest, SharesChargeTheirConsumptionAndAdminAccessNothing) {
  rv1::ResourceSlice slice = internal::DecodeYaml<rv1::ResourceSlice>(kSlice);
  ResourceList consumed{{"bandwidth", Q("10G")}};
  DeviceCharge share = ChargeDevice(
      "nic", MakeDeviceFacts("gpu.example.com", slice.spec.devices[3]), false, &consumed);
  EXPECT_EQ(internal::RenderResources(share.additive),
            "gpu.example.com.driver.draplane.dev/counter.bandwidth=10G\n"
            "nic.deviceclass.draplane.dev/capacity.bandwidth=10G\n"
            "nic.deviceclass.draplane.dev/counter.bandwidth=10G\n"
            "nic.deviceclass.resource.k8s.io/devices=1\n");
  DeviceCharge exclusive = ChargeDevice(
      "nic", MakeDeviceFacts("gpu.example.com", slice.spec.devices[3]), false, nullptr);
  EXPECT_EQ(exclusive.additive.at("nic.deviceclass.draplane.dev/capacity.bandwidth").ToString(),
            "100G");
  ResourceList mig_consumed{{"memory", Q("5Gi")}};
  DeviceCharge shared_mig = ChargeDevice(
      "mig", MakeDeviceFacts("gpu.example.com", slice.spec.devices[4]), false, &mig_consumed);
  EXPECT_EQ(internal::RenderResources(shared_mig.share_counters),
            "gpu.example.com.driver.draplane.dev/counter.memory=10Gi\n"
            "mig.deviceclass.draplane.dev/counter.memory=10Gi\n");
  EXPECT_EQ(shared_mig.additive.count("mig.deviceclass.draplane.dev/counter.memory"), 0u);
  EXPECT_TRUE(
      ChargeDevice("nic", MakeDeviceFacts("gpu.example.com", slice.spec.devices[3]), true, nullptr)
          .additive.empty());
}

TEST(ChargesTest, AllocationChargesTheChosenSubrequestsClassOnly) {
  DeviceCatalog catalog;
  catalog.SetSlice(internal::DecodeYaml<rv1::ResourceSlice>(kSlice));
  auto claim = internal::DecodeYaml<rv1::ResourceClaim>(R"(
metadata: {name: c, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - {name: big, deviceClassName: h100, count: 1}
      - {name: small, deviceClassName: mig, count: 2}
    - name: watch
      exactly: {deviceClassName: h100, adminAccess: true, allocationMode: All}
)");
  auto allocation = internal::DecodeYaml<rv1::AllocationResult>(R"(
devices:
  results:
  - {request: gpu/small, driver: gpu.example.com, pool: node-1, device: gpu-0-mig-1g}
  - {request: gpu/small, driver: gpu.example.com, pool: node-1, device: gone}
  - {request: watch, driver: gpu.example.com, pool: node-1, device: h100-7, adminAccess: true}
)");
  EXPECT_EQ(RequestClass(claim, "gpu/small"), "mig");
  EXPECT_EQ(RequestClass(claim, "watch"), "h100");
  EXPECT_EQ(RequestClass(claim, "gpu/other"), "");
  ClaimCharge charge = ChargeAllocation(claim, allocation, catalog);
  EXPECT_EQ(internal::RenderResources(charge.additive),
            "gpu.example.com.driver.draplane.dev/counter.memory=9856Mi\n"
            "mig.deviceclass.draplane.dev/capacity.memory=9856Mi\n"
            "mig.deviceclass.draplane.dev/counter.memory=9856Mi\n"
            "mig.deviceclass.resource.k8s.io/devices=2\n");
  EXPECT_EQ(charge.unknown_devices, std::vector<std::string>({"gpu.example.com/node-1/gone"}));
}

TEST(ChargesTest, CatalogPrefersTheNewestPoolGeneration) {
  DeviceCatalog catalog;
  rv1::ResourceSlice old_slice = internal::DecodeYaml<rv1::ResourceSlice>(kSlice);
  rv1::ResourceSlice new_slice = old_slice;
  new_slice.metadata.name = "gpu-node-1-v2";
  new_slice.spec.pool.generation = 2;
  new_slice.spec.devices[2].capacity.at("memory").value = Q("94Gi");
  catalog.SetSlice(new_slice);
  catalog.SetSlice(old_slice);
  const DeviceFacts* facts = catalog.Find("gpu.example.com", "node-1", "h100-7");
  ASSERT_NE(facts, nullptr);
  EXPECT_EQ(facts->capacity.at("memory").ToString(), "94Gi");
  catalog.RemoveSlice("gpu-node-1-v2");
  EXPECT_EQ(catalog.Find("gpu.example.com", "node-1", "h100-7")->capacity.at("memory").ToString(),
            "80Gi");
  catalog.RemoveSlice("gpu-node-1");
  EXPECT_EQ(catalog.Find("gpu.example.com", "node-1", "h100-7"), nullptr);
  EXPECT_EQ(catalog.slice_count(), 0u);
}

}  // namespace
}  // namespace draplane::allocator
