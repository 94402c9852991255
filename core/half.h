// 16-bit floats as bits: IEEE 754 binary16 (f16) and bfloat16 (bf16) to and from float.
// float → 16-bit rounds to nearest even (what CUDA's __float2half_rn / __float2bfloat16_rn give for
// numbers), overflow goes to infinity; a NaN stays a NaN with its sign and the top bits of its payload,
// made quiet (checkpoints keep what they were given); 16-bit → float is exact. Header-only so the
// pipeline's per-pixel conversion inlines; used by the pipeline (half batches), tensors and
// checkpoints alike so all three agree bit for bit.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace fastnn {

inline uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t exp = (x >> 23) & 0xFFu;
  uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) return sign | (mant ? 0x7E00u | (mant >> 13) : 0x7C00u);  // NaN (quiet) or infinity
  const int e = static_cast<int>(exp) - 127 + 15;             // rebiased exponent
  if (e >= 0x1F) return sign | 0x7C00u;                        // overflow
  if (e <= 0) {
    // Subnormal (or zero) in f16: shift the mantissa with its implicit bit into place, rounding.
    if (e < -10) return sign;  // below half the smallest subnormal
    mant |= 0x800000u;
    const int shift = 14 - e;  // 24-bit significand down to (10 + e)-bit field
    const uint32_t half = 1u << (shift - 1);
    const uint32_t rest = mant & ((1u << shift) - 1);
    uint32_t h = mant >> shift;
    if (rest > half || (rest == half && (h & 1))) ++h;  // may carry into the smallest normal: correct
    return sign | static_cast<uint16_t>(h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;  // a carry may reach infinity: correct
  return sign | static_cast<uint16_t>(h);
}

inline float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);  // exact: subnormal or zero
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

inline uint16_t f32_to_bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounded = x + 0x7FFFu + ((x >> 16) & 1u);  // ties to even; overflow lands on inf
  return static_cast<uint16_t>(rounded >> 16);
}

inline float bf16_bits_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

}  // namespace fastnn
