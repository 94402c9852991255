// The CPU's own NHWC kernels (oneDNN's convolution where built in, batch norm and the pools written
// for rows of channels) against the reference: for every op with a CPU NHWC kernel and every registry
// case with a 4-D input, plus ResNet-sized ones, the NHWC kernel against the NCHW reference kernel
// inside the layout adapter (exact transposes): outputs, updated state, input and parameter gradients.
// The pools and global pooling scan in the reference's order and must agree bitwise; batch norm and the
// convolution sum in another order and agree within f32 rounding. Where the CPU has bf16 instructions,
// the convolutions that multiply in bfloat16 (graph::cpu_bf16_op_registry(), precision=bf16) take the
// tensors as they are and must agree within f32 rounding with the reference given the same tensors
// rounded to bfloat16 (the input, the weights, the output gradient), which an f32 kernel would not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/trainer/bf16_round.h"
#include "tests/unit/trainer/tensor_compare.h"
#include "trainer/graph/net_plan.h"
#include "trainer/ops/blas_core.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/ops/op_case.h"

namespace fastnn::ops {
namespace {

TEST(CpuNhwcOps, TheResNetOpsHaveCpuNhwcKernels) {
  for (const char* op : {"batch_norm", "max_pool2d", "avg_pool2d", "global_avg_pool", "concat", "channel_pad"})
    EXPECT_TRUE(graph::builtin_op_registry().get(op).nhwc_kernels.contains(Device::kCpu)) << op;
  for (const char* op : {"conv2d", "depthwise_conv2d"})
    EXPECT_EQ(graph::builtin_op_registry().get(op).nhwc_kernels.contains(Device::kCpu), have_dnnl_kernels()) << op;
}

TEST(CpuNhwcOps, TheConvolutionIsOneDnnsInF32Only) {
  if (!use_dnnl_kernels()) GTEST_SKIP() << cpu_kernels_description();
  const Attrs attrs{{"filters", 8}, {"kernel", 3}, {"padding", "same"}};
  const std::vector<TensorSpec> f32{{.name = "x", .shape = {2, 4, 6, 6}, .dtype = DType::kF32}};
  const std::vector<TensorSpec> f64{{.name = "x", .shape = {2, 4, 6, 6}, .dtype = DType::kF64}};
  auto k = graph::builtin_op_registry().create_nhwc("conv2d", Device::kCpu, attrs, f32);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->signature().activation_layout, Layout::kNHWC);
  EXPECT_EQ(k->signature().params[0].shape, (Shape{8, 4, 3, 3})) << "weights keep the checkpoints' layout";
  EXPECT_FALSE(graph::builtin_op_registry().create_nhwc("conv2d", Device::kCpu, attrs, f64)) << "f64: the reference in the adapter";
  EXPECT_NE(cpu_kernels_description().find("oneDNN"), std::string::npos) << cpu_kernels_description();
}

// dt kBF16: f32 tensors, the kernel from cpu_bf16_op_registry().
struct NhwcCase {
  std::string op;
  OpCase c;
  DType dt;
};

void PrintTo(const NhwcCase& c, std::ostream* os) { *os << c.op << "/" << c.c.label << "/" << dtype_name(c.dt); }

const OpRegistry& registry_of(DType dt) {
  return dt == DType::kBF16 ? graph::cpu_bf16_op_registry() : graph::builtin_op_registry();
}

std::vector<std::pair<std::string, OpCase>> larger_cases() {
  return {
      {"conv2d", {"resnet_k3", {{"filters", 64}, {"kernel", 3}, {"padding", "same"}, {"bias", false}}, {{{4, 64, 14, 14}}}}},
      {"conv2d", {"stem_k7_s2_same", {{"filters", 64}, {"kernel", 7}, {"stride", 2}, {"padding", "same"}, {"bias", false}},
                  {{{2, 3, 32, 32}}}}},
      {"conv2d", {"mnist_c1_k5_same", {{"filters", 32}, {"kernel", 5}, {"padding", "same"}}, {{{4, 1, 12, 12}}}}},
      // Runs as matrix products (matmul_layer_dnnl.cpp): stride 1, no bias.
      {"conv2d", {"pointwise", {{"filters", 96}, {"kernel", 1}, {"bias", false}}, {{{4, 64, 14, 14}}}}},
      // 1,568 rows, 136 and 144 channels: before AVX-512 its filter gradient is OpenBLAS's, split over the
      // threads (matmul_layer_dnnl.cpp).
      {"conv2d", {"pointwise_1568_rows", {{"filters", 136}, {"kernel", 1}, {"bias", false}}, {{{8, 144, 14, 14}}}}},
      {"conv2d", {"pointwise_s2", {{"filters", 128}, {"kernel", 1}, {"stride", 2}, {"bias", false}}, {{{4, 64, 14, 14}}}}},
      {"conv2d", {"grouped", {{"filters", 32}, {"kernel", 3}, {"groups", 4}, {"padding", "same"}}, {{{2, 16, 9, 9}}}}},
      {"conv2d", {"one_image_k3", {{"filters", 48}, {"kernel", 3}, {"padding", 1}}, {{{1, 32, 10, 10}}}}},
      // Large enough for the Winograd passes (winograd_pays_in_training: 128 tiles, 42 M MACs).
      {"conv2d", {"winograd_k3", {{"filters", 48}, {"kernel", 3}, {"padding", "same"}}, {{{8, 48, 16, 16}}}}},
      // And, before AVX-512, fastnn's own, whose backward-data pads 2 where the forward pads 0.
      {"conv2d", {"winograd_k3_valid", {{"filters", 40}, {"kernel", 3}, {"padding", "valid"}}, {{{8, 40, 18, 18}}}}},
      {"depthwise_conv2d", {"mobilenet_k3", {{"kernel", 3}, {"padding", "same"}, {"bias", false}}, {{{4, 96, 14, 14}}}}},
      {"depthwise_conv2d", {"k3_s2_bias_m2", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}, {"multiplier", 2}},
                            {{{2, 40, 15, 15}}}}},
      {"batch_norm", {"resnet_train", {}, {{{8, 64, 14, 14}}}, true}},
      {"batch_norm", {"many_channels", {}, {{{4, 1000, 3, 3}}}, true}},
      {"batch_norm", {"eval", {}, {{{8, 48, 7, 7}}}, false}},
      // A mean far from 0 beside the spread: the one-pass statistics must not cancel (shifted sums).
      {"batch_norm", {"large_mean", {}, {{{8, 16, 6, 6}, DType::kF32, 0, 1000.0, 1000.5}}, true}},
      {"max_pool2d", {"stem_k3s2_same", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {{{2, 70, 17, 16}}}}},
      {"avg_pool2d", {"inception_k3s1_same", {{"kernel", 3}, {"stride", 1}, {"padding", "same"}}, {{{2, 48, 9, 9}}}}},
      {"global_avg_pool", {"resnet_head", {}, {{{4, 256, 7, 7}}}}},
      {"channel_pad", {"cifar_shortcut", {{"before", 8}, {"after", 8}}, {{{4, 16, 8, 8}}}}},
  };
}

// The convolutions' NHWC kernels are oneDNN's, f32 only; in f64 the graph adapts the reference.
bool is_dnnl(const std::string& op) { return op == "conv2d" || op == "depthwise_conv2d"; }

// The dtypes an op's NHWC kernel is tested in: f32 and f64 (the reference in the adapter), the oneDNN
// convolutions f32 and, where the CPU has bf16 instructions, conv2d bf16 (depthwise stays f32 there).
bool tested_in(const std::string& op, DType dt) {
  if (!is_dnnl(op)) return dt != DType::kBF16;
  return dt == DType::kF32 || (dt == DType::kBF16 && op == "conv2d" && cpu_bf16_available());
}

std::vector<NhwcCase> nhwc_cases() {
  std::vector<NhwcCase> v;
  for (DType dt : {DType::kF32, DType::kF64, DType::kBF16}) {
    for (const OpDef* d : graph::builtin_op_registry().all()) {
      if (!d->nhwc_kernels.contains(Device::kCpu) || !tested_in(d->name, dt)) continue;
      for (const OpCase& c : d->test_cases())
        if (c.has_4d_input()) v.push_back({d->name, c, dt});
    }
    for (auto& [op, c] : larger_cases())
      if (graph::builtin_op_registry().get(op).nhwc_kernels.contains(Device::kCpu) && tested_in(op, dt))
        v.push_back({op, c, dt});
  }
  return v;
}

// Whether the op's NHWC kernel scans in the reference's order (bitwise) or sums in its own.
bool bitwise(const std::string& op) {
  return op == "max_pool2d" || op == "avg_pool2d" || op == "global_avg_pool" || op == "concat" || op == "channel_pad";
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& op, DType dt, const std::string& what) {
  ASSERT_EQ(got.defined(), want.defined()) << what;
  if (!got.defined()) return;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  if (bitwise(op)) {
    EXPECT_EQ(0, std::memcmp(got.raw(), want.raw(), want.nbytes())) << what << ": not bitwise the reference";
    return;
  }
  const double rel = dt == DType::kF64 ? 1e-10 : 1e-4, abs = dt == DType::kF64 ? 1e-12 : 1e-5;
  test_util::expect_elementwise_near(got, want, rel, abs, what);
}

// Tensors of the reference case, copied (the kernels under test get their own buffers).
KernelTensors copy_of(const KernelTensors& t) {
  KernelTensors c = t;
  for (auto* v : {&c.inputs, &c.params, &c.state, &c.outputs, &c.saved, &c.d_outputs, &c.d_inputs, &c.d_params})
    for (Tensor& x : *v)
      if (x.defined()) x = x.clone();
  return c;
}

// One case; a test per op below (one process each in ctest, not one per case: about 70 cases).
void expect_matches_reference(const NhwcCase& cr) {
  SCOPED_TRACE(testing::PrintToString(cr));
  const bool bf16 = cr.dt == DType::kBF16;
  const std::vector<TensorSpec> specs = case_input_specs(cr.c, bf16 ? DType::kF32 : cr.dt);
  auto rk = adapt_to_nhwc(graph::builtin_op_registry().create(cr.op, Device::kCpu, cr.c.attrs, specs));
  auto nk = registry_of(cr.dt).create_nhwc(cr.op, Device::kCpu, cr.c.attrs, specs);
  if (!nk) return;  // the reference (FASTNN_CPU_KERNELS=reference): nothing of its own to compare
  const OpSignature &rs = rk->signature(), &ns = nk->signature();
  ASSERT_EQ(ns.activation_layout, Layout::kNHWC);
  ASSERT_EQ(ns.inputs.size(), rs.inputs.size());
  for (size_t i = 0; i < rs.inputs.size(); ++i) ASSERT_EQ(ns.inputs[i].shape, rs.inputs[i].shape) << i;
  for (size_t i = 0; i < rs.outputs.size(); ++i) ASSERT_EQ(ns.outputs[i].shape, rs.outputs[i].shape) << i;
  for (size_t i = 0; i < rs.params.size(); ++i) ASSERT_EQ(ns.params[i].shape, rs.params[i].shape) << i;

  KernelTensors ref = allocate_kernel_tensors(rs);
  fill_case_tensors(ref, rs, cr.c, /*seed=*/42);
  for (Tensor& t : ref.inputs)
    if (t.shape().size() == 4) t.set_layout(Layout::kNHWC);
  KernelTensors own = allocate_kernel_tensors(ns);
  own.inputs = copy_of(ref).inputs;
  own.params = copy_of(ref).params;
  own.state = copy_of(ref).state;
  own.d_outputs = copy_of(ref).d_outputs;
  for (Tensor& t : own.outputs) fill_garbage(t);
  for (Tensor& t : own.d_inputs)
    if (t.defined()) fill_garbage(t);
  for (Tensor& t : own.d_params)
    if (t.defined()) fill_garbage(t);
  if (bf16) {  // the reference multiplies what the bf16 kernel does: x, the weights (not the bias), dy
    test_util::round_to_bf16(ref.inputs[0]);
    test_util::round_to_bf16(ref.params[0]);
    for (Tensor& t : ref.d_outputs) test_util::round_to_bf16(t);
  }

  const bool training = cr.c.training;
  rk->forward(ref.forward_args(training));
  nk->forward(own.forward_args(training));
  for (size_t i = 0; i < ref.outputs.size(); ++i) expect_close(own.outputs[i], ref.outputs[i], cr.op, cr.dt, "output " + rs.outputs[i].name);
  for (size_t i = 0; i < ref.state.size(); ++i) expect_close(own.state[i], ref.state[i], cr.op, cr.dt, "state " + rs.state[i].name);
  if (!rs.has_backward) return;
  rk->backward(ref.backward_args(training));
  nk->backward(own.backward_args(training));
  for (size_t i = 0; i < ref.d_inputs.size(); ++i)
    expect_close(own.d_inputs[i], ref.d_inputs[i], cr.op, cr.dt, "d_input " + rs.inputs[i].name);
  for (size_t i = 0; i < ref.d_params.size(); ++i)
    expect_close(own.d_params[i], ref.d_params[i], cr.op, cr.dt, "d_param " + rs.params[i].name);

  // The same inputs again give the same bits (at this process's thread count).
  KernelTensors runs[2] = {allocate_kernel_tensors(ns), allocate_kernel_tensors(ns)};
  for (KernelTensors& t : runs) {
    fill_case_tensors(t, ns, cr.c, /*seed=*/7);
    for (Tensor& x : t.inputs)
      if (x.shape().size() == 4) x.set_layout(Layout::kNHWC);
    nk->forward(t.forward_args(training));
  }
  for (size_t i = 0; i < runs[0].outputs.size(); ++i)
    EXPECT_EQ(0, std::memcmp(runs[0].outputs[i].raw(), runs[1].outputs[i].raw(), runs[0].outputs[i].nbytes())) << "run to run";
}

// The winograd_k3 case above is held to the reference like any other; this checks that it ran as
// Winograd at all (its rounding differs from the direct passes'): oneDNN's three passes where the CPU has
// AVX-512, fastnn's own three where it has AVX2 and FMA.
TEST(CpuNhwcOps, LargeThreeByThreeConvolutionsTrainAsWinograd) {
  if (!use_winograd_convolutions()) GTEST_SKIP() << cpu_kernels_description();
  OpCase c;
  for (auto& [op, oc] : larger_cases())
    if (oc.label == "winograd_k3") c = oc;
  ASSERT_EQ(c.label, "winograd_k3");
  const std::vector<TensorSpec> specs = case_input_specs(c, DType::kF32);
  auto winograd = graph::builtin_op_registry().create_nhwc("conv2d", Device::kCpu, c.attrs, specs);
  std::unique_ptr<OpKernel> direct;
  {
    const ScopedDirectConvolutions scope;
    direct = graph::builtin_op_registry().create_nhwc("conv2d", Device::kCpu, c.attrs, specs);
  }
  ASSERT_TRUE(winograd && direct);
  KernelTensors w = allocate_kernel_tensors(winograd->signature());
  fill_case_tensors(w, winograd->signature(), c, /*seed=*/3);
  for (Tensor& t : w.inputs) t.set_layout(Layout::kNHWC);
  KernelTensors d = allocate_kernel_tensors(direct->signature());
  d.inputs = copy_of(w).inputs;
  d.params = copy_of(w).params;
  d.d_outputs = copy_of(w).d_outputs;
  winograd->forward(w.forward_args(true));
  direct->forward(d.forward_args(true));
  winograd->backward(w.backward_args(true));
  direct->backward(d.backward_args(true));
  const bool onednns = cpu_kernels_description().find("avx512") != std::string::npos;
  if (!onednns && !cpu::this_cpu_features().avx2_fma) GTEST_SKIP() << "no Winograd before AVX2";
  auto same = [](const Tensor& a, const Tensor& b) { return std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0; };
  EXPECT_FALSE(same(w.outputs[0], d.outputs[0])) << "the forward was the direct convolution";
  EXPECT_FALSE(same(w.d_inputs[0], d.d_inputs[0])) << "backward-data was the direct convolution";
  EXPECT_FALSE(same(w.d_params[0], d.d_params[0])) << "backward-weights was the direct convolution";
}

class CpuNhwcOp : public testing::TestWithParam<std::string> {};

TEST_P(CpuNhwcOp, MatchesTheReferenceThroughTheAdapter) {
  int cases = 0;
  for (const NhwcCase& c : nhwc_cases())
    if (c.op == GetParam()) {
      expect_matches_reference(c);
      ++cases;
    }
  EXPECT_GT(cases, 0);
}

INSTANTIATE_TEST_SUITE_P(Registry, CpuNhwcOp,
                         testing::Values("conv2d", "depthwise_conv2d", "batch_norm", "max_pool2d", "avg_pool2d",
                                         "global_avg_pool", "concat", "channel_pad"));

}  // namespace
}  // namespace fastnn::ops
