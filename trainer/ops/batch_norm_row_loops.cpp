#include "trainer/ops/batch_norm_row_loops.h"

#include "trainer/ops/relu.h"
#include "trainer/ops/relu6.h"

// Contraction off inside, so that no version fuses a multiply into its add (pushed and popped: in a unity
// build the next file must keep the project's options). GCC only; another compiler gets plain functions.
#if defined(__GNUC__) && !defined(__clang__)
#define FASTNN_GCC_LOOPS 1
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(FASTNN_GCC_LOOPS) && defined(__x86_64__)
#define FASTNN_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FASTNN_VECTOR_CLONES
#endif

namespace fastnn::ops::cpu {

FASTNN_VECTOR_CLONES
void add_shifted_sums(const float* x, int64_t rows, int64_t c, const double* shift, double* acc) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      const double d = static_cast<double>(x[r * c + ch]) - shift[ch];
      acc[ch] += d;
      acc[c + ch] += d * d;
    }
}

FASTNN_VECTOR_CLONES
void add_gradient_sums(const float* g, const float* x, int64_t rows, int64_t c, const float* mean, double* acc) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      const double gi = static_cast<double>(g[r * c + ch]);
      acc[ch] += gi;
      acc[c + ch] += gi * (static_cast<double>(x[r * c + ch]) - static_cast<double>(mean[ch]));
    }
}

FASTNN_VECTOR_CLONES
void normalize_rows(const float* x, int64_t rows, int64_t c, const float* scale, const float* shift,
                    RowEpilogue epilogue, const float* residual, float* y) {
  // ivdep: an element is read before it is written, at the same index (the output may be the input).
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * c;
    float* out = y + r * c;
    switch (epilogue) {
      case RowEpilogue::kNone:
#pragma GCC ivdep
        for (int64_t ch = 0; ch < c; ++ch) out[ch] = in[ch] * scale[ch] + shift[ch];
        break;
      case RowEpilogue::kRelu:
#pragma GCC ivdep
        for (int64_t ch = 0; ch < c; ++ch) out[ch] = relu_value(in[ch] * scale[ch] + shift[ch]);
        break;
      case RowEpilogue::kRelu6:
#pragma GCC ivdep
        for (int64_t ch = 0; ch < c; ++ch) out[ch] = relu6_value(in[ch] * scale[ch] + shift[ch]);
        break;
      case RowEpilogue::kAddRelu: {
        const float* add = residual + r * c;
#pragma GCC ivdep
        for (int64_t ch = 0; ch < c; ++ch) out[ch] = relu_value(in[ch] * scale[ch] + shift[ch] + add[ch]);
        break;
      }
    }
  }
}

FASTNN_VECTOR_CLONES
void input_gradient_rows(const float* g, const float* x, int64_t rows, int64_t c, const InputGradientCoefficients& co,
                         float* dx) {
  const double *k = co.k, *ca = co.ca, *mu = co.mu, *is = co.is, *cb = co.cb;
  // ivdep: dx is where the fused layers wrote g (an element is read, then overwritten, at one index).
  for (int64_t r = 0; r < rows; ++r) {
    const float* gr = g + r * c;
    const float* xr = x + r * c;
    float* out = dx + r * c;
#pragma GCC ivdep
    for (int64_t ch = 0; ch < c; ++ch)
      out[ch] = static_cast<float>(k[ch] * (gr[ch] - ca[ch] - (xr[ch] - mu[ch]) * is[ch] * cb[ch]));
  }
}

}  // namespace fastnn::ops::cpu

#undef FASTNN_VECTOR_CLONES
#ifdef FASTNN_GCC_LOOPS
#undef FASTNN_GCC_LOOPS
#pragma GCC pop_options
#endif
