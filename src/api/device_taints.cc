#include "api/device_taints.h"

namespace draplane::api {

namespace rv1 = resourcev1;

bool SelectsEverything(const rv1::DeviceTaintRule& rule) {
  const auto& s = rule.spec.device_selector;
  return !s || (!s->driver && !s->pool && !s->device);
}

bool RuleSelectsDevice(const rv1::DeviceTaintRule& rule, std::string_view driver,
                       std::string_view pool, std::string_view device) {
  if (SelectsEverything(rule)) {
    auto it = rule.metadata.annotations.find(kSelectAllAnnotation);
    return it != rule.metadata.annotations.end() && it->second == "true";
  }
  const rv1::DeviceTaintSelector& s = *rule.spec.device_selector;
  return (!s.driver || *s.driver == driver) && (!s.pool || *s.pool == pool) &&
         (!s.device || *s.device == device);
}

std::optional<rv1::ResourceSlice> WithRuleTaints(
    const rv1::ResourceSlice& slice, const std::vector<const rv1::DeviceTaintRule*>& rules) {
  std::optional<rv1::ResourceSlice> tainted;
  for (const rv1::DeviceTaintRule* rule : rules) {
    if (rule->spec.taint.effect == rv1::kDeviceTaintEffectNone) continue;
    const auto& selector = rule->spec.device_selector;
    // Cheap rejections before the per-device walk: most rules name one driver and pool.
    if (selector && selector->driver && *selector->driver != slice.spec.driver) continue;
    if (selector && selector->pool && *selector->pool != slice.spec.pool.name) continue;
    for (size_t i = 0; i < slice.spec.devices.size(); ++i) {
      const rv1::Device& device = slice.spec.devices[i];
      if (!RuleSelectsDevice(*rule, slice.spec.driver, slice.spec.pool.name, device.name)) continue;
      if (!tainted) tainted = slice;
      tainted->spec.devices[i].taints.push_back(rule->spec.taint);
    }
  }
  return tainted;
}

}  // namespace draplane::api
