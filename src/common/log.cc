#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>

namespace draplane::log {
namespace {

std::atomic<Level> g_level{Level::kInfo};

spdlog::logger& Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("draplane");
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
    l->set_level(spdlog::level::trace);
    return l;
  }();
  return *logger;
}

spdlog::level::level_enum ToSpdlog(Level level) {
  switch (level) {
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarning:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
    case Level::kOff:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

}  // namespace

void SetLevel(Level level) { g_level.store(level); }

bool ParseLevel(std::string_view text, Level* level) {
  if (text == "debug")
    *level = Level::kDebug;
  else if (text == "info")
    *level = Level::kInfo;
  else if (text == "warning" || text == "warn")
    *level = Level::kWarning;
  else if (text == "error")
    *level = Level::kError;
  else if (text == "off")
    *level = Level::kOff;
  else
    return false;
  return true;
}

bool Enabled(Level level) { return level != Level::kOff && level >= g_level.load(); }

void Write(Level level, std::string_view message) { Logger().log(ToSpdlog(level), "{}", message); }

bool RateLimiter::Allow(uint64_t* suppressed) {
  int64_t now = clock_.MonotonicNow().count();
  int64_t next = next_ns_.load(std::memory_order_relaxed);
  if (now < next ||
      !next_ns_.compare_exchange_strong(next, now + interval_.count(), std::memory_order_relaxed)) {
    suppressed_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  *suppressed = suppressed_.exchange(0, std::memory_order_relaxed);
  return true;
}

}  // namespace draplane::log
