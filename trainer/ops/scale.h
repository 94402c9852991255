// scale: y = scale * x, any shape (Inception-ResNet residual scaling). y may alias x.
// Attributes: scale (float, required). Backward: dx = scale * dy.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

namespace fastnn::ops {

void register_scale(OpRegistry& registry);

namespace cpu {
template <typename T>
void scale_forward(int64_t count, T scale, const T* x, T* y);
}  // namespace cpu
}  // namespace fastnn::ops
