// Timestamp and duration functions of the standard library (private to lib/).
#pragma once

#include "cel/runtime/function.h"

namespace draplane::cel::internal {

void RegisterTimeFunctions(FunctionRegistry& r);

}  // namespace draplane::cel::internal
