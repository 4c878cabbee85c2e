#include "allocator/explanation.h"

#include <fmt/core.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace draplane::allocator {
namespace {

void AppendIndented(std::string& out, int level, const std::string& text) {
  out.append(static_cast<size_t>(level) * 2, ' ');
  out += text;
  out += '\n';
}

void RequestText(const RequestExplanation& r, int level, std::string& out) {
  std::string head = fmt::format("request {}", r.name);
  if (!r.subrequests.empty()) {
    head += " (firstAvailable)";
  } else {
    head += fmt::format(" (class {}, {} {}", r.device_class, r.allocation_mode,
                        r.allocation_mode == "All" ? "" : std::to_string(r.count));
    if (r.allocation_mode == "All") head.pop_back();
    if (r.admin_access) head += ", admin access";
    head += ")";
  }
  head += ": " + r.outcome;
  AppendIndented(out, level, head);
  for (size_t i = 0; i < r.subrequests.size(); ++i) {
    RequestText(r.subrequests[i], level + 1, out);
  }
  for (const CandidateExplanation& c : r.candidates) {
    std::string line =
        fmt::format("{}/{}/{}: {}", c.driver, c.pool, c.device, CandidateStatusName(c.status));
    if (!c.policy_code.empty()) line += " " + c.policy_code;
    if (!c.detail.empty()) line += " (" + c.detail + ")";
    AppendIndented(out, level + 1, line);
  }
}

boost::json::object RequestJson(const RequestExplanation& r) {
  boost::json::object o;
  o["name"] = r.name;
  if (!r.device_class.empty()) o["deviceClassName"] = r.device_class;
  o["allocationMode"] = r.allocation_mode;
  if (r.subrequests.empty()) o["count"] = r.count;
  if (r.admin_access) o["adminAccess"] = true;
  o["outcome"] = r.outcome;
  if (!r.subrequests.empty()) {
    boost::json::array subs;
    for (const RequestExplanation& s : r.subrequests) subs.push_back(RequestJson(s));
    o["subrequests"] = std::move(subs);
    if (r.chosen_subrequest >= 0) o["chosenSubrequest"] = r.chosen_subrequest;
  }
  boost::json::array candidates;
  for (const CandidateExplanation& c : r.candidates) {
    boost::json::object co;
    co["driver"] = c.driver;
    co["pool"] = c.pool;
    co["device"] = c.device;
    co["status"] = std::string(CandidateStatusName(c.status));
    if (!c.policy_code.empty()) co["policyCode"] = c.policy_code;
    if (!c.detail.empty()) co["detail"] = c.detail;
    candidates.push_back(std::move(co));
  }
  if (!candidates.empty()) o["candidates"] = std::move(candidates);
  return o;
}

// A JSON text with `indent` spaces per level (boost::json::serialize writes compact JSON).
void Pretty(const boost::json::value& v, int indent, int level, std::string& out) {
  auto newline = [&](int l) {
    out += '\n';
    out.append(static_cast<size_t>(indent * l), ' ');
  };
  if (v.is_object()) {
    const boost::json::object& o = v.get_object();
    if (o.empty()) {
      out += "{}";
      return;
    }
    out += '{';
    bool first = true;
    for (const auto& kv : o) {
      if (!first) out += ',';
      first = false;
      newline(level + 1);
      out += boost::json::serialize(boost::json::value(kv.key()));
      out += ": ";
      Pretty(kv.value(), indent, level + 1, out);
    }
    newline(level);
    out += '}';
  } else if (v.is_array()) {
    const boost::json::array& a = v.get_array();
    if (a.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    bool first = true;
    for (const auto& item : a) {
      if (!first) out += ',';
      first = false;
      newline(level + 1);
      Pretty(item, indent, level + 1, out);
    }
    newline(level);
    out += ']';
  } else {
    out += boost::json::serialize(v);
  }
}

}  // namespace

std::string_view CandidateStatusName(CandidateStatus status) {
  switch (status) {
    case CandidateStatus::kChosen:
      return "chosen";
    case CandidateStatus::kBindingConditionsUnsupported:
      return "binding-conditions-unsupported";
    case CandidateStatus::kCompatibilityGroupsUnsupported:
      return "compatibility-groups-unsupported";
    case CandidateStatus::kClassSelectorFalse:
      return "class-selector-false";
    case CandidateStatus::kRequestSelectorFalse:
      return "request-selector-false";
    case CandidateStatus::kSelectorError:
      return "selector-error";
    case CandidateStatus::kNodeMismatch:
      return "node-mismatch";
    case CandidateStatus::kAllocated:
      return "already-allocated";
    case CandidateStatus::kInUseByThisAttempt:
      return "in-use-by-this-pod";
    case CandidateStatus::kInUseByThisClaim:
      return "in-use-by-this-claim";
    case CandidateStatus::kCapacity:
      return "capacity";
    case CandidateStatus::kCapacityUnservable:
      return "capacity-unservable";
    case CandidateStatus::kPartitionableDevicesDisabled:
      return "partitionable-devices-disabled";
    case CandidateStatus::kCounters:
      return "counters-exhausted";
    case CandidateStatus::kCompatibilityGroups:
      return "compatibility-groups";
    case CandidateStatus::kTaintNotTolerated:
      return "taint-not-tolerated";
    case CandidateStatus::kConstraint:
      return "constraint-mismatch";
    case CandidateStatus::kPolicy:
      return "policy";
    case CandidateStatus::kEquivalentTried:
      return "equivalent-tried";
    case CandidateStatus::kNotEnoughCandidates:
      return "not-enough-candidates";
    case CandidateStatus::kBacktracked:
      return "backtracked";
    case CandidateStatus::kNotReached:
      return "not-reached";
  }
  return "unknown";
}

std::string Explanation::ToText() const {
  std::string out;
  AppendIndented(
      out, 0, fmt::format("node {}: {}{}", node, outcome, error.empty() ? "" : " (" + error + ")"));
  AppendIndented(out, 0, "pools:");
  if (pools.empty()) AppendIndented(out, 1, "(none reaches this node)");
  for (const PoolExplanation& p : pools) {
    AppendIndented(out, 1,
                   fmt::format("{}/{}: {}{}, {} device(s)", p.driver, p.pool, p.status,
                               p.reason.empty() ? "" : " (" + p.reason + ")", p.devices));
  }
  for (const ClaimExplanation& c : claims) {
    AppendIndented(
        out, 0, fmt::format("claim {}: {}", c.claim, c.allocated ? "allocated" : "not allocated"));
    for (const std::string& constraint : c.constraints) {
      AppendIndented(out, 1, "constraint " + constraint);
    }
    for (const RequestExplanation& r : c.requests) RequestText(r, 1, out);
  }
  AppendIndented(out, 0, "summary: " + summary);
  return out;
}

std::string Explanation::ToJson(int indent) const {
  boost::json::object o;
  o["node"] = node;
  o["outcome"] = outcome;
  if (!error.empty()) o["error"] = error;
  boost::json::array pools_json;
  for (const PoolExplanation& p : pools) {
    boost::json::object po;
    po["driver"] = p.driver;
    po["pool"] = p.pool;
    po["status"] = p.status;
    if (!p.reason.empty()) po["reason"] = p.reason;
    po["devices"] = p.devices;
    pools_json.push_back(std::move(po));
  }
  o["pools"] = std::move(pools_json);
  boost::json::array claims_json;
  for (const ClaimExplanation& c : claims) {
    boost::json::object co;
    co["claim"] = c.claim;
    co["allocated"] = c.allocated;
    if (!c.constraints.empty()) {
      boost::json::array cs;
      for (const std::string& s : c.constraints) cs.push_back(boost::json::value(s));
      co["constraints"] = std::move(cs);
    }
    boost::json::array rs;
    for (const RequestExplanation& r : c.requests) rs.push_back(RequestJson(r));
    co["requests"] = std::move(rs);
    claims_json.push_back(std::move(co));
  }
  o["claims"] = std::move(claims_json);
  o["summary"] = summary;
  boost::json::value v(std::move(o));
  if (indent <= 0) return boost::json::serialize(v);
  std::string out;
  Pretty(v, indent, 0, out);
  out += '\n';
  return out;
}

}  // namespace draplane::allocator
