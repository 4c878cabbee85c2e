// Writing YAML (yaml.h's WriteYaml, AppendYaml, YamlKeyLess) as go-yaml v2's emitter does.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/codec/internal/yaml_scalar.h"
#include "api/codec/yaml.h"
#include "api/meta/codec_support.h"

namespace draplane::api::codec {
namespace {

using internal::IsDigit;
using internal::Resolved;
using internal::ResolvePlain;

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

void AppendYaml(const boost::json::value& value, std::string* out) {
  AppendNode(value, 0, false, out);
}

std::string WriteYaml(const boost::json::value& value) {
  std::string out;
  AppendYaml(value, &out);
  return out;
}

}  // namespace draplane::api::codec
