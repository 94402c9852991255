// conv2d: hand-computed answers, and the im2col + GEMM kernels against a direct 7-loop convolution on
// random shapes (groups, dilation, stride, asymmetric kernels and padding), batches cut into several
// chunks, and bitwise independence of the thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include <tbb/task_arena.h>

#include "trainer/ops/conv2d.h"
#include "trainer/ops/op_case.h"

namespace fastnn::ops {
namespace {

Conv2dParams params_for(const Attrs& a, const Shape& x) {
  return conv2d_params(a, std::vector<TensorSpec>{{.name = "x", .shape = x, .dtype = DType::kF64}});
}

template <typename T>
std::vector<T> run_forward(const Conv2dParams& p, const std::vector<T>& x, const std::vector<T>& w,
                           const std::vector<T>* b, int64_t slots) {
  std::vector<T> y(static_cast<size_t>(p.n * p.k * p.win.p * p.win.q));
  std::vector<T> ws(static_cast<size_t>(cpu::conv2d_workspace_elems(p, slots)));
  cpu::conv2d_forward<T>(p, x.data(), w.data(), b ? b->data() : nullptr, y.data(), ws);
  return y;
}

// 4x4 image 1..16, 3x3 filter with 1 at (0,1) and 2 at (2,2), bias 1: y[p][q] = x[p][q+1] + 2 x[p+2][q+2] + 1
// (cross-correlation: the filter is not flipped).
// The channels a CUDA convolution hands cuDNN (the stem's channel padding for tensor cores): rounded up
// to 8 only for NHWC f16/bf16 with groups 1, when the policy allows.
TEST(Conv2d, CudnnChannelsArePaddedOnlyForHalfPrecisionNhwc) {
  auto p = [](int64_t c, int64_t groups) {
    Conv2dParams q;
    q.c = c, q.groups = groups;
    return q;
  };
  EXPECT_EQ(conv_channels_for_cudnn(p(3, 1), DType::kF16, true, true), 8);
  EXPECT_EQ(conv_channels_for_cudnn(p(3, 1), DType::kBF16, true, true), 8);
  EXPECT_EQ(conv_channels_for_cudnn(p(1, 1), DType::kF16, true, true), 8);
  EXPECT_EQ(conv_channels_for_cudnn(p(12, 1), DType::kF16, true, true), 16);
  EXPECT_EQ(conv_channels_for_cudnn(p(64, 1), DType::kF16, true, true), 64);
  EXPECT_EQ(conv_channels_for_cudnn(p(3, 1), DType::kF32, true, true), 3) << "f32 keeps its channels";
  EXPECT_EQ(conv_channels_for_cudnn(p(3, 1), DType::kF16, false, true), 3) << "NCHW keeps its channels";
  EXPECT_EQ(conv_channels_for_cudnn(p(3, 1), DType::kF16, true, false), 3) << "policy off";
  EXPECT_EQ(conv_channels_for_cudnn(p(12, 4), DType::kF16, true, true), 12) << "grouped convolutions keep theirs";
}

TEST(Conv2d, HandComputed3x3On4x4) {
  std::vector<double> x(16), w(9, 0.0), b{1.0};
  for (int i = 0; i < 16; ++i) x[i] = i + 1;
  w[1] = 1;
  w[8] = 2;
  const Conv2dParams valid = params_for({{"filters", 1}, {"kernel", 3}}, {1, 1, 4, 4});
  EXPECT_EQ(run_forward(valid, x, w, &b, 1), (std::vector<double>{25, 28, 37, 40}));

  const Conv2dParams same = params_for({{"filters", 1}, {"kernel", 3}, {"padding", "same"}}, {1, 1, 4, 4});
  ASSERT_EQ(same.win.p, 4);
  const auto ys = run_forward(same, x, w, &b, 1);
  // y[p][q] = x[p-1][q] + 2 x[p+1][q+1] + 1 with zeros outside.
  EXPECT_EQ(ys[0 * 4 + 0], 0 + 2 * 6 + 1);
  EXPECT_EQ(ys[3 * 4 + 3], 12 + 0 + 1);
  EXPECT_EQ(ys[0 * 4 + 3], 1);
  EXPECT_EQ(ys[2 * 4 + 1], 6 + 2 * 15 + 1);

  // Backward of the valid case with dy = 1: dw[r][s] = sum of the 2x2 block of x at (r, s), db = 4.
  std::vector<double> dy(4, 1.0), dx(16), dw(9), db(1);
  std::vector<double> ws(static_cast<size_t>(cpu::conv2d_workspace_elems(valid, 1)));
  cpu::conv2d_backward_data<double>(valid, w.data(), dy.data(), dx.data(), ws);
  cpu::conv2d_backward_filter<double>(valid, x.data(), dy.data(), dw.data(), db.data(), ws);
  EXPECT_EQ(dw, (std::vector<double>{14, 18, 22, 30, 34, 38, 46, 50, 54}));
  EXPECT_EQ(db[0], 4);
  EXPECT_EQ(dx, (std::vector<double>{0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 2, 2, 0, 0, 2, 2}));
}

TEST(Conv2d, PaddingModes) {
  // TF SAME: out = ceil(in / stride); odd total padding puts the extra pixel at the bottom / right.
  Conv2dParams p = params_for({{"filters", 1}, {"kernel", Ints{1, 7}}, {"padding", "same"}}, {1, 1, 17, 17});
  EXPECT_EQ(p.win.to_string(), "k1x7 s1x1 d1x1 pad[0,0,3,3] out 17x17");
  p = params_for({{"filters", 1}, {"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {1, 1, 8, 7});
  EXPECT_EQ(p.win.to_string(), "k3x3 s2x2 d1x1 pad[0,1,1,1] out 4x4");
  p = params_for({{"filters", 1}, {"kernel", 3}, {"dilation", 2}, {"padding", "same"}}, {1, 1, 9, 9});
  EXPECT_EQ(p.win.to_string(), "k3x3 s1x1 d2x2 pad[2,2,2,2] out 9x9");
  p = params_for({{"filters", 1}, {"kernel", 3}, {"stride", Ints{2, 1}}, {"padding", Ints{0, 1, 2, 3}}}, {1, 1, 6, 6});
  EXPECT_EQ(p.win.to_string(), "k3x3 s2x1 d1x1 pad[0,1,2,3] out 3x9");
}

// Direct definition of the convolution and its two gradients.
struct Naive {
  const Conv2dParams& p;
  int64_t cg() const { return p.c / p.groups; }
  int64_t kg() const { return p.k / p.groups; }
  template <typename F>
  void each(F&& f) const {  // f(n, k, op, oq, c, r, s, ih, iw) for every in-image tap
    const Window2d& g = p.win;
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t k = 0; k < p.k; ++k)
        for (int64_t op = 0; op < g.p; ++op)
          for (int64_t oq = 0; oq < g.q; ++oq)
            for (int64_t cc = 0; cc < cg(); ++cc)
              for (int64_t r = 0; r < g.r; ++r)
                for (int64_t s = 0; s < g.s; ++s) {
                  const int64_t ih = op * g.stride_h - g.pad_top + r * g.dil_h;
                  const int64_t iw = oq * g.stride_w - g.pad_left + s * g.dil_w;
                  if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                  f(n, k, op, oq, (k / kg()) * cg() + cc, cc, r, s, ih, iw);
                }
  }
  int64_t xi(int64_t n, int64_t c, int64_t ih, int64_t iw) const { return ((n * p.c + c) * p.h + ih) * p.w + iw; }
  int64_t yi(int64_t n, int64_t k, int64_t op, int64_t oq) const {
    return ((n * p.k + k) * p.win.p + op) * p.win.q + oq;
  }
  int64_t wi(int64_t k, int64_t cc, int64_t r, int64_t s) const { return ((k * cg() + cc) * p.win.r + r) * p.win.s + s; }
};

// All three passes against the direct definition, for several workspace sizes (1, 2 and all slots), and
// the float kernel's forward on the same numbers.
void check_against_direct(const Conv2dParams& p, std::mt19937& rng) {
  std::uniform_real_distribution<double> uni(-1, 1);
  const Naive nv{p};
  std::vector<double> x(static_cast<size_t>(p.n * p.c * p.h * p.w)), wt(static_cast<size_t>(p.weight_numel()));
  std::vector<double> b(static_cast<size_t>(p.k)), dy(static_cast<size_t>(p.n * p.k * p.win.p * p.win.q));
  for (auto* v : {&x, &wt, &b, &dy})
    for (double& e : *v) e = uni(rng);

  std::vector<double> y_ref(dy.size(), 0.0), dx_ref(x.size(), 0.0), dw_ref(wt.size(), 0.0), db_ref(b.size(), 0.0);
  nv.each([&](int64_t n, int64_t kk, int64_t op, int64_t oq, int64_t ci, int64_t cc, int64_t rr, int64_t ss,
              int64_t ih, int64_t iw) {
    y_ref[nv.yi(n, kk, op, oq)] += wt[nv.wi(kk, cc, rr, ss)] * x[nv.xi(n, ci, ih, iw)];
    dx_ref[nv.xi(n, ci, ih, iw)] += wt[nv.wi(kk, cc, rr, ss)] * dy[nv.yi(n, kk, op, oq)];
    dw_ref[nv.wi(kk, cc, rr, ss)] += x[nv.xi(n, ci, ih, iw)] * dy[nv.yi(n, kk, op, oq)];
  });
  const int64_t pq = p.win.p * p.win.q;
  for (int64_t i = 0; i < static_cast<int64_t>(dy.size()); ++i) {
    if (p.bias) y_ref[i] += b[(i / pq) % p.k];
    db_ref[(i / pq) % p.k] += dy[i];
  }

  for (int64_t slots : {int64_t{1}, int64_t{2}, p.n}) {
    std::vector<double> ws(static_cast<size_t>(cpu::conv2d_workspace_elems(p, slots)));
    // A pointwise convolution needs no column buffer: every sample has a slot.
    ASSERT_EQ(cpu::conv2d_slots(p, static_cast<int64_t>(ws.size())), p.is_pointwise() ? p.n : std::min(slots, p.n));
    const auto y = run_forward(p, x, wt, p.bias ? &b : nullptr, slots);
    std::vector<double> dx(x.size()), dwt(wt.size()), db(b.size());
    cpu::conv2d_backward_data<double>(p, wt.data(), dy.data(), dx.data(), ws);
    cpu::conv2d_backward_filter<double>(p, x.data(), dy.data(), dwt.data(), db.data(), ws);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], y_ref[i], 1e-12) << "y " << i;
    for (size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(dx[i], dx_ref[i], 1e-12) << "dx " << i;
    for (size_t i = 0; i < dwt.size(); ++i) ASSERT_NEAR(dwt[i], dw_ref[i], 1e-12) << "dw " << i << " slots " << slots;
    for (size_t i = 0; i < db.size(); ++i) ASSERT_NEAR(db[i], db_ref[i], 1e-12) << "db " << i;
  }
  std::vector<float> xf(x.begin(), x.end()), wf(wt.begin(), wt.end()), bf(b.begin(), b.end());
  const auto yf = run_forward(p, xf, wf, p.bias ? &bf : nullptr, 2);
  for (size_t i = 0; i < yf.size(); ++i) ASSERT_NEAR(yf[i], y_ref[i], 1e-4) << "f32 y " << i;
}

TEST(Conv2d, MatchesDirectConvolutionOnRandomShapes) {
  std::mt19937 rng(2024);
  auto pick = [&](int lo, int hi) { return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t groups = pick(1, 3);
    const int64_t c = groups * pick(1, 3), k = groups * pick(1, 3);
    const int64_t r = pick(1, 4), s = pick(1, 4), dh = pick(1, 2), dw = pick(1, 2);
    const int64_t h = (r - 1) * dh + pick(1, 7), w = (s - 1) * dw + pick(1, 7);
    Attrs a{{"filters", k}, {"kernel", Ints{r, s}}, {"stride", Ints{pick(1, 3), pick(1, 3)}},
            {"dilation", Ints{dh, dw}}, {"groups", groups}, {"bias", trial % 3 != 0}};
    if (trial % 4 == 1) a.set("padding", "same");
    if (trial % 4 == 2) a.set("padding", Ints{pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)});
    const Conv2dParams p = params_for(a, {pick(1, 4), c, h, w});
    SCOPED_TRACE(str("trial ", trial, " n", p.n, " c", p.c, " ", p.h, "x", p.w, " k", p.k, " g", p.groups, " ",
                     p.win.to_string()));
    check_against_direct(p, rng);
  }
}

// Stride-1 convolutions whose output rows are as wide as the input rows take the plane-shift
// im2col/col2im path (margins from padding, dilation, asymmetric padding, kernel wider than the image);
// the others take the per-row path. Batches larger than the filter-gradient lane count.
TEST(Conv2d, PlaneShiftAndLanesMatchDirectConvolution) {
  std::mt19937 rng(7);
  const std::vector<std::pair<Attrs, Shape>> cases{
      {{{"filters", 3}, {"kernel", 5}, {"padding", "same"}}, {11, 2, 7, 7}},
      {{{"filters", 4}, {"kernel", 3}, {"groups", 2}, {"dilation", 2}, {"padding", "same"}, {"bias", false}},
       {9, 4, 6, 5}},
      {{{"filters", 2}, {"kernel", Ints{3, 4}}, {"padding", Ints{0, 2, 3, 0}}}, {10, 3, 5, 4}},
      {{{"filters", 2}, {"kernel", Ints{3, 9}}, {"padding", Ints{1, 1, 4, 4}}}, {3, 2, 4, 3}},
      {{{"filters", 2}, {"kernel", 3}, {"stride", Ints{1, 2}}, {"padding", "same"}}, {10, 2, 6, 6}},
  };
  for (const auto& [a, shape] : cases) {
    const Conv2dParams p = params_for(a, shape);
    SCOPED_TRACE(str("n", p.n, " ", p.h, "x", p.w, " ", p.win.to_string()));
    check_against_direct(p, rng);
  }
}

// 1x1 convolutions on small planes take the batched pointwise path (the batch packed into one GEMM in
// 64-row blocks: K and C above 64 give several blocks); N = 1 and large planes keep the per-sample path.
TEST(Conv2d, BatchedPointwiseMatchesDirectConvolution) {
  std::mt19937 rng(5);
  const std::vector<std::pair<Attrs, Shape>> cases{
      {{{"filters", 7}}, {3, 5, 4, 4}},
      {{{"filters", 130}, {"bias", false}}, {9, 67, 2, 3}},
      {{{"filters", 66}}, {4, 129, 1, 1}},
      {{{"filters", 5}}, {1, 3, 3, 3}},
      {{{"filters", 3}}, {2, 4, 17, 16}},
  };
  for (auto [a, shape] : cases) {
    a.set("kernel", 1);
    const Conv2dParams p = params_for(a, shape);
    EXPECT_EQ(cpu::conv2d_batched_pointwise(p), p.n > 1 && p.win.p * p.win.q <= cpu::kBatchedPointwiseMaxPlane);
    SCOPED_TRACE(str("n", p.n, " c", p.c, " k", p.k, " ", p.h, "x", p.w));
    check_against_direct(p, rng);
  }
}

// One image: the forward GEMM split into 64-row x 512-pixel blocks (K above 64 and planes above 512
// pixels give several of each), with im2col and without (1x1), against the direct definition; and in f32
// bitwise the same under 1 and 2 threads.
TEST(Conv2d, SingleImageBlocksMatchDirectConvolution) {
  std::mt19937 rng(13);
  const std::vector<std::pair<Attrs, Shape>> cases{
      {{{"filters", 130}, {"kernel", 3}, {"padding", "same"}}, {1, 3, 24, 25}},
      {{{"filters", 65}, {"kernel", 1}, {"bias", false}}, {1, 6, 30, 20}},
      {{{"filters", 70}, {"kernel", 7}, {"stride", 2}, {"padding", "same"}}, {1, 3, 50, 48}},
  };
  for (const auto& [a, shape] : cases) {
    const Conv2dParams p = params_for(a, shape);
    SCOPED_TRACE(str("k", p.k, " ", p.win.p, "x", p.win.q, " ", p.win.to_string()));
    check_against_direct(p, rng);
    std::uniform_real_distribution<float> uni(-1, 1);
    std::vector<float> x(static_cast<size_t>(p.c * p.h * p.w)), w(static_cast<size_t>(p.weight_numel())), b(static_cast<size_t>(p.k));
    for (auto* v : {&x, &w, &b})
      for (float& e : *v) e = uni(rng);
    auto forward = [&](int threads) {
      std::vector<float> y(static_cast<size_t>(p.k * p.col_cols())), ws(static_cast<size_t>(cpu::conv2d_workspace_elems(p, 1)));
      tbb::task_arena(threads).execute([&] { cpu::conv2d_forward<float>(p, x.data(), w.data(), p.bias ? b.data() : nullptr, y.data(), ws); });
      return y;
    };
    const std::vector<float> one = forward(1), two = forward(2);
    EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
  }
}

// The LeNet conv2 shape in f32: all passes bitwise identical under 1 and 2 TBB threads and with
// workspaces of 1 and 2 slots (the training loop's determinism and --resume rely on it).
TEST(Conv2d, BitwiseIndependentOfThreadsAndSlots) {
  const Conv2dParams p = params_for({{"filters", 64}, {"kernel", 5}, {"padding", "same"}}, {64, 32, 14, 14});
  ASSERT_GT(cpu::conv2d_filter_lanes(p), 2);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uni(-1, 1);
  std::vector<float> x(static_cast<size_t>(p.n * p.c * p.h * p.w)), w(static_cast<size_t>(p.weight_numel()));
  std::vector<float> b(static_cast<size_t>(p.k)), dy(static_cast<size_t>(p.n * p.k * p.col_cols()));
  for (auto* v : {&x, &w, &b, &dy})
    for (float& e : *v) e = uni(rng);
  struct Result {
    std::vector<float> y, dx, dw, db;
  };
  auto run = [&](int threads, int64_t slots) {
    Result r{std::vector<float>(dy.size()), std::vector<float>(x.size()), std::vector<float>(w.size()),
             std::vector<float>(b.size())};
    std::vector<float> ws(static_cast<size_t>(cpu::conv2d_workspace_elems(p, slots)));
    tbb::task_arena arena(threads);
    arena.execute([&] {
      cpu::conv2d_forward<float>(p, x.data(), w.data(), b.data(), r.y.data(), ws);
      cpu::conv2d_backward_data<float>(p, w.data(), dy.data(), r.dx.data(), ws);
      cpu::conv2d_backward_filter<float>(p, x.data(), dy.data(), r.dw.data(), r.db.data(), ws);
    });
    return r;
  };
  auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  const Result ref = run(1, 1);
  for (auto [threads, slots] : {std::pair{2, int64_t{2}}, std::pair{2, int64_t{1}}, std::pair{1, int64_t{2}}}) {
    SCOPED_TRACE(str(threads, " threads, ", slots, " slots"));
    const Result r = run(threads, slots);
    EXPECT_TRUE(same_bits(r.y, ref.y));
    EXPECT_TRUE(same_bits(r.dx, ref.dx));
    EXPECT_TRUE(same_bits(r.dw, ref.dw));
    EXPECT_TRUE(same_bits(r.db, ref.db));
  }
}

TEST(Conv2d, TooSmallWorkspaceThrows) {
  const Conv2dParams p = params_for({{"filters", 2}, {"kernel", 3}}, {2, 2, 5, 5});
  std::vector<double> x(100), w(36), y(36), ws(5);
  EXPECT_THROW(cpu::conv2d_forward<double>(p, x.data(), w.data(), nullptr, y.data(), ws), Error);
}

}  // namespace
}  // namespace fastnn::ops
