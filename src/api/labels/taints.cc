// Taint / toleration matching, re-derived from resourceclaim/devicetoleration.go and
// core/v1 toleration.go (ToleratesTaint, compareNumericValues) and component-helpers'
// FindMatchingUntoleratedTaint.
#include "api/labels/taints.h"

#include <algorithm>

#include "api/labels/selector.h"

namespace draplane::api::labels {
namespace {

// content.IsDecimalInteger: "0" or an optional '-' and a non-zero leading digit; then int64.
bool ParseCanonicalInt64(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i >= s.size()) return false;
  if (s[i] == '0') {
    if (s.size() != 1) return false;
  } else if (s[i] < '1' || s[i] > '9') {
    return false;
  }
  return ParseGoInt64(s, out);
}

}  // namespace

bool ToleratesTaint(const TolerationView& toleration, const TaintView& taint,
                    const TolerationOptions& options) {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  if (toleration.op.empty() || toleration.op == "Equal") return toleration.value == taint.value;
  if (toleration.op == "Exists") return true;
  if ((toleration.op == "Lt" || toleration.op == "Gt") && options.enable_comparison_operators) {
    int64_t toleration_value, taint_value;
    if (!ParseCanonicalInt64(toleration.value, toleration_value)) return false;
    if (!ParseCanonicalInt64(taint.value, taint_value)) return false;
    return toleration.op == "Lt" ? taint_value < toleration_value : taint_value > toleration_value;
  }
  return false;
}

bool ToleratesTaint(const resourcev1::DeviceToleration& toleration,
                    const resourcev1::DeviceTaint& taint) {
  return ToleratesTaint(
      TolerationView{toleration.key, toleration.operator_, toleration.value, toleration.effect},
      TaintView{taint.key, taint.value, taint.effect});
}

bool ToleratesTaint(const corev1::Toleration& toleration, const corev1::Taint& taint,
                    const TolerationOptions& options) {
  return ToleratesTaint(
      TolerationView{toleration.key, toleration.operator_, toleration.value, toleration.effect},
      TaintView{taint.key, taint.value, taint.effect}, options);
}

bool TolerationsTolerateTaint(const std::vector<corev1::Toleration>& tolerations,
                              const corev1::Taint& taint, const TolerationOptions& options) {
  for (const corev1::Toleration& t : tolerations) {
    if (ToleratesTaint(t, taint, options)) return true;
  }
  return false;
}

std::optional<Timestamp> AfterTolerationSeconds(Timestamp from, int64_t seconds) {
  seconds = std::max<int64_t>(0, seconds);
  const auto room = std::chrono::duration_cast<std::chrono::seconds>(
      Timestamp::max().time_since_epoch() - std::max(from, Timestamp()).time_since_epoch());
  if (seconds >= room.count()) return std::nullopt;
  return from + std::chrono::seconds(seconds);
}

std::optional<Timestamp> NoExecuteEvictionTime(
    const corev1::Pod& pod, const std::vector<corev1::Taint>& taints,
    const std::function<Timestamp(const corev1::Taint&)>& first_seen) {
  // Each tolerating toleration with seconds ends the Pod's stay that long after its taint:
  // upstream's one minimum over the tolerations of every NoExecute taint, dated per taint.
  std::optional<Timestamp> earliest;
  // When the Pod arrived on its node: bound (PodScheduled), else created with spec.nodeName.
  Timestamp arrived = pod.metadata.creation_timestamp.empty()
                          ? Timestamp()
                          : pod.metadata.creation_timestamp.ToTimestamp();
  for (const corev1::PodCondition& c : pod.status.conditions) {
    if (c.type == "PodScheduled" && c.status == "True" && !c.last_transition_time.empty()) {
      arrived = c.last_transition_time.ToTimestamp();
    }
  }
  for (const corev1::Taint& taint : taints) {
    if (taint.effect != "NoExecute") continue;
    const Timestamp added = taint.time_added ? taint.time_added->ToTimestamp() : first_seen(taint);
    bool tolerated = false;
    for (const corev1::Toleration& toleration : pod.spec.tolerations) {
      if (!ToleratesTaint(toleration, taint)) continue;
      tolerated = true;
      if (!toleration.toleration_seconds) continue;
      std::optional<Timestamp> due =
          AfterTolerationSeconds(std::max(added, arrived), *toleration.toleration_seconds);
      if (!due) continue;  // beyond any time: never
      earliest = earliest ? std::min(*earliest, *due) : *due;
    }
    if (!tolerated) return added;  // evicted at once: untolerated since it was added
  }
  return earliest;
}

bool IsScheduleBlockingEffect(std::string_view effect) {
  return effect == "NoSchedule" || effect == "NoExecute";
}

std::optional<size_t> FindUntoleratedDeviceTaint(
    const std::vector<resourcev1::DeviceTaint>& taints,
    const std::vector<resourcev1::DeviceToleration>& tolerations) {
  for (size_t i = 0; i < taints.size(); ++i) {
    if (!IsScheduleBlockingEffect(taints[i].effect)) continue;
    bool tolerated = false;
    for (const resourcev1::DeviceToleration& t : tolerations) {
      if (ToleratesTaint(t, taints[i])) {
        tolerated = true;
        break;
      }
    }
    if (!tolerated) return i;
  }
  return std::nullopt;
}

}  // namespace draplane::api::labels
