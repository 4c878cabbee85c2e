// A hash for std::unordered_map / unordered_set keyed by std::string that also accepts
// std::string_view and const char* lookups without building a std::string (C++20 heterogeneous
// lookup; use it with std::equal_to<>).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace draplane {

// A string with its StringHash computed once: a key looked up many times (a node's name, once
// per candidate node per scheduling cycle) is hashed once. The view must outlive the lookups.
class HashedString {
 public:
  explicit HashedString(std::string_view s) : view_(s), hash_(std::hash<std::string_view>()(s)) {}
  std::string_view view() const { return view_; }
  size_t hash() const { return hash_; }
  friend bool operator==(const HashedString& a, std::string_view b) { return a.view_ == b; }

 private:
  std::string_view view_;
  size_t hash_;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  size_t operator()(const HashedString& s) const { return s.hash(); }
};

}  // namespace draplane
