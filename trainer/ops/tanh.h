// tanh: y = outer * tanh(inner * x), any shape (SINGA's scaled tanh is outer 1.7159, inner 0.6667).
// y may alias x. Attributes: outer (default 1, nonzero), inner (default 1).
// Backward: dx = dy * inner * outer * (1 - (y / outer)^2), from the saved-free output y.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

namespace fastnn::ops {

void register_tanh(OpRegistry& registry);

namespace cpu {
template <typename T>
void tanh_forward(int64_t count, T outer, T inner, const T* x, T* y);
template <typename T>
void tanh_backward(int64_t count, T outer, T inner, const T* y, const T* dy, T* dx);
}  // namespace cpu
}  // namespace fastnn::ops
