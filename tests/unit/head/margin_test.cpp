// The margin softmax's target-logit transform (trainer/head/margin.h): published formulas evaluated by
// hand, central finite differences of dlogit_dcos over the whole range (threshold branch, near and at
// ±1), finiteness and monotonicity everywhere, and margin_spec's validation.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/head/margin.h"

namespace fastnn::head {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr std::optional<double> kNone = std::nullopt;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

MarginSpec arcface(double m = 0.5, double s = 64, bool easy = false) {
  return margin_spec("arcface", m, s, kNone, kNone, kNone, easy);
}
MarginSpec cosface(double m = 0.4, double s = 64) { return margin_spec("cosface", m, s, kNone, kNone, kNone, false); }
MarginSpec combined(double m1, double m2, double m3, double s = 64, bool easy = false) {
  return margin_spec("arcface", 0.5, s, m1, m2, m3, easy);
}

// The specs every sweep runs over: the defaults, the bounds, and recipes from the literature.
std::vector<MarginSpec> all_specs() {
  return {arcface(),           arcface(0.2, 30),        arcface(0.5, 64, true),   arcface(kPi / 2, 8),
          arcface(0.0, 16),    cosface(),               cosface(1.0, 10),         combined(1.35, 0, 0),
          combined(1, 0.3, 0.2), combined(1.2, 0.3, 0.1, 32, true), combined(10, 0, 0),
          combined(10, kPi / 2, 1), combined(1, 1e-3, 0),   combined(4, 0.1, 0.05)};
}

std::string describe(const MarginSpec& s) {
  return str("s=", s.scale, " m1=", s.m1, " m2=", s.m2, " m3=", s.m3, " easy=", s.easy_margin);
}

// ---- known values -------------------------------------------------------------------------------

TEST(Margin, ArcFaceAtSixtyDegreesMatchesTheAngleAdditionFormula) {
  const auto spec = arcface(0.5, 64);
  const double x = 0.5, sin_t = std::sqrt(3.0) / 2;  // θ = π/3
  const auto v = target_logit(x, spec);
  // cos(θ + m) = cos θ cos m − sin θ sin m; d/dx cos(acos x + m) = sin(θ + m) / sin θ.
  EXPECT_NEAR(v.logit, 64 * (x * std::cos(0.5) - sin_t * std::sin(0.5)), 1e-12);
  EXPECT_NEAR(v.logit, 64 * 0.0235965853, 1e-8);  // cos(1.5471976) = sin(0.0235988) by hand
  EXPECT_NEAR(v.dlogit_dcos, 64 * (sin_t * std::cos(0.5) + x * std::sin(0.5)) / sin_t, 1e-11);
  const auto n = non_target_logit(x, spec);
  EXPECT_DOUBLE_EQ(n.logit, 32.0);
  EXPECT_DOUBLE_EQ(n.dlogit_dcos, 64.0);
}

TEST(Margin, ArcFaceThresholdFallbackIsInsightFacesThAndMm) {
  const double m = 0.5;
  const auto spec = arcface(m, 64);
  const double th = std::cos(kPi - m), mm = std::sin(kPi - m) * m;  // InsightFace's constants
  EXPECT_NEAR(margin_threshold(spec), th, 1e-15);
  for (double x : {-1.0, -0.95, -0.9, th - 1e-9, th}) {
    const auto v = target_logit(x, spec);
    EXPECT_NEAR(v.logit, 64 * (x - mm), 1e-12) << x;
    EXPECT_EQ(v.dlogit_dcos, 64.0) << x;
  }
  // Just above th: the margin branch, near cos(π) = −1; the fallback is lower (InsightFace's jump).
  const auto above = target_logit(th + 1e-12, spec);
  EXPECT_NEAR(above.logit, -64.0, 1e-3);
  EXPECT_LT(target_logit(th, spec).logit, above.logit);
}

TEST(Margin, CosFaceSubtractsTheMarginAndIsLinear) {
  const auto spec = cosface(0.35, 30);
  for (double x : {-1.0, -0.3, 0.0, 0.7, 1.0}) {
    const auto v = target_logit(x, spec);
    EXPECT_NEAR(v.logit, 30 * (x - 0.35), 1e-13);
    EXPECT_EQ(v.dlogit_dcos, 30.0);
  }
  EXPECT_EQ(margin_threshold(spec), -1.0);
}

TEST(Margin, CombinedMarginEvaluatesCosOfM1ThetaPlusM2MinusM3) {
  const auto spec = combined(1.35, 0.2, 0.1, 64);
  const double theta = 1.0, x = std::cos(theta);
  const auto v = target_logit(x, spec);
  EXPECT_NEAR(v.logit, 64 * (std::cos(1.55) - 0.1), 1e-11);
  EXPECT_NEAR(v.dlogit_dcos, 64 * 1.35 * std::sin(1.55) / std::sin(1.0), 1e-10);
  // Threshold θ_t = (π − 0.2)/1.35; fallback x − e·sin e − m3 with e = π − θ_t.
  const double theta_t = (kPi - 0.2) / 1.35, e = kPi - theta_t;
  EXPECT_NEAR(margin_threshold(spec), std::cos(theta_t), 1e-15);
  const double xf = std::cos(theta_t + 0.1);
  EXPECT_NEAR(target_logit(xf, spec).logit, 64 * (xf - e * std::sin(e) - 0.1), 1e-11);
}

TEST(Margin, LargeMultiplicativeMarginFallbackIsContinuousNotRising) {
  // m1 = 10: e = 0.9π, e·sin e < 1 − cos e, so mm = 1 − cos e and the fallback meets −1 − m3 at x_t.
  const auto spec = combined(10, 0, 0.2, 1);
  const double xt = margin_threshold(spec);
  EXPECT_NEAR(xt, std::cos(kPi / 10), 1e-15);
  EXPECT_NEAR(target_logit(xt, spec).logit, -1.2, 1e-12);
  EXPECT_NEAR(target_logit(std::nextafter(xt, 2.0), spec).logit, -1.2, 1e-6);
}

TEST(Margin, EasyMarginAppliesTheMarginOnlyForPositiveCosine) {
  const auto spec = arcface(0.5, 64, true);
  for (double x : {-1.0, -0.9, -0.2, 0.0}) {
    const auto v = target_logit(x, spec);
    EXPECT_EQ(v.logit, 64 * x) << x;
    EXPECT_EQ(v.dlogit_dcos, 64.0) << x;
  }
  EXPECT_NEAR(target_logit(0.5, spec).logit, target_logit(0.5, arcface(0.5, 64)).logit, 1e-15);
  // Combined with easy_margin: m3 too only where x > 0.
  const auto c = combined(1, 0.3, 0.2, 10, true);
  EXPECT_EQ(target_logit(-0.5, c).logit, -5.0);
  EXPECT_NEAR(target_logit(0.5, c).logit, 10 * (std::cos(kPi / 3 + 0.3) - 0.2), 1e-12);
}

TEST(Margin, SoftmaxPassesRawLogitsUnclampedWithUnitScale) {
  const auto spec = margin_spec("softmax", 0.5, 64, kNone, kNone, kNone, false);
  EXPECT_FALSE(spec.normalized);
  for (double z : {-17.5, -1.0, 0.25, 3.0, 1e6}) {
    EXPECT_EQ(target_logit(z, spec).logit, z);
    EXPECT_EQ(target_logit(z, spec).dlogit_dcos, 1.0);
    EXPECT_EQ(non_target_logit(z, spec).logit, z);
    EXPECT_EQ(non_target_logit(z, spec).dlogit_dcos, 1.0);
  }
}

TEST(Margin, ZeroMarginArcFaceIsScaledCosine) {
  const auto spec = arcface(0.0, 16);
  for (double x : {-1.0, -0.5, 0.0, 0.5, 1.0}) {
    EXPECT_NEAR(target_logit(x, spec).logit, 16 * x, 1e-14);
    EXPECT_EQ(target_logit(x, spec).dlogit_dcos, 16.0);
  }
}

TEST(Margin, InputIsClampedToMinusOneOneWithStraightThroughDerivative) {
  const auto spec = arcface();
  const auto at1 = target_logit(1.0, spec);
  for (double x : {1.0 + 1e-15, 1.5, kInf}) {
    EXPECT_EQ(target_logit(x, spec).logit, at1.logit) << x;
    EXPECT_EQ(target_logit(x, spec).dlogit_dcos, at1.dlogit_dcos) << x;
    EXPECT_EQ(non_target_logit(x, spec).logit, 64.0) << x;
  }
  EXPECT_EQ(target_logit(-1.0 - 1e-15, spec).logit, target_logit(-1.0, spec).logit);
  EXPECT_NEAR(at1.logit, 64 * std::cos(0.5), 1e-12);
  EXPECT_TRUE(std::isnan(target_logit(kNaN, spec).logit));
  EXPECT_TRUE(std::isnan(target_logit(kNaN, spec).dlogit_dcos));
}

// ---- derivatives --------------------------------------------------------------------------------

// Central difference with step h, where the function is smooth on [x − h, x + h].
double central(const MarginSpec& spec, double x, double h) {
  return (target_logit(x + h, spec).logit - target_logit(x - h, spec).logit) / (2 * h);
}

TEST(Margin, DerivativeMatchesCentralDifferencesOverTheWholeRange) {
  const double freeze = std::cos(kMinDerivativeAngle);
  for (const auto& spec : all_specs()) {
    const double xt = margin_threshold(spec);
    int checked = 0, fallback = 0;
    for (int i = -999; i <= 999; ++i) {
      const double x = i / 1000.0 + 1.234567e-5;  // off the grid's round numbers
      const double h = 1e-7;
      if (x - h <= -1 || x + h >= freeze) continue;
      if (std::abs(x - xt) <= 2 * h) continue;                       // the documented jump
      if (spec.easy_margin && std::abs(x) <= 2 * h) continue;        // easy_margin's kink at 0
      const double analytic = target_logit(x, spec).dlogit_dcos;
      EXPECT_NEAR(analytic, central(spec, x, h), 1e-6 * std::max(1.0, std::abs(analytic)))
          << describe(spec) << " x=" << x;
      ++checked;
      if (x < xt && !(spec.easy_margin && x <= 0)) ++fallback;
    }
    EXPECT_GT(checked, 1900) << describe(spec);
    // (easy_margin never reaches it for these specs; m2 = 1e-3 puts it within 5e-7 of −1.)
    if (!spec.easy_margin && xt > -0.99) {
      EXPECT_GT(fallback, 0) << "threshold branch not exercised: " << describe(spec);
    }
  }
}

TEST(Margin, DerivativeMatchesCentralDifferencesNearPlusAndMinusOne) {
  for (const auto& spec : all_specs()) {
    const double xt = margin_threshold(spec);
    // Near +1 the slope grows like 1/sqrt(1 − x): steps proportional to the distance from 1.
    for (double d : {1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 4.9e-7}) {
      const double x = 1 - d;
      if (std::acos(x) < kMinDerivativeAngle) continue;
      const double analytic = target_logit(x, spec).dlogit_dcos;
      EXPECT_NEAR(analytic, central(spec, x, 1e-3 * d), 1e-5 * std::max(1.0, std::abs(analytic)))
          << describe(spec) << " 1-x=" << d;
    }
    for (double d : {1e-2, 1e-4, 1e-6}) {
      const double x = -1 + d;
      if (std::abs(x - xt) <= 2e-3 * d) continue;
      const double analytic = target_logit(x, spec).dlogit_dcos;
      EXPECT_NEAR(analytic, central(spec, x, 1e-3 * d), 1e-5 * std::max(1.0, std::abs(analytic)))
          << describe(spec) << " 1+x=" << d;
    }
  }
}

TEST(Margin, SmallAdditiveMarginThresholdNearMinusOneIsDifferentiated) {
  // m2 = 1e-3: x_t = −cos(1e-3) ≈ −1 + 5e-7, so x = −1 + 1e-6 is in the margin branch with sin θ ≈ 1.4e-3.
  const auto spec = combined(1, 1e-3, 0, 1);
  const double x = -1 + 1e-6;
  ASSERT_GT(x, margin_threshold(spec));
  const double theta = std::acos(x);
  EXPECT_NEAR(target_logit(x, spec).dlogit_dcos, std::sin(theta + 1e-3) / std::sin(theta), 1e-6);
  EXPECT_NEAR(target_logit(x, spec).dlogit_dcos, central(spec, x, 1e-9), 1e-5);
}

TEST(Margin, DerivativeAtExactlyOneIsTheFrozenLimitAndContinuous) {
  for (const auto& spec : all_specs()) {
    const double at1 = target_logit(1.0, spec).dlogit_dcos;
    ASSERT_TRUE(std::isfinite(at1)) << describe(spec);
    double expected = spec.scale;
    if (spec.m1 != 1 || spec.m2 != 0)
      expected = spec.scale * spec.m1 * std::sin(spec.m1 * kMinDerivativeAngle + spec.m2) / std::sin(kMinDerivativeAngle);
    EXPECT_NEAR(at1, expected, 1e-9 * std::abs(expected)) << describe(spec);
    // Continuous across the freeze boundary and up to 1.
    const double b = std::cos(kMinDerivativeAngle);
    EXPECT_NEAR(target_logit(b - 1e-13, spec).dlogit_dcos, at1, 1e-4 * std::abs(at1)) << describe(spec);
    EXPECT_EQ(target_logit(std::nextafter(1.0, 0.0), spec).dlogit_dcos, at1) << describe(spec);
  }
  // m2 = 0, m1 = 1.35: the true limit m1² is finite; the frozen value is within 1e-6 of it.
  EXPECT_NEAR(target_logit(1.0, combined(1.35, 0, 0, 1)).dlogit_dcos, 1.35 * 1.35, 1e-6);
  // ArcFace m = 0.5: capped near sin(0.5)/1e-3 ≈ 480 per unit of scale.
  EXPECT_NEAR(target_logit(1.0, arcface(0.5, 1)).dlogit_dcos, 480.3, 0.1);
}

TEST(Margin, DerivativeAtExactlyMinusOneIsFinite) {
  for (const auto& spec : all_specs()) {
    const auto v = target_logit(-1.0, spec);
    EXPECT_TRUE(std::isfinite(v.logit) && std::isfinite(v.dlogit_dcos)) << describe(spec);
    EXPECT_EQ(v.dlogit_dcos, spec.scale) << describe(spec);  // fallback, linear, or easy: slope s
  }
}

// ---- properties over the whole range -------------------------------------------------------------

TEST(Margin, FiniteAndNonDecreasingEverywhere) {
  for (const auto& spec : all_specs()) {
    double prev = -kInf, prev_x = -2;
    const int n = 200000;
    for (int i = 0; i <= n; ++i) {
      const double x = -1 + 2.0 * i / n;
      const auto v = target_logit(x, spec);
      ASSERT_TRUE(std::isfinite(v.logit) && std::isfinite(v.dlogit_dcos)) << describe(spec) << " x=" << x;
      ASSERT_GE(v.dlogit_dcos, -1e-9 * spec.scale) << describe(spec) << " x=" << x;
      // easy_margin's one exception: the margin switches on at x = 0+ (a jump down, as in InsightFace).
      if (!(spec.easy_margin && x > 0 && prev_x <= 0)) {
        ASSERT_GE(v.logit, prev - 1e-12 * spec.scale) << describe(spec) << " x=" << x;
      }
      prev = v.logit;
      prev_x = x;
      // The margin only ever lowers the target's logit.
      ASSERT_LE(v.logit, non_target_logit(x, spec).logit + 1e-12 * spec.scale) << describe(spec) << " x=" << x;
    }
    for (double x : {-1.0, std::nextafter(-1.0, 0.0), std::nextafter(1.0, 0.0), 1.0, 0.0, -0.0,
                     margin_threshold(spec), std::nextafter(margin_threshold(spec), 2.0)}) {
      const auto v = target_logit(x, spec);
      EXPECT_TRUE(std::isfinite(v.logit) && std::isfinite(v.dlogit_dcos)) << describe(spec) << " x=" << x;
    }
  }
}

// ---- margin_spec ---------------------------------------------------------------------------------

TEST(MarginSpec, NamesMapToTheirFormulasAndDistFormsAreTheSame) {
  for (std::string_view base : {"softmax", "arcface", "cosface"}) {
    const auto a = margin_spec(base, 0.3, 32, kNone, kNone, kNone, false);
    const auto d = margin_spec(str("dist_", base), 0.3, 32, kNone, kNone, kNone, false);
    EXPECT_EQ(a.normalized, d.normalized);
    EXPECT_EQ(a.scale, d.scale);
    EXPECT_EQ(a.m1, d.m1);
    EXPECT_EQ(a.m2, d.m2);
    EXPECT_EQ(a.m3, d.m3);
    EXPECT_FALSE(is_model_parallel_loss(base));
    EXPECT_TRUE(is_model_parallel_loss(str("dist_", base)));
  }
  const auto s = margin_spec("softmax", 0.3, 32, kNone, kNone, kNone, false);
  EXPECT_FALSE(s.normalized);
  EXPECT_EQ(s.scale, 1.0);
  const auto a = arcface(0.3, 32);
  EXPECT_TRUE(a.normalized);
  EXPECT_EQ(a.scale, 32.0);
  EXPECT_EQ(a.m1, 1.0);
  EXPECT_EQ(a.m2, 0.3);
  EXPECT_EQ(a.m3, 0.0);
  const auto c = cosface(0.3, 32);
  EXPECT_EQ(c.m2, 0.0);
  EXPECT_EQ(c.m3, 0.3);
}

TEST(MarginSpec, AnyOfTheThreeMarginsMeansTheCombinedTripleAndIgnoresMargin) {
  auto c = margin_spec("cosface", 0.4, 64, 1.0, 0.5, kNone, false);  // an arcface written as a triple
  EXPECT_EQ(c.m1, 1.0);
  EXPECT_EQ(c.m2, 0.5);
  EXPECT_EQ(c.m3, 0.0);
  c = margin_spec("arcface", 0.5, 64, kNone, kNone, 0.35, false);
  EXPECT_EQ(c.m2, 0.0);
  EXPECT_EQ(c.m3, 0.35);
  c = margin_spec("arcface", -7, 64, 1.35, kNone, kNone, false);  // margin ignored, even if invalid
  EXPECT_EQ(c.m1, 1.35);
  EXPECT_EQ(c.m2, 0.0);
}

void expect_config_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no ConfigError; expected one mentioning " << needle;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(MarginSpec, RejectsUnknownNamesAndInvalidValues) {
  expect_config_error([] { margin_spec("sphereface", 0.5, 64, kNone, kNone, kNone, false); }, "--loss_type");
  expect_config_error([] { margin_spec("ArcFace", 0.5, 64, kNone, kNone, kNone, false); }, "dist_arcface");
  for (double s : {0.0, -1.0, kNaN, kInf})
    expect_config_error([s] { margin_spec("arcface", 0.5, s, kNone, kNone, kNone, false); }, "--scale");
  for (double m : {-0.1, 1.6, kNaN})
    expect_config_error([m] { margin_spec("dist_arcface", m, 64, kNone, kNone, kNone, false); }, "--margin=");
  expect_config_error([] { margin_spec("cosface", 1.5, 64, kNone, kNone, kNone, false); }, "--margin=");
  expect_config_error([] { margin_spec("cosface", -0.2, 64, kNone, kNone, kNone, false); }, "--margin=");
  expect_config_error([] { margin_spec("arcface", 0.5, 64, 0.9, kNone, kNone, false); }, "--margin1");
  expect_config_error([] { margin_spec("arcface", 0.5, 64, 11.0, kNone, kNone, false); }, "--margin1");
  expect_config_error([] { margin_spec("arcface", 0.5, 64, kNone, -0.01, kNone, false); }, "--margin2");
  expect_config_error([] { margin_spec("arcface", 0.5, 64, kNone, 2.0, kNone, false); }, "--margin2");
  expect_config_error([] { margin_spec("arcface", 0.5, 64, kNone, kNone, -0.01, false); }, "--margin3");
  expect_config_error([] { margin_spec("arcface", 0.5, 64, kNone, kNaN, kNone, false); }, "--margin2");
  // Margin flags on plain softmax would do nothing: refused.
  expect_config_error([] { margin_spec("softmax", 0.5, 64, 1.0, kNone, kNone, false); }, "--margin1");
  expect_config_error([] { margin_spec("dist_softmax", 0.5, 64, kNone, kNone, 0.1, false); }, "--margin3");
  expect_config_error([] { margin_spec("softmax", 0.5, 64, kNone, kNone, kNone, true); }, "--easy_margin");
  // ... but softmax ignores the defaulted --margin and --scale.
  EXPECT_NO_THROW(margin_spec("softmax", -1, 0, kNone, kNone, kNone, false));
}

}  // namespace
}  // namespace fastnn::head
