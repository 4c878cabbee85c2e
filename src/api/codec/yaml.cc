#include "api/codec/yaml.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <istream>
#include <optional>
#include <streambuf>

#include "api/meta/codec_support.h"

namespace draplane::api::codec {
namespace {

// ---------------------------------------------------------------------------------------------
// Scalar resolution (go-yaml v2 resolve.go, as used by sigs.k8s.io/yaml).

struct Resolved {
  enum class Kind { kNull, kBool, kInt, kUint, kFloat, kBigInt, kString };
  Kind kind = Kind::kString;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;            // also the approximate value of kBigInt
  bool timestamp = false;  // a kString that go-yaml resolves as a timestamp
};

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

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

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

// go-yaml v2 resolve("", in) for a plain scalar.
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

// Returns the JSON for a resolved scalar, or an error message.
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

// strconv.FormatFloat(f, 'g', -1, 32), as sigs.k8s.io/yaml formats float map keys.
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

// ---------------------------------------------------------------------------------------------
// Input checks before yaml-cpp runs.

// Validates UTF-8 and go-yaml's reader rule "control characters are not allowed". Returns the
// offset of the first bad byte, or npos.
size_t FindBadCharacter(std::string_view text, const char** problem) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    uint32_t cp = 0;
    size_t len = 0;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      len = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      len = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      len = 4;
    } else {
      *problem = "invalid UTF-8";
      return i;
    }
    if (i + len > n) {
      *problem = "invalid UTF-8";
      return i;
    }
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        *problem = "invalid UTF-8";
        return i;
      }
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    const bool overlong =
        (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      *problem = "invalid UTF-8";
      return i;
    }
    const bool allowed = cp == 0x09 || cp == 0x0A || cp == 0x0D || (cp >= 0x20 && cp <= 0x7E) ||
                         cp == 0x85 || (cp >= 0xA0 && cp <= 0xD7FF) ||
                         (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
    if (!allowed) {
      *problem = "control characters are not allowed";
      return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

// An upper bound of the nesting depth yaml-cpp will recurse to, from a single pass over the
// text: block collections are counted by distinct indentation levels (each worth two levels,
// since a sequence may sit at its key's indentation) plus compact `- ` / `? ` indicators, flow
// collections by their brackets. Quoted scalars, block scalars and comments are skipped.
// Returns the maximum and the 0-based line where it was reached; `*open_quote_line` is the
// 0-based line of a quoted scalar still open at the end of the input, or -1.
size_t EstimateDepth(std::string_view text, int* deepest_document, int* deepest_line,
                     int* open_quote_line) {
  std::vector<size_t> indents;
  int document = 1;  // counted as ParseYaml counts them: every `---` after the first content
  bool content = false;
  size_t flow = 0;
  size_t best = 0;
  char quote = 0;
  bool block_scalar = false;
  size_t block_scalar_parent = 0;
  int line_no = 0;
  int quote_line = 0;
  *deepest_document = 1;
  *deepest_line = 0;
  *open_quote_line = -1;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t indent = i;
    const bool blank = i == line.size() || line[i] == '#';
    if (line.substr(0, 3) == "---" || line.substr(0, 3) == "...") {
      if (line.size() == 3 || line[3] == ' ' || line[3] == '\t') {
        if (line[0] == '-' && content) ++document;
        indents.clear();
        flow = 0;
        quote = 0;
        block_scalar = false;
        i = 3;
      }
    }
    if (!blank) content = true;
    if (block_scalar) {
      if (blank || indent > block_scalar_parent) {
        pos = end + 1;
        ++line_no;
        continue;
      }
      block_scalar = false;
    }
    bool value_start = true;
    if (quote == 0 && flow == 0 && !blank) {
      while (!indents.empty() && indents.back() > indent) indents.pop_back();
      if (indents.empty() || indents.back() < indent) indents.push_back(indent);
    }
    while (i < line.size()) {
      const char c = line[i];
      if (quote != 0) {
        if (quote == '"' && c == '\\') {
          i += 2;
          continue;
        }
        if (c == quote) {
          if (quote == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
            i += 2;
            continue;
          }
          quote = 0;
          value_start = false;
        }
        ++i;
        continue;
      }
      if (c == ' ' || c == '\t') {
        ++i;
        continue;
      }
      if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) break;
      const bool followed_by_space =
          i + 1 >= line.size() || line[i + 1] == ' ' || line[i + 1] == '\t';
      if (flow == 0 && value_start && (c == '-' || c == '?') && followed_by_space) {
        if (indents.empty() || indents.back() < i + 2) indents.push_back(i + 2);
        i += 1;
        continue;
      }
      if (c == ':' && followed_by_space) {
        value_start = true;
        ++i;
        continue;
      }
      if (value_start && (c == '"' || c == '\'')) {
        quote = c;
        quote_line = line_no;
        ++i;
        continue;
      }
      if (flow == 0 && value_start && (c == '|' || c == '>')) {
        block_scalar = true;
        block_scalar_parent = indent;
        break;
      }
      if ((c == '[' || c == '{') && (flow > 0 || value_start)) {
        ++flow;
        if (2 * indents.size() + flow > best) {
          best = 2 * indents.size() + flow;
          *deepest_document = document;
          *deepest_line = line_no;
        }
        value_start = true;
        ++i;
        continue;
      }
      if ((c == ']' || c == '}') && flow > 0) {
        --flow;
        value_start = false;
        ++i;
        continue;
      }
      if (c == ',' && flow > 0) {
        value_start = true;
        ++i;
        continue;
      }
      value_start = false;
      ++i;
    }
    const size_t depth = 2 * indents.size() + flow;
    if (depth > best) {
      best = depth;
      *deepest_document = document;
      *deepest_line = line_no;
    }
    pos = end + 1;
    ++line_no;
  }
  if (quote != 0) *open_quote_line = quote_line;
  return best;
}

// ---------------------------------------------------------------------------------------------
// yaml-cpp events -> JSON.

class ViewStreambuf : public std::streambuf {
 public:
  explicit ViewStreambuf(std::string_view text) {
    char* p = const_cast<char*>(text.data());
    setg(p, p, p + text.size());
  }
};

// Counts the JSON values in `v` (itself included).
size_t CountNodes(const boost::json::value& v) {
  size_t n = 1;
  if (const boost::json::array* a = v.if_array()) {
    for (const boost::json::value& x : *a) n += CountNodes(x);
  } else if (const boost::json::object* o = v.if_object()) {
    for (const boost::json::key_value_pair& kv : *o) n += CountNodes(kv.value());
  }
  return n;
}

size_t Depth(const boost::json::value& v) {
  size_t d = 0;
  if (const boost::json::array* a = v.if_array()) {
    for (const boost::json::value& x : *a) d = std::max(d, Depth(x));
    return d + 1;
  }
  if (const boost::json::object* o = v.if_object()) {
    for (const boost::json::key_value_pair& kv : *o) d = std::max(d, Depth(kv.value()));
    return d + 1;
  }
  return 0;
}

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

// Builds one JSON value per document. Errors do not throw: the first one is recorded and every
// later event of the document is ignored.
class JsonBuilder : public YAML::EventHandler {
 public:
  JsonBuilder(const ParseLimits& limits, size_t node_budget, boost::json::storage_ptr sp)
      : limits_(limits), node_budget_(node_budget), sp_(std::move(sp)) {}

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  int error_line() const { return error_line_; }
  int document_line() const { return document_line_; }
  size_t document_offset() const { return document_offset_; }
  boost::json::value TakeDocument() { return std::move(root_); }

  void OnDocumentStart(const YAML::Mark& mark) override {
    stack_.clear();
    anchors_.clear();
    root_ = boost::json::value(nullptr, sp_);
    nodes_ = 0;
    document_line_ = mark.line + 1;
    document_offset_ = mark.pos < 0 ? 0 : static_cast<size_t>(mark.pos);
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (failed()) return;
    Complete(mark, boost::json::value(nullptr, sp_), anchor, /*null_key=*/true);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (failed()) return;
    auto it = std::find_if(anchors_.begin(), anchors_.end(),
                           [&](const Anchor& a) { return a.id == anchor; });
    if (it == anchors_.end()) {
      Fail(mark, "unknown anchor");
      return;
    }
    nodes_ += it->nodes;
    if (nodes_ > node_budget_) {
      Fail(mark, "document contains excessive aliasing");
      return;
    }
    if (stack_.size() + it->depth > limits_.max_depth) {
      Fail(mark, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
      return;
    }
    Complete(mark, boost::json::value(it->value, sp_), 0, /*null_key=*/false);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (failed()) return;
    const bool key_position = !stack_.empty() && stack_.back().is_map && !stack_.back().have_key;
    if (key_position) {
      std::optional<std::string> key = KeyString(mark, tag, value);
      if (!key) return;
      Frame& f = stack_.back();
      f.key = std::move(*key);
      f.have_key = true;
      f.merge = tag == "?" && value == "<<";
      ++nodes_;
      if (anchor != 0) {
        Remember(anchor, boost::json::value(boost::json::string_view(f.key), sp_));
      }
      return;
    }
    boost::json::value v;
    if (!ScalarValue(mark, tag, value, &v)) return;
    Complete(mark, std::move(v), anchor, /*null_key=*/false);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, /*is_map=*/false, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, /*is_map=*/true, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    bool is_map = false;
    boost::json::value value;
    YAML::anchor_t anchor = 0;
    YAML::Mark mark;
    bool have_key = false;
    bool merge = false;
    std::string key;
  };
  struct Anchor {
    YAML::anchor_t id;
    boost::json::value value;
    size_t nodes;
    size_t depth;
  };

  void Fail(const YAML::Mark& mark, std::string message) {
    if (failed()) return;
    error_ = std::move(message);
    error_line_ = mark.line + 1;
  }

  void Open(const YAML::Mark& mark, bool is_map, YAML::anchor_t anchor) {
    if (failed()) return;
    if (!stack_.empty() && stack_.back().is_map && !stack_.back().have_key) {
      Fail(mark, "mapping keys must be scalars");
      return;
    }
    if (stack_.size() >= limits_.max_depth) {
      Fail(mark, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
      return;
    }
    if (++nodes_ > node_budget_) {
      Fail(mark, "document contains excessive aliasing");
      return;
    }
    Frame f;
    f.is_map = is_map;
    f.value = is_map ? boost::json::value(boost::json::object(sp_))
                     : boost::json::value(boost::json::array(sp_));
    f.anchor = anchor;
    f.mark = mark;
    stack_.push_back(std::move(f));
  }

  void Close() {
    if (failed() || stack_.empty()) return;
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Complete(f.mark, std::move(f.value), f.anchor, /*null_key=*/false);
  }

  void Remember(YAML::anchor_t anchor, const boost::json::value& v) {
    Anchor a{anchor, boost::json::value(v, sp_), CountNodes(v), Depth(v)};
    for (Anchor& existing : anchors_) {
      if (existing.id == anchor) {
        existing = std::move(a);
        return;
      }
    }
    anchors_.push_back(std::move(a));
  }

  // Adds a finished value to its parent (or makes it the document).
  void Complete(const YAML::Mark& mark, boost::json::value v, YAML::anchor_t anchor,
                bool null_key) {
    if (anchor != 0) Remember(anchor, v);
    if (stack_.empty()) {
      root_ = std::move(v);
      return;
    }
    Frame& top = stack_.back();
    if (!top.is_map) {
      top.value.get_array().push_back(std::move(v));
      return;
    }
    if (!top.have_key) {
      // A key that is not a scalar event: an empty node (null) or an alias.
      if (null_key || v.is_null()) {
        Fail(mark, "mapping keys must not be null");
        return;
      }
      std::optional<std::string> key = KeyFromJson(mark, v);
      if (!key) return;
      top.key = std::move(*key);
      top.have_key = true;
      top.merge = false;
      return;
    }
    top.have_key = false;
    boost::json::object& obj = top.value.get_object();
    if (top.merge) {
      Merge(mark, v, obj);
      return;
    }
    obj[top.key] = std::move(v);
  }

  // `<<: map` or `<<: [map, ...]`: go-yaml v2 merges in place; earlier maps of a list win.
  void Merge(const YAML::Mark& mark, const boost::json::value& v, boost::json::object& obj) {
    if (const boost::json::object* src = v.if_object()) {
      for (const boost::json::key_value_pair& kv : *src) obj[kv.key()] = kv.value();
      return;
    }
    if (const boost::json::array* list = v.if_array()) {
      for (auto it = list->rbegin(); it != list->rend(); ++it) {
        const boost::json::object* src = it->if_object();
        if (src == nullptr) {
          Fail(mark, "map merge requires map or sequence of maps as the value");
          return;
        }
        for (const boost::json::key_value_pair& kv : *src) obj[kv.key()] = kv.value();
      }
      return;
    }
    Fail(mark, "map merge requires map or sequence of maps as the value");
  }

  std::optional<std::string> KeyFromJson(const YAML::Mark& mark, const boost::json::value& v) {
    if (const boost::json::string* s = v.if_string()) return std::string(s->data(), s->size());
    if (const bool* b = v.if_bool()) return std::string(*b ? "true" : "false");
    if (const int64_t* i = v.if_int64()) return std::to_string(*i);
    if (const uint64_t* u = v.if_uint64()) return std::to_string(*u);
    if (const double* d = v.if_double()) return FormatFloat32G(*d);
    Fail(mark, "mapping keys must be scalars");
    return std::nullopt;
  }

  // The JSON key for a scalar in key position (sigs.k8s.io/yaml converts non-string keys).
  std::optional<std::string> KeyString(const YAML::Mark& mark, const std::string& tag,
                                       const std::string& value) {
    if (tag != "?") {
      boost::json::value v;
      if (!ScalarValue(mark, tag, value, &v)) return std::nullopt;
      if (v.is_null()) {
        Fail(mark, "mapping keys must not be null");
        return std::nullopt;
      }
      return KeyFromJson(mark, v);
    }
    const Resolved r = ResolvePlain(value);
    switch (r.kind) {
      case Resolved::Kind::kNull:
        Fail(mark, "mapping keys must not be null");
        return std::nullopt;
      case Resolved::Kind::kBool:
        return std::string(r.b ? "true" : "false");
      case Resolved::Kind::kInt:
        return std::to_string(r.i);
      case Resolved::Kind::kUint:
        return std::to_string(r.u);
      case Resolved::Kind::kFloat:
        return FormatFloat32G(r.f);
      case Resolved::Kind::kBigInt:
        Fail(mark, "unsupported map key " + value);
        return std::nullopt;
      case Resolved::Kind::kString:
        return value;
    }
    return value;
  }

  bool ScalarValue(const YAML::Mark& mark, const std::string& tag, const std::string& value,
                   boost::json::value* out) {
    if (++nodes_ > node_budget_) {
      Fail(mark, "document contains excessive aliasing");
      return false;
    }
    std::string_view t = tag;
    if (t == "?") {
      std::optional<std::string> error = ResolvedToJson(ResolvePlain(value), value, sp_, out);
      if (error) {
        Fail(mark, *error);
        return false;
      }
      return true;
    }
    if (t.substr(0, kTagPrefix.size()) == kTagPrefix) {
      t.remove_prefix(kTagPrefix.size());
      if (t == "binary") {
        Fail(mark, "!!binary scalars are not supported");
        return false;
      }
      if (t == "null" || t == "bool" || t == "int" || t == "float") {
        Resolved r = ResolvePlain(value);
        using K = Resolved::Kind;
        if (t == "float" && r.kind == K::kInt) {
          r.kind = K::kFloat;
          r.f = static_cast<double>(r.i);
        } else if (t == "float" && r.kind == K::kUint) {
          r.kind = K::kFloat;
          r.f = static_cast<double>(r.u);
        }
        const bool match =
            (t == "null" && r.kind == K::kNull) || (t == "bool" && r.kind == K::kBool) ||
            (t == "int" && (r.kind == K::kInt || r.kind == K::kUint || r.kind == K::kBigInt)) ||
            (t == "float" && (r.kind == K::kFloat || r.kind == K::kBigInt));
        if (!match) {
          Fail(mark, "cannot decode `" + value + "` as a !!" + std::string(t));
          return false;
        }
        std::optional<std::string> error = ResolvedToJson(r, value, sp_, out);
        if (error) {
          Fail(mark, *error);
          return false;
        }
        return true;
      }
    }
    // Quoted and block scalars, `!!str`, `!!timestamp` and application tags: strings.
    *out = boost::json::value(boost::json::string_view(value.data(), value.size()), sp_);
    return true;
  }

  const ParseLimits& limits_;
  const size_t node_budget_;
  boost::json::storage_ptr sp_;
  std::vector<Frame> stack_;
  std::vector<Anchor> anchors_;
  boost::json::value root_;
  size_t nodes_ = 0;
  std::string error_;
  int error_line_ = 0;
  int document_line_ = 1;
  size_t document_offset_ = 0;
};

Status DocumentError(size_t document, int line, std::string_view message) {
  return InvalidArgumentError(std::to_string(document) + ": line " + std::to_string(line) + ": " +
                              std::string(message));
}

// ---------------------------------------------------------------------------------------------
// Writer (go-yaml v2 encode.go + the libyaml emitter's scalar analysis).

bool IsBreakAt(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == '\n' || c == '\r') return true;
  if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) return true;
  if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
      (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
       static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
    return true;
  }
  return false;
}

size_t Utf8Width(unsigned char c) {
  if ((c & 0x80) == 0) return 1;
  if ((c & 0xE0) == 0xC0) return 2;
  if ((c & 0xF0) == 0xE0) return 3;
  if ((c & 0xF8) == 0xF0) return 4;
  return 1;
}

// libyaml's is_printable on the UTF-8 sequence at `i`.
bool IsPrintableAt(std::string_view s, size_t i) {
  const auto b = [&](size_t k) -> unsigned char {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
  };
  const unsigned char c = b(0);
  return c == 0x0A || (c >= 0x20 && c <= 0x7E) || (c == 0xC2 && b(1) >= 0xA0) ||
         (c > 0xC2 && c < 0xED) || (c == 0xED && b(1) < 0xA0) || c == 0xEE ||
         (c == 0xEF && !(b(1) == 0xBB && b(2) == 0xBF) &&
          !(b(1) == 0xBF && (b(2) == 0xBE || b(2) == 0xBF)));
}

struct ScalarAnalysis {
  bool multiline = false;
  bool block_plain_allowed = true;
  bool single_quoted_allowed = true;
  bool block_allowed = true;
};

// yaml_emitter_analyze_scalar.
ScalarAnalysis Analyze(std::string_view value) {
  ScalarAnalysis a;
  if (value.empty()) {
    a.block_allowed = false;
    return a;
  }
  bool block_indicators = false, line_breaks = false, special = false, tabs = false;
  bool leading_space = false, leading_break = false, trailing_space = false, trailing_break = false,
       break_space = false, space_break = false;
  bool previous_space = false, previous_break = false;
  if (value.size() >= 3 && (value.substr(0, 3) == "---" || value.substr(0, 3) == "...")) {
    block_indicators = true;
  }
  bool preceded_by_whitespace = true;
  for (size_t i = 0; i < value.size();) {
    const auto c = static_cast<unsigned char>(value[i]);
    const size_t w = Utf8Width(c);
    const bool followed_by_whitespace =
        i + w >= value.size() || value[i + w] == ' ' || value[i + w] == '\t';
    if (i == 0) {
      switch (c) {
        case '#':
        case ',':
        case '[':
        case ']':
        case '{':
        case '}':
        case '&':
        case '*':
        case '!':
        case '|':
        case '>':
        case '\'':
        case '"':
        case '%':
        case '@':
        case '`':
          block_indicators = true;
          break;
        case '?':
        case ':':
          if (followed_by_whitespace) block_indicators = true;
          break;
        case '-':
          if (followed_by_whitespace) block_indicators = true;
          break;
        default:
          break;
      }
    } else {
      if (c == ':' && followed_by_whitespace) block_indicators = true;
      if (c == '#' && preceded_by_whitespace) block_indicators = true;
    }
    if (c == '\t') {
      tabs = true;
    } else if (!IsPrintableAt(value, i)) {
      special = true;
    }
    if (c == ' ') {
      if (i == 0) leading_space = true;
      if (i + w == value.size()) trailing_space = true;
      if (previous_break) break_space = true;
      previous_space = true;
      previous_break = false;
    } else if (IsBreakAt(value, i)) {
      line_breaks = true;
      if (i == 0) leading_break = true;
      if (i + w == value.size()) trailing_break = true;
      if (previous_space) space_break = true;
      previous_space = false;
      previous_break = true;
    } else {
      previous_space = false;
      previous_break = false;
    }
    preceded_by_whitespace = c == ' ' || c == '\t' || IsBreakAt(value, i);
    i += w;
  }
  a.multiline = line_breaks;
  if (leading_space || leading_break || trailing_space || trailing_break) {
    a.block_plain_allowed = false;
  }
  if (trailing_space) a.block_allowed = false;
  if (break_space) {
    a.block_plain_allowed = false;
    a.single_quoted_allowed = false;
  }
  if (space_break || tabs || special) {
    a.block_plain_allowed = false;
    a.single_quoted_allowed = false;
  }
  if (space_break || special) a.block_allowed = false;
  if (line_breaks) a.block_plain_allowed = false;
  if (block_indicators) a.block_plain_allowed = false;
  return a;
}

// go-yaml's isBase60Float: `[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?`.
bool IsBase60Float(std::string_view s) {
  if (s.empty() || s.find(':') == std::string_view::npos) return false;
  size_t i = 0;
  if (s[i] == '+' || s[i] == '-') ++i;
  if (i >= s.size() || !IsDigit(s[i])) return false;
  while (i < s.size() && (IsDigit(s[i]) || s[i] == '_')) ++i;
  size_t groups = 0;
  while (i < s.size() && s[i] == ':') {
    ++i;
    size_t start = i;
    while (i < s.size() && IsDigit(s[i]) && i - start < 2) ++i;
    const size_t n = i - start;
    if (n == 0 || (n == 2 && s[start] > '5')) return false;
    ++groups;
  }
  if (groups == 0) return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && (IsDigit(s[i]) || s[i] == '_')) ++i;
  }
  return i == s.size();
}

// Would `s`, written plain, read back as something other than this string?
bool NeedsQuotes(std::string_view s) {
  const Resolved r = ResolvePlain(s);
  // "<<" reads back as a merge key; go-yaml writes it plain, draplane quotes it.
  return r.kind != Resolved::Kind::kString || r.timestamp || IsBase60Float(s) || s == "<<";
}

void AppendDoubleQuoted(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t w = std::min(Utf8Width(c), s.size() - i);
    const bool bom = c == 0xEF && w == 3 && static_cast<unsigned char>(s[i + 1]) == 0xBB &&
                     static_cast<unsigned char>(s[i + 2]) == 0xBF;
    if (!IsPrintableAt(s, i) || bom || IsBreakAt(s, i) || c == '"' || c == '\\') {
      uint32_t v = w == 1 ? c : w == 2 ? (c & 0x1F) : w == 3 ? (c & 0x0F) : (c & 0x07);
      for (size_t k = 1; k < w; ++k) v = (v << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      i += w;
      out->push_back('\\');
      switch (v) {
        case 0x00:
          out->push_back('0');
          continue;
        case 0x07:
          out->push_back('a');
          continue;
        case 0x08:
          out->push_back('b');
          continue;
        case 0x09:
          out->push_back('t');
          continue;
        case 0x0A:
          out->push_back('n');
          continue;
        case 0x0B:
          out->push_back('v');
          continue;
        case 0x0C:
          out->push_back('f');
          continue;
        case 0x0D:
          out->push_back('r');
          continue;
        case 0x1B:
          out->push_back('e');
          continue;
        case 0x22:
          out->push_back('"');
          continue;
        case 0x5C:
          out->push_back('\\');
          continue;
        case 0x85:
          out->push_back('N');
          continue;
        case 0xA0:
          out->push_back('_');
          continue;
        case 0x2028:
          out->push_back('L');
          continue;
        case 0x2029:
          out->push_back('P');
          continue;
        default:
          break;
      }
      int digits = 2;
      if (v <= 0xFF) {
        out->push_back('x');
      } else if (v <= 0xFFFF) {
        out->push_back('u');
        digits = 4;
      } else {
        out->push_back('U');
        digits = 8;
      }
      for (int k = (digits - 1) * 4; k >= 0; k -= 4) out->push_back(kHex[(v >> k) & 0xF]);
      continue;
    }
    out->append(s.data() + i, w);
    i += w;
  }
  out->push_back('"');
}

void AppendSingleQuoted(std::string_view s, std::string* out) {
  out->push_back('\'');
  for (char c : s) {
    if (c == '\'') out->push_back('\'');
    out->push_back(c);
  }
  out->push_back('\'');
}

// A literal block scalar: `|` with go-yaml's indentation and chomping hints, then the lines
// indented by `indent` (empty lines stay empty).
void AppendLiteral(std::string_view s, size_t indent, std::string* out) {
  out->push_back('|');
  if (s[0] == ' ' || IsBreakAt(s, 0)) out->push_back('2');
  const bool ends_with_break = s.back() == '\n';
  const bool keep = ends_with_break && (s.size() == 1 || s[s.size() - 2] == '\n');
  if (!ends_with_break) {
    out->push_back('-');
  } else if (keep) {
    out->push_back('+');
  }
  std::string_view body = ends_with_break ? s.substr(0, s.size() - 1) : s;
  size_t pos = 0;
  while (true) {
    size_t end = body.find('\n', pos);
    std::string_view line = body.substr(pos, end == std::string_view::npos ? end : end - pos);
    out->push_back('\n');
    if (!line.empty()) {
      out->append(indent, ' ');
      out->append(line);
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
}

// Writes a string scalar. `key` selects key context (no block scalars); `indent` is the
// indentation of block scalar content.
void AppendString(std::string_view s, bool key, size_t indent, std::string* out) {
  const ScalarAnalysis a = Analyze(s);
  if (a.multiline) {
    if (!key && a.block_allowed) {
      AppendLiteral(s, indent, out);
    } else {
      AppendDoubleQuoted(s, out);
    }
    return;
  }
  if (NeedsQuotes(s)) {
    AppendDoubleQuoted(s, out);
  } else if (a.block_plain_allowed) {
    out->append(s);
  } else if (a.single_quoted_allowed) {
    AppendSingleQuoted(s, out);
  } else {
    AppendDoubleQuoted(s, out);
  }
}

void AppendScalar(const boost::json::value& v, size_t indent, std::string* out) {
  switch (v.kind()) {
    case boost::json::kind::null:
      out->append("null");
      return;
    case boost::json::kind::bool_:
      out->append(v.get_bool() ? "true" : "false");
      return;
    case boost::json::kind::int64:
      out->append(std::to_string(v.get_int64()));
      return;
    case boost::json::kind::uint64:
      out->append(std::to_string(v.get_uint64()));
      return;
    case boost::json::kind::double_:
      // go-yaml reads the JSON number back first: integral values come out as integers.
      out->append(api::internal::FormatGoG(v.get_double()));
      return;
    case boost::json::kind::string: {
      const boost::json::string& s = v.get_string();
      AppendString(std::string_view(s.data(), s.size()), false, indent, out);
      return;
    }
    case boost::json::kind::array:
      out->append("[]");
      return;
    case boost::json::kind::object:
      out->append("{}");
      return;
  }
}

bool IsEmptyCollectionOrScalar(const boost::json::value& v) {
  if (const boost::json::array* a = v.if_array()) return a->empty();
  if (const boost::json::object* o = v.if_object()) return o->empty();
  return true;
}

void AppendNode(const boost::json::value& v, size_t indent, bool inline_start, std::string* out);

void AppendIndent(size_t indent, std::string* out) { out->append(indent, ' '); }

// A block mapping whose first key may continue the current line (`inline_start`, after "- ").
void AppendMapping(const boost::json::object& obj, size_t indent, bool inline_start,
                   std::string* out) {
  std::vector<const boost::json::key_value_pair*> entries;
  entries.reserve(obj.size());
  for (const boost::json::key_value_pair& kv : obj) entries.push_back(&kv);
  std::stable_sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) {
    return YamlKeyLess(std::string_view(a->key().data(), a->key().size()),
                       std::string_view(b->key().data(), b->key().size()));
  });
  bool first = true;
  for (const boost::json::key_value_pair* kv : entries) {
    if (!(first && inline_start)) AppendIndent(indent, out);
    first = false;
    const std::string_view key(kv->key().data(), kv->key().size());
    const bool complex_key = key.size() > 128;
    if (complex_key) {
      // libyaml writes keys longer than 128 characters in the explicit `? key` form.
      out->append("? ");
      AppendString(key, true, indent + 2, out);
      out->push_back('\n');
      AppendIndent(indent, out);
      out->push_back(':');
    } else {
      AppendString(key, true, indent + 2, out);
      out->push_back(':');
    }
    const boost::json::value& value = kv->value();
    if (IsEmptyCollectionOrScalar(value)) {
      out->push_back(' ');
      AppendScalar(value, indent + 2, out);
      out->push_back('\n');
    } else if (value.is_array()) {
      // Sequences are not indented under their key.
      out->push_back('\n');
      AppendNode(value, indent, false, out);
    } else {
      out->push_back('\n');
      AppendNode(value, indent + 2, false, out);
    }
  }
}

void AppendSequence(const boost::json::array& arr, size_t indent, bool inline_start,
                    std::string* out) {
  bool first = true;
  for (const boost::json::value& item : arr) {
    if (!(first && inline_start)) AppendIndent(indent, out);
    first = false;
    out->append("- ");
    if (IsEmptyCollectionOrScalar(item)) {
      AppendScalar(item, indent + 2, out);
      out->push_back('\n');
    } else {
      AppendNode(item, indent + 2, true, out);
    }
  }
}

void AppendNode(const boost::json::value& v, size_t indent, bool inline_start, std::string* out) {
  if (const boost::json::object* obj = v.if_object(); obj != nullptr && !obj->empty()) {
    AppendMapping(*obj, indent, inline_start, out);
  } else if (const boost::json::array* arr = v.if_array(); arr != nullptr && !arr->empty()) {
    AppendSequence(*arr, indent, inline_start, out);
  } else {
    if (!inline_start) AppendIndent(indent, out);
    AppendScalar(v, indent + 2, out);
    out->push_back('\n');
  }
}

// Code points of a UTF-8 string (invalid bytes become U+FFFD).
std::vector<uint32_t> CodePoints(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t w = Utf8Width(c);
    if (i + w > s.size()) {
      out.push_back(0xFFFD);
      break;
    }
    uint32_t v = w == 1 ? c : w == 2 ? (c & 0x1F) : w == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < w; ++k) v = (v << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(v);
    i += w;
  }
  return out;
}

// unicode.IsLetter, exactly for ASCII and Latin-1; other code points count as letters unless
// they lie in the general punctuation / symbol blocks (an approximation: keys are nearly always
// ASCII).
bool IsLetterRune(uint32_t r) {
  if (r < 0x80) return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z');
  if (r < 0x100)
    return r == 0xAA || r == 0xB5 || r == 0xBA || (r >= 0xC0 && r != 0xD7 && r != 0xF7);
  if (r >= 0x2000 && r <= 0x2BFF) return false;
  if (r >= 0x3000 && r <= 0x303F) return false;
  if (r >= 0xFF00 && r <= 0xFF20) return false;
  return true;
}

bool IsDigitRune(uint32_t r) { return r >= '0' && r <= '9'; }

}  // namespace

bool YamlKeyLess(std::string_view a_text, std::string_view b_text) {
  // go-yaml sorter.go keyList.Less for two string keys.
  const std::vector<uint32_t> a = CodePoints(a_text);
  const std::vector<uint32_t> b = CodePoints(b_text);
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] == b[i]) continue;
    const bool al = IsLetterRune(a[i]);
    const bool bl = IsLetterRune(b[i]);
    if (al && bl) return a[i] < b[i];
    if (al || bl) return bl;
    uint64_t an = 0, bn = 0;  // Go's int64 arithmetic wraps; unsigned keeps that defined here
    if (a[i] == '0' || b[i] == '0') {
      for (size_t j = i; j-- > 0 && IsDigitRune(a[j]);) {
        if (a[j] != '0') {
          an = 1;
          bn = 1;
          break;
        }
      }
    }
    size_t ai = i, bi = i;
    for (; ai < a.size() && IsDigitRune(a[ai]); ++ai) an = an * 10 + (a[ai] - '0');
    for (; bi < b.size() && IsDigitRune(b[bi]); ++bi) bn = bn * 10 + (b[bi] - '0');
    if (an != bn) return static_cast<int64_t>(an) < static_cast<int64_t>(bn);
    if (ai != bi) return ai < bi;
    return a[i] < b[i];
  }
  return a.size() < b.size();
}

StatusOr<boost::json::value> ResolvePlainScalar(std::string_view text) {
  boost::json::value out;
  std::optional<std::string> error = ResolvedToJson(ResolvePlain(text), text, {}, &out);
  if (error) return InvalidArgumentError(*error);
  return out;
}

StatusOr<std::vector<YamlDocument>> ParseYaml(std::string_view text, const ParseLimits& limits,
                                              boost::json::storage_ptr sp) {
  if (text.size() > limits.max_bytes) {
    return InvalidArgumentError("input of " + std::to_string(text.size()) +
                                " bytes is larger than the limit of " +
                                std::to_string(limits.max_bytes) + " bytes");
  }
  // YAML, and go-yaml under kubectl, read a lone carriage return as a line break; yaml-cpp reads
  // it as content. Rewriting it to LF keeps every offset, so lines count as go-yaml counts them.
  std::string with_line_feeds;
  for (size_t cr = text.find('\r'); cr != std::string_view::npos; cr = text.find('\r', cr + 1)) {
    if (cr + 1 < text.size() && text[cr + 1] == '\n') continue;
    if (with_line_feeds.empty()) with_line_feeds.assign(text);
    with_line_feeds[cr] = '\n';
  }
  if (!with_line_feeds.empty()) text = with_line_feeds;
  const char* problem = nullptr;
  if (size_t bad = FindBadCharacter(text, &problem); bad != std::string_view::npos) {
    int line = 1;
    for (size_t i = 0; i < bad; ++i) line += text[i] == '\n' ? 1 : 0;
    return InvalidArgumentError("1: line " + std::to_string(line) + ": " + problem);
  }
  // yaml-cpp 0.7 gives up at 500 nested nodes (scalars count) with a bare "bad file". YAML is
  // held to kMaxYamlDepth collections, counted exactly by the builder, which fails before yaml-cpp
  // recurses that far. The estimate (at most twice the real depth, plus one indented line) only
  // turns hostile input away early, so it never rejects a document the builder would accept.
  ParseLimits yaml_limits = limits;
  yaml_limits.max_depth = std::min(limits.max_depth, kMaxYamlDepth);
  const std::string too_deep =
      "nesting deeper than " + std::to_string(yaml_limits.max_depth) + " levels";
  int deepest_document = 1;
  int deepest_line = 0;
  int open_quote_line = -1;
  if (EstimateDepth(text, &deepest_document, &deepest_line, &open_quote_line) >
      2 * yaml_limits.max_depth + 2) {
    return DocumentError(static_cast<size_t>(deepest_document), deepest_line + 1, too_deep);
  }
  // yaml-cpp ends an unterminated quoted scalar at the end of the input without complaint.
  if (open_quote_line >= 0) {
    return InvalidArgumentError("1: line " + std::to_string(open_quote_line + 1) +
                                ": found unexpected end of stream while scanning a quoted scalar");
  }

  ViewStreambuf buf(text);
  std::istream in(&buf);
  std::vector<YamlDocument> docs;
  // Every JSON value of a document needs at least one byte of input, except alias expansions.
  JsonBuilder builder(yaml_limits, text.size() + limits.max_alias_expansion, sp);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
      if (builder.failed()) {
        return DocumentError(docs.size() + 1, builder.error_line(), builder.error());
      }
      // yaml-cpp starts a new document wherever a block collection ends (`- a` then `b: c`);
      // YAML (and go-yaml) require `---` before every document but the first.
      const size_t start = builder.document_offset();
      if (!docs.empty() && text.substr(std::min(start, text.size()), 3) != "---") {
        return DocumentError(docs.size() + 1, builder.document_line(),
                             "did not find expected <document start>");
      }
      docs.push_back(YamlDocument{builder.TakeDocument(), builder.document_line()});
    }
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp reached its own limit inside a document the builder already failed.
    return DocumentError(docs.size() + 1, e.mark.line + 1, too_deep);
  } catch (const YAML::Exception& e) {
    return DocumentError(docs.size() + 1, e.mark.line + 1, e.msg);
  } catch (const std::exception& e) {
    return DocumentError(docs.size() + 1, 0, e.what());
  }
  return docs;
}

void AppendYaml(const boost::json::value& value, std::string* out) {
  AppendNode(value, 0, false, out);
}

std::string WriteYaml(const boost::json::value& value) {
  std::string out;
  AppendYaml(value, &out);
  return out;
}

}  // namespace draplane::api::codec
