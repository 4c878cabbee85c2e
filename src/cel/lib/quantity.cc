// Kubernetes quantity library (apiserver pkg/cel/library/quantity.go and pkg/cel/quantity.go),
// rewritten over api::Quantity.
#include "cel/lib/quantity.h"

#include <limits>
#include <string>

#include "cel/lib/helpers.h"
#include "cel/lib/library.h"
#include "cel/runtime/opaque_values.h"

namespace draplane::cel {

namespace internal {
namespace {

bool MulOverflow(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

// apimachinery positiveScaleInt64: base * 10^scale, false on overflow.
bool PositiveScale(int64_t base, int32_t scale, int64_t* out) {
  int64_t v = base;
  for (int32_t i = 0; i < scale; ++i) {
    if (MulOverflow(v, 10, &v)) return false;
  }
  *out = v;
  return true;
}

// Re-derives upstream ParseQuantity's fast path: the int64Amount{value, scale} it produces, or
// false when upstream takes the inf.Dec slow path.
bool UpstreamInt64Amount(std::string_view str, int64_t* value, int32_t* scale) {
  if (str.empty()) return false;
  if (str == "0") {
    *value = 0;
    *scale = 0;
    return true;
  }
  size_t pos = 0, end = str.size();
  bool positive = true;
  if (str[0] == '-' || str[0] == '+') {
    positive = str[0] != '-';
    ++pos;
  }
  while (pos < end && str[pos] == '0') ++pos;
  if (pos >= end) {
    *value = 0;
    *scale = 0;
    return true;
  }
  size_t num_start = pos;
  while (pos < end && str[pos] >= '0' && str[pos] <= '9') ++pos;
  std::string num(str.substr(num_start, pos - num_start));
  if (num.empty()) num = "0";
  std::string denom;
  if (pos < end && str[pos] == '.') {
    ++pos;
    size_t d = pos;
    while (pos < end && str[pos] >= '0' && str[pos] <= '9') ++pos;
    denom = std::string(str.substr(d, pos - d));
  }
  std::string_view suffix = str.substr(pos);
  // Suffix interpretation (apimachinery suffix.go).
  bool binary = false;
  int32_t exponent = 0;
  static constexpr std::pair<std::string_view, int32_t> kDecimal[] = {
      {"", 0},  {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3},
      {"M", 6}, {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::pair<std::string_view, int32_t> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  bool known = false;
  for (const auto& [s, e] : kDecimal) {
    if (suffix == s) {
      exponent = e;
      known = true;
    }
  }
  for (const auto& [s, e] : kBinary) {
    if (suffix == s) {
      exponent = e;
      binary = true;
      known = true;
    }
  }
  if (!known) {
    if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return false;
    int64_t e = 0;
    size_t i = 1;
    bool neg = false;
    if (suffix[i] == '-' || suffix[i] == '+') {
      neg = suffix[i] == '-';
      ++i;
    }
    if (i >= suffix.size()) return false;
    for (; i < suffix.size(); ++i) {
      if (suffix[i] < '0' || suffix[i] > '9') return false;
      e = e * 10 + (suffix[i] - '0');
      if (e > std::numeric_limits<int32_t>::max()) return false;
    }
    exponent = static_cast<int32_t>(neg ? -e : e);
  }
  int64_t precision;
  int64_t sc = 0;
  int64_t mantissa = 1;
  if (!binary) {
    sc = exponent;
    precision = 18 - static_cast<int64_t>(num.size() + denom.size());
  } else if (exponent >= 0 && denom.empty()) {
    mantissa = int64_t{1} << exponent;
    precision = 15 - static_cast<int64_t>(num.size()) -
                static_cast<int64_t>(static_cast<float>(exponent) * 3 / 10) - 1;
  } else {
    precision = -1;
  }
  if (precision < 0) return false;
  sc -= static_cast<int64_t>(denom.size());
  if (sc < -9) return false;
  std::string shifted = num + denom;
  int64_t v = 0;
  for (char c : shifted) {
    if (MulOverflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) return false;
  }
  int64_t result;
  if (MulOverflow(v, mantissa, &result)) return false;
  *value = positive ? result : -result;
  *scale = static_cast<int32_t>(sc);
  return true;
}

void FillNanos(QuantityValue* v) {
  // value * 10^9 = mantissa * 10^(scale + 9), exact while it stays below 2^100.
  api::Int128 m = v->quantity.mantissa();
  int64_t e = int64_t{v->quantity.scale()} + 9;
  v->has_nanos = false;
  if (e < 0) return;
  api::Int128 limit = api::Int128{1} << 100;
  api::Int128 n = m;
  for (int64_t i = 0; i < e; ++i) {
    if (n > limit / 10 || n < -limit / 10) return;
    n *= 10;
  }
  v->nanos = n;
  v->has_nanos = true;
}

}  // namespace

QuantityValue MakeQuantityValue(const api::Quantity& q) {
  QuantityValue v;
  v.quantity = q;
  if (!q.original_text().empty()) {
    v.int64_amount = UpstreamInt64Amount(q.original_text(), &v.amount_value, &v.amount_scale);
  } else {
    api::Int128 m = q.mantissa();
    if (m >= std::numeric_limits<int64_t>::min() && m <= std::numeric_limits<int64_t>::max() &&
        q.scale() >= -9) {
      v.int64_amount = true;
      v.amount_value = static_cast<int64_t>(m);
      v.amount_scale = q.scale();
    }
  }
  FillNanos(&v);
  return v;
}

StatusOr<QuantityValue> ParseQuantityValue(std::string_view text) {
  StatusOr<api::Quantity> q = api::Quantity::Parse(text);
  if (!q.ok()) return q.status();
  return MakeQuantityValue(*q);
}

}  // namespace internal

int CompareQuantity(const QuantityValue& a, const QuantityValue& b) {
  if (a.has_nanos && b.has_nanos) return a.nanos < b.nanos ? -1 : (a.nanos > b.nanos ? 1 : 0);
  return a.quantity.Compare(b.quantity);
}

namespace {

using internal::Error;
using internal::Global;
using internal::Member;

Value NewQuantity(EvalContext& ctx, QuantityValue q) {
  auto* p = ctx.arena->New<QuantityValue>(std::move(q));
  if (p == nullptr) return MemoryLimitExceeded();
  return Value::Quantity(p);
}

Value StringToQuantity(EvalContext& ctx, const Value* a) {
  StatusOr<QuantityValue> q = internal::ParseQuantityValue(a[0].string_value());
  if (!q.ok()) return Error(ctx, q.status().message());
  return NewQuantity(ctx, std::move(*q));
}
Value IsQuantity(EvalContext&, const Value* a) {
  return Value::Bool(api::Quantity::Parse(a[0].string_value()).ok());
}
Value Sign(EvalContext&, const Value* a) { return Value::Int(a[0].quantity().quantity.Sign()); }
Value IsGreaterThan(EvalContext&, const Value* a) {
  return Value::Bool(CompareQuantity(a[0].quantity(), a[1].quantity()) == 1);
}
Value IsLessThan(EvalContext&, const Value* a) {
  return Value::Bool(CompareQuantity(a[0].quantity(), a[1].quantity()) == -1);
}
Value CompareTo(EvalContext&, const Value* a) {
  return Value::Int(CompareQuantity(a[0].quantity(), a[1].quantity()));
}
Value AsApproximateFloat(EvalContext&, const Value* a) {
  return Value::Double(a[0].quantity().quantity.AsApproximateDouble());
}
Value IsInteger(EvalContext&, const Value* a) {
  const QuantityValue& q = a[0].quantity();
  int64_t unused;
  return Value::Bool(q.int64_amount && q.amount_scale >= 0 &&
                     internal::PositiveScale(q.amount_value, q.amount_scale, &unused));
}
Value AsInteger(EvalContext& ctx, const Value* a) {
  const QuantityValue& q = a[0].quantity();
  int64_t v;
  if (!q.int64_amount || q.amount_scale < 0 ||
      !internal::PositiveScale(q.amount_value, q.amount_scale, &v)) {
    return Error(ctx, "cannot convert value to integer");
  }
  return Value::Int(v);
}

// apimachinery int64Amount.Add: aligns to the smaller scale; false on overflow.
bool AmountAdd(int64_t av, int32_t as, int64_t bv, int32_t bs, int64_t* rv, int32_t* rs) {
  if (bv == 0) {
    *rv = av;
    *rs = as;
    return true;
  }
  if (av == 0) {
    *rv = bv;
    *rs = bs;
    return true;
  }
  if (as == bs) {
    *rs = as;
    return !__builtin_add_overflow(av, bv, rv);
  }
  int64_t c;
  if (as > bs) {
    if (!internal::PositiveScale(av, as - bs, &c)) return false;
    *rs = bs;
    return !__builtin_add_overflow(c, bv, rv);
  }
  if (!internal::PositiveScale(bv, bs - as, &c)) return false;
  *rs = as;
  return !__builtin_add_overflow(av, c, rv);
}

Value Arith(EvalContext& ctx, const QuantityValue& a, const QuantityValue& b, bool subtract) {
  StatusOr<api::Quantity> sum =
      subtract ? a.quantity.CheckedSub(b.quantity) : a.quantity.CheckedAdd(b.quantity);
  if (!sum.ok()) return Error(ctx, sum.status().message());
  QuantityValue r;
  r.quantity = std::move(*sum);
  if (a.int64_amount && b.int64_amount) {
    int64_t bv = b.amount_value;
    bool ok = true;
    if (subtract) {
      if (bv == std::numeric_limits<int64_t>::min()) ok = false;
      bv = -bv;
    }
    r.int64_amount = ok && AmountAdd(a.amount_value, a.amount_scale, bv, b.amount_scale,
                                     &r.amount_value, &r.amount_scale);
  }
  internal::FillNanos(&r);
  return NewQuantity(ctx, std::move(r));
}
QuantityValue FromInt(int64_t i) {
  QuantityValue q = internal::MakeQuantityValue(
      api::Quantity::FromInt64(i, api::Quantity::Format::kDecimalExponent));
  q.int64_amount = true;
  q.amount_value = i;
  q.amount_scale = 0;
  return q;
}
Value Add(EvalContext& ctx, const Value* a) {
  return Arith(ctx, a[0].quantity(), a[1].quantity(), false);
}
Value AddInt(EvalContext& ctx, const Value* a) {
  return Arith(ctx, a[0].quantity(), FromInt(a[1].int_value()), false);
}
Value Sub(EvalContext& ctx, const Value* a) {
  return Arith(ctx, a[0].quantity(), a[1].quantity(), true);
}
Value SubInt(EvalContext& ctx, const Value* a) {
  return Arith(ctx, a[0].quantity(), FromInt(a[1].int_value()), true);
}

}  // namespace

void RegisterQuantityLibrary(FunctionRegistry& r) {
  const Type Q = Type::Opaque("kubernetes.Quantity");
  const Type S = Type::String(), I = Type::Int(), B = Type::Bool();
  using internal::CostTraverseArg0;
  Global(r, "quantity", "string_to_quantity", {S}, Q, StringToQuantity, CostTraverseArg0);
  Global(r, "isQuantity", "is_quantity_string", {S}, B, IsQuantity, CostTraverseArg0);
  Global(r, "sign", "quantity_sign", {Q}, I, Sign);
  Member(r, "isGreaterThan", "quantity_is_greater_than", {Q, Q}, B, IsGreaterThan);
  Member(r, "isLessThan", "quantity_is_less_than", {Q, Q}, B, IsLessThan);
  Member(r, "compareTo", "quantity_compare_to", {Q, Q}, I, CompareTo);
  Member(r, "asApproximateFloat", "quantity_get_float", {Q}, Type::Double(), AsApproximateFloat);
  Member(r, "asInteger", "quantity_get_int", {Q}, I, AsInteger);
  Member(r, "isInteger", "quantity_is_integer", {Q}, B, IsInteger);
  Member(r, "add", "quantity_add", {Q, Q}, Q, Add);
  Member(r, "add", "quantity_add_int", {Q, I}, Q, AddInt);
  Member(r, "sub", "quantity_sub", {Q, Q}, Q, Sub);
  Member(r, "sub", "quantity_sub_int", {Q, I}, Q, SubInt);
}

}  // namespace draplane::cel
