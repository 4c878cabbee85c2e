// The calling thread's CPU scheduling class: background work that may wait for idle CPU (Linux
// SCHED_IDLE) or normal work. Best effort: false when the kernel refused (the thread keeps
// its class); callers treat background as a preference, never as a guarantee.
#pragma once

namespace draplane {

enum class ThreadPriority {
  kNormal,      // SCHED_OTHER, the default
  kBackground,  // SCHED_IDLE: runs when no normal thread wants the CPU
};

bool SetCurrentThreadPriority(ThreadPriority priority);

}  // namespace draplane
