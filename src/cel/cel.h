// The CEL engine for DRA device selectors: the module's interface (docs/design/cel.md).
//
// Layers (as cel-cpp): parser/ (lexer, recursive-descent parser, macros) -> checker/ (types,
// overloads, cost estimation) -> planner/ (AST -> evaluation nodes: constant folding, RE2
// precompilation, device attribute paths resolved) -> runtime/ (values, arena, nodes,
// DeviceInput), with the standard and Kubernetes libraries in lib/.
//
// Typical use by the allocator:
//
//   auto env = cel::Environment::NewDra();                 // StoredExpressions, like upstream
//   cel::CompileCache cache(env, /*capacity=*/1024);
//   auto program = cache.GetOrCompile(selector.expression);  // InvalidArgument on compile error
//   auto device = cel::DeviceInputFromApi(api_device, slice.spec.driver);  // once per slice
//   cel::SelectorResult r = (*program)->Match(*device);   // no allocation on common paths
//   if (r.is_error()) ... "CEL runtime error: " + r.error() ...
//
// Thread-safety: environments, programs, caches and device inputs are safe to share between
// threads; every evaluation has its own state.
#pragma once

#include "cel/compile_cache.h"         // IWYU pragma: export
#include "cel/device_input_api.h"      // IWYU pragma: export
#include "cel/environment.h"           // IWYU pragma: export
#include "cel/program.h"               // IWYU pragma: export
#include "cel/runtime/device_input.h"  // IWYU pragma: export
#include "cel/selector_lint.h"         // IWYU pragma: export
