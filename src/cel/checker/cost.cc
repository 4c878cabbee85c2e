#include "cel/checker/cost.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cel/internal/utf8.h"

namespace draplane::cel {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr double kStringTraversal = 0.1;
constexpr double kRegexLength = 0.25;

uint64_t AddSat(uint64_t x, uint64_t y) { return (y > 0 && x > kMax - y) ? kMax : x + y; }
uint64_t MulSat(uint64_t x, uint64_t y) { return (y != 0 && x > kMax / y) ? kMax : x * y; }
uint64_t MulFactor(uint64_t x, double f) {
  double xf = static_cast<double>(x);
  if (xf > 0 && f > 0 && xf > static_cast<double>(kMax) / f) return kMax;
  double c = std::ceil(xf * f);
  if (c >= 18446744073709551616.0) return kMax;
  return static_cast<uint64_t>(c);
}

struct Size {
  uint64_t min = 0, max = 0;
  Size Add(Size o) const { return {AddSat(min, o.min), AddSat(max, o.max)}; }
  Size Mul(Size o) const { return {MulSat(min, o.min), MulSat(max, o.max)}; }
  Size Union(Size o) const { return {std::min(min, o.min), std::max(max, o.max)}; }
};
struct Cost {
  uint64_t min = 0, max = 0;
  Cost Add(Cost o) const { return {AddSat(min, o.min), AddSat(max, o.max)}; }
  Cost Mul(Cost o) const { return {MulSat(min, o.min), MulSat(max, o.max)}; }
  Cost Union(Cost o) const { return {std::min(min, o.min), std::max(max, o.max)}; }
};
Cost Fixed(uint64_t c) { return {c, c}; }
Cost ByFactor(Size s, double f) { return {MulFactor(s.min, f), MulFactor(s.max, f)}; }
Cost ByFactor(Cost s, double f) { return {MulFactor(s.min, f), MulFactor(s.max, f)}; }
Cost ByCost(Size s, Cost c) { return {MulSat(s.min, c.min), MulSat(s.max, c.max)}; }
const Size kUnknownSize{0, kMax};

struct EntrySize {
  TypeKind container = TypeKind::kDyn;
  Size key, val;
};

// The declared size bounds of the DRA `device` variable (cel/compile.go newCompiler).
struct Decl {
  uint64_t max_elements = 0;
  const Decl* key = nullptr;
  const Decl* elem = nullptr;
  std::map<std::string, const Decl*, std::less<>> fields;
};

Decl Bounded(uint64_t max_elements) {
  Decl d;
  d.max_elements = max_elements;
  return d;
}

struct DraDecls {
  Decl domain = Bounded(63), id = Bounded(32), driver = Bounded(63), multi = Bounded(1),
       attribute = Bounded(64), quantity = Bounded(0);
  Decl inner_attr, outer_attr, inner_cap, outer_cap, device;
  // Maps of attributes and capacities hold at most 32 entries
  // (ResourceSliceMaxAttributesAndCapacitiesPerDevice).
  static Decl Map(const Decl* key, const Decl* elem) {
    Decl d = Bounded(32);
    d.key = key;
    d.elem = elem;
    return d;
  }
  DraDecls() {
    inner_attr = Map(&id, &attribute);
    outer_attr = Map(&domain, &inner_attr);
    inner_cap = Map(&id, &quantity);
    outer_cap = Map(&domain, &inner_cap);
    device.fields = {{"driver", &driver},
                     {"attributes", &outer_attr},
                     {"capacity", &outer_cap},
                     {"allowMultipleAllocations", &multi}};
  }
};

const DraDecls& Dra() {
  static const DraDecls* d = new DraDecls();
  return *d;
}

struct Node {
  std::vector<std::string> path;
  Type type;
  const Expr* expr = nullptr;
  std::optional<Size> computed;
};

struct CallEstimate {
  Cost cost;
  std::optional<Size> result_size;
};

class Coster {
 public:
  Coster(const CheckResult& checked, bool dra) : checked_(checked), dra_(dra) {}

  Cost CostOf(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kConstant:
        return Fixed(0);
      case ExprKind::kIdent:
        return CostIdent(e);
      case ExprKind::kSelect:
        return CostSelect(e);
      case ExprKind::kCall:
        return CostCall(e);
      case ExprKind::kList:
        return CostList(e);
      case ExprKind::kMap:
        return CostMap(e);
      case ExprKind::kComprehension:
        return e.macro == MacroKind::kBind ? CostBind(e) : CostComprehension(e);
    }
    return Fixed(0);
  }

 private:
  struct LocalVar {
    std::vector<std::string> path;
    std::optional<Size> size;
    std::optional<EntrySize> entry;
  };

  const Type& TypeOf(const Expr& e) const { return checked_.TypeOf(e.id); }

  const LocalVar* Peek(const std::string& name) const {
    auto it = locals_.find(name);
    if (it == locals_.end() || it->second.empty()) return nullptr;
    return &it->second.back();
  }
  void Push(const std::string& name, LocalVar v) { locals_[name].push_back(std::move(v)); }
  void Pop(const std::string& name) { locals_[name].pop_back(); }

  std::vector<std::string> PathOf(const Expr& e) const {
    if (e.kind == ExprKind::kIdent) {
      if (const LocalVar* v = Peek(e.name)) return v->path;
    }
    auto it = paths_.find(e.id);
    return it == paths_.end() ? std::vector<std::string>{} : it->second;
  }
  void SetPath(const Expr& e, std::vector<std::string> p) { paths_[e.id] = std::move(p); }

  void SetSize(const Expr& e, std::optional<Size> s) {
    if (s) sizes_[e.id] = *s;
  }
  void SetEntry(const Expr& e, std::optional<EntrySize> s) {
    if (s) entries_[e.id] = *s;
  }

  // The DRA size estimator (cel/compile.go sizeEstimator.EstimateSize).
  std::optional<Size> EstimateSize(const std::vector<std::string>& path) const {
    if (!dra_ || path.empty() || path[0] != "device") return std::nullopt;
    const DraDecls& d = Dra();
    const Decl* cur = &d.device;
    for (size_t i = 1; i < path.size(); ++i) {
      const std::string& name = path[i];
      if (name == "@items" || name == "@values") {
        if (cur->elem == nullptr) return std::nullopt;
        cur = cur->elem;
      } else if (name == "@keys") {
        if (cur->key == nullptr) return std::nullopt;
        cur = cur->key;
      } else {
        auto it = cur->fields.find(name);
        if (it == cur->fields.end()) {
          if (cur->elem == &d.attribute) {
            cur = &d.attribute;
            continue;
          }
          return std::nullopt;
        }
        cur = it->second;
      }
    }
    return Size{0, cur->max_elements};
  }

  static bool IsScalar(const Type& t) {
    switch (t.kind()) {
      case TypeKind::kBool:
      case TypeKind::kDouble:
      case TypeKind::kDuration:
      case TypeKind::kInt:
      case TypeKind::kTimestamp:
      case TypeKind::kUint:
        return true;
      case TypeKind::kOpaque:
        return t.IsOptional() && IsScalar(t.params()[0]);
      default:
        return false;
    }
  }

  static std::optional<Size> LiteralSize(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kConstant:
        switch (e.constant.kind) {
          case ConstantKind::kString: {
            uint64_t n = internal::CodePointCount(e.constant.string_value);
            return Size{n, n};
          }
          case ConstantKind::kBytes: {
            uint64_t n = e.constant.string_value.size();
            return Size{n, n};
          }
          default:
            return Size{1, 1};
        }
      case ExprKind::kList:
        return Size{e.args.size(), e.args.size()};
      case ExprKind::kMap:
        return Size{e.entries.size(), e.entries.size()};
      default:
        return std::nullopt;
    }
  }

  std::optional<Size> ComputeSize(const Expr& e) {
    auto it = sizes_.find(e.id);
    if (it != sizes_.end()) return it->second;
    if (auto s = LiteralSize(e)) return s;
    if (auto s = EstimateSize(PathOf(e))) {
      sizes_[e.id] = *s;
      return s;
    }
    if (IsScalar(TypeOf(e))) return Size{1, 1};
    if (e.kind == ExprKind::kIdent) {
      if (const LocalVar* v = Peek(e.name); v && v->size) return v->size;
    }
    return std::nullopt;
  }
  Size SizeOrUnknown(const Expr& e) {
    auto s = ComputeSize(e);
    return s ? *s : kUnknownSize;
  }
  static Size SizeOrUnknown(const Node& n) { return n.computed ? *n.computed : kUnknownSize; }

  std::optional<EntrySize> ComputeEntry(const Expr& e) {
    auto it = entries_.find(e.id);
    if (it != entries_.end()) return it->second;
    if (e.kind == ExprKind::kIdent) {
      if (const LocalVar* v = Peek(e.name); v && v->entry) return v->entry;
    }
    return std::nullopt;
  }

  Node MakeNode(const Expr& e) {
    Node n;
    n.path = PathOf(e);
    if (!n.path.empty() && (n.path[0] == "@result" || n.path[0] == "__result__")) n.path.clear();
    n.type = TypeOf(e);
    n.expr = &e;
    n.computed = ComputeSize(e);
    return n;
  }

  // The size estimate of a node (apiserver library sizeEstimate).
  Size NodeSize(const Node& n) const {
    if (n.computed) return *n.computed;
    if (auto s = EstimateSize(n.path)) return *s;
    return kUnknownSize;
  }

  // --- expressions ----------------------------------------------------------------------------

  Cost CostIdent(const Expr& e) {
    if (const LocalVar* v = Peek(e.name)) {
      SetPath(e, v->path);
    } else {
      SetPath(e, {e.name});
    }
    return Fixed(1);
  }

  Cost CostSelect(const Expr& e) {
    Cost sum;
    if (e.test_only) {
      // PresenceTestHasCost(false): has() itself is free.
      return sum.Add(CostOf(*e.operand));
    }
    sum = sum.Add(CostOf(*e.operand));
    TypeKind k = TypeOf(*e.operand).kind();
    if (k == TypeKind::kMap || k == TypeKind::kStruct || k == TypeKind::kTypeParam) {
      sum = sum.Add(Fixed(1));
    }
    std::vector<std::string> p = PathOf(*e.operand);
    p.push_back(e.name);
    SetPath(e, std::move(p));
    return sum;
  }

  Cost CostCall(const Expr& e) {
    const Reference* ref = checked_.ReferenceOf(e.id);
    bool namespaced = ref && ref->namespaced_call;
    const Expr* target = namespaced ? nullptr : e.operand.get();
    std::string fn = ref ? ref->name : e.name;
    if (fn == "dyn" && !target && e.args.size() == 1) {
      Cost c = Fixed(1).Add(CostOf(*e.args[0]));
      SetSize(e, ComputeSize(*e.args[0]));
      SetEntry(e, ComputeEntry(*e.args[0]));
      return c;
    }
    if (fn == "_?._" && !target) {
      // Optional field selection: an attribute qualifier.
      Cost c = CostOf(*e.args[0]).Add(Fixed(1));
      std::vector<std::string> p = PathOf(*e.args[0]);
      if (e.args[1]->kind == ExprKind::kConstant) p.push_back(e.args[1]->constant.string_value);
      SetPath(e, std::move(p));
      return c;
    }
    std::vector<Node> args;
    std::vector<Cost> arg_costs;
    for (const ExprPtr& a : e.args) {
      arg_costs.push_back(CostOf(*a));
      args.push_back(MakeNode(*a));
    }
    if (ref == nullptr || ref->overload_ids.empty()) return Cost{};
    Cost sum;
    std::optional<Node> target_node;
    if (target) {
      sum = sum.Add(CostOf(*target));
      target_node = MakeNode(*target);
    }
    Cost fn_cost{kMax, 0};
    std::optional<Size> result_size;
    for (const std::string& overload : ref->overload_ids) {
      CallEstimate ce =
          FunctionCost(e, fn, overload, target_node ? &*target_node : nullptr, args, arg_costs);
      fn_cost = fn_cost.Union(ce.cost);
      if (ce.result_size) {
        result_size = result_size ? result_size->Union(*ce.result_size) : *ce.result_size;
      }
      if (overload == "index_list" && !e.args.empty()) {
        if (auto entry = ComputeEntry(*e.args[0])) result_size = entry->val;
        std::vector<std::string> p = PathOf(*e.args[0]);
        p.push_back("@items");
        SetPath(e, std::move(p));
      } else if (overload == "index_map" && !e.args.empty()) {
        if (auto entry = ComputeEntry(*e.args[0])) result_size = entry->val;
        std::vector<std::string> p = PathOf(*e.args[0]);
        p.push_back("@values");
        SetPath(e, std::move(p));
      }
      if (!result_size) result_size = ComputeSize(e);
    }
    SetSize(e, result_size);
    return sum.Add(fn_cost);
  }

  Cost CostList(const Expr& e) {
    Cost sum;
    Size item{kMax, 0};
    if (e.args.empty()) item.min = 0;
    for (const ExprPtr& a : e.args) {
      sum = sum.Add(CostOf(*a));
      item = item.Union(SizeOrUnknown(*a));
    }
    SetEntry(e, EntrySize{TypeKind::kList, {1, 1}, item});
    return sum.Add(Fixed(10));
  }

  Cost CostMap(const Expr& e) {
    Cost sum;
    Size key{kMax, 0}, val{kMax, 0};
    if (e.entries.empty()) {
      key.min = 0;
      val.min = 0;
    }
    for (const MapEntry& m : e.entries) {
      sum = sum.Add(CostOf(*m.key));
      sum = sum.Add(CostOf(*m.value));
      key = key.Union(SizeOrUnknown(*m.key));
      val = val.Union(SizeOrUnknown(*m.value));
    }
    SetEntry(e, EntrySize{TypeKind::kMap, key, val});
    return sum.Add(Fixed(30));
  }

  void PushIter(const std::string& var, const Expr& range, bool key, bool single) {
    std::optional<EntrySize> entry = ComputeEntry(range);
    TypeKind container = entry ? entry->container : TypeOf(range).kind();
    std::optional<Size> size;
    std::string sub;
    if (single) {
      size = entry ? std::optional<Size>(entry->key) : std::nullopt;
      sub = "@keys";
      if (container == TypeKind::kList) {
        size = entry ? std::optional<Size>(entry->val) : std::nullopt;
        sub = "@items";
      }
    } else if (key) {
      size = entry ? std::optional<Size>(entry->key) : std::nullopt;
      sub = container == TypeKind::kList ? "@indices" : "@keys";
    } else {
      size = entry ? std::optional<Size>(entry->val) : std::nullopt;
      sub = container == TypeKind::kList ? "@items" : "@values";
    }
    std::vector<std::string> p = PathOf(range);
    p.push_back(sub);
    Push(var, {std::move(p), size, std::nullopt});
  }

  void PushLocal(const std::string& var, const Expr& e) {
    Push(var, {PathOf(e), ComputeSize(e), ComputeEntry(e)});
  }

  Cost CostComprehension(const Expr& e) {
    Cost sum;
    sum = sum.Add(CostOf(*e.iter_range));
    sum = sum.Add(CostOf(*e.accu_init));
    PushLocal(e.accu_var, *e.accu_init);
    if (!e.iter_var2.empty()) {
      PushIter(e.iter_var, *e.iter_range, /*key=*/true, false);
      PushIter(e.iter_var2, *e.iter_range, /*key=*/false, false);
    } else {
      PushIter(e.iter_var, *e.iter_range, false, /*single=*/true);
    }
    Cost loop = CostOf(*e.loop_condition);
    Cost step = CostOf(*e.loop_step);
    Pop(e.iter_var);
    if (!e.iter_var2.empty()) Pop(e.iter_var2);
    sum = sum.Add(CostOf(*e.result));
    Pop(e.accu_var);
    Size range = SizeOrUnknown(*e.iter_range);
    sum = sum.Add(ByCost(range, step.Add(loop)));
    switch (e.accu_init->kind) {
      case ExprKind::kConstant:
        SetSize(e, ComputeSize(*e.accu_init));
        break;
      case ExprKind::kList:
      case ExprKind::kMap:
        SetSize(e, range);
        if (auto step_entry = ComputeEntry(*e.loop_step)) SetEntry(e, step_entry);
        break;
      default:
        break;
    }
    return sum;
  }

  Cost CostBind(const Expr& e) {
    Cost sum;
    sum = sum.Add(CostOf(*e.iter_range));
    sum = sum.Add(CostOf(*e.accu_init));
    PushLocal(e.accu_var, *e.accu_init);
    sum = sum.Add(CostOf(*e.result));
    Pop(e.accu_var);
    SetSize(e, ComputeSize(*e.result));
    SetEntry(e, ComputeEntry(*e.result));
    return sum;
  }

  // --- call estimates -------------------------------------------------------------------------

  std::optional<Node> ListElementNode(const Node& list) {
    if (list.type.params().empty()) return std::nullopt;
    Node n;
    n.type = list.type.params()[0];
    if (!list.path.empty()) {
      n.path = list.path;
      n.path.push_back("@items");
    }
    return n;
  }

  enum class K : uint8_t {
    kNone,
    kIncludes,
    kAsList,
    kListTraversal,
    kUrl,
    kStringOp,
    kReplace,
    kSplit,
    kJoin,
    kFind,
    kParseNet,
    kIp,
    kIpCanonical,
    kNominal,
    kContainsNet,
    kQuantityParse,
  };
  static K Classify(const std::string& fn) {
    static const auto* table = new std::unordered_map<std::string_view, K>{
        {"includes", K::kIncludes},
        {"asList", K::kAsList},
        {"isSorted", K::kListTraversal},
        {"sum", K::kListTraversal},
        {"max", K::kListTraversal},
        {"min", K::kListTraversal},
        {"indexOf", K::kListTraversal},
        {"lastIndexOf", K::kListTraversal},
        {"url", K::kUrl},
        {"lowerAscii", K::kStringOp},
        {"upperAscii", K::kStringOp},
        {"substring", K::kStringOp},
        {"trim", K::kStringOp},
        {"replace", K::kReplace},
        {"split", K::kSplit},
        {"join", K::kJoin},
        {"find", K::kFind},
        {"findAll", K::kFind},
        {"cidr", K::kParseNet},
        {"isIP", K::kParseNet},
        {"isCIDR", K::kParseNet},
        {"ip", K::kIp},
        {"ip.isCanonical", K::kIpCanonical},
        {"masked", K::kNominal},
        {"prefixLength", K::kNominal},
        {"family", K::kNominal},
        {"isUnspecified", K::kNominal},
        {"isLoopback", K::kNominal},
        {"isLinkLocalMulticast", K::kNominal},
        {"isLinkLocalUnicast", K::kNominal},
        {"sign", K::kNominal},
        {"asInteger", K::kNominal},
        {"isInteger", K::kNominal},
        {"asApproximateFloat", K::kNominal},
        {"isGreaterThan", K::kNominal},
        {"isLessThan", K::kNominal},
        {"compareTo", K::kNominal},
        {"add", K::kNominal},
        {"sub", K::kNominal},
        {"containsIP", K::kContainsNet},
        {"containsCIDR", K::kContainsNet},
        {"quantity", K::kQuantityParse},
        {"isQuantity", K::kQuantityParse},
    };
    auto it = table->find(fn);
    return it == table->end() ? K::kNone : it->second;
  }

  // apiserver pkg/cel/library/cost.go EstimateCallCost (and DRA's `includes`).
  std::optional<CallEstimate> KubernetesEstimate(const std::string& fn, const std::string& id,
                                                 const Node* target,
                                                 const std::vector<Node>& args) {
    const K k = Classify(fn);
    if (k == K::kNone) return std::nullopt;
    if (k == K::kIncludes) {
      if (id == "dra_includes_dyn_dyn" && target) {
        return CallEstimate{ByCost(Size{0, 48}, Fixed(1)), std::nullopt};
      }
      return std::nullopt;
    }
    if (k == K::kAsList) {
      // A list attribute has at most 48 values (ResourceSliceMaxAttributeValuesPerDevice).
      if (id == "dra_as_list_dyn" && target) return CallEstimate{Fixed(1), Size{1, 48}};
      return std::nullopt;
    }
    if (k == K::kListTraversal) {
      if (!target) return std::nullopt;
      if (auto el = ListElementNode(*target)) {
        Cost el_cost = Fixed(1);
        TypeKind k = el->type.kind();
        if (k == TypeKind::kString || k == TypeKind::kBytes) {
          el_cost = el_cost.Add(ByFactor(NodeSize(*el), kStringTraversal));
        }
        return CallEstimate{ByCost(NodeSize(*target), el_cost), std::nullopt};
      }
      return CallEstimate{ByFactor(NodeSize(*target), kStringTraversal), std::nullopt};
    }
    if (k == K::kUrl) {
      if (args.size() == 1) {
        return CallEstimate{ByFactor(NodeSize(args[0]), kStringTraversal), std::nullopt};
      }
      return std::nullopt;
    }
    if (k == K::kStringOp) {
      if (!target) return std::nullopt;
      Size sz = NodeSize(*target);
      return CallEstimate{ByFactor(sz, kStringTraversal), sz};
    }
    if (k == K::kReplace) {
      if (!target || args.size() < 2) return std::nullopt;
      Size sz = NodeSize(*target);
      Size from = NodeSize(args[0]);
      Size to = NodeSize(args[1]);
      Size count, retained;
      if (from.min == 0) {
        count.max = sz.max < kMax ? sz.max + 1 : sz.max;
        retained.max = sz.max;
      } else if (to.max <= from.min) {
        count.max = 0;
        retained.max = sz.max;
      } else {
        count.max = static_cast<uint64_t>(
            std::ceil(static_cast<double>(sz.max) / static_cast<double>(from.min)));
      }
      if (from.max == 0) {
        count.min = sz.min < kMax ? sz.min + 1 : sz.min;
        retained.min = sz.min;
      } else if (from.max <= to.min) {
        count.min = 0;
        retained.min = sz.min;
      } else {
        count.min = static_cast<uint64_t>(
            std::ceil(static_cast<double>(sz.min) / static_cast<double>(from.max)));
      }
      Size size = count.Mul(to).Add(retained);
      return CallEstimate{ByFactor(sz, 2 * kStringTraversal), size};
    }
    if (k == K::kSplit) {
      if (!target) return std::nullopt;
      Size sz = NodeSize(*target);
      uint64_t max = sz.max;
      if (args.size() > 1 && args[1].expr && args[1].expr->kind == ExprKind::kConstant &&
          args[1].expr->constant.kind == ConstantKind::kInt) {
        max = static_cast<uint64_t>(args[1].expr->constant.int_value);
      }
      return CallEstimate{ByFactor(sz, 2 * kStringTraversal), Size{0, max}};
    }
    if (k == K::kJoin) {
      if (!target) return std::nullopt;
      Size sz;
      Size list = NodeSize(*target);
      if (auto el = ListElementNode(*target)) sz = list.Mul(NodeSize(*el));
      if (!args.empty()) {
        Size sep = NodeSize(args[0]);
        Size seps{list.min > 0 ? list.min - 1 : 0, list.max > 0 ? list.max - 1 : 0};
        sz = sz.Add(sep.Mul(seps));
      }
      return CallEstimate{ByFactor(sz, kStringTraversal), sz};
    }
    if (k == K::kFind) {
      if (!target || args.empty()) return std::nullopt;
      Size sz = NodeSize(*target);
      Cost str = ByFactor(sz.Add(Size{1, 1}), kStringTraversal);
      Cost re = ByFactor(NodeSize(args[0]), kRegexLength);
      return CallEstimate{str.Mul(re), Size{0, sz.max}};
    }
    if (k == K::kParseNet) {
      if (!target || args.empty()) return std::nullopt;
      return CallEstimate{ByFactor(NodeSize(args[0]), kStringTraversal), std::nullopt};
    }
    if (k == K::kIp) {
      if (target && !args.empty()) {
        if (id == "cidr_ip") return CallEstimate{Fixed(1), std::nullopt};
        return CallEstimate{ByFactor(NodeSize(args[0]), kStringTraversal), std::nullopt};
      }
      if (target) return CallEstimate{Fixed(1), std::nullopt};
      return std::nullopt;
    }
    if (k == K::kIpCanonical) {
      if (!target || args.empty()) return std::nullopt;
      return CallEstimate{ByFactor(NodeSize(args[0]), 2 * kStringTraversal), std::nullopt};
    }
    if (k == K::kNominal) return CallEstimate{Fixed(1), std::nullopt};
    if (k == K::kContainsNet) {
      if (!target || args.empty()) return std::nullopt;
      Size sz{4, 16};
      Cost c = ByFactor(sz.Add(sz), kStringTraversal);
      if (fn == "containsCIDR") c = c.Add(ByFactor(sz, kStringTraversal)).Add(Fixed(1));
      if (id == "cidr_contains_ip_string" || id == "cidr_contains_cidr_string") {
        c = c.Add(ByFactor(NodeSize(args[0]), kStringTraversal));
      }
      return CallEstimate{c, std::nullopt};
    }
    // kQuantityParse: upstream only estimates with a receiver, which the global functions
    // never have.
    if (!target || args.empty()) return std::nullopt;
    return CallEstimate{ByFactor(NodeSize(args[0]), kStringTraversal), std::nullopt};
  }

  // cel-go checker/cost.go functionCost.
  CallEstimate FunctionCost(const Expr& e, const std::string& fn, const std::string& id,
                            const Node* target, const std::vector<Node>& args,
                            const std::vector<Cost>& arg_costs) {
    Cost arg_sum;
    for (const Cost& c : arg_costs) arg_sum = arg_sum.Add(c);
    if (auto est = KubernetesEstimate(fn, id, target, args)) {
      return CallEstimate{est->cost.Add(arg_sum), est->result_size};
    }
    if (id == "string_to_bytes" && args.size() == 1) {
      Size sz = SizeOrUnknown(args[0]);
      return CallEstimate{ByFactor(sz, kStringTraversal).Add(arg_sum),
                          Size{sz.min, MulSat(sz.max, 4)}};
    }
    if (id == "bytes_to_string" && args.size() == 1) {
      Size sz = SizeOrUnknown(args[0]);
      return CallEstimate{ByFactor(sz, kStringTraversal).Add(arg_sum), Size{sz.min / 4, sz.max}};
    }
    if (id == "strings_quote" && args.size() == 1) {
      Size sz = SizeOrUnknown(args[0]);
      return CallEstimate{ByFactor(sz, kStringTraversal).Add(arg_sum),
                          Size{AddSat(sz.min, 2), AddSat(MulSat(sz.max, 2), 2)}};
    }
    if ((id == "starts_with_string" || id == "ends_with_string") && args.size() == 1) {
      return CallEstimate{ByFactor(SizeOrUnknown(args[0]), kStringTraversal).Add(arg_sum),
                          std::nullopt};
    }
    if (id == "in_list" && args.size() == 2) {
      return CallEstimate{ByFactor(SizeOrUnknown(args[1]), 1).Add(arg_sum), std::nullopt};
    }
    if (id == "matches_string" && target && args.size() == 1) {
      Cost str = ByFactor(SizeOrUnknown(*target).Add(Size{1, 1}), kStringTraversal);
      Cost re = ByFactor(SizeOrUnknown(args[0]), kRegexLength);
      return CallEstimate{str.Mul(re).Add(arg_sum), std::nullopt};
    }
    if (id == "contains_string" && target && args.size() == 1) {
      Cost str = ByFactor(SizeOrUnknown(*target), kStringTraversal);
      Cost sub = ByFactor(SizeOrUnknown(args[0]), kStringTraversal);
      return CallEstimate{str.Mul(sub).Add(arg_sum), std::nullopt};
    }
    if (id == "logical_or" || id == "logical_and") {
      // Our ASTs keep `&&` / `||` chains n-ary: the minimum is the first operand.
      Cost c{arg_costs.empty() ? 0 : arg_costs[0].min, arg_sum.max};
      return CallEstimate{c, std::nullopt};
    }
    if (id == "conditional" && args.size() == 3) {
      Size size = SizeOrUnknown(args[1]).Union(SizeOrUnknown(args[2]));
      auto e1 = ComputeEntry(*args[1].expr), e2 = ComputeEntry(*args[2].expr);
      if (e1 && e2) {
        SetEntry(e, EntrySize{e1->container, e1->key.Union(e2->key), e1->val.Union(e2->val)});
      }
      return CallEstimate{arg_costs[0].Add(arg_costs[1].Union(arg_costs[2])), size};
    }
    if ((id == "add_string" || id == "add_bytes" || id == "add_list") && args.size() == 2) {
      Size l = SizeOrUnknown(args[0]), r = SizeOrUnknown(args[1]);
      Size result = l.Add(r);
      auto e1 = ComputeEntry(*args[0].expr), e2 = ComputeEntry(*args[1].expr);
      if (e1 && e2) {
        SetEntry(e, EntrySize{e1->container, e1->key.Union(e2->key), e1->val.Union(e2->val)});
      }
      if (id == "add_list") return CallEstimate{Fixed(1).Add(arg_sum), result};
      return CallEstimate{ByFactor(result, kStringTraversal).Add(arg_sum), result};
    }
    bool string_compare = id == "less_string" || id == "greater_string" ||
                          id == "less_equals_string" || id == "greater_equals_string" ||
                          id == "less_bytes" || id == "greater_bytes" ||
                          id == "less_equals_bytes" || id == "greater_equals_bytes" ||
                          id == "equals" || id == "not_equals";
    if (string_compare && args.size() == 2) {
      Size l = SizeOrUnknown(args[0]), r = SizeOrUnknown(args[1]);
      uint64_t smallest = std::min(l.max, r.max);
      Cost c{smallest > 0 ? 1u : 0u, smallest};
      return CallEstimate{ByFactor(c, kStringTraversal).Add(arg_sum), std::nullopt};
    }
    return CallEstimate{Fixed(1).Add(arg_sum), std::nullopt};
  }

  const CheckResult& checked_;
  bool dra_;
  std::unordered_map<int64_t, std::vector<std::string>> paths_;
  std::unordered_map<int64_t, Size> sizes_;
  std::unordered_map<int64_t, EntrySize> entries_;
  std::map<std::string, std::vector<LocalVar>> locals_;
};

}  // namespace

CostEstimate EstimateCost(const Ast& ast, const CheckResult& checked, bool dra) {
  Coster coster(checked, dra);
  auto c = coster.CostOf(*ast.root);
  return CostEstimate{c.min, c.max};
}

}  // namespace draplane::cel
