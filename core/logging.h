// Log lines to stderr: "I 12:34:56.789 message". Level from FASTNN_LOG_LEVEL (debug, info, warn,
// error; default info) or set_log_level(). Thread-safe: each line is written with one call.
#pragma once

#include <string>

#include "core/check.h"

namespace fastnn {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// A ConfigError naming the variable and its values when FASTNN_LOG_LEVEL is set to none of them (a typo
// such as "verbose" would otherwise mean info, silently).
void check_log_level_env();
void set_log_level(LogLevel level);
LogLevel log_level();
void log_line(LogLevel level, const std::string& message);

template <typename... Args>
void log_debug(Args&&... args) {
  if (log_level() <= LogLevel::kDebug) log_line(LogLevel::kDebug, str(std::forward<Args>(args)...));
}
template <typename... Args>
void log_info(Args&&... args) {
  if (log_level() <= LogLevel::kInfo) log_line(LogLevel::kInfo, str(std::forward<Args>(args)...));
}
template <typename... Args>
void log_warn(Args&&... args) {
  if (log_level() <= LogLevel::kWarn) log_line(LogLevel::kWarn, str(std::forward<Args>(args)...));
}
template <typename... Args>
void log_error(Args&&... args) {
  log_line(LogLevel::kError, str(std::forward<Args>(args)...));
}

}  // namespace fastnn
