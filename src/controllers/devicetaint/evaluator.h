// Which Pods device taints evict, and when: the pure part of the device taint eviction
// controller (upstream pkg/controller/devicetainteviction/device_taint_eviction.go, 1.35–1.37).
//
// Steps (Evaluate):
//   1. Pools: per (driver, pool) only the slices with the highest generation count (upstream
//      pool.maxGeneration).
//   2. Taints of an allocated device: the NoExecute taints of the device in those slices, plus
//      each DeviceTaintRule with effect NoExecute whose selector picks (driver, pool, device).
//      In a dry run (`simulate`) only the simulated rule counts, as if its effect were NoExecute.
//   3. Eviction time of a taint for an allocation result: timeAdded when no toleration of the
//      result (copied from the request at allocation) tolerates it; timeAdded + the smallest
//      tolerationSeconds of the tolerating tolerations (negative counts as 0); never when a
//      tolerating toleration has no tolerationSeconds. A taint without timeAdded counts from
//      `Snapshot::taint_seen` (when the controller first saw it), else from the object's
//      creation.
//   4. A claim is evicted at the earliest time over its devices, a Pod at the earliest time
//      over the allocated claims reserved for it (`status.reservedFor` by uid). Only scheduled
//      Pods that are not being deleted are evicted.
//
// Which devices a rule selects is api/device_taints.h's (with draplane's guardrail for rules
// without a selector).
//
// Thread-safety: pure functions over borrowed objects.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/gen/meta_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "common/clock.h"

namespace draplane::controllers::devicetaint {

inline constexpr std::string_view kEvictionInProgress = "EvictionInProgress";

struct Snapshot {
  std::vector<const api::resourcev1::ResourceSlice*> slices;
  std::vector<const api::resourcev1::DeviceTaintRule*> rules;
  std::vector<const api::resourcev1::ResourceClaim*> claims;
  std::vector<const api::corev1::Pod*> pods;
  // TaintKey() -> when the controller first saw a taint without timeAdded.
  std::map<std::string, Timestamp> taint_seen;
};

// Where a NoExecute taint comes from.
struct TaintReason {
  std::string rule;  // DeviceTaintRule name; empty for a slice taint
  std::string rule_uid;
  std::string slice;  // slice name for a slice taint
  std::string driver;
  std::string pool;
  std::string device;
  std::string key;
  std::string value;

  // "DeviceTaintRule gpu-drain" or "ResourceSlice n1-gpu.nvidia.com-0 gpu.nvidia.com/n1/gpu-1
  // taint gpu.nvidia.com/unhealthy".
  std::string ToString() const;
  friend bool operator==(const TaintReason&, const TaintReason&) = default;
  friend auto operator<=>(const TaintReason&, const TaintReason&) = default;
};

struct PodEviction {
  std::string namespace_;
  std::string name;
  std::string uid;
  int32_t priority = 0;
  Timestamp when{};
  std::vector<TaintReason> reasons;  // sorted, unique
};

// The identity of a taint for Snapshot::taint_seen: "rule/<uid>/<effect>" or
// "slice/<driver>/<pool>/<device>/<key>".
std::string RuleTaintKey(const api::resourcev1::DeviceTaintRule& rule);
std::string SliceTaintKey(std::string_view driver, std::string_view pool, std::string_view device,
                          std::string_view key);

// Pods to evict, sorted by (namespace, name). With `simulate`, only that rule's taint counts,
// with effect NoExecute (the None dry run).
std::vector<PodEviction> Evaluate(const Snapshot& snapshot,
                                  const api::resourcev1::DeviceTaintRule* simulate = nullptr);

// What a rule selects and whom it evicts (or would evict).
struct RuleReport {
  int64_t published_devices = 0;  // devices in current slices the rule selects
  int64_t allocated_devices = 0;  // allocated devices the rule selects
  std::vector<PodEviction> pods;  // pods with a reason from this rule (not deleting)
  std::set<std::string> namespaces;
};
RuleReport ReportRule(const Snapshot& snapshot, const api::resourcev1::DeviceTaintRule& rule);

// The EvictionInProgress condition for `rule` (without lastTransitionTime), with upstream's
// reasons and wording (PodsPendingEviction / Completed / NotStarted for NoExecute, NoEffect for
// None, OtherEffect otherwise). For None the message also lists the Pods NoExecute would evict,
// with namespaces and priorities, and the tenants (namespaces) affected — at most `max_pods`
// Pods by name, then a count.
api::metav1::Condition RuleCondition(const api::resourcev1::DeviceTaintRule& rule,
                                     const RuleReport& report, int64_t evicted_since_start,
                                     size_t max_pods = 20);

}  // namespace draplane::controllers::devicetaint
