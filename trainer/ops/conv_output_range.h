// The output positions a convolution window touches the input at, shared by the CPU convolution
// kernels that skip the padding instead of reading zeros.
#pragma once

#include <algorithm>
#include <cstdint>

namespace fastnn::ops {

// The output range [lo, hi) of `count` outputs for which i = o*stride + off lies inside [0, size).
inline void valid_output_range(int64_t off, int64_t stride, int64_t size, int64_t count, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = size - 1 - off < 0 ? 0 : std::min(count, (size - 1 - off) / stride + 1);
  lo = std::min(lo, hi);
}

}  // namespace fastnn::ops
