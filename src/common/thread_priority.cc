#include "common/thread_priority.h"

#include <pthread.h>
#include <sched.h>

namespace draplane {

bool SetCurrentThreadPriority(ThreadPriority priority) {
  // Unprivileged threads may enter SCHED_IDLE and, since Linux 2.6.39, leave it again for
  // SCHED_OTHER at nice 0 (sched(7)); both need a static priority of 0.
  sched_param param{};
  param.sched_priority = 0;
  const int policy = priority == ThreadPriority::kBackground ? SCHED_IDLE : SCHED_OTHER;
  return pthread_setschedparam(pthread_self(), policy, &param) == 0;
}

}  // namespace draplane
