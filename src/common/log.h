// Logging for draplane, a thin layer over spdlog so the rest of the code does not depend on it.
//
// Messages use fmt syntax: `log::Info("allocated {} devices for {}", n, claim)`.
// Logs go to stderr; stdout is reserved for command output. Thread-safe.
#pragma once

#include <fmt/core.h>

#include <string_view>

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

}  // namespace draplane::log
