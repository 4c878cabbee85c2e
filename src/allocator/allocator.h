// The allocator: which devices do the claims of one Pod get on one node?
//
// Semantics are those of upstream's structured allocator in its most complete variant
// (`k8s.io/dynamic-resource-allocation/structured/internal/experimental`, 1.36+ search order),
// with its known bugs fixed; docs/design/allocator.md describes the algorithm, the bounds that
// keep the search fast without changing its first solution, and the caches.
//
// Usage, as a scheduler holds it:
//
//   Snapshot snapshot;              // long-lived; SetClass / AddSlice / UpdateSlice / RemoveSlice
//   AllocatedState allocated;       // long-lived; AddAllocation / RemoveAllocation per claim
//   ...per Pod attempt:
//   std::unique_ptr<Allocator> a = NewAllocator(snapshot, claims, features);
//   for (const Node& node : nodes) {
//     StatusOr<Outcome> o = a->Allocate(node, allocated, {.explain = false});
//     if (!o.ok()) break;           // fatal: abort the Pod's attempt (upstream "other error")
//     if (o->kind == Outcome::Kind::kAllocated) ...   // *o->results: one per claim
//   }
//   ...after binding: allocated.AddAllocation(result) for each claim.
//
// The snapshot and the allocated state are only read by Allocate, except for the snapshot's
// caches; Allocate never changes what other calls would compute.
//
// Thread-safety: an Allocator and its Snapshot are used from one thread at a time.
// Ownership: the Allocator keeps pointers to the snapshot and the claims, which must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "allocator/allocated_state.h"
#include "allocator/explanation.h"
#include "allocator/features.h"
#include "allocator/policy.h"
#include "allocator/snapshot.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "common/random.h"
#include "common/status.h"

namespace draplane::allocator {

// The step limit the scheduler and `draplane allocate` apply by default. A step costs about
// 0.2 us in the allocator benchmarks, so this is a few seconds of search on one node.
inline constexpr int64_t kDefaultSearchStepLimit = 10'000'000;

// The CEL evaluation budget of one scheduling attempt, shared by its Allocate calls (one per
// node): every selector evaluation charges its runtime cost (CEL cost units, the unit of the
// per-expression limit cel::kSelectorMaxCost). Verdicts cached from earlier attempts are free.
// Deterministic, like the step limit: the same inputs and cache state spend the same budget.
struct EvaluationBudget {
  uint64_t limit = 0;  // 0: no limit
  uint64_t spent = 0;
};

// The budget the scheduler gives each attempt by default: a hundred worst-case expressions at the
// per-expression limit, about 0.1 s of evaluation; simple selectors over thousands of devices
// spend a few hundred thousand.
inline constexpr uint64_t kDefaultEvaluationBudget = 100'000'000;

struct Options {
  // Record an explanation (Outcome::explanation). Bypasses the per-node cache.
  bool explain = false;
  // With `explain`: the explanation names this call's claims. False lets a remembered explanation
  // (the per-node cache) be handed out as it is, naming the claims of the call that built it (same
  // specs, same order), without a copy: for callers that need only its content.
  bool explain_claim_names = true;
  // Source of share IDs for multi-allocatable devices; SecureRandom() when null. Share IDs are
  // drawn only for the final result, in result order, so a seeded generator gives fixed IDs.
  Random* random = nullptr;
  // Caller policies checked inside the search (policy.h). Not owned.
  std::vector<PolicyConstraint*> policies = {};
  // Remember unsatisfiable (claims, node, allocated-state) combinations (§5).
  bool use_node_cache = true;
  // Apply the exact search bounds (§4.1); off gives upstream's plain walk (tests, benchmarks).
  bool prune = true;
  // Stop the search after this many steps (allocateOne calls, Stats::allocate_one_calls) with
  // an error for which IsStepLimitExceeded holds; 0: no limit. The scheduler's bound on one
  // node's Filter: upstream bounds it by a 10 s timeout instead, which is not deterministic.
  int64_t max_search_steps = 0;
  // Charged for the selector evaluations this call makes; once spent, the call stops with an
  // error for which IsEvaluationBudgetExceeded holds. Not owned; null: no budget.
  EvaluationBudget* evaluation_budget = nullptr;
};

struct Stats {
  int64_t allocate_one_calls = 0;
  int64_t devices_tried = 0;
  int64_t count_bound_prunes = 0;
  int64_t symmetry_skips = 0;
  int64_t memo_hits = 0;
  int64_t policy_rejections = 0;  // devices or requests a policy constraint refused
  bool node_cache_hit = false;
};

struct Outcome {
  enum class Kind {
    kAllocated,      // `results` holds one AllocationResult per claim, in claim order
    kUnsatisfiable,  // the claims cannot be allocated on this node (upstream: nil, nil)
    kNodeError,      // unsatisfiable and some pool was invalid: `message` says so
                     // (upstream ErrFailedAllocationOnNode; the scheduler rejects only this node)
  };
  Kind kind = Kind::kUnsatisfiable;
  // Set for kAllocated. Shared with the per-node cache (a node asked again in the same state, for
  // claims of the same specs in the same order, hands out the same results): never modified once
  // handed out.
  std::shared_ptr<const std::vector<api::resourcev1::AllocationResult>> results;
  std::string message;
  // Shared with the per-node cache: never modified once handed out.
  std::shared_ptr<const Explanation> explanation;
  Stats stats;

  // Every member back to its default (AllocateInto's start: cheaper than a new Outcome).
  void Clear() {
    kind = Kind::kUnsatisfiable;
    results.reset();
    message.clear();
    explanation.reset();
    stats = Stats{};
  }
};

class Allocator {
 public:
  virtual ~Allocator() = default;

  // Allocates every claim for `node`. Returns the outcome, or a fatal error with upstream's
  // message (kNotFound for a missing class, kInvalidArgument for a claim the features reject,
  // kFailedPrecondition for everything else: CEL errors, incomplete pools under `All`, a device
  // count over 32, a constraint an `All` request cannot meet, ...). The claims must not be
  // allocated yet.
  StatusOr<Outcome> Allocate(const api::corev1::Node& node, const AllocatedState& allocated,
                             const Options& options);
  // Allocate writing the outcome into `out` (what it held is replaced) and returning only the
  // fatal error, after which `out` is to be ignored: a caller that asks about node after node
  // (the scheduler's Filter) keeps one Outcome instead of constructing, moving and destroying one
  // per node.
  virtual Status AllocateInto(const api::corev1::Node& node, const AllocatedState& allocated,
                              const Options& options, Outcome& out) = 0;
};

// Prepares the claims of one Pod: resolves classes and compiles selectors once. Never fails:
// problems are reported by Allocate in upstream's order.
std::unique_ptr<Allocator> NewAllocator(Snapshot& snapshot,
                                        std::vector<const api::resourcev1::ResourceClaim*> claims,
                                        const Features& features);

// Whether Allocate stopped at Options::max_search_steps.
bool IsStepLimitExceeded(const Status& status);
// Whether Allocate stopped because Options::evaluation_budget was spent.
bool IsEvaluationBudgetExceeded(const Status& status);

// NewAllocator + Allocate for one node.
StatusOr<Outcome> Allocate(Snapshot& snapshot, const api::corev1::Node& node,
                           const std::vector<const api::resourcev1::ResourceClaim*>& claims,
                           const AllocatedState& allocated, const Features& features,
                           const Options& options = {});

}  // namespace draplane::allocator
