// The simulator's speed (issue 21; docs/design/sim.md, "Performance"): `sim run` as a library
// call on the example (examples/sim: 16 nodes, ~1,000 Pods over 8 virtual hours) and on the
// first virtual hour of the target workload (bench/sim: 500 nodes x 10 GPUs, ~4,000 Pods in that
// hour; the whole day is bench/scripts/sim_bench.sh, bounded by a wall-time guard). One iteration
// each: a run is seconds to minutes. Counters: decisions_per_s (scheduling attempts per wall
// second), pods_per_s, x_real_time (virtual seconds simulated per wall second).
#include <benchmark/benchmark.h>

#include <optional>
#include <string>

#include "sim/cluster.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace draplane::sim {
namespace {

void RunOnce(benchmark::State& state, const std::vector<std::string>& cluster_files,
             const std::string& trace_file, const std::vector<std::string>& policies,
             std::optional<Duration> until) {
  StatusOr<Cluster> cluster = LoadCluster(cluster_files);
  StatusOr<Trace> trace = LoadTrace(trace_file);
  StatusOr<Configuration> config = LoadConfiguration(policies);
  if (!cluster.ok() || !trace.ok() || !config.ok()) {
    state.SkipWithError("cannot load the inputs");
    return;
  }
  RunOptions options;
  options.policies = config->policies;
  options.until = until;
  int64_t decisions = 0;
  int64_t pods = 0;
  double virtual_seconds = 0;
  double wall = 0;
  for (auto _ : state) {
    StatusOr<Report> report = RunSimulation(*cluster, *trace, options);
    if (!report.ok() || !report->conservation.ok()) {
      state.SkipWithError("the run failed");
      return;
    }
    decisions += report->decisions;
    pods += report->submitted;
    virtual_seconds += report->virtual_seconds;
    wall += report->wall_seconds;
  }
  state.counters["decisions_per_s"] = static_cast<double>(decisions) / wall;
  state.counters["pods_per_s"] = static_cast<double>(pods) / wall;
  state.counters["x_real_time"] = virtual_seconds / wall;
}

void BM_SimExample(benchmark::State& state) {
  const std::string ex = std::string(DRAPLANE_SOURCE_DIR) + "/examples/sim/";
  RunOnce(state, {ex + "cluster.yaml"}, ex + "trace.yaml", {ex + "policy-fallback.yaml"},
          std::nullopt);
}
BENCHMARK(BM_SimExample)->Unit(benchmark::kSecond)->Iterations(1);

void BM_SimFirstHour500Nodes(benchmark::State& state) {
  const std::string dir = std::string(DRAPLANE_SOURCE_DIR) + "/bench/sim/";
  RunOnce(state, {dir + "cluster-500x10.yaml"}, dir + "trace-100k-day.yaml", {},
          std::chrono::hours(1));
}
BENCHMARK(BM_SimFirstHour500Nodes)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace draplane::sim

BENCHMARK_MAIN();
