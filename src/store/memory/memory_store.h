// The in-memory backend (memory://): an MVCC map with bounded history, for tests and the
// simulator (docs/design/store.md, "memory").
//
// Every object keeps its versions since the last compaction, so snapshot reads at any retained
// revision are exact; the store compacts itself to the newest `retained_revisions` revisions
// (default 10,000). Nothing is persisted.
//
// Thread-safety: safe for concurrent use (one reader-writer lock; watches fan out through
// internal::WatchHub).
#pragma once

#include <memory>

#include "store/store.h"

namespace draplane::store {

// A fresh, empty in-memory store. Prefer OpenStore("memory://"), which also records metrics.
std::unique_ptr<Store> NewMemoryStore(const StoreOptions& options = {});

}  // namespace draplane::store
