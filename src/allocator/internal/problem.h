// The resolved allocation problem for one (node, claims) pair: what the search (search.h) runs on.
//
// Everything static is decided before the search starts: which devices are candidates for which
// request (selectors, node selection, binding conditions), whether a device's taints are
// tolerated, how much capacity a request would consume on a device, which attribute value a
// constraint sees, and how many counters a pool still has. The search only adds the dynamic state
// (devices in use by this attempt, constraint states, consumed counters and capacity).
//
// The problem knows nothing of CEL, label selectors or the API types; `builder.h` fills it from a
// snapshot, and unit tests build it by hand. Devices are numbered in search order (pools by
// (driver, pool) with binding-condition pools last, slices by name, devices in slice order), so
// upstream's `startLocation` is a device index.
//
// Thread-safety: a value type, immutable during a search.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "allocator/charges.h"
#include "api/quantity.h"

namespace draplane::allocator::internal {

// resourceapi.AllocationResultsMaxSize: devices per claim.
inline constexpr int kAllocationResultsMaxSize = 32;

using DeviceIndex = uint32_t;
inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// Why a device is not a candidate, or was rejected, or how it ended. Also used by explanations.
enum class Reason : uint8_t {
  kNone = 0,
  kBindingConditionsUnsupported,    // device has binding conditions, DeviceBindingAndStatus off
  kCompatibilityGroupsUnsupported,  // compatibility groups in play, DeviceCompatibilityGroups off
  kClassSelectorFalse,              // detail: selector index
  kRequestSelectorFalse,            // detail: selector index
  kSelectorError,                   // CEL compile or runtime error (fatal when reached)
  kNodeMismatch,                    // per-device node selection does not match the node
  kAllocated,                       // in use by a claim outside this attempt
  kInUseByThisAttempt,              // chosen for another request or claim of this attempt
  kInUseByThisClaim,                // admin access: already chosen by the same claim
  kCapacity,                        // consumable capacity: not enough left on the device
  kCapacityUnservable,              // consumable capacity the device can never give the request:
                                    // its request policy, a name missing, more than it has
  kPartitionableDevicesDisabled,    // device consumes counters, PartitionableDevices off
  kCounters,                        // a counter of its pool would be oversold
  kCompatibilityGroups,             // incompatible with the devices on one of its counter sets
  kTaintNotTolerated,               // a NoSchedule/NoExecute taint without matching toleration
  kConstraint,                      // a claim constraint rejected it; detail: constraint index
  kPolicy,                          // a caller-supplied policy constraint rejected it
  kEquivalentTried,                 // skipped: interchangeable with a device that already failed
  kNotEnoughCandidates,             // skipped: too few candidates left for the request
  kChosen,                          // part of the result
};

// A constraint's view of one device's attribute: upstream's `lookupAttribute` result, with string
// and version values interned as integers. Deduplicated by content in `Problem::values`.
struct AttributeValue {
  bool present = false;  // lookupAttribute found an entry (it may still have no value set)
  // Scalar fields as set on the API attribute (normally at most one).
  std::optional<int64_t> int_value;
  std::optional<bool> bool_value;
  std::optional<int64_t> string_value;   // interned
  std::optional<int64_t> version_value;  // interned
  // upstream `attributeAsSet`: the value as a typed set (lists with elements first, then the
  // scalar), or kUnknown when neither is usable.
  enum class SetType : uint8_t { kUnknown, kInt, kBool, kString, kVersion };
  SetType set_type = SetType::kUnknown;
  std::vector<int64_t> set;  // sorted, unique

  friend bool operator==(const AttributeValue&, const AttributeValue&) = default;
};

// The values of a derived attribute (KEP-6080) that one request key defines under a constraint's
// attribute name: for devices chosen by that key they replace the device's own attribute.
struct DerivedValues {
  uint32_t key = 0;
  // Per device: index into Problem::values, kNone when not evaluated (not a candidate).
  std::vector<uint32_t> value_of_device;
  // Per device: index into Problem::errors when the expression failed (fatal when reached).
  std::vector<uint32_t> error_of_device;
};

struct Constraint {
  enum class Kind : uint8_t { kMatch, kDistinct };
  Kind kind = Kind::kMatch;
  std::string attribute;  // fully qualified name, for messages
  // Per device: index into Problem::values; kNone when the attribute is absent.
  std::vector<uint32_t> value_of_device;
  // Derived attributes of this name, per request key that defines one (usually none).
  std::vector<DerivedValues> derived;

  // The derived values `key` defines for this constraint, or null.
  const DerivedValues* DerivedFor(uint32_t key) const {
    for (const DerivedValues& d : derived) {
      if (d.key == key) return &d;
    }
    return nullptr;
  }
};

// A device's use of one counter of its pool.
struct CounterUse {
  uint32_t counter;  // index into Problem::counters
  api::Quantity amount;
};

// A device's compatibility groups on one counter set it consumes (KEP-5963).
struct GroupUse {
  uint32_t counter_set = 0;      // index into Problem::counter_sets
  std::vector<uint32_t> groups;  // indices into Problem::group_names, sorted; empty: ungrouped
};

// The compatibility state of one counter set (upstream compatState): the running intersection of
// the groups of the grouped devices on it, and whether an ungrouped device is on it. A candidate
// is admitted when both are ungrouped, or the intersection with its groups is not empty.
struct GroupState {
  bool ungrouped = false;
  bool grouped = false;          // `groups` holds the intersection
  std::vector<uint32_t> groups;  // sorted

  friend bool operator==(const GroupState&, const GroupState&) = default;
};

// Whether two sorted vectors have no element in common.
template <typename T>
bool SortedDisjoint(const std::vector<T>& a, const std::vector<T>& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return false;
    if (*i < *j) {
      ++i;
    } else {
      ++j;
    }
  }
  return true;
}

// Whether a device with `groups` (empty: ungrouped) may join `state` (upstream
// checkCompatibilityGroups): both ungrouped, or a grouped state meeting the groups.
bool GroupsAdmit(const GroupState& state, const std::vector<uint32_t>& groups);
// Folds a device's groups into the state (the admission's commit, or seeding from allocations).
void FoldGroups(GroupState& state, const std::vector<uint32_t>& groups);

struct CounterSetGroups {
  uint32_t pool = 0;
  std::string name;
  GroupState allocated;  // from the devices allocated outside this attempt
};

// One capacity of a device.
struct DeviceCapacity {
  std::string name;         // as published (the key in consumedCapacity)
  api::Quantity value;      // total
  api::Quantity allocated;  // already consumed outside this attempt
};

struct Device {
  std::string name;
  uint32_t pool = 0;
  bool multi_allocatable = false;        // allowMultipleAllocations, only with ConsumableCapacity
  bool allocated = false;                // an exclusive allocation outside this attempt
  bool capacity_in_use = false;          // consumed capacity recorded outside this attempt
  bool shared_in_use = false;            // a share recorded outside this attempt (by share ID)
  bool consumes_counters = false;        // has consumesCounters entries
  std::vector<CounterUse> counter_uses;  // empty unless PartitionableDevices is on
  std::vector<GroupUse> group_uses;      // only with DeviceCompatibilityGroups
  bool groups_unsupported = false;  // DeviceCompatibilityGroups off and groups in play (skipped)
  std::vector<DeviceCapacity> capacities;  // only with ConsumableCapacity
  uint32_t symmetry_class = kNone;  // interchangeable devices share a class (builder sets it)
};

struct Pool {
  std::string driver;
  std::string name;
  uint32_t first_counter = 0;
  uint32_t num_counters = 0;
  // Some counter already has negative availability: no device consuming counters fits.
  bool overcommitted = false;
};

struct Counter {
  std::string set;
  std::string name;
  api::Quantity available;  // set value minus what allocated devices of the pool consume
};

// The consumption a request would make on a device (consumable capacity), aligned with
// `Device::capacities`, or why it cannot be used at all.
struct CapacityPlan {
  bool usable = true;  // false: a requested capacity is missing, or the policy is violated, or
                       // the device is full even before this attempt
  // !usable whatever else the device holds: the request itself can never fit it (a missing or
  // twice-requested capacity, a negative amount, a request-policy violation, more than it has).
  bool unservable = false;
  std::string why;  // for explanations when !usable
  std::vector<api::Quantity> consumed;
};

// A device in a request's candidate list (selectable, or selection failed with an error).
struct Candidate {
  DeviceIndex device = 0;
  uint32_t error = kNone;  // index into Problem::errors: reaching this pair is fatal
  bool taint_blocked = false;
  std::string taint;      // "key=value:Effect" of the first blocking taint
  uint32_t plan = kNone;  // index into Problem::plans (ConsumableCapacity), kNone otherwise
};

// A request without subrequests, or one subrequest.
struct RequestKey {
  uint32_t claim = 0;
  uint32_t request = 0;
  int32_t subrequest = -1;  // -1: not a subrequest
  std::string name;         // request or subrequest name (upstream `request.name()`)
  std::string parent;       // request name of a subrequest
  std::string device_class;
  bool all_mode = false;
  int num_devices = 0;  // ExactCount: count; All: all_devices.size()
  bool admin_access = false;
  std::vector<Candidate> candidates;   // ExactCount, in search order
  std::vector<Candidate> all_devices;  // All mode, fixed at preparation
  uint64_t constraint_scope = 0;       // bit i: claim constraint i applies

  // "req" or "req/sub".
  std::string FullName() const { return parent.empty() ? name : parent + "/" + name; }
};

struct Request {
  bool has_subrequests = false;
  std::vector<uint32_t> keys;  // into Problem::keys: one, or one per subrequest in order
};

struct Claim {
  std::string name;  // "namespace/name" or "name", as upstream's klog.KObj prints it
  std::vector<Request> requests;
  std::vector<Constraint> constraints;
};

struct Problem {
  std::vector<Pool> pools;
  std::vector<Device> devices;  // search order
  std::vector<Counter> counters;
  // Counter sets some device names compatibility groups on (DeviceCompatibilityGroups).
  std::vector<CounterSetGroups> counter_sets;
  std::vector<std::string> group_names;
  std::vector<AttributeValue> values;
  // Interned strings and versions of AttributeValue (string_value, version_value, set elements).
  std::vector<std::string> interned;
  std::vector<CapacityPlan> plans;
  std::vector<std::string> errors;  // fatal messages, surfaced when reached
  std::vector<RequestKey> keys;
  std::vector<Claim> claims;
  // Only when policy constraints are given: per device, what the charging rules read
  // (charges.h; owned by the snapshot); per plan, its consumption by published capacity name.
  std::vector<const DeviceFacts*> facts;
  std::vector<ResourceList> plan_consumed;
  // Why each device is not in a key's candidate list, for explanations: [key][device].
  // Empty unless explanations are requested.
  std::vector<std::vector<std::pair<Reason, std::string>>> static_rejections;

  // A value as it reads in an explanation, e.g. `"a"`, `3`, `[1, 2]`, `1.2.3`, `<none>`.
  std::string RenderValue(uint32_t value_index) const;
  // A value's set form, e.g. `["a", "b"]`.
  std::string RenderSet(const AttributeValue& value) const;

  // "driver/pool/device", upstream's DeviceID.String().
  std::string DeviceId(DeviceIndex d) const {
    const Pool& p = pools[devices[d].pool];
    return p.driver + "/" + p.name + "/" + devices[d].name;
  }
};

// Assigns `Device::symmetry_class`: devices whose every resolved feature the search can observe
// is equal (candidate verdicts and plans per key, constraint values, counters, capacities, flags)
// share a class. Call after the problem is complete.
void AssignSymmetryClasses(Problem& problem);

// Whether some request of the problem has, in each of its alternatives, fewer candidates than
// devices to choose: then no allocated state of the node satisfies the claims (the candidates are
// the devices the selectors, the node and the features admit; what is allocated only takes some
// away). Answers false where the state could matter otherwise: a fatal error the search may or
// may not reach, an All-mode alternative, a multi-allocatable device, or a device left out for
// the compatibility groups of an allocated device.
bool UnsatisfiableWhateverIsAllocated(const Problem& problem);

}  // namespace draplane::allocator::internal
