// Graph at run time: training / eval modes of batch norm and dropout, batch resizing, initialisation
// keyed by name, exports for the optimizer and checkpoints, model statistics text.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/graph/statistics.h"
#include "trainer/zoo/zoo.h"

namespace fastnn {
namespace {

using testing_util::net_from_text;
using testing_util::random_tensor;

constexpr const char* kRuntimeNet = R"pb(
  name: "modes"
  input { channels: 2 height: 5 width: 5 }
  layers { name: "conv" inputs: "data" conv { filters: 3 kernel: 3 bias: false } }
  layers { name: "conv/BatchNorm" inputs: "conv" batch_norm { momentum: 0.75 epsilon: 0.001 } }
  layers { name: "drop" inputs: "conv/BatchNorm" dropout { rate: 0.5 } }
  layers { name: "logits" inputs: "drop" fully_connected { units: 4 } }
  logits: "logits"
)pb";

TEST(GraphModes, BatchNormUpdatesMovingStatisticsOnlyInTraining) {
  graph::Graph g(net_from_text(kRuntimeNet), {.batch_size = 4, .dtype = DType::kF64, .seed = 3});
  const Tensor x = random_tensor({4, 2, 5, 5}, DType::kF64, 1);
  g.forward(x, /*training=*/true, 0);
  const auto conv = g.layer_output("conv").to_vector<double>();  // [4, 3, 3, 3]
  std::vector<graph::NamedTensor> st = g.state();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].name, "conv/BatchNorm/moving_mean");
  EXPECT_EQ(st[1].name, "conv/BatchNorm/moving_variance");
  const auto mean = st[0].value.to_vector<double>(), var = st[1].value.to_vector<double>();
  for (int c = 0; c < 3; ++c) {
    double s = 0, ss = 0;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 9; ++i) s += conv[static_cast<size_t>((n * 3 + c) * 9 + i)];
    const double m = s / 36;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 9; ++i) ss += std::pow(conv[static_cast<size_t>((n * 3 + c) * 9 + i)] - m, 2);
    EXPECT_NEAR(mean[static_cast<size_t>(c)], 0.25 * m, 1e-12);                       // 0.75 * 0 + 0.25 * mean
    EXPECT_NEAR(var[static_cast<size_t>(c)], 0.75 + 0.25 * ss / 35, 1e-12);             // unbiased variance
  }
  // Eval: state untouched, batch norm normalises with the moving statistics, dropout is the identity.
  g.forward(x, /*training=*/false);
  EXPECT_EQ(g.state()[0].value.to_vector<double>(), mean);
  const auto bn = g.layer_output("conv/BatchNorm").to_vector<double>();
  EXPECT_EQ(g.layer_output("drop").to_vector<double>(), bn);
  const auto conv2 = g.layer_output("conv").to_vector<double>();
  EXPECT_NEAR(bn[0], (conv2[0] - mean[0]) / std::sqrt(var[0] + 0.001), 1e-12);  // gamma 1, beta 0
  // Training dropout: about half the units dropped, the rest doubled; masks follow the step.
  g.forward(x, true, 7);
  const auto bn_t = g.layer_output("conv/BatchNorm").to_vector<double>();
  const auto d7 = g.layer_output("drop").to_vector<double>();
  int dropped = 0;
  for (size_t i = 0; i < d7.size(); ++i) {
    if (d7[i] == 0) ++dropped;
    else EXPECT_NEAR(d7[i], 2 * bn_t[i], 1e-12);
  }
  EXPECT_GT(dropped, 20);
  EXPECT_LT(dropped, 88);
  g.forward(x, true, 7);
  EXPECT_EQ(g.layer_output("drop").to_vector<double>(), d7);
  g.forward(x, true, 8);
  EXPECT_NE(g.layer_output("drop").to_vector<double>(), d7);
}

TEST(GraphBatch, EvalOutputsDoNotDependOnTheBatchAndParametersStayInPlace) {
  graph::Graph g(zoo::build_net("resnet_cifar_20", {.height = 8, .width = 8}), {.batch_size = 3, .seed = 4});
  const Tensor x = random_tensor({3, 3, 8, 8}, DType::kF32, 2);
  g.forward(x, true);  // moves the batch-norm statistics away from their initial values
  g.forward(x, false);
  const auto three = g.output(0).to_vector<float>();
  const std::vector<ParamRef> before = g.param_refs();
  g.set_batch_size(1);
  EXPECT_EQ(g.input_shape(), (Shape{1, 3, 8, 8}));
  Tensor first = Tensor::from<float>({1, 3, 8, 8}, std::span<const float>(x.data<float>() + 192, 192));  // image 1
  g.forward(first, false);
  const auto one = g.output(0).to_vector<float>();
  for (size_t k = 0; k < one.size(); ++k) EXPECT_NEAR(one[k], three[10 + k], 1e-5) << k;
  const std::vector<ParamRef> after = g.param_refs();
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].value, after[i].value);
    EXPECT_EQ(before[i].grad, after[i].grad);
  }
  EXPECT_THROW(g.forward(x, false), Error);  // still batch 1
}

TEST(GraphInit, KeyedBySeedAndNameOnly) {
  const NetDef net = net_from_text(kRuntimeNet);
  graph::Graph a(net, {.seed = 9}), b(net, {.seed = 9}), c(net, {.seed = 10});
  NetDef bigger = net;
  auto* extra = bigger.add_layers();  // a second head changes nothing for the existing parameters
  extra->set_name("aux");
  extra->add_inputs("conv");
  extra->mutable_fully_connected()->set_units(4);
  bigger.set_aux_logits("aux");
  graph::Graph d(bigger, {.seed = 9});
  auto pa = a.parameters();
  const auto pb = b.parameters(), pc = c.parameters(), pd = d.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].value.to_vector<float>(), pb[i].value.to_vector<float>()) << pa[i].name;
    EXPECT_EQ(pa[i].value.to_vector<float>(), pd[i].value.to_vector<float>()) << pa[i].name;
    if (pa[i].name.ends_with("weights")) {
      EXPECT_NE(pa[i].value.to_vector<float>(), pc[i].value.to_vector<float>());
    }
  }
  // Re-initialising restores the values.
  const auto w0 = pa[0].value.to_vector<float>();
  pa[0].value.fill(0.5);
  a.initialize(9);
  EXPECT_EQ(a.parameters()[0].value.to_vector<float>(), w0);
}

TEST(GraphExports, ParametersStateAndOptimizerRefsAgree) {
  graph::Graph g(net_from_text(kRuntimeNet), {.batch_size = 2, .seed = 1});
  const auto params = g.parameters();
  const auto vars = g.variables();
  const auto refs = g.param_refs();
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv/weights", "conv/BatchNorm/gamma", "conv/BatchNorm/beta",
                                             "logits/weights", "logits/biases"}));
  ASSERT_EQ(refs.size(), params.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    EXPECT_EQ(refs[i].name, params[i].name);
    EXPECT_EQ(refs[i].value, params[i].value.data<float>());
    EXPECT_EQ(refs[i].grad, params[i].grad.data<float>());
    EXPECT_EQ(static_cast<int64_t>(refs[i].count), params[i].value.numel());
    EXPECT_EQ(refs[i].decay, params[i].name.ends_with("weights")) << refs[i].name;
  }
  EXPECT_EQ(vars.size(), params.size() + 2);
  EXPECT_EQ(vars.back().name, "conv/BatchNorm/moving_variance");
  EXPECT_GT(g.activation_bytes(), 0u);
  EXPECT_EQ(g.parameter_bytes(), static_cast<size_t>(2 * (54 + 3 + 3 + 4 * 27 + 4) + 6) * sizeof(float));
  graph::Graph f64(net_from_text(kRuntimeNet), {.dtype = DType::kF64});
  EXPECT_THROW(f64.param_refs(), Error);
}

TEST(GraphErrors, InputsAndCallOrderAreChecked) {
  graph::Graph g(net_from_text(kRuntimeNet), {.batch_size = 2});
  EXPECT_THROW(g.backward(), Error);
  EXPECT_THROW(g.forward(Tensor::zeros({2, 2, 5, 4}), true), Error);
  EXPECT_THROW(g.forward(Tensor::zeros({2, 2, 5, 5}, DType::kF64), true), Error);
  Tensor nhwc = Tensor::zeros({2, 2, 5, 5});
  nhwc.set_layout(Layout::kNHWC);
  EXPECT_THROW(g.forward(nhwc, true), Error);
  EXPECT_THROW(g.layer_output("missing"), Error);
  EXPECT_THROW(g.output(1), Error);
}

TEST(ModelStatistics, TableListsEveryParameterWithShapeAndCountAndFlops) {
  const graph::ModelStatistics s = graph::model_statistics(zoo::build_net("resnet_v1_50"));
  EXPECT_EQ(s.trainable_params, 25'557'032);
  EXPECT_EQ(s.params.front().name, "resnet_v1_50/conv1/weights");
  EXPECT_EQ(s.params.front().shape, (Shape{64, 3, 7, 7}));
  const std::string text = graph::format_model_statistics(s);
  EXPECT_NE(text.find("resnet_v1_50/block1/unit_1/bottleneck_v1/conv1/weights"), std::string::npos);
  EXPECT_NE(text.find("resnet_v1_50/block4/unit_3/bottleneck_v1/conv3/BatchNorm/gamma"), std::string::npos);
  EXPECT_NE(text.find("[64,3,7,7]"), std::string::npos);
  EXPECT_NE(text.find("25,557,032"), std::string::npos);
  EXPECT_NE(text.find("236,027,904"), std::string::npos);  // conv1: 2 x 112*112*64*3*7*7 FLOPs
  EXPECT_NE(text.find("Non-trainable state (moving statistics): 53,120"), std::string::npos);
  int64_t sum = 0;
  for (const graph::LayerRow& r : s.layers) sum += r.flops;
  EXPECT_EQ(sum, s.flops);
  EXPECT_EQ(graph::group_thousands(1234567), "1,234,567");
  EXPECT_EQ(graph::group_thousands(12), "12");
}

}  // namespace
}  // namespace fastnn
