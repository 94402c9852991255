// What the CPU head and the device head compute alike (trainer/head/head_math.h), walked on the host:
// the initial weights are the Xavier-uniform formula of the seed and the global class id; the label's
// column is label - begin on the full path and its index among the sampled rows on PartialFC's (every
// case against std::lower_bound, an empty sample included); the top-5 kept by offering candidates one at a time is the top 5 of
// a full sort (ties to the smaller class id), whatever the order and however the candidates are split
// into per-rank lists and merged; merged_hits counts top-1/top-5 from the all-gathered layout and
// skips the empty (-inf) slots of a short list; a non-finite value (NaN, +-inf) is never a candidate,
// whether the list is full or not.
#include "trainer/head/head_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "trainer/ops/random.h"

namespace fastnn::head {
namespace {

TEST(HeadMath, InitialWeightIsXavierUniformOfSeedClassAndElement) {
  const double bound = initial_weight_bound(512, 1000);
  EXPECT_EQ(bound, std::sqrt(6.0 / 1512.0));
  for (int64_t cls : {0, 7, 999}) {
    for (int64_t d : {0, 3, 511}) {
      const uint32_t word = ops::philox_word(42 ^ (static_cast<uint64_t>(cls) * 0x9E3779B97F4A7C15ull), 0x68656164,
                                             static_cast<uint64_t>(d));
      EXPECT_EQ(initial_weight(42, cls, d, bound), (2.0 * ops::uniform01(word) - 1.0) * bound);
      EXPECT_LE(std::abs(initial_weight(42, cls, d, bound)), bound);
    }
  }
  EXPECT_NE(initial_weight(42, 1, 0, bound), initial_weight(43, 1, 0, bound));
  EXPECT_NE(initial_weight(42, 1, 0, bound), initial_weight(42, 2, 0, bound));
}

TEST(HeadMath, TargetColumnOnTheFullAndTheSampledPath) {
  EXPECT_EQ(target_column(10, 10, 20), 0);
  EXPECT_EQ(target_column(19, 10, 20), 9);
  EXPECT_EQ(target_column(9, 10, 20), -1);
  EXPECT_EQ(target_column(20, 10, 20), -1);
  EXPECT_EQ(target_column(-1, 0, 20), -1);
  EXPECT_EQ(sampled_target_column(10, 10, 20, nullptr, 0), -1);  // nothing sampled
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t begin = static_cast<int64_t>(rng() % 50), end = begin + static_cast<int64_t>(rng() % 40);
    std::vector<int64_t> cols;
    for (int64_t r = 0; r < end - begin; ++r)
      if (rng() % 3 == 0) cols.push_back(r);
    const auto m = static_cast<int64_t>(cols.size());
    for (int64_t label = begin - 3; label < end + 3; ++label) {
      int64_t want = -1;
      if (label >= begin && label < end) {
        const auto it = std::lower_bound(cols.begin(), cols.end(), label - begin);
        if (it != cols.end() && *it == label - begin) want = it - cols.begin();
      }
      ASSERT_EQ(sampled_target_column(label, begin, end, cols.data(), m), want) << "label " << label << " of [" << begin << ", " << end << ")";
    }
  }
}

using Pair = std::pair<double, int64_t>;

// The reference: every candidate sorted (higher value, then smaller class), the first five.
std::vector<Pair> sorted_top(std::vector<Pair> all) {
  std::sort(all.begin(), all.end(), [](const Pair& a, const Pair& b) { return TopCandidates::better(a.first, a.second, b.first, b.second); });
  if (all.size() > kTopK) all.resize(kTopK);
  return all;
}

std::vector<Pair> pairs_of(const TopCandidates& t) {
  std::vector<Pair> out;
  for (int q = 0; q < t.found; ++q) out.push_back({t.value[q], t.cls[q]});
  return out;
}

TEST(HeadMath, OfferedTopFiveIsTheSortedTopFiveInAnyOrderAndAnySplit) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = static_cast<int>(rng() % 30);
    std::vector<Pair> all;
    for (int c = 0; c < n; ++c) all.push_back({static_cast<double>(rng() % 7) - 3.0, c});  // many ties
    std::shuffle(all.begin(), all.end(), rng);
    TopCandidates one;
    for (const Pair& p : all) one.offer(p.first, p.second);
    const std::vector<Pair> want = sorted_top(all);
    ASSERT_EQ(pairs_of(one), want);
    // Split into 3 lists (as 3 ranks would hold them), each kept to 5, merged in either order.
    TopCandidates parts[3];
    for (size_t i = 0; i < all.size(); ++i) parts[i % 3].offer(all[i].first, all[i].second);
    TopCandidates fwd, bwd;
    for (int q = 0; q < 3; ++q) fwd.merge(parts[q]);
    for (int q = 2; q >= 0; --q) bwd.merge(parts[q]);
    ASSERT_EQ(pairs_of(fwd), want);
    ASSERT_EQ(pairs_of(bwd), want);
  }
}

TEST(HeadMath, NonFiniteValuesAreNeverCandidates) {
  const double nan = std::nan(""), inf = HUGE_VAL;
  std::mt19937 rng(9);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = static_cast<int>(rng() % 12);
    std::vector<Pair> finite;
    TopCandidates got;
    for (int c = 0; c < n + 4; ++c) {
      // Four non-finite values among the finite ones, anywhere: before the list is full too.
      if (rng() % 3 == 0 || c >= n) {
        const double bad[] = {nan, -nan, inf, -inf};
        got.offer(bad[rng() % 4], 1000 + c);
        continue;
      }
      const Pair p{static_cast<double>(rng() % 5) - 2.0, c};
      finite.push_back(p);
      got.offer(p.first, p.second);
    }
    ASSERT_EQ(pairs_of(got), sorted_top(finite)) << "trial " << trial;
  }
  // The first offer a NaN: it must not hold slot 0 (no comparison would ever move it).
  TopCandidates t;
  t.offer(nan, 0);
  EXPECT_EQ(t.found, 0);
  t.offer(0.5, 1);
  t.offer(inf, 2);
  t.offer(-inf, 3);
  t.offer(0.25, 4);
  EXPECT_EQ(pairs_of(t), (std::vector<Pair>{{0.5, 1}, {0.25, 4}}));
  // Merged over lists, and through the gathered layout: the same.
  TopCandidates other;
  other.offer(nan, 5);
  other.offer(0.375, 6);
  t.merge(other);
  EXPECT_EQ(pairs_of(t), (std::vector<Pair>{{0.5, 1}, {0.375, 6}, {0.25, 4}}));
  std::vector<double> all(static_cast<size_t>(kTopK * 2));
  t.write(all.data());
  EXPECT_EQ(merged_hits(all.data(), 1, 1, 0, 6).top5, 1);
  EXPECT_EQ(merged_hits(all.data(), 1, 1, 0, 1).top1, 1);
}

TEST(HeadMath, MergedHitsFromTheGatheredLayoutSkipEmptySlots) {
  // 2 sources x 2 rows; source 1 holds only two classes (its other slots empty).
  const int64_t rows = 2;
  std::vector<double> all(static_cast<size_t>(2 * rows * kTopK * 2));
  TopCandidates s0r0, s0r1, s1r0, s1r1;
  for (int c = 0; c < 6; ++c) {
    s0r0.offer(0.1 * c, c);         // row 0 on source 0: classes 0..5, best 5
    s0r1.offer(-0.1 * c, c);        // row 1 on source 0: best 0
  }
  s1r0.offer(0.45, 100);  // between class 4 (0.4) and 5 (0.5)
  s1r0.offer(-5, 101);
  s1r1.offer(1.0, 100);   // the best of row 1
  s0r0.write(&all[((0 * rows + 0) * kTopK) * 2]);
  s0r1.write(&all[((0 * rows + 1) * kTopK) * 2]);
  s1r0.write(&all[((1 * rows + 0) * kTopK) * 2]);
  s1r1.write(&all[((1 * rows + 1) * kTopK) * 2]);
  EXPECT_EQ(all[((1 * rows + 0) * kTopK + 2) * 2], -HUGE_VAL);  // an empty slot
  auto hits = [&](int64_t row, int64_t label) {
    const TopHits h = merged_hits(all.data(), 2, rows, row, label);
    return std::make_pair(h.top1, h.top5);
  };
  EXPECT_EQ(hits(0, 5), std::make_pair(1, 1));
  EXPECT_EQ(hits(0, 100), std::make_pair(0, 1));  // second
  EXPECT_EQ(hits(0, 2), std::make_pair(0, 1));    // fifth: 5, 100, 4, 3, 2
  EXPECT_EQ(hits(0, 1), std::make_pair(0, 0));
  EXPECT_EQ(hits(0, 101), std::make_pair(0, 0));
  EXPECT_EQ(hits(1, 100), std::make_pair(1, 1));
  EXPECT_EQ(hits(1, 0), std::make_pair(0, 1));
  // One source only: row 0's top-1 is class 5.
  EXPECT_EQ(merged_hits(all.data(), 1, rows, 0, 5).top1, 1);
}

}  // namespace
}  // namespace fastnn::head
