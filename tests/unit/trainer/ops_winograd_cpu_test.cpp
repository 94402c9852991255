// fastnn's own F(4x4, 3x3) Winograd convolution (trainer/ops/winograd_f43.h) against a direct
// convolution summed in double: shapes whose outputs are not whole 4x4 tiles, channel counts that are not
// whole 16-lane chunks, "same" and "valid" padding and the padding that only the bottom and right get,
// every tail, one thread and several (the output channels then split between them), and the same bits
// from the same inputs at a fixed thread count; the filter gradient against its sum in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <tbb/task_arena.h>

#include "trainer/ops/blas_core.h"
#include "trainer/ops/winograd_f43.h"

namespace fastnn::ops::cpu {
namespace {

struct Problem {
  WinogradShape s;
  std::vector<float> x, w, bias, residual;
};

Problem random_problem(const WinogradShape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Problem pr{.s = s};
  pr.x.resize(static_cast<size_t>(s.n * s.h * s.w * s.c));
  pr.w.resize(static_cast<size_t>(s.k * s.c * 9));
  pr.bias.resize(static_cast<size_t>(s.k));
  pr.residual.resize(static_cast<size_t>(s.n * s.p * s.q * s.k));
  for (float& v : pr.x) v = normal(rng);
  for (float& v : pr.w) v = normal(rng) / std::sqrt(9.0f * static_cast<float>(s.c));
  for (float& v : pr.bias) v = normal(rng);
  for (float& v : pr.residual) v = normal(rng);
  return pr;
}

// The direct convolution in double; `magnitude` gets, per output, the sum of the absolute terms (the
// scale of its rounding error).
std::vector<double> direct(const Problem& pr, WinogradTail tail, std::vector<double>& magnitude) {
  const WinogradShape& s = pr.s;
  std::vector<double> y(pr.residual.size());
  magnitude.assign(y.size(), 0.0);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t p = 0; p < s.p; ++p)
      for (int64_t q = 0; q < s.q; ++q)
        for (int64_t k = 0; k < s.k; ++k) {
          double sum = pr.bias[k], mag = std::fabs(pr.bias[k]);
          for (int64_t r = 0; r < 3; ++r)
            for (int64_t t = 0; t < 3; ++t) {
              const int64_t h = p + r - s.pad_top, w = q + t - s.pad_left;
              if (h < 0 || h >= s.h || w < 0 || w >= s.w) continue;
              for (int64_t c = 0; c < s.c; ++c) {
                const double term = static_cast<double>(pr.x[((n * s.h + h) * s.w + w) * s.c + c]) * pr.w[((k * s.c + c) * 3 + r) * 3 + t];
                sum += term;
                mag += std::fabs(term);
              }
            }
          const size_t at = static_cast<size_t>(((n * s.p + p) * s.q + q) * s.k + k);
          if (tail == WinogradTail::kAddRelu) {
            sum += pr.residual[at];
            mag += std::fabs(pr.residual[at]);
          }
          if (tail != WinogradTail::kNone) sum = std::max(sum, 0.0);
          if (tail == WinogradTail::kRelu6) sum = std::min(sum, 6.0);
          y[at] = sum;
          magnitude[at] = mag;
        }
  return y;
}

std::vector<float> winograd(const Problem& pr, WinogradTail tail) {
  const WinogradF43 conv(pr.s);
  std::vector<float> u(WinogradF43::weights_floats(pr.s.k, pr.s.c));
  WinogradF43::transform_weights(pr.w.data(), pr.s.k, pr.s.c, u.data());
  std::vector<std::byte> scratch(conv.workspace_bytes());
  // NaN where the kernel writes nothing: every output must be written.
  std::vector<float> y(pr.residual.size(), std::nanf(""));
  conv.forward(pr.x.data(), u.data(), pr.bias.data(), tail == WinogradTail::kAddRelu ? pr.residual.data() : nullptr,
               tail, y.data(), scratch.data());
  return y;
}

void expect_close(const Problem& pr, WinogradTail tail, const std::vector<float>& got, const std::string& what) {
  std::vector<double> magnitude;
  const std::vector<double> want = direct(pr, tail, magnitude);
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < want.size() && reported < 5; ++i) {
    // The transforms' constants and sums of up to 36 terms: the worst of these cases was 1.9e-6 of the
    // terms' absolute sum.
    const double tolerance = 6e-6 * magnitude[i] + 1e-6;
    if (!(std::fabs(got[i] - want[i]) <= tolerance)) {
      ADD_FAILURE() << what << ": output " << i << " is " << got[i] << ", the direct convolution gives " << want[i]
                    << " (tolerance " << tolerance << ")";
      ++reported;
    }
  }
}

struct Case {
  const char* label;
  WinogradShape s;
};

const Case kCases[] = {
    {"same 8x8, whole tiles and lanes", {.n = 1, .h = 8, .w = 8, .c = 16, .k = 16, .p = 8, .q = 8, .pad_top = 1, .pad_left = 1}},
    {"same 7x7, partial tiles and lanes", {.n = 2, .h = 7, .w = 7, .c = 20, .k = 24, .p = 7, .q = 7, .pad_top = 1, .pad_left = 1}},
    {"valid 9x11", {.n = 1, .h = 9, .w = 11, .c = 33, .k = 40, .p = 7, .q = 9, .pad_top = 0, .pad_left = 0}},
    {"padded only at the bottom and right", {.n = 2, .h = 10, .w = 6, .c = 8, .k = 5, .p = 9, .q = 5, .pad_top = 0, .pad_left = 0}},
    {"ResNet-like 14x14, two blocks of tiles", {.n = 3, .h = 14, .w = 14, .c = 64, .k = 48, .p = 14, .q = 14, .pad_top = 1, .pad_left = 1}},
};

#define SKIP_WITHOUT_AVX2() \
  if (!this_cpu_features().avx2_fma) GTEST_SKIP() << "fastnn's Winograd needs AVX2 and FMA"

TEST(WinogradF43, MatchesTheDirectConvolutionWithEveryTail) {
  SKIP_WITHOUT_AVX2();
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    const Problem pr = random_problem(c.s, seed++);
    for (WinogradTail tail : {WinogradTail::kNone, WinogradTail::kRelu, WinogradTail::kRelu6, WinogradTail::kAddRelu})
      expect_close(pr, tail, winograd(pr, tail), std::string(c.label) + ", tail " + std::to_string(static_cast<int>(tail)));
  }
}

// Few tiles and many output channels on 8 threads: the output channels split into chunks of 64.
TEST(WinogradF43, SplitsTheOutputChannelsOverThreadsAndStaysExact) {
  SKIP_WITHOUT_AVX2();
  const Problem pr = random_problem({.n = 1, .h = 8, .w = 8, .c = 32, .k = 256, .p = 8, .q = 8, .pad_top = 1, .pad_left = 1}, 7);
  std::vector<float> eight, eight_again, one;
  tbb::task_arena(8).execute([&] {
    eight = winograd(pr, WinogradTail::kRelu);
    eight_again = winograd(pr, WinogradTail::kRelu);
  });
  tbb::task_arena(1).execute([&] { one = winograd(pr, WinogradTail::kRelu); });
  expect_close(pr, WinogradTail::kRelu, eight, "8 threads");
  expect_close(pr, WinogradTail::kRelu, one, "1 thread");
  EXPECT_EQ(std::memcmp(eight.data(), eight_again.data(), eight.size() * sizeof(float)), 0) << "the same inputs gave other bits";
}

// Backward-data as the convolution of dy with the turned filters (padding 2 - the forward's) is the
// forward's adjoint: sum(conv(x) * dy) == sum(x * dx), for "same" and "valid" padding.
TEST(WinogradF43, CarriesGradientsBackAsTheForwardsAdjoint) {
  SKIP_WITHOUT_AVX2();
  for (const int64_t pad : {1, 0}) {
    const int64_t h = 13, w = 10, p = h + 2 * pad - 2, q = w + 2 * pad - 2;
    Problem fwd = random_problem({.n = 2, .h = h, .w = w, .c = 24, .k = 40, .p = p, .q = q, .pad_top = pad, .pad_left = pad}, 11);
    std::fill(fwd.bias.begin(), fwd.bias.end(), 0.0f);
    std::vector<double> magnitude;
    const std::vector<double> y = direct(fwd, WinogradTail::kNone, magnitude);
    const std::vector<float>& dy = fwd.residual;  // any tensor of the output's shape
    const WinogradF43 back({.n = 2, .h = p, .w = q, .c = 40, .k = 24, .p = h, .q = w, .pad_top = 2 - pad, .pad_left = 2 - pad});
    std::vector<float> u(WinogradF43::weights_floats(24, 40));
    WinogradF43::transform_flipped_weights(fwd.w.data(), 40, 24, u.data());
    std::vector<std::byte> scratch(back.workspace_bytes());
    const std::vector<float> zeros(24, 0.0f);
    std::vector<float> dx(fwd.x.size(), std::nanf(""));
    back.forward(dy.data(), u.data(), zeros.data(), nullptr, WinogradTail::kNone, dx.data(), scratch.data());
    double y_dy = 0, x_dx = 0, scale = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      y_dy += y[i] * dy[i];
      scale += std::fabs(y[i] * dy[i]);
    }
    for (size_t i = 0; i < dx.size(); ++i) x_dx += static_cast<double>(fwd.x[i]) * dx[i];
    EXPECT_NEAR(x_dx, y_dy, 1e-5 * scale) << "padding " << pad;
  }
}

// dw[k][c][r][t] = sum over n, p, q of dy[n][p][q][k] * x[n][p + r - pad_top][q + t - pad_left][c], in
// double, and per element the sum of the terms' absolute values.
std::vector<double> direct_filter_gradient(const Problem& pr, const std::vector<float>& dy, std::vector<double>& magnitude) {
  const WinogradShape& s = pr.s;
  std::vector<double> dw(pr.w.size(), 0.0);
  magnitude.assign(dw.size(), 0.0);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t p = 0; p < s.p; ++p)
      for (int64_t q = 0; q < s.q; ++q)
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t t = 0; t < 3; ++t) {
            const int64_t h = p + r - s.pad_top, w = q + t - s.pad_left;
            if (h < 0 || h >= s.h || w < 0 || w >= s.w) continue;
            for (int64_t k = 0; k < s.k; ++k) {
              const double g = dy[static_cast<size_t>(((n * s.p + p) * s.q + q) * s.k + k)];
              for (int64_t c = 0; c < s.c; ++c) {
                const double term = g * pr.x[static_cast<size_t>(((n * s.h + h) * s.w + w) * s.c + c)];
                const size_t at = static_cast<size_t>(((k * s.c + c) * 3 + r) * 3 + t);
                dw[at] += term;
                magnitude[at] += std::fabs(term);
              }
            }
          }
  return dw;
}

std::vector<float> winograd_filter_gradient(const Problem& pr, const std::vector<float>& dy) {
  const WinogradF43 conv(pr.s);
  std::vector<std::byte> scratch(conv.filter_gradient_workspace_bytes());
  std::vector<float> dw(pr.w.size(), std::nanf(""));
  conv.filter_gradient(pr.x.data(), dy.data(), dw.data(), scratch.data());
  return dw;
}

// The filter gradient on every case above, and on one whose tiles take several blocks (the sums carried
// from block to block): within f32 rounding of the double sum, and the same bits on 1 and 8 threads.
TEST(WinogradF43, FilterGradientMatchesTheDirectSum) {
  SKIP_WITHOUT_AVX2();
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  cases.push_back({"many blocks of tiles", {.n = 4, .h = 40, .w = 40, .c = 24, .k = 200, .p = 40, .q = 40, .pad_top = 1, .pad_left = 1}});
  uint32_t seed = 21;
  for (const Case& c : cases) {
    const Problem pr = random_problem(c.s, seed++);
    const std::vector<float>& dy = pr.residual;  // any tensor of the output's shape
    std::vector<double> magnitude;
    const std::vector<double> want = direct_filter_gradient(pr, dy, magnitude);
    std::vector<float> one, eight;
    tbb::task_arena(1).execute([&] { one = winograd_filter_gradient(pr, dy); });
    tbb::task_arena(8).execute([&] { eight = winograd_filter_gradient(pr, dy); });
    int reported = 0;
    for (size_t i = 0; i < want.size() && reported < 5; ++i) {
      // Sums over the tiles of products of transformed values, carried back by G's 1/4 .. 1/24: the worst
      // of these cases was 2.0e-6 of the terms' absolute sum.
      const double tolerance = 6e-6 * magnitude[i] + 1e-6;
      if (!(std::fabs(one[i] - want[i]) <= tolerance)) {
        ADD_FAILURE() << c.label << ": dw " << i << " is " << one[i] << ", the direct sum gives " << want[i]
                      << " (tolerance " << tolerance << ")";
        ++reported;
      }
    }
    EXPECT_EQ(std::memcmp(one.data(), eight.data(), one.size() * sizeof(float)), 0) << c.label << ": 1 and 8 threads differ";
  }
}

// The weights' transform against G g Gt written out for one filter: a filter of ones sums, at position
// (i, j), G's row sums: (1/4, -1/2, -1/6, 7/24, 1/8, 1) times each other; in a panel of 16 output
// channels, the 15 past the one filter zero.
TEST(WinogradF43, TransformsAFilterOfOnesToTheProductsOfGsRowSums) {
  const std::vector<float> ones(9, 1.0f);
  std::vector<float> u(WinogradF43::weights_floats(1, 1), -1.0f);
  ASSERT_EQ(u.size(), 36u * 16u);
  WinogradF43::transform_weights(ones.data(), 1, 1, u.data());
  const double row_sums[6] = {0.25, -0.5, -1.0 / 6, 7.0 / 24, 1.0 / 8, 1.0};
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      EXPECT_FLOAT_EQ(u[(i * 6 + j) * 16], static_cast<float>(row_sums[i] * row_sums[j])) << i << "," << j;
      for (int lane = 1; lane < 16; ++lane) EXPECT_EQ(u[(i * 6 + j) * 16 + lane], 0.0f) << i << "," << j << " lane " << lane;
    }
}

}  // namespace
}  // namespace fastnn::ops::cpu
