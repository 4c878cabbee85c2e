// The CEL abstract syntax tree produced by the parser and consumed by the checker and planner.
//
// The shape follows cel-spec's `syntax.proto` (`Expr`): constants, identifiers, field selections
// (with the `has()` test-only flag), calls (global or receiver style), list and map literals, and
// comprehensions (macros are expanded into comprehensions by the parser, as cel-go does). Every
// node carries a unique id and the code-point offset of its source position, so later stages can
// report errors at the right place.
//
// Thread-safety: an `Ast` is immutable after parsing and may be read from several threads.
// Ownership: each node owns its children through `std::unique_ptr`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace draplane::cel {

enum class ConstantKind : uint8_t { kNull, kBool, kInt, kUint, kDouble, kString, kBytes };

struct Constant {
  ConstantKind kind = ConstantKind::kNull;
  bool bool_value = false;
  int64_t int_value = 0;
  uint64_t uint_value = 0;
  double double_value = 0;
  // The decoded contents of a string (UTF-8) or bytes literal.
  std::string string_value;
};

enum class ExprKind : uint8_t {
  kConstant,
  kIdent,
  kSelect,
  kCall,
  kList,
  kMap,
  kComprehension,
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct MapEntry {
  int64_t id = 0;
  ExprPtr key;
  ExprPtr value;
  // `{?key: optional}`: the entry is present only when the value is a non-empty optional.
  bool optional = false;
};

// Which macro a comprehension came from; lets the planner pick an efficient evaluation strategy
// (e.g. appending to the accumulator in place) without changing semantics.
enum class MacroKind : uint8_t {
  kNone,
  kAll,
  kExists,
  kExistsOne,
  kMap,
  kFilter,
  kBind,
  kTransformList,
  kTransformMap,
  kTransformMapEntry,
};

struct Expr {
  int64_t id = 0;
  // Offset of the node in the source, in code points.
  int32_t position = 0;
  ExprKind kind = ExprKind::kConstant;

  // kConstant.
  Constant constant;

  // kIdent: the identifier; kSelect: the field; kCall: the function name.
  std::string name;

  // kSelect: the operand; kCall: the receiver (null for global calls).
  ExprPtr operand;
  // kSelect: `has(operand.name)`.
  bool test_only = false;

  // kCall: arguments; kList: elements.
  std::vector<ExprPtr> args;
  // kList: indices of `[?e]` elements.
  std::vector<int32_t> optional_indices;

  // kMap.
  std::vector<MapEntry> entries;

  // kComprehension.
  std::string iter_var;
  std::string iter_var2;  // empty unless a two-variable comprehension
  std::string accu_var;
  ExprPtr iter_range;
  ExprPtr accu_init;
  ExprPtr loop_condition;
  ExprPtr loop_step;
  ExprPtr result;
  MacroKind macro = MacroKind::kNone;

  // Height of the subtree (a leaf is 1); the parser bounds it so that every later recursive
  // pass has a bounded stack depth.
  int32_t height = 1;
};

// Names the parser uses for operators and internal functions (cel-go `common/operators`).
namespace op {
inline constexpr char kConditional[] = "_?_:_";
inline constexpr char kLogicalAnd[] = "_&&_";
inline constexpr char kLogicalOr[] = "_||_";
inline constexpr char kLogicalNot[] = "!_";
inline constexpr char kEquals[] = "_==_";
inline constexpr char kNotEquals[] = "_!=_";
inline constexpr char kLess[] = "_<_";
inline constexpr char kLessEquals[] = "_<=_";
inline constexpr char kGreater[] = "_>_";
inline constexpr char kGreaterEquals[] = "_>=_";
inline constexpr char kAdd[] = "_+_";
inline constexpr char kSubtract[] = "_-_";
inline constexpr char kMultiply[] = "_*_";
inline constexpr char kDivide[] = "_/_";
inline constexpr char kModulo[] = "_%_";
inline constexpr char kNegate[] = "-_";
inline constexpr char kIndex[] = "_[_]";
inline constexpr char kOptIndex[] = "_[?_]";
inline constexpr char kOptSelect[] = "_?._";
inline constexpr char kIn[] = "@in";
inline constexpr char kNotStrictlyFalse[] = "@not_strictly_false";
// Inserts a key into a map accumulator (two-variable transformMap macros).
inline constexpr char kMapInsert[] = "cel.@mapInsert";
}  // namespace op

// The parsed expression with the information needed to print source locations.
struct Ast {
  ExprPtr root;
  std::string source;
  // Code-point offsets at which lines 2, 3, ... start.
  std::vector<int32_t> line_offsets;
  int64_t max_id = 0;
};

// A 1-based line and 0-based column (in code points) of `position` in `ast`.
struct SourceLocation {
  int32_t line = 1;
  int32_t column = 0;
};
SourceLocation LocationOf(const Ast& ast, int32_t position);

// Formats one error the way cel-go's `common.Error.ToDisplayString` does:
// "ERROR: <input>:L:C: message" followed by the source line and a caret.
std::string FormatError(const Ast& ast, int32_t position, const std::string& message);

// A compact s-expression rendering of `expr` for tests and debugging, e.g.
// `_+_(1, x.f)`, `[1, 2]`, `{"a": 1}`, `has(m.f)`, `comprehension(x in r, ...)`.
std::string DebugString(const Expr& expr);

// One problem found while parsing or checking, at a code-point offset of the source.
struct Issue {
  int32_t position = 0;
  std::string message;
};

// All issues, each formatted with FormatError and joined by newlines (cel-go `Issues.String()`).
std::string FormatIssues(const Ast& ast, const std::vector<Issue>& issues);

}  // namespace draplane::cel
