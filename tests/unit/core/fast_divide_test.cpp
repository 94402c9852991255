// FastDivide (core/fast_divide.h) against plain division: every divisor up to 4096 and the ones around
// each power of two up to 2^31, over the dividends where a magic-number division goes wrong if anything
// does (around multiples of the divisor, the top of the range) and pseudo-random ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/fast_divide.h"

namespace fastnn {
namespace {

constexpr uint32_t kTop = (uint32_t{1} << 31) - 1;

void check_divisor(uint32_t d, uint64_t& seed) {
  const FastDivide f(d);
  std::vector<uint32_t> n = {0, 1, d - 1, d, kTop, kTop - 1, kTop - d + 1};
  if (d < kTop) n.push_back(d + 1);
  for (uint64_t k : {uint64_t{2}, uint64_t{3}, uint64_t{1000}, uint64_t{kTop} / d}) {
    const uint64_t m = k * d;
    for (int64_t delta = -1; delta <= 1; ++delta)
      if (m + delta <= kTop) n.push_back(static_cast<uint32_t>(m + delta));
  }
  for (int i = 0; i < 64; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    n.push_back(static_cast<uint32_t>(seed >> 33) & kTop);
  }
  for (uint32_t v : n) {
    ASSERT_EQ(f.div(v), v / d) << v << " / " << d;
    ASSERT_EQ(f.mod(v), v % d) << v << " % " << d;
  }
}

TEST(FastDivide, EqualsDivisionForSmallDivisors) {
  uint64_t seed = 1;
  for (uint32_t d = 1; d <= 4096; ++d) check_divisor(d, seed);
}

TEST(FastDivide, EqualsDivisionAroundPowersOfTwo) {
  uint64_t seed = 2;
  for (int s = 1; s <= 31; ++s) {
    const uint64_t p = uint64_t{1} << s;
    for (int64_t delta = -3; delta <= 3; ++delta) {
      const uint64_t d = p + delta;
      if (d >= 1 && d <= kTop) check_divisor(static_cast<uint32_t>(d), seed);
    }
  }
  // The shapes of real layers: H*W of every ResNet/Inception stage and channel counts.
  for (uint32_t d : {49u, 64u, 196u, 289u, 784u, 1225u, 3136u, 5329u, 12544u, 22201u, 89401u, 1001u, 2048u})
    check_divisor(d, seed);
}

TEST(FastDivide, FitsNamesTheExactRange) {
  EXPECT_TRUE(FastDivide::fits(0));
  EXPECT_TRUE(FastDivide::fits(kTop));
  EXPECT_FALSE(FastDivide::fits(int64_t{1} << 31));
  EXPECT_FALSE(FastDivide::fits(-1));
}

}  // namespace
}  // namespace fastnn
