// Division by a run-time constant as a multiply-high and a shift (the round-up method of Granlund and
// Montgomery, "Division by invariant integers using multiplication", 1994): for the per-element
// "which channel is element i in" of NCHW kernels, where a 64-bit `(i / hw) % c` costs tens of
// instructions per element on a GPU. Exact for every dividend and divisor in [1, 2^31) (dividend 0 too);
// callers fall back to plain division beyond (FastDivide::fits). Host and device (FASTNN_HD); tested on
// the CPU against `/` (fast_divide_test).
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace fastnn {

class FastDivide {
 public:
  FastDivide() = default;
  // divisor in [1, 2^31).
  explicit FastDivide(uint32_t divisor) : divisor_(divisor) {
    while (shift_ < 32 && (uint64_t{1} << shift_) < divisor) ++shift_;
    magic_ = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift_) - divisor)) / divisor + 1);
  }
  // Dividends and divisors this class divides exactly.
  static constexpr bool fits(int64_t v) { return v >= 0 && v < (int64_t{1} << 31); }

  FASTNN_HD uint32_t divisor() const { return divisor_; }
  // n / divisor for n in [0, 2^31).
  FASTNN_HD uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t t = __umulhi(n, magic_);
#else
    const uint32_t t = static_cast<uint32_t>((static_cast<uint64_t>(n) * magic_) >> 32);
#endif
    return (t + n) >> shift_;
  }
  FASTNN_HD uint32_t mod(uint32_t n) const { return n - div(n) * divisor_; }

 private:
  uint32_t divisor_ = 1, magic_ = 1;
  uint32_t shift_ = 0;
};

}  // namespace fastnn
