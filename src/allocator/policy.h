// Policy constraints: caller-supplied rules checked inside the search (docs/design/allocator.md
// §9), the seam for tenant quotas, holds, grants and group tier pins.
//
// A policy has the same add/remove shape as upstream's claim constraints: `Add` is called when
// the search is about to choose a device for a request (after the claim's own constraints
// accepted it); a rejection makes the search try the next device, the next subrequest or the next
// combination, and the reason appears in the explanation. Every accepted `Add` is matched by
// exactly one `Remove` with the same candidate when the search backtracks over it, in
// last-in-first-out order; the devices of the final solution are never removed.
//
// Thread-safety: called from the thread running Allocate, never concurrently.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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
};

class PolicyConstraint {
 public:
  virtual ~PolicyConstraint() = default;
  // A short name used in explanations, e.g. "quota team-a".
  virtual std::string_view name() const = 0;
  // Returns nullopt to accept (and track) the candidate, or the reason for rejecting it.
  virtual std::optional<std::string> Add(const PolicyCandidate& candidate) = 0;
  // Forgets a candidate accepted earlier.
  virtual void Remove(const PolicyCandidate& candidate) = 0;
};

}  // namespace draplane::allocator
