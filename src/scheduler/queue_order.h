// The order of the scheduling queue's active pods (queue.h), behind one seam (STYLE.md: the
// queue/fairness policy; mesos' Sorter is the model). The queue keeps backoff, the
// unschedulable pool, gates and queueing hints; an ActiveOrder only says which active pod pops
// next.
//
//   PrioritySortOrder  no sharing policy: priority (higher first), then the issue-17 cost
//                      account (pods of an indebted namespace after the others), then when the
//                      pod was last added to the queue (upstream PrioritySort, plus the account).
//   FairShareOrder     a sharing policy (fair_share.h; docs/design/fair-share.md §3). Bands by
//                      priority, strictly. Within the top band:
//                        1. starving pods — waited at least starvation_threshold since they first
//                           entered the queue — oldest first;
//                        2. pods whose requests use no domain of the policy, oldest first (they
//                           compete in no market the policy shares; indebted ones after the
//                           tenant heads that are not);
//                        3. per tenant a FIFO (first enqueue, namespace, name); the tenant whose
//                           head has the lowest key goes first, where key = the head's pod share
//                           (FairShareModel::PodShare) − its aging credit min(wait /
//                           full_credit_after, 1). An indebted head (the cost account) comes
//                           after every head that is not. Ties: first enqueue, namespace, name,
//                           uid.
//                      The keys move with time and the ledger, so they are evaluated at each
//                      Peek over the top band's tenants: O(T log n) for T tenants there. Peek is
//                      a function of (the order's pods, the model's state, now) alone.
//                      It also answers which classes a popped pod should leave to under-served
//                      tenants while it has a fallback (Contested; fair-share.md §4b).
//
// Thread-safety: not thread-safe; owned by the queue (the scheduler's loop thread).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "allocator/contested.h"
#include "api/gen/core_v1_types.h"
#include "common/clock.h"
#include "scheduler/fair_share.h"
#include "scheduler/requested_classes.h"

namespace draplane::scheduler {

class ActiveOrder {
 public:
  // One active pod as the queue knows it.
  struct Entry {
    const std::string& uid;
    const api::corev1::Pod& pod;
    Duration enqueued_at;  // monotonic: first entered the queue (kept across attempts)
    uint64_t sequence;     // last added to the queue: created or failed (FIFO among equals)
    bool indebted;         // its namespace had a cost debt when it entered (queue.h)
  };

  virtual ~ActiveOrder() = default;
  virtual void Add(const Entry& entry) = 0;
  // `entry` as it was added.
  virtual void Remove(const Entry& entry) = 0;
  // The uid of the pod to pop at monotonic time `now`; nullopt when empty.
  virtual std::optional<std::string> Peek(Duration now) = 0;
  // How many pods were added and not removed.
  virtual size_t size() const = 0;
};

class PrioritySortOrder final : public ActiveOrder {
 public:
  void Add(const Entry& entry) override;
  void Remove(const Entry& entry) override;
  std::optional<std::string> Peek(Duration now) override;
  size_t size() const override { return active_.size(); }

 private:
  // -priority, indebted, sequence, uid
  std::set<std::tuple<int64_t, bool, uint64_t, std::string>> active_;
};

class FairShareOrder final : public ActiveOrder {
 public:
  // The device classes a pod's claims request (requested_classes.h).
  using ClassesOf = std::function<PodClasses(const api::corev1::Pod&)>;

  // `model` must outlive the order.
  FairShareOrder(FairShareModel& model, ClassesOf classes_of);

  void Add(const Entry& entry) override;
  void Remove(const Entry& entry) override;
  std::optional<std::string> Peek(Duration now) override;
  size_t size() const override { return pods_.size(); }

  // The aging credit of a pod first enqueued at `enqueued_at` (explanations and tests).
  double Credit(Duration enqueued_at, Duration now) const;

  // The classes a pod of `namespace_` at `priority` should leave to others while it can fall
  // back: each class that is the first choice (PodClasses::preferred) of an active pod of another
  // tenant at the same or a higher priority, that tenant being under its fair share
  // (EffectiveShare < 1) in the class's domain. Per class, those tenants (sorted). O(B·T·C) for
  // B bands at or above `priority`, T tenants, C first-choice classes per tenant.
  allocator::ContestedClasses Contested(std::string_view namespace_, int32_t priority);

 private:
  // first enqueue, namespace, name, uid
  using FifoKey = std::tuple<Duration, std::string, std::string, std::string>;
  struct Pod {
    int64_t band = 0;  // -priority
    FifoKey fifo;
    bool indebted = false;
    std::vector<int> domains;
    std::vector<std::string> preferred;  // first-choice classes in a domain
  };
  struct Band {
    std::set<FifoKey> all;                              // starving ones are a prefix
    std::set<std::pair<bool, FifoKey>> without_domain;  // (indebted, ...)
    std::map<std::string, std::set<std::pair<bool, FifoKey>>> tenants;  // namespace ->
    // namespace -> first-choice class -> active pods preferring it
    std::map<std::string, std::map<std::string, int64_t>, std::less<>> preferred;
  };

  FairShareModel& model_;
  ClassesOf classes_of_;
  std::unordered_map<std::string, Pod> pods_;  // by uid
  std::map<int64_t, Band> bands_;              // by -priority
};

}  // namespace draplane::scheduler
