// How far apart two runs' arrays are, for the runner tests that hold a lower-precision or other-device
// step to a reference step (runner_cpu_bf16_test, and the gpu tests through cuda_test_util.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace fastnn::test_util {

// ||a - b|| / ||b||; with floor_rms > 0 the denominator is at least floor_rms * sqrt(size), so a quantity
// that is rounding noise on both sides (an update that is zero in exact arithmetic) is held absolutely.
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b, double floor_rms = 0) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    n += static_cast<double>(b[i]) * b[i];
  }
  const double floor = floor_rms * std::sqrt(static_cast<double>(b.size()));
  return std::sqrt(d) / std::max({std::sqrt(n), floor, 1e-30});
}

}  // namespace fastnn::test_util
