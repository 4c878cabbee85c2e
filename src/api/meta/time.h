// metav1.Time and metav1.MicroTime: an RFC 3339 timestamp that remembers its text.
//
// A decoded Time keeps the exact text it was read from, so encoding writes it back unchanged
// (lossless round trips); a Time made from an instant gets the canonical UTC form Kubernetes
// writes: `2006-01-02T15:04:05Z` (Time, seconds) or `2006-01-02T15:04:05.000000Z` (MicroTime).
// A default-constructed Time is the zero time, which Kubernetes serialises as `null`; the object
// model leaves it out instead (docs/design/api.md).
//
// Thread-safety: a value type.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/clock.h"
#include "common/status.h"

namespace draplane::api {

class Time {
 public:
  Time() = default;

  // Parses RFC 3339 text as Go's time.Parse(time.RFC3339, ...) does: `YYYY-MM-DDTHH:MM:SS`,
  // an optional fraction of 1 to 9 digits, then `Z` or `+hh:mm` / `-hh:mm`. InvalidArgument
  // (`must be an RFC 3339 timestamp`) otherwise.
  static StatusOr<Time> Parse(std::string_view text);
  // `t` truncated to whole seconds, as metav1.Time serialises it.
  static Time FromTimestamp(Timestamp t);
  // `t` truncated to microseconds, as metav1.MicroTime serialises it.
  static Time MicroFromTimestamp(Timestamp t);
  // Whole seconds since the Unix epoch (a protobuf metav1.Time), clamped to years 0000-9999;
  // unlike a Timestamp not limited to 1678-2262.
  static Time FromUnixSeconds(int64_t seconds);

  // True for the zero time.
  bool empty() const { return text_.empty(); }
  // The serialised text; empty for the zero time.
  const std::string& text() const { return text_; }
  // The instant as seconds since the Unix epoch plus nanoseconds in [0, 1e9); RFC 3339 years
  // 0000-9999 fit, the zero time is the epoch.
  int64_t unix_seconds() const { return unix_seconds_; }
  int32_t nanos() const { return nanos_; }
  // The instant as a Timestamp, saturated to Timestamp's range (years 1678-2262).
  Timestamp ToTimestamp() const;

  // Compares instants (as metav1.Time.Equal does); the zero time sorts first.
  friend bool operator==(const Time& a, const Time& b) {
    return a.empty() == b.empty() && a.unix_seconds_ == b.unix_seconds_ && a.nanos_ == b.nanos_;
  }
  friend std::strong_ordering operator<=>(const Time& a, const Time& b) {
    if (a.empty() != b.empty()) {
      return a.empty() ? std::strong_ordering::less : std::strong_ordering::greater;
    }
    if (auto c = a.unix_seconds_ <=> b.unix_seconds_; c != 0) return c;
    return a.nanos_ <=> b.nanos_;
  }

 private:
  Time(std::string text, int64_t unix_seconds, int32_t nanos)
      : text_(std::move(text)), unix_seconds_(unix_seconds), nanos_(nanos) {}

  std::string text_;
  int64_t unix_seconds_ = 0;
  int32_t nanos_ = 0;
};

}  // namespace draplane::api
