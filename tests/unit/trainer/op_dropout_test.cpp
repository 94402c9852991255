// dropout: the Philox generator against its published known answers, mask reproducibility and
// thread-count independence, keep rate, scaling, eval identity.
#include <gtest/gtest.h>

#include <tbb/global_control.h>

#include <cmath>

#include "trainer/ops/dropout.h"
#include "trainer/ops/random.h"

namespace fastnn::ops {
namespace {

TEST(Philox, KnownAnswers) {
  // Random123's kat_vectors for philox4x32-10.
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}), (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

std::vector<uint8_t> mask_of(int64_t n, double rate, uint64_t seed, uint64_t step, std::vector<float>* y = nullptr) {
  std::vector<float> x(static_cast<size_t>(n), 1.0f), out(static_cast<size_t>(n));
  std::vector<uint8_t> m(static_cast<size_t>(n));
  cpu::dropout_forward<float>(n, rate, seed, step, x.data(), out.data(), m.data());
  if (y) *y = out;
  return m;
}

TEST(Dropout, MaskIsAPureFunctionOfSeedStepAndIndex) {
  const int64_t n = 100003;  // not a multiple of 4
  const auto a = mask_of(n, 0.4, 9, 3);
  EXPECT_EQ(a, mask_of(n, 0.4, 9, 3));
  EXPECT_NE(a, mask_of(n, 0.4, 9, 4));
  EXPECT_NE(a, mask_of(n, 0.4, 10, 3));
  const uint64_t thr = dropout_threshold(0.4);
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{5}, n - 1})
    EXPECT_EQ(a[static_cast<size_t>(i)], philox_word(9, 3, static_cast<uint64_t>(i)) >= thr) << i;
  {
    tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    EXPECT_EQ(a, mask_of(n, 0.4, 9, 3));
  }
  // A prefix of a longer tensor gets the same mask.
  const auto longer = mask_of(n + 50, 0.4, 9, 3);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), longer.begin()));
}

TEST(Dropout, KeepRateAndScaling) {
  const int64_t n = 1 << 20;
  for (double rate : {0.1, 0.5, 0.8}) {
    std::vector<float> y;
    const auto m = mask_of(n, rate, 77, 0, &y);
    int64_t kept = 0;
    for (size_t i = 0; i < m.size(); ++i) {
      kept += m[i];
      ASSERT_FLOAT_EQ(y[i], m[i] ? static_cast<float>(1 / (1 - rate)) : 0.0f);
    }
    const double p = 1 - rate, sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(static_cast<double>(kept), n * p, 5 * sd) << rate;
  }
  const auto all = mask_of(1000, 0.0, 1, 1);
  EXPECT_EQ(std::count(all.begin(), all.end(), 1), 1000);
}

TEST(Dropout, BackwardUsesTheMaskAndEvalIsIdentity) {
  OpRegistry r;
  register_dropout(r);
  auto k = r.create("dropout", Device::kCpu, {{"rate", 0.5}},
                    std::vector<TensorSpec>{{.name = "x", .shape = {64}, .dtype = DType::kF64}});
  Tensor x = Tensor::empty({64}, DType::kF64), y = Tensor::empty({64}, DType::kF64);
  Tensor mask = Tensor::empty({64}, DType::kU8), dy = Tensor::empty({64}, DType::kF64);
  Tensor dx = Tensor::empty({64}, DType::kF64);
  for (int i = 0; i < 64; ++i) x.data<double>()[i] = i + 1, dy.data<double>()[i] = 100 + i;
  std::vector<Tensor> in{x}, out{y}, saved{mask}, dout{dy}, din{dx};
  ForwardArgs fa;
  fa.inputs = in, fa.outputs = out, fa.saved = saved, fa.training = true, fa.seed = 5, fa.step = 2;
  k->forward(fa);
  BackwardArgs ba;
  ba.inputs = in, ba.outputs = out, ba.saved = saved, ba.d_outputs = dout, ba.d_inputs = din, ba.training = true;
  k->backward(ba);
  int kept = 0;
  for (int i = 0; i < 64; ++i) {
    const bool keep = mask.data<uint8_t>()[i];
    kept += keep;
    EXPECT_EQ(y.data<double>()[i], keep ? 2.0 * (i + 1) : 0.0);
    EXPECT_EQ(dx.data<double>()[i], keep ? 2.0 * (100 + i) : 0.0);
  }
  EXPECT_GT(kept, 10);
  EXPECT_LT(kept, 54);
  fa.training = ba.training = false;
  k->forward(fa);
  k->backward(ba);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(y.data<double>()[i], i + 1);
    EXPECT_EQ(dx.data<double>()[i], 100 + i);
  }
}

}  // namespace
}  // namespace fastnn::ops
