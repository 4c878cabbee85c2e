// Scalar resolution (go-yaml v2 resolve.go, as used by sigs.k8s.io/yaml): yaml.h's
// ResolvePlainScalar and what the reader and writer share (internal/yaml_scalar.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "api/codec/internal/yaml_scalar.h"
#include "api/codec/yaml.h"

namespace draplane::api::codec {
namespace internal {
namespace {

struct MapEntry {
  std::string_view text;
  Resolved::Kind kind;
  bool b;
  double f;
};

constexpr double kInf = HUGE_VAL;

// go-yaml v2's resolveMap (YAML 1.1 booleans, nulls and special floats).
std::optional<Resolved> LookupResolveMap(std::string_view in) {
  static constexpr std::string_view kTrue[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                               "True", "TRUE", "on",  "On",  "ON"};
  static constexpr std::string_view kFalse[] = {"n",     "N",     "no",  "No",  "NO", "false",
                                                "False", "FALSE", "off", "Off", "OFF"};
  static constexpr std::string_view kNull[] = {"", "~", "null", "Null", "NULL"};
  static constexpr std::string_view kNan[] = {".nan", ".NaN", ".NAN"};
  static constexpr std::string_view kPosInf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"};
  static constexpr std::string_view kNegInf[] = {"-.inf", "-.Inf", "-.INF"};
  Resolved r;
  for (std::string_view s : kTrue) {
    if (in == s) return Resolved{Resolved::Kind::kBool, true};
  }
  for (std::string_view s : kFalse) {
    if (in == s) return Resolved{Resolved::Kind::kBool, false};
  }
  for (std::string_view s : kNull) {
    if (in == s) return Resolved{Resolved::Kind::kNull};
  }
  r.kind = Resolved::Kind::kFloat;
  for (std::string_view s : kNan) {
    if (in == s) {
      r.f = std::nan("");
      return r;
    }
  }
  for (std::string_view s : kPosInf) {
    if (in == s) {
      r.f = kInf;
      return r;
    }
  }
  for (std::string_view s : kNegInf) {
    if (in == s) {
      r.f = -kInf;
      return r;
    }
  }
  return std::nullopt;
}

int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

enum class IntResult { kOk, kSyntax, kRange };

// Go's strconv.ParseUint(s, 0, 64): base from the prefix (0x, 0o, 0b, leading 0 = octal).
IntResult GoParseUint(std::string_view s, uint64_t* out) {
  if (s.empty()) return IntResult::kSyntax;
  int base = 10;
  if (s[0] == '0') {
    if (s.size() >= 3 && (s[1] == 'b' || s[1] == 'B')) {
      base = 2;
      s.remove_prefix(2);
    } else if (s.size() >= 3 && (s[1] == 'o' || s[1] == 'O')) {
      base = 8;
      s.remove_prefix(2);
    } else if (s.size() >= 3 && (s[1] == 'x' || s[1] == 'X')) {
      base = 16;
      s.remove_prefix(2);
    } else {
      base = 8;
      s.remove_prefix(1);
    }
  }
  uint64_t n = 0;
  bool range = false;
  for (char c : s) {
    const int d = DigitValue(c);
    if (d >= base) return IntResult::kSyntax;
    if (n > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) range = true;
    n = n * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  if (range) return IntResult::kRange;
  *out = n;
  return IntResult::kOk;
}

// Go's strconv.ParseInt(s, 0, 64).
IntResult GoParseInt(std::string_view s, int64_t* out) {
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  uint64_t u = 0;
  IntResult r = GoParseUint(s, &u);
  if (r != IntResult::kOk) return r;
  if (!neg && u > static_cast<uint64_t>(INT64_MAX)) return IntResult::kRange;
  if (neg && u > static_cast<uint64_t>(INT64_MAX) + 1) return IntResult::kRange;
  *out = neg ? static_cast<int64_t>(0 - u) : static_cast<int64_t>(u);
  return IntResult::kOk;
}

// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` (go-yaml's yamlStyleFloat).
bool IsYamlStyleFloat(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// Parses a float already known to be well formed; nullopt when out of range (Go: ErrRange).
std::optional<double> ParseFiniteDouble(std::string_view s) {
  std::string copy(s);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Reads 1 or 2 digits (Go layout elements "1", "2", "15", "4", "5").
bool OneOrTwoDigits(std::string_view s, size_t* pos, int* out) {
  if (*pos >= s.size() || !IsDigit(s[*pos])) return false;
  int v = s[(*pos)++] - '0';
  if (*pos < s.size() && IsDigit(s[*pos])) v = v * 10 + (s[(*pos)++] - '0');
  *out = v;
  return true;
}

// go-yaml v2's parseTimestamp: the layouts "2006-1-2T15:4:5.999999999Z07:00" (also with a
// lower-case t), "2006-1-2 15:4:5.999999999" and "2006-1-2".
bool IsTimestamp(std::string_view s) {
  if (s.size() < 5 || !IsDigit(s[0]) || !IsDigit(s[1]) || !IsDigit(s[2]) || !IsDigit(s[3]) ||
      s[4] != '-') {
    return false;
  }
  size_t pos = 5;
  int month = 0, day = 0;
  if (!OneOrTwoDigits(s, &pos, &month) || pos >= s.size() || s[pos] != '-') return false;
  ++pos;
  if (!OneOrTwoDigits(s, &pos, &day)) return false;
  if (month < 1 || month > 12 || day < 1 || day > 31) return false;
  if (pos == s.size()) return true;
  const char sep = s[pos];
  if (sep != 'T' && sep != 't' && sep != ' ') return false;
  ++pos;
  int hour = 0, minute = 0, second = 0;
  if (!OneOrTwoDigits(s, &pos, &hour) || pos >= s.size() || s[pos++] != ':' ||
      !OneOrTwoDigits(s, &pos, &minute) || pos >= s.size() || s[pos++] != ':' ||
      !OneOrTwoDigits(s, &pos, &second) || hour > 23 || minute > 59 || second > 59) {
    return false;
  }
  if (pos < s.size() && (s[pos] == '.' || s[pos] == ',') && pos + 1 < s.size() &&
      IsDigit(s[pos + 1])) {
    ++pos;
    while (pos < s.size() && IsDigit(s[pos])) ++pos;
  }
  if (sep == ' ') return pos == s.size();
  if (pos < s.size() && s[pos] == 'Z') return pos + 1 == s.size();
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    return s.size() - pos == 6 && IsDigit(s[pos + 1]) && IsDigit(s[pos + 2]) && s[pos + 3] == ':' &&
           IsDigit(s[pos + 4]) && IsDigit(s[pos + 5]);
  }
  return false;
}

// Approximate value of an integer literal too large for 64 bits (go-yaml returns a big.Int,
// which json.Marshal writes as its decimal digits).
std::optional<double> BigIntValue(std::string_view s) {
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  int base = 10;
  if (s.size() >= 2 && s[0] == '0') {
    const char p = s[1];
    if (p == 'x' || p == 'X') base = 16;
    if (p == 'o' || p == 'O') base = 8;
    if (p == 'b' || p == 'B') base = 2;
    if (base != 10) s.remove_prefix(2);
    if (base == 10) {
      base = 8;
      s.remove_prefix(1);
    }
  }
  if (s.empty()) return std::nullopt;
  double v = 0;
  for (char c : s) {
    const int d = DigitValue(c);
    if (d >= base) return std::nullopt;
    v = v * base + d;
  }
  return neg ? -v : v;
}

// The JSON value Go's json.Marshal would print for a resolved float, read back: integral
// values become integers.
boost::json::value FloatToJson(double f, const boost::json::storage_ptr& sp) {
  if (f == std::floor(f) && std::fabs(f) < 1e21) {
    if (f >= -9223372036854775808.0 && f < 9223372036854775808.0) {
      return boost::json::value(static_cast<int64_t>(f), sp);
    }
    if (f >= 0 && f < 18446744073709551616.0) {
      return boost::json::value(static_cast<uint64_t>(f), sp);
    }
  }
  return boost::json::value(f, sp);
}

}  // namespace

Resolved ResolvePlain(std::string_view in) {
  if (std::optional<Resolved> mapped = LookupResolveMap(in)) return *mapped;
  Resolved r;
  if (in.empty()) return r;
  const char c = in[0];
  if (c == '.') {
    // Not in the map: maybe a float such as ".5".
    if (IsYamlStyleFloat(in)) {
      if (std::optional<double> f = ParseFiniteDouble(in)) {
        r.kind = Resolved::Kind::kFloat;
        r.f = *f;
      }
    }
    return r;
  }
  if (!(IsDigit(c) || c == '+' || c == '-')) return r;
  if (IsTimestamp(in)) {
    r.timestamp = true;
    return r;
  }
  std::string plain;
  plain.reserve(in.size());
  for (char ch : in) {
    if (ch != '_') plain.push_back(ch);
  }
  int64_t i = 0;
  if (GoParseInt(plain, &i) == IntResult::kOk) {
    r.kind = Resolved::Kind::kInt;
    r.i = i;
    return r;
  }
  uint64_t u = 0;
  const IntResult uint_result = GoParseUint(plain, &u);
  if (uint_result == IntResult::kOk) {
    r.kind = Resolved::Kind::kUint;
    r.u = u;
    return r;
  }
  if (IsYamlStyleFloat(plain)) {
    if (std::optional<double> f = ParseFiniteDouble(plain)) {
      r.kind = Resolved::Kind::kFloat;
      r.f = *f;
      return r;
    }
  }
  if (uint_result == IntResult::kRange) {
    if (std::optional<double> big = BigIntValue(plain)) {
      r.kind = Resolved::Kind::kBigInt;
      r.f = *big;
    }
  }
  return r;
}

std::optional<std::string> ResolvedToJson(const Resolved& r, std::string_view text,
                                          const boost::json::storage_ptr& sp,
                                          boost::json::value* out) {
  switch (r.kind) {
    case Resolved::Kind::kNull:
      *out = boost::json::value(nullptr, sp);
      return std::nullopt;
    case Resolved::Kind::kBool:
      *out = boost::json::value(r.b, sp);
      return std::nullopt;
    case Resolved::Kind::kInt:
      *out = boost::json::value(r.i, sp);
      return std::nullopt;
    case Resolved::Kind::kUint:
      *out = boost::json::value(r.u, sp);
      return std::nullopt;
    case Resolved::Kind::kFloat:
      if (!std::isfinite(r.f)) {
        return "unsupported value " + std::string(text) + ": JSON cannot represent " +
               (std::isnan(r.f) ? "NaN" : "infinity");
      }
      *out = FloatToJson(r.f, sp);
      return std::nullopt;
    case Resolved::Kind::kBigInt:
      if (!std::isfinite(r.f)) {
        return "number out of range: " + std::string(text.substr(0, 64)) +
               (text.size() > 64 ? "..." : "");
      }
      *out = boost::json::value(r.f, sp);
      return std::nullopt;
    case Resolved::Kind::kString:
      *out = boost::json::value(boost::json::string_view(text.data(), text.size()), sp);
      return std::nullopt;
  }
  return std::nullopt;
}

std::string FormatFloat32G(double value) {
  const float f = static_cast<float>(value);
  if (std::isnan(f)) return ".nan";
  if (std::isinf(f)) return f > 0 ? ".inf" : "-.inf";
  if (f == 0) return std::signbit(f) ? "-0" : "0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  const int exp = std::atoi(sci.c_str() + sci.find('e') + 1);
  if (exp < -4 || exp >= 6) return sci;
  r = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

}  // namespace internal

StatusOr<boost::json::value> ResolvePlainScalar(std::string_view text) {
  boost::json::value out;
  std::optional<std::string> error =
      internal::ResolvedToJson(internal::ResolvePlain(text), text, {}, &out);
  if (error) return InvalidArgumentError(*error);
  return out;
}

}  // namespace draplane::api::codec
