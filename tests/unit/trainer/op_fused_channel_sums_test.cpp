// The composite's channel-sums protocol (ops/fused.h, op.h; the fuse_conv_bn rewrite), on the CPU with
// stand-ins for cuDNN's conv + statistics graph and the CUDA batch norm: the CPU conv2d and batch_norm
// kernels wrapped so the first also writes its output's per-channel sums and the second records the sums
// it is given. The composite must run that path in a training forward only, hand the second kernel the
// sums the first wrote (in its workspace, after both kernels' own part, which the first overwrites), and
// compute what the plain composite computes; a kernel that declines leaves the plain path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "trainer/graph/net_plan.h"
#include "trainer/ops/fused.h"
#include "trainer/ops/op.h"
#include "trainer/ops/op_case.h"

namespace fastnn::ops {
namespace {

// A kernel that runs another one.
class Delegate : public OpKernel {
 public:
  explicit Delegate(std::unique_ptr<OpKernel> inner) : OpKernel(inner->name(), inner->device()), inner_(std::move(inner)) {
    sig_ = inner_->signature();
  }

 protected:
  void run_forward(const ForwardArgs& a) override { inner_->forward(a); }
  void run_backward(const BackwardArgs& a) override { inner_->backward(a); }
  std::unique_ptr<OpKernel> inner_;
};

constexpr size_t kOwnWorkspace = 300;  // the sums pass's own workspace: more than either kernel's

// The convolution, offering the sums pass; that pass scribbles over its own workspace.
class SumsConv final : public Delegate {
 public:
  using Delegate::Delegate;
  bool offer = true;
  int passes = 0;
  std::optional<size_t> channel_sums_workspace() override {
    return offer ? std::optional<size_t>(kOwnWorkspace) : std::nullopt;
  }
  void forward_with_channel_sums(const ForwardArgs& a, float* sums) override {
    ++passes;
    inner_->forward(a);
    std::memset(const_cast<void*>(a.workspace.raw()), 0xAB, kOwnWorkspace);
    const Tensor& y = a.outputs[0];  // NCHW f32
    const Shape& s = y.shape();
    const int64_t k = s[1], hw = s[2] * s[3];
    for (int64_t c = 0; c < k; ++c) {
      double sum = 0, sq = 0;
      for (int64_t n = 0; n < s[0]; ++n)
        for (int64_t i = 0; i < hw; ++i) {
          const double v = y.data<float>()[(n * k + c) * hw + i];
          sum += v;
          sq += v * v;
        }
      sums[c] = static_cast<float>(sum);
      sums[k + c] = static_cast<float>(sq);
    }
  }
};

// The batch norm, taking the sums: records them, then runs its own forward.
class SumsBatchNorm final : public Delegate {
 public:
  using Delegate::Delegate;
  std::vector<float> seen;
  int passes = 0;
  bool takes_channel_sums() const override { return true; }
  void forward_from_channel_sums(const ForwardArgs& a, const float* sums) override {
    ++passes;
    const int64_t k = a.inputs[0].shape()[1];
    seen.assign(sums, sums + 2 * k);
    inner_->forward(a);
  }
};

struct Made {
  std::unique_ptr<OpKernel> composite;
  SumsConv* conv = nullptr;
  SumsBatchNorm* bn = nullptr;
};

const Attrs kConv{{"filters", 4}, {"kernel", 3}, {"padding", "same"}, {"bias", false}};
const OpCase kCase{"conv_bn", kConv, {CaseInput{.shape = {2, 3, 6, 6}}}, true};

std::unique_ptr<OpKernel> make_conv() { return graph::builtin_op_registry().create("conv2d", Device::kCpu, kConv, case_input_specs(kCase, DType::kF32)); }
std::unique_ptr<OpKernel> make_bn(const OpKernel& conv) {
  const std::vector<TensorSpec> z{conv.signature().outputs[0]};
  return graph::builtin_op_registry().create("batch_norm", Device::kCpu, {}, z);
}

Made make_wrapped(bool offer) {
  auto conv = std::make_unique<SumsConv>(make_conv());
  conv->offer = offer;
  auto bn = std::make_unique<SumsBatchNorm>(make_bn(*conv));
  Made m{nullptr, conv.get(), bn.get()};
  m.composite = make_fused_kernel(std::move(conv), std::move(bn));
  return m;
}

KernelTensors tensors_for(const OpKernel& k) {
  KernelTensors t = allocate_kernel_tensors(k.signature());
  fill_case_tensors(t, k.signature(), kCase, 21);
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(FusedChannelSums, TrainingForwardHandsTheFirstKernelsSumsToTheSecond) {
  Made m = make_wrapped(true);
  auto conv = make_conv();
  auto bn = make_bn(*conv);
  auto plain = make_fused_kernel(std::move(conv), std::move(bn));
  const OpSignature& s = m.composite->signature();
  EXPECT_GE(s.workspace_bytes, ((std::max(plain->signature().workspace_bytes, kOwnWorkspace) + 255) / 256) * 256 + 2 * 4 * sizeof(float))
      << "the sums lie after both kernels' workspace and the sums pass's own";

  KernelTensors a = tensors_for(*m.composite), b = tensors_for(*plain);
  m.composite->forward(a.forward_args(true));
  plain->forward(b.forward_args(true));
  EXPECT_EQ(m.conv->passes, 1);
  ASSERT_EQ(m.bn->passes, 1);
  // The sums the batch norm was given are those of the convolution's output (the composite's saved z).
  const Tensor& z = a.saved[m.conv->signature().saved.size()];
  const float* zv = z.data<float>();
  for (int64_t c = 0; c < 4; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 36; ++i) sum += zv[(n * 4 + c) * 36 + i];
    EXPECT_NEAR(m.bn->seen[static_cast<size_t>(c)], sum, 1e-4 * (1 + std::fabs(sum))) << "channel " << c;
  }
  EXPECT_TRUE(same_bytes(a.outputs[0], b.outputs[0]));
  for (size_t i = 0; i < a.state.size(); ++i) EXPECT_TRUE(same_bytes(a.state[i], b.state[i])) << "state " << i;

  // Evaluation needs no statistics: the plain path.
  m.composite->forward(a.forward_args(false));
  EXPECT_EQ(m.conv->passes, 1);
  EXPECT_EQ(m.bn->passes, 1);
}

TEST(FusedChannelSums, AFirstKernelThatDeclinesLeavesThePlainComposite) {
  Made m = make_wrapped(false);
  auto conv = make_conv();
  auto bn = make_bn(*conv);
  auto plain = make_fused_kernel(std::move(conv), std::move(bn));
  EXPECT_EQ(m.composite->signature().workspace_bytes, plain->signature().workspace_bytes);
  KernelTensors a = tensors_for(*m.composite);
  m.composite->forward(a.forward_args(true));
  EXPECT_EQ(m.conv->passes, 0);
  EXPECT_EQ(m.bn->passes, 0);
}

}  // namespace
}  // namespace fastnn::ops
