// What one simulation run measured, and its renderings: JSON (the stable, documented report),
// text (a summary for people) and a self-contained HTML page with inline SVG plots
// (docs/design/sim.md has every field's definition).
//
// Determinism: every field is a function of the inputs and the seed, except `wallSeconds` and
// `decisionsPerWallSecond`, which measure this machine; JsonReport(report, /*wall=*/false) leaves
// those two out, so two runs with the same seed are byte-identical.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace draplane::sim {

struct Percentiles {
  int64_t count = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};

// Nearest-rank percentiles of `values` (sorted in place).
Percentiles ComputePercentiles(std::vector<double>& values);

struct TenantReport {
  int64_t submitted = 0;
  int64_t scheduled = 0;
  int64_t unscheduled = 0;
  Percentiles wait;
  double device_seconds = 0;                              // in the window
  std::map<std::string, double> device_seconds_by_class;  // the same per device class
  double share = 0;       // of all device-seconds allocated in the window
  double fair_share = 0;  // weighted max-min share given the tenant's demand
  double weight = 1;
  // Unscheduled Pods by reason (as in Report::unscheduled_reasons): a tenant's quota or policy
  // rejections show here.
  std::map<std::string, int64_t> unscheduled_by_reason;
};

struct UnscheduledReason {
  std::string reason;   // Unschedulable, SchedulerError, DeletedWhilePending, PendingAtEnd, ...
  std::string message;  // the first Pod's message
  int64_t count = 0;
};

struct Placement {
  std::string pod;  // namespace/name
  std::string node;
  double arrived = 0;                // virtual seconds
  double bound = -1;                 // -1: never bound
  double deleted = -1;               // when deleted while running; -1: not
  std::vector<std::string> devices;  // driver/pool/device
  std::vector<std::string> tiers;    // "claim/request -> subrequest"
  std::string reason;                // when unscheduled
};

// Conservation checks run on every run: each counter must be zero and `device_seconds_balanced`
// true, otherwise the run is reported as failed (the simulator's bookkeeping or the scheduler
// broke an invariant).
struct Conservation {
  int64_t double_allocations = 0;    // an exclusive device held by two claims at one instant
  int64_t counter_overcommits = 0;   // a counter set or capacity consumed beyond what it offers
  int64_t pods_without_outcome = 0;  // submitted, neither scheduled nor unscheduled with a reason
  bool device_seconds_balanced = true;  // tenants == classes == the time integral
  std::vector<std::string> violations;  // the first few, in words
  bool ok() const {
    return double_allocations == 0 && counter_overcommits == 0 && pods_without_outcome == 0 &&
           device_seconds_balanced;
  }
};

// Time series on a fixed grid of `series_step` virtual seconds over the window.
struct Series {
  double step = 0;
  std::vector<double> time;
  std::vector<double> queue_length;                         // pending Pods
  std::vector<double> utilization;                          // allocated / offered device units
  std::map<std::string, std::vector<double>> tenant_share;  // tenant units / offered units
};

struct Report {
  std::string trace;
  uint64_t seed = 0;
  std::vector<std::string> configuration;  // cluster changes and policy objects applied
  std::map<std::string, int64_t> policy_kinds;
  double window_seconds = 0;   // the measured window [0, window)
  double virtual_seconds = 0;  // where the run ended
  int64_t nodes = 0;
  double offered_units = 0;  // device units offered (see docs)

  int64_t submitted = 0;
  int64_t scheduled = 0;
  int64_t unscheduled = 0;
  int64_t completed = 0;
  int64_t running_at_end = 0;
  int64_t deleted_while_running = 0;  // bound, then deleted before completing (deleteAfter)
  std::vector<UnscheduledReason> unscheduled_reasons;
  Percentiles wait;

  double fallback_rate = 0;
  int64_t fallback_requests = 0;
  std::map<int64_t, int64_t> fallback_by_tier;  // subrequest index -> requests

  double utilization = 0;
  std::map<std::string, double> utilization_by_class;
  double fragmentation_devices = 0;   // see docs: stranded free devices / offered
  double fragmentation_counters = 0;  // free counter capacity on partly used GPUs / offered

  std::map<std::string, TenantReport> tenants;
  double jain_index = 1;
  // The DeviceSharingPolicy's starvation holds (docs/design/fair-share.md §4): allocations that
  // overtook a starving Pod whose hold was incomplete, and device-seconds spent held.
  int64_t starving_overtakes = 0;
  double held_device_seconds = 0;

  int64_t decisions = 0;  // scheduling attempts (one Pod through one scheduling cycle)
  int64_t attempts_scheduled = 0;
  int64_t attempts_unschedulable = 0;
  int64_t attempts_error = 0;
  int64_t api_writes = 0;
  double wall_seconds = 0;

  Conservation conservation;
  Series series;
  std::vector<Placement> placements;  // only when asked for
};

// One placement as the report and `sim replay` write it.
boost::json::value PlacementJson(const Placement& placement);
// The JSON report; `wall` adds wallSeconds and decisionsPerWallSecond.
boost::json::value JsonReport(const Report& report, bool wall = true);
// A summary for a terminal.
std::string TextReport(const Report& report);
// A self-contained HTML page (inline SVG; no script, no network).
std::string HtmlReport(const Report& report);

}  // namespace draplane::sim
