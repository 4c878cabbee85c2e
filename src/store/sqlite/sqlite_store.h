// The SQLite backend (sqlite://PATH): the embedded default store (docs/design/store.md,
// "sqlite").
//
// One file in WAL mode with synchronous=FULL; one writer thread commits concurrent writes in
// shared transactions (group commit) and acknowledges a write only after its transaction is
// durable. A history table keeps every write since the last compaction for snapshot reads and
// watch replay; the store compacts itself to the newest `retained_revisions` revisions (default
// 100,000). The schema version is recorded in the file and checked at open. A lock file
// (PATH.lock) keeps a second process from opening the same store. Every live object's newest
// version is also held in memory (loaded at open, updated after each durable commit, before its
// acknowledgement): Get and Lists of the latest state never touch SQLite.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "store/store.h"

namespace draplane::store {

// The schema version this build writes and accepts.
inline constexpr int64_t kSqliteSchemaVersion = 2;

// Opens (creating if absent) the store in `path`. FailedPrecondition when the file is not a
// draplane store, has another schema version, or is open in another process; Unavailable on I/O
// errors. Prefer OpenStore("sqlite://PATH"), which also records metrics.
StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                                 const StoreOptions& options = {});

}  // namespace draplane::store
