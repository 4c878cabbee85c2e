// Validation of any object by its kind, as the API server validates it on create or update: the
// one dispatcher `draplane lint` and the simulator's policy and configuration objects share.
#pragma once

#include "api/field_error.h"
#include "api/object.h"
#include "api/validation/validation.h"

namespace draplane::api::validation {

// Validates `object` on create (old == nullptr) or as an update of `old` (same kind), appending
// to `errors`. Claims and templates are defaulted first (both objects), as the API server does
// before validating. Returns false, adding nothing, for kinds draplane does not validate.
bool ValidateObject(Object& object, Object* old, const Features& features, FieldErrorList* errors);

}  // namespace draplane::api::validation
