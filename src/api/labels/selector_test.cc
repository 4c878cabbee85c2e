#include "api/labels/selector.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace draplane::api::labels {
namespace {

constexpr std::string_view kValueMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

struct ParseCase {
  const char* name;
  const char* input;
  // The selector's String() when parsing succeeds, or the exact error message.
  const char* want;
  bool ok = true;
};

// Derived from upstream labels/selector_test.go (TestSelectorParse, TestLexer, TestParserLookahead
// and the error cases of TestRequirementConstructor / TestToString).
const ParseCase kParseCases[] = {
    {"Empty", "", ""},
    {"OnlySpaces", "   \t\n", ""},
    {"ThreeEquals", "x=a,y=b,z=c", "x=a,y=b,z=c"},
    {"SortedByKey", "z=c,y=b,x=a", "x=a,y=b,z=c"},
    {"NotEquals", "x!=a,y=b", "x!=a,y=b"},
    {"EmptyValue", "x=", "x="},
    {"EmptyValueWithSpace", "x= ", "x="},
    {"TwoEmptyValues", "x=,z= ", "x=,z="},
    {"EmptyValuesSpaces", "x= ,z= ", "x=,z="},
    {"DoesNotExist", "!x", "!x"},
    {"Exists", "x", "x"},
    {"GreaterThan", "x>1", "x>1"},
    {"GreaterAndLess", "x>1,z<5", "x>1,z<5"},
    {"LessThan", "x<7", "x<7"},
    {"DoubleEquals", "x==a", "x==a"},
    {"SpacesAround", "  x  =  a  ", "x=a"},
    {"InSorted", "x in (b,a)", "x in (a,b)"},
    {"InSpaces", "x in ( a , b )", "x in (a,b)"},
    {"NotInEmpty", "x notin ()", "x notin ()"},
    {"InCommaOnly", "x in (,)", "x in ()"},
    {"InEmptyMember", "x in (a,,b)", "x in (,a,b)"},
    {"InLeadingComma", "x in (,a)", "x in (,a)"},
    {"InTrailingComma", "x in (a,)", "x in (,a)"},
    {"InDuplicates", "x in (a,a,b)", "x in (a,b)"},
    {"KeywordsAsKeyAndValue", "in in (in)", "in in (in)"},
    {"NotinAsEverything", "notin notin (notin)", "notin notin (notin)"},
    {"NotinKeyEquals", "notin=in", "notin=in"},
    {"Mixed", "a=b,c in (x,y),!d,e!=f,g", "a=b,c in (x,y),!d,e!=f,g"},
    {"SameKeyTwice", "x=a,x=b", "x=a,x=b"},
    {"PrefixedKey", "example.com/gpu=a100", "example.com/gpu=a100"},
    {"TabsAndNewlines", "x\t=\ta,\ny\n", "x=a,y"},
    // Go's lexer reads a NUL byte as "end", but inside an identifier it only ends the identifier.
    {"NulInIdentifier", "x=a<NUL>,!", "unable to parse requirement: found '', expected: identifier",
     false},
    {"BadLabelValue", "x=a||y",
     "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": ", false},
    {"DoubleOperator", "x==a==b", "found '==', expected: ',' or 'end of string'", false},
    {"NotWithValue", "!x=a", "found '=', expected: ',' or 'end of string'", false},
    {"GtWithoutValue", "x>",
     "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the "
     "value must be an integer",
     false},
    {"GtNotInteger", "x>a",
     "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the "
     "value must be an integer",
     false},
    {"LtDecimal", "x<1.5",
     "unable to parse requirement: values[0]: Invalid value: \"1.5\": for 'Gt', 'Lt' operators, "
     "the value must be an integer",
     false},
    {"UnclosedIn", "x in (a", "unable to parse requirement: found '', expected: ',' or ')'", false},
    {"InWithoutParen", "x in a", "unable to parse requirement: found 'a' expected: '('", false},
    {"ParenAfterEquals", "x=(a)", "unable to parse requirement: found '(', expected: identifier",
     false},
    {"MissingOperator", "x y",
     "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt", false},
    {"LeadingComma", ",x", "found ',', expected: !, identifier, or 'end of string'", false},
    {"TrailingComma", "x,", "found '', expected: identifier after ','", false},
    {"DanglingNot", "x=a,!", "unable to parse requirement: found '', expected: identifier", false},
    {"ValueThenIdentifier", "x=a b", "found 'b', expected: ',' or 'end of string'", false},
    {"StartsWithOperator", "=a", "found '=', expected: !, identifier, or 'end of string'", false},
    {"DoubleBang", "x!!=a",
     "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt", false},
    {"EqualsGreater", "x=>a", "unable to parse requirement: found '>', expected: identifier",
     false},
    {"Tilde", "x ~ a",
     "unable to parse requirement: found '~', expected: in, notin, =, ==, !=, gt, lt", false},
    {"InIdentifierList", "x in (a b)",
     "unable to parse requirement: found 'b', expected: ',' or ')'", false},
    {"InOperatorInList", "x in (a,=)",
     "unable to parse requirement: found '=', expected: ',', or identifier", false},
    {"InOperatorFirst", "x in (=)",
     "unable to parse requirement: found '=', expected: ',', ')' or identifier", false},
    {"BadKeyNilPath", "x/y/z=a",
     "unable to parse requirement: <nil>: Invalid value: \"x/y/z\": ", false},
    {"BadKeyExists", "-x", "unable to parse requirement: <nil>: Invalid value: \"-x\": ", false},
};

class SelectorParseTable : public testing::TestWithParam<ParseCase> {};

TEST_P(SelectorParseTable, MatchesUpstream) {
  const ParseCase& c = GetParam();
  std::string input = c.input;
  if (const size_t nul = input.find("<NUL>"); nul != std::string::npos) {
    input.replace(nul, 5, std::string(1, '\0'));
  }
  StatusOr<Selector> s = Parse(input);
  if (c.ok) {
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->String(), c.want);
    // The printed form parses back to the same selector.
    StatusOr<Selector> again = Parse(s->String());
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->String(), s->String());
  } else {
    ASSERT_FALSE(s.ok()) << "parsed as " << s->String();
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    // Field-error messages end in the validation text; compare the upstream prefix exactly.
    EXPECT_TRUE(s.status().message().starts_with(c.want)) << s.status().message();
    if (!std::string_view(c.want).ends_with(": ")) {
      EXPECT_EQ(s.status().message(), c.want);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SelectorParseTable, testing::ValuesIn(kParseCases),
                         [](const testing::TestParamInfo<ParseCase>& info) {
                           return std::string(info.param.name);
                         });

struct MatchCase {
  const char* name;
  const char* selector;
  LabelMap labels;
  bool want;
};

// Derived from upstream TestSelectorMatches / TestSetMatches / TestRequirementMatches.
const MatchCase kMatchCases[] = {
    {"EmptyMatchesAll", "", {{"x", "y"}}, true},
    {"EmptyMatchesNoLabels", "", {}, true},
    {"EqualsMatch", "x=y", {{"x", "y"}}, true},
    {"EqualsWrongValue", "x=y", {{"x", "z"}}, false},
    {"EqualsAbsent", "x=y", {}, false},
    {"TwoEquals", "x=y,z=w", {{"x", "y"}, {"z", "w"}}, true},
    {"TwoEqualsOneWrong", "x=y,z=w", {{"x", "y"}, {"z", "a"}}, false},
    {"NotEqualsBoth", "x!=y,z!=w", {{"x", "z"}, {"z", "a"}}, true},
    {"NotEqualsSame", "x!=y", {{"x", "y"}}, false},
    {"NotEqualsAbsent", "x!=y", {}, true},
    {"KeywordKey", "notin=in", {{"notin", "in"}}, true},
    {"ExistsPresent", "x", {{"x", "z"}}, true},
    {"ExistsEmptyValue", "x", {{"x", ""}}, true},
    {"ExistsAbsent", "x", {{"y", "z"}}, false},
    {"DoesNotExistAbsent", "!x", {{"y", "z"}}, true},
    {"DoesNotExistPresent", "!x", {{"x", ""}}, false},
    {"GreaterThan", "x>1", {{"x", "2"}}, true},
    {"GreaterThanEqual", "x>1", {{"x", "1"}}, false},
    {"GreaterThanNotNumber", "x>1", {{"x", "a"}}, false},
    {"GreaterThanAbsent", "x>1", {}, false},
    {"GreaterThanPlusSign", "x>1", {{"x", "+5"}}, true},
    {"GreaterThanOverflow", "x>1", {{"x", "9223372036854775808"}}, false},
    {"LessThan", "x<1", {{"x", "0"}}, true},
    {"LessThanNegative", "x<1", {{"x", "-7"}}, true},
    {"LessThanEqual", "x<1", {{"x", "1"}}, false},
    {"InMatch", "x in (a,b)", {{"x", "b"}}, true},
    {"InMiss", "x in (a,b)", {{"x", "c"}}, false},
    {"InAbsent", "x in (a)", {}, false},
    {"NotInAbsent", "x notin (a)", {}, true},
    {"NotInMember", "x notin (a,b)", {{"x", "a"}}, false},
    {"NotInOther", "x notin (a,b)", {{"x", "c"}}, true},
    {"EmptyValueEquals", "x=", {{"x", ""}}, true},
    {"NotInEmptySet", "x notin ()", {{"x", ""}}, false},
    {"InEmptyMember", "x in (,a)", {{"x", ""}}, true},
    {"Mixed", "a=b,c in (x,y),!d,e!=f,g", {{"a", "b"}, {"c", "y"}, {"e", "x"}, {"g", ""}}, true},
    {"MixedMissingG", "a=b,c in (x,y),!d,e!=f,g", {{"a", "b"}, {"c", "y"}}, false},
};

class SelectorMatchTable : public testing::TestWithParam<MatchCase> {};

TEST_P(SelectorMatchTable, MatchesUpstream) {
  const MatchCase& c = GetParam();
  StatusOr<Selector> s = Parse(c.selector);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->Matches(c.labels), c.want);
  // Any map type works, e.g. one with the default comparator.
  std::map<std::string, std::string> plain(c.labels.begin(), c.labels.end());
  EXPECT_EQ(s->Matches(plain), c.want);
}

INSTANTIATE_TEST_SUITE_P(Cases, SelectorMatchTable, testing::ValuesIn(kMatchCases),
                         [](const testing::TestParamInfo<MatchCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(SelectorTest, ParseErrorsCarryThePath) {
  StatusOr<Selector> s = Parse("x/y/z=a", FieldPath("spec").Child("selector"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().message().starts_with(
      "unable to parse requirement: spec.selector: Invalid value: \"x/y/z\": a valid label key"))
      << s.status().message();
  StatusOr<Selector> v = Parse("x=a||b", FieldPath("sel"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(),
            "unable to parse requirement: sel.values[0][x]: Invalid value: \"a||b\": " +
                std::string(kValueMsg));
}

TEST(SelectorTest, EverythingAndNothing) {
  EXPECT_TRUE(Selector::Everything().Matches(LabelMap{}));
  EXPECT_TRUE(Selector::Everything().Empty());
  EXPECT_FALSE(Selector::Nothing().Matches(LabelMap{}));
  EXPECT_FALSE(Selector::Nothing().Empty());
  EXPECT_TRUE(Selector::Nothing().IsNothing());
  EXPECT_EQ(Selector::Nothing().String(), "");
  // Adding to Nothing keeps nothing, as upstream nothingSelector.Add.
  EXPECT_TRUE(
      Selector::Nothing().Add(Requirement::Unchecked("a", Operator::kExists, {})).IsNothing());
}

TEST(SelectorTest, SelectorFromSetRequiresEveryLabel) {
  const LabelMap set = {{"zone", "a"}, {"gpu", "h100"}};
  const Selector s = SelectorFromSet(set);
  EXPECT_EQ(s.String(), "gpu=h100,zone=a");
  EXPECT_TRUE(s.Matches(LabelMap{{"zone", "a"}, {"gpu", "h100"}, {"x", "y"}}));
  EXPECT_FALSE(s.Matches(LabelMap{{"zone", "a"}}));
  EXPECT_TRUE(SelectorFromSet(LabelMap{}).Empty());
  StatusOr<Selector> bad = ValidatedSelectorFromSet(LabelMap{{"ok", "a b"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "values[0][ok]: Invalid value: \"a b\": " + std::string(kValueMsg));
}

TEST(RequirementTest, ConstructorValidatesLikeNewRequirement) {
  struct Case {
    const char* name;
    std::string key;
    Operator op;
    std::vector<std::string> values;
    std::string want;  // "" for valid; otherwise the aggregate message
  };
  const std::string long_value(64, 'a');
  const Case cases[] = {
      {"InValid", "x", Operator::kIn, {"a", "b"}, ""},
      {"InEmpty",
       "x",
       Operator::kIn,
       {},
       "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"},
      {"NotInEmpty",
       "x",
       Operator::kNotIn,
       {},
       "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"},
      {"EqualsTwo",
       "x",
       Operator::kEquals,
       {"a", "b"},
       "values: Invalid value: [\"a\",\"b\"]: exact-match compatibility requires one single value"},
      {"ExistsWithValue",
       "x",
       Operator::kExists,
       {"a"},
       "values: Invalid value: [\"a\"]: values set must be empty for exists and does not exist"},
      {"DoesNotExistValid", "x", Operator::kDoesNotExist, {}, ""},
      {"GtTwoValues",
       "x",
       Operator::kGreaterThan,
       {"1", "2"},
       "values: Invalid value: [\"1\",\"2\"]: for 'Gt', 'Lt' operators, exactly one value is "
       "required"},
      {"LtNotInteger",
       "x",
       Operator::kLessThan,
       {"1a"},
       "values[0]: Invalid value: \"1a\": for 'Gt', 'Lt' operators, the value must be an integer"},
      {"LtValid", "x", Operator::kLessThan, {"42"}, ""},
      {"LongValue",
       "x",
       Operator::kIn,
       {long_value},
       "values[0][x]: Invalid value: \"" + long_value + "\": must be no more than 63 bytes"},
      {"EmptyKey",
       "",
       Operator::kExists,
       {},
       "key: Invalid value: \"\": name part must be non-empty; name part must consist of"},
      {"TwoErrors",
       "x",
       Operator::kGreaterThan,
       {},
       "values: Invalid value: null: for 'Gt', 'Lt' operators, exactly one value is required"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<Requirement> r = Requirement::Create(c.key, c.op, c.values);
    if (c.want.empty()) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->key(), c.key);
      EXPECT_EQ(r->values(), c.values);
      continue;
    }
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().message().starts_with(c.want)) << r.status().message();
    EXPECT_FALSE(r.status().causes().empty());
  }
}

TEST(RequirementTest, SeveralErrorsAggregateInBrackets) {
  StatusOr<Requirement> r = Requirement::Create("x", Operator::kGreaterThan, {"a", "b"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.status().message(),
      "[values: Invalid value: [\"a\",\"b\"]: for 'Gt', 'Lt' operators, exactly one value is "
      "required, values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be "
      "an integer, values[1]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must "
      "be an integer]");
  ASSERT_EQ(r.status().causes().size(), 3u);
  EXPECT_EQ(r.status().causes()[1].field, "values[0]");
  EXPECT_EQ(r.status().causes()[1].type, "FieldValueInvalid");
}

// A stand-in with the shape of the generated metav1.LabelSelector.
struct FakeRequirement {
  std::string key;
  std::string operator_;
  std::vector<std::string> values;
};
struct FakeLabelSelector {
  std::map<std::string, std::string, std::less<>> match_labels;
  std::vector<FakeRequirement> match_expressions;
};

TEST(LabelSelectorAsSelectorTest, FollowsUpstream) {
  // A null selector selects nothing, an empty one everything.
  StatusOr<Selector> none = LabelSelectorAsSelector(std::optional<FakeLabelSelector>());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->Matches(LabelMap{}));
  StatusOr<Selector> all = LabelSelectorAsSelector(FakeLabelSelector{});
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->Matches(LabelMap{{"a", "b"}}));

  FakeLabelSelector sel;
  sel.match_labels = {{"a", "b"}};
  sel.match_expressions = {{"c", "In", {"y", "x"}},
                           {"d", "DoesNotExist", {}},
                           {"e", "Exists", {}},
                           {"f", "NotIn", {"z"}}};
  StatusOr<Selector> s = LabelSelectorAsSelector(sel);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->String(), "a=b,c in (x,y),!d,e,f notin (z)");
  EXPECT_TRUE(s->Matches(LabelMap{{"a", "b"}, {"c", "x"}, {"e", ""}}));
  EXPECT_FALSE(s->Matches(LabelMap{{"a", "b"}, {"c", "x"}, {"e", ""}, {"f", "z"}}));
  EXPECT_FALSE(s->Matches(LabelMap{{"a", "b"}, {"c", "x"}, {"d", "1"}, {"e", ""}}));

  FakeLabelSelector bad_op;
  bad_op.match_expressions = {{"c", "Gt", {"1"}}};
  EXPECT_EQ(LabelSelectorAsSelector(bad_op).status().message(),
            "\"Gt\" is not a valid label selector operator");
  FakeLabelSelector no_values;
  no_values.match_expressions = {{"c", "In", {}}};
  EXPECT_EQ(LabelSelectorAsSelector(no_values).status().message(),
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty");
  FakeLabelSelector bad_label;
  bad_label.match_labels = {{"a", "-b"}};
  EXPECT_EQ(LabelSelectorAsSelector(bad_label).status().message(),
            "values[0][a]: Invalid value: \"-b\": " + std::string(kValueMsg));
}

TEST(ParseGoInt64Test, FollowsStrconv) {
  int64_t v = 0;
  EXPECT_TRUE(ParseGoInt64("0", v));
  EXPECT_TRUE(ParseGoInt64("+12", v));
  EXPECT_EQ(v, 12);
  EXPECT_TRUE(ParseGoInt64("-9223372036854775808", v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_TRUE(ParseGoInt64("007", v));
  EXPECT_EQ(v, 7);
  EXPECT_FALSE(ParseGoInt64("9223372036854775808", v));
  EXPECT_FALSE(ParseGoInt64("", v));
  EXPECT_FALSE(ParseGoInt64("-", v));
  EXPECT_FALSE(ParseGoInt64("1_000", v));
  EXPECT_FALSE(ParseGoInt64(" 1", v));
}

}  // namespace
}  // namespace draplane::api::labels
