// Function overloads: their checker declarations together with their runtime implementations
// and runtime cost, collected in a registry that libraries (lib/) fill and environments share.
//
// Runtime dispatch (cel-go `interpreter/dispatcher.go` semantics): a call evaluates its
// arguments strictly (the first error argument is the result), then picks the first candidate
// overload whose parameter kinds match the argument kinds; none matching gives
// "no such overload".
//
// Thread-safety: a registry is filled during environment construction and read-only afterwards.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cel/checker/decls.h"
#include "cel/runtime/eval_context.h"
#include "cel/runtime/value.h"

namespace draplane::cel {

// An implementation receives the evaluated (non-error) arguments, receiver first.
using FunctionImpl = Value (*)(EvalContext& ctx, const Value* args);
// Runtime cost of one call given its arguments and result; null means 1.
using CostFn = uint64_t (*)(const Value* args, size_t n, const Value& result);

// What a parameter accepts at runtime; kAny for dyn and type parameters.
enum class ArgKind : uint8_t {
  kAny,
  kNull,
  kBool,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kList,
  kMap,
  kType,
  kOptional,
  kTimestamp,
  kDuration,
  kQuantity,
  kSemver,
  kIP,
  kCIDR,
  kURL,
};

bool ArgKindMatches(ArgKind k, const Value& v);

struct OverloadImpl {
  const OverloadDecl* decl = nullptr;
  std::vector<ArgKind> kinds;
  FunctionImpl impl = nullptr;
  CostFn cost = nullptr;
  // Arguments may be errors (e.g. `@not_strictly_false`); the implementation handles them.
  bool non_strict = false;

  bool Matches(const Value* args) const {
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (!ArgKindMatches(kinds[i], args[i])) return false;
    }
    return true;
  }
};

struct Function {
  FunctionDecl decl;
  // Parallel to decl.overloads; an overload without runtime implementation has impl == null
  // (the planner implements it natively, e.g. `_&&_`).
  std::vector<OverloadImpl> impls;
};

class FunctionRegistry {
 public:
  FunctionRegistry() = default;
  FunctionRegistry(const FunctionRegistry&) = delete;
  FunctionRegistry& operator=(const FunctionRegistry&) = delete;

  // Adds an overload of `function`. `impl` may be null for overloads the planner evaluates
  // natively.
  void Add(const std::string& function, OverloadDecl decl, FunctionImpl impl, CostFn cost = nullptr,
           bool non_strict = false);
  // Removes a function (used for feature-gated declarations).
  void Remove(std::string_view function);

  const Function* Find(std::string_view name) const;
  const OverloadImpl* FindOverload(std::string_view function, std::string_view overload_id) const;
  const std::map<std::string, std::unique_ptr<Function>, std::less<>>& functions() const {
    return functions_;
  }

 private:
  // unique_ptr keeps OverloadImpl::decl pointers stable while functions are added.
  std::map<std::string, std::unique_ptr<Function>, std::less<>> functions_;
  // Hash index over functions_ for lookups during checking and planning.
  std::unordered_map<std::string_view, const Function*> index_;
};

// The runtime argument kind for a checker type.
ArgKind ArgKindOf(const Type& t);

// Common cost helpers (cel-go runtimecost.go): the size of a value for cost purposes (string and
// bytes length, list and map size, 1 otherwise) and ceil(x * 0.1).
uint64_t CostSize(const Value& v);
inline uint64_t TraversalCost(uint64_t size) { return (size + 9) / 10; }

}  // namespace draplane::cel
