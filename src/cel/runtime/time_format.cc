#include "cel/runtime/time_format.h"

#include <cstdio>

namespace draplane::cel {

// Howard Hinnant's civil calendar algorithms.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

std::string FormatTimestamp(int64_t seconds, int32_t nanos) {
  int64_t days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400;
  int64_t secs = seconds - days * 86400;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld", static_cast<long long>(y),
                m, d, static_cast<long long>(secs / 3600), static_cast<long long>(secs / 60 % 60),
                static_cast<long long>(secs % 60));
  std::string out = buf;
  if (nanos != 0) {
    char frac[16];
    std::snprintf(frac, sizeof frac, "%09d", nanos);
    std::string f = frac;
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += "." + f;
  }
  out += "Z";
  return out;
}

std::string FormatDuration(int64_t nanos) {
  bool neg = nanos < 0;
  uint64_t mag = neg ? 0 - static_cast<uint64_t>(nanos) : static_cast<uint64_t>(nanos);
  std::string out = neg ? "-" : "";
  out += std::to_string(mag / 1000000000);
  uint64_t frac = mag % 1000000000;
  if (frac != 0) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%09llu", static_cast<unsigned long long>(frac));
    std::string f = buf;
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += "." + f;
  }
  out += "s";
  return out;
}

}  // namespace draplane::cel
