// The f32 training step on the fast CPU kernels (oneDNN's convolutions, fastnn's Winograd where it pays,
// the NHWC batch norms and depthwise kernels) is bitwise the same from run to run at a fixed thread
// count: two runners built alike, fed the same batches, report the same losses and end with the same
// bits in every variable and optimizer slot. The fast kernels may sum in another order than the reference
// (graph_layout_test holds them to it within rounding), but never in an order that changes between runs:
// a run must be repeatable to be debugged. (precision=bf16's step: runner_cpu_bf16_test.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/trainer/runner_test_options.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/runner/step_runner.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::runner {
namespace {

void expect_repeatable(const std::string& model) {
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = 32, .width = 32});
  auto first = make_step_runner(net, nhwc_momentum_options()), again = make_step_runner(net, nhwc_momentum_options());
  for (uint64_t step = 0; step < 3; ++step) {
    auto [x, y] = first->synthetic_batch(40 + step);
    const StepResult a = first->train(x, y, step, 0.05f), b = again->train(x, y, step, 0.05f);
    EXPECT_EQ(a.loss, b.loss) << model << " step " << step;
  }
  const std::vector<NamedArray> va = first->host_variables(), vb = again->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(va[i].data, vb[i].data) << model << ": " << va[i].name;
  const std::vector<NamedArray> sa = first->export_optimizer_state(), sb = again->export_optimizer_state();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(sa[i].data, sb[i].data) << model << ": " << sa[i].name;
}

TEST(CpuFastKernelTraining, ResNetStepIsBitwiseFromRunToRun) {
  if (!ops::use_fast_cpu_kernels()) GTEST_SKIP() << ops::cpu_kernels_description();
  expect_repeatable("resnet_cifar_20");
}

TEST(CpuFastKernelTraining, MobileNetStepIsBitwiseFromRunToRun) {
  if (!ops::use_fast_cpu_kernels()) GTEST_SKIP() << ops::cpu_kernels_description();
  expect_repeatable("mobilenet_v2");
}

}  // namespace
}  // namespace fastnn::runner
