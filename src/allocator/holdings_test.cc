#include "allocator/holdings.h"

#include <gtest/gtest.h>

#include <string>

#include "allocator/internal/testing_yaml.h"
#include "allocator/quota.h"

namespace draplane::allocator {
namespace {

namespace rv1 = api::resourcev1;

constexpr std::string_view kSlice = R"(
metadata: {name: node-1}
spec:
  driver: gpu.example.com
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  sharedCounters:
  - name: gpu-0
    counters: {memory: {value: 80Gi}}
  devices:
  - {name: h100-0, capacity: {memory: {value: 80Gi}}}
  - {name: h100-1, capacity: {memory: {value: 80Gi}}}
  - name: shared-mig
    allowMultipleAllocations: true
    capacity: {memory: {value: 10Gi}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 10Gi}}}]
)";

// A claim of namespace `ns` holding `devices` ("device" or "device@share") for class `cls`.
rv1::ResourceClaim AllocatedClaim(const std::string& ns, const std::string& name,
                                  const std::string& cls, std::vector<std::string> devices) {
  rv1::ResourceClaim claim = internal::DecodeYaml<rv1::ResourceClaim>(
      "metadata: {name: " + name + ", namespace: " + ns + ", uid: uid-" + ns + "-" + name +
      "}\nspec:\n  devices:\n    requests:\n    - {name: r, exactly: {deviceClassName: " + cls +
      ", count: " + std::to_string(devices.size()) + "}}\n");
  rv1::AllocationResult allocation;
  for (const std::string& d : devices) {
    rv1::DeviceRequestAllocationResult r;
    r.request = "r";
    r.driver = "gpu.example.com";
    r.pool = "node-1";
    r.device = d.substr(0, d.find('@'));
    if (d.find('@') != std::string::npos) {
      r.share_id = d.substr(d.find('@') + 1);
      r.consumed_capacity.emplace("memory", *api::Quantity::Parse("1Gi"));
    }
    allocation.devices.results.push_back(std::move(r));
  }
  claim.status.allocation = std::move(allocation);
  return claim;
}

class HoldingsTest : public testing::Test {
 protected:
  void SetUp() override { catalog.SetSlice(internal::DecodeYaml<rv1::ResourceSlice>(kSlice)); }

  Holdings::Holding Make(const rv1::ResourceClaim& c, bool in_flight = false) {
    return Holdings::Make(c.metadata.uid, c, *c.status.allocation, catalog, in_flight);
  }

  DeviceCatalog catalog;
};

TEST_F(HoldingsTest, UsageSplitsCommittedAndInFlight) {
  Holdings h;
  h.Put(Make(AllocatedClaim("team-a", "c1", "h100", {"h100-0"})));
  h.Put(Make(AllocatedClaim("team-a", "c2", "h100", {"h100-1"}), /*in_flight=*/true));
  h.Put(Make(AllocatedClaim("team-b", "c3", "h100", {"h100-1"})));
  EXPECT_EQ(h.Usage("team-a", Holdings::Scope::kCommitted)
                .at("h100.deviceclass.resource.k8s.io/devices")
                .ToString(),
            "1");
  EXPECT_EQ(h.Usage("team-a", Holdings::Scope::kInFlight)
                .at("h100.deviceclass.resource.k8s.io/devices")
                .ToString(),
            "1");
  EXPECT_EQ(h.Usage("team-a").at("gpu.example.com.driver.draplane.dev/counter.memory").ToString(),
            "160Gi");
  EXPECT_EQ(h.Namespaces(), std::vector<std::string>({"team-a", "team-b"}));
  std::vector<const Holdings::Holding*> holders = h.HoldersOf("gpu.example.com/node-1/h100-1");
  ASSERT_EQ(holders.size(), 2u);
  EXPECT_EQ(holders[0]->claim, "team-a/c2");
  EXPECT_EQ(holders[1]->claim, "team-b/c3");
  EXPECT_EQ(h.DevicesOf("team-a").size(), 2u);

  // Deallocation gives everything back.
  EXPECT_TRUE(h.Erase("uid-team-a-c1"));
  EXPECT_TRUE(h.Erase("uid-team-a-c2"));
  EXPECT_FALSE(h.Erase("uid-team-a-c2"));
  EXPECT_TRUE(h.Usage("team-a").empty());
  EXPECT_TRUE(h.DevicesOf("team-a").empty());
  EXPECT_EQ(h.Namespaces(), std::vector<std::string>({"team-b"}));
}

TEST_F(HoldingsTest, ShareCountersArePaidOncePerNamespace) {
  Holdings h;
  rv1::ResourceClaim a1 = AllocatedClaim("team-a", "s1", "mig", {"shared-mig@1"});
  rv1::ResourceClaim a2 = AllocatedClaim("team-a", "s2", "mig", {"shared-mig@2"});
  rv1::ResourceClaim b1 = AllocatedClaim("team-b", "s3", "mig", {"shared-mig@3"});
  Holdings::Holding first = Make(a1);
  EXPECT_EQ(internal::RenderResources(h.Increment("team-a", {&first.charge})),
            "gpu.example.com.driver.draplane.dev/counter.memory=10Gi\n"
            "mig.deviceclass.draplane.dev/capacity.memory=1Gi\n"
            "mig.deviceclass.draplane.dev/counter.memory=10Gi\n"
            "mig.deviceclass.resource.k8s.io/devices=1\n");
  h.Put(first);
  Holdings::Holding second = Make(a2, /*in_flight=*/true);
  // The namespace holds the device already: the second share adds no counters.
  EXPECT_EQ(internal::RenderResources(h.Increment("team-a", {&second.charge})),
            "mig.deviceclass.draplane.dev/capacity.memory=1Gi\n"
            "mig.deviceclass.resource.k8s.io/devices=1\n");
  h.Put(second);
  h.Put(Make(b1));
  EXPECT_EQ(internal::RenderResources(h.Usage("team-a")),
            "gpu.example.com.driver.draplane.dev/counter.memory=10Gi\n"
            "mig.deviceclass.draplane.dev/capacity.memory=2Gi\n"
            "mig.deviceclass.draplane.dev/counter.memory=10Gi\n"
            "mig.deviceclass.resource.k8s.io/devices=2\n");
  EXPECT_EQ(h.Usage("team-a", Holdings::Scope::kInFlight)
                .count("mig.deviceclass.draplane.dev/counter.memory"),
            0u);
  EXPECT_EQ(h.Usage("team-b").at("mig.deviceclass.draplane.dev/counter.memory").ToString(), "10Gi");
  // Releasing the committed share moves the counters to the in-flight one.
  h.Erase("uid-team-a-s1");
  EXPECT_EQ(h.Usage("team-a", Holdings::Scope::kInFlight)
                .at("mig.deviceclass.draplane.dev/counter.memory")
                .ToString(),
            "10Gi");
  EXPECT_TRUE(h.HoldsSharedCounters("team-a", "gpu.example.com/node-1/shared-mig"));
  h.Erase("uid-team-a-s2");
  EXPECT_FALSE(h.HoldsSharedCounters("team-a", "gpu.example.com/node-1/shared-mig"));
}

TEST_F(HoldingsTest, MarkingAnInFlightHoldingCommittedEqualsPuttingItCommitted) {
  rv1::ResourceClaim held = AllocatedClaim("team-a", "s1", "mig", {"shared-mig@1"});
  rv1::ResourceClaim written = AllocatedClaim("team-a", "s2", "mig", {"shared-mig@2", "h100-0"});
  Holdings flipped;
  Holdings put;
  flipped.Put(Make(held, /*in_flight=*/true));
  put.Put(Make(held, /*in_flight=*/true));
  flipped.Put(Make(written, /*in_flight=*/true));
  EXPECT_TRUE(flipped.HoldsSharedCounters("team-a", "gpu.example.com/node-1/shared-mig",
                                          Holdings::Scope::kAll));
  EXPECT_FALSE(flipped.HoldsSharedCounters("team-a", "gpu.example.com/node-1/shared-mig",
                                           Holdings::Scope::kCommitted));

  EXPECT_TRUE(flipped.MarkCommitted("uid-team-a-s2"));
  EXPECT_FALSE(flipped.MarkCommitted("uid-team-a-s2")) << "committed already";
  EXPECT_FALSE(flipped.MarkCommitted("uid-team-a-none"));
  put.Put(Make(written));
  EXPECT_EQ(flipped.all(), put.all());
  for (Holdings::Scope scope :
       {Holdings::Scope::kCommitted, Holdings::Scope::kInFlight, Holdings::Scope::kAll}) {
    EXPECT_EQ(internal::RenderResources(flipped.Usage("team-a", scope)),
              internal::RenderResources(put.Usage("team-a", scope)));
  }
  EXPECT_EQ(internal::RenderResources(flipped.Usage("team-a", Holdings::Scope::kCommitted)),
            "gpu.example.com.driver.draplane.dev/counter.memory=90Gi\n"
            "mig.deviceclass.draplane.dev/capacity.memory=81Gi\n"
            "mig.deviceclass.draplane.dev/counter.memory=90Gi\n"
            "mig.deviceclass.resource.k8s.io/devices=2\n");
  EXPECT_TRUE(flipped.HoldsSharedCounters("team-a", "gpu.example.com/node-1/shared-mig",
                                          Holdings::Scope::kCommitted));
  EXPECT_EQ(flipped.DevicesOf("team-a"), put.DevicesOf("team-a"));
  ASSERT_EQ(flipped.HoldersOf("gpu.example.com/node-1/shared-mig").size(), 2u);
  EXPECT_FALSE(flipped.Find("uid-team-a-s2")->in_flight);

  // Both give everything back alike.
  EXPECT_TRUE(flipped.Erase("uid-team-a-s2"));
  EXPECT_TRUE(put.Erase("uid-team-a-s2"));
  EXPECT_EQ(internal::RenderResources(flipped.Usage("team-a")),
            internal::RenderResources(put.Usage("team-a")));
  EXPECT_EQ(flipped.DevicesOf("team-a"), put.DevicesOf("team-a"));
}

TEST_F(HoldingsTest, RecomputeAgreesWithTheLiveIndexAndCompareNamesDifferences) {
  rv1::ResourceClaim c1 = AllocatedClaim("team-a", "c1", "h100", {"h100-0"});
  rv1::ResourceClaim c2 = AllocatedClaim("team-a", "c2", "h100", {"h100-1"});
  rv1::ResourceClaim free_claim = AllocatedClaim("team-a", "c3", "h100", {});
  free_claim.status.allocation.reset();
  Holdings live;
  live.Put(Make(c1));
  live.Put(Make(c2));
  live.Put(Make(AllocatedClaim("team-a", "pending", "h100", {"h100-1"}), /*in_flight=*/true));
  Holdings recomputed = RecomputeHoldings({&c1, &c2, &free_claim}, catalog);
  EXPECT_TRUE(CompareHoldings(live, recomputed).empty());

  live.Erase("uid-team-a-c2");
  live.Put(Make(AllocatedClaim("team-b", "ghost", "h100", {"h100-0"})));
  std::vector<std::string> diff;
  for (const HoldingsDifference& d : CompareHoldings(live, recomputed)) diff.push_back(d.text);
  ASSERT_FALSE(diff.empty());
  EXPECT_EQ(diff[0], "team-b/ghost: held in the ledger, not allocated in the store");
  EXPECT_EQ(diff[1], "team-a/c2: allocated in the store, not held in the ledger");
  EXPECT_NE(std::find(diff.begin(), diff.end(),
                      "namespace team-a: h100.deviceclass.resource.k8s.io/devices: 1 in the "
                      "ledger, 2 recomputed"),
            diff.end());
}

}  // namespace
}  // namespace draplane::allocator
