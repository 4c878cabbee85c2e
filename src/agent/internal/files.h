// Small file-system helpers of the agent (state dir, CDI specs, checkpoint), private to it.
//
// WriteFileAtomically writes `<path>.tmp-<pid>`, fsyncs it, renames it over `path` and fsyncs
// the directory, so a reader (the container runtime, a restarted agent) sees either the old or
// the new content, never a torn file — also when the agent is killed half-way.
//
// Thread-safety: stateless functions; concurrent writers of one path must be serialised by the
// caller.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace draplane::agent::internal {

// Creates `dir` and its parents (mode 0755). InvalidArgument naming the path on failure.
Status MakeDirs(const std::string& dir);
// The whole file; NotFound when it does not exist, InvalidArgument on other read errors.
StatusOr<std::string> ReadFile(const std::string& path);
Status WriteFileAtomically(const std::string& path, const std::string& content);
// Removes a file; OK when it does not exist.
Status RemoveFile(const std::string& path);
// Names (not paths) of the regular files in `dir`, sorted; empty when `dir` does not exist.
StatusOr<std::vector<std::string>> ListFiles(const std::string& dir);
// A signature of the file's identity and content version (size and modification time), empty
// when it cannot be stat'ed; used to notice edits.
std::string FileSignature(const std::string& path);

// An exclusive advisory lock (flock) on a lock file, held until the object is destroyed. It
// serialises processes that share a state dir (two instances of a kubelet plugin during a rolling
// update); within one process the caller's mutex comes first.
class FileLock {
 public:
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  friend StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path);
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

// Creates `path` if missing and blocks until the lock is held. InvalidArgument naming the path
// when the file cannot be opened or locked.
StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path);

}  // namespace draplane::agent::internal
