// global_avg_pool: x [N, C, H, W] -> y [N, C], y[n,c] = mean over H, W. Backward: dx = dy / (H*W).
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_global_avg_pool(OpRegistry& registry);

namespace cpu {
// planes = N*C, hw = H*W.
template <typename T>
void global_avg_pool_forward(int64_t planes, int64_t hw, const T* x, T* y);
template <typename T>
void global_avg_pool_backward(int64_t planes, int64_t hw, const T* dy, T* dx);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/reduce_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void global_avg_pool_forward(int64_t planes, int64_t hw, const T* x, T* y, cudaStream_t s);
template <typename T>
void global_avg_pool_backward(int64_t planes, int64_t hw, const T* dy, T* dx, cudaStream_t s);
// NHWC: x [N, hw, C] -> y [N, C] (the kernel registered with add_nhwc_kernel).
template <typename T>
void global_avg_pool_forward_nhwc(int64_t n, int64_t hw, int64_t c, const T* x, T* y, cudaStream_t s);
template <typename T>
void global_avg_pool_backward_nhwc(int64_t n, int64_t hw, int64_t c, const T* dy, T* dx, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (global_avg_pool_cuda.cpp); register_global_avg_pool adds it.
void register_global_avg_pool_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
