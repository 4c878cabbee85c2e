// Optional types (cel-go cel/library.go `optionalLib`, all versions), rewritten.
#include <cmath>

#include "cel/lib/helpers.h"
#include "cel/lib/library.h"

namespace draplane::cel {
namespace {

using internal::Error;
using internal::Global;
using internal::Member;
using internal::Native;

Value Of(EvalContext& ctx, const Value* a) { return MakeOptional(ctx.arena, a[0]); }

// cel-go `IsZeroValue` of the built-in types.
bool IsZero(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kNull:
      return true;
    case ValueKind::kBool:
      return !v.bool_value();
    case ValueKind::kInt:
      return v.int_value() == 0;
    case ValueKind::kUint:
      return v.uint_value() == 0;
    case ValueKind::kDouble:
      return v.double_value() == 0;
    case ValueKind::kString:
    case ValueKind::kBytes:
      return v.string_value().empty();
    case ValueKind::kList:
      return v.list().size == 0;
    case ValueKind::kMap:
      return v.map().size() == 0;
    case ValueKind::kDuration:
      return v.duration_nanos() == 0;
    case ValueKind::kTimestamp:
      return v.seconds() == 0 && v.nanos() == 0;
    case ValueKind::kOptional:
      return !v.optional_has_value();
    default:
      return false;
  }
}

Value OfNonZero(EvalContext& ctx, const Value* a) {
  if (IsZero(a[0])) return OptionalNone();
  return MakeOptional(ctx.arena, a[0]);
}
Value None(EvalContext&, const Value*) { return OptionalNone(); }
Value HasValue(EvalContext&, const Value* a) { return Value::Bool(a[0].optional_has_value()); }
Value GetValue(EvalContext& ctx, const Value* a) {
  if (!a[0].optional_has_value()) return Error(ctx, "optional.none() dereference");
  return a[0].optional_value();
}
Value First(EvalContext& ctx, const Value* a) {
  if (a[0].list().size == 0) return OptionalNone();
  return MakeOptional(ctx.arena, a[0].list().elems[0]);
}
Value Last(EvalContext& ctx, const Value* a) {
  if (a[0].list().size == 0) return OptionalNone();
  return MakeOptional(ctx.arena, a[0].list().elems[a[0].list().size - 1]);
}
Value Unwrap(EvalContext& ctx, const Value* a) {
  const ListValue& l = a[0].list();
  std::vector<Value> out;
  out.reserve(l.size);
  for (uint32_t i = 0; i < l.size; ++i) {
    const Value& e = l.elems[i];
    if (e.kind() != ValueKind::kOptional) {
      return Error(ctx, "optional.unwrap: list element is not an optional value");
    }
    if (e.optional_has_value()) out.push_back(e.optional_value());
  }
  return MakeList(ctx.arena, out.data(), out.size());
}

}  // namespace

void RegisterOptionalLibrary(FunctionRegistry& r) {
  const Type V = Type::Param("V");
  const Type K = Type::Param("K");
  const Type opt_v = Type::Optional(V);
  const Type list_v = Type::List(V);
  const Type map_kv = Type::Map(K, V);

  Global(r, "optional.of", "optional_of", {V}, opt_v, Of);
  Global(r, "optional.ofNonZeroValue", "optional_ofNonZeroValue", {V}, opt_v, OfNonZero);
  Global(r, "optional.none", "optional_none", {}, opt_v, None);
  Member(r, "value", "optional_value", {opt_v}, V, GetValue);
  Member(r, "hasValue", "optional_hasValue", {opt_v}, Type::Bool(), HasValue);
  Native(r, "or", "optional_or_optional", true, {opt_v, opt_v}, opt_v);
  Native(r, "orValue", "optional_orValue_value", true, {opt_v, V}, V);
  Native(r, "_[?_]", "list_optindex_optional_int", false, {list_v, Type::Int()}, opt_v);
  Native(r, "_[?_]", "optional_list_optindex_optional_int", false,
         {Type::Optional(list_v), Type::Int()}, opt_v);
  Native(r, "_[?_]", "map_optindex_optional_value", false, {map_kv, K}, opt_v);
  Native(r, "_[?_]", "optional_map_optindex_optional_value", false, {Type::Optional(map_kv), K},
         opt_v);
  Native(r, "_[_]", "optional_list_index_int", false, {Type::Optional(list_v), Type::Int()}, opt_v);
  Native(r, "_[_]", "optional_map_index_value", false, {Type::Optional(map_kv), K}, opt_v);
  Member(r, "first", "list_first", {list_v}, opt_v, First);
  Member(r, "last", "list_last", {list_v}, opt_v, Last);
  Global(r, "optional.unwrap", "optional_unwrap_list", {Type::List(opt_v)}, list_v, Unwrap);
  Member(r, "unwrapOpt", "optional_unwrapOpt_list", {Type::List(opt_v)}, list_v, Unwrap);
}

}  // namespace draplane::cel
