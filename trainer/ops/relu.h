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
template <typename T>
void relu_forward(int64_t count, const T* x, T* y);
template <typename T>
void relu_backward(int64_t count, const T* y, const T* dy, T* dx);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/elementwise_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace cuda {
template <typename T>
void relu_forward(int64_t count, const T* x, T* y, cudaStream_t s);
template <typename T>
void relu_backward(int64_t count, const T* y, const T* dy, T* dx, cudaStream_t s);
}  // namespace cuda
// The kCuda kernel (relu_cuda.cpp); register_relu adds it.
void register_relu_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
