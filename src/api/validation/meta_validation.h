// Validation of the generic parts of Kubernetes objects: ObjectMeta on create and update, the
// embedded metadata of templates, metav1.Conditions, metav1.LabelSelectors and core/v1
// NodeSelectors.
//
// Mirrors k8s.io/apimachinery/pkg/api/validation (ValidateObjectMeta, ValidateObjectMetaUpdate,
// ValidateAnnotations, ValidateOwnerReferences, ValidateFinalizers), .../apis/meta/v1/validation
// (ValidateLabels, ValidateManagedFields, ValidateConditions, ValidateLabelSelector) and
// pkg/apis/core/validation (ValidateNodeSelector, ValidateTemplateObjectMeta, the kube finalizer
// name check), with the upstream field paths and wording. Where upstream iterates a Go map (random
// order) we iterate the model's sorted map, so the order of errors is deterministic.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/field_error.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/meta_v1_types.h"

namespace draplane::api::validation {

// Validates an object name (or, with `prefix`, a generateName prefix); returns the messages.
using NameValidator = std::vector<std::string> (*)(std::string_view name, bool prefix);

// 256 KiB: the total size of all annotation keys and values (TotalAnnotationSizeLimitB).
inline constexpr size_t kTotalAnnotationSizeLimit = 256 * 1024;

// ObjectMeta on create. `namespaced` selects whether the namespace is required (and must be a
// DNS label) or forbidden. A missing name is reported unless generateName is set: the API server
// generates the name from the prefix before validating, so here the prefix is validated instead
// (with `name_fn(prefix, true)`), under `generateName`.
FieldErrorList ValidateObjectMeta(const metav1::ObjectMeta& meta, bool namespaced,
                                  NameValidator name_fn, const FieldPath& path);

// ObjectMeta on update: no new finalizers while deleting, resourceVersion present, generation
// not decremented, name / namespace / uid / timestamps immutable, labels, annotations, owner
// references and managed fields valid.
FieldErrorList ValidateObjectMetaUpdate(const metav1::ObjectMeta& meta,
                                        const metav1::ObjectMeta& old, const FieldPath& path);

// Finalizer names outside metadata (a Namespace's spec.finalizers): qualified names, and one
// without a domain must be a standard one ("kubernetes", "orphan", "foregroundDeletion"), as
// upstream's validateFinalizerName has it.
FieldErrorList ValidateFinalizerNames(const std::vector<std::string>& finalizers,
                                      const FieldPath& path);

// The metadata embedded in a template (ResourceClaimTemplate.spec.metadata): labels and
// annotations only; every other set field is Forbidden ("cannot be set").
FieldErrorList ValidateTemplateObjectMeta(const metav1::ObjectMeta& meta, const FieldPath& path);

FieldErrorList ValidateLabels(const std::map<std::string, std::string, std::less<>>& labels,
                              const FieldPath& path);
FieldErrorList ValidateAnnotations(
    const std::map<std::string, std::string, std::less<>>& annotations, const FieldPath& path);

// metav1validation.ValidateConditions: unique types, each type a qualified name, status
// True/False/Unknown, observedGeneration >= 0, lastTransitionTime and reason set, reason format
// and length, message length.
FieldErrorList ValidateConditions(const std::vector<metav1::Condition>& conditions,
                                  const FieldPath& path);

// corevalidation.ValidateNodeSelector with invalid label values in requirements rejected:
// at least one term; each requirement's operator, values and key; matchFields only on
// `metadata.name` with exactly one value for In / NotIn.
FieldErrorList ValidateNodeSelector(const corev1::NodeSelector& selector, const FieldPath& path);

// metav1validation.ValidateLabelSelector with invalid label values rejected (a stored selector
// must also convert with labels::LabelSelectorAsSelector): matchLabels as labels; per
// matchExpressions item an operator of In / NotIn (with values) or Exists / DoesNotExist
// (without), the key a label name, each value a label value.
FieldErrorList ValidateLabelSelector(const metav1::LabelSelector& selector, const FieldPath& path);

}  // namespace draplane::api::validation
