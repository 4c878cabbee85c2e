// The explanation of one allocation attempt on one node: structured data a scheduler can turn
// into Pod events, a store can keep and a user can read (docs/design/allocator.md §10).
//
// Per claim, per request (and per subrequest of a firstAvailable request): the devices of the
// node's pools in search order and, for each, whether it was chosen or the first reason it was
// rejected; which subrequest was chosen and why earlier ones failed; the pools and their state;
// and a one-paragraph summary. Rendered as text (for humans) or JSON (for tools).
//
// Thread-safety: plain values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace draplane::allocator {

// The reason a device did not end up in the result (or that it did: kChosen).
enum class CandidateStatus {
  kChosen,
  kBindingConditionsUnsupported,
  kCompatibilityGroupsUnsupported,
  kClassSelectorFalse,
  kRequestSelectorFalse,
  kSelectorError,
  kNodeMismatch,
  kAllocated,
  kInUseByThisAttempt,
  kInUseByThisClaim,
  kCapacity,
  // Consumable capacity the device can never give the request (its request policy, a capacity it
  // does not have, more than its total): unlike kCapacity, no release makes room.
  kCapacityUnservable,
  kPartitionableDevicesDisabled,
  kCounters,
  kCompatibilityGroups,
  kTaintNotTolerated,
  kConstraint,
  kPolicy,
  kEquivalentTried,
  kNotEnoughCandidates,
  // Chosen during the search and given up again: no complete allocation of the request (with
  // the claim's constraints and the other requests) could be built with it.
  kBacktracked,
  kNotReached,  // the search ended (solution found or earlier failure) before looking at it
};

// Stable lower-case names used in JSON, e.g. "class-selector-false".
std::string_view CandidateStatusName(CandidateStatus status);

struct CandidateExplanation {
  std::string driver;
  std::string pool;
  std::string device;
  CandidateStatus status = CandidateStatus::kNotReached;
  // Details in words, e.g. "selector #1 is false", "taint gpu=bad:NoSchedule not tolerated",
  // "matchAttribute gpu.example.com/numa: value 1 does not match 0".
  std::string detail;
  // kPolicy: the refusing policy's reason code (policy.h), e.g. "quota".
  std::string policy_code;
};

struct RequestExplanation {
  std::string name;  // "req" or "req/sub"
  std::string device_class;
  std::string allocation_mode;  // "ExactCount" or "All"
  int64_t count = 0;            // devices needed (for All: the devices found)
  bool admin_access = false;
  // "allocated", "unsatisfiable", or "not tried" (a subrequest after the chosen one).
  std::string outcome;
  std::vector<CandidateExplanation> candidates;
  // firstAvailable: the subrequests in order; `chosen_subrequest` is an index into them or -1.
  std::vector<RequestExplanation> subrequests;
  int chosen_subrequest = -1;
};

struct ClaimExplanation {
  std::string claim;  // "namespace/name"
  bool allocated = false;
  std::vector<RequestExplanation> requests;
  std::vector<std::string> constraints;  // "matchAttribute gpu.example.com/numa (req-0, req-1)"
};

struct PoolExplanation {
  std::string driver;
  std::string pool;
  // "usable", "incomplete", "invalid".
  std::string status;
  std::string reason;  // for invalid pools: upstream's reason
  int devices = 0;     // devices on slices this node can use
};

struct Explanation {
  std::string node;
  // "allocated", "unsatisfiable" or "node-error". (A fatal error is a Status, not an outcome.)
  std::string outcome;
  std::string error;  // for "node-error": the message
  std::vector<PoolExplanation> pools;
  std::vector<ClaimExplanation> claims;
  // One paragraph a human can act on.
  std::string summary;

  // Multi-line text for terminals.
  std::string ToText() const;
  // A JSON object (compact when indent is 0).
  std::string ToJson(int indent = 2) const;
};

}  // namespace draplane::allocator
