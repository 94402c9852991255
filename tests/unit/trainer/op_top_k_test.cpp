// top_k: hand-made rows with ties, and random rows against a sort-based reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "trainer/ops/top_k.h"

namespace fastnn::ops {
namespace {

TEST(TopK, HandMadeRowsWithTies) {
  const std::vector<float> z{0.1f, 0.9f, 0.5f, 0.3f,   // ranks: 1, 2, 3, 0
                             1.0f, 3.0f, 3.0f, 0.0f,   // tie for first
                             5.0f, 5.0f, 5.0f, 5.0f};  // all tied
  auto count = [&](std::vector<int32_t> labels, int64_t k) {
    return cpu::top_k_count<float, int32_t>(3, 4, k, z.data(), labels.data());
  };
  EXPECT_EQ(count({1, 1, 0}, 1), 3);  // argmax, one of the tied maxima, an all-tied row
  EXPECT_EQ(count({1, 2, 3}, 1), 3);  // the other tied maximum also counts (in_top_k rule)
  EXPECT_EQ(count({2, 0, 3}, 1), 1);
  EXPECT_EQ(count({2, 0, 3}, 2), 2);  // 0.5 is second; 1.0 is third behind two 3.0s
  EXPECT_EQ(count({2, 0, 3}, 3), 3);
  EXPECT_EQ(count({0, 3, 0}, 3), 1);
  EXPECT_EQ(count({0, 3, 0}, 4), 3);
}

TEST(TopK, MatchesSortReference) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> lab(0, 9);
  std::uniform_int_distribution<int> val(0, 5);  // few distinct values: many ties
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> z(40 * 10);
    std::vector<int64_t> labels(40);
    for (double& v : z) v = val(rng);
    for (int64_t& l : labels) l = lab(rng);
    for (int64_t k = 1; k <= 10; ++k) {
      int64_t want = 0;
      for (int n = 0; n < 40; ++n) {
        std::vector<double> row(z.begin() + n * 10, z.begin() + (n + 1) * 10);
        std::sort(row.begin(), row.end(), std::greater<>());
        want += z[n * 10 + labels[n]] >= row[k - 1];
      }
      ASSERT_EQ((cpu::top_k_count<double, int64_t>(40, 10, k, z.data(), labels.data())), want) << k;
    }
  }
}

TEST(TopK, RejectsLabelsOutOfRangeAndBadK) {
  const std::vector<float> z(6, 0.0f);
  const std::vector<int64_t> bad{0, 3};
  EXPECT_THROW((cpu::top_k_count<float, int64_t>(2, 3, 1, z.data(), bad.data())), Error);
  OpRegistry r;
  register_top_k(r);
  const std::vector<TensorSpec> in{{.name = "z", .shape = {2, 3}, .dtype = DType::kF32},
                                   {.name = "l", .shape = {2}, .dtype = DType::kI64}};
  EXPECT_THROW(r.create("top_k", Device::kCpu, {{"k", 4}}, in), ConfigError);
  EXPECT_THROW(r.create("top_k", Device::kCpu, {{"k", 0}}, in), ConfigError);
  EXPECT_NO_THROW(r.create("top_k", Device::kCpu, {{"k", 3}}, in));
}

}  // namespace
}  // namespace fastnn::ops
