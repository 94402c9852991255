// softmax_xent with class weights (trainer/ops/softmax_xent.h) against PyTorch's
// cross_entropy(weight=..., label_smoothing=...): the loss and the logits' gradient recorded by
// tests/data/class_weights/make_fixtures.py, in float64 and float32; all weights 1 is the unweighted
// loss; the gradient against central differences of the loss with a dloss other than 1; the registry
// refuses weights of the wrong count or sign, and the CUDA kernel (which has none) refuses them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/ops/op.h"
#include "trainer/ops/softmax_xent.h"

namespace fastnn::ops {
namespace {

double logit_value(int64_t n, int64_t k) { return static_cast<double>(((n * 7 + k * 3) % 11) - 5) / 4.0; }

struct Result {
  double loss = 0;
  std::vector<double> grad;
};

template <typename T>
Result run(const SoftmaxXentParams& p, const std::vector<double>& logits, const std::vector<int64_t>& labels,
           double dloss = 1) {
  std::vector<T> z(logits.begin(), logits.end()), probs(z.size()), dz(z.size());
  std::vector<double> rows(static_cast<size_t>(p.n));
  T loss = 0, seed = static_cast<T>(dloss);
  cpu::softmax_xent_forward<T, int64_t>(p, z.data(), labels.data(), &loss, probs.data(), rows.data());
  cpu::softmax_xent_backward<T, int64_t>(p, probs.data(), labels.data(), &seed, dz.data());
  return {static_cast<double>(loss), std::vector<double>(dz.begin(), dz.end())};
}

TEST(SoftmaxXentWeights, MatchesPyTorch) {
  std::ifstream f(std::string(FASTNN_SOURCE_DIR) + "/tests/data/class_weights/fixtures.json");
  ASSERT_TRUE(f) << "tests/data/class_weights/fixtures.json missing";
  const nlohmann::json fixtures = nlohmann::json::parse(f);
  ASSERT_EQ(fixtures["cases"].size(), 4u);
  for (const nlohmann::json& c : fixtures["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::vector<int64_t> labels = c["labels"];
    const int64_t n = static_cast<int64_t>(labels.size()), k = c["k"];
    const SoftmaxXentParams p{n, k, c["eps"].get<double>(), c["weights"].get<std::vector<double>>()};
    std::vector<double> z;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) z.push_back(logit_value(i, j));
    const std::vector<double> want = c["grad"];
    const double want_loss = c["loss"];
    const Result d = run<double>(p, z, labels);
    EXPECT_NEAR(d.loss, want_loss, 1e-13 * std::abs(want_loss));
    const Result s = run<float>(p, z, labels);
    EXPECT_NEAR(s.loss, want_loss, 2e-7 * std::abs(want_loss));
    ASSERT_EQ(d.grad.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(d.grad[i], want[i], 1e-15) << "element " << i;
      EXPECT_NEAR(s.grad[i], want[i], 1e-7) << "element " << i;
    }
  }
}

TEST(SoftmaxXentWeights, AllOnesIsTheUnweightedLoss) {
  const std::vector<int64_t> labels{3, 0, 2, 2, 1};
  std::vector<double> z;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 4; ++j) z.push_back(logit_value(i, j) * 1.7 - 0.2 * static_cast<double>(j));
  for (double eps : {0.0, 0.15}) {
    const Result plain = run<double>({5, 4, eps}, z, labels);
    const Result ones = run<double>({5, 4, eps, {1, 1, 1, 1}}, z, labels);
    EXPECT_NEAR(ones.loss, plain.loss, 1e-15);
    for (size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(ones.grad[i], plain.grad[i], 1e-16);
  }
}

TEST(SoftmaxXentWeights, GradientIsTheLossDerivative) {
  const std::vector<int64_t> labels{1, 4, 4, 0, 2, 3, 1};
  const SoftmaxXentParams p{7, 5, 0.3, {0.2, 1.5, 4, 0.7, 2.25}};
  std::vector<double> z;
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t j = 0; j < 5; ++j) z.push_back(logit_value(j, i) + 0.1 * static_cast<double>(i * j));
  const double dloss = 2.5, h = 1e-6;
  const Result r = run<double>(p, z, labels, dloss);
  for (size_t i = 0; i < z.size(); ++i) {
    std::vector<double> up = z, down = z;
    up[i] += h;
    down[i] -= h;
    const double numeric = dloss * (run<double>(p, up, labels).loss - run<double>(p, down, labels).loss) / (2 * h);
    EXPECT_NEAR(r.grad[i], numeric, 1e-8) << "element " << i;
  }
}

TEST(SoftmaxXentWeights, RegistryRefusesBadWeights) {
  OpRegistry reg;
  register_builtin_ops(reg);
  const std::vector<TensorSpec> in{{.name = "logits", .shape = {4, 3}, .dtype = DType::kF32},
                                   {.name = "labels", .shape = {4}, .dtype = DType::kI32}};
  EXPECT_NO_THROW(reg.create("softmax_xent", Device::kCpu, {{"class_weights", Floats{1, 2, 3}}}, in));
  EXPECT_THROW(reg.create("softmax_xent", Device::kCpu, {{"class_weights", Floats{1, 2}}}, in), ConfigError);
  EXPECT_THROW(reg.create("softmax_xent", Device::kCpu, {{"class_weights", Floats{1, 0, 3}}}, in), ConfigError);
  EXPECT_THROW(reg.create("softmax_xent", Device::kCpu, {{"class_weights", Floats{1, -1, 3}}}, in), ConfigError);
  EXPECT_THROW(reg.create("softmax_xent", Device::kCpu, {{"class_weights", Floats{1, NAN, 3}}}, in), ConfigError);
#ifdef FASTNN_HAVE_CUDA
  try {
    reg.create("softmax_xent", Device::kCuda, {{"class_weights", Floats{1, 2, 3}}}, in);
    FAIL() << "the CUDA kernel accepted class weights it would ignore";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("CPU only"), std::string::npos) << e.what();
  }
#endif
}

}  // namespace
}  // namespace fastnn::ops
