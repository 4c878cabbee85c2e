#include "scheduler/metrics.h"

namespace draplane::scheduler {

SchedulerMetrics SchedulerMetrics::For(const std::string& profile) {
  metrics::CounterFamily attempts = metrics::NewCounterFamily(
      "scheduler_schedule_attempts_total",
      "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not "
      "be scheduled, while 'error' means an internal scheduler problem.",
      {"result", "profile"});
  metrics::GaugeFamily pending = metrics::NewGaugeFamily(
      "scheduler_pending_pods",
      "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
      "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in "
      "unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the "
      "number of unschedulable pods that the scheduler never attempted to schedule because they "
      "are gated.",
      {"queue"});
  metrics::HistogramFamily attempt = metrics::NewHistogramFamily(
      "scheduler_scheduling_attempt_duration_seconds",
      "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
      {"result", "profile"}, metrics::ExponentialBuckets(0.001, 2, 15));
  SchedulerMetrics m{
      .attempts_scheduled = attempts.WithLabels({"scheduled", profile}),
      .attempts_unschedulable = attempts.WithLabels({"unschedulable", profile}),
      .attempts_error = attempts.WithLabels({"error", profile}),
      .pending_active = pending.WithLabels({"active"}),
      .pending_backoff = pending.WithLabels({"backoff"}),
      .pending_unschedulable = pending.WithLabels({"unschedulable"}),
      .pending_gated = pending.WithLabels({"gated"}),
      .unschedulable_pods = metrics::NewGaugeFamily(
          "scheduler_unschedulable_pods",
          "The number of unschedulable pods broken down by plugin name. A pod will increment the "
          "gauge for all plugins that caused it to not schedule and so this metric have meaning "
          "only when broken down by plugin.",
          {"plugin", "profile"}),
      .attempt_scheduled_seconds = attempt.WithLabels({"scheduled", profile}),
      .attempt_unschedulable_seconds = attempt.WithLabels({"unschedulable", profile}),
      .attempt_error_seconds = attempt.WithLabels({"error", profile}),
      .sli_seconds = metrics::NewHistogramFamily(
          "scheduler_pod_scheduling_sli_duration_seconds",
          "E2e latency for a pod being scheduled, from the time the pod enters the scheduling "
          "queue and might involve multiple scheduling attempts.",
          {"attempts"}, metrics::ExponentialBuckets(0.01, 2, 20)),
      .scheduling_attempts =
          metrics::NewHistogramFamily("scheduler_pod_scheduling_attempts",
                                      "Number of attempts to successfully schedule a pod.", {},
                                      metrics::ExponentialBuckets(1, 2, 5))
              .WithLabels(std::vector<std::string>{}),
      .plugin_seconds = metrics::NewHistogramFamily(
          "scheduler_plugin_execution_duration_seconds",
          "Duration for running a plugin at a specific extension point.",
          {"plugin", "extension_point", "status"}, metrics::ExponentialBuckets(0.00001, 1.5, 20)),
      .claim_allocation_seconds =
          metrics::NewHistogramFamily(
              "draplane_scheduler_dra_claim_allocation_duration_seconds",
              "Time from the scheduler first seeing a ResourceClaim to its allocation being "
              "written and confirmed.",
              {}, metrics::ExponentialBuckets(0.001, 2, 20))
              .WithLabels(std::vector<std::string>{}),
      .allocations = metrics::NewCounterFamily(
          "draplane_allocations_total",
          "Requests of ResourceClaims by the class and firstAvailable subrequest index they were "
          "allocated (0: the first choice or an exactly request; higher: a fallback), or that "
          "failed an attempt (unschedulable, error; index none).",
          {"device_class", "subrequest_index", "result"}),
      .pending_pods = metrics::NewGaugeFamily(
          "draplane_pending_pods",
          "Pending Pods of the scheduler by tenant (allowlisted namespace or other) and reason: "
          "Queued (not tried yet), Gated, Binding, SchedulerError, or the filter plugin that "
          "rejected the most nodes in the last attempt.",
          {"tenant", "reason"}),
      .wait_seconds = metrics::NewHistogramFamily(
          "draplane_pod_wait_duration_seconds",
          "Time from a Pod's first enqueue to its binding, by tenant (allowlisted namespace or "
          "other) and the device class of its first request (none without one).",
          {"tenant", "device_class"}, metrics::ExponentialBuckets(0.01, 2, 22)),
      .devices = metrics::NewGaugeFamily(
          "draplane_devices",
          "Physical devices per driver and device class by state: idle, allocated, unavailable "
          "(tainted NoSchedule/NoExecute, which includes unhealthy), fragmented (free but usable "
          "by no pending request shape); a partitionable GPU counts once.",
          {"driver", "device_class", "state"}),
      .counter_used = metrics::NewGaugeFamily(
          "draplane_counter_used_ratio",
          "Used fraction of a pool's counter set: its most-used counter (allocated devices' "
          "consumesCounters over the set's value).",
          {"driver", "pool", "counter_set"}),
      .capacity_used = metrics::NewGaugeFamily(
          "draplane_capacity_used_ratio",
          "Consumed fraction of the shared capacity of a pool's multi-allocatable devices, by "
          "capacity name.",
          {"driver", "pool", "capacity"}),
      .device_state_shapes = metrics::NewGaugeFamily(
          "draplane_device_states_shapes",
          "Distinct pending request shapes the last device-state computation evaluated, and those "
          "over its bound it dropped.",
          {"outcome"}),
      .evaluation_budget_spent =
          metrics::NewCounterFamily(
              "draplane_scheduler_evaluation_budget_exhausted_total",
              "Scheduling attempts that spent their whole CEL evaluation budget and were retried "
              "after a backoff.",
              {"profile"})
              .WithLabels({profile}),
      .binding_conditions_waiting =
          metrics::NewGaugeFamily("draplane_scheduler_dra_binding_conditions_waiting",
                                  "Bindings waiting in PreBind until the allocated devices' "
                                  "bindingConditions are True (KEP-5007).",
                                  {})
              .WithLabels(std::vector<std::string>{}),
      .binding_conditions_wait_seconds = metrics::NewHistogramFamily(
          "draplane_scheduler_dra_binding_conditions_wait_duration_seconds",
          "How long bindings waited for devices' bindingConditions, by how the wait ended "
          "(ready, failed, timeout, aborted).",
          {"result"}, metrics::ExponentialBuckets(0.01, 2, 20)),
      .isolated_nodes =
          metrics::NewGaugeFamily("draplane_scheduler_isolated_nodes",
                                  "Nodes whose draplane.dev/device-prepare-failures taint keeps "
                                  "new pods off them (isolated after repeated device prepare "
                                  "failures, until the taint expires or is lifted).",
                                  {})
              .WithLabels(std::vector<std::string>{}),
      .quota_fallbacks = metrics::NewCounterFamily(
          "draplane_quota_fallbacks_total",
          "firstAvailable requests an Allocation-mode ResourceQuota moved from the subrequest they "
          "would have got without it to a later one.",
          {"namespace", "from_index", "to_index"}),
      .ledger_drift = metrics::NewCounterFamily(
          "draplane_ledger_drift_total",
          "Periodic rechecks that found the scheduler's holdings ledger different from a "
          "recompute from its claims (the ledger is then corrected).",
          {"namespace"}),
      .decisions_written =
          metrics::NewCounterFamily("draplane_decisions_written_total",
                                    "AllocationDecision records written by the scheduler.", {})
              .WithLabels(std::vector<std::string>{}),
      .decisions_dropped =
          metrics::NewCounterFamily(
              "draplane_decisions_dropped_total",
              "AllocationDecision records not written: the queue was full or the write failed.", {})
              .WithLabels(std::vector<std::string>{}),
      .tenant_share = metrics::NewGaugeFamily(
          "draplane_tenant_share",
          "Tenants' shares of the device domains of the DeviceSharingPolicy in force, as "
          "fractions of the domain's capacity units: fair (weight over the active tenants' "
          "weights), current (held now), decayed (usage history) and effective (their mix over "
          "the fair share; 1 is exactly fair). Tenants not allowlisted are summed as other.",
          {"tenant", "domain", "kind"}),
      .starving_pods = metrics::NewGaugeFamily(
          "draplane_starving_pods",
          "Pending Pods that waited longer than the DeviceSharingPolicy's starvation threshold, "
          "by tenant and domain.",
          {"tenant", "domain"}),
      .held_device_seconds = metrics::NewCounterFamily(
          "draplane_held_device_seconds_total",
          "Devices held free for starving Pods (DeviceSharingPolicy aging.holds) times seconds, "
          "by domain: what holds cost in idle devices.",
          {"domain"}),
      .starving_overtakes = metrics::NewCounterFamily(
          "draplane_starving_overtakes_total",
          "Allocations to a Pod of the same or a lower priority that arrived after a starving "
          "Pod, of a device of a class the starving Pod needs on its target node, while its hold "
          "was incomplete (holds keep this at 0).",
          {"domain"}),
      .fair_share_fallbacks = metrics::NewCounterFamily(
          "draplane_fair_share_fallbacks_total",
          "Bindings whose firstAvailable request took a later subrequest because the "
          "DeviceSharingPolicy's placement preference left an earlier tier's class to under-served "
          "tenants (each with a FairShareFallback Event), by tenant.",
          {"tenant"}),
  };
  return m;
}

}  // namespace draplane::scheduler
