// Names the calling thread so that `top -H`, `perf report --sort comm` and debuggers show which
// component a thread belongs to. Linux truncates names to 15 bytes; longer names are cut.
#pragma once

#include <string_view>

namespace draplane {

void SetCurrentThreadName(std::string_view name);

}  // namespace draplane
