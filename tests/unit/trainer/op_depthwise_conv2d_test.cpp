// depthwise_conv2d: a hand-computed case, and the direct kernels against conv2d with groups = C and
// filters = C * multiplier (the same arithmetic through im2col + GEMM) on random shapes covering
// stride, dilation, SAME / VALID / asymmetric padding and multipliers; bitwise independence of the
// thread count; the fast path (padded, stride-phased planes) against the plain reference loops in
// float at odd shapes: forward bitwise, the gradients to float rounding.
#include <gtest/gtest.h>

#include <random>

#include <tbb/task_arena.h>

#include "trainer/ops/conv2d.h"
#include "trainer/ops/depthwise_conv2d.h"

namespace fastnn::ops {
namespace {

std::vector<TensorSpec> x_spec(const Shape& x) { return {{.name = "x", .shape = x, .dtype = DType::kF64}}; }

std::vector<double> random_vec(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// 1 channel, 3x3 image 1..9, 2x2 filter [[1, 0], [0, 2]], bias 0.5, VALID: y[p][q] = x[p][q] + 2 x[p+1][q+1] + 0.5.
TEST(DepthwiseConv2d, HandComputed) {
  const auto p = depthwise_conv2d_params({{"kernel", 2}}, x_spec({1, 1, 3, 3}));
  std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, w{1, 0, 0, 2}, b{0.5}, y(4);
  cpu::depthwise_conv2d_forward<double>(p, x.data(), w.data(), b.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{1 + 10 + 0.5, 2 + 12 + 0.5, 4 + 16 + 0.5, 5 + 18 + 0.5}));
  std::vector<double> dy(4, 1.0), dx(9), dw(4), db(1);
  cpu::depthwise_conv2d_backward_data<double>(p, w.data(), dy.data(), dx.data());
  cpu::depthwise_conv2d_backward_filter<double>(p, x.data(), dy.data(), dw.data(), db.data());
  EXPECT_EQ(dx, (std::vector<double>{1, 1, 0, 1, 3, 2, 0, 2, 2}));
  EXPECT_EQ(dw, (std::vector<double>{12, 16, 24, 28}));
  EXPECT_EQ(db[0], 4);
}

TEST(DepthwiseConv2d, EqualsGroupedConv2dOnRandomShapes) {
  std::mt19937 rng(7);
  struct Case {
    Shape x;
    Attrs a;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9, 8}, {{"kernel", 3}, {"padding", "same"}}},
      {{3, 4, 11, 10}, {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}},
      {{2, 2, 12, 12}, {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}},
      {{1, 5, 7, 9}, {{"kernel", Ints{3, 5}}, {"padding", "valid"}}},
      {{2, 3, 10, 9}, {{"kernel", 3}, {"dilation", 2}, {"padding", Ints{1, 3, 2, 0}}, {"multiplier", 2}}},
      {{2, 2, 8, 7}, {{"kernel", 5}, {"stride", Ints{1, 2}}, {"padding", "same"}, {"multiplier", 3}}},
  };
  for (const Case& c : cases) {
    const auto dp = depthwise_conv2d_params(c.a, x_spec(c.x));
    Attrs ca;
    for (const auto& [k, v] : c.a.map())
      if (k != "multiplier") ca.set(k, v);
    ca.set("groups", c.x[1]);
    ca.set("filters", dp.k());
    const auto cp = conv2d_params(ca, x_spec(c.x));
    ASSERT_EQ(cp.win.p, dp.win.p);
    ASSERT_EQ(cp.win.q, dp.win.q);
    const size_t xn = static_cast<size_t>(shape_numel(c.x)), yn = static_cast<size_t>(dp.n * dp.k() * dp.win.p * dp.win.q);
    const auto x = random_vec(xn, rng), w = random_vec(static_cast<size_t>(dp.weight_numel()), rng),
               b = random_vec(static_cast<size_t>(dp.k()), rng), dy = random_vec(yn, rng);
    std::vector<double> ws(static_cast<size_t>(cpu::conv2d_workspace_elems(cp, 1)));
    std::vector<double> y1(yn), y2(yn), dx1(xn), dx2(xn), dw1(w.size()), dw2(w.size()), db1(b.size()), db2(b.size());
    cpu::depthwise_conv2d_forward<double>(dp, x.data(), w.data(), b.data(), y1.data());
    cpu::conv2d_forward<double>(cp, x.data(), w.data(), b.data(), y2.data(), ws);
    cpu::depthwise_conv2d_backward_data<double>(dp, w.data(), dy.data(), dx1.data());
    cpu::conv2d_backward_data<double>(cp, w.data(), dy.data(), dx2.data(), ws);
    cpu::depthwise_conv2d_backward_filter<double>(dp, x.data(), dy.data(), dw1.data(), db1.data());
    cpu::conv2d_backward_filter<double>(cp, x.data(), dy.data(), dw2.data(), db2.data(), ws);
    const auto near = [&](const std::vector<double>& a, const std::vector<double>& e, const char* what) {
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], e[i], 1e-12) << what << "[" << i << "] " << dp.win.to_string() << " m" << dp.multiplier;
    };
    near(y1, y2, "y");
    near(dx1, dx2, "dx");
    near(dw1, dw2, "dw");
    near(db1, db2, "db");
  }
}

TEST(DepthwiseConv2d, BitwiseIndependentOfThreadCount) {
  std::mt19937 rng(3);
  const Shape xs{4, 6, 15, 13};
  const auto p = depthwise_conv2d_params({{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, x_spec(xs));
  const size_t xn = static_cast<size_t>(shape_numel(xs)), yn = static_cast<size_t>(p.n * p.k() * p.win.p * p.win.q);
  std::vector<float> x(xn), w(static_cast<size_t>(p.weight_numel())), dy(yn);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto* v : {&x, &w, &dy})
    for (float& f : *v) f = u(rng);
  const auto run = [&](int threads) {
    std::vector<float> y(yn), dx(xn), dw(w.size()), db(static_cast<size_t>(p.k()));
    tbb::task_arena arena(threads);
    arena.execute([&] {
      cpu::depthwise_conv2d_forward<float>(p, x.data(), w.data(), nullptr, y.data());
      cpu::depthwise_conv2d_backward_data<float>(p, w.data(), dy.data(), dx.data());
      cpu::depthwise_conv2d_backward_filter<float>(p, x.data(), dy.data(), dw.data(), db.data());
    });
    y.insert(y.end(), dx.begin(), dx.end());
    y.insert(y.end(), dw.begin(), dw.end());
    y.insert(y.end(), db.begin(), db.end());
    return y;
  };
  EXPECT_EQ(run(1), run(3));
}

// Odd shapes for the fast path: stride 2 with SAME padding that is asymmetric (even sizes pad one more
// at the bottom/right), channel counts that are not a multiple of any vector width, planes of 1x1 - 3x3
// (MobileNet's last layers), widths of 1, explicit asymmetric pads, VALID leaving columns unread,
// dilation, multipliers, non-3x3 kernels; stride-1 single-filter cases take backward data's gather
// path, the others its scatter path.
TEST(DepthwiseConv2d, FastPathMatchesReferenceAtOddShapes) {
  std::mt19937 rng(11);
  struct Case {
    Shape x;
    Attrs a;
  };
  const std::vector<Case> cases = {
      {{3, 5, 14, 14}, {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}},
      {{2, 7, 13, 17}, {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}},
      {{2, 19, 7, 7}, {{"kernel", 3}, {"padding", "same"}}},
      {{5, 11, 2, 2}, {{"kernel", 3}, {"padding", "same"}}},
      {{4, 13, 1, 1}, {{"kernel", 3}, {"padding", "same"}}},
      {{3, 9, 2, 3}, {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}},
      {{2, 3, 9, 1}, {{"kernel", 3}, {"padding", "same"}, {"bias", false}}},
      {{2, 6, 12, 11}, {{"kernel", 3}, {"stride", 2}, {"padding", Ints{0, 1, 1, 0}}}},
      {{2, 5, 12, 12}, {{"kernel", 3}, {"stride", 2}, {"padding", "valid"}}},
      {{1, 4, 11, 10}, {{"kernel", 5}, {"stride", Ints{2, 3}}, {"dilation", Ints{1, 2}}, {"padding", "same"}}},
      {{2, 3, 10, 9}, {{"kernel", Ints{3, 2}}, {"stride", 2}, {"multiplier", 3}, {"padding", Ints{2, 0, 1, 3}}}},
      {{2, 17, 9, 9}, {{"kernel", 1}, {"stride", 2}}},
      {{2, 5, 9, 8}, {{"kernel", 3}, {"dilation", 2}, {"padding", Ints{1, 3, 2, 0}}}},
      {{2, 4, 6, 7}, {{"kernel", Ints{2, 4}}, {"padding", Ints{0, 1, 3, 0}}}},
  };
  const auto fill = [&](std::vector<float>& v) {
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& f : v) f = u(rng);
  };
  for (const Case& c : cases) {
    const auto p = depthwise_conv2d_params(c.a, x_spec(c.x));
    const size_t xn = static_cast<size_t>(shape_numel(c.x)), yn = static_cast<size_t>(p.n * p.k() * p.win.p * p.win.q);
    std::vector<float> x(xn), w(static_cast<size_t>(p.weight_numel())), b(static_cast<size_t>(p.k())), dy(yn);
    fill(x), fill(w), fill(b), fill(dy);
    const float* bias = p.bias ? b.data() : nullptr;
    // Poisoned outputs: every element must be written.
    std::vector<float> y1(yn, 1e30f), y2(yn, -1e30f), dx1(xn, 1e30f), dx2(xn, -1e30f), dw1(w.size(), 1e30f),
        dw2(w.size(), -1e30f), db1(b.size(), 1e30f), db2(b.size(), -1e30f);
    cpu::depthwise_conv2d_forward<float>(p, x.data(), w.data(), bias, y1.data());
    cpu::depthwise_conv2d_forward_reference<float>(p, x.data(), w.data(), bias, y2.data());
    cpu::depthwise_conv2d_backward_data<float>(p, w.data(), dy.data(), dx1.data());
    cpu::depthwise_conv2d_backward_data_reference<float>(p, w.data(), dy.data(), dx2.data());
    cpu::depthwise_conv2d_backward_filter<float>(p, x.data(), dy.data(), dw1.data(), db1.data());
    cpu::depthwise_conv2d_backward_filter_reference<float>(p, x.data(), dy.data(), dw2.data(), db2.data());
    const std::string where = str(p.win.to_string(), " x ", c.x[0], "x", c.x[1], "x", c.x[2], "x", c.x[3], " m",
                                  p.multiplier);
    for (size_t i = 0; i < yn; ++i) ASSERT_EQ(y1[i], y2[i]) << "y[" << i << "] " << where;
    for (size_t i = 0; i < xn; ++i) ASSERT_NEAR(dx1[i], dx2[i], 1e-5f) << "dx[" << i << "] " << where;
    // dw sums up to N*P*Q products of |.| < 1: a relative bound on float rounding.
    const float tol = 1e-6f * static_cast<float>(p.n * p.win.p * p.win.q) + 1e-6f;
    for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(dw1[i], dw2[i], tol) << "dw[" << i << "] " << where;
    for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(db1[i], db2[i]) << "db[" << i << "] " << where;
  }
}

TEST(DepthwiseConv2d, RejectsBadAttributes) {
  EXPECT_THROW(depthwise_conv2d_params({{"kernel", 3}, {"multiplier", 0}}, x_spec({1, 2, 5, 5})), ConfigError);
  EXPECT_THROW(depthwise_conv2d_params({{"kernel", 3}, {"filters", 4}}, x_spec({1, 2, 5, 5})), ConfigError);
  EXPECT_THROW(depthwise_conv2d_params({{"kernel", 7}}, x_spec({1, 2, 5, 5})), ConfigError);
  EXPECT_THROW(depthwise_conv2d_params({}, x_spec({1, 2, 5, 5})), ConfigError);
}

}  // namespace
}  // namespace fastnn::ops
