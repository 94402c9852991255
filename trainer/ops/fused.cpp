#include "trainer/ops/fused.h"

#include <algorithm>
#include <vector>

#include "core/check.h"

namespace fastnn::ops {
namespace {

class FusedKernel final : public OpKernel {
 public:
  FusedKernel(std::unique_ptr<OpKernel> first, std::unique_ptr<OpKernel> then)
      : OpKernel(first->name() + "+" + then->name(), first->device()), a_(std::move(first)), b_(std::move(then)) {
    const OpSignature& sa = a_->signature();
    const OpSignature& sb = b_->signature();
    if (a_->device() != b_->device()) throw ConfigError(str("fuse ", name(), ": kernels on different devices"));
    if (sa.outputs.size() != 1 || sb.inputs.size() != 1 || sb.outputs.size() != 1 || !sb.params.empty() ||
        !sb.state.empty())
      throw ConfigError(str("fuse ", name(), ": needs one output, then an element-wise op without params or state"));
    if (sa.outputs[0].shape != sb.inputs[0].shape || sa.outputs[0].dtype != sb.inputs[0].dtype)
      throw ConfigError(str("fuse ", name(), ": ", shape_str(sa.outputs[0].shape), " does not chain into ",
                            shape_str(sb.inputs[0].shape)));
    sig_.inputs = sa.inputs;
    sig_.params = sa.params;
    sig_.state = sa.state;
    sig_.outputs = sb.outputs;
    sig_.saved = sa.saved;
    sig_.saved.push_back(with_name(sa.outputs[0], "fused_z"));
    sig_.saved.insert(sig_.saved.end(), sb.saved.begin(), sb.saved.end());
    sig_.saved.push_back(with_name(sa.outputs[0], "fused_dz"));
    sig_.workspace_bytes = std::max(sa.workspace_bytes, sb.workspace_bytes);
    sig_.activation_layout = sa.activation_layout;
    sig_.has_backward = sa.has_backward && sb.has_backward;
    sig_.input_has_grad = sa.input_has_grad;
    sig_.accumulates_input_grads = sa.accumulates_input_grads;  // `first` receives the bits (run_backward)
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const size_t na = a_->signature().saved.size(), nb = b_->signature().saved.size();
    Tensor& z = a.saved[na];
    ForwardArgs fa = a;
    fa.outputs = std::span<Tensor>(&z, 1);
    fa.saved = a.saved.subspan(0, na);
    a_->forward(fa);
    ForwardArgs fb = a;
    fb.inputs = std::span<const Tensor>(&z, 1);
    fb.params = {};
    fb.state = {};
    fb.saved = a.saved.subspan(na + 1, nb);
    fb.replicas = nullptr;
    b_->forward(fb);
  }

  void run_backward(const BackwardArgs& a) override {
    const size_t na = a_->signature().saved.size(), nb = b_->signature().saved.size();
    const Tensor& z = a.saved[na];
    Tensor dz = a.saved[na + 1 + nb];  // a handle: writes go to the saved buffer
    BackwardArgs bb = a;
    bb.inputs = std::span<const Tensor>(&z, 1);
    bb.params = {};
    bb.state = {};
    bb.saved = a.saved.subspan(na + 1, nb);
    bb.d_inputs = std::span<Tensor>(&dz, 1);
    bb.d_params = {};
    bb.replicas = nullptr;
    bb.accumulate = 0;  // the tail writes dz, the fused op's own buffer: only the head may add into d_inputs
    b_->backward(bb);
    BackwardArgs ba = a;
    ba.outputs = std::span<const Tensor>(&z, 1);
    ba.saved = a.saved.subspan(0, na);
    ba.d_outputs = std::span<const Tensor>(&dz, 1);
    a_->backward(ba);
  }

 private:
  static TensorSpec with_name(TensorSpec s, const char* name) {
    s.name = name;
    return s;
  }
  std::unique_ptr<OpKernel> a_, b_;
};

}  // namespace

std::unique_ptr<OpKernel> make_fused_kernel(std::unique_ptr<OpKernel> first, std::unique_ptr<OpKernel> then,
                                            const OpRegistry* registry) {
  FASTNN_CHECK(first && then, "make_fused_kernel: null kernel");
  if (registry)
    if (std::unique_ptr<OpKernel> one_pass = registry->create_fusion(*first, *then)) return one_pass;
  return std::make_unique<FusedKernel>(std::move(first), std::move(then));
}

}  // namespace fastnn::ops
