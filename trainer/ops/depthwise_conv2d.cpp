// depthwise_conv2d's attributes and signature, the same on every device (its kernels:
// depthwise_conv2d_cpu.cpp, depthwise_conv2d_cuda.cu, the oneDNN ones in conv2d_nhwc_dnnl.cpp).
#include "trainer/ops/depthwise_conv2d.h"

#include "core/check.h"
#include "trainer/ops/op_spec_checks.h"
#include "trainer/ops/window2d.h"

namespace fastnn::ops {

DepthwiseConv2dParams depthwise_conv2d_params(const Attrs& a, std::span<const TensorSpec> inputs) {
  constexpr std::string_view op = "depthwise_conv2d";
  a.check_known(op, {"kernel", "stride", "dilation", "padding", "multiplier", "bias"});
  expect_inputs(op, inputs, 1);
  expect_rank(op, inputs, 0, {4});
  DepthwiseConv2dParams p;
  const Shape& s = inputs[0].shape;
  p.n = s[0], p.c = s[1], p.h = s[2], p.w = s[3];
  p.multiplier = a.get_int(op, "multiplier", 1);
  p.bias = a.get_bool(op, "bias", true);
  if (p.multiplier < 1 || p.multiplier > 1024)
    throw ConfigError(str(op, ": multiplier must be in [1, 1024], got ", p.multiplier));
  p.win = parse_window2d(op, a, p.h, p.w, /*with_dilation=*/true, /*stride_defaults_to_kernel=*/false);
  shape_numel({p.n, p.k(), p.win.p, p.win.q});  // bounds the output
  shape_numel({p.k(), p.win.r, p.win.s});
  return p;
}

OpSignature depthwise_conv2d_signature(const DepthwiseConv2dParams& p, DType dt) {
  OpSignature sig;
  sig.inputs = {TensorSpec{.name = "x", .shape = {p.n, p.c, p.h, p.w}, .dtype = dt}};
  sig.input_has_grad = {true};
  const int64_t rs = p.win.r * p.win.s;
  sig.params.push_back(TensorSpec{.name = "weight", .shape = {p.k(), 1, p.win.r, p.win.s}, .dtype = dt,
                                  .init = Init::kHeNormal, .fan_in = rs, .fan_out = p.multiplier * rs,
                                  .weight_decay = true});
  if (p.bias) sig.params.push_back(TensorSpec{.name = "bias", .shape = {p.k()}, .dtype = dt, .init = Init::kZeros});
  sig.outputs = {TensorSpec{.name = "y", .shape = {p.n, p.k(), p.win.p, p.win.q}, .dtype = dt}};
  return sig;
}

}  // namespace fastnn::ops
