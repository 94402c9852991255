// The CPU kernels that read bfloat16 activations in inference plans (OpRegistry::add_bf16_input_kernel:
// max_pool2d, global_avg_pool; used between bf16 folds under PlanOptions::fold_in_bf16) against the f32
// NHWC kernels on the same values widened: bitwise, since a maximum is one of its values and the mean's
// sums run in the same order. Over each op's registry cases, with negative values, writing bf16 or f32.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/trainer/bf16_round.h"
#include "trainer/graph/net_plan.h"
#include "trainer/ops/op_case.h"

namespace fastnn::ops {
namespace {

void expect_bitwise_the_f32_kernel(const std::string& op, const OpCase& c, bool output_bf16) {
  SCOPED_TRACE(op + " " + c.label + (output_bf16 ? " -> bf16" : " -> f32"));
  const OpRegistry& registry = graph::builtin_op_registry();
  const std::vector<TensorSpec> nchw = case_input_specs(c, DType::kF32);
  auto f32_kernel = registry.create_nhwc(op, Device::kCpu, c.attrs, nchw);
  auto bf16_kernel = registry.create_bf16_input_kernel(op, Device::kCpu, c.attrs, nchw, output_bf16);
  ASSERT_TRUE(f32_kernel);
  if (output_bf16 && op == "global_avg_pool") {
    EXPECT_FALSE(bf16_kernel) << "a mean cannot be passed on in bf16 exactly";
    return;
  }
  ASSERT_TRUE(bf16_kernel);
  EXPECT_FALSE(bf16_kernel->signature().has_backward);

  KernelTensors f32 = allocate_kernel_tensors(f32_kernel->signature(), Device::kCpu, false);
  KernelTensors bf16 = allocate_kernel_tensors(bf16_kernel->signature(), Device::kCpu, false);
  fill_uniform(f32.inputs[0], -2.0, 2.0, /*seed=*/7, /*stream=*/0);
  test_util::round_to_bf16(f32.inputs[0]);
  bf16.inputs[0] = f32.inputs[0].to(DType::kBF16);
  f32_kernel->forward(f32.forward_args(false));
  bf16_kernel->forward(bf16.forward_args(false));
  const Tensor got = output_bf16 ? bf16.outputs[0].to(DType::kF32) : bf16.outputs[0];
  ASSERT_EQ(got.shape(), f32.outputs[0].shape());
  EXPECT_EQ(0, std::memcmp(got.raw(), f32.outputs[0].raw(), got.nbytes())) << "not bitwise the f32 kernel";
}

TEST(OpsBf16InputCpu, PoolsAreBitwiseTheF32KernelsOnWidenedValues) {
  const OpRegistry& registry = graph::builtin_op_registry();
  int cases = 0;
  for (const char* op : {"max_pool2d", "global_avg_pool"}) {
    ASSERT_TRUE(registry.has_bf16_input_kernel(op, Device::kCpu)) << op;
    for (const OpCase& c : registry.get(op).test_cases()) {
      if (!c.has_4d_input()) continue;
      for (bool output_bf16 : {false, true}) expect_bitwise_the_f32_kernel(op, c, output_bf16);
      ++cases;
    }
  }
  EXPECT_GE(cases, 7);
  EXPECT_FALSE(registry.has_bf16_input_kernel("avg_pool2d", Device::kCpu));
}

}  // namespace
}  // namespace fastnn::ops
