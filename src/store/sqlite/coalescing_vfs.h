// A SQLite VFS for the store's connections that writes each WAL commit with one pwrite(2)
// (docs/design/store.md, "sqlite").
//
// SQLite appends a WAL frame as two writes, its 24-byte header and then the page, so a commit
// of N pages is 2N pwrite calls whose unaligned ranges touch about 3N page-cache folios. This VFS
// forwards everything to SQLite's default VFS, except that a WAL file's consecutive writes are
// gathered in memory and written together before anything can observe the file: before a read,
// sync, truncate, size query, file control, memory map or close of that file handle, and when a
// write is not contiguous with the pending ones.
//
// Correct only with PRAGMA synchronous=FULL on every connection that writes: a commit then syncs
// the WAL (xSync, which writes the pending bytes first) before it publishes the new frames in the
// WAL index, so no other connection can be told about frames that are still in this buffer.
//
// Thread-safety: registration is thread-safe; a file handle is used by one connection at a time
// (SQLite's own rule).
#pragma once

namespace draplane::store::internal {

// The name of the VFS (registered once per process) to pass to sqlite3_open_v2, or nullptr
// (SQLite's default VFS) when it could not be registered.
const char* CoalescingWalVfs();

}  // namespace draplane::store::internal
