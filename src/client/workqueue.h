// Work queues for controllers, with client-go's workqueue semantics
// (k8s.io/client-go/util/workqueue: queue.go, delaying_queue.go, rate_limiting_queue.go,
// default_rate_limiters.go).
//
// Guarantees, as client-go's:
//   - dedup: a key is queued at most once; adding a queued key does nothing;
//   - a key being processed (between Get and Done) is never handed to a second worker; adding it
//     meanwhile marks it dirty and it is queued again when Done is called;
//   - FIFO order among queued keys;
//   - AddAfter(key, d) queues the key once `d` has passed on the injected clock (keeping the
//     earliest deadline when added twice);
//   - AddRateLimited(key) waits the limiter's delay: the maximum of an exponential per-key backoff
//     (`base_delay` · 2^failures, capped at `max_delay`) and an overall token bucket (`qps`,
//     `burst`); Forget(key) resets the key's failure count.
//
// Metrics (a named queue only, as client-go's): workqueue_adds_total, workqueue_depth,
// workqueue_queue_duration_seconds, workqueue_work_duration_seconds,
// workqueue_unfinished_work_seconds, workqueue_longest_running_processor_seconds and
// workqueue_retries_total, labelled name=<the queue's name>, with client-go's semantics: depth
// counts keys queued or waiting to be queued again when their processing ends, an add counts
// once per key until it is handed out, durations come from the injected clock, and the two
// in-progress gauges are computed at scrape time (so a stuck worker shows).
//
// Time: deadlines are read from the injected Clock. A blocked Get() re-checks them after a real
// wait of at most the time left (pacing, not a decision); with a ManualClock, call Poke() after
// advancing the clock to wake waiters.
//
// Thread-safety: every method is safe for concurrent use.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"

namespace draplane::client {

struct RateLimiterOptions {
  Duration base_delay = std::chrono::milliseconds(5);
  Duration max_delay = std::chrono::seconds(1000);
  double qps = 10;  // overall bucket; 0 disables the bucket
  int burst = 100;
};

class WorkQueue {
 public:
  // `name`: the metrics' label (upstream's queue names); empty: no metrics.
  explicit WorkQueue(const Clock& clock, RateLimiterOptions limiter = {}, std::string name = {});
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, Duration delay);
  void AddRateLimited(const std::string& key);
  // Resets the key's backoff.
  void Forget(const std::string& key);
  // Times the key was rate-limited since its last Forget.
  int NumRequeues(const std::string& key) const;

  // Blocks until a key is ready; nullopt once the queue is shut down and drained of ready keys.
  std::optional<std::string> Get();
  // A ready key if there is one, without blocking.
  std::optional<std::string> TryGet();
  // Marks the end of processing of a key returned by Get.
  void Done(const std::string& key);

  // Stops accepting keys and wakes every waiter.
  void ShutDown();
  bool shutting_down() const;
  // Wakes waiters so they re-check delayed keys against the clock (after a ManualClock moved).
  void Poke();

  // Keys ready to be handed out.
  size_t Len() const;
  // Keys waiting for their delay.
  size_t DelayedLen() const;
  // The earliest deadline (monotonic) of a delayed key, nullopt when none waits.
  std::optional<Duration> NextDeadline() const;

 private:
  // Moves delayed keys whose time has come into the queue.
  void PromoteDue() DRAPLANE_REQUIRES(mu_);
  // Queues `key` unless it is queued or being processed already; true when it was queued (the
  // caller wakes a worker).
  bool AddLocked(const std::string& key) DRAPLANE_REQUIRES(mu_);
  // Records `key` to be queued after `delay` (> 0), keeping an earlier deadline.
  void AddDelayedLocked(const std::string& key, Duration delay) DRAPLANE_REQUIRES(mu_);
  Duration LimiterDelay(const std::string& key) DRAPLANE_REQUIRES(mu_);
  // The metrics' bookkeeping: a key became dirty, was handed out, finished.
  void NoteAdded(const std::string& key) DRAPLANE_REQUIRES(mu_);
  void NoteHandedOut(const std::string& key) DRAPLANE_REQUIRES(mu_);
  void NoteDone(const std::string& key) DRAPLANE_REQUIRES(mu_);
  // The scrape hook: the in-progress gauges.
  void UpdateInProgress();
  // Takes the next ready key (the queue is not empty).
  std::string HandOut() DRAPLANE_REQUIRES(mu_);

  const Clock& clock_;
  const RateLimiterOptions limiter_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::string> queue_ DRAPLANE_GUARDED_BY(mu_);
  std::set<std::string> dirty_ DRAPLANE_GUARDED_BY(mu_);
  std::set<std::string> processing_ DRAPLANE_GUARDED_BY(mu_);
  std::map<std::string, Duration> delayed_ DRAPLANE_GUARDED_BY(mu_);  // key -> deadline (monotonic)
  std::multimap<Duration, std::string> by_deadline_ DRAPLANE_GUARDED_BY(mu_);  // deadline -> key
  std::map<std::string, int> failures_ DRAPLANE_GUARDED_BY(mu_);
  double tokens_ DRAPLANE_GUARDED_BY(mu_);
  Duration last_refill_ DRAPLANE_GUARDED_BY(mu_){0};
  bool shutting_down_ DRAPLANE_GUARDED_BY(mu_) = false;

  struct Metrics;
  std::unique_ptr<Metrics> metrics_;                                     // null without a name
  std::map<std::string, Duration> added_at_ DRAPLANE_GUARDED_BY(mu_);    // dirty keys
  std::map<std::string, Duration> started_at_ DRAPLANE_GUARDED_BY(mu_);  // keys processing
  int64_t scrape_hook_ = 0;
};

}  // namespace draplane::client
