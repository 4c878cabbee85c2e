#include "common/clock.h"

#include <gtest/gtest.h>

namespace draplane {
namespace {

TEST(ManualClockTest, MovesOnlyWhenAdvanced) {
  ManualClock clock(Timestamp(std::chrono::seconds(100)));
  EXPECT_EQ(clock.Now(), Timestamp(std::chrono::seconds(100)));
  EXPECT_EQ(clock.MonotonicNow(), Duration(0));
  clock.Advance(std::chrono::milliseconds(1500));
  EXPECT_EQ(clock.Now(), Timestamp(std::chrono::milliseconds(101500)));
  EXPECT_EQ(clock.MonotonicNow(), std::chrono::milliseconds(1500));
}

TEST(RealClockTest, MonotonicNeverGoesBack) {
  Duration a = RealClock().MonotonicNow();
  Duration b = RealClock().MonotonicNow();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace draplane
