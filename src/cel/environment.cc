#include "cel/environment.h"

#include <map>
#include <utility>

#include "cel/checker/cost.h"
#include "cel/lib/library.h"
#include "cel/lib/regex_cache.h"
#include "cel/parser/parser.h"
#include "cel/planner/planner.h"

namespace draplane::cel {

constexpr char kDeviceType[] = "kubernetes.DRADevice";

namespace {

// Whether list attributes exist for expressions of this environment: from 1.36 on, in stored
// expressions always (upstream 5afedd9), in new ones with DRAListTypeAttributes.
bool ListTypesDeclared(const DraEnvironmentOptions& options) {
  if (options.list_attributes == ListAttributeMode::kUnsupported) return false;
  return options.env_type == EnvType::kStoredExpressions || options.list_type_attributes;
}

}  // namespace

std::string_view ListAttributeModeName(ListAttributeMode mode) {
  switch (mode) {
    case ListAttributeMode::kUnsupported:
      return "1.34-1.35";
    case ListAttributeMode::kLists:
      return "1.36";
    case ListAttributeMode::kFirstElement:
      return "1.37";
  }
  return "?";
}

class Environment::Declarations final : public CheckerEnv {
 public:
  Declarations(const FunctionRegistry& registry, std::string container, bool homogeneous)
      : registry_(registry), container_(std::move(container)), homogeneous_(homogeneous) {}

  void AddVariable(VariableDecl v) { variables_[v.name] = std::move(v); }
  void AddField(std::string name, Type type) { device_fields_[std::move(name)] = std::move(type); }

  const VariableDecl* FindVariable(std::string_view name) const override {
    auto it = variables_.find(name);
    return it == variables_.end() ? nullptr : &it->second;
  }
  const FunctionDecl* FindFunction(std::string_view name) const override {
    const Function* f = registry_.Find(name);
    return f == nullptr ? nullptr : &f->decl;
  }
  std::optional<Type> FindFieldType(std::string_view struct_name,
                                    std::string_view field) const override {
    if (struct_name != kDeviceType) return std::nullopt;
    auto it = device_fields_.find(field);
    if (it == device_fields_.end()) return std::nullopt;
    return it->second;
  }
  std::string_view container() const override { return container_; }
  bool homogeneous_aggregate_literals() const override { return homogeneous_; }

 private:
  const FunctionRegistry& registry_;
  std::string container_;
  bool homogeneous_;
  std::map<std::string, VariableDecl, std::less<>> variables_;
  std::map<std::string, Type, std::less<>> device_fields_;
};

Environment::Environment() = default;
Environment::~Environment() = default;

std::shared_ptr<const Environment> Environment::NewDra(const DraEnvironmentOptions& options) {
  std::shared_ptr<Environment> env(new Environment());
  env->dra_ = options;
  const bool stored = options.env_type == EnvType::kStoredExpressions;
  const bool list_types = ListTypesDeclared(options);
  const bool multi_alloc = stored || options.consumable_capacity;
  RegisterKubernetesCelLibrary(env->registry_);
  if (list_types) RegisterDraIncludes(env->registry_);
  if (list_types && options.list_attributes == ListAttributeMode::kFirstElement) {
    RegisterDraAsList(env->registry_);
  }
  env->decls_ = std::make_unique<Declarations>(env->registry_, "", /*homogeneous=*/true);
  for (VariableDecl& t : TypeIdentifiers()) env->decls_->AddVariable(std::move(t));
  // The attribute value type: google.protobuf.Any ("unknown type") or dyn with list attributes.
  Type attr = list_types ? Type::Dyn() : Type::Any();
  env->decls_->AddVariable({"device", Type::Struct(kDeviceType)});
  env->decls_->AddField("driver", Type::String());
  env->decls_->AddField("attributes", Type::Map(Type::String(), Type::Map(Type::String(), attr)));
  env->decls_->AddField(
      "capacity",
      Type::Map(Type::String(), Type::Map(Type::String(), Type::Opaque("kubernetes.Quantity"))));
  if (multi_alloc) env->decls_->AddField("allowMultipleAllocations", Type::Bool());
  return env;
}

std::shared_ptr<const Environment> Environment::NewGeneric(GenericEnvironmentOptions options) {
  std::shared_ptr<Environment> env(new Environment());
  env->literal_validators_ = options.literal_validators;
  RegisterKubernetesCelLibrary(env->registry_);
  RegisterDraIncludes(env->registry_);
  env->decls_ = std::make_unique<Declarations>(env->registry_, options.container,
                                               options.homogeneous_aggregate_literals);
  for (VariableDecl& t : TypeIdentifiers()) env->decls_->AddVariable(std::move(t));
  for (VariableDecl& v : options.variables) env->decls_->AddVariable(std::move(v));
  return env;
}

namespace {

// cel-go ValidateDurationLiterals / ValidateTimestampLiterals / ValidateRegexLiterals: constant
// arguments of duration(), timestamp() and matches() must be valid.
class LiteralValidator {
 public:
  LiteralValidator(const CheckResult& checked, const FunctionRegistry& registry,
                   std::vector<Issue>* issues)
      : checked_(checked), registry_(registry), issues_(issues) {}

  void Visit(const Expr& e) {
    if (e.kind == ExprKind::kCall) Check(e);
    auto visit = [this](const ExprPtr& c) {
      if (c) Visit(*c);
    };
    visit(e.operand);
    for (const ExprPtr& a : e.args) visit(a);
    for (const MapEntry& m : e.entries) {
      visit(m.key);
      visit(m.value);
    }
    visit(e.iter_range);
    visit(e.accu_init);
    visit(e.loop_condition);
    visit(e.loop_step);
    visit(e.result);
  }

 private:
  void Check(const Expr& call) {
    const Reference* ref = checked_.ReferenceOf(call.id);
    std::string name = ref ? ref->name : call.name;
    if (call.args.empty()) return;
    const Expr& arg = *call.args[0];
    if (arg.kind != ExprKind::kConstant || arg.constant.kind != ConstantKind::kString) return;
    if (name == "matches") {
      std::string error;
      if (!internal::CompileRegex(arg.constant.string_value, &error)) {
        issues_->push_back({arg.position, "invalid matches argument"});
      }
      return;
    }
    if ((name == "duration" || name == "timestamp") && call.args.size() == 1 && !call.operand) {
      const OverloadImpl* impl = registry_.FindOverload(
          name, name == "duration" ? "string_to_duration" : "string_to_timestamp");
      if (impl == nullptr) return;
      Arena arena;
      EvalContext ctx;
      ctx.arena = &arena;
      Value a = Value::String(arg.constant.string_value);
      if (impl->impl(ctx, &a).IsError()) {
        issues_->push_back({arg.position, "invalid " + name + " argument"});
      }
    }
  }

  const CheckResult& checked_;
  const FunctionRegistry& registry_;
  std::vector<Issue>* issues_;
};

Status CompileError(const Ast& ast, const std::vector<Issue>& issues) {
  return InvalidArgumentError("compilation failed: " + FormatIssues(ast, issues));
}

}  // namespace

StatusOr<std::shared_ptr<const Program>> Environment::Compile(std::string_view expression,
                                                              const CompileOptions& options) const {
  ParseResult parsed = Parse(expression);
  if (!parsed.issues.empty()) return CompileError(parsed.ast, parsed.issues);
  const Ast& ast = parsed.ast;

  std::optional<CheckResult> checked;
  Type output = Type::Dyn();
  if (options.check) {
    checked = Check(ast, *decls_);
    if (checked->issues.empty() && literal_validators_) {
      LiteralValidator(*checked, registry_, &checked->issues).Visit(*ast.root);
    }
    if (!checked->issues.empty()) return CompileError(ast, checked->issues);
    output = checked->TypeOf(ast.root->id);
    if (dra_ && options.require_bool_result) {
      // dynamic-resource-allocation cel/compile.go: the result must be bool or the unknown type.
      const bool list_types = ListTypesDeclared(*dra_);
      bool ok = output.kind() == TypeKind::kBool || output.kind() == TypeKind::kAny ||
                (list_types && output.kind() == TypeKind::kDyn);
      if (!ok) {
        return InvalidArgumentError("must evaluate to bool or the unknown type, not " +
                                    output.ToString());
      }
    }
  }

  std::optional<uint64_t> estimate;
  if (checked && options.estimate_cost) {
    CostEstimate est = EstimateCost(ast, *checked, dra_.has_value());
    estimate = est.max;
  }

  auto constants = std::make_unique<Arena>(size_t{1} << 30);
  PlannerOptions planner_options;
  planner_options.dra_device = dra_.has_value();
  planner_options.container = std::string(decls_->container());
  PlanResult plan =
      Plan(ast, checked ? &*checked : nullptr, registry_, planner_options, constants.get());
  return std::make_shared<const Program>(
      shared_from_this(), std::string(expression), std::move(constants), std::move(plan.root),
      plan.slot_count, std::move(output), estimate, options.cost_limit,
      dra_ ? dra_->list_attributes : ListAttributeMode::kLists);
}

}  // namespace draplane::cel
