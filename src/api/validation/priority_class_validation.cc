#include "api/validation/priority_class_validation.h"

#include <string>

#include "api/gen/core_v1_types.h"
#include "api/priority.h"
#include "api/validation/internal/common.h"
#include "api/validation/meta_validation.h"
#include "api/validation/names.h"

namespace draplane::api::validation {
namespace {

using internal::Append;

std::string RenderOptional(const std::optional<std::string>& value) {
  return value ? RenderValue(*value) : "null";
}

// Why `pc`, named with the system prefix, is not one of the system classes as they are
// (upstream's IsKnownSystemPriorityClass), or empty.
std::string SystemClassMismatch(const schedulingv1::PriorityClass& pc) {
  const schedulingv1::PriorityClass* system = FindSystemPriorityClass(pc.metadata.name);
  if (system == nullptr) return pc.metadata.name + " is not a known system priority class";
  if (pc.value.value_or(0) != system->value.value_or(0)) {
    return "value of " + pc.metadata.name + " PriorityClass must be " +
           std::to_string(system->value.value_or(0));
  }
  if (pc.global_default.value_or(false) != system->global_default.value_or(false)) {
    return "globalDefault of " + pc.metadata.name + " PriorityClass must be " +
           RenderBool(system->global_default.value_or(false));
  }
  return "";
}

// The system prefix and the user range (kept on update as well: a system class's globalDefault
// cannot be flipped either).
FieldErrorList ValidateValue(const schedulingv1::PriorityClass& pc) {
  FieldErrorList errs;
  if (pc.metadata.name.starts_with(kSystemPriorityClassPrefix)) {
    std::string mismatch = SystemClassMismatch(pc);
    if (!mismatch.empty()) {
      errs.push_back(
          Forbidden(FieldPath("metadata").Child("name"),
                    "priority class names with '" + std::string(kSystemPriorityClassPrefix) +
                        "' prefix are reserved for system use only. error: " + mismatch));
    }
  } else if (pc.value.value_or(0) > kHighestUserDefinablePriority) {
    errs.push_back(
        Forbidden(FieldPath("value"), "maximum allowed value of a user defined priority is " +
                                          std::to_string(kHighestUserDefinablePriority)));
  }
  return errs;
}

}  // namespace

void SetDefaults(schedulingv1::PriorityClass* pc) {
  if (!pc->value) pc->value = 0;
  if (!pc->preemption_policy) {
    pc->preemption_policy = std::string(corev1::kPreemptionPolicyPreemptLowerPriority);
  }
}

FieldErrorList ValidatePriorityClass(const schedulingv1::PriorityClass& pc) {
  FieldErrorList errs =
      ValidateObjectMeta(pc.metadata, false, NameIsDNSSubdomain, FieldPath("metadata"));
  Append(errs, ValidateValue(pc));
  if (pc.preemption_policy) {
    const std::string& policy = *pc.preemption_policy;
    if (policy != corev1::kPreemptionPolicyPreemptLowerPriority &&
        policy != corev1::kPreemptionPolicyNever) {
      errs.push_back(NotSupported(FieldPath("preemptionPolicy"), RenderValue(policy),
                                  {std::string(corev1::kPreemptionPolicyNever),
                                   std::string(corev1::kPreemptionPolicyPreemptLowerPriority)}));
    }
  }
  return errs;
}

FieldErrorList ValidatePriorityClassUpdate(const schedulingv1::PriorityClass& pc,
                                           const schedulingv1::PriorityClass& old) {
  FieldErrorList errs = ValidateObjectMetaUpdate(pc.metadata, old.metadata, FieldPath("metadata"));
  Append(errs, ValidateValue(pc));
  if (pc.value.value_or(0) != old.value.value_or(0)) {
    errs.push_back(Forbidden(FieldPath("value"), "may not be changed in an update."));
  }
  if (pc.preemption_policy != old.preemption_policy) {
    errs.push_back(Invalid(FieldPath("preemptionPolicy"), RenderOptional(pc.preemption_policy),
                           "field is immutable"));
  }
  return errs;
}

}  // namespace draplane::api::validation
