#include "cel/compile_cache.h"

#include <utility>

#include "common/mutex.h"

namespace draplane::cel {

CompileCache::CompileCache(std::shared_ptr<const Environment> env, size_t capacity,
                           CompileOptions options)
    : env_(std::move(env)), capacity_(capacity == 0 ? 1 : capacity), options_(options) {}

StatusOr<std::shared_ptr<const Program>> CompileCache::GetOrCompile(std::string_view expression) {
  {
    MutexLock lock(mu_);
    auto it = index_.find(expression);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  StatusOr<std::shared_ptr<const Program>> compiled = env_->Compile(expression, options_);
  if (!compiled.ok()) return compiled;
  MutexLock lock(mu_);
  auto it = index_.find(expression);
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  lru_.emplace_front(std::string(expression), *compiled);
  index_[lru_.front().first] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return *compiled;
}

size_t CompileCache::size() const {
  MutexLock lock(mu_);
  return lru_.size();
}

}  // namespace draplane::cel
