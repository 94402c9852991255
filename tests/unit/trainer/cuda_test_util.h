// For the gpu-labelled trainer tests (CUDA builds only): a device check that initialises the backend
// once, and the skip when there is no device.
#pragma once

#include <gtest/gtest.h>

#include "trainer/cuda/runtime.h"

namespace fastnn::cuda_test {

// True when a CUDA device is present; the backend is then initialised on device 0.
inline bool have_gpu() {
  static const bool ok = [] {
    if (!cuda::device_available()) return false;
    cuda::init_backend(0);
    return true;
  }();
  return ok;
}

}  // namespace fastnn::cuda_test

#define REQUIRE_GPU() \
  if (!::fastnn::cuda_test::have_gpu()) GTEST_SKIP() << "no CUDA device"
