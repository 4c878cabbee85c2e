#include "cel/parser/ast.h"

#include <algorithm>
#include <cstdio>

#include "cel/internal/utf8.h"

namespace draplane::cel {

SourceLocation LocationOf(const Ast& ast, int32_t position) {
  SourceLocation loc;
  int32_t line_start = 0;
  for (int32_t start : ast.line_offsets) {
    if (start > position) break;
    ++loc.line;
    line_start = start;
  }
  loc.column = position - line_start;
  return loc;
}

std::string FormatError(const Ast& ast, int32_t position, const std::string& message) {
  SourceLocation loc = LocationOf(ast, position);
  std::string out = "ERROR: <input>:" + std::to_string(loc.line) + ":" +
                    std::to_string(loc.column + 1) + ": " + message;
  // The source line, tabs replaced by spaces, and a caret under the column; wide (multi-byte)
  // characters get full-width dots as cel-go prints them.
  std::string_view src = ast.source;
  size_t line_begin = 0;
  for (int32_t l = 1; l < loc.line; ++l) {
    size_t nl = src.find('\n', line_begin);
    if (nl == std::string_view::npos) return out;
    line_begin = nl + 1;
  }
  size_t line_end = src.find('\n', line_begin);
  std::string line(src.substr(line_begin, line_end == std::string_view::npos
                                              ? std::string_view::npos
                                              : line_end - line_begin));
  std::replace(line.begin(), line.end(), '\t', ' ');
  out += "\n | " + line + "\n | ";
  std::string_view rest = line;
  for (int32_t i = 0; i < loc.column && !rest.empty(); ++i) {
    size_t len = internal::ValidUtf8SequenceLength(rest);
    if (len == 0) len = 1;
    out += len > 1 ? "\xEF\xBC\x8E" : ".";
    rest.remove_prefix(len);
  }
  size_t len = rest.empty() ? 1 : internal::ValidUtf8SequenceLength(rest);
  out += len > 1 ? "\xEF\xBC\xBE" : "^";
  return out;
}

std::string FormatIssues(const Ast& ast, const std::vector<Issue>& issues) {
  std::string out;
  for (const Issue& issue : issues) {
    if (!out.empty()) out += "\n";
    out += FormatError(ast, issue.position, issue.message);
  }
  return out;
}

namespace {

void AppendQuoted(std::string* out, const std::string& s, char prefix) {
  if (prefix) out->push_back(prefix);
  out->push_back('"');
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      *out += buf;
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

void Debug(const Expr& e, std::string* out) {
  switch (e.kind) {
    case ExprKind::kConstant: {
      const Constant& c = e.constant;
      switch (c.kind) {
        case ConstantKind::kNull:
          *out += "null";
          break;
        case ConstantKind::kBool:
          *out += c.bool_value ? "true" : "false";
          break;
        case ConstantKind::kInt:
          *out += std::to_string(c.int_value);
          break;
        case ConstantKind::kUint:
          *out += std::to_string(c.uint_value) + "u";
          break;
        case ConstantKind::kDouble: {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%g", c.double_value);
          *out += buf;
          if (std::string_view(buf).find_first_of(".en") == std::string_view::npos) *out += ".0";
          break;
        }
        case ConstantKind::kString:
          AppendQuoted(out, c.string_value, 0);
          break;
        case ConstantKind::kBytes:
          AppendQuoted(out, c.string_value, 'b');
          break;
      }
      return;
    }
    case ExprKind::kIdent:
      *out += e.name;
      return;
    case ExprKind::kSelect:
      if (e.test_only) *out += "has(";
      Debug(*e.operand, out);
      *out += "." + e.name;
      if (e.test_only) *out += ")";
      return;
    case ExprKind::kCall:
      if (e.operand) {
        Debug(*e.operand, out);
        *out += ".";
      }
      *out += e.name + "(";
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i) *out += ", ";
        Debug(*e.args[i], out);
      }
      *out += ")";
      return;
    case ExprKind::kList:
      *out += "[";
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i) *out += ", ";
        if (std::find(e.optional_indices.begin(), e.optional_indices.end(),
                      static_cast<int32_t>(i)) != e.optional_indices.end()) {
          *out += "?";
        }
        Debug(*e.args[i], out);
      }
      *out += "]";
      return;
    case ExprKind::kMap:
      *out += "{";
      for (size_t i = 0; i < e.entries.size(); ++i) {
        if (i) *out += ", ";
        if (e.entries[i].optional) *out += "?";
        Debug(*e.entries[i].key, out);
        *out += ": ";
        Debug(*e.entries[i].value, out);
      }
      *out += "}";
      return;
    case ExprKind::kComprehension:
      *out += "__comprehension__(" + e.iter_var;
      if (!e.iter_var2.empty()) *out += ", " + e.iter_var2;
      *out += ", ";
      Debug(*e.iter_range, out);
      *out += ", " + e.accu_var + ", ";
      Debug(*e.accu_init, out);
      *out += ", ";
      Debug(*e.loop_condition, out);
      *out += ", ";
      Debug(*e.loop_step, out);
      *out += ", ";
      Debug(*e.result, out);
      *out += ")";
      return;
  }
}

}  // namespace

std::string DebugString(const Expr& expr) {
  std::string out;
  Debug(expr, &out);
  return out;
}

}  // namespace draplane::cel
