// A SelectorEngine for unit tests that do not want to depend on CEL. It understands a tiny
// selector language of its own (not CEL):
//
//   true | false                 constant verdicts
//   driver=<name>                the device's driver equals <name>
//   attr:<name>=<text>           the attribute <name> (as published) has a scalar whose text
//                                (int, bool as true/false, string, version) equals <text>
//   error:<message>              a runtime error with <message>
//   anything else                a compile error "unknown test selector"
//
// Terms may be joined with " && ".
//
// Thread-safety: not thread-safe (like every engine).
#pragma once

#include <memory>

#include "allocator/internal/selector_engine.h"

namespace draplane::allocator::internal {

// When `evaluations` is not null it counts Evaluate calls (to test caching).
std::unique_ptr<SelectorEngine> NewTestingSelectorEngine(int* evaluations = nullptr);

}  // namespace draplane::allocator::internal
