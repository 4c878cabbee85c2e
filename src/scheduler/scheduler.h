// The draplane scheduler: an ordinary Kubernetes API client that binds pending Pods to nodes,
// allocating their ResourceClaims on the way (docs/design/scheduler.md).
//
// Structure:
//   informers (pods, nodes, resourceclaims, deviceclasses, resourceslices) ──events──▶ inbox
//   loop thread: apply events to the ClusterState and the queue, pop a pod, run the scheduling
//                cycle (framework.h), reserve, assume the pod on the node, hand the binding cycle
//                to a binder thread; failures become FailedScheduling Events and a
//                PodScheduled=False condition with the explanation
//   binder threads: PreBind (claim writes) and Bind; the result goes back through the inbox.
//                A PreBind that must wait (KEP-5007 binding conditions) hands the binding back to
//                the loop, which re-checks it on the events that may concern it and when it
//                times out, and then gives Bind to a binder thread: no thread waits for devices
//
// Only the loop thread touches the ClusterState, the queue and the plugins' loop-side state;
// the simulator and tests may instead drive the loop step by step (`synchronous`), which runs
// the binding cycle and all API work on the calling thread.
//
// Thread-safety: Start/Stop from the owning thread; stats() from any thread.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "allocator/allocator.h"
#include "allocator/features.h"
#include "client/api_client.h"
#include "client/events.h"
#include "client/informer.h"
#include "client/shared_informers.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/random.h"
#include "scheduler/cluster_state.h"
#include "scheduler/decision_recorder.h"
#include "scheduler/fair_share.h"
#include "scheduler/framework/framework.h"
#include "scheduler/metrics.h"
#include "scheduler/plugins/dynamic_resources.h"
#include "scheduler/queue.h"
#include "scheduler/quota_charger.h"
#include "scheduler/requested_classes.h"
#include "scheduler/starvation_holds.h"

namespace draplane::scheduler {

struct SchedulerOptions {
  // Pods whose spec.schedulerName is one of these (an empty name counts as
  // "default-scheduler").
  std::vector<std::string> scheduler_names = {"default-scheduler", "draplane"};
  allocator::Features features = allocator::AllFeatures();
  bool extended_resources = true;
  int percentage_of_nodes_to_score = 0;
  int binder_threads = 16;
  QueueOptions queue{};
  bool confirm_allocations = true;
  // Record FailedScheduling / Scheduled Events and the PodScheduled condition.
  bool record_events = true;
  // Events: reportingComponent, and reportingInstance (`component` when `identity` is empty).
  std::string component = "default-scheduler";
  std::string identity{};
  // Share IDs: 0 draws a seed from the secure source.
  uint64_t random_seed = 0;
  // Run binding and API work on the loop thread (tests, simulator).
  bool synchronous = false;
  // Nodes per failed attempt whose device allocation is explained in detail.
  int explain_budget = 64;
  // Steps of one node's device search after which the attempt fails with an error and is retried
  // (allocator::Options::max_search_steps; 0: no limit). Upstream bounds Filter by 10 s instead.
  int64_t allocation_step_limit = allocator::kDefaultSearchStepLimit;
  // CEL cost units one attempt may spend evaluating selectors, over all nodes
  // (allocator::EvaluationBudget; 0: no limit). A spent budget fails the attempt with an error:
  // the Pod backs off and its namespace's cost account deprioritises its tenant's Pods (queue.h).
  uint64_t evaluation_budget = allocator::kDefaultEvaluationBudget;
  // How long a binding waits for devices' bindingConditions before it fails and the pod is
  // retried (upstream DynamicResourcesArgs.bindingTimeout, default 600 s; at least 1 s).
  Duration binding_timeout = std::chrono::seconds(600);
  // Informers shared with other components of the process (`draplane serve` shares them with the
  // embedded controller-manager); null: the scheduler runs its own. Their owner stops them.
  client::SharedInformers* informers = nullptr;
  // Write an AllocationDecision per committed allocation (decision_recorder.h).
  bool decision_records = true;
  // How often the holdings ledger is checked against a recompute from the claims, and every
  // Allocation-mode quota's status.used against the allocations (docs/design/holdings.md).
  Duration holdings_check_interval = std::chrono::seconds(60);
  // Namespaces reported by name in tenant-labelled metrics; the rest are "other"
  // (metrics::TenantLabels).
  std::vector<std::string> metrics_tenants{};
  // How often the scheduler loop recomputes the device-state gauges (device_states.h); 0 turns
  // them off. Synchronous mode (RunUntilIdle: tests, the simulator) never computes them.
  Duration device_states_interval = std::chrono::seconds(30);
  // How often the shares of the DeviceSharingPolicy in force are written to its status and the
  // share metrics (and at once when a policy's generation is not yet observed); 0 turns both
  // off. Synchronous mode never writes them.
  Duration sharing_status_interval = std::chrono::seconds(10);
};

class Scheduler {
 public:
  // The ApiClient and clock must outlive the scheduler.
  Scheduler(client::ApiClient& api, const Clock& clock, SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts informers (or joins the shared ones), waits for their first lists, then starts the
  // loop and binder threads.
  // Returns Cancelled when Stop() was called meanwhile.
  Status Start();
  // Stops the loop, binders and its own informers (or leaves the shared ones); binding cycles in
  // progress finish first.
  void Stop();

  // Synchronous mode (options.synchronous, no threads started by Start): applies every event
  // received so far and runs scheduling attempts until no pod is ready; returns the number of
  // attempts made. Like the loop, it first moves pods that waited too long in the unschedulable
  // pool when the periodic flush is due (every 30 s on the clock).
  int RunUntilIdle();
  // Synchronous mode: the clock's monotonic reading at which RunUntilIdle next has timed work (a
  // backoff expires, or the periodic flush while pods wait unschedulable); nullopt when nothing
  // but an event can make progress.
  std::optional<Duration> NextWakeup() const;

  struct Stats {
    int64_t scheduled = 0;      // pods bound
    int64_t unschedulable = 0;  // failed attempts
    int64_t errors = 0;         // attempts or bindings that failed with an error
    int64_t lost_races = 0;     // binding cycles lost to a concurrent writer
    size_t active = 0;
    size_t backoff = 0;
    size_t unschedulable_pods = 0;
    size_t binding = 0;
    size_t waiting = 0;  // of `binding`: waiting for binding conditions or a quota charge
    // Fair share (fair-share.md §4): allocations that overtook a starving Pod whose hold was
    // incomplete, and devices held for starving Pods times seconds.
    int64_t overtakes = 0;
    double held_device_seconds = 0;
  };
  Stats stats() const;

 private:
  struct InboxItem;
  struct Binding;

  void Post(InboxItem item);
  void Loop();
  // Applies queued events; returns the number handled.
  size_t Drain();
  void Apply(InboxItem& item);
  void ScheduleOne(QueuedPod queued);
  void RunBinding(std::shared_ptr<Binding> binding);
  // Binder thread: hands a finished binding cycle back to the loop.
  void ReportBinding(std::shared_ptr<Binding> binding, PluginStatus status);
  void FinishBinding(std::shared_ptr<Binding> binding, PluginStatus status);
  // Binding conditions (loop thread): a binding whose PreBind answered Wait, its re-check (on
  // events, and with `timed_out` at its deadline), the bindings whose deadline passed, and the
  // end of a wait.
  void StartWaiting(std::shared_ptr<Binding> binding, const PluginStatus& status);
  void CheckWaiting(const std::string& uid, bool timed_out);
  void CheckWaitingForClaim(const api::resourcev1::ResourceClaim& claim);
  void CheckAllWaiting();
  void ExpireWaits();
  void EndWaiting(const std::string& uid, std::string_view result);
  void AbortWaiting(const std::string& uid, const std::string& why);
  // The periodic flush of the unschedulable pool, when due (loop thread).
  void MaybeFlushUnschedulable();
  void MoveOnEvent(const ClusterEvent& event);
  // MoveOnEvent for an event that can only concern the pods in `uids`.
  void MoveOnEventFor(const ClusterEvent& event, std::vector<std::string> uids);
  // pending_ with its claim index kept in step.
  void SetPending(const std::string& uid, std::shared_ptr<const api::corev1::Pod> pod);
  bool ErasePending(const std::string& uid);
  void ReleaseConflictingAllocation(const api::resourcev1::ResourceClaim& claim);
  // FailedScheduling Event and PodScheduled=False; `clear_nomination` also clears the
  // nominatedNodeName a waiting binding set.
  void RecordFailure(const api::corev1::Pod& pod, const std::string& reason,
                     const std::string& message, bool clear_nomination = false);
  // The decision record and QuotaFallback Event of a Pod whose binding allocated claims.
  void RecordDecision(const Binding& binding);
  // Recomputes the status.used of the Allocation-mode quotas of `ns` from the claims (the
  // give-back after a deallocation; with `correction`, a check that counts differences).
  void ScheduleQuotaRecount(const std::string& ns, bool correction);
  void FinishQuotaRecount(InboxItem& item);
  // The periodic holdings and quota check.
  void CheckHoldings();
  // Runs `work` on a binder thread; `first`: before the work already queued (a quota charge
  // batch, which other bindings wait for).
  void RunAsync(std::function<void()> work, bool first = false);
  void BinderLoop();
  bool Ours(const api::corev1::Pod& pod) const;
  // The device classes the pod's claims (those the cache has) request.
  PodClasses RequestedClasses(const api::corev1::Pod& pod) const;
  // The fair-share domains of a pending pod's RequestedClasses (a policy is in force), cached in
  // `queued_domains_`.
  const std::vector<int>& QueuedDomains(const api::corev1::Pod& pod) const;
  // The pods a claim concerns: its controlling owner and the pending pods naming it.
  std::vector<std::string> ClaimUsers(const api::resourcev1::ResourceClaim& claim) const;
  void UpdateGauges();
  // A DeviceSharingPolicy event: the one named `default` (re)configures the fair-share order.
  void OnSharingPolicy(const api::draplanev1alpha1::DeviceSharingPolicy* old_policy,
                       const api::draplanev1alpha1::DeviceSharingPolicy* policy);
  // Puts the fair-share order over a model of `config` in force (nullopt: upstream's order). The
  // new model continues the model it replaces, or, at the first, `status`'s history.
  void ApplySharingPolicy(std::optional<FairShareConfig> config,
                          const api::draplanev1alpha1::DeviceSharingPolicyStatus* status);
  // Writes every sharing policy's status (the shares for the one in force, Ready=False with the
  // reason for the others) where it changed, and the share metrics.
  void ReportSharing();
  // Starvation holds (starvation_holds.h): targets are kept while a policy is in force (for the
  // overtake count), devices are held only while its `aging.holds` is on.
  bool HoldsEnforced() const;
  // What a Pod's unallocated claims need a target node to have.
  std::vector<HoldNeed> HoldNeeds(const api::corev1::Pod& pod) const;
  // Whether the namespace's Allocation-mode quotas have room for `needs` (per class device
  // counts) besides what the namespace holds: a Pod they have none for gets no hold, which would
  // keep devices idle that it could not take.
  bool QuotaHasRoomFor(const std::string& namespace_, const std::vector<HoldNeed>& needs) const;
  // After a failed attempt, or when a waiting Pod crosses the starvation threshold: a target for
  // a starving Pod that has none (not yet starving, or without quota room: no target).
  void MaybeStartHold(const api::corev1::Pod& pod, Duration enqueued_at);
  // Waiting Pods whose starvation threshold passed get a target.
  void DetectStarvation();
  // Before an attempt: holds take what freed up on their nodes; the held-device seconds.
  void GrowHolds();
  void ExpireHolds();
  // Ends the Pod's hold, if any, for `reason` (Scheduled, Deleted, MaxHold, PolicyChanged);
  // `pod` null: the Pod is gone (no Event, no annotation to clear).
  void ReleaseHold(const std::string& uid, std::string_view reason, const api::corev1::Pod* pod);
  // Writes the hold's annotation on its Pod (null: removes it).
  void PersistHold(const api::corev1::Pod& pod, const StarvationHold* hold);
  // A Pod whose annotation says it had a hold when the scheduler (re)started.
  void RestoreHold(const api::corev1::Pod& pod);
  // With a sharing policy in force, what a failed attempt's message adds: "; queued: tenant
  // team-a share 1.18 of fair 0.60, position 12 of 40 in band 1000" (position among the Pods
  // waiting in the Pod's band by the fair-share order's keys now; O(pending Pods)). Empty
  // without a policy.
  std::string QueuePosition(const api::corev1::Pod& pod, Duration enqueued_at) const;
  // Counts the starving Pods a reserved allocation overtook.
  void CountOvertakes(const Binding& binding);
  void UpdateShareMetrics(const std::vector<DomainShares>& shares);
  // The device-state gauges and the pending-Pod gauge by tenant and reason.
  void UpdateDeviceStates();
  void UpdatePendingReasons();
  // Counts `uid` under the (tenant, reason) it waits for now, or under none once it is no longer
  // pending; called on every change of what the reason is made of.
  void RecountPending(const std::string& uid);
  // Counts every request of the unallocated claims of `pod` in draplane_allocations_total with
  // `result` (an attempt that failed).
  void CountFailedRequests(const api::corev1::Pod& pod, std::string_view result);

  client::ApiClient& api_;
  const Clock& clock_;
  const SchedulerOptions options_;
  // The metrics' profile label: the first scheduler name.
  const std::string profile_;
  SchedulerMetrics metrics_;
  std::unique_ptr<Random> random_;
  ClusterState cluster_;
  AllocationConfirmations confirmations_;
  QuotaCharger quota_charger_;
  std::unique_ptr<DecisionRecorder> decisions_;
  Framework framework_;
  // Weighted fair share within priority bands (fair_share.h, queue_order.h; issue 22): the
  // scheduler follows the DeviceSharingPolicy named `default` (draplane.dev/v1alpha1): while it
  // exists the active queue is ordered by FairShareOrder over this model of the ledger, else by
  // PrioritySortOrder (upstream's order). An edit rebuilds the model and keeps the tenants'
  // decayed history (FairShareModel::TakeHistory). Declared after cluster_ (it observes the
  // ledger) and before queue_ (whose order reads it).
  std::unique_ptr<FairShareModel> fair_share_;
  // The queue's order over `fair_share_` (owned by the queue), or null.
  FairShareOrder* fair_order_ = nullptr;
  // Per pending pod (uid), its domains under `fair_share_` (QueuedDomains): the queue position
  // and the status walk every waiting pod. Dropped when the pod changes or goes, when one of its
  // claims is created or deleted (a claim's spec is immutable), and when the policy changes.
  mutable std::map<std::string, std::vector<int>, std::less<>> queued_domains_;
  std::unique_ptr<StarvationHolds> holds_;
  // When waiting Pods cross the starvation threshold: (due, pod uid, first enqueue), in order.
  std::set<std::tuple<Duration, std::string, Duration>> starving_due_;
  std::unique_ptr<SchedulingQueue> queue_;
  std::unique_ptr<client::EventRecorder> events_;
  size_t next_start_ = 0;

  // Pending pods ours to schedule, and pods whose binding cycle runs (loop thread).
  std::unordered_map<std::string, std::shared_ptr<const api::corev1::Pod>> pending_;
  // "namespace/claim" -> uids of pending pods that use the claim (by resourceClaimName or the
  // generated name in their status): routes a claim event to its pods only.
  std::unordered_map<std::string, std::set<std::string>> claim_users_;
  std::unordered_map<std::string, Duration> first_seen_;        // pod uid -> first enqueue
  std::unordered_map<std::string, Duration> claim_first_seen_;  // claim uid -> first event
  std::unordered_map<std::string, std::shared_ptr<Binding>> binding_;
  // Bindings waiting for binding conditions (pod uid ->), their deadlines (monotonic, in order),
  // and "namespace/claim" -> the waiting pods that use the claim.
  std::map<std::string, std::shared_ptr<Binding>> waiting_;
  std::multimap<Duration, std::string> wait_deadlines_;
  std::unordered_map<std::string, std::set<std::string>> waiting_claims_;
  // Nodes carrying the device-prepare-failures isolation taint (api/labels/node_isolation.h).
  std::map<std::string, std::shared_ptr<const api::corev1::Node>> isolated_nodes_;
  Duration last_flush_{0};
  Duration last_holdings_check_{0};
  Duration last_device_states_{0};
  Duration last_sharing_status_{0};
  // A policy's generation is not observed in its status yet: report at the next loop turn.
  bool sharing_status_due_ = false;
  // Why the policy named `default` is not in force (it failed to compile); empty otherwise.
  std::string sharing_error_;
  // Per policy name, the Ready condition and the status body last written.
  std::map<std::string, std::pair<api::metav1::Condition, std::string>> written_sharing_;
  std::set<std::vector<std::string>> reported_shares_;
  std::set<std::vector<std::string>> reported_starving_;
  metrics::TenantLabels tenants_;
  // Pending pod uid -> the reason its last attempt failed; the (tenant, reason) series each
  // pending pod is counted under in draplane_pending_pods (RecountPending keeps them, so a
  // wake-up publishes the counts without a pass over the pending pods), and whether the gauge is
  // stale.
  using PendingSeries = std::tuple<std::string, std::string>;
  std::unordered_map<std::string, std::string> pending_reasons_;
  std::unordered_map<std::string, PendingSeries> pending_series_;
  std::map<PendingSeries, double> pending_counts_;
  bool pending_reasons_dirty_ = true;
  // Series set by the last update, so that series which vanished are set to 0.
  std::set<std::vector<std::string>> reported_pending_;
  std::set<std::vector<std::string>> reported_unschedulable_;
  std::set<std::vector<std::string>> reported_devices_;
  std::set<std::vector<std::string>> reported_counters_;
  std::set<std::vector<std::string>> reported_capacity_;
  uint64_t attempts_ = 0;
  // Quota recounts: namespaces with one in progress, and those to run again after it (value:
  // whether that one counts as a correction).
  std::set<std::string> recounting_;
  std::map<std::string, bool> recount_again_;

  std::unique_ptr<client::SharedInformers> own_informers_;  // null when options_.informers
  client::Informer<api::corev1::Pod>* pods_ = nullptr;
  client::Informer<api::corev1::Node>* nodes_ = nullptr;
  client::Informer<api::resourcev1::ResourceClaim>* claims_ = nullptr;
  client::Informer<api::resourcev1::DeviceClass>* classes_ = nullptr;
  client::Informer<api::resourcev1::ResourceSlice>* slices_ = nullptr;
  client::Informer<api::resourcev1::DeviceTaintRule>* taint_rules_ = nullptr;
  client::Informer<api::corev1::ResourceQuota>* quotas_ = nullptr;
  client::Informer<api::corev1::Namespace>* namespaces_ = nullptr;  // fair share's selectors
  client::Informer<api::draplanev1alpha1::DeviceSharingPolicy>* sharing_policies_ = nullptr;
  // The handlers registered by Start, removed by Stop: (informer, id).
  std::vector<std::pair<client::InformerBase*, client::InformerBase::HandlerId>> registrations_;

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<InboxItem> inbox_ DRAPLANE_GUARDED_BY(mu_);
  std::deque<std::function<void()>> work_ DRAPLANE_GUARDED_BY(mu_);
  CondVar work_cv_;
  bool stopping_ DRAPLANE_GUARDED_BY(mu_) = false;
  std::thread loop_;
  std::vector<std::thread> binders_;
  Stats stats_ DRAPLANE_GUARDED_BY(mu_);
};

}  // namespace draplane::scheduler
