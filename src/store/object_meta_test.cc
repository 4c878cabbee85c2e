#include "store/object_meta.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace draplane::store {
namespace {

boost::json::object MetadataOf(const std::string& json) {
  return boost::json::parse(json).as_object().at("metadata").as_object();
}

TEST(ObjectMetaTest, SetResourceVersionStampsOnlyMetadata) {
  StatusOr<std::string> out =
      SetResourceVersion(R"({"kind":"Pod","metadata":{"name":"a"},"spec":{"x":[1,2]}})", 42);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out,
            R"({"kind":"Pod","metadata":{"name":"a","resourceVersion":"42"},"spec":{"x":[1,2]}})");
  // Replaces an existing one, creates metadata when absent.
  EXPECT_EQ(*SetResourceVersion(R"({"metadata":{"resourceVersion":"7"}})", 8),
            R"({"metadata":{"resourceVersion":"8"}})");
  EXPECT_EQ(*SetResourceVersion(R"({"kind":"Pod"})", 1),
            R"({"kind":"Pod","metadata":{"resourceVersion":"1"}})");
  Object object{Key{"core/pods", "ns", "a"}, R"({"metadata":{}})", 9, 3};
  EXPECT_EQ(*WithResourceVersion(object), R"({"metadata":{"resourceVersion":"9"}})");
}

TEST(ObjectMetaTest, MalformedObjectsAreInvalidArgument) {
  EXPECT_EQ(SetResourceVersion("[1]", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SetResourceVersion("{", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SetResourceVersion(R"({"metadata":3})", 1).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ObjectMetaTest, PrepareForCreateSetsUidTimestampAndGenerationAndDropsResourceVersion) {
  ManualClock clock(Timestamp(std::chrono::seconds(1'700'000'000) + std::chrono::milliseconds(5)));
  std::unique_ptr<Random> random = NewSeededRandom(7);
  StatusOr<std::string> out = PrepareForCreate(
      R"({"metadata":{"name":"a","resourceVersion":"3","uid":"client-chosen"},"spec":{}})", clock,
      *random);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  boost::json::object metadata = MetadataOf(*out);
  EXPECT_EQ(metadata.at("name").as_string(), "a");
  EXPECT_EQ(metadata.at("creationTimestamp").as_string(), "2023-11-14T22:13:20Z");
  EXPECT_EQ(metadata.at("generation").as_int64(), 1);
  EXPECT_FALSE(metadata.contains("resourceVersion"));
  const std::string uid(metadata.at("uid").as_string());
  EXPECT_NE(uid, "client-chosen");
  EXPECT_EQ(uid, NewSeededRandom(7)->NewUuid());

  StatusOr<std::string> no_generation =
      PrepareForCreate(R"({"metadata":{"name":"b"}})", clock, *random, {.set_generation = false});
  EXPECT_FALSE(MetadataOf(*no_generation).contains("generation"));
}

TEST(ObjectMetaTest, PrepareForUpdateKeepsStoredIdentityAndMovesGenerationOnlyWhenAsked) {
  const std::string stored =
      R"({"metadata":{"name":"a","uid":"u1","creationTimestamp":"2023-01-01T00:00:00Z","generation":4}})";
  const std::string updated =
      R"({"metadata":{"name":"a","uid":"forged","generation":99,"resourceVersion":"8","labels":{"x":"y"}}})";
  boost::json::object same = MetadataOf(*PrepareForUpdate(stored, updated));
  EXPECT_EQ(same.at("uid").as_string(), "u1");
  EXPECT_EQ(same.at("creationTimestamp").as_string(), "2023-01-01T00:00:00Z");
  EXPECT_EQ(same.at("generation").as_int64(), 4);
  EXPECT_EQ(same.at("labels").as_object().at("x").as_string(), "y");
  EXPECT_FALSE(same.contains("resourceVersion"));

  boost::json::object bumped =
      MetadataOf(*PrepareForUpdate(stored, updated, {.bump_generation = true}));
  EXPECT_EQ(bumped.at("generation").as_int64(), 5);

  // A stored object without a generation keeps none unless bumped.
  boost::json::object none = MetadataOf(*PrepareForUpdate(R"({"metadata":{"uid":"u"}})", updated));
  EXPECT_FALSE(none.contains("generation"));
  EXPECT_FALSE(none.contains("creationTimestamp"));
}

}  // namespace
}  // namespace draplane::store
