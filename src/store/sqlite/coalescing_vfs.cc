#include "store/sqlite/coalescing_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace draplane::store::internal {
namespace {

constexpr char kVfsName[] = "draplane-coalescing-wal";
// At most this many bytes wait in memory; a larger commit is written in several calls.
constexpr size_t kPendingLimit = size_t{1} << 20;
// The unix VFS writes at most 128 KiB - 1 bytes per call (seekAndWriteFd masks the length with
// 0x1ffff, and a longer write fails as SQLITE_FULL), so pending bytes go out in pieces of this.
constexpr size_t kMaxWrite = 124 * 1024;

// A WAL file: our methods in front of the default VFS's file, which lives in the same
// allocation (szOsFile covers both).
struct WalFile {
  sqlite3_file base;             // base.pMethods = &wal_methods
  sqlite3_file* real;            // the default VFS's file, after this struct
  char* pending;                 // kPendingLimit bytes, allocated at the first write
  size_t pending_size;           // bytes waiting
  sqlite3_int64 pending_offset;  // file offset of pending[0]
};

constexpr size_t kRealFileOffset = (sizeof(WalFile) + 15) / 16 * 16;

sqlite3_vfs* real_vfs = nullptr;
sqlite3_vfs vfs;
sqlite3_io_methods wal_methods;

WalFile* Wal(sqlite3_file* file) { return reinterpret_cast<WalFile*>(file); }
const sqlite3_io_methods* Real(WalFile* wal) { return wal->real->pMethods; }

// Writes `size` bytes at `offset`; `*written` is how many of them are in the file.
int WriteThrough(WalFile* wal, const char* data, size_t size, sqlite3_int64 offset,
                 size_t* written) {
  *written = 0;
  while (*written < size) {
    const size_t piece = std::min(kMaxWrite, size - *written);
    const int rc = Real(wal)->xWrite(wal->real, data + *written, static_cast<int>(piece),
                                     offset + static_cast<sqlite3_int64>(*written));
    if (rc != SQLITE_OK) return rc;
    *written += piece;
  }
  return SQLITE_OK;
}

// Writes the pending bytes. What could not be written stays pending, so no byte SQLite wrote is
// ever lost: the flush is retried by the next call that needs it, and a commit's xSync fails
// until it succeeds.
int Flush(WalFile* wal) {
  size_t written = 0;
  const int rc = WriteThrough(wal, wal->pending, wal->pending_size, wal->pending_offset, &written);
  if (written > 0 && written < wal->pending_size) {
    std::memmove(wal->pending, wal->pending + written, wal->pending_size - written);
  }
  wal->pending_size -= written;
  wal->pending_offset += static_cast<sqlite3_int64>(written);
  return rc;
}

int Close(sqlite3_file* file) {
  WalFile* wal = Wal(file);
  const int flushed = Flush(wal);
  const int closed = Real(wal)->xClose(wal->real);
  delete[] wal->pending;
  wal->pending = nullptr;
  return flushed != SQLITE_OK ? flushed : closed;
}

int Read(sqlite3_file* file, void* data, int amount, sqlite3_int64 offset) {
  WalFile* wal = Wal(file);
  const int rc = Flush(wal);
  if (rc != SQLITE_OK) return rc;
  return Real(wal)->xRead(wal->real, data, amount, offset);
}

int Write(sqlite3_file* file, const void* data, int amount, sqlite3_int64 offset) {
  WalFile* wal = Wal(file);
  const size_t size = static_cast<size_t>(amount);
  if (wal->pending_size > 0 &&
      offset == wal->pending_offset + static_cast<sqlite3_int64>(wal->pending_size) &&
      wal->pending_size + size <= kPendingLimit) {
    std::memcpy(wal->pending + wal->pending_size, data, size);
    wal->pending_size += size;
    return SQLITE_OK;
  }
  const int rc = Flush(wal);
  if (rc != SQLITE_OK) return rc;
  if (wal->pending == nullptr) wal->pending = new (std::nothrow) char[kPendingLimit];
  if (wal->pending == nullptr || size > kPendingLimit) {
    size_t written = 0;
    return WriteThrough(wal, static_cast<const char*>(data), size, offset, &written);
  }
  std::memcpy(wal->pending, data, size);
  wal->pending_size = size;
  wal->pending_offset = offset;
  return SQLITE_OK;
}

int Truncate(sqlite3_file* file, sqlite3_int64 size) {
  WalFile* wal = Wal(file);
  const int rc = Flush(wal);
  return rc != SQLITE_OK ? rc : Real(wal)->xTruncate(wal->real, size);
}

int Sync(sqlite3_file* file, int flags) {
  WalFile* wal = Wal(file);
  const int rc = Flush(wal);
  return rc != SQLITE_OK ? rc : Real(wal)->xSync(wal->real, flags);
}

int FileSize(sqlite3_file* file, sqlite3_int64* size) {
  WalFile* wal = Wal(file);
  const int rc = Flush(wal);
  return rc != SQLITE_OK ? rc : Real(wal)->xFileSize(wal->real, size);
}

int Lock(sqlite3_file* file, int level) { return Real(Wal(file))->xLock(Wal(file)->real, level); }
int Unlock(sqlite3_file* file, int level) {
  return Real(Wal(file))->xUnlock(Wal(file)->real, level);
}
int CheckReservedLock(sqlite3_file* file, int* out) {
  return Real(Wal(file))->xCheckReservedLock(Wal(file)->real, out);
}

int FileControl(sqlite3_file* file, int op, void* arg) {
  WalFile* wal = Wal(file);
  const int rc = Flush(wal);
  return rc != SQLITE_OK ? rc : Real(wal)->xFileControl(wal->real, op, arg);
}

int SectorSize(sqlite3_file* file) { return Real(Wal(file))->xSectorSize(Wal(file)->real); }
int DeviceCharacteristics(sqlite3_file* file) {
  return Real(Wal(file))->xDeviceCharacteristics(Wal(file)->real);
}

// SQLite keeps the WAL index in the database file's shared memory, never in the WAL file, and
// never maps the WAL; these forward for completeness, where the real file has the method.
int ShmMap(sqlite3_file* file, int region, int size, int extend, void volatile** out) {
  WalFile* wal = Wal(file);
  if (Real(wal)->iVersion < 2) return SQLITE_IOERR_SHMMAP;
  return Real(wal)->xShmMap(wal->real, region, size, extend, out);
}
int ShmLock(sqlite3_file* file, int offset, int n, int flags) {
  WalFile* wal = Wal(file);
  if (Real(wal)->iVersion < 2) return SQLITE_IOERR_SHMLOCK;
  return Real(wal)->xShmLock(wal->real, offset, n, flags);
}
void ShmBarrier(sqlite3_file* file) {
  WalFile* wal = Wal(file);
  if (Real(wal)->iVersion >= 2) Real(wal)->xShmBarrier(wal->real);
}
int ShmUnmap(sqlite3_file* file, int delete_flag) {
  WalFile* wal = Wal(file);
  if (Real(wal)->iVersion < 2) return SQLITE_OK;
  return Real(wal)->xShmUnmap(wal->real, delete_flag);
}

int Fetch(sqlite3_file* file, sqlite3_int64 offset, int amount, void** out) {
  WalFile* wal = Wal(file);
  *out = nullptr;  // "no mapping": SQLite reads instead
  const int rc = Flush(wal);
  if (rc != SQLITE_OK || Real(wal)->iVersion < 3) return rc;
  return Real(wal)->xFetch(wal->real, offset, amount, out);
}
int Unfetch(sqlite3_file* file, sqlite3_int64 offset, void* page) {
  WalFile* wal = Wal(file);
  if (Real(wal)->iVersion < 3) return SQLITE_OK;
  return Real(wal)->xUnfetch(wal->real, offset, page);
}

int Open(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  if ((flags & SQLITE_OPEN_WAL) == 0)
    return real_vfs->xOpen(real_vfs, name, file, flags, out_flags);
  WalFile* wal = Wal(file);
  wal->base.pMethods = nullptr;  // SQLite calls xClose only when pMethods is set
  wal->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + kRealFileOffset);
  wal->real->pMethods = nullptr;
  wal->pending = nullptr;
  wal->pending_size = 0;
  wal->pending_offset = 0;
  const int rc = real_vfs->xOpen(real_vfs, name, wal->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    if (wal->real->pMethods != nullptr) wal->real->pMethods->xClose(wal->real);
    return rc;
  }
  wal->base.pMethods = &wal_methods;
  return SQLITE_OK;
}

bool Register() {
  real_vfs = sqlite3_vfs_find(nullptr);
  if (real_vfs == nullptr) return false;
  // Version 3 (shared memory and memory maps); calls the real file lacks are answered above.
  wal_methods = sqlite3_io_methods{
      .iVersion = 3,
      .xClose = Close,
      .xRead = Read,
      .xWrite = Write,
      .xTruncate = Truncate,
      .xSync = Sync,
      .xFileSize = FileSize,
      .xLock = Lock,
      .xUnlock = Unlock,
      .xCheckReservedLock = CheckReservedLock,
      .xFileControl = FileControl,
      .xSectorSize = SectorSize,
      .xDeviceCharacteristics = DeviceCharacteristics,
      .xShmMap = ShmMap,
      .xShmLock = ShmLock,
      .xShmBarrier = ShmBarrier,
      .xShmUnmap = ShmUnmap,
      .xFetch = Fetch,
      .xUnfetch = Unfetch,
  };
  vfs = *real_vfs;
  vfs.pNext = nullptr;
  vfs.zName = kVfsName;
  vfs.szOsFile = static_cast<int>(kRealFileOffset) + real_vfs->szOsFile;
  vfs.xOpen = Open;
  return sqlite3_vfs_register(&vfs, /*makeDflt=*/0) == SQLITE_OK;
}

}  // namespace

const char* CoalescingWalVfs() {
  static const bool registered = Register();
  return registered ? kVfsName : nullptr;
}

}  // namespace draplane::store::internal
