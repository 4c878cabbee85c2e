// Declarations the type checker resolves against: variables and function overloads
// (cel-go `common/decls`).
//
// Thread-safety: immutable after construction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cel/checker/types.h"

namespace draplane::cel {

struct VariableDecl {
  std::string name;
  Type type;
};

struct OverloadDecl {
  // Unique id, e.g. "add_int64", "string_contains" (cel-go `common/overloads` names where they
  // exist; upstream Kubernetes ids for its libraries).
  std::string id;
  // Receiver style: `target.fn(args)`; the receiver is params[0].
  bool member = false;
  std::vector<Type> params;
  Type result;
  // Names of the type parameters that occur in params/result (filled by the constructor).
  std::vector<std::string> type_params;

  OverloadDecl(std::string id, bool member, std::vector<Type> params, Type result);
};

struct FunctionDecl {
  std::string name;
  std::vector<OverloadDecl> overloads;
};

}  // namespace draplane::cel
