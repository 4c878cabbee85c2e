#include "api/meta/time.h"

#include <gtest/gtest.h>

#include <limits>

namespace draplane::api {
namespace {

TEST(TimeTest, ParsesRfc3339AndKeepsTheText) {
  StatusOr<Time> t = Time::Parse("2008-01-01T01:01:01Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->text(), "2008-01-01T01:01:01Z");
  EXPECT_EQ(t->unix_seconds(), 1199149261);
  EXPECT_EQ(t->nanos(), 0);
  StatusOr<Time> offset = Time::Parse("2008-01-01T03:01:01.5+02:00");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(offset->unix_seconds(), 1199149261);
  EXPECT_EQ(offset->nanos(), 500'000'000);
  EXPECT_EQ(offset->text(), "2008-01-01T03:01:01.5+02:00");
}

TEST(TimeTest, RejectsWhatGoRejects) {
  for (const char* bad : {"", "2008-01-01", "2008-01-01 01:01:01Z", "2008-13-01T01:01:01Z",
                          "2009-02-29T01:01:01Z", "2008-01-01T24:00:00Z", "2008-01-01T01:01:01",
                          "2008-01-01T01:01:01.Z", "2008-01-01T01:01:01.1234567890Z",
                          "2008-01-01T01:01:01+0200", "2008-01-01T01:01:01Zjunk"}) {
    EXPECT_FALSE(Time::Parse(bad).ok()) << bad;
  }
  EXPECT_TRUE(Time::Parse("2008-02-29T01:01:01Z").ok());
}

TEST(TimeTest, FormatsLikeMetav1) {
  const Timestamp ts(std::chrono::nanoseconds(int64_t{1199149261} * 1'000'000'000 + 123'456'789));
  EXPECT_EQ(Time::FromTimestamp(ts).text(), "2008-01-01T01:01:01Z");
  EXPECT_EQ(Time::MicroFromTimestamp(ts).text(), "2008-01-01T01:01:01.123456Z");
  EXPECT_EQ(Time::MicroFromTimestamp(ts).nanos(), 123'456'000);
  EXPECT_EQ(Time::MicroFromTimestamp(ts).ToTimestamp(),
            Timestamp(std::chrono::nanoseconds(int64_t{1199149261} * 1'000'000'000 + 123'456'000)));
  const Timestamp before_epoch(std::chrono::seconds(-1));
  EXPECT_EQ(Time::FromTimestamp(before_epoch).text(), "1969-12-31T23:59:59Z");
  EXPECT_EQ(Time::MicroFromTimestamp(before_epoch + std::chrono::microseconds(7)).text(),
            "1969-12-31T23:59:59.000007Z");
  // A Timestamp's first and last instants.
  EXPECT_EQ(Time::FromTimestamp(Timestamp::max()).text(), "2262-04-11T23:47:16Z");
  EXPECT_EQ(Time::FromTimestamp(Timestamp::min()).text(), "1677-09-21T00:12:43Z");
}

TEST(TimeTest, CoversRfc3339YearsBeyondTimestamp) {
  StatusOr<Time> early = Time::Parse("0001-01-01T00:00:00Z");
  StatusOr<Time> late = Time::Parse("9999-12-31T23:59:59.999999999Z");
  ASSERT_TRUE(early.ok() && late.ok());
  EXPECT_EQ(early->unix_seconds(), -62135596800);
  EXPECT_EQ(late->unix_seconds(), 253402300799);
  EXPECT_LT(*early, *late);
  EXPECT_EQ(late->ToTimestamp(), Timestamp::max());
  EXPECT_EQ(early->ToTimestamp(), Timestamp::min());
}

TEST(TimeTest, ComparesInstants) {
  StatusOr<Time> a = Time::Parse("2008-01-01T01:01:01Z");
  StatusOr<Time> b = Time::Parse("2008-01-01T02:01:01+01:00");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_LT(Time(), *a);
  EXPECT_TRUE(Time().empty());
}

}  // namespace
// A protobuf metav1.Time past the nanosecond clock's range keeps its date (years 0000-9999).
TEST(TimeTest, FromUnixSecondsKeepsDatesPast2262AndClampsPast9999) {
  EXPECT_EQ(Time::FromUnixSeconds(10'413'792'000).text(), "2300-01-01T00:00:00Z");
  EXPECT_EQ(Time::FromUnixSeconds(1'700'000'000).text(), "2023-11-14T22:13:20Z");
  EXPECT_EQ(Time::FromUnixSeconds(std::numeric_limits<int64_t>::max()).text(),
            "9999-12-31T23:59:59Z");
  EXPECT_EQ(Time::FromUnixSeconds(std::numeric_limits<int64_t>::min()).text(),
            "0000-01-01T00:00:00Z");
  EXPECT_EQ(Time::FromUnixSeconds(10'413'792'000).ToTimestamp(), Timestamp::max());
}

}  // namespace draplane::api
