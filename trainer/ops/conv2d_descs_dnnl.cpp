#include "trainer/ops/conv2d_dnnl.h"

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

std::optional<dnnl::reorder> reorder_between(const memory::desc& from, const memory::desc& to) {
  if (from == to) return std::nullopt;
  const dnnl::engine& eng = dnnl_cpu_engine();
  return dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to));
}

void run_reorder(const dnnl::reorder& r, const memory& from, const memory& to) {
  dnnl_execute(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
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
