// Shared plumbing for the CPU op implementations (not for op users): the f32/f64 dispatch of CPU
// kernel classes, single-threaded GEMM and the TBB slot count; the spec checks they use with every
// other device are trainer/ops/op_spec_checks.h.
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
#include "trainer/ops/op_spec_checks.h"

namespace fastnn::ops {

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

// Row-major y[m] = A[m,n] * x[n] (beta 0), OpenBLAS on the calling thread.
void gemv(int64_t m, int64_t n, const float* a, int64_t lda, const float* x, float* y);
void gemv(int64_t m, int64_t n, const double* a, int64_t lda, const double* x, double* y);

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
