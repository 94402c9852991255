// Known answers for what the graph added to trainer/ops: the lrn, channel_pad and tanh ops (their
// gradients are checked by the generic registry test) and the InitRule initialisers' distributions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "trainer/graph/net_plan.h"
#include "trainer/ops/init.h"
#include "trainer/ops/op.h"
#include "trainer/ops/op_case.h"

namespace fastnn::ops {
namespace {

std::vector<double> run_forward(const std::string& op, const Attrs& attrs, const Tensor& x) {
  const std::vector<TensorSpec> in{{.name = "x", .shape = x.shape(), .dtype = x.dtype()}};
  auto k = graph::builtin_op_registry().create(op, Device::kCpu, attrs, in);
  KernelTensors t = allocate_kernel_tensors(k->signature());
  t.inputs[0] = x;
  k->forward(t.forward_args(true));
  return t.outputs[0].to_vector<double>();
}

TEST(LrnOp, MatchesTensorFlowsDefinition) {
  // tf.nn.lrn: sqr_sum[c] = sum over c-r..c+r of x^2; y = x / (bias + alpha * sqr_sum)^beta.
  const Tensor x = Tensor::from<double>({1, 3, 1, 2}, {1, -1, 2, 0.5, 3, 2});
  const auto y = run_forward("lrn", {{"depth_radius", 1}, {"bias", 1.0}, {"alpha", 0.5}, {"beta", 0.75}}, x);
  // Position 0: channels 1, 2, 3; position 1: -1, 0.5, 2.
  EXPECT_NEAR(y[0], 1 * std::pow(1 + 0.5 * (1 + 4), -0.75), 1e-15);
  EXPECT_NEAR(y[2], 2 * std::pow(1 + 0.5 * (1 + 4 + 9), -0.75), 1e-15);
  EXPECT_NEAR(y[4], 3 * std::pow(1 + 0.5 * (4 + 9), -0.75), 1e-15);
  EXPECT_NEAR(y[1], -1 * std::pow(1 + 0.5 * (1 + 0.25), -0.75), 1e-15);
  EXPECT_NEAR(y[3], 0.5 * std::pow(1 + 0.5 * (1 + 0.25 + 4), -0.75), 1e-15);
  EXPECT_NEAR(y[5], 2 * std::pow(1 + 0.5 * (0.25 + 4), -0.75), 1e-15);
  const std::vector<TensorSpec> in{{.name = "x", .shape = {1, 3, 1, 2}, .dtype = DType::kF64}};
  EXPECT_THROW(graph::builtin_op_registry().create("lrn", Device::kCpu, {{"bias", 0.0}}, in), ConfigError);
  EXPECT_THROW(graph::builtin_op_registry().create("lrn", Device::kCpu, {{"alpha", -1.0}}, in), ConfigError);
}

TEST(ChannelPadOp, PadsZerosAroundTheChannels) {
  const Tensor x = Tensor::from<float>({2, 2, 1, 1}, {1, 2, 3, 4});
  EXPECT_EQ(run_forward("channel_pad", {{"before", 1}, {"after", 2}}, x),
            (std::vector<double>{0, 1, 2, 0, 0, 0, 3, 4, 0, 0}));
  const std::vector<TensorSpec> in{{.name = "x", .shape = {2, 2}, .dtype = DType::kF32}};
  EXPECT_THROW(graph::builtin_op_registry().create("channel_pad", Device::kCpu, {{"before", -1}}, in), ConfigError);
}

TEST(TanhOp, ScaledTanhValues) {
  const Tensor x = Tensor::from<double>({3}, {-1, 0, 2});
  const auto y = run_forward("tanh", {{"outer", 1.7159}, {"inner", 0.6667}}, x);
  EXPECT_NEAR(y[0], 1.7159 * std::tanh(-0.6667), 1e-15);
  EXPECT_EQ(y[1], 0);
  EXPECT_NEAR(y[2], 1.7159 * std::tanh(1.3334), 1e-15);
  const std::vector<TensorSpec> in{{.name = "x", .shape = {3}, .dtype = DType::kF64}};
  EXPECT_THROW(graph::builtin_op_registry().create("tanh", Device::kCpu, {{"outer", 0.0}}, in), ConfigError);
}

struct Moments {
  double mean = 0, stddev = 0, min = 0, max = 0;
};

Moments moments(const Tensor& t) {
  const auto v = t.to_vector<double>();
  Moments m;
  m.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(ss / static_cast<double>(v.size()));
  m.min = *std::min_element(v.begin(), v.end());
  m.max = *std::max_element(v.begin(), v.end());
  return m;
}

Tensor init(const InitRule& r, int64_t fan_in, int64_t fan_out, uint64_t seed = 1, DType dt = DType::kF32) {
  Tensor t = Tensor::empty({200001}, dt);  // odd: the last element has no pair partner
  init_tensor(t, r, fan_in, fan_out, seed);
  return t;
}

// The standard deviation of N(0, 1) truncated to [-2, 2].
const double kTruncatedStd = std::sqrt(1 - 4 * std::exp(-2.0) / std::sqrt(2 * M_PI) / std::erf(std::sqrt(2.0)));

TEST(InitRules, DistributionsMatchTheirDefinitions) {
  using K = InitRule::Kind;
  {
    const Moments m = moments(init({.kind = K::kTruncatedNormal, .mean = 0.5, .stddev = 0.1}, 1, 1));
    EXPECT_NEAR(m.mean, 0.5, 0.001);
    EXPECT_NEAR(m.stddev, 0.1 * kTruncatedStd, 0.001);
    EXPECT_GE(m.min, 0.5 - 0.2 - 1e-7);
    EXPECT_LE(m.max, 0.5 + 0.2 + 1e-7);
    EXPECT_LT(m.min, 0.5 - 0.19);  // the tails are reached
  }
  {
    const Moments m = moments(init({.kind = K::kNormal, .mean = -1, .stddev = 2}, 1, 1));
    EXPECT_NEAR(m.mean, -1, 0.02);
    EXPECT_NEAR(m.stddev, 2, 0.02);
    EXPECT_LT(m.min, -1 - 8);  // untruncated
  }
  {
    // TF 1.x variance_scaling_initializer (factor 2, fan in, truncated): stddev sqrt(1.3 * 2 / 64)
    // before truncation, so the samples' stddev is close to He's sqrt(2 / 64).
    const Moments m = moments(init({.kind = K::kVarianceScaling}, 64, 8));
    EXPECT_NEAR(m.stddev, std::sqrt(2.6 / 64) * kTruncatedStd, 0.002);
    EXPECT_LE(m.max, 2 * std::sqrt(2.6 / 64) + 1e-7);
    const Moments u = moments(init({.kind = K::kVarianceScaling, .mode = InitRule::Mode::kFanAvg, .uniform = true}, 64, 16));
    EXPECT_LE(u.max, std::sqrt(3 * 2.0 / 40));
    EXPECT_NEAR(u.stddev, std::sqrt(2.0 / 40), 0.002);
  }
  {
    const double lim = std::sqrt(6.0 / (100 + 50));
    const Moments m = moments(init({.kind = K::kGlorotUniform}, 100, 50));
    EXPECT_GE(m.min, -lim);
    EXPECT_LT(m.max, lim);
    EXPECT_NEAR(m.stddev, lim / std::sqrt(3.0), 0.001);
    const Moments h = moments(init({.kind = K::kHeNormal}, 50, 1));
    EXPECT_NEAR(h.stddev, std::sqrt(2.0 / 50), 0.002);
  }
  {
    const Moments m = moments(init({.kind = K::kUniform, .low = -0.05, .high = 0.05}, 1, 1));
    EXPECT_GE(m.min, -0.05);
    EXPECT_LT(m.max, 0.05);
    EXPECT_NEAR(m.stddev, 0.1 / std::sqrt(12.0), 0.0005);
    const Moments c = moments(init({.kind = K::kConstant, .value = 0.1}, 1, 1));
    EXPECT_EQ(c.min, 0.1f);
    EXPECT_EQ(c.max, 0.1f);
  }
}

TEST(InitRules, DeterministicPerSeedAndDtypeIndependent) {
  const InitRule r{.kind = InitRule::Kind::kTruncatedNormal, .stddev = 0.3};
  EXPECT_EQ(init(r, 1, 1, 5).to_vector<float>(), init(r, 1, 1, 5).to_vector<float>());
  EXPECT_NE(init(r, 1, 1, 5).to_vector<float>(), init(r, 1, 1, 6).to_vector<float>());
  const auto f = init(r, 1, 1, 5).to_vector<double>(), d = init(r, 1, 1, 5, DType::kF64).to_vector<double>();
  for (size_t i = 0; i < f.size(); i += 997) EXPECT_NEAR(f[i], d[i], 1e-7);
  Tensor t = Tensor::empty({4});
  EXPECT_THROW(init_tensor(t, InitRule{.kind = InitRule::Kind::kHeNormal}, 0, 0, 1), ConfigError);
  EXPECT_THROW(init_tensor(t, InitRule{.kind = InitRule::Kind::kUniform, .low = 1, .high = 0}, 1, 1, 1), ConfigError);
}

}  // namespace
}  // namespace fastnn::ops
