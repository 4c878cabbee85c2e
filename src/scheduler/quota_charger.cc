#include "scheduler/quota_charger.h"

#include <algorithm>

#include "allocator/quota.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/mutex.h"

namespace draplane::scheduler {

namespace corev1 = api::corev1;

QuotaCharger::QuotaCharger(client::ApiClient& api, std::string field_manager, int conflict_retries,
                           Executor executor)
    : api_(api),
      field_manager_(std::move(field_manager)),
      conflict_retries_(conflict_retries),
      executor_(std::move(executor)) {}

void QuotaCharger::ChargeAsync(const std::string& ns, const std::vector<std::string>& quotas,
                               const allocator::ResourceList& increment,
                               std::function<void(Status)> done) {
  if (quotas.empty() || increment.empty()) {
    done(Status::Ok());
    return;
  }
  auto waiter = std::make_shared<Waiter>();
  waiter->quotas = quotas;
  waiter->increment = increment;
  waiter->done = std::move(done);
  Queue(ns, std::move(waiter));
}

void QuotaCharger::ChargeAsync(Expected& expected, const std::vector<std::string>& quotas,
                               const allocator::ResourceList& increment,
                               std::function<void(Status)> done) {
  const bool nothing = quotas.empty() || increment.empty();
  std::string ns;
  auto waiter = std::make_shared<Waiter>();
  {
    MutexLock lock(mu_);
    auto it = open_.find(expected.id_);
    if (it == open_.end()) return;  // abandoned
    if (nothing) {
      open_.erase(it);
    } else {
      ns = it->second.ns;
      waiter->expected = expected.id_;
      it->second.queued = waiter;
    }
  }
  if (nothing) {
    done(Status::Ok());
    return;
  }
  waiter->quotas = quotas;
  waiter->increment = increment;
  waiter->done = std::move(done);
  Queue(ns, std::move(waiter));
}

void QuotaCharger::Hold(const std::string& ns, std::function<void()> work) {
  auto waiter = std::make_shared<Waiter>();
  waiter->hold = std::move(work);
  Queue(ns, std::move(waiter));
}

void QuotaCharger::Queue(const std::string& ns, std::shared_ptr<Waiter> waiter) {
  {
    MutexLock lock(mu_);
    queued_[ns].push_back(std::move(waiter));
    // A batch of the namespace in flight, or a Hold, takes this one in its turn.
    if (!busy_.insert(ns).second) return;
  }
  if (executor_) {
    executor_([this, ns] { Drain(ns); });
  } else {
    Drain(ns);
  }
}

void QuotaCharger::Release(const std::string& ns) {
  if (executor_) {
    executor_([this, ns] { Drain(ns); });
  } else {
    Drain(ns);
  }
}

std::unique_ptr<QuotaCharger::Expected> QuotaCharger::Expect(const std::string& ns) {
  MutexLock lock(mu_);
  uint64_t id = next_expected_++;
  open_[id].ns = ns;
  return std::unique_ptr<Expected>(new Expected(*this, id));
}

QuotaCharger::Expected::~Expected() { charger_.Abandon(id_); }

void QuotaCharger::Expected::AddClaim(const std::string& claim_uid, const std::string& marker) {
  MutexLock lock(charger_.mu_);
  auto it = charger_.open_.find(id_);
  if (it != charger_.open_.end()) it->second.claims.insert_or_assign(claim_uid, marker);
}

void QuotaCharger::Abandon(uint64_t id) {
  MutexLock lock(mu_);
  auto it = open_.find(id);
  if (it == open_.end() || it->second.writing) return;  // decided, or when its batch ends
  if (it->second.queued == nullptr) {
    open_.erase(it);  // never queued
    return;
  }
  // Still queued: never written.
  auto queue = queued_.find(it->second.ns);
  if (queue == queued_.end()) return;
  auto w = std::find(queue->second.begin(), queue->second.end(), it->second.queued);
  if (w == queue->second.end()) return;
  queue->second.erase(w);
  open_.erase(it);
}

std::map<std::string, std::string> QuotaCharger::ExpectedClaims(const std::string& ns) {
  MutexLock lock(mu_);
  std::map<std::string, std::string> claims;
  for (const auto& [id, open] : open_) {
    if (open.ns == ns) claims.insert(open.claims.begin(), open.claims.end());
  }
  return claims;
}

Status QuotaCharger::Charge(const std::string& ns, const std::vector<std::string>& quotas,
                            const allocator::ResourceList& increment) {
  Mutex mu;
  CondVar cv;
  std::optional<Status> result;
  ChargeAsync(ns, quotas, increment, [&](Status s) {
    MutexLock lock(mu);
    result = std::move(s);
    cv.NotifyAll();
  });
  MutexLock lock(mu);
  cv.Wait(lock, [&] { return result.has_value(); });
  return *result;
}

void QuotaCharger::Drain(const std::string& ns) {
  while (true) {
    std::vector<std::shared_ptr<Waiter>> batch;
    std::function<void()> hold;
    {
      MutexLock lock(mu_);
      auto it = queued_.find(ns);
      if (it == queued_.end() || it->second.empty()) {
        if (it != queued_.end()) queued_.erase(it);
        busy_.erase(ns);
        return;
      }
      // The charges up to the first Hold; a Hold first keeps the namespace busy until Release.
      std::deque<std::shared_ptr<Waiter>>& queue = it->second;
      if (queue.front()->hold) {
        hold = std::move(queue.front()->hold);
        queue.pop_front();
      } else {
        while (!queue.empty() && !queue.front()->hold) {
          if (queue.front()->expected != 0) {
            if (auto open = open_.find(queue.front()->expected); open != open_.end()) {
              open->second.queued = nullptr;
              open->second.writing = true;
            }
          }
          batch.push_back(std::move(queue.front()));
          queue.pop_front();
        }
      }
    }
    if (hold) {
      hold();
      return;
    }
    RunBatch(ns, batch);
    {
      MutexLock lock(mu_);
      for (const std::shared_ptr<Waiter>& w : batch) {
        if (w->expected != 0) open_.erase(w->expected);
      }
    }
    // Outside the lock: a callback may queue the next charge.
    for (const std::shared_ptr<Waiter>& w : batch) w->done(w->result);
  }
}

void QuotaCharger::RunBatch(const std::string& ns,
                            const std::vector<std::shared_ptr<Waiter>>& batch) {
  std::set<std::string> names;
  for (const std::shared_ptr<Waiter>& w : batch) names.insert(w->quotas.begin(), w->quotas.end());
  // Quotas in name order: every writer takes them in the same order.
  for (const std::string& name : names) {
    std::vector<std::shared_ptr<Waiter>> waiting;
    for (const std::shared_ptr<Waiter>& w : batch) {
      if (w->result.ok() &&
          std::find(w->quotas.begin(), w->quotas.end(), name) != w->quotas.end()) {
        waiting.push_back(w);
      }
    }
    if (!waiting.empty()) ChargeQuota(ns, name, waiting);
  }
  // A waiter refused by a later quota gives back what earlier ones accepted.
  std::map<std::string, allocator::ResourceList> give_back;
  for (const std::shared_ptr<Waiter>& w : batch) {
    if (w->result.ok()) continue;
    for (const std::string& name : w->charged) {
      allocator::AddResources(give_back[name], w->increment);
    }
    w->charged.clear();
  }
  for (const auto& [name, amount] : give_back) GiveBack(ns, name, amount);
}

std::optional<corev1::ResourceQuota> QuotaCharger::Known(const std::string& ns,
                                                         const std::string& name) {
  MutexLock lock(mu_);
  auto it = known_.find(ns + "/" + name);
  if (it == known_.end()) return std::nullopt;
  return it->second;
}

void QuotaCharger::Remember(const std::string& ns, const std::string& name,
                            std::optional<corev1::ResourceQuota> quota) {
  MutexLock lock(mu_);
  if (quota.has_value()) {
    known_.insert_or_assign(ns + "/" + name, std::move(*quota));
  } else {
    known_.erase(ns + "/" + name);
  }
}

StatusOr<corev1::ResourceQuota> QuotaCharger::Read(const std::string& ns, const std::string& name) {
  StatusOr<corev1::ResourceQuota> quota = client::Get<corev1::ResourceQuota>(api_, ns, name);
  Remember(ns, name, quota.ok() ? std::optional(*quota) : std::nullopt);
  return quota;
}

void QuotaCharger::ChargeQuota(const std::string& ns, const std::string& name,
                               const std::vector<std::shared_ptr<Waiter>>& waiters) {
  // The copy this charger last read or wrote saves the read while it is current: the write's
  // precondition is what makes the charge safe, not where the copy came from. Only a write may
  // be decided on it; a refusal, or a quota no longer in Allocation mode, is decided again on a
  // fresh read (the copy may predate a give-back or an annotation change).
  std::optional<corev1::ResourceQuota> known = Known(ns, name);
  for (int conflicts = 0; conflicts <= conflict_retries_;) {
    const bool fresh = !known.has_value();
    StatusOr<corev1::ResourceQuota> quota =
        fresh ? Read(ns, name) : StatusOr<corev1::ResourceQuota>(std::move(*known));
    known.reset();
    if (!quota.ok()) {
      if (quota.status().code() == StatusCode::kNotFound) return;  // deleted: nothing to charge
      for (const std::shared_ptr<Waiter>& w : waiters) {
        w->result = quota.status().WithPrefix("read quota " + ns + "/" + name);
      }
      return;
    }
    std::optional<allocator::QuotaBudget> budget = allocator::BudgetOf(*quota);
    if (!budget.has_value()) {
      if (!fresh) continue;  // read it
      return;                // no longer in Allocation mode
    }
    allocator::ResourceList used = budget->used;
    std::vector<std::shared_ptr<Waiter>> accepted;
    std::vector<std::pair<std::shared_ptr<Waiter>, std::string>> refused;
    for (const std::shared_ptr<Waiter>& w : waiters) {
      if (std::optional<std::string> over = allocator::ExceedsQuota(*budget, used, w->increment)) {
        refused.emplace_back(w, std::move(*over));
        continue;
      }
      used = allocator::ChargedUsage(*budget, used, w->increment);
      accepted.push_back(w);
    }
    if (!refused.empty() && !fresh) continue;  // refuse only on a fresh read
    if (!accepted.empty()) {
      for (const auto& [key, hard] : budget->hard) {
        auto it = used.find(key);
        quota->status.used[key] = it == used.end() ? api::Quantity::FromInt64(0) : it->second;
      }
      StatusOr<corev1::ResourceQuota> written = client::UpdateStatus(api_, *quota, field_manager_);
      Remember(ns, name, written.ok() ? std::optional(*written) : std::nullopt);
      if (!written.ok()) {
        if (written.status().code() == StatusCode::kConflict) {
          ++conflicts;  // read again
          continue;
        }
        for (const std::shared_ptr<Waiter>& w : waiters) {
          w->result = written.status().WithPrefix("charge quota " + ns + "/" + name);
        }
        return;
      }
      for (const std::shared_ptr<Waiter>& w : accepted) w->charged.push_back(name);
    }
    for (auto& [w, message] : refused) w->result = ConflictError(message);
    return;
  }
  for (const std::shared_ptr<Waiter>& w : waiters) {
    w->result = ConflictError("quota " + ns + "/" + name + ": too many conflicts");
  }
}

StatusOr<corev1::ResourceQuota> QuotaCharger::WriteRecount(const corev1::ResourceQuota& quota) {
  StatusOr<corev1::ResourceQuota> written = client::UpdateStatus(api_, quota, field_manager_);
  Remember(quota.metadata.namespace_, quota.metadata.name,
           written.ok() ? std::optional(*written) : std::nullopt);
  return written;
}

void QuotaCharger::GiveBack(const std::string& ns, const std::string& name,
                            const allocator::ResourceList& amount) {
  for (int attempt = 0; attempt <= conflict_retries_; ++attempt) {
    StatusOr<corev1::ResourceQuota> quota = Read(ns, name);
    if (!quota.ok()) return;
    std::optional<allocator::QuotaBudget> budget = allocator::BudgetOf(*quota);
    if (!budget.has_value()) return;
    for (const auto& [key, q] : amount) {
      if (!budget->hard.contains(key)) continue;
      auto it = quota->status.used.find(key);
      if (it == quota->status.used.end()) continue;
      it->second = it->second.Sub(q);
      if (it->second.Sign() < 0) it->second = api::Quantity::FromInt64(0);
    }
    StatusOr<corev1::ResourceQuota> written = client::UpdateStatus(api_, *quota, field_manager_);
    Remember(ns, name, written.ok() ? std::optional(*written) : std::nullopt);
    if (written.ok()) return;
    if (written.status().code() != StatusCode::kConflict) {
      // The next recompute corrects it.
      log::Warning("scheduler: giving back quota {}/{}: {}", ns, name, written.status().ToString());
      return;
    }
  }
}

allocator::ResourceList QuotaCharger::RecomputedUsed(const corev1::ResourceQuota& quota,
                                                     const allocator::ResourceList& usage) {
  allocator::ResourceList used(quota.status.used.begin(), quota.status.used.end());
  for (const auto& [key, hard] : quota.spec.hard) {
    if (!api::quota::IsAllocationChargedKey(key)) continue;
    auto it = usage.find(key);
    if (it == usage.end()) {
      used[key] = api::Quantity::FromInt64(0);
    } else {
      used[key] = it->second;
    }
  }
  return used;
}

}  // namespace draplane::scheduler
