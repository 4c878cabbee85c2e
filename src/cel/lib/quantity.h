// CEL values of resource.Quantity (private to the cel module): construction from parsed API
// quantities (device capacities) and from `quantity()` strings.
#pragma once

#include <string_view>

#include "api/quantity.h"
#include "cel/runtime/opaque_values.h"
#include "common/status.h"

namespace draplane::cel::internal {

// The CEL value of `q`. Upstream's int64Amount/inf.Dec form (which decides isInteger and
// asInteger) is re-derived from the text `q` was parsed from, following
// apimachinery `ParseQuantity`; computed quantities use their exact value.
QuantityValue MakeQuantityValue(const api::Quantity& q);

// `quantity(text)`: InvalidArgument with upstream's message when `text` does not parse.
StatusOr<QuantityValue> ParseQuantityValue(std::string_view text);

}  // namespace draplane::cel::internal
