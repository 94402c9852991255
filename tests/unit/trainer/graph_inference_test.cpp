// Inference graphs (GraphOptions::inference): forward-only, evaluation mode, output buffers shared
// between layers that are never live together. Checked against the training-shaped graph of the same
// net and weights (after a training step, so batch norm's moving statistics are not the initial ones):
// bitwise the same logits and kept layers, at a changing batch size, in a fraction of the memory; the
// buffers never shrink and a smaller batch allocates nothing; what an inference graph cannot do is
// refused by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/train_step.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::graph {
namespace {

using testing_util::same_bits;

// The layer the logits layer reads (what predict keeps for --embeddings).
std::string logits_input(const NetPlan& plan) {
  const PlanNode& logits = plan.nodes()[static_cast<size_t>(plan.logits_node())];
  return plan.nodes()[static_cast<size_t>(logits.inputs[0])].name;
}

void expect_inference_equals_training(const std::string& model, int size, bool fuse) {
  SCOPED_TRACE(model + (fuse ? " fused" : ""));
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size});
  Graph train(net, {.batch_size = 4, .seed = 5, .fuse = fuse});
  const std::string kept = logits_input(train.plan());
  Graph infer(net, {.batch_size = 4, .seed = 9, .fuse = fuse, .inference = true, .keep = {kept}});
  {
    TrainStep step(train);
    step.train(testing_util::random_tensor(train.input_shape(), DType::kF32, 1), testing_util::labels_of({1, 7, 3, 0}), 0);
  }
  const std::vector<NamedTensor> from = train.variables();
  std::vector<NamedTensor> to = infer.variables();
  ASSERT_EQ(from.size(), to.size());
  for (size_t k = 0; k < from.size(); ++k) {
    ASSERT_EQ(from[k].name, to[k].name);
    ASSERT_EQ(from[k].value.nbytes(), to[k].value.nbytes());
    std::memcpy(to[k].value.raw(), from[k].value.raw(), from[k].value.nbytes());
    EXPECT_FALSE(to[k].grad.defined()) << to[k].name;
  }
  // The kernels' shared workspace is the same in both; the layers' own memory is what shrinks.
  const size_t infer_layers = infer.activation_bytes() - infer.workspace_bytes();
  const size_t train_layers = train.activation_bytes() - train.workspace_bytes();
  EXPECT_EQ(infer.workspace_bytes(), train.workspace_bytes());
  EXPECT_LT(infer_layers * 3, train_layers) << "inference " << infer_layers << " bytes, training " << train_layers;
  std::printf("%s: layer memory at batch 4: inference %zu bytes, training %zu (workspace %zu)\n", model.c_str(), infer_layers,
              train_layers, train.workspace_bytes());
  size_t largest = 0;
  for (int64_t batch : {4, 2, 4, 3}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    train.set_batch_size(batch);
    infer.set_batch_size(batch);
    const Tensor x = testing_util::random_tensor(train.input_shape(), DType::kF32, 10 + static_cast<uint64_t>(batch));
    train.forward(x, /*training=*/false);
    infer.forward(x, /*training=*/false);
    EXPECT_TRUE(same_bits(train.output(0), infer.output(0))) << "logits";
    EXPECT_TRUE(same_bits(train.layer_output(kept), infer.layer_output(kept))) << kept;
    if (batch == 4) largest = infer.activation_bytes();
    else EXPECT_EQ(infer.activation_bytes(), largest) << "the buffers kept their size";
  }
}

TEST(InferenceGraph, LeNetEqualsTheTrainingGraphBitwise) { expect_inference_equals_training("lenet", 28, false); }
TEST(InferenceGraph, ResNetV1EqualsTheTrainingGraphBitwise) { expect_inference_equals_training("resnet_v1_18", 32, false); }
TEST(InferenceGraph, FusedResNetV1EqualsTheTrainingGraphBitwise) { expect_inference_equals_training("resnet_v1_18", 32, true); }
TEST(InferenceGraph, InceptionBranchesEqualTheTrainingGraphBitwise) { expect_inference_equals_training("inception_v1", 64, false); }
TEST(InferenceGraph, MobileNetV2EqualsTheTrainingGraphBitwise) { expect_inference_equals_training("mobilenet_v2", 32, false); }
TEST(InferenceGraph, NasnetCellsEqualTheTrainingGraphBitwise) { expect_inference_equals_training("nasnet_cifar", 32, false); }

TEST(InferenceGraph, RefusesWhatNeedsGradientsOrAReusedBuffer) {
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10, .height = 28, .width = 28});
  Graph g(net, {.batch_size = 2, .inference = true});
  const Tensor x = testing_util::random_tensor(g.input_shape(), DType::kF32, 1);
  EXPECT_THROW(g.forward(x, /*training=*/true), Error);
  g.forward(x, /*training=*/false);
  EXPECT_THROW(g.backward(), Error);
  EXPECT_THROW(g.output_grad(0), Error);
  EXPECT_THROW(g.param_refs(), Error);
  EXPECT_THROW(g.layer_output(g.plan().nodes()[1].name), Error);  // not kept: its buffer was reused
  EXPECT_NO_THROW(g.layer_output(g.plan().nodes()[static_cast<size_t>(g.plan().logits_node())].name));
  EXPECT_THROW(Graph(net, {.batch_size = 2, .inference = true, .keep = {"no_such_layer"}}), Error);
}

// A graph that loads every variable next starts them at zero instead of drawing them; written, they give
// the drawn graph's logits bitwise.
TEST(InferenceGraph, UndrawnVariablesAreZeroUntilLoaded) {
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10, .height = 16, .width = 16});
  Graph drawn(net, {.batch_size = 2, .seed = 4, .inference = true});
  Graph loaded(net, {.batch_size = 2, .seed = 4, .inference = true, .draw_variables = false});
  const std::vector<NamedTensor> from = drawn.variables();
  std::vector<NamedTensor> to = loaded.variables();
  ASSERT_EQ(from.size(), to.size());
  for (size_t i = 0; i < to.size(); ++i) {
    for (double v : to[i].value.to_vector<double>()) ASSERT_EQ(v, 0.0) << to[i].name;
    std::memcpy(to[i].value.raw(), from[i].value.raw(), from[i].value.nbytes());
  }
  const Tensor x = testing_util::random_tensor(drawn.input_shape(), DType::kF32, 1);
  drawn.forward(x, false);
  loaded.forward(x, false);
  EXPECT_EQ(std::memcmp(drawn.output(0).raw(), loaded.output(0).raw(), drawn.output(0).nbytes()), 0);
}

}  // namespace
}  // namespace fastnn::graph
