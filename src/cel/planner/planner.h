// The planner: turns a parsed (and usually checked) AST into a tree of evaluation nodes
// (cel-cpp `eval/compiler/flat_expr_builder.h`, cel-go `interpreter/planner.go`).
//
// Steps:
//  1. Resolve names: comprehension and bind variables become slots; declared variables become
//     activation lookups (with container and qualified-name resolution, `a.b.c` trying the
//     longest bound prefix first); type identifiers become type constants; namespaced functions
//     (`optional.of`, `sets.contains`) become global calls.
//  2. Resolve calls: operators with special semantics (`&&`, `||`, `?:`, `==`, relations, `in`,
//     indexing, optional selection, `or`/`orValue`) get dedicated nodes; everything else is
//     dispatched over the overloads the checker resolved (all overloads when unchecked).
//  3. In the DRA environment, paths on `device` with constant keys resolve to direct lookups in
//     the DeviceInput (`device.attributes["d"].id` is one hash probe).
//  4. Fold constants: any node whose operands are all constants is evaluated once at plan time
//     (`quantity("40Gi")`, list and map literals of constants), as cel-go's OptOptimize does.
//  5. Precompile constant regular expressions of `matches`, `find` and `findAll`.
//  6. Turn the accumulation steps of map/filter/transformList macros into in-place appends.
//
// Thread-safety: Plan() is reentrant; the resulting nodes are immutable.
#pragma once

#include <vector>

#include "cel/checker/checker.h"
#include "cel/parser/ast.h"
#include "cel/runtime/arena.h"
#include "cel/runtime/function.h"
#include "cel/runtime/nodes.h"

namespace draplane::cel {

struct PlannerOptions {
  // `device` is the DRA device variable, evaluated from a DeviceInput.
  bool dra_device = false;
  // The container for name resolution (unchecked evaluation).
  std::string container;
};

struct PlanResult {
  NodePtr root;
  // Number of variable slots an evaluation needs.
  int slot_count = 0;
};

// Plans `ast`. `checked` is null for unchecked evaluation. Constants (string literals, folded
// values) are allocated in `constants`, which must outlive the nodes.
PlanResult Plan(const Ast& ast, const CheckResult* checked, const FunctionRegistry& registry,
                const PlannerOptions& options, Arena* constants);

}  // namespace draplane::cel
