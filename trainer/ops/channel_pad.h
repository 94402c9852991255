// channel_pad: zero channels around x along dim 1: [N, C, ...] -> [N, before + C + after, ...]
// (the parameter-free "option A" shortcut of He et al.'s CIFAR ResNets, after a stride-2 subsample).
// Attributes: before, after (>= 0, default 0). Backward: dx is the middle channel slice of dy.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_channel_pad(OpRegistry& registry);

namespace cpu {
// inner = product of the dims after the channel dim (1 for rank 2).
template <typename T>
void channel_pad_forward(int64_t n, int64_t c, int64_t inner, int64_t before, int64_t after, const T* x, T* y);
template <typename T>
void channel_pad_backward(int64_t n, int64_t c, int64_t inner, int64_t before, int64_t after, const T* dy, T* dx);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// The kCuda kernel (channel_pad_cuda.cpp); register_channel_pad adds it.
void register_channel_pad_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
