#include "core/logging.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string_view>

namespace fastnn {
namespace {

std::optional<LogLevel> parse_level(std::string_view s) {
  if (s == "debug") return LogLevel::kDebug;
  if (s == "info") return LogLevel::kInfo;
  if (s == "warn" || s == "warning") return LogLevel::kWarn;
  if (s == "error") return LogLevel::kError;
  return std::nullopt;
}

// Unset or empty: info. A value check_log_level_env() refuses also means info here, for the library's
// other users; the CLI refuses it before logging anything.
LogLevel level_from_env() {
  const char* v = std::getenv("FASTNN_LOG_LEVEL");
  return v ? parse_level(v).value_or(LogLevel::kInfo) : LogLevel::kInfo;
}

std::atomic<LogLevel>& level_ref() {
  static std::atomic<LogLevel> level{level_from_env()};
  return level;
}

}  // namespace

void check_log_level_env() {
  const char* v = std::getenv("FASTNN_LOG_LEVEL");
  if (v && *v && !parse_level(v))
    throw ConfigError(str("FASTNN_LOG_LEVEL='", v, "': use debug, info (the default), warn or error"));
}

void set_log_level(LogLevel level) { level_ref().store(level); }
LogLevel log_level() { return level_ref().load(std::memory_order_relaxed); }

void log_line(LogLevel level, const std::string& message) {
  static const char kTag[] = {'D', 'I', 'W', 'E'};
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "%c %02d:%02d:%02d.%03d ", kTag[static_cast<int>(level)], tm.tm_hour,
                tm.tm_min, tm.tm_sec, ms);
  std::string line = prefix + message + "\n";
  // One write() per line so concurrent threads never interleave inside a line.
  ssize_t unused = ::write(STDERR_FILENO, line.data(), line.size());
  (void)unused;
}

}  // namespace fastnn
