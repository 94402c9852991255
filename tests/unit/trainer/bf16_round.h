// For the tests of the CPU's bf16 kernels: an f32 tensor's elements rounded to bfloat16 (to nearest, ties to
// even, as oneDNN's reorders round) and back to f32, the values a bf16 kernel multiplies.
#pragma once

#include <cstdint>
#include <cstring>

#include "trainer/tensor.h"

namespace fastnn::test_util {

inline void round_to_bf16(Tensor& t) {
  float* v = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&v[i], &bits, 4);
  }
}

}  // namespace fastnn::test_util
