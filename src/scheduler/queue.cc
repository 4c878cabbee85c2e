#include "scheduler/queue.h"

#include <algorithm>
#include <vector>

namespace draplane::scheduler {

SchedulingQueue::SchedulingQueue(const Clock& clock, QueueOptions options, Gate gate,
                                 std::unique_ptr<ActiveOrder> order)
    : clock_(clock),
      options_(options),
      gate_(std::move(gate)),
      order_(order != nullptr ? std::move(order) : std::make_unique<PrioritySortOrder>()) {}

void SchedulingQueue::SetOrder(std::unique_ptr<ActiveOrder> order) {
  if (order == nullptr) order = std::make_unique<PrioritySortOrder>();
  // Both orders are keyed, not sequenced by insertion: the walk's order does not matter.
  for (const auto& [uid, e] : pods_) {
    if (e.where != Where::kActive) continue;
    order_->Remove(OrderEntry(uid, e));
    order->Add(OrderEntry(uid, e));
  }
  order_ = std::move(order);
}

ActiveOrder::Entry SchedulingQueue::OrderEntry(const std::string& uid, const Entry& e) {
  return {.uid = uid,
          .pod = *e.pod.pod,
          .enqueued_at = e.pod.enqueued_at,
          .sequence = e.sequence,
          .indebted = e.indebted};
}

int64_t SchedulingQueue::Priority(const api::corev1::Pod& pod) {
  return pod.spec.priority.value_or(0);
}

Duration SchedulingQueue::BackoffFor(const QueuedPod& pod) const {
  Duration d = options_.initial_backoff;
  for (int i = 1; i < pod.attempts && d < options_.max_backoff; ++i) d *= 2;
  return std::min(d, options_.max_backoff);
}

void SchedulingQueue::Unlink(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  Entry& e = it->second;
  switch (e.where) {
    case Where::kActive:
      order_->Remove(OrderEntry(uid, e));
      break;
    case Where::kBackoff:
      backoff_.erase({e.ready_at, e.sequence, uid});
      break;
    case Where::kUnschedulable:
      unschedulable_.erase(uid);
      CountRejectors(e.pod, -1);
      if (e.gated) --gated_count_;
      e.gated = false;
      break;
  }
}

void SchedulingQueue::Place(const std::string& uid) {
  Entry& e = pods_.at(uid);
  if (std::optional<std::string> refused = gate_(*e.pod.pod)) {
    e.where = Where::kUnschedulable;
    e.gated = true;
    ++gated_count_;
    e.pod.rejectors = {*refused};
    e.pod.queued_at = clock_.MonotonicNow();
    unschedulable_[uid] = e.pod.queued_at;
    CountRejectors(e.pod, +1);
    return;
  }
  Duration now = clock_.MonotonicNow();
  Duration ready = e.pod.attempts > 0 ? e.pod.last_failure + BackoffFor(e.pod) : Duration{0};
  if (ready > now) {
    e.where = Where::kBackoff;
    e.ready_at = ready;
    backoff_.insert({ready, e.sequence, uid});
  } else {
    InsertActive(uid, e);
  }
}

void SchedulingQueue::InsertActive(const std::string& uid, Entry& e) {
  e.where = Where::kActive;
  e.indebted = cost_debt_.contains(e.pod.pod->metadata.namespace_);
  order_->Add(OrderEntry(uid, e));
}

void SchedulingQueue::RecordAttemptCost(const std::string& namespace_, bool spent) {
  if (spent) {
    ++cost_debt_[namespace_];
    return;
  }
  auto it = cost_debt_.find(namespace_);
  if (it != cost_debt_.end() && --it->second <= 0) cost_debt_.erase(it);
}

int64_t SchedulingQueue::CostDebt(const std::string& namespace_) const {
  auto it = cost_debt_.find(namespace_);
  return it == cost_debt_.end() ? 0 : it->second;
}

void SchedulingQueue::AddOrUpdate(std::shared_ptr<const api::corev1::Pod> pod) {
  const std::string uid = pod->metadata.uid;
  auto it = pods_.find(uid);
  if (it == pods_.end()) {
    Entry e;
    e.pod.pod = std::move(pod);
    e.pod.enqueued_at = clock_.MonotonicNow();
    e.sequence = ++sequence_;
    pods_.emplace(uid, std::move(e));
    Place(uid);
    return;
  }
  Entry& e = it->second;
  if (e.where != Where::kUnschedulable && Priority(*e.pod.pod) != Priority(*pod)) {
    Unlink(uid);
    e.pod.pod = std::move(pod);
    Place(uid);
    return;
  }
  e.pod.pod = std::move(pod);
}

void SchedulingQueue::Delete(const std::string& uid) {
  Unlink(uid);
  pods_.erase(uid);
}

void SchedulingQueue::PromoteBackoff() {
  Duration now = clock_.MonotonicNow();
  while (!backoff_.empty() && std::get<0>(*backoff_.begin()) <= now) {
    std::string uid = std::get<2>(*backoff_.begin());
    backoff_.erase(backoff_.begin());
    InsertActive(uid, pods_.at(uid));
  }
}

std::optional<QueuedPod> SchedulingQueue::Pop() {
  PromoteBackoff();
  std::optional<std::string> uid = order_->Peek(clock_.MonotonicNow());
  if (!uid) return std::nullopt;
  auto it = pods_.find(*uid);
  order_->Remove(OrderEntry(*uid, it->second));
  QueuedPod out = std::move(it->second.pod);
  pods_.erase(it);
  return out;
}

std::optional<Duration> SchedulingQueue::NextReady() const {
  if (backoff_.empty()) return std::nullopt;
  Duration left = std::get<0>(*backoff_.begin()) - clock_.MonotonicNow();
  return std::max(left, Duration{0});
}

void SchedulingQueue::RequeueUnschedulable(QueuedPod pod, std::set<std::string> rejectors) {
  pod.last_failure = clock_.MonotonicNow();
  if (rejectors.empty()) {
    RequeueAfterError(std::move(pod));
    return;
  }
  pod.rejectors = std::move(rejectors);
  pod.queued_at = pod.last_failure;
  std::string uid = pod.pod->metadata.uid;
  Entry e;
  e.pod = std::move(pod);
  e.sequence = ++sequence_;
  e.where = Where::kUnschedulable;
  unschedulable_[uid] = e.pod.queued_at;
  CountRejectors(e.pod, +1);
  pods_[uid] = std::move(e);
}

void SchedulingQueue::CountRejectors(const QueuedPod& pod, int64_t delta) {
  for (const std::string& plugin : pod.rejectors) {
    auto it = unschedulable_by_plugin_.try_emplace(plugin, 0).first;
    it->second += delta;
    if (it->second == 0) unschedulable_by_plugin_.erase(it);
  }
}

void SchedulingQueue::RequeueAfterError(QueuedPod pod) {
  pod.last_failure = clock_.MonotonicNow();
  pod.rejectors.clear();
  std::string uid = pod.pod->metadata.uid;
  Entry e;
  e.pod = std::move(pod);
  e.sequence = ++sequence_;
  e.where = Where::kBackoff;
  e.ready_at = e.pod.last_failure + BackoffFor(e.pod);
  backoff_.insert({e.ready_at, e.sequence, uid});
  pods_[uid] = std::move(e);
}

void SchedulingQueue::OnEvent(const Interest& interest) {
  std::vector<std::string> uids;
  uids.reserve(unschedulable_.size());
  for (const auto& [uid, since] : unschedulable_) uids.push_back(uid);
  MoveInterested(uids, interest);
}

void SchedulingQueue::OnEventFor(std::vector<std::string> uids, const Interest& interest) {
  std::sort(uids.begin(), uids.end());
  uids.erase(std::unique(uids.begin(), uids.end()), uids.end());
  MoveInterested(uids, interest);
}

void SchedulingQueue::MoveInterested(const std::vector<std::string>& uids,
                                     const Interest& interest) {
  std::vector<std::string> move;
  for (const std::string& uid : uids) {
    if (!unschedulable_.contains(uid)) continue;
    const Entry& e = pods_.at(uid);
    for (const std::string& plugin : e.pod.rejectors) {
      if (interest(plugin, *e.pod.pod)) {
        move.push_back(uid);
        break;
      }
    }
  }
  for (const std::string& uid : move) {
    Unlink(uid);
    Place(uid);
  }
}

void SchedulingQueue::FlushUnschedulable() {
  Duration now = clock_.MonotonicNow();
  std::vector<std::string> move;
  for (const auto& [uid, since] : unschedulable_) {
    if (since + options_.max_unschedulable <= now) move.push_back(uid);
  }
  for (const std::string& uid : move) {
    Unlink(uid);
    Place(uid);
  }
}

}  // namespace draplane::scheduler
