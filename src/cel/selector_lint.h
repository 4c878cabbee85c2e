// Compile-checking the CEL device selectors of DRA objects, as the API server does when it
// validates them (kubernetes pkg/apis/resource/validation/validation.go `validateCELSelector`):
//
//  - an expression longer than 10 KiB is not compiled (api/validation reports TooLong);
//  - a compile error is `field.Invalid(path, expression, detail)` with upstream's detail
//    ("compilation failed: ERROR: <input>:1:1: ...", "must evaluate to bool or the unknown
//    type, not int");
//  - an estimated worst-case cost above 1,000,000 is `field.Forbidden(path, "too complex,
//    exceeds cost limit")`.
//
// Paths: spec.selectors[i].cel.expression (DeviceClass),
// spec.devices.requests[i].exactly.selectors[j].cel.expression and
// spec.devices.requests[i].firstAvailable[k].selectors[j].cel.expression (ResourceClaim; under
// spec.spec for a ResourceClaimTemplate).
//
// Derived attributes (KEP-6080, requests[i].exactly.derivedAttributes[j].expression and the
// subrequests' likewise) compile in the same environment without the bool rule; their result
// must be a string, int, bool or semver (or, with list attributes, a list of one of them) as far
// as static types tell, and their estimated cost is limited like a selector's.
//
// Thread-safety: thread-safe; environments are built once per option set and cached.
#pragma once

#include "api/field_error.h"
#include "api/gen/resource_v1_types.h"
#include "api/object.h"
#include "cel/environment.h"

namespace draplane::cel {

struct SelectorLintOptions {
  // NewExpressions for created or changed selectors; StoredExpressions for unchanged ones.
  EnvType env_type = EnvType::kNewExpressions;
  // Feature gates (DRAConsumableCapacity, DRAListTypeAttributes; Kubernetes 1.36 defaults).
  bool consumable_capacity = true;
  bool list_type_attributes = false;
  // The release's reading of list attributes (1.37 declares `asList`).
  ListAttributeMode list_attributes = ListAttributeMode::kLists;
};

api::FieldErrorList LintCelSelectors(const api::resourcev1::DeviceClass& obj,
                                     const SelectorLintOptions& options = {});
api::FieldErrorList LintCelSelectors(const api::resourcev1::ResourceClaim& obj,
                                     const SelectorLintOptions& options = {});
api::FieldErrorList LintCelSelectors(const api::resourcev1::ResourceClaimTemplate& obj,
                                     const SelectorLintOptions& options = {});
// Dispatches on the kind; other kinds have no selectors (empty list).
api::FieldErrorList LintCelSelectors(const api::Object& obj,
                                     const SelectorLintOptions& options = {});
// For an update of `old` (null for a create): the selectors are compiled as StoredExpressions
// when they equal the old object's (upstream treats unchanged selectors as stored, so a gate
// turned off later does not invalidate them), else as NewExpressions; `options.env_type` is
// ignored.
api::FieldErrorList LintCelSelectors(const api::Object& obj, const api::Object* old,
                                     SelectorLintOptions options);

// Lints one expression at `path` (the `...cel.expression` field).
void LintCelSelector(const std::string& expression, const api::FieldPath& path,
                     const SelectorLintOptions& options, api::FieldErrorList* errors);

}  // namespace draplane::cel
