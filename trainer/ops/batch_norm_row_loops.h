// The float loops of the NHWC batch norm (batch_norm_nhwc.cpp) over rows of an [rows, C] tensor, each
// compiled for x86-64-v4, x86-64-v3 and the baseline, the CPU choosing at load (GCC's target_clones; one
// plain version elsewhere). On the baseline's SSE2 they were bound by arithmetic: the double sums always
// (6.4 M elements, 2 threads: 1.07 ms against 0.55 with AVX2), the normalisation and the input
// gradient where the activation fits in the caches (ResNet-20's 1 M elements: 0.14-0.17 and 0.24 ms
// against 0.07 and 0.14 with AVX-512). Every version does the same float and double operations in the
// same order without fused multiply-adds, so all round alike, and alike the generic loops of
// batch_norm_nhwc.cpp (which the f64 kernels and the other gradient forms use).
#pragma once

#include <cstdint>

namespace fastnn::ops::cpu {

// acc[ch] += d and acc[C + ch] += d * d, d = x[r][ch] - shift[ch], over rows [0, rows).
void add_shifted_sums(const float* x, int64_t rows, int64_t c, const double* shift, double* acc);

// acc[ch] += g[r][ch] and acc[C + ch] += g[r][ch] * (x[r][ch] - mean[ch]), over rows [0, rows).
void add_gradient_sums(const float* g, const float* x, int64_t rows, int64_t c, const float* mean, double* acc);

// What follows the normalisation in a fused layer: relu_value, relu6_value, or relu_value(v + residual).
enum class RowEpilogue { kNone, kRelu, kRelu6, kAddRelu };

// y[r][ch] = epilogue(x[r][ch] * scale[ch] + shift[ch]) over rows [0, rows); `residual` (kAddRelu only)
// is [rows, C] like x.
void normalize_rows(const float* x, int64_t rows, int64_t c, const float* scale, const float* shift,
                    RowEpilogue epilogue, const float* residual, float* y);

// The input gradient, in double: dx[r][ch] = k[ch] * (g[r][ch] - ca[ch] - (x[r][ch] - mu[ch]) * is[ch] * cb[ch]),
// rounded to float, over rows [0, rows).
struct InputGradientCoefficients {
  const double *k, *ca, *mu, *is, *cb;
};
void input_gradient_rows(const float* g, const float* x, int64_t rows, int64_t c, const InputGradientCoefficients& co,
                         float* dx);

}  // namespace fastnn::ops::cpu
