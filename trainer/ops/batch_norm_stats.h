// Batch norm's statistics from a channel's sums, written once for the CUDA kernels (batch_norm_kernels.cu)
// and the host, where the tests hold them to the CPU kernel (batch_norm_cpu.cpp, whose formulas these
// are): biased variance to normalise, unbiased for running_var, momentum = the weight of the old value.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "trainer/ops/batch_norm.h"

namespace fastnn::ops::bn_stats {

// Channel c's saved and running statistics from its batch mean and biased variance over p.n * p.hw
// values (a negative variance, which only rounding makes, counts as 0).
FASTNN_HD inline void store(const BatchNormParams& p, int64_t c, double mean, double var, float* running_mean,
                            float* running_var, float* save_mean, float* save_invstd) {
  const double old_mean = running_mean[c], m = static_cast<double>(p.n * p.hw);
  if (var < 0) var = 0;
  save_mean[c] = static_cast<float>(mean);
  save_invstd[c] = static_cast<float>(1.0 / sqrt(var + p.epsilon));
  const double unbiased = m > 1 ? var * m / (m - 1) : var;
  running_mean[c] = static_cast<float>(p.momentum * old_mean + (1 - p.momentum) * mean);
  running_var[c] = static_cast<float>(p.momentum * running_var[c] + (1 - p.momentum) * unbiased);
}

// Mean and biased variance of m values from their unshifted sums Σx and Σx² (fuse_conv_bn: the f32 sums
// cuDNN's convolution writes); E[x²] − mean² in double.
FASTNN_HD inline void from_sums(double m, double sum, double sqsum, double* mean, double* var) {
  *mean = m > 0 ? sum / m : 0.0;
  *var = m > 0 ? sqsum / m - *mean * *mean : 0.0;
}

}  // namespace fastnn::ops::bn_stats
