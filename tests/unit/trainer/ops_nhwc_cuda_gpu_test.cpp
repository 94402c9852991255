// NHWC on the GPU (issue 13, P4) against the CPU oracle: for every op whose CPU kernel takes NCHW
// activations and every registry case with a 4-D input (plus ResNet-, Inception- and VGG-sized ones), the
// op's CUDA NHWC kernel (OpRegistry::create_nhwc) or, where it has none, its CUDA NCHW kernel inside the
// layout adapter, against the CPU kernel inside the adapter (the NCHW oracle with exact transposes):
// outputs, updated state, input and parameter gradients, in f32, f16 and bf16, with the tolerances of
// ops_cuda_gpu_test. And the NHWC batch_norm+relu and the batch_norm+add+relu one-pass kernels bitwise
// their composites.
#include <gtest/gtest.h>

#ifndef FASTNN_HAVE_CUDA

TEST(CudaNhwcOps, RequiresTheCudaBuild) { GTEST_SKIP() << "built without the CUDA backend (FASTNN_CUDA=OFF or no nvcc)"; }

#else

#include <string>
#include <utility>
#include <vector>

#include "tests/unit/trainer/cuda_case_util.h"
#include "tests/unit/trainer/cuda_test_util.h"
#include "trainer/graph/net_plan.h"
#include "trainer/ops/conv2d.h"
#include "trainer/ops/fused.h"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace {

// Every op with its CPU and (in this CUDA build) CUDA kernels, NHWC ones included.
// Needs no device: the ops the GPU's NHWC graphs of ResNet, Inception and VGG run without the adapter.
TEST(CudaNhwcOps, TheConvolutionalOpsHaveNhwcKernels) {
  for (const char* op : {"conv2d", "batch_norm", "max_pool2d", "avg_pool2d", "global_avg_pool", "concat",
                         "depthwise_conv2d"}) {
    const OpDef& d = registry().get(op);
    EXPECT_TRUE(d.nhwc_kernels.contains(Device::kCuda)) << op;
  }
}

struct NhwcCase {
  std::string op;
  OpCase c;
  DType dt;
  CudnnVariant variant = CudnnVariant::kDefault;
};

void PrintTo(const NhwcCase& c, std::ostream* os) {
  *os << c.op << "/" << c.c.label << "/" << dtype_name(c.dt) << variant_suffix(c.variant);
}

std::vector<std::pair<std::string, OpCase>> larger_nhwc_cases() {
  return {
      {"conv2d", {"resnet_k3", {{"filters", 64}, {"kernel", 3}, {"padding", "same"}, {"bias", false}}, {{{8, 64, 14, 14}}}}},
      {"conv2d", {"stem_k7_s2_same", {{"filters", 64}, {"kernel", 7}, {"stride", 2}, {"padding", "same"}, {"bias", false}},
                  {{{4, 3, 32, 32}}}}},
      // Channels not a multiple of 8: in f16/bf16 these run on zero-padded channels (conv_channels_for_cudnn):
      // the stem above (padded channels and asymmetric spatial padding), one channel with symmetric
      // padding (channels only), 12 channels unpadded in space, with a bias.
      {"conv2d", {"mnist_c1_k5_same", {{"filters", 32}, {"kernel", 5}, {"padding", "same"}, {"bias", false}},
                  {{{4, 1, 12, 12}}}}},
      {"conv2d", {"c12_k3_valid_bias", {{"filters", 24}, {"kernel", 3}, {"padding", "valid"}}, {{{2, 12, 9, 9}}}}},
      {"conv2d", {"pointwise_s2", {{"filters", 128}, {"kernel", 1}, {"stride", 2}, {"bias", false}}, {{{8, 64, 14, 14}}}}},
      {"conv2d", {"vgg_k3_bias", {{"filters", 32}, {"kernel", 3}, {"padding", 1}}, {{{4, 16, 20, 20}}}}},
      {"conv2d", {"grouped", {{"filters", 32}, {"kernel", 3}, {"groups", 4}, {"padding", "same"}}, {{{4, 16, 9, 9}}}}},
      {"batch_norm", {"resnet_train", {}, {{{16, 64, 14, 14}}}, true}},
      {"batch_norm", {"many_channels", {}, {{{4, 1000, 3, 3}}}, true}},
      {"batch_norm", {"eval", {}, {{{8, 48, 7, 7}}}, false}},
      // 60 channels: not a multiple of 8, the scalar normalise / dx kernels (the others take 16-byte packs).
      {"batch_norm", {"unpacked", {}, {{{8, 60, 7, 7}}}, true}},
      {"max_pool2d", {"stem_k3s2_same", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {{{4, 64, 17, 16}}}}},
      {"avg_pool2d", {"inception_k3s1_same", {{"kernel", 3}, {"stride", 1}, {"padding", "same"}}, {{{4, 48, 9, 9}}}}},
      // The packed average pool (channels a multiple of 8): SAME with the padding counted, and
      // Inception-v3's final 8x8 VALID pool.
      {"avg_pool2d", {"k3s2_same_count_pad_c16", {{"kernel", 3}, {"stride", 2}, {"padding", "same"},
                                                   {"count_include_pad", true}}, {{{2, 16, 9, 9}}}}},
      {"avg_pool2d", {"inception_final_k8", {{"kernel", 8}, {"stride", 1}, {"padding", "valid"}}, {{{2, 64, 8, 8}}}}},
      {"global_avg_pool", {"resnet_head", {}, {{{16, 256, 7, 7}}}}},
      {"concat", {"inception_block", {}, {{{4, 64, 9, 9}}, {{4, 96, 9, 9}}, {{4, 32, 9, 9}}}}},
      {"depthwise_conv2d", {"mobilenet_k3", {{"kernel", 3}, {"padding", "same"}, {"bias", false}}, {{{8, 96, 14, 14}}}}},
      {"depthwise_conv2d", {"k3_s2_bias_m2", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}, {"multiplier", 2}},
                            {{{4, 40, 15, 15}}}}},
      // The packed kernels (multiplier 1, channels a multiple of 8): stride 2 with a bias, a dilated VALID
      // window (8 channels: one pack a pixel in f16/bf16), and 5x5 (packed forward and data, the
      // one-element filter gradient); mobilenet_k3 above is the stride-1 3x3 case.
      {"depthwise_conv2d", {"k3_s2_bias_c16", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {{{4, 16, 15, 15}}}}},
      {"depthwise_conv2d", {"k3_d2_valid_c8", {{"kernel", 3}, {"dilation", 2}, {"padding", "valid"}, {"bias", false}},
                            {{{2, 8, 11, 11}}}}},
      {"depthwise_conv2d", {"k5_same_c16", {{"kernel", 5}, {"padding", "same"}, {"bias", false}}, {{{2, 16, 9, 9}}}}},
      // MobileNet's wide layers: 576 channels are 72 packs in f16 (144 in f32), more than one block of
      // channels, the last one partial (idle threads in the reductions).
      {"depthwise_conv2d", {"k3_c576", {{"kernel", 3}, {"padding", "same"}, {"bias", false}}, {{{2, 576, 9, 9}}}}},
      {"batch_norm", {"c576_train", {}, {{{4, 576, 5, 5}}}, true}},
  };
}

std::vector<NhwcCase> all_nhwc_cases() {
  std::vector<NhwcCase> v;
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (const OpDef* d : registry().all()) {
      if (!d->kernels.contains(Device::kCuda)) continue;
      for (const OpCase& c : d->test_cases()) {
        if (!c.has_4d_input()) continue;
        // Element-wise ops (activation_layout kNone) are the same kernel in both layouts.
        auto k = registry().create(d->name, Device::kCpu, c.attrs, case_input_specs(c, DType::kF32));
        if (k->signature().activation_layout == Layout::kNCHW) v.push_back({d->name, c, dt});
      }
    }
    for (auto& [op, c] : larger_nhwc_cases()) {
      v.push_back({op, c, dt});
      if (op == "depthwise_conv2d") v.push_back({op, c, dt, CudnnVariant::kDepthwiseCudnn});
      if (op == "conv2d") v.push_back({op, c, dt, CudnnVariant::kConvGraphApi});
    }
  }
  return v;
}

std::string nhwc_case_name(const testing::TestParamInfo<NhwcCase>& info) {
  std::string s = info.param.op + "_" + info.param.c.label + "_" + dtype_name(info.param.dt) +
                  variant_suffix(info.param.variant);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// The op's CUDA NHWC kernel, or its CUDA NCHW kernel inside the adapter.
std::unique_ptr<OpKernel> cuda_nhwc_kernel(const std::string& op, const Attrs& attrs, const std::vector<TensorSpec>& in) {
  if (auto k = registry().create_nhwc(op, Device::kCuda, attrs, in)) return k;
  return adapt_to_nhwc(registry().create(op, Device::kCuda, attrs, in));
}

// The channel padding is in use where the rule says (and only there): cuDNN's KRSC weight copy, a saved
// tensor, has Cp channels; with the policy off, C.
TEST(CudaNhwcOps, HalfPrecisionConvolutionPadsChannelsToEight) {
  REQUIRE_GPU();
  const Attrs attrs{{"filters", 64}, {"kernel", 7}, {"stride", 2}, {"padding", "same"}, {"bias", false}};
  const cuda::Policy before = cuda::policy();
  for (const bool pad : {true, false}) {
    cuda::Policy p = before;
    p.pad_conv_channels = pad;
    cuda::set_policy(p);
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      const std::vector<TensorSpec> in{TensorSpec{.name = "x", .shape = {2, 3, 32, 32}, .dtype = dt}};
      auto k = registry().create_nhwc("conv2d", Device::kCuda, attrs, in);
      ASSERT_TRUE(k) << dtype_name(dt);
      const OpSignature& sig = k->signature();
      ASSERT_FALSE(sig.saved.empty());
      const int64_t want = pad && dt != DType::kF32 ? 8 : 3;
      EXPECT_EQ(sig.saved.back().shape, (Shape{64, 7, 7, want})) << dtype_name(dt) << " pad " << pad;
      EXPECT_EQ(sig.accumulates_input_grads, false) << "the stem's padding is asymmetric: dx goes through a crop";
    }
  }
  cuda::set_policy(before);
}

class CudaNhwcOpCase : public testing::TestWithParam<NhwcCase> {};

TEST_P(CudaNhwcOpCase, MatchesTheCpuThroughTheAdapter) {
  REQUIRE_GPU();
  const NhwcCase& cr = GetParam();
  const CudnnVariantScope variant(cr.variant);
  const bool training = cr.c.training;
  constexpr uint64_t kSeed = 99, kStep = 3;
  auto ck = adapt_to_nhwc(registry().create(cr.op, Device::kCpu, cr.c.attrs, case_input_specs(cr.c, DType::kF32)));
  const OpSignature& cs = ck->signature();
  KernelTensors ref = allocate_kernel_tensors(cs);
  fill_case_tensors(ref, cs, cr.c, /*seed=*/42);
  round_to(ref, cr.dt);
  for (Tensor& t : ref.inputs)
    if (t.shape().size() == 4) t.set_layout(Layout::kNHWC);

  auto gk = cuda_nhwc_kernel(cr.op, cr.c.attrs, case_input_specs(cr.c, cr.dt));
  if (cr.variant == CudnnVariant::kConvGraphApi && !conv2d_runs_on_graph_api(*gk))
    GTEST_SKIP() << "no graph-API engine for this case: the layer kept the legacy calls (the log names cuDNN's reasons)";
  const OpSignature& gs = gk->signature();
  ASSERT_EQ(gs.activation_layout, Layout::kNHWC);
  ASSERT_EQ(gs.outputs.size(), cs.outputs.size());
  for (size_t i = 0; i < gs.inputs.size(); ++i) ASSERT_EQ(gs.inputs[i].shape, cs.inputs[i].shape) << i;
  for (size_t i = 0; i < gs.outputs.size(); ++i) ASSERT_EQ(gs.outputs[i].shape, cs.outputs[i].shape) << i;
  ASSERT_EQ(gs.params.size(), cs.params.size());
  for (size_t i = 0; i < gs.params.size(); ++i) ASSERT_EQ(gs.params[i].shape, cs.params[i].shape) << "parameters keep NCHW shapes";

  KernelTensors dev = forward_tensors_on_device(ref, gs);
  ck->forward(ref.forward_args(training, kSeed, kStep));
  gk->forward(dev.forward_args(training, kSeed, kStep));
  expect_forward_close(dev, ref, cs, cr.dt);
  if (!cs.has_backward) return;
  add_backward_tensors_on_device(dev, ref, gs);
  ck->backward(ref.backward_args(training));
  gk->backward(dev.backward_args(training));
  expect_backward_close(dev, ref, cs, cr.dt);
}

INSTANTIATE_TEST_SUITE_P(AllOps, CudaNhwcOpCase, testing::ValuesIn(all_nhwc_cases()), nhwc_case_name);

// The NHWC batch_norm+relu and batch_norm+relu6 fusions (the batch_norm kernel on rows,
// ops/batch_norm_cuda.cpp) against the composite of the two NHWC kernels: every output, statistic and
// gradient bit for bit.
TEST(CudaNhwcFusion, BatchNormReluIsBitwiseTheComposite) {
  REQUIRE_GPU();
  // 576 channels: several blocks of channel packs, the last one partial.
  for (const Shape& shape : {Shape{8, 64, 14, 14}, Shape{4, 576, 5, 5}})
    for (const char* act : {"relu", "relu6"})
      for (DType dt : {DType::kF32, DType::kF16, DType::kBF16})
        for (bool training : {true, false}) {
          SCOPED_TRACE(std::string(act) + " " + dtype_name(dt) + (training ? " training" : " eval") + " C " +
                       std::to_string(shape[1]));
          const OpCase c{"resnet_sized", {}, {CaseInput{.shape = shape}}, training};
          const std::vector<TensorSpec> in = case_input_specs(c, dt);
          auto make_pair = [&] {
            auto bn = registry().create_nhwc("batch_norm", Device::kCuda, c.attrs, in);
            const std::vector<TensorSpec> relu_in{bn->signature().outputs[0]};
            return std::pair{std::move(bn), registry().create(act, Device::kCuda, {}, relu_in)};
          };
          auto [b1, r1] = make_pair();
          auto composite = make_fused_kernel(std::move(b1), std::move(r1));
          auto [b2, r2] = make_pair();
          auto fused = registry().create_fusion(*b2, *r2);
          ASSERT_TRUE(fused) << "the NHWC batch_norm is not fused with " << act;
          const OpSignature &cs = composite->signature(), &fs = fused->signature();
          KernelTensors host = allocate_kernel_tensors(as_f32(cs));  // uploaded in cs's dtypes below
          fill_case_tensors(host, as_f32(cs), c, 7);
          if (std::string(act) == "relu6") scale_batch_norm_gamma(host, 8);  // outputs past 6 too
          KernelTensors a = upload_for_backward(host, cs), b = upload_for_backward(host, fs);
          expect_one_pass_is_the_composite(*composite, a, *fused, b, training);
        }
}

// batch_norm+add+relu (a residual unit's end, fuse_ops): the one-pass kernel against the composite of
// batch_norm and the add+relu kernel, NCHW and NHWC, training and eval, the batch norm feeding either
// add input, with and without a gradient for the other addend.
TEST(CudaFusion, BatchNormAddReluIsBitwiseTheComposite) {
  REQUIRE_GPU();
  for (bool nhwc : {false, true})
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16})
      for (bool training : {true, false})
        for (size_t slot : {size_t{0}, size_t{1}})
          for (bool residual_grad : {true, false}) {
            SCOPED_TRACE(std::string(nhwc ? "NHWC " : "NCHW ") + dtype_name(dt) + (training ? " training" : " eval") +
                         " slot " + std::to_string(slot) + (residual_grad ? "" : " no residual gradient"));
            // 8 x 64 x 14 x 15: NHWC rows take the 16-byte packs; NCHW planes of 210 (not a multiple of 8).
            const Shape nchw{8, 64, 14, 15};
            const OpCase c{"residual_unit", {}, {CaseInput{.shape = nchw}, CaseInput{.shape = nchw}}, training};
            const std::vector<TensorSpec> bn_in{case_input_specs(c, dt)[0]};
            auto make = [&] {
              auto bn = nhwc ? registry().create_nhwc("batch_norm", Device::kCuda, {}, bn_in)
                             : registry().create("batch_norm", Device::kCuda, {}, bn_in);
              const TensorSpec z = bn->signature().outputs[0];
              const std::vector<TensorSpec> add_in{z, z};
              auto add = registry().create("add", Device::kCuda, {}, add_in);
              const std::vector<TensorSpec> relu_in{add->signature().outputs[0]};
              auto add_relu = registry().create_fusion(*add, *registry().create("relu", Device::kCuda, {}, relu_in));
              return std::pair{std::move(bn), std::move(add_relu)};
            };
            auto [b1, ar1] = make();
            ASSERT_TRUE(ar1) << "no one-pass add+relu";
            auto composite = make_fused_kernel(std::move(b1), std::move(ar1), nullptr, slot);
            auto [b2, ar2] = make();
            auto fused = registry().create_fusion(*b2, *ar2);
            ASSERT_TRUE(fused) << "batch_norm is not fused into add+relu";
            ASSERT_EQ(fused->name(), "batch_norm+add+relu");
            const OpSignature &cs = composite->signature(), &fs = fused->signature();
            ASSERT_EQ(cs.inputs.size(), 2u);
            ASSERT_EQ(fs.inputs.size(), 2u);
            KernelTensors host = allocate_kernel_tensors(as_f32(cs));
            fill_case_tensors(host, as_f32(cs), c, 13);
            KernelTensors a = upload_for_backward(host, cs), b = upload_for_backward(host, fs);
            if (!residual_grad) a.d_inputs[1] = b.d_inputs[1] = Tensor();  // not compared then
            expect_one_pass_is_the_composite(*composite, a, *fused, b, training);
          }
}

}  // namespace
}  // namespace fastnn::ops

#endif  // FASTNN_HAVE_CUDA
