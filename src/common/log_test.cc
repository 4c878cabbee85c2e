#include "common/log.h"

#include <gtest/gtest.h>

namespace draplane::log {
namespace {

TEST(RateLimiterTest, LetsOneLinePerIntervalThroughAndCountsTheRest) {
  ManualClock clock;
  RateLimiter limiter(std::chrono::seconds(1), clock);
  uint64_t suppressed = 99;
  EXPECT_TRUE(limiter.Allow(&suppressed));
  EXPECT_EQ(suppressed, 0u);
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(limiter.Allow(&suppressed));
  clock.Advance(std::chrono::milliseconds(999));
  EXPECT_FALSE(limiter.Allow(&suppressed));
  clock.Advance(std::chrono::milliseconds(1));
  EXPECT_TRUE(limiter.Allow(&suppressed));
  EXPECT_EQ(suppressed, 1001u);
  EXPECT_FALSE(limiter.Allow(&suppressed));
}

}  // namespace
}  // namespace draplane::log
