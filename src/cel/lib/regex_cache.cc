#include "cel/lib/regex_cache.h"

#include <list>
#include <unordered_map>
#include <utility>

#include "common/mutex.h"

namespace draplane::cel::internal {
namespace {

constexpr size_t kCapacity = 256;

class RegexCache {
 public:
  std::shared_ptr<const RE2> Get(std::string_view pattern) {
    MutexLock lock(mu_);
    auto it = index_.find(std::string(pattern));
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  void Put(std::string_view pattern, std::shared_ptr<const RE2> re) {
    MutexLock lock(mu_);
    std::string key(pattern);
    if (index_.count(key)) return;
    lru_.emplace_front(key, std::move(re));
    index_[key] = lru_.begin();
    if (lru_.size() > kCapacity) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }

 private:
  Mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<const RE2>>> lru_ DRAPLANE_GUARDED_BY(mu_);
  std::unordered_map<std::string, decltype(lru_)::iterator> index_ DRAPLANE_GUARDED_BY(mu_);
};

RegexCache& Cache() {
  static RegexCache* cache = new RegexCache();
  return *cache;
}

}  // namespace

std::shared_ptr<const RE2> CompileRegex(std::string_view pattern, std::string* error) {
  if (auto cached = Cache().Get(pattern)) return cached;
  RE2::Options options;
  options.set_log_errors(false);
  options.set_encoding(RE2::Options::EncodingUTF8);
  auto re = std::make_shared<const RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    *error = "error parsing regexp: " + re->error();
    return nullptr;
  }
  Cache().Put(pattern, re);
  return re;
}

std::vector<std::string_view> FindAllMatches(const RE2& re, std::string_view s, int64_t n) {
  std::vector<std::string_view> out;
  re2::StringPiece input(s.data(), s.size());
  size_t pos = 0;
  size_t prev_end = std::string_view::npos;
  while (pos <= s.size() && (n < 0 || static_cast<int64_t>(out.size()) < n)) {
    re2::StringPiece m;
    if (!re.Match(input, pos, s.size(), RE2::UNANCHORED, &m, 1)) break;
    size_t start = static_cast<size_t>(m.data() - s.data());
    size_t end = start + m.size();
    // Width of the code point at `start`, to step over it after an empty match.
    size_t step = 1;
    while (start + step < s.size() &&
           (static_cast<unsigned char>(s[start + step]) & 0xC0) == 0x80) {
      ++step;
    }
    if (m.empty() && start == prev_end) {
      if (start >= s.size()) break;
      pos = start + step;
      continue;
    }
    out.push_back(s.substr(start, end - start));
    prev_end = end;
    pos = end == start ? start + step : end;
  }
  return out;
}

}  // namespace draplane::cel::internal
