#include "cel/checker/checker.h"

#include <utility>

namespace draplane::cel {
namespace {

// Type parameter substitutions (cel-go `checker/mapping.go`).
class Mapping {
 public:
  const Type* Find(const Type& param) const {
    for (const auto& [name, sub] : subs_) {
      if (name == param.name()) return &sub;
    }
    return nullptr;
  }
  void Add(const Type& param, Type sub) {
    for (auto& [name, s] : subs_) {
      if (name == param.name()) {
        s = std::move(sub);
        return;
      }
    }
    subs_.emplace_back(param.name(), std::move(sub));
  }

 private:
  std::vector<std::pair<std::string, Type>> subs_;
};

bool IsDynOrError(const Type& t) { return t.IsDyn() || t.kind() == TypeKind::kError; }

bool IsEqualOrLessSpecific(const Type& t1, const Type& t2) {
  TypeKind k1 = t1.kind(), k2 = t2.kind();
  if (t1.IsDyn() || k1 == TypeKind::kTypeParam) return true;
  if (t2.IsDyn() || k2 == TypeKind::kTypeParam) return false;
  if (k1 != k2) return false;
  switch (k1) {
    case TypeKind::kOpaque:
    case TypeKind::kList:
    case TypeKind::kMap:
      if (t1.name() != t2.name() || t1.params().size() != t2.params().size()) return false;
      for (size_t i = 0; i < t1.params().size(); ++i) {
        if (!IsEqualOrLessSpecific(t1.params()[i], t2.params()[i])) return false;
      }
      return true;
    case TypeKind::kType:
      return true;
    default:
      return t1.IsExact(t2);
  }
}

Type MostGeneral(const Type& t1, const Type& t2) { return IsEqualOrLessSpecific(t1, t2) ? t1 : t2; }

bool NotReferencedIn(const Mapping& m, const Type& t, const Type& within) {
  if (t.IsExact(within)) return false;
  switch (within.kind()) {
    case TypeKind::kTypeParam: {
      const Type* sub = m.Find(within);
      if (sub == nullptr) return true;
      return NotReferencedIn(m, t, *sub);
    }
    case TypeKind::kOpaque:
    case TypeKind::kList:
    case TypeKind::kMap:
    case TypeKind::kType:
      for (const Type& p : within.params()) {
        if (!NotReferencedIn(m, t, p)) return false;
      }
      return true;
    default:
      return true;
  }
}

Type Substitute(const Mapping& m, const Type& t, bool to_dyn) {
  if (t.kind() == TypeKind::kTypeParam) {
    if (const Type* sub = m.Find(t)) return Substitute(m, *sub, to_dyn);
    return to_dyn ? Type::Dyn() : t;
  }
  if (t.params().empty()) return t;
  std::vector<Type> params;
  params.reserve(t.params().size());
  for (const Type& p : t.params()) params.push_back(Substitute(m, p, to_dyn));
  switch (t.kind()) {
    case TypeKind::kList:
      return Type::List(std::move(params[0]));
    case TypeKind::kMap:
      return Type::Map(std::move(params[0]), std::move(params[1]));
    case TypeKind::kType:
      return Type::TypeOf(std::move(params[0]));
    default:
      return Type::Opaque(t.name(), std::move(params));
  }
}

bool InternalIsAssignable(Mapping* m, const Type& t1, const Type& t2);

bool InternalIsAssignableList(Mapping* m, const std::vector<Type>& l1,
                              const std::vector<Type>& l2) {
  if (l1.size() != l2.size()) return false;
  for (size_t i = 0; i < l1.size(); ++i) {
    if (!InternalIsAssignable(m, l1[i], l2[i])) return false;
  }
  return true;
}

// Whether t2 (or its substitution) is a valid substitution for t1; `has_sub` tells whether t2
// already had one.
bool IsValidTypeSubstitution(Mapping* m, const Type& t1, const Type& t2, bool* has_sub) {
  *has_sub = false;
  if (t1.kind() == t2.kind() && t1.IsExact(t2)) {
    *has_sub = true;
    return true;
  }
  if (const Type* found = m->Find(t2)) {
    Type t2_sub = *found;
    *has_sub = true;
    if (t1.kind() == t2_sub.kind() && t1.IsExact(t2_sub)) return true;
    if (InternalIsAssignable(m, t1, t2_sub)) {
      Type t2_new = MostGeneral(t1, t2_sub);
      if (NotReferencedIn(*m, t2, t2_new)) m->Add(t2, std::move(t2_new));
      return true;
    }
    return false;
  }
  if (NotReferencedIn(*m, t2, t1)) {
    m->Add(t2, t1);
    return true;
  }
  return false;
}

bool IsLegacyNullable(const Type& t) {
  switch (t.kind()) {
    case TypeKind::kOpaque:
    case TypeKind::kStruct:
    case TypeKind::kAny:
    case TypeKind::kDuration:
    case TypeKind::kTimestamp:
    case TypeKind::kNull:
      return true;
    default:
      return false;
  }
}

bool InternalIsAssignable(Mapping* m, const Type& t1, const Type& t2) {
  TypeKind k1 = t1.kind(), k2 = t2.kind();
  if (k2 == TypeKind::kTypeParam) {
    bool has_sub = false;
    if (IsValidTypeSubstitution(m, t1, t2, &has_sub)) return true;
    if (has_sub) return false;
  }
  if (k1 == TypeKind::kTypeParam) {
    bool has_sub = false;
    return IsValidTypeSubstitution(m, t2, t1, &has_sub);
  }
  if (IsDynOrError(t1) || IsDynOrError(t2)) return true;
  if (k1 == TypeKind::kNull) return IsLegacyNullable(t2);
  if (k2 == TypeKind::kNull) return IsLegacyNullable(t1);
  switch (k1) {
    case TypeKind::kBool:
    case TypeKind::kBytes:
    case TypeKind::kDouble:
    case TypeKind::kInt:
    case TypeKind::kString:
    case TypeKind::kUint:
    case TypeKind::kDuration:
    case TypeKind::kTimestamp:
    case TypeKind::kStruct:
      return k1 == k2 && t1.name() == t2.name();
    case TypeKind::kType:
      return k2 == TypeKind::kType;
    case TypeKind::kOpaque:
    case TypeKind::kList:
    case TypeKind::kMap:
      return k1 == k2 && t1.name() == t2.name() &&
             InternalIsAssignableList(m, t1.params(), t2.params());
    default:
      return false;
  }
}

constexpr char kAnd[] = "_&&_";
constexpr char kOr[] = "_||_";

class Checker {
 public:
  Checker(const Ast& ast, const CheckerEnv& env) : ast_(ast), env_(env) {
    result_.types.assign(static_cast<size_t>(ast.max_id) + 1, Type::Dyn());
  }

  CheckResult Run() {
    CheckExpr(*ast_.root);
    for (Type& t : result_.types) t = Substitute(mapping_, t, /*to_dyn=*/true);
    if (result_.issues.empty() && env_.homogeneous_aggregate_literals()) {
      ValidateHomogeneousLiterals(*ast_.root);
    }
    return std::move(result_);
  }

 private:
  // --- bookkeeping ----------------------------------------------------------------------------

  void SetType(const Expr& e, Type t) { result_.types[static_cast<size_t>(e.id)] = std::move(t); }
  const Type& GetType(const Expr& e) const { return result_.types[static_cast<size_t>(e.id)]; }
  void Error(int32_t position, std::string message) {
    result_.issues.push_back({position, std::move(message)});
  }
  std::string Container() const { return std::string(env_.container()); }

  bool IsAssignable(const Type& t1, const Type& t2) {
    Mapping copy = mapping_;
    if (!InternalIsAssignable(&copy, t1, t2)) return false;
    mapping_ = std::move(copy);
    return true;
  }
  bool IsAssignableList(const std::vector<Type>& l1, const std::vector<Type>& l2) {
    Mapping copy = mapping_;
    if (!InternalIsAssignableList(&copy, l1, l2)) return false;
    mapping_ = std::move(copy);
    return true;
  }

  Type NewTypeVar() { return Type::Param("_var" + std::to_string(free_type_var_counter_++)); }

  // --- identifiers ----------------------------------------------------------------------------

  struct ScopeEntry {
    std::string name;
    Type type;
  };

  // Looks up `name` in comprehension scopes (innermost first), then the declared variables.
  std::optional<std::pair<std::string, Type>> LookupIdent(std::string_view name) const {
    if (name.empty() || name[0] != '.') {
      for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
        if (it->name == name) return std::make_pair(it->name, it->type);
      }
    }
    if (env_.container().empty() && !name.empty() && name[0] != '.') {
      if (const VariableDecl* v = env_.FindVariable(name)) return std::make_pair(v->name, v->type);
      return std::nullopt;
    }
    for (const std::string& candidate : ResolveCandidateNames(env_.container(), name)) {
      if (const VariableDecl* v = env_.FindVariable(candidate)) {
        return std::make_pair(v->name, v->type);
      }
    }
    return std::nullopt;
  }

  const FunctionDecl* LookupFunction(std::string_view name, std::string* resolved) const {
    if (env_.container().empty() && !name.empty() && name[0] != '.') {
      const FunctionDecl* f = env_.FindFunction(name);
      if (f != nullptr) *resolved = std::string(name);
      return f;
    }
    for (const std::string& candidate : ResolveCandidateNames(env_.container(), name)) {
      if (const FunctionDecl* f = env_.FindFunction(candidate)) {
        *resolved = candidate;
        return f;
      }
    }
    return nullptr;
  }

  // --- expressions ----------------------------------------------------------------------------

  void CheckExpr(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kConstant:
        CheckConstant(e);
        return;
      case ExprKind::kIdent:
        CheckIdent(e);
        return;
      case ExprKind::kSelect:
        CheckSelect(e);
        return;
      case ExprKind::kCall:
        CheckCall(e);
        return;
      case ExprKind::kList:
        CheckList(e);
        return;
      case ExprKind::kMap:
        CheckMap(e);
        return;
      case ExprKind::kComprehension:
        CheckComprehension(e);
        return;
    }
  }

  void CheckConstant(const Expr& e) {
    switch (e.constant.kind) {
      case ConstantKind::kNull:
        SetType(e, Type::Null());
        return;
      case ConstantKind::kBool:
        SetType(e, Type::Bool());
        return;
      case ConstantKind::kInt:
        SetType(e, Type::Int());
        return;
      case ConstantKind::kUint:
        SetType(e, Type::Uint());
        return;
      case ConstantKind::kDouble:
        SetType(e, Type::Double());
        return;
      case ConstantKind::kString:
        SetType(e, Type::String());
        return;
      case ConstantKind::kBytes:
        SetType(e, Type::Bytes());
        return;
    }
  }

  void CheckIdent(const Expr& e) {
    if (auto found = LookupIdent(e.name)) {
      SetType(e, found->second);
      result_.references[e.id] = Reference{found->first, {}, false};
      return;
    }
    SetType(e, Type::Error());
    Error(e.position,
          "undeclared reference to '" + e.name + "' (in container '" + Container() + "')");
  }

  void CheckSelect(const Expr& e) {
    if (!e.test_only) {
      if (auto qname = ToQualifiedName(e)) {
        // Only declared variables (not comprehension variables) can be dotted names.
        for (const std::string& candidate : ResolveCandidateNames(env_.container(), *qname)) {
          if (const VariableDecl* v = env_.FindVariable(candidate)) {
            if (!ShadowedByScope(*qname)) {
              SetType(e, v->type);
              result_.references[e.id] = Reference{v->name, {}, false};
              return;
            }
          }
        }
      }
    }
    Type t = CheckSelectField(e, *e.operand, e.name, /*optional=*/false);
    if (e.test_only) t = Type::Bool();
    SetType(e, Substitute(mapping_, t, false));
  }

  // A dotted name whose first segment is a comprehension variable refers to that variable.
  bool ShadowedByScope(const std::string& qname) const {
    std::string_view first = std::string_view(qname).substr(0, qname.find('.'));
    for (const ScopeEntry& s : scopes_) {
      if (s.name == first) return true;
    }
    return false;
  }

  Type CheckSelectField(const Expr& e, const Expr& operand, const std::string& field,
                        bool optional) {
    CheckExpr(operand);
    Type operand_type = Substitute(mapping_, GetType(operand), false);
    bool is_opt = operand_type.IsOptional();
    Type target = is_opt ? operand_type.params()[0] : operand_type;
    Type result = Type::Error();
    switch (target.kind()) {
      case TypeKind::kMap:
        result = target.params()[1];
        break;
      case TypeKind::kStruct: {
        std::optional<Type> ft = env_.FindFieldType(target.name(), field);
        if (ft) {
          result = *ft;
        } else {
          Error(e.position, "undefined field '" + field + "'");
        }
        break;
      }
      case TypeKind::kTypeParam:
        IsAssignable(Type::Dyn(), target);
        result = Type::Dyn();
        break;
      default:
        if (!IsDynOrError(target)) {
          Error(e.position, "type '" + target.Format() + "' does not support field selection");
        }
        result = Type::Dyn();
        break;
    }
    if (is_opt || optional) return Type::Optional(result);
    return result;
  }

  void CheckOptSelect(const Expr& e) {
    const Expr& operand = *e.args[0];
    const Expr& field = *e.args[1];
    if (field.kind != ExprKind::kConstant || field.constant.kind != ConstantKind::kString) {
      Error(field.position, "unsupported optional field selection: " + DebugString(field));
      SetType(e, Type::Error());
      return;
    }
    SetType(field, Type::String());
    Type t = CheckSelectField(e, operand, field.constant.string_value, /*optional=*/true);
    SetType(e, Substitute(mapping_, t, false));
    result_.references[e.id] = Reference{"_?._", {"select_optional_field"}, false};
  }

  void CheckCall(const Expr& e) {
    if (e.name == "_?._" && !e.operand && e.args.size() == 2) {
      CheckOptSelect(e);
      return;
    }
    for (const ExprPtr& a : e.args) CheckExpr(*a);
    if (!e.operand) {
      std::string resolved;
      const FunctionDecl* fn = LookupFunction(e.name, &resolved);
      if (fn == nullptr) {
        Error(e.position,
              "undeclared reference to '" + e.name + "' (in container '" + Container() + "')");
        SetType(e, Type::Error());
        return;
      }
      ResolveOverloadOrError(e, *fn, resolved, nullptr, false);
      return;
    }
    // A namespaced global function spelled as a receiver call (`optional.of(x)`)?
    if (auto qualified = ToQualifiedName(*e.operand)) {
      std::string resolved;
      if (!ShadowedByScope(*qualified)) {
        if (const FunctionDecl* fn = LookupFunction(*qualified + "." + e.name, &resolved)) {
          ResolveOverloadOrError(e, *fn, resolved, nullptr, true);
          return;
        }
      }
    }
    CheckExpr(*e.operand);
    std::string resolved;
    const FunctionDecl* fn = LookupFunction(e.name, &resolved);
    if (fn == nullptr) {
      SetType(e, Type::Error());
      Error(e.position,
            "undeclared reference to '" + e.name + "' (in container '" + Container() + "')");
      return;
    }
    ResolveOverloadOrError(e, *fn, resolved, e.operand.get(), false);
  }

  void ResolveOverloadOrError(const Expr& call, const FunctionDecl& fn, const std::string& name,
                              const Expr* target, bool namespaced) {
    std::vector<Type> arg_types;
    if (target) arg_types.push_back(GetType(*target));
    for (const ExprPtr& a : call.args) arg_types.push_back(GetType(*a));

    std::optional<Type> result_type;
    Reference ref{name, {}, namespaced};
    const bool logical = fn.name == kAnd || fn.name == kOr;
    for (const OverloadDecl& ov : fn.overloads) {
      if ((target == nullptr) == ov.member) continue;
      if (!logical && !MayMatch(ov, arg_types)) continue;
      if (logical) {
        bool ok = true;
        for (size_t i = 0; i < arg_types.size(); ++i) {
          if (!IsAssignable(arg_types[i], Type::Bool())) {
            Error(call.args[i]->position, "expected type 'bool' but found '" +
                                              Substitute(mapping_, arg_types[i], true).Format() +
                                              "'");
            ok = false;
          }
        }
        if (!ok) {
          SetType(call, Type::Error());
          return;
        }
        ref.overload_ids.push_back(ov.id);
        SetType(call, Type::Bool());
        result_.references[call.id] = std::move(ref);
        return;
      }
      std::vector<Type> params = ov.params;
      Type result = ov.result;
      if (!ov.type_params.empty()) {
        Mapping fresh;
        for (const std::string& tp : ov.type_params) fresh.Add(Type::Param(tp), NewTypeVar());
        for (Type& p : params) p = Substitute(fresh, p, false);
        result = Substitute(fresh, result, false);
      }
      if (params.size() != arg_types.size()) continue;
      if (!IsAssignableList(arg_types, params)) continue;
      ref.overload_ids.push_back(ov.id);
      Type fn_result = Substitute(mapping_, result, false);
      if (!result_type) {
        result_type = std::move(fn_result);
      } else if (!result_type->IsDyn() && !fn_result.IsExact(*result_type)) {
        result_type = Type::Dyn();
      }
    }
    if (!result_type) {
      std::string sig = "(";
      for (size_t i = 0; i < arg_types.size(); ++i) {
        if (i) sig += ", ";
        sig += Substitute(mapping_, arg_types[i], true).Format();
      }
      sig += ")";
      if (target) {
        // cel-go formatFunctionDeclType(isInstance): "target.(args)".
        size_t comma = sig.find(", ");
        std::string first =
            comma == std::string::npos ? sig.substr(1, sig.size() - 2) : sig.substr(1, comma - 1);
        std::string rest = comma == std::string::npos ? "()" : "(" + sig.substr(comma + 2);
        sig = first + "." + rest;
      }
      Error(call.position,
            "found no matching overload for '" + fn.name + "' applied to '" + sig + "'");
      SetType(call, Type::Error());
      return;
    }
    SetType(call, std::move(*result_type));
    result_.references[call.id] = std::move(ref);
  }

  // A cheap necessary condition for an overload to match: the arity agrees and every argument
  // whose type and parameter type are both concrete scalars has the parameter's kind.
  static bool MayMatch(const OverloadDecl& ov, const std::vector<Type>& args) {
    if (ov.params.size() != args.size()) return false;
    for (size_t i = 0; i < args.size(); ++i) {
      TypeKind a = args[i].kind(), p = ov.params[i].kind();
      if (a == p || !IsScalarKind(a) || !IsScalarKind(p)) continue;
      return false;
    }
    return true;
  }
  static bool IsScalarKind(TypeKind k) {
    switch (k) {
      case TypeKind::kBool:
      case TypeKind::kInt:
      case TypeKind::kUint:
      case TypeKind::kDouble:
      case TypeKind::kString:
      case TypeKind::kBytes:
      case TypeKind::kTimestamp:
      case TypeKind::kDuration:
        return true;
      default:
        return false;
    }
  }

  Type JoinTypes(const Type* previous, const Type& current) {
    if (previous == nullptr) return current;
    if (IsAssignable(*previous, current)) return MostGeneral(*previous, current);
    return Type::Dyn();
  }

  void CheckList(const Expr& e) {
    std::optional<Type> elems;
    for (size_t i = 0; i < e.args.size(); ++i) {
      const Expr& el = *e.args[i];
      CheckExpr(el);
      Type t = GetType(el);
      if (IsOptionalIndex(e, i)) {
        if (t.IsOptional()) {
          t = t.params()[0];
        } else if (!t.IsDyn()) {
          Error(el.position, "expected type '" + Type::Optional(t).Format() + "' but found '" +
                                 t.Format() + "'");
        }
      }
      elems = JoinTypes(elems ? &*elems : nullptr, t);
    }
    SetType(e, Type::List(elems ? *elems : NewTypeVar()));
  }

  static bool IsOptionalIndex(const Expr& list, size_t i) {
    for (int32_t idx : list.optional_indices) {
      if (static_cast<size_t>(idx) == i) return true;
    }
    return false;
  }

  void CheckMap(const Expr& e) {
    std::optional<Type> key_type, value_type;
    for (const MapEntry& entry : e.entries) {
      CheckExpr(*entry.key);
      key_type = JoinTypes(key_type ? &*key_type : nullptr, GetType(*entry.key));
      CheckExpr(*entry.value);
      Type vt = GetType(*entry.value);
      if (entry.optional) {
        if (vt.IsOptional()) {
          vt = vt.params()[0];
        } else if (!vt.IsDyn()) {
          Error(entry.value->position, "expected type '" + Type::Optional(vt).Format() +
                                           "' but found '" + vt.Format() + "'");
        }
      }
      value_type = JoinTypes(value_type ? &*value_type : nullptr, vt);
    }
    if (!key_type) {
      SetType(e, Type::Map(NewTypeVar(), NewTypeVar()));
      return;
    }
    SetType(e, Type::Map(*key_type, *value_type));
  }

  void CheckComprehension(const Expr& e) {
    CheckExpr(*e.iter_range);
    CheckExpr(*e.accu_init);
    Type range = Substitute(mapping_, GetType(*e.iter_range), false);
    Type accu = GetType(*e.accu_init);
    size_t mark = scopes_.size();
    scopes_.push_back({e.accu_var, accu});
    Type var1 = Type::Error(), var2 = Type::Error();
    bool two = !e.iter_var2.empty();
    switch (range.kind()) {
      case TypeKind::kList:
        var1 = range.params()[0];
        if (two) {
          var2 = var1;
          var1 = Type::Int();
        }
        break;
      case TypeKind::kMap:
        var1 = range.params()[0];
        if (two) var2 = range.params()[1];
        break;
      case TypeKind::kDyn:
      case TypeKind::kError:
      case TypeKind::kTypeParam:
        IsAssignable(Type::Dyn(), range);
        var1 = Type::Dyn();
        var2 = Type::Dyn();
        break;
      default:
        Error(e.iter_range->position, "expression of type '" + range.Format() +
                                          "' cannot be range of a comprehension (must be list, "
                                          "map, or dynamic)");
        break;
    }
    size_t loop_mark = scopes_.size();
    scopes_.push_back({e.iter_var, var1});
    if (two) scopes_.push_back({e.iter_var2, var2});
    CheckExpr(*e.loop_condition);
    AssertType(*e.loop_condition, Type::Bool());
    CheckExpr(*e.loop_step);
    AssertType(*e.loop_step, accu);
    scopes_.resize(loop_mark);
    CheckExpr(*e.result);
    scopes_.resize(mark);
    SetType(e, Substitute(mapping_, GetType(*e.result), false));
  }

  void AssertType(const Expr& e, const Type& t) {
    if (!IsAssignable(t, GetType(e))) {
      Error(e.position,
            "expected type '" + t.Format() + "' but found '" + GetType(e).Format() + "'");
    }
  }

  // cel-go `homogeneousAggregateLiteralValidator` (runs on the checked AST): list elements and
  // map keys / values must have equivalent types, except inside `format` calls.
  static bool Equivalent(const Type& a, const Type& b) {
    if (a.kind() != b.kind() || a.params().size() != b.params().size()) return false;
    if ((a.kind() == TypeKind::kStruct || a.kind() == TypeKind::kOpaque) && a.name() != b.name()) {
      return false;
    }
    for (size_t i = 0; i < a.params().size(); ++i) {
      if (!Equivalent(a.params()[i], b.params()[i])) return false;
    }
    return true;
  }
  void ReportMismatch(const Expr& at, const Type& expected, const Type& actual) {
    Error(at.position,
          "expected type '" + expected.Format() + "' but found '" + actual.Format() + "'");
  }
  void ValidateHomogeneousLiterals(const Expr& e, bool exempt = false) {
    if (e.kind == ExprKind::kList && !exempt) {
      std::optional<Type> elem;
      for (size_t i = 0; i < e.args.size(); ++i) {
        Type t = GetType(*e.args[i]);
        if (IsOptionalIndex(e, i) && t.IsOptional()) t = t.params()[0];
        if (!elem) {
          elem = t;
        } else if (!Equivalent(*elem, t)) {
          ReportMismatch(*e.args[i], *elem, t);
          break;
        }
      }
    } else if (e.kind == ExprKind::kMap && !exempt) {
      std::optional<Type> kt, vt;
      for (const MapEntry& entry : e.entries) {
        Type k = GetType(*entry.key);
        Type v = GetType(*entry.value);
        if (entry.optional && v.IsOptional()) v = v.params()[0];
        if (!kt) {
          kt = k;
          vt = v;
          continue;
        }
        if (!Equivalent(*kt, k)) ReportMismatch(*entry.key, *kt, k);
        if (!Equivalent(*vt, v)) ReportMismatch(*entry.value, *vt, v);
      }
    }
    // Literals directly inside a `format` call, or nested in such literals, are exempt.
    bool child_exempt = (e.kind == ExprKind::kCall && e.name == "format") ||
                        (exempt && (e.kind == ExprKind::kList || e.kind == ExprKind::kMap));
    auto visit = [&](const ExprPtr& c, bool ex) {
      if (c) ValidateHomogeneousLiterals(*c, ex);
    };
    visit(e.operand, false);
    for (const ExprPtr& a : e.args) visit(a, child_exempt);
    for (const MapEntry& m : e.entries) {
      visit(m.key, child_exempt);
      visit(m.value, child_exempt);
    }
    visit(e.iter_range, false);
    visit(e.accu_init, false);
    visit(e.loop_condition, false);
    visit(e.loop_step, false);
    visit(e.result, false);
  }

  const Ast& ast_;
  const CheckerEnv& env_;
  CheckResult result_;
  Mapping mapping_;
  int free_type_var_counter_ = 0;
  std::vector<ScopeEntry> scopes_;
};

}  // namespace

std::optional<std::string> ToQualifiedName(const Expr& e) {
  if (e.kind == ExprKind::kIdent) return e.name;
  if (e.kind == ExprKind::kSelect && !e.test_only) {
    if (auto prefix = ToQualifiedName(*e.operand)) return *prefix + "." + e.name;
  }
  return std::nullopt;
}

std::vector<std::string> ResolveCandidateNames(std::string_view container, std::string_view name) {
  if (!name.empty() && name[0] == '.') return {std::string(name.substr(1))};
  std::vector<std::string> out;
  std::string prefix(container);
  while (!prefix.empty()) {
    out.push_back(prefix + "." + std::string(name));
    size_t dot = prefix.rfind('.');
    if (dot == std::string::npos) break;
    prefix.resize(dot);
  }
  out.emplace_back(name);
  return out;
}

CheckResult Check(const Ast& ast, const CheckerEnv& env) { return Checker(ast, env).Run(); }

}  // namespace draplane::cel
