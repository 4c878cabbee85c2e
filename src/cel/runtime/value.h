// CEL runtime values.
//
// A `Value` is a 16-byte, trivially copyable tagged union: scalars are stored inline; strings,
// bytes, lists, maps, optionals, errors and library objects are non-owning pointers into memory
// that outlives the evaluation that sees them (an `Arena`, a compiled `Program`'s constants, a
// `DeviceInput`, or an `Activation`). Errors are values (cel-go `types.Err`), propagated by the
// evaluator and absorbed by `&&`, `||` and `?:` as the language defines.
//
// Kinds follow cel-spec (`doc/langdef.md`, "Values") plus the Kubernetes library types:
// kubernetes.Quantity, kubernetes.Semver, net.IP, net.CIDR, kubernetes.URL.
//
// Thread-safety: values are immutable; what they point to must not be mutated while shared.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace draplane::cel {

class Arena;
struct ListValue;
class MapValue;
struct TypeValue;
struct ErrorValue;
struct QuantityValue;
struct SemverValue;
struct IPValue;
struct CIDRValue;
struct URLValue;

enum class ValueKind : uint8_t {
  kNull,
  kBool,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kList,
  kMap,
  kType,
  kOptional,
  kTimestamp,
  kDuration,
  kQuantity,
  kSemver,
  kIP,
  kCIDR,
  kURL,
  kError,
};

class Value {
 public:
  constexpr Value() : kind_(ValueKind::kNull), origin_hi_(0), origin_lo_(0), aux_(0), u_{.i = 0} {}

  static constexpr Value Null() { return Value(); }
  static constexpr Value Bool(bool b) { return Value(ValueKind::kBool, 0, b ? 1 : 0); }
  static constexpr Value Int(int64_t i) { return Value(ValueKind::kInt, 0, i); }
  static constexpr Value Uint(uint64_t u) {
    Value v(ValueKind::kUint, 0, 0);
    v.u_.u = u;
    return v;
  }
  static constexpr Value Double(double d) {
    Value v(ValueKind::kDouble, 0, 0);
    v.u_.d = d;
    return v;
  }
  // Precondition: s.size() < 2^32. The bytes must outlive every use of the value.
  static Value String(std::string_view s) { return View(ValueKind::kString, s); }
  static Value Bytes(std::string_view s) { return View(ValueKind::kBytes, s); }
  static Value List(const ListValue* l) { return Ptr(ValueKind::kList, l); }
  static Value Map(const MapValue* m) { return Ptr(ValueKind::kMap, m); }
  static Value Type(const TypeValue* t) { return Ptr(ValueKind::kType, t); }
  // `inner` null means optional.none().
  static Value Optional(const Value* inner) { return Ptr(ValueKind::kOptional, inner); }
  static Value Error(const ErrorValue* e) { return Ptr(ValueKind::kError, e); }
  static Value Timestamp(int64_t seconds, int32_t nanos) {
    Value v(ValueKind::kTimestamp, static_cast<uint32_t>(nanos), seconds);
    return v;
  }
  // A duration in nanoseconds (Go time.Duration, as cel-go uses).
  static Value Duration(int64_t nanos) { return Value(ValueKind::kDuration, 0, nanos); }
  static Value Quantity(const QuantityValue* q) { return Ptr(ValueKind::kQuantity, q); }
  static Value Semver(const SemverValue* s) { return Ptr(ValueKind::kSemver, s); }
  static Value IP(const IPValue* ip) { return Ptr(ValueKind::kIP, ip); }
  static Value CIDR(const CIDRValue* c) { return Ptr(ValueKind::kCIDR, c); }
  static Value URL(const URLValue* u) { return Ptr(ValueKind::kURL, u); }

  ValueKind kind() const { return kind_; }
  bool IsError() const { return kind_ == ValueKind::kError; }

  // A list-typed device attribute read as a scalar (Kubernetes 1.37 list attribute semantics) is
  // its first element, marked with where the whole list lives so that `asList()` can return it
  // (DeviceInput::ListAttribute). 0: not such a value. The mark rides along with copies of the
  // value; nothing but `asList()` looks at it, and values computed from it do not carry it.
  uint32_t list_origin() const { return (uint32_t{origin_hi_} << 16) | origin_lo_; }
  Value WithListOrigin(uint32_t origin) const {
    Value v = *this;
    v.origin_hi_ = static_cast<uint8_t>(origin >> 16);
    v.origin_lo_ = static_cast<uint16_t>(origin);
    return v;
  }
  // The largest origin a value can carry.
  static constexpr uint32_t kMaxListOrigin = (uint32_t{1} << 24) - 1;
  bool IsBool() const { return kind_ == ValueKind::kBool; }
  bool IsTrue() const { return kind_ == ValueKind::kBool && u_.i != 0; }
  bool IsFalse() const { return kind_ == ValueKind::kBool && u_.i == 0; }

  bool bool_value() const { return u_.i != 0; }
  int64_t int_value() const { return u_.i; }
  uint64_t uint_value() const { return u_.u; }
  double double_value() const { return u_.d; }
  // Strings and bytes.
  std::string_view string_value() const { return std::string_view(u_.s, aux_); }
  const ListValue& list() const { return *static_cast<const ListValue*>(u_.p); }
  const MapValue& map() const { return *static_cast<const MapValue*>(u_.p); }
  const TypeValue& type() const { return *static_cast<const TypeValue*>(u_.p); }
  const ErrorValue& error() const { return *static_cast<const ErrorValue*>(u_.p); }
  bool optional_has_value() const { return u_.p != nullptr; }
  const Value& optional_value() const { return *static_cast<const Value*>(u_.p); }
  // Timestamps: seconds since the Unix epoch and nanoseconds [0, 1e9).
  int64_t seconds() const { return u_.i; }
  int32_t nanos() const { return static_cast<int32_t>(aux_); }
  // Durations: nanoseconds.
  int64_t duration_nanos() const { return u_.i; }
  const QuantityValue& quantity() const { return *static_cast<const QuantityValue*>(u_.p); }
  const SemverValue& semver() const { return *static_cast<const SemverValue*>(u_.p); }
  const IPValue& ip() const { return *static_cast<const IPValue*>(u_.p); }
  const CIDRValue& cidr() const { return *static_cast<const CIDRValue*>(u_.p); }
  const URLValue& url() const { return *static_cast<const URLValue*>(u_.p); }

 private:
  constexpr Value(ValueKind k, uint32_t aux, int64_t i)
      : kind_(k), origin_hi_(0), origin_lo_(0), aux_(aux), u_{.i = i} {}
  static Value View(ValueKind k, std::string_view s) {
    Value v(k, static_cast<uint32_t>(s.size()), 0);
    v.u_.s = s.data();
    return v;
  }
  static Value Ptr(ValueKind k, const void* p) {
    Value v(k, 0, 0);
    v.u_.p = p;
    return v;
  }

  ValueKind kind_;
  // list_origin(), in what would otherwise be padding.
  uint8_t origin_hi_;
  uint16_t origin_lo_;
  uint32_t aux_;
  union {
    int64_t i;
    uint64_t u;
    double d;
    const char* s;
    const void* p;
  } u_;
};
static_assert(sizeof(Value) == 16);
static_assert(std::is_trivially_copyable_v<Value>);

// An immutable list.
struct ListValue {
  const Value* elems = nullptr;
  uint32_t size = 0;
};

struct MapEntryValue {
  Value key;
  Value value;
};

// An immutable map with CEL key semantics: keys are bool, int, uint or string; int and uint keys
// (and integral doubles used for lookup) match numerically across types. Entries keep insertion
// order for iteration; maps above a small size carry an open-addressing hash index.
class MapValue {
 public:
  MapValue() = default;
  // Takes entries (unique keys, validated) and builds the index in `arena` when large. Returns
  // false when the index cannot be allocated.
  bool Init(const MapEntryValue* entries, uint32_t size, Arena* arena);

  uint32_t size() const { return size_; }
  const MapEntryValue* entries() const { return entries_; }
  // The value stored under `key`, or nullptr. Keys of other kinds (null, double that is not
  // integral, lists, ...) are simply not found.
  const Value* Find(const Value& key) const;
  const Value* FindString(std::string_view key) const;

  // For maps under construction only (comprehension accumulators): appends `entry`, whose key
  // must not be present, to `storage`, the array this map reads its entries from, which must
  // have room for size() + 1 entries. Keeps the index current (amortised O(1)). False when the
  // arena budget is exhausted.
  bool AppendUnique(MapEntryValue* storage, const MapEntryValue& entry, Arena* arena);

  // device.attributes / device.capacity: a lookup of a missing key yields an empty map
  // (dynamic-resource-allocation cel/compile.go `newStringInterfaceMapWithDefault`), while
  // `in`, size() and iteration see only the real entries.
  bool default_empty() const { return default_empty_; }
  void set_default_empty(bool v) { default_empty_ = v; }

 private:
  const MapEntryValue* entries_ = nullptr;
  uint32_t size_ = 0;
  uint32_t index_mask_ = 0;          // capacity - 1 of `index_`, 0 when unindexed
  const uint32_t* index_ = nullptr;  // entry index + 1, 0 = empty slot
  bool default_empty_ = false;
};

// A type value (`type(x)`, `int`, `list`, ...). Instances are interned: compare pointers.
struct TypeValue {
  std::string_view name;
};

// The well-known type values.
namespace types {
const TypeValue* NullType();
const TypeValue* BoolType();
const TypeValue* IntType();
const TypeValue* UintType();
const TypeValue* DoubleType();
const TypeValue* StringType();
const TypeValue* BytesType();
const TypeValue* ListType();
const TypeValue* MapType();
const TypeValue* TypeType();
const TypeValue* OptionalType();
const TypeValue* TimestampType();
const TypeValue* DurationType();
const TypeValue* QuantityType();
const TypeValue* SemverType();
const TypeValue* IPType();
const TypeValue* CIDRType();
const TypeValue* URLType();
// The type value named `name` ("int", "list", "google.protobuf.Timestamp", ...), or nullptr.
const TypeValue* FindType(std::string_view name);
}  // namespace types

// The runtime type of a value (`type(v)`); nullptr for errors.
const TypeValue* TypeOf(const Value& v);

struct ErrorValue {
  std::string_view message;
};

// ---------------------------------------------------------------------------------------------
// Helpers that create values in an arena. On budget exhaustion they return the error value
// "memory limit exceeded" (never null).
// ---------------------------------------------------------------------------------------------

Value MakeError(Arena* arena, std::string_view message);
// A static error value for `message`, which must have static storage duration.
Value StaticError(const ErrorValue* error);
Value MakeString(Arena* arena, std::string_view s);
Value MakeBytes(Arena* arena, std::string_view s);
Value MakeOptional(Arena* arena, const Value& inner);
// A list of `n` elements copied from `elems`.
Value MakeList(Arena* arena, const Value* elems, size_t n);
// A map from `n` entries; later duplicates replace earlier ones (cel-go keeps the last value).
// Keys must be bool, int, uint or string, else the error "unsupported key type".
Value MakeMap(Arena* arena, const MapEntryValue* entries, size_t n);
Value OptionalNone();

// Common errors (cel-go texts).
Value NoSuchOverload();
Value NoSuchKey(Arena* arena, const Value& key);
Value MemoryLimitExceeded();

// ---------------------------------------------------------------------------------------------
// Equality and ordering with CEL semantics.
// ---------------------------------------------------------------------------------------------

// Heterogeneous runtime equality (cel-go `types.Equal`): numbers compare across int, uint and
// double; lists and maps element-wise; values of different kinds are unequal; library objects
// (Quantity, Semver, ...) compared with another kind give "no such overload" unless the other
// side is null. Returns a bool value or an error value.
Value Equal(const Value& a, const Value& b);

// Three-way comparison for `<`, `<=`, `>`, `>=`: -1, 0, 1, or 2 when the kinds are not
// comparable ("no such overload") or a double is NaN (3: unordered).
int Compare(const Value& a, const Value& b);
inline constexpr int kIncomparable = 2;
inline constexpr int kUnordered = 3;

// Renders a value in CEL literal syntax (strings quoted, `1u`, `b"..."`, `[1, 2]`,
// `{"a": 1}`, `quantity("1Gi")`, `optional.of(1)`, `int`), as `draplane cel eval` prints it.
std::string FormatValue(const Value& v);

// Go's `fmt.Sprintf("%g", d)`, which cel-go's `string(double)` uses: the shortest digits that
// round-trip, in exponent form when the decimal exponent is < -4 or >= 6 ("1e+06", "100000",
// "1e-05", "+Inf", "NaN").
std::string FormatDouble(double d);

// Byte equality of two strings of equal length `n`, inlined for the short strings selectors
// compare (driver names, attribute values): overlapping 8-byte loads instead of a memcmp call.
inline bool BytesEqual(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    if (n > 16) return std::memcmp(a, b, n) == 0;
    uint64_t x0, y0, x1, y1;
    std::memcpy(&x0, a, 8);
    std::memcpy(&y0, b, 8);
    std::memcpy(&x1, a + n - 8, 8);
    std::memcpy(&y1, b + n - 8, 8);
    return ((x0 ^ y0) | (x1 ^ y1)) == 0;
  }
  if (n >= 4) {
    uint32_t x0, y0, x1, y1;
    std::memcpy(&x0, a, 4);
    std::memcpy(&y0, b, 4);
    std::memcpy(&x1, a + n - 4, 4);
    std::memcpy(&y1, b + n - 4, 4);
    return ((x0 ^ y0) | (x1 ^ y1)) == 0;
  }
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}
inline bool StringsEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && BytesEqual(a.data(), b.data(), a.size());
}

// The error text of an error value.
inline std::string_view ErrorMessage(const Value& v) { return v.error().message; }

}  // namespace draplane::cel
