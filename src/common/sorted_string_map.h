// A string-keyed map listed in key order and looked up by hash: a std::map for the order (lists,
// paging, deterministic iteration) with a hashed index of its nodes beside it, for stores whose
// lookups by key far outnumber their inserts (an informer's cache, the in-memory API's objects:
// most writes and events update an object that is there). A lookup costs a hash and one key
// comparison instead of a walk of ~log2(n) nodes, each a likely cache miss and a comparison of
// keys that share long prefixes ("namespace/name-"). Inserts and erases keep both.
//
// Iterators are the std::map's and stay valid while their element is there; keys cannot change
// (the index holds views of them). A copy builds its own index; a move keeps the nodes, and so
// the index (moved and swapped maps keep their iterators valid).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace draplane {

template <typename V>
class SortedStringMap {
  using Ordered = std::map<std::string, V, std::less<>>;

 public:
  using iterator = typename Ordered::iterator;
  using const_iterator = typename Ordered::const_iterator;
  using value_type = typename Ordered::value_type;

  SortedStringMap() = default;
  SortedStringMap(const SortedStringMap& other) : ordered_(other.ordered_) { Reindex(); }
  SortedStringMap(SortedStringMap&& other) noexcept = default;
  SortedStringMap& operator=(const SortedStringMap& other) {
    if (this != &other) {
      ordered_ = other.ordered_;
      Reindex();
    }
    return *this;
  }
  SortedStringMap& operator=(SortedStringMap&& other) noexcept {
    SortedStringMap taken(std::move(other));
    ordered_.swap(taken.ordered_);
    index_.swap(taken.index_);
    return *this;
  }

  iterator find(std::string_view key) {
    auto it = index_.find(key);
    return it == index_.end() ? ordered_.end() : it->second;
  }
  const_iterator find(std::string_view key) const {
    auto it = index_.find(key);
    return it == index_.end() ? ordered_.cend() : const_iterator(it->second);
  }
  bool contains(std::string_view key) const { return index_.contains(key); }

  // Inserts `key` with a value made from `args` unless it is there; as std::map::try_emplace.
  // The key is copied only when inserted.
  template <typename... Args>
  std::pair<iterator, bool> try_emplace(std::string_view key, Args&&... args) {
    if (auto it = index_.find(key); it != index_.end()) return {it->second, false};
    auto it = ordered_.try_emplace(std::string(key), std::forward<Args>(args)...).first;
    index_.emplace(std::string_view(it->first), it);
    return {it, true};
  }
  iterator erase(iterator it) {
    index_.erase(std::string_view(it->first));
    return ordered_.erase(it);
  }
  void clear() {
    index_.clear();
    ordered_.clear();
  }

  // The first key not before `key`, in key order (a range of keys sharing a prefix).
  iterator lower_bound(std::string_view key) { return ordered_.lower_bound(key); }
  const_iterator lower_bound(std::string_view key) const { return ordered_.lower_bound(key); }
  // The first key after `key`, in key order (paging).
  iterator upper_bound(std::string_view key) { return ordered_.upper_bound(key); }
  const_iterator upper_bound(std::string_view key) const { return ordered_.upper_bound(key); }

  iterator begin() { return ordered_.begin(); }
  iterator end() { return ordered_.end(); }
  const_iterator begin() const { return ordered_.begin(); }
  const_iterator end() const { return ordered_.end(); }
  size_t size() const { return ordered_.size(); }
  bool empty() const { return ordered_.empty(); }

 private:
  void Reindex() {
    index_.clear();
    index_.reserve(ordered_.size());
    for (auto it = ordered_.begin(); it != ordered_.end(); ++it) index_.emplace(it->first, it);
  }

  Ordered ordered_;
  // Keys are views of `ordered_`'s node keys, which do not move while the node exists.
  std::unordered_map<std::string_view, iterator> index_;
};

}  // namespace draplane
