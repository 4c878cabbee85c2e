// Text forms of timestamps and durations (cel-go `string(timestamp)` / `string(duration)`).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace draplane::cel {

// RFC 3339 in UTC with the fraction trimmed, as Go's time.RFC3339Nano prints:
// "2009-02-13T23:31:30Z", "9999-12-31T23:59:59.999999999Z".
std::string FormatTimestamp(int64_t seconds, int32_t nanos);
// Seconds with the shortest decimal fraction and an "s" suffix: "1000000s", "1.5s", "-0.001s".
std::string FormatDuration(int64_t nanos);

// Days since 1970-01-01 of a proleptic Gregorian date, and back.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d);
void CivilFromDays(int64_t days, int64_t* y, unsigned* m, unsigned* d);

}  // namespace draplane::cel
