// Philox against Random123's published known-answer vectors; the sample RNG's keying; binary16.
#include <cmath>
#include <cstring>
#include <set>

#include <gtest/gtest.h>

#include "pipeline/half.h"
#include "pipeline/rng.h"

namespace fastnn::pipeline {
namespace {

TEST(Philox, Random123KnownAnswers) {
  // kat_vectors: philox4x32 10 <ctr x4> <key x2> -> <out x4>
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (PhiloxCounter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (PhiloxCounter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(SampleRng, PureFunctionOfItsKey) {
  SampleRng a(7, 3, 1000, RngStream::kAugment), b(7, 3, 1000, RngStream::kAugment);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(a.next_u32(), b.next_u32());
  // Any change of seed, epoch, index or stream gives another sequence.
  auto first = [](SampleRng r) { return r.next_u64(); };
  std::set<uint64_t> firsts = {first(SampleRng(7, 3, 1000, RngStream::kAugment)),
                               first(SampleRng(8, 3, 1000, RngStream::kAugment)),
                               first(SampleRng(7, 4, 1000, RngStream::kAugment)),
                               first(SampleRng(7, 3, 1001, RngStream::kAugment)),
                               first(SampleRng(7, 3, 1000, RngStream::kColor)),
                               first(SampleRng(7, uint64_t{3} << 32, 1000, RngStream::kAugment))};
  EXPECT_EQ(firsts.size(), 6u);
}

TEST(SampleRng, RangesAndRoughUniformity) {
  SampleRng r(1, 0, 0, RngStream::kUser);
  int buckets[10] = {};
  for (int i = 0; i < 100000; ++i) {
    float u = r.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    uint64_t k = r.below(10);
    ASSERT_LT(k, 10u);
    ++buckets[k];
    double d = r.uniform_double();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
  for (int b : buckets) EXPECT_NEAR(b, 10000, 600);  // > 6 sigma
}

// Reference: exact rounding through double arithmetic.
uint16_t half_reference(float f) {
  if (std::isnan(f)) return 0x7E00;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  double a = std::fabs(static_cast<double>(f));
  if (a == 0) return sign;
  // Candidate halves around a: step is 2^(e-10) for normal exponent e >= -14, else 2^-24.
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, -14);
  double step = std::ldexp(1.0, exp - 10);
  double q = a / step;
  double fl = std::floor(q);
  double rem = q - fl;
  double n = fl;
  if (rem > 0.5 || (rem == 0.5 && std::fmod(fl, 2.0) == 1.0)) n += 1;
  double v = n * step;
  if (v >= 65536.0 - 16.0) return sign | 0x7C00;  // 65520 and above round to infinity
  // Encode v exactly.
  if (v < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(v / std::ldexp(1.0, -24));
  int ve;
  double vm = std::frexp(v, &ve);
  uint16_t biased = static_cast<uint16_t>(ve - 1 + 15);
  uint16_t mant = static_cast<uint16_t>((vm * 2 - 1) * 1024);
  return sign | static_cast<uint16_t>(biased << 10) | mant;
}

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t v = static_cast<uint16_t>(h);
    bool nan = (v & 0x7C00) == 0x7C00 && (v & 0x3FF) != 0;
    float f = half_to_float(v);
    if (nan) {
      EXPECT_TRUE(std::isnan(f));
      continue;
    }
    ASSERT_EQ(float_to_half(f), v) << std::hex << h;
  }
}

TEST(Half, RoundsToNearestEvenLikeExactArithmetic) {
  SampleRng r(3, 0, 0, RngStream::kUser);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = r.next_u32();
    // Bias towards the half range (exponents 100..145) so subnormals, normals and overflow all occur.
    bits = (bits & 0x807FFFFFu) | ((100u + bits % 46u) << 23);
    float f;
    std::memcpy(&f, &bits, 4);
    ASSERT_EQ(float_to_half(f), half_reference(f)) << f;
  }
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3C00);      // tie, even stays
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3C02);      // tie, odd rounds up
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);   // tie between 0 and the smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
}

}  // namespace
}  // namespace fastnn::pipeline
