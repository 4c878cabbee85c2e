#include "sim/compare.h"

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <system_error>
#include <thread>

#include "common/clock.h"
#include "sim/report.h"

namespace draplane::sim {
namespace {

namespace json = boost::json;

double Number(const json::value* v) {
  if (v == nullptr) return 0;
  if (v->is_double()) return v->as_double();
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  if (v->is_bool()) return v->as_bool() ? 1 : 0;
  return 0;
}

const json::value* At(const json::value& root, std::initializer_list<std::string_view> path) {
  const json::value* v = &root;
  for (std::string_view key : path) {
    if (!v->is_object()) return nullptr;
    v = v->as_object().if_contains(key);
    if (v == nullptr) return nullptr;
  }
  return v;
}

std::string Format(double x) {
  char buffer[64];
  double a = std::fabs(x);
  if (a != 0 && (a < 0.001 || a >= 1e7)) {
    std::snprintf(buffer, sizeof buffer, "%.3g", x);
  } else if (a >= 1000 || x == std::floor(x)) {
    std::snprintf(buffer, sizeof buffer, "%.0f", x);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.4f", x);
  }
  return buffer;
}

std::string Signed(double x) { return (x > 0 ? "+" : "") + Format(x); }

// What the comparison keeps of one run.
struct RunResult {
  Status status;
  std::vector<std::pair<std::string, double>> metrics;
  std::string violation;  // the first conservation violation; empty when the checks held
};

// Run i is seed first_seed + i / 2 under A (even i) or B (odd i): the order the comparison reads
// them in. Workers take runs in that order, so every run before a failed one has been run, and
// after a failure none starts.
std::vector<RunResult> RunAll(const Cluster& cluster, const Trace& trace,
                              const CompareOptions& options) {
  const size_t runs = 2 * static_cast<size_t>(options.seeds);
  std::vector<RunResult> results(runs);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    while (!failed.load()) {
      const size_t i = next.fetch_add(1);
      if (i >= runs) return;
      RunOptions run = i % 2 == 0 ? options.a : options.b;
      run.seed = options.first_seed + i / 2;
      StatusOr<Report> report = RunSimulation(cluster, trace, run);
      RunResult& result = results[i];
      if (!report.ok()) {
        result.status = report.status();
        failed.store(true);
        return;
      }
      if (!report->conservation.ok()) {
        result.violation = report->conservation.violations.empty()
                               ? std::string("conservation failed")
                               : report->conservation.violations.front();
      }
      result.metrics = ComparedMetrics(JsonReport(*report, false));
    }
  };
  const size_t threads = std::min(static_cast<size_t>(std::max(options.jobs, 1)), runs);
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had: the runs go to those that started
    }
  }
  work();
  for (std::thread& helper : helpers) helper.join();
  return results;
}

}  // namespace

double StudentT975(int df) {
  static const double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return 0;
  if (df <= 30) return kTable[df - 1];
  if (df <= 60) return 2.000;
  if (df <= 120) return 1.980;
  return 1.960;
}

std::vector<std::pair<std::string, double>> ComparedMetrics(const json::value& report) {
  std::vector<std::pair<std::string, double>> out;
  auto add = [&](const std::string& name, const json::value* v) {
    if (v != nullptr) out.emplace_back(name, Number(v));
  };
  for (const char* key : {"submitted", "scheduled", "unscheduled"}) {
    add(std::string("pods.") + key, At(report, {"pods", key}));
  }
  for (const char* key : {"p50", "p90", "p99", "max"}) {
    add(std::string("waitSeconds.") + key, At(report, {"waitSeconds", key}));
  }
  add("fallback.rate", At(report, {"fallback", "rate"}));
  add("utilization.overall", At(report, {"utilization", "overall"}));
  if (const json::value* by_class = At(report, {"utilization", "byClass"});
      by_class != nullptr && by_class->is_object()) {
    for (const auto& [name, v] : by_class->as_object()) {
      add("utilization.byClass." + std::string(name), &v);
    }
  }
  for (const char* key : {"overall", "strandedDevices", "strandedCounters"}) {
    add(std::string("fragmentation.") + key, At(report, {"fragmentation", key}));
  }
  add("jainIndex", At(report, {"jainIndex"}));
  if (const json::value* tenants = At(report, {"tenants"});
      tenants != nullptr && tenants->is_object()) {
    for (const auto& [name, t] : tenants->as_object()) {
      std::string prefix = "tenants." + std::string(name) + ".";
      add(prefix + "scheduled", At(t, {"scheduled"}));
      add(prefix + "unscheduled", At(t, {"unscheduled"}));
      add(prefix + "deviceSeconds", At(t, {"deviceSeconds"}));
      add(prefix + "share", At(t, {"share"}));
      add(prefix + "waitSeconds.p50", At(t, {"waitSeconds", "p50"}));
      add(prefix + "waitSeconds.p99", At(t, {"waitSeconds", "p99"}));
    }
  }
  add("decisions", At(report, {"decisions"}));
  return out;
}

StatusOr<Comparison> CompareConfigurations(const Cluster& cluster, const Trace& trace,
                                           const CompareOptions& options) {
  if (options.seeds < 1) return InvalidArgumentError("--seeds must be at least 1");
  const Duration started = RealClock().MonotonicNow();
  std::vector<RunResult> results = RunAll(cluster, trace, options);
  Comparison out;
  out.a_name = options.a_name;
  out.b_name = options.b_name;
  out.wall_seconds = std::chrono::duration<double>(RealClock().MonotonicNow() - started).count();
  // metric -> per seed (A, B); the order of first appearance is kept.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::pair<double, double>>> values;
  for (int i = 0; i < options.seeds; ++i) {
    uint64_t seed = options.first_seed + static_cast<uint64_t>(i);
    out.seeds.push_back(seed);
    std::map<std::string, double> side[2];
    for (int s = 0; s < 2; ++s) {
      const RunResult& result = results[2 * static_cast<size_t>(i) + static_cast<size_t>(s)];
      const std::string& name = s == 0 ? options.a_name : options.b_name;
      if (!result.status.ok()) {
        return result.status.WithPrefix(name + " seed " + std::to_string(seed));
      }
      if (!result.violation.empty()) {
        out.failures.push_back(name + " seed " + std::to_string(seed) + ": " + result.violation);
      }
      for (const auto& [metric, value] : result.metrics) {
        if (!values.contains(metric)) order.push_back(metric);
        side[s][metric] = value;
        values[metric];
      }
    }
    for (auto& [metric, list] : values) {
      list.resize(static_cast<size_t>(i), {0, 0});
      list.emplace_back(side[0][metric], side[1][metric]);
    }
  }
  const double n = options.seeds;
  for (const std::string& metric : order) {
    const auto& list = values[metric];
    MetricComparison m;
    m.metric = metric;
    double sum_d = 0;
    for (const auto& [a, b] : list) {
      m.a_mean += a / n;
      m.b_mean += b / n;
      sum_d += b - a;
    }
    m.delta = sum_d / n;
    if (options.seeds > 1) {
      double ss = 0;
      for (const auto& [a, b] : list) ss += (b - a - m.delta) * (b - a - m.delta);
      double sd = std::sqrt(ss / (n - 1));
      double half = StudentT975(options.seeds - 1) * sd / std::sqrt(n);
      m.has_interval = true;
      m.low = m.delta - half;
      m.high = m.delta + half;
    }
    out.metrics.push_back(std::move(m));
  }
  return out;
}

std::string ComparisonText(const Comparison& c) {
  std::string out = "comparing " + c.a_name + " and " + c.b_name + " over " +
                    std::to_string(c.seeds.size()) + " seed(s)";
  if (!c.seeds.empty()) {
    out += " (" + std::to_string(c.seeds.front()) + ".." + std::to_string(c.seeds.back()) + ")";
  }
  out += "; delta = " + c.b_name + " - " + c.a_name + ", 95 % CI of the paired differences\n";
  size_t width = 6;
  for (const MetricComparison& m : c.metrics) width = std::max(width, m.metric.size());
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %14s %14s %14s  %s\n", static_cast<int>(width), "METRIC",
                c.a_name.c_str(), c.b_name.c_str(), "DELTA", "95% CI");
  out += line;
  for (const MetricComparison& m : c.metrics) {
    std::string ci = m.has_interval ? "[" + Signed(m.low) + ", " + Signed(m.high) + "]" : "n/a";
    if (m.has_interval && (m.low > 0 || m.high < 0)) ci += " *";
    std::snprintf(line, sizeof line, "%-*s %14s %14s %14s  %s\n", static_cast<int>(width),
                  m.metric.c_str(), Format(m.a_mean).c_str(), Format(m.b_mean).c_str(),
                  Signed(m.delta).c_str(), ci.c_str());
    out += line;
  }
  out += "(* the interval excludes zero)\n";
  for (const std::string& f : c.failures) out += "CONSERVATION FAILED: " + f + "\n";
  return out;
}

json::value ComparisonJson(const Comparison& c) {
  json::array seeds;
  for (uint64_t s : c.seeds) seeds.push_back(s);
  json::array metrics;
  for (const MetricComparison& m : c.metrics) {
    json::object o{{"metric", m.metric}, {"a", m.a_mean}, {"b", m.b_mean}, {"delta", m.delta}};
    if (m.has_interval) o["ci95"] = json::array{m.low, m.high};
    metrics.push_back(std::move(o));
  }
  json::array failures;
  for (const std::string& f : c.failures) failures.push_back(json::string(f));
  return json::object{
      {"a", c.a_name},      {"b", c.b_name},        {"seeds", std::move(seeds)},
      {"metrics", metrics}, {"failures", failures}, {"wallSeconds", c.wall_seconds}};
}

}  // namespace draplane::sim
