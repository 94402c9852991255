// The float clones of batch_norm_row_loops.h's loops. This file is built alone (outside the unity build)
// with -ffp-contract=off (trainer/CMakeLists.txt), so that no version fuses a multiply into its add and the
// templates it instantiates round as every other instantiation does.
#include "trainer/ops/batch_norm_row_loops.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define FASTNN_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FASTNN_VECTOR_CLONES
#endif

namespace fastnn::ops::cpu {

FASTNN_VECTOR_CLONES
void add_shifted_sums(const float* x, int64_t rows, int64_t c, const double* shift, double* acc) {
  shifted_sums_loop(x, 0, rows, c, shift, acc);
}

FASTNN_VECTOR_CLONES
void add_gradient_sums(const float* g, const float* x, int64_t rows, int64_t c, const float* mean, double* acc) {
  gradient_sums_loop([g](int64_t i) { return g[i]; }, x, 0, rows, c, mean, acc);
}

FASTNN_VECTOR_CLONES
void normalize_rows(const float* x, int64_t rows, int64_t c, const float* scale, const float* shift,
                    RowEpilogue epilogue, const float* residual, float* y) {
  switch (epilogue) {
    case RowEpilogue::kNone: return normalize_loop(x, 0, rows, c, scale, shift, NoEpilogue<float>{}, y);
    case RowEpilogue::kRelu: return normalize_loop(x, 0, rows, c, scale, shift, ReluEpilogue<float>{}, y);
    case RowEpilogue::kRelu6: return normalize_loop(x, 0, rows, c, scale, shift, Relu6Epilogue<float>{}, y);
    case RowEpilogue::kAddRelu: return normalize_loop(x, 0, rows, c, scale, shift, AddReluEpilogue<float>{residual}, y);
  }
}

FASTNN_VECTOR_CLONES
void input_gradient_rows(const float* g, const float* x, int64_t rows, int64_t c, const InputGradientCoefficients& co,
                         float* dx) {
  input_gradient_loop([g](int64_t i) { return g[i]; }, x, 0, rows, c, co, dx);
}

}  // namespace fastnn::ops::cpu

#undef FASTNN_VECTOR_CLONES
