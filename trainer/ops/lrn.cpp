// lrn's attributes, the same on every device (its kernels: lrn_cpu.cpp, lrn_cuda.cpp).
#include "trainer/ops/lrn.h"

#include <cmath>

#include "core/check.h"
#include "trainer/ops/op_spec_checks.h"

namespace fastnn::ops {

LrnParams lrn_params(const Attrs& a, std::span<const TensorSpec> in) {
  constexpr std::string_view op = "lrn";
  a.check_known(op, {"depth_radius", "bias", "alpha", "beta"});
  expect_inputs(op, in, 1);
  expect_rank(op, in, 0, {4});
  LrnParams p;
  p.n = in[0].shape[0];
  p.c = in[0].shape[1];
  p.hw = in[0].shape[2] * in[0].shape[3];
  p.depth_radius = a.get_int(op, "depth_radius", 5);
  p.bias = a.get_float(op, "bias", 1.0);
  p.alpha = a.get_float(op, "alpha", 1.0);
  p.beta = a.get_float(op, "beta", 0.5);
  if (p.depth_radius < 0 || p.depth_radius > (1 << 16))
    throw ConfigError(str(op, ": depth_radius must be in [0, 65536], got ", p.depth_radius));
  if (!(p.bias > 0) || !(p.alpha >= 0) || !std::isfinite(p.bias) || !std::isfinite(p.alpha) || !std::isfinite(p.beta))
    throw ConfigError(str(op, ": needs bias > 0, alpha >= 0 and a finite beta; got bias ", p.bias, ", alpha ", p.alpha,
                          ", beta ", p.beta));
  return p;
}

}  // namespace fastnn::ops
