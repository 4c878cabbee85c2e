#include "scheduler/explain.h"

#include <algorithm>
#include <utility>

#include "allocator/hold.h"

namespace draplane::scheduler {
namespace {

using allocator::CandidateExplanation;
using allocator::CandidateStatus;
using allocator::RequestExplanation;

// True when the device is a candidate at all: it matches the class and request selectors and
// is offered to the node.
bool Matches(CandidateStatus s) {
  return s != CandidateStatus::kClassSelectorFalse && s != CandidateStatus::kRequestSelectorFalse &&
         s != CandidateStatus::kNodeMismatch &&
         s != CandidateStatus::kBindingConditionsUnsupported &&
         s != CandidateStatus::kCompatibilityGroupsUnsupported &&
         s != CandidateStatus::kSelectorError;
}

std::string_view Phrase(CandidateStatus s, bool plural) {
  switch (s) {
    case CandidateStatus::kClassSelectorFalse:
      return plural ? "do not match the device class" : "does not match the device class";
    case CandidateStatus::kRequestSelectorFalse:
      return plural ? "do not match the request's selectors"
                    : "does not match the request's selectors";
    case CandidateStatus::kSelectorError:
      return plural ? "fail selector evaluation" : "fails selector evaluation";
    case CandidateStatus::kNodeMismatch:
      return plural ? "are not offered to the node" : "is not offered to the node";
    case CandidateStatus::kBindingConditionsUnsupported:
      return plural ? "need binding conditions" : "needs binding conditions";
    case CandidateStatus::kCompatibilityGroupsUnsupported:
      return plural ? "need compatibility groups" : "needs compatibility groups";
    case CandidateStatus::kAllocated:
      return plural ? "are already allocated" : "is already allocated";
    case CandidateStatus::kInUseByThisAttempt:
    case CandidateStatus::kInUseByThisClaim:
      return plural ? "are taken by another request of the pod"
                    : "is taken by another request of the pod";
    case CandidateStatus::kCapacity:
      return plural ? "lack capacity" : "lacks capacity";
    case CandidateStatus::kCapacityUnservable:
      return "cannot give the requested capacity";
    case CandidateStatus::kPartitionableDevicesDisabled:
      return plural ? "need partitionable devices" : "needs partitionable devices";
    case CandidateStatus::kCounters:
      return plural ? "exceed shared counters" : "exceeds shared counters";
    case CandidateStatus::kCompatibilityGroups:
      return plural ? "are incompatible with devices sharing their counters"
                    : "is incompatible with devices sharing its counters";
    case CandidateStatus::kTaintNotTolerated:
      return plural ? "have an untolerated taint" : "has an untolerated taint";
    case CandidateStatus::kConstraint:
      return plural ? "break a claim constraint" : "breaks a claim constraint";
    case CandidateStatus::kPolicy:
      return plural ? "are refused by a policy" : "is refused by a policy";
    case CandidateStatus::kEquivalentTried:
    case CandidateStatus::kNotEnoughCandidates:
    case CandidateStatus::kBacktracked:
    case CandidateStatus::kNotReached:
    case CandidateStatus::kChosen:
      return "";
  }
  return "";
}

// "4 do not match the request's selectors, 1 is already allocated" for the given statuses.
// Policy refusals say which rule refused and its numbers ("1 refused by quota team-a/devices
// h100.deviceclass.resource.k8s.io/devices 1/1"), one group per distinct refusal.
std::string Count(const RequestExplanation& r, bool matching) {
  std::map<CandidateStatus, int> counts;
  std::map<std::pair<std::string, std::string>, int> refusals;  // (code, detail)
  for (const CandidateExplanation& c : r.candidates) {
    if (Matches(c.status) != matching) continue;
    if (Phrase(c.status, false).empty()) continue;
    if (c.status == CandidateStatus::kPolicy && !c.detail.empty()) {
      ++refusals[{c.policy_code, c.detail}];
      continue;
    }
    ++counts[c.status];
  }
  std::string out;
  for (const auto& [status, n] : counts) {
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + " " + std::string(Phrase(status, n != 1));
  }
  for (const auto& [refusal, n] : refusals) {
    if (!out.empty()) out += ", ";
    // A hold's detail says what it is ("held for team-b/p6 since ..."); other policies' details
    // name the policy ("quota team-a/devices ...").
    out += std::to_string(n) +
           (refusal.first == allocator::kHoldPolicyCode ? (n == 1 ? " is " : " are ")
                                                        : std::string(" refused by ")) +
           refusal.second;
  }
  return out;
}

std::string DescribeAlternative(const RequestExplanation& r) {
  int matching = 0;
  int blocked = 0;
  for (const CandidateExplanation& c : r.candidates) {
    if (!Matches(c.status)) continue;
    ++matching;
    if (!Phrase(c.status, false).empty()) ++blocked;
  }
  if (matching == 0) {
    std::string out = "no device matches";
    std::string why = Count(r, /*matching=*/false);
    if (!why.empty()) out += " (" + why + ")";
    if (r.candidates.empty()) out = "no devices";
    return out;
  }
  std::string needed = r.allocation_mode == "All" ? "all" : std::to_string(r.count);
  int available = matching - blocked;
  // Enough devices for this request: what failed on the node was another request, claim or
  // constraint ("4 of 1 needed device available" read as a shortage).
  if (r.allocation_mode == "All" ? blocked == 0 : available >= r.count) {
    return std::to_string(available) + " device" + (available == 1 ? "" : "s") +
           " available, enough for this request alone";
  }
  std::string out = std::to_string(available) + " of " + needed + " needed device" +
                    (r.count == 1 && r.allocation_mode != "All" ? "" : "s") + " available";
  std::string why = Count(r, /*matching=*/true);
  if (!why.empty()) out += " (" + why + ")";
  return out;
}

std::string Request(const RequestExplanation& r) {
  if (r.subrequests.empty()) return "request " + r.name + ": " + DescribeAlternative(r);
  std::string out = "request " + r.name + ": ";
  bool first = true;
  for (const RequestExplanation& sub : r.subrequests) {
    if (sub.outcome == "not tried") continue;
    if (!first) out += ", ";
    first = false;
    std::string short_name = sub.name.substr(sub.name.find('/') + 1);
    out += "subrequest " + short_name + ": " + DescribeAlternative(sub);
  }
  if (first) out += "not tried";
  return out;
}

}  // namespace

std::string SummarizeDevices(const allocator::Explanation& e,
                             const std::vector<std::string>& claim_names) {
  if (e.outcome == "node-error") return "invalid resource pools";
  if (e.outcome == "error") return e.error;
  bool usable = false;
  for (const allocator::PoolExplanation& p : e.pools) usable = usable || p.status == "usable";
  if (!usable) return "no devices offered to the node";
  std::string out;
  for (size_t k = 0; k < e.claims.size(); ++k) {
    const allocator::ClaimExplanation& c = e.claims[k];
    if (c.allocated) continue;
    std::string part;
    for (const RequestExplanation& r : c.requests) {
      bool failed = r.outcome == "unsatisfiable" ||
                    (!r.subrequests.empty() && r.chosen_subrequest < 0 && r.outcome != "not tried");
      if (!failed) continue;
      if (!part.empty()) part += "; ";
      part += Request(r);
    }
    if (part.empty()) part = "constraints cannot be met";
    if (e.claims.size() > 1) {
      part = "claim " + (k < claim_names.size() ? claim_names[k] : c.claim) + ": " + part;
    }
    if (!out.empty()) out += "; ";
    out += part;
  }
  if (out.empty()) out = "cannot allocate all claims";
  return out;
}

std::string FailedSchedulingMessage(const Diagnosis& d) {
  std::string out = "0/" + std::to_string(d.total_nodes) + " nodes are available: ";
  if (d.pre_filter) return out + d.pre_filter->Message() + ".";
  if (d.total_nodes == 0) return out + "no nodes in the cluster.";
  std::map<std::string, int> groups;
  for (const NodeVerdict& v : d.nodes) ++groups[v.status.Message()];
  std::vector<std::pair<int, std::string>> sorted;
  for (auto& [reason, n] : groups) sorted.push_back({n, reason});
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i > 0) out += "; ";
    out += std::to_string(sorted[i].first) + (sorted[i].first == 1 ? " node: " : " nodes: ") +
           sorted[i].second;
  }
  if (sorted.empty()) out += "no node was evaluated";
  return out + ".";
}

}  // namespace draplane::scheduler
