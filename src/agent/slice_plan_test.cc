#include "agent/slice_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/drivers/profile/profile_driver.h"
#include "agent/health.h"
#include "api/validation/validation.h"

namespace draplane::agent {
namespace {

namespace rv1 = api::resourcev1;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

DiscoveredDevice Plain(int i) {
  DiscoveredDevice d;
  d.device.name = "dev-" + std::to_string(i);
  d.device.attributes["index"].int_value = i;
  return d;
}

Inventory Plains(std::string driver, int n) {
  Inventory inv;
  inv.driver = std::move(driver);
  for (int i = 0; i < n; ++i) inv.devices.push_back(Plain(i));
  return inv;
}

std::vector<size_t> DeviceCounts(const std::vector<rv1::ResourceSlice>& slices) {
  std::vector<size_t> out;
  for (const rv1::ResourceSlice& s : slices) out.push_back(s.spec.devices.size());
  return out;
}

void ExpectValid(const std::vector<rv1::ResourceSlice>& slices) {
  for (const rv1::ResourceSlice& s : slices) {
    api::FieldErrorList errors = api::validation::ValidateResourceSlice(s);
    EXPECT_EQ(errors.size(), 0u) << s.metadata.name << ": " << errors.front().ToString();
  }
}

TEST(SlicePlanTest, CutsPlainDevicesAt128) {
  std::vector<rv1::ResourceSlice> slices = BuildPoolSlices("n1", Plains("x.example.com", 130), 1);
  EXPECT_THAT(DeviceCounts(slices), ElementsAre(128u, 2u));
  EXPECT_EQ(slices[0].metadata.name, "n1-x.example.com-0");
  EXPECT_EQ(slices[1].metadata.name, "n1-x.example.com-1");
  for (const rv1::ResourceSlice& s : slices) {
    EXPECT_EQ(s.spec.pool.name, "n1");
    EXPECT_EQ(s.spec.pool.generation, 1);
    EXPECT_EQ(s.spec.pool.resource_slice_count, 2);
    EXPECT_EQ(s.spec.node_name.value_or(""), "n1");
  }
  ExpectValid(slices);
}

TEST(SlicePlanTest, CutsAt64WhenASliceHasTaints) {
  Inventory inv = Plains("x.example.com", 200);
  inv.devices[100].health = {.healthy = false,
                             .message = "bad",
                             .taint_effect = "NoExecute",
                             .since = Timestamp(std::chrono::seconds(1'700'000'000))};
  std::vector<rv1::ResourceSlice> slices = BuildPoolSlices("n1", inv, 3);
  // dev-0..99 would fit 128, but dev-100 is tainted: the first slice closes at 100 devices
  // because adding a tainted device would make it exceed 64.
  EXPECT_THAT(DeviceCounts(slices), ElementsAre(100u, 64u, 36u));
  const rv1::Device& tainted = slices[1].spec.devices[0];
  ASSERT_EQ(tainted.taints.size(), 1u);
  EXPECT_EQ(tainted.taints[0].key, "x.example.com/unhealthy");
  EXPECT_EQ(tainted.taints[0].effect, "NoExecute");
  EXPECT_EQ(tainted.taints[0].time_added->text(), "2023-11-14T22:13:20Z");
  ExpectValid(slices);
}

TEST(SlicePlanTest, CounterSetsGetSlicesOfTheirOwn) {
  Inventory inv;
  inv.driver = "gpu.nvidia.com";
  for (int i = 0; i < 10; ++i) {
    rv1::CounterSet set;
    set.name = "set-" + std::to_string(i);
    set.counters["memory"].value = api::Quantity::FromInt64(8);
    inv.counter_sets.push_back(set);
    DiscoveredDevice d;
    d.device.name = "dev-" + std::to_string(i);
    rv1::DeviceCounterConsumption use;
    use.counter_set = set.name;
    use.counters["memory"].value = api::Quantity::FromInt64(8);
    d.device.consumes_counters.push_back(use);
    inv.devices.push_back(d);
  }
  std::vector<rv1::ResourceSlice> slices = BuildPoolSlices("n1", inv, 1);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0].spec.shared_counters.size(), 8u);
  EXPECT_EQ(slices[1].spec.shared_counters.size(), 2u);
  EXPECT_TRUE(slices[0].spec.devices.empty());
  EXPECT_EQ(slices[2].spec.devices.size(), 10u);
  EXPECT_TRUE(slices[2].spec.shared_counters.empty());
  ExpectValid(slices);
}

TEST(SlicePlanTest, ProfileInventoriesMakeValidSlices) {
  StatusOr<ClusterProfile> profile = ParseProfile(R"(
apiVersion: draplane.dev/v1alpha1
kind: NodeProfile
metadata: {name: big}
devices:
  gpus:
  - count: 8
    productName: NVIDIA A100-SXM4-40GB
    architecture: Ampere
    cudaComputeCapability: "8.0"
    driverVersion: 550.90.07
    memory: 40Gi
    multiprocessors: 98
    mig:
      profiles:
      - {name: 1g.5gb, memory: 5Gi, memorySlices: 1, multiprocessors: 14, placements: [0,1,2,3,4,5,6]}
      - {name: 2g.10gb, memory: 10Gi, memorySlices: 2, multiprocessors: 28, placements: [0,2,4]}
      - {name: 3g.20gb, memory: 20Gi, memorySlices: 4, multiprocessors: 42}
      - {name: 7g.40gb, memory: 40Gi, memorySlices: 8, multiprocessors: 98}
  nics: [{count: 4, model: CX7, bandwidth: 400G, shared: true,
          requestPolicy: {default: 10G, min: 1G, max: 400G, step: 1G}}]
)");
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  std::vector<Inventory> invs = BuildProfileInventories("big", profile->pools[0].node);
  size_t slices_total = 0;
  for (const Inventory& inv : invs) {
    std::vector<rv1::ResourceSlice> slices = BuildPoolSlices("big", inv, 1);
    ExpectValid(slices);
    slices_total += slices.size();
  }
  // GPUs: 8 sets (one slice) + 8 * (1 + 7 + 3 + 2 + 1) = 112 consuming devices (64 + 48).
  EXPECT_EQ(slices_total, 4u);
}

class PlanTest : public ::testing::Test {
 protected:
  // Applies a plan to `stored` as the API server would.
  void Apply(const SlicePlan& plan) {
    for (const std::string& name : plan.deletes) {
      std::erase_if(stored_, [&](const rv1::ResourceSlice& s) { return s.metadata.name == name; });
    }
    for (const rv1::ResourceSlice& u : plan.updates) {
      for (rv1::ResourceSlice& s : stored_) {
        if (s.metadata.name == u.metadata.name) s = u;
      }
    }
    for (const rv1::ResourceSlice& c : plan.creates) stored_.push_back(c);
  }
  std::vector<rv1::ResourceSlice> stored_;
  const std::vector<std::string> managed_ = {"a.example.com", "b.example.com"};
};

TEST_F(PlanTest, CreatesThenKeepsThenBumpsOnChange) {
  std::vector<Inventory> invs = {Plains("a.example.com", 3)};
  SlicePlan first = PlanSliceSync("n1", invs, managed_, stored_);
  ASSERT_EQ(first.creates.size(), 1u);
  EXPECT_EQ(first.creates[0].spec.pool.generation, 1);
  Apply(first);
  EXPECT_TRUE(PlanSliceSync("n1", invs, managed_, stored_).empty());

  invs[0].devices[1].health = {.healthy = false,
                               .message = "",
                               .taint_effect = "",
                               .since = Timestamp(std::chrono::seconds(1))};
  SlicePlan taint = PlanSliceSync("n1", invs, managed_, stored_);
  ASSERT_EQ(taint.updates.size(), 1u);
  EXPECT_EQ(taint.updates[0].spec.pool.generation, 2);
  EXPECT_EQ(taint.updates[0].spec.devices[1].taints[0].effect, "NoSchedule");
  Apply(taint);
  EXPECT_TRUE(PlanSliceSync("n1", invs, managed_, stored_).empty());

  invs[0].devices[1].health = {};
  SlicePlan recovered = PlanSliceSync("n1", invs, managed_, stored_);
  ASSERT_EQ(recovered.updates.size(), 1u);
  EXPECT_EQ(recovered.updates[0].spec.pool.generation, 3);
  EXPECT_TRUE(recovered.updates[0].spec.devices[1].taints.empty());
}

// The Node owns the slices, so deleting it deletes them (they outlived it and kept its devices
// counted as available); slices published before, or for a Node registered again under a new
// uid, are rewritten with the current owner.
TEST_F(PlanTest, TheNodeOwnsTheSlices) {
  std::vector<Inventory> invs = {Plains("a.example.com", 3)};
  Apply(PlanSliceSync("n1", invs, managed_, stored_));  // no owner known yet
  ASSERT_EQ(stored_.size(), 1u);
  EXPECT_TRUE(stored_[0].metadata.owner_references.empty());
  api::metav1::OwnerReference node;
  node.api_version = "v1";
  node.kind = "Node";
  node.name = "n1";
  node.uid = "uid-1";
  node.controller = true;
  SlicePlan owned = PlanSliceSync("n1", invs, managed_, stored_, node);
  ASSERT_EQ(owned.updates.size(), 1u);
  EXPECT_EQ(owned.updates[0].metadata.owner_references,
            std::vector<api::metav1::OwnerReference>{node});
  Apply(owned);
  EXPECT_TRUE(PlanSliceSync("n1", invs, managed_, stored_, node).empty());
  EXPECT_TRUE(PlanSliceSync("n1", invs, managed_, stored_).empty()) << "no owner: kept as is";
  node.uid = "uid-2";
  SlicePlan again = PlanSliceSync("n1", invs, managed_, stored_, node);
  ASSERT_EQ(again.updates.size(), 1u);
  EXPECT_EQ(again.updates[0].metadata.owner_references[0].uid, "uid-2");
  stored_.clear();
  SlicePlan created = PlanSliceSync("n1", invs, managed_, stored_, node);
  ASSERT_EQ(created.creates.size(), 1u);
  EXPECT_EQ(created.creates[0].metadata.owner_references[0].uid, "uid-2");
}

// Two agent instances (a rolling update) see one fault from different first sightings: the taint
// keeps the time it was published with, so neither rewrites the pool for the time alone.
TEST_F(PlanTest, APublishedTaintKeepsItsTime) {
  std::vector<Inventory> invs = {Plains("a.example.com", 3)};
  invs[0].devices[1].health = {.healthy = false,
                               .message = "",
                               .taint_effect = "",
                               .since = Timestamp(std::chrono::seconds(100))};
  Apply(PlanSliceSync("n1", invs, managed_, stored_));
  invs[0].devices[1].health.since = Timestamp(std::chrono::seconds(136));
  EXPECT_TRUE(PlanSliceSync("n1", invs, managed_, stored_).empty());
  // Another change rewrites the pool, and the taint still says when it was first published.
  invs[0].devices[2].health = invs[0].devices[1].health;
  SlicePlan plan = PlanSliceSync("n1", invs, managed_, stored_);
  ASSERT_EQ(plan.updates.size(), 1u);
  EXPECT_EQ(plan.updates[0].spec.devices[1].taints[0].time_added->text(), "1970-01-01T00:01:40Z");
  EXPECT_EQ(plan.updates[0].spec.devices[2].taints[0].time_added->text(), "1970-01-01T00:02:16Z");
}

TEST_F(PlanTest, ShrinkingPoolDeletesStaleSlicesAndRewritesTheRest) {
  std::vector<Inventory> invs = {Plains("a.example.com", 300)};
  Apply(PlanSliceSync("n1", invs, managed_, stored_));
  ASSERT_EQ(stored_.size(), 3u);
  invs = {Plains("a.example.com", 100)};
  SlicePlan plan = PlanSliceSync("n1", invs, managed_, stored_);
  EXPECT_THAT(plan.deletes, ElementsAre("n1-a.example.com-1", "n1-a.example.com-2"));
  ASSERT_EQ(plan.updates.size(), 1u);
  EXPECT_EQ(plan.updates[0].spec.pool.resource_slice_count, 1);
  EXPECT_EQ(plan.updates[0].spec.pool.generation, 2);
  EXPECT_TRUE(plan.creates.empty());
}

TEST_F(PlanTest, LeavesOtherDriversAndNodesAloneAndDropsEmptyPools) {
  rv1::ResourceSlice foreign = BuildPoolSlices("n1", Plains("other.example.com", 1), 7)[0];
  rv1::ResourceSlice other_node = BuildPoolSlices("n2", Plains("a.example.com", 1), 7)[0];
  stored_ = {foreign, other_node};
  std::vector<Inventory> invs = {Plains("a.example.com", 1), Plains("b.example.com", 1)};
  Apply(PlanSliceSync("n1", invs, managed_, stored_));
  EXPECT_EQ(stored_.size(), 4u);
  // b loses its devices: its pool is deleted; other.example.com and n2 stay.
  invs = {Plains("a.example.com", 1)};
  SlicePlan plan = PlanSliceSync("n1", invs, managed_, stored_);
  EXPECT_THAT(plan.deletes, ElementsAre("n1-b.example.com-0"));
  EXPECT_TRUE(plan.updates.empty());
  EXPECT_TRUE(plan.creates.empty());
}

TEST_F(PlanTest, ReplacesASliceWithAStaleGeneration) {
  std::vector<Inventory> invs = {Plains("a.example.com", 2)};
  Apply(PlanSliceSync("n1", invs, managed_, stored_));
  stored_[0].spec.pool.generation = 5;  // someone else's write with another generation
  rv1::ResourceSlice extra = stored_[0];
  extra.metadata.name = "n1-a.example.com-9";
  extra.spec.pool.generation = 4;
  stored_.push_back(extra);
  SlicePlan plan = PlanSliceSync("n1", invs, managed_, stored_);
  EXPECT_THAT(plan.deletes, ElementsAre("n1-a.example.com-9"));
  ASSERT_EQ(plan.updates.size(), 1u);
  EXPECT_EQ(plan.updates[0].spec.pool.generation, 6);
}

TEST(SliceDriftTest, CountsMissingExtraAndChangedDevicesPerManagedDriver) {
  // Published: dev-0..dev-3 of gpu.example.com. Discovered: dev-0, dev-1 (its index changed),
  // dev-2 and dev-4: dev-3 is extra, dev-4 missing, dev-1 changed. A published slice of an
  // unmanaged driver and one of another node do not count.
  std::vector<rv1::ResourceSlice> stored = BuildPoolSlices("n1", Plains("gpu.example.com", 4), 1);
  std::vector<rv1::ResourceSlice> other = BuildPoolSlices("n1", Plains("nic.example.com", 2), 1);
  std::vector<rv1::ResourceSlice> elsewhere =
      BuildPoolSlices("n2", Plains("gpu.example.com", 9), 1);
  stored.insert(stored.end(), other.begin(), other.end());
  stored.insert(stored.end(), elsewhere.begin(), elsewhere.end());
  Inventory found = Plains("gpu.example.com", 3);
  found.devices[1].device.attributes["index"].int_value = 7;
  found.devices.push_back(Plain(4));
  std::map<std::string, SliceDrift> drift =
      CompareSlices("n1", {found}, {"gpu.example.com", "fpga.example.com"}, stored);
  ASSERT_EQ(drift.size(), 2u);
  EXPECT_EQ(drift["gpu.example.com"].missing, 1);
  EXPECT_EQ(drift["gpu.example.com"].extra, 1);
  EXPECT_EQ(drift["gpu.example.com"].attribute, 1);
  EXPECT_EQ(drift["fpga.example.com"].missing + drift["fpga.example.com"].extra, 0);
  // In step: no drift.
  drift = CompareSlices("n1", {Plains("gpu.example.com", 4)}, {"gpu.example.com"}, stored);
  EXPECT_EQ(drift["gpu.example.com"].missing + drift["gpu.example.com"].extra +
                drift["gpu.example.com"].attribute,
            0);
}

TEST(SliceNameTest, LongNamesAreShortenedDeterministically) {
  std::string node(250, 'n');
  std::string name = SliceName(node, "gpu.nvidia.com", 3);
  EXPECT_LE(name.size(), 253u);
  EXPECT_EQ(name, SliceName(node, "gpu.nvidia.com", 3));
  EXPECT_TRUE(name.ends_with("-3"));
}

}  // namespace
}  // namespace draplane::agent
