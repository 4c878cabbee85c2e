#include "common/clock.h"

#include "common/check.h"

namespace draplane {
namespace {

class SystemClock final : public Clock {
 public:
  Timestamp Now() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
  Duration MonotonicNow() const override {
    return std::chrono::duration_cast<Duration>(
        std::chrono::steady_clock::now().time_since_epoch());
  }
};

}  // namespace

Clock& RealClock() {
  static SystemClock* clock = new SystemClock();  // Never destroyed: usable during exit.
  return *clock;
}

ManualClock::ManualClock(Timestamp start) : wall_ns_(start.time_since_epoch().count()) {}

Timestamp ManualClock::Now() const { return Timestamp(Duration(wall_ns_.load())); }

Duration ManualClock::MonotonicNow() const { return Duration(monotonic_ns_.load()); }

void ManualClock::Advance(Duration delta) {
  DRAPLANE_CHECK(delta.count() >= 0);
  wall_ns_.fetch_add(delta.count());
  monotonic_ns_.fetch_add(delta.count());
}

}  // namespace draplane
