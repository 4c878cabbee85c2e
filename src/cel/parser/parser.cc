#include "cel/parser/parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "cel/internal/utf8.h"
#include "cel/parser/unescape.h"

namespace draplane::cel {
namespace {

// ---------------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------------

enum class Tok : uint8_t {
  kEof,
  kError,
  kIdent,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kTrue,
  kFalse,
  kNull,
  kIn,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kDot,
  kComma,
  kColon,
  kQuestion,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kPercent,
  kBang,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
};

struct Token {
  Tok kind = Tok::kEof;
  int32_t byte_begin = 0;
  int32_t byte_end = 0;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsIdentStart(char c) { return IsLetter(c) || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

class Lexer {
 public:
  explicit Lexer(const std::string& text) : text_(text) {}

  // Scans the next token starting at byte offset `pos`. On a malformed token returns kError
  // with `byte_begin` at the offending character.
  Token Next(int32_t pos) const {
    const int32_t n = static_cast<int32_t>(text_.size());
    // Skip whitespace and comments.
    while (pos < n) {
      char c = text_[pos];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f') {
        ++pos;
      } else if (c == '/' && pos + 1 < n && text_[pos + 1] == '/') {
        while (pos < n && text_[pos] != '\n') ++pos;
      } else {
        break;
      }
    }
    Token t;
    t.byte_begin = pos;
    if (pos >= n) {
      t.kind = Tok::kEof;
      t.byte_end = pos;
      return t;
    }
    char c = text_[pos];
    auto single = [&](Tok k, int len) {
      t.kind = k;
      t.byte_end = pos + len;
      return t;
    };
    auto peek = [&](int off) -> char { return pos + off < n ? text_[pos + off] : '\0'; };
    switch (c) {
      case '(':
        return single(Tok::kLParen, 1);
      case ')':
        return single(Tok::kRParen, 1);
      case '[':
        return single(Tok::kLBracket, 1);
      case ']':
        return single(Tok::kRBracket, 1);
      case '{':
        return single(Tok::kLBrace, 1);
      case '}':
        return single(Tok::kRBrace, 1);
      case ',':
        return single(Tok::kComma, 1);
      case ':':
        return single(Tok::kColon, 1);
      case '?':
        return single(Tok::kQuestion, 1);
      case '+':
        return single(Tok::kPlus, 1);
      case '-':
        return single(Tok::kMinus, 1);
      case '*':
        return single(Tok::kStar, 1);
      case '/':
        return single(Tok::kSlash, 1);
      case '%':
        return single(Tok::kPercent, 1);
      case '!':
        return peek(1) == '=' ? single(Tok::kNe, 2) : single(Tok::kBang, 1);
      case '=':
        if (peek(1) == '=') return single(Tok::kEq, 2);
        return single(Tok::kError, 1);
      case '<':
        return peek(1) == '=' ? single(Tok::kLe, 2) : single(Tok::kLt, 1);
      case '>':
        return peek(1) == '=' ? single(Tok::kGe, 2) : single(Tok::kGt, 1);
      case '&':
        if (peek(1) == '&') return single(Tok::kAnd, 2);
        return single(Tok::kError, 1);
      case '|':
        if (peek(1) == '|') return single(Tok::kOr, 2);
        return single(Tok::kError, 1);
      case '.':
        if (IsDigit(peek(1))) return Number(pos);
        return single(Tok::kDot, 1);
      case '"':
      case '\'':
        return String(pos, pos, Tok::kString);
      default:
        break;
    }
    if (IsDigit(c)) return Number(pos);
    if (IsIdentStart(c)) {
      // String prefixes: r, R (raw); b, B (bytes) optionally followed by r/R.
      if (c == 'r' || c == 'R') {
        if (peek(1) == '"' || peek(1) == '\'') return String(pos, pos + 1, Tok::kString);
      } else if (c == 'b' || c == 'B') {
        if (peek(1) == '"' || peek(1) == '\'') return String(pos, pos + 1, Tok::kBytes);
        if ((peek(1) == 'r' || peek(1) == 'R') && (peek(2) == '"' || peek(2) == '\'')) {
          return String(pos, pos + 1, Tok::kBytes);
        }
      }
      int32_t end = pos;
      while (end < n && IsIdentChar(text_[end])) ++end;
      std::string_view word(text_.data() + pos, end - pos);
      t.byte_end = end;
      if (word == "true") {
        t.kind = Tok::kTrue;
      } else if (word == "false") {
        t.kind = Tok::kFalse;
      } else if (word == "null") {
        t.kind = Tok::kNull;
      } else if (word == "in") {
        t.kind = Tok::kIn;
      } else {
        t.kind = Tok::kIdent;
      }
      return t;
    }
    return single(Tok::kError, 1);
  }

 private:
  Token Number(int32_t pos) const {
    const int32_t n = static_cast<int32_t>(text_.size());
    Token t;
    t.byte_begin = pos;
    int32_t p = pos;
    if (text_[p] == '0' && p + 1 < n && text_[p + 1] == 'x' && p + 2 < n &&
        IsHexDigit(text_[p + 2])) {
      p += 2;
      while (p < n && IsHexDigit(text_[p])) ++p;
      if (p < n && (text_[p] == 'u' || text_[p] == 'U')) {
        t.kind = Tok::kUint;
        t.byte_end = p + 1;
      } else {
        t.kind = Tok::kInt;
        t.byte_end = p;
      }
      return t;
    }
    while (p < n && IsDigit(text_[p])) ++p;
    bool is_float = false;
    if (p + 1 < n && text_[p] == '.' && IsDigit(text_[p + 1])) {
      is_float = true;
      p += 1;
      while (p < n && IsDigit(text_[p])) ++p;
    }
    if (p < n && (text_[p] == 'e' || text_[p] == 'E')) {
      int32_t q = p + 1;
      if (q < n && (text_[q] == '+' || text_[q] == '-')) ++q;
      if (q < n && IsDigit(text_[q])) {
        while (q < n && IsDigit(text_[q])) ++q;
        p = q;
        is_float = true;
      }
    }
    if (is_float) {
      t.kind = Tok::kDouble;
      t.byte_end = p;
      return t;
    }
    if (p < n && (text_[p] == 'u' || text_[p] == 'U')) {
      t.kind = Tok::kUint;
      t.byte_end = p + 1;
      return t;
    }
    t.kind = Tok::kInt;
    t.byte_end = p;
    return t;
  }

  // Scans a quoted literal; `begin` is where the prefix starts, `quote_pos` the first quote
  // (after any b/B prefix; a r/R prefix is skipped here).
  Token String(int32_t begin, int32_t quote_pos, Tok kind) const {
    const int32_t n = static_cast<int32_t>(text_.size());
    Token t;
    t.byte_begin = begin;
    t.kind = kind;
    int32_t p = quote_pos;
    bool raw = false;
    if (text_[p] == 'r' || text_[p] == 'R') {
      raw = true;
      ++p;
    }
    char q = text_[p];
    bool triple = p + 2 < n && text_[p + 1] == q && text_[p + 2] == q;
    p += triple ? 3 : 1;
    while (true) {
      if (p >= n) {
        t.kind = Tok::kError;
        t.byte_end = n;
        return t;
      }
      char c = text_[p];
      if (triple) {
        if (c == q && p + 2 < n && text_[p + 1] == q && text_[p + 2] == q) {
          t.byte_end = p + 3;
          return t;
        }
        if (c == '\\' && !raw) {
          p += 2;
          continue;
        }
        ++p;
        continue;
      }
      if (c == '\n' || c == '\r') {
        t.kind = Tok::kError;
        t.byte_end = p;
        return t;
      }
      if (c == q) {
        t.byte_end = p + 1;
        return t;
      }
      if (c == '\\' && !raw) {
        p += 2;
        continue;
      }
      ++p;
    }
  }

  const std::string& text_;
};

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

constexpr char kAccuName[] = "@result";
constexpr char kUnusedIterVar[] = "#unused";

bool IsReserved(std::string_view id) {
  static constexpr std::string_view kReserved[] = {
      "as",       "break",     "const",  "continue", "else", "false", "for",
      "function", "if",        "import", "in",       "let",  "loop",  "null",
      "package",  "namespace", "return", "true",     "var",  "void",  "while"};
  for (std::string_view r : kReserved) {
    if (r == id) return true;
  }
  return false;
}

// Replaces invalid UTF-8 sequences with U+FFFD, as Go's []rune conversion does.
std::string SanitizeUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    size_t len = internal::ValidUtf8SequenceLength(in.substr(i));
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(in.substr(i, len));
      i += len;
    }
  }
  return out;
}

class Parser {
 public:
  Parser(std::string source, const ParserOptions& options)
      : options_(options), text_(std::move(source)), lexer_(text_) {
    // cp_at_byte_[i] is the number of code points that start before byte i.
    cp_at_byte_.resize(text_.size() + 1);
    int32_t cp = 0;
    for (size_t i = 0; i < text_.size(); ++i) {
      cp_at_byte_[i] = cp;
      if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++cp;
      if (i > 0 && text_[i - 1] == '\n') line_starts_.push_back(cp_at_byte_[i]);
    }
    cp_at_byte_[text_.size()] = cp;
    if (!text_.empty() && text_.back() == '\n') line_starts_.push_back(cp);
  }

  ParseResult Run() {
    ParseResult result;
    int32_t code_points = cp_at_byte_[text_.size()];
    if (code_points > options_.max_code_points) {
      result.issues.push_back(
          {0, "expression code point size exceeds limit: size: " + std::to_string(code_points) +
                  ", limit " + std::to_string(options_.max_code_points)});
      result.ast.source = text_;
      return result;
    }
    Advance();
    ExprPtr root = ParseExpr();
    if (!failed_ && tok_.kind != Tok::kEof) SyntaxError(tok_, "unexpected token");
    result.ast.source = text_;
    result.ast.line_offsets = line_starts_;
    if (failed_) {
      result.issues.push_back(std::move(error_));
      return result;
    }
    result.ast.root = std::move(root);
    result.ast.max_id = next_id_ - 1;
    return result;
  }

 private:
  // --- token handling -------------------------------------------------------------------------

  void Advance() {
    prev_ = tok_;
    tok_ = lexer_.Next(tok_.byte_end);
  }
  int32_t Pos(const Token& t) const { return cp_at_byte_[t.byte_begin]; }
  std::string_view Text(const Token& t) const {
    return std::string_view(text_).substr(t.byte_begin, t.byte_end - t.byte_begin);
  }
  bool Accept(Tok kind) {
    if (tok_.kind != kind) return false;
    Advance();
    return true;
  }
  bool Expect(Tok kind, const char* what) {
    if (tok_.kind == kind) {
      Advance();
      return true;
    }
    SyntaxError(tok_, std::string("expecting ") + what);
    return false;
  }

  void Fail(int32_t position, std::string message) {
    if (failed_) return;
    failed_ = true;
    error_ = {position, std::move(message)};
  }
  void SyntaxError(const Token& at, const std::string& expecting) {
    std::string found;
    switch (at.kind) {
      case Tok::kEof:
        found = "<EOF>";
        break;
      case Tok::kError:
        Fail(Pos(at), "Syntax error: token recognition error at: '" + std::string(Text(at)) + "'");
        return;
      default:
        found = std::string(Text(at));
        break;
    }
    Fail(Pos(at), "Syntax error: mismatched input '" + found + "' " + expecting);
  }

  // --- node construction ----------------------------------------------------------------------

  ExprPtr NewExpr(ExprKind kind, int32_t position) {
    auto e = std::make_unique<Expr>();
    e->id = next_id_++;
    e->kind = kind;
    e->position = position;
    return e;
  }
  // Computes the height of `e` from its children and enforces the recursion limit.
  ExprPtr Finish(ExprPtr e) {
    int32_t h = 0;
    auto take = [&h](const ExprPtr& c) {
      if (c && c->height > h) h = c->height;
    };
    take(e->operand);
    for (const ExprPtr& a : e->args) take(a);
    for (const MapEntry& m : e->entries) {
      take(m.key);
      take(m.value);
    }
    take(e->iter_range);
    take(e->accu_init);
    take(e->loop_condition);
    take(e->loop_step);
    take(e->result);
    e->height = h + 1;
    if (e->height > options_.max_recursion_depth) {
      Fail(e->position,
           "expression recursion limit exceeded: " + std::to_string(options_.max_recursion_depth));
    }
    return e;
  }
  ExprPtr NewConst(int32_t pos, Constant c) {
    ExprPtr e = NewExpr(ExprKind::kConstant, pos);
    e->constant = std::move(c);
    return Finish(std::move(e));
  }
  ExprPtr NewBool(int32_t pos, bool v) {
    Constant c;
    c.kind = ConstantKind::kBool;
    c.bool_value = v;
    return NewConst(pos, std::move(c));
  }
  ExprPtr NewInt(int32_t pos, int64_t v) {
    Constant c;
    c.kind = ConstantKind::kInt;
    c.int_value = v;
    return NewConst(pos, std::move(c));
  }
  ExprPtr NewStringConst(int32_t pos, std::string v) {
    Constant c;
    c.kind = ConstantKind::kString;
    c.string_value = std::move(v);
    return NewConst(pos, std::move(c));
  }
  ExprPtr NewIdent(int32_t pos, std::string name) {
    ExprPtr e = NewExpr(ExprKind::kIdent, pos);
    e->name = std::move(name);
    return Finish(std::move(e));
  }
  ExprPtr NewCall(int32_t pos, std::string fn, std::vector<ExprPtr> args) {
    ExprPtr e = NewExpr(ExprKind::kCall, pos);
    e->name = std::move(fn);
    e->args = std::move(args);
    return Finish(std::move(e));
  }
  ExprPtr NewCall(int32_t pos, std::string fn, ExprPtr a) {
    std::vector<ExprPtr> args;
    args.push_back(std::move(a));
    return NewCall(pos, std::move(fn), std::move(args));
  }
  ExprPtr NewCall(int32_t pos, std::string fn, ExprPtr a, ExprPtr b) {
    std::vector<ExprPtr> args;
    args.push_back(std::move(a));
    args.push_back(std::move(b));
    return NewCall(pos, std::move(fn), std::move(args));
  }
  ExprPtr NewCall(int32_t pos, std::string fn, ExprPtr a, ExprPtr b, ExprPtr c) {
    std::vector<ExprPtr> args;
    args.push_back(std::move(a));
    args.push_back(std::move(b));
    args.push_back(std::move(c));
    return NewCall(pos, std::move(fn), std::move(args));
  }
  ExprPtr NewMemberCall(int32_t pos, std::string fn, ExprPtr target, std::vector<ExprPtr> args) {
    ExprPtr e = NewExpr(ExprKind::kCall, pos);
    e->name = std::move(fn);
    e->operand = std::move(target);
    e->args = std::move(args);
    return Finish(std::move(e));
  }
  ExprPtr NewList(int32_t pos, std::vector<ExprPtr> elems) {
    ExprPtr e = NewExpr(ExprKind::kList, pos);
    e->args = std::move(elems);
    return Finish(std::move(e));
  }
  ExprPtr NewComprehension(int32_t pos, MacroKind macro, ExprPtr range, std::string iter_var,
                           std::string iter_var2, std::string accu_var, ExprPtr init, ExprPtr cond,
                           ExprPtr step, ExprPtr result) {
    ExprPtr e = NewExpr(ExprKind::kComprehension, pos);
    e->macro = macro;
    e->iter_range = std::move(range);
    e->iter_var = std::move(iter_var);
    e->iter_var2 = std::move(iter_var2);
    e->accu_var = std::move(accu_var);
    e->accu_init = std::move(init);
    e->loop_condition = std::move(cond);
    e->loop_step = std::move(step);
    e->result = std::move(result);
    return Finish(std::move(e));
  }
  // A deep copy with fresh ids (cel-go `ExprHelper.Copy`), for macros that repeat an operand.
  ExprPtr Copy(const Expr& src) {
    ExprPtr e = NewExpr(src.kind, src.position);
    e->constant = src.constant;
    e->name = src.name;
    e->test_only = src.test_only;
    e->optional_indices = src.optional_indices;
    e->iter_var = src.iter_var;
    e->iter_var2 = src.iter_var2;
    e->accu_var = src.accu_var;
    e->macro = src.macro;
    auto copy = [this](const ExprPtr& c) -> ExprPtr { return c ? Copy(*c) : nullptr; };
    e->operand = copy(src.operand);
    for (const ExprPtr& a : src.args) e->args.push_back(copy(a));
    for (const MapEntry& m : src.entries) {
      MapEntry entry;
      entry.id = next_id_++;
      entry.key = copy(m.key);
      entry.value = copy(m.value);
      entry.optional = m.optional;
      e->entries.push_back(std::move(entry));
    }
    e->iter_range = copy(src.iter_range);
    e->accu_init = copy(src.accu_init);
    e->loop_condition = copy(src.loop_condition);
    e->loop_step = copy(src.loop_step);
    e->result = copy(src.result);
    return Finish(std::move(e));
  }

  // --- grammar --------------------------------------------------------------------------------

  // expr: conditionalOr ('?' conditionalOr ':' expr)?
  ExprPtr ParseExpr() {
    if (++depth_ > options_.max_recursion_depth) {
      Fail(Pos(tok_),
           "expression recursion limit exceeded: " + std::to_string(options_.max_recursion_depth));
      --depth_;
      return nullptr;
    }
    ExprPtr cond = ParseOr();
    if (failed_) return Leave(nullptr);
    if (tok_.kind != Tok::kQuestion) return Leave(std::move(cond));
    int32_t pos = Pos(tok_);
    Advance();
    ExprPtr t = ParseOr();
    if (failed_) return Leave(nullptr);
    if (!Expect(Tok::kColon, "':'")) return Leave(nullptr);
    ExprPtr f = ParseExpr();
    if (failed_) return Leave(nullptr);
    return Leave(NewCall(pos, op::kConditional, std::move(cond), std::move(t), std::move(f)));
  }
  ExprPtr Leave(ExprPtr e) {
    --depth_;
    return e;
  }

  // conditionalOr: conditionalAnd ('||' conditionalAnd)*, built as one n-ary call.
  ExprPtr ParseOr() {
    ExprPtr first = ParseAnd();
    if (failed_ || tok_.kind != Tok::kOr) return first;
    int32_t pos = Pos(tok_);
    std::vector<ExprPtr> terms;
    terms.push_back(std::move(first));
    while (tok_.kind == Tok::kOr) {
      Advance();
      ExprPtr next = ParseAnd();
      if (failed_) return nullptr;
      terms.push_back(std::move(next));
    }
    return NewCall(pos, op::kLogicalOr, std::move(terms));
  }

  ExprPtr ParseAnd() {
    ExprPtr first = ParseRelation();
    if (failed_ || tok_.kind != Tok::kAnd) return first;
    int32_t pos = Pos(tok_);
    std::vector<ExprPtr> terms;
    terms.push_back(std::move(first));
    while (tok_.kind == Tok::kAnd) {
      Advance();
      ExprPtr next = ParseRelation();
      if (failed_) return nullptr;
      terms.push_back(std::move(next));
    }
    return NewCall(pos, op::kLogicalAnd, std::move(terms));
  }

  ExprPtr ParseRelation() {
    ExprPtr lhs = ParseAdditive();
    while (!failed_) {
      const char* fn = nullptr;
      switch (tok_.kind) {
        case Tok::kEq:
          fn = op::kEquals;
          break;
        case Tok::kNe:
          fn = op::kNotEquals;
          break;
        case Tok::kLt:
          fn = op::kLess;
          break;
        case Tok::kLe:
          fn = op::kLessEquals;
          break;
        case Tok::kGt:
          fn = op::kGreater;
          break;
        case Tok::kGe:
          fn = op::kGreaterEquals;
          break;
        case Tok::kIn:
          fn = op::kIn;
          break;
        default:
          return lhs;
      }
      int32_t pos = Pos(tok_);
      Advance();
      ExprPtr rhs = ParseAdditive();
      if (failed_) return nullptr;
      lhs = NewCall(pos, fn, std::move(lhs), std::move(rhs));
    }
    return nullptr;
  }

  ExprPtr ParseAdditive() {
    ExprPtr lhs = ParseMultiplicative();
    while (!failed_ && (tok_.kind == Tok::kPlus || tok_.kind == Tok::kMinus)) {
      const char* fn = tok_.kind == Tok::kPlus ? op::kAdd : op::kSubtract;
      int32_t pos = Pos(tok_);
      Advance();
      ExprPtr rhs = ParseMultiplicative();
      if (failed_) return nullptr;
      lhs = NewCall(pos, fn, std::move(lhs), std::move(rhs));
    }
    return failed_ ? nullptr : std::move(lhs);
  }

  ExprPtr ParseMultiplicative() {
    ExprPtr lhs = ParseUnary();
    while (!failed_ &&
           (tok_.kind == Tok::kStar || tok_.kind == Tok::kSlash || tok_.kind == Tok::kPercent)) {
      const char* fn = tok_.kind == Tok::kStar    ? op::kMultiply
                       : tok_.kind == Tok::kSlash ? op::kDivide
                                                  : op::kModulo;
      int32_t pos = Pos(tok_);
      Advance();
      ExprPtr rhs = ParseUnary();
      if (failed_) return nullptr;
      lhs = NewCall(pos, fn, std::move(lhs), std::move(rhs));
    }
    return failed_ ? nullptr : std::move(lhs);
  }

  // unary: member | '!'+ member | '-'+ member. An even number of repeated operators cancels
  // out (cel-go visitLogicalNot / visitNegate); a single '-' directly before a number literal
  // is the literal's sign.
  ExprPtr ParseUnary() {
    if (tok_.kind == Tok::kBang) {
      int32_t pos = Pos(tok_);
      int count = 0;
      while (tok_.kind == Tok::kBang) {
        ++count;
        Advance();
      }
      ExprPtr operand = ParseMember();
      if (failed_) return nullptr;
      if (count % 2 == 0) return operand;
      return NewCall(pos, op::kLogicalNot, std::move(operand));
    }
    if (tok_.kind == Tok::kMinus) {
      Token first = tok_;
      int count = 0;
      while (tok_.kind == Tok::kMinus) {
        ++count;
        Advance();
      }
      if (count == 1 && (tok_.kind == Tok::kInt || tok_.kind == Tok::kDouble)) {
        return ParseMember(&first);
      }
      ExprPtr operand = ParseMember();
      if (failed_) return nullptr;
      if (count % 2 == 0) return operand;
      return NewCall(Pos(first), op::kNegate, std::move(operand));
    }
    return ParseMember();
  }

  // member: primary ('.' '?'? IDENT ('(' args ')')? | '[' '?'? expr ']')*
  ExprPtr ParseMember(const Token* sign = nullptr) {
    ExprPtr e = ParsePrimary(sign);
    while (!failed_) {
      if (tok_.kind == Tok::kDot) {
        int32_t dot_pos = Pos(tok_);
        Advance();
        bool optional = Accept(Tok::kQuestion);
        if (tok_.kind != Tok::kIdent && !IsKeywordToken(tok_.kind)) {
          SyntaxError(tok_, "expecting IDENTIFIER");
          return nullptr;
        }
        Token id = tok_;
        std::string field(Text(id));
        if (IsKeywordToken(id.kind)) {
          // `true`, `false`, `null` and `in` are lexer keywords, not identifiers.
          SyntaxError(id, "expecting IDENTIFIER");
          return nullptr;
        }
        Advance();
        if (!optional && tok_.kind == Tok::kLParen) {
          int32_t open_pos = Pos(tok_);
          Advance();
          std::vector<ExprPtr> args;
          if (!ParseArgs(&args)) return nullptr;
          e = MakeMemberCall(open_pos, std::move(field), std::move(e), std::move(args));
          continue;
        }
        if (optional) {
          e = NewCall(dot_pos, op::kOptSelect, std::move(e), NewStringConst(Pos(id), field));
        } else {
          ExprPtr sel = NewExpr(ExprKind::kSelect, dot_pos);
          sel->operand = std::move(e);
          sel->name = std::move(field);
          e = Finish(std::move(sel));
        }
        continue;
      }
      if (tok_.kind == Tok::kLBracket) {
        int32_t pos = Pos(tok_);
        Advance();
        bool optional = Accept(Tok::kQuestion);
        ExprPtr index = ParseExpr();
        if (failed_) return nullptr;
        if (!Expect(Tok::kRBracket, "']'")) return nullptr;
        e = NewCall(pos, optional ? op::kOptIndex : op::kIndex, std::move(e), std::move(index));
        continue;
      }
      return e;
    }
    return nullptr;
  }

  static bool IsKeywordToken(Tok k) {
    return k == Tok::kTrue || k == Tok::kFalse || k == Tok::kNull || k == Tok::kIn;
  }

  // Parses `args)` after an opening parenthesis.
  bool ParseArgs(std::vector<ExprPtr>* args) {
    if (Accept(Tok::kRParen)) return true;
    while (true) {
      ExprPtr a = ParseExpr();
      if (failed_) return false;
      args->push_back(std::move(a));
      if (Accept(Tok::kComma)) continue;
      return Expect(Tok::kRParen, "')'");
    }
  }

  ExprPtr ParsePrimary(const Token* sign) {
    Token t = tok_;
    switch (t.kind) {
      case Tok::kInt:
        return ParseIntLiteral(sign);
      case Tok::kUint:
        return ParseUintLiteral();
      case Tok::kDouble:
        return ParseDoubleLiteral(sign);
      case Tok::kString:
      case Tok::kBytes:
        return ParseStringLiteral();
      case Tok::kTrue:
        Advance();
        return NewBool(Pos(t), true);
      case Tok::kFalse:
        Advance();
        return NewBool(Pos(t), false);
      case Tok::kNull: {
        Advance();
        Constant c;
        c.kind = ConstantKind::kNull;
        return NewConst(Pos(t), std::move(c));
      }
      case Tok::kLParen: {
        Advance();
        ExprPtr e = ParseExpr();
        if (failed_) return nullptr;
        if (!Expect(Tok::kRParen, "')'")) return nullptr;
        return e;
      }
      case Tok::kLBracket:
        return ParseList();
      case Tok::kLBrace:
        return ParseMap();
      case Tok::kDot:
      case Tok::kIdent:
        return ParseIdentOrCall();
      default:
        SyntaxError(t,
                    "expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
                    "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}");
        return nullptr;
    }
  }

  ExprPtr ParseIdentOrCall() {
    Token start = tok_;
    std::string name;
    if (tok_.kind == Tok::kDot) {
      name = ".";
      Advance();
      if (tok_.kind != Tok::kIdent) {
        SyntaxError(tok_, "expecting IDENTIFIER");
        return nullptr;
      }
    }
    Token id = tok_;
    std::string_view word = Text(id);
    name += word;
    Advance();
    if (IsReserved(word)) {
      Fail(Pos(id), "reserved identifier: " + std::string(word));
      return nullptr;
    }
    if (tok_.kind == Tok::kLParen) {
      int32_t open_pos = Pos(tok_);
      Advance();
      std::vector<ExprPtr> args;
      if (!ParseArgs(&args)) return nullptr;
      return MakeGlobalCall(open_pos, std::move(name), std::move(args));
    }
    if (tok_.kind == Tok::kLBrace) {
      Fail(Pos(tok_), "Syntax error: message construction is not supported: '" + name + "'");
      return nullptr;
    }
    return NewIdent(Pos(start), std::move(name));
  }

  ExprPtr ParseList() {
    int32_t pos = Pos(tok_);
    Advance();
    ExprPtr list = NewExpr(ExprKind::kList, pos);
    while (tok_.kind != Tok::kRBracket) {
      bool optional = Accept(Tok::kQuestion);
      ExprPtr e = ParseExpr();
      if (failed_) return nullptr;
      if (optional) list->optional_indices.push_back(static_cast<int32_t>(list->args.size()));
      list->args.push_back(std::move(e));
      if (!Accept(Tok::kComma)) break;
    }
    if (!Expect(Tok::kRBracket, "']'")) return nullptr;
    return Finish(std::move(list));
  }

  ExprPtr ParseMap() {
    int32_t pos = Pos(tok_);
    Advance();
    ExprPtr map = NewExpr(ExprKind::kMap, pos);
    while (tok_.kind != Tok::kRBrace) {
      MapEntry entry;
      entry.optional = Accept(Tok::kQuestion);
      entry.key = ParseExpr();
      if (failed_) return nullptr;
      int32_t colon_pos = Pos(tok_);
      if (!Expect(Tok::kColon, "':'")) return nullptr;
      entry.id = next_id_++;
      (void)colon_pos;
      entry.value = ParseExpr();
      if (failed_) return nullptr;
      map->entries.push_back(std::move(entry));
      if (!Accept(Tok::kComma)) break;
    }
    if (!Expect(Tok::kRBrace, "'}'")) return nullptr;
    return Finish(std::move(map));
  }

  // --- literals -------------------------------------------------------------------------------

  ExprPtr ParseIntLiteral(const Token* sign) {
    Token t = tok_;
    Advance();
    std::string_view text = Text(t);
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && text[1] == 'x') {
      base = 16;
      text.remove_prefix(2);
    }
    bool negative = sign != nullptr;
    int32_t pos = sign ? Pos(*sign) : Pos(t);
    // Magnitude as uint64 first; then range-check against int64.
    uint64_t mag = 0;
    bool overflow = false;
    for (char c : text) {
      uint64_t d = IsDigit(c) ? static_cast<uint64_t>(c - '0')
                              : static_cast<uint64_t>((c | 0x20) - 'a' + 10);
      if (mag > (std::numeric_limits<uint64_t>::max() - d) / base) {
        overflow = true;
        break;
      }
      mag = mag * base + d;
    }
    constexpr uint64_t kMaxPos = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (overflow || (!negative && mag > kMaxPos) || (negative && mag > kMaxPos + 1)) {
      Fail(pos, "invalid int literal");
      return nullptr;
    }
    int64_t v = negative ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
    return NewInt(pos, v);
  }

  ExprPtr ParseUintLiteral() {
    Token t = tok_;
    Advance();
    std::string_view text = Text(t);
    text.remove_suffix(1);  // u/U
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && text[1] == 'x') {
      base = 16;
      text.remove_prefix(2);
    }
    uint64_t mag = 0;
    for (char c : text) {
      uint64_t d = IsDigit(c) ? static_cast<uint64_t>(c - '0')
                              : static_cast<uint64_t>((c | 0x20) - 'a' + 10);
      if (mag > (std::numeric_limits<uint64_t>::max() - d) / base) {
        Fail(Pos(t), "invalid uint literal");
        return nullptr;
      }
      mag = mag * base + d;
    }
    Constant c;
    c.kind = ConstantKind::kUint;
    c.uint_value = mag;
    return NewConst(Pos(t), std::move(c));
  }

  ExprPtr ParseDoubleLiteral(const Token* sign) {
    Token t = tok_;
    Advance();
    std::string text(Text(t));
    if (sign) text.insert(text.begin(), '-');
    int32_t pos = sign ? Pos(*sign) : Pos(t);
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (errno == ERANGE && std::isinf(v)) {
      Fail(pos, "invalid double literal");
      return nullptr;
    }
    Constant c;
    c.kind = ConstantKind::kDouble;
    c.double_value = v;
    return NewConst(pos, std::move(c));
  }

  ExprPtr ParseStringLiteral() {
    Token t = tok_;
    Advance();
    std::string_view text = Text(t);
    bool is_bytes = t.kind == Tok::kBytes;
    if (is_bytes) text.remove_prefix(1);
    bool raw = false;
    if (!text.empty() && (text[0] == 'r' || text[0] == 'R')) {
      raw = true;
      text.remove_prefix(1);
    }
    size_t quote_len = (text.size() >= 6 && text[0] == text[1] && text[1] == text[2]) ? 3 : 1;
    std::string_view body = text.substr(quote_len, text.size() - 2 * quote_len);
    Constant c;
    c.kind = is_bytes ? ConstantKind::kBytes : ConstantKind::kString;
    if (raw) {
      c.string_value = std::string(body);
    } else {
      std::string error;
      if (!internal::Unescape(body, is_bytes, &c.string_value, &error)) {
        Fail(Pos(t), error);
        return nullptr;
      }
    }
    return NewConst(Pos(t), std::move(c));
  }

  // --- macros ---------------------------------------------------------------------------------

  ExprPtr MakeGlobalCall(int32_t pos, std::string fn, std::vector<ExprPtr> args) {
    if (options_.enable_macros && fn == "has" && args.size() == 1) {
      Expr& arg = *args[0];
      if (arg.kind != ExprKind::kSelect || arg.test_only) {
        Fail(arg.position, "invalid argument to has() macro");
        return nullptr;
      }
      ExprPtr sel = NewExpr(ExprKind::kSelect, pos);
      sel->operand = std::move(arg.operand);
      sel->name = std::move(arg.name);
      sel->test_only = true;
      return Finish(std::move(sel));
    }
    return NewCall(pos, std::move(fn), std::move(args));
  }

  // Returns the identifier name of `e`, or fails with `message` at its position.
  bool ExtractIdent(const Expr& e, const char* message, std::string* out) {
    if (e.kind != ExprKind::kIdent) {
      Fail(e.position, message);
      return false;
    }
    *out = e.name;
    return true;
  }

  ExprPtr Accu(int32_t pos) { return NewIdent(pos, kAccuName); }

  ExprPtr MakeMemberCall(int32_t pos, std::string fn, ExprPtr target, std::vector<ExprPtr> args) {
    if (!options_.enable_macros) {
      return NewMemberCall(pos, std::move(fn), std::move(target), std::move(args));
    }
    const size_t n = args.size();
    if ((fn == "all" || fn == "exists" || fn == "exists_one" || fn == "existsOne") &&
        (n == 2 || n == 3)) {
      if (n == 2 && fn == "existsOne") {
        return NewMemberCall(pos, std::move(fn), std::move(target), std::move(args));
      }
      return MakeQuantifier(pos, fn, std::move(target), std::move(args));
    }
    if (fn == "map" && (n == 2 || n == 3)) return MakeMap(pos, std::move(target), std::move(args));
    if (fn == "filter" && n == 2) return MakeFilter(pos, std::move(target), std::move(args));
    if ((fn == "transformList" || fn == "transformMap" || fn == "transformMapEntry") &&
        (n == 3 || n == 4)) {
      return MakeTransform(pos, fn, std::move(target), std::move(args));
    }
    if (fn == "bind" && n == 3 && target->kind == ExprKind::kIdent && target->name == "cel") {
      std::string var;
      if (!ExtractIdent(*args[0], "cel.bind() variable names must be simple identifiers", &var)) {
        return nullptr;
      }
      return NewComprehension(pos, MacroKind::kBind, NewList(pos, {}), kUnusedIterVar, "", var,
                              std::move(args[1]), NewBool(pos, false), NewIdent(pos, var),
                              std::move(args[2]));
    }
    if ((fn == "optMap" || fn == "optFlatMap") && n == 2) {
      return MakeOptMap(pos, fn == "optMap", std::move(target), std::move(args));
    }
    if (fn == "sortBy" && n == 2) return MakeSortBy(pos, std::move(target), std::move(args));
    return NewMemberCall(pos, std::move(fn), std::move(target), std::move(args));
  }

  // all/exists/exists_one with one or two iteration variables (cel-go parser/macro.go
  // makeQuantifier, ext/comprehensions.go).
  ExprPtr MakeQuantifier(int32_t pos, const std::string& fn, ExprPtr target,
                         std::vector<ExprPtr> args) {
    std::string v1, v2;
    if (!ExtractIdent(*args[0], "argument must be a simple name", &v1)) return nullptr;
    size_t pred = 1;
    if (args.size() == 3) {
      if (!ExtractIdent(*args[1], "argument must be a simple name", &v2)) return nullptr;
      if (!CheckTwoVars(*args[0], v1, v2)) return nullptr;
      pred = 2;
    } else if (v1 == kAccuName) {
      Fail(args[0]->position, "iteration variable overwrites accumulator variable");
      return nullptr;
    }
    ExprPtr p = std::move(args[pred]);
    ExprPtr init, cond, step, result;
    MacroKind kind;
    if (fn == "all") {
      kind = MacroKind::kAll;
      init = NewBool(pos, true);
      cond = NewCall(pos, op::kNotStrictlyFalse, Accu(pos));
      step = NewCall(pos, op::kLogicalAnd, Accu(pos), std::move(p));
      result = Accu(pos);
    } else if (fn == "exists") {
      kind = MacroKind::kExists;
      init = NewBool(pos, false);
      cond = NewCall(pos, op::kNotStrictlyFalse, NewCall(pos, op::kLogicalNot, Accu(pos)));
      step = NewCall(pos, op::kLogicalOr, Accu(pos), std::move(p));
      result = Accu(pos);
    } else {
      kind = MacroKind::kExistsOne;
      init = NewInt(pos, 0);
      cond = NewBool(pos, true);
      step = NewCall(pos, op::kConditional, std::move(p),
                     NewCall(pos, op::kAdd, Accu(pos), NewInt(pos, 1)), Accu(pos));
      result = NewCall(pos, op::kEquals, Accu(pos), NewInt(pos, 1));
    }
    return NewComprehension(pos, kind, std::move(target), v1, v2, kAccuName, std::move(init),
                            std::move(cond), std::move(step), std::move(result));
  }

  bool CheckTwoVars(const Expr& at, const std::string& v1, const std::string& v2) {
    if (v1 == kAccuName || v2 == kAccuName) {
      Fail(at.position, "iteration variable overwrites accumulator variable");
      return false;
    }
    if (v1 == v2) {
      Fail(at.position, "duplicate variable name: " + v1);
      return false;
    }
    return true;
  }

  ExprPtr MakeMap(int32_t pos, ExprPtr target, std::vector<ExprPtr> args) {
    std::string v;
    if (!ExtractIdent(*args[0], "argument is not an identifier", &v)) return nullptr;
    ExprPtr filter, fn;
    if (args.size() == 3) {
      filter = std::move(args[1]);
      fn = std::move(args[2]);
    } else {
      fn = std::move(args[1]);
    }
    std::vector<ExprPtr> elem;
    elem.push_back(std::move(fn));
    ExprPtr step = NewCall(pos, op::kAdd, Accu(pos), NewList(pos, std::move(elem)));
    if (filter)
      step = NewCall(pos, op::kConditional, std::move(filter), std::move(step), Accu(pos));
    return NewComprehension(pos, MacroKind::kMap, std::move(target), v, "", kAccuName,
                            NewList(pos, {}), NewBool(pos, true), std::move(step), Accu(pos));
  }

  ExprPtr MakeFilter(int32_t pos, ExprPtr target, std::vector<ExprPtr> args) {
    std::string v;
    if (!ExtractIdent(*args[0], "argument is not an identifier", &v)) return nullptr;
    std::vector<ExprPtr> elem;
    elem.push_back(NewIdent(args[0]->position, v));
    ExprPtr step = NewCall(pos, op::kAdd, Accu(pos), NewList(pos, std::move(elem)));
    step = NewCall(pos, op::kConditional, std::move(args[1]), std::move(step), Accu(pos));
    return NewComprehension(pos, MacroKind::kFilter, std::move(target), v, "", kAccuName,
                            NewList(pos, {}), NewBool(pos, true), std::move(step), Accu(pos));
  }

  // transformList / transformMap / transformMapEntry (cel-go ext/comprehensions.go).
  ExprPtr MakeTransform(int32_t pos, const std::string& fn, ExprPtr target,
                        std::vector<ExprPtr> args) {
    std::string v1, v2;
    if (!ExtractIdent(*args[0], "argument must be a simple name", &v1)) return nullptr;
    if (!ExtractIdent(*args[1], "argument must be a simple name", &v2)) return nullptr;
    if (!CheckTwoVars(*args[0], v1, v2)) return nullptr;
    ExprPtr filter, transform;
    if (args.size() == 4) {
      filter = std::move(args[2]);
      transform = std::move(args[3]);
    } else {
      transform = std::move(args[2]);
    }
    ExprPtr init, step;
    MacroKind kind;
    if (fn == "transformList") {
      kind = MacroKind::kTransformList;
      init = NewList(pos, {});
      std::vector<ExprPtr> elem;
      elem.push_back(std::move(transform));
      step = NewCall(pos, op::kAdd, Accu(pos), NewList(pos, std::move(elem)));
    } else if (fn == "transformMap") {
      kind = MacroKind::kTransformMap;
      init = NewExpr(ExprKind::kMap, pos);
      init = Finish(std::move(init));
      step = NewCall(pos, op::kMapInsert, Accu(pos), NewIdent(args[0]->position, v1),
                     std::move(transform));
    } else {
      kind = MacroKind::kTransformMapEntry;
      init = Finish(NewExpr(ExprKind::kMap, pos));
      step = NewCall(pos, op::kMapInsert, Accu(pos), std::move(transform));
    }
    if (filter)
      step = NewCall(pos, op::kConditional, std::move(filter), std::move(step), Accu(pos));
    return NewComprehension(pos, kind, std::move(target), v1, v2, kAccuName, std::move(init),
                            NewBool(pos, true), std::move(step), Accu(pos));
  }

  // opt.optMap(x, e) -> opt.hasValue() ? optional.of(cel.bind(x, opt.value(), e))
  //                                    : optional.none()   (optFlatMap drops optional.of).
  ExprPtr MakeOptMap(int32_t pos, bool wrap, ExprPtr target, std::vector<ExprPtr> args) {
    std::string var;
    const char* msg = wrap ? "optMap() variable name must be a simple identifier"
                           : "optFlatMap() variable name must be a simple identifier";
    if (!ExtractIdent(*args[0], msg, &var)) return nullptr;
    ExprPtr target_copy = Copy(*target);
    ExprPtr has_value = NewMemberCall(pos, "hasValue", std::move(target), {});
    ExprPtr value = NewMemberCall(pos, "value", std::move(target_copy), {});
    ExprPtr bound = NewComprehension(pos, MacroKind::kBind, NewList(pos, {}), kUnusedIterVar, "",
                                     var, std::move(value), NewBool(pos, false), NewIdent(pos, var),
                                     std::move(args[1]));
    if (wrap) bound = NewCall(pos, "optional.of", std::move(bound));
    return NewCall(pos, op::kConditional, std::move(has_value), std::move(bound),
                   NewCall(pos, "optional.none", std::vector<ExprPtr>{}));
  }

  // list.sortBy(x, key) -> cel.bind(@__sortBy_input__, list,
  //     @__sortBy_input__.@sortByAssociatedKeys(@__sortBy_input__.map(x, key)))
  // (cel-go ext/lists.go sortByMacro).
  ExprPtr MakeSortBy(int32_t pos, ExprPtr target, std::vector<ExprPtr> args) {
    std::string var;
    if (!ExtractIdent(*args[0], "sortBy(var, ...) variable name must be a simple identifier",
                      &var)) {
      return nullptr;
    }
    const std::string input = "@__sortBy_input__";
    std::vector<ExprPtr> elem;
    elem.push_back(std::move(args[1]));
    ExprPtr step = NewCall(pos, op::kAdd, Accu(pos), NewList(pos, std::move(elem)));
    ExprPtr keys =
        NewComprehension(pos, MacroKind::kMap, NewIdent(pos, input), var, "", kAccuName,
                         NewList(pos, {}), NewBool(pos, true), std::move(step), Accu(pos));
    std::vector<ExprPtr> call_args;
    call_args.push_back(std::move(keys));
    ExprPtr sorted =
        NewMemberCall(pos, "@sortByAssociatedKeys", NewIdent(pos, input), std::move(call_args));
    return NewComprehension(pos, MacroKind::kBind, NewList(pos, {}), kUnusedIterVar, "", input,
                            std::move(target), NewBool(pos, false), NewIdent(pos, input),
                            std::move(sorted));
  }

  const ParserOptions options_;
  std::string text_;
  Lexer lexer_;
  std::vector<int32_t> cp_at_byte_;
  std::vector<int32_t> line_starts_;
  Token tok_;
  Token prev_;
  int64_t next_id_ = 1;
  int depth_ = 0;
  bool failed_ = false;
  Issue error_;
};

}  // namespace

ParseResult Parse(std::string_view source, const ParserOptions& options) {
  Parser parser(SanitizeUtf8(source), options);
  return parser.Run();
}

}  // namespace draplane::cel
