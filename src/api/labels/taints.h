// Taint / toleration matching with Kubernetes semantics, for devices (resource.k8s.io/v1
// DeviceTaint / DeviceToleration; k8s.io/dynamic-resource-allocation/resourceclaim/
// devicetoleration.go ToleratesTaint) and for nodes (core/v1 Taint / Toleration;
// k8s.io/api/core/v1/toleration.go ToleratesTaint and component-helpers'
// FindMatchingUntoleratedTaint).
//
// A toleration tolerates a taint when, in order:
//   1. its effect is empty or equals the taint's effect;
//   2. its key is empty or equals the taint's key (empty key + Exists tolerates every taint);
//   3. its operator is "Exists" (any value), or "" / "Equal" and the values are equal, or -- core
//      only, with `enable_comparison_operators` (feature TaintTolerationComparisonOperators) --
//      "Lt" / "Gt" and both values are canonical decimal integers (content.IsDecimalInteger:
//      "0" or -?[1-9][0-9]* within int64) with taint < toleration (Lt) or taint > toleration
//      (Gt). Any other operator tolerates nothing.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "common/clock.h"

namespace draplane::api::labels {

// The fields the matching reads, so plain data can be matched without the generated structs.
struct TolerationView {
  std::string_view key;
  std::string_view op;
  std::string_view value;
  std::string_view effect;
};
struct TaintView {
  std::string_view key;
  std::string_view value;
  std::string_view effect;
};

struct TolerationOptions {
  // core/v1 only: the alpha Lt / Gt operators (TaintTolerationComparisonOperators).
  bool enable_comparison_operators = false;
};

// Rules 1-3 on plain data.
bool ToleratesTaint(const TolerationView& toleration, const TaintView& taint,
                    const TolerationOptions& options = {});

// upstream resourceclaim.ToleratesTaint (no comparison operators for devices).
bool ToleratesTaint(const resourcev1::DeviceToleration& toleration,
                    const resourcev1::DeviceTaint& taint);
// upstream core/v1 Toleration.ToleratesTaint.
bool ToleratesTaint(const corev1::Toleration& toleration, const corev1::Taint& taint,
                    const TolerationOptions& options = {});

// upstream TolerationsTolerateTaint: some toleration tolerates the taint.
bool TolerationsTolerateTaint(const std::vector<corev1::Toleration>& tolerations,
                              const corev1::Taint& taint, const TolerationOptions& options = {});

// upstream v1helper.FindMatchingUntoleratedTaint: the first taint, among those `include` accepts,
// that no toleration tolerates; nullopt when all are tolerated. The scheduler's TaintToleration
// filter includes the NoSchedule and NoExecute effects (IsScheduleBlockingTaint below).
template <typename Include>
std::optional<size_t> FindMatchingUntoleratedTaint(
    const std::vector<corev1::Taint>& taints, const std::vector<corev1::Toleration>& tolerations,
    Include include, const TolerationOptions& options = {}) {
  for (size_t i = 0; i < taints.size(); ++i) {
    if (!include(taints[i])) continue;
    if (!TolerationsTolerateTaint(tolerations, taints[i], options)) return i;
  }
  return std::nullopt;
}

// `from` plus a toleration's `seconds` (negative counts as 0); nullopt when that lies beyond
// what a Timestamp holds (about the year 2262): a toleration that long never ends, where adding
// it would overflow.
std::optional<Timestamp> AfterTolerationSeconds(Timestamp from, int64_t seconds);

// When the taint eviction controller evicts `pod` from a node with `taints` (their NoExecute
// ones; upstream pkg/controller/tainteviction): a taint no toleration tolerates evicts at its
// timeAdded (at once); otherwise each toleration of a NoExecute taint with tolerationSeconds
// (negative counts as 0) ends the Pod's stay that many seconds after the later of the taint's
// timeAdded and the Pod's arrival on the node (PodScheduled's lastTransitionTime, else its
// creation), and the earliest end wins (upstream's one minimum over the tolerations used);
// nullopt (never) when no toleration used has seconds. `first_seen` dates a taint without
// timeAdded.
std::optional<Timestamp> NoExecuteEvictionTime(
    const corev1::Pod& pod, const std::vector<corev1::Taint>& taints,
    const std::function<Timestamp(const corev1::Taint&)>& first_seen);

// The effects that keep pods off a node or devices out of an allocation: NoSchedule, NoExecute.
// (PreferNoSchedule, the device effect None and unknown effects do not block.)
bool IsScheduleBlockingEffect(std::string_view effect);

// The allocator's device taint check (upstream allocator allocateDevice, gate DeviceTaints): the
// index of the first taint with a blocking effect that no toleration tolerates; nullopt when the
// device may be allocated.
std::optional<size_t> FindUntoleratedDeviceTaint(
    const std::vector<resourcev1::DeviceTaint>& taints,
    const std::vector<resourcev1::DeviceToleration>& tolerations);

}  // namespace draplane::api::labels
