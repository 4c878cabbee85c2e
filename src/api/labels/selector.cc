// Label selectors, re-derived from k8s.io/apimachinery/pkg/labels/selector.go (NewRequirement,
// Requirement.Matches/String, the Lexer and Parser) and metav1.LabelSelectorAsSelector.
#include "api/labels/selector.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>

#include "api/validation/names.h"
#include "common/status_macros.h"

namespace draplane::api::labels {
namespace {}  // namespace

std::string RenderStringList(const std::vector<std::string>& values) {
  if (values.empty()) return "null";
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (unsigned char c : values[i]) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
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
        case '<':
          out += "\\u003c";
          break;
        case '>':
          out += "\\u003e";
          break;
        case '&':
          out += "\\u0026";
          break;
        default:
          if (c < 0x20) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
          } else {
            out += static_cast<char>(c);
          }
      }
    }
    out += '"';
  }
  out += ']';
  return out;
}

namespace {

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

// upstream validateLabelKey: Invalid at `path` with the IsQualifiedName messages joined by "; ".
std::optional<FieldError> ValidateLabelKey(std::string_view key, const FieldPath& path) {
  const std::vector<std::string> errs = validation::IsQualifiedName(key);
  if (errs.empty()) return std::nullopt;
  return Invalid(path, RenderValue(key), Join(errs, "; "));
}

// upstream validateLabelValue: Invalid at `path[key]`.
std::optional<FieldError> ValidateLabelValue(std::string_view key, std::string_view value,
                                             const FieldPath& path) {
  const std::vector<std::string> errs = validation::IsLabelValue(value);
  if (errs.empty()) return std::nullopt;
  return Invalid(path.Key(key), RenderValue(value), Join(errs, "; "));
}

// Go renders a nil *field.Path as "<nil>"; the parser validates keys at its (often nil) path.
FieldPath OrNil(const FieldPath& path) { return path.empty() ? FieldPath("<nil>") : path; }

constexpr std::string_view kBinaryOperators = "in, notin, =, ==, !=, gt, lt";

// ---- The string-form lexer and parser (upstream Lexer / Parser). ----

enum class Token {
  kError,
  kEndOfString,
  kClosedPar,
  kComma,
  kDoesNotExist,
  kDoubleEquals,
  kEquals,
  kGreaterThan,
  kIdentifier,
  kIn,
  kLessThan,
  kNotEquals,
  kNotIn,
  kOpenPar,
};

struct Item {
  Token token;
  std::string literal;
};

std::optional<Token> LiteralToken(std::string_view s) {
  if (s == ")") return Token::kClosedPar;
  if (s == ",") return Token::kComma;
  if (s == "!") return Token::kDoesNotExist;
  if (s == "==") return Token::kDoubleEquals;
  if (s == "=") return Token::kEquals;
  if (s == ">") return Token::kGreaterThan;
  if (s == "in") return Token::kIn;
  if (s == "<") return Token::kLessThan;
  if (s == "!=") return Token::kNotEquals;
  if (s == "notin") return Token::kNotIn;
  if (s == "(") return Token::kOpenPar;
  return std::nullopt;
}

bool IsWhitespace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool IsSpecialSymbol(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

// Mirrors upstream's byte reader: read() yields 0 at the end of input and for a NUL byte (which it
// consumes), unread() steps back over the last real byte.
class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Item Lex() {
    char ch = Read();
    while (IsWhitespace(ch)) ch = Read();
    if (ch == 0) return {Token::kEndOfString, ""};
    Unread();
    if (IsSpecialSymbol(ch)) return ScanSpecialSymbol();
    return ScanIdOrKeyword();
  }

 private:
  char Read() { return pos_ < s_.size() ? s_[pos_++] : '\0'; }
  void Unread() { --pos_; }

  Item ScanIdOrKeyword() {
    std::string lit;
    while (true) {
      const char ch = Read();
      if (ch == 0) break;
      if (IsSpecialSymbol(ch) || IsWhitespace(ch)) {
        Unread();
        break;
      }
      lit += ch;
    }
    if (auto t = LiteralToken(lit)) return {*t, lit};
    return {Token::kIdentifier, lit};
  }

  // The longest run of special symbols that still forms a token, e.g. "!=" but "!" in "!(".
  Item ScanSpecialSymbol() {
    std::string buffer;
    std::optional<Item> last;
    while (true) {
      const char ch = Read();
      if (ch == 0) break;
      if (!IsSpecialSymbol(ch)) {
        Unread();
        break;
      }
      buffer += ch;
      if (auto t = LiteralToken(buffer)) {
        last = Item{*t, buffer};
      } else if (last.has_value()) {
        Unread();
        break;
      }
    }
    if (!last.has_value()) return {Token::kError, "error expected: keyword found '" + buffer + "'"};
    return *last;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

enum class Context { kKeyAndOperator, kValues };

class Parser {
 public:
  Parser(std::string_view s, const FieldPath& path) : path_(path) {
    Lexer lexer(s);
    while (true) {
      items_.push_back(lexer.Lex());
      if (items_.back().token == Token::kEndOfString) break;
    }
  }

  StatusOr<std::vector<Requirement>> Parse() {
    std::vector<Requirement> requirements;
    while (true) {
      const Item next = Lookahead(Context::kValues);
      switch (next.token) {
        case Token::kIdentifier:
        case Token::kDoesNotExist: {
          StatusOr<Requirement> r = ParseRequirement();
          if (!r.ok()) {
            return InvalidArgumentError("unable to parse requirement: " +
                                        std::string(r.status().message()));
          }
          requirements.push_back(*std::move(r));
          const Item after = Consume(Context::kValues);
          if (after.token == Token::kEndOfString) return requirements;
          if (after.token != Token::kComma) {
            return InvalidArgumentError("found '" + after.literal +
                                        "', expected: ',' or 'end of string'");
          }
          const Item follow = Lookahead(Context::kValues);
          if (follow.token != Token::kIdentifier && follow.token != Token::kDoesNotExist) {
            return InvalidArgumentError("found '" + follow.literal +
                                        "', expected: identifier after ','");
          }
          break;
        }
        case Token::kEndOfString:
          return requirements;
        default:
          return InvalidArgumentError("found '" + next.literal +
                                      "', expected: !, identifier, or 'end of string'");
      }
    }
  }

 private:
  // In the values context "in" and "notin" are plain identifiers.
  Item Adjust(Item item, Context context) const {
    if (context == Context::kValues && (item.token == Token::kIn || item.token == Token::kNotIn)) {
      item.token = Token::kIdentifier;
    }
    return item;
  }
  Item Lookahead(Context context) const { return Adjust(items_[position_], context); }
  Item Consume(Context context) {
    // The end-of-string item repeats forever, as Go's lexer returns it at the end every time.
    const Item& item = items_[position_];
    if (position_ + 1 < items_.size()) ++position_;
    return Adjust(item, context);
  }

  StatusOr<Requirement> ParseRequirement() {
    // parseKeyAndInferOperator
    std::optional<Operator> op;
    Item item = Consume(Context::kValues);
    if (item.token == Token::kDoesNotExist) {
      op = Operator::kDoesNotExist;
      item = Consume(Context::kValues);
    }
    if (item.token != Token::kIdentifier) {
      return InvalidArgumentError("found '" + item.literal + "', expected: identifier");
    }
    if (auto err = ValidateLabelKey(item.literal, OrNil(path_))) {
      return InvalidArgumentError(err->ToString());
    }
    const std::string key = item.literal;
    const Token next = Lookahead(Context::kValues).token;
    if (next == Token::kEndOfString || next == Token::kComma) {
      if (op != Operator::kDoesNotExist) op = Operator::kExists;
    }
    if (op == Operator::kExists || op == Operator::kDoesNotExist) {
      return Requirement::Create(key, *op, {}, path_);
    }
    // parseOperator
    const Item op_item = Consume(Context::kKeyAndOperator);
    switch (op_item.token) {
      case Token::kIn:
        op = Operator::kIn;
        break;
      case Token::kEquals:
        op = Operator::kEquals;
        break;
      case Token::kDoubleEquals:
        op = Operator::kDoubleEquals;
        break;
      case Token::kGreaterThan:
        op = Operator::kGreaterThan;
        break;
      case Token::kLessThan:
        op = Operator::kLessThan;
        break;
      case Token::kNotIn:
        op = Operator::kNotIn;
        break;
      case Token::kNotEquals:
        op = Operator::kNotEquals;
        break;
      default:
        return InvalidArgumentError("found '" + op_item.literal +
                                    "', expected: " + std::string(kBinaryOperators));
    }
    std::set<std::string> values;  // upstream sets.String: sorted, unique
    if (op == Operator::kIn || op == Operator::kNotIn) {
      DRAPLANE_RETURN_IF_ERROR(ParseValues(values));
    } else {
      DRAPLANE_RETURN_IF_ERROR(ParseExactValue(values));
    }
    return Requirement::Create(key, *op, std::vector<std::string>(values.begin(), values.end()),
                               path_);
  }

  Status ParseValues(std::set<std::string>& values) {
    const Item open = Consume(Context::kValues);
    if (open.token != Token::kOpenPar) {
      return InvalidArgumentError("found '" + open.literal + "' expected: '('");
    }
    const Item first = Lookahead(Context::kValues);
    switch (first.token) {
      case Token::kIdentifier:
      case Token::kComma: {
        DRAPLANE_RETURN_IF_ERROR(ParseIdentifiersList(values));
        if (Consume(Context::kValues).token != Token::kClosedPar) {
          return InvalidArgumentError("found '" + first.literal + "', expected: ')'");
        }
        return Status::Ok();
      }
      case Token::kClosedPar:
        Consume(Context::kValues);
        values.insert("");
        return Status::Ok();
      default:
        return InvalidArgumentError("found '" + first.literal +
                                    "', expected: ',', ')' or identifier");
    }
  }

  Status ParseIdentifiersList(std::set<std::string>& values) {
    while (true) {
      const Item item = Consume(Context::kValues);
      switch (item.token) {
        case Token::kIdentifier: {
          values.insert(item.literal);
          const Item next = Lookahead(Context::kValues);
          if (next.token == Token::kComma) continue;
          if (next.token == Token::kClosedPar) return Status::Ok();
          return InvalidArgumentError("found '" + next.literal + "', expected: ',' or ')'");
        }
        case Token::kComma: {
          if (values.empty()) values.insert("");  // "(,"
          const Token next = Lookahead(Context::kValues).token;
          if (next == Token::kClosedPar) {
            values.insert("");  // ",)"
            return Status::Ok();
          }
          if (next == Token::kComma) {
            Consume(Context::kValues);
            values.insert("");  // ",,"
          }
          break;
        }
        default:
          return InvalidArgumentError("found '" + item.literal + "', expected: ',', or identifier");
      }
    }
  }

  Status ParseExactValue(std::set<std::string>& values) {
    const Token next = Lookahead(Context::kValues).token;
    if (next == Token::kEndOfString || next == Token::kComma) {
      values.insert("");
      return Status::Ok();
    }
    const Item item = Consume(Context::kValues);
    if (item.token == Token::kIdentifier) {
      values.insert(item.literal);
      return Status::Ok();
    }
    return InvalidArgumentError("found '" + item.literal + "', expected: identifier");
  }

  FieldPath path_;
  std::vector<Item> items_;
  size_t position_ = 0;
};

}  // namespace

std::string_view OperatorString(Operator op) {
  switch (op) {
    case Operator::kIn:
      return "in";
    case Operator::kNotIn:
      return "notin";
    case Operator::kEquals:
      return "=";
    case Operator::kDoubleEquals:
      return "==";
    case Operator::kNotEquals:
      return "!=";
    case Operator::kExists:
      return "exists";
    case Operator::kDoesNotExist:
      return "!";
    case Operator::kGreaterThan:
      return "gt";
    case Operator::kLessThan:
      return "lt";
  }
  return "";
}

bool ParseGoInt64(std::string_view s, int64_t& out) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  uint64_t v = 0;
  constexpr uint64_t kLimit = uint64_t{1} << 63;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (kLimit - d) / 10) return false;
    v = v * 10 + d;
  }
  if (!negative && v == kLimit) return false;
  out = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

std::string AggregateMessage(const FieldErrorList& errors) {
  std::vector<std::string> seen;
  for (const FieldError& e : errors) {
    std::string msg = e.ToString();
    if (std::find(seen.begin(), seen.end(), msg) == seen.end()) seen.push_back(std::move(msg));
  }
  if (seen.empty()) return "";
  if (seen.size() == 1) return seen[0];
  return "[" + Join(seen, ", ") + "]";
}

Status AggregateStatus(const FieldErrorList& errors) {
  std::vector<StatusCause> causes;
  causes.reserve(errors.size());
  for (const FieldError& e : errors) {
    causes.push_back({std::string(FieldErrorCauseType(e.type)), e.Body(), e.field});
  }
  return Status(StatusCode::kInvalidArgument, AggregateMessage(errors), std::move(causes));
}

FieldErrorList Requirement::Validate(std::string_view key, Operator op,
                                     const std::vector<std::string>& values,
                                     const FieldPath& path) {
  FieldErrorList errs;
  if (auto err = ValidateLabelKey(key, path.Child("key"))) errs.push_back(*std::move(err));
  const FieldPath value_path = path.Child("values");
  switch (op) {
    case Operator::kIn:
    case Operator::kNotIn:
      if (values.empty()) {
        errs.push_back(Invalid(value_path, RenderStringList(values),
                               "for 'in', 'notin' operators, values set can't be empty"));
      }
      break;
    case Operator::kEquals:
    case Operator::kDoubleEquals:
    case Operator::kNotEquals:
      if (values.size() != 1) {
        errs.push_back(Invalid(value_path, RenderStringList(values),
                               "exact-match compatibility requires one single value"));
      }
      break;
    case Operator::kExists:
    case Operator::kDoesNotExist:
      if (!values.empty()) {
        errs.push_back(Invalid(value_path, RenderStringList(values),
                               "values set must be empty for exists and does not exist"));
      }
      break;
    case Operator::kGreaterThan:
    case Operator::kLessThan:
      if (values.size() != 1) {
        errs.push_back(Invalid(value_path, RenderStringList(values),
                               "for 'Gt', 'Lt' operators, exactly one value is required"));
      }
      for (size_t i = 0; i < values.size(); ++i) {
        int64_t ignored;
        if (!ParseGoInt64(values[i], ignored)) {
          errs.push_back(Invalid(value_path.Index(static_cast<int64_t>(i)), RenderValue(values[i]),
                                 "for 'Gt', 'Lt' operators, the value must be an integer"));
        }
      }
      break;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (auto err = ValidateLabelValue(key, values[i], value_path.Index(static_cast<int64_t>(i)))) {
      errs.push_back(*std::move(err));
    }
  }
  return errs;
}

StatusOr<Requirement> Requirement::Create(std::string key, Operator op,
                                          std::vector<std::string> values, const FieldPath& path) {
  const FieldErrorList errs = Validate(key, op, values, path);
  if (!errs.empty()) return AggregateStatus(errs);
  return Requirement(std::move(key), op, std::move(values));
}

Requirement Requirement::Unchecked(std::string key, Operator op, std::vector<std::string> values) {
  return Requirement(std::move(key), op, std::move(values));
}

bool Requirement::MatchesAbsent() const {
  return op_ == Operator::kNotIn || op_ == Operator::kNotEquals || op_ == Operator::kDoesNotExist;
}

bool Requirement::MatchesValue(std::string_view value) const {
  auto has_value = [&] {
    return std::find(values_.begin(), values_.end(), value) != values_.end();
  };
  switch (op_) {
    case Operator::kIn:
    case Operator::kEquals:
    case Operator::kDoubleEquals:
      return has_value();
    case Operator::kNotIn:
    case Operator::kNotEquals:
      return !has_value();
    case Operator::kExists:
      return true;
    case Operator::kDoesNotExist:
      return false;
    case Operator::kGreaterThan:
    case Operator::kLessThan: {
      int64_t label_value, required;
      if (!ParseGoInt64(value, label_value)) return false;
      if (values_.size() != 1 || !ParseGoInt64(values_[0], required)) return false;
      return op_ == Operator::kGreaterThan ? label_value > required : label_value < required;
    }
  }
  return false;
}

std::string Requirement::String() const {
  std::string out;
  if (op_ == Operator::kDoesNotExist) out += '!';
  out += key_;
  switch (op_) {
    case Operator::kEquals:
      out += "=";
      break;
    case Operator::kDoubleEquals:
      out += "==";
      break;
    case Operator::kNotEquals:
      out += "!=";
      break;
    case Operator::kIn:
      out += " in ";
      break;
    case Operator::kNotIn:
      out += " notin ";
      break;
    case Operator::kGreaterThan:
      out += ">";
      break;
    case Operator::kLessThan:
      out += "<";
      break;
    case Operator::kExists:
    case Operator::kDoesNotExist:
      return out;
  }
  const bool set_based = op_ == Operator::kIn || op_ == Operator::kNotIn;
  if (set_based) out += '(';
  std::vector<std::string> sorted = values_;
  std::sort(sorted.begin(), sorted.end());
  out += Join(sorted, ",");
  if (set_based) out += ')';
  return out;
}

Selector Selector::Nothing() {
  Selector s;
  s.nothing_ = true;
  return s;
}

Selector Selector::Add(Requirement r) const {
  if (nothing_) return *this;  // upstream nothingSelector.Add returns itself
  Selector out = *this;
  const auto pos =
      std::upper_bound(out.requirements_.begin(), out.requirements_.end(), r.key(),
                       [](const std::string& key, const Requirement& x) { return key < x.key(); });
  out.requirements_.insert(pos, std::move(r));
  return out;
}

std::string Selector::String() const {
  std::vector<std::string> parts;
  parts.reserve(requirements_.size());
  for (const Requirement& r : requirements_) parts.push_back(r.String());
  return Join(parts, ",");
}

StatusOr<Selector> Parse(std::string_view selector, const FieldPath& path) {
  Parser parser(selector, path);
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<Requirement> requirements, parser.Parse());
  Selector s;
  for (Requirement& r : requirements) s = s.Add(std::move(r));
  return s;
}

StatusOr<Selector> LabelSelectorAsSelector(
    const LabelMap& match_labels, const std::vector<LabelSelectorRequirement>& expressions) {
  Selector s;
  for (const auto& [key, value] : match_labels) {
    DRAPLANE_ASSIGN_OR_RETURN(Requirement r, Requirement::Create(key, Operator::kEquals, {value}));
    s = s.Add(std::move(r));
  }
  for (const LabelSelectorRequirement& e : expressions) {
    Operator op;
    if (e.op == "In") {
      op = Operator::kIn;
    } else if (e.op == "NotIn") {
      op = Operator::kNotIn;
    } else if (e.op == "Exists") {
      op = Operator::kExists;
    } else if (e.op == "DoesNotExist") {
      op = Operator::kDoesNotExist;
    } else {
      return InvalidArgumentError(RenderValue(e.op) + " is not a valid label selector operator");
    }
    DRAPLANE_ASSIGN_OR_RETURN(Requirement r, Requirement::Create(e.key, op, e.values));
    s = s.Add(std::move(r));
  }
  return s;
}

}  // namespace draplane::api::labels
