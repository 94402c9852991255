// concat: joins 1..64 inputs along the channel axis (dim 1): [N, C_i, H, W] -> [N, sum C_i, H, W]
// (or [N, C_i] -> [N, sum C_i]); all other dims equal. No attributes (the axis is always 1).
// Backward: dx_i is the matching channel slice of dy.
#pragma once

#include <cstdint>
#include <span>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_concat(OpRegistry& registry);

namespace cpu {
// channels[i] = C_i; inner = H*W (1 for rank 2).
template <typename T>
void concat_forward(int64_t n, int64_t inner, std::span<const int64_t> channels, std::span<const T* const> xs, T* y);
// dxs[i] may be null (not wanted).
template <typename T>
void concat_backward(int64_t n, int64_t inner, std::span<const int64_t> channels, const T* dy, std::span<T* const> dxs);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// The kCuda kernel (concat_cuda.cpp); register_concat adds it.
void register_concat_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
