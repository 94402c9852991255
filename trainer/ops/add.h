// add: y = x0 + x1 + ... (2 to 16 inputs of the same shape and dtype; no broadcasting), summed left to
// right. y may alias an input. Backward: every dx_i = dy.
#pragma once

#include <cstdint>
#include <span>

#include "trainer/ops/op.h"

namespace fastnn::ops {

void register_add(OpRegistry& registry);

namespace cpu {
template <typename T>
void add_forward(int64_t count, std::span<const T* const> xs, T* y);
}  // namespace cpu
}  // namespace fastnn::ops
