// PartialFC's class sampler (trainer/head/partial_fc.h): the same classes whatever the number of ranks,
// positives always in, the negative fraction within a binomial bound, a fresh sample each step; the
// same classes as a rank's local rows (sample_local_rows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/check.h"
#include "trainer/head/head_memory.h"
#include "trainer/head/partial_fc.h"
#include "trainer/ops/random.h"

namespace fastnn::head {
namespace {

// Labels spread over [0, k), with duplicates, as a global batch would have.
std::vector<int64_t> labels(int64_t k, int n, uint64_t seed) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<int64_t>(ops::philox_word(seed, 99, i) % k));
  out.push_back(out.front());
  out.push_back(out.back());
  return out;
}

std::vector<int64_t> concat_over_ranks(const std::vector<int64_t>& bounds, uint64_t seed, uint64_t step, double ratio,
                                       const std::vector<int64_t>& positives) {
  std::vector<int64_t> all;
  for (size_t r = 0; r + 1 < bounds.size(); ++r) {
    const auto part = sample_classes(seed, step, bounds[r], bounds[r + 1], ratio, positives);
    for (int64_t c : part) {
      EXPECT_GE(c, bounds[r]);
      EXPECT_LT(c, bounds[r + 1]);
    }
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

TEST(PartialFc, UnionOverRanksIsTheSameForAnyNumberOfRanks) {
  const int64_t k = 100003;
  const auto pos = labels(k, 256, 5);
  for (double ratio : {0.1, 0.37}) {
    const auto whole = sample_classes(42, 7, 0, k, ratio, pos);
    ASSERT_TRUE(std::is_sorted(whole.begin(), whole.end()));
    for (int world : {1, 2, 3, 7}) {
      std::vector<int64_t> bounds{0};
      for (int r = 0; r < world; ++r) bounds.push_back(class_range(k, world, r).second);
      EXPECT_EQ(concat_over_ranks(bounds, 42, 7, ratio, pos), whole) << world << " ranks, ratio " << ratio;
    }
    // Any split, not only the even one: ranges that start mid-block of the generator.
    EXPECT_EQ(concat_over_ranks({0, 1, 5, 6, 50001, 99999, k}, 42, 7, ratio, pos), whole);
  }
}

TEST(PartialFc, MatchesThePerClassDraw) {
  // sample_classes takes 4 classes per Philox block; class_sampled draws one class at a time.
  const auto got = sample_classes(3, 11, 3, 2003, 0.25, {});
  std::vector<int64_t> expected;
  for (int64_t c = 3; c < 2003; ++c)
    if (class_sampled(3, 11, c, 0.25)) expected.push_back(c);
  EXPECT_EQ(got, expected);
  EXPECT_FALSE(expected.empty());
}

TEST(PartialFc, RatioOneIsEveryClass) {
  const auto got = sample_classes(1, 2, 10, 1010, 1.0, std::vector<int64_t>{5, 20, 2000});
  ASSERT_EQ(got.size(), 1000u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], 10 + static_cast<int64_t>(i));
  for (int64_t c : {0, 17, 999999}) EXPECT_TRUE(class_sampled(1, 2, c, 1.0));
  EXPECT_TRUE(sample_classes(1, 2, 5, 5, 1.0, {}).empty());
  EXPECT_TRUE(sample_classes(1, 2, 5, 5, 0.5, std::vector<int64_t>{5}).empty());
}

TEST(PartialFc, PositivesInRangeAreAlwaysInOnceAndOthersNot) {
  const std::vector<int64_t> pos{-1, 3, 999, 1000, 1000, 1500, 1999, 2000, 5000, 3};
  // A ratio so small that practically no negative is drawn: the result is the in-range positives.
  const auto got = sample_classes(8, 0, 1000, 2000, 1e-9, pos);
  EXPECT_EQ(got, (std::vector<int64_t>{1000, 1500, 1999}));
  for (uint64_t step = 0; step < 20; ++step) {
    const auto s = sample_classes(8, step, 0, 100000, 0.05, pos);
    ASSERT_TRUE(std::adjacent_find(s.begin(), s.end(), std::greater_equal<>()) == s.end()) << "not strictly sorted";
    for (int64_t c : {3, 999, 1000, 1500, 1999, 2000, 5000})
      EXPECT_TRUE(std::binary_search(s.begin(), s.end(), c)) << c << " at step " << step;
  }
}

TEST(PartialFc, NegativeFractionIsWithinTheBinomialBound) {
  const int64_t k = 1000000;
  const auto pos = labels(k, 1024, 17);
  std::vector<int64_t> distinct = pos;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (double ratio : {0.01, 0.1, 0.5}) {
    const auto s = sample_classes(2026, 3, 0, k, ratio, pos);
    const double negatives_pool = static_cast<double>(k - static_cast<int64_t>(distinct.size()));
    const double negatives = static_cast<double>(s.size() - distinct.size());
    const double mean = ratio * negatives_pool, sd = std::sqrt(negatives_pool * ratio * (1 - ratio));
    EXPECT_LT(std::abs(negatives - mean), 5 * sd) << "ratio " << ratio << ": " << negatives << " vs " << mean;
    // Spread evenly: each tenth of the classes gets its share (no block or lane bias).
    for (int64_t t = 0; t < 10; ++t) {
      const auto lo = std::lower_bound(s.begin(), s.end(), t * k / 10);
      const auto hi = std::lower_bound(s.begin(), s.end(), (t + 1) * k / 10);
      const double n = static_cast<double>(hi - lo), m = ratio * k / 10;
      EXPECT_LT(std::abs(n - m), 5 * std::sqrt(m) + 1024) << "ratio " << ratio << " tenth " << t;
    }
  }
}

TEST(PartialFc, IndependentOfDropoutDrawsOnTheSameSeed) {
  // Dropout keys Philox with the bare seed and the step as stream; the sampler's tag must decorrelate
  // them, or class c would be sampled exactly when dropout element c is dropped.
  const int64_t k = 1000000;
  const double r = 0.1;
  const uint64_t threshold = ops::dropout_threshold(r);
  const auto s = sample_classes(77, 5, 0, k, r, {});
  int64_t both = 0;
  for (int64_t c : s) both += ops::philox_word(77, 5, static_cast<uint64_t>(c)) < threshold;
  const double mean = r * r * k, sd = std::sqrt(k * r * r * (1 - r * r));
  EXPECT_LT(std::abs(both - mean), 6 * sd) << both;
}

TEST(PartialFc, DifferentStepsAndSeedsDifferSameInputsRepeat) {
  const int64_t k = 200000;
  const auto a = sample_classes(1, 0, 0, k, 0.1, {});
  EXPECT_EQ(a, sample_classes(1, 0, 0, k, 0.1, {}));
  for (auto [seed, step] : {std::pair<uint64_t, uint64_t>{1, 1}, {2, 0}, {1, uint64_t{1} << 32}}) {
    const auto b = sample_classes(seed, step, 0, k, 0.1, {});
    std::vector<int64_t> common;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
    // Independent 10% samples share about 1% of the classes.
    EXPECT_NEAR(static_cast<double>(common.size()) / k, 0.01, 0.002) << "seed " << seed << " step " << step;
  }
}

TEST(PartialFc, LocalRowsAreTheRanksClassesLessItsFirst) {
  const std::vector<int64_t> pos = labels(1000, 40, 8);
  const auto classes = sample_classes(4, 9, 300, 700, 0.2, pos);
  const auto rows = sample_local_rows(4, 9, 300, 700, 0.2, pos);
  ASSERT_EQ(rows.size(), classes.size());
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i], classes[i] - 300);
  EXPECT_TRUE(sample_local_rows(4, 9, 5, 5, 0.2, pos).empty());
}

TEST(PartialFc, RejectsBadRatioAndRange) {
  for (double r : {0.0, -0.1, 1.0000001, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(sample_classes(1, 1, 0, 10, r, {}), ConfigError) << r;
    EXPECT_THROW(class_sampled(1, 1, 0, r), ConfigError) << r;
  }
  try {
    sample_classes(1, 1, 0, 10, 2.0, {});
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--sample_ratio"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sample_classes(1, 1, 10, 5, 0.5, {}), Error);
  EXPECT_THROW(sample_classes(1, 1, -1, 5, 0.5, {}), Error);
}

}  // namespace
}  // namespace fastnn::head
