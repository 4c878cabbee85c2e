// A hash for std::unordered_map / unordered_set keyed by std::string that also accepts
// std::string_view and const char* lookups without building a std::string (C++20 heterogeneous
// lookup; use it with std::equal_to<>).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace draplane {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

}  // namespace draplane
