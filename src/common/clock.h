// Time for draplane: the only way code reads the time (STYLE.md, "Ownership and concurrency").
//
// Decisions never read the wall clock directly; components receive a `Clock&` so tests and the
// simulator can inject a `ManualClock` (or the simulator's virtual clock) instead of real time.
//
// Thread-safety: every implementation here is safe for concurrent use.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>

namespace draplane {

// Wall-clock instant with nanosecond resolution.
using Timestamp = std::chrono::time_point<std::chrono::system_clock, std::chrono::nanoseconds>;
using Duration = std::chrono::nanoseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  // The current wall-clock time (used for timestamps written into objects).
  virtual Timestamp Now() const = 0;
  // A monotonic reading for measuring elapsed time; unrelated to Now()'s epoch.
  virtual Duration MonotonicNow() const = 0;
};

// The process's real clock. The returned reference is valid for the life of the process.
Clock& RealClock();

// A clock that only moves when told to. Starts at `start`; MonotonicNow() starts at zero and
// advances by the same amounts.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Timestamp start = Timestamp(std::chrono::seconds(1'700'000'000)));
  Timestamp Now() const override;
  Duration MonotonicNow() const override;
  // Moves both readings forward by `delta` (which must not be negative).
  void Advance(Duration delta);

 private:
  std::atomic<int64_t> wall_ns_;
  std::atomic<int64_t> monotonic_ns_{0};
};

}  // namespace draplane
