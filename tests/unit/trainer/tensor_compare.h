// How far apart two results are, for the tests that hold a kernel or a step to a reference: rel_l2 for
// two runs' arrays (runner_cpu_bf16_test, and the gpu tests through cuda_test_util.h), expect_elementwise_near
// for two tensors element by element (ops_nhwc_cpu_test, ops_bf16_cpu_test).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "trainer/tensor.h"

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

// Every element of `got` within rel * |want| + abs * max(1, max |want|) of `want`, NaN where `want` is NaN;
// the first five misses reported, named by `what`.
inline void expect_elementwise_near(const Tensor& got, const Tensor& want, double rel, double abs, const std::string& what) {
  ASSERT_EQ(got.defined(), want.defined()) << what;
  if (!got.defined()) return;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto a = got.to_vector<double>(), b = want.to_vector<double>();
  double scale = 1;
  for (double v : b) scale = std::max(scale, std::fabs(v));
  int failures = 0;
  for (size_t i = 0; i < a.size() && failures < 5; ++i) {
    if (std::isnan(a[i]) != std::isnan(b[i]) || std::fabs(a[i] - b[i]) > rel * std::fabs(b[i]) + abs * scale) {
      ADD_FAILURE() << what << "[" << i << "]: " << a[i] << ", reference " << b[i];
      ++failures;
    }
  }
}

}  // namespace fastnn::test_util
