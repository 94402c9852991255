#include "trainer/ops/fused.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "core/check.h"

namespace fastnn::ops {
namespace {

class FusedKernel final : public OpKernel {
 public:
  FusedKernel(std::unique_ptr<OpKernel> first, std::unique_ptr<OpKernel> then, size_t slot)
      : OpKernel(first->name() + "+" + then->name(), first->device()),
        a_(std::move(first)),
        b_(std::move(then)),
        slot_(slot) {
    const OpSignature& sa = a_->signature();
    const OpSignature& sb = b_->signature();
    if (a_->device() != b_->device()) throw ConfigError(str("fuse ", name(), ": kernels on different devices"));
    if (sa.outputs.size() != 1 || slot_ >= sb.inputs.size() || sb.outputs.size() != 1)
      throw ConfigError(str("fuse ", name(), ": needs one output, then an op with one output reading it"));
    if (sa.outputs[0].shape != sb.inputs[slot_].shape || sa.outputs[0].dtype != sb.inputs[slot_].dtype)
      throw ConfigError(str("fuse ", name(), ": ", shape_str(sa.outputs[0].shape), " does not chain into ",
                            shape_str(sb.inputs[slot_].shape)));
    FASTNN_CHECK(sa.input_has_grad.size() == sa.inputs.size() && sb.input_has_grad.size() == sb.inputs.size(),
                 "fuse ", name(), ": a signature without input_has_grad per input");
    sig_.inputs = sa.inputs;
    sig_.input_has_grad = sa.input_has_grad;
    for (size_t j = 0; j < sb.inputs.size(); ++j)
      if (j != slot_) {
        sig_.inputs.push_back(sb.inputs[j]);
        sig_.input_has_grad.push_back(sb.input_has_grad[j]);
      }
    sig_.params = sa.params;
    sig_.params.insert(sig_.params.end(), sb.params.begin(), sb.params.end());
    sig_.state = sa.state;
    sig_.state.insert(sig_.state.end(), sb.state.begin(), sb.state.end());
    sig_.outputs = sb.outputs;
    sig_.saved = sa.saved;
    sig_.saved.push_back(with_name(sa.outputs[0], "fused_z"));
    sig_.saved.insert(sig_.saved.end(), sb.saved.begin(), sb.saved.end());
    sig_.saved.push_back(with_name(sa.outputs[0], "fused_dz"));
    sig_.workspace_bytes = std::max(sa.workspace_bytes, sb.workspace_bytes);
    // fuse_conv_bn: `first` writes its output's channel sums in its own pass and `then` starts from them;
    // the sums go after both kernels' workspace, which each of the two reuses from the start.
    if (slot_ == 0 && b_->takes_channel_sums())
      if (const std::optional<size_t> ws = a_->channel_sums_workspace()) {
        const Shape& y = sa.outputs[0].shape;
        const int64_t channels = sa.activation_layout == Layout::kNHWC ? y.back() : y[1];
        sums_at_ = (std::max(sig_.workspace_bytes, *ws) + 255) / 256 * 256;
        sig_.workspace_bytes = *sums_at_ + 2 * static_cast<size_t>(channels) * sizeof(float);
      }
    sig_.activation_layout = sa.activation_layout;
    sig_.has_backward = sa.has_backward && sb.has_backward;
    // Bits for `first`'s inputs go to `first`, the others to `then` (run_backward).
    sig_.accumulates_input_grads = sa.accumulates_input_grads && (sb.inputs.size() == 1 || sb.accumulates_input_grads);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const size_t na = a_->signature().saved.size(), nb = b_->signature().saved.size();
    const size_t ni = a_->signature().inputs.size();
    Tensor& z = a.saved[na];
    const size_t np = a_->signature().params.size(), ns = a_->signature().state.size();
    ForwardArgs fa = a;
    fa.inputs = a.inputs.subspan(0, ni);
    fa.params = head(a.params, np);
    fa.state = head(a.state, ns);
    fa.outputs = std::span<Tensor>(&z, 1);
    fa.saved = a.saved.subspan(0, na);
    const std::vector<Tensor> then_inputs = then_view(a.inputs, z);
    ForwardArgs fb = a;  // `replicas` too: cross-replica statistics belong to whichever of the two has them
    fb.inputs = then_inputs;
    fb.params = tail(a.params, np);
    fb.state = tail(a.state, ns);
    fb.saved = a.saved.subspan(na + 1, nb);
    if (sums_at_ && a.training && a.replicas == nullptr) {
      auto* sums = reinterpret_cast<float*>(static_cast<char*>(const_cast<void*>(a.workspace.raw())) + *sums_at_);
      a_->forward_with_channel_sums(fa, sums);
      b_->forward_from_channel_sums(fb, sums);
      return;
    }
    a_->forward(fa);
    b_->forward(fb);
  }

  void run_backward(const BackwardArgs& a) override {
    const size_t na = a_->signature().saved.size(), nb = b_->signature().saved.size();
    const size_t ni = a_->signature().inputs.size();
    const size_t np = a_->signature().params.size(), ns = a_->signature().state.size();
    const Tensor& z = a.saved[na];
    Tensor dz = a.saved[na + 1 + nb];  // a handle: writes go to the saved buffer
    const std::vector<Tensor> then_inputs = then_view(a.inputs, z);
    std::vector<Tensor> then_grads = then_view(a.d_inputs, dz);
    BackwardArgs bb = a;
    bb.inputs = then_inputs;
    bb.params = tail(a.params, np);
    bb.state = tail(a.state, ns);
    bb.saved = a.saved.subspan(na + 1, nb);
    bb.d_inputs = then_grads;
    bb.d_params = tail(a.d_params, np);
    // The tail writes dz, the fused op's own buffer; its other inputs take their bits from above `first`'s.
    bb.accumulate = 0;
    for (size_t j = 0, k = ni; j < then_inputs.size(); ++j)
      if (j != slot_ && k < 64) bb.accumulate |= ((a.accumulate >> k++) & 1) << j;
    b_->backward(bb);
    BackwardArgs ba = a;
    ba.inputs = a.inputs.subspan(0, ni);
    ba.params = head(a.params, np);
    ba.state = head(a.state, ns);
    ba.d_inputs = a.d_inputs.subspan(0, ni);
    ba.d_params = head(a.d_params, np);
    ba.accumulate = ni < 64 ? a.accumulate & ((uint64_t{1} << ni) - 1) : a.accumulate;
    ba.outputs = std::span<const Tensor>(&z, 1);
    ba.saved = a.saved.subspan(0, na);
    ba.d_outputs = std::span<const Tensor>(&dz, 1);
    a_->backward(ba);
  }

 private:
  // The first n entries of a params / state span (first's) and the rest (then's); a span the caller left
  // empty (no parameter gradients wanted) stays empty for both.
  template <typename T>
  static std::span<T> head(std::span<T> v, size_t n) {
    return v.subspan(0, std::min(n, v.size()));
  }
  template <typename T>
  static std::span<T> tail(std::span<T> v, size_t n) {
    return v.subspan(std::min(n, v.size()));
  }
  static TensorSpec with_name(TensorSpec s, const char* name) {
    s.name = name;
    return s;
  }
  // `then`'s inputs (or their gradients) in its own order: `mid` at the slot, the fused op's tensors
  // after `first`'s inputs elsewhere.
  template <typename Span>
  std::vector<Tensor> then_view(Span fused, const Tensor& mid) const {
    const size_t n = b_->signature().inputs.size();
    std::vector<Tensor> v;
    v.reserve(n);
    size_t k = a_->signature().inputs.size();
    for (size_t j = 0; j < n; ++j) v.push_back(j == slot_ ? mid : fused[k++]);
    return v;
  }
  std::unique_ptr<OpKernel> a_, b_;
  size_t slot_ = 0;  // `then`'s input that `first`'s output feeds
  std::optional<size_t> sums_at_;  // fuse_conv_bn's sums in the workspace, where both kernels can
};

}  // namespace

std::unique_ptr<OpKernel> make_fused_kernel(std::unique_ptr<OpKernel> first, std::unique_ptr<OpKernel> then,
                                            const OpRegistry* registry, size_t slot) {
  FASTNN_CHECK(first && then, "make_fused_kernel: null kernel");
  if (registry)
    if (std::unique_ptr<OpKernel> one_pass = registry->create_fusion(*first, *then)) return one_pass;
  return std::make_unique<FusedKernel>(std::move(first), std::move(then), slot);
}

bool chains_into_activation(const OpSignature& bn, const OpSignature& activation) {
  return bn.outputs.size() == 1 && activation.inputs.size() == 1 && activation.outputs.size() == 1 &&
         bn.outputs[0].shape == activation.inputs[0].shape && bn.outputs[0].dtype == activation.inputs[0].dtype;
}

bool chains_into_add_relu(const OpSignature& bn, const OpSignature& add_relu) {
  const OpSignature& b = add_relu;
  return bn.outputs.size() == 1 && b.inputs.size() == 2 && b.outputs.size() == 1 &&
         b.inputs[0].shape == b.inputs[1].shape && bn.outputs[0].shape == b.inputs[0].shape &&
         bn.outputs[0].dtype == b.inputs[0].dtype && b.inputs[0].dtype == b.inputs[1].dtype;
}

OpSignature fused_activation_signature(const OpSignature& bn, const OpSignature& activation) {
  OpSignature sig = bn;
  sig.outputs = activation.outputs;
  sig.has_backward = bn.has_backward && activation.has_backward;
  return sig;
}

OpSignature fused_add_relu_signature(const OpSignature& bn, const OpSignature& add_relu) {
  OpSignature sig = bn;
  sig.inputs.push_back(add_relu.inputs[1]);
  sig.input_has_grad = {true, true};
  sig.outputs = add_relu.outputs;
  sig.has_backward = bn.has_backward && add_relu.has_backward;
  sig.accumulates_input_grads = false;
  return sig;
}

}  // namespace fastnn::ops
