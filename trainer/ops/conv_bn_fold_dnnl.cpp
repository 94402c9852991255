// An inference plan's convolution + batch norm (+ relu / relu6 / residual add + relu) as one oneDNN
// convolution (NHWC, f32), PlanOptions::fold_batch_norms. With the batch norm's evaluation-mode
// statistics, per output channel k:
//   s_k = gamma_k / sqrt(running_var_k + epsilon)
//   y = s_k * (conv(x, w)_k + b_k - running_mean_k) + beta_k = conv(x, s_k * w_k) + (beta_k + (b_k - mean_k) s_k)
// so the batch norm becomes the convolution's weights and bias, computed in double and rounded once; the
// add is oneDNN's sum post-op (the residual copied into the output first) and the activation its eltwise
// post-op. One pass over the activations instead of three or four. The folded, reordered weights are kept
// while no parameter or statistic was written (ForwardArgs::params_write_counted; an inference graph).
//
// Not bitwise the unfolded pair (the fold rounds the weights): graph_layout_test holds an inference graph
// with folds to the one without within f32 rounding. Evaluation mode only, no backward.
//
// bf16 (BatchNormFold::bf16, where oneDNN has bf16 instructions and bf16_pays_in_inference; the other layers
// stay f32): the folded weights are kept in bfloat16 and the input is rounded to it into the workspace,
// unless it arrives in bfloat16 (BatchNormFold::bf16_activations: a tensor between two such folds is
// written and read in bf16, as PyTorch's CPU autocast keeps it); accumulation, bias and post-ops are f32,
// and the output is f32 unless it stays bf16 for the layers that read it. A residual in bf16 is widened
// into an f32 output before the sum post-op adds to it (or copied into a bf16 one, the sum rounding once).
//
// Winograd (f32, where winograd_pays_in_inference and oneDNN has it: AVX-512): the convolution runs on
// oneDNN's blocked activations, the input reordered into the workspace, the output (and, for the residual
// add, the residual first) reordered back; ResNet-50's 3x3 layers ran 1.1-1.9x the direct ones so. Its
// rounding differs from the direct convolution's (the transforms), still within f32's: graph_layout_test
// holds both to the unfolded graph. FASTNN_CPU_WINOGRAD=0 keeps the direct convolutions.
//
// Where oneDNN has no Winograd (before AVX-512) and own_winograd_pays, the layer runs as fastnn's own
// F(4x4, 3x3) (winograd_f43.h) on the NHWC activations, with no reorders, its bias and tail applied
// as the outputs are carried back; its transformed weights (36 per 9 of the direct ones) are kept like
// the blocked ones, one copy for every batch size.
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "trainer/ops/batch_norm.h"
#include "trainer/ops/conv2d_dnnl.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/part_marks.h"
#include "trainer/ops/winograd_f43.h"

namespace fastnn::ops {
namespace {

using dnnl::memory;
using namespace dnnl_conv;

enum class Tail { kNone, kRelu, kRelu6, kAddRelu };

cpu::WinogradTail winograd_tail(Tail t) {
  switch (t) {
    case Tail::kNone: return cpu::WinogradTail::kNone;
    case Tail::kRelu: return cpu::WinogradTail::kRelu;
    case Tail::kRelu6: return cpu::WinogradTail::kRelu6;
    case Tail::kAddRelu: return cpu::WinogradTail::kAddRelu;
  }
  return cpu::WinogradTail::kNone;
}

std::optional<Tail> tail_of(std::string_view then_op) {
  if (then_op == "batch_norm") return Tail::kNone;
  if (then_op == "batch_norm+relu") return Tail::kRelu;
  if (then_op == "batch_norm+relu6") return Tail::kRelu6;
  if (then_op == "batch_norm+add+relu") return Tail::kAddRelu;
  return std::nullopt;
}

// One layer's folded weights and bias, and those weights in each format a primitive for the layer
// asked for: shared by its kernels at every batch size (inherit_derived). A server's batches change
// size, and oneDNN's Winograd picks its weights' format by the batch (F(2,3) or F(4,3) tiles and their
// blocking): transforming them again at each change cost ResNet-50 60-150 ms a batch.
struct FoldedWeights {
  std::vector<float> folded, bias;
  std::vector<std::pair<memory::desc, CachedWeights>> by_format;

  CachedWeights& in(const memory::desc& format) {
    for (auto& [md, cache] : by_format)
      if (md == format) return cache;
    return by_format.emplace_back(format, CachedWeights{}).second;
  }
};

class ConvBatchNormFold final : public OpKernel {
 public:
  ConvBatchNormFold(const BatchNormFold& f, const Conv2dParams& p, Tail tail, double epsilon)
      : OpKernel(str(f.conv_op, "+", f.then_op), Device::kCpu), p_(p), tail_(tail), epsilon_(epsilon) {
    const ConvDescs d = conv_descs(p, /*with_bias=*/true);
    const BatchNormFold::Bf16Activations in_bf16 = f.bf16_activations;
    FASTNN_CHECK(f.bf16 || !in_bf16.any(), name(), ": bfloat16 activations need a bfloat16 convolution");
    const memory::data_type compute = f.bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    const auto nhwc = [](const memory::desc& md, bool bf16) {
      return memory::desc(md.dims(), bf16 ? memory::data_type::bf16 : memory::data_type::f32, memory::format_tag::nhwc);
    };
    const memory::desc x_in(d.x.dims(), compute, memory::format_tag::nhwc);
    const memory::desc w_any(d.w_any.dims(), compute, memory::format_tag::any);
    x_md_ = nhwc(d.x, in_bf16.input);
    y_md_ = nhwc(d.y, in_bf16.output);
    residual_md_ = nhwc(d.y, in_bf16.residual);
    w_user_md_ = d.w_user;
    bias_md_ = d.bias;
    dnnl::post_ops ops;
    if (tail == Tail::kAddRelu) ops.append_sum(1.0f);
    if (tail == Tail::kRelu || tail == Tail::kAddRelu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    if (tail == Tail::kRelu6) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(ops);
    const bool winograd_pays = !f.bf16 && use_winograd_convolutions() && winograd_pays_in_inference(p, f.job_images);
    if (winograd_pays) pd_ = winograd_pd(d, attr);
    const bool winograd = pd_.has_value();
    if (!winograd && winograd_pays && own_winograd_pays(p)) {
      f43_.emplace(cpu::WinogradShape{.n = p.n, .h = p.h, .w = p.w, .c = p.c, .k = p.k, .p = p.win.p, .q = p.win.q,
                                      .pad_top = p.win.pad_top, .pad_left = p.win.pad_left});
      f43_weights_md_ = memory::desc({36, p.c, p.k}, memory::data_type::f32, memory::format_tag::abc);
    } else if (!winograd) {
      using namespace dnnl;
      const auto desc = convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, x_in, w_any,
                                                  d.bias, y_md_, d.strides, d.dilation, d.pad_l, d.pad_r);
      pd_ = convolution_forward::primitive_desc(desc, attr, dnnl_cpu_engine());
      FASTNN_CHECK(pd_->src_desc() == x_in && pd_->dst_desc() == y_md_, name(), ": oneDNN chose other activation layouts than NHWC");
    }
    if (pd_) to_blocked_ = reorder_between(w_user_md_, pd_->weights_desc());
    if (f.bf16 && !in_bf16.input) x_to_bf16_ = Bf16Rounding(d.x.dims(), memory::format_tag::nhwc);
    x_bf16_bytes_ = f.bf16 && !in_bf16.input ? x_to_bf16_.bytes() : 0;
    if (tail == Tail::kAddRelu && !winograd) residual_to_y_ = reorder_between(residual_md_, y_md_);
    if (winograd) {
      x_to_blocked_ = reorder_between(x_md_, pd_->src_desc());
      y_to_blocked_ = reorder_between(y_md_, pd_->dst_desc());
      y_from_blocked_ = reorder_between(pd_->dst_desc(), y_md_);
    }
    x_blocked_bytes_ = x_to_blocked_ ? dnnl_aligned(pd_->src_desc().get_size()) : 0;
    scratch_bytes_ = f43_ ? f43_->workspace_bytes() : dnnl_aligned(pd_->scratchpad_desc().get_size());
    y_blocked_bytes_ = y_from_blocked_ ? dnnl_aligned(pd_->dst_desc().get_size()) : 0;

    // The composite's signature (ops/fused.h) without its saved tensors.
    const OpSignature& sc = f.conv.signature();
    const OpSignature& sb = f.then.signature();
    sig_.inputs = sc.inputs;
    sig_.input_has_grad = sc.input_has_grad;
    for (size_t j = 1; j < sb.inputs.size(); ++j) {
      sig_.inputs.push_back(sb.inputs[j]);
      sig_.input_has_grad.push_back(j < sb.input_has_grad.size() && sb.input_has_grad[j]);
    }
    sig_.params = sc.params;
    sig_.params.insert(sig_.params.end(), sb.params.begin(), sb.params.end());
    sig_.state = sc.state;
    sig_.state.insert(sig_.state.end(), sb.state.begin(), sb.state.end());
    sig_.outputs = sb.outputs;
    if (in_bf16.input) sig_.inputs[0].dtype = DType::kBF16;
    if (in_bf16.residual) sig_.inputs.at(1).dtype = DType::kBF16;
    if (in_bf16.output) sig_.outputs[0].dtype = DType::kBF16;
    sig_.activation_layout = Layout::kNHWC;
    sig_.has_backward = false;
    sig_.workspace_bytes = x_bf16_bytes_ + x_blocked_bytes_ + y_blocked_bytes_ + scratch_bytes_;
    sig_.multiplies_in_bf16 = f.bf16;
    // The residual is read (copied or reordered into the output, or read tile by tile by the Winograd
    // tail at the place it writes) before that place is written, so the output may take its buffer.
    if (tail == Tail::kAddRelu && sig_.inputs[1].shape == sig_.outputs[0].shape && sig_.inputs[1].dtype == sig_.outputs[0].dtype)
      sig_.output_may_take_input = 1;
    FASTNN_CHECK(sig_.params.size() == (p.bias ? 4u : 3u) && sig_.state.size() == 2 &&
                     sig_.inputs.size() == (tail == Tail::kAddRelu ? 2u : 1u),
                 name(), ": unexpected parameters, statistics or inputs");
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    FASTNN_CHECK(!a.training, name(), ": a folded batch norm computes evaluation mode only");
    const PartMark part("conv2d fprop");
    std::vector<Tensor> sources(a.params.begin(), a.params.end());
    sources.insert(sources.end(), a.state.begin(), a.state.end());
    CachedWeights& cache = weights_->in(f43_ ? f43_weights_md_ : to_blocked_ ? pd_->weights_desc() : w_user_md_);
    if (!a.params_write_counted || !cache.current(sources)) fold(a, sources, cache);
    if (f43_) {
      f43_->forward(a.inputs[0].data<float>(), reinterpret_cast<const float*>(cache.data()), weights_->bias.data(),
                    tail_ == Tail::kAddRelu ? a.inputs[1].data<float>() : nullptr, winograd_tail(tail_),
                    a.outputs[0].data<float>(), bytes_of(a.workspace));
      return;
    }
    const memory w = to_blocked_ ? memory(pd_->weights_desc(), dnnl_cpu_engine(), cache.data())
                                 : memory(w_user_md_, dnnl_cpu_engine(), weights_->folded.data());
    // Workspace: [input in bf16 (bf16)][blocked input][blocked output (Winograd)][scratchpad]
    std::byte* ws = bytes_of(a.workspace);
    std::byte* x_blocked_at = ws + x_bf16_bytes_;
    std::byte* y_blocked_at = x_blocked_at + x_blocked_bytes_;
    const memory x_given = x_bf16_bytes_ > 0 ? x_to_bf16_(a.inputs[0], ws) : user_memory(x_md_, a.inputs[0]);
    const memory x = reordered(x_to_blocked_, x_given, pd_->src_desc(), x_blocked_at);
    const memory out = user_memory(y_md_, a.outputs[0]);
    const memory y = y_from_blocked_ ? memory(pd_->dst_desc(), dnnl_cpu_engine(), y_blocked_at) : out;
    // The sum post-op adds to what the output holds: the residual.
    if (tail_ == Tail::kAddRelu) {
      if (y_to_blocked_) {
        run_reorder(*y_to_blocked_, user_memory(y_md_, a.inputs[1]), y);
      } else if (residual_to_y_) {
        run_reorder(*residual_to_y_, user_memory(residual_md_, a.inputs[1]), y);
      } else if (a.outputs[0].raw() != a.inputs[1].raw()) {
        std::memcpy(a.outputs[0].raw(), a.inputs[1].raw(), a.outputs[0].nbytes());
      }
    }
    if (!conv_) conv_ = dnnl::convolution_forward(*pd_);
    dnnl_execute(*conv_, {{DNNL_ARG_SRC, x},
                          {DNNL_ARG_WEIGHTS, w},
                          {DNNL_ARG_BIAS, memory(bias_md_, dnnl_cpu_engine(), weights_->bias.data())},
                          {DNNL_ARG_DST, y},
                          {DNNL_ARG_SCRATCHPAD, memory(pd_->scratchpad_desc(), dnnl_cpu_engine(), y_blocked_at + y_blocked_bytes_)}});
    if (y_from_blocked_) run_reorder(*y_from_blocked_, y, out);
  }

 public:
  void inherit_derived(OpKernel& previous) override {
    auto* old = dynamic_cast<ConvBatchNormFold*>(&previous);
    if (old && old->w_user_md_ == w_user_md_) weights_ = old->weights_;
  }

 private:
  // The batch norm into the weights (folded, [K, C/G, R, S]) and bias, then the weights into the
  // primitive's format (`cache`).
  void fold(const ForwardArgs& a, std::span<const Tensor> sources, CachedWeights& cache) {
    const size_t b = p_.bias ? 1 : 0;
    const float* w = a.params[0].data<float>();
    const float* conv_bias = p_.bias ? a.params[1].data<float>() : nullptr;
    const float* gamma = a.params[b + 1].data<float>();
    const float* beta = a.params[b + 2].data<float>();
    // Read through const tensors: a writable pointer would count as a write to the statistics and
    // make every other format's copy stale.
    const float* mean = std::as_const(a.state[0]).data<float>();
    const float* var = std::as_const(a.state[1]).data<float>();
    const auto k_count = static_cast<size_t>(p_.k);
    const size_t per_k = static_cast<size_t>(a.params[0].numel()) / k_count;
    std::vector<float>& folded = weights_->folded;
    std::vector<float>& bias = weights_->bias;
    folded.resize(static_cast<size_t>(a.params[0].numel()));
    bias.resize(k_count);
    for (size_t k = 0; k < k_count; ++k) {
      const double s = gamma[k] / std::sqrt(static_cast<double>(var[k]) + epsilon_);
      const double b_k = conv_bias ? conv_bias[k] : 0.0;
      bias[k] = static_cast<float>(beta[k] + (b_k - mean[k]) * s);
      for (size_t i = 0; i < per_k; ++i) folded[k * per_k + i] = static_cast<float>(w[k * per_k + i] * s);
    }
    if (f43_) {
      const size_t floats = cpu::WinogradF43::weights_floats(p_.k, p_.c);
      auto* u = reinterpret_cast<float*>(cache.update(sources, floats * sizeof(float)));
      cpu::WinogradF43::transform_weights(folded.data(), p_.k, p_.c, u);
      return;
    }
    std::byte* at = cache.update(sources, to_blocked_ ? dnnl_aligned(pd_->weights_desc().get_size()) : 64);
    if (to_blocked_)
      run_reorder(*to_blocked_, memory(w_user_md_, dnnl_cpu_engine(), folded.data()), memory(pd_->weights_desc(), dnnl_cpu_engine(), at));
  }

  // oneDNN's Winograd convolution with these post-ops on the activation formats it picks; nullopt where
  // this oneDNN or CPU has none for the layer (before AVX-512).
  static std::optional<dnnl::convolution_forward::primitive_desc> winograd_pd(const ConvDescs& d, const dnnl::primitive_attr& attr) {
    using namespace dnnl;
    const memory::desc x_any(d.x.dims(), memory::data_type::f32, memory::format_tag::any);
    const memory::desc y_any(d.y.dims(), memory::data_type::f32, memory::format_tag::any);
    try {
      const auto desc = convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_winograd, x_any,
                                                  d.w_any, d.bias, y_any, d.strides, d.dilation, d.pad_l, d.pad_r);
      return convolution_forward::primitive_desc(desc, attr, dnnl_cpu_engine());
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  }

  Conv2dParams p_;
  Tail tail_;
  double epsilon_;
  memory::desc x_md_, y_md_, w_user_md_, bias_md_;
  memory::desc residual_md_;  // batch_norm+add+relu's other addend, NHWC (f32 or bf16)
  std::optional<dnnl::reorder> residual_to_y_;  // where it and the output differ in type
  std::optional<dnnl::convolution_forward::primitive_desc> pd_;
  std::optional<dnnl::primitive> conv_;  // made at the first forward
  std::optional<dnnl::reorder> to_blocked_;
  // Winograd only: the activations into and out of the formats its primitive picked.
  std::optional<dnnl::reorder> x_to_blocked_, y_to_blocked_, y_from_blocked_;
  size_t x_blocked_bytes_ = 0, y_blocked_bytes_ = 0;
  size_t scratch_bytes_ = 0;  // oneDNN's scratchpad or fastnn's Winograd's, at the workspace's end
  std::optional<cpu::WinogradF43> f43_;  // fastnn's own Winograd, instead of pd_
  memory::desc f43_weights_md_;          // its weights' format: only the key of their cache
  Bf16Rounding x_to_bf16_;  // bf16: the input, rounded into the workspace
  size_t x_bf16_bytes_ = 0;  // its bytes there; 0 in f32
  std::shared_ptr<FoldedWeights> weights_ = std::make_shared<FoldedWeights>();
};

}  // namespace

std::unique_ptr<OpKernel> make_batch_norm_fold(const BatchNormFold& f) {
  const std::optional<Tail> tail = tail_of(f.then_op);
  if (!tail || f.conv.signature().activation_layout != Layout::kNHWC) return nullptr;
  const std::optional<Conv2dParams> p = grouped_conv_params(f.conv_op, f.conv_attrs, f.conv_nchw_inputs);
  if (!p) return nullptr;
  if (f.bf16 && !dnnl_has_bf16()) throw ConfigError(str(f.conv_op, ": bfloat16 needs bf16 instructions, ", dnnl_description()));
  const ops::TensorSpec& bn_x = f.then.signature().inputs[0];
  const Shape nchw{bn_x.shape[0], bn_x.shape[3], bn_x.shape[1], bn_x.shape[2]};
  const TensorSpec bn_in[] = {TensorSpec{.name = "x", .shape = nchw, .dtype = bn_x.dtype}};
  const double epsilon = batch_norm_params(f.batch_norm_attrs, bn_in).epsilon;
  BatchNormFold fold = f;
  fold.bf16 = f.bf16 && bf16_pays_in_inference(*p);  // the others stay f32
  FASTNN_CHECK(fold.bf16 || !f.bf16_activations.any(), f.conv_op, ": bfloat16 activations asked of a layer that computes in f32");
  return std::make_unique<ConvBatchNormFold>(fold, *p, *tail, epsilon);
}

}  // namespace fastnn::ops
