// Policy constraints: caller-supplied rules checked inside the search (docs/design/allocator.md
// §9), the seam for tenant quotas (quota.h), holds, grants and group tier pins.
//
// A policy has the same add/remove shape as upstream's claim constraints: `Add` is called when
// the search is about to choose a device for a request (after the claim's own constraints
// accepted it); a rejection makes the search try the next device, the next subrequest or the next
// combination, and the rejection (its code and message) appears in the explanation. Every
// accepted `Add` is matched by exactly one `Remove` with the same candidate, in last-in-first-out
// order: when the search backtracks over it, or after the search returned (the devices of the
// final solution included), so a policy's state is the same before and after each Allocate call.
// `CheckRequest` lets a policy refuse a whole request or subrequest before its devices are tried
// (it must refuse only what `Add` would refuse for every device of it). The search asks only where
// the node has enough available devices for the request: elsewhere it fails whatever a policy
// says, and no refusal is counted or explained there.
//
// Policies never change which solution comes first among the ones they accept: the search keeps
// upstream's order and bounds that are exact under policies (docs/design/allocator.md §4.1, §9).
//
// Thread-safety: called from the thread running Allocate, never concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "allocator/charges.h"

namespace draplane::allocator {

// A device the search is about to choose, as a policy sees it. Views stay valid for the call.
struct PolicyCandidate {
  int claim_index = 0;            // position in the claims given to Allocate
  std::string_view claim;         // "namespace/name"
  std::string_view request;       // "req" or "req/sub"
  std::string_view device_class;  // the (sub)request's class
  std::string_view driver;
  std::string_view pool;
  std::string_view device;
  bool admin_access = false;
  bool shared = false;  // a share of a multi-allocatable device
  // What the charging rules read (charges.h): the device's counters and capacities, and for a
  // share the capacity it consumes (by published name; null for an exclusive device).
  const DeviceFacts* facts = nullptr;
  const ResourceList* consumed = nullptr;
};

// A request or subrequest the search is about to try.
struct PolicyRequest {
  int claim_index = 0;
  std::string_view claim;
  std::string_view request;  // "req" or "req/sub"
  std::string_view device_class;
  int64_t count = 0;  // devices it needs (All: the devices found for it)
  bool admin_access = false;
};

// Why a policy refused a device or request.
struct PolicyRejection {
  std::string code;     // short and stable, for tools and metrics, e.g. "quota"
  std::string message;  // for people, e.g. "quota team-a/devices h100...devices 1/1"
};

class PolicyConstraint {
 public:
  virtual ~PolicyConstraint() = default;
  // A short name used in explanations, e.g. "quota team-a".
  virtual std::string_view name() const = 0;
  // Returns nullopt to accept (and track) the candidate, or why it is refused.
  virtual std::optional<PolicyRejection> Add(const PolicyCandidate& candidate) = 0;
  // Forgets a candidate accepted earlier.
  virtual void Remove(const PolicyCandidate& candidate) = 0;
  // Returns why the request cannot get any device in the current state, or nullopt.
  virtual std::optional<PolicyRejection> CheckRequest(const PolicyRequest& request) {
    (void)request;
    return std::nullopt;
  }
};

}  // namespace draplane::allocator
