// Starvation holds (starvation_holds.h) over a device ledger: the target node, growth as devices
// free up, what something else takes, completion and MaxHold, overtakes, the annotation.
#include "scheduler/starvation_holds.h"

#include <gtest/gtest.h>

#include "scheduler/fair_share_testing.h"

namespace draplane::scheduler {
namespace {

using std::chrono::minutes;

allocator::HeldDeviceId Gpu(const std::string& node, int i) {
  return {.driver = "gpu.example.com", .pool = node, .device = "gpu-" + std::to_string(i)};
}

StarvationHold HoldFor(const std::string& node, std::vector<HoldNeed> needs) {
  return {.pod = "team-b/train",
          .uid = "uid-train",
          .priority = 0,
          .node = node,
          .since = Timestamp(std::chrono::seconds(1'800'000'000)),
          .enqueued = Duration(0),
          .needs = std::move(needs)};
}

TEST(StarvationHoldsTest, TheTargetIsTheNodeLackingTheFewestDevicesThatCanFitThePod) {
  FairShareWorld world{{"node-a", {"H100", "H100", "H100", "H100"}},
                       {"node-b", {"H100", "H100"}},
                       {"node-c", {"A100", "A100", "A100", "A100"}}};
  for (int i = 0; i < 3; ++i) {
    world.Hold("team-a", "c" + std::to_string(i), "h100", "node-a", "gpu-" + std::to_string(i));
  }
  StarvationHolds holds(world.ledger);
  std::vector<std::string> nodes{"node-a", "node-b", "node-c"};
  // Four H100s fit node-a only (node-b has two).
  EXPECT_EQ(holds.PickTarget(nodes, {{"h100", 4}}), "node-a");
  // Two: node-b has both free.
  EXPECT_EQ(holds.PickTarget(nodes, {{"h100", 2}}), "node-b");
  // Every A100 of a node; two needs of one class add up.
  EXPECT_EQ(holds.PickTarget(nodes, {{"a100", HoldNeed::kAllDevices}}), "node-c");
  EXPECT_EQ(holds.PickTarget(nodes, {{"h100", 2}, {"h100", 2}}), "node-a");
  EXPECT_EQ(holds.PickTarget(nodes, {{"h100", 5}}), std::nullopt);
  EXPECT_EQ(holds.PickTarget(nodes, {}), std::nullopt);
}

TEST(StarvationHoldsTest, AHoldTakesWhatFreesUpOnItsNodeUntilCompleteThenMaxHoldEndsIt) {
  FairShareWorld world{{"node-a", {"H100", "H100", "H100", "H100"}}, {"node-b", {"H100"}}};
  for (int i = 0; i < 3; ++i) {
    world.Hold("team-a", "c" + std::to_string(i), "h100", "node-a", "gpu-" + std::to_string(i));
  }
  StarvationHolds holds(world.ledger);
  holds.Start(HoldFor("node-a", {{"h100", 3}}));
  EXPECT_TRUE(holds.Has("uid-train"));
  // The one free device on its node (not node-b's).
  EXPECT_EQ(holds.Grow(Duration(0)), std::vector<std::string>{"uid-train"});
  EXPECT_EQ(holds.holds().at("uid-train").devices, (std::vector{Gpu("node-a", 3)}));
  EXPECT_TRUE(holds.Grow(Duration(0)).empty());  // nothing changed

  // An allocation by a later Pod of the same band of an H100 on node-a overtakes it (the hold
  // is incomplete); an earlier Pod, a higher band, another node or another class do not.
  std::vector<StarvationHolds::Given> h100{{"h100", Gpu("node-a", 3)}};
  EXPECT_EQ(holds.Overtaken("uid-other", 0, minutes(1), "node-a", h100).size(), 1u);
  EXPECT_TRUE(holds.Overtaken("uid-other", 0, Duration(0), "node-a", h100).empty());
  EXPECT_TRUE(holds.Overtaken("uid-other", 10, minutes(1), "node-a", h100).empty());
  EXPECT_TRUE(holds.Overtaken("uid-other", 0, minutes(1), "node-b", h100).empty());
  EXPECT_TRUE(
      holds.Overtaken("uid-other", 0, minutes(1), "node-a", {{"a100", Gpu("node-a", 3)}}).empty());

  // Devices free up one by one; a held one something else took (a higher band) drops out.
  world.ledger.Uncommit("team-a/c0");
  world.ledger.Uncommit("team-a/c1");
  holds.Grow(minutes(1));
  EXPECT_EQ(holds.holds().at("uid-train").devices,
            (std::vector{Gpu("node-a", 0), Gpu("node-a", 1), Gpu("node-a", 3)}));
  ASSERT_TRUE(holds.holds().at("uid-train").complete_since.has_value());
  EXPECT_EQ(*holds.holds().at("uid-train").complete_since, minutes(1));
  world.Hold("team-c", "urgent", "h100", "node-a", "gpu-1");
  holds.Grow(minutes(2));
  EXPECT_EQ(holds.holds().at("uid-train").devices,
            (std::vector{Gpu("node-a", 0), Gpu("node-a", 3)}));
  EXPECT_FALSE(holds.holds().at("uid-train").complete_since.has_value());
  world.ledger.Uncommit("team-a/c2");
  holds.Grow(minutes(3));
  EXPECT_EQ(holds.holds().at("uid-train").devices.size(), 3u);

  std::vector<allocator::DeviceHold> in_force = holds.InForce(minutes(4));
  ASSERT_EQ(in_force.size(), 1u);
  EXPECT_EQ(in_force[0].pod, "team-b/train");
  EXPECT_EQ(in_force[0].starving, minutes(4));
  EXPECT_EQ(in_force[0].since, "2027-01-15T08:00:00Z");
  EXPECT_EQ(holds.NextExpiry(minutes(15)), minutes(18));

  // Complete since minute 3: MaxHold 15m ends it at minute 18, then it cools down as long.
  EXPECT_TRUE(holds.Expire(minutes(17), minutes(15)).empty());
  std::vector<StarvationHold> expired = holds.Expire(minutes(18), minutes(15));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_FALSE(holds.Has("uid-train"));
  EXPECT_TRUE(holds.CoolingDown("uid-train", minutes(32)));
  EXPECT_FALSE(holds.CoolingDown("uid-train", minutes(33)));
  EXPECT_TRUE(holds.InForce(minutes(20)).empty());
}

TEST(StarvationHoldsTest, HeldDeviceSecondsAndRelease) {
  FairShareWorld world{{"node-a", {"H100", "H100"}}};
  StarvationHolds holds(world.ledger);
  EXPECT_TRUE(holds.TakeHeldDeviceSeconds(Duration(0)).empty());
  holds.Start(HoldFor("node-a", {{"h100", 2}}));
  holds.Grow(Duration(0));
  EXPECT_DOUBLE_EQ(holds.TakeHeldDeviceSeconds(minutes(1)).at("h100"), 120);
  EXPECT_TRUE(holds.Release("uid-train").has_value());
  EXPECT_FALSE(holds.Release("uid-train").has_value());
  EXPECT_FALSE(holds.CoolingDown("uid-train", minutes(1)));
  EXPECT_TRUE(holds.TakeHeldDeviceSeconds(minutes(2)).empty());
}

TEST(StarvationHoldsTest, TheAnnotationReadsBackAsTheHold) {
  StarvationHold hold = HoldFor("node-a", {{"h100", 2}, {"a100", HoldNeed::kAllDevices}});
  hold.devices = {Gpu("node-a", 0), {.driver = "d", .pool = "pool/with/slashes", .device = "x"}};
  std::string text = StarvationHolds::AnnotationOf(hold);
  EXPECT_EQ(
      text,
      R"({"node":"node-a","since":"2027-01-15T08:00:00Z","needs":[{"deviceClass":"h100","count":2},)"
      R"({"deviceClass":"a100","count":-1}],"devices":[{"driver":"gpu.example.com","pool":"node-a",)"
      R"("device":"gpu-0"},{"driver":"d","pool":"pool/with/slashes","device":"x"}]})");
  StatusOr<StarvationHold> back = StarvationHolds::ParseAnnotation(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->node, "node-a");
  EXPECT_EQ(back->since, hold.since);
  EXPECT_EQ(back->needs, hold.needs);
  std::vector<allocator::HeldDeviceId> sorted = hold.devices;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(back->devices, sorted);
  EXPECT_FALSE(StarvationHolds::ParseAnnotation("[]").ok());
  StatusOr<StarvationHold> bad =
      StarvationHolds::ParseAnnotation(R"({"node":"n","since":"yesterday"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("draplane.dev/held-devices: since:"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace draplane::scheduler
