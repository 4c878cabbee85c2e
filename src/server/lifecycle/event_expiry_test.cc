#include "server/lifecycle/event_expiry.h"

#include <gtest/gtest.h>

#include "server/handlers/json_util.h"
#include "server/testing/test_client.h"

namespace draplane::server::lifecycle {
namespace {

constexpr std::string_view kCoreEvents = "core/events";
constexpr Duration kTtl = std::chrono::hours(1);

class EventExpiryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<store::Store>> opened = store::OpenStore("memory://", {});
    ASSERT_TRUE(opened.ok());
    store_ = std::move(opened).value();
  }

  // A core/v1 Event created at `created` that records `extra` (`,"lastTimestamp":"..."`).
  static std::string CoreEvent(const std::string& name, Timestamp created,
                               const std::string& extra = "") {
    return R"({"apiVersion":"v1","kind":"Event","metadata":{"name":")" + name +
           R"(","namespace":"team-a","creationTimestamp":")" + handlers::FormatTime(created) +
           R"("},"reason":"FailedScheduling","count":1)" + extra + "}";
  }
  // An Event written through events.k8s.io/v1, as stored (in core/v1's form, api/events.h): an
  // eventTime, none of the legacy times.
  static std::string EventsV1Event(const std::string& name, Timestamp event_time) {
    return R"({"apiVersion":"v1","kind":"Event","metadata":{"name":")" + name +
           R"(","namespace":"team-a"},"eventTime":")" + handlers::FormatTime(event_time) +
           R"(","reason":"Scheduled","action":"Binding"})";
  }

  store::Key Key(std::string_view resource, const std::string& name) {
    return store::Key{std::string(resource), "team-a", name};
  }
  void Create(std::string_view resource, const std::string& name, const std::string& value) {
    ASSERT_TRUE(store_->Create(Key(resource, name), value).ok());
  }
  bool Stored(std::string_view resource, const std::string& name) {
    return store_->Get(Key(resource, name)).ok();
  }

  ManualClock clock_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(EventExpiryTest, EventsGoOneTtlAfterTheyWereWritten) {
  EventExpiry expiry(store_.get(), &clock_, kTtl);
  ASSERT_TRUE(expiry.Start().ok());
  Create(kCoreEvents, "core", CoreEvent("core", clock_.Now()));
  Create(kCoreEvents, "v1", EventsV1Event("v1", clock_.Now()));
  // Not an Event: kept however old.
  Create("core/configmaps", "config",
         R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"config"}})");
  // The worker follows the store: the writes are indexed before the clock moves.
  ASSERT_TRUE(expiry.SweepNow().ok());

  clock_.Advance(kTtl - std::chrono::seconds(1));
  EXPECT_EQ(*expiry.SweepNow(), 0);
  EXPECT_TRUE(Stored(kCoreEvents, "core"));
  EXPECT_TRUE(Stored(kCoreEvents, "v1"));

  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(*expiry.SweepNow(), 2);
  EXPECT_FALSE(Stored(kCoreEvents, "core"));
  EXPECT_FALSE(Stored(kCoreEvents, "v1"));
  EXPECT_TRUE(Stored("core/configmaps", "config"));
  expiry.Stop();
}

TEST_F(EventExpiryTest, EveryWriteRenewsTheTtl) {
  EventExpiry expiry(store_.get(), &clock_, kTtl);
  ASSERT_TRUE(expiry.Start().ok());
  Create(kCoreEvents, "repeated", CoreEvent("repeated", clock_.Now()));
  ASSERT_TRUE(expiry.SweepNow().ok());
  clock_.Advance(std::chrono::minutes(40));
  // The recorder patches the count of an Event it sees again.
  StatusOr<store::ObjectPtr> stored = store_->Get(Key(kCoreEvents, "repeated"));
  ASSERT_TRUE(stored.ok());
  ASSERT_TRUE(
      store_
          ->Update(Key(kCoreEvents, "repeated"),
                   CoreEvent("repeated", clock_.Now() - std::chrono::minutes(40), R"(,"count":2)"),
                   store::Preconditions{(*stored)->revision})
          .ok());
  ASSERT_TRUE(expiry.SweepNow().ok());

  clock_.Advance(std::chrono::minutes(30));  // 70 minutes after the create, 30 after the patch
  EXPECT_EQ(*expiry.SweepNow(), 0);
  EXPECT_TRUE(Stored(kCoreEvents, "repeated"));
  clock_.Advance(std::chrono::minutes(30));
  EXPECT_EQ(*expiry.SweepNow(), 1);
  EXPECT_FALSE(Stored(kCoreEvents, "repeated"));
  expiry.Stop();
}

TEST_F(EventExpiryTest, AtStartAnEventIsDatedByTheTimesItRecords) {
  const Timestamp now = clock_.Now();
  // Created long ago, last seen three hours ago: due at once.
  Create(kCoreEvents, "stale",
         CoreEvent(
             "stale", now - std::chrono::hours(5),
             R"(,"lastTimestamp":")" + handlers::FormatTime(now - std::chrono::hours(3)) + R"(")"));
  // Created long ago, but its series was observed 50 minutes ago: ten minutes left.
  Create(kCoreEvents, "series",
         CoreEvent("series", now - std::chrono::hours(5),
                   R"(,"series":{"count":3,"lastObservedTime":")" +
                       handlers::FormatTime(now - std::chrono::minutes(50)) + R"("})"));
  // events.k8s.io: its eventTime, 30 minutes ago.
  Create(kCoreEvents, "v1", EventsV1Event("v1", now - std::chrono::minutes(30)));
  // A time in the future counts as now; no time at all, as now.
  Create(kCoreEvents, "future", CoreEvent("future", now + std::chrono::hours(5)));
  Create(
      kCoreEvents, "undated",
      R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"undated","namespace":"team-a"}})");

  EventExpiry expiry(store_.get(), &clock_, kTtl);
  ASSERT_TRUE(expiry.Start().ok());
  EXPECT_FALSE(Stored(kCoreEvents, "stale"));
  EXPECT_TRUE(Stored(kCoreEvents, "series"));

  clock_.Advance(std::chrono::minutes(10));
  EXPECT_EQ(*expiry.SweepNow(), 1);
  EXPECT_FALSE(Stored(kCoreEvents, "series"));
  EXPECT_TRUE(Stored(kCoreEvents, "v1"));

  clock_.Advance(std::chrono::minutes(20));
  EXPECT_EQ(*expiry.SweepNow(), 1);
  EXPECT_FALSE(Stored(kCoreEvents, "v1"));
  EXPECT_TRUE(Stored(kCoreEvents, "future"));
  EXPECT_TRUE(Stored(kCoreEvents, "undated"));

  clock_.Advance(std::chrono::minutes(30));
  EXPECT_EQ(*expiry.SweepNow(), 2);
  EXPECT_FALSE(Stored(kCoreEvents, "future"));
  EXPECT_FALSE(Stored(kCoreEvents, "undated"));
  expiry.Stop();
}

TEST_F(EventExpiryTest, TheWorkerSweepsOnTick) {
  EventExpiry expiry(store_.get(), &clock_, kTtl);
  ASSERT_TRUE(expiry.Start().ok());
  Create(kCoreEvents, "core", CoreEvent("core", clock_.Now()));
  ASSERT_TRUE(expiry.SweepNow().ok());
  clock_.Advance(kTtl);
  expiry.Tick();
  ASSERT_TRUE(server::testing::Eventually([&] { return !Stored(kCoreEvents, "core"); }));
  expiry.Stop();
}

TEST(EventExpiryTimesTest, LastRecordedTimeIsTheNewestParsableTime) {
  EXPECT_EQ(EventExpiry::LastRecordedTime("not json"), std::nullopt);
  EXPECT_EQ(EventExpiry::LastRecordedTime(R"({"metadata":{}})"), std::nullopt);
  EXPECT_EQ(EventExpiry::LastRecordedTime(
                R"({"metadata":{"creationTimestamp":"2026-01-01T00:00:00Z"},)"
                R"("firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"bad",)"
                R"("series":{"lastObservedTime":"2026-01-02T00:00:00.000001Z"},)"
                R"("eventTime":"2026-01-01T12:00:00.123456Z"})"),
            handlers::ParseTime("2026-01-02T00:00:00.000001Z"));
}

}  // namespace
}  // namespace draplane::server::lifecycle
