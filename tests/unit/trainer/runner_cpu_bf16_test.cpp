// precision=bf16 on the CPU (StepRunnerOptions::cpu_bf16): the training graph's convolutions multiply in
// bfloat16 (graph::cpu_bf16_op_registry()), the rest stays f32. A ResNet-20 step against the f32 step within
// bf16's rounding (the tolerances the GPU's bf16 step is held to), not bitwise it (bf16 really computes),
// bitwise itself from run to run; refused where it would silently compute f32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/unit/trainer/config_test_util.h"
#include "tests/unit/trainer/runner_test_options.h"
#include "tests/unit/trainer/tensor_compare.h"
#include "trainer/config/job_config.h"
#include "trainer/runner/device_setup.h"
#include "trainer/runner/step_runner.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::runner {
namespace {

TEST(CpuBf16Training, ThePrecisionFieldSetsIt) {
  const ComputeTarget cpu{};
  EXPECT_TRUE(step_runner_options(config_of({"--device=cpu", "--precision=bf16"}), cpu).cpu_bf16);
  EXPECT_FALSE(step_runner_options(config_of({"--device=cpu", "--precision=fp32"}), cpu).cpu_bf16);
  EXPECT_FALSE(step_runner_options(config_of({"--device=cpu"}), cpu).cpu_bf16) << "auto is f32 on the CPU";
  const ComputeTarget gpu{.device = Device::kCuda, .dtype = DType::kBF16};
  EXPECT_FALSE(step_runner_options(config_of({"--precision=bf16"}), gpu).cpu_bf16) << "the GPU's bf16 is its dtype";
}

StepRunnerOptions resnet_options(bool bf16) {
  StepRunnerOptions o = nhwc_momentum_options();
  o.cpu_bf16 = bf16;
  return o;
}

TEST(CpuBf16Training, ResNetStepIsTheF32StepWithinBf16Rounding) {
  if (!ops::cpu_bf16_available()) GTEST_SKIP() << "no bf16 instructions: " << ops::cpu_kernels_description();
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10, .height = 32, .width = 32});
  auto f32 = make_step_runner(net, resnet_options(false));
  auto bf16 = make_step_runner(net, resnet_options(true)), again = make_step_runner(net, resnet_options(true));
  for (uint64_t step = 0; step < 3; ++step) {
    auto [x, y] = f32->synthetic_batch(40 + step);
    const StepResult a = f32->train(x, y, step, 0.02f), b = bf16->train(x, y, step, 0.02f);
    const StepResult c = again->train(x, y, step, 0.02f);
    EXPECT_NEAR(b.loss, a.loss, 0.02 * std::fabs(a.loss)) << step;
    if (step == 0) {
      EXPECT_NE(b.loss, a.loss) << "the bf16 step computed the f32 step's loss bitwise";
    }
    EXPECT_EQ(b.loss, c.loss) << "run to run, step " << step;
  }
  // As the GPU's bf16 step is held (runner_nhwc_gpu_test): each variable within 5e-2 (relative L2), the
  // batch-norm betas together within 0.5 (their gradients are nearly cancelling sums of the rounded dy).
  const std::vector<NamedArray> va = f32->host_variables(), vb = bf16->host_variables(), vc = again->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  std::vector<float> betas_a, betas_b;
  for (size_t i = 0; i < va.size(); ++i) {
    EXPECT_EQ(vb[i].data, vc[i].data) << vb[i].name << ": not bitwise from run to run";
    if (va[i].name.ends_with("/BatchNorm/beta")) {
      betas_a.insert(betas_a.end(), va[i].data.begin(), va[i].data.end());
      betas_b.insert(betas_b.end(), vb[i].data.begin(), vb[i].data.end());
      continue;
    }
    EXPECT_LT(test_util::rel_l2(vb[i].data, va[i].data), 5e-2) << va[i].name;
  }
  EXPECT_LT(test_util::rel_l2(betas_b, betas_a), 0.5) << "batch-norm betas together";
}

TEST(CpuBf16Training, RefusedWhereItWouldComputeF32) {
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10, .height = 16, .width = 16});
  StepRunnerOptions o = resnet_options(true);
  o.layout = Layout::kNCHW;
  const std::string e = error_of([&] { make_step_runner(net, o); });
  const char* want = ops::cpu_bf16_available() ? "computes the NHWC convolutions in bfloat16" : "needs oneDNN with bf16 instructions";
  EXPECT_NE(e.find(want), std::string::npos) << e;
  if (!ops::cpu_bf16_available()) return;
  {
    const ops::ScopedReferenceCpuKernels reference;  // FASTNN_CPU_KERNELS=reference: no bf16 kernels
    const std::string r = error_of([&] { make_step_runner(net, resnet_options(true)); });
    EXPECT_NE(r.find("needs oneDNN with bf16 instructions"), std::string::npos) << r;
  }
  StepRunnerOptions forward = forward_only(resnet_options(true));
  EXPECT_NO_THROW(make_step_runner(net, forward)) << "evaluation graphs compute in bf16 as training does";
}

}  // namespace
}  // namespace fastnn::runner
