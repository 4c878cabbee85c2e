// CEL environments: the declarations an expression is compiled against, and Compile().
//
// Two kinds:
//  - the DRA device selector environment (dynamic-resource-allocation cel/compile.go
//    `newCompiler` on top of apiserver `environment.MustBaseEnvSet`): one variable `device` of
//    object type kubernetes.DRADevice, the Kubernetes base libraries, cel.bind, homogeneous
//    aggregate literals, and the result-type rule ("must evaluate to bool or the unknown type");
//  - generic environments with caller-declared variables (`draplane cel eval`, conformance).
//
// NewExpressions vs StoredExpressions (apiserver environment.go): API validation compiles new or
// changed expressions with NewExpressions, where feature-gated declarations follow the gates;
// stored expressions and the scheduler use StoredExpressions, where every declaration is present
// regardless of gates. What the gates change:
//  - DRAConsumableCapacity: `device.allowMultipleAllocations` exists (else "undefined field");
//  - DRAListTypeAttributes: attributes are `dyn` (macros over them type-check, lists allowed)
//    instead of `any`, the `includes` function (and from 1.37 `asList`) is declared, and a `dyn`
//    result is accepted.
// The release (`list_attributes`, list_attribute_mode.h) decides how list-typed attributes read
// at runtime, and which of those declarations exist at all: none before 1.36, `asList` from 1.37.
//
// Compile errors are InvalidArgument statuses whose message is upstream's detail text:
// "compilation failed: ERROR: <input>:1:1: Syntax error: ...", "compilation failed: ERROR:
// <input>:1:1: undeclared reference to 'x' (in container '')", "must evaluate to bool or the
// unknown type, not int".
//
// Thread-safety: an Environment is immutable after construction; Compile() is thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cel/checker/checker.h"
#include "cel/checker/decls.h"
#include "cel/list_attribute_mode.h"
#include "cel/program.h"
#include "cel/runtime/function.h"
#include "common/status.h"

namespace draplane::cel {

enum class EnvType { kNewExpressions, kStoredExpressions };

struct DraEnvironmentOptions {
  EnvType env_type = EnvType::kStoredExpressions;
  // Feature gates; they only change NewExpressions (see the header comment).
  bool consumable_capacity = false;
  bool list_type_attributes = false;
  // The release's reading of list-typed attributes (1.36's by default).
  ListAttributeMode list_attributes = ListAttributeMode::kLists;
};

struct GenericEnvironmentOptions {
  std::vector<VariableDecl> variables;
  std::string container;
  // cel.HomogeneousAggregateLiterals (Kubernetes enables it).
  bool homogeneous_aggregate_literals = false;
  // Kubernetes' AST validators: constant arguments of duration(), timestamp() and matches()
  // must be valid ("invalid duration argument", ...).
  bool literal_validators = true;
};

struct CompileOptions {
  // Type-check the expression (false: parse and plan only, for runtime semantics of ill-typed
  // expressions).
  bool check = true;
  // Estimate the worst-case cost (cel-go EstimateCost with Kubernetes' size bounds).
  bool estimate_cost = true;
  // Runtime cost limit per evaluation.
  uint64_t cost_limit = 1000000;
  // DRA environment: require a bool (or unknown-type) result, as upstream does. `draplane cel
  // eval --device-json` turns it off to print any value.
  bool require_bool_result = true;
};

// resourceapi.CELSelectorExpressionMaxCost and CELSelectorExpressionMaxLength.
inline constexpr uint64_t kSelectorMaxCost = 1000000;
inline constexpr size_t kSelectorMaxLength = 10 * 1024;

class Environment : public std::enable_shared_from_this<Environment> {
 public:
  static std::shared_ptr<const Environment> NewDra(const DraEnvironmentOptions& options = {});
  static std::shared_ptr<const Environment> NewGeneric(GenericEnvironmentOptions options);

  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  ~Environment();

  // Parses, checks, validates, plans and (optionally) estimates the cost of `expression`.
  // InvalidArgument with upstream's message on any compile error.
  StatusOr<std::shared_ptr<const Program>> Compile(std::string_view expression,
                                                   const CompileOptions& options = {}) const;

  bool is_dra() const { return dra_.has_value(); }
  const FunctionRegistry& registry() const { return registry_; }

 private:
  class Declarations;
  Environment();

  std::optional<DraEnvironmentOptions> dra_;
  bool literal_validators_ = true;
  FunctionRegistry registry_;
  std::unique_ptr<Declarations> decls_;
};

}  // namespace draplane::cel
