// scale: y = scale * x, any shape (Inception-ResNet residual scaling). y may alias x.
// Attributes: scale (float, required). Backward: dx = scale * dy.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_scale(OpRegistry& registry);

namespace cpu {
template <typename T>
void scale_forward(int64_t count, T scale, const T* x, T* y);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/elementwise_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void scale_forward(int64_t count, float scale, const T* x, T* y, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (scale_cuda.cpp); register_scale adds it.
void register_scale_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
