#include "api/codec/yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

namespace draplane::api::codec {
namespace {

using ::testing::HasSubstr;

boost::json::value One(std::string_view yaml) {
  StatusOr<std::vector<YamlDocument>> docs = ParseYaml(yaml);
  EXPECT_TRUE(docs.ok()) << yaml << ": " << docs.status().ToString();
  if (!docs.ok() || docs->size() != 1) return boost::json::value("<no single document>");
  return (*docs)[0].value;
}

Status ParseError(std::string_view yaml) {
  StatusOr<std::vector<YamlDocument>> docs = ParseYaml(yaml);
  return docs.ok() ? Status::Ok() : docs.status();
}

struct ScalarCase {
  const char* yaml;  // a plain scalar as written in a manifest
  const char* json;  // what sigs.k8s.io/yaml turns it into
};

// go-yaml v2 resolve.go as used by sigs.k8s.io/yaml (YAMLToJSON, then json.Marshal).
const ScalarCase kPlainScalars[] = {
    {"~", "null"},
    {"null", "null"},
    {"Null", "null"},
    {"NULL", "null"},
    {"true", "true"},
    {"True", "true"},
    {"TRUE", "true"},
    {"yes", "true"},
    {"Yes", "true"},
    {"YES", "true"},
    {"y", "true"},
    {"Y", "true"},
    {"on", "true"},
    {"On", "true"},
    {"ON", "true"},
    {"false", "false"},
    {"no", "false"},
    {"No", "false"},
    {"n", "false"},
    {"N", "false"},
    {"off", "false"},
    {"OFF", "false"},
    {"tRUE", "\"tRUE\""},
    {"nope", "\"nope\""},
    {"123", "123"},
    {"-17", "-17"},
    {"+5", "5"},
    {"0", "0"},
    {"-0", "0"},
    {"0x1F", "31"},
    {"0X1f", "31"},
    {"0o17", "15"},
    {"017", "15"},
    {"0b101", "5"},
    {"-0b101", "-5"},
    {"1_000", "1000"},
    {"08", "8"},
    {"1.5", "1.5"},
    {"1.0", "1"},
    {"1.", "1"},
    {"1e3", "1000"},
    {"1E-2", "0.01"},
    {".5", "0.5"},
    {"-.5", "-0.5"},
    {"+12.5e1", "125"},
    {"10_0.5", "100.5"},
    {"9223372036854775807", "9223372036854775807"},
    {"9223372036854775808", "9223372036854775808"},
    {"18446744073709551615", "18446744073709551615"},
    {"99999999999999999999", "1e20"},
    {"1e400", "\"1e400\""},
    {"0x", "\"0x\""},
    {"0xg", "\"0xg\""},
    {"12e", "\"12e\""},
    {"0.1.2", "\"0.1.2\""},
    {"._5", "\"._5\""},
    {"1:30", "\"1:30\""},
    {"2001-12-14", "\"2001-12-14\""},
    {"2001-12-14t21:59:43.10-05:00", "\"2001-12-14t21:59:43.10-05:00\""},
    {"2008-01-01T01:01:01Z", "\"2008-01-01T01:01:01Z\""},
    {"<<", "\"<<\""},
    {"1Gi", "\"1Gi\""},
    {"500m", "\"500m\""},
    {"gpu.example.com", "\"gpu.example.com\""},
};

TEST(YamlTest, ResolvesPlainScalarsLikeKubectl) {
  for (const ScalarCase& c : kPlainScalars) {
    const boost::json::value expected = boost::json::parse(c.json);
    StatusOr<boost::json::value> got = ResolvePlainScalar(c.yaml);
    ASSERT_TRUE(got.ok()) << c.yaml;
    EXPECT_EQ(*got, expected) << "plain scalar `" << c.yaml << "` gave " << *got;
    // The same scalar inside a document.
    EXPECT_EQ(One(std::string("v: ") + c.yaml).at("v"), expected) << c.yaml;
  }
}

TEST(YamlTest, ResolvesScalarsThatCannotStandAloneAsValues) {
  EXPECT_EQ(*ResolvePlainScalar("-"), "-");
  EXPECT_EQ(*ResolvePlainScalar("-x"), "-x");
  EXPECT_EQ(*ResolvePlainScalar(""), nullptr);
}

TEST(YamlTest, IntegersKeepTheirJsonIntegerKind) {
  EXPECT_TRUE(One("v: 7").at("v").is_int64());
  EXPECT_TRUE(One("v: 18446744073709551615").at("v").is_uint64());
  EXPECT_TRUE(One("v: 2.0").at("v").is_int64());
  EXPECT_TRUE(One("v: 2.5").at("v").is_double());
}

TEST(YamlTest, InfinityAndNanCannotBecomeJson) {
  for (const char* s : {".inf", ".Inf", "-.inf", "+.INF", ".nan", ".NaN"}) {
    Status st = ParseError(std::string("v: ") + s);
    EXPECT_FALSE(st.ok()) << s;
    EXPECT_THAT(st.message(), HasSubstr("JSON cannot represent")) << s;
  }
}

TEST(YamlTest, HugeIntegersBecomeDoublesUntilTheyOverflow) {
  EXPECT_EQ(One("v: 0x10000000000000000").at("v"), 18446744073709551616.0);
  EXPECT_THAT(ParseError("v: 0x" + std::string(300, 'f')).message(),
              HasSubstr("number out of range"));
}

TEST(YamlTest, QuotedAndBlockScalarsAreStrings) {
  EXPECT_EQ(One("v: \"123\"").at("v"), "123");
  EXPECT_EQ(One("v: 'true'").at("v"), "true");
  EXPECT_EQ(One("v: \"\"").at("v"), "");
  EXPECT_EQ(One("v: |\n  null\n").at("v"), "null\n");
  EXPECT_EQ(One("v: >-\n  a\n  b\n").at("v"), "a b");
  EXPECT_EQ(One("v: \"a\\tb\\u00e9\"").at("v"), "a\tb\xc3\xa9");
}

TEST(YamlTest, EmptyValuesAreNull) {
  boost::json::value v = One("a:\nb: ~\nc: []\nd: {}\n");
  EXPECT_EQ(v, boost::json::parse(R"({"a":null,"b":null,"c":[],"d":{}})"));
}

TEST(YamlTest, HonoursCoreTags) {
  EXPECT_EQ(One("v: !!str 123").at("v"), "123");
  EXPECT_EQ(One("v: !!str true").at("v"), "true");
  EXPECT_EQ(One("v: !!int \"12\"").at("v"), 12);
  EXPECT_EQ(One("v: !!float 1").at("v"), 1);
  EXPECT_EQ(One("v: !!bool yes").at("v"), true);
  EXPECT_EQ(One("v: !!null ~").at("v"), nullptr);
  EXPECT_EQ(One("v: !custom 5").at("v"), "5");
  EXPECT_THAT(ParseError("v: !!int abc").message(), HasSubstr("cannot decode `abc` as a !!int"));
  EXPECT_THAT(ParseError("v: !!binary aGVsbG8=").message(), HasSubstr("!!binary"));
}

TEST(YamlTest, ConvertsNonStringKeysLikeSigsYaml) {
  boost::json::value v = One("1: a\n1.5: b\nyes: c\n\"no\": d\n0x10: e\n1e10: f\n0.1: g\n");
  EXPECT_EQ(v, boost::json::parse(
                   R"({"1":"a","1.5":"b","true":"c","no":"d","16":"e","1e+10":"f","0.1":"g"})"));
}

TEST(YamlTest, RejectsNullAndCollectionKeys) {
  EXPECT_THAT(ParseError("~: a\n").message(), HasSubstr("mapping keys must not be null"));
  EXPECT_THAT(ParseError("? [a, b]\n: c\n").message(), HasSubstr("mapping keys must be scalars"));
  EXPECT_THAT(ParseError("? {a: b}\n: c\n").message(), HasSubstr("mapping keys must be scalars"));
}

TEST(YamlTest, RepeatedKeysKeepTheLastValue) {
  EXPECT_EQ(One("a: 1\na: 2\n"), boost::json::parse(R"({"a":2})"));
}

TEST(YamlTest, ExpandsAnchorsAndMergeKeys) {
  boost::json::value v =
      One("base: &b {a: 1, b: 2}\n"
          "list: &l [x, z]\n"
          "copy: *l\n"
          "merged:\n"
          "  <<: *b\n"
          "  b: 3\n"
          "two:\n"
          "  <<: [{a: 1}, {a: 2, c: 3}]\n");
  EXPECT_EQ(v.at("copy"), boost::json::parse(R"(["x","z"])"));
  EXPECT_EQ(v.at("merged"), boost::json::parse(R"({"a":1,"b":3})"));
  EXPECT_EQ(v.at("two"), boost::json::parse(R"({"a":1,"c":3})"));
  EXPECT_THAT(ParseError("a:\n  <<: 5\n").message(), HasSubstr("map merge requires"));
}

TEST(YamlTest, UnknownAliasIsAnError) {
  EXPECT_THAT(ParseError("a: *nope\n").message(), HasSubstr("line 1"));
}

TEST(YamlTest, AliasBombsAreStopped) {
  std::string yaml = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    const char prev = static_cast<char>(c - 1);
    yaml += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 8; ++i) yaml += std::string(i ? ",*" : "*") + prev;
    yaml += "]\n";
  }
  EXPECT_THAT(ParseError(yaml).message(), HasSubstr("excessive aliasing"));
}

TEST(YamlTest, SplitsDocumentsAndRemembersTheirLines) {
  StatusOr<std::vector<YamlDocument>> docs =
      ParseYaml("a: 1\n---\n# only a comment\n---\nb: 2\nc: 3\n...\n---\n- x\n");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 4u);
  EXPECT_EQ((*docs)[0].value, boost::json::parse(R"({"a":1})"));
  EXPECT_EQ((*docs)[0].line, 1);
  EXPECT_TRUE((*docs)[1].value.is_null());
  EXPECT_EQ((*docs)[2].value, boost::json::parse(R"({"b":2,"c":3})"));
  EXPECT_EQ((*docs)[2].line, 4);
  EXPECT_EQ((*docs)[3].value, boost::json::parse(R"(["x"])"));
}

TEST(YamlTest, ALoneCarriageReturnBreaksLinesAsInGoYaml) {
  StatusOr<std::vector<YamlDocument>> blank = ParseYaml(" \r");
  ASSERT_TRUE(blank.ok()) << blank.status().ToString();
  EXPECT_TRUE(blank->empty()) << boost::json::serialize((*blank)[0].value);
  EXPECT_EQ(One("a: 1\rb: 2"), boost::json::parse(R"({"a":1,"b":2})"));
  EXPECT_EQ(One("a:\r  - x\r\n  - z\r"), boost::json::parse(R"({"a":["x","z"]})"));
  EXPECT_EQ(One("a: \"x\r\r  y\""), boost::json::parse(R"({"a":"x\ny"})"));
  EXPECT_THAT(ParseError("a: 1\rb: [\r").message(), HasSubstr("line 3"));
}

TEST(YamlTest, MalformedYamlNamesDocumentAndLine) {
  Status st = ParseError("a: 1\n---\nb: [1, 2\nc: 3\n");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("2: line"));
}

TEST(YamlTest, TruncatedYamlIsAnError) {
  EXPECT_FALSE(ParseError("metadata:\n  name: \"unterminated\n").ok());
  EXPECT_FALSE(ParseError("spec: {devices: [").ok());
  EXPECT_THAT(ParseError("- a\nb: c\n").message(),
              HasSubstr("2: line 2: did not find expected <document start>"));
  EXPECT_THAT(ParseError("a: 'open\n").message(), HasSubstr("line 1: found unexpected end"));
}

TEST(YamlTest, DeepNestingFailsBeforeYamlCppRecurses) {
  const std::string flow = "v: " + std::string(10000, '[') + std::string(10000, ']');
  EXPECT_THAT(ParseError(flow).message(), HasSubstr("1: line 1: nesting deeper than 400 levels"));
  std::string block;
  for (int i = 0; i < 10000; ++i) block += std::string(i, ' ') + "k:\n";
  EXPECT_THAT(ParseError(block).message(), HasSubstr("nesting deeper than 400 levels"));
  std::string compact;
  for (int i = 0; i < 10000; ++i) compact += "- ";
  compact += "x\n";
  EXPECT_THAT(ParseError(compact).message(), HasSubstr("nesting deeper than 400 levels"));
}

// Between the YAML limit and yaml-cpp's own (500 nodes) the error used to be yaml-cpp's bare
// "bad file"; every depth from just over the limit to far beyond it names the limit.
TEST(YamlTest, FlowNestingJustPastTheLimitNamesTheLimit) {
  for (int depth : {401, 499, 500, 600, 2000}) {
    SCOPED_TRACE(depth);
    const std::string seq = "a: b\nv: " + std::string(depth, '[') + std::string(depth, ']');
    EXPECT_THAT(ParseError(seq).message(), HasSubstr("1: line 2: nesting deeper than 400 levels"));
    std::string map = "v: ";
    for (int i = 0; i < depth; ++i) map += "{k: ";
    map += "1" + std::string(depth, '}');
    EXPECT_THAT(ParseError(map).message(), HasSubstr("nesting deeper than 400 levels"));
  }
  const std::string later = "a: 1\n---\nv: " + std::string(600, '[') + std::string(600, ']');
  EXPECT_THAT(ParseError(later).message(), HasSubstr("2: line 3: nesting deeper than 400 levels"));
  const std::string hostile = "a: 1\n---\nv: " + std::string(5000, '[') + std::string(5000, ']');
  EXPECT_THAT(ParseError(hostile).message(),
              HasSubstr("2: line 3: nesting deeper than 400 levels"));
}

TEST(YamlTest, NestingUpToTheLimitIsAccepted) {
  // `v:` holds the outermost mapping: 1 + 399 collections, the deepest accepted.
  EXPECT_TRUE(ParseError("v: " + std::string(399, '[') + std::string(399, ']')).ok());
  EXPECT_THAT(ParseError("v: " + std::string(400, '[') + std::string(400, ']')).message(),
              HasSubstr("1: line 1: nesting deeper than 400 levels"));
  std::string block;
  for (int i = 0; i < 399; ++i) block += std::string(2 * i, ' ') + "k:\n";
  block += std::string(2 * 399, ' ') + "leaf: 1\n";
  EXPECT_TRUE(ParseError(block).ok());
}

TEST(YamlTest, ModerateNestingIsAccepted) {
  const std::string flow = "v: " + std::string(200, '[') + std::string(200, ']');
  EXPECT_TRUE(ParseError(flow).ok());
  std::string block;
  for (int i = 0; i < 100; ++i) block += std::string(2 * i, ' ') + "k:\n";
  EXPECT_TRUE(ParseError(block).ok());
}

TEST(YamlTest, TenMegabyteStringsAreFine) {
  const std::string big(10 << 20, 'x');
  boost::json::value v = One("data: " + big + "\n");
  EXPECT_EQ(v.at("data").as_string().size(), big.size());
}

TEST(YamlTest, RejectsBadEncodingAndControlCharacters) {
  EXPECT_THAT(ParseError("a: \xff\n").message(), HasSubstr("invalid UTF-8"));
  EXPECT_THAT(ParseError("a: b\nc: \x01\n").message(),
              HasSubstr("line 2: control characters are not allowed"));
  EXPECT_THAT(ParseError(std::string("a: \0b\n", 6)).message(), HasSubstr("control characters"));
}

TEST(YamlTest, RejectsInputsOverTheSizeLimit) {
  ParseLimits limits;
  limits.max_bytes = 4;
  StatusOr<std::vector<YamlDocument>> docs = ParseYaml("a: 12345", limits);
  ASSERT_FALSE(docs.ok());
  EXPECT_THAT(docs.status().message(), HasSubstr("larger than the limit"));
}

// ----- writer -----------------------------------------------------------------------------

std::string Yaml(std::string_view json) { return WriteYaml(boost::json::parse(json)); }

TEST(YamlWriterTest, WritesBlockStyleLikeKubectl) {
  EXPECT_EQ(Yaml(R"({"kind":"Pod","spec":{"containers":[{"name":"a","args":["x","y"]}],
                     "empty":[],"none":{},"n":null},"list":[[1,2],[]]})"),
            "kind: Pod\n"
            "list:\n"
            "- - 1\n"
            "  - 2\n"
            "- []\n"
            "spec:\n"
            "  containers:\n"
            "  - args:\n"
            "    - x\n"
            "    - \"y\"\n"
            "    name: a\n"
            "  empty: []\n"
            "  \"n\": null\n"
            "  none: {}\n");
}

TEST(YamlWriterTest, WritesTopLevelScalarsAndEmptyCollections) {
  EXPECT_EQ(Yaml("{}"), "{}\n");
  EXPECT_EQ(Yaml("[]"), "[]\n");
  EXPECT_EQ(Yaml("null"), "null\n");
  EXPECT_EQ(Yaml("\"a\\nb\""), "|-\n  a\n  b\n");
}

TEST(YamlWriterTest, SortsKeysLikeGoYaml) {
  EXPECT_EQ(Yaml(R"({"b":1,"a":1,"A":1,"_x":1,"a10":1,"a9":1,"a09":1})"),
            "_x: 1\nA: 1\na: 1\na9: 1\na09: 1\na10: 1\nb: 1\n");
  EXPECT_TRUE(YamlKeyLess("apiVersion", "kind"));
  EXPECT_TRUE(YamlKeyLess("Port", "port"));
  EXPECT_TRUE(YamlKeyLess("v1", "v2"));
  EXPECT_TRUE(YamlKeyLess("gpu2", "gpu10"));
  EXPECT_FALSE(YamlKeyLess("gpu10", "gpu2"));
}

struct StyleCase {
  const char* value;
  const char* written;
};

// go-yaml v2: double quotes where plain text would resolve to another type, single quotes where
// the text holds YAML indicators, literal blocks for multi-line text.
const StyleCase kStyles[] = {
    {"plain text", "plain text"},
    {"it's", "it's"},
    {"123", "\"123\""},
    {"true", "\"true\""},
    {"yes", "\"yes\""},
    {"n", "\"n\""},
    {"", "\"\""},
    {"~", "\"~\""},
    {"null", "\"null\""},
    {"1.5", "\"1.5\""},
    {"0x1F", "\"0x1F\""},
    {"1e3", "\"1e3\""},
    {".inf", "\".inf\""},
    {"1:30", "\"1:30\""},
    {"2008-01-01T01:01:01Z", "\"2008-01-01T01:01:01Z\""},
    {"<<", "\"<<\""},
    {"- x", "'- x'"},
    {"a: b", "'a: b'"},
    {"#x", "'#x'"},
    {"x #y", "'x #y'"},
    {"*", "'*'"},
    {"&a", "'&a'"},
    {"!x", "'!x'"},
    {"{a}", "'{a}'"},
    {"[a]", "'[a]'"},
    {"'q'", "'''q'''"},
    {"\"q\"", "'\"q\"'"},
    {"---", "'---'"},
    {" lead", "' lead'"},
    {"trail ", "'trail '"},
    {"a:b", "a:b"},
    {"a#b", "a#b"},
    {"http://x/y?z=1", "http://x/y?z=1"},
    {"device.attributes[\"gpu.example.com\"].memory >= quantity(\"40Gi\")",
     "device.attributes[\"gpu.example.com\"].memory >= quantity(\"40Gi\")"},
    {"tab\there", "\"tab\\there\""},
    {"bell\x07", "\"bell\\a\""},
    {"caf\xc3\xa9", "caf\xc3\xa9"},
    {"a\nb", "|-\n  a\n  b"},
    {"a\nb\n", "|\n  a\n  b"},
    {"a\n\n", "|+\n  a\n"},
    {" a\nb", "|2-\n   a\n  b"},
    {"a \nb", "\"a \\nb\""},
};

TEST(YamlWriterTest, ChoosesScalarStylesLikeGoYaml) {
  for (const StyleCase& c : kStyles) {
    boost::json::value v = {{"v", c.value}};
    EXPECT_EQ(WriteYaml(v), std::string("v: ") + c.written + "\n") << "value: " << c.value;
  }
}

TEST(YamlWriterTest, QuotesKeysThatWouldReadBackAsOtherTypes) {
  EXPECT_EQ(Yaml(R"({"1":"a","yes":"b","a b":"c","- x":"d"})"),
            "'- x': d\n\"1\": a\na b: c\n\"yes\": b\n");
}

TEST(YamlWriterTest, WritesNumbersLikeGoYaml) {
  EXPECT_EQ(Yaml(R"({"a":1.5,"b":1e6,"c":123456.0,"d":0.00001,"e":-7,"f":18446744073709551615})"),
            "a: 1.5\nb: 1e+06\nc: 123456\nd: 1e-05\ne: -7\nf: 18446744073709551615\n");
}

TEST(YamlWriterTest, EverythingWrittenReadsBackTheSame) {
  boost::json::array strings;
  for (const StyleCase& c : kStyles) strings.push_back(boost::json::value(c.value));
  for (const ScalarCase& c : kPlainScalars) strings.push_back(boost::json::value(c.yaml));
  strings.push_back(boost::json::value(std::string(300, 'k') + ": long"));
  boost::json::object obj;
  obj["strings"] = strings;
  obj[std::string(200, 'x')] = "a key longer than 128 characters";
  obj["multi\nline key"] = "v";
  obj["nested"] = boost::json::parse(R"({"a":[{"b":[[],{},[1,[2,{"c":"d\ne"}]]]}],"z":null})");
  const boost::json::value v(std::move(obj));
  const std::string text = WriteYaml(v);
  StatusOr<std::vector<YamlDocument>> back = ParseYaml(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].value, v) << text;
}

}  // namespace
}  // namespace draplane::api::codec
