// conv2d's attributes and signature, the same on every device (its kernels: conv2d_cpu.cpp, conv2d_cuda.cpp).
#include "trainer/ops/conv2d.h"

#include "core/check.h"
#include "trainer/ops/op_spec_checks.h"

namespace fastnn::ops {

bool Conv2dParams::is_pointwise() const {
  return win.r == 1 && win.s == 1 && win.stride_h == 1 && win.stride_w == 1 && win.pad_top == 0 &&
         win.pad_bottom == 0 && win.pad_left == 0 && win.pad_right == 0;
}

Conv2dParams conv2d_params(const Attrs& a, std::span<const TensorSpec> inputs) {
  constexpr std::string_view op = "conv2d";
  a.check_known(op, {"filters", "kernel", "stride", "dilation", "padding", "groups", "bias"});
  expect_inputs(op, inputs, 1);
  expect_rank(op, inputs, 0, {4});
  Conv2dParams p;
  const Shape& s = inputs[0].shape;
  p.n = s[0], p.c = s[1], p.h = s[2], p.w = s[3];
  p.k = a.get_int(op, "filters");
  p.groups = a.get_int(op, "groups", 1);
  p.bias = a.get_bool(op, "bias", true);
  if (p.k < 1 || p.k > (1 << 20)) throw ConfigError(str(op, ": filters must be in [1, 2^20], got ", p.k));
  if (p.groups < 1 || p.c % p.groups != 0 || p.k % p.groups != 0)
    throw ConfigError(str(op, ": groups ", p.groups, " must divide channels ", p.c, " and filters ", p.k));
  p.win = parse_window2d(op, a, p.h, p.w, /*with_dilation=*/true, /*stride_defaults_to_kernel=*/false);
  shape_numel({p.k, p.c / p.groups, p.win.r, p.win.s});
  shape_numel({p.c, p.win.r, p.win.s, p.win.p, p.win.q});  // bounds the column buffer
  return p;
}

OpSignature conv2d_signature(const Conv2dParams& p, DType dt) {
  OpSignature sig;
  sig.inputs = {TensorSpec{.name = "x", .shape = {p.n, p.c, p.h, p.w}, .dtype = dt}};
  sig.input_has_grad = {true};
  const int64_t cg = p.c / p.groups, kg = p.k / p.groups, rs = p.win.r * p.win.s;
  sig.params.push_back(TensorSpec{.name = "weight", .shape = {p.k, cg, p.win.r, p.win.s}, .dtype = dt,
                                  .init = Init::kHeNormal, .fan_in = cg * rs, .fan_out = kg * rs,
                                  .weight_decay = true});
  if (p.bias) sig.params.push_back(TensorSpec{.name = "bias", .shape = {p.k}, .dtype = dt, .init = Init::kZeros});
  sig.outputs = {TensorSpec{.name = "y", .shape = {p.n, p.k, p.win.p, p.win.q}, .dtype = dt}};
  return sig;
}

}  // namespace fastnn::ops
