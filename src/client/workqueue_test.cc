#include "client/workqueue.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/metrics.h"

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

namespace draplane::client {
namespace {

// The value of `series` (name and labels as rendered) in the process's metrics; -1 when absent.
double Series(const std::string& series) {
  const std::string text = metrics::RenderText();
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

// client-go's workqueue metrics for a named queue: adds and depth count keys until they are
// handed out (a key added while processing counts once more), durations come from the clock,
// and the in-progress gauges are computed when scraped, so a stuck worker shows.
TEST(WorkQueueTest, ANamedQueueExportsClientGosMetrics) {
  ManualClock clock;
  {
    WorkQueue queue(clock, {}, "test_queue");
    queue.Add("a");
    queue.Add("b");
    queue.Add("a");
    EXPECT_EQ(Series("workqueue_adds_total{name=\"test_queue\"}"), 2);
    EXPECT_EQ(Series("workqueue_depth{name=\"test_queue\"}"), 2);
    clock.Advance(std::chrono::seconds(2));
    ASSERT_EQ(queue.TryGet(), "a");
    EXPECT_EQ(Series("workqueue_depth{name=\"test_queue\"}"), 1);
    EXPECT_EQ(Series("workqueue_queue_duration_seconds_count{name=\"test_queue\"}"), 1);
    EXPECT_EQ(Series("workqueue_queue_duration_seconds_sum{name=\"test_queue\"}"), 2);
    clock.Advance(std::chrono::seconds(3));
    EXPECT_EQ(Series("workqueue_unfinished_work_seconds{name=\"test_queue\"}"), 3);
    EXPECT_EQ(Series("workqueue_longest_running_processor_seconds{name=\"test_queue\"}"), 3);
    queue.Add("a");  // dirty while processing: counted, queued again on Done
    EXPECT_EQ(Series("workqueue_adds_total{name=\"test_queue\"}"), 3);
    EXPECT_EQ(Series("workqueue_depth{name=\"test_queue\"}"), 2);
    queue.Done("a");
    EXPECT_EQ(Series("workqueue_work_duration_seconds_count{name=\"test_queue\"}"), 1);
    EXPECT_EQ(Series("workqueue_work_duration_seconds_sum{name=\"test_queue\"}"), 3);
    EXPECT_EQ(Series("workqueue_unfinished_work_seconds{name=\"test_queue\"}"), 0);
    queue.AddRateLimited("c");
    EXPECT_EQ(Series("workqueue_retries_total{name=\"test_queue\"}"), 1);
  }
  // A queue that goes away takes its keys out of the depth.
  EXPECT_EQ(Series("workqueue_depth{name=\"test_queue\"}"), 0);
  // Unnamed queues have none.
  WorkQueue unnamed(clock);
  unnamed.Add("x");
  EXPECT_EQ(Series("workqueue_depth{name=\"\"}"), -1);
}

}  // namespace
}  // namespace draplane::client
