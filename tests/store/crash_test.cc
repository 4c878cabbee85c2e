// Crash tests: a child process (store_crash_writer) writes as fast as it can and logs every
// acknowledged write; it is killed with SIGKILL after a random number of acknowledgements; the
// store is reopened and must hold every acknowledged write and be consistent.
//
// The kill point comes from a seeded generator: DRAPLANE_CRASH_SEED=<n> reproduces a run's
// choice (the exact interleaving of the child's threads is up to the scheduler).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/random.h"
#include "etcd_launcher.h"
#include "store/store.h"
#include "testing/temp_dir.h"

namespace draplane::store::testing {

using ::draplane::testing::TempDir;

namespace {

struct Ack {
  char type;  // 'C' create, 'U' update
  Revision revision;
  std::string name;
  int index;  // of the update ("u<index>"); for a create, from the name's suffix
};

uint64_t Seed() {
  const char* text = getenv("DRAPLANE_CRASH_SEED");
  return text != nullptr ? std::strtoull(text, nullptr, 10) : 20'240'901;
}

int SuffixIndex(const std::string& name) { return std::stoi(name.substr(name.rfind('-') + 1)); }

// Runs the writer against `url` and SIGKILLs it once it has logged `kill_after` acknowledged
// writes. Returns every write it logged (including those logged between the decision and the
// kill).
std::vector<Ack> RunAndKill(const std::string& url, int threads, int run, size_t kill_after) {
  int fds[2];
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe failed";
    return {};
  }
  std::vector<std::string> args = {STORE_CRASH_WRITER, url, std::to_string(threads),
                                   std::to_string(run)};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::vector<Ack> acks;
  std::string pending;
  bool killed = false;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof(buffer))) > 0) {
    pending.append(buffer, n);
    size_t start = 0;
    for (size_t newline; (newline = pending.find('\n', start)) != std::string::npos;
         start = newline + 1) {
      std::istringstream line(pending.substr(start, newline - start));
      Ack ack{};
      line >> ack.type >> ack.revision >> ack.name;
      if (ack.type == 'U') {
        line >> ack.index;
      } else {
        ack.index = SuffixIndex(ack.name);
      }
      acks.push_back(ack);
    }
    pending.erase(0, start);
    if (!killed && acks.size() >= kill_after) {
      kill(pid, SIGKILL);
      killed = true;
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the writer ended on its own (status " << status << ") after " << acks.size()
      << " writes; see its stderr above";
  EXPECT_TRUE(pending.empty()) << "a torn log line: " << pending;
  return acks;
}

// Checks that every acknowledged write is in `store` and that its state is consistent.
void VerifyAcknowledged(Store& store, const std::vector<Ack>& acks) {
  Revision newest = 0;
  std::map<std::string, const Ack*> last_update;
  for (const Ack& ack : acks) {
    newest = std::max(newest, ack.revision);
    if (ack.type == 'C') {
      StatusOr<ObjectPtr> object = store.Get(Key{"core/pods", "crash", ack.name});
      ASSERT_TRUE(object.ok()) << "acknowledged create of " << ack.name << " at revision "
                               << ack.revision << " is lost: " << object.status().ToString();
      EXPECT_EQ((*object)->create_revision, ack.revision) << ack.name;
      EXPECT_EQ((*object)->value, "v" + std::to_string(ack.index)) << ack.name;
    } else {
      const Ack*& last = last_update[ack.name];
      if (last == nullptr || ack.index > last->index) last = &ack;
    }
  }
  for (const auto& [name, ack] : last_update) {
    StatusOr<ObjectPtr> object = store.Get(Key{"core/pods", "crash", name});
    ASSERT_TRUE(object.ok()) << object.status().ToString();
    // Later updates may have committed without being logged, never earlier ones.
    const int index = std::stoi((*object)->value.substr(1));
    EXPECT_GE(index, ack->index) << "acknowledged update of " << name << " to u" << ack->index
                                 << " at revision " << ack->revision << " is lost";
    EXPECT_GE((*object)->revision, ack->revision) << name;
  }
  StatusOr<Revision> current = store.CurrentRevision();
  ASSERT_TRUE(current.ok());
  EXPECT_GE(*current, newest);

  // The latest list holds each key once, in order, none newer than the list's revision.
  StatusOr<ListResult> list = store.List("core/pods", {.ns = "crash"});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  for (size_t i = 0; i < list->objects.size(); ++i) {
    EXPECT_LE(list->objects[i]->revision, list->revision);
    if (i > 0) {
      EXPECT_LT(list->objects[i - 1]->key.name, list->objects[i]->key.name);
    }
  }
  // A snapshot in the middle shows exactly the creates acknowledged at or before it (creates are
  // never deleted; unlogged creates may add more, but none newer than the snapshot).
  std::vector<Revision> creates;
  for (const Ack& ack : acks) {
    if (ack.type == 'C') creates.push_back(ack.revision);
  }
  if (creates.empty()) return;
  std::sort(creates.begin(), creates.end());
  const Revision middle = creates[creates.size() / 2];
  StatusOr<ListResult> snapshot = store.List("core/pods", {.ns = "crash", .revision = middle});
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  std::map<std::string, Revision> at_middle;
  for (const ObjectPtr& object : snapshot->objects) {
    EXPECT_LE(object->revision, middle);
    at_middle[object->key.name] = object->create_revision;
  }
  for (const Ack& ack : acks) {
    if (ack.type != 'C' || ack.revision > middle) continue;
    auto it = at_middle.find(ack.name);
    ASSERT_NE(it, at_middle.end()) << ack.name << " missing from the snapshot at " << middle;
    EXPECT_EQ(it->second, ack.revision);
  }
}

// Replays the whole history through a watch and checks it rebuilds the latest list exactly.
void VerifyHistoryMatchesState(Store& store) {
  StatusOr<std::unique_ptr<Watcher>> watcher =
      store.Watch("core/pods", {.ns = "crash", .revision = 1});
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
  (*watcher)->RequestBookmark();  // Queued after the replayed backlog.
  std::map<std::string, std::pair<std::string, Revision>> replayed;
  Revision last = 0;
  while (true) {
    StatusOr<WatchEvent> event = (*watcher)->Next();
    ASSERT_TRUE(event.ok()) << event.status().ToString();
    if (event->type == WatchEvent::Type::kBookmark) break;
    EXPECT_GT(event->revision, last);
    last = event->revision;
    if (event->type == WatchEvent::Type::kDeleted) {
      replayed.erase(event->object->key.name);
    } else {
      replayed[event->object->key.name] = {event->object->value, event->revision};
    }
  }
  StatusOr<ListResult> list = store.List("core/pods", {.ns = "crash"});
  ASSERT_TRUE(list.ok());
  std::map<std::string, std::pair<std::string, Revision>> listed;
  for (const ObjectPtr& object : list->objects) {
    listed[object->key.name] = {object->value, object->revision};
  }
  EXPECT_EQ(replayed, listed);
}

TEST(SqliteCrashTest, AcknowledgedWritesSurviveSigkillAndTheStoreStaysConsistent) {
  TempDir dir;
  const std::string path = dir.File("crash.db");
  const std::string url = "sqlite://" + path;
  const uint64_t seed = Seed();
  SCOPED_TRACE("DRAPLANE_CRASH_SEED=" + std::to_string(seed));
  std::unique_ptr<Random> random = NewSeededRandom(seed);
  std::vector<Ack> all;
  for (int run = 0; run < 3; ++run) {
    const size_t kill_after = 200 + random->Uniform(2000);
    std::vector<Ack> acks = RunAndKill(url, 8, run, kill_after);
    ASSERT_GE(acks.size(), kill_after);
    all.insert(all.end(), acks.begin(), acks.end());

    StatusOr<std::unique_ptr<Store>> store = OpenStore(url);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    VerifyAcknowledged(**store, all);
    VerifyHistoryMatchesState(**store);
    StatusOr<ObjectPtr> after =
        (*store)->Create(Key{"core/pods", "after", std::to_string(run)}, "");
    ASSERT_TRUE(after.ok()) << after.status().ToString();
    for (const Ack& ack : all) ASSERT_GT((*after)->revision, ack.revision);
  }
  // SQLite's own check of the file.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* check = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &check, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(check), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(check, 0)), "ok");
  sqlite3_finalize(check);
  sqlite3_close(db);
}

TEST(EtcdCrashTest, AcknowledgedWritesSurviveSigkillOfTheWriterAndOfEtcd) {
  TempDir dir;
  StatusOr<std::unique_ptr<EtcdProcess>> etcd = EtcdProcess::Start(dir.File("etcd"));
  ASSERT_TRUE(etcd.ok()) << etcd.status().ToString();
  const std::string url = "etcd://" + (*etcd)->endpoint() + "?prefix=/crash/";
  const uint64_t seed = Seed();
  SCOPED_TRACE("DRAPLANE_CRASH_SEED=" + std::to_string(seed));
  std::unique_ptr<Random> random = NewSeededRandom(seed);
  const size_t kill_after = 100 + random->Uniform(400);
  std::vector<Ack> acks = RunAndKill(url, 4, 0, kill_after);
  ASSERT_GE(acks.size(), kill_after);

  // etcd itself dies too: what it acknowledged must be on disk.
  (*etcd)->Kill();
  ASSERT_TRUE((*etcd)->Restart().ok());
  StatusOr<std::unique_ptr<Store>> store = OpenStore(url);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  VerifyAcknowledged(**store, acks);
  StatusOr<ObjectPtr> after = (*store)->Create(Key{"core/pods", "after", "x"}, "");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  for (const Ack& ack : acks) ASSERT_GT((*after)->revision, ack.revision);
}

}  // namespace
}  // namespace draplane::store::testing
