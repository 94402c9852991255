// IEEE 754 binary16 from float, round to nearest even (what CUDA's __float2half_rn gives), so
// half batches hold exactly the values a GPU conversion of the float batch would.
#pragma once

#include <cstdint>
#include <cstring>

namespace fastnn::pipeline {

inline uint16_t float_to_half(float value) {
  uint32_t f;
  std::memcpy(&f, &value, 4);
  uint32_t sign = (f >> 16) & 0x8000u;
  uint32_t abs = f & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                                               // below 2^-14: subnormal or 0
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);            // below 2^-25: rounds to 0
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14..24: value = mant * 2^(exp-150), half unit = 2^-24
    uint32_t half = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((abs >> 13) - (112u << 10));  // rebias exponent 127 -> 15
  uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | half);
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t{h} & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t f;
  if (exp == 0x1F) {
    f = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {
    f = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    f = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400u) == 0);
    f = sign | ((112u - e) << 23) | ((mant & 0x3FFu) << 13);
  }
  float out;
  std::memcpy(&out, &f, 4);
  return out;
}

}  // namespace fastnn::pipeline
