// Each optimizer against its closed-form TF 1.x update computed here in double, over several steps
// with changing gradients and learning rates; hand-computed first steps; state export/import and
// exact resume; the parallel path against the serial one.
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

TEST(Optimizers, SgdMatchesClosedForm) {
  Single s;
  auto opt = make_sgd(s.params());
  expect_matches(*opt, s.w, s.g, [](int, int, double w, double g, double lr) { return w - lr * g; });
}

TEST(Optimizers, MomentumMatchesClosedForm) {
  for (bool nesterov : {false, true}) {
    Single s;
    const double m = 0.8;
    auto opt = make_momentum(s.params(), static_cast<float>(m), nesterov);
    std::vector<double> a(kElems, 0.0);
    expect_matches(*opt, s.w, s.g, [&](int k, int, double w, double g, double lr) {
      a[k] = m * a[k] + g;
      return nesterov ? w - lr * (g + m * a[k]) : w - lr * a[k];
    });
  }
}

TEST(Optimizers, AdamMatchesClosedFormWithBiasCorrection) {
  Single s;
  const double b1 = 0.8, b2 = 0.95, eps = 1e-3;
  auto opt = make_adam(s.params(), static_cast<float>(b1), static_cast<float>(b2), static_cast<float>(eps));
  std::vector<double> m(kElems, 0.0), v(kElems, 0.0);
  expect_matches(*opt, s.w, s.g, [&](int k, int t, double w, double g, double lr) {
    m[k] = b1 * m[k] + (1 - b1) * g;
    v[k] = b2 * v[k] + (1 - b2) * g * g;
    const double lr_t = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    return w - lr_t * m[k] / (std::sqrt(v[k]) + eps);  // eps outside the bias correction (TF)
  });
}

TEST(Optimizers, AdamFirstStepByHand) {
  // m = 0.05, v = 0.00025, lr_t = 0.1*sqrt(0.001)/0.1: w = 1 - 0.1*sqrt(0.001)/0.1*0.05/(0.5*sqrt(0.001)+1e-8)
  float w = 1.0f, g = 0.5f;
  auto opt = make_adam({{"w", &w, &g, 1}}, 0.9f, 0.999f, 1e-8f);
  opt->step(0.1f);
  EXPECT_NEAR(w, 0.9, 1e-6);
}

TEST(Optimizers, AdamWeightDecayMatchesBert) {
  for (bool decay : {true, false}) {
    Single s;
    const double b1 = 0.85, b2 = 0.97, eps = 1e-4, rate = 0.05;
    auto opt = make_adam_weight_decay(s.params(decay), static_cast<float>(b1), static_cast<float>(b2),
                                      static_cast<float>(eps), static_cast<float>(rate));
    EXPECT_EQ(opt->name(), "adamweightdecay");
    std::vector<double> m(kElems, 0.0), v(kElems, 0.0);
    expect_matches(*opt, s.w, s.g, [&](int k, int, double w, double g, double lr) {
      m[k] = b1 * m[k] + (1 - b1) * g;
      v[k] = b2 * v[k] + (1 - b2) * g * g;
      const double update = m[k] / (std::sqrt(v[k]) + eps) + (decay ? rate * w : 0.0);  // no bias correction
      return w - lr * update;
    });
  }
}


TEST(Optimizers, RmsPropMatchesClosedFormWithMeanSquareStartingAtOne) {
  Single s;
  const double decay = 0.7, mom = 0.6, eps = 1e-3;
  auto opt = make_rmsprop(s.params(), static_cast<float>(decay), static_cast<float>(mom), static_cast<float>(eps));
  std::vector<double> ms(kElems, 1.0), mo(kElems, 0.0);
  expect_matches(*opt, s.w, s.g, [&](int k, int, double w, double g, double lr) {
    ms[k] = decay * ms[k] + (1 - decay) * g * g;
    mo[k] = mom * mo[k] + lr * g / std::sqrt(ms[k] + eps);
    return w - mo[k];
  });
}

TEST(Optimizers, RmsPropFirstStepByHand) {
  // ms = 0.9*1 + 0.1*4 = 1.3; mom = 0.1*2/sqrt(1.3) = 0.1754116; w = 0.8245884
  float w = 1.0f, g = 2.0f;
  auto opt = make_rmsprop({{"w", &w, &g, 1}}, 0.9f, 0.9f, 0.0f);
  opt->step(0.1f);
  EXPECT_NEAR(w, 0.8245884, 1e-6);
}

TEST(Optimizers, AdagradMatchesClosedForm) {
  Single s;
  const double a0 = 0.2;
  auto opt = make_adagrad(s.params(), static_cast<float>(a0));
  std::vector<double> acc(kElems, a0);
  expect_matches(*opt, s.w, s.g, [&](int k, int, double w, double g, double lr) {
    acc[k] += g * g;
    return w - lr * g / std::sqrt(acc[k]);
  });
}

TEST(Optimizers, AdadeltaMatchesClosedForm) {
  Single s;
  const double rho = 0.9, eps = 1e-2;
  auto opt = make_adadelta(s.params(), static_cast<float>(rho), static_cast<float>(eps));
  std::vector<double> acc(kElems, 0.0), acc_up(kElems, 0.0);
  expect_matches(*opt, s.w, s.g, [&](int k, int, double w, double g, double lr) {
    acc[k] = rho * acc[k] + (1 - rho) * g * g;
    const double u = std::sqrt(acc_up[k] + eps) / std::sqrt(acc[k] + eps) * g;
    acc_up[k] = rho * acc_up[k] + (1 - rho) * u * u;
    return w - lr * u;
  });
}

TEST(Optimizers, FtrlMatchesClosedForm) {
  // lr_power -0.5 takes the sqrt path, -0.7 the pow path; l1 = 0.2 zeroes some weights, not all.
  for (double power : {-0.5, -0.7}) {
    Single s;
    const double a0 = 0.1, l1 = 0.2, l2 = 0.02;
    auto opt = make_ftrl(s.params(), static_cast<float>(power), static_cast<float>(a0), static_cast<float>(l1),
                         static_cast<float>(l2));
    std::vector<double> acc(kElems, a0), lin(kElems, 0.0);
    int zeroed = 0, nonzero = 0;
    expect_matches(*opt, s.w, s.g, [&](int k, int, double w, double g, double lr) {
      const double na = acc[k] + g * g;
      lin[k] += g - (std::pow(na, -power) - std::pow(acc[k], -power)) / lr * w;
      const double quadratic = std::pow(na, -power) / lr + 2 * l2;
      acc[k] = na;
      if (std::fabs(lin[k]) <= l1) return ++zeroed, 0.0;
      ++nonzero;
      return ((lin[k] > 0 ? l1 : -l1) - lin[k]) / quadratic;
    }, 1e-4);
    EXPECT_GT(zeroed, 0) << "the l1 branch was not exercised";
    EXPECT_GT(nonzero, 0) << "the proximal branch was not exercised";
  }
}

TEST(Optimizers, FtrlRejectsZeroLearningRate) {
  float w = 1.0f, g = 1.0f;
  auto opt = make_ftrl({{"w", &w, &g, 1}}, -0.5f, 0.1f, 0.0f, 0.0f);
  EXPECT_THROW(opt->step(0.0f), Error);
  EXPECT_EQ(w, 1.0f);
}

TEST(Optimizers, StateNamesFollowParamsAndSlots) {
  std::vector<float> a(3), ga(3), b(2), gb(2);
  std::vector<ParamRef> ps = {{"conv1/weights", a.data(), ga.data(), 3}, {"conv1/biases", b.data(), gb.data(), 2}};
  auto adam = make_adam(ps, 0.9f, 0.999f, 1e-8f);
  std::vector<std::string> names;
  for (const StateArray& s : adam->state()) names.push_back(s.name + ":" + std::to_string(s.count));
  EXPECT_EQ(names, (std::vector<std::string>{"conv1/weights/adam_m:3", "conv1/weights/adam_v:3",
                                             "conv1/biases/adam_m:2", "conv1/biases/adam_v:2",
                                             "adam/beta1_power:1", "adam/beta2_power:1"}));
  auto rms = make_rmsprop(ps, 0.9f, 0.9f, 1.0f);
  for (const StateArray& s : rms->state()) {
    if (s.name.ends_with("/rms")) {
      EXPECT_EQ(s.data[0], 1.0f) << s.name;  // TF initialises ms to ones
    }
  }
  names.clear();
  for (const StateArray& s : make_adamw(ps, 0.9, 0.999, 1e-8, 0.01)->state()) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1/weights/adam_m", "conv1/weights/adam_v", "conv1/biases/adam_m",
                                             "conv1/biases/adam_v", "adamw/step"}));
  auto adagrad = make_adagrad(ps, 0.25f);
  EXPECT_EQ(adagrad->state()[0].name, "conv1/weights/accumulator");
  EXPECT_EQ(adagrad->state()[0].data[2], 0.25f);
}

// Runs a fresh optimizer of kind `name` for `steps` steps from the given weights.
std::unique_ptr<Optimizer> build(const std::string& name, std::vector<ParamRef> ps) {
  JobConfig c;
  c.set_optimizer(name);
  c.set_opt_epsilon(1e-3);
  c.set_ftrl_l1(0.01);
  return make_optimizer(c, std::move(ps));
}

TEST(Optimizers, ExportImportResumesBitForBit) {
  for (std::string_view name : optimizer_names()) {
    // Reference: 5 uninterrupted steps.
    Single a;
    auto full = build(std::string(name), a.params());
    for (int t = 1; t <= 5; ++t) {
      for (int k = 0; k < kElems; ++k) a.g[k] = static_cast<float>(grad_at(t, k));
      full->step(static_cast<float>(lr_at_step(t)));
    }
    // Interrupted: 3 steps, export, new optimizer, import, 2 more steps.
    Single b;
    auto first = build(std::string(name), b.params());
    for (int t = 1; t <= 3; ++t) {
      for (int k = 0; k < kElems; ++k) b.g[k] = static_cast<float>(grad_at(t, k));
      first->step(static_cast<float>(lr_at_step(t)));
    }
    const std::vector<NamedArray> saved = first->export_state();
    first.reset();
    auto second = build(std::string(name), b.params());
    second->import_state(saved);
    for (int t = 4; t <= 5; ++t) {
      for (int k = 0; k < kElems; ++k) b.g[k] = static_cast<float>(grad_at(t, k));
      second->step(static_cast<float>(lr_at_step(t)));
    }
    EXPECT_EQ(a.w, b.w) << name;
  }
}

TEST(Optimizers, ImportRejectsMismatchedStateAndChangesNothing) {
  Single s;
  auto opt = make_adam(s.params(), 0.9f, 0.999f, 1e-8f);
  std::vector<NamedArray> good = opt->export_state();
  for (NamedArray& a : good) std::fill(a.data.begin(), a.data.end(), 0.5f);

  auto missing = good;
  missing.pop_back();
  EXPECT_THROW(opt->import_state(missing), FormatError);
  auto resized = good;
  resized[0].data.push_back(1.0f);
  EXPECT_THROW(opt->import_state(resized), FormatError);
  auto extra = good;
  extra.push_back({"other/adam_m", {1.0f}});
  try {
    opt->import_state(extra);
    FAIL() << "unknown array accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("other/adam_m"), std::string::npos) << e.what();
  }
  for (const StateArray& a : opt->state()) {
    if (a.name == "adam/beta1_power") {
      EXPECT_EQ(a.data[0], 0.9f);
    }
    if (a.name.ends_with("adam_m")) {
      EXPECT_EQ(a.data[0], 0.0f);
    }
  }
  opt->import_state(good);
  for (const StateArray& a : opt->state()) EXPECT_EQ(a.data[0], 0.5f) << a.name;
}

TEST(Optimizers, RejectsBadParameterLists) {
  std::vector<float> w(2), g(2);
  EXPECT_THROW(make_sgd({{"a", w.data(), g.data(), 2}, {"a", w.data(), g.data(), 2}}), Error);
  EXPECT_THROW(make_sgd({{"", w.data(), g.data(), 2}}), Error);
  EXPECT_THROW(make_sgd({{"a", nullptr, g.data(), 2}}), Error);
  EXPECT_NO_THROW(make_sgd({{"empty", nullptr, nullptr, 0}})->step(0.1f));
}

TEST(Optimizers, ParallelUpdateEqualsSerialUpdate) {
  // One 300000-float parameter (parallel path) against the same numbers in 300 parameters of 1000.
  const size_t n = 300000, piece = 1000;
  ASSERT_GE(n, kParallelMinElements);
  std::vector<float> w1(n), g1(n), w2(n), g2(n);
  for (size_t i = 0; i < n; ++i) w1[i] = w2[i] = static_cast<float>(std::sin(0.001 * i));
  for (std::string_view name : {"adam", "rmsprop", "momentum"}) {
    auto big = build(std::string(name), {{"big", w1.data(), g1.data(), n}});
    std::vector<ParamRef> pieces;
    for (size_t p = 0; p < n / piece; ++p) {
      pieces.push_back({"p" + std::to_string(p), w2.data() + p * piece, g2.data() + p * piece, piece});
    }
    auto small = build(std::string(name), pieces);
    for (int t = 1; t <= 3; ++t) {
      for (size_t i = 0; i < n; ++i) g1[i] = g2[i] = static_cast<float>(std::cos(0.003 * i + t));
      big->step(0.01f);
      small->step(0.01f);
    }
    EXPECT_EQ(w1, w2) << name;
  }
}

TEST(Optimizers, FactoryCoversExactlyTheConfigChoices) {
  const auto* field = JobConfig::descriptor()->FindFieldByName("optimizer");
  const std::vector<std::string> choices = field_choices(*field);
  std::vector<std::string> names(optimizer_names().begin(), optimizer_names().end());
  EXPECT_EQ(choices, names);
  float w = 0, g = 0;
  for (const std::string& n : names) EXPECT_EQ(build(n, {{"w", &w, &g, 1}})->name(), n);
  OptimizerOptions bad = optimizer_options(JobConfig());
  bad.optimizer = "adamx";
  try {
    make_optimizer(bad, {});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("adamweightdecay"), std::string::npos) << e.what();
  }
}

TEST(Optimizers, OptionsFromDefaultConfigAreFastNNs) {
  const OptimizerOptions o = optimizer_options(JobConfig());
  EXPECT_EQ(o.optimizer, "rmsprop");
  EXPECT_EQ(o.rmsprop_decay, 0.9);
  EXPECT_EQ(o.rmsprop_momentum, 0.9);
  EXPECT_EQ(o.opt_epsilon, 1.0);
  EXPECT_EQ(o.adam_weight_decay_rate, 0.01);
  EXPECT_EQ(o.ftrl_learning_rate_power, -0.5);
}

TEST(Optimizers, DefaultWeightDecayByName) {
  EXPECT_TRUE(default_weight_decay_for_name("resnet_v1_50/conv1/weights"));
  EXPECT_FALSE(default_weight_decay_for_name("resnet_v1_50/logits/biases"));
  EXPECT_FALSE(default_weight_decay_for_name("bert/encoder/layer_0/output/LayerNorm/gamma"));
  EXPECT_FALSE(default_weight_decay_for_name("vgg/conv1/BatchNorm/beta"));
  EXPECT_FALSE(default_weight_decay_for_name("net/block1/batch_norm/gamma"));
  EXPECT_FALSE(default_weight_decay_for_name("dense/bias"));
}

}  // namespace
}  // namespace fastnn

namespace fastnn {
namespace {

// step_rows (PartialFC's lazy update): rows {1, 4, 5} of a 7 x 3 parameter, their gradients compact,
// for each of the eight optimizers from FastNN's defaults: those rows and their slots end bitwise where an
// optimizer over just those rows (the same values) ends; every other row and its slots are untouched;
// scalars (adam's beta powers) advance once per step, as in step().
TEST(Optimizers, StepRowsEqualsAnOptimizerOverThoseRowsAndLeavesTheRestAlone) {
  for (std::string_view name : optimizer_names()) {
    if (name == "lars" || name == "lamb") continue;  // trust ratios need the whole parameter: *RefusesRowUpdates
    SCOPED_TRACE(std::string(name));
    JobConfig c;
    c.set_optimizer(std::string(name));
    const OptimizerOptions o = optimizer_options(c);
    constexpr int64_t kRows = 7, kLen = 3;
    const std::vector<int64_t> rows = {1, 4, 5};
    std::vector<float> w(kRows * kLen), unused(kRows * kLen), wc(rows.size() * kLen), g(rows.size() * kLen);
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.3f * static_cast<float>(i) + 0.1f);
    for (size_t j = 0; j < rows.size(); ++j)
      for (int64_t e = 0; e < kLen; ++e) wc[j * kLen + e] = w[rows[j] * kLen + e];
    const std::vector<float> before = w;
    auto full = make_optimizer(o, {ParamRef{"head/weights", w.data(), unused.data(), w.size(), true}});
    auto part = make_optimizer(o, {ParamRef{"head/weights", wc.data(), g.data(), wc.size(), true}});
    const std::vector<StateArray> full_state = full->state(), part_state = part->state();
    const std::vector<NamedArray> full_start = full->export_state();
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < g.size(); ++i) g[i] = std::cos(0.7f * static_cast<float>(i) + static_cast<float>(step));
      const float lr = 0.05f / static_cast<float>(step + 1);
      full->step_rows(lr, rows, kLen, g.data());
      part->step(lr);
    }
    for (int64_t r = 0, j = 0; r < kRows; ++r) {
      const bool picked = j < static_cast<int64_t>(rows.size()) && rows[static_cast<size_t>(j)] == r;
      for (int64_t e = 0; e < kLen; ++e) {
        if (picked) EXPECT_EQ(w[r * kLen + e], wc[j * kLen + e]) << "row " << r;
        else EXPECT_EQ(w[r * kLen + e], before[r * kLen + e]) << "unsampled row " << r << " moved";
      }
      if (picked) ++j;
    }
    ASSERT_EQ(full_state.size(), part_state.size());
    for (size_t s = 0; s < full_state.size(); ++s) {
      const StateArray &f = full_state[s], &p = part_state[s];
      if (f.count == 1) {  // a scalar
        EXPECT_EQ(*f.data, *p.data) << f.name;
        continue;
      }
      for (int64_t r = 0, j = 0; r < kRows; ++r) {
        const bool picked = j < static_cast<int64_t>(rows.size()) && rows[static_cast<size_t>(j)] == r;
        for (int64_t e = 0; e < kLen; ++e) {
          if (picked) EXPECT_EQ(f.data[r * kLen + e], p.data[j * kLen + e]) << f.name << " row " << r;
          else EXPECT_EQ(f.data[r * kLen + e], full_start[s].data[static_cast<size_t>(r * kLen + e)])
              << f.name << " of unsampled row " << r << " moved";
        }
        if (picked) ++j;
      }
    }
  }
}

TEST(Optimizers, StepRowsRefusesRowsOutOfOrderOrRange) {
  std::vector<float> w(12), g(6);
  auto opt = make_sgd({ParamRef{"w", w.data(), w.data(), w.size(), true}});
  const std::vector<int64_t> backwards = {2, 1}, outside = {0, 4};
  EXPECT_THROW(opt->step_rows(0.1f, backwards, 3, g.data()), Error);
  EXPECT_THROW(opt->step_rows(0.1f, outside, 3, g.data()), Error);
}

}  // namespace
}  // namespace fastnn
