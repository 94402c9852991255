// HeadLogits (trainer/inference/head_logits.h) against the formulas written out in double: plain
// dot products, s * cosine for margin heads (no margin at inference), a zero row's cosine 0.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "trainer/inference/head_logits.h"

namespace fastnn::inference {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

TEST(HeadLogits, PlainHeadIsTheDotProduct) {
  const int64_t k = 7, d = 5, n = 3;
  const std::vector<float> w = random_floats(k * d, 1), x = random_floats(n * d, 2);
  const HeadLogits h(w, k, d, head::margin_spec("dist_softmax", 0.5, 64, {}, {}, {}, false));
  std::vector<float> z(n * k);
  h.compute(x.data(), n, z.data());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < k; ++c) EXPECT_NEAR(z[i * k + c], dot(&x[i * d], &w[c * d], d), 1e-5) << i << "," << c;
}

TEST(HeadLogits, MarginHeadIsTheScaledCosineWithoutTheMargin) {
  const int64_t k = 11, d = 16, n = 4;
  std::vector<float> w = random_floats(k * d, 3);
  for (int64_t j = 0; j < d; ++j) w[2 * d + j] = 0.0f;  // a zero row: cosine 0, not NaN
  const std::vector<float> x = random_floats(n * d, 4);
  for (const char* loss : {"arcface", "dist_cosface"}) {
    const HeadLogits h(w, k, d, head::margin_spec(loss, 0.5, 30, {}, {}, {}, false));
    std::vector<float> z(n * k);
    h.compute(x.data(), n, z.data());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < k; ++c) {
        const double nw = std::sqrt(dot(&w[c * d], &w[c * d], d)), nx = std::sqrt(dot(&x[i * d], &x[i * d], d));
        const double want = nw > 0 ? 30 * dot(&x[i * d], &w[c * d], d) / (nw * nx) : 0.0;
        EXPECT_NEAR(z[i * k + c], want, 1e-4) << loss << " " << i << "," << c;
      }
  }
}

TEST(HeadLogits, ScaledCopiesOfAnEmbeddingRankTheSame) {
  const int64_t k = 9, d = 8;
  const std::vector<float> w = random_floats(k * d, 5);
  std::vector<float> x = random_floats(2 * d, 6);
  for (int64_t j = 0; j < d; ++j) x[d + j] = 7.5f * x[j];
  const HeadLogits h(w, k, d, head::margin_spec("arcface", 0.5, 64, {}, {}, {}, false));
  std::vector<float> z(2 * k);
  h.compute(x.data(), 2, z.data());
  for (int64_t c = 0; c < k; ++c) EXPECT_NEAR(z[c], z[k + c], 1e-4);
}

}  // namespace
}  // namespace fastnn::inference
