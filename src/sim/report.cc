#include "sim/report.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>

#include "api/codec/json.h"
#include "sim/trace.h"

namespace draplane::sim {
namespace {

namespace json = boost::json;

// Doubles are rounded to six decimals, so reports print the same on every machine.
double Round(double x) {
  if (!std::isfinite(x)) return 0;
  return std::round(x * 1e6) / 1e6;
}

json::object PercentileJson(const Percentiles& p, bool full) {
  json::object o{{"p50", Round(p.p50)}};
  if (full) o["p90"] = Round(p.p90);
  o["p99"] = Round(p.p99);
  if (full) o["max"] = Round(p.max);
  return o;
}

std::string Fixed(double x, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, x);
  return buffer;
}

std::string Percent(double fraction) { return Fixed(fraction * 100, 1) + "%"; }

std::string Seconds(double s) {
  return FormatDuration(std::chrono::milliseconds(static_cast<int64_t>(std::llround(s * 1000))));
}

std::string Escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// One line chart: `lines` share the x values `time` (seconds) and the y range [0, y_max].
std::string SvgChart(const std::string& title, const std::vector<double>& time,
                     const std::vector<std::pair<std::string, const std::vector<double>*>>& lines,
                     bool percent) {
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const double width = 760, height = 220, left = 60, right = 150, top = 28, bottom = 34;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  double x_max = time.empty() ? 1 : std::max(time.back(), 1.0);
  double y_max = 0;
  for (const auto& [name, values] : lines) {
    for (double v : *values) y_max = std::max(y_max, v);
  }
  if (percent) y_max = std::max(y_max, 0.01);
  if (y_max <= 0) y_max = 1;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Fixed(width, 0) +
                    "\" height=\"" + Fixed(height, 0) + "\" role=\"img\" aria-label=\"" +
                    Escape(title) + "\">\n";
  out += "<text x=\"" + Fixed(left, 0) + "\" y=\"18\" font-weight=\"bold\">" + Escape(title) +
         "</text>\n";
  out += "<rect x=\"" + Fixed(left, 0) + "\" y=\"" + Fixed(top, 0) + "\" width=\"" +
         Fixed(plot_w, 0) + "\" height=\"" + Fixed(plot_h, 0) +
         "\" fill=\"none\" stroke=\"#999\"/>\n";
  auto y_label = [&](double v) { return percent ? Percent(v) : Fixed(v, v < 10 ? 1 : 0); };
  for (int i = 0; i <= 4; ++i) {
    double v = y_max * i / 4;
    double y = top + plot_h - plot_h * i / 4;
    out += "<text x=\"" + Fixed(left - 4, 0) + "\" y=\"" + Fixed(y + 4, 1) +
           "\" text-anchor=\"end\" font-size=\"11\">" + y_label(v) + "</text>\n";
    out += "<line x1=\"" + Fixed(left, 0) + "\" y1=\"" + Fixed(y, 1) + "\" x2=\"" +
           Fixed(left + plot_w, 0) + "\" y2=\"" + Fixed(y, 1) + "\" stroke=\"#eee\"/>\n";
  }
  for (int i = 0; i <= 4; ++i) {
    double t = x_max * i / 4;
    double x = left + plot_w * i / 4;
    out += "<text x=\"" + Fixed(x, 1) + "\" y=\"" + Fixed(top + plot_h + 16, 0) +
           "\" text-anchor=\"middle\" font-size=\"11\">" + Seconds(t) + "</text>\n";
  }
  for (size_t l = 0; l < lines.size(); ++l) {
    const char* color = kColors[l % (sizeof kColors / sizeof kColors[0])];
    std::string points;
    const std::vector<double>& values = *lines[l].second;
    for (size_t i = 0; i < values.size() && i < time.size(); ++i) {
      double x = left + plot_w * time[i] / x_max;
      double y = top + plot_h - plot_h * std::min(values[i], y_max) / y_max;
      points += Fixed(x, 1) + "," + Fixed(y, 1) + " ";
    }
    out += "<polyline fill=\"none\" stroke=\"" + std::string(color) +
           "\" stroke-width=\"1.5\" points=\"" + points + "\"/>\n";
    out += "<text x=\"" + Fixed(left + plot_w + 8, 0) + "\" y=\"" + Fixed(top + 12 + 14 * l, 0) +
           "\" font-size=\"11\" fill=\"" + color + "\">" + Escape(lines[l].first) + "</text>\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace

Percentiles ComputePercentiles(std::vector<double>& values) {
  Percentiles p;
  p.count = static_cast<int64_t>(values.size());
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  auto rank = [&](double q) {
    size_t n = values.size();
    size_t index = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
    return values[std::min(n, std::max<size_t>(index, 1)) - 1];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  p.max = values.back();
  return p;
}

json::value PlacementJson(const Placement& p) {
  json::object o{{"pod", p.pod}, {"arrived", Round(p.arrived)}};
  if (p.bound >= 0) {
    o["node"] = p.node;
    o["bound"] = Round(p.bound);
    if (p.deleted >= 0) o["deleted"] = Round(p.deleted);
    json::array devices;
    for (const std::string& d : p.devices) devices.push_back(json::string(d));
    o["devices"] = std::move(devices);
    json::array tiers;
    for (const std::string& t : p.tiers) tiers.push_back(json::string(t));
    o["tiers"] = std::move(tiers);
  } else {
    o["reason"] = p.reason;
  }
  return o;
}

json::value JsonReport(const Report& r, bool wall) {
  json::object out;
  out["trace"] = r.trace;
  out["seed"] = r.seed;
  json::array configuration;
  for (const std::string& c : r.configuration) configuration.push_back(json::string(c));
  out["configuration"] = std::move(configuration);
  json::object policies;
  for (const auto& [kind, count] : r.policy_kinds) policies[kind] = count;
  out["policies"] = std::move(policies);
  out["windowSeconds"] = Round(r.window_seconds);
  out["virtualSeconds"] = Round(r.virtual_seconds);
  out["nodes"] = r.nodes;
  out["offeredDevices"] = Round(r.offered_units);
  out["pods"] = json::object{
      {"submitted", r.submitted},         {"scheduled", r.scheduled},
      {"unscheduled", r.unscheduled},     {"completed", r.completed},
      {"runningAtEnd", r.running_at_end}, {"deletedWhileRunning", r.deleted_while_running}};
  json::array reasons;
  for (const UnscheduledReason& u : r.unscheduled_reasons) {
    reasons.push_back(
        json::object{{"reason", u.reason}, {"message", u.message}, {"count", u.count}});
  }
  out["unscheduledReasons"] = std::move(reasons);
  out["waitSeconds"] = PercentileJson(r.wait, true);
  json::object tiers;
  for (const auto& [tier, count] : r.fallback_by_tier) tiers[std::to_string(tier)] = count;
  out["fallback"] = json::object{{"rate", Round(r.fallback_rate)},
                                 {"requests", r.fallback_requests},
                                 {"byTier", std::move(tiers)}};
  json::object by_class;
  for (const auto& [name, u] : r.utilization_by_class) by_class[name] = Round(u);
  out["utilization"] = json::object{{"overall", Round(r.utilization)}, {"byClass", by_class}};
  out["fragmentation"] =
      json::object{{"overall", Round(r.fragmentation_devices + r.fragmentation_counters)},
                   {"strandedDevices", Round(r.fragmentation_devices)},
                   {"strandedCounters", Round(r.fragmentation_counters)}};
  json::object tenants;
  for (const auto& [name, t] : r.tenants) {
    json::object reasons;
    for (const auto& [reason, count] : t.unscheduled_by_reason) reasons[reason] = count;
    json::object by_class;
    for (const auto& [c, seconds] : t.device_seconds_by_class) by_class[c] = Round(seconds);
    tenants[name] = json::object{{"submitted", t.submitted},
                                 {"scheduled", t.scheduled},
                                 {"unscheduled", t.unscheduled},
                                 {"unscheduledReasons", std::move(reasons)},
                                 {"waitSeconds", PercentileJson(t.wait, false)},
                                 {"deviceSeconds", Round(t.device_seconds)},
                                 {"deviceSecondsByClass", std::move(by_class)},
                                 {"share", Round(t.share)},
                                 {"fairShare", Round(t.fair_share)},
                                 {"weight", Round(t.weight)}};
  }
  out["tenants"] = std::move(tenants);
  out["jainIndex"] = Round(r.jain_index);
  out["starvation"] = json::object{{"overtakes", r.starving_overtakes},
                                   {"heldDeviceSeconds", Round(r.held_device_seconds)}};
  out["decisions"] = r.decisions;
  out["attempts"] = json::object{{"scheduled", r.attempts_scheduled},
                                 {"unschedulable", r.attempts_unschedulable},
                                 {"error", r.attempts_error}};
  out["apiWrites"] = r.api_writes;
  json::array violations;
  for (const std::string& v : r.conservation.violations) violations.push_back(json::string(v));
  out["conservation"] =
      json::object{{"ok", r.conservation.ok()},
                   {"doubleAllocations", r.conservation.double_allocations},
                   {"counterOvercommits", r.conservation.counter_overcommits},
                   {"podsWithoutOutcome", r.conservation.pods_without_outcome},
                   {"deviceSecondsBalanced", r.conservation.device_seconds_balanced},
                   {"violations", std::move(violations)}};
  if (wall) {
    out["wallSeconds"] = Round(r.wall_seconds);
    out["decisionsPerWallSecond"] =
        Round(r.wall_seconds > 0 ? static_cast<double>(r.decisions) / r.wall_seconds : 0);
  }
  if (!r.placements.empty()) {
    json::array placements;
    for (const Placement& p : r.placements) placements.push_back(PlacementJson(p));
    out["placements"] = std::move(placements);
  }
  return out;
}

std::string TextReport(const Report& r) {
  std::string out;
  auto line = [&](const std::string& label, const std::string& text) {
    char head[16];
    std::snprintf(head, sizeof head, "%-12s", label.c_str());
    out += head + text + "\n";
  };
  line("trace", (r.trace.empty() ? std::string("(unnamed)") : r.trace) + ", seed " +
                    std::to_string(r.seed) + ", window " + Seconds(r.window_seconds) +
                    " (ended at " + Seconds(r.virtual_seconds) + "), " + std::to_string(r.nodes) +
                    " nodes, " + Fixed(r.offered_units, 0) + " device units");
  for (const std::string& c : r.configuration) line("config", c);
  std::string pods = std::to_string(r.submitted) + " submitted, " + std::to_string(r.scheduled) +
                     " scheduled, " + std::to_string(r.unscheduled) + " unscheduled";
  if (!r.unscheduled_reasons.empty()) {
    // One count per reason: the entries differ by message (which names claims and nodes), shown
    // below and in the JSON report.
    std::vector<std::pair<std::string, int64_t>> by_reason;
    for (const UnscheduledReason& u : r.unscheduled_reasons) {
      auto it = std::find_if(by_reason.begin(), by_reason.end(),
                             [&](const auto& entry) { return entry.first == u.reason; });
      if (it == by_reason.end()) {
        by_reason.emplace_back(u.reason, u.count);
      } else {
        it->second += u.count;
      }
    }
    pods += " (";
    for (size_t i = 0; i < by_reason.size(); ++i) {
      if (i > 0) pods += ", ";
      pods += by_reason[i].first + " " + std::to_string(by_reason[i].second);
    }
    pods += ")";
  }
  line("pods", pods);
  for (size_t i = 0; i < r.unscheduled_reasons.size() && i < 3; ++i) {
    std::string message = r.unscheduled_reasons[i].message;
    if (message.size() > 160) message = message.substr(0, 157) + "...";
    line("", "e.g. " + r.unscheduled_reasons[i].reason + ": " + message);
  }
  line("wait", "p50 " + Seconds(r.wait.p50) + "  p90 " + Seconds(r.wait.p90) + "  p99 " +
                   Seconds(r.wait.p99) + "  max " + Seconds(r.wait.max));
  std::string tiers;
  for (const auto& [tier, count] : r.fallback_by_tier) {
    tiers += (tiers.empty() ? "" : ", ") + std::string("tier ") + std::to_string(tier) + ": " +
             std::to_string(count);
  }
  line("fallback", Percent(r.fallback_rate) + " of " + std::to_string(r.fallback_requests) +
                       " firstAvailable requests" + (tiers.empty() ? "" : " (" + tiers + ")"));
  std::string classes;
  for (const auto& [name, u] : r.utilization_by_class) {
    classes += (classes.empty() ? "; " : ", ") + name + " " + Percent(u);
  }
  line("utilization", Percent(r.utilization) + " overall" + classes);
  line("fragmented", Percent(r.fragmentation_devices) + " stranded devices, " +
                         Percent(r.fragmentation_counters) + " stranded counter capacity");
  char head[160];
  std::snprintf(head, sizeof head, "%-16s %9s %9s %9s %9s %11s %7s %7s", "NAMESPACE", "SUBMITTED",
                "SCHEDULED", "WAIT-P50", "WAIT-P99", "DEVICE-H", "SHARE", "FAIR");
  line("tenants", head);
  for (const auto& [name, t] : r.tenants) {
    char row[200];
    std::snprintf(row, sizeof row, "%-16s %9lld %9lld %9s %9s %11s %7s %7s", name.c_str(),
                  static_cast<long long>(t.submitted), static_cast<long long>(t.scheduled),
                  Seconds(t.wait.p50).c_str(), Seconds(t.wait.p99).c_str(),
                  Fixed(t.device_seconds / 3600, 1).c_str(), Percent(t.share).c_str(),
                  Percent(t.fair_share).c_str());
    line("", row);
  }
  line("fairness", "Jain's index " + Fixed(r.jain_index, 3) +
                       " (over each tenant's device-seconds / its fair share)");
  line("starvation", std::to_string(r.starving_overtakes) + " overtakes of starving Pods, " +
                         Fixed(r.held_device_seconds / 3600, 1) + " device-hours held");
  std::string decisions = std::to_string(r.decisions) + " scheduling attempts (" +
                          std::to_string(r.attempts_scheduled) + " bound, " +
                          std::to_string(r.attempts_unschedulable) + " unschedulable, " +
                          std::to_string(r.attempts_error) + " errors), " +
                          std::to_string(r.api_writes) + " API writes";
  if (r.wall_seconds > 0) {
    decisions += "; " + Fixed(r.wall_seconds, 2) + " s wall, " +
                 Fixed(static_cast<double>(r.decisions) / r.wall_seconds, 0) + " decisions/s";
  }
  line("decisions", decisions);
  if (r.conservation.ok()) {
    line("checks",
         "conservation OK (no device held twice, every Pod accounted for, "
         "device-seconds add up)");
  } else {
    line("checks", "CONSERVATION FAILED");
    for (const std::string& v : r.conservation.violations) line("", v);
  }
  return out;
}

std::string HtmlReport(const Report& r) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>draplane "
      "sim: " +
      Escape(r.trace) +
      "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:60em}"
      "pre{background:#f6f6f6;padding:1em;overflow-x:auto}svg{display:block;margin:1em 0}"
      "</style>\n</head>\n<body>\n<h1>draplane sim: " +
      Escape(r.trace.empty() ? std::string("(unnamed trace)") : r.trace) + ", seed " +
      std::to_string(r.seed) + "</h1>\n<pre>" + Escape(TextReport(r)) + "</pre>\n";
  const Series& s = r.series;
  out += SvgChart("Pending Pods (queue length)", s.time, {{"pending", &s.queue_length}}, false);
  out += SvgChart("Device utilization", s.time, {{"allocated / offered", &s.utilization}}, true);
  std::vector<std::pair<std::string, const std::vector<double>*>> shares;
  for (const auto& [tenant, line] : s.tenant_share) shares.emplace_back(tenant, &line);
  out += SvgChart("Per-tenant share of the devices", s.time, shares, true);
  out += "<p>Series sampled every " + Seconds(s.step) +
         " of virtual time; definitions in docs/design/sim.md.</p>\n</body>\n</html>\n";
  return out;
}

}  // namespace draplane::sim
