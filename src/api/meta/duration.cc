#include "api/meta/duration.h"

#include <cstdint>
#include <string>

#include "api/field_error.h"

namespace draplane::api {
namespace {

__extension__ typedef unsigned __int128 U128;

constexpr U128 kLimit = static_cast<U128>(1) << 63;

Status Malformed(std::string_view prefix, std::string_view text) {
  return InvalidArgumentError("time: " + std::string(prefix) + RenderValue(text));
}

}  // namespace

StatusOr<Duration> ParseDuration(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return Duration(0);
  if (s.empty()) return Malformed("invalid duration ", text);
  U128 total = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || (s[0] >= '0' && s[0] <= '9'))) return Malformed("invalid duration ", text);
    size_t i = 0;
    U128 whole = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      whole = whole * 10 + static_cast<unsigned>(s[i] - '0');
      if (whole > kLimit) return Malformed("invalid duration ", text);
      ++i;
    }
    bool digits = i > 0;
    // Digits of a fraction beyond 18 are below a nanosecond for every unit: read, not kept.
    U128 fraction = 0, scale = 1;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        if (scale < static_cast<U128>(1'000'000'000'000'000'000ULL)) {
          fraction = fraction * 10 + static_cast<unsigned>(s[i] - '0');
          scale *= 10;
        }
        digits = true;
        ++i;
      }
    }
    if (!digits) return Malformed("invalid duration ", text);
    size_t end = i;
    while (end < s.size() && !(s[end] == '.' || (s[end] >= '0' && s[end] <= '9'))) ++end;
    if (end == i) return Malformed("missing unit in duration ", text);
    std::string_view unit = s.substr(i, end - i);
    uint64_t nanos;
    if (unit == "ns") {
      nanos = 1;
    } else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") {
      nanos = 1'000;
    } else if (unit == "ms") {
      nanos = 1'000'000;
    } else if (unit == "s") {
      nanos = 1'000'000'000;
    } else if (unit == "m") {
      nanos = 60'000'000'000;
    } else if (unit == "h") {
      nanos = 3'600'000'000'000;
    } else {
      return InvalidArgumentError("time: unknown unit " + RenderValue(unit) + " in duration " +
                                  RenderValue(text));
    }
    total += whole * nanos + fraction * nanos / scale;
    if (total > kLimit) return Malformed("invalid duration ", text);
    s.remove_prefix(end);
  }
  if (negative) return Duration(static_cast<int64_t>(0 - static_cast<uint64_t>(total)));
  if (total == kLimit) return Malformed("invalid duration ", text);
  return Duration(static_cast<int64_t>(total));
}

std::string FormatDuration(Duration d) {
  int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  const int64_t h = ms / 3'600'000;
  const int64_t m = ms / 60'000 % 60;
  const int64_t s = ms / 1000 % 60;
  const int64_t rest = ms % 1000;
  if (h > 0) out += std::to_string(h) + "h";
  if (m > 0) out += std::to_string(m) + "m";
  if (s > 0) out += std::to_string(s) + "s";
  if (rest > 0) out += std::to_string(rest) + "ms";
  return out;
}

StatusOr<Duration> ParseNonNegativeDuration(std::string_view text) {
  StatusOr<Duration> d = ParseDuration(text);
  if (d.ok() && *d < Duration::zero()) {
    return InvalidArgumentError("invalid duration " + RenderValue(text) + ": must not be negative");
  }
  return d;
}

}  // namespace draplane::api
