// `draplane sim run` as a library: replays a workload trace against a cluster on the real
// scheduling code, in virtual time (docs/design/sim.md).
//
// What runs: the in-memory API (client::MemoryApi), the shared informers in manual mode (events
// delivered on the simulation's thread in resourceVersion order), the real scheduler
// (scheduler::Scheduler in synchronous mode: queue, framework, plugins, allocator, device
// ledger, binding, events and conditions), and the real resourceclaim controller (no worker
// threads; its queue is drained on the same thread) — all on one ManualClock. The simulator
// itself plays only the workload and the kubelet: it creates the trace's Pods at their time,
// and a bound Pod completes (phase Succeeded, then deleted) after its duration.
//
// Algorithm:
//   1. Load: the cluster's objects (defaulted as the API server does), the trace's templates,
//      claims and policies, and the configuration's changes and policies, into the API.
//   2. Start the components (their informers list what is there).
//   3. Loop: settle — deliver every pending watch event, sync the claim controller until it is
//      idle, run the scheduler until no Pod is ready, repeat until nothing happens — then move
//      the clock to the next instant with work: the next trace event (arrival, completion,
//      deletion), the scheduler's next backoff expiry or unschedulable-pool flush, or the claim
//      controller's next retry; run that instant's trace events; repeat.
//   4. Stop when the trace has no event left and the scheduler and controller have no timed work
//      but the periodic flush (every Pod still pending has been tried against the final state), or
//      an hour after the last trace event without a binding, or at the horizon.
// Same inputs and seed → the same run, event for event.
//
// Thread-safety: a run uses the calling thread only; runs are independent.
#pragma once

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <vector>

#include "allocator/features.h"
#include "common/clock.h"
#include "common/status.h"
#include "scheduler/fair_share.h"
#include "sim/cluster.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace draplane::sim {

struct RunOptions {
  // The run's seed; nullopt: the trace's `seed`, else 1.
  std::optional<uint64_t> seed{};
  // Applied to the cluster before the run, in order.
  std::vector<ClusterChange> changes{};
  // Created in the API before the trace starts, after the trace's own `policies`.
  std::vector<PolicyObject> policies{};
  // Stop here (overrides the trace's horizon).
  std::optional<Duration> until{};
  // The scheduler's DRA feature gates.
  allocator::Features features = allocator::AllFeatures();
  // Keep every Pod's placement in the report.
  bool placements = false;
  // Series and fragmentation are sampled this often (0: the window / 1,440, at most 60 s).
  Duration sample_step{0};
};

// Runs one simulation. InvalidArgument when the cluster, trace or configuration cannot be loaded
// into the API (naming the object and the reason, e.g. a policy of a kind the simulator does not
// serve); Internal when a component fails in a way a real cluster would not hide.
StatusOr<Report> RunSimulation(const Cluster& cluster, const Trace& trace,
                               const RunOptions& options);

}  // namespace draplane::sim
