#include "cel/runtime/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "cel/internal/utf8.h"
#include "cel/runtime/arena.h"
#include "cel/runtime/opaque_values.h"
#include "cel/runtime/time_format.h"

namespace draplane::cel {

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

namespace types {
namespace {
constexpr TypeValue kNull{"null_type"};
constexpr TypeValue kBool{"bool"};
constexpr TypeValue kInt{"int"};
constexpr TypeValue kUint{"uint"};
constexpr TypeValue kDouble{"double"};
constexpr TypeValue kString{"string"};
constexpr TypeValue kBytes{"bytes"};
constexpr TypeValue kList{"list"};
constexpr TypeValue kMap{"map"};
constexpr TypeValue kType{"type"};
constexpr TypeValue kOptional{"optional_type"};
constexpr TypeValue kTimestamp{"google.protobuf.Timestamp"};
constexpr TypeValue kDuration{"google.protobuf.Duration"};
constexpr TypeValue kQuantity{"kubernetes.Quantity"};
constexpr TypeValue kSemver{"kubernetes.Semver"};
constexpr TypeValue kIP{"net.IP"};
constexpr TypeValue kCIDR{"net.CIDR"};
constexpr TypeValue kURL{"kubernetes.URL"};
constexpr const TypeValue* kAll[] = {
    &kNull, &kBool,     &kInt,       &kUint,     &kDouble,   &kString, &kBytes, &kList, &kMap,
    &kType, &kOptional, &kTimestamp, &kDuration, &kQuantity, &kSemver, &kIP,    &kCIDR, &kURL};
}  // namespace

const TypeValue* NullType() { return &kNull; }
const TypeValue* BoolType() { return &kBool; }
const TypeValue* IntType() { return &kInt; }
const TypeValue* UintType() { return &kUint; }
const TypeValue* DoubleType() { return &kDouble; }
const TypeValue* StringType() { return &kString; }
const TypeValue* BytesType() { return &kBytes; }
const TypeValue* ListType() { return &kList; }
const TypeValue* MapType() { return &kMap; }
const TypeValue* TypeType() { return &kType; }
const TypeValue* OptionalType() { return &kOptional; }
const TypeValue* TimestampType() { return &kTimestamp; }
const TypeValue* DurationType() { return &kDuration; }
const TypeValue* QuantityType() { return &kQuantity; }
const TypeValue* SemverType() { return &kSemver; }
const TypeValue* IPType() { return &kIP; }
const TypeValue* CIDRType() { return &kCIDR; }
const TypeValue* URLType() { return &kURL; }

const TypeValue* FindType(std::string_view name) {
  for (const TypeValue* t : kAll) {
    if (t->name == name) return t;
  }
  return nullptr;
}
}  // namespace types

const TypeValue* TypeOf(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kNull:
      return types::NullType();
    case ValueKind::kBool:
      return types::BoolType();
    case ValueKind::kInt:
      return types::IntType();
    case ValueKind::kUint:
      return types::UintType();
    case ValueKind::kDouble:
      return types::DoubleType();
    case ValueKind::kString:
      return types::StringType();
    case ValueKind::kBytes:
      return types::BytesType();
    case ValueKind::kList:
      return types::ListType();
    case ValueKind::kMap:
      return types::MapType();
    case ValueKind::kType:
      return types::TypeType();
    case ValueKind::kOptional:
      return types::OptionalType();
    case ValueKind::kTimestamp:
      return types::TimestampType();
    case ValueKind::kDuration:
      return types::DurationType();
    case ValueKind::kQuantity:
      return types::QuantityType();
    case ValueKind::kSemver:
      return types::SemverType();
    case ValueKind::kIP:
      return types::IPType();
    case ValueKind::kCIDR:
      return types::CIDRType();
    case ValueKind::kURL:
      return types::URLType();
    case ValueKind::kError:
      return nullptr;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Maps
// ---------------------------------------------------------------------------------------------

namespace {

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t HashBytes(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return Mix(h);
}

// Normalised key: numeric keys (int, uint, integral double) map onto one number line.
struct Key {
  enum Class : uint8_t { kNone, kBool, kSigned, kUnsigned, kString } cls = kNone;
  uint64_t bits = 0;
  std::string_view str;
};

Key NormalizeKey(const Value& v) {
  Key k;
  switch (v.kind()) {
    case ValueKind::kBool:
      k.cls = Key::kBool;
      k.bits = v.bool_value();
      break;
    case ValueKind::kInt:
      k.cls = Key::kSigned;
      k.bits = static_cast<uint64_t>(v.int_value());
      break;
    case ValueKind::kUint:
      if (v.uint_value() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        k.cls = Key::kSigned;
      } else {
        k.cls = Key::kUnsigned;
      }
      k.bits = v.uint_value();
      break;
    case ValueKind::kDouble: {
      double d = v.double_value();
      if (std::isfinite(d) && d == std::trunc(d)) {
        if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
          k.cls = Key::kSigned;
          k.bits = static_cast<uint64_t>(static_cast<int64_t>(d));
        } else if (d >= 0 && d < 18446744073709551616.0) {
          k.cls = Key::kUnsigned;
          k.bits = static_cast<uint64_t>(d);
        }
      }
      break;
    }
    case ValueKind::kString:
      k.cls = Key::kString;
      k.str = v.string_value();
      break;
    default:
      break;
  }
  return k;
}

uint64_t HashKey(const Key& k) {
  if (k.cls == Key::kString) return HashBytes(k.str);
  return Mix(k.bits * 4 + k.cls);
}

bool KeyEquals(const Key& a, const Key& b) {
  if (a.cls != b.cls) return false;
  if (a.cls == Key::kString) return a.str == b.str;
  return a.bits == b.bits;
}

constexpr uint32_t kIndexThreshold = 8;

}  // namespace

bool MapValue::Init(const MapEntryValue* entries, uint32_t size, Arena* arena) {
  entries_ = entries;
  size_ = size;
  index_ = nullptr;
  index_mask_ = 0;
  if (size <= kIndexThreshold) return true;
  uint32_t cap = 16;
  while (cap < size * 2) cap *= 2;
  uint32_t* index = arena->NewArray<uint32_t>(cap);
  if (index == nullptr) return false;
  for (uint32_t i = 0; i < size; ++i) {
    uint64_t h = HashKey(NormalizeKey(entries[i].key));
    uint32_t slot = static_cast<uint32_t>(h) & (cap - 1);
    while (index[slot] != 0) slot = (slot + 1) & (cap - 1);
    index[slot] = i + 1;
  }
  index_ = index;
  index_mask_ = cap - 1;
  return true;
}

bool MapValue::AppendUnique(MapEntryValue* storage, const MapEntryValue& entry, Arena* arena) {
  storage[size_] = entry;
  entries_ = storage;
  ++size_;
  if (size_ <= kIndexThreshold) return true;
  if (index_ == nullptr || size_ * 2 > index_mask_ + 1) return Init(storage, size_, arena);
  auto* index = const_cast<uint32_t*>(index_);
  uint32_t slot = static_cast<uint32_t>(HashKey(NormalizeKey(entry.key))) & index_mask_;
  while (index[slot] != 0) slot = (slot + 1) & index_mask_;
  index[slot] = size_;
  return true;
}

const Value* MapValue::Find(const Value& key) const {
  Key k = NormalizeKey(key);
  if (k.cls == Key::kNone) return nullptr;
  if (index_ == nullptr) {
    for (uint32_t i = 0; i < size_; ++i) {
      if (KeyEquals(NormalizeKey(entries_[i].key), k)) return &entries_[i].value;
    }
    return nullptr;
  }
  uint32_t slot = static_cast<uint32_t>(HashKey(k)) & index_mask_;
  while (index_[slot] != 0) {
    const MapEntryValue& e = entries_[index_[slot] - 1];
    if (KeyEquals(NormalizeKey(e.key), k)) return &e.value;
    slot = (slot + 1) & index_mask_;
  }
  return nullptr;
}

const Value* MapValue::FindString(std::string_view key) const {
  if (index_ == nullptr) {
    for (uint32_t i = 0; i < size_; ++i) {
      const Value& k = entries_[i].key;
      if (k.kind() == ValueKind::kString && k.string_value() == key) return &entries_[i].value;
    }
    return nullptr;
  }
  return Find(Value::String(key));
}

// ---------------------------------------------------------------------------------------------
// Construction helpers
// ---------------------------------------------------------------------------------------------

namespace {
constexpr ErrorValue kMemoryLimit{"memory limit exceeded"};
constexpr ErrorValue kNoSuchOverload{"no such overload"};
constexpr ErrorValue kUnsupportedKey{"unsupported key type"};
}  // namespace

Value StaticError(const ErrorValue* error) { return Value::Error(error); }
Value MemoryLimitExceeded() { return Value::Error(&kMemoryLimit); }
Value NoSuchOverload() { return Value::Error(&kNoSuchOverload); }

Value MakeError(Arena* arena, std::string_view message) {
  char* text = arena->CopyBytes(message.data(), message.size());
  if (text == nullptr) return MemoryLimitExceeded();
  auto* e = arena->New<ErrorValue>();
  if (e == nullptr) return MemoryLimitExceeded();
  e->message = std::string_view(text, message.size());
  return Value::Error(e);
}

Value NoSuchKey(Arena* arena, const Value& key) {
  std::string text = "no such key: ";
  if (key.kind() == ValueKind::kString) {
    text += key.string_value();
  } else {
    text += FormatValue(key);
  }
  return MakeError(arena, text);
}

Value MakeString(Arena* arena, std::string_view s) {
  if (s.size() > std::numeric_limits<uint32_t>::max()) return MemoryLimitExceeded();
  char* p = arena->CopyBytes(s.data(), s.size());
  if (p == nullptr) return MemoryLimitExceeded();
  return Value::String(std::string_view(p, s.size()));
}

Value MakeBytes(Arena* arena, std::string_view s) {
  Value v = MakeString(arena, s);
  if (v.IsError()) return v;
  return Value::Bytes(v.string_value());
}

Value MakeOptional(Arena* arena, const Value& inner) {
  auto* p = arena->New<Value>(inner);
  if (p == nullptr) return MemoryLimitExceeded();
  return Value::Optional(p);
}

Value OptionalNone() { return Value::Optional(nullptr); }

Value MakeList(Arena* arena, const Value* elems, size_t n) {
  if (n > std::numeric_limits<uint32_t>::max()) return MemoryLimitExceeded();
  auto* list = arena->New<ListValue>();
  Value* copy = arena->NewArray<Value>(n);
  if (list == nullptr || copy == nullptr) return MemoryLimitExceeded();
  for (size_t i = 0; i < n; ++i) copy[i] = elems[i];
  list->elems = copy;
  list->size = static_cast<uint32_t>(n);
  return Value::List(list);
}

Value MakeMap(Arena* arena, const MapEntryValue* entries, size_t n) {
  if (n > std::numeric_limits<uint32_t>::max() / 4) return MemoryLimitExceeded();
  auto* copy = arena->NewArray<MapEntryValue>(n);
  auto* map = arena->New<MapValue>();
  if (copy == nullptr || map == nullptr) return MemoryLimitExceeded();
  uint32_t size = 0;
  // Later duplicates replace earlier values (cel-go keeps the last one).
  if (n <= 16) {
    for (size_t i = 0; i < n; ++i) {
      Key k = NormalizeKey(entries[i].key);
      if (k.cls == Key::kNone || entries[i].key.kind() == ValueKind::kDouble) {
        return Value::Error(&kUnsupportedKey);
      }
      bool replaced = false;
      for (uint32_t j = 0; j < size; ++j) {
        if (KeyEquals(NormalizeKey(copy[j].key), k)) {
          copy[j].value = entries[i].value;
          replaced = true;
          break;
        }
      }
      if (!replaced) copy[size++] = entries[i];
    }
  } else {
    uint32_t cap = 32;
    while (cap < n * 2) cap *= 2;
    std::vector<uint32_t> index(cap, 0);
    for (size_t i = 0; i < n; ++i) {
      Key k = NormalizeKey(entries[i].key);
      if (k.cls == Key::kNone || entries[i].key.kind() == ValueKind::kDouble) {
        return Value::Error(&kUnsupportedKey);
      }
      uint32_t slot = static_cast<uint32_t>(HashKey(k)) & (cap - 1);
      bool replaced = false;
      while (index[slot] != 0) {
        MapEntryValue& e = copy[index[slot] - 1];
        if (KeyEquals(NormalizeKey(e.key), k)) {
          e.value = entries[i].value;
          replaced = true;
          break;
        }
        slot = (slot + 1) & (cap - 1);
      }
      if (!replaced) {
        copy[size] = entries[i];
        index[slot] = ++size;
      }
    }
  }
  if (!map->Init(copy, size, arena)) return MemoryLimitExceeded();
  return Value::Map(map);
}

// ---------------------------------------------------------------------------------------------
// Equality and ordering
// ---------------------------------------------------------------------------------------------

namespace {

int CompareDouble(double a, double b) {
  if (a < b) return -1;
  if (a > b) return 1;
  return 0;
}

// cel-go common/types compareIntDouble / compareUintDouble / compareIntUint.
int CompareIntDouble(int64_t i, double d) {
  if (d < -9223372036854775808.0) return 1;
  if (d > 9223372036854775807.0) return -1;
  return CompareDouble(static_cast<double>(i), d);
}
int CompareUintDouble(uint64_t u, double d) {
  if (d < 0) return 1;
  if (d > 18446744073709551615.0) return -1;
  return CompareDouble(static_cast<double>(u), d);
}
int CompareIntUint(int64_t i, uint64_t u) {
  if (i < 0 || u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return -1;
  uint64_t ui = static_cast<uint64_t>(i);
  return ui < u ? -1 : (ui > u ? 1 : 0);
}

bool IsNumber(ValueKind k) {
  return k == ValueKind::kInt || k == ValueKind::kUint || k == ValueKind::kDouble;
}

// -1/0/1 for two numbers, kUnordered when a double is NaN.
int CompareNumbers(const Value& a, const Value& b) {
  ValueKind ka = a.kind(), kb = b.kind();
  if ((ka == ValueKind::kDouble && std::isnan(a.double_value())) ||
      (kb == ValueKind::kDouble && std::isnan(b.double_value()))) {
    return kUnordered;
  }
  switch (ka) {
    case ValueKind::kInt:
      if (kb == ValueKind::kInt) {
        return a.int_value() < b.int_value() ? -1 : (a.int_value() > b.int_value() ? 1 : 0);
      }
      if (kb == ValueKind::kUint) return CompareIntUint(a.int_value(), b.uint_value());
      return CompareIntDouble(a.int_value(), b.double_value());
    case ValueKind::kUint:
      if (kb == ValueKind::kUint) {
        return a.uint_value() < b.uint_value() ? -1 : (a.uint_value() > b.uint_value() ? 1 : 0);
      }
      if (kb == ValueKind::kInt) return -CompareIntUint(b.int_value(), a.uint_value());
      return CompareUintDouble(a.uint_value(), b.double_value());
    default:
      if (kb == ValueKind::kDouble) return CompareDouble(a.double_value(), b.double_value());
      if (kb == ValueKind::kInt) return -CompareIntDouble(b.int_value(), a.double_value());
      return -CompareUintDouble(b.uint_value(), a.double_value());
  }
}

int CompareBytes(std::string_view a, std::string_view b) {
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

int CompareTime(const Value& a, const Value& b) {
  if (a.seconds() != b.seconds()) return a.seconds() < b.seconds() ? -1 : 1;
  if (a.nanos() != b.nanos()) return a.nanos() < b.nanos() ? -1 : 1;
  return 0;
}

bool IsLibraryKind(ValueKind k) {
  return k == ValueKind::kQuantity || k == ValueKind::kSemver || k == ValueKind::kIP ||
         k == ValueKind::kCIDR || k == ValueKind::kURL;
}

}  // namespace

Value Equal(const Value& a, const Value& b) {
  ValueKind ka = a.kind(), kb = b.kind();
  if (ka == ValueKind::kNull || kb == ValueKind::kNull) return Value::Bool(ka == kb);
  if (IsNumber(ka) && IsNumber(kb)) return Value::Bool(CompareNumbers(a, b) == 0);
  if (ka != kb) {
    // Kubernetes' library types answer "no such overload" when compared with another type
    // (e.g. `Quantity.Equal` in apiserver pkg/cel/quantity.go).
    if (IsLibraryKind(ka)) return NoSuchOverload();
    return Value::Bool(false);
  }
  switch (ka) {
    case ValueKind::kBool:
      return Value::Bool(a.bool_value() == b.bool_value());
    case ValueKind::kString:
    case ValueKind::kBytes:
      return Value::Bool(a.string_value() == b.string_value());
    case ValueKind::kType:
      return Value::Bool(&a.type() == &b.type());
    case ValueKind::kTimestamp:
      return Value::Bool(CompareTime(a, b) == 0);
    case ValueKind::kDuration:
      return Value::Bool(a.duration_nanos() == b.duration_nanos());
    case ValueKind::kOptional:
      if (a.optional_has_value() != b.optional_has_value()) return Value::Bool(false);
      if (!a.optional_has_value()) return Value::Bool(true);
      return Equal(a.optional_value(), b.optional_value());
    case ValueKind::kList: {
      const ListValue& la = a.list();
      const ListValue& lb = b.list();
      if (la.size != lb.size) return Value::Bool(false);
      for (uint32_t i = 0; i < la.size; ++i) {
        if (Equal(la.elems[i], lb.elems[i]).IsFalse()) return Value::Bool(false);
      }
      return Value::Bool(true);
    }
    case ValueKind::kMap: {
      const MapValue& ma = a.map();
      const MapValue& mb = b.map();
      if (ma.size() != mb.size()) return Value::Bool(false);
      for (uint32_t i = 0; i < ma.size(); ++i) {
        const MapEntryValue& e = ma.entries()[i];
        const Value* other = mb.Find(e.key);
        if (other == nullptr) return Value::Bool(false);
        if (Equal(e.value, *other).IsFalse()) return Value::Bool(false);
      }
      return Value::Bool(true);
    }
    case ValueKind::kQuantity:
      return Value::Bool(CompareQuantity(a.quantity(), b.quantity()) == 0);
    case ValueKind::kSemver:
      return Value::Bool(CompareSemver(a.semver(), b.semver()) == 0);
    case ValueKind::kIP:
      return Value::Bool(EqualIP(a.ip(), b.ip()));
    case ValueKind::kCIDR:
      return Value::Bool(EqualCIDR(a.cidr(), b.cidr()));
    case ValueKind::kURL:
      return Value::Bool(EqualURL(a.url(), b.url()));
    default:
      return Value::Bool(false);
  }
}

int Compare(const Value& a, const Value& b) {
  ValueKind ka = a.kind(), kb = b.kind();
  if (IsNumber(ka) && IsNumber(kb)) return CompareNumbers(a, b);
  if (ka != kb) return kIncomparable;
  switch (ka) {
    case ValueKind::kBool:
      return a.bool_value() == b.bool_value() ? 0 : (a.bool_value() ? 1 : -1);
    case ValueKind::kString:
    case ValueKind::kBytes:
      return CompareBytes(a.string_value(), b.string_value());
    case ValueKind::kTimestamp:
      return CompareTime(a, b);
    case ValueKind::kDuration:
      return a.duration_nanos() < b.duration_nanos()
                 ? -1
                 : (a.duration_nanos() > b.duration_nanos() ? 1 : 0);
    default:
      return kIncomparable;
  }
}

// ---------------------------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------------------------

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  if (d == 0) return std::signbit(d) ? "-0" : "0";
  // Shortest round-trip digits in scientific form: d.ddddde[+-]x.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  int exp = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exp < -4 || exp >= 6) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
    return out;
  }
  if (exp < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exp - 1), '0');
    out += digits;
    return out;
  }
  size_t int_len = static_cast<size_t>(exp) + 1;
  if (digits.size() <= int_len) {
    out += digits;
    out.append(int_len - digits.size(), '0');
  } else {
    out += digits.substr(0, int_len);
    out += '.';
    out += digits.substr(int_len);
  }
  return out;
}

namespace {

void AppendQuotedString(std::string* out, std::string_view s, bool bytes) {
  if (bytes) out->push_back('b');
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        *out += "\\\"";
        ++i;
        continue;
      case '\\':
        *out += "\\\\";
        ++i;
        continue;
      case '\n':
        *out += "\\n";
        ++i;
        continue;
      case '\r':
        *out += "\\r";
        ++i;
        continue;
      case '\t':
        *out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F || (bytes && c >= 0x80)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      *out += buf;
      ++i;
      continue;
    }
    if (c >= 0x80) {
      size_t len = internal::ValidUtf8SequenceLength(s.substr(i));
      if (len == 0) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        *out += buf;
        ++i;
      } else {
        out->append(s.substr(i, len));
        i += len;
      }
      continue;
    }
    out->push_back(static_cast<char>(c));
    ++i;
  }
  out->push_back('"');
}

void AppendValue(std::string* out, const Value& v, int depth) {
  if (depth > 64) {
    *out += "...";
    return;
  }
  switch (v.kind()) {
    case ValueKind::kNull:
      *out += "null";
      return;
    case ValueKind::kBool:
      *out += v.bool_value() ? "true" : "false";
      return;
    case ValueKind::kInt:
      *out += std::to_string(v.int_value());
      return;
    case ValueKind::kUint:
      *out += std::to_string(v.uint_value()) + "u";
      return;
    case ValueKind::kDouble: {
      double d = v.double_value();
      if (std::isnan(d)) {
        *out += "double(\"NaN\")";
      } else if (std::isinf(d)) {
        *out += d > 0 ? "double(\"Infinity\")" : "double(\"-Infinity\")";
      } else {
        std::string s = FormatDouble(d);
        if (s.find_first_of(".e") == std::string::npos) s += ".0";
        *out += s;
      }
      return;
    }
    case ValueKind::kString:
      AppendQuotedString(out, v.string_value(), false);
      return;
    case ValueKind::kBytes:
      AppendQuotedString(out, v.string_value(), true);
      return;
    case ValueKind::kList: {
      *out += "[";
      const ListValue& l = v.list();
      for (uint32_t i = 0; i < l.size; ++i) {
        if (i) *out += ", ";
        AppendValue(out, l.elems[i], depth + 1);
      }
      *out += "]";
      return;
    }
    case ValueKind::kMap: {
      *out += "{";
      const MapValue& m = v.map();
      for (uint32_t i = 0; i < m.size(); ++i) {
        if (i) *out += ", ";
        AppendValue(out, m.entries()[i].key, depth + 1);
        *out += ": ";
        AppendValue(out, m.entries()[i].value, depth + 1);
      }
      *out += "}";
      return;
    }
    case ValueKind::kType:
      *out += v.type().name;
      return;
    case ValueKind::kOptional:
      if (!v.optional_has_value()) {
        *out += "optional.none()";
        return;
      }
      *out += "optional.of(";
      AppendValue(out, v.optional_value(), depth + 1);
      *out += ")";
      return;
    case ValueKind::kTimestamp:
      *out += "timestamp(";
      AppendQuotedString(out, FormatTimestamp(v.seconds(), v.nanos()), false);
      *out += ")";
      return;
    case ValueKind::kDuration:
      *out += "duration(";
      AppendQuotedString(out, FormatDuration(v.duration_nanos()), false);
      *out += ")";
      return;
    case ValueKind::kQuantity:
      *out += "quantity(";
      AppendQuotedString(out, v.quantity().quantity.ToString(), false);
      *out += ")";
      return;
    case ValueKind::kSemver:
      *out += "semver(";
      AppendQuotedString(out, FormatSemver(v.semver()), false);
      *out += ")";
      return;
    case ValueKind::kIP:
      *out += "ip(";
      AppendQuotedString(out, FormatIP(v.ip()), false);
      *out += ")";
      return;
    case ValueKind::kCIDR:
      *out += "cidr(";
      AppendQuotedString(out, FormatCIDR(v.cidr()), false);
      *out += ")";
      return;
    case ValueKind::kURL:
      *out += "url(";
      AppendQuotedString(out, v.url().text, false);
      *out += ")";
      return;
    case ValueKind::kError:
      *out += "error: " + std::string(v.error().message);
      return;
  }
}

}  // namespace

std::string FormatValue(const Value& v) {
  std::string out;
  AppendValue(&out, v, 0);
  return out;
}

}  // namespace draplane::cel
