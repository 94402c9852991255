// Every zoo model builds, allocates and runs a training step (forward, loss, backward) and an
// evaluation on a small batch at the smallest practical input, with finite loss and gradients that
// reach every parameter tensor.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/train_step.h"
#include "trainer/zoo/zoo.h"

namespace fastnn {
namespace {

struct StepCase {
  std::string model;
  int size;
  int batch;
};

void PrintTo(const StepCase& c, std::ostream* os) { *os << c.model << "@" << c.size; }

class ZooStep : public testing::TestWithParam<StepCase> {};

TEST_P(ZooStep, TrainStepAndEvaluateRun) {
  const StepCase& c = GetParam();
  const int classes = 7;
  const NetDef net = zoo::build_net(c.model, {.num_classes = classes, .height = c.size, .width = c.size});
  graph::Graph g(net, {.batch_size = c.batch, .seed = 1});
  const Shape& in = g.input_shape();
  const Tensor images = testing_util::random_tensor(in, DType::kF32, 3, 0.0, 1.0);
  std::vector<int64_t> lv;
  for (int i = 0; i < c.batch; ++i) lv.push_back((3 * i + 1) % classes);
  const Tensor labels = Tensor::from<int64_t>({c.batch}, std::span<const int64_t>(lv));

  TrainStep ts(g);
  const StepResult r = ts.train(images, labels, /*step=*/0);
  EXPECT_TRUE(std::isfinite(r.loss)) << r.loss;
  EXPECT_GT(r.main_loss, 0);
  EXPECT_EQ(g.output(0).shape(), (Shape{c.batch, classes}));
  EXPECT_EQ(net.has_aux_logits(), g.has_aux_logits());
  if (g.has_aux_logits()) {
    EXPECT_GT(r.aux_loss, 0);
  }

  // Every parameter tensor gets a finite gradient, and the gradient is not zero everywhere.
  double total = 0;
  int zero_tensors = 0;
  for (const graph::NamedTensor& p : g.parameters()) {
    ASSERT_TRUE(testing_util::all_finite(p.grad)) << p.name;
    const double s = testing_util::sum_squares(p.grad);
    total += s;
    if (s == 0) ++zero_tensors;
  }
  EXPECT_GT(total, 0);
  // A few tensors may legitimately see a zero gradient on a tiny random batch (a ReLU that is off for
  // both examples); most must not.
  EXPECT_LE(zero_tensors, static_cast<int>(g.parameters().size() / 10)) << zero_tensors << " zero-gradient tensors";

  const StepResult e = ts.evaluate(images, labels);
  EXPECT_TRUE(std::isfinite(e.loss));
  EXPECT_EQ(e.examples, c.batch);
  EXPECT_GE(e.correct_top5, e.correct);
}

INSTANTIATE_TEST_SUITE_P(
    AllModels, ZooStep,
    testing::Values(StepCase{"lenet", 28, 4}, StepCase{"mlp", 28, 4}, StepCase{"cifarnet", 32, 4},
                    StepCase{"resnet_cifar_20", 32, 2}, StepCase{"resnet_cifar_56", 32, 2},
                    StepCase{"resnet_v1_18", 32, 2}, StepCase{"resnet_v1_50", 32, 2}, StepCase{"resnet_v1_5_50", 32, 2},
                    StepCase{"resnet_v1_101", 32, 2},
                    StepCase{"resnet_v1_152", 32, 2}, StepCase{"resnet_v2_50", 32, 2}, StepCase{"vgg_11", 32, 2},
                    StepCase{"vgg_16", 32, 2}, StepCase{"vgg_19", 32, 2}, StepCase{"inception_v3", 107, 2},
                    StepCase{"inception_resnet_v2", 107, 2}, StepCase{"mobilenet_v1", 32, 2},
                    StepCase{"mobilenet_v1_075", 32, 2}, StepCase{"mobilenet_v1_050", 32, 2},
                    StepCase{"mobilenet_v1_025", 32, 2}, StepCase{"mobilenet_v2", 32, 2},
                    StepCase{"mobilenet_v2_140", 32, 2}, StepCase{"mobilenet_v2_035", 32, 2},
                    StepCase{"vgg_a", 32, 2}, StepCase{"alexnet_v2", 67, 2}, StepCase{"overfeat", 71, 2},
                    StepCase{"inception_v1", 32, 2}, StepCase{"inception_v2", 32, 2},
                    StepCase{"inception_v4", 107, 2}, StepCase{"resnet_v1_200", 32, 2},
                    StepCase{"resnet_v2_101", 32, 2}, StepCase{"resnet_v2_152", 32, 2},
                    StepCase{"resnet_v2_200", 32, 2}, StepCase{"nasnet_cifar", 9, 2},
                    StepCase{"nasnet_mobile", 67, 2}, StepCase{"nasnet_large", 67, 2},
                    StepCase{"pnasnet_mobile", 67, 2}, StepCase{"pnasnet_large", 67, 2}),
    [](const testing::TestParamInfo<StepCase>& i) { return i.param.model; });

TEST(ZooStep, EveryModelIsCovered) {
  std::set<std::string> covered{"lenet", "mlp", "cifarnet", "resnet_cifar_20", "resnet_cifar_56", "resnet_v1_18",
                                "resnet_v1_50", "resnet_v1_5_50", "resnet_v1_101", "resnet_v1_152", "resnet_v2_50",
                                "vgg_11", "vgg_16",
                                "vgg_19", "inception_v3", "inception_resnet_v2", "mobilenet_v1", "mobilenet_v1_075",
                                "mobilenet_v1_050", "mobilenet_v1_025", "mobilenet_v2", "mobilenet_v2_140",
                                "mobilenet_v2_035", "vgg_a", "alexnet_v2", "overfeat", "inception_v1",
                                "inception_v2", "inception_v4", "resnet_v1_200", "resnet_v2_101", "resnet_v2_152",
                                "resnet_v2_200", "nasnet_cifar", "nasnet_mobile", "nasnet_large", "pnasnet_mobile",
                                "pnasnet_large"};
  for (const std::string& name : zoo::zoo_model_names()) EXPECT_TRUE(covered.count(name)) << name;
}

}  // namespace
}  // namespace fastnn
