// The graph's backward against central finite differences of the whole loss, in double precision, on
// a small net that exercises every routing case: a tensor with three consumers (two branches and a
// residual add), a tensor added to itself, concat, batch norm in training mode, dropout with a fixed
// mask (the step is fixed), max and average pooling, an auxiliary head with loss weight 0.4, and a
// batch-norm layer without scale (a fixed gamma that must get no gradient).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/train_step.h"

namespace fastnn {
namespace {

using testing_util::net_from_text;
using testing_util::random_tensor;

constexpr const char* kGradcheckNet = R"pb(
  name: "gradcheck"
  input { channels: 3 height: 6 width: 6 }
  layers { name: "c1" inputs: "data" conv { filters: 4 kernel: 3 padding: "same" bias: false } }
  layers { name: "c1/bn" inputs: "c1" batch_norm { momentum: 0.5 } }
  layers { name: "c1/relu" inputs: "c1/bn" relu {} }
  layers { name: "a" inputs: "c1/relu" conv { filters: 2 kernel: 1 } }
  layers { name: "b" inputs: "c1/relu" conv { filters: 2 kernel: [3, 1] padding: "same" } }
  layers { name: "b/bn" inputs: "b" batch_norm { scale: false } }
  layers { name: "cat" inputs: ["a", "b/bn"] concat {} }
  layers { name: "res" inputs: ["cat", "c1/relu"] add {} }
  layers { name: "pool" inputs: "res" pool { kind: MAX kernel: 2 } }
  layers { name: "twice" inputs: ["pool", "pool"] add {} }
  layers { name: "tanh" inputs: "twice" tanh { outer: 1.5 inner: 0.7 } }
  layers { name: "drop" inputs: "tanh" dropout { rate: 0.25 } }
  layers { name: "fc" inputs: "drop" fully_connected { units: 5 } }
  layers { name: "aux/pool" inputs: "res" pool { kind: AVG kernel: 3 stride: 2 padding: "same" } }
  layers { name: "aux/scale" inputs: "aux/pool" scale { scale: 0.5 } }
  layers { name: "aux/gap" inputs: "aux/scale" global_avg_pool {} }
  layers { name: "aux/fc" inputs: "aux/gap" fully_connected { units: 5 } }
  logits: "fc"
  aux_logits: "aux/fc"
)pb";

TEST(GraphGradCheck, WholeNetBackwardMatchesFiniteDifferencesInDouble) {
  const NetDef net = net_from_text(kGradcheckNet);
  graph::Graph g(net, {.batch_size = 2, .dtype = DType::kF64, .seed = 5});
  // Moderate parameter scales keep ReLU / max-pool kinks away from the probe points.
  uint64_t stream = 100;
  for (graph::NamedTensor& p : g.parameters()) ops::fill_uniform(p.value, -0.8, 0.8, 77, stream++);
  const Tensor images = random_tensor({2, 3, 6, 6}, DType::kF64, 9);
  const Tensor labels = testing_util::labels_of({1, 4});
  constexpr uint64_t kStep = 3;

  TrainStep ts(g);
  const StepResult r = ts.train(images, labels, kStep);
  EXPECT_NEAR(r.loss, r.main_loss + 0.4 * r.aux_loss, 1e-12);
  EXPECT_GT(r.aux_loss, 0);

  // The un-scaled batch norm has a fixed gamma: no parameter, no gradient.
  std::vector<std::string> names;
  for (const graph::NamedTensor& p : g.parameters()) names.push_back(p.name);
  EXPECT_EQ(std::count(names.begin(), names.end(), "b/bn/gamma"), 0);
  EXPECT_EQ(std::count(names.begin(), names.end(), "b/bn/beta"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "c1/bn/gamma"), 1);

  constexpr double h = 1e-6;
  int checked = 0, failures = 0;
  for (graph::NamedTensor& p : g.parameters()) {
    const std::vector<double> analytic = p.grad.to_vector<double>();
    double* v = p.value.data<double>();
    for (int64_t i = 0; i < p.value.numel() && failures < 10; ++i) {
      const double v0 = v[i];
      v[i] = v0 + h;
      const double lp = ts.loss(images, labels, kStep).loss;
      v[i] = v0 - h;
      const double lm = ts.loss(images, labels, kStep).loss;
      v[i] = v0;
      const double numeric = (lp - lm) / (2 * h);
      const double a = analytic[static_cast<size_t>(i)];
      if (std::fabs(numeric - a) > 2e-6 * std::max(std::fabs(numeric), std::fabs(a)) + 1e-9) {
        ADD_FAILURE() << p.name << "[" << i << "]: analytic " << a << " numeric " << numeric;
        ++failures;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 350);
}

TEST(GraphGradCheck, GradientsAreOverwrittenNotAccumulatedAcrossSteps) {
  const NetDef net = net_from_text(kGradcheckNet);
  graph::Graph g(net, {.batch_size = 2, .dtype = DType::kF64, .seed = 5});
  const Tensor images = random_tensor({2, 3, 6, 6}, DType::kF64, 9);
  const Tensor labels = testing_util::labels_of({0, 2});
  TrainStep ts(g);
  ts.train(images, labels, 1);
  std::vector<std::vector<double>> first;
  for (const graph::NamedTensor& p : g.parameters()) first.push_back(p.grad.to_vector<double>());
  ts.train(images, labels, 1);
  size_t k = 0;
  for (const graph::NamedTensor& p : g.parameters()) {
    // Same step, same inputs and parameters: batch norm's moving statistics changed but training-mode
    // outputs do not read them, so the gradients repeat exactly.
    EXPECT_EQ(p.grad.to_vector<double>(), first[k++]) << p.name;
  }
}

}  // namespace
}  // namespace fastnn
