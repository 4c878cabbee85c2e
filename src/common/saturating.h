// Integer and time arithmetic that neither overflows nor is undefined, for values users choose:
// the sum of a Pod's container requests, a deletion's grace period, an Event's timestamp. Go's
// int64 wraps silently there; C++'s signed overflow is undefined. Saturating where a result must
// stay huge (a wrapped request sum would look small), wrapping where a total is later undone.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

#include "common/clock.h"

namespace draplane {

// Two's complement wrapping, as Go's int64 arithmetic: for running totals whose additions are
// later subtracted again (exact whatever overflowed in between).
inline int64_t WrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t WrappingNeg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t difference = 0;
  if (!__builtin_sub_overflow(a, b, &difference)) return difference;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t product = 0;
  if (!__builtin_mul_overflow(a, b, &product)) return product;
  return (a < 0) == (b < 0) ? std::numeric_limits<int64_t>::max()
                            : std::numeric_limits<int64_t>::min();
}

// `t` plus `seconds`, saturated at Timestamp's range (years 1678-2262).
inline Timestamp AddSeconds(Timestamp t, int64_t seconds) {
  int64_t nanos = 0;
  if (__builtin_mul_overflow(seconds, int64_t{1'000'000'000}, &nanos)) {
    // More than the whole range away from any Timestamp.
    return seconds > 0 ? Timestamp::max() : Timestamp::min();
  }
  return Timestamp(Duration(SaturatingAdd(t.time_since_epoch().count(), nanos)));
}

// `later - earlier`, saturated at Duration's range.
inline Duration Between(Timestamp earlier, Timestamp later) {
  return Duration(
      SaturatingSub(later.time_since_epoch().count(), earlier.time_since_epoch().count()));
}

}  // namespace draplane
