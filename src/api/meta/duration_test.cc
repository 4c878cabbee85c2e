#include "api/meta/duration.h"

#include <gtest/gtest.h>

namespace draplane::api {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ParseDurationTest, ReadsGoDurations) {
  EXPECT_EQ(*ParseDuration("90s"), seconds(90));
  EXPECT_EQ(*ParseDuration("1m30s"), seconds(90));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("2h"), hours(2));
  EXPECT_EQ(*ParseDuration("24h"), hours(24));
  EXPECT_EQ(*ParseDuration("1h30m"), minutes(90));
  EXPECT_EQ(*ParseDuration(".5m"), seconds(30));
  EXPECT_EQ(*ParseDuration("1.m"), minutes(1));
  EXPECT_EQ(*ParseDuration("300ms"), milliseconds(300));
  EXPECT_EQ(*ParseDuration("7us"), nanoseconds(7000));
  EXPECT_EQ(*ParseDuration("7\xC2\xB5s"), nanoseconds(7000));
  EXPECT_EQ(*ParseDuration("5ns"), nanoseconds(5));
  EXPECT_EQ(*ParseDuration("0"), nanoseconds(0));
  EXPECT_EQ(*ParseDuration("-0"), nanoseconds(0));
  EXPECT_EQ(*ParseDuration("0s"), nanoseconds(0));
  EXPECT_EQ(*ParseDuration("-1.5h"), -minutes(90));
  EXPECT_EQ(*ParseDuration("+3s"), seconds(3));
  // Exact to the nanosecond (no floating point): 0.1 s is 100,000,000 ns.
  EXPECT_EQ(*ParseDuration("0.1s"), nanoseconds(100'000'000));
  EXPECT_EQ(*ParseDuration("1.000000001s"), nanoseconds(1'000'000'001));
  EXPECT_EQ(*ParseDuration("9223372036854775807ns"), nanoseconds(INT64_MAX));
  EXPECT_EQ(*ParseDuration("-9223372036854775808ns"), nanoseconds(INT64_MIN));
}

TEST(ParseDurationTest, RefusesWithGosMessages) {
  EXPECT_EQ(ParseDuration("").status().message(), "time: invalid duration \"\"");
  EXPECT_EQ(ParseDuration("soon").status().message(), "time: invalid duration \"soon\"");
  EXPECT_EQ(ParseDuration("-").status().message(), "time: invalid duration \"-\"");
  EXPECT_EQ(ParseDuration(".s").status().message(), "time: invalid duration \".s\"");
  EXPECT_EQ(ParseDuration("5").status().message(), "time: missing unit in duration \"5\"");
  EXPECT_EQ(ParseDuration("1d").status().message(), "time: unknown unit \"d\" in duration \"1d\"");
  EXPECT_EQ(ParseDuration("9223372036854775808ns").status().message(),
            "time: invalid duration \"9223372036854775808ns\"");
  EXPECT_EQ(ParseDuration("3000000h").status().message(), "time: invalid duration \"3000000h\"");
  EXPECT_FALSE(ParseDuration("1h 30m").ok());
}

TEST(FormatDurationTest, WritesWhatParseDurationReads) {
  EXPECT_EQ(FormatDuration(nanoseconds(0)), "0s");
  EXPECT_EQ(FormatDuration(minutes(90)), "1h30m");
  EXPECT_EQ(FormatDuration(hours(2) + minutes(14) + seconds(5)), "2h14m5s");
  EXPECT_EQ(FormatDuration(milliseconds(250)), "250ms");
  EXPECT_EQ(FormatDuration(-seconds(90)), "-1m30s");
  EXPECT_EQ(FormatDuration(nanoseconds(999)), "0s");
  for (std::string_view text : {"1h30m", "2h14m5s", "250ms", "-1m30s", "36h"}) {
    EXPECT_EQ(FormatDuration(*ParseDuration(text)), text);
  }
}

TEST(ParseDurationTest, NonNegativeRefusesANegativeDuration) {
  EXPECT_EQ(*ParseNonNegativeDuration("0"), nanoseconds(0));
  EXPECT_EQ(*ParseNonNegativeDuration("15m"), minutes(15));
  EXPECT_EQ(ParseNonNegativeDuration("-1s").status().message(),
            "invalid duration \"-1s\": must not be negative");
  EXPECT_EQ(ParseNonNegativeDuration("1x").status().message(),
            "time: unknown unit \"x\" in duration \"1x\"");
}

}  // namespace
}  // namespace draplane::api
