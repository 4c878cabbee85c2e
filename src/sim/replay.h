// `draplane sim replay`: a trace played against a live API server in accelerated real time —
// the other half of the simulator's calibration (docs/design/sim.md, "Calibration").
//
// The player creates the trace's namespaces, templates, claims and policies, then each Pod at
// its arrival time divided by `speed`; a Pod observed bound is deleted (grace period 0: its
// containers are done) its duration divided by `speed` later, as the simulator completes it. It
// stops once every Pod completed, or when nothing changed for `settle` while the remaining Pods
// wait unscheduled, and reports per Pod what the cluster did (node, devices, tiers taken, or the
// PodScheduled=False reason).
//
// Thread-safety: uses the calling thread and one watch thread of its own.
#pragma once

#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "client/api_client.h"
#include "common/clock.h"
#include "common/status.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace draplane::sim {

struct ReplayOptions {
  uint64_t seed = 1;
  double speed = 60;                            // virtual seconds per real second
  Duration settle = std::chrono::seconds(5);    // real time without change that ends the replay
  Duration timeout = std::chrono::minutes(10);  // real time limit
};

struct ReplayResult {
  std::vector<Placement> placements;            // in arrival order
  std::map<std::string, TenantReport> tenants;  // submitted and scheduled counts
  int64_t submitted = 0;
  int64_t scheduled = 0;
  int64_t unscheduled = 0;
  double wall_seconds = 0;
};

// Plays the trace; errors from creating objects (other than AlreadyExists for namespaces) or the
// timeout (DeadlineExceeded).
StatusOr<ReplayResult> ReplayTrace(client::ApiClient& api, const Clock& clock, const Trace& trace,
                                   const ReplayOptions& options);

// The reason of a Placement whose Pod the API server refused to create.
inline constexpr std::string_view kRejectedByApi = "RejectedByApi";

std::string ReplaySummary(const ReplayResult& result);
// How many of the trace's Pods the API server refused to create (they never reached the
// scheduler; `sim replay` then exits 1).
int64_t RejectedByApi(const ReplayResult& result);
// The placements in the JSON shape of `sim run --placements-file`.
boost::json::value ReplayPlacementsJson(const ReplayResult& result);

}  // namespace draplane::sim
