// global_avg_pool: x [N, C, H, W] -> y [N, C], y[n,c] = mean over H, W. Backward: dx = dy / (H*W).
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

namespace fastnn::ops {

void register_global_avg_pool(OpRegistry& registry);

namespace cpu {
// planes = N*C, hw = H*W.
template <typename T>
void global_avg_pool_forward(int64_t planes, int64_t hw, const T* x, T* y);
template <typename T>
void global_avg_pool_backward(int64_t planes, int64_t hw, const T* dy, T* dx);
}  // namespace cpu
}  // namespace fastnn::ops
