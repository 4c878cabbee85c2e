#include "store/sqlite/sqlite_store.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/check.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "common/thread_name.h"
#include "store/internal/keys.h"
#include "store/internal/watch_hub.h"
#include "store/sqlite/coalescing_vfs.h"

namespace draplane::store {
namespace {

constexpr int64_t kSqliteDefaultRetainedRevisions = 100'000;
// How long the writer waits for the writers of its previous batch to queue again.
constexpr auto kGatherWait = std::chrono::microseconds(200);
// Events the in-memory watch ring holds; older resumes are replayed from the history table.
constexpr size_t kRingEvents = 10'000;
// ... and at most this many bytes of values (a few large objects rewritten often would otherwise
// keep 10,000 versions of themselves in memory).
constexpr size_t kRingBytes = 64 * 1024 * 1024;
// "DRAP": marks the file as a draplane store (PRAGMA application_id).
constexpr int64_t kApplicationId = 0x44524150;

// history.type values.
constexpr int64_t kTypeAdded = 0;
constexpr int64_t kTypeModified = 1;
constexpr int64_t kTypeDeleted = 2;

Status SqliteStatus(sqlite3* db, int rc, std::string_view what) {
  std::string message = "sqlite: " + std::string(what) + ": " +
                        (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
      return FailedPreconditionError(std::move(message));
    // A full disk is a server error, as kube-apiserver answers etcd's "database space exceeded"
    // (500); ResourceExhausted would read as a 429 throttle and invite retries that cannot
    // succeed until an operator frees space.
    case SQLITE_FULL:
    case SQLITE_CORRUPT:
    case SQLITE_MISUSE:
    case SQLITE_INTERNAL:
      return InternalError(std::move(message));
    default:
      return UnavailableError(std::move(message));
  }
}

// A prepared statement. Bind*, then Step(); Reset() (or the destructor of a Scope) before reuse.
class Stmt {
 public:
  Stmt() = default;
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Status Prepare(sqlite3* db, std::string_view sql) {
    db_ = db;
    const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
    if (rc != SQLITE_OK) return SqliteStatus(db, rc, "prepare " + std::string(sql));
    return Status::Ok();
  }

  // Resets the statement when it goes out of scope.
  class Scope {
   public:
    explicit Scope(Stmt& stmt) : stmt_(stmt) {}
    ~Scope() { stmt_.Reset(); }

   private:
    Stmt& stmt_;
  };

  void BindInt(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  // The bytes must stay valid until the statement is reset.
  void BindBlob(int index, std::string_view value) {
    sqlite3_bind_blob64(stmt_, index, value.data(), value.size(), SQLITE_STATIC);
  }
  void BindNull(int index) { sqlite3_bind_null(stmt_, index); }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(stmt_); }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Status StepDone(std::string_view what) {
    const int rc = Step();
    if (rc != SQLITE_DONE) return SqliteStatus(db_, rc, what);
    return Status::Ok();
  }

  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  // Valid until the next Step() or Reset().
  std::string_view BlobView(int column) const {
    const void* data = sqlite3_column_blob(stmt_, column);
    const int size = sqlite3_column_bytes(stmt_, column);
    return data == nullptr ? std::string_view()
                           : std::string_view(static_cast<const char*>(data), size);
  }
  std::string Blob(int column) const {
    const void* data = sqlite3_column_blob(stmt_, column);
    const int size = sqlite3_column_bytes(stmt_, column);
    return data == nullptr ? std::string() : std::string(static_cast<const char*>(data), size);
  }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

Status Exec(sqlite3* db, const char* sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    // SqliteStatus adds the code's own text; the message is added only when it says more.
    std::string what = sql;
    if (error != nullptr && std::strcmp(error, sqlite3_errstr(rc)) != 0) {
      what += ": " + std::string(error);
    }
    sqlite3_free(error);
    return SqliteStatus(nullptr, rc, what);
  }
  return Status::Ok();
}

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

StatusOr<DbPtr> OpenConnection(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 internal::CoalescingWalVfs());
  DbPtr db(raw);
  if (rc != SQLITE_OK) return SqliteStatus(raw, rc, "open " + path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 10'000);
  // Every commit fsyncs the WAL before its frames are published in the WAL index: a write is
  // acknowledged only once it is durable, and the VFS's pending WAL bytes are written before any
  // other connection can read them (coalescing_vfs.h). Set before the first write.
  DRAPLANE_RETURN_IF_ERROR(Exec(raw, "PRAGMA synchronous = FULL"));
  // Reads map the file instead of copying pages through the page cache.
  DRAPLANE_RETURN_IF_ERROR(Exec(raw, "PRAGMA mmap_size = 268435456"));
  return db;
}

StatusOr<int64_t> QueryInt(sqlite3* db, const char* sql) {
  Stmt stmt;
  DRAPLANE_RETURN_IF_ERROR(stmt.Prepare(db, sql));
  const int rc = stmt.Step();
  if (rc == SQLITE_ROW) return stmt.Int(0);
  if (rc == SQLITE_DONE) return NotFoundError(std::string("no row for ") + sql);
  return SqliteStatus(db, rc, sql);
}

StatusOr<ObjectPtr> MakeObject(std::string_view encoded_key, std::string value, Revision revision,
                               Revision create_revision) {
  StatusOr<Key> key = internal::DecodeKey(encoded_key);
  if (!key.ok())
    return InternalError("sqlite store holds a malformed key: " +
                         std::string(key.status().message()));
  return std::make_shared<Object>(
      Object{std::move(*key), std::move(value), revision, create_revision});
}

struct SqliteMetrics {
  metrics::HistogramFamily batch_size = metrics::NewHistogramFamily(
      "draplane_store_sqlite_commit_batch_writes", "Writes per SQLite group commit.", {},
      metrics::ExponentialBuckets(1, 2, 12));
  metrics::HistogramFamily commit_seconds = metrics::NewHistogramFamily(
      "draplane_store_sqlite_commit_duration_seconds",
      "Duration of one SQLite group commit (apply + durable commit) in seconds.", {},
      metrics::LatencyBuckets());
};

const SqliteMetrics& Metrics() {
  static const SqliteMetrics* m = new SqliteMetrics();
  return *m;
}

// A read connection with its prepared statements; used by one thread at a time.
struct Reader {
  DbPtr db;
  Stmt begin, commit, rollback, meta, list_versions, version, history;

  Status Prepare() {
    DRAPLANE_RETURN_IF_ERROR(begin.Prepare(db.get(), "BEGIN"));
    DRAPLANE_RETURN_IF_ERROR(commit.Prepare(db.get(), "COMMIT"));
    DRAPLANE_RETURN_IF_ERROR(rollback.Prepare(db.get(), "ROLLBACK"));
    DRAPLANE_RETURN_IF_ERROR(meta.Prepare(db.get(),
                                          "SELECT (SELECT value FROM meta WHERE name = 'revision'),"
                                          " (SELECT value FROM meta WHERE name = 'compacted')"));
    // Reads only the index history_by_key (rev is the rowid): a list visits every version in
    // its range once and fetches the row of the newest version per key (`version`).
    DRAPLANE_RETURN_IF_ERROR(list_versions.Prepare(
        db.get(),
        "SELECT key, rev FROM history WHERE key >= ?1 AND key < ?2 AND rev <= ?3"
        " ORDER BY key, rev"));
    DRAPLANE_RETURN_IF_ERROR(
        version.Prepare(db.get(), "SELECT type, create_rev, value FROM history WHERE rev = ?1"));
    DRAPLANE_RETURN_IF_ERROR(history.Prepare(
        db.get(),
        "SELECT h.rev, h.key, h.type, h.create_rev, h.value, p.rev, p.value FROM history h"
        " LEFT JOIN history p ON p.rev = h.prev_rev"
        " WHERE h.rev > ?1 AND h.rev <= ?2 AND h.key >= ?3 AND h.key < ?4 ORDER BY h.rev"));
    return Status::Ok();
  }
};

// A pending write handed to the writer thread, shared by the caller waiting for its outcome and
// the writer that sets it.
struct WriteRequest {
  enum class Kind { kCreate, kUpdate, kDelete, kCompact };
  Kind kind;
  Key key;
  std::string encoded;
  std::string value;
  Revision revision = 0;  // precondition (writes) or target (compaction)

  // Writer thread. Not a std::promise, nor a condition variable: setting a promise also
  // completes the std::call_once inside it, and glibc's pthread_once always ends with a futex
  // wake; a glibc condition variable has the woken waiter issue wakes of its own. Either doubled
  // the system calls per write (on this 2-core VM, each costs microseconds). Here a write costs
  // one wake, and none when the caller has not gone to sleep yet.
  void Finish(StatusOr<ObjectPtr> outcome) {
    result = std::move(outcome);  // published by the exchange
    if (state.exchange(kFinished, std::memory_order_acq_rel) == kSleeping) {
      syscall(SYS_futex, FutexWord(), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }
  }
  // The caller (the request is shared, so it outlives Finish's wake).
  StatusOr<ObjectPtr> Wait() {
    uint32_t seen = state.load(std::memory_order_acquire);
    while (seen != kFinished) {
      if (seen == kPending &&
          !state.compare_exchange_weak(seen, kSleeping, std::memory_order_acq_rel)) {
        continue;  // `seen` holds the new value
      }
      syscall(SYS_futex, FutexWord(), FUTEX_WAIT_PRIVATE, kSleeping, nullptr, nullptr, 0);
      seen = state.load(std::memory_order_acquire);
    }
    return std::move(*result);
  }

 private:
  static constexpr uint32_t kPending = 0;
  static constexpr uint32_t kSleeping = 1;  // pending, and the caller waits in the kernel
  static constexpr uint32_t kFinished = 2;
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                std::atomic<uint32_t>::is_always_lock_free);
  uint32_t* FutexWord() { return reinterpret_cast<uint32_t*>(&state); }

  std::atomic<uint32_t> state{kPending};
  std::optional<StatusOr<ObjectPtr>> result;  // written before `state` becomes kFinished
};

// SQLite backend. Algorithm (docs/design/store.md, "sqlite"):
//   1. Callers queue WriteRequests and wait for their outcomes.
//   2. The writer thread takes every queued request, opens one transaction, and applies each in
//      order: look up the key's newest version (an earlier write of the batch, else `latest_`),
//      check the precondition, take the next revision and append a `history` row (the only copy of
//      the value; the newest version of a key is its current state). A failed precondition consumes
//      no revision.
//   3. It records the new revision in `meta` and commits; with WAL and synchronous=FULL the
//      commit returns once the log is on disk. Only then does it publish the events to the watch
//      hub (in revision order) and hand out the outcomes. A failed commit fails the whole batch.
//      Just before publishing, it applies the batch to `latest_`, the in-memory copy of every
//      live key's newest version, under an exclusive lock held only for the map updates.
//   4. Get and a List of the latest state (or of a snapshot revision equal to latest_'s) read
//      `latest_` under a shared lock: no SQLite access. Lists at older revisions and the watch
//      backfill use a pool of read connections; WAL gives each read transaction a consistent
//      snapshot while the writer proceeds.
class SqliteStore final : public Store {
 public:
  ~SqliteStore() override {
    {
      MutexLock lock(queue_mu_);
      stopping_ = true;
    }
    queue_cv_.NotifyAll();
    if (writer_thread_.joinable()) writer_thread_.join();
    readers_.clear();
    write_stmts_.reset();
    write_db_.reset();
    if (lock_fd_ >= 0) close(lock_fd_);
  }

  static StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                               const StoreOptions& options) {
    auto store = std::unique_ptr<SqliteStore>(new SqliteStore(path, options));
    DRAPLANE_RETURN_IF_ERROR(store->Init());
    return std::unique_ptr<Store>(std::move(store));
  }

  std::string_view backend() const override { return "sqlite"; }

  StatusOr<ObjectPtr> Get(const Key& key) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    const std::string encoded = internal::EncodeKey(key);
    ObjectPtr object;
    {
      ReaderLock lock(latest_mu_);
      auto it = latest_.find(encoded);
      if (it != latest_.end()) object = it->second;
    }
    if (object == nullptr) return NotFoundError(KeyToString(key) + " not found");
    return object;
  }

  StatusOr<ListResult> List(std::string_view resource, const ListOptions& options) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateResource(resource));
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateNamespace(options.ns));
    if (options.limit < 0) return InvalidArgumentError("list limit must not be negative");
    const std::string prefix = internal::ListPrefix(resource, options.ns);
    const std::string end = internal::PrefixEnd(prefix);
    std::string start = prefix;
    Revision revision = options.revision;
    bool continuing = false;
    if (!options.continue_token.empty()) {
      DRAPLANE_ASSIGN_OR_RETURN(internal::ContinuePosition position,
                                internal::DecodeContinueToken(options.continue_token, prefix));
      revision = position.revision;
      start = std::move(position.start_key);
      continuing = true;
    }
    {
      ReaderLock lock(latest_mu_);
      if (revision == 0 || revision == latest_revision_) {
        return ListLatest(start, end, options.limit);
      }
    }

    DRAPLANE_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, AcquireReader());
    ReaderLease lease(this, std::move(reader));
    Reader& r = *lease;
    DRAPLANE_RETURN_IF_ERROR(BeginRead(r));
    StatusOr<ListResult> result =
        ListInTransaction(r, start, end, revision, continuing, options.limit);
    EndRead(r);
    return result;
  }

  StatusOr<ObjectPtr> Create(const Key& key, std::string value) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    auto request = std::make_shared<WriteRequest>();
    request->kind = WriteRequest::Kind::kCreate;
    request->key = key;
    request->value = std::move(value);
    return Submit(std::move(request));
  }

  StatusOr<ObjectPtr> Update(const Key& key, std::string value,
                             const Preconditions& preconditions) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    auto request = std::make_shared<WriteRequest>();
    request->kind = WriteRequest::Kind::kUpdate;
    request->key = key;
    request->value = std::move(value);
    request->revision = preconditions.revision;
    return Submit(std::move(request));
  }

  StatusOr<ObjectPtr> Delete(const Key& key, const Preconditions& preconditions) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    auto request = std::make_shared<WriteRequest>();
    request->kind = WriteRequest::Kind::kDelete;
    request->key = key;
    request->revision = preconditions.revision;
    return Submit(std::move(request));
  }

  StatusOr<std::unique_ptr<Watcher>> Watch(std::string_view resource,
                                           WatchOptions options) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateResource(resource));
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateNamespace(options.ns));
    return hub_.Subscribe(resource, options,
                          [this](std::string_view r, Revision from, Revision to) {
                            return ReadHistory(r, from, to);
                          });
  }

  StatusOr<Revision> CurrentRevision() override { return current_.load(); }

  Status Compact(Revision revision) override {
    auto request = std::make_shared<WriteRequest>();
    request->kind = WriteRequest::Kind::kCompact;
    request->revision = revision;
    return Submit(std::move(request)).status();
  }

 private:
  // The writer connection's prepared statements.
  struct WriteStmts {
    Stmt begin, commit, rollback, append, set_revision;
  };

  class ReaderLease {
   public:
    ReaderLease(SqliteStore* store, std::unique_ptr<Reader> reader)
        : store_(store), reader_(std::move(reader)) {}
    ~ReaderLease() { store_->ReleaseReader(std::move(reader_)); }
    Reader* operator->() { return reader_.get(); }
    Reader& operator*() { return *reader_; }

   private:
    SqliteStore* store_;
    std::unique_ptr<Reader> reader_;
  };

  SqliteStore(std::string path, const StoreOptions& options)
      : path_(std::move(path)),
        retained_(options.retained_revisions > 0 ? options.retained_revisions
                                                 : kSqliteDefaultRetainedRevisions),
        max_history_bytes_(options.max_history_bytes),
        hub_options_{.backend = "sqlite",
                     .ring_limit = kRingEvents,
                     .ring_byte_limit = kRingBytes,
                     .default_queue_limit = options.watch_queue_limit,
                     .start_revision = 0},
        hub_(hub_options_) {}

  Status Init() {
    // One process per store: the revision counter lives in this process.
    const std::string lock_path = path_ + ".lock";
    lock_fd_ = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd_ < 0) {
      return UnavailableError("cannot open lock file " + lock_path + ": " + strerror(errno));
    }
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      return FailedPreconditionError("sqlite store " + path_ +
                                     " is already open in another process (" + lock_path + ")");
    }
    DRAPLANE_RETURN_IF_ERROR(RefuseEmptyFile());
    DRAPLANE_RETURN_IF_ERROR(RestrictToOwner());
    StatusOr<DbPtr> opened = OpenConnection(path_);
    if (!opened.ok()) return OpenError(opened.status());
    write_db_ = std::move(opened).value();
    // A damaged page shows only when it is read; a store started on one serves, and its
    // controllers act on, a cluster with objects missing. So every page is read first.
    if (Status s = LoadState(); !s.ok()) {
      return s.code() == StatusCode::kInternal ? OpenError(s) : s;
    }
    writer_thread_ = std::thread([this] {
      SetCurrentThreadName("sqlite-writer");
      WriterLoop();
    });
    return Status::Ok();
  }

  // The schema checked (or created), the file's pages checked, the statements prepared and the
  // latest state loaded.
  Status LoadState() {
    sqlite3* db = write_db_.get();
    DRAPLANE_RETURN_IF_ERROR(CheckOrCreateSchema(db));
    DRAPLANE_RETURN_IF_ERROR(CheckIntegrity(db));
    DRAPLANE_RETURN_IF_ERROR(Exec(db, "PRAGMA cache_size = -32768"));
    write_stmts_ = std::make_unique<WriteStmts>();
    WriteStmts& w = *write_stmts_;
    DRAPLANE_RETURN_IF_ERROR(w.begin.Prepare(db, "BEGIN IMMEDIATE"));
    DRAPLANE_RETURN_IF_ERROR(w.commit.Prepare(db, "COMMIT"));
    DRAPLANE_RETURN_IF_ERROR(w.rollback.Prepare(db, "ROLLBACK"));
    DRAPLANE_RETURN_IF_ERROR(
        w.append.Prepare(db,
                         "INSERT INTO history(rev, key, type, create_rev, value, prev_rev)"
                         " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    DRAPLANE_RETURN_IF_ERROR(
        w.set_revision.Prepare(db, "UPDATE meta SET value = ?1 WHERE name = 'revision'"));

    DRAPLANE_ASSIGN_OR_RETURN(Revision revision,
                              QueryInt(db, "SELECT value FROM meta WHERE name = 'revision'"));
    DRAPLANE_ASSIGN_OR_RETURN(Revision compacted,
                              QueryInt(db, "SELECT value FROM meta WHERE name = 'compacted'"));
    DRAPLANE_RETURN_IF_ERROR(LoadLatest(db, revision));
    current_ = revision;
    compacted_ = compacted;
    // Watches from before this open are replayed from the history table.
    hub_.AdvanceTo(revision);
    hub_.Compact(revision);
    return Status::Ok();
  }

  // PRAGMA quick_check: every page of the file read and its b-tree structure checked (not the
  // indexes against the tables, which integrity_check adds at several times the cost).
  Status CheckIntegrity(sqlite3* db) {
    Stmt stmt;
    DRAPLANE_RETURN_IF_ERROR(stmt.Prepare(db, "PRAGMA quick_check(1)"));
    const int rc = stmt.Step();
    if (rc != SQLITE_ROW) return SqliteStatus(db, rc, "PRAGMA quick_check");
    std::string verdict(stmt.BlobView(0));
    if (verdict == "ok") return Status::Ok();
    std::replace(verdict.begin(), verdict.end(), '\n', ' ');  // one line in the log
    return FailedPreconditionError("sqlite store " + path_ + " is damaged (" + verdict +
                                   "): restore it from a backup");
  }

  // An open that failed, said in an operator's terms: a damaged file refuses to start (as a file of
  // another format does), and SQLite's "unable to open database file" names what to check.
  Status OpenError(const Status& status) const {
    std::string message =
        "sqlite store " + path_ + " cannot be opened: " + std::string(status.message());
    if (status.code() == StatusCode::kInternal) {
      return FailedPreconditionError(message + " (the file is damaged: restore it from a backup)");
    }
    if (status.message().find("unable to open database file") != std::string_view::npos) {
      message += " (is its directory writable? SQLite creates " + path_ + "-wal and " + path_ +
                 "-shm beside it)";
    }
    return Status(status.code(), std::move(message));
  }

  // A store, once created, is never an empty file (its header page is written before anything
  // else), so an existing empty one with no write-ahead log is a truncated copy or a failed
  // restore: SQLite would silently start a new, empty cluster on it.
  Status RefuseEmptyFile() {
    struct stat db;
    if (stat(path_.c_str(), &db) != 0 || db.st_size != 0) return Status::Ok();
    struct stat wal;
    if (stat((path_ + "-wal").c_str(), &wal) == 0 && wal.st_size != 0) return Status::Ok();
    return FailedPreconditionError("sqlite store " + path_ +
                                   " is an empty file, which no store ever is (a truncated copy "
                                   "or a failed restore?); remove it to start an empty cluster");
  }

  // The store holds every tenant's objects: the file is created readable by its owner only, and
  // an existing one is made so (SQLite gives its WAL and shared-memory files the database file's
  // mode when it creates them; existing ones are fixed here too).
  Status RestrictToOwner() {
    int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return UnavailableError("cannot open " + path_ + ": " + strerror(errno));
    int rc = fchmod(fd, 0600);
    close(fd);
    if (rc != 0) return UnavailableError("cannot chmod " + path_ + ": " + strerror(errno));
    for (const std::string& companion : {path_ + "-wal", path_ + "-shm"}) {
      if (chmod(companion.c_str(), 0600) != 0 && errno != ENOENT) {
        return UnavailableError("cannot chmod " + companion + ": " + strerror(errno));
      }
    }
    return Status::Ok();
  }

  Status CheckOrCreateSchema(sqlite3* db) {
    // The first statement reads the header: a file that is not a database fails here.
    StatusOr<int64_t> application_id = QueryInt(db, "PRAGMA application_id");
    if (!application_id.ok()) {
      return FailedPreconditionError("sqlite store " + path_ + " cannot be read: " +
                                     std::string(application_id.status().message()));
    }
    DRAPLANE_ASSIGN_OR_RETURN(int64_t tables, QueryInt(db, "SELECT count(*) FROM sqlite_schema"));
    if (tables == 0 && *application_id == 0) {
      log::Info("sqlite store {}: new, empty store", path_);
      DRAPLANE_RETURN_IF_ERROR(Exec(db, "PRAGMA journal_mode = WAL"));
      const std::string schema =
          "BEGIN;"
          "PRAGMA application_id = " +
          std::to_string(kApplicationId) +
          ";"
          "CREATE TABLE meta(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
          "INSERT INTO meta(name, value) VALUES ('schema_version', " +
          std::to_string(kSqliteSchemaVersion) +
          "), ('revision', 0), ('compacted', 0);"
          "CREATE TABLE history(rev INTEGER PRIMARY KEY, key BLOB NOT NULL,"
          " type INTEGER NOT NULL, create_rev INTEGER NOT NULL, value BLOB, prev_rev INTEGER);"
          "CREATE INDEX history_by_key ON history(key, rev);"
          "COMMIT;";
      return Exec(db, schema.c_str());
    }
    if (*application_id != kApplicationId) {
      return FailedPreconditionError("sqlite file " + path_ + " is not a draplane store");
    }
    DRAPLANE_RETURN_IF_ERROR(Exec(db, "PRAGMA journal_mode = WAL"));
    StatusOr<int64_t> version =
        QueryInt(db, "SELECT value FROM meta WHERE name = 'schema_version'");
    if (!version.ok()) {
      return FailedPreconditionError("sqlite store " + path_ + " has no schema version: " +
                                     std::string(version.status().message()));
    }
    if (*version != kSqliteSchemaVersion) {
      return FailedPreconditionError("sqlite store " + path_ + " has schema version " +
                                     std::to_string(*version) + "; this draplane reads version " +
                                     std::to_string(kSqliteSchemaVersion));
    }
    return Status::Ok();
  }

  // ---- reads ---------------------------------------------------------------------------------

  // A page of `latest_` in [start, end) at latest_revision_.
  ListResult ListLatest(const std::string& start, const std::string& end, int64_t limit)
      DRAPLANE_REQUIRES_SHARED(latest_mu_) {
    ListResult result;
    result.revision = latest_revision_;
    auto it = latest_.lower_bound(start);
    const auto stop = latest_.lower_bound(end);
    const auto count = static_cast<int64_t>(std::distance(it, stop));
    result.objects.reserve(limit > 0 ? std::min(limit, count) : count);
    for (; it != stop; ++it) {
      if (limit > 0 && static_cast<int64_t>(result.objects.size()) == limit) {
        result.continue_token = internal::EncodeContinueToken(result.revision, it->first);
        break;
      }
      result.objects.push_back(it->second);
    }
    return result;
  }

  // Loads `latest_` at open: the newest row of every key, unless it is a delete.
  Status LoadLatest(sqlite3* db, Revision revision) {
    Stmt newest;
    DRAPLANE_RETURN_IF_ERROR(newest.Prepare(
        db,
        "SELECT h.key, h.rev, h.type, h.create_rev, h.value FROM"
        " (SELECT max(rev) AS rev FROM history GROUP BY key) n JOIN history h ON h.rev = n.rev"));
    Stmt::Scope scope(newest);
    // Nothing else runs yet; the lock is for the analysis (and costs one acquisition at open).
    WriterLock lock(latest_mu_);
    int rc;
    while ((rc = newest.Step()) == SQLITE_ROW) {
      if (newest.Int(2) == kTypeDeleted) continue;
      std::string key = newest.Blob(0);
      DRAPLANE_ASSIGN_OR_RETURN(ObjectPtr object,
                                MakeObject(key, newest.Blob(4), newest.Int(1), newest.Int(3)));
      latest_.emplace(std::move(key), std::move(object));
    }
    if (rc != SQLITE_DONE) return SqliteStatus(db, rc, "load the latest state");
    latest_revision_ = revision;
    return Status::Ok();
  }

  StatusOr<std::unique_ptr<Reader>> AcquireReader() {
    {
      MutexLock lock(readers_mu_);
      if (!readers_.empty()) {
        std::unique_ptr<Reader> reader = std::move(readers_.back());
        readers_.pop_back();
        return reader;
      }
    }
    auto reader = std::make_unique<Reader>();
    DRAPLANE_ASSIGN_OR_RETURN(reader->db, OpenConnection(path_));
    DRAPLANE_RETURN_IF_ERROR(reader->Prepare());
    return reader;
  }

  void ReleaseReader(std::unique_ptr<Reader> reader) {
    MutexLock lock(readers_mu_);
    readers_.push_back(std::move(reader));
  }

  Status BeginRead(Reader& r) {
    Stmt::Scope scope(r.begin);
    return r.begin.StepDone("begin read");
  }
  void EndRead(Reader& r) {
    Stmt::Scope scope(r.commit);
    if (!r.commit.StepDone("end read").ok()) {
      Stmt::Scope rollback(r.rollback);
      r.rollback.StepDone("rollback read").IgnoreError();  // Nothing was written.
    }
  }

  // Reads (revision, compacted) inside the current read transaction.
  StatusOr<std::pair<Revision, Revision>> ReadMeta(Reader& r) {
    Stmt::Scope scope(r.meta);
    const int rc = r.meta.Step();
    if (rc != SQLITE_ROW) return SqliteStatus(r.db.get(), rc, "read meta");
    return std::make_pair(r.meta.Int(0), r.meta.Int(1));
  }

  StatusOr<ListResult> ListInTransaction(Reader& r, const std::string& start,
                                         const std::string& end, Revision revision, bool continuing,
                                         int64_t limit) {
    DRAPLANE_ASSIGN_OR_RETURN(auto meta, ReadMeta(r));
    const auto [current, compacted] = meta;
    if (revision == 0) revision = current;
    if (revision < compacted) {
      return ExpiredError(continuing ? "the continue token's revision " + std::to_string(revision) +
                                           " has been compacted; restart the list without a "
                                           "continue token"
                                     : "revision " + std::to_string(revision) +
                                           " has been compacted (oldest is " +
                                           std::to_string(compacted) + ")");
    }
    if (revision > current) {
      return DeadlineExceededError("revision " + std::to_string(revision) +
                                   " is newer than the current revision " +
                                   std::to_string(current));
    }
    ListResult result;
    result.revision = revision;
    const bool paged = limit > 0;
    // Versions come in (key, rev) order: the last one seen of a key is its state at `revision`.
    Stmt& q = r.list_versions;
    Stmt::Scope scope(q);
    q.BindBlob(1, start);
    q.BindBlob(2, end);
    q.BindInt(3, revision);
    std::string key;      // the key whose versions are being read
    Revision newest = 0;  // its newest version so far
    bool more = false;    // a live object follows the page
    // Adds the state of `key` at `revision` to the page (nothing when deleted). False when the
    // page is full and `key` is live: it starts the next page.
    auto emit = [&]() -> StatusOr<bool> {
      Stmt& v = r.version;
      Stmt::Scope version_scope(v);
      v.BindInt(1, newest);
      const int rc = v.Step();
      if (rc != SQLITE_ROW) return SqliteStatus(r.db.get(), rc, "list: read version");
      if (v.Int(0) == kTypeDeleted) return true;
      if (paged && static_cast<int64_t>(result.objects.size()) == limit) {
        result.continue_token = internal::EncodeContinueToken(revision, key);
        return false;
      }
      DRAPLANE_ASSIGN_OR_RETURN(ObjectPtr object, MakeObject(key, v.Blob(2), newest, v.Int(1)));
      result.objects.push_back(std::move(object));
      return true;
    };
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      const std::string_view row_key = q.BlobView(0);
      if (newest != 0 && row_key != key) {
        DRAPLANE_ASSIGN_OR_RETURN(bool fits, emit());
        if (!fits) {
          more = true;
          break;
        }
      }
      if (newest == 0 || row_key != key) key.assign(row_key);
      newest = q.Int(1);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteStatus(r.db.get(), rc, "list");
    if (!more && newest != 0) DRAPLANE_RETURN_IF_ERROR(emit().status());
    return result;
  }

  // The watch backfill: events of `resource` in (from, to] from the history table.
  StatusOr<std::vector<WatchEvent>> ReadHistory(std::string_view resource, Revision from,
                                                Revision to) {
    DRAPLANE_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, AcquireReader());
    ReaderLease lease(this, std::move(reader));
    Reader& r = *lease;
    DRAPLANE_RETURN_IF_ERROR(BeginRead(r));
    StatusOr<std::vector<WatchEvent>> events = ReadHistoryInTransaction(r, resource, from, to);
    EndRead(r);
    return events;
  }

  StatusOr<std::vector<WatchEvent>> ReadHistoryInTransaction(Reader& r, std::string_view resource,
                                                             Revision from, Revision to) {
    DRAPLANE_ASSIGN_OR_RETURN(auto meta, ReadMeta(r));
    const Revision compacted = meta.second;
    if (from < compacted) {
      return ExpiredError("too old resource version: " + std::to_string(from) + " (" +
                          std::to_string(compacted) + ")");
    }
    const std::string prefix = internal::ListPrefix(resource, "");
    const std::string end = internal::PrefixEnd(prefix);
    std::vector<WatchEvent> events;
    Stmt& q = r.history;
    Stmt::Scope scope(q);
    q.BindInt(1, from);
    q.BindInt(2, to);
    q.BindBlob(3, prefix);
    q.BindBlob(4, end);
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      const Revision revision = q.Int(0);
      const std::string key = q.Blob(1);
      const int64_t type = q.Int(2);
      const Revision create_revision = q.Int(3);
      WatchEvent event;
      event.revision = revision;
      ObjectPtr prev;
      if (type != kTypeAdded) {
        if (q.IsNull(5))
          return InternalError("history row " + std::to_string(revision) +
                               " lost its previous version");
        DRAPLANE_ASSIGN_OR_RETURN(prev, MakeObject(key, q.Blob(6), q.Int(5), create_revision));
      }
      if (type == kTypeDeleted) {
        event.type = WatchEvent::Type::kDeleted;
        DRAPLANE_ASSIGN_OR_RETURN(event.object,
                                  MakeObject(key, prev->value, revision, create_revision));
      } else {
        event.type = type == kTypeAdded ? WatchEvent::Type::kAdded : WatchEvent::Type::kModified;
        DRAPLANE_ASSIGN_OR_RETURN(event.object,
                                  MakeObject(key, q.Blob(4), revision, create_revision));
      }
      event.prev_object = std::move(prev);
      events.push_back(std::move(event));
    }
    if (rc != SQLITE_DONE) return SqliteStatus(r.db.get(), rc, "read history");
    return events;
  }

  // ---- writes --------------------------------------------------------------------------------

  StatusOr<ObjectPtr> Submit(std::shared_ptr<WriteRequest> request) {
    if (request->kind != WriteRequest::Kind::kCompact) {
      request->encoded = internal::EncodeKey(request->key);
    }
    bool wake = false;
    {
      MutexLock lock(queue_mu_);
      if (stopping_) return UnavailableError("sqlite store is closing");
      queue_.push_back(request);
      // Wake the writer only when the queue reaches the length it waits for: while it gathers a
      // batch, each earlier write would wake it just to go back to sleep.
      wake = queue_.size() >= writer_waits_for_;
    }
    if (wake) queue_cv_.NotifyOne();
    return request->Wait();
  }

  void WriterLoop() {
    std::vector<std::shared_ptr<WriteRequest>> batch;
    size_t last_batch = 0;
    while (true) {
      {
        MutexLock lock(queue_mu_);
        writer_waits_for_ = 1;
        queue_cv_.Wait(
            lock, [this]() DRAPLANE_REQUIRES(queue_mu_) { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything queued has been served
        // The writers just acknowledged are usually about to write again: give them a moment
        // to join this batch rather than leave them for the next fsync (PostgreSQL's
        // commit_delay / commit_siblings). A lone writer never waits.
        if (queue_.size() < last_batch) {
          writer_waits_for_ = last_batch;
          queue_cv_.WaitFor(lock, kGatherWait, [&]() DRAPLANE_REQUIRES(queue_mu_) {
            return stopping_ || queue_.size() >= last_batch;
          });
        }
        writer_waits_for_ = std::numeric_limits<size_t>::max();  // busy: nobody wakes it
        batch.assign(std::make_move_iterator(queue_.begin()),
                     std::make_move_iterator(queue_.end()));
        queue_.clear();
      }
      last_batch = batch.size();
      size_t i = 0;
      while (i < batch.size()) {
        if (batch[i]->kind == WriteRequest::Kind::kCompact) {
          Status status = CompactTo(batch[i]->revision);
          batch[i]->Finish(status.ok() ? StatusOr<ObjectPtr>(ObjectPtr()) : status);
          ++i;
          continue;
        }
        size_t j = i;
        while (j < batch.size() && batch[j]->kind != WriteRequest::Kind::kCompact) ++j;
        CommitWrites(batch, i, j);
        i = j;
      }
      batch.clear();
      if (current_.load() - compacted_ > retained_ + std::max<int64_t>(1, retained_ / 8)) {
        Status status = CompactTo(current_.load() - retained_);
        if (!status.ok())
          log::Warning("sqlite store {}: compaction failed: {}", path_, status.ToString());
      }
      // By size: when the values written since the last compaction pass the bound, compact to
      // the revision that leaves half of them (a few large objects rewritten many times would
      // otherwise grow the file by their size for every write the count bound keeps).
      if (max_history_bytes_ > 0 && written_bytes_ > max_history_bytes_) {
        int64_t left = written_bytes_;
        Revision target = compacted_;
        for (const auto& [revision, bytes] : written_) {
          if (left <= max_history_bytes_ / 2) break;
          left -= bytes;
          target = revision;
        }
        Status status = CompactTo(target);
        if (!status.ok())
          log::Warning("sqlite store {}: compaction failed: {}", path_, status.ToString());
      }
    }
  }

  struct Applied {
    StatusOr<ObjectPtr> result = InternalError("write not applied");
    std::optional<WatchEvent> event;
  };

  // The newest committed version of `encoded` (nullptr: none), read by the writer thread without
  // latest_mu_: only the writer thread changes `latest_` (under the lock, for the readers), so
  // its own reads cannot race. The analysis cannot express a thread's ownership, hence its
  // exemption for this one read.
  ObjectPtr CommittedOnWriter(const std::string& encoded) const DRAPLANE_NO_THREAD_SAFETY_ANALYSIS {
    auto it = latest_.find(encoded);
    return it == latest_.end() ? nullptr : it->second;
  }

  // The versions written by the batch being applied, by encoded key (nullptr: deleted); they
  // shadow `latest_` until the batch commits.
  using BatchVersions = std::map<std::string_view, ObjectPtr>;

  // Applies one write inside the open transaction; `*revision` is the last assigned revision.
  // A non-OK Status means SQLite failed (the batch is rolled back); a failed precondition is an
  // OK Status with a non-OK `result`.
  Status Apply(WriteRequest& request, Revision* revision, BatchVersions& written,
               Applied* applied) {
    WriteStmts& w = *write_stmts_;
    ObjectPtr current;
    if (auto it = written.find(request.encoded); it != written.end()) {
      current = it->second;
    } else {
      current = CommittedOnWriter(request.encoded);
    }
    const bool exists = current != nullptr;
    Revision create_revision = exists ? current->create_revision : 0;
    const Revision mod_revision = exists ? current->revision : 0;
    if (request.kind == WriteRequest::Kind::kCreate && exists) {
      applied->result = AlreadyExistsError(KeyToString(request.key) + " already exists");
      return Status::Ok();
    }
    if (request.kind != WriteRequest::Kind::kCreate) {
      if (!exists) {
        applied->result = NotFoundError(KeyToString(request.key) + " not found");
        return Status::Ok();
      }
      if (request.revision != 0 && request.revision != mod_revision) {
        applied->result = ConflictError("precondition failed for " + KeyToString(request.key) +
                                        ": expected revision " + std::to_string(request.revision) +
                                        ", stored revision is " + std::to_string(mod_revision));
        return Status::Ok();
      }
    }
    const Revision next = *revision + 1;
    WatchEvent event;
    event.revision = next;
    switch (request.kind) {
      case WriteRequest::Kind::kCreate:
        create_revision = next;
        event.type = WatchEvent::Type::kAdded;
        break;
      case WriteRequest::Kind::kUpdate:
        event.type = WatchEvent::Type::kModified;
        break;
      case WriteRequest::Kind::kDelete:
        event.type = WatchEvent::Type::kDeleted;
        break;
      case WriteRequest::Kind::kCompact:
        DRAPLANE_CHECK(false);
    }
    {
      Stmt::Scope scope(w.append);
      w.append.BindInt(1, next);
      w.append.BindBlob(2, request.encoded);
      w.append.BindInt(3, event.type == WatchEvent::Type::kAdded      ? kTypeAdded
                          : event.type == WatchEvent::Type::kModified ? kTypeModified
                                                                      : kTypeDeleted);
      w.append.BindInt(4, create_revision);
      if (event.type == WatchEvent::Type::kDeleted) {
        w.append.BindNull(5);
      } else {
        w.append.BindBlob(5, request.value);
      }
      if (event.type == WatchEvent::Type::kAdded) {
        w.append.BindNull(6);
      } else {
        w.append.BindInt(6, mod_revision);
      }
      DRAPLANE_RETURN_IF_ERROR(w.append.StepDone("append history"));
    }
    *revision = next;
    if (event.type != WatchEvent::Type::kAdded) event.prev_object = std::move(current);
    if (event.type == WatchEvent::Type::kDeleted) {
      event.object = std::make_shared<Object>(
          Object{request.key, event.prev_object->value, next, create_revision});
      written[request.encoded] = nullptr;
    } else {
      event.object = std::make_shared<Object>(
          Object{request.key, std::move(request.value), next, create_revision});
      written[request.encoded] = event.object;
    }
    applied->result = event.object;
    applied->event = std::move(event);
    return Status::Ok();
  }

  // Applies batch[begin, end) in one transaction, commits, publishes, hands out the outcomes.
  void CommitWrites(std::vector<std::shared_ptr<WriteRequest>>& batch, size_t begin, size_t end) {
    WriteStmts& w = *write_stmts_;
    const Duration started = RealClock().MonotonicNow();
    std::vector<Applied> applied(end - begin);
    Revision revision = current_.load();
    Status status;
    {
      Stmt::Scope scope(w.begin);
      status = w.begin.StepDone("begin");
    }
    BatchVersions written;
    for (size_t i = begin; status.ok() && i < end; ++i) {
      status = Apply(*batch[i], &revision, written, &applied[i - begin]);
    }
    if (status.ok() && revision != current_.load()) {
      Stmt::Scope scope(w.set_revision);
      w.set_revision.BindInt(1, revision);
      status = w.set_revision.StepDone("record revision");
    }
    if (status.ok()) {
      Stmt::Scope scope(w.commit);
      status = w.commit.StepDone("commit");
    }
    if (!status.ok()) {
      Stmt::Scope scope(w.rollback);
      w.rollback.StepDone("rollback").IgnoreError();  // Fails only if nothing is open.
      log::Error("sqlite store {}: write batch failed: {}", path_, status.ToString());
      for (size_t i = begin; i < end; ++i) batch[i]->Finish(status);
      return;
    }
    // Durable: make the batch visible to Get and List before anyone learns of it (an
    // acknowledged write is then always read back, and a List's revision never runs ahead of
    // its objects).
    {
      WriterLock lock(latest_mu_);
      for (size_t i = begin; i < end; ++i) {
        const std::optional<WatchEvent>& event = applied[i - begin].event;
        if (!event.has_value()) continue;
        if (event->type == WatchEvent::Type::kDeleted) {
          latest_.erase(batch[i]->encoded);
        } else {
          latest_.insert_or_assign(std::move(batch[i]->encoded), event->object);
        }
      }
      latest_revision_ = revision;
    }
    current_.store(revision);
    std::vector<WatchEvent> events;
    events.reserve(applied.size());
    for (Applied& a : applied) {
      if (!a.event.has_value()) continue;
      const int64_t bytes = a.event->type == WatchEvent::Type::kDeleted
                                ? 0
                                : static_cast<int64_t>(a.event->object->value.size());
      written_.emplace_back(a.event->revision, bytes);
      written_bytes_ += bytes;
      events.push_back(std::move(*a.event));
    }
    internal::RunNotifies(hub_.Publish(events));
    for (size_t i = begin; i < end; ++i) {
      batch[i]->Finish(std::move(applied[i - begin].result));
    }
    const double seconds =
        std::chrono::duration<double>(RealClock().MonotonicNow() - started).count();
    Metrics().batch_size.WithLabels(std::vector<std::string>{}).Observe(end - begin);
    Metrics().commit_seconds.WithLabels(std::vector<std::string>{}).Observe(seconds);
  }

  // Compaction (writer thread). For every key written in (compacted, target]: drop its history
  // rows older than its newest row at or before `target`, and that row too when it is a delete.
  Status CompactTo(Revision target) {
    const Revision current = current_.load();
    if (target > current) {
      return InvalidArgumentError("cannot compact to revision " + std::to_string(target) +
                                  ": the current revision is " + std::to_string(current));
    }
    if (target <= compacted_) return Status::Ok();
    sqlite3* db = write_db_.get();
    Status status = Exec(db, "BEGIN IMMEDIATE");
    if (status.ok()) status = CompactInTransaction(db, target);
    if (status.ok()) status = Exec(db, "COMMIT");
    if (!status.ok()) {
      Exec(db, "ROLLBACK").IgnoreError();  // Fails only if nothing is open.
      return status;
    }
    compacted_ = target;
    while (!written_.empty() && written_.front().first <= target) {
      written_bytes_ -= written_.front().second;
      written_.pop_front();
    }
    hub_.Compact(target);
    return Status::Ok();
  }

  Status CompactInTransaction(sqlite3* db, Revision target) {
    Stmt keys, newest, drop_older, drop_row, set_compacted;
    DRAPLANE_RETURN_IF_ERROR(
        keys.Prepare(db, "SELECT DISTINCT key FROM history WHERE rev > ?1 AND rev <= ?2"));
    DRAPLANE_RETURN_IF_ERROR(newest.Prepare(
        db,
        "SELECT rev, type FROM history WHERE key = ?1 AND rev <= ?2 ORDER BY rev DESC LIMIT 1"));
    DRAPLANE_RETURN_IF_ERROR(
        drop_older.Prepare(db, "DELETE FROM history WHERE key = ?1 AND rev < ?2"));
    DRAPLANE_RETURN_IF_ERROR(drop_row.Prepare(db, "DELETE FROM history WHERE rev = ?1"));
    DRAPLANE_RETURN_IF_ERROR(
        set_compacted.Prepare(db, "UPDATE meta SET value = ?1 WHERE name = 'compacted'"));
    std::vector<std::string> changed;
    {
      Stmt::Scope scope(keys);
      keys.BindInt(1, compacted_);
      keys.BindInt(2, target);
      int rc;
      while ((rc = keys.Step()) == SQLITE_ROW) changed.push_back(keys.Blob(0));
      if (rc != SQLITE_DONE) return SqliteStatus(db, rc, "compaction: changed keys");
    }
    for (const std::string& key : changed) {
      Revision base = 0;
      bool deleted = false;
      {
        Stmt::Scope scope(newest);
        newest.BindBlob(1, key);
        newest.BindInt(2, target);
        const int rc = newest.Step();
        if (rc != SQLITE_ROW) return SqliteStatus(db, rc, "compaction: newest row");
        base = newest.Int(0);
        deleted = newest.Int(1) == kTypeDeleted;
      }
      {
        Stmt::Scope scope(drop_older);
        drop_older.BindBlob(1, key);
        drop_older.BindInt(2, base);
        DRAPLANE_RETURN_IF_ERROR(drop_older.StepDone("compaction: drop old rows"));
      }
      if (deleted) {
        Stmt::Scope scope(drop_row);
        drop_row.BindInt(1, base);
        DRAPLANE_RETURN_IF_ERROR(drop_row.StepDone("compaction: drop delete row"));
      }
    }
    Stmt::Scope scope(set_compacted);
    set_compacted.BindInt(1, target);
    return set_compacted.StepDone("compaction: record");
  }

  const std::string path_;
  const int64_t retained_;
  const int64_t max_history_bytes_;
  int lock_fd_ = -1;
  // (revision, value bytes) of the writes since the last compaction of this process, and their
  // sum (writer thread only).
  std::deque<std::pair<Revision, int64_t>> written_;
  int64_t written_bytes_ = 0;

  DbPtr write_db_;                           // writer thread only (after Init)
  std::unique_ptr<WriteStmts> write_stmts_;  // writer thread only
  Revision compacted_ = 0;                   // writer thread only (after Init)
  std::atomic<Revision> current_{0};         // written by the writer thread after each commit

  Mutex queue_mu_;
  CondVar queue_cv_;
  std::deque<std::shared_ptr<WriteRequest>> queue_ DRAPLANE_GUARDED_BY(queue_mu_);
  bool stopping_ DRAPLANE_GUARDED_BY(queue_mu_) = false;
  // The queue length the waiting writer wakes up for (max while it works).
  size_t writer_waits_for_ DRAPLANE_GUARDED_BY(queue_mu_) = std::numeric_limits<size_t>::max();
  std::thread writer_thread_;

  // The latest committed state: every live key's newest version by encoded key (one shared
  // pointer per live key to the Object the write built), and the revision it reflects. Loaded at
  // open; written by the writer thread between a batch's durable commit and its publication. The
  // writer thread, its only writer, also reads it without the lock (Apply).
  SharedMutex latest_mu_;
  std::map<std::string, ObjectPtr, std::less<>> latest_ DRAPLANE_GUARDED_BY(latest_mu_);
  Revision latest_revision_ DRAPLANE_GUARDED_BY(latest_mu_) = 0;

  Mutex readers_mu_;
  std::vector<std::unique_ptr<Reader>> readers_ DRAPLANE_GUARDED_BY(readers_mu_);  // idle ones

  internal::WatchHubOptions hub_options_;
  internal::WatchHub hub_;
};

}  // namespace

StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                                 const StoreOptions& options) {
  if (path.empty()) return InvalidArgumentError("sqlite store path is empty");
  return SqliteStore::Open(path, options);
}

}  // namespace draplane::store
