// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11), so that every random choice
// of the pipeline is a pure function of (seed, epoch, sample index, purpose) and never of which
// thread ran first or how many threads there are.
//
//   SampleRng rng(seed, epoch, index, RngStream::kAugment);
//   float u = rng.uniform();          // [0, 1)
//   uint64_t k = rng.below(n);        // [0, n)
//
// A SampleRng is a cheap value (no state beyond the counter): make one per sample and draw from it.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace fastnn::pipeline {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// One Philox4x32 block with 10 rounds: the Random123 reference function.
inline PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    uint64_t p0 = uint64_t{kM0} * c[0];
    uint64_t p1 = uint64_t{kM1} * c[2];
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

// What the numbers are for: separate streams so that, e.g., turning colour distortion on does not
// change the crops.
enum class RngStream : uint32_t { kShuffle = 1, kAugment = 2, kColor = 3, kUser = 4, kErase = 5, kAutoAugment = 6,
                             kMix = 7, kClassBalance = 8 };

class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t epoch, uint64_t index, RngStream stream)
      : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
        ctr_{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
             static_cast<uint32_t>(epoch) ^ (static_cast<uint32_t>(epoch >> 32) * 0x9E3779B9u),
             static_cast<uint32_t>(stream) << 24} {}

  uint32_t next_u32() {
    if (used_ == 4) refill();
    return block_[used_++];
  }
  uint64_t next_u64() {
    uint64_t hi = next_u32();
    return (hi << 32) | next_u32();
  }
  // Uniform in [0, 1) with 24 random bits (exactly representable floats).
  float uniform() { return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f); }
  // Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  double uniform_double() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform integer in [0, n) for n > 0 (multiply-shift; bias below 2^-32 for n < 2^32).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next_u64()) * n) >> 64);
  }
  bool coin() { return (next_u32() & 1u) != 0; }
  // One N(0, 1) draw (Box-Muller; u1 in (0, 1] so that the logarithm is finite).
  double normal() {
    const double u1 = 1.0 - uniform_double(), u2 = uniform_double();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  void refill() {
    block_ = philox4x32_10(ctr_, key_);
    ++ctr_[3];  // low 24 bits count blocks; the stream id sits above them
    used_ = 0;
  }
  PhiloxKey key_;
  PhiloxCounter ctr_;
  PhiloxCounter block_{};
  int used_ = 4;
};

}  // namespace fastnn::pipeline
