#include "cel/runtime/nodes.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace draplane::cel {
namespace {

constexpr uint64_t kListCreateCost = 10;
constexpr uint64_t kMapCreateCost = 30;
constexpr size_t kMaxArgs = 8;

Value EmptyMap() {
  static const MapValue kEmpty;
  return Value::Map(&kEmpty);
}

std::string_view KindName(const Value& v) {
  const TypeValue* t = TypeOf(v);
  return t == nullptr ? "error" : t->name;
}

Value Err(EvalContext& ctx, std::string_view message) { return MakeError(ctx.arena, message); }

// Field selection with CEL map semantics; `optional_chain` turns a missing key into none and
// a found value into optional.of(value).
Value SelectValue(EvalContext& ctx, const Value& v, std::string_view field, bool test_only) {
  switch (v.kind()) {
    case ValueKind::kMap: {
      const MapValue& m = v.map();
      const Value* found = m.FindString(field);
      if (test_only) return Value::Bool(found != nullptr || m.default_empty());
      if (found != nullptr) return *found;
      if (m.default_empty()) return EmptyMap();
      return NoSuchKey(ctx.arena, Value::String(field));
    }
    case ValueKind::kOptional: {
      if (!v.optional_has_value()) return test_only ? Value::Bool(false) : OptionalNone();
      const Value& inner = v.optional_value();
      if (test_only) return SelectValue(ctx, inner, field, true);
      if (inner.kind() == ValueKind::kMap) {
        const MapValue& m = inner.map();
        const Value* found = m.FindString(field);
        if (found != nullptr) return MakeOptional(ctx.arena, *found);
        if (m.default_empty()) return MakeOptional(ctx.arena, EmptyMap());
        return OptionalNone();
      }
      Value r = SelectValue(ctx, inner, field, false);
      if (r.IsError()) return r;
      return MakeOptional(ctx.arena, r);
    }
    case ValueKind::kError:
      return v;
    case ValueKind::kList:
      if (test_only) return Err(ctx, "unsupported index type 'string' in list");
      [[fallthrough]];
    default:
      if (test_only) return Value::Bool(false);
      return Err(ctx, "type '" + std::string(KindName(v)) + "' does not support field selection");
  }
}

// The list position selected by `index`, or an error value.
bool ListIndex(EvalContext& ctx, const Value& index, uint32_t size, uint32_t* out, Value* err) {
  int64_t i;
  switch (index.kind()) {
    case ValueKind::kInt:
      i = index.int_value();
      break;
    case ValueKind::kUint:
      if (index.uint_value() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        *err =
            Err(ctx, "unsupported index value " + std::to_string(index.uint_value()) + " in list");
        return false;
      }
      i = static_cast<int64_t>(index.uint_value());
      break;
    case ValueKind::kDouble: {
      double d = index.double_value();
      if (!std::isfinite(d) || d != std::trunc(d) || d < -9.2e18 || d > 9.2e18) {
        *err = Err(ctx, "unsupported index value " + FormatDouble(d) + " in list");
        return false;
      }
      i = static_cast<int64_t>(d);
      break;
    }
    default:
      *err = Err(ctx, "unsupported index type '" + std::string(KindName(index)) + "' in list");
      return false;
  }
  if (i < 0 || i >= static_cast<int64_t>(size)) {
    *err = Err(ctx, "index '" + std::to_string(i) + "' out of range in list size '" +
                        std::to_string(size) + "'");
    return false;
  }
  *out = static_cast<uint32_t>(i);
  return true;
}

Value IndexValue(EvalContext& ctx, const Value& v, const Value& index) {
  switch (v.kind()) {
    case ValueKind::kList: {
      uint32_t pos;
      Value err;
      if (!ListIndex(ctx, index, v.list().size, &pos, &err)) return err;
      return v.list().elems[pos];
    }
    case ValueKind::kMap: {
      const MapValue& m = v.map();
      const Value* found = m.Find(index);
      if (found != nullptr) return *found;
      if (m.default_empty()) return EmptyMap();
      return NoSuchKey(ctx.arena, index);
    }
    case ValueKind::kOptional: {
      if (!v.optional_has_value()) return OptionalNone();
      const Value& inner = v.optional_value();
      if (inner.kind() == ValueKind::kMap) {
        const MapValue& m = inner.map();
        const Value* found = m.Find(index);
        if (found != nullptr) return MakeOptional(ctx.arena, *found);
        if (m.default_empty()) return MakeOptional(ctx.arena, EmptyMap());
        return OptionalNone();
      }
      if (inner.kind() == ValueKind::kList) {
        uint32_t pos;
        Value err;
        if (!ListIndex(ctx, index, inner.list().size, &pos, &err)) return OptionalNone();
        return MakeOptional(ctx.arena, inner.list().elems[pos]);
      }
      Value r = IndexValue(ctx, inner, index);
      if (r.IsError()) return r;
      return MakeOptional(ctx.arena, r);
    }
    default:
      return NoSuchOverload();
  }
}

// A list accumulator that comprehension steps append to in place.
struct GrowableList {
  ListValue list;
  uint32_t capacity = 0;
};

// A map accumulator that transformMap steps insert into in place.
struct GrowableMap {
  MapValue map;
  MapEntryValue* storage = nullptr;
  uint32_t capacity = 0;
};

}  // namespace

std::string_view GoTypeName(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kNull:
      return "types.Null";
    case ValueKind::kBool:
      return "types.Bool";
    case ValueKind::kInt:
      return "types.Int";
    case ValueKind::kUint:
      return "types.Uint";
    case ValueKind::kDouble:
      return "types.Double";
    case ValueKind::kString:
      return "types.String";
    case ValueKind::kBytes:
      return "types.Bytes";
    case ValueKind::kList:
      return "*types.baseList";
    case ValueKind::kMap:
      return "*types.baseMap";
    case ValueKind::kType:
      return "*types.Type";
    case ValueKind::kOptional:
      return "*types.Optional";
    case ValueKind::kTimestamp:
      return "types.Timestamp";
    case ValueKind::kDuration:
      return "types.Duration";
    case ValueKind::kQuantity:
      return "cel.Quantity";
    case ValueKind::kSemver:
      return "cel.Semver";
    case ValueKind::kIP:
      return "cel.IP";
    case ValueKind::kCIDR:
      return "cel.CIDR";
    case ValueKind::kURL:
      return "cel.URL";
    case ValueKind::kError:
      return "*types.Err";
  }
  return "unknown";
}

Value VariableNode::Eval(EvalContext& ctx) const {
  ctx.cost += 1;
  for (const Alternative& alt : alternatives_) {
    const Value* v = ctx.activation ? ctx.activation->Find(alt.name) : nullptr;
    if (v == nullptr) continue;
    Value cur = *v;
    for (const std::string& f : alt.fields) {
      ctx.cost += 1;
      cur = SelectValue(ctx, cur, f, false);
      if (cur.IsError()) return cur;
    }
    return cur;
  }
  return Err(ctx, "no such attribute: " + alternatives_.front().name);
}

Value SelectNode::Eval(EvalContext& ctx) const {
  Value v = operand_->Eval(ctx);
  ctx.cost += cost_;
  if (v.IsError()) return v;
  return SelectValue(ctx, v, field_, test_only_);
}

Value IndexNode::Eval(EvalContext& ctx) const {
  Value v = operand_->Eval(ctx);
  Value i = index_->Eval(ctx);
  ctx.cost += cost_;
  if (v.IsError()) return v;
  if (i.IsError()) return i;
  return IndexValue(ctx, v, i);
}

Value OptionalSelectNode::Eval(EvalContext& ctx) const {
  Value v = operand_->Eval(ctx);
  Value k = key_->Eval(ctx);
  ctx.cost += cost_;
  if (v.IsError()) return v;
  if (k.IsError()) return k;
  if (v.kind() == ValueKind::kOptional) {
    if (!v.optional_has_value()) return OptionalNone();
    v = v.optional_value();
  }
  switch (v.kind()) {
    case ValueKind::kMap: {
      const MapValue& m = v.map();
      const Value* found = is_index_ ? m.Find(k) : m.FindString(k.string_value());
      if (found != nullptr) return MakeOptional(ctx.arena, *found);
      if (m.default_empty()) return MakeOptional(ctx.arena, EmptyMap());
      return OptionalNone();
    }
    case ValueKind::kList: {
      if (!is_index_) return Err(ctx, "unsupported index type 'string' in list");
      uint32_t pos;
      Value err;
      if (!ListIndex(ctx, k, v.list().size, &pos, &err)) {
        // An out-of-range or non-integral index yields none; a wrong index type is an error.
        if (k.kind() == ValueKind::kInt || k.kind() == ValueKind::kUint ||
            k.kind() == ValueKind::kDouble) {
          return OptionalNone();
        }
        return err;
      }
      return MakeOptional(ctx.arena, v.list().elems[pos]);
    }
    default:
      return NoSuchOverload();
  }
}

Value AndNode::Eval(EvalContext& ctx) const {
  Value first_error;
  bool has_error = false;
  for (const NodePtr& t : terms_) {
    Value v = t->Eval(ctx);
    if (v.kind() == ValueKind::kBool) {
      if (!v.bool_value()) return v;
      continue;
    }
    if (!has_error) {
      first_error = v.IsError() ? v : NoSuchOverload();
      has_error = true;
    }
  }
  return has_error ? first_error : Value::Bool(true);
}

Value OrNode::Eval(EvalContext& ctx) const {
  Value first_error;
  bool has_error = false;
  for (const NodePtr& t : terms_) {
    Value v = t->Eval(ctx);
    if (v.kind() == ValueKind::kBool) {
      if (v.bool_value()) return v;
      continue;
    }
    if (!has_error) {
      first_error = v.IsError() ? v : NoSuchOverload();
      has_error = true;
    }
  }
  return has_error ? first_error : Value::Bool(false);
}

Value ConditionalNode::Eval(EvalContext& ctx) const {
  Value c = cond_->Eval(ctx);
  if (c.kind() == ValueKind::kBool) return c.bool_value() ? then_->Eval(ctx) : else_->Eval(ctx);
  if (c.IsError()) return c;
  return NoSuchOverload();
}

Value NotStrictlyFalseNode::Eval(EvalContext& ctx) const {
  Value v = arg_->Eval(ctx);
  ctx.cost += 1;
  if (v.kind() == ValueKind::kBool) return v;
  return Value::Bool(true);
}

Value EqualNode::Eval(EvalContext& ctx) const {
  Value a = lhs_->Eval(ctx);
  Value b = rhs_->Eval(ctx);
  if (a.IsError()) return a;
  if (b.IsError()) return b;
  uint64_t sa = CostSize(a), sb = CostSize(b);
  ctx.cost += TraversalCost(sa < sb ? sa : sb);
  Value r = Equal(a, b);
  if (negate_ && r.IsBool()) return Value::Bool(!r.bool_value());
  return r;
}

EqualConstNode::EqualConstNode(NodePtr lhs, Value constant, bool negate)
    : lhs_(std::move(lhs)),
      constant_(constant),
      constant_size_(CostSize(constant)),
      negate_(negate) {}

Value EqualConstNode::Eval(EvalContext& ctx) const {
  Value a = lhs_->Eval(ctx);
  if (a.IsError()) return a;
  if (a.kind() == constant_.kind()) {
    bool eq;
    switch (a.kind()) {
      case ValueKind::kString: {
        std::string_view s = a.string_value();
        uint64_t n = s.size() < constant_size_ ? s.size() : constant_size_;
        ctx.cost += TraversalCost(n);
        eq = s.size() == constant_size_ &&
             BytesEqual(s.data(), constant_.string_value().data(), s.size());
        return Value::Bool(eq != negate_);
      }
      case ValueKind::kInt:
        ctx.cost += 1;
        return Value::Bool((a.int_value() == constant_.int_value()) != negate_);
      case ValueKind::kBool:
        ctx.cost += 1;
        return Value::Bool((a.bool_value() == constant_.bool_value()) != negate_);
      default:
        break;
    }
  }
  uint64_t sa = CostSize(a);
  ctx.cost += TraversalCost(sa < constant_size_ ? sa : constant_size_);
  Value r = Equal(a, constant_);
  if (negate_ && r.IsBool()) return Value::Bool(!r.bool_value());
  return r;
}

bool CompareNode::Holds(Op op, int cmp) {
  switch (op) {
    case Op::kLess:
      return cmp == -1;
    case Op::kLessEqual:
      return cmp == -1 || cmp == 0;
    case Op::kGreater:
      return cmp == 1;
    case Op::kGreaterEqual:
      return cmp == 1 || cmp == 0;
  }
  return false;
}

Value CompareNode::Eval(EvalContext& ctx) const {
  Value a = lhs_->Eval(ctx);
  Value b = rhs_->Eval(ctx);
  if (a.IsError()) return a;
  if (b.IsError()) return b;
  if (a.kind() == ValueKind::kString || a.kind() == ValueKind::kBytes) {
    uint64_t sa = CostSize(a), sb = CostSize(b);
    ctx.cost += TraversalCost(sa < sb ? sa : sb);
  } else {
    ctx.cost += 1;
  }
  int cmp = Compare(a, b);
  if (cmp == kIncomparable) return NoSuchOverload();
  return Value::Bool(Holds(op_, cmp));
}

Value InNode::Eval(EvalContext& ctx) const {
  Value e = elem_->Eval(ctx);
  Value c = container_->Eval(ctx);
  if (e.IsError()) return e;
  if (c.IsError()) return c;
  if (c.kind() == ValueKind::kList) {
    const ListValue& l = c.list();
    ctx.cost += l.size;
    Value first_error;
    bool has_error = false;
    for (uint32_t i = 0; i < l.size; ++i) {
      Value eq = Equal(e, l.elems[i]);
      if (eq.IsTrue()) return eq;
      if (!eq.IsBool() && !has_error) {
        first_error = eq;
        has_error = true;
      }
    }
    return has_error ? first_error : Value::Bool(false);
  }
  ctx.cost += 1;
  if (c.kind() == ValueKind::kMap) return Value::Bool(c.map().Find(e) != nullptr);
  return NoSuchOverload();
}

CallNode::CallNode(std::string function, std::vector<const OverloadImpl*> candidates,
                   std::vector<NodePtr> args)
    : function_(std::move(function)), candidates_(std::move(candidates)), args_(std::move(args)) {
  for (const OverloadImpl* c : candidates_) non_strict_ = non_strict_ || c->non_strict;
}

template <size_t N>
Value CallNode::EvalN(EvalContext& ctx) const {
  Value args[N];
  const size_t n = args_.size();
  for (size_t i = 0; i < n; ++i) args[i] = args_[i]->Eval(ctx);
  if (!non_strict_) {
    for (size_t i = 0; i < n; ++i) {
      if (args[i].IsError()) return args[i];
    }
  }
  for (const OverloadImpl* c : candidates_) {
    if (c->kinds.size() != n || !c->Matches(args)) continue;
    Value r = c->impl(ctx, args);
    ctx.cost += c->cost ? c->cost(args, n, r) : 1;
    return r;
  }
  ctx.cost += 1;
  if (non_strict_) {
    for (size_t i = 0; i < n; ++i) {
      if (args[i].IsError()) return args[i];
    }
  }
  return NoSuchOverload();
}

Value CallNode::Eval(EvalContext& ctx) const {
  switch (args_.size()) {
    case 0:
    case 1:
      return EvalN<1>(ctx);
    case 2:
      return EvalN<2>(ctx);
    case 3:
      return EvalN<3>(ctx);
    default:
      return EvalN<kMaxArgs>(ctx);
  }
}

Value ListNode::Eval(EvalContext& ctx) const {
  ctx.cost += kListCreateCost;
  const size_t n = elems_.size();
  Value* out = ctx.arena->NewArray<Value>(n);
  auto* list = ctx.arena->New<ListValue>();
  if (out == nullptr || list == nullptr) return MemoryLimitExceeded();
  uint32_t size = 0;
  for (size_t i = 0; i < n; ++i) {
    Value v = elems_[i]->Eval(ctx);
    if (v.IsError()) return v;
    if (optional_[i]) {
      if (v.kind() != ValueKind::kOptional) return NoSuchOverload();
      if (!v.optional_has_value()) continue;
      v = v.optional_value();
    }
    out[size++] = v;
  }
  list->elems = out;
  list->size = size;
  return Value::List(list);
}

Value MapNode::Eval(EvalContext& ctx) const {
  ctx.cost += kMapCreateCost;
  const size_t n = keys_.size();
  MapEntryValue small[16];
  std::vector<MapEntryValue> large;
  MapEntryValue* entries = small;
  if (n > 16) {
    large.resize(n);
    entries = large.data();
  }
  size_t size = 0;
  for (size_t i = 0; i < n; ++i) {
    Value k = keys_[i]->Eval(ctx);
    if (k.IsError()) return k;
    Value v = values_[i]->Eval(ctx);
    if (v.IsError()) return v;
    if (optional_[i]) {
      if (v.kind() != ValueKind::kOptional) return NoSuchOverload();
      if (!v.optional_has_value()) continue;
      v = v.optional_value();
    }
    entries[size++] = {k, v};
  }
  return MakeMap(ctx.arena, entries, size);
}

Value ComprehensionNode::Eval(EvalContext& ctx) const {
  Value range = s_.range->Eval(ctx);
  if (range.IsError()) return range;
  if (range.kind() != ValueKind::kList && range.kind() != ValueKind::kMap) {
    return Err(ctx, "got '" + std::string(GoTypeName(range)) + "', expected iterable type");
  }
  ctx.slots[s_.accu_slot] = s_.init->Eval(ctx);
  const bool two = s_.iter_slot2 >= 0;
  if (range.kind() == ValueKind::kList) {
    const ListValue& l = range.list();
    for (uint32_t i = 0; i < l.size; ++i) {
      if (two) {
        ctx.slots[s_.iter_slot] = Value::Int(i);
        ctx.slots[s_.iter_slot2] = l.elems[i];
      } else {
        ctx.slots[s_.iter_slot] = l.elems[i];
      }
      if (s_.condition->Eval(ctx).IsFalse()) break;
      ctx.slots[s_.accu_slot] = s_.step->Eval(ctx);
      if (ctx.cost > ctx.cost_limit) ctx.cancelled = true;
      if (ctx.cancelled) return EvalContext::CostLimitExceeded();
    }
  } else {
    const MapValue& m = range.map();
    for (uint32_t i = 0; i < m.size(); ++i) {
      ctx.slots[s_.iter_slot] = m.entries()[i].key;
      if (two) ctx.slots[s_.iter_slot2] = m.entries()[i].value;
      if (s_.condition->Eval(ctx).IsFalse()) break;
      ctx.slots[s_.accu_slot] = s_.step->Eval(ctx);
      if (ctx.cost > ctx.cost_limit) ctx.cancelled = true;
      if (ctx.cancelled) return EvalContext::CostLimitExceeded();
    }
  }
  return s_.result->Eval(ctx);
}

Value BindNode::Eval(EvalContext& ctx) const {
  ctx.cost += kListCreateCost;  // the empty iteration range of the expanded macro
  ctx.slots[slot_] = init_->Eval(ctx);
  return body_->Eval(ctx);
}

Value AccuAppendNode::Eval(EvalContext& ctx) const {
  Value elem = elem_->Eval(ctx);
  ctx.cost += 2 + kListCreateCost;
  if (elem.IsError()) return elem;
  Value accu = ctx.slots[accu_slot_];
  if (accu.IsError()) return accu;
  if (accu.kind() != ValueKind::kList) return NoSuchOverload();
  GrowableList* g;
  if (accu.list().size == 0) {
    // The initial (empty) accumulator: start a growable list.
    g = ctx.arena->New<GrowableList>();
    if (g == nullptr) return MemoryLimitExceeded();
  } else {
    // Every non-empty accumulator was created by this node.
    g = reinterpret_cast<GrowableList*>(const_cast<ListValue*>(&accu.list()));
  }
  if (g->list.size == g->capacity) {
    uint32_t cap = g->capacity == 0 ? 8 : g->capacity * 2;
    Value* elems = ctx.arena->NewArray<Value>(cap);
    if (elems == nullptr) return MemoryLimitExceeded();
    if (g->list.size) std::memcpy(elems, g->list.elems, sizeof(Value) * g->list.size);
    g->list.elems = elems;
    g->capacity = cap;
  }
  const_cast<Value*>(g->list.elems)[g->list.size++] = elem;
  return Value::List(&g->list);
}

namespace {

Value AccuInsert(EvalContext& ctx, const Value& accu, const Value& key, const Value& value) {
  if (accu.IsError()) return accu;
  if (accu.kind() != ValueKind::kMap) return NoSuchOverload();
  if (key.kind() != ValueKind::kString && key.kind() != ValueKind::kInt &&
      key.kind() != ValueKind::kUint && key.kind() != ValueKind::kBool) {
    return Err(ctx, "unsupported key type");
  }
  GrowableMap* g;
  if (accu.map().size() == 0) {
    g = ctx.arena->New<GrowableMap>();
    if (g == nullptr) return MemoryLimitExceeded();
  } else {
    // Every non-empty accumulator was created here.
    g = reinterpret_cast<GrowableMap*>(const_cast<MapValue*>(&accu.map()));
  }
  if (g->map.Find(key) != nullptr) {
    return Err(ctx, "insert failed: key " + FormatValue(key) + " already exists");
  }
  if (g->map.size() == g->capacity) {
    uint32_t cap = g->capacity == 0 ? 8 : g->capacity * 2;
    MapEntryValue* storage = ctx.arena->NewArray<MapEntryValue>(cap);
    if (storage == nullptr) return MemoryLimitExceeded();
    if (g->map.size()) std::memcpy(storage, g->storage, sizeof(MapEntryValue) * g->map.size());
    g->storage = storage;
    g->capacity = cap;
    if (!g->map.Init(storage, g->map.size(), ctx.arena)) return MemoryLimitExceeded();
  }
  if (!g->map.AppendUnique(g->storage, {key, value}, ctx.arena)) return MemoryLimitExceeded();
  return Value::Map(&g->map);
}

}  // namespace

Value AccuMapInsertNode::Eval(EvalContext& ctx) const {
  ctx.cost += 2;
  if (key_) {
    Value key = key_->Eval(ctx);
    if (key.IsError()) return key;
    Value value = value_->Eval(ctx);
    if (value.IsError()) return value;
    return AccuInsert(ctx, ctx.slots[accu_slot_], key, value);
  }
  Value entry = value_->Eval(ctx);
  if (entry.IsError()) return entry;
  if (entry.kind() != ValueKind::kMap) return NoSuchOverload();
  Value accu = ctx.slots[accu_slot_];
  const MapValue& m = entry.map();
  for (uint32_t i = 0; i < m.size(); ++i) {
    accu = AccuInsert(ctx, accu, m.entries()[i].key, m.entries()[i].value);
    if (accu.IsError()) return accu;
  }
  return accu;
}

Value OptionalOrNode::Eval(EvalContext& ctx) const {
  Value v = lhs_->Eval(ctx);
  ctx.cost += 1;
  if (v.IsError()) return v;
  if (v.kind() != ValueKind::kOptional) return NoSuchOverload();
  if (v.optional_has_value()) return or_value_ ? v.optional_value() : v;
  Value r = rhs_->Eval(ctx);
  if (r.IsError()) return r;
  if (!or_value_ && r.kind() != ValueKind::kOptional) return NoSuchOverload();
  return r;
}

}  // namespace draplane::cel
