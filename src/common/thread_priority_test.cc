#include "common/thread_priority.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace draplane {
namespace {

// A thread may go to the background and come back to normal work without privileges (the
// decision recorder does both as its queue empties and fills).
TEST(ThreadPriorityTest, AThreadGoesToTheBackgroundAndComesBack) {
  std::thread worker([] {
    ASSERT_TRUE(SetCurrentThreadPriority(ThreadPriority::kBackground));
    EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE);
    ASSERT_TRUE(SetCurrentThreadPriority(ThreadPriority::kNormal));
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
  });
  worker.join();
  // The calling thread is untouched.
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
}

}  // namespace
}  // namespace draplane
