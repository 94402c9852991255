// fuse_conv_bn on the GPU (ops/fused.h with op.h's channel sums): a convolution and the batch norm after
// it as one layer whose convolution writes the batch norm's statistics in its epilogue (cuDNN's conv +
// statistics graph, ops/conv_bn_graph_cuda.h), against the same two CUDA kernels run one after the other:
// the output, the convolution's output kept for the backward, the saved and running statistics, and every
// gradient, within f16's tolerances (cuDNN sums the statistics in its own order, in f32; the batch norm
// sums in double). After batch_norm, batch_norm+relu and batch_norm+add+relu, on ResNet-50-like layers.
// A GPU whose cuDNN has no such engine skips, and the convolution's warning names cuDNN's reasons.
#include <gtest/gtest.h>

#ifndef FASTNN_HAVE_CUDA

TEST(CudaConvBnFusion, RequiresTheCudaBuild) { GTEST_SKIP() << "built without the CUDA backend (FASTNN_CUDA=OFF or no nvcc)"; }

#else

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/trainer/cuda_case_util.h"
#include "tests/unit/trainer/cuda_test_util.h"
#include "trainer/graph/net_plan.h"
#include "trainer/ops/fused.h"

namespace fastnn::ops {
namespace {

enum class Then { kBatchNorm, kBatchNormRelu, kBatchNormRelu6, kBatchNormAddRelu };

const char* then_name(Then t) {
  switch (t) {
    case Then::kBatchNorm: return "batch_norm";
    case Then::kBatchNormRelu: return "batch_norm+relu";
    case Then::kBatchNormRelu6: return "batch_norm+relu6";
    case Then::kBatchNormAddRelu: return "batch_norm+add+relu";
  }
  return "?";
}

struct Layer {
  std::string label;
  Shape x;  // NCHW, as create_nhwc takes the specs
  Attrs conv;
};

// The NHWC batch norm kernel `then` reading the NHWC convolution's output (its one-pass fusions).
std::unique_ptr<OpKernel> make_then(const OpKernel& conv, Then then) {
  const Shape y = conv.signature().outputs[0].shape;  // [N, P, Q, K]
  const std::vector<TensorSpec> z{TensorSpec{.shape = {y[0], y[3], y[1], y[2]}, .dtype = DType::kF16}};
  auto bn = registry().create_nhwc("batch_norm", Device::kCuda, {}, z);
  if (then == Then::kBatchNorm) return bn;
  const TensorSpec zn = bn->signature().outputs[0];
  const std::vector<TensorSpec> one{zn}, two{zn, zn};
  if (then == Then::kBatchNormRelu6) return registry().create_fusion(*bn, *registry().create("relu6", Device::kCuda, {}, one));
  auto relu = registry().create("relu", Device::kCuda, {}, one);
  if (then == Then::kBatchNormRelu) return registry().create_fusion(*bn, *relu);
  auto add_relu = registry().create_fusion(*registry().create("add", Device::kCuda, {}, two), *relu);
  return add_relu ? registry().create_fusion(*bn, *add_relu) : nullptr;
}

Tensor host_of(const Tensor& device) { return cuda::to_host(device); }

TEST(CudaConvBnFusion, StatisticsFromTheConvolutionMatchTheTwoKernels) {
  REQUIRE_GPU();
  const std::vector<Layer> layers = {
      {"k3_same", {8, 64, 14, 14}, {{"filters", 64}, {"kernel", 3}, {"padding", "same"}, {"bias", false}}},
      {"k1", {8, 64, 14, 14}, {{"filters", 256}, {"kernel", 1}, {"bias", false}}},
      {"k1_s2", {8, 256, 14, 14}, {{"filters", 128}, {"kernel", 1}, {"stride", 2}, {"bias", false}}},
  };
  int ran = 0;
  std::string without_engine;
  for (const Layer& layer : layers)
    for (Then then : {Then::kBatchNorm, Then::kBatchNormRelu, Then::kBatchNormRelu6, Then::kBatchNormAddRelu}) {
      SCOPED_TRACE(layer.label + " then " + then_name(then));
      const OpCase c{layer.label, layer.conv, {CaseInput{.shape = layer.x}}, true};
      const std::vector<TensorSpec> x_spec = case_input_specs(c, DType::kF16);
      auto conv1 = registry().create_nhwc("conv2d", Device::kCuda, layer.conv, x_spec);
      ASSERT_TRUE(conv1) << "no NHWC conv2d";
      if (!conv1->channel_sums_workspace()) {
        without_engine += " " + layer.label;
        continue;
      }
      auto then1 = make_then(*conv1, then);
      ASSERT_TRUE(then1) << "no one-pass " << then_name(then);
      auto fused = make_fused_kernel(std::move(conv1), std::move(then1));
      auto conv2 = registry().create_nhwc("conv2d", Device::kCuda, layer.conv, x_spec);
      auto then2 = make_then(*conv2, then);
      const OpSignature &fs = fused->signature(), &cs = conv2->signature(), &ts = then2->signature();
      ASSERT_EQ(fs.params.size(), 3u) << "weights, gamma, beta";
      ASSERT_EQ(fs.inputs.size(), ts.inputs.size());
      // The composite took the sums path (else it would be the two kernels and this test vacuous): its
      // workspace holds the 2 x K sums after every kernel's own part.
      ASSERT_TRUE(then2->takes_channel_sums());
      const size_t k = static_cast<size_t>(cs.outputs[0].shape.back());
      ASSERT_GE(fs.workspace_bytes, std::max(cs.workspace_bytes, ts.workspace_bytes) + 2 * k * sizeof(float))
          << "the fused layer has no room for the channel sums";

      // The fused layer's tensors, then the same values for the two kernels (their own copies: the running
      // statistics are updated in place).
      OpCase fc = c;
      if (then == Then::kBatchNormAddRelu) fc.inputs.push_back(CaseInput{.shape = ts.inputs[1].shape});
      KernelTensors host = allocate_kernel_tensors(as_f32(fs));
      fill_case_tensors(host, as_f32(fs), fc, 11);
      KernelTensors a = upload_for_backward(host, fs);
      fused->forward(a.forward_args(true));

      const Tensor z_host = Tensor::zeros(cs.outputs[0].shape, DType::kF32);
      KernelTensors hc, ht;
      hc.inputs = {host.inputs[0]};
      hc.params = {host.params[0]};
      hc.d_outputs = {z_host};
      ht.inputs = {z_host};
      if (then == Then::kBatchNormAddRelu) ht.inputs.push_back(host.inputs[1]);
      ht.params = {host.params[1], host.params[2]};
      ht.state = host.state;
      ht.d_outputs = host.d_outputs;
      KernelTensors rc = upload_for_backward(hc, cs), rt = upload_for_backward(ht, ts);
      conv2->forward(rc.forward_args(true));
      rt.inputs[0] = rc.outputs[0];
      then2->forward(rt.forward_args(true));

      const size_t conv_saved = cs.saved.size();
      expect_close(a.outputs[0], host_of(rt.outputs[0]), DType::kF16, "output");
      expect_close(a.saved[conv_saved], host_of(rc.outputs[0]), DType::kF16, "the convolution's output");
      for (size_t i = 0; i < ts.saved.size(); ++i)
        expect_close(a.saved[conv_saved + 1 + i], host_of(rt.saved[i]), DType::kF16, "saved " + ts.saved[i].name);
      for (size_t i = 0; i < ts.state.size(); ++i)
        expect_close(a.state[i], host_of(rt.state[i]), DType::kF16, "state " + ts.state[i].name);

      fused->backward(a.backward_args(true));
      then2->backward(rt.backward_args(true));
      rc.d_outputs[0] = rt.d_inputs[0];
      conv2->backward(rc.backward_args(true));
      expect_close(a.d_inputs[0], host_of(rc.d_inputs[0]), DType::kF16, "dx");
      if (then == Then::kBatchNormAddRelu) expect_close(a.d_inputs[1], host_of(rt.d_inputs[1]), DType::kF16, "dr");
      expect_close(a.d_params[0], host_of(rc.d_params[0]), DType::kF16, "dw");
      expect_close(a.d_params[1], host_of(rt.d_params[0]), DType::kF16, "dgamma");
      expect_close(a.d_params[2], host_of(rt.d_params[1]), DType::kF16, "dbeta");
      ++ran;
    }
  if (ran == 0) GTEST_SKIP() << "cuDNN has no conv+statistics engine on this GPU for:" << without_engine;
  if (!without_engine.empty()) std::printf("no conv+statistics engine for:%s\n", without_engine.c_str());
}

// A convolution outside the graph's conditions offers no sums pass (its fused layer is the two kernels).
TEST(CudaConvBnFusion, ALayerOutsideTheGraphsConditionsOffersNoSums) {
  REQUIRE_GPU();
  // f32, and 3 input channels: outside what the conv + statistics graph takes (fp16, C a multiple of 8).
  for (DType dt : {DType::kF32, DType::kF16}) {
    const Attrs attrs{{"filters", 16}, {"kernel", 3}, {"padding", "same"}, {"bias", false}};
    const OpCase c{"stem", attrs, {CaseInput{.shape = {2, 3, 8, 8}}}, true};
    auto conv = registry().create_nhwc("conv2d", Device::kCuda, attrs, case_input_specs(c, dt));
    ASSERT_TRUE(conv);
    EXPECT_FALSE(conv->channel_sums_workspace()) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace fastnn::ops

#endif  // FASTNN_HAVE_CUDA
