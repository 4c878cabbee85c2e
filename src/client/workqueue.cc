#include "client/workqueue.h"

#include <algorithm>
#include <cmath>

#include "common/mutex.h"

namespace draplane::client {

WorkQueue::WorkQueue(const Clock& clock, RateLimiterOptions limiter)
    : clock_(clock),
      limiter_(limiter),
      tokens_(limiter.burst),
      last_refill_(clock.MonotonicNow()) {}

bool WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.contains(key)) return false;
  dirty_.insert(key);
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
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

std::optional<std::string> WorkQueue::TryGet() {
  MutexLock lock(mu_);
  PromoteDue();
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  {
    MutexLock lock(mu_);
    processing_.erase(key);
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
