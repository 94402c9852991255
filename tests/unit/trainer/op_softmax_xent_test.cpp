// softmax_xent against the closed form, with and without label smoothing; numerical stability.
#include <gtest/gtest.h>

#include <cmath>

#include "trainer/ops/softmax_xent.h"

namespace fastnn::ops {
namespace {

// Closed form, written without the max shift the kernel uses.
double reference_loss(const std::vector<std::vector<double>>& z, const std::vector<int>& labels, double eps,
                      std::vector<std::vector<double>>* grad) {
  double total = 0;
  const double n = static_cast<double>(z.size());
  if (grad) grad->clear();
  for (size_t r = 0; r < z.size(); ++r) {
    const double k = static_cast<double>(z[r].size());
    double sum = 0;
    for (double v : z[r]) sum += std::exp(v);
    std::vector<double> g;
    for (size_t j = 0; j < z[r].size(); ++j) {
      const double q = (static_cast<int>(j) == labels[r] ? 1 - eps : 0) + eps / k;
      const double p = std::exp(z[r][j]) / sum;
      total -= q * std::log(p);
      g.push_back((p - q) / n);
    }
    if (grad) grad->push_back(g);
  }
  return total / n;
}

template <typename L>
void check(const std::vector<std::vector<double>>& z, const std::vector<int>& labels, double eps) {
  const SoftmaxXentParams p{static_cast<int64_t>(z.size()), static_cast<int64_t>(z[0].size()), eps};
  std::vector<double> flat, probs(flat.size()), dz;
  for (const auto& row : z) flat.insert(flat.end(), row.begin(), row.end());
  probs.resize(flat.size());
  dz.resize(flat.size());
  std::vector<L> lab(labels.begin(), labels.end());
  std::vector<double> rows(z.size());
  double loss = 0, dloss = 1;
  cpu::softmax_xent_forward<double, L>(p, flat.data(), lab.data(), &loss, probs.data(), rows.data());
  cpu::softmax_xent_backward<double, L>(p, probs.data(), lab.data(), &dloss, dz.data());
  std::vector<std::vector<double>> g;
  EXPECT_NEAR(loss, reference_loss(z, labels, eps, &g), 1e-12);
  for (size_t r = 0; r < z.size(); ++r)
    for (size_t j = 0; j < z[r].size(); ++j) EXPECT_NEAR(dz[r * z[r].size() + j], g[r][j], 1e-14);
}

TEST(SoftmaxXent, UniformLogitsGiveLogK) {
  const SoftmaxXentParams p{1, 3, 0.3};
  const std::vector<double> z{0.5, 0.5, 0.5};
  const int32_t label = 2;
  double loss = 0, probs[3], row;
  cpu::softmax_xent_forward<double, int32_t>(p, z.data(), &label, &loss, probs, &row);
  EXPECT_NEAR(loss, std::log(3.0), 1e-15);
  EXPECT_NEAR(probs[0], 1.0 / 3, 1e-15);
}

TEST(SoftmaxXent, MatchesClosedForm) {
  check<int32_t>({{1, 2, 3}}, {2}, 0.0);
  check<int64_t>({{1, 2, 3}, {-1, 0.5, 4}}, {0, 1}, 0.1);
  check<int32_t>({{0.2, -0.3, 1.1, 0.0, 2.5}, {3, 3, 3, 3, 3}, {-2, -1, 0, 1, 2}}, {4, 0, 1}, 0.25);
}

TEST(SoftmaxXent, LargeLogitsStayFinite) {
  const SoftmaxXentParams p{2, 2, 0.0};
  const std::vector<double> z{1000, 0, 1000, 0};
  const std::vector<int64_t> labels{0, 1};
  double loss = 0, probs[4], rows[2];
  cpu::softmax_xent_forward<double, int64_t>(p, z.data(), labels.data(), &loss, probs, rows);
  EXPECT_NEAR(rows[0], 0.0, 1e-300);
  EXPECT_NEAR(rows[1], 1000.0, 1e-9);
  EXPECT_NEAR(loss, 500.0, 1e-9);
  std::vector<float> zf(z.begin(), z.end());
  float lossf = 0, probsf[4], dz[4], one = 1;
  cpu::softmax_xent_forward<float, int64_t>(p, zf.data(), labels.data(), &lossf, probsf, rows);
  cpu::softmax_xent_backward<float, int64_t>(p, probsf, labels.data(), &one, dz);
  EXPECT_FLOAT_EQ(lossf, 500.0f);
  EXPECT_FLOAT_EQ(dz[2], 0.5f);  // (p - q) / N = (1 - 0) / 2 for the wrong class of row 1
  EXPECT_FLOAT_EQ(dz[3], -0.5f);
}

TEST(SoftmaxXent, RejectsLabelsOutOfRange) {
  const SoftmaxXentParams p{2, 3, 0.0};
  const std::vector<double> z(6, 0.0);
  const std::vector<int32_t> bad{0, 3}, neg{-1, 0};
  double loss, probs[6], rows[2];
  EXPECT_THROW((cpu::softmax_xent_forward<double, int32_t>(p, z.data(), bad.data(), &loss, probs, rows)), Error);
  EXPECT_THROW((cpu::softmax_xent_forward<double, int32_t>(p, z.data(), neg.data(), &loss, probs, rows)), Error);
}

}  // namespace
}  // namespace fastnn::ops
