// metav1.Duration on the wire: a string in Go's time.Duration syntax ("30s", "1h30m", "1.5h",
// "-2m", "0"), the one parser every duration draplane reads goes through (API fields such as
// DeviceSharingPolicy's `usage.halfLife`, the simulator's traces, the agent's profiles, command
// line flags and CEL's `duration()`).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace draplane::api {

// Go's time.ParseDuration: an optional sign, then one or more decimal numbers (a fraction
// allowed) each with a unit of ns, us (µs, μs), ms, s, m or h; "0" alone needs no unit. Exact:
// integer nanoseconds, a fraction truncated below one nanosecond. InvalidArgument with Go's
// message otherwise: `time: invalid duration "x"`, `time: missing unit in duration "1"`,
// `time: unknown unit "d" in duration "1d"` (also for more than 2^63-1 ns).
StatusOr<Duration> ParseDuration(std::string_view text);

// A duration in Go's syntax at millisecond resolution, shortest first: "1h30m", "2h14m5s",
// "250ms", "-90s", "0s" (ParseDuration reads it back). Below a millisecond is dropped.
std::string FormatDuration(Duration d);

// ParseDuration for values that may not be negative (intervals, timeouts, a simulation's end):
// also InvalidArgument `invalid duration "-1s": must not be negative`.
StatusOr<Duration> ParseNonNegativeDuration(std::string_view text);

}  // namespace draplane::api
