// The CEL standard library (cel-go common/stdlib/standard.go and the common/types conversions
// it binds), rewritten.
#include <re2/re2.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "cel/internal/utf8.h"
#include "cel/lib/helpers.h"
#include "cel/lib/library.h"
#include "cel/lib/regex_cache.h"
#include "cel/lib/time.h"

namespace draplane::cel {
namespace {

using internal::Error;
using internal::Global;
using internal::Member;
using internal::Native;

constexpr ErrorValue kIntOverflow{"integer overflow"};
constexpr ErrorValue kUintOverflow{"unsigned integer overflow"};
constexpr ErrorValue kDivByZero{"division by zero"};
constexpr ErrorValue kModByZero{"modulus by zero"};

Value IntOverflow() { return StaticError(&kIntOverflow); }
Value UintOverflow() { return StaticError(&kUintOverflow); }

// --- arithmetic ------------------------------------------------------------------------------

Value AddInt(EvalContext&, const Value* a) {
  int64_t r;
  if (__builtin_add_overflow(a[0].int_value(), a[1].int_value(), &r)) return IntOverflow();
  return Value::Int(r);
}
Value SubInt(EvalContext&, const Value* a) {
  int64_t r;
  if (__builtin_sub_overflow(a[0].int_value(), a[1].int_value(), &r)) return IntOverflow();
  return Value::Int(r);
}
Value MulInt(EvalContext&, const Value* a) {
  int64_t r;
  if (__builtin_mul_overflow(a[0].int_value(), a[1].int_value(), &r)) return IntOverflow();
  return Value::Int(r);
}
Value DivInt(EvalContext&, const Value* a) {
  int64_t x = a[0].int_value(), y = a[1].int_value();
  if (y == 0) return StaticError(&kDivByZero);
  if (x == std::numeric_limits<int64_t>::min() && y == -1) return IntOverflow();
  return Value::Int(x / y);
}
Value ModInt(EvalContext&, const Value* a) {
  int64_t x = a[0].int_value(), y = a[1].int_value();
  if (y == 0) return StaticError(&kModByZero);
  if (x == std::numeric_limits<int64_t>::min() && y == -1) return IntOverflow();
  return Value::Int(x % y);
}
Value NegInt(EvalContext&, const Value* a) {
  if (a[0].int_value() == std::numeric_limits<int64_t>::min()) return IntOverflow();
  return Value::Int(-a[0].int_value());
}
Value AddUint(EvalContext&, const Value* a) {
  uint64_t r;
  if (__builtin_add_overflow(a[0].uint_value(), a[1].uint_value(), &r)) return UintOverflow();
  return Value::Uint(r);
}
Value SubUint(EvalContext&, const Value* a) {
  uint64_t r;
  if (__builtin_sub_overflow(a[0].uint_value(), a[1].uint_value(), &r)) return UintOverflow();
  return Value::Uint(r);
}
Value MulUint(EvalContext&, const Value* a) {
  uint64_t r;
  if (__builtin_mul_overflow(a[0].uint_value(), a[1].uint_value(), &r)) return UintOverflow();
  return Value::Uint(r);
}
Value DivUint(EvalContext&, const Value* a) {
  if (a[1].uint_value() == 0) return StaticError(&kDivByZero);
  return Value::Uint(a[0].uint_value() / a[1].uint_value());
}
Value ModUint(EvalContext&, const Value* a) {
  if (a[1].uint_value() == 0) return StaticError(&kModByZero);
  return Value::Uint(a[0].uint_value() % a[1].uint_value());
}
Value AddDouble(EvalContext&, const Value* a) {
  return Value::Double(a[0].double_value() + a[1].double_value());
}
Value SubDouble(EvalContext&, const Value* a) {
  return Value::Double(a[0].double_value() - a[1].double_value());
}
Value MulDouble(EvalContext&, const Value* a) {
  return Value::Double(a[0].double_value() * a[1].double_value());
}
Value DivDouble(EvalContext&, const Value* a) {
  return Value::Double(a[0].double_value() / a[1].double_value());
}
Value NegDouble(EvalContext&, const Value* a) { return Value::Double(-a[0].double_value()); }

Value Concat(EvalContext& ctx, const Value* a, bool bytes) {
  std::string_view x = a[0].string_value(), y = a[1].string_value();
  if (!internal::ChargeUpFront(ctx, TraversalCost(x.size() + y.size()))) {
    return EvalContext::CostLimitExceeded();
  }
  char* p = static_cast<char*>(ctx.arena->Allocate(x.size() + y.size() + 1, 1));
  if (p == nullptr || x.size() + y.size() > std::numeric_limits<uint32_t>::max()) {
    return MemoryLimitExceeded();
  }
  std::memcpy(p, x.data(), x.size());
  std::memcpy(p + x.size(), y.data(), y.size());
  std::string_view s(p, x.size() + y.size());
  return bytes ? Value::Bytes(s) : Value::String(s);
}
Value AddString(EvalContext& ctx, const Value* a) { return Concat(ctx, a, false); }
Value AddBytes(EvalContext& ctx, const Value* a) { return Concat(ctx, a, true); }
uint64_t CostConcat(const Value* a, size_t, const Value&) {
  return TraversalCost(CostSize(a[0]) + CostSize(a[1]));
}

Value AddList(EvalContext& ctx, const Value* a) {
  const ListValue& x = a[0].list();
  const ListValue& y = a[1].list();
  if (x.size == 0) return a[1];
  if (y.size == 0) return a[0];
  size_t n = size_t{x.size} + y.size;
  Value* elems = ctx.arena->NewArray<Value>(n);
  auto* list = ctx.arena->New<ListValue>();
  if (elems == nullptr || list == nullptr || n > std::numeric_limits<uint32_t>::max()) {
    return MemoryLimitExceeded();
  }
  std::memcpy(elems, x.elems, sizeof(Value) * x.size);
  std::memcpy(elems + x.size, y.elems, sizeof(Value) * y.size);
  list->elems = elems;
  list->size = static_cast<uint32_t>(n);
  return Value::List(list);
}

Value Not(EvalContext&, const Value* a) { return Value::Bool(!a[0].bool_value()); }

// --- size ---------------------------------------------------------------------------------------

Value SizeString(EvalContext&, const Value* a) {
  return Value::Int(static_cast<int64_t>(internal::CodePointCount(a[0].string_value())));
}
Value SizeBytes(EvalContext&, const Value* a) {
  return Value::Int(static_cast<int64_t>(a[0].string_value().size()));
}
Value SizeList(EvalContext&, const Value* a) { return Value::Int(a[0].list().size); }
Value SizeMap(EvalContext&, const Value* a) { return Value::Int(a[0].map().size()); }

// --- conversions ------------------------------------------------------------------------------

Value Identity(EvalContext&, const Value* a) { return a[0]; }

Value UintToInt(EvalContext&, const Value* a) {
  if (a[0].uint_value() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return IntOverflow();
  }
  return Value::Int(static_cast<int64_t>(a[0].uint_value()));
}
Value DoubleToInt(EvalContext&, const Value* a) {
  double d = a[0].double_value();
  // cel-go doubleToInt64Checked: both ends of the int64 range are excluded.
  if (!std::isfinite(d) || d <= -9223372036854775808.0 || d >= 9223372036854775807.0) {
    return IntOverflow();
  }
  return Value::Int(static_cast<int64_t>(d));
}
// Go strconv.ParseInt / ParseUint with base 10.
bool ParseGoInt(std::string_view s, bool is_unsigned, int64_t* si, uint64_t* ui) {
  if (s.empty()) return false;
  bool neg = false;
  size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    if (is_unsigned) return false;
    neg = s[0] == '-';
    i = 1;
  }
  if (i >= s.size()) return false;
  uint64_t mag = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (mag > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    mag = mag * 10 + d;
  }
  if (is_unsigned) {
    *ui = mag;
    return true;
  }
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (neg) {
    if (mag > kMax + 1) return false;
    *si = static_cast<int64_t>(0 - mag);
  } else {
    if (mag > kMax) return false;
    *si = static_cast<int64_t>(mag);
  }
  return true;
}
Value StringToInt(EvalContext& ctx, const Value* a) {
  int64_t v;
  uint64_t unused;
  if (!ParseGoInt(a[0].string_value(), false, &v, &unused)) {
    return Error(ctx, "strconv.ParseInt: parsing \"" + std::string(a[0].string_value()) +
                          "\": invalid syntax");
  }
  return Value::Int(v);
}
Value IntToUint(EvalContext&, const Value* a) {
  if (a[0].int_value() < 0) return UintOverflow();
  return Value::Uint(static_cast<uint64_t>(a[0].int_value()));
}
Value DoubleToUint(EvalContext&, const Value* a) {
  double d = a[0].double_value();
  if (!std::isfinite(d) || d < 0 || d >= 18446744073709551615.0) return UintOverflow();
  return Value::Uint(static_cast<uint64_t>(d));
}
Value StringToUint(EvalContext& ctx, const Value* a) {
  int64_t unused;
  uint64_t v;
  if (!ParseGoInt(a[0].string_value(), true, &unused, &v)) {
    return Error(ctx, "strconv.ParseUint: parsing \"" + std::string(a[0].string_value()) +
                          "\": invalid syntax");
  }
  return Value::Uint(v);
}
Value IntToDouble(EvalContext&, const Value* a) {
  return Value::Double(static_cast<double>(a[0].int_value()));
}
Value UintToDouble(EvalContext&, const Value* a) {
  return Value::Double(static_cast<double>(a[0].uint_value()));
}

// Go strconv.ParseFloat(s, 64): decimal and hexadecimal floats, "inf"/"infinity"/"nan" in any
// case with optional sign, underscores only between digits of prefixed numbers (not
// supported here: rejected).
bool ParseGoFloat(std::string_view s, double* out) {
  if (s.empty()) return false;
  std::string lower;
  for (char c : s) lower.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
  std::string_view body = lower;
  bool neg = false;
  if (body[0] == '+' || body[0] == '-') {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == "inf" || body == "infinity") {
    *out = neg ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  if (body == "nan") {
    *out = std::nan("");
    return lower[0] != '+' && lower[0] != '-';
  }
  for (char c : body) {
    bool ok = (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'x' || c == 'p' || c == '+' ||
              c == '-' || (c >= 'a' && c <= 'f');
    if (!ok) return false;
  }
  std::string str(s);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(str.c_str(), &end);
  if (end != str.c_str() + str.size()) return false;
  if (errno == ERANGE && std::isinf(v)) return false;
  *out = v;
  return true;
}
Value StringToDouble(EvalContext& ctx, const Value* a) {
  double d;
  if (!ParseGoFloat(a[0].string_value(), &d)) {
    return Error(ctx, "strconv.ParseFloat: parsing \"" + std::string(a[0].string_value()) +
                          "\": invalid syntax");
  }
  return Value::Double(d);
}

Value ToStringValue(EvalContext& ctx, const std::string& s) { return MakeString(ctx.arena, s); }
Value IntToString(EvalContext& ctx, const Value* a) {
  return ToStringValue(ctx, std::to_string(a[0].int_value()));
}
Value UintToString(EvalContext& ctx, const Value* a) {
  return ToStringValue(ctx, std::to_string(a[0].uint_value()));
}
Value DoubleToString(EvalContext& ctx, const Value* a) {
  return ToStringValue(ctx, FormatDouble(a[0].double_value()));
}
Value BoolToString(EvalContext&, const Value* a) {
  return Value::String(a[0].bool_value() ? "true" : "false");
}
Value BytesToString(EvalContext& ctx, const Value* a) {
  if (!internal::IsValidUtf8(a[0].string_value())) return Error(ctx, "invalid UTF-8 in bytes");
  return Value::String(a[0].string_value());
}
Value StringToBytes(EvalContext&, const Value* a) { return Value::Bytes(a[0].string_value()); }
Value StringToBool(EvalContext& ctx, const Value* a) {
  std::string_view s = a[0].string_value();
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" || s == "True") {
    return Value::Bool(true);
  }
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" || s == "False") {
    return Value::Bool(false);
  }
  return Error(ctx, "type conversion error from 'string' to 'bool'");
}
Value TypeOfValue(EvalContext&, const Value* a) { return Value::Type(TypeOf(a[0])); }

// --- strings --------------------------------------------------------------------------------

Value Contains(EvalContext&, const Value* a) {
  return Value::Bool(a[0].string_value().find(a[1].string_value()) != std::string_view::npos);
}
uint64_t CostContains(const Value* a, size_t, const Value&) {
  return TraversalCost(CostSize(a[0])) * TraversalCost(CostSize(a[1]));
}
Value StartsWith(EvalContext&, const Value* a) {
  std::string_view s = a[0].string_value(), p = a[1].string_value();
  return Value::Bool(s.size() >= p.size() && s.compare(0, p.size(), p) == 0);
}
Value EndsWith(EvalContext&, const Value* a) {
  std::string_view s = a[0].string_value(), p = a[1].string_value();
  return Value::Bool(s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0);
}
Value Matches(EvalContext& ctx, const Value* a) {
  std::string error;
  std::shared_ptr<const RE2> re = internal::CompileRegex(a[1].string_value(), &error);
  if (!re) return Error(ctx, error);
  return Value::Bool(RE2::PartialMatch(a[0].string_value(), *re));
}

}  // namespace

void RegisterStandardLibrary(FunctionRegistry& r) {
  const Type A = Type::Param("A");
  const Type B = Type::Param("B");
  const Type kBool = Type::Bool(), kInt = Type::Int(), kUint = Type::Uint(),
             kDouble = Type::Double(), kString = Type::String(), kBytes = Type::Bytes(),
             kTs = Type::Timestamp(), kDur = Type::Duration();
  const Type list_a = Type::List(A);
  const Type map_ab = Type::Map(A, B);

  // Operators evaluated natively by the planner.
  Native(r, "_?_:_", "conditional", false, {kBool, A, A}, A);
  Native(r, "_&&_", "logical_and", false, {kBool, kBool}, kBool);
  Native(r, "_||_", "logical_or", false, {kBool, kBool}, kBool);
  Native(r, "@not_strictly_false", "not_strictly_false", false, {kBool}, kBool);
  Native(r, "_==_", "equals", false, {A, A}, kBool);
  Native(r, "_!=_", "not_equals", false, {A, A}, kBool);
  Native(r, "@in", "in_list", false, {A, list_a}, kBool);
  Native(r, "@in", "in_map", false, {A, map_ab}, kBool);
  Native(r, "_[_]", "index_list", false, {list_a, kInt}, A);
  Native(r, "_[_]", "index_map", false, {map_ab, A}, B);

  // Relations (cel-go declares cross-type numeric overloads with CrossTypeNumericComparisons).
  struct RelOp {
    const char* fn;
    const char* prefix;
  };
  const RelOp rel_ops[] = {
      {"_<_", "less"}, {"_<=_", "less_equals"}, {"_>_", "greater"}, {"_>=_", "greater_equals"}};
  for (const RelOp& op : rel_ops) {
    std::string p = op.prefix;
    Native(r, op.fn, p + "_bool", false, {kBool, kBool}, kBool);
    Native(r, op.fn, p + "_int64", false, {kInt, kInt}, kBool);
    Native(r, op.fn, p + "_int64_double", false, {kInt, kDouble}, kBool);
    Native(r, op.fn, p + "_int64_uint64", false, {kInt, kUint}, kBool);
    Native(r, op.fn, p + "_uint64", false, {kUint, kUint}, kBool);
    Native(r, op.fn, p + "_uint64_double", false, {kUint, kDouble}, kBool);
    Native(r, op.fn, p + "_uint64_int64", false, {kUint, kInt}, kBool);
    Native(r, op.fn, p + "_double", false, {kDouble, kDouble}, kBool);
    Native(r, op.fn, p + "_double_int64", false, {kDouble, kInt}, kBool);
    Native(r, op.fn, p + "_double_uint64", false, {kDouble, kUint}, kBool);
    Native(r, op.fn, p + "_string", false, {kString, kString}, kBool);
    Native(r, op.fn, p + "_bytes", false, {kBytes, kBytes}, kBool);
    Native(r, op.fn, p + "_timestamp", false, {kTs, kTs}, kBool);
    Native(r, op.fn, p + "_duration", false, {kDur, kDur}, kBool);
  }

  Global(r, "!_", "logical_not", {kBool}, kBool, Not);
  Global(r, "-_", "negate_int64", {kInt}, kInt, NegInt);
  Global(r, "-_", "negate_double", {kDouble}, kDouble, NegDouble);

  Global(r, "_+_", "add_bytes", {kBytes, kBytes}, kBytes, AddBytes, CostConcat);
  Global(r, "_+_", "add_double", {kDouble, kDouble}, kDouble, AddDouble);
  Global(r, "_+_", "add_int64", {kInt, kInt}, kInt, AddInt);
  Global(r, "_+_", "add_list", {list_a, list_a}, list_a, AddList);
  Global(r, "_+_", "add_string", {kString, kString}, kString, AddString, CostConcat);
  Global(r, "_+_", "add_uint64", {kUint, kUint}, kUint, AddUint);
  Global(r, "_/_", "divide_double", {kDouble, kDouble}, kDouble, DivDouble);
  Global(r, "_/_", "divide_int64", {kInt, kInt}, kInt, DivInt);
  Global(r, "_/_", "divide_uint64", {kUint, kUint}, kUint, DivUint);
  Global(r, "_%_", "modulo_int64", {kInt, kInt}, kInt, ModInt);
  Global(r, "_%_", "modulo_uint64", {kUint, kUint}, kUint, ModUint);
  Global(r, "_*_", "multiply_double", {kDouble, kDouble}, kDouble, MulDouble);
  Global(r, "_*_", "multiply_int64", {kInt, kInt}, kInt, MulInt);
  Global(r, "_*_", "multiply_uint64", {kUint, kUint}, kUint, MulUint);
  Global(r, "_-_", "subtract_double", {kDouble, kDouble}, kDouble, SubDouble);
  Global(r, "_-_", "subtract_int64", {kInt, kInt}, kInt, SubInt);
  Global(r, "_-_", "subtract_uint64", {kUint, kUint}, kUint, SubUint);

  Global(r, "size", "size_bytes", {kBytes}, kInt, SizeBytes);
  Member(r, "size", "bytes_size", {kBytes}, kInt, SizeBytes);
  Global(r, "size", "size_list", {list_a}, kInt, SizeList);
  Member(r, "size", "list_size", {list_a}, kInt, SizeList);
  Global(r, "size", "size_map", {map_ab}, kInt, SizeMap);
  Member(r, "size", "map_size", {map_ab}, kInt, SizeMap);
  Global(r, "size", "size_string", {kString}, kInt, SizeString);
  Member(r, "size", "string_size", {kString}, kInt, SizeString);

  Global(r, "type", "type", {A}, Type::TypeOf(A), TypeOfValue);
  Global(r, "dyn", "to_dyn", {A}, Type::Dyn(), Identity);

  Global(r, "bool", "bool_to_bool", {kBool}, kBool, Identity);
  Global(r, "bool", "string_to_bool", {kString}, kBool, StringToBool);
  Global(r, "bytes", "bytes_to_bytes", {kBytes}, kBytes, Identity);
  Global(r, "bytes", "string_to_bytes", {kString}, kBytes, StringToBytes,
         internal::CostTraverseArg0);
  Global(r, "double", "double_to_double", {kDouble}, kDouble, Identity);
  Global(r, "double", "int64_to_double", {kInt}, kDouble, IntToDouble);
  Global(r, "double", "string_to_double", {kString}, kDouble, StringToDouble);
  Global(r, "double", "uint64_to_double", {kUint}, kDouble, UintToDouble);
  Global(r, "int", "int64_to_int64", {kInt}, kInt, Identity);
  Global(r, "int", "double_to_int64", {kDouble}, kInt, DoubleToInt);
  Global(r, "int", "string_to_int64", {kString}, kInt, StringToInt);
  Global(r, "int", "uint64_to_int64", {kUint}, kInt, UintToInt);
  Global(r, "string", "string_to_string", {kString}, kString, Identity);
  Global(r, "string", "bool_to_string", {kBool}, kString, BoolToString);
  Global(r, "string", "bytes_to_string", {kBytes}, kString, BytesToString,
         internal::CostTraverseArg0);
  Global(r, "string", "double_to_string", {kDouble}, kString, DoubleToString);
  Global(r, "string", "int64_to_string", {kInt}, kString, IntToString);
  Global(r, "string", "uint64_to_string", {kUint}, kString, UintToString);
  Global(r, "uint", "uint64_to_uint64", {kUint}, kUint, Identity);
  Global(r, "uint", "double_to_uint64", {kDouble}, kUint, DoubleToUint);
  Global(r, "uint", "int64_to_uint64", {kInt}, kUint, IntToUint);
  Global(r, "uint", "string_to_uint64", {kString}, kUint, StringToUint);

  Member(r, "contains", "contains_string", {kString, kString}, kBool, Contains, CostContains);
  Member(r, "endsWith", "ends_with_string", {kString, kString}, kBool, EndsWith,
         internal::CostTraverseArg0);
  Member(r, "startsWith", "starts_with_string", {kString, kString}, kBool, StartsWith,
         internal::CostTraverseArg0);
  Global(r, "matches", "matches", {kString, kString}, kBool, Matches, internal::CostRegex);
  Member(r, "matches", "matches_string", {kString, kString}, kBool, Matches, internal::CostRegex);

  internal::RegisterTimeFunctions(r);
}

std::vector<VariableDecl> TypeIdentifiers() {
  const Type A = Type::Param("A");
  const Type B = Type::Param("B");
  return {
      {"bool", Type::TypeOf(Type::Bool())},
      {"bytes", Type::TypeOf(Type::Bytes())},
      {"double", Type::TypeOf(Type::Double())},
      {"google.protobuf.Duration", Type::TypeOf(Type::Duration())},
      {"int", Type::TypeOf(Type::Int())},
      {"list", Type::TypeOf(Type::List(A))},
      {"map", Type::TypeOf(Type::Map(A, B))},
      {"null_type", Type::TypeOf(Type::Null())},
      {"string", Type::TypeOf(Type::String())},
      {"google.protobuf.Timestamp", Type::TypeOf(Type::Timestamp())},
      {"type", Type::TypeOf(Type::TypeType())},
      {"uint", Type::TypeOf(Type::Uint())},
      {"optional_type", Type::TypeOf(Type::Optional(A))},
      {"kubernetes.Quantity", Type::TypeOf(Type::Opaque("kubernetes.Quantity"))},
      {"kubernetes.Semver", Type::TypeOf(Type::Opaque("kubernetes.Semver"))},
      {"kubernetes.URL", Type::TypeOf(Type::Opaque("kubernetes.URL"))},
      {"net.IP", Type::TypeOf(Type::Opaque("net.IP"))},
      {"net.CIDR", Type::TypeOf(Type::Opaque("net.CIDR"))},
  };
}

}  // namespace draplane::cel
