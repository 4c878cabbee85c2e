// The inside of a Snapshot: slice entries with their caches, indexes by node and by pool, the
// selector expressions and their verdicts, and the per-node caches (docs/design/allocator.md §5).
//
// Thread-safety: not thread-safe (see snapshot.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "allocator/allocated_state.h"
#include "allocator/charges.h"
#include "allocator/explanation.h"
#include "allocator/internal/device_data.h"
#include "allocator/internal/problem.h"
#include "allocator/internal/selector_engine.h"
#include "allocator/snapshot.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "api/labels/node_selector.h"
#include "common/status.h"

namespace draplane::allocator {
struct EvaluationBudget;  // allocator.h
}  // namespace draplane::allocator

namespace draplane::allocator::internal {

// Verdict codes cached per (expression, device): 0 not evaluated yet, 1 true, 2 false,
// kVerdictError + k the error text k of SnapshotState::error_texts.
inline constexpr uint32_t kVerdictUnknown = 0;
inline constexpr uint32_t kVerdictTrue = 1;
inline constexpr uint32_t kVerdictFalse = 2;
inline constexpr uint32_t kVerdictError = 3;
// Not a cached code: Verdict's answer when the evaluation budget of the Allocate call in
// progress is spent (the device was not evaluated).
inline constexpr uint32_t kVerdictBudgetSpent = UINT32_MAX;

// The presence bit of `Device.bindingConditions` (the sixth plain field): an explicitly empty
// list is not nil for upstream's `BindingConditions != nil`.
inline constexpr uint64_t kDeviceBindingConditionsPresent = uint64_t{1} << 5;
inline constexpr uint64_t kDeviceBindingFailureConditionsPresent = uint64_t{1} << 6;

// A device capacity with its name resolved against the driver (upstream resolveDeviceCapacity):
// an entry qualified with the driver's own domain wins over an unqualified one for the same
// identifier. Points into the slice, which outlives it.
struct ResolvedCapacity {
  const std::string* published = nullptr;  // the key in Device.capacity
  std::string qualified;                   // driver-qualified form
  const Capacity* capacity = nullptr;
};

struct SliceEntry {
  Snapshot::SliceHandle handle = 0;
  // The slice without device attributes and capacities; those are in `data` (device_data.h).
  std::shared_ptr<const api::resourcev1::ResourceSlice> slice;
  std::vector<DeviceData> data;  // per device
  std::string node_name;         // spec.nodeName, "" when unset
  std::string pool_key;          // driver + '\0' + pool name
  // Whether a device of the slice names compatibility groups in its consumesCounters (KEP-5963):
  // a pool whose slices name none pays nothing for them.
  bool compatibility_groups = false;

  // Compiled node selectors (upstream nodeaffinity.NewNodeSelector), made on first use.
  std::optional<StatusOr<api::labels::NodeSelectorMatcher>> slice_selector;
  std::vector<std::optional<StatusOr<api::labels::NodeSelectorMatcher>>> device_selectors;
  // CEL inputs per device, made on first use.
  std::vector<std::unique_ptr<PreparedDevice>> inputs;
  // Expression id -> code per device (a selector's verdict, or a derived attribute's value code,
  // SnapshotState::DerivedCode). A slice sees few distinct expressions, so a linear search beats
  // hashing.
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> verdicts;
  // Per device: its capacities with names resolved against the driver (consumable capacity),
  // made on first use.
  std::vector<std::optional<std::vector<ResolvedCapacity>>> capacities;
  // Per device: its capacity plan for a request that asks for none of its capacity while none of
  // it is consumed (ProblemBuilder::MakePlan), made on first use: most plans, and the same for
  // every attempt.
  std::vector<std::optional<CapacityPlan>> unrequested_plans;
  // Per device: what the charging rules read (charges.h), made on first use by a policy.
  std::vector<std::optional<DeviceFacts>> facts;

  const api::resourcev1::ResourceSliceSpec& spec() const { return slice->spec; }
};

// A pool as upstream's GatherPools leaves it for one node.
struct GatheredPool {
  std::string driver;
  std::string pool;
  bool incomplete = false;
  bool invalid = false;
  std::string invalid_reason;
  // Device slices whose devices this node may use, sorted by name.
  std::vector<SliceEntry*> targeting;
  // Device slices of the pool the node does not see (their devices still consume counters).
  std::vector<SliceEntry*> not_targeting;
  // Slices with sharedCounters (PartitionableDevices on).
  std::vector<SliceEntry*> counter_slices;

  std::string Id() const { return driver + "/" + pool; }
};

struct NodeEntry {
  std::string name;
  // What the cached pools were gathered for.
  uint64_t epoch = 0;
  bool partitionable = false;
  api::labels::LabelMap labels;
  // The Node version whose labels `labels` were last found equal to (GatherPools): a Node
  // written through an API changes its resourceVersion with its labels, so the same version
  // spares comparing them.
  std::string node_uid;
  std::string node_version;
  Status gather_error;              // upstream GatherPools error (fatal), OK otherwise
  std::vector<GatheredPool> pools;  // search order

  // AllocatedState pool records for `pools`, valid for the state with id `state_id`.
  uint64_t state_id = 0;
  std::vector<const AllocatedState::PoolRecord*> records;

  // What a remembered verdict was searched for: the claim specs, the features and everything
  // the node can see of the allocated state. The slices are fixed by `epoch`.
  struct VerdictKey {
    uint64_t claims = 0;    // claim-set id (SnapshotState::ClaimSetId)
    uint64_t features = 0;  // PackedFeatures
    uint64_t state_id = 0;
    std::vector<uint64_t> versions;  // pool record versions, aligned with `pools`
  };
  // Claim sets known to be unsatisfiable on this node.
  struct Unsatisfiable {
    VerdictKey key;
    // The explanation of this verdict once one was asked for (without policies), so that a Pod
    // retried after a change elsewhere is not re-explained on every unchanged node. Its claim
    // names are those of the claims that asked first (the claim-set id is of the specs).
    std::shared_ptr<const Explanation> explanation;
  };
  std::vector<Unsatisfiable> unsatisfiable;  // most recent last, bounded
  // Claim sets (with the features they were searched under) that no allocated state lets fit
  // on this node (UnsatisfiableWhateverIsAllocated): the devices the claims could take are too
  // few. A change of the node's slices or labels resets the entry, and with it these; a change
  // of what is allocated does not.
  struct UnsatisfiableAlways {
    uint64_t claims = 0;
    uint64_t features = 0;  // PackedFeatures
  };
  std::vector<UnsatisfiableAlways> unsatisfiable_always;  // most recent last, bounded
  // Claim sets allocated on this node by a policy-free search, with the search's first solution
  // (share IDs are drawn again for each caller): the Pods that try the node after it changed
  // elsewhere in the cluster find it here.
  struct Allocated {
    VerdictKey key;
    std::shared_ptr<const std::vector<api::resourcev1::AllocationResult>> results;
  };
  std::vector<Allocated> allocated;  // most recent last, bounded
};

struct CompiledExpression {
  std::string text;
  ExpressionSpec spec;
  std::shared_ptr<const CompiledSelector> program;  // null when compilation failed
  std::string compile_error;
};

// Derived-attribute value codes cached per (expression, device): 0 not evaluated yet,
// kDerivedValue + k the value k of SnapshotState::derived_values, kDerivedError + k the error
// text k of SnapshotState::error_texts (values and errors interleave: even and odd codes).
inline constexpr uint32_t kDerivedValue = 2;
inline constexpr uint32_t kDerivedError = 3;

struct SnapshotState {
  explicit SnapshotState(std::unique_ptr<SelectorEngine> selector_engine)
      : engine(std::move(selector_engine)) {}

  std::unique_ptr<SelectorEngine> engine;
  NameTable names;  // attribute and capacity names of every device
  std::map<std::string, std::shared_ptr<const api::resourcev1::DeviceClass>, std::less<>> classes;
  // Ordered by handle, which is insertion order.
  std::map<Snapshot::SliceHandle, std::unique_ptr<SliceEntry>> slices;
  std::unordered_map<std::string, std::vector<SliceEntry*>> by_node;  // nodeName set
  std::vector<SliceEntry*> shared;                                    // nodeName unset
  std::unordered_map<std::string, std::vector<SliceEntry*>> by_pool;  // key: pool_key
  Snapshot::SliceHandle next_handle = 1;
  uint64_t epoch = 1;

  std::unordered_map<std::string, uint32_t> expression_ids;
  std::vector<CompiledExpression> expressions;
  std::vector<std::string> error_texts;
  std::unordered_map<std::string, uint32_t> error_ids;
  std::vector<api::resourcev1::DeviceAttribute> derived_values;
  std::unordered_map<std::string, uint32_t> derived_value_ids;

  // The claim sets seen (ClaimSetId), by a hash of their specs.
  struct ClaimSet {
    std::vector<api::resourcev1::ResourceClaimSpec> specs;
    uint64_t id = 0;
  };
  std::unordered_map<uint64_t, std::vector<ClaimSet>> claim_sets;
  uint64_t claim_set_count = 0;
  // Claim-set ids by the claims' uids and resourceVersions (allocator.cc), bounded.
  std::unordered_map<std::string, uint64_t> claim_version_ids;
  std::unordered_map<std::string, NodeEntry> nodes;
  // Node objects seen, by address: a scheduler passes the same (informer-cached) Node objects
  // over and over, so the entry is found without hashing the name. Checked against the uid and
  // resourceVersion, else the name.
  std::unordered_map<const void*, NodeEntry*> nodes_by_address;

  // The entry of `node` (created empty when new). `*same_version`: the entry was last gathered
  // for this version of this Node object (its uid and a non-empty resourceVersion).
  NodeEntry& Node(const api::corev1::Node& node, bool* same_version);

  // The resolved capacities of device `index` of `slice`, sorted by published name.
  const std::vector<ResolvedCapacity>& Capacities(SliceEntry& slice, size_t index);
  // The charge facts of device `index` of `slice` (charges.h).
  const DeviceFacts& Facts(SliceEntry& slice, size_t index);

  // Interns and compiles an expression as `spec` says (compile errors are kept, never retried).
  uint32_t Expression(std::string_view text, const ExpressionSpec& spec);
  // The cached verdict code of selector `expression` on device `index` of `slice`, evaluated if
  // needed.
  uint32_t Verdict(uint32_t expression, SliceEntry& slice, size_t index);
  // The budget evaluations are charged to during the Allocate call in progress (null: none).
  // Cached verdicts cost nothing; an evaluation that would start with the budget spent is not
  // made (kVerdictBudgetSpent).
  EvaluationBudget* budget = nullptr;
  // The cached value code of derived-attribute `expression` on device `index` of `slice`
  // (kDerivedValue + 2k: derived_values[k]; kDerivedError + 2k: error_texts[k]; a compile error
  // is reported as its text), evaluated if needed.
  uint32_t DerivedCode(uint32_t expression, SliceEntry& slice, size_t index);
  // Interns an error text.
  uint32_t ErrorId(const std::string& text);
  // The cached code slot of `expression` on device `index` of `slice` (0 when not computed).
  uint32_t& CachedCode(uint32_t expression, SliceEntry& slice, size_t index);
  // The CEL input of device `index` of `slice`, prepared on first use.
  const PreparedDevice& Input(SliceEntry& slice, size_t index);
  // The id of a claim set, the memos' key for "the same claims": sets of equal specs (by value,
  // in order) share it, whatever the claims' names or how their quantities were written.
  // `hash` is any function of the specs that equal specs share (it only picks the bucket).
  uint64_t ClaimSetId(const std::vector<const api::resourcev1::ResourceClaimSpec*>& specs,
                      uint64_t hash);

  // Moves the attributes and capacities of `slice`'s devices into `entry.data` and stores the
  // rest as `entry.slice`.
  void Store(SliceEntry& entry, api::resourcev1::ResourceSlice slice);

  // Indexes.
  void Index(SliceEntry* entry);
  void Unindex(SliceEntry* entry);
};

}  // namespace draplane::allocator::internal
