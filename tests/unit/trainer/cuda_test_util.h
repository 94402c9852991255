// For the gpu-labelled trainer tests (CUDA builds only): a device check that initialises the backend
// once, and the skip when there is no device.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/unit/trainer/tensor_compare.h"
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

// The runner tests' measure of how far two runs' weights are (tensor_compare.h).
using test_util::rel_l2;

}  // namespace fastnn::cuda_test

#define REQUIRE_GPU() \
  if (!::fastnn::cuda_test::have_gpu()) GTEST_SKIP() << "no CUDA device"
