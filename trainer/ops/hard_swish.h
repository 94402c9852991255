// hard_swish: y = x * min(max(x + 3, 0), 6) / 6, any shape (MobileNet v3's activation; PyTorch's
// nn.Hardswish, tf.keras's hard_swish, ONNX HardSwish). y may alias x.
// Backward, from the input x (as PyTorch's hardswish_backward): dx = 0 where x < -3, dy * (x / 3 + 0.5)
// where -3 <= x <= 3, dy where x > 3; dx may alias dy. The backward reads x, so a caller that runs the
// forward in place cannot differentiate it.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_hard_swish(OpRegistry& registry);

// The element formulas, in PyTorch's order of operations, for every device (the CUDA kernels call them
// in float).
template <typename T>
FASTNN_HD inline T hard_swish_value(T x) {
  const T r = x + T(3) > T(0) ? x + T(3) : T(0);
  return x * (r < T(6) ? r : T(6)) / T(6);
}
template <typename T>
FASTNN_HD inline T hard_swish_gradient(T x, T dy) {
  if (x < T(-3)) return T(0);
  return x <= T(3) ? dy * (x / T(3) + T(0.5)) : dy;
}

namespace cpu {

template <typename T>
void hard_swish_forward(int64_t count, const T* x, T* y);
template <typename T>
void hard_swish_backward(int64_t count, const T* x, const T* dy, T* dx);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/elementwise_kernels.cu): the CPU functions' names and arguments plus a stream;
// T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void hard_swish_forward(int64_t count, const T* x, T* y, cudaStream_t s);
template <typename T>
void hard_swish_backward(int64_t count, const T* x, const T* dy, T* dx, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (hard_swish_cuda.cpp); register_hard_swish adds it.
void register_hard_swish_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
