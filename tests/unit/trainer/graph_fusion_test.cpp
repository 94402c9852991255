// Fusion as a plan rewrite (GraphOptions::fuse, ops/fused.h): a relu after a batch_norm or an add, a relu6
// after a batch_norm, becomes part of that layer, a residual unit's last batch_norm joins the add+relu after it
// ("batch_norm+add+relu"), and the fused plan is bitwise the unfused one on the CPU — loss, every
// parameter gradient, the batch-norm moving statistics after a training step, and the output of a
// fused-away relu, which find() / layer_output() still reach by its name. With fuse_conv_bn each convolution
// read only by a batch norm node also joins it ("conv2d+batch_norm+relu", ...), the same way bitwise.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/fused.h"
#include "trainer/ops/op.h"
#include "trainer/train_step.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::graph {
namespace {

using testing_util::same_bits;

// activation: the op fused away whose output is checked by name (relu; MobileNet's relu6).
struct FusionCase {
  bool residual_units = true;
  std::string activation = "relu";
  bool conv_bn = false;  // GraphOptions::fuse_conv_bn too
  Layout layout = Layout::kNCHW;
};

void expect_fused_equals_unfused(const std::string& model, int size, const FusionCase& fc = {}) {
  const std::string& activation = fc.activation;
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size});
  Graph plain(net, {.batch_size = 2, .seed = 5, .layout = fc.layout});
  Graph fused(net, {.batch_size = 2, .seed = 5, .fuse = true, .layout = fc.layout, .fuse_conv_bn = fc.conv_bn});
  ASSERT_LT(fused.plan().nodes().size(), plain.plan().nodes().size()) << model << ": nothing was fused";
  const size_t conv_params = fc.conv_bn ? 1 : 0;  // the zoo's convolutions before a batch norm have no bias
  int residual = 0, conv_bn = 0;
  for (const PlanNode& n : fused.plan().nodes()) {
    if (n.op.starts_with("conv2d+batch_norm")) {
      ++conv_bn;
      EXPECT_EQ(n.params.size(), 3u) << n.name << ": the convolution's weights, then gamma and beta";
      EXPECT_TRUE(n.params.front().name.ends_with("/weights")) << n.params.front().name;
      const std::string& w = n.params.front().name;
      const std::string conv = w.substr(0, w.size() - std::string("/weights").size());
      ASSERT_GE(plain.plan().find(conv), 0) << conv;
      EXPECT_EQ(plain.plan().nodes()[static_cast<size_t>(plain.plan().find(conv))].op, "conv2d") << conv;
      EXPECT_EQ(fused.plan().find(conv), static_cast<int>(&n - fused.plan().nodes().data()))
          << "the fused-away convolution's name finds the node it joined";
    }
    if (!n.op.ends_with("batch_norm+add+relu")) continue;
    ++residual;
    ASSERT_EQ(n.inputs.size(), 2u) << n.name;
    EXPECT_EQ(n.params.size(), 2u + conv_params) << n.name << ": the batch norm's gamma and beta";
    EXPECT_EQ(n.state.size(), 2u) << n.name << ": its moving statistics";
    EXPECT_EQ(plain.plan().nodes()[static_cast<size_t>(plain.plan().find(n.name))].op, "add") << "named after the add";
  }
  if (fc.residual_units) {
    EXPECT_GT(residual, 0) << model << ": no residual unit's batch norm joined its add";
  }
  if (fc.conv_bn) {
    EXPECT_GT(conv_bn, 0) << model << ": no convolution joined its batch norm";
  }
  {
    const std::vector<NamedTensor> pa = plain.parameters(), pb = fused.parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t k = 0; k < pa.size(); ++k) EXPECT_EQ(pa[k].name, pb[k].name) << "parameters keep their order";
  }
  std::string relu_name;
  for (const PlanNode& n : plain.plan().nodes())
    if (n.op == activation && fused.plan().nodes()[static_cast<size_t>(fused.plan().find(n.name))].name != n.name) {
      relu_name = n.name;
      break;
    }
  ASSERT_FALSE(relu_name.empty()) << model << ": no " << activation << " was fused away";
  EXPECT_TRUE(fused.plan().nodes()[static_cast<size_t>(fused.plan().find(relu_name))].op.ends_with("+" + activation));

  const Shape in = plain.input_shape();
  const Tensor x = testing_util::random_tensor(in, DType::kF32, 3);
  const Tensor labels = testing_util::labels_of({1, 7});
  TrainStep sp(plain), sf(fused);
  for (uint64_t step = 0; step < 2; ++step) {
    const StepResult a = sp.train(x, labels, step), b = sf.train(x, labels, step);
    EXPECT_EQ(a.loss, b.loss) << model << " step " << step;
    const std::vector<NamedTensor> pa = plain.parameters(), pb = fused.parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t k = 0; k < pa.size(); ++k) {
      EXPECT_EQ(pa[k].name, pb[k].name);
      EXPECT_TRUE(same_bits(pa[k].grad, pb[k].grad)) << model << ": gradient of " << pa[k].name;
    }
    const std::vector<NamedTensor> sa = plain.state(), sb = fused.state();
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t k = 0; k < sa.size(); ++k) EXPECT_TRUE(same_bits(sa[k].value, sb[k].value)) << sa[k].name;
    EXPECT_TRUE(same_bits(plain.layer_output(relu_name), fused.layer_output(relu_name))) << relu_name;
  }
}

// Any net: the fuse_ops + fuse_conv_bn plan trains one step bitwise as the plain plan.
void expect_fused_equals_unfused_net(const NetDef& net) {
  Graph plain(net, {.batch_size = 2, .seed = 5});
  Graph fused(net, {.batch_size = 2, .seed = 5, .fuse = true, .fuse_conv_bn = true});
  const Tensor x = testing_util::random_tensor(plain.input_shape(), DType::kF32, 3);
  const Tensor labels = testing_util::labels_of({1, 3});
  TrainStep sp(plain), sf(fused);
  const StepResult a = sp.train(x, labels, 0), b = sf.train(x, labels, 0);
  EXPECT_EQ(a.loss, b.loss);
  const std::vector<NamedTensor> pa = plain.parameters(), pb = fused.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t k = 0; k < pa.size(); ++k) {
    EXPECT_EQ(pa[k].name, pb[k].name);
    EXPECT_TRUE(same_bits(pa[k].grad, pb[k].grad)) << "gradient of " << pa[k].name;
  }
}

TEST(GraphFusion, ResNetCifarFusedEqualsUnfusedBitwise) { expect_fused_equals_unfused("resnet_cifar_20", 32); }
TEST(GraphFusion, ResNetV1FusedEqualsUnfusedBitwise) { expect_fused_equals_unfused("resnet_v1_18", 32); }
// Bottleneck units with projection shortcuts: both addends of the first unit of a block are batch norms.
TEST(GraphFusion, ResNetV1BottleneckFusedEqualsUnfusedBitwise) { expect_fused_equals_unfused("resnet_v1_50", 32); }
// MobileNet v2: batch_norm+relu6 (its residual adds have no activation, so no batch_norm+add+relu).
TEST(GraphFusion, MobileNetV2Relu6FusedEqualsUnfusedBitwise) {
  expect_fused_equals_unfused("mobilenet_v2", 32, {.residual_units = false, .activation = "relu6"});
}
// fuse_conv_bn (the cuDNN conv+statistics fusion's plan rewrite) on top: the composite on the CPU.
TEST(GraphFusion, ConvBatchNormFusedEqualsUnfusedBitwise) {
  expect_fused_equals_unfused("resnet_cifar_20", 32, {.conv_bn = true});
  expect_fused_equals_unfused("resnet_v1_50", 32, {.conv_bn = true});
  expect_fused_equals_unfused("mobilenet_v2", 32, {.residual_units = false, .activation = "relu6", .conv_bn = true});
}
// The same in NHWC, the GPU's layout (every kernel behind the CPU's layout adapter).
TEST(GraphFusion, ConvBatchNormFusedEqualsUnfusedBitwiseInNhwc) {
  expect_fused_equals_unfused("resnet_v1_50", 32, {.conv_bn = true, .layout = Layout::kNHWC});
}

// The fan-out rule: a convolution whose input has other readers does not join a batch_norm+add+relu (that
// node cannot add into its input's gradient as the CUDA convolution does); before a plain batch norm it
// does. Here x feeds c1 and the add (c1's batch norm joins the add), and c2 and c3 (c2's does not).
// In NHWC the CPU's fast batch norm has one-pass fusions (ops/batch_norm_nhwc.cpp): they replace the
// composites (batch norm's two saved statistics, none of the composite's intermediate tensors) and train
// bitwise as the unfused plan: relu, relu6 (MobileNet v2), residual add + relu (basic and bottleneck units).
void expect_one_pass_cpu_fusions(const std::string& model, int size, const FusionCase& fc) {
  expect_fused_equals_unfused(model, size, fc);
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size});
  Graph fused(net, {.batch_size = 2, .seed = 5, .fuse = true, .layout = Layout::kNHWC});
  int one_pass = 0;
  for (const PlanNode& n : fused.plan().nodes()) {
    if (!n.op.starts_with("batch_norm+")) continue;
    EXPECT_EQ(n.kernel->signature().saved.size(), 2u) << n.name << " (" << n.op << "): not the one-pass kernel";
    ++one_pass;
  }
  EXPECT_GT(one_pass, 0) << model;
}

TEST(GraphFusion, CpuNhwcOnePassFusionsEqualUnfusedBitwise) {
  if (!ops::use_fast_cpu_kernels()) GTEST_SKIP() << "FASTNN_CPU_KERNELS=reference: the composites run";
  expect_one_pass_cpu_fusions("resnet_cifar_20", 32, {.layout = Layout::kNHWC});
  expect_one_pass_cpu_fusions("resnet_v1_50", 32, {.layout = Layout::kNHWC});
  expect_one_pass_cpu_fusions("mobilenet_v2", 32, {.residual_units = false, .activation = "relu6", .layout = Layout::kNHWC});
}

TEST(GraphFusion, ConvWithFanOutStaysOutOfBatchNormAddRelu) {
  const NetDef net = testing_util::net_from_text(R"pb(
    input { channels: 3 height: 8 width: 8 }
    layers { name: "c0" inputs: "data" conv { filters: 8 kernel: 3 padding: "same" bias: false } }
    layers { name: "b0" inputs: "c0" batch_norm {} }
    layers { name: "x" inputs: "b0" relu {} }
    layers { name: "c1" inputs: "x" conv { filters: 8 kernel: 3 padding: "same" bias: false } }
    layers { name: "b1" inputs: "c1" batch_norm {} }
    layers { name: "sum" inputs: "b1" inputs: "x" add {} }
    layers { name: "y" inputs: "sum" relu {} }
    layers { name: "c2" inputs: "y" conv { filters: 8 kernel: 1 bias: false } }
    layers { name: "b2" inputs: "c2" batch_norm {} }
    layers { name: "c3" inputs: "y" conv { filters: 8 kernel: 1 bias: false } }
    layers { name: "b3" inputs: "c3" batch_norm {} }
    layers { name: "both" inputs: "b2" inputs: "b3" add {} }
    layers { name: "gap" inputs: "both" global_avg_pool {} }
    layers { name: "fc" inputs: "gap" fully_connected { units: 4 } }
    logits: "fc"
  )pb");
  Graph fused(net, {.batch_size = 2, .seed = 5, .fuse = true, .fuse_conv_bn = true});
  const NetPlan& plan = fused.plan();
  EXPECT_EQ(plan.nodes()[static_cast<size_t>(plan.find("b0"))].op, "conv2d+batch_norm+relu");
  EXPECT_EQ(plan.nodes()[static_cast<size_t>(plan.find("sum"))].op, "batch_norm+add+relu");
  EXPECT_EQ(plan.nodes()[static_cast<size_t>(plan.find("c1"))].op, "conv2d") << "x also feeds the add";
  EXPECT_EQ(plan.nodes()[static_cast<size_t>(plan.find("b2"))].op, "conv2d+batch_norm") << "y's fan-out is fine here";
  EXPECT_EQ(plan.nodes()[static_cast<size_t>(plan.find("b3"))].op, "conv2d+batch_norm");
  expect_fused_equals_unfused_net(net);
}

// A device's registered one-pass kernel (OpRegistry::add_fusion: the CUDA batch_norm+relu) takes the
// composite's place in the fused plan; a factory that declines leaves the composite.
TEST(GraphFusion, RegisteredFusionReplacesTheComposite) {
  ops::OpRegistry reg;
  ops::register_builtin_ops(reg);
  int asked = 0;
  std::vector<const ops::OpKernel*> made;
  reg.add_fusion("batch_norm", "relu", Device::kCpu, [&](const ops::OpKernel& first, const ops::OpKernel& then) {
    ++asked;
    if (asked == 1) return std::unique_ptr<ops::OpKernel>();  // declines: the composite is used
    // Stands in for a one-pass kernel: the same two kernels again, recorded by address.
    auto k = ops::make_fused_kernel(reg.create("batch_norm", Device::kCpu, {}, first.signature().inputs),
                                    reg.create("relu", Device::kCpu, {}, then.signature().inputs));
    made.push_back(k.get());
    return k;
  });
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10});
  Graph fused(net, {.batch_size = 2, .seed = 5, .registry = &reg, .fuse = true});
  ASSERT_GT(asked, 1);
  EXPECT_EQ(static_cast<int>(made.size()), asked - 1);
  size_t found = 0;
  for (const PlanNode& n : fused.plan().nodes())
    for (const ops::OpKernel* k : made) found += n.kernel.get() == k;
  EXPECT_EQ(found, made.size()) << "every registered fusion is a node's kernel";
}

}  // namespace
}  // namespace fastnn::graph
