// `draplane sim compare`: one trace under two configurations (A and B: cluster changes and
// policy objects) over K seeds, each metric side by side with the mean difference and its 95 %
// confidence interval (docs/design/sim.md, "Comparing").
//
// Seed s drives both runs of a pair (common random numbers: the same arrivals and durations), so
// the interval is the paired Student-t interval of the per-seed differences B - A:
// mean(d) ± t(0.975, K-1) · sd(d) / √K. With K = 1 there is no interval.
//
// The 2K runs are independent (simulation.h): `jobs` of them run at once, each on a thread of its
// own, and the comparison is the same whatever `jobs` is (each run's result has its place; the
// aggregation reads them in seed order).
//
// Thread-safety: CompareConfigurations starts and joins its own threads; the cluster and trace
// are only read, by all of them.
#pragma once

#include <boost/json/value.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "sim/cluster.h"
#include "sim/simulation.h"
#include "sim/trace.h"

namespace draplane::sim {

struct CompareOptions {
  int seeds = 5;
  uint64_t first_seed = 1;  // seeds first_seed .. first_seed + seeds - 1
  RunOptions a;             // its seed is ignored
  RunOptions b;
  std::string a_name = "A";
  std::string b_name = "B";
  // Simulations run at once (at least 1; more than 2 · seeds is the same as 2 · seeds). Each
  // holds its own API, caches and scheduler: memory grows with it.
  int jobs = 1;
};

struct MetricComparison {
  std::string metric;  // a JSON report path, e.g. "utilization.overall", "tenants.team-a.share"
  double a_mean = 0;
  double b_mean = 0;
  double delta = 0;  // mean of B - A
  bool has_interval = false;
  double low = 0;  // 95 % confidence interval of the delta
  double high = 0;
};

struct Comparison {
  std::string a_name;
  std::string b_name;
  std::vector<uint64_t> seeds;
  std::vector<MetricComparison> metrics;
  // Runs whose conservation checks failed ("A seed 3: ...").
  std::vector<std::string> failures;
  // Wall time of the whole comparison (its runs overlap when jobs > 1).
  double wall_seconds = 0;
};

// Runs 2 · seeds simulations. The first run's error (in seed order, A before B) when one fails;
// no run starts after a failure.
StatusOr<Comparison> CompareConfigurations(const Cluster& cluster, const Trace& trace,
                                           const CompareOptions& options);

// The metrics compared, as (path, value), from a JSON report: pods, waits, fallback,
// utilization, fragmentation, Jain's index, per-tenant scheduled, share and waits, decisions.
std::vector<std::pair<std::string, double>> ComparedMetrics(const boost::json::value& report);

// Student's t quantile t(0.975, df) for df >= 1.
double StudentT975(int df);

std::string ComparisonText(const Comparison& comparison);
boost::json::value ComparisonJson(const Comparison& comparison);

}  // namespace draplane::sim
