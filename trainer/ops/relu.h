// relu: y = max(x, 0), any shape. y may alias x (in place).
// Backward: dx = dy where y > 0, else 0 (the gradient at x == 0 is taken as 0); dx may alias dy.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_relu(OpRegistry& registry);

namespace cpu {
// The element formulas of every CPU relu (relu_cpu.cpp; the fused batch norms of batch_norm_nhwc.cpp, so
// a fused layer is bitwise the unfused pair). A select on loaded values: the loops vectorise.
template <typename T>
inline T relu_value(T x) {
  return x > T(0) ? x : T(0);
}
template <typename T>
inline T relu_gradient(T y, T dy) {
  return y > T(0) ? dy : T(0);
}

template <typename T>
void relu_forward(int64_t count, const T* x, T* y);
template <typename T>
void relu_backward(int64_t count, const T* y, const T* dy, T* dx);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/elementwise_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void relu_forward(int64_t count, const T* x, T* y, cudaStream_t s);
template <typename T>
void relu_backward(int64_t count, const T* y, const T* dy, T* dx, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (relu_cuda.cpp); register_relu adds it.
void register_relu_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
