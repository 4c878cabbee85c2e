#include "api/meta/time.h"

#include <algorithm>
#include <cstdint>

#include "common/saturating.h"

namespace draplane::api {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, int64_t* m, int64_t* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp + (mp < 10 ? 3 : -9);
  *y = yoe + era * 400 + (*m <= 2 ? 1 : 0);
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int64_t DaysInMonth(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// Reads exactly `n` digits at `*pos`.
bool Digits(std::string_view s, size_t* pos, int n, int64_t* out) {
  if (*pos + n > s.size()) return false;
  int64_t v = 0;
  for (int i = 0; i < n; ++i) {
    char c = s[*pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool Expect(std::string_view s, size_t* pos, char c) {
  if (*pos >= s.size() || s[*pos] != c) return false;
  ++*pos;
  return true;
}

// Writes `v` as `width` decimal digits, zero-padded, at `out`.
void PutDigits(char* out, int64_t v, int width) {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

// Written by hand, not with snprintf (a tenth of the cost: every write of an object with a
// timestamp formats one). The years of a Timestamp (1677-2262) always take four digits.
std::string Format(int64_t secs, int64_t frac, bool micros) {
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    days -= 1;
  }
  int64_t y, m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[32];  // "2006-01-02T15:04:05.000000Z"
  PutDigits(buf, y, 4);
  buf[4] = '-';
  PutDigits(buf + 5, m, 2);
  buf[7] = '-';
  PutDigits(buf + 8, d, 2);
  buf[10] = 'T';
  PutDigits(buf + 11, rem / 3600, 2);
  buf[13] = ':';
  PutDigits(buf + 14, rem / 60 % 60, 2);
  buf[16] = ':';
  PutDigits(buf + 17, rem % 60, 2);
  size_t size = 19;
  if (micros) {
    buf[size++] = '.';
    PutDigits(buf + size, frac / 1000, 6);
    size += 6;
  }
  buf[size++] = 'Z';
  return std::string(buf, size);
}

}  // namespace

StatusOr<Time> Time::Parse(std::string_view text) {
  size_t pos = 0;
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  bool ok =
      Digits(text, &pos, 4, &year) && Expect(text, &pos, '-') && Digits(text, &pos, 2, &month) &&
      Expect(text, &pos, '-') && Digits(text, &pos, 2, &day) && Expect(text, &pos, 'T') &&
      Digits(text, &pos, 2, &hour) && Expect(text, &pos, ':') && Digits(text, &pos, 2, &minute) &&
      Expect(text, &pos, ':') && Digits(text, &pos, 2, &second);
  int64_t nanos = 0;
  if (ok && pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (++digits > 9) break;
      nanos = nanos * 10 + (text[pos] - '0');
      ++pos;
    }
    ok = digits >= 1 && digits <= 9;
    for (int i = digits; ok && i < 9; ++i) nanos *= 10;
  }
  int64_t offset_seconds = 0;
  if (ok && pos < text.size() && text[pos] == 'Z') {
    ++pos;
  } else if (ok && pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int64_t sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int64_t oh = 0, om = 0;
    ok = Digits(text, &pos, 2, &oh) && Expect(text, &pos, ':') && Digits(text, &pos, 2, &om) &&
         oh < 24 && om < 60;
    offset_seconds = sign * (oh * 3600 + om * 60);
  } else {
    ok = false;
  }
  ok = ok && pos == text.size() && month >= 1 && month <= 12 && day >= 1 &&
       day <= DaysInMonth(year, month) && hour < 24 && minute < 60 && second < 60;
  if (!ok) {
    return InvalidArgumentError("must be an RFC 3339 timestamp (e.g. 2006-01-02T15:04:05Z)");
  }
  const int64_t secs =
      DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset_seconds;
  return Time(std::string(text), secs, static_cast<int32_t>(nanos));
}

namespace {

// Splits a Timestamp into seconds and nanoseconds in [0, 1e9).
void Split(Timestamp t, int64_t* secs, int64_t* nanos) {
  const int64_t ns = t.time_since_epoch().count();
  *secs = ns / 1'000'000'000;
  *nanos = ns % 1'000'000'000;
  if (*nanos < 0) {
    *nanos += 1'000'000'000;
    *secs -= 1;
  }
}

}  // namespace

Time Time::FromTimestamp(Timestamp t) {
  int64_t secs = 0, nanos = 0;
  Split(t, &secs, &nanos);
  return Time(Format(secs, 0, /*micros=*/false), secs, 0);
}

Time Time::FromUnixSeconds(int64_t seconds) {
  constexpr int64_t kYear0 = -62167219200;      // 0000-01-01T00:00:00Z
  constexpr int64_t kYear10000 = 253402300800;  // 10000-01-01T00:00:00Z
  seconds = std::clamp(seconds, kYear0, kYear10000 - 1);
  return Time(Format(seconds, 0, /*micros=*/false), seconds, 0);
}

Time Time::MicroFromTimestamp(Timestamp t) {
  int64_t secs = 0, nanos = 0;
  Split(t, &secs, &nanos);
  nanos -= nanos % 1000;
  return Time(Format(secs, nanos, /*micros=*/true), secs, static_cast<int32_t>(nanos));
}

Timestamp Time::ToTimestamp() const {
  return AddSeconds(Timestamp(std::chrono::nanoseconds(nanos_)), unix_seconds_);
}

}  // namespace draplane::api
