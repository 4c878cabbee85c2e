// SQLite-only behaviour; the shared contract is in tests/store (conformance and crash tests).
#include "store/sqlite/sqlite_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>

#include "tests/store/temp_dir.h"

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
  testing::TempDir dir;
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
  testing::TempDir dir;
  StatusOr<std::unique_ptr<Store>> first = OpenSqliteStore(dir.File("s.db"));
  ASSERT_TRUE(first.ok());
  StatusOr<std::unique_ptr<Store>> second = OpenSqliteStore(dir.File("s.db"));
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("already open"));
}

TEST(SqliteStoreTest, AnotherSchemaVersionIsRefusedWithAClearError) {
  testing::TempDir dir;
  const std::string path = dir.File("s.db");
  ASSERT_TRUE(OpenSqliteStore(path).ok());
  Exec(path, "UPDATE meta SET value = 99 WHERE name = 'schema_version'");
  StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path);
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("schema version 99"));
}

TEST(SqliteStoreTest, FilesThatAreNotDraplaneStoresAreRefused) {
  testing::TempDir dir;
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

TEST(SqliteStoreTest, OldHistoryIsCompactedAutomatically) {
  testing::TempDir dir;
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
  testing::TempDir dir;
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

}  // namespace
}  // namespace draplane::store
