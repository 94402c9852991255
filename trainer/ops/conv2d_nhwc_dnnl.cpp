// conv2d's and depthwise_conv2d's NHWC CPU kernel on oneDNN (f32): x [N, H, W, C], y [N, P, Q, K], the
// weight and bias as in conv2d.h ([K, C/G, R, S], the layout checkpoints keep). oneDNN's direct convolutions on NHWC
// activations (brgconv on AVX-512 and AVX2) want the weight in a blocked format of their own choice, so
// each pass reorders it into the workspace first (and the filter gradient back out of it): a copy of
// the weights per pass, small beside the activations at training batch sizes. Passes: forward (bias
// added by the primitive), backward-data, and backward-weights with the bias gradient. Each primitive
// is described when the layer is made and generated at its pass's first run, once, for the layer's shape
// (the kernel is its own primitive cache); its scratchpad is part of the workspace.
//
// Not bitwise the reference kernel (another summation order, FMA): ops_nhwc_cpu_test holds it to the
// reference within f32 rounding, on the registry's cases and larger ones. At a fixed thread count the
// same inputs give the same bits.
#include <algorithm>
#include <optional>
#include <vector>

#include "trainer/ops/conv2d.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/depthwise_conv2d.h"
#include "trainer/ops/dnnl_runtime.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/ops/op_spec_checks.h"
#include "trainer/ops/part_marks.h"

namespace fastnn::ops {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

class Conv2dDnnl final : public OpKernel {
 public:
  // `nchw_sig`: the op's NCHW signature (conv2d's, or depthwise_conv2d's: the same grouped convolution).
  Conv2dDnnl(const char* op, const Conv2dParams& p, const OpSignature& nchw_sig) : OpKernel(op, Device::kCpu), p_(p) {
    const dnnl::engine& eng = dnnl_cpu_engine();
    const Window2d& g = p.win;
    x_md_ = memory::desc({p.n, p.c, p.h, p.w}, kF32, Tag::nhwc);
    y_md_ = memory::desc({p.n, p.k, g.p, g.q}, kF32, Tag::nhwc);
    // [K, C/G, R, S] is oihw for one group and goihw ([G, K/G, C/G, R, S]) for several.
    const bool grouped = p.groups > 1;
    const memory::dims w_dims = grouped ? memory::dims{p.groups, p.k / p.groups, p.c / p.groups, g.r, g.s}
                                        : memory::dims{p.k, p.c, g.r, g.s};
    w_user_md_ = memory::desc(w_dims, kF32, grouped ? Tag::goihw : Tag::oihw);
    const memory::desc w_any(w_dims, kF32, Tag::any);
    const memory::desc b_md = p.bias ? memory::desc({p.k}, kF32, Tag::x) : memory::desc();
    const memory::dims strides{g.stride_h, g.stride_w}, dilation{g.dil_h - 1, g.dil_w - 1};
    const memory::dims pad_l{g.pad_top, g.pad_left}, pad_r{g.pad_bottom, g.pad_right};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

    using namespace dnnl;
    const auto fwd_d = convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, x_md_,
                                                 w_any, b_md, y_md_, strides, dilation, pad_l, pad_r);
    fwd_pd_ = convolution_forward::primitive_desc(fwd_d, attr, eng);
    const auto bwd_data_d = convolution_backward_data::desc(algorithm::convolution_direct, x_md_, w_any, y_md_,
                                                            strides, dilation, pad_l, pad_r);
    bwd_data_pd_ = convolution_backward_data::primitive_desc(bwd_data_d, attr, eng, fwd_pd_);
    const auto bwd_w_d = convolution_backward_weights::desc(algorithm::convolution_direct, x_md_, w_any, b_md, y_md_,
                                                            strides, dilation, pad_l, pad_r);
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
    std::byte* ws = base(a.workspace);
    const memory w = weights_as(fwd_pd_.weights_desc(), to_fwd_weights_, a.params[0], ws);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, user(x_md_, a.inputs[0])},
                                         {DNNL_ARG_WEIGHTS, w},
                                         {DNNL_ARG_DST, user(y_md_, a.outputs[0])},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad(fwd_pd_, ws)}};
    if (p_.bias) args.emplace(DNNL_ARG_BIAS, user(fwd_pd_.bias_desc(), a.params[1]));
    if (!fwd_) fwd_ = dnnl::convolution_forward(fwd_pd_);
    dnnl_execute(*fwd_, args);
  }

  void run_backward(const BackwardArgs& a) override {
    std::byte* ws = base(a.workspace);
    if (a.d_inputs[0].defined()) {
      const PartMark part("conv2d dgrad");
      const memory w = weights_as(bwd_data_pd_.weights_desc(), to_bwd_weights_, a.params[0], ws + w_bwd_offset_);
      if (!bwd_data_) bwd_data_ = dnnl::convolution_backward_data(bwd_data_pd_);
      dnnl_execute(*bwd_data_, {{DNNL_ARG_DIFF_DST, user(y_md_, a.d_outputs[0])},
                               {DNNL_ARG_WEIGHTS, w},
                               {DNNL_ARG_DIFF_SRC, user(x_md_, a.d_inputs[0])},
                               {DNNL_ARG_SCRATCHPAD, scratchpad(bwd_data_pd_, ws)}});
    }
    const bool want_dw = a.d_params[0].defined(), want_db = p_.bias && a.d_params[1].defined();
    if (!want_dw && !want_db) return;
    const PartMark part("conv2d wgrad");
    const memory::desc& dw_md = bwd_w_pd_.diff_weights_desc();
    const bool dw_direct = want_dw && !from_filter_grad_;
    // The bias gradient always has its own buffer: the primitive computes it with the filter gradient.
    const memory dw = dw_direct ? user(w_user_md_, a.d_params[0]) : memory(dw_md, dnnl_cpu_engine(), ws + dw_offset_);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, user(x_md_, a.inputs[0])},
                                         {DNNL_ARG_DIFF_DST, user(y_md_, a.d_outputs[0])},
                                         {DNNL_ARG_DIFF_WEIGHTS, dw},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad(bwd_w_pd_, ws)}};
    std::optional<std::vector<float>> db_sink;
    if (p_.bias) {
      if (want_db) {
        args.emplace(DNNL_ARG_DIFF_BIAS, user(bwd_w_pd_.diff_bias_desc(), a.d_params[1]));
      } else {
        db_sink.emplace(static_cast<size_t>(p_.k));
        args.emplace(DNNL_ARG_DIFF_BIAS, memory(bwd_w_pd_.diff_bias_desc(), dnnl_cpu_engine(), db_sink->data()));
      }
    }
    if (!bwd_w_) bwd_w_ = dnnl::convolution_backward_weights(bwd_w_pd_);
    dnnl_execute(*bwd_w_, args);
    if (want_dw && !dw_direct) run_reorder(*from_filter_grad_, dw, user(w_user_md_, a.d_params[0]));
  }

 private:
  static size_t blocked_bytes(const memory::desc& md) { return dnnl_aligned(md.get_size()); }
  static std::byte* base(const Tensor& ws) { return static_cast<std::byte*>(const_cast<void*>(ws.raw())); }
  static memory user(const memory::desc& md, const Tensor& t) {
    return memory(md, dnnl_cpu_engine(), const_cast<void*>(t.raw()));
  }
  memory scratchpad(const dnnl::primitive_desc& pd, std::byte* ws) const {
    return memory(pd.scratchpad_desc(), dnnl_cpu_engine(), ws + scratch_offset_);
  }
  // The reorder from one weight format to another, made once; none when they are the same.
  static std::optional<dnnl::reorder> reorder_between(const memory::desc& from, const memory::desc& to) {
    if (from == to) return std::nullopt;
    const dnnl::engine& eng = dnnl_cpu_engine();
    return dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to));
  }
  static void run_reorder(const dnnl::reorder& r, const memory& from, const memory& to) {
    dnnl_execute(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  }
  // The weight in the format `md` the primitive wants: the parameter itself when that is its layout,
  // else a copy reordered at `at`.
  memory weights_as(const memory::desc& md, const std::optional<dnnl::reorder>& r, const Tensor& weight,
                    std::byte* at) const {
    const memory given = user(w_user_md_, weight);
    if (!r) return given;
    memory blocked(md, dnnl_cpu_engine(), at);
    run_reorder(*r, given, blocked);
    return blocked;
  }

  Conv2dParams p_;
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
  r.add_nhwc_kernel("conv2d", Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in) -> std::unique_ptr<OpKernel> {
    // f64 (the gradient checks) and FASTNN_CPU_KERNELS=reference: the reference inside the adapter.
    if (!use_dnnl_kernels() || compute_dtype("conv2d", in) != DType::kF32) return nullptr;
    const Conv2dParams p = conv2d_params(a, in);
    return std::make_unique<Conv2dDnnl>("conv2d", p, conv2d_signature(p, DType::kF32));
  });
}

void register_depthwise_conv2d_dnnl(OpRegistry& r) {
  // A depthwise convolution is the grouped one with a group per input channel: weight [C*M, 1, R, S] is
  // goihw with G = C, O = M, I = 1, and output channel c*M + m is group c's m-th (TF's order).
  r.add_nhwc_kernel("depthwise_conv2d", Device::kCpu,
                    [](const Attrs& a, std::span<const TensorSpec> in) -> std::unique_ptr<OpKernel> {
                      if (!use_dnnl_kernels() || compute_dtype("depthwise_conv2d", in) != DType::kF32) return nullptr;
                      const DepthwiseConv2dParams d = depthwise_conv2d_params(a, in);
                      Conv2dParams p;
                      p.n = d.n;
                      p.c = d.c;
                      p.h = d.h;
                      p.w = d.w;
                      p.k = d.c * d.multiplier;
                      p.groups = d.c;
                      p.bias = d.bias;
                      p.win = d.win;
                      return std::make_unique<Conv2dDnnl>("depthwise_conv2d", p, depthwise_conv2d_signature(d, DType::kF32));
                    });
}

}  // namespace fastnn::ops
