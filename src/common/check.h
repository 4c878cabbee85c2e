// Invariant checks (STYLE.md, "Errors").
//
// DRAPLANE_CHECK guards invariants whose violation would corrupt state; it is always on and
// aborts with the condition, file and line. DRAPLANE_DCHECK is compiled out with NDEBUG.
// Neither may ever be triggered by user input: bad input gets a Status.
#pragma once

namespace draplane::internal {
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line,
                              const char* message);
}  // namespace draplane::internal

#define DRAPLANE_CHECK(condition)                                                            \
  do {                                                                                       \
    if (!(condition)) ::draplane::internal::CheckFailed(#condition, __FILE__, __LINE__, ""); \
  } while (false)

#define DRAPLANE_CHECK_MSG(condition, message)                                                    \
  do {                                                                                            \
    if (!(condition)) ::draplane::internal::CheckFailed(#condition, __FILE__, __LINE__, message); \
  } while (false)

#ifdef NDEBUG
#define DRAPLANE_DCHECK(condition) \
  do {                             \
  } while (false && (condition))
#else
#define DRAPLANE_DCHECK(condition) DRAPLANE_CHECK(condition)
#endif
