// conv2d's and depthwise_conv2d's NHWC CPU kernel on oneDNN (f32): x [N, H, W, C], y [N, P, Q, K], the
// weight and bias as in conv2d.h ([K, C/G, R, S], the layout checkpoints keep). oneDNN's direct convolutions on NHWC
// activations (brgconv on AVX-512 and AVX2) want the weight in a blocked format of their own choice, so
// each pass reorders it into the workspace first (and the filter gradient back out of it): a copy of
// the weights per pass, small beside the activations at training batch sizes; an inference graph keeps
// the forward's copy until the weight is written (ForwardArgs::params_write_counted). Passes: forward (bias
// added by the primitive), backward-data, and backward-weights with the bias gradient. Each primitive
// is described when the layer is made and generated at its pass's first run, once, for the layer's shape
// (the kernel is its own primitive cache); its scratchpad is part of the workspace. Pointwise
// convolutions without bias run as matrix products instead (matmul_layer_dnnl.cpp), with no reorders.
//
// Winograd (f32, where winograd_pays_in_training and oneDNN has it: AVX-512): the three passes are
// oneDNN's Winograd convolutions, on its blocked activations: x reordered into the workspace for the
// forward and again for backward-weights, y and dx reordered out of it, dy into it. ResNet-50's 3x3
// layers at batch 8 ran 1.4-1.8x the direct passes so (conv2d_descs_dnnl.cpp); the rounding differs (the
// transforms), within the same tolerance of the reference. FASTNN_CPU_WINOGRAD=0 keeps the direct ones.
// Where oneDNN has none (AVX2) and own_winograd_pays, the three passes are fastnn's own F(4x4, 3x3) on
// the NHWC activations (winograd_f43.h; backward-data as the convolution of dy with the turned filters),
// the filters transformed into the workspace at every pass (the weights change every step; an inference
// graph keeps the forward's, as the reordered ones); the bias gradient, if any, dy's column sums.
//
// bf16 (precision=bf16 on the CPU, register_bf16_convolutions_dnnl): what each pass multiplies (the input,
// the weights, the incoming gradient) is rounded to bfloat16 first (the input into a saved tensor that the
// filter gradient reads again, the others into the workspace), and the products
// accumulate in f32; the output, the gradients, the bias and the weights themselves stay f32 (mixed
// precision: the optimizer updates f32 master weights). Where the CPU has bf16 dot products (AVX512_BF16,
// AMX) the three passes of ResNet-50's layer shapes ran about 1.8x the f32 ones, the roundings included
// (batch 8, zen5), and its whole training step 1.5x (docs/PERFORMANCE.md).
//
// Not bitwise the reference kernel (another summation order, FMA): ops_nhwc_cpu_test holds it to the
// reference within f32 rounding (the bf16 kernels: to the reference on the rounded tensors), on the
// registry's cases and larger ones. At a fixed thread count the same inputs give the same bits.
#include <algorithm>
#include <optional>
#include <vector>

#include "trainer/ops/conv2d_dnnl.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/depthwise_conv2d.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/ops/part_marks.h"
#include "trainer/ops/winograd_f43.h"

namespace fastnn::ops {
namespace {

using dnnl::memory;
using namespace dnnl_conv;

class Conv2dDnnl final : public OpKernel {
 public:
  // `nchw_sig`: the op's NCHW signature (conv2d's, or depthwise_conv2d's: the same grouped convolution).
  // `bf16`: the passes multiply in bfloat16 (the file comment).
  Conv2dDnnl(const char* op, const Conv2dParams& p, const OpSignature& nchw_sig, bool bf16)
      : OpKernel(op, Device::kCpu), p_(p), bf16_(bf16) {
    const dnnl::engine& eng = dnnl_cpu_engine();
    const ConvDescs d = conv_descs(p, p.bias);
    x_md_ = d.x;
    y_md_ = d.y;
    w_user_md_ = d.w_user;
    // What the passes multiply: the input x, the output gradient dy and the weights, in f32 or bf16.
    const memory::data_type in = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    const memory::desc x_in(d.x.dims(), in, memory::format_tag::nhwc), dy_in(d.y.dims(), in, memory::format_tag::nhwc);
    const memory::desc w_in(d.w_any.dims(), in, memory::format_tag::any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

    using namespace dnnl;
    std::optional<Passes> winograd;
    if (!bf16 && use_winograd_convolutions() && winograd_pays_in_training(p)) winograd = winograd_passes(d, attr);
    if (winograd) {
      fwd_pd_ = winograd->fwd;
      bwd_data_pd_ = winograd->bwd_data;
      bwd_w_pd_ = winograd->bwd_w;
      // The activations into and out of its blocked formats. (Only here: in bf16 the direct passes take
      // bf16 activations, which Bf16Rounding makes.)
      x_to_blocked_ = reorder_between(x_md_, fwd_pd_.src_desc());
      y_from_blocked_ = reorder_between(fwd_pd_.dst_desc(), y_md_);
      dy_to_blocked_ = reorder_between(y_md_, bwd_data_pd_.diff_dst_desc());
      dx_from_blocked_ = reorder_between(bwd_data_pd_.diff_src_desc(), x_md_);
    } else {
      const auto fwd_d = convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, x_in,
                                                   w_in, d.bias, d.y, d.strides, d.dilation, d.pad_l, d.pad_r);
      fwd_pd_ = convolution_forward::primitive_desc(fwd_d, attr, eng);
      const auto bwd_data_d = convolution_backward_data::desc(algorithm::convolution_direct, d.x, w_in, dy_in,
                                                              d.strides, d.dilation, d.pad_l, d.pad_r);
      bwd_data_pd_ = convolution_backward_data::primitive_desc(bwd_data_d, attr, eng, fwd_pd_);
      const auto bwd_w_d = convolution_backward_weights::desc(algorithm::convolution_direct, x_in, d.w_any, d.bias,
                                                              dy_in, d.strides, d.dilation, d.pad_l, d.pad_r);
      bwd_w_pd_ = convolution_backward_weights::primitive_desc(bwd_w_d, attr, eng, fwd_pd_);
      // The direct primitives take the activations as given, with no reorders.
      FASTNN_CHECK(fwd_pd_.src_desc() == x_in && fwd_pd_.dst_desc() == y_md_ && bwd_data_pd_.diff_src_desc() == x_md_ &&
                       bwd_data_pd_.diff_dst_desc() == dy_in && bwd_w_pd_.src_desc() == x_in &&
                       bwd_w_pd_.diff_dst_desc() == dy_in,
                   "conv2d: oneDNN chose other activation layouts than NHWC");
    }

    // Workspace: [forward weights][backward-data weights][filter gradient][bf16 dy][blocked x or dx][blocked
    // y or dy][scratchpad] (the blocked ones: Winograd only); the bf16 x is the last saved tensor
    // (save_input_in_bf16).
    const size_t w_fwd = blocked_bytes(fwd_pd_.weights_desc()), w_bwd = blocked_bytes(bwd_data_pd_.weights_desc());
    const size_t dw = blocked_bytes(bwd_w_pd_.diff_weights_desc());
    const size_t scratch = std::max({fwd_pd_.scratchpad_desc().get_size(), bwd_data_pd_.scratchpad_desc().get_size(),
                                     bwd_w_pd_.scratchpad_desc().get_size()});
    to_fwd_weights_ = reorder_between(w_user_md_, fwd_pd_.weights_desc());
    to_bwd_weights_ = reorder_between(w_user_md_, bwd_data_pd_.weights_desc());
    from_filter_grad_ = reorder_between(bwd_w_pd_.diff_weights_desc(), w_user_md_);
    if (bf16) {
      x_to_bf16_ = Bf16Rounding(d.x.dims(), memory::format_tag::nhwc);
      dy_to_bf16_ = Bf16Rounding(d.y.dims(), memory::format_tag::nhwc);
    }
    w_bwd_offset_ = w_fwd;
    dw_offset_ = w_bwd_offset_ + w_bwd;
    dy_bf16_offset_ = dw_offset_ + dw;
    x_blocked_offset_ = dy_bf16_offset_ + (bf16 ? dy_to_bf16_.bytes() : 0);
    y_blocked_offset_ = x_blocked_offset_ + (winograd ? blocked_bytes(fwd_pd_.src_desc()) : 0);
    scratch_offset_ = y_blocked_offset_ + (winograd ? blocked_bytes(fwd_pd_.dst_desc()) : 0);
    sig_ = nhwc_signature(nchw_sig);
    if (bf16) save_input_in_bf16(sig_);
    f43_offset_ = scratch_offset_ + dnnl_aligned(scratch);
    if (!winograd && !bf16 && use_winograd_convolutions() && winograd_pays_in_training(p) && own_winograd_pays(p)) {
      const Window2d& g = p.win;
      f43_fwd_.emplace(cpu::WinogradShape{.n = p.n, .h = p.h, .w = p.w, .c = p.c, .k = p.k, .p = g.p, .q = g.q,
                                          .pad_top = g.pad_top, .pad_left = g.pad_left});
      f43_dgrad_.emplace(cpu::WinogradShape{.n = p.n, .h = g.p, .w = g.q, .c = p.k, .k = p.c, .p = p.h, .q = p.w,
                                            .pad_top = 2 - g.pad_top, .pad_left = 2 - g.pad_left});
      zero_bias_.assign(static_cast<size_t>(std::max(p.c, p.k)), 0.0f);
      f43_u_bytes_ = dnnl_aligned(sizeof(float) * std::max(cpu::WinogradF43::weights_floats(p.k, p.c),
                                                           cpu::WinogradF43::weights_floats(p.c, p.k)));
      f43_scratch_bytes_ = std::max({f43_fwd_->workspace_bytes(), f43_dgrad_->workspace_bytes(),
                                     f43_fwd_->filter_gradient_workspace_bytes()});
    }
    // [...][fastnn's Winograd: transformed filters][its scratch]
    sig_.workspace_bytes = f43_offset_ + f43_u_bytes_ + f43_scratch_bytes_;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const PartMark part("conv2d fprop");
    std::byte* ws = bytes_of(a.workspace);
    if (f43_fwd_) {
      // The transformed filters: kept, as the reordered ones below, in an inference graph.
      auto transformed_at = [&](std::byte* at) {
        cpu::WinogradF43::transform_weights(a.params[0].data<float>(), p_.k, p_.c, reinterpret_cast<float*>(at));
        return reinterpret_cast<const float*>(at);
      };
      const std::span<const Tensor> weight = a.params.first(1);
      const float* u = !a.params_write_counted ? transformed_at(ws + f43_offset_)
                       : cache_.current(weight) ? reinterpret_cast<const float*>(cache_.data())
                                                : transformed_at(cache_.update(weight, f43_u_bytes_));
      f43_fwd_->forward(a.inputs[0].data<float>(), u, p_.bias ? a.params[1].data<float>() : zero_bias_.data(), nullptr,
                        cpu::WinogradTail::kNone, a.outputs[0].data<float>(), ws + f43_offset_ + f43_u_bytes_);
      return;
    }
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
    memory x = bf16_ ? x_to_bf16_(a.inputs[0], bytes_of(a.saved.back())) : user_memory(x_md_, a.inputs[0]);
    x = reordered(x_to_blocked_, x, fwd_pd_.src_desc(), ws + x_blocked_offset_);
    const memory out = user_memory(y_md_, a.outputs[0]);
    const memory y = y_from_blocked_ ? memory(fwd_pd_.dst_desc(), dnnl_cpu_engine(), ws + y_blocked_offset_) : out;
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x},
                                         {DNNL_ARG_WEIGHTS, w},
                                         {DNNL_ARG_DST, y},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad(fwd_pd_, ws)}};
    if (p_.bias) args.emplace(DNNL_ARG_BIAS, user_memory(fwd_pd_.bias_desc(), a.params[1]));
    if (!fwd_) fwd_ = dnnl::convolution_forward(fwd_pd_);
    dnnl_execute(*fwd_, args);
    if (y_from_blocked_) run_reorder(*y_from_blocked_, y, out);
  }

  void run_backward(const BackwardArgs& a) override {
    std::byte* ws = bytes_of(a.workspace);
    const bool want_dx = a.d_inputs[0].defined();
    const bool want_dw = a.d_params[0].defined(), want_db = p_.bias && a.d_params[1].defined();
    if (!want_dx && !want_dw && !want_db) return;
    // bf16: dy rounded once, for both passes.
    memory dy = bf16_ ? dy_to_bf16_(a.d_outputs[0], ws + dy_bf16_offset_) : user_memory(y_md_, a.d_outputs[0]);
    dy = reordered(dy_to_blocked_, dy, bwd_data_pd_.diff_dst_desc(), ws + y_blocked_offset_);
    if (want_dx && f43_dgrad_) {
      const PartMark part("conv2d dgrad");
      auto* u = reinterpret_cast<float*>(ws + f43_offset_);
      cpu::WinogradF43::transform_flipped_weights(a.params[0].data<float>(), p_.k, p_.c, u);
      f43_dgrad_->forward(a.d_outputs[0].data<float>(), u, zero_bias_.data(), nullptr, cpu::WinogradTail::kNone,
                          a.d_inputs[0].data<float>(), ws + f43_offset_ + f43_u_bytes_);
    } else if (want_dx) {
      const PartMark part("conv2d dgrad");
      const memory w = weights_as(bwd_data_pd_.weights_desc(), to_bwd_weights_, a.params[0], ws + w_bwd_offset_);
      const memory dx_out = user_memory(x_md_, a.d_inputs[0]);
      // Winograd: dx in the blocked input's place, which backward-weights fills again after.
      const memory dx = dx_from_blocked_ ? memory(bwd_data_pd_.diff_src_desc(), dnnl_cpu_engine(), ws + x_blocked_offset_) : dx_out;
      if (!bwd_data_) bwd_data_ = dnnl::convolution_backward_data(bwd_data_pd_);
      dnnl_execute(*bwd_data_, {{DNNL_ARG_DIFF_DST, dy},
                               {DNNL_ARG_WEIGHTS, w},
                               {DNNL_ARG_DIFF_SRC, dx},
                               {DNNL_ARG_SCRATCHPAD, scratchpad(bwd_data_pd_, ws)}});
      if (dx_from_blocked_) run_reorder(*dx_from_blocked_, dx, dx_out);
    }
    if (!want_dw && !want_db) return;
    const PartMark part("conv2d wgrad");
    if (f43_fwd_) {
      if (want_dw)
        f43_fwd_->filter_gradient(a.inputs[0].data<float>(), a.d_outputs[0].data<float>(), a.d_params[0].data<float>(),
                                  ws + f43_offset_ + f43_u_bytes_);
      if (want_db) {
        const float* dy = a.d_outputs[0].data<float>();
        column_sums_in_double(p_.n * p_.win.p * p_.win.q, p_.k, [dy](int64_t i) { return dy[i]; },
                              a.d_params[1].data<float>());
      }
      return;
    }
    const memory::desc& dw_md = bwd_w_pd_.diff_weights_desc();
    const bool dw_direct = want_dw && !from_filter_grad_;
    // The bias gradient always has its own buffer: the primitive computes it with the filter gradient.
    const memory dw = dw_direct ? user_memory(w_user_md_, a.d_params[0]) : memory(dw_md, dnnl_cpu_engine(), ws + dw_offset_);
    memory x = bf16_ ? x_to_bf16_.rounded_at(bytes_of(a.saved.back())) : user_memory(x_md_, a.inputs[0]);
    x = reordered(x_to_blocked_, x, bwd_w_pd_.src_desc(), ws + x_blocked_offset_);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x},
                                         {DNNL_ARG_DIFF_DST, dy},
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
    // (The same weight format; fastnn's Winograd or not depends on the batch, as its tiles.)
    if (old && old->fwd_pd_.weights_desc() == fwd_pd_.weights_desc() && old->f43_fwd_.has_value() == f43_fwd_.has_value())
      cache_ = old->cache_;
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
    return reordered(r, user_memory(w_user_md_, weight), md, at);
  }

  struct Passes {
    dnnl::convolution_forward::primitive_desc fwd;
    dnnl::convolution_backward_data::primitive_desc bwd_data;
    dnnl::convolution_backward_weights::primitive_desc bwd_w;
  };
  // oneDNN's Winograd primitives for the three passes, on the activation formats they pick; nullopt where
  // this oneDNN or CPU has none (before AVX-512) or where the passes want the input or the output
  // gradient in different formats (one blocked copy of each serves all passes here).
  static std::optional<Passes> winograd_passes(const ConvDescs& d, const dnnl::primitive_attr& attr) {
    using namespace dnnl;
    const engine& eng = dnnl_cpu_engine();
    const memory::desc x_any(d.x.dims(), memory::data_type::f32, memory::format_tag::any);
    const memory::desc y_any(d.y.dims(), memory::data_type::f32, memory::format_tag::any);
    try {
      const convolution_forward::primitive_desc fwd(
          convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_winograd, x_any, d.w_any, d.bias,
                                    y_any, d.strides, d.dilation, d.pad_l, d.pad_r),
          attr, eng);
      const convolution_backward_data::primitive_desc bwd_data(
          convolution_backward_data::desc(algorithm::convolution_winograd, x_any, d.w_any, y_any, d.strides, d.dilation,
                                          d.pad_l, d.pad_r),
          attr, eng, fwd);
      const convolution_backward_weights::primitive_desc bwd_w(
          convolution_backward_weights::desc(algorithm::convolution_winograd, x_any, d.w_any, d.bias, y_any, d.strides,
                                             d.dilation, d.pad_l, d.pad_r),
          attr, eng, fwd);
      const bool one_x = bwd_data.diff_src_desc() == fwd.src_desc() && bwd_w.src_desc() == fwd.src_desc();
      const bool one_y = bwd_data.diff_dst_desc() == fwd.dst_desc() && bwd_w.diff_dst_desc() == fwd.dst_desc();
      if (!one_x || !one_y) return std::nullopt;
      return Passes{fwd, bwd_data, bwd_w};
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  }

  Conv2dParams p_;
  bool bf16_;
  CachedWeights cache_;  // an inference graph's forward weights (reordered, or fastnn's Winograd's transformed)
  memory::desc x_md_, y_md_, w_user_md_;
  dnnl::convolution_forward::primitive_desc fwd_pd_;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd_;
  dnnl::convolution_backward_weights::primitive_desc bwd_w_pd_;
  // Made at a pass's first run (oneDNN generates their code then): an inference graph never pays for the
  // backward ones.
  std::optional<dnnl::primitive> fwd_, bwd_data_, bwd_w_;
  std::optional<dnnl::reorder> to_fwd_weights_, to_bwd_weights_, from_filter_grad_;
  std::optional<dnnl::reorder> x_to_blocked_, y_from_blocked_, dy_to_blocked_, dx_from_blocked_;  // Winograd only
  Bf16Rounding x_to_bf16_, dy_to_bf16_;  // bf16 only
  // fastnn's own Winograd passes (AVX2): the forward's (its filter gradient too) and backward-data's;
  // their filters and scratch in the workspace.
  std::optional<cpu::WinogradF43> f43_fwd_, f43_dgrad_;
  std::vector<float> zero_bias_;
  size_t f43_offset_ = 0, f43_u_bytes_ = 0, f43_scratch_bytes_ = 0;
  size_t w_bwd_offset_ = 0, dw_offset_ = 0, dy_bf16_offset_ = 0, x_blocked_offset_ = 0, y_blocked_offset_ = 0;
  size_t scratch_offset_ = 0;
};

// The convolutions' NHWC kernels, f32 or (conv2d's, bf16) multiplying in bfloat16. Null (f64: the gradient
// checks; FASTNN_CPU_KERNELS=reference): the reference inside the adapter.
KernelFactory conv2d_factory(bool bf16) {
  return [bf16](const Attrs& a, std::span<const TensorSpec> in) -> std::unique_ptr<OpKernel> {
    const std::optional<Conv2dParams> p = grouped_conv_params("conv2d", a, in);
    if (!p) return nullptr;
    const OpSignature nchw = conv2d_signature(*p, DType::kF32);
    if (is_pointwise_product(*p)) return make_conv1x1_matmul(*p, nchw, bf16);
    return std::make_unique<Conv2dDnnl>("conv2d", *p, nchw, bf16);
  };
}

KernelFactory depthwise_conv2d_factory() {
  return [](const Attrs& a, std::span<const TensorSpec> in) -> std::unique_ptr<OpKernel> {
    const std::optional<Conv2dParams> p = grouped_conv_params("depthwise_conv2d", a, in);
    if (!p) return nullptr;
    const OpSignature nchw = depthwise_conv2d_signature(depthwise_conv2d_params(a, in), DType::kF32);
    return std::make_unique<Conv2dDnnl>("depthwise_conv2d", *p, nchw, /*bf16=*/false);
  };
}

}  // namespace

void register_conv2d_dnnl(OpRegistry& r) {
  r.add_nhwc_kernel("conv2d", Device::kCpu, conv2d_factory(/*bf16=*/false));
  r.add_batch_norm_fold("conv2d", Device::kCpu, make_batch_norm_fold);
}

void register_depthwise_conv2d_dnnl(OpRegistry& r) {
  r.add_nhwc_kernel("depthwise_conv2d", Device::kCpu, depthwise_conv2d_factory());
  r.add_batch_norm_fold("depthwise_conv2d", Device::kCpu, make_batch_norm_fold);
}

// Depthwise convolutions stay f32: they are bound by memory, not by multiplications, and rounding their
// (6x expanded) inputs and gradients cost more than bf16 saved (MobileNet v2 96² batch 16, zen5: 356
// against 364 images/s with them in bf16; 372-375 against 354-363 without).
void register_bf16_convolutions_dnnl(OpRegistry& r) {
  FASTNN_CHECK(dnnl_has_bf16(), "bf16 convolutions need bf16 instructions, ", dnnl_description());
  r.add_nhwc_kernel("conv2d", Device::kCpu, conv2d_factory(/*bf16=*/true));
}

}  // namespace fastnn::ops
