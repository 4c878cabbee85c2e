// Taint / toleration matching, re-derived from resourceclaim/devicetoleration.go and
// core/v1 toleration.go (ToleratesTaint, compareNumericValues) and component-helpers'
// FindMatchingUntoleratedTaint.
#include "api/labels/taints.h"

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
