// Semantic versions as CEL values (private to the cel module): blang/semver v4 parsing, used by
// the semver library and for device `version` attributes.
#pragma once

#include <string>
#include <string_view>

#include "cel/runtime/opaque_values.h"

namespace draplane::cel::internal {

// blang/semver v4 `Parse` (strict). On failure returns false and sets `*error` to blang's
// message (e.g. "Major number must not contain leading zeroes \"01\"").
bool ParseSemver(std::string_view s, SemverValue* out, std::string* error);

// Kubernetes' `normalizeAndParse` (semver(s, true)): strips one leading "v", pads short
// versions with ".0" and strips leading zeros before parsing.
bool ParseSemverNormalized(std::string_view s, SemverValue* out, std::string* error);

}  // namespace draplane::cel::internal
