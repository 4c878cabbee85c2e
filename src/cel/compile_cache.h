// A bounded, thread-safe cache of compiled programs keyed by expression text, for the allocator
// and the server (dynamic-resource-allocation cel/cache.go: an LRU; compile errors are not
// cached, so a failing expression is recompiled and reports its error every time).
//
// Thread-safety: all methods are thread-safe. Two threads that miss on the same expression may
// both compile it; one result is kept.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cel/environment.h"
#include "cel/program.h"
#include "common/mutex.h"
#include "common/status.h"

namespace draplane::cel {

class CompileCache {
 public:
  // Caches up to `capacity` programs compiled in `env` with `options`.
  CompileCache(std::shared_ptr<const Environment> env, size_t capacity,
               CompileOptions options = {});
  CompileCache(const CompileCache&) = delete;
  CompileCache& operator=(const CompileCache&) = delete;

  // The cached program for `expression`, compiling it on a miss. Compile errors are returned
  // (InvalidArgument, upstream's text) and not cached.
  StatusOr<std::shared_ptr<const Program>> GetOrCompile(std::string_view expression);

  size_t size() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const Program>>;
  std::shared_ptr<const Environment> env_;
  const size_t capacity_;
  const CompileOptions options_;
  mutable Mutex mu_;
  std::list<Entry> lru_ DRAPLANE_GUARDED_BY(mu_);  // most recent first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_ DRAPLANE_GUARDED_BY(mu_);
};

}  // namespace draplane::cel
