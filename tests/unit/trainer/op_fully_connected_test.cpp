// fully_connected: hand-computed values and the blocked GEMMs (matrix-vector products below 4 rows)
// against a triple loop.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "trainer/ops/fully_connected.h"

namespace fastnn::ops {
namespace {

FullyConnectedParams fc(const Attrs& a, const Shape& x) {
  return fully_connected_params(a, std::vector<TensorSpec>{{.name = "x", .shape = x, .dtype = DType::kF64}});
}

TEST(FullyConnected, HandComputed) {
  const FullyConnectedParams p = fc({{"units", 2}}, {2, 3});
  const std::vector<double> x{1, 2, 3, 4, 5, 6}, w{1, 0, -1, 0.5, 0.5, 0.5}, b{1, -1};
  std::vector<double> y(4), dx(6), dw(6), db(2);
  cpu::fully_connected_forward<double>(p, x.data(), w.data(), b.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{-1, 2, -1, 6.5}));
  const std::vector<double> dy{1, 0, 0, 1};
  cpu::fully_connected_backward_data<double>(p, w.data(), dy.data(), dx.data());
  cpu::fully_connected_backward_filter<double>(p, x.data(), dy.data(), dw.data(), db.data());
  EXPECT_EQ(dx, (std::vector<double>{1, 0, -1, 0.5, 0.5, 0.5}));
  EXPECT_EQ(dw, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(db, (std::vector<double>{1, 1}));
}

TEST(FullyConnected, FlattensInputAndMatchesTripleLoop) {
  // 37 rows and 20 units span several 16-row blocks, with ragged last blocks.
  const FullyConnectedParams p = fc({{"units", 20}}, {37, 3, 2, 2});
  ASSERT_EQ(p.d, 12);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> x(37 * 12), w(20 * 12), b(20), dy(37 * 20);
  for (auto* v : {&x, &w, &b, &dy})
    for (double& e : *v) e = u(rng);
  std::vector<double> y(37 * 20), dx(x.size()), dw(w.size()), db(b.size());
  cpu::fully_connected_forward<double>(p, x.data(), w.data(), b.data(), y.data());
  cpu::fully_connected_backward_data<double>(p, w.data(), dy.data(), dx.data());
  cpu::fully_connected_backward_filter<double>(p, x.data(), dy.data(), dw.data(), db.data());
  for (int n = 0; n < 37; ++n)
    for (int o = 0; o < 20; ++o) {
      double acc = b[o];
      for (int d = 0; d < 12; ++d) acc += x[n * 12 + d] * w[o * 12 + d];
      ASSERT_NEAR(y[n * 20 + o], acc, 1e-12);
    }
  for (int n = 0; n < 37; ++n)
    for (int d = 0; d < 12; ++d) {
      double acc = 0;
      for (int o = 0; o < 20; ++o) acc += dy[n * 20 + o] * w[o * 12 + d];
      ASSERT_NEAR(dx[n * 12 + d], acc, 1e-12);
    }
  for (int o = 0; o < 20; ++o) {
    double acc_b = 0;
    for (int n = 0; n < 37; ++n) acc_b += dy[n * 20 + o];
    ASSERT_NEAR(db[o], acc_b, 1e-12);
    for (int d = 0; d < 12; ++d) {
      double acc = 0;
      for (int n = 0; n < 37; ++n) acc += dy[n * 20 + o] * x[n * 12 + d];
      ASSERT_NEAR(dw[o * 12 + d], acc, 1e-12);
    }
  }
}

TEST(FullyConnected, FewRowsMatchTheTripleLoop) {
  // 1-3 rows take one matrix-vector product per row, 4 the GEMM; 300 units span three 128-unit blocks,
  // the last ragged. float, as inference runs them; the loop sums in double.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t rows = 1; rows <= 4; ++rows)
    for (bool bias : {true, false}) {
      SCOPED_TRACE(testing::Message() << rows << " rows, bias " << bias);
      const FullyConnectedParams p = fc({{"units", 300}}, {rows, 50});
      std::vector<float> x(rows * 50), w(300 * 50), b(300), y(rows * 300, std::nanf(""));
      for (auto* v : {&x, &w, &b})
        for (float& e : *v) e = u(rng);
      cpu::fully_connected_forward<float>(p, x.data(), w.data(), bias ? b.data() : nullptr, y.data());
      for (int64_t n = 0; n < rows; ++n)
        for (int64_t o = 0; o < 300; ++o) {
          double acc = bias ? b[o] : 0.0;
          for (int64_t d = 0; d < 50; ++d) acc += double{x[n * 50 + d]} * w[o * 50 + d];
          ASSERT_NEAR(y[n * 300 + o], acc, 1e-5) << "row " << n << ", unit " << o;
        }
    }
}

TEST(FullyConnected, RejectsBadAttributes) {
  EXPECT_THROW(fc({}, {2, 3}), ConfigError);
  EXPECT_THROW(fc({{"units", 0}}, {2, 3}), ConfigError);
  EXPECT_THROW(fc({{"units", 2}, {"use_bias", true}}, {2, 3}), ConfigError);
  EXPECT_THROW(fc({{"units", 2}}, {6}), ConfigError);
}

}  // namespace
}  // namespace fastnn::ops
