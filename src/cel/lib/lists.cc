// List libraries: cel-go ext.Lists v3 and ext.Sets, Kubernetes library.Lists v0, the
// two-variable comprehension accumulator declarations, and DRA's `includes` (rewritten).
#include <algorithm>
#include <vector>

#include "cel/lib/helpers.h"
#include "cel/lib/library.h"
#include "cel/runtime/device_input.h"
#include "cel/runtime/nodes.h"

namespace draplane::cel {
namespace {

using internal::Error;
using internal::Global;
using internal::Member;
using internal::Native;

// --- cel-go ext.Lists ------------------------------------------------------------------------

Value Slice(EvalContext& ctx, const Value* a) {
  const ListValue& l = a[0].list();
  int64_t start = a[1].int_value(), end = a[2].int_value();
  std::string where = "cannot slice(" + std::to_string(start) + ", " + std::to_string(end) + ")";
  if (start < 0 || end < 0) return Error(ctx, where + ", negative indexes not supported");
  if (start > end) {
    return Error(ctx, where + ", start index must be less than or equal to end index");
  }
  if (end > static_cast<int64_t>(l.size)) {
    return Error(ctx, where + ", list is length " + std::to_string(l.size));
  }
  return MakeList(ctx.arena, l.elems + start, static_cast<size_t>(end - start));
}

bool FlattenInto(const ListValue& l, int64_t depth, std::vector<Value>* out) {
  for (uint32_t i = 0; i < l.size; ++i) {
    const Value& e = l.elems[i];
    if (e.kind() == ValueKind::kList && depth > 0) {
      if (!FlattenInto(e.list(), depth - 1, out)) return false;
    } else {
      out->push_back(e);
    }
    if (out->size() > Arena::kDefaultBudget / sizeof(Value)) return false;
  }
  return true;
}
Value FlattenN(EvalContext& ctx, const ListValue& l, int64_t depth) {
  if (depth < 0) return Error(ctx, "level must be non-negative");
  std::vector<Value> out;
  if (!FlattenInto(l, std::min<int64_t>(depth, 64), &out)) return MemoryLimitExceeded();
  return MakeList(ctx.arena, out.data(), out.size());
}
Value Flatten(EvalContext& ctx, const Value* a) { return FlattenN(ctx, a[0].list(), 1); }
Value FlattenDepth(EvalContext& ctx, const Value* a) {
  return FlattenN(ctx, a[0].list(), a[1].int_value());
}

Value Distinct(EvalContext& ctx, const Value* a) {
  const ListValue& l = a[0].list();
  std::vector<Value> out;
  for (uint32_t i = 0; i < l.size; ++i) {
    bool seen = false;
    for (const Value& o : out) {
      if (Equal(o, l.elems[i]).IsTrue()) {
        seen = true;
        break;
      }
    }
    if (!seen) out.push_back(l.elems[i]);
  }
  return MakeList(ctx.arena, out.data(), out.size());
}

Value Range(EvalContext& ctx, const Value* a) {
  int64_t n = a[0].int_value();
  if (n < 0) n = 0;
  if (static_cast<uint64_t>(n) > Arena::kDefaultBudget / sizeof(Value)) {
    return MemoryLimitExceeded();
  }
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(Value::Int(i));
  return MakeList(ctx.arena, out.data(), out.size());
}
uint64_t CostRange(const Value* a, size_t, const Value&) {
  int64_t n = a[0].int_value();
  return n > 0 ? static_cast<uint64_t>(n) : 1;
}

Value Reverse(EvalContext& ctx, const Value* a) {
  const ListValue& l = a[0].list();
  std::vector<Value> out(l.elems, l.elems + l.size);
  std::reverse(out.begin(), out.end());
  return MakeList(ctx.arena, out.data(), out.size());
}

// Sorts `order` (indices into `keys`) by the keys; all keys must be mutually comparable.
bool SortIndices(const ListValue& keys, std::vector<uint32_t>* order) {
  for (uint32_t i = 1; i < keys.size; ++i) {
    int c = Compare(keys.elems[0], keys.elems[i]);
    if (c == kIncomparable) return false;
  }
  if (keys.size == 1 && Compare(keys.elems[0], keys.elems[0]) == kIncomparable) return false;
  std::stable_sort(order->begin(), order->end(), [&](uint32_t x, uint32_t y) {
    return Compare(keys.elems[x], keys.elems[y]) == -1;
  });
  return true;
}
Value Sort(EvalContext& ctx, const Value* a) {
  const ListValue& l = a[0].list();
  std::vector<uint32_t> order(l.size);
  for (uint32_t i = 0; i < l.size; ++i) order[i] = i;
  if (!SortIndices(l, &order)) return Error(ctx, "list elements must have the same type");
  std::vector<Value> out;
  for (uint32_t i : order) out.push_back(l.elems[i]);
  return MakeList(ctx.arena, out.data(), out.size());
}
Value SortByKeys(EvalContext& ctx, const Value* a) {
  const ListValue& l = a[0].list();
  const ListValue& keys = a[1].list();
  if (l.size != keys.size) {
    return Error(ctx, "@sortByAssociatedKeys() expected a list of the same size as the keys");
  }
  std::vector<uint32_t> order(l.size);
  for (uint32_t i = 0; i < l.size; ++i) order[i] = i;
  if (!SortIndices(keys, &order)) return Error(ctx, "list elements must have the same type");
  std::vector<Value> out;
  for (uint32_t i : order) out.push_back(l.elems[i]);
  return MakeList(ctx.arena, out.data(), out.size());
}

// --- cel-go ext.Sets -------------------------------------------------------------------------

bool ListContains(const ListValue& l, const Value& v) {
  for (uint32_t i = 0; i < l.size; ++i) {
    if (Equal(l.elems[i], v).IsTrue()) return true;
  }
  return false;
}
Value SetsContains(EvalContext&, const Value* a) {
  const ListValue& l = a[0].list();
  const ListValue& sub = a[1].list();
  for (uint32_t i = 0; i < sub.size; ++i) {
    if (!ListContains(l, sub.elems[i])) return Value::Bool(false);
  }
  return Value::Bool(true);
}
Value SetsEquivalent(EvalContext& ctx, const Value* a) {
  Value swapped[2] = {a[1], a[0]};
  return Value::Bool(SetsContains(ctx, a).IsTrue() && SetsContains(ctx, swapped).IsTrue());
}
Value SetsIntersects(EvalContext&, const Value* a) {
  const ListValue& l = a[0].list();
  const ListValue& other = a[1].list();
  for (uint32_t i = 0; i < other.size; ++i) {
    if (ListContains(l, other.elems[i])) return Value::Bool(true);
  }
  return Value::Bool(false);
}
uint64_t CostSets(const Value* a, size_t, const Value&) {
  uint64_t c = CostSize(a[0]) * CostSize(a[1]);
  return c == 0 ? 1 : c;
}

// --- Kubernetes library.Lists ----------------------------------------------------------------

Value IsSorted(EvalContext&, const Value* a) {
  const ListValue& l = a[0].list();
  for (uint32_t i = 1; i < l.size; ++i) {
    int c = Compare(l.elems[i - 1], l.elems[i]);
    if (c == kIncomparable) return NoSuchOverload();
    if (c == 1) return Value::Bool(false);
  }
  return Value::Bool(true);
}

Value Sum(EvalContext& ctx, const Value* a, ValueKind kind) {
  const ListValue& l = a[0].list();
  int64_t si = 0;
  uint64_t ui = 0;
  double d = 0;
  for (uint32_t i = 0; i < l.size; ++i) {
    const Value& e = l.elems[i];
    if (e.kind() != kind) return NoSuchOverload();
    switch (kind) {
      case ValueKind::kInt:
        if (__builtin_add_overflow(si, e.int_value(), &si)) return Error(ctx, "integer overflow");
        break;
      case ValueKind::kUint:
        if (__builtin_add_overflow(ui, e.uint_value(), &ui)) {
          return Error(ctx, "unsigned integer overflow");
        }
        break;
      case ValueKind::kDouble:
        d += e.double_value();
        break;
      default:
        if (__builtin_add_overflow(si, e.duration_nanos(), &si)) {
          return Error(ctx, "integer overflow");
        }
        break;
    }
  }
  switch (kind) {
    case ValueKind::kInt:
      return Value::Int(si);
    case ValueKind::kUint:
      return Value::Uint(ui);
    case ValueKind::kDouble:
      return Value::Double(d);
    default:
      return Value::Duration(si);
  }
}
Value SumInt(EvalContext& ctx, const Value* a) { return Sum(ctx, a, ValueKind::kInt); }
Value SumUint(EvalContext& ctx, const Value* a) { return Sum(ctx, a, ValueKind::kUint); }
Value SumDouble(EvalContext& ctx, const Value* a) { return Sum(ctx, a, ValueKind::kDouble); }
Value SumDuration(EvalContext& ctx, const Value* a) { return Sum(ctx, a, ValueKind::kDuration); }

Value Extreme(EvalContext& ctx, const Value* a, bool want_min) {
  const ListValue& l = a[0].list();
  if (l.size == 0)
    return Error(ctx, want_min ? "min called on empty list" : "max called on empty list");
  Value best = l.elems[0];
  for (uint32_t i = 1; i < l.size; ++i) {
    int c = Compare(l.elems[i], best);
    if (c == kIncomparable) return NoSuchOverload();
    if ((want_min && c == -1) || (!want_min && c == 1)) best = l.elems[i];
  }
  return best;
}
Value Min(EvalContext& ctx, const Value* a) { return Extreme(ctx, a, true); }
Value Max(EvalContext& ctx, const Value* a) { return Extreme(ctx, a, false); }

Value ListIndexOf(EvalContext&, const Value* a) {
  const ListValue& l = a[0].list();
  for (uint32_t i = 0; i < l.size; ++i) {
    if (Equal(l.elems[i], a[1]).IsTrue()) return Value::Int(i);
  }
  return Value::Int(-1);
}
Value ListLastIndexOf(EvalContext&, const Value* a) {
  const ListValue& l = a[0].list();
  for (uint32_t i = l.size; i > 0; --i) {
    if (Equal(l.elems[i - 1], a[1]).IsTrue()) return Value::Int(i - 1);
  }
  return Value::Int(-1);
}

// --- DRA includes ---------------------------------------------------------------------------

// resourceapi.ResourceSliceMaxAttributeValuesPerDevice.
constexpr uint32_t kMaxIncludes = 48;

Value Includes(EvalContext& ctx, const Value* a) {
  const Value& target = a[0];
  if (target.kind() == ValueKind::kList) {
    const ListValue& l = target.list();
    if (l.size > kMaxIncludes) {
      return Error(ctx, "'includes' function cannot be applied to lists longer than 48 values");
    }
    for (uint32_t i = 0; i < l.size; ++i) {
      if (Equal(l.elems[i], a[1]).IsTrue()) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  return Value::Bool(Equal(target, a[1]).IsTrue());
}

// Kubernetes 1.37 `asList()`: a list attribute read as its first element gives back its whole
// list (the mark DeviceInput put on the value), a list stays itself, anything else becomes a
// one-element list.
Value AsList(EvalContext& ctx, const Value* a) {
  const Value& target = a[0];
  if (target.IsError()) return target;
  if (uint32_t origin = target.list_origin(); origin != 0 && ctx.device != nullptr) {
    if (const Value* list = ctx.device->ListAttribute(origin)) return *list;
  }
  if (target.kind() == ValueKind::kList) return target;
  return MakeList(ctx.arena, &target, 1);
}

}  // namespace

void RegisterListsLibrary(FunctionRegistry& r) {
  const Type T = Type::Param("T");
  const Type lt = Type::List(T);
  const Type I = Type::Int();
  Member(r, "slice", "list_slice", {lt, I, I}, lt, Slice);
  Member(r, "flatten", "list_flatten", {Type::List(lt)}, lt, Flatten);
  Member(r, "flatten", "list_flatten_int", {Type::List(Type::Dyn()), I}, Type::List(Type::Dyn()),
         FlattenDepth);
  Member(r, "distinct", "list_distinct", {lt}, lt, Distinct);
  Global(r, "lists.range", "lists_range", {I}, Type::List(I), Range, CostRange);
  Member(r, "reverse", "list_reverse", {lt}, lt, Reverse);
  for (const Type& elem : {Type::Int(), Type::Uint(), Type::Double(), Type::Bool(), Type::String(),
                           Type::Bytes(), Type::Duration(), Type::Timestamp()}) {
    Member(r, "sort", "list_" + elem.name() + "_sort", {Type::List(elem)}, Type::List(elem), Sort);
    Member(r, "@sortByAssociatedKeys", "list_" + elem.name() + "_sortByAssociatedKeys",
           {lt, Type::List(elem)}, lt, SortByKeys);
  }
}

void RegisterSetsLibrary(FunctionRegistry& r) {
  const Type lt = Type::List(Type::Param("T"));
  Global(r, "sets.contains", "list_sets_contains_list", {lt, lt}, Type::Bool(), SetsContains,
         CostSets);
  Global(r, "sets.equivalent", "list_sets_equivalent_list", {lt, lt}, Type::Bool(), SetsEquivalent,
         CostSets);
  Global(r, "sets.intersects", "list_sets_intersects_list", {lt, lt}, Type::Bool(), SetsIntersects,
         CostSets);
}

void RegisterTwoVarComprehensions(FunctionRegistry& r) {
  const Type K = Type::Param("K"), V = Type::Param("V");
  const Type m = Type::Map(K, V);
  Native(r, "cel.@mapInsert", "@mapInsert_map_key_value", false, {m, K, V}, m);
  Native(r, "cel.@mapInsert", "@mapInsert_map_map", false, {m, m}, m);
}

void RegisterKubernetesListsLibrary(FunctionRegistry& r) {
  using internal::CostTraversal;
  const Type comparable[] = {Type::Int(),      Type::Uint(),      Type::Double(), Type::Bool(),
                             Type::Duration(), Type::Timestamp(), Type::String(), Type::Bytes()};
  for (const Type& t : comparable) {
    const Type lt = Type::List(t);
    const std::string n = t.kind() == TypeKind::kDuration    ? "duration"
                          : t.kind() == TypeKind::kTimestamp ? "timestamp"
                                                             : t.name();
    Member(r, "isSorted", "list_" + n + "_is_sorted_bool", {lt}, Type::Bool(), IsSorted,
           CostTraversal);
    Member(r, "min", "list_" + n + "_min_" + n, {lt}, t, Min, CostTraversal);
    Member(r, "max", "list_" + n + "_max_" + n, {lt}, t, Max, CostTraversal);
  }
  Member(r, "sum", "list_int_sum_int", {Type::List(Type::Int())}, Type::Int(), SumInt,
         CostTraversal);
  Member(r, "sum", "list_uint_sum_uint", {Type::List(Type::Uint())}, Type::Uint(), SumUint,
         CostTraversal);
  Member(r, "sum", "list_double_sum_double", {Type::List(Type::Double())}, Type::Double(),
         SumDouble, CostTraversal);
  Member(r, "sum", "list_duration_sum_duration", {Type::List(Type::Duration())}, Type::Duration(),
         SumDuration, CostTraversal);
  const Type T = Type::Param("T");
  Member(r, "indexOf", "list_a_index_of_int", {Type::List(T), T}, Type::Int(), ListIndexOf,
         CostTraversal);
  Member(r, "lastIndexOf", "list_a_last_index_of_int", {Type::List(T), T}, Type::Int(),
         ListLastIndexOf, CostTraversal);
}

void RegisterDraIncludes(FunctionRegistry& r) {
  Member(r, "includes", "dra_includes_dyn_dyn", {Type::Dyn(), Type::Dyn()}, Type::Bool(), Includes);
}

void RegisterDraAsList(FunctionRegistry& r) {
  Member(r, "asList", "dra_as_list_dyn", {Type::Dyn()}, Type::List(Type::Dyn()), AsList);
}

}  // namespace draplane::cel
