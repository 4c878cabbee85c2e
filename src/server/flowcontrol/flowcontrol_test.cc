#include "server/flowcontrol/flowcontrol.h"

#include <gtest/gtest.h>

#include <deque>
#include <thread>

namespace draplane::server::flowcontrol {
namespace {

size_t Level(std::string_view name) {
  const std::vector<PriorityLevelConfig>& levels = DefaultPriorityLevels();
  for (size_t i = 0; i < levels.size(); ++i) {
    if (levels[i].name == name) return i;
  }
  ADD_FAILURE() << "no level " << name;
  return 0;
}

Classification ClassifyAs(const auth::UserInfo& user, std::string_view verb, std::string_view group,
                          std::string_view resource, std::string_view ns = "") {
  RequestDigest digest{.user = &user,
                       .resource_request = true,
                       .verb = verb,
                       .api_group = group,
                       .resource = resource,
                       .namespace_ = ns};
  return Classify(digest);
}

TEST(FlowControlTest, ClassifiesLikeUpstreamsDefaultFlowSchemas) {
  auth::UserInfo admin{"admin", "", {"system:masters", "system:authenticated"}};
  auth::UserInfo scheduler{"system:kube-scheduler", "", {"system:authenticated"}};
  auth::UserInfo node{"system:node:n1", "", {"system:nodes", "system:authenticated"}};
  auth::UserInfo alice{"alice", "", {"tenants", "system:authenticated"}};
  auth::UserInfo anonymous{"system:anonymous", "", {"system:unauthenticated"}};

  EXPECT_EQ(ClassifyAs(admin, "create", "resource.k8s.io", "resourceclaims").level,
            Level("exempt"));
  RequestDigest probe{.user = &anonymous, .verb = "get", .path = "/readyz"};
  EXPECT_EQ(Classify(probe).flow_schema, "probes");
  EXPECT_EQ(Classify(probe).level, Level("exempt"));
  EXPECT_EQ(ClassifyAs(scheduler, "update", "coordination.k8s.io", "leases", "kube-system").level,
            Level("leader-election"));
  Classification binding = ClassifyAs(scheduler, "create", "", "pods", "team-a");
  EXPECT_EQ(binding.level, Level("workload-high"));
  EXPECT_EQ(binding.flow, "team-a");  // flows by namespace
  EXPECT_EQ(ClassifyAs(node, "update", "", "nodes").level, Level("node-high"));
  EXPECT_EQ(ClassifyAs(node, "update", "coordination.k8s.io", "leases").level, Level("node-high"));
  EXPECT_EQ(ClassifyAs(node, "list", "resource.k8s.io", "resourceslices").level, Level("system"));
  Classification tenant = ClassifyAs(alice, "create", "resource.k8s.io", "resourceclaims", "a");
  EXPECT_EQ(tenant.level, Level("global-default"));
  EXPECT_EQ(tenant.flow, "alice");  // flows by user
  EXPECT_EQ(ClassifyAs(anonymous, "get", "", "pods").level, Level("global-default"));
}

TEST(FlowControlTest, SeatsAreTheLevelsShareOfTheServerLimit) {
  ManualClock clock;
  Controller controller(ControllerOptions{.server_concurrency_limit = 600}, clock);
  // NominalCL = ceil(600 * shares / 140).
  EXPECT_EQ(controller.seats(Level("system")), 129);
  EXPECT_EQ(controller.seats(Level("leader-election")), 43);
  EXPECT_EQ(controller.seats(Level("global-default")), 86);
  Controller small(ControllerOptions{.server_concurrency_limit = 7}, clock);
  EXPECT_EQ(small.seats(Level("global-default")), 1);
  EXPECT_EQ(small.seats(Level("leader-election")), 1);
}

// One tenant with a deep backlog, another arriving later: the newcomer is served within one
// round of the queues (the flooder's hand of 6), not after the flooder's backlog of 300.
TEST(FlowControlTest, AnotherFlowIsServedBeforeTheFloodersBacklog) {
  // Declared before the controller: the callbacks write to them until it is gone.
  std::vector<std::string> order;
  int rejected = 0;
  std::deque<SeatPtr> held;
  ManualClock clock;
  Controller controller(ControllerOptions{.server_concurrency_limit = 7}, clock);  // 1 seat
  Classification flooder{Level("global-default"), "global-default", "mallory"};
  Classification victim{Level("global-default"), "global-default", "bob"};
  for (int i = 0; i < 400; ++i) {
    controller.Submit(
        flooder,
        [&](SeatPtr seat) {
          order.push_back("mallory");
          held.push_back(std::move(seat));
        },
        [&](RejectReason reason) {
          if (reason == RejectReason::kQueueFull) ++rejected;  // kShutdown at the end
        });
  }
  // One executes; the hand of 6 queues holds 6 * 50 waiting; the rest is refused.
  EXPECT_EQ(order.size(), 1u);
  EXPECT_EQ(controller.waiting(Level("global-default")), 300);
  EXPECT_EQ(rejected, 99);
  controller.Submit(
      victim,
      [&](SeatPtr seat) {
        order.push_back("bob");
        held.push_back(std::move(seat));
      },
      [&](RejectReason) { ADD_FAILURE() << "the victim was rejected"; });
  // Requests finish one by one; the victim's turn comes within a round of the flooder's queues.
  while (order.back() != "bob" && order.size() < 300) held.pop_front();
  EXPECT_EQ(order.back(), "bob");
  EXPECT_LE(order.size(), 1u + 6u + 1u) << "the victim waited behind the flooder's backlog";
  controller.Shutdown();
  held.clear();
}

TEST(FlowControlTest, RequestsWaitingTooLongAreRejected) {
  ManualClock clock;
  Controller controller(ControllerOptions{.server_concurrency_limit = 7,
                                          .queue_wait_limit = std::chrono::seconds(15)},
                        clock);
  Classification flow{Level("global-default"), "global-default", "alice"};
  SeatPtr first;
  controller.Submit(
      flow, [&](SeatPtr seat) { first = std::move(seat); }, [](RejectReason) {});
  ASSERT_NE(first, nullptr);
  std::vector<RejectReason> reasons;
  controller.Submit(
      flow, [](SeatPtr) { ADD_FAILURE() << "ran"; },
      [&](RejectReason reason) { reasons.push_back(reason); });
  clock.Advance(std::chrono::seconds(14));
  controller.Tick();
  EXPECT_TRUE(reasons.empty());
  clock.Advance(std::chrono::seconds(1));
  controller.Tick();
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0], RejectReason::kTimeOut);
  EXPECT_EQ(controller.waiting(flow.level), 0);
  first.reset();
  EXPECT_EQ(controller.executing(flow.level), 0);
}

TEST(FlowControlTest, WaitBlocksUntilASeatFreesAndShutdownRejects) {
  ManualClock clock;
  Controller controller(ControllerOptions{.server_concurrency_limit = 7}, clock);
  Classification flow{Level("global-default"), "global-default", "alice"};
  StatusOr<SeatPtr> first = controller.Wait(flow);
  ASSERT_TRUE(first.ok());
  std::thread waiter([&] {
    StatusOr<SeatPtr> second = controller.Wait(flow);
    EXPECT_TRUE(second.ok());
  });
  while (controller.waiting(flow.level) == 0) std::this_thread::yield();
  first->reset();
  waiter.join();
  controller.Shutdown();
  EXPECT_EQ(controller.Wait(flow).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace draplane::server::flowcontrol
