// Memory-only behaviour; the shared contract is in tests/store (the conformance suite).
#include "store/memory/memory_store.h"

#include <gtest/gtest.h>

namespace draplane::store {
namespace {

TEST(MemoryStoreTest, KeepsOnlyTheRetainedRevisions) {
  std::unique_ptr<Store> store = NewMemoryStore({.retained_revisions = 8});
  const Key key{"core/pods", "ns", "a"};
  const Revision first = (*store->Create(key, "0"))->revision;
  ASSERT_TRUE(store->Create(Key{"core/pods", "ns", "gone"}, "").ok());
  ASSERT_TRUE(store->Delete(Key{"core/pods", "ns", "gone"}).ok());
  for (int i = 1; i <= 20; ++i) ASSERT_TRUE(store->Update(key, std::to_string(i)).ok());
  const Revision current = *store->CurrentRevision();
  EXPECT_EQ(store->List("core/pods", {.revision = first}).status().code(), StatusCode::kExpired);
  EXPECT_EQ(store->Watch("core/pods", {.revision = first}).status().code(), StatusCode::kExpired);
  StatusOr<ListResult> recent = store->List("core/pods", {.revision = current - 5});
  ASSERT_TRUE(recent.ok()) << recent.status().ToString();
  ASSERT_EQ(recent->objects.size(), 1u);
  EXPECT_EQ(recent->objects[0]->value, "15");
  StatusOr<std::unique_ptr<Watcher>> watcher = store->Watch("core/pods", {.revision = current - 5});
  ASSERT_TRUE(watcher.ok());
  EXPECT_EQ((*watcher)->Next()->object->value, "16");
}

}  // namespace
}  // namespace draplane::store
