// The margin softmax's logit transform (ArcFace, CosFace, PLSC v2's combined margin), in double.
//
// A normalised head computes x = cos θ between an L2-normalised feature and an L2-normalised class
// row. Non-target classes get the logit s·x; the target class gets s·ψ(x) with
//
//   ψ(x) = cos(m1·θ + m2) − m3,   θ = acos(clamp(x, −1, 1)) ∈ [0, π]
//
// arcface: (m1, m2, m3) = (1, margin, 0); cosface: (1, 0, margin); softmax: no normalisation, the raw
// FC logit unchanged (scale 1, no margin). The head then runs an ordinary softmax cross-entropy on those
// logits and chains its gradient through dlogit_dcos.
//
// Guards (the conventions InsightFace and PLSC users learned; docs/LARGE_SCALE.md derives them):
// - Clamp: x is clamped to [−1, 1] before acos (rounding makes |x| exceed 1 by an ulp). The derivative
//   is taken at the clamped point and passed straight through (a clamp's zero slope would silently drop
//   the gradient of a row whose norm rounded up).
// - Threshold: cos(m1·θ + m2) stops decreasing once m1·θ + m2 passes π, i.e. for θ > θ_t = (π − m2)/m1,
//   x ≤ x_t = cos θ_t. There the target logit falls back to the CosFace-like  x − mm − m3,  with
//   e = π − θ_t (the extra angle the margin adds at θ_t) and mm = max(e·sin e, 1 − cos e).
//   For ArcFace e = m and mm = m·sin m: InsightFace's `th = cos(π − m)`, `mm = sin(π − m)·m`, exactly.
//   e·sin e is the first-order cosine cost of the extra angle at θ_t (cos(θ+e) ≈ cos θ − e·sin θ, and
//   sin θ_t = sin e); the max with 1 − cos e (which wins only for e > ~2.33, i.e. m1 ≳ 4) keeps the
//   fallback at or below the margin branch's value −1 − m3 at x_t, so ψ never increases as θ grows.
//   Like InsightFace's, ψ jumps down at x_t (by mm − (1 − cos e) ≥ 0); margin branch iff x > x_t.
// - easy_margin: the margin (all of m1, m2, m3) applies only where x > 0; elsewhere ψ(x) = x. As in
//   InsightFace, ψ then jumps down at x = 0+ (to cos(m1·π/2 + m2) − m3): the one place it decreases.
// - Finite derivative: dψ/dx = m1·sin(m1·θ + m2) / sin θ is infinite at x = 1 when m2 > 0 (and 0/0
//   when m2 = 0). For θ < kMinDerivativeAngle the derivative is frozen at its value at that angle:
//   finite, continuous in x, exact everywhere else (it differs only for x > cos(1e-3) ≈ 1 − 5e-7, where
//   the true slope grows like 1/√(1 − x)). With m1 = 1, m2 = 0 (cosface, margin-free normalised
//   softmax) ψ is linear and dψ/dx = 1 everywhere, including x = −1.
// - NaN in gives NaN out (the head's overflow check must see it); ±∞ clamp to ±1.
// Everything here is a pure function: thread-safe, no allocation.
#pragma once

#include <cmath>
#include <optional>
#include <string_view>

#include "core/host_device.h"
#include "core/host_device_math.h"

namespace fastnn::head {

// normalized == false: plain softmax on raw FC logits (scale 1, m1 = 1, m2 = m3 = 0, no easy_margin).
struct MarginSpec {
  bool normalized = false;
  double scale = 1.0;
  double m1 = 1.0, m2 = 0.0, m3 = 0.0;
  bool easy_margin = false;
};

// Below this angle (radians) the target's derivative is frozen at its value here (see above).
inline constexpr double kMinDerivativeAngle = 1e-3;

// Validated bounds (ConfigError outside): scale finite > 0; m1 in [1, 10] (SphereFace used 4);
// m2 in [0, π/2] (ArcFace recipes use 0.2–0.5); m3 in [0, 1] (CosFace recipes use 0.2–0.4).
inline constexpr double kMaxMargin1 = 10.0;
inline constexpr double kMaxMargin3 = 1.0;

// loss_type: softmax, arcface, cosface, or their model-parallel names dist_softmax, dist_arcface,
// dist_cosface (same spec: the split over ranks is the head's business, not the formula's).
// - arcface: (1, margin, 0); cosface: (1, 0, margin); `scale` is s.
// - If any of m1, m2, m3 is given (PLSC v2's --margin1/2/3), the loss is the combined margin
//   (m1 or 1, m2 or 0, m3 or 0) and `margin` is ignored — a user giving one of the three means the
//   triple, as in PLSC v2 and InsightFace's margin_list; arcface and cosface then only say "normalised".
// - softmax: `margin` and `scale` are ignored (their flags have defaults); m1/m2/m3 or easy_margin
//   given with softmax are a ConfigError (they would silently do nothing).
// Throws ConfigError naming the flag (--loss_type, --scale, --margin, --margin1/2/3, --easy_margin).
MarginSpec margin_spec(std::string_view loss_type, double margin, double scale, std::optional<double> m1,
                       std::optional<double> m2, std::optional<double> m3, bool easy_margin);

// True for the model-parallel names (dist_*).
bool is_model_parallel_loss(std::string_view loss_type);

struct MarginValue {
  double logit;        // s·ψ(x) for the target, s·x for the others (raw x when !normalized)
  double dlogit_dcos;  // d logit / d x (straight through the clamp), always finite for finite x
};

// The functions below are FASTNN_HD (core/host_device.h): the CPU head and a CUDA head kernel compute the
// same formulas (the double-precision libm functions may differ by an ulp between glibc and CUDA).
namespace margin_math {
using hd::acos;
using hd::cos;
using hd::sin;
using hd::sqrt;
FASTNN_HD inline double clamp_unit(double x) { return x < -1.0 ? -1.0 : (x > 1.0 ? 1.0 : x); }
inline constexpr double kPi = 3.14159265358979323846;
FASTNN_HD inline bool linear(const MarginSpec& s) { return s.m1 == 1.0 && s.m2 == 0.0; }
// The extra angle e = π − θ_t at the threshold and the fallback's cosine cost mm (see above).
FASTNN_HD inline double fallback_cost(const MarginSpec& s) {
  const double e = kPi - (kPi - s.m2) / s.m1;
  const double a = e * sin(e), b = 1.0 - cos(e);
  return a > b ? a : b;
}
}  // namespace margin_math

// x_t: the target takes the margin branch iff x > x_t (and, with easy_margin, x > 0). −1 for a linear ψ.
FASTNN_HD inline double margin_threshold(const MarginSpec& spec) {
  return margin_math::linear(spec) ? -1.0 : margin_math::cos((margin_math::kPi - spec.m2) / spec.m1);
}

// Any other class: s·clamp(x) (raw x when !normalized), derivative s (1 when !normalized).
FASTNN_HD inline MarginValue non_target_logit(double cos_theta, const MarginSpec& spec) {
  if (!spec.normalized) return {cos_theta, 1.0};
  return {spec.scale * margin_math::clamp_unit(cos_theta), spec.scale};
}

// The target class's logit and its derivative with respect to x = cos θ.
FASTNN_HD inline MarginValue target_logit(double cos_theta, const MarginSpec& spec) {
  using namespace margin_math;
  if (!spec.normalized) return {cos_theta, 1.0};
  if (cos_theta != cos_theta) return {cos_theta, cos_theta};  // NaN in, NaN out
  const double s = spec.scale;
  const double x = clamp_unit(cos_theta);
  if (spec.easy_margin && !(x > 0)) return {s * x, s};
  if (linear(spec)) return {s * (x - spec.m3), s};
  if (!(x > margin_threshold(spec))) return {s * (x - fallback_cost(spec) - spec.m3), s};
  // sin θ from (1 − x)(1 + x): accurate near x = ±1, where 1 − x² cancels.
  const double theta = acos(x);
  const double value = cos(spec.m1 * theta + spec.m2) - spec.m3;
  const double td = theta > kMinDerivativeAngle ? theta : kMinDerivativeAngle;
  const double sin_td = td == theta ? sqrt((1.0 - x) * (1.0 + x)) : sin(td);
  return {s * value, s * spec.m1 * sin(spec.m1 * td + spec.m2) / sin_td};
}

}  // namespace fastnn::head
