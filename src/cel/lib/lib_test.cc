// Table tests of library behaviour the conformance data does not pin down: Kubernetes quantity
// internals, semver normalisation, regex find/findAll, URLs, lists extensions, strings, time
// zones, runtime errors and costs.
#include <gtest/gtest.h>

#include <string>

#include "cel/cel.h"

namespace draplane::cel {
namespace {

struct Row {
  const char* expr;
  const char* want;  // FormatValue of the result, or "error: <message substring>"
};

std::string Eval(const std::string& expr) {
  static const auto env = Environment::NewGeneric({});
  auto p = env->Compile(expr);
  if (!p.ok()) return "compile error: " + std::string(p.status().message());
  Activation act;
  EvalResult r = (*p)->Evaluate(act);
  return FormatValue(r.value());
}

void ExpectRows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    std::string got = Eval(row.expr);
    std::string want = row.want;
    if (want.rfind("error: ", 0) == 0) {
      EXPECT_EQ(got.rfind("error: ", 0), 0u) << row.expr << " -> " << got;
      EXPECT_NE(got.find(want.substr(7)), std::string::npos) << row.expr << " -> " << got;
    } else {
      EXPECT_EQ(got, want) << row.expr;
    }
  }
}

TEST(CelQuantityTest, FollowsUpstreamRepresentation) {
  ExpectRows({
      {R"(quantity("1000m").isInteger())", "false"},
      {R"(quantity("1.5k").asInteger())", "1500"},
      {R"(quantity("1Gi").asInteger())", "1073741824"},
      {R"(quantity("1000m") == quantity("1"))", "true"},
      {R"(quantity("1.5Gi"))", R"(quantity("1536Mi"))"},
      {R"(quantity("-1").add(quantity("1")).isInteger())", "true"},
      {R"(sign(quantity("-2Ki")))", "-1"},
      {R"(quantity("50.703k").asApproximateFloat())", "50703.0"},
      {R"(dyn(quantity("1")) == 1)", "error: no such overload"},
      {R"(1 == dyn(quantity("1")))", "false"},
      {R"(quantity("x"))", "error: quantities must match the regular expression"},
  });
}

TEST(CelSemverTest, ParsesAndNormalizesLikeBlang) {
  ExpectRows({
      {R"(semver("1.2.3-rc.1+build.5"))", R"(semver("1.2.3-rc.1+build.5"))"},
      {R"(semver("1.2.3-alpha").isLessThan(semver("1.2.3")))", "true"},
      {R"(semver("1.2.3-alpha.1").compareTo(semver("1.2.3-alpha.beta")))", "-1"},
      {R"(semver("1.2.3+a") == semver("1.2.3+b"))", "true"},
      {R"(semver("v1.2", true).minor())", "2"},
      {R"(semver("1.2-rc", true))", "error: short version cannot contain PreRelease/Build"},
      {R"(semver("1.2.03"))", "error: Patch number must not contain leading zeroes"},
      {R"(semver("1.2.3-01"))", "error: Numeric PreRelease version must not contain leading"},
  });
}

TEST(CelStringsTest, ExtensionsAndRegex) {
  ExpectRows({
      {R"("a,b,,c".split(","))", R"(["a", "b", "", "c"])"},
      {R"("a-b-c".split("-", 2))", R"(["a", "b-c"])"},
      {R"(["x", "y"].join("/"))", R"("x/y")"},
      {R"("aaa".replace("a", "bb", 2))", R"("bbbba")"},
      {R"("H100 H200".find("H[0-9]+"))", R"("H100")"},
      {R"("H100 H200 H300".findAll("H[0-9]+", 2))", R"(["H100", "H200"])"},
      {R"("abc".findAll(""))", R"(["", "", "", ""])"},
      {R"("x".matches(dyn("(")))", "error: error parsing regexp"},
      {R"("  ab ".trim().size())", "2"},
  });
}

TEST(CelListsTest, KubernetesAndCelGoExtensions) {
  ExpectRows({
      {"[3, 1, 2].sort()", "[1, 2, 3]"},
      {"[1, 2, 3].isSorted()", "true"},
      {"[1.5, 2.5].sum()", "4.0"},
      {"[].sum()", "0"},
      {"[4, 2].min()", "2"},
      {"[1, 2, 1].lastIndexOf(1)", "2"},
      {"[[1], [2, [3]]].flatten()", "[1, 2, [3]]"},
      {"[1, 2, 2, 1].distinct()", "[1, 2]"},
      {"lists.range(3)", "[0, 1, 2]"},
      {"[1, 2, 3].slice(1, 3)", "[2, 3]"},
      {"['b', 'a'].sortBy(s, s)", R"(["a", "b"])"},
      {"sets.contains([1, 2, 3], [3, 1])", "true"},
      {"sets.intersects([1], [2])", "false"},
      {"[].max()", "error: max called on empty list"},
      {"{'a': 1, 'b': 2}.transformMap(k, v, v * 10)", R"({"a": 10, "b": 20})"},
      {"[1, 2].transformMapEntry(i, v, {string(v): i})", R"({"1": 0, "2": 1})"},
      {"[1, 1].transformMapEntry(i, v, {v: i})", "error: insert failed: key 1 already exists"},
  });
}

TEST(CelNetworkAndUrlTest, ParsesAndQueries) {
  ExpectRows({
      {R"(ip("10.0.0.1").family())", "4"},
      {R"(cidr("10.0.0.0/8").containsIP("10.1.2.3"))", "true"},
      {R"(string(ip("2001:0db8:0000:0000:0000:0000:0000:0001")))", R"("2001:db8::1")"},
      {R"(ip("010.0.0.1"))", "error: parse error"},
      {R"(url("https://user@example.com:8443/a%20b?x=1&x=2&y").getHostname())", R"("example.com")"},
      {R"(url("https://example.com:8443/a%20b").getPort())", R"("8443")"},
      {R"(url("https://example.com/a%20b").getEscapedPath())", R"("/a%20b")"},
      {R"(url("https://example.com/?x=1&x=2&y").getQuery())", R"({"x": ["1", "2"], "y": [""]})"},
      {R"(isURL("not a url"))", "false"},
  });
}

TEST(CelTimeTest, TimestampsDurationsAndZones) {
  ExpectRows({
      {R"(timestamp("2009-02-13T23:31:30Z") + duration("1h30m"))",
       R"(timestamp("2009-02-14T01:01:30Z"))"},
      {R"(duration("1.5h"))", R"(duration("5400s"))"},
      {R"(timestamp("2023-07-01T12:00:00Z").getHours("Europe/Berlin"))", "14"},
      {R"(timestamp("2023-01-01T12:00:00Z").getHours("Europe/Berlin"))", "13"},
      {R"(timestamp("2023-01-01T12:00:00Z").getHours("+05:30"))", "17"},
      {R"(timestamp("2023-01-01T12:00:00Z").getHours("Nowhere/Land"))", "error: unknown time zone"},
      {R"(duration(dyn("3000000h")))", "error: invalid duration"},
  });
}

TEST(CelErrorsTest, RuntimeErrorsAndAbsorption) {
  ExpectRows({
      {"9223372036854775807 + 1", "error: integer overflow"},
      {"1 / 0", "error: division by zero"},
      {"0u - 1u", "error: unsigned integer overflow"},
      {"int(1e19)", "error: integer overflow"},
      {"[1][3]", "error: index '3' out of range in list size '1'"},
      {"{'a': 1}.b", "error: no such key: b"},
      {"1 / 0 == 1 || true", "true"},
      {"false && 1 / 0 == 1", "false"},
      {"[1].exists(x, x / 0 == 1)", "error: division by zero"},
      {"[0, 1].exists(x, 1 / x == 1)", "true"},
      {"cel.bind(x, 1 / 0, true)", "true"},
      {"optional.none().value()", "error: optional.none() dereference"},
      {"optional.of(1).orValue(1 / 0)", "1"},
  });
}

TEST(CelCostTest, ChargesCelGoRuntimeCosts) {
  static const auto env = Environment::NewGeneric({});
  auto cost = [&](const std::string& expr) {
    Activation act;
    return (*env->Compile(expr))->Evaluate(act).cost();
  };
  // Constants fold to cost 0; a comprehension over a constant list charges its iterations:
  // per element @not_strictly_false(@result) (2) + @result && x > 0 (ident 1, x 1, > 1).
  EXPECT_EQ(cost("1 + 2"), 0u);
  EXPECT_EQ(cost("[1, 2, 3].all(x, x > 0)"), 3u * 5u + 1u);
  // String concatenation of a growing string is charged per byte.
  EXPECT_GE(cost("lists.range(100).map(i, 'xxxxxxxxxx').join('')"), 100u);
}

}  // namespace
}  // namespace draplane::cel
