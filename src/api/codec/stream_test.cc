#include "api/codec/stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace draplane::api::codec {
namespace {

using ::testing::HasSubstr;

struct Seen {
  std::string label;
  int line;
  boost::json::value value;
  friend bool operator==(const Seen&, const Seen&) = default;
};

StatusOr<std::vector<Seen>> Stream(const std::string& text, ManifestOptions options = {}) {
  std::istringstream in(text);
  std::vector<Seen> out;
  Status st = StreamManifest(in, options, [&](ManifestObject& o) {
    out.push_back(Seen{o.position.Label(), o.position.line, std::move(o.value)});
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

StatusOr<std::vector<Seen>> Parse(const std::string& text, ManifestOptions options = {}) {
  StatusOr<std::vector<ManifestObject>> objs = ParseManifest(text, options);
  if (!objs.ok()) return objs.status();
  std::vector<Seen> out;
  for (ManifestObject& o : *objs) {
    out.push_back(Seen{o.position.Label(), o.position.line, std::move(o.value)});
  }
  return out;
}

void ExpectSameAsParseManifest(const std::string& text, ManifestOptions options = {}) {
  StatusOr<std::vector<Seen>> streamed = Stream(text, options);
  StatusOr<std::vector<Seen>> parsed = Parse(text, options);
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(streamed->size(), parsed->size());
  for (size_t i = 0; i < parsed->size(); ++i) {
    EXPECT_EQ((*streamed)[i].label, (*parsed)[i].label);
    EXPECT_EQ((*streamed)[i].line, (*parsed)[i].line);
    EXPECT_EQ((*streamed)[i].value, (*parsed)[i].value) << (*parsed)[i].label;
  }
}

TEST(StreamTest, DeliversWhatParseManifestDelivers) {
  ExpectSameAsParseManifest(R"({"apiVersion": "v1", "items": [{"kind": "A", "n": 1.5},
    {"kind": "B", "s": "x\ny", "deep": {"a": [1, {"b": null}]}}], "kind": "List"})");
  ExpectSameAsParseManifest(
      R"({"kind": "ResourceSliceList", "metadata": {}, "items": [{"kind": "C"}]}
    {"kind": "Pod", "items": [1, 2], "spec": {}}
    {"kind": "D"})");
  ExpectSameAsParseManifest("kind: List\nitems:\n- kind: A\n---\nkind: B\n");
  ExpectSameAsParseManifest("  \n ");
  ExpectSameAsParseManifest(R"({"kind": "List", "items": null})");
  ExpectSameAsParseManifest(R"({"kind": "List", "items": [{"kind": "A"}]})",
                            ManifestOptions{.limits = {}, .flatten_lists = false});
}

TEST(StreamTest, HandlesValuesSpanningChunks) {
  // Several megabytes: items, keys and strings cross the 1 MiB read boundaries.
  std::string text = R"({"apiVersion": "v1", "items": [)";
  for (int i = 0; i < 30000; ++i) {
    if (i > 0) text += ",\n";
    text += R"({"kind": "ResourceSlice", "metadata": {"name": "slice-)" + std::to_string(i) +
            R"("}, "spec": {"driver": "gpu.example.com", "long": ")" + std::string(i % 97, 'x') +
            R"(", "n": )" + std::to_string(i) + R"(.25}})";
  }
  text += R"(], "kind": "List", "metadata": {"resourceVersion": ""}})";
  ASSERT_GT(text.size(), size_t{3} << 20);
  ExpectSameAsParseManifest(text);
}

TEST(StreamTest, ReportsErrorsLikeParseManifest) {
  StatusOr<std::vector<Seen>> s = Stream("{\"kind\": \"A\"}\n{\"kind\": }");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("2: line 2 column"));
  s = Stream(R"({"kind": "List", "items": [{"kind": "A"}, 7]})");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("1: items[1]: expected an object, got number"));
  s = Stream("[1, 2]");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("1: expected an object, got array"));
  s = Stream(R"({"kind": "List", "items": [{"kind": "A"})");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("1: line 1"));
  const std::string deep = "{\"a\": " + std::string(5000, '[') + std::string(5000, ']') + "}";
  s = Stream(deep);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("nesting deeper than 1000 levels"));
}

TEST(StreamTest, ItemsOfANonListKindSeenTooLateAreAnError) {
  StatusOr<std::vector<Seen>> s = Stream(R"({"items": [{"kind": "A"}], "kind": "Pod"})");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("a top-level items array needs a List kind"));
}

TEST(StreamTest, BadItemsOfADocumentWithoutKindYetAreDecidedAtTheEnd) {
  StatusOr<std::vector<Seen>> s = Stream(R"({"items": [{"kind": "A"}, 1], "kind": "List"})");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("1: items[1]: expected an object, got number"));
  s = Stream(R"({"items": [1, {"kind": "A"}], "spec": {}})");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("a top-level items array needs a List kind"));
}

TEST(StreamTest, StopsAtTheFirstSinkError) {
  std::istringstream in(R"({"kind": "List", "items": [{"kind": "A"}, {"kind": "B"}]})");
  int calls = 0;
  Status st = StreamManifest(in, {}, [&](ManifestObject&) {
    ++calls;
    return InvalidArgumentError("stop");
  });
  EXPECT_EQ(st.message(), "stop");
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace draplane::api::codec
