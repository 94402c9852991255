// max_pool2d: y[n,c,p,q] = max over the window of x (padding never wins), NCHW.
// Attributes: kernel, stride (default: kernel), padding ("valid", "same", or ints; see window2d.h;
// every pad must be smaller than the window).
// Ties: the first maximum in scan order (window rows top to bottom, then columns left to right) is
// the argmax and receives the whole gradient. Backward recomputes the argmax from x (no saved
// indices), so it needs the forward's x; dx is overwritten.
#pragma once

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include "trainer/ops/window2d.h"

namespace fastnn::ops {

void register_max_pool2d(OpRegistry& registry);

namespace cpu {
template <typename T>
void max_pool2d_forward(const Pool2dParams& p, const T* x, T* y);
template <typename T>
void max_pool2d_backward(const Pool2dParams& p, const T* x, const T* dy, T* dx);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/window_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void max_pool2d_forward(const Pool2dParams& p, const T* x, T* y, cudaStream_t s);
// ws: max_pool2d_workspace_bytes(p) bytes (each window's argmax, one byte; 0 for 1x1 windows and for
// tensors of 2^31 elements or more, whose backward recomputes the argmaxes). accumulate: add into dx (it
// holds another consumer's gradient of x: ResNet's stride-2 shortcut pools), bitwise the sum the graph's
// scratch buffer and add kernel would give.
template <typename T>
void max_pool2d_backward(const Pool2dParams& p, const T* x, const T* dy, T* dx, void* ws, cudaStream_t s,
                         bool accumulate = false);
size_t max_pool2d_workspace_bytes(const Pool2dParams& p);
}  // namespace gpu
// The kCuda kernel (max_pool2d_cuda.cpp); register_max_pool2d adds it.
void register_max_pool2d_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
