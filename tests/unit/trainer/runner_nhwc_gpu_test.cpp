// data_format=NHWC on the GPU (issue 13, P4): the CUDA runner with an NHWC graph (cuDNN's NHWC
// convolutions, the NHWC batch norm, pooling and concatenation kernels, the CUDA layout adapter for the
// other ops) trains the same steps as the NCHW runner from the same weights: losses and parameters after
// 3 steps within the precision's tolerance (cuDNN picks other algorithms per layout, so not bitwise), for
// nets with residual adds (ResNet), concatenation (Inception), a flatten into a fully connected layer
// (LeNet: the adapter on the GPU) and depthwise convolutions (MobileNet v2). A host
// uint8 NHWC batch reaches the NHWC graph without a transpose and gives the NCHW graph's loss. And
// fuse_ops: the fused runner bitwise the unfused one (NCHW and NHWC).
#include <gtest/gtest.h>

#ifndef FASTNN_HAVE_CUDA

TEST(TrainNhwcGpu, RequiresTheCudaBuild) { GTEST_SKIP() << "built without the CUDA backend"; }

#else

#include <cmath>
#include <string>
#include <vector>

#include "tests/unit/trainer/cuda_test_util.h"
#include "trainer/config/job_config.h"
#include "trainer/runner/step_runner.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::runner {
namespace {

StepRunnerOptions options(DType dt, Layout layout, bool fuse) {
  StepRunnerOptions o;
  o.target = {.device = Device::kCuda, .dtype = dt, .device_index = 0};
  o.batch_size = 8;
  o.seed = 13;
  o.weight_decay = 1e-4;
  o.layout = layout;
  o.fuse = fuse;
  o.deterministic = true;  // no run-to-run noise on top of the layouts' different algorithms
  o.optimizer = optimizer_options(load_job_config("", std::vector<std::string>{"--optimizer=momentum"}));
  if (dt == DType::kF16) o.scaling = {.initial_scale = 256, .dynamic = false};
  return o;
}

using cuda_test::rel_l2;

// Two runners of one net, trained on the same batches, within dt's tolerances (the comparison below).
void expect_train_alike(StepRunner& first, StepRunner& second, DType dt, int steps, double update_tol);

// How many steps the two layouts are compared over. Three for nets whose first steps are well conditioned
// (resnet_cifar_20, lenet). One for inception_v1 and mobilenet_v2: their later steps are chaotic on any
// hardware — on the CPU alone, switching the BLAS kernels (OPENBLAS_CORETYPE Haswell against Cooperlake)
// moves inception_v1's third loss from 6.35 to 6.87 at lr 0.002 — so for them the first step is compared
// through its update (every variable's change), which is the gradient itself, within `update_tol`
// (default: the weights' tolerance).

void expect_nhwc_trains_as_nchw(const std::string& model, int size, DType dt, bool fuse, int steps = 3,
                                double update_tol = -1) {
  SCOPED_TRACE(model + " " + dtype_name(dt) + (fuse ? " fused" : ""));
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size});
  auto nchw = make_step_runner(net, options(dt, Layout::kNCHW, fuse));
  auto nhwc = make_step_runner(net, options(dt, Layout::kNHWC, fuse));
  EXPECT_EQ(nhwc->graph().layout(), Layout::kNHWC);
  expect_train_alike(*nchw, *nhwc, dt, steps, update_tol);
}

void expect_train_alike(StepRunner& first, StepRunner& second, DType dt, int steps, double update_tol) {
  StepRunner* nchw = &first;
  StepRunner* nhwc = &second;
  // Half precision: the two runners' convolutions round differently; batch-norm betas (nearly cancelling
  // sums of rounded dy, see runner_train_device_gpu_test's is_bn_beta) are held together, as there.
  const double loss_tol = dt == DType::kF32 ? 1e-4 : 2e-2;
  const double weight_tol = dt == DType::kF32 ? 1e-4 : dt == DType::kF16 ? 2e-2 : 5e-2;
  const double beta_tol = dt == DType::kF32 ? 1e-4 : dt == DType::kF16 ? 0.2 : 0.5;
  const double tol = steps == 1 && update_tol > 0 ? update_tol : weight_tol;
  const std::vector<NamedArray> initial = nchw->host_variables();
  for (int step = 0; step < steps; ++step) {
    auto [xa, ya] = nchw->synthetic_batch(40 + static_cast<uint64_t>(step));
    auto [xb, yb] = nhwc->synthetic_batch(40 + static_cast<uint64_t>(step));
    const StepResult a = nchw->train(xa, ya, static_cast<uint64_t>(step), 0.02f);
    const StepResult b = nhwc->train(xb, yb, static_cast<uint64_t>(step), 0.02f);
    EXPECT_NEAR(b.loss, a.loss, loss_tol * std::max(1.0, std::fabs(a.loss))) << step;
  }
  std::vector<NamedArray> va = nchw->host_variables(), vb = nhwc->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  ASSERT_EQ(va.size(), initial.size());
  if (steps == 1) {  // the update, not the weights (which hardly move in one step)
    for (size_t i = 0; i < va.size(); ++i)
      for (size_t j = 0; j < va[i].data.size(); ++j) {
        va[i].data[j] -= initial[i].data[j];
        vb[i].data[j] -= initial[i].data[j];
      }
  }
  // A one-step update that is zero in exact arithmetic is rounding noise in both layouts: the moving
  // mean of a batch norm fed by a 1x1 convolution of a zero-mean batch-norm output (MobileNet v2's expand
  // layers: update norms near 1e-9 on the CPU), a beta whose dy nearly cancels. Such an update is held
  // absolutely, to tol x 1e-5 per element; a real error there is (1 - decay) x a mean, orders larger.
  const double floor_rms = steps == 1 ? 1e-5 : 0;
  std::vector<float> betas_a, betas_b;
  for (size_t i = 0; i < va.size(); ++i) {
    ASSERT_EQ(va[i].name, vb[i].name);
    if (va[i].name.ends_with("/BatchNorm/beta")) {
      betas_a.insert(betas_a.end(), va[i].data.begin(), va[i].data.end());
      betas_b.insert(betas_b.end(), vb[i].data.begin(), vb[i].data.end());
      continue;
    }
    EXPECT_LT(rel_l2(vb[i].data, va[i].data, floor_rms), tol) << va[i].name;
  }
  if (!betas_a.empty()) {  // one step: the betas' update, held like every other update
    EXPECT_LT(rel_l2(betas_b, betas_a), steps == 1 ? tol : beta_tol) << "batch-norm betas together";
  }
}

TEST(TrainNhwcGpu, NhwcGraphTrainsAsTheNchwGraph) {
  REQUIRE_GPU();
  expect_nhwc_trains_as_nchw("resnet_cifar_20", 32, DType::kF32, false);
  expect_nhwc_trains_as_nchw("resnet_cifar_20", 32, DType::kF16, true);
  expect_nhwc_trains_as_nchw("resnet_cifar_20", 32, DType::kBF16, true);
  expect_nhwc_trains_as_nchw("inception_v1", zoo::zoo_model("inception_v1").min_size, DType::kF32, false, 1);
  expect_nhwc_trains_as_nchw("lenet", 28, DType::kF32, false);
  // MobileNet v2 (depthwise convolutions), f32 at 128x128: its first update is ill-conditioned at every
  // size — the CPU alone, switching BLAS kernels, moves it by 3.8% (median variable) at 32x32, 0.68% at
  // 96 and 0.15% at 128 (batch 8: at most 0.54%, Conv/BatchNorm/gamma, then 0.41% for the first
  // depthwise gamma). The H200 (2026-11-27) put the layouts 3.2% and 2.3% apart on the same two
  // variables, the CPU's worst two: cuDNN's algorithms per layout perturb more than two GEMM kernel sets.
  // So 5e-2 (a wrong kernel moves updates by O(1)). Under f16 with the test's static loss scale of 256 its first step overflows in
  // both layouts (NaN losses after it, H100 2026-11-27); the depthwise kernels' f16/bf16 NHWC results
  // are held to the CPU's op by op in test_trainer_ops_nhwc_cuda_gpu.
  expect_nhwc_trains_as_nchw("mobilenet_v2", 128, DType::kF32, false, 1, 5e-2);
}

// fuse_ops on the GPU: the fused plan's one-pass kernels (batch_norm+relu, batch_norm+relu6, add+relu,
// batch_norm+add+relu) are bitwise their composites, which run the unfused kernels in order, so in
// deterministic mode the fused runner's steps are the unfused runner's bit for bit: every loss and every
// variable after 3 steps. `fused_op`: a one-pass op the fused plan must hold.
void expect_fused_trains_as_unfused(const std::string& model, int size, DType dt, Layout layout,
                                    const std::string& fused_op = "batch_norm+add+relu") {
  SCOPED_TRACE(model + " " + dtype_name(dt) + (layout == Layout::kNHWC ? " NHWC" : " NCHW"));
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size});
  auto plain = make_step_runner(net, options(dt, layout, false));
  auto fused = make_step_runner(net, options(dt, layout, true));
  int found = 0;
  for (const graph::PlanNode& n : fused->graph().plan().nodes()) found += n.op == fused_op;
  EXPECT_GT(found, 0) << "no " << fused_op << " in the fused plan";
  for (uint64_t step = 0; step < 3; ++step) {
    auto [xa, ya] = plain->synthetic_batch(60 + step);
    auto [xb, yb] = fused->synthetic_batch(60 + step);
    const StepResult a = plain->train(xa, ya, step, 0.02f), b = fused->train(xb, yb, step, 0.02f);
    EXPECT_EQ(b.loss, a.loss) << step;
  }
  const std::vector<NamedArray> va = plain->host_variables(), vb = fused->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    ASSERT_EQ(va[i].name, vb[i].name);
    EXPECT_EQ(va[i].data, vb[i].data) << va[i].name;
  }
}

TEST(TrainFusedGpu, FusedGraphTrainsAsTheUnfusedGraphBitwise) {
  REQUIRE_GPU();
  expect_fused_trains_as_unfused("resnet_cifar_20", 32, DType::kF32, Layout::kNCHW);
  expect_fused_trains_as_unfused("resnet_cifar_20", 32, DType::kF16, Layout::kNHWC);
  expect_fused_trains_as_unfused("resnet_v1_50", 64, DType::kBF16, Layout::kNHWC);
  expect_fused_trains_as_unfused("mobilenet_v2", 64, DType::kF32, Layout::kNHWC, "batch_norm+relu6");
}

// fuse_conv_bn on the GPU: where cuDNN has a conv + statistics engine the batch norms start from the
// convolutions' sums (f32, cuDNN's order) instead of their own statistics pass (double), so the fused
// runner trains as the fuse_ops runner within f16's tolerances, not bit for bit. Skipped, with the reason,
// when no layer got the engine (the convolutions' warnings name cuDNN's reasons). Not in deterministic
// mode (the other tests' options): cuDNN may note its conv + statistics engines non-deterministic, and
// they would all be refused. The fused runner replays its third step from CUDA graphs: the sums path
// is captured too.
TEST(TrainFusedGpu, ConvBatchNormFusedTrainsAsFuseOpsAlone) {
  REQUIRE_GPU();
  const NetDef net = zoo::build_net("resnet_v1_50", {.num_classes = 10, .height = 64, .width = 64});
  StepRunnerOptions o = options(DType::kF16, Layout::kNHWC, true);
  o.deterministic = false;
  auto plain = make_step_runner(net, o);
  o.fuse_conv_bn = true;
  o.cuda_graphs = true;
  auto fused = make_step_runner(net, o);
  int joined = 0;
  for (const graph::PlanNode& n : fused->graph().plan().nodes()) joined += n.op.starts_with("conv2d+batch_norm");
  ASSERT_GT(joined, 40) << "ResNet-50's convolutions did not join their batch norms";
  size_t with_sums = 0, without = 0;
  for (const graph::PlanNode& n : plain->graph().plan().nodes()) {
    if (n.op != "conv2d") continue;
    if (n.kernel->channel_sums_workspace()) ++with_sums; else ++without;
  }
  if (with_sums == 0) GTEST_SKIP() << "cuDNN has no conv + statistics engine for ResNet-50's layers on this GPU";
  std::printf("conv + statistics engines for %zu of %zu layers\n", with_sums, with_sums + without);
  expect_train_alike(*plain, *fused, DType::kF16, 3, -1);
}

// A pipeline batch as the GPU runner asks for it (uint8 NHWC on the host): the NHWC graph takes it
// without a transpose and gives the loss the NCHW graph gives (the same normalised values).
TEST(TrainNhwcGpu, HostUint8BatchFeedsBothLayouts) {
  REQUIRE_GPU();
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10, .height = 16, .width = 16});
  auto nchw = make_step_runner(net, options(DType::kF32, Layout::kNCHW, false));
  auto nhwc = make_step_runner(net, options(DType::kF32, Layout::kNHWC, false));
  EXPECT_EQ(nhwc->batch_format().layout, Layout::kNHWC);
  Tensor images = Tensor::empty({8, 16, 16, 3}, DType::kU8, Device::kCpu, Layout::kNHWC);
  for (int64_t i = 0; i < images.numel(); ++i) images.data<uint8_t>()[i] = static_cast<uint8_t>((i * 37) % 256);
  Tensor labels = Tensor::empty({8}, DType::kI32);
  for (int i = 0; i < 8; ++i) labels.data<int32_t>()[i] = i % 10;
  const StepResult a = nchw->evaluate(images, labels), b = nhwc->evaluate(images, labels);
  EXPECT_NEAR(b.loss, a.loss, 1e-4 * std::max(1.0, std::fabs(a.loss)));
  EXPECT_EQ(b.examples, a.examples);
}

}  // namespace
}  // namespace fastnn::runner

#endif  // FASTNN_HAVE_CUDA
