// The scheduler's metrics, with upstream names where they exist (pkg/scheduler/metrics):
//
//   scheduler_schedule_attempts_total{result,profile}          scheduled|unschedulable|error
//   scheduler_pending_pods{queue}                                active|backoff|unschedulable|gated
//   scheduler_scheduling_attempt_duration_seconds{result,profile}
//   scheduler_pod_scheduling_sli_duration_seconds{attempts}    first enqueue -> bound
//   scheduler_pod_scheduling_attempts                          attempts of each bound Pod
//   scheduler_unschedulable_pods{plugin,profile}               Pods waiting in the unschedulable
//        pool by each plugin that rejected (or gated) them
//   scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}
//        every plugin call at PreFilter, PreScore, Filter and Score (one per node), PostFilter,
//        Reserve, PreBind and Bind of one attempt in ten, as upstream samples plugin metrics
//   draplane_scheduler_dra_claim_allocation_duration_seconds   claim first seen -> allocation
//                                                              written and confirmed
//   draplane_allocations_total{device_class,subrequest_index,result}
//        per request of a claim: allocated (index of the firstAvailable subrequest chosen, 0 for
//        an exactly request: the fallback rate per tier), or unschedulable / error per failed
//        attempt (index "none", class of the first choice)
//   draplane_pending_pods{tenant,reason}                       Pending Pods of this scheduler by
//        tenant (allowlist, common/metrics.h TenantLabels) and why: Queued, Gated, Binding,
//        SchedulerError, or the filter plugin that rejected the most nodes
//   draplane_pod_wait_duration_seconds{tenant,device_class}    first enqueue -> bound, by tenant
//                                                              and the class of the first request
//   draplane_devices{driver,device_class,state}                device states (device_states.h)
//   draplane_counter_used_ratio{driver,pool,counter_set}       most-used counter of a counter set
//   draplane_capacity_used_ratio{driver,pool,capacity}         shared capacity consumed
//   draplane_device_states_shapes{outcome}                     evaluated|dropped pending shapes
//   draplane_scheduler_dra_binding_conditions_waiting          bindings waiting for devices'
//                                                              bindingConditions (KEP-5007)
//   draplane_scheduler_dra_binding_conditions_wait_duration_seconds{result}
//                                                              ready|failed|timeout|aborted
//   draplane_scheduler_isolated_nodes                          nodes isolated for repeated
//                                                              device prepare failures
//   draplane_quota_fallbacks_total{namespace,from_index,to_index}  requests an Allocation-mode
//                                                              quota moved to a later subrequest
//   draplane_quota_drift_total{namespace,quota}                periodic recounts that corrected
//                                                              an Allocation-mode quota's device
//                                                              keys (the server counts its keys;
//                                                              one family: api/quota/metrics.h)
//   draplane_ledger_drift_total{namespace}                     periodic rechecks that found the
//                                                              holdings ledger off its recompute
//   draplane_decisions_written_total, draplane_decisions_dropped_total  AllocationDecision records
//   draplane_tenant_share{tenant,domain,kind}                  fair|current|decayed|effective
//        shares of the DeviceSharingPolicy in force (fair-share.md §5), every 10 s; "other"
//        sums the fractions of the namespaces not allowlisted (effective: of the sums)
//   draplane_starving_pods{tenant,domain}                      Pending Pods past the policy's
//                                                              starvation threshold
//   draplane_fair_share_fallbacks_total{tenant}                bindings the fair-share placement
//                                                              preference moved to a later tier
//   draplane_held_device_seconds_total{domain}                 devices held for starving Pods
//                                                              times seconds (the holds' price)
//   draplane_starving_overtakes_total{domain}                  allocations that overtook a
//                                                              starving Pod (holds keep it 0)
//
// Thread-safety: the handles are safe for concurrent use (common/metrics.h).
#pragma once

#include <string>

#include "common/metrics.h"

namespace draplane::scheduler {

struct SchedulerMetrics {
  metrics::Counter attempts_scheduled;
  metrics::Counter attempts_unschedulable;
  metrics::Counter attempts_error;
  metrics::Gauge pending_active;
  metrics::Gauge pending_backoff;
  metrics::Gauge pending_unschedulable;
  metrics::Gauge pending_gated;
  metrics::GaugeFamily unschedulable_pods;
  metrics::Histogram attempt_scheduled_seconds;
  metrics::Histogram attempt_unschedulable_seconds;
  metrics::Histogram attempt_error_seconds;
  metrics::HistogramFamily sli_seconds;
  metrics::Histogram scheduling_attempts;
  metrics::HistogramFamily plugin_seconds;
  metrics::Histogram claim_allocation_seconds;
  metrics::CounterFamily allocations;
  metrics::GaugeFamily pending_pods;
  metrics::HistogramFamily wait_seconds;
  metrics::GaugeFamily devices;
  metrics::GaugeFamily counter_used;
  metrics::GaugeFamily capacity_used;
  metrics::GaugeFamily device_state_shapes;
  // Attempts that spent their whole CEL evaluation budget (SchedulerOptions::evaluation_budget).
  metrics::Counter evaluation_budget_spent;
  metrics::Gauge binding_conditions_waiting;
  metrics::HistogramFamily binding_conditions_wait_seconds;
  metrics::Gauge isolated_nodes;
  metrics::CounterFamily quota_fallbacks;
  metrics::CounterFamily ledger_drift;
  metrics::Counter decisions_written;
  metrics::Counter decisions_dropped;
  metrics::GaugeFamily tenant_share;
  metrics::GaugeFamily starving_pods;
  metrics::CounterFamily held_device_seconds;
  metrics::CounterFamily starving_overtakes;
  metrics::CounterFamily fair_share_fallbacks;

  // The process-wide families for `profile` (the scheduler name).
  static SchedulerMetrics For(const std::string& profile);
};

}  // namespace draplane::scheduler
