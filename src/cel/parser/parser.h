// The CEL parser: a hand-written lexer and recursive-descent parser for the full CEL grammar
// (google/cel-spec `doc/langdef.md`, cel-go `parser/gen/CEL.g4`), with macro expansion at parse
// time as cel-go does (`parser/macro.go`, `ext/bindings.go`, `ext/comprehensions.go`,
// `cel/library.go` optMap/optFlatMap, `ext/lists.go` sortBy).
//
// Limits follow cel-go's defaults: 100,000 code points of input and a recursion (AST height)
// limit of 250.
//
// Thread-safety: Parse() is a pure function.
#pragma once

#include <string_view>
#include <vector>

#include "cel/parser/ast.h"

namespace draplane::cel {

struct ParserOptions {
  // Expand macros (has, all, exists, exists_one, map, filter, cel.bind, two-variable
  // comprehensions, optMap, optFlatMap, sortBy). When false they stay ordinary calls.
  bool enable_macros = true;
  // Maximum height of the AST (cel-go `MaxRecursionDepth`).
  int max_recursion_depth = 250;
  // Maximum number of code points (cel-go `ExpressionSizeCodePointLimit`).
  int max_code_points = 100000;
};

struct ParseResult {
  Ast ast;                    // valid only when `issues` is empty
  std::vector<Issue> issues;  // syntax errors; positions refer to `ast.source`
};

// Parses `source`. Never fails as a Status: syntax errors are returned as issues, worded as
// cel-go words them where the tests depend on it ("Syntax error: ...", "reserved identifier",
// "argument must be a simple name", ...).
ParseResult Parse(std::string_view source, const ParserOptions& options = {});

}  // namespace draplane::cel
