#include "api/codec/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <string>

namespace draplane::api::codec {
namespace {

using ::testing::HasSubstr;

TEST(JsonTest, ParsesOneValueWithSurroundingSpace) {
  StatusOr<boost::json::value> v = ParseJson("  {\"a\": [1, 2.5, \"x\", null, true]}\n");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, boost::json::parse(R"({"a":[1,2.5,"x",null,true]})"));
}

TEST(JsonTest, JsonEqualIsEqualityWhateverTheOrderOfMembers) {
  auto equal = [](std::string_view a, std::string_view b) {
    return JsonEqual(boost::json::parse(a), boost::json::parse(b));
  };
  EXPECT_TRUE(equal(R"({"a":1,"b":{"c":[1,{"d":null}]}})", R"({"a":1,"b":{"c":[1,{"d":null}]}})"));
  // Members in another order, at the top and nested after equal members.
  EXPECT_TRUE(equal(R"({"a":1,"b":2})", R"({"b":2,"a":1})"));
  EXPECT_TRUE(equal(R"({"m":{"x":1,"y":[true]},"s":"v"})", R"({"m":{"y":[true],"x":1},"s":"v"})"));
  // Differences anywhere, and in the order of array elements.
  EXPECT_FALSE(equal(R"({"a":1,"b":{"c":[1,2]}})", R"({"a":1,"b":{"c":[2,1]}})"));
  EXPECT_FALSE(equal(R"({"a":1,"b":2})", R"({"b":2,"a":3})"));
  EXPECT_FALSE(equal(R"({"a":1})", R"({"a":1,"b":2})"));
  EXPECT_FALSE(equal(R"({"a":"1"})", R"({"a":1})"));
  EXPECT_FALSE(equal(R"([{"a":1}])", R"({"a":1})"));
  // Numbers as boost::json compares them.
  EXPECT_EQ(equal("1", "1.0"), boost::json::parse("1") == boost::json::parse("1.0"));
  const boost::json::value signed_five(std::int64_t{5}), unsigned_five(std::uint64_t{5});
  EXPECT_EQ(JsonEqual(signed_five, unsigned_five), signed_five == unsigned_five);
}

TEST(JsonTest, JsonIdenticalIsTheSameSerialisation) {
  auto identical = [](std::string_view a, std::string_view b) {
    return JsonIdentical(boost::json::parse(a), boost::json::parse(b));
  };
  EXPECT_TRUE(
      identical(R"({"a":1,"b":{"c":[1,{"d":null}]}})", R"({"a":1,"b":{"c":[1,{"d":null}]}})"));
  // JsonEqual, not identical: members in another order, numbers of another kind.
  EXPECT_FALSE(identical(R"({"a":1,"b":2})", R"({"b":2,"a":1})"));
  EXPECT_FALSE(identical(R"({"m":{"x":1,"y":[true]}})", R"({"m":{"y":[true],"x":1}})"));
  EXPECT_FALSE(
      JsonIdentical(boost::json::value(std::int64_t{5}), boost::json::value(std::uint64_t{5})));
  EXPECT_FALSE(identical("1", "1.0"));
  // Differences anywhere.
  EXPECT_FALSE(identical(R"({"a":1,"b":{"c":[1,2]}})", R"({"a":1,"b":{"c":[2,1]}})"));
  EXPECT_FALSE(identical(R"({"a":1})", R"({"a":1,"b":2})"));
  EXPECT_FALSE(identical(R"({"a":"1"})", R"({"a":1})"));
  EXPECT_FALSE(identical(R"([{"a":1}])", R"({"a":1})"));
}

TEST(JsonTest, DuplicateKeysKeepTheLastValue) {
  StatusOr<boost::json::value> v = ParseJson(R"({"a": 1, "a": 2})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->at("a"), 2);
}

TEST(JsonTest, ReportsLineAndColumnOfSyntaxErrors) {
  StatusOr<boost::json::value> v = ParseJson("{\n  \"a\": 1,\n  \"b\": ]\n}");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(v.status().message(), HasSubstr("line 3 column"));
}

TEST(JsonTest, TruncatedInputIsAnError) {
  StatusOr<boost::json::value> v = ParseJson(R"({"kind": "Pod", "metadata": {"name": "x")");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("line 1"));
}

TEST(JsonTest, TrailingDataIsAnError) {
  StatusOr<boost::json::value> v = ParseJson("{} {}");
  ASSERT_FALSE(v.ok());
}

TEST(JsonTest, RejectsInvalidUtf8) {
  StatusOr<boost::json::value> v = ParseJson("\"\xff\xfe\"");
  EXPECT_FALSE(v.ok());
}

TEST(JsonTest, DeepNestingFailsClearly) {
  const std::string deep = std::string(10000, '[') + std::string(10000, ']');
  StatusOr<boost::json::value> v = ParseJson(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("nesting deeper than 1000 levels"));
}

TEST(JsonTest, NestingUpToTheLimitIsAccepted) {
  const std::string deep = std::string(999, '[') + std::string(999, ']');
  EXPECT_TRUE(ParseJson(deep).ok());
}

TEST(JsonTest, TenMegabyteStringsAreFine) {
  const std::string big(10 << 20, 'x');
  StatusOr<boost::json::value> v = ParseJson("{\"data\": \"" + big + "\"}");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->at("data").as_string().size(), big.size());
}

TEST(JsonTest, RejectsInputsOverTheSizeLimit) {
  ParseLimits limits;
  limits.max_bytes = 16;
  StatusOr<boost::json::value> v = ParseJson(R"({"a": "0123456789abcdef"})", limits);
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("larger than the limit of 16 bytes"));
}

TEST(JsonTest, StreamParsesSeveralValuesWithTheirLines) {
  StatusOr<std::vector<JsonDocument>> docs = ParseJsonStream("{\"a\": 1}\n\n{\"b\": 2}\n  [3]");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ((*docs)[0].line, 1);
  EXPECT_EQ((*docs)[1].line, 3);
  EXPECT_EQ((*docs)[2].line, 4);
  EXPECT_EQ((*docs)[2].value, boost::json::parse("[3]"));
}

TEST(JsonTest, StreamErrorsNameTheDocument) {
  StatusOr<std::vector<JsonDocument>> docs = ParseJsonStream("{}\n{\"a\": }");
  ASSERT_FALSE(docs.ok());
  EXPECT_THAT(docs.status().message(), HasSubstr("2: line 2 column"));
}

TEST(JsonTest, StreamOfNothingIsEmpty) {
  StatusOr<std::vector<JsonDocument>> docs = ParseJsonStream(" \n\t ");
  ASSERT_TRUE(docs.ok());
  EXPECT_TRUE(docs->empty());
}

TEST(JsonTest, WritesLikeKubectl) {
  boost::json::value v =
      boost::json::parse(R"({"kind":"List","items":[],"metadata":{},"n":[1,{"a":"b"}]})");
  EXPECT_EQ(WriteJson(v),
            "{\n"
            "    \"kind\": \"List\",\n"
            "    \"items\": [],\n"
            "    \"metadata\": {},\n"
            "    \"n\": [\n"
            "        1,\n"
            "        {\n"
            "            \"a\": \"b\"\n"
            "        }\n"
            "    ]\n"
            "}\n");
  EXPECT_EQ(WriteJson(v, {.indent = 0}),
            R"({"kind":"List","items":[],"metadata":{},"n":[1,{"a":"b"}]})");
}

TEST(JsonTest, WritesNumbersLikeGo) {
  EXPECT_EQ(WriteJson(boost::json::value(1.5), {.indent = 0}), "1.5");
  EXPECT_EQ(WriteJson(boost::json::value(100.0), {.indent = 0}), "100");
  EXPECT_EQ(WriteJson(boost::json::value(1e21), {.indent = 0}), "1e+21");
  EXPECT_EQ(WriteJson(boost::json::value(1e-7), {.indent = 0}), "1e-7");
  EXPECT_EQ(WriteJson(boost::json::value(0.000001), {.indent = 0}), "0.000001");
  EXPECT_EQ(WriteJson(boost::json::value(-3), {.indent = 0}), "-3");
  EXPECT_EQ(WriteJson(boost::json::value(uint64_t{18446744073709551615u}), {.indent = 0}),
            "18446744073709551615");
}

TEST(JsonTest, EscapesOnlyWhatJsonRequires) {
  boost::json::value v(std::string("a\"b\\c\nd\x01<&>\xc3\xa9"));
  EXPECT_EQ(WriteJson(v, {.indent = 0}), "\"a\\\"b\\\\c\\nd\\u0001<&>\xc3\xa9\"");
}

TEST(JsonTest, ParsesDoublesCorrectlyRounded) {
  // Boost.JSON 1.81's own conversion gets these one unit in the last place wrong.
  for (const char* text : {"1.3927926388013963e-143", "9.5998012756364456e-283",
                           "11111111111111111111111111111111111111111111111111111111111111111111111"
                           "111111115",
                           "0.30000000000000004"}) {
    StatusOr<boost::json::value> v = ParseJson(text);
    ASSERT_TRUE(v.ok());
    ASSERT_TRUE(v->is_double()) << text;
    EXPECT_EQ(v->get_double(), std::strtod(text, nullptr)) << text;
    StatusOr<boost::json::value> back = ParseJson(WriteJson(*v, {.indent = 0}));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, *v) << text;
  }
}

TEST(JsonTest, NumbersBeyondDoubleRangeAreErrors) {
  StatusOr<boost::json::value> v = ParseJson("{\"a\": 1e400}");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("number out of range"));
  EXPECT_FALSE(ParseJson(std::string(400, '9')).ok());
  EXPECT_TRUE(ParseJson("1e-400").ok());  // underflow is zero, as in Go
}

TEST(JsonTest, WrittenJsonParsesBackToTheSameValue) {
  boost::json::value v = boost::json::parse(
      R"({"s":"tab\there","f":0.1,"i":-9223372036854775808,"u":18446744073709551615,"e":1e300,"n":null,"a":[[],{}]})");
  StatusOr<boost::json::value> back = ParseJson(WriteJson(v));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
}

}  // namespace
}  // namespace draplane::api::codec
