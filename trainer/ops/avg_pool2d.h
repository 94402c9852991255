// avg_pool2d: y[n,c,p,q] = mean of x over the window, NCHW.
// Attributes: kernel, stride (default: kernel), padding (see window2d.h; pads smaller than the
// window), count_include_pad (default false).
// count_include_pad = false (TensorFlow's behaviour): the divisor is the number of window positions
// inside the image. true (Caffe / PyTorch default): the divisor is always kernel_h * kernel_w, padded
// zeros included. Backward spreads dy / divisor over the same positions; dx is overwritten.
#pragma once

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include "trainer/ops/window2d.h"

namespace fastnn::ops {

void register_avg_pool2d(OpRegistry& registry);

namespace cpu {
template <typename T>
void avg_pool2d_forward(const Pool2dParams& p, const T* x, T* y);
template <typename T>
void avg_pool2d_backward(const Pool2dParams& p, const T* dy, T* dx);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/window_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void avg_pool2d_forward(const Pool2dParams& p, const T* x, T* y, cudaStream_t s);
template <typename T>
void avg_pool2d_backward(const Pool2dParams& p, const T* dy, T* dx, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (avg_pool2d_cuda.cpp); register_avg_pool2d adds it.
void register_avg_pool2d_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
