// conv2d's and depthwise_conv2d's NHWC CPU kernel on oneDNN (f32): x [N, H, W, C], y [N, P, Q, K], the
// weight and bias as in conv2d.h ([K, C/G, R, S], the layout checkpoints keep). oneDNN's direct convolutions on NHWC
// activations (brgconv on AVX-512 and AVX2) want the weight in a blocked format of their own choice, so
// each pass reorders it into the workspace first (and the filter gradient back out of it): a copy of
// the weights per pass, small beside the activations at training batch sizes; an inference graph keeps
// the forward's copy until the weight is written (ForwardArgs::params_write_counted). Passes: forward (bias
// added by the primitive), backward-data, and backward-weights with the bias gradient. Each primitive
// is described when the layer is made and generated at its pass's first run, once, for the layer's shape
// (the kernel is its own primitive cache); its scratchpad is part of the workspace. Pointwise
// convolutions without bias run as matrix products instead (conv1x1_matmul_dnnl.cpp), with no reorders.
//
// Not bitwise the reference kernel (another summation order, FMA): ops_nhwc_cpu_test holds it to the
// reference within f32 rounding, on the registry's cases and larger ones. At a fixed thread count the
// same inputs give the same bits.
#include <algorithm>
#include <optional>
#include <vector>

#include "trainer/ops/conv2d_dnnl.h"
#include "trainer/ops/depthwise_conv2d.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/ops/part_marks.h"

namespace fastnn::ops {
namespace {

using dnnl::memory;
using namespace dnnl_conv;

class Conv2dDnnl final : public OpKernel {
 public:
  // `nchw_sig`: the op's NCHW signature (conv2d's, or depthwise_conv2d's: the same grouped convolution).
  Conv2dDnnl(const char* op, const Conv2dParams& p, const OpSignature& nchw_sig) : OpKernel(op, Device::kCpu), p_(p) {
    const dnnl::engine& eng = dnnl_cpu_engine();
    const ConvDescs d = conv_descs(p, p.bias);
    x_md_ = d.x;
    y_md_ = d.y;
    w_user_md_ = d.w_user;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

    using namespace dnnl;
    const auto fwd_d = convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, d.x,
                                                 d.w_any, d.bias, d.y, d.strides, d.dilation, d.pad_l, d.pad_r);
    fwd_pd_ = convolution_forward::primitive_desc(fwd_d, attr, eng);
    const auto bwd_data_d = convolution_backward_data::desc(algorithm::convolution_direct, d.x, d.w_any, d.y,
                                                            d.strides, d.dilation, d.pad_l, d.pad_r);
    bwd_data_pd_ = convolution_backward_data::primitive_desc(bwd_data_d, attr, eng, fwd_pd_);
    const auto bwd_w_d = convolution_backward_weights::desc(algorithm::convolution_direct, d.x, d.w_any, d.bias, d.y,
                                                            d.strides, d.dilation, d.pad_l, d.pad_r);
    bwd_w_pd_ = convolution_backward_weights::primitive_desc(bwd_w_d, attr, eng, fwd_pd_);
    // The primitives must take the activations as given: a kernel that asked for another layout would
    // need per-pass reorders of them, which this kernel does not do.
    FASTNN_CHECK(fwd_pd_.src_desc() == x_md_ && fwd_pd_.dst_desc() == y_md_ && bwd_data_pd_.diff_src_desc() == x_md_ &&
                     bwd_w_pd_.src_desc() == x_md_ && bwd_w_pd_.diff_dst_desc() == y_md_,
                 "conv2d: oneDNN chose other activation layouts than NHWC");

    // Workspace: [forward weights][backward-data weights][filter gradient][scratchpad].
    const size_t w_fwd = blocked_bytes(fwd_pd_.weights_desc()), w_bwd = blocked_bytes(bwd_data_pd_.weights_desc());
    const size_t dw = blocked_bytes(bwd_w_pd_.diff_weights_desc());
    const size_t scratch = std::max({fwd_pd_.scratchpad_desc().get_size(), bwd_data_pd_.scratchpad_desc().get_size(),
                                     bwd_w_pd_.scratchpad_desc().get_size()});
    to_fwd_weights_ = reorder_between(w_user_md_, fwd_pd_.weights_desc());
    to_bwd_weights_ = reorder_between(w_user_md_, bwd_data_pd_.weights_desc());
    from_filter_grad_ = reorder_between(bwd_w_pd_.diff_weights_desc(), w_user_md_);
    w_bwd_offset_ = w_fwd;
    dw_offset_ = w_bwd_offset_ + w_bwd;
    scratch_offset_ = dw_offset_ + dw;
    sig_ = nhwc_signature(nchw_sig);
    sig_.workspace_bytes = scratch_offset_ + dnnl_aligned(scratch);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const PartMark part("conv2d fprop");
    std::byte* ws = bytes_of(a.workspace);
    // An inference graph keeps the reordered weight until it is written (ForwardArgs::params_write_counted):
    // at batch 1 the reorder of every weight took about as long as the convolutions (ResNet-50).
    std::byte* w_at = ws;
    const bool cached = a.params_write_counted && to_fwd_weights_;
    if (cached) {
      const std::span<const Tensor> weight = a.params.first(1);
      if (!cache_.current(weight)) {
        weights_as(fwd_pd_.weights_desc(), to_fwd_weights_, a.params[0],
                   cache_.update(weight, blocked_bytes(fwd_pd_.weights_desc())));
      }
      w_at = cache_.data();
    }
    const memory w = cached ? memory(fwd_pd_.weights_desc(), dnnl_cpu_engine(), w_at)
                            : weights_as(fwd_pd_.weights_desc(), to_fwd_weights_, a.params[0], w_at);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, user_memory(x_md_, a.inputs[0])},
                                         {DNNL_ARG_WEIGHTS, w},
                                         {DNNL_ARG_DST, user_memory(y_md_, a.outputs[0])},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad(fwd_pd_, ws)}};
    if (p_.bias) args.emplace(DNNL_ARG_BIAS, user_memory(fwd_pd_.bias_desc(), a.params[1]));
    if (!fwd_) fwd_ = dnnl::convolution_forward(fwd_pd_);
    dnnl_execute(*fwd_, args);
  }

  void run_backward(const BackwardArgs& a) override {
    std::byte* ws = bytes_of(a.workspace);
    if (a.d_inputs[0].defined()) {
      const PartMark part("conv2d dgrad");
      const memory w = weights_as(bwd_data_pd_.weights_desc(), to_bwd_weights_, a.params[0], ws + w_bwd_offset_);
      if (!bwd_data_) bwd_data_ = dnnl::convolution_backward_data(bwd_data_pd_);
      dnnl_execute(*bwd_data_, {{DNNL_ARG_DIFF_DST, user_memory(y_md_, a.d_outputs[0])},
                               {DNNL_ARG_WEIGHTS, w},
                               {DNNL_ARG_DIFF_SRC, user_memory(x_md_, a.d_inputs[0])},
                               {DNNL_ARG_SCRATCHPAD, scratchpad(bwd_data_pd_, ws)}});
    }
    const bool want_dw = a.d_params[0].defined(), want_db = p_.bias && a.d_params[1].defined();
    if (!want_dw && !want_db) return;
    const PartMark part("conv2d wgrad");
    const memory::desc& dw_md = bwd_w_pd_.diff_weights_desc();
    const bool dw_direct = want_dw && !from_filter_grad_;
    // The bias gradient always has its own buffer: the primitive computes it with the filter gradient.
    const memory dw = dw_direct ? user_memory(w_user_md_, a.d_params[0]) : memory(dw_md, dnnl_cpu_engine(), ws + dw_offset_);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, user_memory(x_md_, a.inputs[0])},
                                         {DNNL_ARG_DIFF_DST, user_memory(y_md_, a.d_outputs[0])},
                                         {DNNL_ARG_DIFF_WEIGHTS, dw},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad(bwd_w_pd_, ws)}};
    std::optional<std::vector<float>> db_sink;
    if (p_.bias) {
      if (want_db) {
        args.emplace(DNNL_ARG_DIFF_BIAS, user_memory(bwd_w_pd_.diff_bias_desc(), a.d_params[1]));
      } else {
        db_sink.emplace(static_cast<size_t>(p_.k));
        args.emplace(DNNL_ARG_DIFF_BIAS, memory(bwd_w_pd_.diff_bias_desc(), dnnl_cpu_engine(), db_sink->data()));
      }
    }
    if (!bwd_w_) bwd_w_ = dnnl::convolution_backward_weights(bwd_w_pd_);
    dnnl_execute(*bwd_w_, args);
    if (want_dw && !dw_direct) run_reorder(*from_filter_grad_, dw, user_memory(w_user_md_, a.d_params[0]));
  }

 public:
  void inherit_derived(OpKernel& previous) override {
    auto* old = dynamic_cast<Conv2dDnnl*>(&previous);
    if (old && old->fwd_pd_.weights_desc() == fwd_pd_.weights_desc()) cache_ = std::move(old->cache_);
  }

 private:
  static size_t blocked_bytes(const memory::desc& md) { return dnnl_aligned(md.get_size()); }
  memory scratchpad(const dnnl::primitive_desc& pd, std::byte* ws) const {
    return memory(pd.scratchpad_desc(), dnnl_cpu_engine(), ws + scratch_offset_);
  }
  // The weight in the format `md` the primitive wants: the parameter itself when that is its layout,
  // else a copy reordered at `at`.
  memory weights_as(const memory::desc& md, const std::optional<dnnl::reorder>& r, const Tensor& weight,
                    std::byte* at) const {
    const memory given = user_memory(w_user_md_, weight);
    if (!r) return given;
    memory blocked(md, dnnl_cpu_engine(), at);
    run_reorder(*r, given, blocked);
    return blocked;
  }

  Conv2dParams p_;
  CachedWeights cache_;  // an inference graph's forward weights
  memory::desc x_md_, y_md_, w_user_md_;
  dnnl::convolution_forward::primitive_desc fwd_pd_;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd_;
  dnnl::convolution_backward_weights::primitive_desc bwd_w_pd_;
  // Made at a pass's first run (oneDNN generates their code then): an inference graph never pays for the
  // backward ones.
  std::optional<dnnl::primitive> fwd_, bwd_data_, bwd_w_;
  std::optional<dnnl::reorder> to_fwd_weights_, to_bwd_weights_, from_filter_grad_;
  size_t w_bwd_offset_ = 0, dw_offset_ = 0, scratch_offset_ = 0;
};

}  // namespace

void register_conv2d_dnnl(OpRegistry& r) {
  // Null (f64: the gradient checks; FASTNN_CPU_KERNELS=reference): the reference inside the adapter.
  r.add_nhwc_kernel("conv2d", Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in) -> std::unique_ptr<OpKernel> {
    const std::optional<Conv2dParams> p = grouped_conv_params("conv2d", a, in);
    if (!p) return nullptr;
    const OpSignature nchw = conv2d_signature(*p, DType::kF32);
    if (is_pointwise_product(*p)) return make_conv1x1_matmul(*p, nchw);
    return std::make_unique<Conv2dDnnl>("conv2d", *p, nchw);
  });
  r.add_batch_norm_fold("conv2d", Device::kCpu, make_batch_norm_fold);
}

void register_depthwise_conv2d_dnnl(OpRegistry& r) {
  r.add_nhwc_kernel("depthwise_conv2d", Device::kCpu,
                    [](const Attrs& a, std::span<const TensorSpec> in) -> std::unique_ptr<OpKernel> {
                      const std::optional<Conv2dParams> p = grouped_conv_params("depthwise_conv2d", a, in);
                      if (!p) return nullptr;
                      const OpSignature nchw = depthwise_conv2d_signature(depthwise_conv2d_params(a, in), DType::kF32);
                      return std::make_unique<Conv2dDnnl>("depthwise_conv2d", *p, nchw);
                    });
  r.add_batch_norm_fold("depthwise_conv2d", Device::kCpu, make_batch_norm_fold);
}

}  // namespace fastnn::ops
