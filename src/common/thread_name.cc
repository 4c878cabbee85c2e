#include "common/thread_name.h"

#include <pthread.h>

#include <string>

namespace draplane {

void SetCurrentThreadName(std::string_view name) {
  // The kernel's limit is 16 bytes including the terminator; longer names make the call fail.
  std::string truncated(name.substr(0, 15));
  pthread_setname_np(pthread_self(), truncated.c_str());
}

}  // namespace draplane
