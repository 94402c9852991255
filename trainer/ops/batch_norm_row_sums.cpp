#include "trainer/ops/batch_norm_row_sums.h"

// Contraction off inside, so that no version fuses a multiply into its add (pushed and popped: in a unity
// build the next file must keep the project's options).
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
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

}  // namespace fastnn::ops::cpu

#undef FASTNN_VECTOR_CLONES
#pragma GCC pop_options
