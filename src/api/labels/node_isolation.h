// Isolation of nodes whose devices keep failing to prepare (../../../shared/MISSION.md, "Health":
// nodes that keep failing are isolated so that the scheduler stops sending work to the same
// failure domain; docs/design/agent.md, "Failing nodes").
//
// The node agent isolates its own node after repeated prepare failures: the NoSchedule taint
// `draplane.dev/device-prepare-failures` on the Node, the annotation
// `draplane.dev/device-prepare-failures-until` (RFC 3339) saying when the isolation ends, and the
// condition `DevicePrepareFailures` explaining it (all three visible in `kubectl describe node`).
// It lifts them after a successful prepare (the probe) or when that time has passed. The
// scheduler honours the taint only until that time, so an isolation never outlives its backoff,
// even when the agent that set it is gone.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <optional>
#include <string_view>

#include "api/gen/core_v1_types.h"
#include "common/clock.h"

namespace draplane::api::labels {

inline constexpr std::string_view kPrepareFailuresTaintKey = "draplane.dev/device-prepare-failures";
inline constexpr std::string_view kPrepareFailuresUntilAnnotation =
    "draplane.dev/device-prepare-failures-until";
inline constexpr std::string_view kPrepareFailuresCondition = "DevicePrepareFailures";

// The isolation taint of `node`, or null.
const corev1::Taint* FindIsolationTaint(const corev1::Node& node);
// When the isolation of `node` ends: nullopt when it carries no isolation taint; the time of its
// annotation, or Timestamp::max() when the annotation is missing or unreadable (then only the
// agent lifts it).
std::optional<Timestamp> IsolationUntil(const corev1::Node& node);
// The isolation taint is in force at `now`.
bool IsIsolated(const corev1::Node& node, Timestamp now);

}  // namespace draplane::api::labels
