#include "cel/parser/parser.h"

#include <gtest/gtest.h>

#include <string>

namespace draplane::cel {
namespace {

std::string ParseToDebug(std::string_view source) {
  ParseResult r = Parse(source);
  if (!r.issues.empty()) return "error: " + FormatIssues(r.ast, r.issues);
  return DebugString(*r.ast.root);
}

TEST(ParserTest, ParsesOperatorsWithPrecedence) {
  EXPECT_EQ(ParseToDebug("1 + 2 * 3"), "_+_(1, _*_(2, 3))");
  EXPECT_EQ(ParseToDebug("a || b && c"), "_||_(a, _&&_(b, c))");
  EXPECT_EQ(ParseToDebug("a ? b : c ? d : e"), "_?_:_(a, b, _?_:_(c, d, e))");
  EXPECT_EQ(ParseToDebug("1 < 2 == true"), "_==_(_<_(1, 2), true)");
  EXPECT_EQ(ParseToDebug("x in [1, 2,]"), "@in(x, [1, 2])");
}

TEST(ParserTest, FlattensLogicalChains) { EXPECT_EQ(ParseToDebug("a && b && c"), "_&&_(a, b, c)"); }

TEST(ParserTest, FoldsSignIntoNumberLiterals) {
  EXPECT_EQ(ParseToDebug("-9223372036854775808"), "-9223372036854775808");
  EXPECT_EQ(ParseToDebug("--5"), "5");
  EXPECT_EQ(ParseToDebug("-x"), "-_(x)");
  EXPECT_EQ(ParseToDebug("!!true"), "true");
  EXPECT_EQ(ParseToDebug("-1.5"), "-1.5");
  EXPECT_EQ(ParseToDebug("-(1)"), "-_(1)");
  EXPECT_EQ(ParseToDebug("0x1Fu"), "31u");
}

TEST(ParserTest, RejectsOutOfRangeLiterals) {
  EXPECT_NE(ParseToDebug("9223372036854775808").find("invalid int literal"), std::string::npos);
  EXPECT_NE(ParseToDebug("18446744073709551616u").find("invalid uint literal"), std::string::npos);
}

TEST(ParserTest, DecodesStringEscapes) {
  EXPECT_EQ(ParseToDebug(R"('a\tb')"), R"("a\x09b")");
  EXPECT_EQ(ParseToDebug(R"(r'a\tb')"), R"("a\\tb")");
  EXPECT_EQ(ParseToDebug(R"(b'\xff')"), "b\"\xff\"");
  EXPECT_EQ(ParseToDebug(R"('\xff')"), "\"\xc3\xbf\"");
  EXPECT_EQ(ParseToDebug("'''a\nb'''"), R"("a\x0ab")");
  EXPECT_NE(ParseToDebug(R"(b'\u00ff')").find("error"), std::string::npos);
  EXPECT_NE(ParseToDebug(R"('\ud800')").find("error"), std::string::npos);
}

TEST(ParserTest, ParsesSelectIndexAndOptionalSyntax) {
  EXPECT_EQ(ParseToDebug("device.attributes[\"d\"].model"), "_[_](device.attributes, \"d\").model");
  EXPECT_EQ(ParseToDebug("m.?f"), "_?._(m, \"f\")");
  EXPECT_EQ(ParseToDebug("m[?1]"), "_[?_](m, 1)");
  EXPECT_EQ(ParseToDebug("[?a, b]"), "[?a, b]");
  EXPECT_EQ(ParseToDebug("{?'k': v}"), "{?\"k\": v}");
  EXPECT_EQ(ParseToDebug("{'a': 1}.package"), "{\"a\": 1}.package");
  EXPECT_EQ(ParseToDebug("a.while()"), "a.while()");
}

TEST(ParserTest, ExpandsMacros) {
  EXPECT_EQ(ParseToDebug("has(a.b)"), "has(a.b)");
  EXPECT_EQ(ParseToDebug("[1].all(x, x > 0)"),
            "__comprehension__(x, [1], @result, true, @not_strictly_false(@result), "
            "_&&_(@result, _>_(x, 0)), @result)");
  EXPECT_EQ(ParseToDebug("cel.bind(v, 1, v + 1)"),
            "__comprehension__(#unused, [], v, 1, false, v, _+_(v, 1))");
  EXPECT_EQ(ParseToDebug("m.map(k, v, v)").substr(0, 23), "__comprehension__(k, m,");
  EXPECT_NE(ParseToDebug("has(a)").find("invalid argument to has() macro"), std::string::npos);
  EXPECT_NE(ParseToDebug("[].all(1, true)").find("argument must be a simple name"),
            std::string::npos);
}

TEST(ParserTest, ReportsSyntaxErrorsWithLocation) {
  EXPECT_EQ(ParseToDebug("?!").substr(0, 36), "error: ERROR: <input>:1:1: Syntax er");
  EXPECT_EQ(ParseToDebug("a +\n  )"),
            "error: ERROR: <input>:2:3: Syntax error: mismatched input ')' expecting {'[', "
            "'{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
            "STRING, BYTES, IDENTIFIER}\n |   )\n | ..^");
  EXPECT_NE(ParseToDebug("if").find("reserved identifier: if"), std::string::npos);
  EXPECT_NE(ParseToDebug("a.true").find("Syntax error"), std::string::npos);
}

TEST(ParserTest, EnforcesRecursionLimit) {
  std::string deep(300, '(');
  deep += "1";
  deep += std::string(300, ')');
  EXPECT_NE(ParseToDebug(deep).find("recursion limit"), std::string::npos);
  std::string chain = "a";
  for (int i = 0; i < 300; ++i) chain += ".b";
  EXPECT_NE(ParseToDebug(chain).find("recursion limit"), std::string::npos);
  std::string ands = "true";
  for (int i = 0; i < 1000; ++i) ands += " && true";
  EXPECT_EQ(ParseToDebug(ands).substr(0, 5), "_&&_(");
}

TEST(ParserTest, ReplacesInvalidUtf8) { EXPECT_EQ(ParseToDebug("'\xff'"), "\"\xEF\xBF\xBD\""); }

}  // namespace
}  // namespace draplane::cel
