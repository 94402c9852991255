// For the gpu-labelled trainer tests (CUDA builds only): a device check that initialises the backend
// once, and the skip when there is no device.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainer/cuda/runtime.h"

namespace fastnn::cuda_test {

// True when a CUDA device is present; the backend is then initialised on device 0, TF32 off.
inline bool have_gpu() {
  static const bool ok = [] {
    if (!cuda::device_available()) return false;
    cuda::init_backend(0);
    // The tests compare f32 with the CPU oracle: TF32 off even when FASTNN_ALLOW_TF32 is set.
    cuda::set_allow_tf32(false);
    return true;
  }();
  return ok;
}

// ||a - b|| / max(||b||, tiny) over one array (the runner tests' measure of how far two runs' weights are).
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

}  // namespace fastnn::cuda_test

#define REQUIRE_GPU() \
  if (!::fastnn::cuda_test::have_gpu()) GTEST_SKIP() << "no CUDA device"
