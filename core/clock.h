// The one clock for measured durations (step times, data wait, conversion and benchmark timings):
// std::chrono::steady_clock, monotonic, so a wall-clock adjustment never yields a negative time.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace fastnn {

using Clock = std::chrono::steady_clock;

// Clock's now in nanoseconds, for per-sample timings kept in integer atomics.
inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

// Seconds elapsed on Clock since `t`.
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// CPU seconds used so far by the whole process (every thread) and by the calling thread.
inline double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
inline double process_cpu_seconds() { return cpu_seconds(CLOCK_PROCESS_CPUTIME_ID); }
inline double thread_cpu_seconds() { return cpu_seconds(CLOCK_THREAD_CPUTIME_ID); }

}  // namespace fastnn
