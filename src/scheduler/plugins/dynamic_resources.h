// The DynamicResources plugin: ResourceClaims, with upstream's semantics
// (pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go, about 1.36, and
// extendeddynamicresources.go for KEP-5004), on draplane's allocator.
//
//   PreEnqueue  every claim exists and is not being deleted; a claim generated from a template
//               is found through pod.status.resourceClaimStatuses and must be owned by the pod.
//   PreFilter   loads the claims; an allocated claim the pod cannot reserve (256 consumers) or
//               a claim another pod is allocating (in flight) or a missing class rejects the
//               pod. Extended resources mapped to a DeviceClass get the pod's special claim.
//               Prepares one allocator per claim set and the free-device bounds.
//   Filter      allocated claims must be available on the node; the free-device index rejects
//               nodes that cannot have enough devices; then the allocator. Results are kept
//               per node. On a node without a device plugin for a mapped extended resource the
//               special claim asks for it (requests `container-<i>-request-<j>`).
//   PostFilter  deallocates one allocated claim that is unavailable everywhere and reserved for
//               nobody else, or deletes a stale special claim.
//   Score       8 − i for every firstAvailable request whose subrequest i was chosen (already
//               allocated claims count from their status; upstream's fix for mixed pods);
//               normalized to 0..100 by the maximum.
//   Reserve     marks the node's allocations in flight in the device ledger.
//   Unreserve   drops them; removes the pod from reservedFor of claims already written;
//               deallocates claims whose allocation lost a race; deletes a created special
//               claim. API work runs asynchronously.
//   PreBind     per claim not yet reserved for the pod, with conflict retries: create the special
//               claim; add the finalizer resource.kubernetes.io/delete-protection (Update); set
//               status.allocation (with allocationTimestamp when binding conditions are on) and
//               append the pod to status.reservedFor (UpdateStatus); then wait until this
//               scheduler observes its own write and learns whether another scheduler allocated
//               one of the devices first (device_ledger.h) — a lost race fails the binding.
//               Records pod.status.extendedResourceClaimStatus. Then:
//                 - binding conditions (KEP-5007, upstream PreBind's wait): when an allocated
//                   device of the pod's claims has bindingConditions, nominate the pod to the
//                   node (status.nominatedNodeName, KEP-5278, so that the device's attach
//                   controller knows where it goes) and answer Wait. CheckPreBindWait, on the
//                   loop thread and on every relevant event, reads the claims from the cache:
//                   Success once every such device has all its bindingConditions True in
//                   status.devices[].conditions, an error as soon as one of its
//                   bindingFailureConditions is True, the device is tainted or gone, or the wait
//                   outlived `binding_timeout` (counted from the write, and from
//                   allocationTimestamp for an allocation written by an earlier attempt);
//                 - health at bind time: every allocated device must still be published and
//                   carry no untolerated NoSchedule / NoExecute taint (re-read from the slice
//                   cache just before binding); otherwise the binding fails.
//               A binding failed by a device releases the allocations this attempt wrote
//               (Unreserve), so that the retry allocates anew.
//   Filter      (binding conditions) an allocated claim whose binding failed or timed out is
//               unavailable, so PostFilter deallocates it (upstream Filter, KEP-5007).
//
// Thread-safety: PreBind runs on binder threads and touches only the cycle state, the
// thread-safe ApiClient and AllocationConfirmations; everything else runs on the loop thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "allocator/allocator.h"
#include "allocator/contested.h"
#include "allocator/explanation.h"
#include "allocator/features.h"
#include "allocator/hold.h"
#include "api/pod_claims.h"
#include "client/api_client.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/random.h"
#include "common/string_hash.h"
#include "scheduler/cluster_state.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/quota_charger.h"

namespace draplane::scheduler {

// Set on a claim, in the same write that adds the finalizer, when the scheduler allocates it in a
// namespace whose Allocation-mode quotas it must charge: "<pod uid> <unix seconds> <writer>", the
// writer a token of the scheduler instance (which replica's allocation it is). Until that
// Pod is bound, nobody else may use the allocation (its charge may still be refused; quota
// replicas, docs/design/holdings.md).
inline constexpr std::string_view kQuotaChargeAnnotation = "draplane.dev/quota-charge";

// Hands observations of this scheduler's own claim writes from the loop thread to the binder
// threads waiting for them.
class AllocationConfirmations {
 public:
  // kUnknown: the claim was observed only at a later version (the write was superseded before
  // it was seen), so its verdict is not known here.
  enum class Outcome { kWon, kLost, kTimedOut, kUnknown };
  // Loop thread: the ledger observed an allocation of `uid` at `resource_version`; `lost` when
  // that version's allocation overlapped an allocation observed earlier. Each version keeps its
  // own verdict (an earlier attempt's loss says nothing about a later write).
  void Observe(const std::string& uid, int64_t resource_version, bool lost);
  // Binder thread: waits until `uid` was observed at `resource_version` or later (a real-time
  // wait of at most `timeout`) and returns the verdict on exactly that version.
  Outcome Await(const std::string& uid, int64_t resource_version, Duration timeout);
  // Drops what was observed of `uid` (after Await, or when the claim is gone).
  void Forget(const std::string& uid);

 private:
  // One per Await in progress: an observation wakes only the binders waiting for that claim
  // (a shared condition variable woke every waiting binder for every claim observed). Shared,
  // so that Observe can wake it after unlocking while the binder may already be leaving.
  struct Waiter {
    CondVar cv;
  };

  Mutex mu_;
  // uid -> version -> lost; only looked up by uid.
  std::unordered_map<std::string, std::map<int64_t, bool>, StringHash, std::equal_to<>> verdicts_
      DRAPLANE_GUARDED_BY(mu_);
  // uid -> waiting binders
  std::multimap<std::string, std::shared_ptr<Waiter>> waiters_ DRAPLANE_GUARDED_BY(mu_);
};

struct DynamicResourcesOptions {
  allocator::Features features;
  // DRAExtendedResource.
  bool extended_resources = true;
  // Wait for the scheduler's own allocation writes to be observed (needed when several
  // schedulers may allocate the same devices; scheduler.md "Replicas").
  bool confirm_allocations = true;
  Duration confirm_timeout = std::chrono::seconds(30);
  // Nodes per failed attempt whose allocation is explained in detail.
  int explain_budget = 64;
  // Keep each explained node's allocator::Explanation for DeviceExplanation (`draplane explain`);
  // the scheduler needs only their summaries (the FailedScheduling message), and copying them
  // cost a large share of every unschedulable attempt (docs/design/sim.md, "Performance").
  bool keep_explanations = false;
  // allocator::Options::max_search_steps for every Filter call; 0: no limit.
  int64_t allocation_step_limit = allocator::kDefaultSearchStepLimit;
  // The CEL cost units one scheduling attempt may spend evaluating selectors, over all its Filter
  // calls (allocator::EvaluationBudget); a spent budget fails the attempt with an error. 0: none.
  uint64_t evaluation_budget = allocator::kDefaultEvaluationBudget;
  // Retries of a claim write after a Conflict (client-go retry.DefaultRetry: 5 steps).
  int conflict_retries = 5;
  // How long a binding waits for devices' bindingConditions (upstream
  // DynamicResourcesArgs.bindingTimeout, DynamicResourcesBindingTimeoutDefault: 600 s). Binding
  // conditions count only with features.device_binding_and_status.
  Duration binding_timeout = std::chrono::seconds(600);
  std::string field_manager = "draplane-scheduler";
};

struct DynamicResourcesDeps {
  ClusterState* cluster = nullptr;
  client::ApiClient* api = nullptr;
  AllocationConfirmations* confirmations = nullptr;
  // Charges Allocation-mode quotas in PreBind; null: quotas are enforced inside the search only.
  QuotaCharger* quotas = nullptr;
  // Called (from any thread) with the Pod's uid when its charge is decided: PreBind answers
  // WaitForWrite while a charge is in flight, and the scheduler asks CheckPreBindWait again.
  // Required with `quotas`.
  std::function<void(const std::string& pod_uid)> charge_decided;
  // Runs API work off the loop thread (Unreserve, PostFilter).
  std::function<void(std::function<void()>)> run_async;
  const Clock* clock = nullptr;
  // Share IDs of multi-allocatable devices; owned by the caller, used on the loop thread.
  Random* random = nullptr;
  // The published slices of one pool (driver, pool), callable from any thread (the scheduler's
  // slice informer): PreBind re-checks the devices it binds against them. Null: no bind-time
  // device check (`draplane explain`, which never binds).
  std::function<std::vector<std::shared_ptr<const api::resourcev1::ResourceSlice>>(
      std::string_view driver, std::string_view pool)>
      pool_slices;
  // The starvation holds in force (allocator/hold.h), read on the loop thread at each PreFilter;
  // null: none. A hold that applies to the attempt is a policy constraint of every search.
  std::function<std::vector<allocator::DeviceHold>()> holds;
  // The fair-share placement preference (allocator/contested.h), read on the loop thread at each
  // PreFilter: per class the Pod should leave to under-served tenants, those tenants. Null: none.
  std::function<allocator::ContestedClasses(const api::corev1::Pod& pod)> contested;
};

std::shared_ptr<Plugin> NewDynamicResourcesPlugin(DynamicResourcesDeps deps,
                                                  DynamicResourcesOptions options);

// The allocator's explanation for `node` recorded during an explaining Filter pass of this
// attempt, or null.
const allocator::Explanation* DeviceExplanation(const CycleState& state, std::string_view node);

// What DynamicResources decided for a Pod on its node (made in Reserve when the Pod's binding
// allocates a claim), for the Pod's decision record (AllocationDecision) and its QuotaFallback
// Event.
struct DeviceDecision {
  // One reason a tier was not taken, over `devices` candidate devices of the nodes explained (the
  // chosen one, and those whose search the quota refused something in).
  struct Reason {
    std::string reason;   // allocator::CandidateStatusName, or a policy's code ("quota")
    std::string message;  // e.g. "already allocated", or the quota's refusal
    int32_t devices = 0;
    std::vector<std::string> nodes{};  // the explained nodes it applied on, chosen node first
    int32_t node_count = 0;  // nodes it applied on (the quota's: every node it refused in)
  };
  struct Tier {
    std::string subrequest;
    std::vector<Reason> reasons{};  // at most kMaxReasons
  };
  struct Request {
    std::string name;
    std::string subrequest;  // the chosen one; "" for a request without subrequests
    std::string device_class;
    std::vector<api::resourcev1::DeviceRequestAllocationResult> devices;
    std::vector<Tier> tiers_not_taken;  // the subrequests before the chosen one
  };
  struct Claim {
    std::string name;  // as in the API (a special claim's once PreBind created it)
    std::string uid;
    std::vector<Request> requests;
    allocator::ResourceList charges;  // allocator::ChargeAllocation, additive part
  };
  static constexpr size_t kMaxReasons = 8;

  std::string node;
  std::vector<Claim> claims;
  // The Allocation-mode quotas the search obeyed, at the versions it read.
  std::vector<allocator::QuotaBudget> quotas;
  allocator::ResourceList increment;  // what the binding charges them
  // Set when a quota made a request take a later subrequest than it would have without it:
  // the message of the Pod's QuotaFallback Event, and (request, from, to) per such request.
  std::string quota_fallback;
  // Set when the fair-share placement preference (allocator/contested.h) refused this attempt a
  // tier that a request then did not take: the message of the Pod's FairShareFallback Event.
  std::string fair_share_fallback;
  struct Fallback {
    std::string request;
    int from = 0;
    int to = 0;
  };
  std::vector<Fallback> fallbacks;
};

// The decision of the attempt in `state`, or null when its binding allocates nothing.
const DeviceDecision* DecisionOf(const CycleState& state);

// Helpers shared with the controllers' view of the same rules.
// The claim of a pod claim entry (api/pod_claims.h).
using api::ClaimNameForPod;
using api::PodClaimName;

// KEP-5007: whether an allocation has devices that must meet binding conditions.
bool HasBindingConditions(const api::resourcev1::AllocationResult& allocation);
// KEP-5007 readiness of a claim (upstream isClaimReadyForBinding): kReady when every allocated
// device with bindingConditions has all of them True in status.devices[].conditions (so also
// when none has any), kFailed as soon as one of a device's bindingFailureConditions is True,
// else kWaiting. `message` names the claim, the device (<driver>/<pool>/<device>) and the
// condition that failed or is still missing.
struct BindingReadiness {
  enum class Kind { kReady, kWaiting, kFailed };
  Kind kind = Kind::kReady;
  std::string message;
};
BindingReadiness ClaimBindingReadiness(const api::resourcev1::ResourceClaim& claim);
// The first device of `allocation` that is no longer published in its pool (only the slices of
// the pool's newest generation count) or has a NoSchedule / NoExecute taint its allocation
// result does not tolerate, in words ("device <driver>/<pool>/<device> ..."); "" when every
// device is fine. `slices` returns a pool's slices (DynamicResourcesDeps::pool_slices).
std::string AllocatedDeviceProblem(
    const api::resourcev1::AllocationResult& allocation,
    const std::function<std::vector<std::shared_ptr<const api::resourcev1::ResourceSlice>>(
        std::string_view driver, std::string_view pool)>& slices);

}  // namespace draplane::scheduler
