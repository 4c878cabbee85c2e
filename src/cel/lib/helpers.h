// Shorthands for the library implementations (private to lib/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cel/checker/decls.h"
#include "cel/runtime/arena.h"
#include "cel/runtime/function.h"
#include "cel/runtime/value.h"

namespace draplane::cel::internal {

// Adds a global overload.
inline void Global(FunctionRegistry& r, const std::string& fn, std::string id,
                   std::vector<Type> params, Type result, FunctionImpl impl,
                   CostFn cost = nullptr) {
  r.Add(fn, OverloadDecl(std::move(id), false, std::move(params), std::move(result)), impl, cost);
}
// Adds a receiver overload (params[0] is the receiver).
inline void Member(FunctionRegistry& r, const std::string& fn, std::string id,
                   std::vector<Type> params, Type result, FunctionImpl impl,
                   CostFn cost = nullptr) {
  r.Add(fn, OverloadDecl(std::move(id), true, std::move(params), std::move(result)), impl, cost);
}
// A declaration evaluated natively by the planner.
inline void Native(FunctionRegistry& r, const std::string& fn, std::string id, bool member,
                   std::vector<Type> params, Type result) {
  r.Add(fn, OverloadDecl(std::move(id), member, std::move(params), std::move(result)), nullptr);
}

inline Value Error(EvalContext& ctx, std::string_view message) {
  return MakeError(ctx.arena, message);
}

// Cost functions shared by several libraries.
// ceil(0.1 * size(arg0)).
uint64_t CostTraverseArg0(const Value* args, size_t n, const Value& result);
// ceil(0.2 * size(arg0)).
uint64_t CostTraverseArg0Twice(const Value* args, size_t n, const Value& result);
// ceil(0.2 * size(result)).
uint64_t CostTraverseResultTwice(const Value* args, size_t n, const Value& result);
// ceil(0.1 * (1 + size(arg0))) * ceil(0.25 * size(arg1)) (regular expressions).
uint64_t CostRegex(const Value* args, size_t n, const Value& result);
// Kubernetes' traversalCost(arg0) for list functions.
uint64_t CostTraversal(const Value* args, size_t n, const Value& result);

// Charges `cost` up front for an operation that would allocate proportionally; false (and the
// context cancelled) when it would pass the limit.
inline bool ChargeUpFront(EvalContext& ctx, uint64_t cost) {
  if (ctx.cost + cost > ctx.cost_limit) {
    ctx.cancelled = true;
    return false;
  }
  return true;
}

}  // namespace draplane::cel::internal
