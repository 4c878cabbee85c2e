#include "common/check.h"

#include <cstdio>
#include <cstdlib>

namespace draplane::internal {

void CheckFailed(const char* condition, const char* file, int line, const char* message) {
  std::fprintf(stderr, "FATAL: %s:%d: check failed: %s%s%s\n", file, line, condition,
               message[0] != '\0' ? ": " : "", message);
  std::fflush(stderr);
  std::abort();
}

}  // namespace draplane::internal
