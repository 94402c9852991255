// Parameter / state initialisation from a TensorSpec's Init tag (CPU tensors, f32 or f64).
//   kZeros, kOnes: constants. kHeNormal: N(0, 2 / fan_in). kGlorotUniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
// Random draws are Philox (ops/random.h) keyed by `seed` with element index as counter, so a tensor's
// values depend only on (seed, spec), not on threads. kNone leaves the tensor unchanged.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

namespace fastnn::ops {

void init_tensor(Tensor& t, const TensorSpec& spec, uint64_t seed);

}  // namespace fastnn::ops
