#include "client/workqueue.h"

#include <gtest/gtest.h>

#include <thread>

namespace draplane::client {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(WorkQueueTest, DeduplicatesQueuedKeysInFifoOrder) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.Add("a");
  queue.Add("b");
  queue.Add("a");
  EXPECT_EQ(queue.Len(), 2u);
  EXPECT_EQ(queue.Get(), "a");
  EXPECT_EQ(queue.Get(), "b");
  EXPECT_EQ(queue.TryGet(), std::nullopt);
}

TEST(WorkQueueTest, AKeyAddedWhileProcessingIsRequeuedOnDone) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.Add("a");
  std::optional<std::string> key = queue.Get();
  ASSERT_EQ(key, "a");
  queue.Add("a");
  EXPECT_EQ(queue.TryGet(), std::nullopt) << "never handed to two workers at once";
  queue.Done("a");
  EXPECT_EQ(queue.TryGet(), "a");
  queue.Done("a");
  EXPECT_EQ(queue.TryGet(), std::nullopt);
}

TEST(WorkQueueTest, AddAfterWaitsForTheClockAndKeepsTheEarliestDeadline) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.AddAfter("a", seconds(10));
  queue.AddAfter("a", seconds(5));
  queue.AddAfter("b", seconds(7));
  EXPECT_EQ(queue.DelayedLen(), 2u);
  EXPECT_EQ(queue.NextDeadline(), seconds(5));
  clock.Advance(seconds(4));
  EXPECT_EQ(queue.TryGet(), std::nullopt);
  clock.Advance(seconds(1));
  EXPECT_EQ(queue.TryGet(), "a");
  clock.Advance(seconds(2));
  EXPECT_EQ(queue.TryGet(), "b");
  EXPECT_EQ(queue.DelayedLen(), 0u);
  EXPECT_EQ(queue.NextDeadline(), std::nullopt);
}

TEST(WorkQueueTest, RateLimitingBacksOffExponentiallyUntilForgotten) {
  ManualClock clock;
  WorkQueue queue(clock, {.base_delay = milliseconds(5), .max_delay = milliseconds(30), .qps = 0});
  auto delay_of_next = [&](const std::string& key) {
    queue.AddRateLimited(key);
    Duration waited{0};
    while (true) {
      if (std::optional<std::string> k = queue.TryGet()) {
        queue.Done(*k);
        return waited;
      }
      clock.Advance(milliseconds(1));
      waited += milliseconds(1);
    }
  };
  EXPECT_EQ(delay_of_next("a"), milliseconds(5));
  EXPECT_EQ(delay_of_next("a"), milliseconds(10));
  EXPECT_EQ(delay_of_next("a"), milliseconds(20));
  EXPECT_EQ(delay_of_next("a"), milliseconds(30)) << "capped";
  EXPECT_EQ(queue.NumRequeues("a"), 4);
  queue.Forget("a");
  EXPECT_EQ(queue.NumRequeues("a"), 0);
  EXPECT_EQ(delay_of_next("a"), milliseconds(5));
}

TEST(WorkQueueTest, TheBucketLimitsTheOverallRetryRate) {
  ManualClock clock;
  WorkQueue queue(
      clock, {.base_delay = milliseconds(1), .max_delay = milliseconds(1), .qps = 10, .burst = 2});
  queue.AddRateLimited("a");
  queue.AddRateLimited("b");
  queue.AddRateLimited("c");  // the bucket is empty: waits 100 ms
  clock.Advance(milliseconds(1));
  EXPECT_EQ(queue.TryGet(), "a");
  EXPECT_EQ(queue.TryGet(), "b");
  EXPECT_EQ(queue.TryGet(), std::nullopt);
  clock.Advance(milliseconds(99));
  EXPECT_EQ(queue.TryGet(), "c");
}

TEST(WorkQueueTest, ShutDownWakesBlockedWorkersAfterDraining) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.Add("a");
  std::optional<std::string> first;
  std::optional<std::string> second = "unset";
  std::thread worker([&] {
    first = queue.Get();
    second = queue.Get();
  });
  // Whether the worker is already blocked or not, it drains "a" and then sees the shutdown.
  queue.ShutDown();
  worker.join();
  EXPECT_EQ(first, "a");
  EXPECT_EQ(second, std::nullopt);
  queue.Add("b");
  EXPECT_EQ(queue.Len(), 0u) << "no keys accepted after shutdown";
}

TEST(WorkQueueTest, PokeWakesAWorkerWaitingForADelayedKey) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.AddAfter("a", seconds(3600));
  std::optional<std::string> got;
  std::thread worker([&] { got = queue.Get(); });
  clock.Advance(seconds(3600));
  queue.Poke();
  worker.join();
  EXPECT_EQ(got, "a");
}

}  // namespace
}  // namespace draplane::client
