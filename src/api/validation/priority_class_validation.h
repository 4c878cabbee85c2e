// Defaulting and validation of scheduling.k8s.io/v1 PriorityClass, with the rules, field paths
// and wording of upstream's pkg/apis/scheduling/validation (ValidatePriorityClass,
// ValidatePriorityClassUpdate) and pkg/apis/scheduling/v1 defaults. Rules that need the other
// classes (one global default) are admission's (server/admission); the system classes' values
// come from api/priority.h.
//
// Thread-safety: pure functions.
#pragma once

#include "api/field_error.h"
#include "api/gen/scheduling_v1_types.h"

namespace draplane::api::validation {

// `value` 0 and `preemptionPolicy: PreemptLowerPriority` when absent (upstream's value is a plain
// int32, always written).
void SetDefaults(schedulingv1::PriorityClass* pc);

// Create: metadata (cluster-scoped, name a DNS subdomain); a `system-` name only for the system
// classes with their exact value and globalDefault; otherwise a value at most
// kHighestUserDefinablePriority; a known preemptionPolicy.
FieldErrorList ValidatePriorityClass(const schedulingv1::PriorityClass& pc);
// Update: the same, metadata update rules, and `value` and `preemptionPolicy` unchanged.
FieldErrorList ValidatePriorityClassUpdate(const schedulingv1::PriorityClass& pc,
                                           const schedulingv1::PriorityClass& old);

}  // namespace draplane::api::validation
