// Builds the resolved problem (problem.h) for one node from a snapshot and the Pod's prepared
// claims: upstream's pre-pass over claims and requests (validateDeviceRequest), the devices of
// the node's usable pools in search order with their counters, capacities and compatibility
// groups, each request's candidates (isSelectable: binding conditions, class and request
// selectors, per-device node selection, taints) and the attribute values constraints compare.
// allocator.cc runs the search on the result and turns its answer into allocation results.
//
// Thread-safety: a ProblemBuilder is used by one thread; it reads and caches into the snapshot's
// state, which the caller holds for the attempt.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "allocator/allocated_state.h"
#include "allocator/allocator.h"
#include "allocator/features.h"
#include "allocator/internal/explain.h"
#include "allocator/internal/problem.h"
#include "allocator/internal/snapshot_state.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "common/status.h"

namespace draplane::allocator::internal {

// A request or subrequest as prepared once per Pod.
struct KeySpec {
  std::string name;    // request name, or subrequest name
  std::string parent;  // request name of a subrequest
  bool is_sub = false;
  std::string class_name;
  std::shared_ptr<const api::resourcev1::DeviceClass> device_class;  // null when not found
  std::vector<uint32_t> class_exprs;                                 // kNone: selector without CEL
  std::vector<uint32_t> request_exprs;                               // kNone: selector without CEL
  std::string mode;
  int64_t count = 0;
  bool admin = false;      // adminAccess true
  bool has_admin = false;  // adminAccess set at all
  const std::vector<api::resourcev1::DeviceToleration>* tolerations = nullptr;
  const api::resourcev1::CapacityRequirements* capacity = nullptr;
  // Derived attributes (DerivedAttributes on): name and expression id.
  std::vector<std::pair<std::string, uint32_t>> derived;

  std::string FullName() const { return parent.empty() ? name : parent + "/" + name; }
};

struct RequestSpec {
  const api::resourcev1::DeviceRequest* request = nullptr;
  bool has_sub = false;
  std::vector<KeySpec> keys;
};

struct ClaimSpec {
  const api::resourcev1::ResourceClaim* claim = nullptr;
  std::string ref;
  std::vector<RequestSpec> requests;
};

// The key of a request or subrequest: its class, interned selectors and derived attributes.
KeySpec PrepareKey(SnapshotState& state, const Features& features, const std::string& name,
                   const std::string& parent, const std::string& class_name,
                   const std::vector<api::resourcev1::DeviceSelector>& selectors,
                   const std::string& mode, int64_t count,
                   const std::vector<api::resourcev1::DeviceToleration>& tolerations,
                   const std::optional<api::resourcev1::CapacityRequirements>& capacity,
                   const std::vector<api::resourcev1::DeviceDerivedAttribute>& derived);

// Where a problem device lives in the snapshot.
struct DeviceRef {
  SliceEntry* slice = nullptr;
  uint32_t index = 0;
  const AllocatedState::DeviceRecord* record = nullptr;  // what is allocated of it, if anything
  const api::resourcev1::Device& device() const { return slice->spec().devices[index]; }
  const internal::DeviceData& data() const { return slice->data[index]; }
};

// The result of selecting a device for a key (upstream isSelectable).
struct Selectability {
  Reason reason = Reason::kNone;  // kNone: selectable
  std::string detail;             // only when the builder explains
  std::string error;              // fatal message when reaching the pair
  bool budget_spent = false;      // not decided: the attempt's evaluation budget is spent
};

// A cause that marks the evaluation budget's error (its code, ResourceExhausted, is shared with
// the step limit's).
inline constexpr std::string_view kBudgetCause = "EvaluationBudgetExceeded";

// The attempt's error once its evaluation budget is spent (carries kBudgetCause).
Status BudgetSpentError(const EvaluationBudget& budget);

// The problem for one node and the Pod's claims; Build() fills the public members.
class ProblemBuilder {
 public:
  ProblemBuilder(SnapshotState& state, const NodeEntry& node_entry, const api::corev1::Node& node,
                 const AllocatedState& allocated, const Features& features,
                 const std::vector<ClaimSpec>& claims, bool explain, bool with_policies);

  // upstream's pre-pass (claims in order, requests in order) plus the candidate lists. Returns
  // a fatal error with upstream's message.
  Status Build();

  Problem problem;
  std::vector<DeviceRef> refs;            // per problem device
  std::vector<const KeySpec*> key_specs;  // per problem key
  std::vector<internal::KeyInfo> key_infos;
  std::vector<uint32_t> pool_of_gathered;  // problem pool -> index in node_entry_.pools
  // Per gathered pool: its devices [first, second) in problem order (empty when unusable).
  std::vector<std::pair<DeviceIndex, DeviceIndex>> devices_of_gathered;

 private:
  // Devices of usable pools in search order, with their allocated state, counters and
  // capacities.
  void AddDevices();

  // upstream checkAvailableCounters' first part: the pool's counters minus what allocated
  // devices (on or off this node) consume.
  void AddCounters(const GatheredPool& pool, internal::Pool& p,
                   std::map<std::pair<std::string_view, std::string_view>, uint32_t>& index);

  // Compatibility groups of one pool (KEP-5963).
  struct PoolGroups {
    // DeviceCompatibilityGroups on and some device of the pool declares groups: counter set
    // name -> index into Problem::counter_sets.
    std::map<std::string_view, uint32_t> set_index;
    // DeviceCompatibilityGroups off: counter sets on which an allocated device declares groups.
    std::set<std::string_view> allocated_grouped;
  };

  std::vector<uint32_t> GroupIds(const std::vector<std::string>& names);

  // upstream seedCompatibilityGroupsFromAllocated: the groups of the allocated devices of the
  // pool (on or off this node) per counter set. With the feature off, only which counter sets
  // carry groups of allocated devices (upstream's version-skew skip).
  void AddGroups(const GatheredPool& pool, uint32_t pool_index, PoolGroups& groups);

  // The device's groups on one counter set, or with the feature off whether groups make it
  // unusable.
  void AddGroupUse(const api::resourcev1::DeviceCounterConsumption& consumption,
                   const PoolGroups& groups, internal::Device& dev);

  Status AddClaim(uint32_t c);

  // upstream validateDeviceRequest.
  StatusOr<uint32_t> AddKey(uint32_t c, uint32_t r, int32_t s, const KeySpec& spec);

  void FillCandidates(uint32_t k);

  // upstream isSelectable: binding conditions, class selectors, request selectors, per-device
  // node selection. Verdicts come from the snapshot's cache.
  Selectability Select(uint32_t c, const KeySpec& spec, DeviceIndex d);

  Candidate MakeCandidate(const KeySpec& spec, DeviceIndex d);

  // upstream resourceclaim.ToleratesTaint.
  static bool ToleratesTaint(const api::resourcev1::DeviceToleration& t,
                             const api::resourcev1::DeviceTaint& taint);

  // upstream cmpRequestOverCapacity without the in-attempt consumption (the search adds that).
  // Returns kNone for an exclusive device that fits: nothing else in the attempt can consume its
  // capacity, so the static check is the whole check.
  uint32_t MakePlan(const KeySpec& spec, DeviceIndex d);
  // MakePlan's check of one device's capacities: what each would consume (`requested`, per
  // capacity, null for one not requested; an empty list when none is) and whether that fits
  // beside what `record` holds consumed.
  static CapacityPlan PlanCapacities(const std::vector<ResolvedCapacity>& caps,
                                     const std::vector<const api::Quantity*>& requested,
                                     const AllocatedState::DeviceRecord* record,
                                     bool multi_allocatable);

  // A usable plan that consumes nothing (a multi-allocatable device without capacities).
  uint32_t EmptyPlan();

  // upstream lookupAttribute for every (constraint, device), interned.
  void AddConstraintValues();

  // KEP-6080: for each request key of claim `c` in the scope of constraint `k` that defines a
  // derived attribute of the constraint's name, the attribute's value on every candidate device
  // (evaluated after the selectors, once per slice version and expression). A failed evaluation
  // is kept as a fatal error for the search to meet when it adds the device.
  template <typename Intern, typename AddValue>
  void AddDerivedValues(uint32_t c, size_t k, internal::Constraint& constraint, Intern& intern,
                        AddValue& add_value);

  template <typename Intern>
  static AttributeValue ToValue(const api::resourcev1::DeviceAttribute& a, Intern& intern);

  static std::vector<int64_t> Encode(const AttributeValue& v);

  SnapshotState& state_;
  const NodeEntry& node_entry_;
  const api::corev1::Node& node_;
  const AllocatedState& allocated_;
  const Features f_;
  const std::vector<ClaimSpec>& claims_;
  const bool explain_;
  const bool with_policies_;   // fill Problem::facts and Problem::plan_consumed
  bool budget_spent_ = false;  // FillCandidates met the spent evaluation budget
  uint32_t empty_plan_ = kNone;
  std::map<std::string, uint32_t, std::less<>> group_ids_;
};

}  // namespace draplane::allocator::internal
