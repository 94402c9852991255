#include "trainer/ops/cpu_kernel.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include "trainer/ops/blas_core.h"

namespace fastnn::ops {

DType compute_dtype(std::string_view op, std::span<const TensorSpec> inputs) {
  const TensorSpec* first = nullptr;
  for (const TensorSpec& t : inputs) {
    if (!is_floating(t.dtype)) continue;
    if (!first) first = &t;
    if (t.dtype != first->dtype)
      throw ConfigError(str(op, ": floating inputs mix ", dtype_name(first->dtype), " and ", dtype_name(t.dtype)));
  }
  if (!first) throw ConfigError(str(op, ": no floating input"));
  return first->dtype;
}

void expect_inputs(std::string_view op, std::span<const TensorSpec> inputs, size_t n, size_t n_max) {
  if (n_max < n) n_max = n;
  if (inputs.size() < n || inputs.size() > n_max)
    throw ConfigError(str(op, ": ", inputs.size(), " inputs, expected ", n == n_max ? str(n) : str(n, "..", n_max)));
}

void expect_rank(std::string_view op, std::span<const TensorSpec> inputs, size_t i,
                 std::initializer_list<int> ranks) {
  const Shape& s = inputs[i].shape;
  bool ok = false;
  for (int r : ranks) ok = ok || static_cast<int>(s.size()) == r;
  for (int64_t d : s) ok = ok && d > 0;
  if (!ok) {
    std::string want;
    for (int r : ranks) want += str(want.empty() ? "" : " or ", r);
    throw ConfigError(str(op, ": input ", i, " has shape ", shape_str(s), ", expected rank ", want,
                          " with positive dims"));
  }
  shape_numel(s);  // bounds the element count
}

void expect_labels(std::string_view op, std::span<const TensorSpec> inputs, size_t i, const Shape& shape) {
  const TensorSpec& t = inputs[i];
  if ((t.dtype != DType::kI32 && t.dtype != DType::kI64) || t.shape != shape)
    throw ConfigError(str(op, ": labels are ", dtype_name(t.dtype), shape_str(t.shape), ", expected i32 or i64 ",
                          shape_str(shape)));
}

std::vector<TensorSpec> named_inputs(std::span<const TensorSpec> inputs, std::initializer_list<const char*> names) {
  std::vector<TensorSpec> v;
  auto it = names.begin();
  for (size_t i = 0; i < inputs.size(); ++i) v.push_back(renamed(inputs[i], it != names.end() ? *it++ : str("x", i)));
  return v;
}

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

void use_single_threaded_blas() {
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

int64_t parallel_slots(int64_t n) {
  const int64_t conc = tbb::this_task_arena::max_concurrency();
  return std::max<int64_t>(1, std::min<int64_t>(n, conc));
}

}  // namespace cpu
}  // namespace fastnn::ops
