// batch_norm's attributes and signature, the same on every device (its kernels: batch_norm_cpu.cpp,
// batch_norm_nhwc.cpp, batch_norm_cuda.cpp).
#include "trainer/ops/batch_norm.h"

#include "core/check.h"
#include "trainer/ops/op_spec_checks.h"

namespace fastnn::ops {

BatchNormParams batch_norm_params(const Attrs& a, std::span<const TensorSpec> inputs) {
  constexpr std::string_view op = "batch_norm";
  a.check_known(op, {"momentum", "epsilon"});
  expect_inputs(op, inputs, 1);
  expect_rank(op, inputs, 0, {2, 4});
  const Shape& s = inputs[0].shape;
  BatchNormParams p;
  p.n = s[0];
  p.c = s[1];
  p.hw = s.size() == 4 ? s[2] * s[3] : 1;
  p.momentum = a.get_float(op, "momentum", 0.9);
  p.epsilon = a.get_float(op, "epsilon", 1e-5);
  if (!(p.momentum >= 0 && p.momentum <= 1)) throw ConfigError(str(op, ": momentum must be in [0, 1]"));
  if (!(p.epsilon > 0)) throw ConfigError(str(op, ": epsilon must be > 0"));
  return p;
}

OpSignature batch_norm_signature(const BatchNormParams& p, const Shape& x_shape, DType dt) {
  OpSignature sig;
  sig.inputs = {TensorSpec{.name = "x", .shape = x_shape, .dtype = dt}};
  sig.input_has_grad = {true};
  auto vec = [&](const char* name, Init init) { return TensorSpec{.name = name, .shape = {p.c}, .dtype = dt, .init = init}; };
  sig.params = {vec("gamma", Init::kOnes), vec("beta", Init::kZeros)};
  sig.state = {vec("running_mean", Init::kZeros), vec("running_var", Init::kOnes)};
  sig.outputs = {TensorSpec{.name = "y", .shape = x_shape, .dtype = dt}};
  sig.saved = {vec("mean", Init::kNone), vec("invstd", Init::kNone)};
  return sig;
}

}  // namespace fastnn::ops
