#include "api/codec/manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace draplane::api::codec {
namespace {

using ::testing::HasSubstr;

TEST(ManifestTest, ReadsMultiDocumentYamlSkippingEmptyDocuments) {
  StatusOr<std::vector<ManifestObject>> objs =
      ParseManifest("kind: A\n---\n---\n# nothing\n---\nkind: B\n");
  ASSERT_TRUE(objs.ok()) << objs.status().ToString();
  ASSERT_EQ(objs->size(), 2u);
  EXPECT_EQ((*objs)[0].value.at("kind"), "A");
  EXPECT_EQ((*objs)[0].position.Label(), "1");
  EXPECT_EQ((*objs)[1].value.at("kind"), "B");
  EXPECT_EQ((*objs)[1].position.document, 4);
  EXPECT_EQ((*objs)[1].position.line, 5);
}

TEST(ManifestTest, DetectsJsonAndAcceptsAStreamOfValues) {
  StatusOr<std::vector<ManifestObject>> objs =
      ParseManifest("\n  {\"kind\": \"A\", \"n\": 1.0}\n{\"kind\": \"B\"}");
  ASSERT_TRUE(objs.ok()) << objs.status().ToString();
  ASSERT_EQ(objs->size(), 2u);
  // Parsed as JSON, not YAML: 1.0 stays a double.
  EXPECT_TRUE((*objs)[0].value.at("n").is_double());
  EXPECT_EQ((*objs)[1].position.document, 2);
  EXPECT_EQ((*objs)[1].position.line, 3);
}

TEST(ManifestTest, FlattensListsAndTypedLists) {
  StatusOr<std::vector<ManifestObject>> objs = ParseManifest(
      "apiVersion: v1\nkind: List\nitems:\n- kind: A\n- kind: B\n---\n"
      "apiVersion: resource.k8s.io/v1\nkind: ResourceSliceList\nmetadata: {}\n"
      "items:\n- kind: ResourceSlice\n---\nkind: C\n");
  ASSERT_TRUE(objs.ok()) << objs.status().ToString();
  ASSERT_EQ(objs->size(), 4u);
  EXPECT_EQ((*objs)[0].position.Label(), "1:items[0]");
  EXPECT_EQ((*objs)[1].position.Label(), "1:items[1]");
  EXPECT_EQ((*objs)[1].value.at("kind"), "B");
  EXPECT_EQ((*objs)[2].position.Label(), "2:items[0]");
  EXPECT_EQ((*objs)[3].position.Label(), "3");
}

TEST(ManifestTest, KeepsListsWhenAskedTo) {
  ManifestOptions options;
  options.flatten_lists = false;
  StatusOr<std::vector<ManifestObject>> objs =
      ParseManifest("kind: List\nitems: [{kind: A}]\n", options);
  ASSERT_TRUE(objs.ok());
  ASSERT_EQ(objs->size(), 1u);
  EXPECT_EQ((*objs)[0].value.at("kind"), "List");
}

TEST(ManifestTest, RejectsDocumentsThatAreNotObjects) {
  StatusOr<std::vector<ManifestObject>> objs = ParseManifest("kind: A\n---\n- 1\n- 2\n");
  ASSERT_FALSE(objs.ok());
  EXPECT_THAT(objs.status().message(), HasSubstr("2: expected an object, got array"));
  objs = ParseManifest("kind: List\nitems: [1]\n");
  ASSERT_FALSE(objs.ok());
  EXPECT_THAT(objs.status().message(), HasSubstr("1: items[0]: expected an object, got number"));
  objs = ParseManifest("kind: List\nitems: {}\n");
  ASSERT_FALSE(objs.ok());
  EXPECT_THAT(objs.status().message(), HasSubstr("1: items: expected an array, got object"));
}

TEST(ManifestTest, SyntaxErrorsNameDocumentAndLine) {
  StatusOr<std::vector<ManifestObject>> objs = ParseManifest("kind: A\n---\nkind: [B\n");
  ASSERT_FALSE(objs.ok());
  EXPECT_THAT(objs.status().message(), HasSubstr("2: line "));
  objs = ParseManifest("{\"kind\": \"A\"}\n{\"kind\": }");
  ASSERT_FALSE(objs.ok());
  EXPECT_THAT(objs.status().message(), HasSubstr("2: line 2 column"));
}

TEST(ManifestTest, ListKinds) {
  EXPECT_TRUE(IsListKind("List"));
  EXPECT_TRUE(IsListKind("ResourceSliceList"));
  EXPECT_FALSE(IsListKind("Lis"));
  EXPECT_FALSE(IsListKind("Pod"));
}

}  // namespace
}  // namespace draplane::api::codec
