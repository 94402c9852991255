// The loops of the NHWC batch norm (batch_norm_nhwc.cpp) over rows [r0, r1) of an [rows, C] tensor, written
// once for every element type and every form of the gradient or epilogue, and the float versions the CPU
// runs most, compiled for x86-64-v4, x86-64-v3 and the baseline with the CPU choosing at load (GCC's
// target_clones, batch_norm_row_loops.cpp; one plain version elsewhere). On the baseline's SSE2 they were
// bound by arithmetic: the double sums always (6.4 M elements, 2 threads: 1.07 ms against 0.55 with AVX2),
// the normalisation and the input gradient where the activation fits in the caches (ResNet-20's 1 M
// elements: 0.14-0.17 and 0.24 ms against 0.07 and 0.14 with AVX-512).
//
// Every version does the same float and double operations in the same order without fused multiply-adds
// (batch_norm_row_loops.cpp is compiled with -ffp-contract=off; the other instantiations are compiled for
// the baseline, which has none), so all round alike: the float clones and the f64 kernels' and fused
// gradients' instantiations in batch_norm_nhwc.cpp.
#pragma once

#include <cstdint>

#include "trainer/ops/relu.h"
#include "trainer/ops/relu6.h"

namespace fastnn::ops::cpu {

// acc[ch] += d and acc[C + ch] += d * d, d = x[r][ch] - shift[ch].
template <typename T>
inline void shifted_sums_loop(const T* x, int64_t r0, int64_t r1, int64_t c, const double* shift, double* acc) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      const double d = static_cast<double>(x[r * c + ch]) - shift[ch];
      acc[ch] += d;
      acc[c + ch] += d * d;
    }
}

// acc[ch] += g and acc[C + ch] += g * (x[r][ch] - mean[ch]), g = gradient(r * C + ch): the gradient arriving
// at batch norm's output element.
template <typename T, typename Gradient>
inline void gradient_sums_loop(const Gradient& gradient, const T* x, int64_t r0, int64_t r1, int64_t c, const T* mean,
                               double* acc) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      const double g = static_cast<double>(gradient(r * c + ch));
      acc[ch] += g;
      acc[c + ch] += g * (static_cast<double>(x[r * c + ch]) - static_cast<double>(mean[ch]));
    }
}

// y[r][ch] = epilogue(x[r][ch] * scale[ch] + shift[ch], r * C + ch).
template <typename T, typename Epilogue>
inline void normalize_loop(const T* x, int64_t r0, int64_t r1, int64_t c, const T* scale, const T* shift,
                           const Epilogue& epilogue, T* y) {
  // ivdep: an element is read before it is written, at the same index (the output may be the input).
  for (int64_t r = r0; r < r1; ++r) {
    const T* in = x + r * c;
    T* out = y + r * c;
#pragma GCC ivdep
    for (int64_t ch = 0; ch < c; ++ch) out[ch] = epilogue(in[ch] * scale[ch] + shift[ch], r * c + ch);
  }
}

// The input gradient, in double: dx[r][ch] = k[ch] * (g - ca[ch] - (x[r][ch] - mu[ch]) * is[ch] * cb[ch]) with
// g = gradient(r * C + ch), rounded to T.
struct InputGradientCoefficients {
  const double *k, *ca, *mu, *is, *cb;
};
template <typename T, typename Gradient>
inline void input_gradient_loop(const Gradient& gradient, const T* x, int64_t r0, int64_t r1, int64_t c,
                                const InputGradientCoefficients& co, T* dx) {
  const double *k = co.k, *ca = co.ca, *mu = co.mu, *is = co.is, *cb = co.cb;
  // ivdep: dx is where the fused layers wrote the gradient (an element is read, then overwritten, at one index).
  for (int64_t r = r0; r < r1; ++r) {
#pragma GCC ivdep
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t i = r * c + ch;
      dx[i] = static_cast<T>(k[ch] * (gradient(i) - ca[ch] - (x[i] - mu[ch]) * is[ch] * cb[ch]));
    }
  }
}

// What a fused layer does to each normalised value v of element i before storing it: the activation's own
// kernel's float operations (NoEpilogue for a plain batch norm). `kind` and `residual` name the same
// epilogue to the float clones below.
enum class RowEpilogue { kNone, kRelu, kRelu6, kAddRelu };
template <typename T>
struct NoEpilogue {
  static constexpr RowEpilogue kind = RowEpilogue::kNone;
  const T* residual = nullptr;
  T operator()(T v, int64_t) const { return v; }
};
template <typename T>
struct ReluEpilogue {
  static constexpr RowEpilogue kind = RowEpilogue::kRelu;
  const T* residual = nullptr;
  T operator()(T v, int64_t) const { return relu_value(v); }
};
template <typename T>
struct Relu6Epilogue {
  static constexpr RowEpilogue kind = RowEpilogue::kRelu6;
  const T* residual = nullptr;
  T operator()(T v, int64_t) const { return relu6_value(v); }
};
template <typename T>
struct AddReluEpilogue {
  static constexpr RowEpilogue kind = RowEpilogue::kAddRelu;
  const T* residual;  // the other addend, indexed as the output
  T operator()(T v, int64_t i) const {
    return relu_value(v + residual[i]);  // IEEE addition commutes: whichever input of the add the batch norm fed
  }
};

// The float loops, one clone per instruction set (batch_norm_row_loops.cpp), over rows [0, rows) of
// tensors that start at the block's first row.
void add_shifted_sums(const float* x, int64_t rows, int64_t c, const double* shift, double* acc);
void add_gradient_sums(const float* g, const float* x, int64_t rows, int64_t c, const float* mean, double* acc);
// `epilogue` is one of the four above; `residual` (kAddRelu only) is [rows, C] like x.
void normalize_rows(const float* x, int64_t rows, int64_t c, const float* scale, const float* shift,
                    RowEpilogue epilogue, const float* residual, float* y);
void input_gradient_rows(const float* g, const float* x, int64_t rows, int64_t c, const InputGradientCoefficients& co,
                         float* dx);

}  // namespace fastnn::ops::cpu
