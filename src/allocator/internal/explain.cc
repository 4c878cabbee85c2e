#include "allocator/internal/explain.h"

#include <fmt/core.h>

#include <map>

namespace draplane::allocator::internal {

ExplainRecorder::ExplainRecorder(size_t num_keys, size_t num_devices)
    : first_(num_keys, std::vector<std::pair<Reason, std::string>>(num_devices)),
      chosen_(num_keys, std::vector<bool>(num_devices)) {}

void ExplainRecorder::Rejected(uint32_t key, DeviceIndex device, Reason reason,
                               const std::string& detail) {
  auto& slot = first_[key][device];
  if (slot.first == Reason::kNone) slot = {reason, detail};
}

void ExplainRecorder::PolicyRejected(uint32_t key, DeviceIndex device,
                                     const PolicyRejection& rejection) {
  if (first_[key][device].first != Reason::kNone) return;
  first_[key][device] = {Reason::kPolicy, rejection.message};
  policy_codes_[{key, device}] = rejection.code;
}

std::string_view ExplainRecorder::PolicyCode(uint32_t key, DeviceIndex device) const {
  auto it = policy_codes_.find({key, device});
  return it == policy_codes_.end() ? std::string_view() : std::string_view(it->second);
}

void ExplainRecorder::Chosen(uint32_t key, DeviceIndex device) { chosen_[key][device] = true; }

CandidateStatus StatusOf(Reason reason) {
  switch (reason) {
    case Reason::kNone:
      return CandidateStatus::kNotReached;
    case Reason::kBindingConditionsUnsupported:
      return CandidateStatus::kBindingConditionsUnsupported;
    case Reason::kCompatibilityGroupsUnsupported:
      return CandidateStatus::kCompatibilityGroupsUnsupported;
    case Reason::kClassSelectorFalse:
      return CandidateStatus::kClassSelectorFalse;
    case Reason::kRequestSelectorFalse:
      return CandidateStatus::kRequestSelectorFalse;
    case Reason::kSelectorError:
      return CandidateStatus::kSelectorError;
    case Reason::kNodeMismatch:
      return CandidateStatus::kNodeMismatch;
    case Reason::kAllocated:
      return CandidateStatus::kAllocated;
    case Reason::kInUseByThisAttempt:
      return CandidateStatus::kInUseByThisAttempt;
    case Reason::kInUseByThisClaim:
      return CandidateStatus::kInUseByThisClaim;
    case Reason::kCapacity:
      return CandidateStatus::kCapacity;
    case Reason::kCapacityUnservable:
      return CandidateStatus::kCapacityUnservable;
    case Reason::kPartitionableDevicesDisabled:
      return CandidateStatus::kPartitionableDevicesDisabled;
    case Reason::kCounters:
      return CandidateStatus::kCounters;
    case Reason::kCompatibilityGroups:
      return CandidateStatus::kCompatibilityGroups;
    case Reason::kTaintNotTolerated:
      return CandidateStatus::kTaintNotTolerated;
    case Reason::kConstraint:
      return CandidateStatus::kConstraint;
    case Reason::kPolicy:
      return CandidateStatus::kPolicy;
    case Reason::kEquivalentTried:
      return CandidateStatus::kEquivalentTried;
    case Reason::kNotEnoughCandidates:
      return CandidateStatus::kNotEnoughCandidates;
    case Reason::kChosen:
      return CandidateStatus::kChosen;
  }
  return CandidateStatus::kNotReached;
}

namespace {

// Words for a status in the summary, e.g. "rejected by the class selectors".
std::string_view Phrase(CandidateStatus s) {
  switch (s) {
    case CandidateStatus::kChosen:
      return "chosen";
    case CandidateStatus::kBindingConditionsUnsupported:
      return "need binding conditions (feature off)";
    case CandidateStatus::kCompatibilityGroupsUnsupported:
      return "involve compatibility groups (feature off)";
    case CandidateStatus::kClassSelectorFalse:
      return "do not match the device class";
    case CandidateStatus::kRequestSelectorFalse:
      return "do not match the request's selectors";
    case CandidateStatus::kSelectorError:
      return "fail CEL evaluation";
    case CandidateStatus::kNodeMismatch:
      return "are not available on this node";
    case CandidateStatus::kAllocated:
      return "are already allocated";
    case CandidateStatus::kInUseByThisAttempt:
      return "were taken by another request of this Pod";
    case CandidateStatus::kInUseByThisClaim:
      return "were taken by the same claim";
    case CandidateStatus::kCapacity:
      return "lack consumable capacity";
    case CandidateStatus::kCapacityUnservable:
      return "can never give the requested capacity";
    case CandidateStatus::kPartitionableDevicesDisabled:
      return "consume counters (partitionable devices off)";
    case CandidateStatus::kCounters:
      return "exceed their shared counters";
    case CandidateStatus::kCompatibilityGroups:
      return "are incompatible with devices on their counter sets";
    case CandidateStatus::kTaintNotTolerated:
      return "have a taint the request does not tolerate";
    case CandidateStatus::kConstraint:
      return "break a claim constraint";
    case CandidateStatus::kPolicy:
      return "are refused by a policy";
    case CandidateStatus::kEquivalentTried:
      return "are equivalent to devices that failed";
    case CandidateStatus::kNotEnoughCandidates:
      return "were too few to finish the request";
    case CandidateStatus::kBacktracked:
      return "were tried but no complete allocation includes them";
    case CandidateStatus::kNotReached:
      return "were not reached";
  }
  return "";
}

RequestExplanation ExplainKey(const ExplainInputs& in, uint32_t k,
                              const std::vector<DeviceChoice>* final_choices) {
  const Problem& p = *in.problem;
  const RequestKey& key = p.keys[k];
  RequestExplanation e;
  e.name = key.FullName();
  e.device_class = key.device_class;
  e.allocation_mode = in.keys[k].allocation_mode;
  e.count = key.all_mode ? key.num_devices : in.keys[k].count;
  e.admin_access = key.admin_access;
  bool touched = false;
  for (DeviceIndex d = 0; d < p.devices.size(); ++d) {
    CandidateExplanation c;
    const Pool& pool = p.pools[p.devices[d].pool];
    c.driver = pool.driver;
    c.pool = pool.name;
    c.device = p.devices[d].name;
    bool chosen = false;
    if (final_choices != nullptr) {
      for (const DeviceChoice& choice : *final_choices) {
        if (choice.key == k && choice.device == d) chosen = true;
      }
    }
    if (chosen) {
      c.status = CandidateStatus::kChosen;
      touched = true;
    } else if (k < p.static_rejections.size() && p.static_rejections[k][d].first != Reason::kNone) {
      c.status = StatusOf(p.static_rejections[k][d].first);
      c.detail = p.static_rejections[k][d].second;
    } else if (in.recorder != nullptr && in.recorder->First(k, d).first != Reason::kNone) {
      c.status = StatusOf(in.recorder->First(k, d).first);
      c.detail = in.recorder->First(k, d).second;
      c.policy_code = std::string(in.recorder->PolicyCode(k, d));
      touched = true;
    } else if (in.recorder != nullptr && in.recorder->WasChosen(k, d)) {
      c.status = CandidateStatus::kBacktracked;
      c.detail = "chosen, then given up: the request could not be completed with it";
      touched = true;
    } else {
      c.status = CandidateStatus::kNotReached;
    }
    if (c.status == CandidateStatus::kTaintNotTolerated && c.detail.empty()) {
      c.detail = "taint not tolerated";
    }
    e.candidates.push_back(std::move(c));
  }
  // A device skipped as interchangeable with one that failed (search symmetry) fails the same
  // way: it takes that device's status, so that counts and summaries do not report it as
  // available ("6 devices available, enough for this request alone" on a full GPU).
  std::map<uint32_t, DeviceIndex> tried;  // symmetry class -> the first device of it that failed
  for (DeviceIndex d = 0; d < p.devices.size(); ++d) {
    const CandidateStatus s = e.candidates[d].status;
    // Only a device the search tried to allocate stands for its class: one skipped earlier as in
    // use (by another claim, request or this claim) failed for a reason its twins do not share.
    if (p.devices[d].symmetry_class != kNone && s != CandidateStatus::kEquivalentTried &&
        s != CandidateStatus::kNotReached && s != CandidateStatus::kChosen &&
        s != CandidateStatus::kAllocated && s != CandidateStatus::kInUseByThisAttempt &&
        s != CandidateStatus::kInUseByThisClaim) {
      tried.emplace(p.devices[d].symmetry_class, d);
    }
  }
  for (DeviceIndex d = 0; d < p.devices.size(); ++d) {
    CandidateExplanation& c = e.candidates[d];
    if (c.status != CandidateStatus::kEquivalentTried) continue;
    auto it = tried.find(p.devices[d].symmetry_class);
    if (it == tried.end()) continue;
    const CandidateExplanation& rep = e.candidates[it->second];
    c.status = rep.status;
    c.detail = "skipped as interchangeable with " + rep.device +
               (rep.detail.empty() ? "" : " (" + rep.detail + ")");
    c.policy_code = rep.policy_code;
  }
  bool empty = key.all_mode ? key.all_devices.empty() : key.candidates.empty();
  e.outcome = touched || empty ? "unsatisfiable" : "not tried";
  return e;
}

// "2 do not match the device class, 1 is already allocated".
std::string CountReasons(const RequestExplanation& r) {
  std::map<CandidateStatus, int> counts;
  for (const CandidateExplanation& c : r.candidates) ++counts[c.status];
  std::string out;
  for (const auto& [status, n] : counts) {
    if (status == CandidateStatus::kChosen) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", n, Phrase(status));
  }
  return out;
}

std::string Summary(const Explanation& e) {
  if (e.outcome == "allocated") {
    std::string out = fmt::format("All {} claim(s) fit on node {}.", e.claims.size(), e.node);
    for (const ClaimExplanation& c : e.claims) {
      std::vector<std::string> picks;
      for (const RequestExplanation& r : c.requests) {
        const RequestExplanation* chosen = &r;
        if (!r.subrequests.empty() && r.chosen_subrequest >= 0) {
          chosen = &r.subrequests[static_cast<size_t>(r.chosen_subrequest)];
        }
        for (const CandidateExplanation& cand : chosen->candidates) {
          if (cand.status == CandidateStatus::kChosen) {
            picks.push_back(
                fmt::format("{}={}/{}/{}", chosen->name, cand.driver, cand.pool, cand.device));
          }
        }
        if (!r.subrequests.empty() && r.chosen_subrequest > 0) {
          picks.back() +=
              fmt::format(" (fallback #{}: earlier alternatives did not fit)", r.chosen_subrequest);
        }
      }
      out += fmt::format(" Claim {} gets ", c.claim);
      for (size_t i = 0; i < picks.size(); ++i) out += (i > 0 ? ", " : "") + picks[i];
      out += ".";
    }
    return out;
  }
  std::string out = fmt::format("The claims cannot be allocated on node {}", e.node);
  if (e.outcome == "node-error") out += " (" + e.error + ")";
  out += ".";
  int usable_pools = 0;
  for (const PoolExplanation& p : e.pools) {
    if (p.status == "usable") {
      ++usable_pools;
    } else {
      out += fmt::format(" Pool {}/{} is {}{}.", p.driver, p.pool, p.status,
                         p.reason.empty() ? "" : ": " + p.reason);
    }
  }
  if (usable_pools == 0) {
    out +=
        " No usable resource pool offers devices to this node: check that the driver "
        "publishes ResourceSlices for it.";
    return out;
  }
  for (const ClaimExplanation& c : e.claims) {
    for (const RequestExplanation& r : c.requests) {
      const std::vector<RequestExplanation> single = {r};
      const std::vector<RequestExplanation>& alternatives =
          r.subrequests.empty() ? single : r.subrequests;
      for (const RequestExplanation& a : alternatives) {
        if (a.outcome == "not tried") continue;
        int candidates = 0;
        for (const CandidateExplanation& cand : a.candidates) {
          if (cand.status != CandidateStatus::kClassSelectorFalse &&
              cand.status != CandidateStatus::kRequestSelectorFalse &&
              cand.status != CandidateStatus::kNodeMismatch &&
              cand.status != CandidateStatus::kBindingConditionsUnsupported) {
            ++candidates;
          }
        }
        out += fmt::format(" Claim {} request {} needs {} device(s) of class {}", c.claim, a.name,
                           a.allocation_mode == "All" ? "all matching" : std::to_string(a.count),
                           a.device_class);
        out += fmt::format(": {} of {} device(s) match", candidates, a.candidates.size());
        std::string reasons = CountReasons(a);
        if (!reasons.empty()) out += " (" + reasons + ")";
        out += ".";
      }
    }
  }
  return out;
}

}  // namespace

Explanation BuildExplanation(const ExplainInputs& in) {
  Explanation e;
  e.node = in.node;
  e.outcome = in.outcome;
  e.error = in.error;
  for (const GatheredPool& pool : *in.pools) {
    PoolExplanation p;
    p.driver = pool.driver;
    p.pool = pool.pool;
    p.status = pool.incomplete ? "incomplete" : pool.invalid ? "invalid" : "usable";
    p.reason = pool.invalid_reason;
    for (const SliceEntry* s : pool.targeting) {
      p.devices += static_cast<int>(s->spec().devices.size());
    }
    e.pools.push_back(std::move(p));
  }
  const Problem& problem = *in.problem;
  const bool solved = in.result != nullptr && in.result->solved;
  for (uint32_t c = 0; c < problem.claims.size(); ++c) {
    const Claim& claim = problem.claims[c];
    ClaimExplanation ce;
    ce.claim = claim.name;
    ce.allocated = solved;
    const std::vector<DeviceChoice>* choices = solved ? &in.result->choices[c] : nullptr;
    for (uint32_t r = 0; r < claim.requests.size(); ++r) {
      const Request& request = claim.requests[r];
      if (!request.has_subrequests) {
        RequestExplanation re = ExplainKey(in, request.keys[0], choices);
        if (solved) re.outcome = "allocated";
        ce.requests.push_back(std::move(re));
        continue;
      }
      RequestExplanation re;
      const RequestKey& first = problem.keys[request.keys[0]];
      re.name = first.parent;
      re.allocation_mode = "FirstAvailable";
      int chosen = solved ? in.result->selected_subrequest[c][r] : -1;
      re.chosen_subrequest = chosen;
      re.outcome = solved ? "allocated" : "unsatisfiable";
      for (size_t s = 0; s < request.keys.size(); ++s) {
        RequestExplanation sub = ExplainKey(in, request.keys[s], choices);
        if (solved) {
          if (static_cast<int>(s) == chosen) {
            sub.outcome = "allocated";
          } else if (static_cast<int>(s) > chosen) {
            sub.outcome = "not tried";
          } else {
            sub.outcome = "unsatisfiable";
          }
        }
        re.subrequests.push_back(std::move(sub));
      }
      if (chosen >= 0) re.device_class = re.subrequests[static_cast<size_t>(chosen)].device_class;
      ce.requests.push_back(std::move(re));
    }
    for (const Constraint& constraint : claim.constraints) {
      std::string scope;
      for (const Request& request : claim.requests) {
        for (uint32_t k : request.keys) {
          size_t index = &constraint - claim.constraints.data();
          if ((problem.keys[k].constraint_scope >> index) & 1) {
            scope += (scope.empty() ? "" : ", ") + problem.keys[k].FullName();
          }
        }
      }
      ce.constraints.push_back(fmt::format(
          "{} {} ({})",
          constraint.kind == Constraint::Kind::kMatch ? "matchAttribute" : "distinctAttribute",
          constraint.attribute, scope));
    }
    e.claims.push_back(std::move(ce));
  }
  e.summary = Summary(e);
  return e;
}

void RenameClaims(Explanation& explanation, const std::vector<std::string>& claims) {
  bool renamed = false;
  for (size_t c = 0; c < explanation.claims.size() && c < claims.size(); ++c) {
    if (explanation.claims[c].claim == claims[c]) continue;
    explanation.claims[c].claim = claims[c];
    renamed = true;
  }
  if (renamed) explanation.summary = Summary(explanation);
}

}  // namespace draplane::allocator::internal
