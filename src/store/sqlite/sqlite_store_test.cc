// SQLite-only behaviour; the shared contract is in tests/store (conformance and crash tests).
#include "store/sqlite/sqlite_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>

#include "testing/temp_dir.h"

namespace draplane::store {
namespace {

using ::testing::HasSubstr;

void Exec(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(SqliteStoreTest, ReopeningKeepsObjectsRevisionsAndHistory) {
  draplane::testing::TempDir dir;
  const std::string path = dir.File("s.db");
  Revision first = 0;
  Revision last = 0;
  {
    StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    first = (*(*store)->Create(Key{"core/pods", "ns", "a"}, "1"))->revision;
    ASSERT_TRUE((*store)->Update(Key{"core/pods", "ns", "a"}, "2").ok());
    last = (*(*store)->Create(Key{"core/pods", "ns", "b"}, "3"))->revision;
  }
  StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(*(*store)->CurrentRevision(), last);
  EXPECT_EQ((*(*store)->Get(Key{"core/pods", "ns", "a"}))->value, "2");
  // A watch from before the reopen is replayed from the history table, then goes live.
  StatusOr<std::unique_ptr<Watcher>> watcher = (*store)->Watch("core/pods", {.revision = first});
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
  EXPECT_EQ((*watcher)->Next()->type, WatchEvent::Type::kModified);
  EXPECT_EQ((*watcher)->Next()->revision, last);
  StatusOr<ObjectPtr> next = (*store)->Create(Key{"core/pods", "ns", "c"}, "4");
  ASSERT_TRUE(next.ok());
  EXPECT_GT((*next)->revision, last);
  EXPECT_EQ((*watcher)->Next()->revision, (*next)->revision);
}

TEST(SqliteStoreTest, ASecondOpenOfTheSameFileIsRefused) {
  draplane::testing::TempDir dir;
  StatusOr<std::unique_ptr<Store>> first = OpenSqliteStore(dir.File("s.db"));
  ASSERT_TRUE(first.ok());
  StatusOr<std::unique_ptr<Store>> second = OpenSqliteStore(dir.File("s.db"));
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("already open"));
}

TEST(SqliteStoreTest, AnotherSchemaVersionIsRefusedWithAClearError) {
  draplane::testing::TempDir dir;
  const std::string path = dir.File("s.db");
  ASSERT_TRUE(OpenSqliteStore(path).ok());
  Exec(path, "UPDATE meta SET value = 99 WHERE name = 'schema_version'");
  StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path);
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("schema version 99"));
}

TEST(SqliteStoreTest, FilesThatAreNotDraplaneStoresAreRefused) {
  draplane::testing::TempDir dir;
  const std::string text = dir.File("text.db");
  FILE* file = fopen(text.c_str(), "w");
  ASSERT_NE(file, nullptr);
  fputs("this is not a database, just some text that is long enough to have a header", file);
  fclose(file);
  EXPECT_EQ(OpenSqliteStore(text).status().code(), StatusCode::kFailedPrecondition);

  const std::string other = dir.File("other.db");
  Exec(other, "CREATE TABLE t(x)");
  StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(other);
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("not a draplane store"));
}

// A damaged page is found when the store opens, not when a read happens to touch it: a store
// started on it would serve (and its controllers act on) a cluster with objects missing.
TEST(SqliteStoreTest, ADamagedFileIsRefusedWhenItOpens) {
  draplane::testing::TempDir dir;
  const std::string path = dir.File("s.db");
  {
    StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path);
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 400; ++i) {
      ASSERT_TRUE(
          (*store)
              ->Create(Key{"core/pods", "ns", "p" + std::to_string(i)}, std::string(1000, 'x'))
              .ok());
    }
  }
  Exec(path, "PRAGMA wal_checkpoint(TRUNCATE)");
  FILE* file = fopen(path.c_str(), "r+");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(fseek(file, 0, SEEK_END), 0);
  const long middle = ftell(file) / 2 / 4096 * 4096;  // the header of a page in the middle
  ASSERT_GT(middle, 0);
  ASSERT_EQ(fseek(file, middle, SEEK_SET), 0);
  fputs("GARBAGEGARBAGEGARBAGEGARBAGEGARBAGE", file);
  fclose(file);
  StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path);
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("restore it from a backup"));
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(path));
}

TEST(SqliteStoreTest, OldHistoryIsCompactedAutomatically) {
  draplane::testing::TempDir dir;
  StatusOr<std::unique_ptr<Store>> store =
      OpenSqliteStore(dir.File("s.db"), {.retained_revisions = 8});
  ASSERT_TRUE(store.ok());
  const Key key{"core/pods", "ns", "a"};
  const Revision first = (*(*store)->Create(key, "0"))->revision;
  for (int i = 1; i <= 20; ++i) ASSERT_TRUE((*store)->Update(key, std::to_string(i)).ok());
  const Revision current = *(*store)->CurrentRevision();
  EXPECT_EQ((*store)->List("core/pods", {.revision = first}).status().code(), StatusCode::kExpired);
  EXPECT_EQ((*store)->Watch("core/pods", {.revision = first}).status().code(),
            StatusCode::kExpired);
  StatusOr<ListResult> recent = (*store)->List("core/pods", {.revision = current - 5});
  ASSERT_TRUE(recent.ok()) << recent.status().ToString();
  EXPECT_EQ(recent->objects.at(0)->value, std::to_string(20 - 5));
}

TEST(SqliteStoreTest, CommittedWritesAreInTheFileForOtherConnectionsWhileTheStoreIsOpen) {
  // The store writes its WAL through a VFS that holds a commit's frames in memory until the
  // commit's fsync (coalescing_vfs.h). A plain connection (default VFS, its own file handles)
  // reading the file while the store is open must find every acknowledged write, including
  // commits larger than one write call of the default VFS (128 KiB).
  draplane::testing::TempDir dir;
  const std::string path = dir.File("s.db");
  StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::string big(300 * 1024, 'x');
  ASSERT_TRUE((*store)->Create(Key{"core/configmaps", "ns", "big"}, big).ok());
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE((*store)->Create(Key{"core/pods", "ns", "p" + std::to_string(i)}, "v").ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* count = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*), sum(length(value)) FROM history", -1, &count,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(count), SQLITE_ROW) << sqlite3_errmsg(db);
  EXPECT_EQ(sqlite3_column_int64(count, 0), 201);
  EXPECT_EQ(sqlite3_column_int64(count, 1), static_cast<int64_t>(big.size()) + 200);
  sqlite3_finalize(count);
  sqlite3_close(db);
  EXPECT_EQ((*(*store)->Get(Key{"core/configmaps", "ns", "big"}))->value, big);
}

// Get and latest-state List answer from memory; Lists at older revisions and continued pages of
// an older snapshot read the history table. Both must show the same state, before and after a
// reopen (which reloads the in-memory state from the file).
TEST(SqliteStoreTest, LatestStateReadsAgreeWithHistoryReadsAndSurviveReopen) {
  draplane::testing::TempDir dir;
  const std::string path = dir.File("s.db");
  auto pod = [](std::string name) { return Key{"core/pods", "ns", std::move(name)}; };
  auto same = [](const ListResult& a, const ListResult& b) {
    ASSERT_EQ(a.objects.size(), b.objects.size());
    for (size_t i = 0; i < a.objects.size(); ++i) {
      EXPECT_EQ(a.objects[i]->key, b.objects[i]->key);
      EXPECT_EQ(a.objects[i]->value, b.objects[i]->value);
      EXPECT_EQ(a.objects[i]->revision, b.objects[i]->revision);
      EXPECT_EQ(a.objects[i]->create_revision, b.objects[i]->create_revision);
    }
  };
  ListResult before_close;
  Revision b_revision = 0;
  {
    StatusOr<std::unique_ptr<Store>> opened = OpenSqliteStore(path);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Store& store = **opened;
    for (const char* name : {"a", "b", "c", "d"}) ASSERT_TRUE(store.Create(pod(name), name).ok());
    b_revision = (*store.Update(pod("b"), "b2"))->revision;
    ASSERT_TRUE(store.Delete(pod("c")).ok());
    ASSERT_TRUE(store.Create(pod("c"), "c2").ok());
    ASSERT_TRUE(store.Delete(pod("d")).ok());
    ASSERT_TRUE(store.Compact(*store.CurrentRevision() - 2).ok());

    StatusOr<ListResult> latest = store.List("core/pods", {});
    ASSERT_TRUE(latest.ok()) << latest.status().ToString();
    EXPECT_EQ(latest->revision, *store.CurrentRevision());
    // A write to another resource moves the current revision past the list's.
    ASSERT_TRUE(store.Create(Key{"core/nodes", "", "n"}, "").ok());
    StatusOr<ListResult> snapshot = store.List("core/pods", {.revision = latest->revision});
    ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
    EXPECT_EQ(snapshot->revision, latest->revision);
    same(*latest, *snapshot);

    // The first page is at the latest revision; a pod written before the second page must not
    // show up in it (the second page reads the older snapshot from history).
    StatusOr<ListResult> first = store.List("core/pods", {.limit = 2});
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_FALSE(first->continue_token.empty());
    ASSERT_TRUE(store.Create(pod("e"), "e").ok());
    StatusOr<ListResult> second =
        store.List("core/pods", {.limit = 2, .continue_token = first->continue_token});
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(second->revision, first->revision);
    EXPECT_TRUE(second->continue_token.empty());
    std::vector<std::string> names;
    for (const ListResult* page : {&*first, &*second}) {
      for (const ObjectPtr& object : page->objects) names.push_back(object->value);
    }
    EXPECT_THAT(names, ::testing::ElementsAre("a", "b2", "c2"));

    EXPECT_EQ(store.Get(pod("d")).status().code(), StatusCode::kNotFound);
    StatusOr<ListResult> all = store.List("core/pods", {});
    ASSERT_TRUE(all.ok());
    before_close = *all;
  }
  StatusOr<std::unique_ptr<Store>> opened = OpenSqliteStore(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& store = **opened;
  StatusOr<ObjectPtr> b = store.Get(pod("b"));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->value, "b2");
  EXPECT_EQ((*b)->revision, b_revision);
  EXPECT_EQ((*store.Get(pod("c")))->value, "c2");
  EXPECT_EQ(store.Get(pod("d")).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store.Get(Key{"core/nodes", "", "n"}).ok());
  StatusOr<ListResult> after = store.List("core/pods", {});
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->revision, before_close.revision);
  same(before_close, *after);
}

}  // namespace
}  // namespace draplane::store
