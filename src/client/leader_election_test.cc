#include "client/leader_election.h"

#include <gtest/gtest.h>

#include "client/typed.h"
#include "common/metrics.h"
#include "testing/test_api.h"

namespace draplane::client {
namespace {

using std::chrono::seconds;

class LeaderElectionTest : public ::testing::Test {
 protected:
  LeaderElectionTest() : api_({.clock = &clock_, .namespaces = {"ns"}}) {}

  std::unique_ptr<LeaderElector> Elector(const std::string& identity, const Clock& clock) {
    StatusOr<std::unique_ptr<LeaderElector>> e = LeaderElector::Create(
        api_, clock, {.lease_name = "draplane-scheduler", .identity = identity});
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return std::move(*e);
  }

  ManualClock clock_;
  draplane::testing::TestApi api_;
};

TEST_F(LeaderElectionTest, OneReplicaLeadsUntilItsLeaseExpires) {
  ManualClock clock_a;
  ManualClock clock_b;
  auto a = Elector("a", clock_a);
  auto b = Elector("b", clock_b);
  EXPECT_EQ(a->TryAcquireOrRenew().value_or(false), true);
  EXPECT_EQ(b->TryAcquireOrRenew().value_or(true), false);
  EXPECT_TRUE(a->IsLeader());
  EXPECT_FALSE(b->IsLeader());

  // a renews; b observes a changing record and keeps waiting.
  clock_a.Advance(seconds(10));
  EXPECT_EQ(a->TryAcquireOrRenew().value_or(false), true);
  clock_b.Advance(seconds(10));
  EXPECT_EQ(b->TryAcquireOrRenew().value_or(true), false);

  // a stops renewing: 15 s after b last saw the record change, b takes over.
  clock_b.Advance(seconds(14));
  EXPECT_EQ(b->TryAcquireOrRenew().value_or(true), false);
  clock_b.Advance(seconds(1));
  EXPECT_EQ(b->TryAcquireOrRenew().value_or(false), true);
  StatusOr<api::coordinationv1::Lease> lease =
      Get<api::coordinationv1::Lease>(api_, "kube-system", "draplane-scheduler");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->spec.holder_identity, "b");
  EXPECT_EQ(lease->spec.lease_transitions, 1);

  // a comes back and finds b holding a fresh lease.
  EXPECT_EQ(a->TryAcquireOrRenew().value_or(true), false);
  EXPECT_FALSE(a->IsLeader());
}

// client-go's HealthzAdaptor: the leaderElection health check fails while this replica leads
// but has not renewed for leaseDuration + the tolerance; a standby always passes. The
// leader_election_master_status gauge says which replica leads.
TEST_F(LeaderElectionTest, TheHealthCheckFailsWhileTheLeaderCannotRenew) {
  ManualClock clock_a;
  ManualClock clock_b;
  auto a = Elector("a", clock_a);
  auto b = Elector("b", clock_b);
  ASSERT_EQ(a->TryAcquireOrRenew().value_or(false), true);
  ASSERT_EQ(b->TryAcquireOrRenew().value_or(true), false);
  EXPECT_TRUE(a->Check(seconds(20)).ok());
  EXPECT_TRUE(b->Check(seconds(20)).ok());
  EXPECT_NE(
      metrics::RenderText().find("leader_election_master_status{name=\"draplane-scheduler\"}"),
      std::string::npos);

  clock_a.Advance(seconds(35));  // the lease's 15 s + 20 s: still within
  EXPECT_TRUE(a->Check(seconds(20)).ok());
  clock_a.Advance(seconds(1));
  Status failing = a->Check(seconds(20));
  EXPECT_EQ(failing.message(), "failed election to renew leadership on lease draplane-scheduler");
  clock_b.Advance(seconds(36));
  EXPECT_TRUE(b->Check(seconds(20)).ok());

  ASSERT_EQ(a->TryAcquireOrRenew().value_or(false), true);  // a renewal heals it
  EXPECT_TRUE(a->Check(seconds(20)).ok());
}

TEST_F(LeaderElectionTest, ReleaseHandsOverAtOnce) {
  auto a = Elector("a", clock_);
  auto b = Elector("b", clock_);
  ASSERT_EQ(a->TryAcquireOrRenew().value_or(false), true);
  ASSERT_EQ(b->TryAcquireOrRenew().value_or(true), false);
  ASSERT_TRUE(a->Release().ok());
  EXPECT_FALSE(a->IsLeader());
  EXPECT_EQ(b->TryAcquireOrRenew().value_or(false), true);
}

TEST_F(LeaderElectionTest, LosingAWriteRaceIsNotAnError) {
  auto a = Elector("a", clock_);
  ASSERT_EQ(a->TryAcquireOrRenew().value_or(false), true);
  api_.SetInterceptor([](const ApiRequest& r) -> std::optional<Status> {
    if (r.verb == Verb::kUpdate) return ConflictError("someone else wrote the lease");
    return std::nullopt;
  });
  StatusOr<bool> renewed = a->TryAcquireOrRenew();
  ASSERT_TRUE(renewed.ok());
  EXPECT_FALSE(*renewed);
  api_.SetInterceptor(
      [](const ApiRequest&) -> std::optional<Status> { return UnavailableError("down"); });
  EXPECT_EQ(a->TryAcquireOrRenew().status().code(), StatusCode::kUnavailable);
}

TEST_F(LeaderElectionTest, ConfigIsValidated) {
  EXPECT_EQ(LeaderElector::Create(api_, clock_, {.lease_name = "x"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LeaderElector::Create(api_, clock_,
                                  {.lease_name = "x",
                                   .identity = "a",
                                   .lease_duration = seconds(5),
                                   .renew_deadline = seconds(10)})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST_F(LeaderElectionTest, RunLeadsUntilStopped) {
  bool started = false;
  bool stopped = false;
  StatusOr<std::unique_ptr<LeaderElector>> e =
      LeaderElector::Create(api_, RealClock(),
                            {.lease_name = "run",
                             .identity = "a",
                             .on_started_leading = [&] { started = true; },
                             .on_stopped_leading = [&] { stopped = true; }});
  ASSERT_TRUE(e.ok());
  LeaderElector& elector = **e;
  std::thread runner([&] { elector.Run(); });
  // Run calls on_started_leading after its first successful attempt; Stop ends the renew loop.
  while (!elector.IsLeader()) std::this_thread::yield();
  elector.Stop();
  runner.join();
  EXPECT_TRUE(started);
  EXPECT_TRUE(stopped);
  StatusOr<api::coordinationv1::Lease> lease =
      Get<api::coordinationv1::Lease>(api_, "kube-system", "run");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->spec.holder_identity.value_or("?"), "") << "released on stop";
}

}  // namespace
}  // namespace draplane::client
