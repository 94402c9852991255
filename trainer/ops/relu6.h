// relu6: y = min(max(x, 0), 6), any shape (MobileNet's activation; TF's tf.nn.relu6). y may alias x.
// Backward: dx = dy where 0 < y < 6, else 0 (the gradient at the kinks x == 0 and x == 6 is taken as
// 0, as TF's Relu6Grad does); dx may alias dy.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_relu6(OpRegistry& registry);

namespace cpu {
// The element formulas of every CPU relu6 (relu6_cpu.cpp; batch_norm_nhwc.cpp's fused batch norm).
template <typename T>
inline T relu6_value(T x) {
  const T v = x > T(0) ? x : T(0);
  return v < T(6) ? v : T(6);
}
template <typename T>
inline T relu6_gradient(T y, T dy) {
  return (y > T(0)) & (y < T(6)) ? dy : T(0);
}

template <typename T>
void relu6_forward(int64_t count, const T* x, T* y);
template <typename T>
void relu6_backward(int64_t count, const T* y, const T* dy, T* dx);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/relu6_cuda.cu): the CPU functions' names and arguments plus a stream; T is
// float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void relu6_forward(int64_t count, const T* x, T* y, cudaStream_t s);
template <typename T>
void relu6_backward(int64_t count, const T* y, const T* dy, T* dx, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (relu6_cuda.cu); register_relu6 adds it.
void register_relu6_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
