#include "cel/planner/planner.h"

#include <optional>
#include <string>
#include <utility>

#include "cel/lib/regex_cache.h"
#include "cel/planner/fast_nodes.h"
#include "cel/runtime/device_nodes.h"

namespace draplane::cel {
namespace {

bool IsConst(const NodePtr& n) { return n->constant() != nullptr; }

// Nodes that cel-go treats as attributes: selecting from them costs only the qualifier.
bool IsAttributeLike(const Node& n) {
  return dynamic_cast<const VariableNode*>(&n) || dynamic_cast<const SlotNode*>(&n) ||
         dynamic_cast<const SelectNode*>(&n) || dynamic_cast<const IndexNode*>(&n) ||
         dynamic_cast<const DeviceRootNode*>(&n) || dynamic_cast<const DeviceFieldNode*>(&n) ||
         dynamic_cast<const DeviceDomainNode*>(&n) || dynamic_cast<const DeviceEntryNode*>(&n) ||
         dynamic_cast<const OptionalSelectNode*>(&n);
}

// A node that evaluates a fixed list of children; used to fold constants generically.
class Planner {
 public:
  Planner(const Ast& ast, const CheckResult* checked, const FunctionRegistry& registry,
          const PlannerOptions& options, Arena* constants)
      : ast_(ast),
        checked_(checked),
        registry_(registry),
        options_(options),
        constants_(constants) {}

  PlanResult Run() {
    PlanResult r;
    r.root = Plan(*ast_.root);
    r.slot_count = max_slots_;
    return r;
  }

 private:
  // --- helpers --------------------------------------------------------------------------------

  const Reference* Ref(const Expr& e) const {
    return checked_ ? checked_->ReferenceOf(e.id) : nullptr;
  }

  int FindSlot(std::string_view name) const {
    if (!name.empty() && name[0] == '.') return -1;
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (it->first == name) return it->second;
    }
    return -1;
  }

  int PushScope(const std::string& name) {
    int slot = next_slot_++;
    if (next_slot_ > max_slots_) max_slots_ = next_slot_;
    scopes_.emplace_back(name, slot);
    return slot;
  }
  void PopScope() {
    scopes_.pop_back();
    --next_slot_;
  }

  NodePtr Const(Value v) { return std::make_unique<ConstNode>(v); }

  // Evaluates a node whose operands are constants; replaces it by the constant when the result
  // is not an error.
  NodePtr Fold(NodePtr n) {
    EvalContext ctx;
    ctx.arena = constants_;
    ctx.slots = nullptr;
    Value v = n->Eval(ctx);
    if (v.IsError() || ctx.cancelled) return n;
    return Const(v);
  }

  Value ConstantValue(const Constant& c) {
    switch (c.kind) {
      case ConstantKind::kNull:
        return Value::Null();
      case ConstantKind::kBool:
        return Value::Bool(c.bool_value);
      case ConstantKind::kInt:
        return Value::Int(c.int_value);
      case ConstantKind::kUint:
        return Value::Uint(c.uint_value);
      case ConstantKind::kDouble:
        return Value::Double(c.double_value);
      case ConstantKind::kString:
        return MakeString(constants_, c.string_value);
      case ConstantKind::kBytes:
        return MakeBytes(constants_, c.string_value);
    }
    return Value::Null();
  }

  // --- names ----------------------------------------------------------------------------------

  NodePtr PlanName(const std::string& name) {
    if (options_.dra_device && name == "device") return std::make_unique<DeviceRootNode>();
    if (const TypeValue* t = types::FindType(name)) return Const(Value::Type(t));
    std::vector<VariableNode::Alternative> alts;
    for (std::string& c : ResolveCandidateNames(options_.container, name)) {
      alts.push_back({std::move(c), {}});
    }
    return std::make_unique<VariableNode>(std::move(alts));
  }

  NodePtr PlanIdent(const Expr& e) {
    int slot = FindSlot(e.name);
    if (slot >= 0) return std::make_unique<SlotNode>(slot);
    if (const Reference* ref = Ref(e)) return PlanName(ref->name);
    return PlanName(e.name);
  }

  // Unchecked `a.b.c`: bind to the longest declared prefix at runtime.
  NodePtr PlanQualifiedUnchecked(const std::string& qname) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
      size_t dot = qname.find('.', start);
      parts.push_back(qname.substr(start, dot == std::string::npos ? dot : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    std::vector<VariableNode::Alternative> alts;
    for (size_t n = parts.size(); n >= 1; --n) {
      std::string prefix = parts[0];
      for (size_t i = 1; i < n; ++i) prefix += "." + parts[i];
      std::vector<std::string> fields(parts.begin() + static_cast<long>(n), parts.end());
      for (std::string& c : ResolveCandidateNames(options_.container, prefix)) {
        alts.push_back({std::move(c), fields});
      }
    }
    return std::make_unique<VariableNode>(std::move(alts));
  }

  // `device.attributes["<domain>"]` / `device.capacity["<domain>"]` (or `.domain`): the domain
  // and whether it is the capacity map.
  struct DomainRef {
    std::string domain;
    bool capacity;
  };
  bool IsDeviceIdent(const Expr& e) const {
    return options_.dra_device && e.kind == ExprKind::kIdent && e.name == "device" &&
           FindSlot("device") < 0;
  }
  std::optional<bool> DeviceMapField(const Expr& e) const {
    if (e.kind != ExprKind::kSelect || e.test_only || !IsDeviceIdent(*e.operand)) {
      return std::nullopt;
    }
    if (e.name == "attributes") return false;
    if (e.name == "capacity") return true;
    return std::nullopt;
  }
  static const std::string* ConstString(const Expr& e) {
    if (e.kind == ExprKind::kConstant && e.constant.kind == ConstantKind::kString) {
      return &e.constant.string_value;
    }
    return nullptr;
  }
  std::optional<DomainRef> MatchDeviceDomain(const Expr& e) const {
    if (e.kind == ExprKind::kCall && e.name == op::kIndex && !e.operand && e.args.size() == 2) {
      auto cap = DeviceMapField(*e.args[0]);
      const std::string* key = ConstString(*e.args[1]);
      if (cap && key) return DomainRef{*key, *cap};
    }
    if (e.kind == ExprKind::kSelect && !e.test_only) {
      if (auto cap = DeviceMapField(*e.operand)) return DomainRef{e.name, *cap};
    }
    return std::nullopt;
  }

  // --- expressions ----------------------------------------------------------------------------

  NodePtr Plan(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kConstant:
        return Const(ConstantValue(e.constant));
      case ExprKind::kIdent:
        return PlanIdent(e);
      case ExprKind::kSelect:
        return PlanSelect(e);
      case ExprKind::kCall:
        return PlanCall(e);
      case ExprKind::kList:
        return PlanList(e);
      case ExprKind::kMap:
        return PlanMap(e);
      case ExprKind::kComprehension:
        return PlanComprehension(e);
    }
    return Const(NoSuchOverload());
  }

  NodePtr PlanSelect(const Expr& e) {
    if (!e.test_only) {
      if (const Reference* ref = Ref(e)) {
        // A qualified identifier resolved by the checker.
        return PlanName(ref->name);
      }
      if (IsDeviceIdent(*e.operand)) {
        using F = DeviceFieldNode::Field;
        if (e.name == "driver") return std::make_unique<DeviceFieldNode>(F::kDriver);
        if (e.name == "attributes") return std::make_unique<DeviceFieldNode>(F::kAttributes);
        if (e.name == "capacity") return std::make_unique<DeviceFieldNode>(F::kCapacity);
        if (e.name == "allowMultipleAllocations") {
          return std::make_unique<DeviceFieldNode>(F::kAllowMultipleAllocations);
        }
      }
      if (auto domain = MatchDeviceDomain(*e.operand)) {
        return std::make_unique<DeviceEntryNode>(domain->domain, e.name, domain->capacity);
      }
      if (auto domain = MatchDeviceDomain(e)) {
        return std::make_unique<DeviceDomainNode>(domain->domain, domain->capacity);
      }
      if (checked_ == nullptr) {
        if (auto qname = ToQualifiedName(e)) {
          std::string_view root = std::string_view(*qname).substr(0, qname->find('.'));
          if (FindSlot(root) < 0 && !(options_.dra_device && root == "device")) {
            if (const TypeValue* t = types::FindType(*qname)) return Const(Value::Type(t));
            return PlanQualifiedUnchecked(*qname);
          }
        }
      }
    }
    NodePtr operand = Plan(*e.operand);
    uint64_t cost = e.test_only ? 0 : (IsAttributeLike(*operand) ? 1 : 2);
    bool fold = IsConst(operand);
    NodePtr n = std::make_unique<SelectNode>(std::move(operand), e.name, e.test_only, cost);
    return fold ? Fold(std::move(n)) : std::move(n);
  }

  void FlattenLogical(const Expr& e, const char* fn, std::vector<NodePtr>* out) {
    for (const ExprPtr& a : e.args) {
      if (a->kind == ExprKind::kCall && a->name == fn && !a->operand) {
        FlattenLogical(*a, fn, out);
      } else {
        out->push_back(Plan(*a));
      }
    }
  }

  NodePtr PlanCall(const Expr& e) {
    std::string name = e.name;
    const Expr* target = e.operand.get();
    if (const Reference* ref = Ref(e)) {
      name = ref->name;
      if (ref->namespaced_call) target = nullptr;
    } else if (target != nullptr && checked_ == nullptr) {
      if (auto q = ToQualifiedName(*target)) {
        std::string_view root = std::string_view(*q).substr(0, q->find('.'));
        for (const std::string& c : ResolveCandidateNames(options_.container, *q + "." + name)) {
          if (FindSlot(root) < 0 && registry_.Find(c) != nullptr) {
            name = c;
            target = nullptr;
            break;
          }
        }
      }
    }
    const size_t argc = e.args.size();

    if (!target) {
      if (name == op::kLogicalAnd || name == op::kLogicalOr) {
        std::vector<NodePtr> terms;
        FlattenLogical(e, name.c_str(), &terms);
        bool all_const = true;
        for (const NodePtr& t : terms) all_const = all_const && IsConst(t);
        NodePtr n = name == op::kLogicalAnd ? NodePtr(new AndNode(std::move(terms)))
                                            : NodePtr(new OrNode(std::move(terms)));
        return all_const ? Fold(std::move(n)) : std::move(n);
      }
      if (name == op::kConditional && argc == 3) {
        NodePtr c = Plan(*e.args[0]);
        NodePtr t = Plan(*e.args[1]);
        NodePtr f = Plan(*e.args[2]);
        if (IsConst(c) && c->constant()->IsBool()) {
          return c->constant()->bool_value() ? std::move(t) : std::move(f);
        }
        return std::make_unique<ConditionalNode>(std::move(c), std::move(t), std::move(f));
      }
      if (name == op::kNotStrictlyFalse && argc == 1) {
        return std::make_unique<NotStrictlyFalseNode>(Plan(*e.args[0]));
      }
      if ((name == op::kEquals || name == op::kNotEquals) && argc == 2) {
        return PlanEquality(e, name == op::kNotEquals);
      }
      if ((name == op::kLess || name == op::kLessEquals || name == op::kGreater ||
           name == op::kGreaterEquals) &&
          argc == 2) {
        using Op = CompareNode::Op;
        Op o = name == op::kLess         ? Op::kLess
               : name == op::kLessEquals ? Op::kLessEqual
               : name == op::kGreater    ? Op::kGreater
                                         : Op::kGreaterEqual;
        NodePtr l = Plan(*e.args[0]);
        NodePtr r = Plan(*e.args[1]);
        bool fold = IsConst(l) && IsConst(r);
        NodePtr n = MakeCompare(std::move(l), std::move(r), o);
        return fold ? Fold(std::move(n)) : std::move(n);
      }
      if (name == op::kIn && argc == 2) {
        NodePtr l = Plan(*e.args[0]);
        NodePtr r = Plan(*e.args[1]);
        bool fold = IsConst(l) && IsConst(r);
        NodePtr n = std::make_unique<InNode>(std::move(l), std::move(r));
        return fold ? Fold(std::move(n)) : std::move(n);
      }
      if (name == op::kIndex && argc == 2) {
        if (auto domain = MatchDeviceDomain(e)) {
          return std::make_unique<DeviceDomainNode>(domain->domain, domain->capacity);
        }
        if (auto domain = MatchDeviceDomain(*e.args[0])) {
          if (const std::string* id = ConstString(*e.args[1])) {
            return std::make_unique<DeviceEntryNode>(domain->domain, *id, domain->capacity);
          }
        }
        NodePtr operand = Plan(*e.args[0]);
        NodePtr index = Plan(*e.args[1]);
        uint64_t cost = IsAttributeLike(*operand) ? 1 : 2;
        bool fold = IsConst(operand) && IsConst(index);
        NodePtr n = std::make_unique<IndexNode>(std::move(operand), std::move(index), cost);
        return fold ? Fold(std::move(n)) : std::move(n);
      }
      if ((name == op::kOptIndex || name == op::kOptSelect) && argc == 2) {
        NodePtr operand = Plan(*e.args[0]);
        NodePtr key = Plan(*e.args[1]);
        uint64_t cost = IsAttributeLike(*operand) ? 1 : 2;
        bool fold = IsConst(operand) && IsConst(key);
        NodePtr n = std::make_unique<OptionalSelectNode>(std::move(operand), std::move(key),
                                                         name == op::kOptIndex, cost);
        return fold ? Fold(std::move(n)) : std::move(n);
      }
      if (name == op::kMapInsert && (argc == 2 || argc == 3) &&
          e.args[0]->kind == ExprKind::kIdent && FindSlot(e.args[0]->name) >= 0) {
        int slot = FindSlot(e.args[0]->name);
        if (argc == 3) {
          return std::make_unique<AccuMapInsertNode>(slot, Plan(*e.args[1]), Plan(*e.args[2]));
        }
        return std::make_unique<AccuMapInsertNode>(slot, nullptr, Plan(*e.args[1]));
      }
    } else if ((name == "or" || name == "orValue") && argc == 1) {
      NodePtr lhs = Plan(*target);
      NodePtr rhs = Plan(*e.args[0]);
      bool fold = IsConst(lhs) && IsConst(rhs);
      NodePtr n =
          std::make_unique<OptionalOrNode>(std::move(lhs), std::move(rhs), name == "orValue");
      return fold ? Fold(std::move(n)) : std::move(n);
    }
    return PlanFunctionCall(e, name, target);
  }

  NodePtr MakeCompare(NodePtr l, NodePtr r, CompareNode::Op o) {
    auto fast = [](const NodePtr& n) {
      if (!IsConst(n)) return false;
      ValueKind k = n->constant()->kind();
      return k == ValueKind::kInt || k == ValueKind::kUint || k == ValueKind::kDouble ||
             k == ValueKind::kString;
    };
    if (fast(r) && !IsConst(l)) {
      return std::make_unique<CompareConstNode>(std::move(l), *r->constant(), o, false);
    }
    if (fast(l) && !IsConst(r)) {
      return std::make_unique<CompareConstNode>(std::move(r), *l->constant(), o, true);
    }
    return std::make_unique<CompareNode>(std::move(l), std::move(r), o);
  }

  NodePtr PlanEquality(const Expr& e, bool negate) {
    NodePtr l = Plan(*e.args[0]);
    NodePtr r = Plan(*e.args[1]);
    if (IsConst(l) && IsConst(r)) {
      return Fold(std::make_unique<EqualNode>(std::move(l), std::move(r), negate));
    }
    auto fast = [](const Value& v) {
      return v.kind() == ValueKind::kString || v.kind() == ValueKind::kInt ||
             v.kind() == ValueKind::kBool;
    };
    if (IsConst(r) && fast(*r->constant())) {
      return std::make_unique<EqualConstNode>(std::move(l), *r->constant(), negate);
    }
    if (IsConst(l) && fast(*l->constant())) {
      return std::make_unique<EqualConstNode>(std::move(r), *l->constant(), negate);
    }
    return std::make_unique<EqualNode>(std::move(l), std::move(r), negate);
  }

  std::vector<const OverloadImpl*> Candidates(const Expr& e, const std::string& name, bool member,
                                              size_t argc) {
    std::vector<const OverloadImpl*> out;
    const Function* fn = registry_.Find(name);
    if (fn == nullptr) return out;
    const Reference* ref = Ref(e);
    for (const OverloadImpl& oi : fn->impls) {
      if (oi.impl == nullptr || oi.decl->member != member || oi.kinds.size() != argc) continue;
      if (ref != nullptr && !ref->overload_ids.empty()) {
        bool listed = false;
        for (const std::string& id : ref->overload_ids) listed = listed || id == oi.decl->id;
        if (!listed) continue;
      }
      out.push_back(&oi);
    }
    return out;
  }

  NodePtr PlanFunctionCall(const Expr& e, const std::string& name, const Expr* target) {
    std::vector<NodePtr> args;
    if (target) args.push_back(Plan(*target));
    for (const ExprPtr& a : e.args) args.push_back(Plan(*a));
    std::vector<const OverloadImpl*> candidates =
        Candidates(e, name, target != nullptr, args.size());
    if (candidates.empty() || args.size() > 8) {
      return std::make_unique<ConstNode>(
          MakeError(constants_, "no matching overload for '" + name + "'"));
    }
    // Methods with a constant argument that have a dispatch-free form.
    if (target != nullptr && args.size() == 2 && IsConst(args[1]) && !IsConst(args[0])) {
      const Value& c = *args[1]->constant();
      if ((name == "compareTo" || name == "isGreaterThan" || name == "isLessThan") &&
          (c.kind() == ValueKind::kQuantity || c.kind() == ValueKind::kSemver)) {
        using M = ConstCompareToNode::Mode;
        M mode = name == "compareTo"       ? M::kCompareTo
                 : name == "isGreaterThan" ? M::kGreaterThan
                                           : M::kLessThan;
        return std::make_unique<ConstCompareToNode>(std::move(args[0]), c, mode);
      }
      if ((name == "contains" || name == "startsWith" || name == "endsWith") &&
          c.kind() == ValueKind::kString) {
        using M = StringConstMethodNode::Mode;
        M mode = name == "contains"     ? M::kContains
                 : name == "startsWith" ? M::kStartsWith
                                        : M::kEndsWith;
        return std::make_unique<StringConstMethodNode>(std::move(args[0]), c.string_value(), mode);
      }
    }
    // Precompiled regular expressions.
    if (args.size() == 2 && IsConst(args[1]) && args[1]->constant()->kind() == ValueKind::kString &&
        (name == "matches" || name == "find" || name == "findAll") && target != nullptr) {
      std::string error;
      std::string_view pattern = args[1]->constant()->string_value();
      if (auto re = internal::CompileRegex(pattern, &error)) {
        RegexNode::Mode mode = name == "matches" ? RegexNode::Mode::kMatches
                               : name == "find"  ? RegexNode::Mode::kFind
                                                 : RegexNode::Mode::kFindAll;
        return std::make_unique<RegexNode>(std::move(args[0]), std::move(re), pattern.size(), mode);
      }
    }
    bool all_const = true;
    for (const NodePtr& a : args) all_const = all_const && IsConst(a);
    NodePtr n = std::make_unique<CallNode>(name, std::move(candidates), std::move(args));
    return all_const ? Fold(std::move(n)) : std::move(n);
  }

  NodePtr PlanList(const Expr& e) {
    std::vector<NodePtr> elems;
    std::vector<bool> optional(e.args.size(), false);
    for (int32_t i : e.optional_indices) optional[static_cast<size_t>(i)] = true;
    bool all_const = true;
    for (const ExprPtr& a : e.args) {
      elems.push_back(Plan(*a));
      all_const = all_const && IsConst(elems.back());
    }
    NodePtr n = std::make_unique<ListNode>(std::move(elems), std::move(optional));
    return all_const ? Fold(std::move(n)) : std::move(n);
  }

  NodePtr PlanMap(const Expr& e) {
    std::vector<NodePtr> keys, values;
    std::vector<bool> optional;
    bool all_const = true;
    for (const MapEntry& m : e.entries) {
      keys.push_back(Plan(*m.key));
      values.push_back(Plan(*m.value));
      optional.push_back(m.optional);
      all_const = all_const && IsConst(keys.back()) && IsConst(values.back());
    }
    NodePtr n = std::make_unique<MapNode>(std::move(keys), std::move(values), std::move(optional));
    return all_const ? Fold(std::move(n)) : std::move(n);
  }

  // `@result + [x]` with @result in `accu_slot`: the element expression, else null.
  const Expr* AppendElement(const Expr& step, int accu_slot) {
    if (step.kind != ExprKind::kCall || step.name != op::kAdd || step.operand ||
        step.args.size() != 2) {
      return nullptr;
    }
    const Expr& a = *step.args[0];
    const Expr& b = *step.args[1];
    if (a.kind != ExprKind::kIdent || FindSlot(a.name) != accu_slot) return nullptr;
    if (b.kind != ExprKind::kList || b.args.size() != 1 || !b.optional_indices.empty()) {
      return nullptr;
    }
    return b.args[0].get();
  }

  NodePtr PlanStep(const Expr& step, int accu_slot, bool appending) {
    if (appending) {
      if (const Expr* elem = AppendElement(step, accu_slot)) {
        return std::make_unique<AccuAppendNode>(accu_slot, Plan(*elem));
      }
      // `cond ? @result + [x] : @result`
      if (step.kind == ExprKind::kCall && step.name == op::kConditional && !step.operand &&
          step.args.size() == 3 && step.args[2]->kind == ExprKind::kIdent &&
          FindSlot(step.args[2]->name) == accu_slot) {
        if (const Expr* elem = AppendElement(*step.args[1], accu_slot)) {
          NodePtr cond = Plan(*step.args[0]);
          NodePtr append = std::make_unique<AccuAppendNode>(accu_slot, Plan(*elem));
          return std::make_unique<ConditionalNode>(std::move(cond), std::move(append),
                                                   std::make_unique<SlotNode>(accu_slot));
        }
      }
    }
    return Plan(step);
  }

  NodePtr PlanComprehension(const Expr& e) {
    if (e.macro == MacroKind::kBind) {
      NodePtr init = Plan(*e.accu_init);
      int slot = PushScope(e.accu_var);
      NodePtr body = Plan(*e.result);
      PopScope();
      return std::make_unique<BindNode>(slot, std::move(init), std::move(body));
    }
    ComprehensionNode::Spec spec;
    spec.range = Plan(*e.iter_range);
    spec.init = Plan(*e.accu_init);
    spec.accu_slot = PushScope(e.accu_var);
    spec.iter_slot = PushScope(e.iter_var);
    if (!e.iter_var2.empty()) spec.iter_slot2 = PushScope(e.iter_var2);
    spec.condition = Plan(*e.loop_condition);
    bool appending = e.macro == MacroKind::kMap || e.macro == MacroKind::kFilter ||
                     e.macro == MacroKind::kTransformList;
    // Appending in place requires a fresh (empty) accumulator per evaluation.
    appending = appending && spec.init->constant() != nullptr &&
                spec.init->constant()->kind() == ValueKind::kList &&
                spec.init->constant()->list().size == 0;
    spec.step = PlanStep(*e.loop_step, spec.accu_slot, appending);
    if (!e.iter_var2.empty()) PopScope();
    PopScope();
    spec.result = Plan(*e.result);
    PopScope();
    return std::make_unique<ComprehensionNode>(std::move(spec));
  }

  const Ast& ast_;
  const CheckResult* checked_;
  const FunctionRegistry& registry_;
  const PlannerOptions& options_;
  Arena* constants_;
  std::vector<std::pair<std::string, int>> scopes_;
  int next_slot_ = 0;
  int max_slots_ = 0;
};

}  // namespace

PlanResult Plan(const Ast& ast, const CheckResult* checked, const FunctionRegistry& registry,
                const PlannerOptions& options, Arena* constants) {
  return Planner(ast, checked, registry, options, constants).Run();
}

}  // namespace draplane::cel
