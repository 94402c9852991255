// tanh: y = outer * tanh(inner * x), any shape (SINGA's scaled tanh is outer 1.7159, inner 0.6667).
// y may alias x. Attributes: outer (default 1, nonzero), inner (default 1).
// Backward: dx = dy * inner * outer * (1 - (y / outer)^2), from the saved-free output y.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_tanh(OpRegistry& registry);

namespace cpu {
template <typename T>
void tanh_forward(int64_t count, T outer, T inner, const T* x, T* y);
template <typename T>
void tanh_backward(int64_t count, T outer, T inner, const T* y, const T* dy, T* dx);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/elementwise_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void tanh_forward(int64_t count, float outer, float inner, const T* x, T* y, cudaStream_t s);
template <typename T>
void tanh_backward(int64_t count, float outer, float inner, const T* y, const T* dy, T* dx, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (tanh_cuda.cpp); register_tanh adds it.
void register_tanh_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
