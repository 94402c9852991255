// relu: y = max(x, 0), any shape. y may alias x (in place).
// Backward: dx = dy where y > 0, else 0 (the gradient at x == 0 is taken as 0); dx may alias dy.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

namespace fastnn::ops {

void register_relu(OpRegistry& registry);

namespace cpu {
template <typename T>
void relu_forward(int64_t count, const T* x, T* y);
template <typename T>
void relu_backward(int64_t count, const T* y, const T* dy, T* dx);
}  // namespace cpu
}  // namespace fastnn::ops
