// Writing Allocation-mode quota usage (docs/design/holdings.md, "Charging status.used"): the
// scheduler's half of the rule that two replicas never spend the last unit.
//
// Charge: after PreBind has written a Pod's claim allocations and learned that they won their
// devices, it hands the Pod's increment (allocator::Holdings::Increment, committed scope) to
// ChargeAsync and parks the binding until the charge is decided (no binder thread waits on the
// write). Charges of one namespace form a pipeline, as upstream's quota admission evaluator
// batches admission requests (plugin/pkg/admission/resourcequota/controller.go, checkQuotas):
// one batch per namespace is written at a time, on a thread of the executor, and everything
// queued while it is in flight is the next batch. Per quota, a batch takes the quota as this
// charger last wrote it (or reads it), accepts the increments that still fit in arrival order
// and writes `status.used` once with that resourceVersion as precondition; a Conflict means
// another writer (a replica, the recompute) got there first, so it reads again and redoes the
// decisions. A refusal is only ever decided on a fresh read. An increment a quota refuses is
// given back to the quotas of the batch that had accepted it.
//
// Recompute: `used` of the limited device resources set to what the claims really hold. The
// scheduler runs it when it sees an allocation go away (the give-back) and at start; the claims
// must come from a read made after the quota was read, and the write carries the quota's
// resourceVersion as precondition, so an allocation charged before the quota was read is always
// among the claims (docs/design/holdings.md explains why the order matters). A recount of a
// namespace runs while its pipeline is held (Hold): no batch of this charger is being written, so
// each of its charges has either landed or is still expected (Expect), and the recount leaves the
// expected ones' claims out (ExpectedClaims): counting an allocation whose charge lands after the
// recount's write would charge it twice. Only the allocation this charge stands for is left out:
// the recount compares the claim's charge marker with the one its writer recorded (AddClaim), so
// a replica's allocation of the same claim, written instead of ours, is counted.
//
// Thread-safety: ChargeAsync and Charge may be called from any number of threads at once.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "allocator/charges.h"
#include "api/gen/core_v1_types.h"
#include "client/api_client.h"
#include "common/mutex.h"
#include "common/status.h"

namespace draplane::scheduler {

class QuotaCharger {
 public:
  // Runs a namespace's batches off the caller's thread (the scheduler's binder pool); null:
  // on the thread that queued the first charge of an idle namespace.
  using Executor = std::function<void(std::function<void()>)>;

  QuotaCharger(client::ApiClient& api, std::string field_manager, int conflict_retries = 5,
               Executor executor = nullptr);

  // One Pod's charge, open from before its first allocation is written until the charge is
  // decided or abandoned. Destroying it abandons the charge: one still queued is never written
  // (and `done` is not called); one being written is decided as usual.
  class Expected {
   public:
    ~Expected();
    Expected(const Expected&) = delete;
    Expected& operator=(const Expected&) = delete;
    // The claim's allocation is about to be written, with `marker` as its charge marker
    // (dynamic_resources.h, kQuotaChargeAnnotation), and charged by this charge.
    void AddClaim(const std::string& claim_uid, const std::string& marker);

   private:
    friend class QuotaCharger;
    Expected(QuotaCharger& charger, uint64_t id) : charger_(charger), id_(id) {}
    QuotaCharger& charger_;
    const uint64_t id_;
  };
  std::unique_ptr<Expected> Expect(const std::string& ns);
  // The claims of the charges of `ns` that are open and not yet decided: claim uid -> the charge
  // marker its allocation is written with.
  std::map<std::string, std::string> ExpectedClaims(const std::string& ns);

  // Adds `increment` to the status.used of the Allocation-mode quotas `quotas` of `ns` that
  // limit one of its resources, all of them or none, and then calls `done` (once, on the
  // executor's thread or the caller's, never under a lock of this class) with: OK when charged;
  // Conflict whose message is the quota's refusal ("quota team-a/devices ... 1/1") when one
  // would go over its hard limit; another error when the API failed (then nothing stays charged
  // either, as far as the API allowed).
  void ChargeAsync(const std::string& ns, const std::vector<std::string>& quotas,
                   const allocator::ResourceList& increment, std::function<void(Status)> done);
  // ChargeAsync of the charge `expected` stands for: decided, it is no longer expected.
  void ChargeAsync(Expected& expected, const std::vector<std::string>& quotas,
                   const allocator::ResourceList& increment, std::function<void(Status)> done);
  // ChargeAsync, waiting for the answer.
  Status Charge(const std::string& ns, const std::vector<std::string>& quotas,
                const allocator::ResourceList& increment);

  // Holds the pipeline of `ns`: runs `work` (on the executor's thread, or the caller's) once no
  // batch of `ns` is being written, and writes none until `work`, or whoever it hands its
  // argument to, calls Release(ns) exactly once. Holds of a namespace queue with its charges.
  void Hold(const std::string& ns, std::function<void()> work);
  void Release(const std::string& ns);
  // A recount's write of `quota`'s status (conditional on its resourceVersion); the charger's
  // copy follows it, so the next batch does not conflict with it.
  StatusOr<api::corev1::ResourceQuota> WriteRecount(const api::corev1::ResourceQuota& quota);

  // The usage a quota should show: `quota`'s status.used with every limited device resource
  // replaced by `usage` (what its namespace holds). Pure.
  static allocator::ResourceList RecomputedUsed(const api::corev1::ResourceQuota& quota,
                                                const allocator::ResourceList& usage);

 private:
  struct Waiter {
    uint64_t expected = 0;       // its Expected, or 0
    std::function<void()> hold;  // set: not a charge but a Hold
    std::vector<std::string> quotas;
    allocator::ResourceList increment;
    std::function<void(Status)> done;
    Status result;
    std::vector<std::string> charged;  // quotas holding its increment
  };
  struct Open {
    std::string ns;
    std::map<std::string, std::string> claims;  // uid -> charge marker
    std::shared_ptr<Waiter> queued;  // its charge, while queued (not yet taken into a batch)
    bool writing = false;            // its charge is in the batch being written
  };
  void Queue(const std::string& ns, std::shared_ptr<Waiter> waiter);
  void Abandon(uint64_t id);
  // Writes the namespace's batches until nothing is queued for it or a Hold is reached.
  void Drain(const std::string& ns);
  void RunBatch(const std::string& ns, const std::vector<std::shared_ptr<Waiter>>& batch);
  // Applies `accepted` increments to quota `name` (read, check, write, retry on Conflict);
  // refuses (sets result) those that do not fit. API errors refuse every waiter of the batch.
  void ChargeQuota(const std::string& ns, const std::string& name,
                   const std::vector<std::shared_ptr<Waiter>>& waiters);
  // Subtracts `amount` from quota `name` (read, write, retry on Conflict).
  void GiveBack(const std::string& ns, const std::string& name,
                const allocator::ResourceList& amount);
  // The quota as this charger last read or wrote it (`known_`), and keeping it (nullopt: forget).
  std::optional<api::corev1::ResourceQuota> Known(const std::string& ns, const std::string& name);
  void Remember(const std::string& ns, const std::string& name,
                std::optional<api::corev1::ResourceQuota> quota);
  // Reads the quota from the API and remembers it.
  StatusOr<api::corev1::ResourceQuota> Read(const std::string& ns, const std::string& name);

  client::ApiClient& api_;
  const std::string field_manager_;
  const int conflict_retries_;
  const Executor executor_;

  Mutex mu_;
  std::map<std::string, std::deque<std::shared_ptr<Waiter>>> queued_ DRAPLANE_GUARDED_BY(mu_);
  // Namespaces whose batches are being written (by one Drain each).
  std::set<std::string> busy_ DRAPLANE_GUARDED_BY(mu_);
  // "namespace/name" -> the quota as last read or written here (only ever used for a write
  // conditioned on its resourceVersion).
  std::map<std::string, api::corev1::ResourceQuota> known_ DRAPLANE_GUARDED_BY(mu_);
  // The open Expected charges by id.
  std::map<uint64_t, Open> open_ DRAPLANE_GUARDED_BY(mu_);
  uint64_t next_expected_ DRAPLANE_GUARDED_BY(mu_) = 1;
};

}  // namespace draplane::scheduler
