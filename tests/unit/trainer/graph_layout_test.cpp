// An NHWC graph on the CPU (GraphOptions::layout = kNHWC: every 4-D activation [N, H, W, C], each NCHW
// kernel inside ops/layout_adapter.h) is bitwise the NCHW graph: the same training step from the same
// initial weights gives the same loss, logits, parameter gradients and batch-norm statistics, for nets
// with a flatten into a fully connected layer (LeNet), residual adds (ResNet), concatenation on the
// channel axis (Inception) and depthwise convolutions (MobileNet v2); fused too. This is the CPU half of
// NHWC on the GPU (issue 13, P4): kernels that take NHWC natively are held to this graph. The CPU's fast
// NHWC kernels (oneDNN's convolution, batch norm over rows) sum in other orders: the bitwise tests make
// their graphs with the reference kernels, and the fast NHWC graph is held to the NCHW one within f32
// rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/ops/blas_core.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/train_step.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::graph {
namespace {

using testing_util::same_bits;

Tensor to_nhwc(const Tensor& x) {
  const Shape& s = x.shape();
  Tensor y = Tensor::empty(ops::nhwc_shape(s), x.dtype(), Device::kCpu, Layout::kNHWC);
  const float* in = x.data<float>();
  float* out = y.data<float>();
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t i = 0; i < s[2] * s[3]; ++i) out[(n * s[2] * s[3] + i) * s[1] + c] = in[(n * s[1] + c) * s[2] * s[3] + i];
  return y;
}

void expect_nhwc_graph_is_bitwise(const std::string& model, int size, bool fuse) {
  SCOPED_TRACE(model + (fuse ? " fused" : ""));
  const ops::ScopedReferenceCpuKernels reference;
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size});
  Graph nchw(net, {.batch_size = 2, .seed = 5, .fuse = fuse});
  Graph nhwc(net, {.batch_size = 2, .seed = 5, .fuse = fuse, .layout = Layout::kNHWC});
  EXPECT_EQ(nhwc.input_shape(), ops::nhwc_shape(nchw.input_shape()));
  ASSERT_EQ(nhwc.plan().nodes().size(), nchw.plan().nodes().size());
  int four_d = 0;
  for (size_t i = 0; i < nchw.plan().nodes().size(); ++i) {
    const Shape& s = nchw.plan().nodes()[i].output_shape;
    four_d += s.size() == 4;
    EXPECT_EQ(nhwc.plan().nodes()[i].output_shape, ops::nhwc_shape(s)) << nchw.plan().nodes()[i].name;
  }
  EXPECT_GT(four_d, 0);
  int adapted = 0, native = 0;  // element-wise layers take NHWC without the adapter
  for (const PlanNode& n : nhwc.plan().nodes()) {
    adapted += n.kernel->signature().activation_layout == Layout::kNHWC;
    native += n.kernel->signature().activation_layout == Layout::kNone && n.output_shape.size() == 4;
  }
  EXPECT_GT(adapted, 0);
  // (Fused, resnet_cifar_20 has none left: each relu and add joined a batch norm.)
  if (model != "lenet" && !fuse) {
    EXPECT_GT(native, 0) << "no element-wise layer ran without the adapter";
  }
  const Tensor x = testing_util::random_tensor(nchw.input_shape(), DType::kF32, 3);
  const Tensor labels = testing_util::labels_of({1, 7});
  TrainStep a(nchw), b(nhwc);
  const StepResult ra = a.train(x, labels, 0), rb = b.train(to_nhwc(x), labels, 0);
  EXPECT_EQ(ra.loss, rb.loss);
  EXPECT_TRUE(same_bits(nchw.output(0), nhwc.output(0))) << "logits";
  const auto pa = nchw.parameters(), pb = nhwc.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(same_bits(pa[i].grad, pb[i].grad)) << pa[i].name;
  const auto sa = nchw.state(), sb = nhwc.state();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_TRUE(same_bits(sa[i].value, sb[i].value)) << sa[i].name;
}

TEST(GraphLayout, LeNetFlattenIntoFullyConnected) { expect_nhwc_graph_is_bitwise("lenet", 28, false); }
TEST(GraphLayout, ResNetResidualAdds) {
  expect_nhwc_graph_is_bitwise("resnet_cifar_20", 32, false);
  expect_nhwc_graph_is_bitwise("resnet_cifar_20", 32, true);
}
TEST(GraphLayout, InceptionConcatenation) {
  expect_nhwc_graph_is_bitwise("inception_v1", zoo::zoo_model("inception_v1").min_size, false);
}

// An op with its own NHWC kernel for the device (OpRegistry::add_nhwc_kernel; the CPU's concat copies
// rows) takes it instead of the adapter; the others keep the adapter (its NCHW copies in saved).
TEST(GraphLayout, OpsWithAnNhwcKernelSkipTheAdapter) {
  const ops::ScopedReferenceCpuKernels reference;
  const NetDef net = zoo::build_net("inception_v1", {.num_classes = 10});
  Graph nhwc(net, {.batch_size = 2, .seed = 5, .layout = Layout::kNHWC});
  auto adapted = [](const PlanNode& n) {
    for (const ops::TensorSpec& t : n.kernel->signature().saved)
      if (t.name.starts_with("nchw_")) return true;
    return false;
  };
  int concats = 0, convs = 0;
  for (const PlanNode& n : nhwc.plan().nodes()) {
    if (n.op == "concat") {
      ++concats;
      EXPECT_FALSE(adapted(n)) << n.name;
      EXPECT_EQ(n.kernel->signature().activation_layout, Layout::kNHWC) << n.name;
    }
    if (n.op == "conv2d") {
      ++convs;
      EXPECT_TRUE(adapted(n)) << n.name << ": the CPU's reference has no NHWC convolution";
    }
  }
  EXPECT_GT(concats, 0);
  EXPECT_GT(convs, 0);
  ops::OpRegistry r;
  ops::register_builtin_ops(r);
  const std::vector<ops::TensorSpec> one{ops::TensorSpec{.shape = {2, 3, 4, 5}}};
  const std::vector<ops::TensorSpec> two{ops::TensorSpec{.shape = {2, 3, 4, 5}}, ops::TensorSpec{.shape = {2, 1, 4, 5}}};
  EXPECT_EQ(r.create_nhwc("conv2d", Device::kCpu, {{"filters", 4}}, one), nullptr);
  auto k = r.create_nhwc("concat", Device::kCpu, {}, two);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->signature().inputs[0].shape, (Shape{2, 4, 5, 3}));
  EXPECT_EQ(k->signature().outputs[0].shape, (Shape{2, 4, 5, 4}));
}
bool close(double a, double b, double scale) { return std::fabs(a - b) <= 1e-4 * std::fabs(b) + 1e-5 * scale; }

// Within f32 rounding of the NCHW graph: the loss, the logits and every parameter gradient.
void expect_fast_nhwc_graph_is_close(const std::string& model, int size) {
  SCOPED_TRACE(model);
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size});
  Graph nchw(net, {.batch_size = 4, .seed = 5});
  Graph nhwc(net, {.batch_size = 4, .seed = 5, .layout = Layout::kNHWC});
  int own = 0;  // layers on an NHWC kernel of their own (no adapter copies in saved)
  for (const PlanNode& n : nhwc.plan().nodes()) {
    bool adapted = false;
    for (const ops::TensorSpec& t : n.kernel->signature().saved) adapted |= t.name.starts_with("nchw_");
    own += n.kernel->signature().activation_layout == Layout::kNHWC && !adapted;
  }
  EXPECT_GT(own, 0);
  const Tensor x = testing_util::random_tensor(nchw.input_shape(), DType::kF32, 3);
  const Tensor labels = testing_util::labels_of({1, 7, 3, 0});
  TrainStep a(nchw), b(nhwc);
  const StepResult ra = a.train(x, labels, 0), rb = b.train(to_nhwc(x), labels, 0);
  EXPECT_TRUE(close(rb.loss, ra.loss, 1)) << rb.loss << " vs " << ra.loss;
  const auto pa = nchw.parameters(), pb = nhwc.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    const auto ga = pa[i].grad.to_vector<double>(), gb = pb[i].grad.to_vector<double>();
    ASSERT_EQ(ga.size(), gb.size());
    double scale = 1e-3;
    for (double v : ga) scale = std::max(scale, std::fabs(v));
    int bad = 0;
    for (size_t j = 0; j < ga.size() && bad < 3; ++j)
      if (!close(gb[j], ga[j], scale)) {
        ADD_FAILURE() << pa[i].name << "[" << j << "]: nhwc " << gb[j] << " nchw " << ga[j];
        ++bad;
      }
  }
}

TEST(GraphLayout, FastCpuKernelsAgreeWithinRounding) {
  if (!ops::use_fast_cpu_kernels()) GTEST_SKIP() << ops::cpu_kernels_description();
  expect_fast_nhwc_graph_is_close("lenet", 28);
  expect_fast_nhwc_graph_is_close("resnet_cifar_20", 16);
}

// An inference graph keeps oneDNN's blocked copy of each convolution weight between forwards
// (ForwardArgs::params_write_counted). A weight written after a forward, even through a tensor taken
// before it, must be seen by the next one: the logits are then bitwise those of a fresh graph holding the
// new weights. At 32x32 and batch 32 the 32- and 64-channel layers are Winograd convolutions (fastnn's
// own before AVX-512: its transformed filters are what is kept), the 16-channel ones direct.
TEST(GraphLayout, InferenceGraphSeesWeightsWrittenBetweenForwards) {
  if (!ops::use_fast_cpu_kernels()) GTEST_SKIP() << ops::cpu_kernels_description();
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10, .height = 32, .width = 32});
  const GraphOptions o{.batch_size = 32, .seed = 5, .layout = Layout::kNHWC, .inference = true};
  Graph g(net, o);
  const Tensor x = testing_util::random_tensor(g.input_shape(), DType::kF32, 3);
  std::vector<NamedTensor> held = g.variables();  // taken before the forwards, written after them
  g.forward(x, false);
  const Tensor first = g.output(0).clone();
  g.forward(x, false);
  EXPECT_TRUE(same_bits(first, g.output(0))) << "the cached weights changed the answer";
  GraphOptions other = o;
  other.seed = 9;
  Graph fresh(net, other);
  const std::vector<NamedTensor> new_values = fresh.variables();
  ASSERT_EQ(held.size(), new_values.size());
  for (size_t i = 0; i < held.size(); ++i) std::memcpy(held[i].value.raw(), new_values[i].value.raw(), held[i].value.nbytes());
  g.forward(x, false);
  fresh.forward(x, false);
  EXPECT_FALSE(same_bits(first, g.output(0))) << "new weights, the same logits";
  EXPECT_TRUE(same_bits(fresh.output(0), g.output(0))) << "a stale copy of the old weights was used";
}

// Re-planning for another batch size (a server's varying batches) hands each oneDNN kernel's derived
// weights to the new kernel (OpKernel::inherit_derived): the logits stay bitwise a fresh graph's at that
// size, and a weight written in between is still seen.
TEST(GraphLayout, InferenceGraphKeepsDerivedWeightsAcrossBatchSizes) {
  if (!ops::use_fast_cpu_kernels()) GTEST_SKIP() << ops::cpu_kernels_description();
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10, .height = 16, .width = 16});
  GraphOptions o{.batch_size = 2, .seed = 5, .fuse = true, .layout = Layout::kNHWC, .fold_batch_norms = true, .inference = true};
  Graph g(net, o);
  const Tensor x2 = testing_util::random_tensor(g.input_shape(), DType::kF32, 3);
  g.forward(x2, false);
  g.set_batch_size(1);
  const Tensor x1 = testing_util::random_tensor(g.input_shape(), DType::kF32, 4);
  g.forward(x1, false);
  o.batch_size = 1;
  Graph fresh1(net, o);
  fresh1.forward(x1, false);
  EXPECT_TRUE(same_bits(fresh1.output(0), g.output(0))) << "batch 1 after batch 2";
  GraphOptions other = o;
  other.seed = 9;
  other.batch_size = 2;
  Graph fresh2(net, other);
  std::vector<NamedTensor> vars = g.variables();
  const std::vector<NamedTensor> new_values = fresh2.variables();
  for (size_t i = 0; i < vars.size(); ++i) std::memcpy(vars[i].value.raw(), new_values[i].value.raw(), vars[i].value.nbytes());
  g.set_batch_size(2);
  g.forward(x2, false);
  fresh2.forward(x2, false);
  EXPECT_TRUE(same_bits(fresh2.output(0), g.output(0))) << "weights written before the batch size changed back";
}

// A CPU inference graph keeps the plan of each batch size it ran and takes it back when the size
// returns (Graph::kKeptPlans): the logits stay bitwise a fresh graph's at that size, and weights written
// while another size's plan ran are seen by every plan. ResNet-50 at 112 pixels: on AVX-512 its
// Winograd layers pick their weights' format by the batch, so the sizes hold weights in several formats.
TEST(GraphLayout, InferenceGraphKeepsPlansAcrossBatchSizes) {
  if (!ops::use_fast_cpu_kernels()) GTEST_SKIP() << ops::cpu_kernels_description();
  const NetDef net = zoo::build_net("resnet_v1_50", {.num_classes = 10, .height = 112, .width = 112});
  GraphOptions o{.batch_size = 2, .seed = 5, .fuse = true, .layout = Layout::kNHWC, .fold_batch_norms = true, .inference = true};
  Graph g(net, o);
  auto images = [&](int64_t n, uint64_t seed) {
    Shape s = g.input_shape();
    s[0] = n;
    return testing_util::random_tensor(s, DType::kF32, seed);
  };
  g.forward(images(2, 3), false);
  const ops::OpKernel* batch2_kernel = g.plan().nodes()[0].kernel.get();
  for (int64_t n : {1, 12}) {
    g.set_batch_size(n);
    g.forward(images(n, 4), false);
  }
  g.set_batch_size(2);
  EXPECT_EQ(g.plan().nodes()[0].kernel.get(), batch2_kernel) << "batch 2 was planned again";
  GraphOptions other = o;
  other.seed = 9;
  Graph source(net, other);
  std::vector<NamedTensor> vars = g.variables();
  const std::vector<NamedTensor> new_values = source.variables();
  ASSERT_EQ(vars.size(), new_values.size());
  for (size_t i = 0; i < vars.size(); ++i) std::memcpy(vars[i].value.raw(), new_values[i].value.raw(), vars[i].value.nbytes());
  for (int64_t n : {12, 1, 2}) {
    SCOPED_TRACE(n);
    g.set_batch_size(n);
    other.batch_size = n;
    Graph fresh(net, other);
    const Tensor x = images(n, 5);
    g.forward(x, false);
    fresh.forward(x, false);
    EXPECT_TRUE(same_bits(fresh.output(0), g.output(0))) << "a kept plan used weights from before the write";
  }
}

// Batch norms folded into the convolutions before them (PlanOptions::fold_batch_norms: oneDNN's
// convolution with the relu, relu6 or residual add as post-ops) give the unfolded inference graph's
// logits within f32 rounding, with batch-norm parameters and statistics far from their initial values.
// In bfloat16 (fold_in_bf16) within bf16's: 8 bits of mantissa, rounded once per layer's input.
void expect_folded_graph_is_close(const std::string& model, int size, bool bf16 = false) {
  SCOPED_TRACE(model + (bf16 ? " bf16" : ""));
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size});
  const GraphOptions o{.batch_size = 2, .seed = 5, .fuse = true, .layout = Layout::kNHWC, .inference = true};
  GraphOptions fold_o = o;
  fold_o.fold_batch_norms = true;
  fold_o.fold_in_bf16 = bf16;
  Graph plain(net, o), folded(net, fold_o);
  int folds = 0, tails = 0;
  for (const PlanNode& n : folded.plan().nodes()) {
    folds += n.op.find("conv2d+batch_norm") != std::string::npos;
    tails += n.op.ends_with("+batch_norm+relu") || n.op.ends_with("+add+relu") || n.op.ends_with("+relu6");
  }
  EXPECT_GT(folds, 0);
  EXPECT_GT(tails, 0);
  EXPECT_LT(folded.plan().nodes().size(), plain.plan().nodes().size());
  // Scales around 1, shifts and means around 0, variances in [0.5, 1.5): each channel folds differently.
  std::vector<NamedTensor> pv = plain.variables(), fv = folded.variables();
  ASSERT_EQ(pv.size(), fv.size());
  uint64_t seed = 11;
  for (size_t i = 0; i < pv.size(); ++i) {
    const std::string& name = pv[i].name;
    const bool bn = name.ends_with("gamma") || name.ends_with("beta") || name.ends_with("moving_mean") || name.ends_with("moving_variance");
    if (!bn) continue;
    const Tensor r = testing_util::random_tensor(pv[i].value.shape(), DType::kF32, ++seed);  // [-1, 1)
    const float* rv = r.data<float>();
    float* a = pv[i].value.data<float>();
    for (int64_t j = 0; j < r.numel(); ++j)
      a[j] = name.ends_with("gamma") ? 1.0f + 0.5f * rv[j] : name.ends_with("moving_variance") ? 1.0f + 0.5f * rv[j] : 0.3f * rv[j];
    std::memcpy(fv[i].value.raw(), pv[i].value.raw(), pv[i].value.nbytes());
  }
  const Tensor x = to_nhwc(testing_util::random_tensor(plain.plan().options().layout == Layout::kNHWC
                                                           ? Shape{2, plain.input_shape()[3], plain.input_shape()[1], plain.input_shape()[2]}
                                                           : plain.input_shape(),
                                                       DType::kF32, 3));
  plain.forward(x, false);
  folded.forward(x, false);
  const auto a = plain.output(0).to_vector<double>(), b = folded.output(0).to_vector<double>();
  double scale = 1e-3;
  for (double v : a) scale = std::max(scale, std::fabs(v));
  double worst = 0;
  for (size_t j = 0; j < a.size(); ++j) {
    EXPECT_NEAR(b[j], a[j], (bf16 ? 3e-2 : 1e-4) * scale) << "logit " << j;
    worst = std::max(worst, std::fabs(b[j] - a[j]) / scale);
  }
  if (bf16) {
    EXPECT_GT(worst, 1e-5) << "bf16 gave f32's logits: were the convolutions computed in f32?";
  }
}

TEST(GraphLayout, InferenceGraphFoldsBatchNormsWithinRounding) {
  if (!ops::use_fast_cpu_kernels()) GTEST_SKIP() << ops::cpu_kernels_description();
  expect_folded_graph_is_close("resnet_cifar_20", 16);
  expect_folded_graph_is_close("resnet_v1_50", 32);
  expect_folded_graph_is_close("mobilenet_v2", 32);
}

// Whether some Winograd convolution runs here: oneDNN's (AVX-512) or fastnn's own (AVX2 with FMA).
bool cpu_has_winograd() {
  return ops::cpu_kernels_description().find("avx512") != std::string::npos || ops::cpu::this_cpu_features().avx2_fma;
}

// ResNet-50 at 112x112: its 3x3 layers at 28, 14 and 7 pixels (batch 2) are where Winograd pays
// (winograd_pays_in_inference; before AVX-512 fastnn's own, own_winograd_pays: at 28 and 14); elsewhere
// the direct convolutions, bitwise.
TEST(GraphLayout, InferenceGraphFoldsIntoWinogradWithinRounding) {
  if (!ops::use_winograd_convolutions()) GTEST_SKIP() << ops::cpu_kernels_description();
  expect_folded_graph_is_close("resnet_v1_50", 112);
  const NetDef net = zoo::build_net("resnet_v1_50", {.num_classes = 10, .height = 112, .width = 112});
  const GraphOptions o{.batch_size = 2, .seed = 5, .fuse = true, .layout = Layout::kNHWC, .fold_batch_norms = true, .inference = true};
  Graph winograd(net, o);
  std::optional<Graph> direct;
  {
    const ops::ScopedDirectConvolutions scope;
    direct.emplace(net, o);
  }
  const Tensor x = testing_util::random_tensor(winograd.input_shape(), DType::kF32, 3);
  winograd.forward(x, false);
  direct->forward(x, false);
  if (!cpu_has_winograd()) GTEST_SKIP() << "no Winograd before AVX2: " << ops::cpu_kernels_description();
  EXPECT_FALSE(same_bits(winograd.output(0), direct->output(0))) << "no layer took the Winograd convolution";
}

// A graph for a job of few images keeps the direct convolutions where Winograd's weight transform would
// not be repaid (2 images * 28 * 28 pixels at most: under winograd_pays_in_inference's 6,000); over many
// images it takes Winograd as an unbounded graph does.
TEST(GraphLayout, InferenceGraphForFewImagesKeepsDirectConvolutions) {
  if (!ops::use_winograd_convolutions() || !cpu_has_winograd())
    GTEST_SKIP() << "no Winograd: " << ops::cpu_kernels_description();
  const NetDef net = zoo::build_net("resnet_v1_50", {.num_classes = 10, .height = 112, .width = 112});
  GraphOptions o{.batch_size = 2, .seed = 5, .fuse = true, .layout = Layout::kNHWC, .fold_batch_norms = true, .inference = true};
  std::optional<Graph> direct;
  {
    const ops::ScopedDirectConvolutions scope;
    direct.emplace(net, o);
  }
  o.fold_job_images = 2;
  Graph few(net, o);
  o.fold_job_images = 1000;
  Graph many(net, o);
  const Tensor x = testing_util::random_tensor(few.input_shape(), DType::kF32, 3);
  direct->forward(x, false);
  few.forward(x, false);
  many.forward(x, false);
  EXPECT_TRUE(same_bits(few.output(0), direct->output(0))) << "a layer took Winograd for a job of 2 images";
  EXPECT_FALSE(same_bits(many.output(0), direct->output(0))) << "no layer took Winograd for a job of 1000 images";
}

// A folded convolution with a residual writes its output over the residual's buffer when it reads the
// residual last (ops::OpSignature::output_may_take_input; oneDNN's sum post-op needs the residual in
// the output, which was a copy): the logits stay bitwise those of a graph that keeps every residual (so
// none is written over). ResNet-20's basic blocks at 32x32, batch 12 (on AVX2 fastnn's Winograd, whose
// tail reads the residual where it writes) and ResNet-50's bottlenecks (oneDNN's 1x1 convolutions).
void expect_residual_taken_bitwise(const std::string& model, int size, int64_t batch) {
  SCOPED_TRACE(model);
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size});
  GraphOptions o{.batch_size = batch, .seed = 5, .fuse = true, .layout = Layout::kNHWC, .fold_batch_norms = true, .inference = true};
  Graph in_place(net, o);
  for (const PlanNode& n : in_place.plan().nodes()) {
    const int k = n.kernel->signature().output_may_take_input;
    if (k >= 0) o.keep.push_back(in_place.plan().nodes()[static_cast<size_t>(n.inputs[static_cast<size_t>(k)])].name);
  }
  ASSERT_FALSE(o.keep.empty()) << "no folded convolution takes its residual";
  EXPECT_EQ(in_place.layers_writing_over_an_input(), o.keep.size());
  Graph kept(net, o);
  EXPECT_EQ(kept.layers_writing_over_an_input(), 0u);
  for (uint64_t seed : {3, 4}) {
    const Tensor x = testing_util::random_tensor(in_place.input_shape(), DType::kF32, seed);
    in_place.forward(x, false);
    kept.forward(x, false);
    EXPECT_TRUE(same_bits(in_place.output(0), kept.output(0))) << "images " << seed;
  }
}

TEST(GraphLayout, FoldedConvolutionWritesOverItsResidual) {
  if (!ops::use_fast_cpu_kernels()) GTEST_SKIP() << ops::cpu_kernels_description();
  expect_residual_taken_bitwise("resnet_cifar_20", 32, 12);
  expect_residual_taken_bitwise("resnet_v1_50", 64, 2);
}

TEST(GraphLayout, InferenceGraphFoldsInBfloat16WithinItsRounding) {
  if (!ops::cpu_bf16_available()) GTEST_SKIP() << "no bf16 instructions: " << ops::cpu_kernels_description();
  expect_folded_graph_is_close("resnet_cifar_20", 16, true);
  expect_folded_graph_is_close("resnet_v1_50", 32, true);
  expect_folded_graph_is_close("mobilenet_v2", 32, true);
}

// Under fold_in_bf16 an activation that a bf16 fold writes and only bf16 folds or pools read stays
// bfloat16, so it is rounded once rather than by each reader; a max pool passes bf16 on. In ResNet-50
// (53 folds, 16 residual units; TF-slim's v1, whose strided units take a 1x1 max pool as their shortcut)
// that is every fold's output, every convolution's input but the stem's (the image) and all 16
// residuals. A layer kept for reading after the forward stays f32 (GraphOptions::keep); its reader then
// rounds it, as before.
TEST(GraphLayout, InferenceGraphKeepsBfloat16ActivationsBetweenBfloat16Folds) {
  if (!ops::cpu_bf16_available()) GTEST_SKIP() << "no bf16 instructions: " << ops::cpu_kernels_description();
  const NetDef net = zoo::build_net("resnet_v1_50", {.num_classes = 10, .height = 64, .width = 64});
  GraphOptions o{.batch_size = 2, .seed = 5, .fuse = true, .layout = Layout::kNHWC, .fold_batch_norms = true,
                 .fold_in_bf16 = true, .inference = true};
  struct Counts {
    int folds = 0, bf16_outputs = 0, bf16_inputs = 0, bf16_residuals = 0;
  };
  auto count = [](const Graph& g) {
    Counts c;
    for (const PlanNode& n : g.plan().nodes()) {
      if (n.op.find("conv2d+batch_norm") == std::string::npos) continue;
      const ops::OpSignature& sig = n.kernel->signature();
      ++c.folds;
      c.bf16_outputs += sig.outputs[0].dtype == DType::kBF16;
      c.bf16_inputs += sig.inputs[0].dtype == DType::kBF16;
      c.bf16_residuals += sig.inputs.size() > 1 && sig.inputs[1].dtype == DType::kBF16;
    }
    return c;
  };
  Graph g(net, o);
  const Counts all = count(g);
  EXPECT_EQ(all.folds, 53);
  EXPECT_EQ(all.bf16_outputs, 53);
  EXPECT_EQ(all.bf16_inputs, 52);
  EXPECT_EQ(all.bf16_residuals, 16);
  int pools_reading_bf16 = 0;
  for (const PlanNode& n : g.plan().nodes())
    pools_reading_bf16 += n.op.ends_with("pool2d") || n.op == "global_avg_pool" ? n.kernel->signature().inputs[0].dtype == DType::kBF16 : 0;
  EXPECT_EQ(pools_reading_bf16, 5) << "the stem's max pool, the three subsample shortcuts and the global pool";
  EXPECT_EQ(g.plan().nodes()[static_cast<size_t>(g.plan().logits_node())].kernel->signature().outputs[0].dtype, DType::kF32);

  // The first unit's first convolution kept: f32, and its reader (the unit's second convolution) takes it so.
  const PlanNode& first_fold = *std::find_if(g.plan().nodes().begin(), g.plan().nodes().end(), [](const PlanNode& n) {
    return n.name.ends_with("block1/unit_1/bottleneck_v1/conv1/BatchNorm");
  });
  o.keep = {first_fold.name};
  Graph kept(net, o);
  const Counts k = count(kept);
  EXPECT_EQ(k.bf16_outputs, 52);
  EXPECT_EQ(k.bf16_inputs, 51);
  EXPECT_EQ(k.bf16_residuals, 16);
  const Tensor x = testing_util::random_tensor(kept.input_shape(), DType::kF32, 3);
  kept.forward(x, false);
  g.forward(x, false);
  EXPECT_EQ(kept.layer_output(first_fold.name).dtype(), DType::kF32);
  // The same values up to where the rounding happens (oneDNN's bf16-output kernel is not bitwise its
  // f32-output one followed by a rounding).
  const auto a = kept.output(0).to_vector<double>(), b = g.output(0).to_vector<double>();
  double scale = 1e-3;
  for (double v : a) scale = std::max(scale, std::fabs(v));
  for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(b[j], a[j], 3e-2 * scale) << "logit " << j;

  // The first unit's add kept: it writes f32, and so does its residual (the projection shortcut) for the
  // add to write over it; the next unit's first convolution and residual read f32.
  o.keep = {"resnet_v1_50/block1/unit_1/bottleneck_v1/add"};
  Graph kept_add(net, o);
  const Counts ka = count(kept_add);
  EXPECT_EQ(ka.bf16_outputs, 51);
  EXPECT_EQ(ka.bf16_inputs, 51);
  EXPECT_EQ(ka.bf16_residuals, 14);
  // Every add still writes over its residual but the next unit's, whose residual is the kept output.
  EXPECT_EQ(kept_add.layers_writing_over_an_input(), g.layers_writing_over_an_input() - 1);
}

// Under fold_in_bf16 a folded convolution multiplies in bf16 only where it does at least 64 multiply-adds
// per input element (ops::bf16_pays_in_inference): every one of ResNet-50's; of MobileNet v2's, the 1x1
// layers with 64 or more output channels and the stem (32 * 9 / 4 = 72), never a depthwise one (9) nor a
// projection to 16, 24 or 32 channels.
TEST(GraphLayout, InferenceGraphMultipliesInBfloat16WhereItPays) {
  if (!ops::cpu_bf16_available()) GTEST_SKIP() << "no bf16 instructions: " << ops::cpu_kernels_description();
  const GraphOptions o{.batch_size = 1, .seed = 5, .fuse = true, .layout = Layout::kNHWC, .fold_batch_norms = true,
                       .fold_in_bf16 = true, .inference = true};
  auto count = [&](const std::string& model, auto&& pick) {
    const Graph g(zoo::build_net(model, {.num_classes = 10, .height = 64, .width = 64}), o);
    int picked = 0, in_bf16 = 0;
    for (const PlanNode& n : g.plan().nodes()) {
      if (n.op.find("conv2d+batch_norm") == std::string::npos || !pick(n)) continue;
      ++picked;
      in_bf16 += n.kernel->signature().multiplies_in_bf16;
    }
    return std::pair{picked, in_bf16};
  };
  auto any = [](const PlanNode&) { return true; };
  auto depthwise = [](const PlanNode& n) { return n.op.starts_with("depthwise"); };
  // The weights are [K, C, R, S]: K is the output channels.
  auto narrow_1x1 = [](const PlanNode& n) {
    const Shape& w = n.kernel->signature().params[0].shape;
    return !n.op.starts_with("depthwise") && w[2] == 1 && w[0] <= 32;
  };
  const auto [resnet, resnet_bf16] = count("resnet_v1_50", any);
  EXPECT_EQ(resnet, 53);
  EXPECT_EQ(resnet_bf16, resnet);
  const auto [folds, folds_bf16] = count("mobilenet_v2", any);
  const auto [dw, dw_bf16] = count("mobilenet_v2", depthwise);
  const auto [narrow, narrow_bf16] = count("mobilenet_v2", narrow_1x1);
  EXPECT_EQ(dw, 17);
  EXPECT_EQ(dw_bf16, 0);
  EXPECT_EQ(narrow, 6);
  EXPECT_EQ(narrow_bf16, 0);
  EXPECT_EQ(folds_bf16, folds - dw - narrow);
}

TEST(GraphLayout, MobileNetDepthwise) { expect_nhwc_graph_is_bitwise("mobilenet_v2", 32, false); }

TEST(GraphLayout, RefusesNchwImagesAndAdaptsDeviceKernels) {
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  Graph g(net, {.batch_size = 2, .seed = 5, .layout = Layout::kNHWC});
  const Tensor nchw = Tensor::empty({2, 1, 28, 28}, DType::kF32, Device::kCpu, Layout::kNCHW);
  EXPECT_THROW(g.forward(nchw, false), Error);
  EXPECT_THROW(ops::adapt_to_nhwc(nullptr), Error);
#ifdef FASTNN_HAVE_CUDA
  // The adapter wraps a CUDA kernel too (its transposes run on the device; creating needs no device).
  const std::vector<ops::TensorSpec> in{{.name = "x", .shape = {2, 3, 4, 5}, .dtype = DType::kF32}};
  auto k = ops::adapt_to_nhwc(builtin_op_registry().create("max_pool2d", Device::kCuda, {{"kernel", 2}}, in));
  EXPECT_EQ(k->device(), Device::kCuda);
  EXPECT_EQ(k->signature().activation_layout, Layout::kNHWC);
  EXPECT_EQ(k->signature().inputs[0].shape, (Shape{2, 4, 5, 3}));
  EXPECT_EQ(k->signature().outputs[0].shape, (Shape{2, 2, 2, 3}));
#endif
}

}  // namespace
}  // namespace fastnn::graph
