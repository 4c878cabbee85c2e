// RE2 compilation for CEL regular expressions (`matches`, `find`, `findAll`), with Go regexp
// (RE2 syntax) semantics as cel-go uses. Constant patterns are compiled once by the planner;
// dynamic patterns go through a small bounded cache shared by all threads.
//
// Thread-safety: CompileRegex is thread-safe; compiled RE2 objects are immutable.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace draplane::cel::internal {

// The compiled pattern, or null with `*error` set to "error parsing regexp: ...".
std::shared_ptr<const RE2> CompileRegex(std::string_view pattern, std::string* error);

// Go `regexp.FindAllString(s, n)`: successive non-overlapping leftmost matches, skipping an
// empty match adjacent to the previous match; n < 0 means all.
std::vector<std::string_view> FindAllMatches(const RE2& re, std::string_view s, int64_t n);

}  // namespace draplane::cel::internal
