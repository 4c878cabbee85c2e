#include "server/lifecycle/lifecycle.h"

#include <gtest/gtest.h>

namespace draplane::server::lifecycle {
namespace {

using Entry = LifecycleController::Entry;

const store::Key kPod{"core/pods", "default", "p"};
// Namespaces are read through a DOM (they need spec.finalizers): the same text read as a
// namespace is the oracle for the streaming reader of every other kind.
const store::Key kNamespace{"core/namespaces", "", "p"};

std::optional<Entry> Oracle(const std::string& json) {
  std::optional<Entry> entry = LifecycleController::ParseEntry(kNamespace, json);
  if (entry) entry->namespace_terminating = false;
  return entry;
}

TEST(LifecycleParseEntryTest, ReadsTheMetadataTheIndexKeeps) {
  const std::string json = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",
    "uid":"u-1","labels":{"uid":"not-this","finalizers":"x"},
    "finalizers":["a/b","c\"d"],"deletionTimestamp":"2026-11-30T12:00:00Z",
    "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"o-1",
      "controller":true,"blockOwnerDeletion":true},
      {"apiVersion":"v1","kind":"Pod","name":"q","uid":7}],
    "annotations":{"ownerReferences":"[]"}},
    "spec":{"uid":"spec-uid"},"status":{"phase":"Running"}})";
  std::optional<Entry> entry = LifecycleController::ParseEntry(kPod, json);
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->uid, "u-1");
  EXPECT_EQ(entry->finalizers, (std::vector<std::string>{"a/b", "c\"d"}));
  EXPECT_EQ(entry->deletion_timestamp, "2026-11-30T12:00:00Z");
  EXPECT_TRUE(entry->deleting);
  ASSERT_EQ(entry->owners.size(), 2u);
  EXPECT_EQ(entry->owners[0],
            (LifecycleController::OwnerRef{"apps/v1", "ReplicaSet", "rs", "o-1", true}));
  EXPECT_EQ(entry->owners[1], (LifecycleController::OwnerRef{"v1", "Pod", "q", "", false}));
  EXPECT_EQ(entry, Oracle(json));
}

TEST(StoredMetadataTest, ReadsTheCreationTimestampAndStopsAfterMetadata) {
  StoredMetadata meta;
  // What follows metadata is not read: not even its validity matters.
  ASSERT_TRUE(ReadStoredMetadata(R"({"kind":"AllocationDecision","metadata":{"name":"d",
    "labels":{"creationTimestamp":"no"},"creationTimestamp":"2026-12-04T01:02:03Z",
    "finalizers":["keep"]},"spec":{"time":)",
                                 &meta));
  EXPECT_EQ(meta.creation_timestamp, "2026-12-04T01:02:03Z");
  EXPECT_EQ(meta.finalizers, std::vector<std::string>{"keep"});
  EXPECT_FALSE(ReadStoredMetadata(R"({"metadata":{"creationTimestamp":)", &meta));
  EXPECT_FALSE(ReadStoredMetadata("[]", &meta));
}

TEST(LifecycleParseEntryTest, AgreesWithTheDomReaderOnOddShapes) {
  const std::vector<std::string> cases = {
      // metadata after spec and status: read to the end
      R"({"spec":{"x":[1,2,{"uid":"no"}]},"status":{},"metadata":{"uid":"late"}})",
      // no metadata at all
      R"({"kind":"Pod","spec":{}})",
      // fields of the wrong type are skipped
      R"({"metadata":{"uid":5,"finalizers":{"a":"b"},"ownerReferences":["x",{"uid":"o"}],
        "deletionTimestamp":null}})",
      // nested metadata-like objects are not the object's metadata
      R"({"spec":{"metadata":{"uid":"inner"}},"metadata":{"uid":"outer","finalizers":[]}})",
      // escapes and unicode in strings
      R"({"metadata":{"uid":"\u00e9\n",
        "ownerReferences":[{"name":"a\\b","kind":"K\"","uid":"1"}]}})",
      // an empty object, and deep nesting before metadata
      R"({})",
      R"({"a":[[[[{"b":[{"c":{}}]}]]]],"metadata":{"finalizers":["f"]}})",
  };
  for (const std::string& json : cases) {
    SCOPED_TRACE(json);
    std::optional<Entry> entry = LifecycleController::ParseEntry(kPod, json);
    ASSERT_TRUE(entry.has_value());
    EXPECT_EQ(entry, Oracle(json));
  }
  EXPECT_FALSE(LifecycleController::ParseEntry(kPod, R"({"metadata":{"uid":"u")").has_value())
      << "cut off inside metadata: nothing trustworthy";
}

TEST(LifecycleParseEntryTest, RejectsWhatIsNotAnObject) {
  EXPECT_FALSE(LifecycleController::ParseEntry(kPod, "[1,2]").has_value());
  EXPECT_FALSE(LifecycleController::ParseEntry(kPod, "not json").has_value());
  EXPECT_FALSE(LifecycleController::ParseEntry(kPod, R"({"metadata":{"uid":)").has_value());
}

}  // namespace
}  // namespace draplane::server::lifecycle
