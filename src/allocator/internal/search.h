// The depth-first search over (claim, request, subrequest, device) of upstream's experimental
// allocator (`allocateOne`, `allocateDevice` in `allocator_experimental.go`), on a resolved
// `Problem`, with the bounds of docs/design/allocator.md §4.1 that keep the first solution and
// every error upstream's order produces.
//
// Thread-safety: Search() is reentrant; the observer and policies are called on the calling
// thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "allocator/features.h"
#include "allocator/internal/problem.h"
#include "allocator/policy.h"
#include "common/status.h"

namespace draplane::allocator::internal {

// Receives what the search does, for explanations. All calls are optional to act on.
class SearchObserver {
 public:
  virtual ~SearchObserver() = default;
  // `device` was rejected for `key`; `detail` says why in words (may be empty).
  virtual void Rejected(uint32_t key, DeviceIndex device, Reason reason,
                        const std::string& detail) = 0;
  // `device` was tentatively chosen for `key`.
  virtual void Chosen(uint32_t key, DeviceIndex device) = 0;
  // A policy refused `device` for `key` (Add), or the whole key (CheckRequest: once per
  // candidate).
  virtual void PolicyRejected(uint32_t key, DeviceIndex device, const PolicyRejection& rejection) {
    Rejected(key, device, Reason::kPolicy, rejection.message);
  }
};

struct SearchOptions {
  Features features;
  // Policy constraints called after the claim constraints and the capacity check (policy.h).
  // Not owned. Problem::facts and Problem::plan_consumed must be filled when set.
  std::vector<PolicyConstraint*> policies;
  SearchObserver* observer = nullptr;  // not owned; may be null
  // Apply the bounds of §4.1 when they are exact for the problem (tests turn them off to compare
  // against the plain walk).
  bool prune = true;
  // Upper bound on remembered infeasible sub-states.
  size_t memo_limit = size_t{1} << 18;
  // Give up with ResourceExhausted once the walk has made this many allocateOne steps; 0: no
  // limit. The deterministic counterpart of upstream's Filter timeout.
  int64_t max_steps = 0;
};

struct SearchStats {
  int64_t allocate_one_calls = 0;  // upstream's NumAllocateOneInvocations, for our walk
  int64_t devices_tried = 0;       // allocateDevice calls
  int64_t count_bound_prunes = 0;
  int64_t symmetry_skips = 0;
  int64_t memo_hits = 0;
  int64_t memo_entries = 0;
  int64_t policy_rejections = 0;  // devices or requests a policy refused
  bool pruning_enabled = false;
};

struct DeviceChoice {
  uint32_t key = 0;
  DeviceIndex device = 0;
  bool shared = false;    // a share of a multi-allocatable device (gets a share ID)
  uint32_t plan = kNone;  // consumed capacity (Problem::plans) when shared
};

struct SearchResult {
  bool solved = false;
  // Per claim, in allocation order.
  std::vector<std::vector<DeviceChoice>> choices;
  // Per claim and request: the chosen subrequest, -1 for a request without subrequests.
  std::vector<std::vector<int>> selected_subrequest;
  SearchStats stats;
};

// Runs the search. Returns the first solution in upstream's order, or solved=false when there is
// none. A fatal error (a CEL error reached, an `All` device breaking a claim constraint, or the
// max-size signal escaping the first claim) is returned as FailedPrecondition with upstream's
// message.
StatusOr<SearchResult> Search(const Problem& problem, const SearchOptions& options);

}  // namespace draplane::allocator::internal
