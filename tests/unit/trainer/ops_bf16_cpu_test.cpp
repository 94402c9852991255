// fully_connected's bf16 CPU kernel (graph::cpu_bf16_op_registry(), precision=bf16; ops/matmul_layer_dnnl.cpp)
// against the reference kernel given the same tensors rounded to bfloat16 (the input, the weights, the
// output gradient; not the bias): within f32 rounding, which an f32 kernel would not be. Over the op
// registry's cases and a classifier-sized one; forward, input and parameter gradients; the same bits run
// to run. Where the CPU has no bf16 instructions the tests skip. (conv2d's bf16 kernels: ops_nhwc_cpu_test.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/trainer/bf16_round.h"
#include "tests/unit/trainer/tensor_compare.h"
#include "trainer/graph/net_plan.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/op_case.h"

namespace fastnn::ops {
namespace {

// Within f32 rounding of the reference on the rounded tensors (which is finite: no NaN may pass as equal).
void expect_near_rounded(const Tensor& got, const Tensor& want, const std::string& what) {
  for (double v : want.to_vector<double>()) ASSERT_TRUE(std::isfinite(v)) << what << ": the reference is not finite";
  test_util::expect_elementwise_near(got, want, 1e-4, 1e-5, what);
}

void expect_matches_rounded_reference(const OpCase& c) {
  SCOPED_TRACE(c.label);
  const std::vector<TensorSpec> specs = case_input_specs(c, DType::kF32);
  auto rk = graph::builtin_op_registry().create("fully_connected", Device::kCpu, c.attrs, specs);
  auto bk = graph::cpu_bf16_op_registry().create("fully_connected", Device::kCpu, c.attrs, specs);
  const OpSignature &rs = rk->signature(), &bs = bk->signature();
  ASSERT_EQ(bs.saved.size(), rs.saved.size() + 1) << "the bf16 kernel keeps its rounded input";

  KernelTensors ref = allocate_kernel_tensors(rs), own = allocate_kernel_tensors(bs);
  fill_case_tensors(ref, rs, c, /*seed=*/42);
  for (auto [from, to] : {std::pair{&ref.inputs, &own.inputs}, {&ref.params, &own.params}, {&ref.d_outputs, &own.d_outputs}})
    for (size_t i = 0; i < from->size(); ++i) (*to)[i] = (*from)[i].clone();
  for (Tensor& t : own.outputs) fill_garbage(t);
  for (auto* v : {&own.d_inputs, &own.d_params})
    for (Tensor& t : *v)
      if (t.defined()) fill_garbage(t);
  test_util::round_to_bf16(ref.inputs[0]);
  test_util::round_to_bf16(ref.params[0]);
  test_util::round_to_bf16(ref.d_outputs[0]);

  rk->forward(ref.forward_args(true));
  bk->forward(own.forward_args(true));
  expect_near_rounded(own.outputs[0], ref.outputs[0], "y");
  rk->backward(ref.backward_args(true));
  bk->backward(own.backward_args(true));
  expect_near_rounded(own.d_inputs[0], ref.d_inputs[0], "dx");
  for (size_t i = 0; i < ref.d_params.size(); ++i) expect_near_rounded(own.d_params[i], ref.d_params[i], rs.params[i].name);

  // The same inputs again give the same bits.
  const std::vector<float> first = own.outputs[0].to_vector<float>();
  bk->forward(own.forward_args(true));
  EXPECT_EQ(own.outputs[0].to_vector<float>(), first) << "run to run";
}

TEST(CpuBf16Ops, FullyConnectedIsTheReferenceOnRoundedTensors) {
  if (!cpu_bf16_available()) GTEST_SKIP() << "no bf16 instructions: " << cpu_kernels_description();
  std::vector<OpCase> cases = graph::builtin_op_registry().get("fully_connected").test_cases();
  cases.push_back({"classifier", {{"units", 1000}}, {{{8, 2048}}}});
  cases.push_back({"lenet_fc3", {{"units", 1024}}, {{{16, 64, 7, 7}}}});
  for (const OpCase& c : cases) expect_matches_rounded_reference(c);
}

TEST(CpuBf16Ops, FullyConnectedRoundsWhatItMultiplies) {
  if (!cpu_bf16_available()) GTEST_SKIP() << "no bf16 instructions: " << cpu_kernels_description();
  const OpCase c{"unrounded", {{"units", 64}}, {{{4, 256}}}};
  const std::vector<TensorSpec> specs = case_input_specs(c, DType::kF32);
  auto fk = graph::builtin_op_registry().create("fully_connected", Device::kCpu, c.attrs, specs);
  auto bk = graph::cpu_bf16_op_registry().create("fully_connected", Device::kCpu, c.attrs, specs);
  KernelTensors f = allocate_kernel_tensors(fk->signature()), b = allocate_kernel_tensors(bk->signature());
  fill_case_tensors(f, fk->signature(), c, 3);
  b.inputs[0] = f.inputs[0].clone();
  for (size_t i = 0; i < f.params.size(); ++i) b.params[i] = f.params[i].clone();
  fk->forward(f.forward_args(true));
  bk->forward(b.forward_args(true));
  const auto yf = f.outputs[0].to_vector<double>(), yb = b.outputs[0].to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < yf.size(); ++i) worst = std::max(worst, std::fabs(yf[i] - yb[i]) / std::max(1.0, std::fabs(yf[i])));
  EXPECT_GT(worst, 1e-4) << "the bf16 kernel computed what the f32 one does";
  EXPECT_LT(worst, 5e-2) << "further from f32 than bf16's rounding";
}

}  // namespace
}  // namespace fastnn::ops
