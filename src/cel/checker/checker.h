// The CEL type checker (a rewrite of cel-go `checker/checker.go` and `checker/types.go`).
//
// Algorithm (as cel-go):
//  1. Walk the AST bottom-up, giving every node a type. Identifiers resolve against
//     comprehension scopes, then declared variables (container-qualified candidates first);
//     select chains that spell a declared qualified name (`a.b.c`) resolve as one identifier.
//  2. Calls resolve overloads by unifying argument types with each overload's parameter types
//     (type parameters are instantiated with fresh variables; dyn is assignable both ways).
//     Every matching overload is recorded; when several match with different result types the
//     call has type dyn. Receiver calls whose target spells a namespace (`optional.of`,
//     `sets.contains`) resolve as global functions.
//  3. At the end every type parameter is replaced by its binding, or dyn when unbound.
//
// Errors use cel-go's wording ("undeclared reference to 'x' (in container '')", "found no
// matching overload for '_+_' applied to '(int, uint)'", "undefined field 'f'", ...).
//
// Thread-safety: Check() is reentrant; the environment must not change during a call.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cel/checker/decls.h"
#include "cel/checker/types.h"
#include "cel/parser/ast.h"

namespace draplane::cel {

// What the checker resolves names against.
class CheckerEnv {
 public:
  virtual ~CheckerEnv() = default;
  // A declared variable (including type identifiers such as `int`), or nullptr.
  virtual const VariableDecl* FindVariable(std::string_view name) const = 0;
  virtual const FunctionDecl* FindFunction(std::string_view name) const = 0;
  // The type of `field` of struct type `struct_name`; nullopt when the struct has no such
  // field.
  virtual std::optional<Type> FindFieldType(std::string_view struct_name,
                                            std::string_view field) const = 0;
  // The container used to qualify names ("" for none).
  virtual std::string_view container() const = 0;
  // Reject list and map literals with mixed element types (cel.HomogeneousAggregateLiterals).
  virtual bool homogeneous_aggregate_literals() const = 0;
};

// How the checker resolved an identifier, qualified select or call.
struct Reference {
  // Identifiers and qualified selects: the declared variable name. Calls: the function name
  // (namespaced functions get their full name, e.g. "optional.of").
  std::string name;
  // Calls: every overload that matched the argument types.
  std::vector<std::string> overload_ids;
  // A receiver call that resolved to a namespaced global function: the planner drops the
  // target.
  bool namespaced_call = false;
};

struct CheckResult {
  // Indexed by expression id.
  std::vector<Type> types;
  std::unordered_map<int64_t, Reference> references;
  std::vector<Issue> issues;

  const Type& TypeOf(int64_t id) const { return types[static_cast<size_t>(id)]; }
  const Reference* ReferenceOf(int64_t id) const {
    auto it = references.find(id);
    return it == references.end() ? nullptr : &it->second;
  }
};

CheckResult Check(const Ast& ast, const CheckerEnv& env);

// If `e` is an identifier or a chain of selects on an identifier (`a.b.c`), its dotted name.
std::optional<std::string> ToQualifiedName(const Expr& e);

// The names a (possibly container-relative) identifier may refer to, most qualified first
// (cel-go `containers.Container.ResolveCandidateNames`). A leading '.' means "root only".
std::vector<std::string> ResolveCandidateNames(std::string_view container, std::string_view name);

}  // namespace draplane::cel
