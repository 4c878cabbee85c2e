// Static worst-case cost estimation of a checked expression (a rewrite of cel-go
// `checker/cost.go` with the Kubernetes call estimates of apiserver
// `pkg/cel/library/cost.go` and the DRA size estimator of dynamic-resource-allocation
// `cel/compile.go`).
//
// Algorithm (as cel-go):
//  1. Walk the AST; identifiers and selections on maps cost 1, literals 0, list literals 10,
//     map literals 30, calls their function's estimate plus their arguments; `&&`/`||` cost
//     between their first operand and the sum; `?:` the condition plus the dearer branch.
//  2. Comprehensions cost their range, initialiser and result plus (size of the range) times
//     (condition + step); cel.bind costs its initialiser and body plus the empty range.
//  3. Sizes of strings, lists and maps come from literals, from call results (concatenation,
//     split, ...), from local variables, or from the environment's declared bounds: for DRA,
//     `device.driver` <= 63, 32 domains of 32 attributes (ids <= 32, domains <= 63), attribute
//     values <= 64 (strings) / 48 (lists), capacities 32 x 32; unknown sizes are [0, 2^64-1].
//
// API validation rejects a selector whose estimated maximum exceeds 1,000,000 ("too complex,
// exceeds cost limit").
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>

#include "cel/checker/checker.h"
#include "cel/parser/ast.h"

namespace draplane::cel {

struct CostEstimate {
  uint64_t min = 0;
  uint64_t max = 0;
};

// `dra` enables the DRA size bounds for the `device` variable.
CostEstimate EstimateCost(const Ast& ast, const CheckResult& checked, bool dra);

}  // namespace draplane::cel
