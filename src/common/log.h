// Logging for draplane, a thin layer over spdlog so the rest of the code does not depend on it.
//
// Messages use fmt syntax: `log::Info("allocated {} devices for {}", n, claim)`.
// Logs go to stderr; stdout is reserved for command output. Thread-safe.
#pragma once

#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace draplane::log {

enum class Level { kDebug, kInfo, kWarning, kError, kOff };

// Sets the minimum level that is printed (default kInfo).
void SetLevel(Level level);
// Parses "debug", "info", "warning", "error", "off"; false if unknown.
bool ParseLevel(std::string_view text, Level* level);
bool Enabled(Level level);

void Write(Level level, std::string_view message);

template <typename... Args>
void Debug(fmt::format_string<Args...> format, Args&&... args) {
  if (Enabled(Level::kDebug))
    Write(Level::kDebug, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void Info(fmt::format_string<Args...> format, Args&&... args) {
  if (Enabled(Level::kInfo)) Write(Level::kInfo, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void Warning(fmt::format_string<Args...> format, Args&&... args) {
  if (Enabled(Level::kWarning)) {
    Write(Level::kWarning, fmt::format(format, std::forward<Args>(args)...));
  }
}
template <typename... Args>
void Error(fmt::format_string<Args...> format, Args&&... args) {
  if (Enabled(Level::kError))
    Write(Level::kError, fmt::format(format, std::forward<Args>(args)...));
}

// Lets one log line through per interval and counts the others, for lines a client can provoke
// at will (accept failures, TLS and protocol errors): a flood costs one line per interval, which
// says how many were left out. Thread-safe; lock-free.
class RateLimiter {
 public:
  explicit RateLimiter(Duration interval, const Clock& clock = RealClock())
      : interval_(interval), clock_(clock) {}

  // True when a line may be written now; then `*suppressed` holds how many were refused since the
  // last one let through.
  bool Allow(uint64_t* suppressed);

 private:
  const Duration interval_;
  const Clock& clock_;
  std::atomic<int64_t> next_ns_{INT64_MIN};
  std::atomic<uint64_t> suppressed_{0};
};

// Warning(...) through `limiter`, with " (N similar lines suppressed)" appended when some were.
template <typename... Args>
void WarningEvery(RateLimiter& limiter, fmt::format_string<Args...> format, Args&&... args) {
  if (!Enabled(Level::kWarning)) return;
  uint64_t suppressed = 0;
  if (!limiter.Allow(&suppressed)) return;
  std::string line = fmt::format(format, std::forward<Args>(args)...);
  if (suppressed > 0) line += fmt::format(" ({} similar lines suppressed)", suppressed);
  Write(Level::kWarning, line);
}

}  // namespace draplane::log
