#include "trainer/ops/conv2d_dnnl.h"

#include "trainer/ops/blas_core.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/depthwise_conv2d.h"
#include "trainer/ops/op_spec_checks.h"

namespace fastnn::ops::dnnl_conv {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

std::optional<Conv2dParams> grouped_conv_params(std::string_view op, const Attrs& attrs, std::span<const TensorSpec> nchw_inputs) {
  if (!use_dnnl_kernels() || compute_dtype(op, nchw_inputs) != DType::kF32) return std::nullopt;
  if (op == "conv2d") return conv2d_params(attrs, nchw_inputs);
  const DepthwiseConv2dParams d = depthwise_conv2d_params(attrs, nchw_inputs);
  Conv2dParams p;
  p.n = d.n;
  p.c = d.c;
  p.h = d.h;
  p.w = d.w;
  p.k = d.c * d.multiplier;
  p.groups = d.c;
  p.bias = d.bias;
  p.win = d.win;
  return p;
}

ConvDescs conv_descs(const Conv2dParams& p, bool with_bias) {
  const Window2d& g = p.win;
  ConvDescs d;
  d.x = memory::desc({p.n, p.c, p.h, p.w}, kF32, Tag::nhwc);
  d.y = memory::desc({p.n, p.k, g.p, g.q}, kF32, Tag::nhwc);
  const bool grouped = p.groups > 1;
  const memory::dims w_dims = grouped ? memory::dims{p.groups, p.k / p.groups, p.c / p.groups, g.r, g.s}
                                      : memory::dims{p.k, p.c, g.r, g.s};
  d.w_user = memory::desc(w_dims, kF32, grouped ? Tag::goihw : Tag::oihw);
  d.w_any = memory::desc(w_dims, kF32, Tag::any);
  if (with_bias) d.bias = memory::desc({p.k}, kF32, Tag::x);
  d.strides = {g.stride_h, g.stride_w};
  d.dilation = {g.dil_h - 1, g.dil_w - 1};
  d.pad_l = {g.pad_top, g.pad_left};
  d.pad_r = {g.pad_bottom, g.pad_right};
  return d;
}

// Measured on oneDNN 2.6.3, AVX-512 (zen5, 2 threads), forward_inference with bias and relu, Winograd with
// the NHWC <-> blocked reorders against direct (brgconv) on NHWC, for C = K:
// - ResNet-50's 3x3 layers (C 64..512 at 56..7 pixels): 1.1-1.7x at batch 1, 1.3-1.9x at 4, 8 and 32;
// - C = 32 at 7x7 and C = 64 at 7x7 below batch 32 (under 25 M multiply-adds): 0.25-0.6x;
// - 6x6 outputs (4x4 tiles 56% filled), C = 192: 0.8-0.97x; C = 96 at 12x12, batch 1 (12 M): 0.69x.
// Over a job of few images the one-off transform of the weights into Winograd's format costs more than
// the faster convolution saves. The transform grows with C*K, the saving per image with P*Q*C*K, so a
// layer repays it once the job's output pixels (images * P * Q) pass a threshold. `fastnn predict` of
// ResNet-50 at 224, batch 32 (zen5, 2 threads), over 1, 8, 32, 96, 160, 320 images, twice, thresholds
// 1 (always) to infinity (never): 6,000 was within noise of the faster extreme at every count (1 image
// 0.28 s against 0.37 always; 320 images 5.32-5.44 s against 5.91-5.94 never), 23,000 and 90,000 gave
// up to 0.4 s of the saving at 320.
constexpr double kWinogradJobPixels = 6000;

namespace {
int64_t tiles_of_4(int64_t n) { return (n + 3) / 4; }
}  // namespace

bool winograd_pays_in_inference(const Conv2dParams& p, int64_t job_images) {
  const Window2d& g = p.win;
  if (g.r != 3 || g.s != 3 || g.stride_h != 1 || g.stride_w != 1 || g.dil_h != 1 || g.dil_w != 1 || p.groups != 1) return false;
  if (p.c < 32 || p.k < 32) return false;
  const double filled = static_cast<double>(g.p) * g.q / static_cast<double>(tiles_of_4(g.p) * 4 * tiles_of_4(g.q) * 4);
  const double macs = static_cast<double>(p.n) * g.p * g.q * p.c * p.k * 9.0;
  const bool repaid = job_images == 0 || static_cast<double>(job_images) * g.p * g.q >= kWinogradJobPixels;
  return filled >= 0.7 && macs >= 25e6 && repaid;
}

// Measured the same way for the three training passes (forward, backward-data, backward-weights, the four
// activation reorders included) against the direct ones: ResNet-50's at batch 8: C = 64 at 56 pixels
// 1.55x, 128 at 28 1.77x, 256 at 14 1.39x, 512 at 7 (32 tiles) 0.90x; ResNet-20's at batch 64: C = 32 at
// 16 1.09x, 64 at 8 1.38x, 16 at 32 0.59x; C = 96 at 12, batch 16: 1.23x; 6x6 outputs 0.79x.
bool winograd_pays_in_training(const Conv2dParams& p) {
  const int64_t tiles = p.n * tiles_of_4(p.win.p) * tiles_of_4(p.win.q);
  return winograd_pays_in_inference(p) && tiles >= 128;
}

// fastnn's F(4x4, 3x3) (winograd_f43.cpp) against oneDNN's direct convolution, both on NHWC with bias
// and relu, AVX2 (zen3, 2 threads), C = K, for ResNet-50's 3x3 layers: 1.7-2.3x at batch 1 (C = 64 at 56
// pixels 1.7x, 128 at 28 2.3x, 256 at 14 1.8x), 2.0-3.3x at batch 8 and 2.3-2.9x at 32; but C = 512 at 7x7
// only 1.00x at batch 1 (4 tiles: its weights, 4x the direct ones', are read for few outputs), 1.22x at 2
// (8 tiles), 1.74x at 4.
bool own_winograd_pays(const Conv2dParams& p) {
  const int64_t tiles = p.n * tiles_of_4(p.win.p) * tiles_of_4(p.win.q);
  return cpu::this_cpu_features().avx2_fma && tiles >= 8;
}

// Measured with oneDNN 2.6.3 on AMX (xeon-amx, 2 threads), `predict --batch_size 1`, each folded
// convolution in bf16 (the input rounding included) against f32, medians of 32 images (DNNL_VERBOSE):
// ResNet-50's layers, 64 to 784 multiply-adds per input element ((K / groups) * R * S / strides), gained
// 0.02-0.57 ms each; MobileNet v2's 1x1 layers with K of 64 to 1280 gained 0.002-0.075 ms, those with K
// of 16 to 32 -0.014 to +0.004 ms, and its depthwise layers (9 per input element) lost 0.01-0.22 ms each:
// there the rounding pass costs as much as the faster products save (the whole net ran 0.92x f32).
bool bf16_pays_in_inference(const Conv2dParams& p) {
  const Window2d& g = p.win;
  const double per_input_element = static_cast<double>(p.k / p.groups) * static_cast<double>(g.r * g.s) /
                                   static_cast<double>(g.stride_h * g.stride_w);
  return per_input_element >= 64;
}

std::optional<dnnl::reorder> reorder_between(const memory::desc& from, const memory::desc& to) {
  if (from == to) return std::nullopt;
  const dnnl::engine& eng = dnnl_cpu_engine();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to, attr));
}

// The scratchpad is the caller's, for this run only: oneDNN's own would stay allocated as long as the
// reorder lives, and its Winograd weight transform (an inference fold's, once per weight format) needs
// tens of MB: ResNet-50's kept plans held 110-160 MB each so.
void run_reorder(const dnnl::reorder& r, const memory& from, const memory& to) {
  const dnnl_memory_desc_t* scratch_c = dnnl_primitive_desc_query_md(r.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  const memory::desc scratch_md = scratch_c ? memory::desc(*scratch_c) : memory::desc();
  if (scratch_md.get_size() == 0) {
    dnnl_execute(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
    return;
  }
  const std::shared_ptr<Storage> scratch = allocate_cpu_storage(scratch_md.get_size());
  dnnl_execute(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to},
                   {DNNL_ARG_SCRATCHPAD, memory(scratch_md, dnnl_cpu_engine(), scratch->data())}});
}

memory reordered(const std::optional<dnnl::reorder>& r, const memory& m, const memory::desc& md, std::byte* at) {
  if (!r) return m;
  memory to(md, dnnl_cpu_engine(), at);
  run_reorder(*r, m, to);
  return to;
}

Bf16Rounding::Bf16Rounding(const memory::dims& dims, Tag tag)
    : f32_md_(dims, kF32, tag), bf16_md_(dims, memory::data_type::bf16, tag) {
  reorder_ = reorder_between(f32_md_, bf16_md_);
}

memory Bf16Rounding::operator()(const Tensor& t, std::byte* at) const {
  memory out(bf16_md_, dnnl_cpu_engine(), at);
  run_reorder(*reorder_, user_memory(f32_md_, t), out);
  return out;
}

memory Bf16Rounding::rounded_at(std::byte* at) const { return memory(bf16_md_, dnnl_cpu_engine(), at); }

void save_input_in_bf16(OpSignature& nhwc_sig) {
  nhwc_sig.saved.push_back(TensorSpec{.name = "x_bf16", .shape = nhwc_sig.inputs[0].shape, .dtype = DType::kBF16});
}

bool CachedWeights::current(std::span<const Tensor> sources) const {
  if (!buffer_ || sources.size() != of_.size()) return false;
  for (size_t i = 0; i < sources.size(); ++i)
    if (sources[i].storage() != of_[i].first || sources[i].storage()->write_count() != of_[i].second) return false;
  return true;
}

std::byte* CachedWeights::update(std::span<const Tensor> sources, size_t bytes) {
  if (!buffer_ || buffer_->bytes() < bytes) buffer_ = allocate_cpu_storage(bytes);
  of_.clear();
  for (const Tensor& t : sources) of_.emplace_back(t.storage(), t.storage()->write_count());
  return static_cast<std::byte*>(buffer_->data());
}

}  // namespace fastnn::ops::dnnl_conv
