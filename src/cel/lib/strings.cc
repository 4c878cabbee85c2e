// String extensions, version 2 (cel-go ext/strings.go), rewritten. String positions count
// code points. `format` is not provided (see docs/design/cel.md).
#include <string>
#include <vector>

#include "cel/internal/utf8.h"
#include "cel/lib/helpers.h"
#include "cel/lib/library.h"

namespace draplane::cel {
namespace {

using internal::Error;
using internal::Global;
using internal::Member;

std::vector<std::string_view> Runes(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 1;
    internal::DecodeUtf8(s.substr(i), &len);
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

Value IndexOutOfRange(EvalContext& ctx, int64_t i) {
  return Error(ctx, "index out of range: " + std::to_string(i));
}

Value CharAt(EvalContext& ctx, const Value* a) {
  std::string_view s = a[0].string_value();
  int64_t i = a[1].int_value();
  int64_t n = static_cast<int64_t>(internal::CodePointCount(s));
  if (i < 0 || i > n) return IndexOutOfRange(ctx, i);
  if (i == n) return Value::String("");
  size_t b = internal::ByteOffsetOfCodePoint(s, static_cast<size_t>(i));
  size_t len = 1;
  internal::DecodeUtf8(s.substr(b), &len);
  return Value::String(s.substr(b, len));
}

// Code-point index of `sub` in `runes` at or after `off`, or -1.
int64_t FindRunes(const std::vector<std::string_view>& runes,
                  const std::vector<std::string_view>& sub, int64_t off, bool last) {
  int64_t n = static_cast<int64_t>(runes.size()), m = static_cast<int64_t>(sub.size());
  auto match_at = [&](int64_t i) {
    for (int64_t j = 0; j < m; ++j) {
      if (runes[i + j] != sub[j]) return false;
    }
    return true;
  };
  if (!last) {
    for (int64_t i = off; i + m <= n; ++i) {
      if (match_at(i)) return i;
    }
    return -1;
  }
  for (int64_t i = off; i >= 0; --i) {
    if (i + m <= n && match_at(i)) return i;
  }
  return -1;
}

Value IndexOf(EvalContext&, const Value* a) {
  std::string_view s = a[0].string_value(), sub = a[1].string_value();
  if (sub.empty()) return Value::Int(0);
  return Value::Int(FindRunes(Runes(s), Runes(sub), 0, false));
}
Value IndexOfOffset(EvalContext& ctx, const Value* a) {
  std::string_view s = a[0].string_value(), sub = a[1].string_value();
  int64_t off = a[2].int_value();
  if (sub.empty()) return Value::Int(off);
  if (off < 0) return IndexOutOfRange(ctx, off);
  auto runes = Runes(s);
  if (off >= static_cast<int64_t>(runes.size())) return Value::Int(-1);
  return Value::Int(FindRunes(runes, Runes(sub), off, false));
}
Value LastIndexOf(EvalContext&, const Value* a) {
  std::string_view s = a[0].string_value(), sub = a[1].string_value();
  auto runes = Runes(s);
  if (sub.empty()) return Value::Int(static_cast<int64_t>(runes.size()));
  auto subr = Runes(sub);
  int64_t start = static_cast<int64_t>(runes.size()) - static_cast<int64_t>(subr.size());
  if (start < 0) return Value::Int(-1);
  return Value::Int(FindRunes(runes, subr, start, true));
}
Value LastIndexOfOffset(EvalContext& ctx, const Value* a) {
  std::string_view s = a[0].string_value(), sub = a[1].string_value();
  int64_t off = a[2].int_value();
  if (sub.empty()) return Value::Int(off);
  if (off < 0) return IndexOutOfRange(ctx, off);
  auto runes = Runes(s);
  auto subr = Runes(sub);
  int64_t n = static_cast<int64_t>(runes.size()), m = static_cast<int64_t>(subr.size());
  if (off >= n) return Value::Int(-1);
  if (off > n - m) off = n - m;
  if (off < 0) return Value::Int(-1);
  return Value::Int(FindRunes(runes, subr, off, true));
}

Value LowerAscii(EvalContext& ctx, const Value* a) {
  std::string s(a[0].string_value());
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return MakeString(ctx.arena, s);
}
Value UpperAscii(EvalContext& ctx, const Value* a) {
  std::string s(a[0].string_value());
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return MakeString(ctx.arena, s);
}

// Go strings.Replace(s, old, new, n); n < 0 replaces all.
Value DoReplace(EvalContext& ctx, std::string_view s, std::string_view from, std::string_view to,
                int64_t n) {
  if (n == 0 || from == to) return Value::String(s);
  // Size the result first so a huge expansion fails before allocating.
  uint64_t count = 0;
  std::vector<std::string_view> runes;
  if (from.empty()) {
    runes = Runes(s);
    count = runes.size() + 1;
  } else {
    for (size_t pos = s.find(from); pos != std::string_view::npos;
         pos = s.find(from, pos + from.size())) {
      ++count;
    }
  }
  if (n > 0 && count > static_cast<uint64_t>(n)) count = static_cast<uint64_t>(n);
  uint64_t size = s.size() - count * from.size() + count * to.size();
  if (size > Arena::kDefaultBudget) return MemoryLimitExceeded();
  std::string out;
  out.reserve(size);
  uint64_t done = 0;
  if (from.empty()) {
    for (std::string_view r : runes) {
      if (done < count) {
        out += to;
        ++done;
      }
      out += r;
    }
    if (done < count) out += to;
    return MakeString(ctx.arena, out);
  }
  size_t pos = 0;
  while (done < count) {
    size_t hit = s.find(from, pos);
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
    ++done;
  }
  out.append(s.substr(pos));
  return MakeString(ctx.arena, out);
}
Value Replace(EvalContext& ctx, const Value* a) {
  return DoReplace(ctx, a[0].string_value(), a[1].string_value(), a[2].string_value(), -1);
}
Value ReplaceN(EvalContext& ctx, const Value* a) {
  return DoReplace(ctx, a[0].string_value(), a[1].string_value(), a[2].string_value(),
                   a[3].int_value());
}

// Go strings.SplitN.
Value DoSplit(EvalContext& ctx, std::string_view s, std::string_view sep, int64_t n) {
  std::vector<Value> parts;
  if (n == 0) return MakeList(ctx.arena, nullptr, 0);
  if (sep.empty()) {
    auto runes = Runes(s);
    for (size_t i = 0; i < runes.size(); ++i) {
      if (n > 0 && static_cast<int64_t>(parts.size()) == n - 1) {
        size_t b = static_cast<size_t>(runes[i].data() - s.data());
        parts.push_back(Value::String(s.substr(b)));
        break;
      }
      parts.push_back(Value::String(runes[i]));
    }
    return MakeList(ctx.arena, parts.data(), parts.size());
  }
  size_t pos = 0;
  while (n < 0 || static_cast<int64_t>(parts.size()) < n - 1) {
    size_t hit = s.find(sep, pos);
    if (hit == std::string_view::npos) break;
    parts.push_back(Value::String(s.substr(pos, hit - pos)));
    pos = hit + sep.size();
  }
  parts.push_back(Value::String(s.substr(pos)));
  return MakeList(ctx.arena, parts.data(), parts.size());
}
Value Split(EvalContext& ctx, const Value* a) {
  return DoSplit(ctx, a[0].string_value(), a[1].string_value(), -1);
}
Value SplitN(EvalContext& ctx, const Value* a) {
  return DoSplit(ctx, a[0].string_value(), a[1].string_value(), a[2].int_value());
}

Value DoSubstring(EvalContext& ctx, std::string_view s, int64_t start, int64_t end) {
  int64_t n = static_cast<int64_t>(internal::CodePointCount(s));
  if (start < 0 || start > n) return IndexOutOfRange(ctx, start);
  if (end < 0 || end > n) return IndexOutOfRange(ctx, end);
  if (start > end) {
    return Error(ctx, "invalid substring range. start: " + std::to_string(start) +
                          ", end: " + std::to_string(end));
  }
  size_t b = internal::ByteOffsetOfCodePoint(s, static_cast<size_t>(start));
  size_t e = internal::ByteOffsetOfCodePoint(s, static_cast<size_t>(end));
  return Value::String(s.substr(b, e - b));
}
Value Substring(EvalContext& ctx, const Value* a) {
  std::string_view s = a[0].string_value();
  return DoSubstring(ctx, s, a[1].int_value(), static_cast<int64_t>(internal::CodePointCount(s)));
}
Value SubstringRange(EvalContext& ctx, const Value* a) {
  return DoSubstring(ctx, a[0].string_value(), a[1].int_value(), a[2].int_value());
}

// Go unicode.IsSpace.
bool IsSpace(char32_t c) {
  switch (c) {
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case ' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}
Value Trim(EvalContext&, const Value* a) {
  std::string_view s = a[0].string_value();
  auto runes = Runes(s);
  size_t lo = 0, hi = runes.size();
  auto space = [](std::string_view r) {
    size_t len;
    return IsSpace(internal::DecodeUtf8(r, &len));
  };
  while (lo < hi && space(runes[lo])) ++lo;
  while (hi > lo && space(runes[hi - 1])) --hi;
  if (lo == hi) return Value::String("");
  size_t b = static_cast<size_t>(runes[lo].data() - s.data());
  size_t e = static_cast<size_t>(runes[hi - 1].data() - s.data()) + runes[hi - 1].size();
  return Value::String(s.substr(b, e - b));
}

Value DoJoin(EvalContext& ctx, const ListValue& l, std::string_view sep) {
  uint64_t size = l.size == 0 ? 0 : uint64_t{l.size - 1} * sep.size();
  for (uint32_t i = 0; i < l.size; ++i) {
    if (l.elems[i].kind() == ValueKind::kString) size += l.elems[i].string_value().size();
  }
  if (size > Arena::kDefaultBudget) return MemoryLimitExceeded();
  std::string out;
  out.reserve(size);
  for (uint32_t i = 0; i < l.size; ++i) {
    if (l.elems[i].kind() != ValueKind::kString) return NoSuchOverload();
    if (i) out += sep;
    out += l.elems[i].string_value();
  }
  return MakeString(ctx.arena, out);
}
Value Join(EvalContext& ctx, const Value* a) { return DoJoin(ctx, a[0].list(), ""); }
Value JoinSep(EvalContext& ctx, const Value* a) {
  return DoJoin(ctx, a[0].list(), a[1].string_value());
}

Value Quote(EvalContext& ctx, const Value* a) {
  std::string_view s = a[0].string_value();
  std::string out = "\"";
  size_t i = 0;
  while (i < s.size()) {
    size_t len = internal::ValidUtf8SequenceLength(s.substr(i));
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    char c = s[i];
    switch (c) {
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out.append(s.substr(i, len));
        break;
    }
    i += len;
  }
  out += "\"";
  return MakeString(ctx.arena, out);
}

}  // namespace

void RegisterStringsLibrary(FunctionRegistry& r) {
  const Type S = Type::String(), I = Type::Int();
  using internal::CostTraversal;
  using internal::CostTraverseArg0;
  using internal::CostTraverseArg0Twice;
  using internal::CostTraverseResultTwice;
  Member(r, "charAt", "string_char_at_int", {S, I}, S, CharAt);
  Member(r, "indexOf", "string_index_of_string", {S, S}, I, IndexOf, CostTraversal);
  Member(r, "indexOf", "string_index_of_string_int", {S, S, I}, I, IndexOfOffset, CostTraversal);
  Member(r, "lastIndexOf", "string_last_index_of_string", {S, S}, I, LastIndexOf, CostTraversal);
  Member(r, "lastIndexOf", "string_last_index_of_string_int", {S, S, I}, I, LastIndexOfOffset,
         CostTraversal);
  Member(r, "lowerAscii", "string_lower_ascii", {S}, S, LowerAscii, CostTraverseArg0);
  Member(r, "upperAscii", "string_upper_ascii", {S}, S, UpperAscii, CostTraverseArg0);
  Member(r, "replace", "string_replace_string_string", {S, S, S}, S, Replace,
         CostTraverseArg0Twice);
  Member(r, "replace", "string_replace_string_string_int", {S, S, S, I}, S, ReplaceN,
         CostTraverseArg0Twice);
  Member(r, "split", "string_split_string", {S, S}, Type::List(S), Split, CostTraverseArg0Twice);
  Member(r, "split", "string_split_string_int", {S, S, I}, Type::List(S), SplitN,
         CostTraverseArg0Twice);
  Member(r, "substring", "string_substring_int", {S, I}, S, Substring, CostTraverseArg0);
  Member(r, "substring", "string_substring_int_int", {S, I, I}, S, SubstringRange,
         CostTraverseArg0);
  Member(r, "trim", "string_trim", {S}, S, Trim, CostTraverseArg0);
  Member(r, "join", "list_join", {Type::List(S)}, S, Join, CostTraverseResultTwice);
  Member(r, "join", "list_join_string", {Type::List(S), S}, S, JoinSep, CostTraverseResultTwice);
  Global(r, "strings.quote", "strings_quote", {S}, S, Quote);
}

}  // namespace draplane::cel
