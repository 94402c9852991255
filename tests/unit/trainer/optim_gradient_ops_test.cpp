// L2 weight decay on gradients and tf.clip_by_global_norm.
#include <algorithm>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include "core/check.h"
#include "trainer/optim/gradient_ops.h"

namespace fastnn {
namespace {

TEST(WeightDecay, AddsDecayTimesWeightOnlyWhereFlagged) {
  std::vector<float> w1 = {1.0f, -2.0f, 0.5f}, g1 = {0.1f, 0.2f, 0.3f};
  std::vector<float> w2 = {4.0f, 5.0f}, g2 = {1.0f, 1.0f};
  std::vector<ParamRef> ps = {{"conv/weights", w1.data(), g1.data(), 3, true},
                              {"conv/biases", w2.data(), g2.data(), 2, false}};
  add_weight_decay(ps, 0.5);
  EXPECT_FLOAT_EQ(g1[0], 0.6f);
  EXPECT_FLOAT_EQ(g1[1], -0.8f);
  EXPECT_FLOAT_EQ(g1[2], 0.55f);
  EXPECT_EQ(g2, (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(w1, (std::vector<float>{1.0f, -2.0f, 0.5f}));  // weights untouched
  add_weight_decay(ps, 0.0);
  EXPECT_FLOAT_EQ(g1[0], 0.6f);
  EXPECT_THROW(add_weight_decay(ps, -1.0), Error);
}

TEST(GlobalNorm, IsTheNormOfAllGradientsTogether) {
  std::vector<float> w(3), g1 = {3.0f, 4.0f}, g2 = {12.0f};
  std::vector<ParamRef> ps = {{"a", w.data(), g1.data(), 2}, {"b", w.data(), g2.data(), 1}};
  EXPECT_DOUBLE_EQ(global_norm(ps), 13.0);
}

TEST(ClipByGlobalNorm, ScalesAllGradientsByTheSameFactorWhenAboveTheLimit) {
  std::vector<float> w(3), g1 = {3.0f, 4.0f}, g2 = {12.0f};
  std::vector<ParamRef> ps = {{"a", w.data(), g1.data(), 2}, {"b", w.data(), g2.data(), 1}};
  EXPECT_DOUBLE_EQ(clip_by_global_norm(ps, 6.5), 13.0);  // returns the norm before clipping
  EXPECT_FLOAT_EQ(g1[0], 1.5f);
  EXPECT_FLOAT_EQ(g1[1], 2.0f);
  EXPECT_FLOAT_EQ(g2[0], 6.0f);
  EXPECT_NEAR(global_norm(ps), 6.5, 1e-6);
}

TEST(ClipByGlobalNorm, LeavesGradientsBelowTheLimitUnchanged) {
  std::vector<float> w(2), g = {0.3f, -0.4f};
  std::vector<ParamRef> ps = {{"a", w.data(), g.data(), 2}};
  EXPECT_NEAR(clip_by_global_norm(ps, 0.5), 0.5, 1e-7);
  EXPECT_NEAR(clip_by_global_norm(ps, 10.0), 0.5, 1e-7);
  EXPECT_EQ(g, (std::vector<float>{0.3f, -0.4f}));
  EXPECT_THROW(clip_by_global_norm(ps, 0.0), Error);
}

TEST(ClipByGlobalNorm, NonFiniteNormPoisonsEveryGradientAsTFDoes) {
  std::vector<float> w(3), g1 = {1.0f, std::numeric_limits<float>::infinity()}, g2 = {2.0f};
  std::vector<ParamRef> ps = {{"a", w.data(), g1.data(), 2}, {"b", w.data(), g2.data(), 1}};
  EXPECT_TRUE(std::isinf(clip_by_global_norm(ps, 1.0)));
  EXPECT_TRUE(std::isnan(g1[0]));
  EXPECT_TRUE(std::isnan(g2[0]));
}

TEST(GlobalNorm, LargeTensorsReduceDeterministicallyInDouble) {
  const size_t n = 1000003;  // not a multiple of the chunk size
  std::vector<float> w(n), g(n);
  double expect = 0.0;
  for (size_t i = 0; i < n; ++i) {
    g[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 1e-3);
    expect += static_cast<double>(g[i]) * g[i];
  }
  std::vector<ParamRef> ps = {{"big", w.data(), g.data(), n}};
  const double a = global_norm(ps);
  EXPECT_NEAR(a, std::sqrt(expect), 1e-12 * std::sqrt(expect));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(global_norm(ps), a);  // bitwise, whatever the scheduling
}

// The order gradient_ops.h documents, written out: in each chunk, value k goes to lane (k - chunk start) % 8
// in increasing k, the lanes are added pairwise, and the chunks' sums are added in chunk order. Any thread
// count gives exactly that, for the norms and for LAMB's sum of squares of computed values.
double documented_sum_of_squares(const std::vector<float>& x) {
  double total = 0.0;
  for (size_t begin = 0; begin < x.size(); begin += kReductionChunk) {
    double lane[8] = {};
    for (size_t k = begin; k < std::min(x.size(), begin + kReductionChunk); ++k)
      lane[(k - begin) % 8] += static_cast<double>(x[k]) * x[k];
    total += ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
  return total;
}

TEST(DeterministicSum, AddsInTheDocumentedOrderOnAnyThreadCount) {
  for (size_t n : {size_t{0}, size_t{5}, size_t{8}, kReductionChunk, 3 * kReductionChunk + 13}) {
    std::vector<float> x(n);
    for (size_t k = 0; k < n; ++k) x[k] = static_cast<float>(std::sin(0.1 * static_cast<double>(k)) * (1.0 + 1e-3 * k));
    const double expect = documented_sum_of_squares(x);
    for (size_t threads : {1, 2, 3}) {
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
      EXPECT_EQ(l2_norm(x.data(), n), std::sqrt(expect)) << n << " values, " << threads << " threads";
      const double computed = deterministic_sum_of_squares(n, [&](size_t b, size_t e, float* out) {
        for (size_t k = b; k < e; ++k) out[k - b] = x[k] * 2.0f;  // a value computed on the way, exactly 2x
      });
      EXPECT_EQ(computed, 4.0 * expect) << n << " values, " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace fastnn
