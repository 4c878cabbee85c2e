#include "server/lifecycle/decision_retention.h"

#include <gtest/gtest.h>

#include "server/handlers/json_util.h"
#include "server/testing/test_client.h"

namespace draplane::server::lifecycle {
namespace {

constexpr std::string_view kResource = "draplane.dev/allocationdecisions";

class DecisionRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<store::Store>> opened = store::OpenStore("memory://", {});
    ASSERT_TRUE(opened.ok());
    store_ = std::move(opened).value();
  }

  void Put(const std::string& ns, const std::string& name, Timestamp created,
           bool finalizer = false) {
    std::string value = R"({"apiVersion":"draplane.dev/v1alpha1","kind":"AllocationDecision",)"
                        R"("metadata":{"name":")" +
                        name + R"(","namespace":")" + ns + R"(","creationTimestamp":")" +
                        handlers::FormatTime(created) + R"(")" +
                        (finalizer ? R"(,"finalizers":["example.com/keep"])" : "") +
                        R"(},"spec":{"schemaVersion":1}})";
    ASSERT_TRUE(store_->Create(store::Key{std::string(kResource), ns, name}, value).ok());
  }

  std::vector<std::string> Names(const std::string& ns) {
    store::ListOptions options;
    options.ns = ns;
    StatusOr<store::ListResult> listed = store_->List(kResource, options);
    EXPECT_TRUE(listed.ok());
    std::vector<std::string> out;
    for (const store::ObjectPtr& o : listed->objects) out.push_back(o->key.name);
    return out;
  }

  ManualClock clock_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(DecisionRetentionTest, KeepsTheNewestRecordsPerNamespace) {
  for (int i = 0; i < 5; ++i) Put("team-a", "a-" + std::to_string(i), clock_.Now());
  Put("team-b", "b-0", clock_.Now());
  DecisionRetention retention(store_.get(), &clock_,
                              {.max_age = std::chrono::hours(1), .max_per_namespace = 3});
  ASSERT_TRUE(retention.Start().ok());
  // Start enforced the cap: the two created first went.
  EXPECT_EQ(Names("team-a"), (std::vector<std::string>{"a-2", "a-3", "a-4"}));
  EXPECT_EQ(Names("team-b"), (std::vector<std::string>{"b-0"}));
  // New records push the oldest out as they come (the worker follows the store).
  Put("team-a", "a-5", clock_.Now());
  Put("team-a", "a-6", clock_.Now());
  ASSERT_TRUE(server::testing::Eventually([&] { return Names("team-a").size() == 3; }));
  EXPECT_EQ(Names("team-a"), (std::vector<std::string>{"a-4", "a-5", "a-6"}));
  retention.Stop();
}

TEST_F(DecisionRetentionTest, ExpiresRecordsByAgeOnTheInjectedClock) {
  Timestamp start = clock_.Now();
  Put("team-a", "old", start - std::chrono::hours(2));
  Put("team-a", "new", start);
  DecisionRetention retention(store_.get(), &clock_,
                              {.max_age = std::chrono::hours(1),
                               .max_per_namespace = 100,
                               .sweep_interval = std::chrono::minutes(1)});
  ASSERT_TRUE(retention.Start().ok());
  EXPECT_EQ(Names("team-a"), (std::vector<std::string>{"new"}));
  // An hour and a bit later the other one is due, at the next sweep the clock allows.
  clock_.Advance(std::chrono::minutes(61));
  retention.Tick();
  ASSERT_TRUE(server::testing::Eventually([&] { return Names("team-a").empty(); }));
  retention.Stop();
}

TEST_F(DecisionRetentionTest, AFinalizerKeepsARecord) {
  Timestamp start = clock_.Now();
  Put("team-a", "kept", start - std::chrono::hours(5), /*finalizer=*/true);
  Put("team-a", "a", start - std::chrono::hours(5));
  Put("team-a", "b", start);
  Put("team-a", "c", start);
  DecisionRetention retention(store_.get(), &clock_,
                              {.max_age = std::chrono::hours(1), .max_per_namespace = 1});
  ASSERT_TRUE(retention.Start().ok());
  StatusOr<int64_t> more = retention.SweepNow();
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(*more, 0);
  // "a" expired, "b" went for the cap; "kept" stays although over both bounds.
  EXPECT_EQ(Names("team-a"), (std::vector<std::string>{"c", "kept"}));
  retention.Stop();
}

}  // namespace
}  // namespace draplane::server::lifecycle
