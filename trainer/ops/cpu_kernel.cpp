#include "trainer/ops/cpu_kernel.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include "trainer/ops/blas_core.h"

namespace fastnn::ops {

namespace cpu {

namespace {
blasint to_blas(int64_t v) {
  FASTNN_CHECK(v >= 0 && v <= INT_MAX, "GEMM dimension ", v, " exceeds the BLAS int range");
  return static_cast<blasint>(v);
}
}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              to_blas(m), to_blas(n), to_blas(k), alpha, a, to_blas(lda), b, to_blas(ldb), beta, c, to_blas(ldc));
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              to_blas(m), to_blas(n), to_blas(k), alpha, a, to_blas(lda), b, to_blas(ldb), beta, c, to_blas(ldc));
}

void gemv(int64_t m, int64_t n, const float* a, int64_t lda, const float* x, float* y) {
  cblas_sgemv(CblasRowMajor, CblasNoTrans, to_blas(m), to_blas(n), 1.0f, a, to_blas(lda), x, 1, 0.0f, y, 1);
}

void gemv(int64_t m, int64_t n, const double* a, int64_t lda, const double* x, double* y) {
  cblas_dgemv(CblasRowMajor, CblasNoTrans, to_blas(m), to_blas(n), 1.0, a, to_blas(lda), x, 1, 0.0, y, 1);
}

void use_single_threaded_blas() {
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

int64_t parallel_slots(int64_t n) {
  const int64_t conc = tbb::this_task_arena::max_concurrency();
  return std::max<int64_t>(1, std::min<int64_t>(n, conc));
}

}  // namespace cpu
}  // namespace fastnn::ops
