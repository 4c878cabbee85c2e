// The patch formats (patch.h) and JSON pointers (json_pointer.h).
#include "api/patch/patch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/patch/json_pointer.h"

namespace draplane::api::patch {
namespace {

boost::json::value Json(std::string_view text) { return boost::json::parse(text); }

TEST(PatchTest, JsonPatchCopiesAreBoundedWhileApplying) {
  boost::json::array ops;
  ops.push_back(Json(R"({"op":"add","path":"/a","value":{"x":"0123456789"}})"));
  for (int i = 0; i < 40; ++i) {
    ops.push_back(
        boost::json::object{{"op", "copy"}, {"from", "/a"}, {"path", "/a/c" + std::to_string(i)}});
  }
  JsonPatchLimits limits{.max_operations = 100, .max_copy_bytes = 64 * 1024};
  StatusOr<boost::json::value> result = ApplyJsonPatch(Json("{}"), ops, limits);
  ASSERT_EQ(result.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(result.status().message()),
              ::testing::HasSubstr("the accumulated size increase of copy is"));
  // The same patch fits once the limit allows its growth (2^40 bytes would not).
  ops.resize(6);
  EXPECT_TRUE(ApplyJsonPatch(Json("{}"), ops, limits).ok());
}

TEST(PatchTest, JsonPatchOperationCountIsBounded) {
  boost::json::array ops(3, Json(R"({"op":"test","path":"","value":{}})"));
  JsonPatchLimits limits{.max_operations = 2};
  EXPECT_EQ(CheckJsonPatchOperations(ops, limits).message(),
            "The allowed maximum operations in a JSON patch is 2, got 3");
  EXPECT_EQ(ApplyJsonPatch(Json("{}"), ops, limits).status().code(),
            StatusCode::kResourceExhausted);
  ops.pop_back();
  EXPECT_TRUE(ApplyJsonPatch(Json("{}"), ops, limits).ok());
}

TEST(PatchTest, JsonPatchBoundsReachClientsAsInvalidArgument) {
  boost::json::array ops(3, Json(R"({"op":"test","path":"","value":{}})"));
  Status over = ApplyPatch(Json("{}"), ops, PatchFormat::kJson, "Pod").status();
  EXPECT_TRUE(over.ok()) << over.ToString();  // three operations are within the default bound
  boost::json::array many(10'001, Json(R"({"op":"test","path":"","value":{}})"));
  Status too_many = ApplyPatch(Json("{}"), many, PatchFormat::kJson, "Pod").status();
  ASSERT_EQ(too_many.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(AsClientError(too_many).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AsClientError(too_many).message(), too_many.message());
}

TEST(JsonPointerTest, UnescapesTokens) {
  StatusOr<std::vector<std::string>> tokens = ParseJsonPointer("/a~1b/c~0d/~2/");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(*tokens, (std::vector<std::string>{"a/b", "c~d", "~2", ""}));
  EXPECT_TRUE(ParseJsonPointer("")->empty());
  EXPECT_EQ(ParseJsonPointer("a").status().message(),
            "invalid JSON pointer \"a\": must start with '/'");
}

TEST(JsonPointerTest, ArrayIndexesHaveNoLeadingZeroAndStayInRange) {
  EXPECT_EQ(ParseArrayIndex("0", 3), 0u);
  EXPECT_EQ(ParseArrayIndex("3", 3), 3u);
  EXPECT_FALSE(ParseArrayIndex("4", 3).has_value());
  EXPECT_FALSE(ParseArrayIndex("01", 3).has_value());
  EXPECT_FALSE(ParseArrayIndex("-1", 3).has_value());
  EXPECT_FALSE(ParseArrayIndex("99999999999999999999", ~size_t{0}).has_value());
  boost::json::value doc = Json(R"({"a":[{"b":1}]})");
  ASSERT_NE(ResolveJsonPointer(doc, {"a", "0", "b"}), nullptr);
  EXPECT_EQ(*ResolveJsonPointer(doc, {"a", "0", "b"}), 1);
  EXPECT_EQ(ResolveJsonPointer(doc, {"a", "1"}), nullptr);
}

TEST(PatchTest, JsonPatchOperations) {
  auto doc = Json(R"({"a":{"b":[1,2]},"c":"x"})");
  auto result = ApplyJsonPatch(doc, Json(R"([
    {"op":"add","path":"/a/b/-","value":3},
    {"op":"replace","path":"/c","value":"y"},
    {"op":"copy","from":"/c","path":"/d"},
    {"op":"move","from":"/a/b/0","path":"/e"},
    {"op":"test","path":"/e","value":1},
    {"op":"remove","path":"/d"}])"));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(*result, Json(R"({"a":{"b":[2,3]},"c":"y","e":1})"));
}

TEST(PatchTest, JsonPatchFailuresAreTyped) {
  auto doc = Json(R"({"a":1})");
  EXPECT_EQ(ApplyJsonPatch(doc, Json(R"([{"op":"remove","path":"/b"}])")).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(ApplyJsonPatch(doc, Json(R"([{"op":"test","path":"/a","value":2}])")).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(ApplyJsonPatch(doc, Json(R"({"op":"add"})")).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyJsonPatch(doc, Json(R"([{"op":"zap","path":"/a"}])")).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(PatchTest, MergePatchDeletesWithNull) {
  EXPECT_EQ(ApplyMergePatch(Json(R"({"a":{"b":1,"c":2},"d":[1]})"),
                            Json(R"({"a":{"b":null,"e":3},"d":[2]})")),
            Json(R"({"a":{"c":2,"e":3},"d":[2]})"));
}

// The merge as it was written before it worked in place, kept as the oracle: a copy per level.
boost::json::value OracleMergePatch(const boost::json::value& document,
                                    const boost::json::value& patch) {
  if (!patch.is_object()) return patch;
  boost::json::value result =
      document.is_object() ? document : boost::json::value(boost::json::object());
  boost::json::object& target = result.get_object();
  for (const auto& member : patch.get_object()) {
    if (member.value().is_null()) {
      target.erase(member.key());
      continue;
    }
    boost::json::value* existing = target.if_contains(member.key());
    target[member.key()] =
        OracleMergePatch(existing ? *existing : boost::json::value(), member.value());
  }
  return result;
}

TEST(PatchTest, MergePatchInPlaceMatchesTheCopyingMerge) {
  const std::vector<std::string_view> documents = {
      R"({"metadata":{"name":"p","labels":{"a":"1","b":"2"}},"spec":{"x":[1]},
          "status":{"phase":"Pending","conditions":[{"type":"A"}]}})",
      R"({"a":1,"b":{"c":{"d":2,"e":3}},"z":null})",
      R"([1,2])",
      R"("text")",
      R"({})",
  };
  const std::vector<std::string_view> patches = {
      R"({"status":{"resourceClaimStatuses":[{"name":"r","resourceClaimName":"c"}]}})",
      R"({"metadata":{"labels":{"a":null,"c":"3"}},"spec":null,"new":{"deep":{"er":1}}})",
      R"({"a":null,"b":{"c":{"d":null,"f":{"g":null}}},"z":5})",
      R"({"b":7,"a":{"x":1}})",
      R"([3])",
      R"(null)",
      R"({})",
  };
  for (std::string_view d : documents) {
    for (std::string_view p : patches) {
      const boost::json::value document = Json(d);
      const boost::json::value patch = Json(p);
      std::string expected = boost::json::serialize(OracleMergePatch(document, patch));
      EXPECT_EQ(boost::json::serialize(ApplyMergePatch(document, patch)), expected) << d << p;
      boost::json::value in_place = document;
      MergePatchInto(in_place, patch);
      EXPECT_EQ(boost::json::serialize(in_place), expected) << d << " <- " << p;
    }
  }
}

TEST(PatchTest, StrategicMergeMergesListsByKey) {
  auto pod = Json(R"({"metadata":{"finalizers":["a"],"labels":{"x":"1"}},
    "spec":{"containers":[{"name":"c1","image":"i1"},{"name":"c2","image":"i2"}],
            "tolerations":[{"key":"t1"}]}})");
  auto patch = Json(R"({"metadata":{"finalizers":["b"],"labels":{"x":null,"y":"2"}},
    "spec":{"containers":[{"name":"c2","image":"i2b"},{"name":"c3","image":"i3"},
                          {"name":"c1","$patch":"delete"}],
            "tolerations":[{"key":"t2"}],
            "$setElementOrder/containers":[{"name":"c3"},{"name":"c2"}]}})");
  auto result = ApplyStrategicMergePatch(pod, patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(*result, Json(R"({"metadata":{"finalizers":["a","b"],"labels":{"y":"2"}},
    "spec":{"containers":[{"name":"c3","image":"i3"},{"name":"c2","image":"i2b"}],
            "tolerations":[{"key":"t2"}]}})"));
}

TEST(PatchTest, StrategicMergeDirectives) {
  auto doc = Json(R"({"metadata":{"finalizers":["a","b"],"annotations":{"k":"v","l":"w"}}})");
  auto replaced = ApplyStrategicMergePatch(
      doc, Json(R"({"metadata":{"annotations":{"$patch":"replace","n":"z"}}})"), "Pod");
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(*replaced, Json(R"({"metadata":{"finalizers":["a","b"],"annotations":{"n":"z"}}})"));
  auto deleted = ApplyStrategicMergePatch(
      doc, Json(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}})"), "Pod");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, Json(R"({"metadata":{"finalizers":["b"],"annotations":{"k":"v","l":"w"}}})"));
  EXPECT_EQ(ApplyStrategicMergePatch(doc, Json(R"({"metadata":{"$patch":"boom"}})"), "Pod")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  // A list without a declared strategy is replaced.
  auto claim = Json(R"({"status":{"reservedFor":[{"uid":"1","name":"a"}],"devices":[1,2]}})");
  auto merged = ApplyStrategicMergePatch(
      claim, Json(R"({"status":{"reservedFor":[{"uid":"2","name":"b"}],"devices":[3]}})"),
      "ResourceClaim");
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(*merged,
            Json(R"({"status":{"reservedFor":[{"uid":"1","name":"a"},{"uid":"2","name":"b"}],
                                        "devices":[3]}})"));
}

TEST(PatchTest, FormatsByMediaTypeAndShape) {
  EXPECT_EQ(PatchFormatOf("application/json-patch+json"), PatchFormat::kJson);
  EXPECT_EQ(PatchFormatOf("application/merge-patch+json"), PatchFormat::kMerge);
  EXPECT_EQ(PatchFormatOf("application/strategic-merge-patch+json"), PatchFormat::kStrategicMerge);
  EXPECT_FALSE(PatchFormatOf("application/json").has_value());
  EXPECT_EQ(CheckPatchShape(Json("{}"), PatchFormat::kJson).message(),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  EXPECT_EQ(CheckPatchShape(Json("[]"), PatchFormat::kMerge).message(),
            "the patch must be a JSON object");
  StatusOr<boost::json::value> merged =
      ApplyPatch(Json(R"({"a":1})"), Json(R"({"b":2})"), PatchFormat::kMerge, "Pod");
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(*merged, Json(R"({"a":1,"b":2})"));
}

TEST(PatchTest, ClientsSeeInvalidArgumentForEveryPatchError) {
  Status failed = ApplyJsonPatch(Json("{}"), Json(R"([{"op":"remove","path":"/x"}])")).status();
  Status seen = AsClientError(failed);
  EXPECT_EQ(seen.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(seen.message(), failed.message());
  EXPECT_EQ(AsClientError(InvalidArgumentError("x")).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace draplane::api::patch
