// converters/planner and converters/random: the shard plan's guarantees, checked as properties over
// many sizes, shard counts, class counts and both remainder policies; the PRNG's fixed outputs and
// uniformity.
#include "converters/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "converters/random.h"
#include "converters/stats.h"
#include "core/check.h"

namespace fastnn::converters {
namespace {

TEST(Random, FixedOutputs) {
  // The C++ standard fixes mt19937_64's 10000th output for the default seed ([rand.predef]).
  std::mt19937_64 e;
  e.discard(9999);
  EXPECT_EQ(e(), 9981545732273789042ull);
  // SplitMix64 of state 0 (Vigna's reference splitmix64.c: x += golden gamma, then the mixer).
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafull);
  // Stream seeds differ by stream and by seed, and are stable.
  EXPECT_NE(derive_seed(1, "split:train"), derive_seed(1, "split:test"));
  EXPECT_NE(derive_seed(1, "split:train"), derive_seed(2, "split:train"));
  EXPECT_EQ(derive_seed(5, "x"), derive_seed(5, "x"));
}

TEST(Random, BelowIsUniform) {
  Rng rng(123, "t");
  for (uint64_t n : {1ull, 2ull, 3ull, 7ull, 10ull, 1000ull, (1ull << 63) + 12345ull}) {
    for (int i = 0; i < 1000; ++i) ASSERT_LT(rng.below(n), n);
  }
  // 7 bins, 70000 draws: chi-square goodness of fit against uniform.
  std::vector<uint64_t> hist(7, 0), flat(7, 1);
  for (int i = 0; i < 70000; ++i) ++hist[rng.below(7)];
  EXPECT_GT(chi_square_goodness_of_fit(hist, flat).p_value, 1e-6);
  EXPECT_THROW(rng.below(0), Error);
}

TEST(Random, ShuffleIsAUniformPermutation) {
  Rng rng(9, "perm");
  std::map<std::vector<int>, uint64_t> seen;
  for (int i = 0; i < 60000; ++i) {
    std::vector<int> v = {0, 1, 2, 3};
    rng.shuffle(std::span<int>(v));
    ++seen[v];
  }
  ASSERT_EQ(seen.size(), 24u);
  std::vector<uint64_t> hist, flat(24, 1);
  for (auto& [p, n] : seen) hist.push_back(n);
  EXPECT_GT(chi_square_goodness_of_fit(hist, flat).p_value, 1e-6);
}

std::vector<int32_t> labels_of(size_t n, int classes, uint32_t seed, bool skewed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> l(n);
  for (auto& x : l) {
    uint32_t r = rng() % (skewed ? classes * classes : classes);
    x = static_cast<int32_t>(skewed ? std::min<uint32_t>(r / classes, r % classes) : r);
  }
  return l;
}

// Every guarantee the planner makes, for one configuration.
void check_plan(const std::vector<int32_t>& labels, const PlanOptions& o) {
  SCOPED_TRACE(::testing::Message() << "n=" << labels.size() << " S=" << o.num_shards << " C=" << o.num_classes
                                  << " equal=" << o.equal_shards << " pad=" << (o.remainder == Remainder::kPad)
                                  << " stratify=" << o.stratify);
  const size_t n = labels.size(), S = static_cast<size_t>(o.num_shards);
  ShardPlan p = plan_shards(labels, o);
  ASSERT_EQ(p.shards.size(), S);
  // Each sample: once, or dropped, or once plus its pads.
  std::vector<int> count(n, 0);
  for (const auto& s : p.shards)
    for (uint32_t i : s) ++count[i];
  std::vector<int> expect(n, 1);
  for (uint32_t d : p.dropped) expect[d] = 0;
  for (const auto& pad : p.padded) ++expect[pad.sample];
  ASSERT_EQ(count, expect);
  for (const auto& pad : p.padded)
    ASSERT_NE(std::find(p.shards[pad.shard].begin(), p.shards[pad.shard].end(), pad.sample), p.shards[pad.shard].end());
  EXPECT_TRUE(std::is_sorted(p.dropped.begin(), p.dropped.end()));
  // Sizes.
  size_t lo = SIZE_MAX, hi = 0;
  for (const auto& s : p.shards) {
    lo = std::min(lo, s.size());
    hi = std::max(hi, s.size());
  }
  if (o.equal_shards) {
    EXPECT_EQ(lo, hi);
    if (o.remainder == Remainder::kDrop) {
      EXPECT_EQ(p.dropped.size(), n % S);
      EXPECT_TRUE(p.padded.empty());
      EXPECT_EQ(lo, n / S);
    } else {
      EXPECT_EQ(p.padded.size(), (S - n % S) % S);
      EXPECT_TRUE(p.dropped.empty());
      EXPECT_EQ(lo, (n + S - 1) / S);
    }
  } else {
    EXPECT_LE(hi - lo, 1u);
    EXPECT_TRUE(p.dropped.empty() && p.padded.empty());
    EXPECT_EQ(p.total_records(), n);
  }
  // Stratification: every class's per-shard counts within one of each other.
  if (o.stratify) {
    for (int c = 0; c < o.num_classes; ++c) {
      size_t clo = SIZE_MAX, chi = 0;
      for (const auto& s : p.shards) {
        size_t k = std::count_if(s.begin(), s.end(), [&](uint32_t i) { return labels[i] == c; });
        clo = std::min(clo, k);
        chi = std::max(chi, k);
      }
      EXPECT_LE(chi - clo, 1u) << "class " << c;
    }
  }
  // Determinism.
  ShardPlan again = plan_shards(labels, o);
  EXPECT_EQ(again.shards, p.shards);
}

TEST(Planner, GuaranteesHoldEverywhere) {
  for (size_t n : {1, 2, 7, 8, 9, 31, 100, 257, 1000})
    for (int64_t S : {1, 2, 3, 4, 8, 16})
      for (int C : {1, 2, 3, 10})
        for (bool skewed : {false, true})
          for (bool equal : {false, true})
            for (Remainder rem : {Remainder::kDrop, Remainder::kPad})
              for (bool strat : {false, true}) {
                if (!equal && rem == Remainder::kPad) continue;  // remainder only matters for train
                if (equal && rem == Remainder::kDrop && n < static_cast<size_t>(S)) continue;  // an error, below
                PlanOptions o;
                o.split = "train";
                o.num_shards = S;
                o.equal_shards = equal;
                o.remainder = rem;
                o.stratify = strat;
                o.seed = n * 31 + S;
                o.num_classes = C;
                check_plan(labels_of(n, C, static_cast<uint32_t>(n + S + C), skewed), o);
              }
}

TEST(Planner, TooFewSamplesForDrop) {
  PlanOptions o;
  o.split = "train";
  o.num_shards = 8;
  o.equal_shards = true;
  std::vector<int32_t> labels(5, 0);
  try {
    plan_shards(labels, o);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than its 8 shards"), std::string::npos) << e.what();
  }
  o.remainder = Remainder::kPad;
  EXPECT_EQ(plan_shards(labels, o).total_records(), 8u);
  EXPECT_THROW(plan_shards(std::vector<int32_t>{}, o), ConfigError);
  o.num_classes = 2;
  EXPECT_THROW(plan_shards(std::vector<int32_t>{0, 2}, o), Error);  // label out of range
}

TEST(Planner, ShufflesGloballyAndBySeed) {
  // Sorted labels in, shuffled shards out: each shard is a mix and its order is not ascending.
  std::vector<int32_t> labels(4000);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i * 10 / labels.size());
  PlanOptions o;
  o.split = "train";
  o.num_shards = 4;
  o.equal_shards = true;
  o.num_classes = 10;
  o.seed = 1;
  ShardPlan a = plan_shards(labels, o);
  std::vector<uint64_t> global(10, 400);
  for (const auto& s : a.shards) {
    EXPECT_FALSE(std::is_sorted(s.begin(), s.end()));
    std::vector<uint64_t> h(10, 0);
    for (uint32_t i : s) ++h[labels[i]];
    EXPECT_GT(chi_square_goodness_of_fit(h, global).p_value, 1e-6);
  }
  o.seed = 2;
  ShardPlan b = plan_shards(labels, o);
  EXPECT_NE(a.shards, b.shards);
  // The split name is part of the stream: train and test orders are independent.
  o.seed = 1;
  o.split = "test";
  EXPECT_NE(plan_shards(labels, o).shards, a.shards);
}

TEST(Planner, StratifiedRemaindersComeFromRandomClasses) {
  // 10 classes of 13 samples over 4 shards: 130 mod 4 = 2 dropped per plan. Over many seeds the
  // dropped samples must not always come from the same class.
  std::vector<int32_t> labels;
  for (int c = 0; c < 10; ++c) labels.insert(labels.end(), 13, c);
  std::set<int32_t> classes;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    PlanOptions o;
    o.split = "train";
    o.num_shards = 4;
    o.equal_shards = true;
    o.stratify = true;
    o.num_classes = 10;
    o.seed = seed;
    for (uint32_t d : plan_shards(labels, o).dropped) classes.insert(labels[d]);
  }
  EXPECT_GE(classes.size(), 5u);
}

TEST(Planner, Holdout) {
  std::vector<int32_t> labels = labels_of(1000, 5, 3, true);
  std::vector<uint64_t> per_class(5, 0);
  for (int32_t l : labels) ++per_class[l];
  for (bool strat : {false, true}) {
    std::vector<bool> held = choose_holdout(labels, 5, 100, strat, 7);
    EXPECT_EQ(std::count(held.begin(), held.end(), true), 100);
    EXPECT_EQ(choose_holdout(labels, 5, 100, strat, 7), held);
    EXPECT_NE(choose_holdout(labels, 5, 100, strat, 8), held);
    if (strat) {
      for (int c = 0; c < 5; ++c) {
        double want = 100.0 * per_class[c] / 1000;
        int64_t got = 0;
        for (size_t i = 0; i < labels.size(); ++i) got += held[i] && labels[i] == c;
        EXPECT_LE(std::abs(got - want), 1.0) << "class " << c;
      }
    }
  }
  std::vector<bool> none = choose_holdout(labels, 5, 0, false, 1);
  EXPECT_EQ(std::count(none.begin(), none.end(), true), 0);
}

}  // namespace
}  // namespace fastnn::converters
