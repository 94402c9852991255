// Shared plumbing for the op implementations (not for op users): spec checks, the f32/f64 dispatch
// of CPU kernel classes, single-threaded GEMM and the TBB slot count.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "trainer/ops/op.h"

namespace fastnn::ops {

// The dtype of the first floating input; ConfigError if there is none or another floating input
// differs.
DType compute_dtype(std::string_view op, std::span<const TensorSpec> inputs);
// ConfigError unless there are exactly n inputs (or, with n_max > n, between n and n_max).
void expect_inputs(std::string_view op, std::span<const TensorSpec> inputs, size_t n, size_t n_max = 0);
// ConfigError unless input i has one of the ranks, all dims > 0.
void expect_rank(std::string_view op, std::span<const TensorSpec> inputs, size_t i,
                 std::initializer_list<int> ranks);
// ConfigError unless input i is an integer tensor (i32 or i64) of the given shape.
void expect_labels(std::string_view op, std::span<const TensorSpec> inputs, size_t i, const Shape& shape);

// `s` renamed (building a new spec sidesteps a GCC 12 -Wrestrict false positive on string assignment).
inline TensorSpec renamed(const TensorSpec& s, std::string name) {
  return TensorSpec{std::move(name), s.shape, s.dtype, s.init, s.fan_in, s.fan_out, s.weight_decay};
}

// The signature's inputs: the given specs with names attached, all with a gradient unless listed.
std::vector<TensorSpec> named_inputs(std::span<const TensorSpec> inputs, std::initializer_list<const char*> names);

// make_cpu_kernel<Conv2dCpu>(op, dtype, args...) -> Conv2dCpu<float> or Conv2dCpu<double>.
template <template <typename> class K, typename... Args>
std::unique_ptr<OpKernel> make_cpu_kernel(std::string_view op, DType dt, Args&&... args) {
  if (dt == DType::kF32) return std::make_unique<K<float>>(std::forward<Args>(args)...);
  if (dt == DType::kF64) return std::make_unique<K<double>>(std::forward<Args>(args)...);
  throw ConfigError(str(op, ": the CPU kernel computes in f32 or f64, not ", dtype_name(dt)));
}

namespace cpu {

// Row-major C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, OpenBLAS on the calling thread.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// Sets OpenBLAS to one thread unless it already is; call outside parallel regions, before GEMMs.
void use_single_threaded_blas();

// How many per-thread partial buffers a kernel over n items should plan for:
// min(n, oneTBB's max concurrency), at least 1.
int64_t parallel_slots(int64_t n);

// f(begin, end) over [0, count) in parallel chunks of at least `grain` items.
template <typename F>
void parallel_range(int64_t count, int64_t grain, F&& f) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { f(r.begin(), r.end()); });
}
inline constexpr int64_t kElementwiseGrain = 1 << 14;

// Workspace as a typed span.
template <typename T>
std::span<T> workspace_span(const Tensor& ws, size_t bytes) {
  if (bytes == 0) return {};
  return std::span<T>(static_cast<T*>(const_cast<void*>(ws.raw())), bytes / sizeof(T));
}

}  // namespace cpu
}  // namespace fastnn::ops
