#include "client/workqueue.h"

#include <algorithm>
#include <cmath>

#include "common/metrics.h"
#include "common/mutex.h"

namespace draplane::client {

namespace {

// client-go's workqueue metrics (k8s.io/component-base/metrics/prometheus/workqueue), under
// their names and help texts.
metrics::CounterFamily AddsMetric() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "workqueue_adds_total", "Total number of adds handled by workqueue", {"name"});
  return family;
}
metrics::GaugeFamily DepthMetric() {
  static const metrics::GaugeFamily family =
      metrics::NewGaugeFamily("workqueue_depth", "Current depth of workqueue", {"name"});
  return family;
}
metrics::HistogramFamily QueueDurationMetric() {
  static const metrics::HistogramFamily family = metrics::NewHistogramFamily(
      "workqueue_queue_duration_seconds",
      "How long in seconds an item stays in workqueue before being requested.", {"name"},
      metrics::ExponentialBuckets(10e-9, 10, 10));
  return family;
}
metrics::HistogramFamily WorkDurationMetric() {
  static const metrics::HistogramFamily family =
      metrics::NewHistogramFamily("workqueue_work_duration_seconds",
                                  "How long in seconds processing an item from workqueue takes.",
                                  {"name"}, metrics::ExponentialBuckets(10e-9, 10, 10));
  return family;
}
metrics::GaugeFamily UnfinishedWorkMetric() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "workqueue_unfinished_work_seconds",
      "How many seconds of work has been done that is in progress and hasn't been observed by "
      "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
      "threads by observing the rate at which this increases.",
      {"name"});
  return family;
}
metrics::GaugeFamily LongestRunningMetric() {
  static const metrics::GaugeFamily family = metrics::NewGaugeFamily(
      "workqueue_longest_running_processor_seconds",
      "How many seconds has the longest running processor for workqueue been running.", {"name"});
  return family;
}
metrics::CounterFamily RetriesMetric() {
  static const metrics::CounterFamily family = metrics::NewCounterFamily(
      "workqueue_retries_total", "Total number of retries handled by workqueue", {"name"});
  return family;
}

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

struct WorkQueue::Metrics {
  explicit Metrics(const std::string& name)
      : adds(AddsMetric().WithLabels({name})),
        depth(DepthMetric().WithLabels({name})),
        queue_duration(QueueDurationMetric().WithLabels({name})),
        work_duration(WorkDurationMetric().WithLabels({name})),
        unfinished(UnfinishedWorkMetric().WithLabels({name})),
        longest(LongestRunningMetric().WithLabels({name})),
        retries(RetriesMetric().WithLabels({name})) {}
  metrics::Counter adds;
  metrics::Gauge depth;
  metrics::Histogram queue_duration;
  metrics::Histogram work_duration;
  metrics::Gauge unfinished;
  metrics::Gauge longest;
  metrics::Counter retries;
};

WorkQueue::WorkQueue(const Clock& clock, RateLimiterOptions limiter, std::string name)
    : clock_(clock), limiter_(limiter), tokens_(limiter.burst), last_refill_(clock.MonotonicNow()) {
  if (name.empty()) return;
  metrics_ = std::make_unique<Metrics>(name);
  scrape_hook_ = metrics::AddScrapeHook([this] { UpdateInProgress(); });
}

WorkQueue::~WorkQueue() {
  if (scrape_hook_ != 0) metrics::RemoveScrapeHook(scrape_hook_);
  if (metrics_ == nullptr) return;
  // What this queue held leaves the shared series (a queue of the same name may live on).
  MutexLock lock(mu_);
  metrics_->depth.Increment(-static_cast<double>(added_at_.size()));
  metrics_->unfinished.Set(0);
  metrics_->longest.Set(0);
}

void WorkQueue::NoteAdded(const std::string& key) {
  if (metrics_ == nullptr) return;
  metrics_->adds.Increment();
  metrics_->depth.Increment();
  added_at_.try_emplace(key, clock_.MonotonicNow());
}

void WorkQueue::NoteHandedOut(const std::string& key) {
  if (metrics_ == nullptr) return;
  const Duration now = clock_.MonotonicNow();
  metrics_->depth.Increment(-1);
  if (auto it = added_at_.find(key); it != added_at_.end()) {
    metrics_->queue_duration.Observe(Seconds(now - it->second));
    added_at_.erase(it);
  }
  started_at_[key] = now;
}

void WorkQueue::NoteDone(const std::string& key) {
  if (metrics_ == nullptr) return;
  if (auto it = started_at_.find(key); it != started_at_.end()) {
    metrics_->work_duration.Observe(Seconds(clock_.MonotonicNow() - it->second));
    started_at_.erase(it);
  }
}

void WorkQueue::UpdateInProgress() {
  MutexLock lock(mu_);
  const Duration now = clock_.MonotonicNow();
  double total = 0;
  double longest = 0;
  for (const auto& [key, started] : started_at_) {
    total += Seconds(now - started);
    longest = std::max(longest, Seconds(now - started));
  }
  metrics_->unfinished.Set(total);
  metrics_->longest.Set(longest);
}

bool WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.contains(key)) return false;
  dirty_.insert(key);
  NoteAdded(key);
  if (processing_.contains(key)) return false;
  queue_.push_back(key);
  return true;
}

void WorkQueue::Add(const std::string& key) {
  bool queued;
  {
    MutexLock lock(mu_);
    queued = AddLocked(key);
  }
  // Outside the lock: a worker woken while it is held would only block on it again.
  if (queued) cv_.NotifyOne();
}

void WorkQueue::AddAfter(const std::string& key, Duration delay) {
  if (delay <= Duration::zero()) {
    Add(key);
    return;
  }
  {
    MutexLock lock(mu_);
    if (shutting_down_) return;
    AddDelayedLocked(key, delay);
  }
  cv_.NotifyAll();
}

void WorkQueue::AddDelayedLocked(const std::string& key, Duration delay) {
  Duration deadline = clock_.MonotonicNow() + delay;
  auto it = delayed_.find(key);
  if (it != delayed_.end()) {
    if (it->second <= deadline) return;  // keep the earlier deadline
    auto range = by_deadline_.equal_range(it->second);
    for (auto d = range.first; d != range.second; ++d) {
      if (d->second == key) {
        by_deadline_.erase(d);
        break;
      }
    }
    it->second = deadline;
  } else {
    delayed_.emplace(key, deadline);
  }
  by_deadline_.emplace(deadline, key);
}

Duration WorkQueue::LimiterDelay(const std::string& key) {
  // ItemExponentialFailureRateLimiter.
  int failures = failures_[key]++;
  double exp = std::ldexp(1.0, std::min(failures, 62));
  double item_ns = static_cast<double>(limiter_.base_delay.count()) * exp;
  Duration item = item_ns >= static_cast<double>(limiter_.max_delay.count())
                      ? limiter_.max_delay
                      : Duration(static_cast<int64_t>(item_ns));
  // BucketRateLimiter (golang.org/x/time/rate Reserve().Delay()).
  Duration bucket{0};
  if (limiter_.qps > 0) {
    Duration now = clock_.MonotonicNow();
    double elapsed = std::chrono::duration<double>(now - last_refill_).count();
    last_refill_ = now;
    tokens_ = std::min<double>(limiter_.burst, tokens_ + elapsed * limiter_.qps);
    tokens_ -= 1;
    if (tokens_ < 0) {
      bucket = std::chrono::duration_cast<Duration>(
          std::chrono::duration<double>(-tokens_ / limiter_.qps));
    }
  }
  return std::max(item, bucket);
}

void WorkQueue::AddRateLimited(const std::string& key) {
  Duration delay;
  {
    MutexLock lock(mu_);
    delay = LimiterDelay(key);
    if (metrics_ != nullptr) metrics_->retries.Increment();
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  MutexLock lock(mu_);
  failures_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDue() {
  Duration now = clock_.MonotonicNow();
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
    std::string key = by_deadline_.begin()->second;
    by_deadline_.erase(by_deadline_.begin());
    delayed_.erase(key);
    if (AddLocked(key)) cv_.NotifyOne();  // another worker may take it
  }
}

std::optional<std::string> WorkQueue::Get() {
  MutexLock lock(mu_);
  while (true) {
    PromoteDue();
    if (!queue_.empty()) break;
    if (shutting_down_) return std::nullopt;
    if (by_deadline_.empty()) {
      cv_.Wait(lock);
    } else {
      Duration left = by_deadline_.begin()->first - clock_.MonotonicNow();
      // Pacing only: a real wait of at most the time left, then the clock is consulted again.
      cv_.WaitFor(lock, std::max(left, Duration(std::chrono::milliseconds(1))));
    }
  }
  return HandOut();
}

std::string WorkQueue::HandOut() {
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  NoteHandedOut(key);
  return key;
}

std::optional<std::string> WorkQueue::TryGet() {
  MutexLock lock(mu_);
  PromoteDue();
  if (queue_.empty()) return std::nullopt;
  return HandOut();
}

void WorkQueue::Done(const std::string& key) {
  {
    MutexLock lock(mu_);
    processing_.erase(key);
    NoteDone(key);
    if (!dirty_.contains(key)) return;
    queue_.push_back(key);
  }
  cv_.NotifyOne();
}

void WorkQueue::ShutDown() {
  MutexLock lock(mu_);
  shutting_down_ = true;
  cv_.NotifyAll();
}

bool WorkQueue::shutting_down() const {
  MutexLock lock(mu_);
  return shutting_down_;
}

void WorkQueue::Poke() {
  MutexLock lock(mu_);
  cv_.NotifyAll();
}

size_t WorkQueue::Len() const {
  MutexLock lock(mu_);
  return queue_.size();
}

size_t WorkQueue::DelayedLen() const {
  MutexLock lock(mu_);
  return delayed_.size();
}

std::optional<Duration> WorkQueue::NextDeadline() const {
  MutexLock lock(mu_);
  if (by_deadline_.empty()) return std::nullopt;
  return by_deadline_.begin()->first;
}

}  // namespace draplane::client
