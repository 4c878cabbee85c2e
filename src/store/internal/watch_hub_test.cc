#include "store/internal/watch_hub.h"

#include <gtest/gtest.h>

#include <atomic>

namespace draplane::store::internal {
namespace {

WatchEvent Added(Revision revision, std::string ns, std::string name) {
  auto object = std::make_shared<Object>(
      Object{Key{"core/pods", std::move(ns), std::move(name)}, "", revision, revision});
  return WatchEvent{WatchEvent::Type::kAdded, revision, object, nullptr};
}

std::vector<Revision> Drain(Watcher& watcher) {
  std::vector<WatchEvent> events;
  EXPECT_TRUE(watcher.Poll(&events).ok());
  std::vector<Revision> revisions;
  for (const WatchEvent& event : events) revisions.push_back(event.revision);
  return revisions;
}

TEST(WatchHubTest, ReplaysTheRingThenFollowsLiveEvents) {
  WatchHub hub({.backend = "test", .ring_limit = 0, .default_queue_limit = 100});
  RunNotifies(hub.Publish({Added(1, "a", "x"), Added(2, "a", "y"), Added(3, "b", "z")}));
  StatusOr<std::unique_ptr<Watcher>> watcher = hub.Subscribe("core/pods", {.revision = 1}, {});
  ASSERT_TRUE(watcher.ok());
  RunNotifies(hub.Publish({Added(4, "a", "w")}));
  EXPECT_EQ(Drain(**watcher), (std::vector<Revision>{2, 3, 4}));
}

TEST(WatchHubTest, ARevisionBeforeTheRingIsExpiredWithoutABackfill) {
  WatchHub hub({.backend = "test", .ring_limit = 2, .default_queue_limit = 100});
  RunNotifies(hub.Publish({Added(1, "a", "x"), Added(2, "a", "y"), Added(3, "a", "z")}));
  EXPECT_EQ(hub.window_start(), 1);
  StatusOr<std::unique_ptr<Watcher>> from_one = hub.Subscribe("core/pods", {.revision = 1}, {});
  ASSERT_TRUE(from_one.ok());
  EXPECT_EQ(Drain(**from_one), (std::vector<Revision>{2, 3}));
  RunNotifies(hub.Publish({Added(4, "a", "w")}));
  EXPECT_EQ(hub.window_start(), 2);
  StatusOr<std::unique_ptr<Watcher>> too_old = hub.Subscribe("core/pods", {.revision = 1}, {});
  EXPECT_EQ(too_old.status().code(), StatusCode::kExpired);
  StatusOr<std::unique_ptr<Watcher>> from_two = hub.Subscribe("core/pods", {.revision = 2}, {});
  ASSERT_TRUE(from_two.ok());
  EXPECT_EQ(Drain(**from_two), (std::vector<Revision>{3, 4}));
}

TEST(WatchHubTest, TheBackfillFillsTheGapBeforeTheRing) {
  WatchHub hub({.backend = "test", .ring_limit = 1, .default_queue_limit = 100});
  RunNotifies(hub.Publish({Added(1, "a", "x"), Added(2, "a", "y"), Added(3, "a", "z")}));
  ASSERT_EQ(hub.window_start(), 2);
  EXPECT_EQ(hub.Subscribe("core/pods", {.revision = 1}, {}).status().code(), StatusCode::kExpired);
  std::vector<std::pair<Revision, Revision>> asked;
  Backfill backfill = [&](std::string_view, Revision from,
                          Revision to) -> StatusOr<std::vector<WatchEvent>> {
    asked.emplace_back(from, to);
    std::vector<WatchEvent> events;
    for (Revision r = from + 1; r <= to; ++r) events.push_back(Added(r, "a", "h"));
    return events;
  };
  StatusOr<std::unique_ptr<Watcher>> watcher = hub.Subscribe("core/pods", {}, backfill);
  ASSERT_TRUE(watcher.ok());
  EXPECT_TRUE(asked.empty());  // "from now" needs no history
  watcher = hub.Subscribe("core/pods", {.revision = 1}, backfill);
  ASSERT_TRUE(watcher.ok());
  EXPECT_EQ(asked, (std::vector<std::pair<Revision, Revision>>{{1, 2}}));
  EXPECT_EQ(Drain(**watcher), (std::vector<Revision>{2, 3}));
}

TEST(WatchHubTest, NoNotifyStartsAfterCancelReturns) {
  WatchHub hub({.backend = "test", .ring_limit = 0, .default_queue_limit = 100});
  std::atomic<int> calls{0};
  StatusOr<std::unique_ptr<Watcher>> watcher =
      hub.Subscribe("core/pods", {.notify = [&] { ++calls; }}, {});
  ASSERT_TRUE(watcher.ok());
  NotifyList pending = hub.Publish({Added(1, "a", "x")});
  ASSERT_EQ(pending.size(), 1u);
  (*watcher)->Cancel();
  RunNotifies(pending);  // delivered late, after the consumer cancelled: suppressed
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(hub.watcher_count(), 0u);
}

TEST(WatchHubTest, NotifyIsEdgeTriggered) {
  WatchHub hub({.backend = "test", .ring_limit = 0, .default_queue_limit = 100});
  std::atomic<int> calls{0};
  StatusOr<std::unique_ptr<Watcher>> watcher =
      hub.Subscribe("core/pods", {.notify = [&] { ++calls; }}, {});
  RunNotifies(hub.Publish({Added(1, "a", "x")}));
  RunNotifies(hub.Publish({Added(2, "a", "x")}));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(Drain(**watcher).size(), 2u);
  RunNotifies(hub.Publish({Added(3, "a", "x")}));
  EXPECT_EQ(calls.load(), 2);
}

TEST(WatchHubTest, TerminateAllEndsEveryWatcherWithTheStatus) {
  WatchHub hub({.backend = "test", .ring_limit = 0, .default_queue_limit = 100});
  StatusOr<std::unique_ptr<Watcher>> a = hub.Subscribe("core/pods", {}, {});
  StatusOr<std::unique_ptr<Watcher>> b = hub.Subscribe("core/nodes", {}, {});
  RunNotifies(hub.Publish({Added(1, "a", "x")}));
  RunNotifies(hub.TerminateAll(ExpiredError("gone"), 10));
  EXPECT_EQ(hub.current(), 10);
  EXPECT_EQ(hub.window_start(), 10);
  // Queued events are still delivered, then the reason.
  EXPECT_EQ((*a)->Next()->revision, 1);
  EXPECT_EQ((*a)->Next().status().code(), StatusCode::kExpired);
  EXPECT_EQ((*b)->Next().status().code(), StatusCode::kExpired);
  EXPECT_EQ(hub.watcher_count(), 0u);
}

}  // namespace
}  // namespace draplane::store::internal
