// The scheduling queue (upstream pkg/scheduler/backend/queue/scheduling_queue.go): pods waiting
// for a scheduling attempt.
//
//   active         ready now; ordered by an ActiveOrder (queue_order.h): without a sharing policy
//                  by priority (higher first), then by when they were last added to the queue:
//                  created, or handed back after a failed attempt (upstream PrioritySort over
//                  QueuedPodInfo.Timestamp, which a move from backoff or the unschedulable pool
//                  keeps: the pod that failed first goes first); with one, by priority bands and
//                  weighted fair share
//   backoff        failed recently with an error or were moved by an event before their backoff
//                  expired; ready again at last attempt + backoff, where backoff is
//                  `initial_backoff` · 2^(attempts−1), at most `max_backoff` (1 s and 10 s
//                  upstream)
//   unschedulable  rejected; they stay until an event one of their rejecting plugins registered
//                  for (and whose queueing hint agrees) moves them to backoff or active, or until
//                  they waited `max_unschedulable` (5 min upstream)
//   gated          PreEnqueue said not yet; kept with the unschedulable pods and re-checked by the
//                  same events
//
// Cost account (issue 17; draplane's, not upstream's): each namespace (tenant) keeps a count of
// its pods' attempts that spent their whole CEL evaluation budget
// (SchedulerOptions::evaluation_budget), less one for each of its attempts that did not. While
// the count is positive, the namespace's pods enter the active queue behind every pod of the same
// priority from a namespace without such a debt, so one tenant's expensive pods cannot keep
// another tenant's pod waiting: each of their attempts costs at most the budget and then backs
// off, and the other tenant's pods go first. The fair-share order (issue 22) keeps the account
// as its tie-breaker within a band.
//
// Time comes from the injected clock; the scheduler asks NextReady() how long it may sleep.
//
// Thread-safety: not thread-safe; owned by the scheduler's loop thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "common/clock.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/framework/types.h"
#include "scheduler/queue_order.h"

namespace draplane::scheduler {

struct QueueOptions {
  Duration initial_backoff = std::chrono::seconds(1);
  Duration max_backoff = std::chrono::seconds(10);
  Duration max_unschedulable = std::chrono::minutes(5);
};

struct QueuedPod {
  std::shared_ptr<const api::corev1::Pod> pod;
  int attempts = 0;
  // Plugins that rejected the last attempt (or the PreEnqueue plugin that gated it).
  std::set<std::string> rejectors;
  Duration last_failure{0};  // monotonic
  Duration queued_at{0};     // monotonic: entered the unschedulable pool
  Duration enqueued_at{0};   // monotonic: first entered the queue (kept across attempts)
};

class SchedulingQueue {
 public:
  // PreEnqueue check run before a pod becomes active; nullopt admits it, else the plugin that
  // refused.
  using Gate = std::function<std::optional<std::string>(const api::corev1::Pod&)>;
  // Whether an event may make a pod rejected by `plugin` schedulable.
  using Interest = std::function<bool(const std::string& plugin, const api::corev1::Pod& pod)>;

  // `order` null: PrioritySortOrder.
  SchedulingQueue(const Clock& clock, QueueOptions options, Gate gate,
                  std::unique_ptr<ActiveOrder> order = nullptr);

  // Replaces the active order (a sharing policy came, changed or went); `order` null:
  // PrioritySortOrder. The active pods move to it (each removed from the old order first, so an
  // order's model sees them leave).
  void SetOrder(std::unique_ptr<ActiveOrder> order);

  // Every queued pod (active, backoff, unschedulable or gated), in no particular order; a popped
  // pod in its attempt is not among them.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [uid, e] : pods_) fn(e.pod);
  }

  // A new pending pod, or an update of one (its place is kept; whether the update makes a waiting
  // pod schedulable is for OnEvent to decide).
  void AddOrUpdate(std::shared_ptr<const api::corev1::Pod> pod);
  void Delete(const std::string& uid);
  bool Contains(const std::string& uid) const { return pods_.contains(uid); }

  // The next active pod (after promoting backoff pods whose time came); it is no longer in the
  // queue until it is handed back with one of the Requeue calls or forgotten.
  std::optional<QueuedPod> Pop();
  // How long until a backoff pod becomes ready (zero when one is ready now); nullopt when the
  // backoff queue is empty.
  std::optional<Duration> NextReady() const;

  // A failed attempt. Unschedulable pods wait for events; errors go through backoff.
  void RequeueUnschedulable(QueuedPod pod, std::set<std::string> rejectors);
  void RequeueAfterError(QueuedPod pod);

  // Settles one finished attempt of a pod of `namespace_` in the cost account: `spent` when the
  // attempt spent its whole evaluation budget.
  void RecordAttemptCost(const std::string& namespace_, bool spent);
  // The namespace's count of budget-spending attempts not yet offset (0: none).
  int64_t CostDebt(const std::string& namespace_) const;

  // An event: moves unschedulable and gated pods that `interest` selects.
  void OnEvent(const Interest& interest);
  // The same, for an event that can only concern the pods in `uids` (a claim used by them, an
  // update of one pod): O(|uids| log n) instead of a walk over every waiting pod.
  void OnEventFor(std::vector<std::string> uids, const Interest& interest);
  // Moves pods that waited longer than max_unschedulable.
  void FlushUnschedulable();

  size_t active() const { return order_->size(); }
  size_t backoff() const { return backoff_.size(); }
  size_t unschedulable() const { return unschedulable_.size(); }
  size_t gated() const { return gated_count_; }
  // Pods in the unschedulable pool (gated ones included) by each plugin that rejected (or
  // gated) them: a Pod counts once for each of its plugins (upstream's
  // scheduler_unschedulable_pods).
  const std::map<std::string, int64_t>& unschedulable_by_plugin() const {
    return unschedulable_by_plugin_;
  }

 private:
  enum class Where { kActive, kBackoff, kUnschedulable };
  struct Entry {
    QueuedPod pod;
    Where where = Where::kActive;
    // When the pod was last added: created, or handed back after a failed attempt (a counter,
    // so that pods added at one instant of a virtual clock keep the order they came in). FIFO
    // order among equal priorities, and among equal backoff expiries.
    uint64_t sequence = 0;
    Duration ready_at{0};  // backoff
    bool gated = false;
    bool indebted = false;  // its namespace had a cost debt when it entered the active queue
  };
  using BackoffKey = std::tuple<Duration, uint64_t, std::string>;

  // Moves those of `uids` (sorted, unique) that wait in the unschedulable pool and interest
  // selects.
  void MoveInterested(const std::vector<std::string>& uids, const Interest& interest);
  void Place(const std::string& uid);  // active or backoff, after the gate
  void Unlink(const std::string& uid);
  // Adds (+1) or removes (-1) an unschedulable pod's rejectors in unschedulable_by_plugin_.
  void CountRejectors(const QueuedPod& pod, int64_t delta);
  void PromoteBackoff();
  // Puts the pod into the active queue (its `indebted` bit set from the cost account).
  void InsertActive(const std::string& uid, Entry& e);
  Duration BackoffFor(const QueuedPod& pod) const;
  static int64_t Priority(const api::corev1::Pod& pod);
  static ActiveOrder::Entry OrderEntry(const std::string& uid, const Entry& e);

  const Clock& clock_;
  const QueueOptions options_;
  Gate gate_;
  std::unordered_map<std::string, Entry> pods_;
  std::unique_ptr<ActiveOrder> order_;
  std::set<BackoffKey> backoff_;
  std::map<std::string, Duration> unschedulable_;  // uid -> queued_at (sorted by uid)
  size_t gated_count_ = 0;
  std::map<std::string, int64_t> unschedulable_by_plugin_;
  uint64_t sequence_ = 0;
  std::map<std::string, int64_t, std::less<>> cost_debt_;  // namespace -> count (> 0 only)
};

}  // namespace draplane::scheduler
