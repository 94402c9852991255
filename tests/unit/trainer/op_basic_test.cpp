// relu, add, scale, concat: hand-computed values, in-place use, channel layout of concat.
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "trainer/ops/add.h"
#include "trainer/ops/concat.h"
#include "trainer/ops/relu.h"
#include "trainer/ops/scale.h"

namespace fastnn::ops {
namespace {

TEST(Relu, ForwardBackwardAndInPlace) {
  std::vector<float> x{-2, -0.0f, 0, 0.5f, 3}, y(5), dx(5);
  cpu::relu_forward<float>(5, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{0, 0, 0, 0.5f, 3}));
  const std::vector<float> dy{1, 2, 3, 4, 5};
  cpu::relu_backward<float>(5, y.data(), dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 0, 4, 5}));  // zero gradient at 0
  cpu::relu_forward<float>(5, x.data(), x.data());
  EXPECT_EQ(x, y);
}

// Long enough for the vector loops and several parallel ranges; the element-by-element formulas are the
// reference. A gradient where y <= 0 is 0 even when dy is not finite (the loop reads dy everywhere and
// selects), and backward may run in place.
TEST(Relu, VectorLoopsMatchTheFormulaElementByElement) {
  const int64_t n = (int64_t{1} << 16) + 7;
  std::vector<float> x(n), dy(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 7919) % 2001 - 1000) / 64.0f;
    dy[i] = static_cast<float>((i * 104729) % 997) - 498.5f;
  }
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[4] = -std::numeric_limits<float>::infinity();
  dy[5] = std::numeric_limits<float>::quiet_NaN();
  dy[6] = std::numeric_limits<float>::infinity();
  x[5] = -1.0f;
  x[6] = 0.0f;
  std::vector<float> y(n), dx(n);
  cpu::relu_forward<float>(n, x.data(), y.data());
  cpu::relu_backward<float>(n, y.data(), dy.data(), dx.data());
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f) << i;
    ASSERT_EQ(dx[i], y[i] > 0 ? dy[i] : 0.0f) << i;
  }
  EXPECT_EQ(dx[5], 0.0f);
  EXPECT_EQ(dx[6], 0.0f);
  std::vector<float> in_place = dy;
  cpu::relu_backward<float>(n, y.data(), in_place.data(), in_place.data());
  EXPECT_EQ(in_place, dx);
}

TEST(Scale, MultipliesInPlace) {
  std::vector<double> x{1, -2, 4};
  cpu::scale_forward<double>(3, 0.25, x.data(), x.data());
  EXPECT_EQ(x, (std::vector<double>{0.25, -0.5, 1}));
}

TEST(Add, SumsLeftToRight) {
  const std::vector<double> a{1, 2}, b{10, 20}, c{100, 200};
  std::vector<double> y(2);
  const double* xs[] = {a.data(), b.data(), c.data()};
  cpu::add_forward<double>(2, xs, y.data());
  EXPECT_EQ(y, (std::vector<double>{111, 222}));
}

TEST(Add, TwoInputLoopMatchesTheGeneralOneAndRunsInPlace) {
  const int64_t n = (int64_t{1} << 16) + 3;
  std::vector<float> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 1013) * 0.37f - 100.0f;
    b[i] = static_cast<float>(i % 617) * -1.9f + 3.0f;
  }
  std::vector<float> two(n), three(n);
  const std::vector<float> zero(n, 0.0f);
  const float* xs2[] = {a.data(), b.data()};
  const float* xs3[] = {a.data(), b.data(), zero.data()};  // the general loop: (a + b) + 0
  cpu::add_forward<float>(n, xs2, two.data());
  cpu::add_forward<float>(n, xs3, three.data());
  EXPECT_EQ(two, three);
  cpu::add_forward<float>(n, xs2, a.data());  // y aliases the first input, as an in-place add
  EXPECT_EQ(a, two);
}

TEST(Concat, JoinsChannelsPerSample) {
  // a [2, 1, 1, 2], b [2, 2, 1, 2] -> [2, 3, 1, 2]
  const std::vector<float> a{1, 2, 3, 4}, b{10, 11, 12, 13, 14, 15, 16, 17};
  std::vector<float> y(12);
  const int64_t ch[] = {1, 2};
  const float* xs[] = {a.data(), b.data()};
  cpu::concat_forward<float>(2, 2, ch, xs, y.data());
  EXPECT_EQ(y, (std::vector<float>{1, 2, 10, 11, 12, 13, 3, 4, 14, 15, 16, 17}));
  std::vector<float> da(4), db(8);
  float* dxs[] = {da.data(), db.data()};
  cpu::concat_backward<float>(2, 2, ch, y.data(), dxs);
  EXPECT_EQ(da, a);
  EXPECT_EQ(db, b);
  float* only_b[] = {nullptr, db.data()};
  std::fill(db.begin(), db.end(), 0.0f);
  cpu::concat_backward<float>(2, 2, ch, y.data(), only_b);
  EXPECT_EQ(db, b);
}

TEST(Concat, RejectsMismatchedShapes) {
  OpRegistry r;
  register_concat(r);
  const std::vector<TensorSpec> ok{{.name = "a", .shape = {2, 1, 3, 3}, .dtype = DType::kF32},
                                   {.name = "b", .shape = {2, 4, 3, 3}, .dtype = DType::kF32}};
  auto k = r.create("concat", Device::kCpu, {}, ok);
  EXPECT_EQ(k->signature().outputs[0].shape, (Shape{2, 5, 3, 3}));
  std::vector<TensorSpec> bad = ok;
  bad[1].shape = {2, 4, 3, 2};
  EXPECT_THROW(r.create("concat", Device::kCpu, {}, bad), ConfigError);
  bad = ok;
  bad[1].dtype = DType::kF64;
  EXPECT_THROW(r.create("concat", Device::kCpu, {}, bad), ConfigError);
}

}  // namespace
}  // namespace fastnn::ops
