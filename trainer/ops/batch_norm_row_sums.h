// The per-channel double sums of the NHWC batch norm (batch_norm_nhwc.cpp) over rows of an [rows, C]
// float tensor: the two loops of its passes that are bound by arithmetic rather than memory. In double,
// the baseline x86-64 build's two lanes made them so (6.4 M elements, 2 threads: 1.07 ms against 0.55
// with AVX2), so each is compiled for x86-64-v4, x86-64-v3 and the baseline, the CPU choosing at load
// (GCC's target_clones; one plain version elsewhere). Every version adds the same terms in the same
// order without fused multiply-adds, so all round alike.
#pragma once

#include <cstdint>

namespace fastnn::ops::cpu {

// acc[ch] += d and acc[C + ch] += d * d, d = x[r][ch] - shift[ch], over rows [0, rows).
void add_shifted_sums(const float* x, int64_t rows, int64_t c, const double* shift, double* acc);

// acc[ch] += g[r][ch] and acc[C + ch] += g[r][ch] * (x[r][ch] - mean[ch]), over rows [0, rows).
void add_gradient_sums(const float* g, const float* x, int64_t rows, int64_t c, const float* mean, double* acc);

}  // namespace fastnn::ops::cpu
