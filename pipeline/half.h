// The pipeline's names for core/half.h's f16 conversions (round to nearest even, as CUDA's
// __float2half_rn), so half batches hold exactly the values a GPU conversion of the float batch would.
#pragma once

#include <cstdint>

#include "core/half.h"

namespace fastnn::pipeline {

inline uint16_t float_to_half(float value) { return f32_to_f16_bits(value); }
inline float half_to_float(uint16_t h) { return f16_bits_to_f32(h); }

}  // namespace fastnn::pipeline
