// max_pool2d, avg_pool2d, global_avg_pool against hand-computed values.
#include <gtest/gtest.h>

#include "trainer/ops/avg_pool2d.h"
#include "trainer/ops/global_avg_pool.h"
#include "trainer/ops/max_pool2d.h"

namespace fastnn::ops {
namespace {

Pool2dParams pool(const Attrs& a, const Shape& x, bool avg) {
  return pool2d_params(avg ? "avg_pool2d" : "max_pool2d", a,
                       std::vector<TensorSpec>{{.name = "x", .shape = x, .dtype = DType::kF64}}, avg);
}

TEST(MaxPool2d, HandComputedWithTies) {
  // 4x4, kernel 2, stride 2 (the default).
  const std::vector<double> x{1, 3, 2, 2,   //
                              4, 3, 2, 2,   //
                              0, -1, 7, 5,  //
                              -2, 0, 5, 7};
  const Pool2dParams p = pool({{"kernel", 2}}, {1, 1, 4, 4}, false);
  ASSERT_EQ(p.win.p, 2);
  std::vector<double> y(4), dx(16);
  cpu::max_pool2d_forward<double>(p, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{4, 2, 0, 7}));
  const std::vector<double> dy{10, 20, 30, 40};
  cpu::max_pool2d_backward<double>(p, x.data(), dy.data(), dx.data());
  // Ties go to the first maximum in scan order: the all-2 window -> its top-left; the 0/0 window ->
  // (2,0); the 7/7 window -> (2,2).
  EXPECT_EQ(dx, (std::vector<double>{0, 0, 20, 0,  //
                                     10, 0, 0, 0,  //
                                     30, 0, 40, 0,  //
                                     0, 0, 0, 0}));
}

TEST(MaxPool2d, PaddingNeverWins) {
  const std::vector<double> x{-5, -4, -3, -2};  // 2x2, all negative
  const Pool2dParams p = pool({{"kernel", 2}, {"stride", 1}, {"padding", 1}}, {1, 1, 2, 2}, false);
  ASSERT_EQ(p.win.p, 3);
  std::vector<double> y(9);
  cpu::max_pool2d_forward<double>(p, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{-5, -4, -4, -3, -2, -2, -3, -2, -2}));
}

TEST(AvgPool2d, CountIncludePadChangesOnlyTheBorderDivisor) {
  const std::vector<double> x{1, 2, 3, 4};  // 2x2
  const Pool2dParams ex = pool({{"kernel", 2}, {"stride", 1}, {"padding", 1}}, {1, 1, 2, 2}, true);
  const Pool2dParams in = pool({{"kernel", 2}, {"stride", 1}, {"padding", 1}, {"count_include_pad", true}},
                               {1, 1, 2, 2}, true);
  std::vector<double> y(9);
  cpu::avg_pool2d_forward<double>(ex, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}));
  cpu::avg_pool2d_forward<double>(in, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1}));
  // dy = 1: each pixel lies in 1 corner window (1 pixel), 2 edge windows (2 pixels), the centre (4).
  const std::vector<double> dy(9, 1.0);
  std::vector<double> dx(4);
  cpu::avg_pool2d_backward<double>(ex, dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<double>{2.25, 2.25, 2.25, 2.25}));
  cpu::avg_pool2d_backward<double>(in, dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<double>{1, 1, 1, 1}));
}

TEST(AvgPool2d, SamePaddingOutputShape) {
  const Pool2dParams p = pool({{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {2, 3, 35, 35}, true);
  EXPECT_EQ(p.win.p, 18);
  EXPECT_EQ(p.win.q, 18);
  const Pool2dParams v = pool({{"kernel", 3}, {"stride", 2}}, {2, 3, 35, 35}, true);
  EXPECT_EQ(v.win.p, 17);
}

TEST(GlobalAvgPool, MeansAndSpreadsGradient) {
  const std::vector<double> x{1, 2, 3, 4, 10, 20, 30, 40};  // [1, 2, 2, 2]
  std::vector<double> y(2), dx(8);
  cpu::global_avg_pool_forward<double>(2, 4, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{2.5, 25}));
  const std::vector<double> dy{4, -8};
  cpu::global_avg_pool_backward<double>(2, 4, dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<double>{1, 1, 1, 1, -2, -2, -2, -2}));
}

}  // namespace
}  // namespace fastnn::ops
