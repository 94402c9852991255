// Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11), the generator cuRAND also offers.
//
// A draw is a pure function of (key, counter), so element i of a dropout mask or of a parameter
// initialisation is the same on any thread count and on CPU and CUDA: no generator state is shared or
// advanced. Header-only and constexpr-friendly so a CUDA file can reuse it with __host__ __device__.
//
// Conventions used across fastnn: key = the 64-bit seed (low word first); counter = {i_lo, i_hi,
// stream_lo, stream_hi} where i indexes blocks of 4 words and `stream` separates uses (dropout: the
// training step).
#pragma once

#include <array>
#include <cstdint>

#include "core/host_device.h"
#include "core/host_device_math.h"

namespace fastnn::ops {

FASTNN_HD constexpr std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
    key = {key[0] + kW0, key[1] + kW1};
  }
  return ctr;
}

// Word i (of the stream) for a 64-bit seed: block i/4, lane i%4.
FASTNN_HD constexpr uint32_t philox_word(uint64_t seed, uint64_t stream, uint64_t i) {
  const uint64_t block = i >> 2;
  const auto out = philox4x32_10({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                  static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                                 {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  return out[i & 3];
}

// Uniform in [0, 1) with 24 random bits (exactly representable in float).
FASTNN_HD constexpr float uniform01(uint32_t word) { return static_cast<float>(word >> 8) * (1.0f / 16777216.0f); }
// Uniform in (0, 1] with 53 random bits from two words.
FASTNN_HD constexpr double uniform01_open0(uint32_t a, uint32_t b) {
  const uint64_t bits = (static_cast<uint64_t>(a) << 21) ^ (b >> 11);  // 53 bits
  return (static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) + 1.0) * (1.0 / 9007199254740992.0);
}

// Dropout keep decision: keep iff word >= threshold, threshold = round(rate * 2^32). Integer-exact, so
// CPU and CUDA agree bit for bit; P(keep) = 1 - threshold / 2^32.
FASTNN_HD inline uint64_t dropout_threshold(double rate) {
  const double t = hd::add(hd::mul(rate, 4294967296.0), 0.5);  // never an FMA: the same on both devices
  return t >= 4294967296.0 ? uint64_t{1} << 32 : static_cast<uint64_t>(t);
}

}  // namespace fastnn::ops
