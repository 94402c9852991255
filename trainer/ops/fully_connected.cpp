// fully_connected's attributes and signature, the same on every device (its kernels: fully_connected_cpu.cpp, fully_connected_cuda.cpp).
#include "trainer/ops/fully_connected.h"

#include "core/check.h"
#include "trainer/ops/op_spec_checks.h"

namespace fastnn::ops {

FullyConnectedParams fully_connected_params(const Attrs& a, std::span<const TensorSpec> inputs) {
  constexpr std::string_view op = "fully_connected";
  a.check_known(op, {"units", "bias"});
  expect_inputs(op, inputs, 1);
  expect_rank(op, inputs, 0, {2, 3, 4, 5});
  FullyConnectedParams p;
  p.n = inputs[0].shape[0];
  p.d = shape_numel(inputs[0].shape) / p.n;
  p.units = a.get_int(op, "units");
  p.bias = a.get_bool(op, "bias", true);
  if (p.units < 1 || p.units > (int64_t{1} << 24)) throw ConfigError(str(op, ": units must be in [1, 2^24]"));
  shape_numel({p.units, p.d});
  return p;
}

OpSignature fully_connected_signature(const FullyConnectedParams& p, const Shape& x_shape, DType dt) {
  OpSignature sig;
  sig.inputs = {TensorSpec{.name = "x", .shape = x_shape, .dtype = dt}};
  sig.input_has_grad = {true};
  sig.params.push_back(TensorSpec{.name = "weight", .shape = {p.units, p.d}, .dtype = dt,
                                  .init = Init::kGlorotUniform, .fan_in = p.d, .fan_out = p.units,
                                  .weight_decay = true});
  if (p.bias) sig.params.push_back(TensorSpec{.name = "bias", .shape = {p.units}, .dtype = dt, .init = Init::kZeros});
  sig.outputs = {TensorSpec{.name = "y", .shape = {p.n, p.units}, .dtype = dt}};
  return sig;
}

}  // namespace fastnn::ops
