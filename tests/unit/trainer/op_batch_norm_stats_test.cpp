// batch_norm_stats.h on the host: the finishing formulas the CUDA kernels run (bn_stats::store, and
// bn_stats::from_sums, fuse_conv_bn's statistics from the convolution's f32 sums), against the CPU
// kernel's saved and running statistics for the same batch: the same within f32 sums' rounding, with
// a channel whose mean is well off zero; and a constant channel, whose variance from sums rounds
// below zero, gets 1/sqrt(epsilon) as the CPU gives it.
#include "trainer/ops/batch_norm_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace fastnn::ops {
namespace {

TEST(BatchNormStats, FromF32SumsMatchesTheCpuKernel) {
  const BatchNormParams p{.n = 4, .c = 3, .hw = 35, .momentum = 0.9, .epsilon = 1e-3};
  const int64_t m = p.n * p.hw;
  std::vector<float> x(static_cast<size_t>(p.n * p.c * p.hw));
  const double offset[3] = {3.0, 0.0, 7.25};  // channel 2 is constant
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.c; ++c)
      for (int64_t i = 0; i < p.hw; ++i) {
        const double wave = c == 2 ? 0.0 : std::sin(0.37 * static_cast<double>(n * p.hw + i) + static_cast<double>(c));
        x[static_cast<size_t>((n * p.c + c) * p.hw + i)] = static_cast<float>(offset[c] + 0.5 * wave);
      }
  // The CPU kernel (NCHW), from running statistics 0.1 / 2.
  std::vector<float> gamma(3, 1.0f), beta(3, 0.0f), y(x.size());
  std::vector<float> rm_cpu(3, 0.1f), rv_cpu(3, 2.0f), mean_cpu(3), invstd_cpu(3);
  cpu::batch_norm_forward_training<float>(p, x.data(), gamma.data(), beta.data(), rm_cpu.data(), rv_cpu.data(),
                                          y.data(), mean_cpu.data(), invstd_cpu.data());
  // The sums as cuDNN's convolution hands them over: f32, unshifted.
  std::vector<float> sums(6, 0.0f);
  for (int64_t c = 0; c < p.c; ++c) {
    double s = 0, q = 0;
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t i = 0; i < p.hw; ++i) {
        const double v = x[static_cast<size_t>((n * p.c + c) * p.hw + i)];
        s += v;
        q += v * v;
      }
    sums[static_cast<size_t>(c)] = static_cast<float>(s);
    sums[static_cast<size_t>(3 + c)] = static_cast<float>(q);
  }
  std::vector<float> rm(3, 0.1f), rv(3, 2.0f), mean(3), invstd(3);
  for (int64_t c = 0; c < p.c; ++c) {
    double mu, var;
    bn_stats::from_sums(static_cast<double>(m), sums[static_cast<size_t>(c)], sums[static_cast<size_t>(3 + c)], &mu, &var);
    bn_stats::store(p, c, mu, var, rm.data(), rv.data(), mean.data(), invstd.data());
  }
  for (size_t c = 0; c < 3; ++c) {
    SCOPED_TRACE("channel " + std::to_string(c));
    EXPECT_NEAR(mean[c], mean_cpu[c], 1e-6 * (1 + std::fabs(mean_cpu[c])));
    EXPECT_NEAR(rm[c], rm_cpu[c], 1e-6 * (1 + std::fabs(rm_cpu[c])));
    // E[x²] − mean² from f32 sums: Σx² of channel 2 (~7.25² · 140) carries ~1e-7 relative error, i.e.
    // ~4e-6 in a variance of 0.
    EXPECT_NEAR(invstd[c], invstd_cpu[c], 2e-3 * invstd_cpu[c]);
    EXPECT_NEAR(rv[c], rv_cpu[c], 1e-4 * (1 + rv_cpu[c]));
  }
  EXPECT_NEAR(invstd_cpu[2], 1 / std::sqrt(1e-3), 1e-3) << "the constant channel: variance 0";
}

}  // namespace
}  // namespace fastnn::ops
