#include "cel/selector_lint.h"

#include <map>
#include <tuple>
#include <variant>

#include "common/mutex.h"

namespace draplane::cel {
namespace {

namespace resourcev1 = api::resourcev1;

std::shared_ptr<const Environment> EnvFor(const SelectorLintOptions& o) {
  static Mutex mu;
  static auto* envs =
      new std::map<std::tuple<int, bool, bool, int>, std::shared_ptr<const Environment>>();
  MutexLock lock(mu);
  auto key = std::make_tuple(static_cast<int>(o.env_type), o.consumable_capacity,
                             o.list_type_attributes, static_cast<int>(o.list_attributes));
  auto& env = (*envs)[key];
  if (!env) {
    env = Environment::NewDra(DraEnvironmentOptions{.env_type = o.env_type,
                                                    .consumable_capacity = o.consumable_capacity,
                                                    .list_type_attributes = o.list_type_attributes,
                                                    .list_attributes = o.list_attributes});
  }
  return env;
}

// Compiles `expression` the way admission does (cost estimated, limited like a selector's);
// appends the compile or cost error and returns null when it fails. Over-long expressions are
// api/validation's error and are skipped here.
std::shared_ptr<const Program> CompileChecked(const std::string& expression,
                                              const api::FieldPath& path,
                                              const SelectorLintOptions& options, bool require_bool,
                                              api::FieldErrorList* errors) {
  if (expression.size() > kSelectorMaxLength) return nullptr;
  CompileOptions compile;
  compile.estimate_cost = true;
  compile.require_bool_result = require_bool;
  auto program = EnvFor(options)->Compile(expression, compile);
  if (!program.ok()) {
    errors->push_back(
        api::Invalid(path, api::RenderValue(expression), std::string(program.status().message())));
    return nullptr;
  }
  if ((*program)->estimated_cost().value_or(0) > kSelectorMaxCost) {
    errors->push_back(api::Forbidden(path, "too complex, exceeds cost limit"));
    return nullptr;
  }
  return *std::move(program);
}

void LintSelectors(const std::vector<resourcev1::DeviceSelector>& selectors,
                   const api::FieldPath& path, const SelectorLintOptions& options,
                   api::FieldErrorList* errors) {
  for (size_t i = 0; i < selectors.size(); ++i) {
    if (!selectors[i].cel) continue;  // a missing `cel` is api/validation's Required error
    LintCelSelector(selectors[i].cel->expression,
                    path.Index(static_cast<int64_t>(i)).Child("cel").Child("expression"), options,
                    errors);
  }
}

// A type a derived attribute may evaluate to (KEP-6080): string, int, bool, semver, the unknown
// type, or (with list attributes) a list of those. Types static analysis cannot know pass.
bool DerivedTypeAllowed(const Type& t, bool lists) {
  switch (t.kind()) {
    case TypeKind::kString:
    case TypeKind::kInt:
    case TypeKind::kBool:
    case TypeKind::kDyn:
    case TypeKind::kAny:
      return true;
    case TypeKind::kOpaque:
      return t.name() == "kubernetes.Semver";
    case TypeKind::kList:
      return lists && !t.params().empty() && t.params()[0].kind() != TypeKind::kList &&
             DerivedTypeAllowed(t.params()[0], false);
    default:
      return false;
  }
}

void LintDerivedAttributes(const std::vector<resourcev1::DeviceDerivedAttribute>& derived,
                           const api::FieldPath& path, const SelectorLintOptions& options,
                           api::FieldErrorList* errors) {
  const bool lists =
      options.env_type == EnvType::kStoredExpressions || options.list_type_attributes;
  for (size_t i = 0; i < derived.size(); ++i) {
    const std::string& expression = derived[i].expression;
    if (expression.empty()) continue;  // api/validation's Required error
    api::FieldPath p = path.Index(static_cast<int64_t>(i)).Child("expression");
    auto program = CompileChecked(expression, p, options, /*require_bool=*/false, errors);
    if (program == nullptr) continue;
    const Type& out = program->output_type();
    if (!DerivedTypeAllowed(out, lists)) {
      errors->push_back(api::Invalid(p, api::RenderValue(expression),
                                     std::string("must evaluate to a string, int, bool or semver") +
                                         (lists ? " or a list of one of them" : "") + ", not " +
                                         out.ToString()));
    }
  }
}

void LintClaimSpec(const resourcev1::ResourceClaimSpec& spec, const api::FieldPath& path,
                   const SelectorLintOptions& options, api::FieldErrorList* errors) {
  api::FieldPath requests = path.Child("devices").Child("requests");
  for (size_t i = 0; i < spec.devices.requests.size(); ++i) {
    const resourcev1::DeviceRequest& r = spec.devices.requests[i];
    api::FieldPath rp = requests.Index(static_cast<int64_t>(i));
    if (r.exactly) {
      LintSelectors(r.exactly->selectors, rp.Child("exactly").Child("selectors"), options, errors);
      LintDerivedAttributes(r.exactly->derived_attributes,
                            rp.Child("exactly").Child("derivedAttributes"), options, errors);
    }
    for (size_t k = 0; k < r.first_available.size(); ++k) {
      api::FieldPath sp = rp.Child("firstAvailable").Index(static_cast<int64_t>(k));
      LintSelectors(r.first_available[k].selectors, sp.Child("selectors"), options, errors);
      LintDerivedAttributes(r.first_available[k].derived_attributes, sp.Child("derivedAttributes"),
                            options, errors);
    }
  }
}

}  // namespace

void LintCelSelector(const std::string& expression, const api::FieldPath& path,
                     const SelectorLintOptions& options, api::FieldErrorList* errors) {
  CompileChecked(expression, path, options, /*require_bool=*/true, errors);
}

api::FieldErrorList LintCelSelectors(const resourcev1::DeviceClass& obj,
                                     const SelectorLintOptions& options) {
  api::FieldErrorList errors;
  LintSelectors(obj.spec.selectors, api::FieldPath("spec").Child("selectors"), options, &errors);
  return errors;
}

api::FieldErrorList LintCelSelectors(const resourcev1::ResourceClaim& obj,
                                     const SelectorLintOptions& options) {
  api::FieldErrorList errors;
  LintClaimSpec(obj.spec, api::FieldPath("spec"), options, &errors);
  return errors;
}

api::FieldErrorList LintCelSelectors(const resourcev1::ResourceClaimTemplate& obj,
                                     const SelectorLintOptions& options) {
  api::FieldErrorList errors;
  LintClaimSpec(obj.spec.spec, api::FieldPath("spec").Child("spec"), options, &errors);
  return errors;
}

api::FieldErrorList LintCelSelectors(const api::Object& obj, const SelectorLintOptions& options) {
  if (auto* c = std::get_if<resourcev1::DeviceClass>(&obj)) return LintCelSelectors(*c, options);
  if (auto* c = std::get_if<resourcev1::ResourceClaim>(&obj)) return LintCelSelectors(*c, options);
  if (auto* t = std::get_if<resourcev1::ResourceClaimTemplate>(&obj)) {
    return LintCelSelectors(*t, options);
  }
  return {};
}

api::FieldErrorList LintCelSelectors(const api::Object& obj, const api::Object* old,
                                     SelectorLintOptions options) {
  bool unchanged = false;
  if (old != nullptr) {
    if (auto* c = std::get_if<resourcev1::DeviceClass>(&obj)) {
      auto* o = std::get_if<resourcev1::DeviceClass>(old);
      unchanged = o != nullptr && o->spec.selectors == c->spec.selectors;
    } else if (auto* c = std::get_if<resourcev1::ResourceClaim>(&obj)) {
      auto* o = std::get_if<resourcev1::ResourceClaim>(old);
      unchanged = o != nullptr && o->spec.devices.requests == c->spec.devices.requests;
    } else if (auto* t = std::get_if<resourcev1::ResourceClaimTemplate>(&obj)) {
      auto* o = std::get_if<resourcev1::ResourceClaimTemplate>(old);
      unchanged = o != nullptr && o->spec.spec.devices.requests == t->spec.spec.devices.requests;
    }
  }
  options.env_type = unchanged ? EnvType::kStoredExpressions : EnvType::kNewExpressions;
  return LintCelSelectors(obj, options);
}

}  // namespace draplane::cel
