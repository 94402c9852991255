// The optimizers of large-batch and transformer recipes against their reference formulas, in double over
// several steps: PyTorch's AdamW (decoupled weight decay), timm's LAMB and MLPerf's LARS (trust ratios
// over whole parameters, their exclusions), with hand-computed first steps, defaults and refusals.
#include <cmath>
#include <functional>
#include <map>

#include <gtest/gtest.h>

#include "core/check.h"
#include "schemas/job_config.pb.h"
#include "tests/unit/trainer/optim_reference.h"
#include "trainer/config/config_fields.h"
#include "trainer/optim/optimizers.h"

namespace fastnn {
namespace {

using namespace optim_test;

// torch.optim.AdamW (torch/optim/adam.py, _single_tensor_adam with decoupled_weight_decay), in double.
TEST(Optimizers, AdamWMatchesPyTorchsFormula) {
  for (bool decay : {true, false}) {
    Single s;
    const double b1 = 0.85, b2 = 0.97, eps = 1e-4, wd = 0.3;
    auto opt = make_adamw(s.params(decay), b1, b2, eps, wd);
    EXPECT_EQ(opt->name(), "adamw");
    std::vector<double> m(kElems, 0.0), v(kElems, 0.0);
    expect_matches(*opt, s.w, s.g, [&](int k, int t, double w, double g, double lr) {
      if (decay) w *= 1 - lr * wd;  // param.mul_(1 - lr * weight_decay)
      m[k] += (g - m[k]) * (1 - b1);  // exp_avg.lerp_(grad, 1 - beta1)
      v[k] = v[k] * b2 + (1 - b2) * g * g;
      const double step_size = lr / (1 - std::pow(b1, t));
      const double denom = std::sqrt(v[k]) / std::sqrt(1 - std::pow(b2, t)) + eps;  // eps after the correction
      return w - step_size * m[k] / denom;
    });
  }
}

TEST(Optimizers, AdamWFirstStepByHand) {
  // w = 1 * (1 - 0.1 * 0.01) = 0.999; m = 0.05, v = 0.00025; step_size = 0.1 / 0.1 = 1;
  // denom = sqrt(0.00025) / sqrt(0.001) + 1e-8 = 0.5: w = 0.999 - 0.05 / 0.5 = 0.899.
  float w = 1.0f, g = 0.5f;
  auto opt = make_adamw({{"w", &w, &g, 1}}, 0.9, 0.999, 1e-8, 0.01);
  opt->step(0.1f);
  EXPECT_NEAR(w, 0.899, 1e-6);
  for (const StateArray& a : opt->state())
    if (a.name == "adamw/step") {
      EXPECT_EQ(a.data[0], 1.0f);
    }
}

TEST(Optimizers, AdamWTakesPyTorchsDefaultsWhereTheConfigLeavesFastNNs) {
  JobConfig c;
  c.set_optimizer("adamw");
  OptimizerOptions o = optimizer_options(c);
  EXPECT_EQ(o.adamw_weight_decay, 0.01);  // not FastNN's L2 default 0.00004
  EXPECT_EQ(o.opt_epsilon, 1e-8);         // not FastNN's 1.0
  c.set_weight_decay(0.05);
  c.set_opt_epsilon(1e-6);
  o = optimizer_options(c);
  EXPECT_EQ(o.adamw_weight_decay, 0.05);
  EXPECT_EQ(o.opt_epsilon, 1e-6);
  c.set_optimizer("adam");  // other optimizers keep FastNN's meaning
  EXPECT_EQ(optimizer_options(c).adamw_weight_decay, 0.0);
}

// timm's Lamb (timm/optim/lamb.py, _single_tensor_lamb, clipping off), in double over a whole parameter:
// the trust ratio needs every element's update before any weight moves. Not decaying: no decay term and
// no adaptation (timm adapts only groups with weight decay).
std::vector<double> lamb_reference_step(std::vector<double>& w, std::vector<double>& m, std::vector<double>& v,
                                        const std::vector<double>& g, int t, double lr, double b1, double b2,
                                        double eps, double wd, bool decay) {
  const size_t n = w.size();
  std::vector<double> u(n);
  double wn = 0, un = 0;
  for (size_t k = 0; k < n; ++k) {
    m[k] += (g[k] - m[k]) * (1 - b1);  // exp_avg.lerp_(grad, 1 - beta1)
    v[k] = v[k] * b2 + (1 - b2) * g[k] * g[k];
    const double denom = std::sqrt(v[k]) / std::sqrt(1 - std::pow(b2, t)) + eps;
    u[k] = m[k] / (1 - std::pow(b1, t)) / denom + (decay ? wd * w[k] : 0.0);
    wn += w[k] * w[k];
    un += u[k] * u[k];
  }
  const double trust = decay && wn > 0 && un > 0 ? std::sqrt(wn) / std::sqrt(un) : 1.0;
  for (size_t k = 0; k < n; ++k) w[k] -= lr * trust * u[k];
  return w;
}

TEST(Optimizers, LambMatchesTimmsFormula) {
  for (bool decay : {true, false}) {
    Single s;
    const double b1 = 0.85, b2 = 0.97, eps = 1e-4, wd = 0.3;
    auto opt = make_lamb(s.params(decay), b1, b2, eps, wd);
    EXPECT_EQ(opt->name(), "lamb");
    std::vector<double> w(kElems), m(kElems, 0.0), v(kElems, 0.0), g(kElems);
    for (int k = 0; k < kElems; ++k) w[k] = s.w[k];
    for (int t = 1; t <= kSteps; ++t) {
      const auto lr = static_cast<float>(lr_at_step(t));
      for (int k = 0; k < kElems; ++k) {
        s.g[k] = static_cast<float>(grad_at(t, k));
        g[k] = s.g[k];
      }
      opt->step(lr);
      lamb_reference_step(w, m, v, g, t, lr, b1, b2, eps, wd, decay);
      for (int k = 0; k < kElems; ++k)
        EXPECT_NEAR(s.w[k], w[k], 2e-5 * std::max(1.0, std::fabs(w[k]))) << "decay " << decay << " step " << t << " element " << k;
    }
  }
}

TEST(Optimizers, LambFirstStepByHand) {
  // w = (3, 4), g = (0.6, 0.8): m = 0.1 g, v = 0.001 g^2; bias-corrected m / sqrt(v) = g / |g| elementwise = (1, 1)
  // (eps 0); u = (1, 1) + 0.1 w = (1.3, 1.4); |w| = 5, |u| = 1.9105; trust 2.6171;
  // w -= 0.01 * 2.6171 * u = (2.96598, 3.96336).
  std::vector<float> w = {3, 4}, g = {0.6f, 0.8f};
  auto opt = make_lamb({{"w", w.data(), g.data(), 2}}, 0.9, 0.999, 0.0, 0.1);
  opt->step(0.01f);
  const double trust = 5.0 / std::sqrt(1.3 * 1.3 + 1.4 * 1.4);
  EXPECT_NEAR(w[0], 3 - 0.01 * trust * 1.3, 1e-5);
  EXPECT_NEAR(w[1], 4 - 0.01 * trust * 1.4, 1e-5);
  // Zero weights keep the ratio at 1 (no division by zero).
  std::vector<float> z = {0, 0};
  auto fresh = make_lamb({{"z", z.data(), g.data(), 2}}, 0.9, 0.999, 0.0, 0.1);
  fresh->step(0.01f);
  EXPECT_NEAR(z[0], -0.01, 1e-6);
  EXPECT_NEAR(z[1], -0.01, 1e-6);
}

TEST(Optimizers, LambTakesTimmsDefaultsWhereTheConfigLeavesFastNNs) {
  JobConfig c;
  c.set_optimizer("lamb");
  OptimizerOptions o = optimizer_options(c);
  EXPECT_EQ(o.lamb_weight_decay, 0.01);
  EXPECT_EQ(o.opt_epsilon, 1e-6);
  c.set_weight_decay(0.05);
  c.set_opt_epsilon(1e-8);
  o = optimizer_options(c);
  EXPECT_EQ(o.lamb_weight_decay, 0.05);
  EXPECT_EQ(o.opt_epsilon, 1e-8);
  EXPECT_TRUE(applies_weight_decay_itself("lamb"));
}

// A parameter of several reduction chunks (its norms summed in a fixed chunk order, its updates split over
// workers) gives the same bits in two runs; the state has Adam's slot names and timm's step count.
TEST(Optimizers, LambIsDeterministicAndNamesItsState) {
  const size_t n = (size_t{1} << 16) + 5;
  auto run = [n] {
    std::vector<float> w(n), g(n);
    for (size_t k = 0; k < n; ++k) {
      w[k] = static_cast<float>(std::sin(0.001 * k));
      g[k] = static_cast<float>(std::cos(0.003 * k));
    }
    auto opt = make_lamb({{"big", w.data(), g.data(), n}}, 0.9, 0.999, 1e-6, 0.01);
    for (int t = 0; t < 3; ++t) opt->step(0.001f);
    std::vector<std::string> names;
    for (const StateArray& a : opt->state()) names.push_back(a.name);
    EXPECT_EQ(names, (std::vector<std::string>{"big/adam_m", "big/adam_v", "lamb/step"}));
    return w;
  };
  EXPECT_EQ(run(), run());
}

TEST(Optimizers, LambRefusesRowUpdates) {
  std::vector<float> w(6, 1.0f), g(6, 0.5f);
  auto opt = make_lamb({{"head", w.data(), g.data(), 6}}, 0.9, 0.999, 1e-6, 0.01);
  const int64_t rows[] = {1};
  EXPECT_THROW(opt->step_rows(0.1f, rows, 3, g.data()), ConfigError);
}

// tf.contrib.opt.LARSOptimizer with MLPerf's skip list (decay false: no trust ratio, no decay), in double,
// the norms taken from the reference's own weights and the step's gradients.
TEST(Optimizers, LarsMatchesMlperfsFormula) {
  for (bool decay : {true, false}) {
    Single s;
    const double momentum = 0.8, eeta = 0.02, eps = 1e-3, wd = 0.05;
    auto opt = make_lars(s.params(decay), momentum, eeta, eps, wd);
    EXPECT_EQ(opt->name(), "lars");
    std::vector<double> a(kElems, 0.0), w_prev(kElems);
    for (int j = 0; j < kElems; ++j) w_prev[j] = static_cast<float>(w0(j));
    double trust = 1;
    expect_matches(*opt, s.w, s.g, [&](int k, int t, double w, double g, double lr) {
      if (k == 0) {  // the step's norms, from every element's weight before the update and its gradient
        double wn = 0, gn = 0;
        for (int j = 0; j < kElems; ++j) {
          const double gj = static_cast<float>(grad_at(t, j));
          wn += (j == 0 ? w : w_prev[j]) * (j == 0 ? w : w_prev[j]);
          gn += gj * gj;
        }
        trust = decay ? eeta * std::sqrt(wn) / (std::sqrt(gn) + wd * std::sqrt(wn) + eps) : 1.0;
      }
      const double grad = decay ? g + wd * w : g;
      a[k] = momentum * a[k] + grad * lr * trust;
      w_prev[k] = w - a[k];
      return w_prev[k];
    });
  }
}

TEST(Optimizers, LarsFirstStepByHand) {
  // |w| = 5, |g| = 1: trust = 0.001 * 5 / (1 + 0.01 * 5) = 0.0047619...; grad = g + 0.01 w = (0.63, 0.84);
  // a = grad * 1.0 * trust = (0.003, 0.004); w = (2.997, 3.996).
  std::vector<float> w = {3, 4}, g = {0.6f, 0.8f};
  auto opt = make_lars({{"w", w.data(), g.data(), 2}}, 0.9, 0.001, 0.0, 0.01);
  opt->step(1.0f);
  EXPECT_NEAR(w[0], 2.997, 1e-6);
  EXPECT_NEAR(w[1], 3.996, 1e-6);
  // A zero gradient keeps the ratio at 1 (no division by zero): only the decay moves the weights.
  std::fill(g.begin(), g.end(), 0.0f);
  std::vector<float> z = {0, 0};
  auto fresh = make_lars({{"z", z.data(), g.data(), 2}}, 0.9, 0.001, 0.0, 0.01);
  fresh->step(1.0f);
  EXPECT_EQ(z, (std::vector<float>{0, 0}));
}

TEST(Optimizers, LarsRefusesRowUpdates) {
  std::vector<float> w(6, 1.0f), g(6, 0.0f);
  auto opt = make_lars({{"head", w.data(), g.data(), 6}}, 0.9, 0.001, 0.0, 0.01);
  const std::vector<int64_t> rows = {1};
  const std::vector<float> compact = {0.5f, 0.5f};
  EXPECT_THROW(opt->step_rows(0.1f, rows, 2, compact.data()), ConfigError);
}

}  // namespace
}  // namespace fastnn
