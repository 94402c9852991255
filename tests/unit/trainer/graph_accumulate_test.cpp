// Fan-out gradients added by the consumer's own backward (OpSignature::accumulates_input_grads,
// BackwardArgs::accumulate; the CUDA convolution's beta = 1): the graph hands such a kernel the producer's
// gradient buffer instead of a scratch buffer and a summing pass. Checked on the CPU with a convolution
// that declares the capability and implements it as "its gradient into a temporary, then d = d + tmp" —
// the summing pass's own arithmetic — so the whole training step must stay bitwise the plain graph's:
// loss, every parameter gradient. Models with fan-out into convolutions: ResNet (shortcut + residual)
// and Inception (four branches).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/ops/op.h"
#include "trainer/train_step.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::graph {
namespace {

int g_accumulated = 0;  // backward calls that added into a gradient

class AccumulatingConv final : public ops::OpKernel {
 public:
  explicit AccumulatingConv(std::unique_ptr<ops::OpKernel> inner)
      : ops::OpKernel(inner->name(), inner->device()), inner_(std::move(inner)) {
    sig_ = inner_->signature();
    sig_.accumulates_input_grads = true;
  }

 protected:
  void run_forward(const ops::ForwardArgs& a) override { inner_->forward(a); }
  void run_backward(const ops::BackwardArgs& a) override {
    if (!(a.accumulate & 1)) return inner_->backward(a);
    ++g_accumulated;
    Tensor& d = a.d_inputs[0];
    if (!tmp_.defined() || tmp_.shape() != d.shape()) tmp_ = Tensor::empty(d.shape(), d.dtype());
    Tensor d_in[1] = {tmp_};
    ops::BackwardArgs b = a;
    b.d_inputs = d_in;
    b.accumulate = 0;
    inner_->backward(b);
    float* dst = d.data<float>();
    const float* add = tmp_.data<float>();
    for (int64_t i = 0; i < d.numel(); ++i) dst[i] = dst[i] + add[i];  // the add kernel's order: d + scratch
  }

 private:
  std::unique_ptr<ops::OpKernel> inner_;
  Tensor tmp_;
};

void expect_accumulating_graph_is_bitwise(const std::string& model, int size) {
  ops::OpRegistry reg;
  ops::register_builtin_ops(reg);
  const ops::KernelFactory conv = reg.get("conv2d").kernels.at(Device::kCpu);
  reg.add_kernel("conv2d", Device::kCpu, [conv](const ops::Attrs& a, std::span<const ops::TensorSpec> in) {
    return std::unique_ptr<ops::OpKernel>(std::make_unique<AccumulatingConv>(conv(a, in)));
  });
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size});
  Graph plain(net, {.batch_size = 2, .seed = 5});
  Graph acc(net, {.batch_size = 2, .seed = 5, .registry = &reg});
  const Tensor x = testing_util::random_tensor(plain.input_shape(), DType::kF32, 3);
  const Tensor labels = testing_util::labels_of({1, 7});
  TrainStep sp(plain), sa(acc);
  g_accumulated = 0;
  const StepResult rp = sp.train(x, labels, 0), ra = sa.train(x, labels, 0);
  EXPECT_GT(g_accumulated, 0) << model << ": no convolution accumulated a fan-out gradient";
  EXPECT_EQ(rp.loss, ra.loss) << model;
  const auto pp = plain.parameters(), pa = acc.parameters();
  ASSERT_EQ(pp.size(), pa.size());
  for (size_t i = 0; i < pp.size(); ++i)
    EXPECT_EQ(0, std::memcmp(pp[i].grad.raw(), pa[i].grad.raw(), pp[i].grad.nbytes())) << model << " " << pp[i].name;
}

TEST(GraphAccumulate, ResNetFanOutIsBitwiseThePlainGraph) { expect_accumulating_graph_is_bitwise("resnet_cifar_20", 32); }

TEST(GraphAccumulate, InceptionBranchesAreBitwiseThePlainGraph) {
  expect_accumulating_graph_is_bitwise("inception_v1", zoo::zoo_model("inception_v1").min_size);
}

// A kernel that does not declare the capability is never asked to accumulate.
TEST(GraphAccumulate, RefusedWithoutTheCapability) {
  const ops::OpRegistry& reg = builtin_op_registry();
  const std::vector<ops::TensorSpec> in{{.name = "x", .shape = {1, 2, 4, 4}, .dtype = DType::kF32}};
  auto k = reg.create("conv2d", Device::kCpu, {{"filters", int64_t{2}}, {"kernel", int64_t{3}}}, in);
  EXPECT_FALSE(k->signature().accumulates_input_grads);
}

}  // namespace
}  // namespace fastnn::graph
