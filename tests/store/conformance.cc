#include "conformance.h"

#include <gmock/gmock.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace draplane::store::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Key Pod(std::string ns, std::string name) {
  return Key{"core/pods", std::move(ns), std::move(name)};
}
Key Node(std::string name) { return Key{"core/nodes", "", std::move(name)}; }

ObjectPtr MustCreate(Store& store, const Key& key, std::string value) {
  StatusOr<ObjectPtr> created = store.Create(key, std::move(value));
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  return created.ok() ? *created : nullptr;
}

ObjectPtr MustUpdate(Store& store, const Key& key, std::string value) {
  StatusOr<ObjectPtr> updated = store.Update(key, std::move(value));
  EXPECT_TRUE(updated.ok()) << updated.status().ToString();
  return updated.ok() ? *updated : nullptr;
}

ObjectPtr MustDelete(Store& store, const Key& key) {
  StatusOr<ObjectPtr> deleted = store.Delete(key);
  EXPECT_TRUE(deleted.ok()) << deleted.status().ToString();
  return deleted.ok() ? *deleted : nullptr;
}

std::unique_ptr<Watcher> MustWatch(Store& store, std::string_view resource,
                                   WatchOptions options = {}) {
  StatusOr<std::unique_ptr<Watcher>> watcher = store.Watch(resource, std::move(options));
  EXPECT_TRUE(watcher.ok()) << watcher.status().ToString();
  return watcher.ok() ? std::move(*watcher) : nullptr;
}

WatchEvent MustNext(Watcher& watcher) {
  StatusOr<WatchEvent> event = watcher.Next();
  EXPECT_TRUE(event.ok()) << event.status().ToString();
  return event.ok() ? *event : WatchEvent{};
}

std::vector<std::string> Names(const ListResult& result) {
  std::vector<std::string> names;
  for (const ObjectPtr& object : result.objects) {
    names.push_back(object->key.ns.empty() ? object->key.name
                                           : object->key.ns + "/" + object->key.name);
  }
  return names;
}

// "TYPE name value@revision" for compact comparisons.
std::string Describe(const WatchEvent& event) {
  std::string out(WatchEventTypeName(event.type));
  if (event.object != nullptr) out += " " + event.object->key.name + "=" + event.object->value;
  return out;
}

}  // namespace

void StoreConformanceTest::SetUp() { store_ = Open(); }

std::unique_ptr<Store> StoreConformanceTest::Open(const StoreOptions& options) {
  StatusOr<std::unique_ptr<Store>> store = GetParam().open(options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

// ---- CRUD ------------------------------------------------------------------------------------

TEST_P(StoreConformanceTest, CreateThenGetReturnsTheBytesAndRevision) {
  ObjectPtr created = MustCreate(*store_, Pod("ns", "a"), R"({"x":1})");
  ASSERT_NE(created, nullptr);
  EXPECT_GT(created->revision, 0);
  EXPECT_EQ(created->create_revision, created->revision);
  EXPECT_EQ(created->key, Pod("ns", "a"));

  StatusOr<ObjectPtr> got = store_->Get(Pod("ns", "a"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)->value, R"({"x":1})");
  EXPECT_EQ((*got)->revision, created->revision);
  EXPECT_EQ((*got)->create_revision, created->revision);
  EXPECT_EQ(*store_->CurrentRevision(), created->revision);
}

TEST_P(StoreConformanceTest, CreateOfAnExistingObjectIsAlreadyExistsAndWritesNothing) {
  ObjectPtr created = MustCreate(*store_, Pod("ns", "a"), "one");
  const Revision before = *store_->CurrentRevision();
  StatusOr<ObjectPtr> again = store_->Create(Pod("ns", "a"), "two");
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(*store_->CurrentRevision(), before);
  EXPECT_EQ((*store_->Get(Pod("ns", "a")))->value, "one");
}

TEST_P(StoreConformanceTest, GetOfAnAbsentObjectIsNotFound) {
  EXPECT_EQ(store_->Get(Pod("ns", "missing")).status().code(), StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, UpdateReplacesTheValueAndKeepsTheCreateRevision) {
  ObjectPtr created = MustCreate(*store_, Pod("ns", "a"), "one");
  ObjectPtr updated = MustUpdate(*store_, Pod("ns", "a"), "two");
  ASSERT_NE(updated, nullptr);
  EXPECT_GT(updated->revision, created->revision);
  EXPECT_EQ(updated->create_revision, created->revision);
  StatusOr<ObjectPtr> got = store_->Get(Pod("ns", "a"));
  EXPECT_EQ((*got)->value, "two");
  EXPECT_EQ((*got)->revision, updated->revision);
}

TEST_P(StoreConformanceTest, UpdateOfAnAbsentObjectIsNotFound) {
  EXPECT_EQ(store_->Update(Pod("ns", "a"), "x").status().code(), StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, UpdateWithAStaleRevisionIsConflictAndWithTheCurrentOneSucceeds) {
  ObjectPtr created = MustCreate(*store_, Pod("ns", "a"), "one");
  ObjectPtr updated = MustUpdate(*store_, Pod("ns", "a"), "two");
  StatusOr<ObjectPtr> stale =
      store_->Update(Pod("ns", "a"), "three", Preconditions{created->revision});
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict);
  EXPECT_EQ((*store_->Get(Pod("ns", "a")))->value, "two");

  StatusOr<ObjectPtr> fresh =
      store_->Update(Pod("ns", "a"), "three", Preconditions{updated->revision});
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ((*store_->Get(Pod("ns", "a")))->value, "three");
}

TEST_P(StoreConformanceTest, DeleteReturnsTheLastStateAtTheDeleteRevision) {
  ObjectPtr created = MustCreate(*store_, Pod("ns", "a"), "one");
  ObjectPtr updated = MustUpdate(*store_, Pod("ns", "a"), "two");
  ObjectPtr deleted = MustDelete(*store_, Pod("ns", "a"));
  ASSERT_NE(deleted, nullptr);
  EXPECT_EQ(deleted->value, "two");
  EXPECT_GT(deleted->revision, updated->revision);
  EXPECT_EQ(deleted->create_revision, created->revision);
  EXPECT_EQ(*store_->CurrentRevision(), deleted->revision);
  EXPECT_EQ(store_->Get(Pod("ns", "a")).status().code(), StatusCode::kNotFound);

  // A new object under the same key starts a new life.
  ObjectPtr again = MustCreate(*store_, Pod("ns", "a"), "three");
  EXPECT_GT(again->create_revision, deleted->revision);
}

TEST_P(StoreConformanceTest, DeleteChecksExistenceAndPreconditions) {
  EXPECT_EQ(store_->Delete(Pod("ns", "a")).status().code(), StatusCode::kNotFound);
  ObjectPtr created = MustCreate(*store_, Pod("ns", "a"), "one");
  MustUpdate(*store_, Pod("ns", "a"), "two");
  EXPECT_EQ(store_->Delete(Pod("ns", "a"), Preconditions{created->revision}).status().code(),
            StatusCode::kConflict);
  EXPECT_TRUE(store_->Get(Pod("ns", "a")).ok());
  const Revision current = (*store_->Get(Pod("ns", "a")))->revision;
  EXPECT_TRUE(store_->Delete(Pod("ns", "a"), Preconditions{current}).ok());
}

TEST_P(StoreConformanceTest, RevisionsIncreaseStrictlyAcrossKeysAndResources) {
  std::vector<Revision> revisions;
  revisions.push_back(MustCreate(*store_, Pod("a", "x"), "1")->revision);
  revisions.push_back(MustCreate(*store_, Node("n1"), "2")->revision);
  revisions.push_back(MustUpdate(*store_, Pod("a", "x"), "3")->revision);
  revisions.push_back(MustCreate(*store_, Pod("b", "y"), "4")->revision);
  revisions.push_back(MustDelete(*store_, Node("n1"))->revision);
  EXPECT_TRUE(std::is_sorted(revisions.begin(), revisions.end()));
  EXPECT_EQ(std::adjacent_find(revisions.begin(), revisions.end()), revisions.end());
}

TEST_P(StoreConformanceTest, MalformedKeysAreInvalidArgument) {
  for (const Key& key :
       {Key{"pods", "ns", "a"}, Key{"core/pods/x", "ns", "a"}, Key{"Core/Pods", "ns", "a"},
        Key{"/pods", "ns", "a"}, Key{"core/pods", "n/s", "a"}, Key{"core/pods", "ns", ""},
        Key{"core/pods", "ns", "a/b"}}) {
    EXPECT_EQ(store_->Create(key, "x").status().code(), StatusCode::kInvalidArgument)
        << KeyToString(key);
    EXPECT_EQ(store_->Get(key).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(store_->List("pods", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Watch("pods", {}).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, ConcurrentCreatesOfOneKeyHaveExactlyOneWinner) {
  std::atomic<int> created{0};
  std::atomic<int> exists{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      StatusOr<ObjectPtr> result = store_->Create(Pod("ns", "contended"), std::to_string(t));
      if (result.ok()) ++created;
      if (result.status().code() == StatusCode::kAlreadyExists) ++exists;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(exists.load(), 7);
}

TEST_P(StoreConformanceTest, ConcurrentWritersGetDistinctRevisionsAndNothingIsLost) {
  constexpr int kThreads = 8;
  constexpr int kWrites = 25;
  std::mutex mu;
  std::set<Revision> revisions;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        StatusOr<ObjectPtr> created = store_->Create(
            Pod("ns", "w" + std::to_string(t) + "-" + std::to_string(i)), std::to_string(i));
        ASSERT_TRUE(created.ok()) << created.status().ToString();
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_TRUE(revisions.insert((*created)->revision).second);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  StatusOr<ListResult> list = store_->List("core/pods", {});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->objects.size(), static_cast<size_t>(kThreads * kWrites));
  EXPECT_EQ(revisions.size(), static_cast<size_t>(kThreads * kWrites));
  EXPECT_GE(list->revision, *revisions.rbegin());
}

// Read-your-writes: once a write is acknowledged, a Get and a List started afterwards see it,
// whatever other writers commit meanwhile (the SQLite backend answers both from memory, updated
// before acknowledgements).
TEST_P(StoreConformanceTest, GetAndListAfterAnAcknowledgedWriteSeeItWhileOthersWrite) {
  constexpr int kThreads = 4;
  constexpr int kWrites = 24;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Key key = Pod("ryw", "k" + std::to_string(t));
      for (int i = 0; i < kWrites; ++i) {
        StatusOr<ObjectPtr> written = i % 3 == 0   ? store_->Create(key, std::to_string(i))
                                      : i % 3 == 1 ? store_->Update(key, std::to_string(i))
                                                   : store_->Delete(key);
        ASSERT_TRUE(written.ok()) << written.status().ToString();
        StatusOr<ObjectPtr> got = store_->Get(key);
        StatusOr<ListResult> list = store_->List("core/pods", {.ns = "ryw"});
        ASSERT_TRUE(list.ok()) << list.status().ToString();
        EXPECT_GE(list->revision, (*written)->revision);
        auto listed = std::find_if(list->objects.begin(), list->objects.end(),
                                   [&](const ObjectPtr& object) { return object->key == key; });
        if (i % 3 == 2) {
          EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
          EXPECT_EQ(listed, list->objects.end());
          continue;
        }
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ((*got)->revision, (*written)->revision);
        EXPECT_EQ((*got)->value, std::to_string(i));
        ASSERT_NE(listed, list->objects.end());
        EXPECT_EQ((*listed)->revision, (*written)->revision);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// ---- List ------------------------------------------------------------------------------------

TEST_P(StoreConformanceTest, ListIsSortedAndScopedToTheResourceAndNamespace) {
  MustCreate(*store_, Pod("b", "y"), "");
  MustCreate(*store_, Pod("a", "z"), "");
  MustCreate(*store_, Pod("a", "x"), "");
  MustCreate(*store_, Key{"core/pod", "a", "other-resource"}, "");
  MustCreate(*store_, Key{"core/podtemplates", "a", "other-resource"}, "");
  MustCreate(*store_, Node("n2"), "");
  MustCreate(*store_, Node("n1"), "");

  StatusOr<ListResult> all = store_->List("core/pods", {});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_THAT(Names(*all), ElementsAre("a/x", "a/z", "b/y"));
  EXPECT_EQ(all->revision, *store_->CurrentRevision());
  EXPECT_TRUE(all->continue_token.empty());

  StatusOr<ListResult> in_a = store_->List("core/pods", {.ns = "a"});
  EXPECT_THAT(Names(*in_a), ElementsAre("a/x", "a/z"));
  EXPECT_THAT(Names(*store_->List("core/pods", {.ns = "c"})), ElementsAre());
  EXPECT_THAT(Names(*store_->List("core/nodes", {})), ElementsAre("n1", "n2"));
  EXPECT_THAT(Names(*store_->List("core/pod", {})), ElementsAre("a/other-resource"));
}

TEST_P(StoreConformanceTest, ListAtARevisionSeesThePastState) {
  MustCreate(*store_, Pod("ns", "a"), "a1");
  const Revision snapshot = MustCreate(*store_, Pod("ns", "b"), "b1")->revision;
  MustUpdate(*store_, Pod("ns", "a"), "a2");
  MustDelete(*store_, Pod("ns", "b"));
  MustCreate(*store_, Pod("ns", "c"), "c1");

  StatusOr<ListResult> past = store_->List("core/pods", {.revision = snapshot});
  ASSERT_TRUE(past.ok()) << past.status().ToString();
  EXPECT_EQ(past->revision, snapshot);
  ASSERT_THAT(Names(*past), ElementsAre("ns/a", "ns/b"));
  EXPECT_EQ(past->objects[0]->value, "a1");
  EXPECT_EQ(past->objects[1]->value, "b1");
  EXPECT_LE(past->objects[0]->revision, snapshot);

  StatusOr<ListResult> now = store_->List("core/pods", {});
  ASSERT_THAT(Names(*now), ElementsAre("ns/a", "ns/c"));
  EXPECT_EQ(now->objects[0]->value, "a2");
}

TEST_P(StoreConformanceTest, ListAtAFutureRevisionIsDeadlineExceeded) {
  MustCreate(*store_, Pod("ns", "a"), "");
  const Revision current = *store_->CurrentRevision();
  EXPECT_EQ(store_->List("core/pods", {.revision = current + 1000}).status().code(),
            StatusCode::kDeadlineExceeded);
}

TEST_P(StoreConformanceTest, PagesOfOneListShowOneSnapshotWhateverIsWrittenBetween) {
  for (int i = 0; i < 25; ++i) {
    MustCreate(*store_, Pod("ns", "p" + std::string(i < 10 ? "0" : "") + std::to_string(i)),
               "v" + std::to_string(i));
  }
  std::vector<std::string> seen;
  std::string token;
  Revision revision = 0;
  int pages = 0;
  do {
    StatusOr<ListResult> page =
        store_->List("core/pods", {.ns = "ns", .limit = 10, .continue_token = token});
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    if (revision == 0) revision = page->revision;
    EXPECT_EQ(page->revision, revision);
    EXPECT_LE(page->objects.size(), 10u);
    for (const std::string& name : Names(*page)) seen.push_back(name);
    for (const ObjectPtr& object : page->objects) {
      EXPECT_EQ(object->value, "v" + std::to_string(std::stoi(object->key.name.substr(1))));
    }
    token = page->continue_token;
    ++pages;
    // Writes between pages must not show up in later pages.
    MustUpdate(*store_, Pod("ns", "p24"), "changed" + std::to_string(pages));
    MustCreate(*store_, Pod("ns", "p2" + std::to_string(pages) + "x"), "new");
    MustDelete(*store_, Pod("ns", "p1" + std::to_string(pages)));
  } while (!token.empty());
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.front(), "ns/p00");
  EXPECT_EQ(seen.back(), "ns/p24");
}

TEST_P(StoreConformanceTest, AnExactlyFullLastPageCarriesNoContinueToken) {
  for (int i = 0; i < 10; ++i) MustCreate(*store_, Pod("ns", "p" + std::to_string(i)), "");
  StatusOr<ListResult> first = store_->List("core/pods", {.limit = 5});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->objects.size(), 5u);
  ASSERT_FALSE(first->continue_token.empty());
  StatusOr<ListResult> second =
      store_->List("core/pods", {.limit = 5, .continue_token = first->continue_token});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->objects.size(), 5u);
  EXPECT_TRUE(second->continue_token.empty());
}

TEST_P(StoreConformanceTest, ListsAndPagesSkipDeletedObjectsAndSeeRecreatedOnes) {
  for (int i = 0; i < 6; ++i) MustCreate(*store_, Pod("ns", "p" + std::to_string(i)), "v1");
  MustUpdate(*store_, Pod("ns", "p1"), "v2");
  MustUpdate(*store_, Pod("ns", "p1"), "v3");
  MustDelete(*store_, Pod("ns", "p2"));
  MustDelete(*store_, Pod("ns", "p3"));
  const Revision recreated = MustCreate(*store_, Pod("ns", "p3"), "again")->revision;
  MustDelete(*store_, Pod("ns", "p4"));
  MustDelete(*store_, Pod("ns", "p5"));

  EXPECT_EQ(store_->Get(Pod("ns", "p2")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Update(Pod("ns", "p4"), "x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Delete(Pod("ns", "p5")).status().code(), StatusCode::kNotFound);
  StatusOr<ObjectPtr> p3 = store_->Get(Pod("ns", "p3"));
  ASSERT_TRUE(p3.ok()) << p3.status().ToString();
  EXPECT_EQ((*p3)->value, "again");
  EXPECT_EQ((*p3)->create_revision, recreated);

  StatusOr<ListResult> first = store_->List("core/pods", {.limit = 2});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_THAT(Names(*first), ElementsAre("ns/p0", "ns/p1"));
  EXPECT_EQ(first->objects[1]->value, "v3");
  ASSERT_FALSE(first->continue_token.empty());
  StatusOr<ListResult> second =
      store_->List("core/pods", {.limit = 2, .continue_token = first->continue_token});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_THAT(Names(*second), ElementsAre("ns/p3"));
  EXPECT_TRUE(second->continue_token.empty());
  // Only deleted objects follow a full page: no continue token.
  StatusOr<ListResult> full = store_->List("core/pods", {.limit = 3});
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_THAT(Names(*full), ElementsAre("ns/p0", "ns/p1", "ns/p3"));
  EXPECT_TRUE(full->continue_token.empty());

  // Created again after its delete: listed again.
  MustCreate(*store_, Pod("ns", "p2"), "back");
  EXPECT_THAT(Names(*store_->List("core/pods", {})),
              ElementsAre("ns/p0", "ns/p1", "ns/p2", "ns/p3"));
}

TEST_P(StoreConformanceTest, ContinueTokensAreCheckedAgainstTheirList) {
  for (int i = 0; i < 4; ++i) MustCreate(*store_, Pod("ns", "p" + std::to_string(i)), "");
  StatusOr<ListResult> first = store_->List("core/pods", {.ns = "ns", .limit = 2});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(store_->List("core/pods", {.ns = "other", .continue_token = first->continue_token})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->List("core/nodes", {.continue_token = first->continue_token}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->List("core/pods", {.continue_token = "garbage!"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->List("core/pods", {.limit = -1}).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, CompactionExpiresOlderSnapshotsTokensAndWatches) {
  MustCreate(*store_, Pod("ns", "a"), "a1");
  MustCreate(*store_, Pod("ns", "b"), "b1");
  const Revision old_revision = MustCreate(*store_, Pod("ns", "c"), "c1")->revision;
  StatusOr<ListResult> page = store_->List("core/pods", {.limit = 1});
  ASSERT_TRUE(page.ok());
  MustUpdate(*store_, Pod("ns", "a"), "a2");
  MustDelete(*store_, Pod("ns", "b"));
  const Revision compact_to = MustCreate(*store_, Pod("ns", "d"), "d1")->revision;
  MustUpdate(*store_, Pod("ns", "c"), "c2");

  ASSERT_TRUE(store_->Compact(compact_to).ok());

  EXPECT_EQ(store_->List("core/pods", {.revision = old_revision}).status().code(),
            StatusCode::kExpired);
  StatusOr<ListResult> continued =
      store_->List("core/pods", {.limit = 1, .continue_token = page->continue_token});
  EXPECT_EQ(continued.status().code(), StatusCode::kExpired);
  // The token a 410 offers resumes after the same key at the newest revision (b is gone by then).
  StatusOr<ListResult> resumed = store_->List(
      "core/pods", {.limit = 5, .continue_token = ContinueTokenAtNewest(page->continue_token)});
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_THAT(Names(*resumed), ElementsAre("ns/c", "ns/d"));
  EXPECT_EQ(resumed->revision, *store_->CurrentRevision());
  EXPECT_EQ(resumed->objects[0]->value, "c2");
  EXPECT_TRUE(ContinueTokenAtNewest("garbage!").empty());
  EXPECT_EQ(store_->Watch("core/pods", {.revision = old_revision}).status().code(),
            StatusCode::kExpired);

  // The state at the compaction revision itself stays readable, and so does everything after.
  StatusOr<ListResult> at = store_->List("core/pods", {.revision = compact_to});
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  ASSERT_THAT(Names(*at), ElementsAre("ns/a", "ns/c", "ns/d"));
  EXPECT_EQ(at->objects[0]->value, "a2");
  EXPECT_EQ(at->objects[1]->value, "c1");
  std::unique_ptr<Watcher> watcher = MustWatch(*store_, "core/pods", {.revision = compact_to});
  ASSERT_NE(watcher, nullptr);
  WatchEvent event = MustNext(*watcher);
  EXPECT_EQ(Describe(event), "MODIFIED c=c2");

  // Compacting again to the same or an older revision is a no-op; the future is refused.
  EXPECT_TRUE(store_->Compact(compact_to).ok());
  EXPECT_TRUE(store_->Compact(old_revision).ok());
  EXPECT_EQ(store_->Compact(*store_->CurrentRevision() + 1000).code(),
            StatusCode::kInvalidArgument);
}

// Issue 17: every backend refuses a value over StoreOptions::max_value_bytes (etcd's own default
// limit is 1.5 MiB), and such a refusal writes nothing.
TEST_P(StoreConformanceTest, ValuesOverTheSizeLimitAreRefusedAndWriteNothing) {
  std::unique_ptr<Store> store = Open({.max_value_bytes = 1000});
  ASSERT_NE(store, nullptr);
  ObjectPtr created = MustCreate(*store, Pod("ns", "a"), std::string(1000, 'a'));
  ASSERT_NE(created, nullptr);
  StatusOr<ObjectPtr> big = store->Create(Pod("ns", "b"), std::string(1001, 'b'));
  ASSERT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(big.status().causes().size(), 1u);
  EXPECT_EQ(big.status().causes()[0].type, "FieldValueTooLong");
  EXPECT_EQ(store->Update(Pod("ns", "a"), std::string(1001, 'x')).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(*store->CurrentRevision(), created->revision);
  EXPECT_EQ((*store->Get(Pod("ns", "a")))->value, std::string(1000, 'a'));
}

// Issue 17: the memory and SQLite stores compact by size (etcd bounds its database with its own
// quota): values written since the last compaction never pass max_history_bytes.
TEST_P(StoreConformanceTest, HistoryIsCompactedBySize) {
  if (GetParam().name == "etcd") GTEST_SKIP() << "etcd bounds its history with its own quota";
  std::unique_ptr<Store> store = Open({.max_history_bytes = 64 * 1024});
  ASSERT_NE(store, nullptr);
  const Revision first = MustCreate(*store, Pod("ns", "a"), std::string(10'000, '0'))->revision;
  for (int i = 1; i < 20; ++i) {
    MustUpdate(*store, Pod("ns", "a"), std::string(10'000, static_cast<char>('0' + i % 10)));
  }
  // 200 KB written: the early revisions are gone, the recent ones and the latest state remain.
  EXPECT_EQ(store->List("core/pods", {.revision = first}).status().code(), StatusCode::kExpired);
  const Revision current = *store->CurrentRevision();
  EXPECT_TRUE(store->List("core/pods", {.revision = current - 2}).ok());
  EXPECT_EQ((*store->Get(Pod("ns", "a")))->value, std::string(10'000, '9'));
}

// ---- Watch -----------------------------------------------------------------------------------

TEST_P(StoreConformanceTest, WatchFromNowSeesLaterChangesInOrder) {
  MustCreate(*store_, Pod("ns", "before"), "old");
  std::unique_ptr<Watcher> watcher = MustWatch(*store_, "core/pods");
  ASSERT_NE(watcher, nullptr);
  ObjectPtr created = MustCreate(*store_, Pod("ns", "a"), "one");
  ObjectPtr updated = MustUpdate(*store_, Pod("ns", "a"), "two");
  ObjectPtr deleted = MustDelete(*store_, Pod("ns", "a"));

  WatchEvent added = MustNext(*watcher);
  EXPECT_EQ(Describe(added), "ADDED a=one");
  EXPECT_EQ(added.revision, created->revision);
  EXPECT_EQ(added.object->revision, created->revision);
  EXPECT_EQ(added.prev_object, nullptr);

  WatchEvent modified = MustNext(*watcher);
  EXPECT_EQ(Describe(modified), "MODIFIED a=two");
  EXPECT_EQ(modified.revision, updated->revision);
  ASSERT_NE(modified.prev_object, nullptr);
  EXPECT_EQ(modified.prev_object->value, "one");
  EXPECT_EQ(modified.prev_object->revision, created->revision);

  WatchEvent removed = MustNext(*watcher);
  EXPECT_EQ(Describe(removed), "DELETED a=two");
  EXPECT_EQ(removed.revision, deleted->revision);
  EXPECT_EQ(removed.object->revision, deleted->revision);
  EXPECT_EQ(removed.object->create_revision, created->revision);
  ASSERT_NE(removed.prev_object, nullptr);
  EXPECT_EQ(removed.prev_object->revision, updated->revision);

  std::vector<WatchEvent> rest;
  EXPECT_TRUE(watcher->Poll(&rest).ok());
  EXPECT_TRUE(rest.empty());
}

TEST_P(StoreConformanceTest, WatchFromARevisionReplaysEveryLaterEventExactlyOnce) {
  std::vector<Revision> revisions;
  for (int i = 0; i < 10; ++i) {
    revisions.push_back(MustCreate(*store_, Pod("ns", "p" + std::to_string(i)), "")->revision);
  }
  std::unique_ptr<Watcher> watcher = MustWatch(*store_, "core/pods", {.revision = revisions[3]});
  ASSERT_NE(watcher, nullptr);
  for (int i = 4; i < 10; ++i) {
    WatchEvent event = MustNext(*watcher);
    EXPECT_EQ(event.type, WatchEvent::Type::kAdded);
    EXPECT_EQ(event.revision, revisions[i]);
    EXPECT_EQ(event.object->key.name, "p" + std::to_string(i));
  }
  // Then the live events follow without a gap or a repeat.
  const Revision live = MustUpdate(*store_, Pod("ns", "p0"), "x")->revision;
  WatchEvent event = MustNext(*watcher);
  EXPECT_EQ(event.revision, live);
  EXPECT_EQ(Describe(event), "MODIFIED p0=x");
}

TEST_P(StoreConformanceTest, WatchFiltersByResourceNamespaceAndName) {
  std::unique_ptr<Watcher> by_ns = MustWatch(*store_, "core/pods", {.ns = "a"});
  std::unique_ptr<Watcher> by_name = MustWatch(*store_, "core/pods", {.ns = "b", .name = "y"});
  std::unique_ptr<Watcher> nodes = MustWatch(*store_, "core/nodes");
  MustCreate(*store_, Pod("b", "x"), "bx");
  MustCreate(*store_, Pod("a", "x"), "ax");
  MustCreate(*store_, Node("n"), "n");
  MustCreate(*store_, Pod("b", "y"), "by");
  MustCreate(*store_, Key{"core/pod", "a", "x"}, "other");
  MustCreate(*store_, Pod("a", "z"), "az");

  EXPECT_EQ(Describe(MustNext(*by_ns)), "ADDED x=ax");
  EXPECT_EQ(Describe(MustNext(*by_ns)), "ADDED z=az");
  EXPECT_EQ(Describe(MustNext(*by_name)), "ADDED y=by");
  EXPECT_EQ(Describe(MustNext(*nodes)), "ADDED n=n");
  // Nothing else is pending: a bookmark requested now comes next.
  for (Watcher* w : {by_ns.get(), by_name.get(), nodes.get()}) {
    w->RequestBookmark();
    EXPECT_EQ(MustNext(*w).type, WatchEvent::Type::kBookmark);
  }
}

TEST_P(StoreConformanceTest, ConcurrentWritesAreWatchedExactlyOnceInRevisionOrder) {
  constexpr int kThreads = 4;
  constexpr int kWrites = 30;
  std::unique_ptr<Watcher> watcher = MustWatch(*store_, "core/pods");
  ASSERT_NE(watcher, nullptr);
  std::mutex mu;
  std::map<Revision, std::string> acknowledged;  // revision → "TYPE name=value"
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Key key = Pod("ns", "k" + std::to_string(t));
      for (int i = 0; i < kWrites; ++i) {
        StatusOr<ObjectPtr> result = i % 3 == 0   ? store_->Create(key, std::to_string(i))
                                     : i % 3 == 1 ? store_->Update(key, std::to_string(i))
                                                  : store_->Delete(key);
        ASSERT_TRUE(result.ok()) << result.status().ToString();
        const char* type = i % 3 == 0 ? "ADDED" : i % 3 == 1 ? "MODIFIED" : "DELETED";
        std::lock_guard<std::mutex> lock(mu);
        acknowledged[(*result)->revision] =
            std::string(type) + " " + key.name + "=" + (*result)->value;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::map<Revision, std::string> watched;
  Revision last = 0;
  for (int i = 0; i < kThreads * kWrites; ++i) {
    WatchEvent event = MustNext(*watcher);
    EXPECT_GT(event.revision, last);
    last = event.revision;
    EXPECT_TRUE(watched.emplace(event.revision, Describe(event)).second);
  }
  EXPECT_EQ(watched, acknowledged);
}

// The informer pattern: list at the latest revision, then watch from the list's revision. The
// list's objects plus the watch's events must reproduce every later state exactly: an event
// missed or delivered twice, or a list whose revision runs ahead of (or behind) its objects,
// breaks the replay below. Lists (paged, so later pages continue the same snapshot) run while
// writers create, update and delete.
TEST_P(StoreConformanceTest, AListAndAWatchFromItsRevisionReplayEveryLaterStateWhileOthersWrite) {
  constexpr int kWriters = 3;
  constexpr int kWrites = 30;
  constexpr int kRounds = 6;
  // Every list then has a revision of at least 1 (a watch from revision 0 would start "now").
  ASSERT_NE(MustCreate(*store_, Pod("lw", "aa-start"), ""), nullptr);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::set<std::string> present;
      for (int i = 0; i < kWrites; ++i) {
        const std::string name = "w" + std::to_string(w) + "-" + std::to_string(i % 4);
        StatusOr<ObjectPtr> result = !present.contains(name) ? store_->Create(Pod("lw", name), "0")
                                     : i % 3 == 0
                                         ? store_->Delete(Pod("lw", name))
                                         : store_->Update(Pod("lw", name), std::to_string(i));
        ASSERT_TRUE(result.ok()) << result.status().ToString();
        if (present.contains(name) && i % 3 == 0) {
          present.erase(name);
        } else {
          present.insert(name);
        }
      }
    });
  }
  struct Round {
    std::map<std::string, ObjectPtr> state;
    Revision revision = 0;
    std::unique_ptr<Watcher> watcher;
  };
  std::vector<Round> rounds(kRounds);
  for (Round& round : rounds) {
    ListOptions options{.ns = "lw", .limit = 3};
    do {
      StatusOr<ListResult> page = store_->List("core/pods", options);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      if (options.continue_token.empty()) round.revision = page->revision;
      EXPECT_EQ(page->revision, round.revision);
      for (const ObjectPtr& object : page->objects) {
        EXPECT_LE(object->revision, round.revision);
        round.state[object->key.name] = object;
      }
      options.continue_token = page->continue_token;
    } while (!options.continue_token.empty());
    round.watcher = MustWatch(*store_, "core/pods", {.ns = "lw", .revision = round.revision});
    ASSERT_NE(round.watcher, nullptr);
  }
  for (std::thread& writer : writers) writer.join();
  const ObjectPtr end = MustCreate(*store_, Pod("lw", "zz-end"), "");
  ASSERT_NE(end, nullptr);
  StatusOr<ListResult> final_list = store_->List("core/pods", {.ns = "lw"});
  ASSERT_TRUE(final_list.ok()) << final_list.status().ToString();
  std::map<std::string, std::pair<std::string, Revision>> expected;
  for (const ObjectPtr& object : final_list->objects) {
    expected[object->key.name] = {object->value, object->revision};
  }
  for (Round& round : rounds) {
    Revision last = round.revision;
    while (true) {
      WatchEvent event = MustNext(*round.watcher);
      ASSERT_NE(event.object, nullptr);
      EXPECT_GT(event.revision, last);
      last = event.revision;
      const std::string& name = event.object->key.name;
      auto it = round.state.find(name);
      if (event.type == WatchEvent::Type::kAdded) {
        EXPECT_EQ(it, round.state.end()) << "ADDED of a listed object " << name;
        round.state[name] = event.object;
      } else {
        ASSERT_NE(it, round.state.end()) << Describe(event) << " of an unknown object";
        ASSERT_NE(event.prev_object, nullptr);
        EXPECT_EQ(event.prev_object->revision, it->second->revision) << Describe(event);
        if (event.type == WatchEvent::Type::kDeleted) {
          round.state.erase(it);
        } else {
          it->second = event.object;
        }
      }
      if (event.revision == end->revision) break;
    }
    std::map<std::string, std::pair<std::string, Revision>> replayed;
    for (const auto& [name, object] : round.state) {
      replayed[name] = {object->value, object->revision};
    }
    EXPECT_EQ(replayed, expected) << "list at revision " << round.revision;
  }
}

// The API server's pattern: many watchers, one event loop woken by notify callbacks, Poll()
// until empty. A lost notify would leave a watcher behind and hang the test.
TEST_P(StoreConformanceTest, ManyWatchersDrainedFromOneLoopEachSeeEveryEventOnceInOrder) {
  constexpr int kWatchers = 50;
  constexpr int kWriters = 2;
  constexpr int kWrites = 20;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<int> ready;
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int w = 0; w < kWatchers; ++w) {
    watchers.push_back(MustWatch(*store_, "core/pods", {.notify = [&, w] {
      std::lock_guard<std::mutex> lock(mu);
      ready.push_back(w);
      cv.notify_all();
    }}));
    ASSERT_NE(watchers.back(), nullptr);
  }
  std::mutex acked_mu;
  std::vector<Revision> acked;
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        ObjectPtr created =
            MustCreate(*store_, Pod("ns", "w" + std::to_string(t) + "-" + std::to_string(i)), "");
        std::lock_guard<std::mutex> lock(acked_mu);
        if (created != nullptr) acked.push_back(created->revision);
      }
    });
  }
  // The event loop.
  std::vector<std::vector<Revision>> seen(kWatchers);
  int complete = 0;
  std::vector<WatchEvent> events;
  while (complete < kWatchers) {
    int w;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !ready.empty(); });
      w = ready.front();
      ready.pop_front();
    }
    while (true) {
      events.clear();
      ASSERT_TRUE(watchers[w]->Poll(&events, 7).ok());
      if (events.empty()) break;
      for (const WatchEvent& event : events) seen[w].push_back(event.revision);
      if (seen[w].size() == kWriters * kWrites) ++complete;
    }
  }
  for (std::thread& writer : writers) writer.join();
  std::sort(acked.begin(), acked.end());
  for (int w = 0; w < kWatchers; ++w) EXPECT_EQ(seen[w], acked) << "watcher " << w;
}

TEST_P(StoreConformanceTest, BookmarksCarryARevisionCoveringDeliveredEvents) {
  MustCreate(*store_, Pod("ns", "a"), "");
  const Revision start = *store_->CurrentRevision();
  std::unique_ptr<Watcher> watcher = MustWatch(*store_, "core/pods", {.ns = "ns"});
  watcher->RequestBookmark();
  WatchEvent first = MustNext(*watcher);
  EXPECT_EQ(first.type, WatchEvent::Type::kBookmark);
  EXPECT_GE(first.revision, start);
  EXPECT_EQ(first.object, nullptr);

  const Revision written = MustUpdate(*store_, Pod("ns", "a"), "x")->revision;
  EXPECT_EQ(MustNext(*watcher).revision, written);
  watcher->RequestBookmark();
  WatchEvent second = MustNext(*watcher);
  EXPECT_EQ(second.type, WatchEvent::Type::kBookmark);
  EXPECT_GE(second.revision, written);
}

TEST_P(StoreConformanceTest, CancelEndsTheWatchAndWakesABlockedReader) {
  std::unique_ptr<Watcher> watcher = MustWatch(*store_, "core/pods");
  StatusOr<WatchEvent> result = WatchEvent{};
  std::thread reader([&] { result = watcher->Next(); });
  watcher->Cancel();
  reader.join();
  EXPECT_EQ(result.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(watcher->status().code(), StatusCode::kCancelled);
  // Later writes are not queued and Cancel is idempotent.
  MustCreate(*store_, Pod("ns", "a"), "");
  watcher->Cancel();
  std::vector<WatchEvent> events;
  EXPECT_EQ(watcher->Poll(&events).code(), StatusCode::kCancelled);
  EXPECT_TRUE(events.empty());
}

TEST_P(StoreConformanceTest, ASlowWatcherIsClosedWithResourceExhaustedAndCanResume) {
  std::mutex mu;
  std::condition_variable cv;
  int notifications = 0;
  std::unique_ptr<Watcher> watcher =
      MustWatch(*store_, "core/pods", {.queue_limit = 5, .notify = [&] {
                                         std::lock_guard<std::mutex> lock(mu);
                                         ++notifications;
                                         cv.notify_all();
                                       }});
  ASSERT_NE(watcher, nullptr);
  std::vector<Revision> revisions;
  for (int i = 0; i < 8; ++i) {
    revisions.push_back(MustCreate(*store_, Pod("ns", "p" + std::to_string(i)), "")->revision);
  }
  {
    // Wait until the store has ended the watch (the sixth event overflows the queue).
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !watcher->status().ok(); });
  }
  EXPECT_EQ(watcher->status().code(), StatusCode::kResourceExhausted);
  std::vector<WatchEvent> events;
  EXPECT_TRUE(watcher->Poll(&events).ok());
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events.back().revision, revisions[4]);
  Status end = watcher->Poll(&events);
  EXPECT_EQ(end.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(end.message()), HasSubstr(std::to_string(revisions[4])));
  EXPECT_EQ(events.size(), 5u);

  // Resuming from the last delivered revision loses nothing.
  std::unique_ptr<Watcher> resumed =
      MustWatch(*store_, "core/pods", {.revision = events.back().revision});
  ASSERT_NE(resumed, nullptr);
  for (int i = 5; i < 8; ++i) EXPECT_EQ(MustNext(*resumed).revision, revisions[i]);
}

TEST_P(StoreConformanceTest, NotifyFiresWhenTheQueueTurnsNonEmpty) {
  std::mutex mu;
  std::condition_variable cv;
  int notifications = 0;
  std::unique_ptr<Watcher> watcher = MustWatch(*store_, "core/pods", {.notify = [&] {
    std::lock_guard<std::mutex> lock(mu);
    ++notifications;
    cv.notify_all();
  }});
  ASSERT_NE(watcher, nullptr);
  MustCreate(*store_, Pod("ns", "a"), "");
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return notifications > 0; });
  }
  std::vector<WatchEvent> events;
  ASSERT_TRUE(watcher->Poll(&events).ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(Describe(events[0]), "ADDED a=");
}

TEST_P(StoreConformanceTest, AWatcherThatOutlivesItsStoreEndsWithCancelled) {
  std::unique_ptr<Watcher> watcher = MustWatch(*store_, "core/pods");
  ASSERT_NE(watcher, nullptr);
  store_.reset();
  EXPECT_EQ(watcher->Next().status().code(), StatusCode::kCancelled);
  watcher->RequestBookmark();
  watcher->Cancel();
}

// ---- GuaranteedUpdate ------------------------------------------------------------------------

TEST_P(StoreConformanceTest, GuaranteedUpdateFromEightThreadsLosesNoIncrement) {
  constexpr int kThreads = 8;
  constexpr int kIncrements = 25;
  MustCreate(*store_, Pod("ns", "counter"), "0");
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        StatusOr<ObjectPtr> result = store_->GuaranteedUpdate(
            Pod("ns", "counter"), [&](const Object* current) -> StatusOr<std::string> {
              ++calls;
              return std::to_string(std::stoi(current->value) + 1);
            });
        ASSERT_TRUE(result.ok()) << result.status().ToString();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ((*store_->Get(Pod("ns", "counter")))->value, std::to_string(kThreads * kIncrements));
  EXPECT_GE(calls.load(), kThreads * kIncrements);
}

TEST_P(StoreConformanceTest, GuaranteedUpdateSkipsTheWriteWhenNothingChanges) {
  ObjectPtr created = MustCreate(*store_, Pod("ns", "a"), "same");
  auto same = [](const Object* current) -> StatusOr<std::string> { return current->value; };
  StatusOr<ObjectPtr> a = store_->GuaranteedUpdate(Pod("ns", "a"), same);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)->revision, created->revision);
  EXPECT_EQ(*store_->CurrentRevision(), created->revision);
}

TEST_P(StoreConformanceTest, GuaranteedUpdateCreatesOnlyWhenAllowed) {
  auto make = [](const Object* current) -> StatusOr<std::string> {
    return current == nullptr ? "fresh" : current->value + "+";
  };
  EXPECT_EQ(store_->GuaranteedUpdate(Pod("ns", "a"), make).status().code(), StatusCode::kNotFound);
  StatusOr<ObjectPtr> created =
      store_->GuaranteedUpdate(Pod("ns", "a"), make, {.allow_create = true});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ((*created)->value, "fresh");
  StatusOr<ObjectPtr> updated =
      store_->GuaranteedUpdate(Pod("ns", "a"), make, {.allow_create = true});
  EXPECT_EQ((*updated)->value, "fresh+");
}

TEST_P(StoreConformanceTest, GuaranteedUpdateChecksPreconditionsAndPropagatesErrors) {
  ObjectPtr created = MustCreate(*store_, Pod("ns", "a"), "1");
  MustUpdate(*store_, Pod("ns", "a"), "2");
  auto bump = [](const Object* current) -> StatusOr<std::string> { return current->value + "!"; };
  EXPECT_EQ(store_
                ->GuaranteedUpdate(Pod("ns", "a"), bump,
                                   {.preconditions = Preconditions{created->revision}})
                .status()
                .code(),
            StatusCode::kConflict);
  auto refuse = [](const Object*) -> StatusOr<std::string> {
    return InvalidArgumentError("spec.x: Invalid value");
  };
  Status refused = store_->GuaranteedUpdate(Pod("ns", "a"), refuse).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(), "spec.x: Invalid value");
  EXPECT_EQ((*store_->Get(Pod("ns", "a")))->value, "2");
}

}  // namespace draplane::store::testing
