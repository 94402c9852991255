// The one clock for measured durations (step times, data wait, conversion and benchmark timings):
// std::chrono::steady_clock, monotonic, so a wall-clock adjustment never yields a negative time.
#pragma once

#include <chrono>

namespace fastnn {

using Clock = std::chrono::steady_clock;

// Seconds elapsed on Clock since `t`.
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace fastnn
