// relu, add, scale, concat: hand-computed values, in-place use, channel layout of concat.
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
