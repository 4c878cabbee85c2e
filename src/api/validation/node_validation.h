// A Node's taints, with upstream's rules, paths and wording (pkg/apis/core/validation
// validateNodeTaints): each key a qualified name, each value a label value, each effect one of
// NoSchedule, PreferNoSchedule and NoExecute, and no two taints with the same key and effect.
// Shared by the API server's node strategy and the simulator's ClusterChange `setTaints`.
//
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include "api/field_error.h"
#include "api/gen/core_v1_types.h"

namespace draplane::api::validation {

FieldErrorList ValidateNodeTaints(const std::vector<corev1::Taint>& taints, const FieldPath& path);

}  // namespace draplane::api::validation
