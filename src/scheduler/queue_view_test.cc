// The queue's order from API objects (queue_view.h): the policy's shares over the claims'
// allocations, its status's history, bands, starving Pods, and upstream's order without a policy.
#include "scheduler/queue_view.h"

#include <gtest/gtest.h>

#include "scheduler/fair_share_testing.h"
#include "scheduler/starvation_holds.h"

namespace draplane::scheduler {
namespace {

namespace rv1 = api::resourcev1;
namespace d = api::draplanev1alpha1;
using std::chrono::hours;
using std::chrono::minutes;

struct QueueWorld {
  QueueWorld() {
    for (const char* model : {"H100", "A100"}) {
      rv1::DeviceClass& c = inputs.classes.emplace_back();
      c.metadata.name = model == std::string("H100") ? "h100" : "a100";
      c.spec.selectors.emplace_back().cel.emplace().expression =
          std::string(R"(device.attributes["gpu.example.com"].model == ")") + model + "\"";
    }
    FairShareWorld world{{"node-a", {"H100", "H100", "H100", "H100"}}};
    inputs.slices.push_back(*world.slices.at("node-a"));
    inputs.now = Timestamp(std::chrono::seconds(1'800'000'000));
    // team-a holds three of the four H100s.
    for (int i = 0; i < 3; ++i) {
      inputs.claims.push_back(*FairShareWorld::Claim("team-a", "held-" + std::to_string(i), "h100",
                                                     "node-a", "gpu-" + std::to_string(i)));
    }
  }

  // A pending Pod with one unallocated claim of `device_class`, waiting since `ago`.
  void Pending(const std::string& ns, const std::string& name, Duration ago, int64_t priority = 0,
               const std::string& device_class = "h100") {
    rv1::ResourceClaim& claim = inputs.claims.emplace_back();
    claim.metadata.namespace_ = ns;
    claim.metadata.name = name;
    claim.metadata.uid = "claim-" + ns + "-" + name;
    rv1::DeviceRequest& request = claim.spec.devices.requests.emplace_back();
    request.name = "gpu";
    request.exactly.emplace().device_class_name = device_class;
    api::corev1::Pod& pod = inputs.pods.emplace_back();
    pod.metadata.namespace_ = ns;
    pod.metadata.name = name;
    pod.metadata.uid = "pod-" + ns + "-" + name;
    pod.metadata.creation_timestamp = api::Time::FromTimestamp(inputs.now - ago);
    pod.spec.priority = priority;
    api::corev1::PodResourceClaim& entry = pod.spec.resource_claims.emplace_back();
    entry.name = "gpu";
    entry.resource_claim_name = name;
  }

  void Policy() {
    d::DeviceSharingPolicy& policy = inputs.policy.emplace();
    policy.metadata.name = "default";
    d::SharingDomain& domain = policy.spec.domains.emplace_back();
    domain.name = "accelerators";
    domain.device_classes = {"h100", "a100"};
    for (const auto& [ns, weight] : {std::pair{"team-a", 3}, {"team-b", 1}}) {
      d::SharingTenant& tenant = policy.spec.tenants.emplace_back();
      tenant.namespaces = {ns};
      tenant.weight = weight;
    }
  }

  std::vector<std::string> Order() const {
    std::vector<std::string> out;
    for (const QueuedPodView& p : ComputeQueueView(inputs).pods) {
      out.push_back(p.namespace_ + "/" + p.name);
    }
    return out;
  }

  QueueViewInputs inputs;
};

TEST(QueueViewTest, TheLowerShareGoesFirstAndTheStatusHistoryCounts) {
  QueueWorld world;
  world.Pending("team-a", "a-0", minutes(2));
  world.Pending("team-b", "b-0", minutes(1));
  // Upstream's order without a policy: arrival.
  EXPECT_EQ(world.Order(), (std::vector<std::string>{"team-a/a-0", "team-b/b-0"}));

  world.Policy();
  QueueView view = ComputeQueueView(world.inputs);
  EXPECT_EQ(view.policy, "default");
  ASSERT_EQ(view.pods.size(), 2u);
  // team-a holds 3 of 4 at weight 3 of 4: effective 0.5·(3/4)/(3/4) = 0.5; team-b holds nothing.
  EXPECT_EQ(view.pods[0].name, "b-0");
  EXPECT_EQ(view.pods[0].position, 1);
  EXPECT_DOUBLE_EQ(view.pods[0].share, 0);
  EXPECT_DOUBLE_EQ(view.pods[0].fair, 0.25);
  EXPECT_EQ(view.pods[0].domains, std::vector<std::string>{"accelerators"});
  EXPECT_EQ(view.pods[1].name, "a-0");
  EXPECT_DOUBLE_EQ(view.pods[1].weight, 3);
  EXPECT_NEAR(view.pods[1].credit, 2.0 / 30, 1e-12);
  EXPECT_FALSE(view.pods[1].starving_since.has_value());
  ASSERT_EQ(view.shares.size(), 1u);
  EXPECT_DOUBLE_EQ(view.shares[0].capacity_units, 4);
  ASSERT_EQ(view.shares[0].tenants.size(), 2u);
  EXPECT_EQ(view.shares[0].tenants[0].namespace_, "team-a");
  EXPECT_DOUBLE_EQ(view.shares[0].tenants[0].current, 0.75);
  EXPECT_EQ(view.shares[0].tenants[1].pending, 1);

  // team-b's history (as the scheduler reported it) puts it behind: 0.5·0.9 / 0.25 = 1.8.
  d::SharingTenantStatus& history =
      world.inputs.policy->status.emplace().domains.emplace_back().tenants.emplace_back();
  world.inputs.policy->status->domains[0].name = "accelerators";
  history.namespace_ = "team-b";
  history.decayed = api::Quantity::FromMilli(900);
  EXPECT_EQ(world.Order(), (std::vector<std::string>{"team-a/a-0", "team-b/b-0"}));
}

TEST(QueueViewTest, BandsFirstThenStarvingPodsThenShares) {
  QueueWorld world;
  world.Policy();
  world.Pending("team-a", "a-0", minutes(10));
  world.Pending("team-b", "b-0", minutes(5));
  world.Pending("team-a", "a-urgent", minutes(1), 1000);
  world.Pending("team-a", "a-starving", hours(3));
  QueueView view = ComputeQueueView(world.inputs);
  std::vector<std::string> order;
  for (const QueuedPodView& p : view.pods) order.push_back(p.name);
  EXPECT_EQ(order, (std::vector<std::string>{"a-urgent", "a-starving", "b-0", "a-0"}));
  ASSERT_TRUE(view.pods[1].starving_since.has_value());
  EXPECT_EQ(*view.pods[1].starving_since, world.inputs.now - hours(1));
  EXPECT_DOUBLE_EQ(view.pods[1].credit, 1);
  ASSERT_EQ(view.shares.size(), 1u);
  EXPECT_EQ(view.shares[0].tenants[0].starving, 1);

  // Bound Pods and other schedulers' Pods are not in the queue.
  world.inputs.pods[0].spec.node_name = "node-a";
  world.inputs.pods[1].spec.scheduler_name = "other";
  EXPECT_EQ(world.Order(), (std::vector<std::string>{"team-a/a-urgent", "team-a/a-starving"}));

  // A policy the server would refuse is reported, and the order is upstream's.
  world.inputs.policy->spec.tenants[0].weight = 0;
  view = ComputeQueueView(world.inputs);
  EXPECT_TRUE(view.policy.empty());
  EXPECT_NE(view.policy_error.find("spec.tenants[0].weight"), std::string::npos)
      << view.policy_error;
  ASSERT_EQ(view.pods.size(), 2u);
  EXPECT_EQ(view.pods[1].name, "a-starving");
}

TEST(QueueViewTest, AStarvingPodShowsItsHold) {
  QueueWorld world;
  world.Policy();
  world.Pending("team-b", "big", hours(3));
  world.Pending("team-b", "all", hours(3));
  StarvationHold hold{.pod = "team-b/big",
                      .uid = "pod-team-b-big",
                      .node = "node-a",
                      .since = world.inputs.now - minutes(20),
                      .needs = {{.device_class = "h100", .count = 2}},
                      .devices = {{"gpu.example.com", "node-a", "gpu-3"}}};
  world.inputs.pods[0].metadata.annotations[std::string(kHeldDevicesAnnotation)] =
      StarvationHolds::AnnotationOf(hold);
  // Every H100 of the node: the view counts them from the slices.
  hold.needs = {{.device_class = "h100", .count = HoldNeed::kAllDevices}};
  world.inputs.pods[1].metadata.annotations[std::string(kHeldDevicesAnnotation)] =
      StarvationHolds::AnnotationOf(hold);
  QueueView view = ComputeQueueView(world.inputs);
  ASSERT_EQ(view.pods.size(), 2u);
  for (const QueuedPodView& p : view.pods) {
    ASSERT_TRUE(p.hold.has_value()) << p.name;
    EXPECT_EQ(p.hold->node, "node-a");
    EXPECT_EQ(p.hold->since, world.inputs.now - minutes(20));
    EXPECT_EQ(p.hold->devices, hold.devices);
    EXPECT_EQ(p.hold->needed, p.name == "big" ? 2 : 4) << p.name;
  }
  // An annotation the scheduler could not have written is not shown.
  world.inputs.pods[0].metadata.annotations[std::string(kHeldDevicesAnnotation)] = "{";
  view = ComputeQueueView(world.inputs);
  for (const QueuedPodView& p : view.pods) EXPECT_EQ(p.hold.has_value(), p.name == "all");
}

}  // namespace
}  // namespace draplane::scheduler
