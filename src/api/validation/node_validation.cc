#include "api/validation/node_validation.h"

#include <map>
#include <set>
#include <string>

#include "api/validation/internal/common.h"
#include "api/validation/names.h"

namespace draplane::api::validation {

using internal::Append;

FieldErrorList ValidateNodeTaints(const std::vector<corev1::Taint>& taints, const FieldPath& path) {
  FieldErrorList errs;
  std::map<std::string, std::set<std::string>> keys_by_effect;
  for (size_t i = 0; i < taints.size(); ++i) {
    const corev1::Taint& taint = taints[i];
    FieldPath p = path.Index(static_cast<int64_t>(i));
    Append(errs, ValidateLabelName(taint.key, p.Child("key")));
    if (std::vector<std::string> bad = IsLabelValue(taint.value); !bad.empty()) {
      std::string joined;
      for (const std::string& msg : bad) joined += (joined.empty() ? "" : ";") + msg;
      errs.push_back(Invalid(p.Child("value"), RenderValue(taint.value), joined));
    }
    if (taint.effect.empty()) {
      errs.push_back(Required(p.Child("effect")));
    } else if (taint.effect != "NoSchedule" && taint.effect != "PreferNoSchedule" &&
               taint.effect != "NoExecute") {
      errs.push_back(NotSupported(p.Child("effect"), RenderValue(taint.effect),
                                  {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
    }
    if (!keys_by_effect[taint.effect].insert(taint.key).second) {
      FieldError e = Duplicate(p, RenderValue(taint.key + ":" + taint.effect));
      e.detail = "taints must be unique by key and effect pair";
      errs.push_back(std::move(e));
    }
  }
  return errs;
}

}  // namespace draplane::api::validation
