// LR schedules against closed-form values at chosen steps.
#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include "core/check.h"
#include "schemas/job_config.pb.h"
#include "trainer/config/config_fields.h"
#include "trainer/schedule/lr_schedule.h"

namespace fastnn {
namespace {

constexpr double kTol = 1e-12;

JobConfig base(const std::string& type, double lr, int64_t stop) {
  JobConfig c;
  c.set_learning_rate_decay_type(type);
  c.set_learning_rate(lr);
  c.set_stop_at_step(stop);
  return c;
}

TEST(LrSchedule, T2TWarmupStartsHundredTimesSmallerAndRisesExponentially) {
  JobConfig c = base("exponential", 0.1, 1000);
  c.set_warmup_steps(100);
  const LrSchedule s = make_lr_schedule(c, 0, 0);
  EXPECT_NEAR(s.lr_at(0), 0.001, kTol);                               // lr/100
  EXPECT_NEAR(s.lr_at(50), 0.01, kTol);                               // midpoint: lr/10
  EXPECT_NEAR(s.lr_at(99), 0.1 * std::pow(0.01, 1.0 / 100), kTol);    // one factor short
  EXPECT_NEAR(s.lr_at(25), 0.1 * std::pow(0.01, 75.0 / 100), kTol);
  EXPECT_DOUBLE_EQ(s.lr_at(100), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(999), 0.1);  // no decay_scheme: no decay
  EXPECT_DOUBLE_EQ(s.lr_at(5000), 0.1);
}

TEST(LrSchedule, LinearWarmup) {
  JobConfig c = base("exponential", 0.2, 1000);
  c.set_warmup_steps(10);
  c.set_warmup_scheme("linear");
  const LrSchedule s = make_lr_schedule(c, 0, 0);
  EXPECT_NEAR(s.lr_at(0), 0.02, kTol);
  EXPECT_NEAR(s.lr_at(4), 0.1, kTol);
  EXPECT_NEAR(s.lr_at(9), 0.2, kTol);
  EXPECT_DOUBLE_EQ(s.lr_at(10), 0.2);
}

TEST(LrSchedule, NoWarmupSchemeOrZeroStepsMeansNoWarmup) {
  JobConfig c = base("exponential", 0.2, 1000);
  c.set_warmup_steps(10);
  c.set_warmup_scheme("none");
  EXPECT_DOUBLE_EQ(make_lr_schedule(c, 0, 0).lr_at(0), 0.2);
  c.set_warmup_scheme("t2t");
  c.set_warmup_steps(0);
  EXPECT_DOUBLE_EQ(make_lr_schedule(c, 0, 0).lr_at(0), 0.2);
}

TEST(LrSchedule, Luong234StaircaseBoundaries) {
  // S = 300: start = 200, decay_steps = 100/4 = 25, factor 0.5.
  JobConfig c = base("exponential", 0.8, 300);
  c.set_decay_scheme("luong234");
  c.set_learning_rate_decay_factor(0.5);
  const LrSchedule s = make_lr_schedule(c, 0, 0);
  EXPECT_EQ(s.start_decay_step, 200);
  EXPECT_EQ(s.decay_steps, 25);
  EXPECT_DOUBLE_EQ(s.lr_at(199), 0.8);
  EXPECT_DOUBLE_EQ(s.lr_at(200), 0.8);  // (step - start)/25 = 0
  EXPECT_DOUBLE_EQ(s.lr_at(224), 0.8);
  EXPECT_DOUBLE_EQ(s.lr_at(225), 0.4);
  EXPECT_DOUBLE_EQ(s.lr_at(250), 0.2);
  EXPECT_DOUBLE_EQ(s.lr_at(299), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(300), 0.05);
}

TEST(LrSchedule, Luong234UnevenStopStep) {
  // S = 100: start = floor(200/3) = 66, decay_steps = floor(34/4) = 8; default factor 0.94.
  JobConfig c = base("exponential", 0.01, 100);
  c.set_decay_scheme("luong234");
  const LrSchedule s = make_lr_schedule(c, 0, 0);
  EXPECT_EQ(s.start_decay_step, 66);
  EXPECT_EQ(s.decay_steps, 8);
  EXPECT_NEAR(s.lr_at(73), 0.01, kTol);
  EXPECT_NEAR(s.lr_at(74), 0.01 * 0.94, kTol);
  EXPECT_NEAR(s.lr_at(99), 0.01 * std::pow(0.94, 4), kTol);
}

TEST(LrSchedule, Luong5AndLuong10) {
  JobConfig c = base("exponential", 1.0, 1000);
  c.set_learning_rate_decay_factor(0.5);
  c.set_decay_scheme("luong5");
  LrSchedule s = make_lr_schedule(c, 0, 0);
  EXPECT_EQ(s.start_decay_step, 500);
  EXPECT_EQ(s.decay_steps, 100);
  EXPECT_DOUBLE_EQ(s.lr_at(599), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(600), 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(999), 1.0 / 16);  // 499/100 = 4 decays
  c.set_decay_scheme("luong10");
  s = make_lr_schedule(c, 0, 0);
  EXPECT_EQ(s.decay_steps, 50);
  EXPECT_DOUBLE_EQ(s.lr_at(549), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(550), 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(999), 1.0 / 512);
}

TEST(LrSchedule, WarmupThenLuongDecayCompose) {
  JobConfig c = base("exponential", 0.8, 300);
  c.set_decay_scheme("luong234");
  c.set_learning_rate_decay_factor(0.5);
  c.set_warmup_steps(40);
  const LrSchedule s = make_lr_schedule(c, 0, 0);
  EXPECT_NEAR(s.lr_at(0), 0.008, kTol);
  EXPECT_DOUBLE_EQ(s.lr_at(225), 0.4);
}

TEST(LrSchedule, EpochBasedExponentialDecayAsTFSlim) {
  // decay_steps = floor(50000 * 2 / 128) = 781.
  JobConfig c = base("exponential", 0.1, 100000);
  c.set_decay_scheme("epochs");
  const LrSchedule s = make_lr_schedule(c, 50000, 128);
  EXPECT_EQ(s.start_decay_step, 0);
  EXPECT_EQ(s.decay_steps, 781);
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(780), 0.1);
  EXPECT_NEAR(s.lr_at(781), 0.1 * 0.94, kTol);
  EXPECT_NEAR(s.lr_at(1562), 0.1 * 0.94 * 0.94, kTol);
  c.set_num_epochs_per_decay(0.5);  // floor(50000*0.5/128) = 195
  EXPECT_EQ(make_lr_schedule(c, 50000, 128).decay_steps, 195);
  EXPECT_THROW(make_lr_schedule(c, 0, 128), ConfigError);
  EXPECT_THROW(make_lr_schedule(c, 100, 128), ConfigError);  // rounds to 0 steps
}

TEST(LrSchedule, PolynomialReachesEndAndStays) {
  // luong234 on S = 300: start 200, decay over 25 steps from 0.8 to 0.1.
  JobConfig c = base("polynomial", 0.8, 300);
  c.set_decay_scheme("luong234");
  c.set_end_learning_rate(0.1);
  const LrSchedule s = make_lr_schedule(c, 0, 0);
  EXPECT_DOUBLE_EQ(s.lr_at(199), 0.8);
  EXPECT_DOUBLE_EQ(s.lr_at(200), 0.8);
  EXPECT_NEAR(s.lr_at(212), (0.8 - 0.1) * (1 - 12.0 / 25) + 0.1, kTol);
  EXPECT_NEAR(s.lr_at(225), 0.1, kTol);
  EXPECT_NEAR(s.lr_at(299), 0.1, kTol);
  c.set_decay_scheme("");
  EXPECT_DOUBLE_EQ(make_lr_schedule(c, 0, 0).lr_at(299), 0.8);
}

// MLPerf's ResNet-50 LARS schedule (NVIDIA's 8-GPU MLPerf Training configuration: 408 images per GPU,
// base rate 10.5, 2 warmup epochs of 1,281,167 / 3,264 = 393 steps, 37 epochs): after the warmup,
// (base - end) * (1 - (step - W) / (S - W))^2 + end with end 1e-4, the reference's tf.train.polynomial_decay
// with power 2 from the end of warmup.
TEST(LrSchedule, PolynomialPowerTwoAfterWarmupAsMLPerf) {
  const int64_t W = 2 * 393, S = 37 * 393;
  JobConfig c = base("polynomial", 10.5, S);
  c.set_warmup_steps(W);
  c.set_warmup_scheme("linear");
  c.set_decay_scheme("after_warmup");
  c.set_end_learning_rate(1e-4);
  c.set_polynomial_decay_power(2);
  const LrSchedule s = make_lr_schedule(c, 0, 0);
  EXPECT_EQ(s.start_decay_step, W);
  EXPECT_EQ(s.decay_steps, S - W);
  EXPECT_NEAR(s.lr_at(0), 10.5 / W, kTol);           // fastnn's linear warmup: lr * (step + 1) / W
  EXPECT_NEAR(s.lr_at(W - 1), 10.5, kTol);
  EXPECT_NEAR(s.lr_at(W), 10.5, kTol);
  const auto mlperf = [&](int64_t step) {
    const double left = 1.0 - static_cast<double>(step - W) / static_cast<double>(S - W);
    return (10.5 - 1e-4) * left * left + 1e-4;
  };
  for (int64_t step : {W + 1, W + 1000, (W + S) / 2, S - 1}) EXPECT_NEAR(s.lr_at(step), mlperf(step), 1e-12) << step;
  EXPECT_NEAR(s.lr_at((W + S) / 2), (10.5 - 1e-4) * 0.25 + 1e-4, 1e-3);  // half way: a quarter of the rate
  EXPECT_NEAR(s.lr_at(S), 1e-4, kTol);
  EXPECT_NEAR(s.lr_at(S + 50), 1e-4, kTol);
  EXPECT_NE(s.describe().find("power-2 decay to 0.0001 over 13755 steps from step 786"), std::string::npos)
      << s.describe();
  // Power 1 is the linear decay the other schemes had; the warmup must end before stop_at_step.
  c.set_polynomial_decay_power(1);
  EXPECT_NEAR(make_lr_schedule(c, 0, 0).lr_at((W + S) / 2), (10.5 - 1e-4) * 0.5 + 1e-4, 1e-3);
  c.set_stop_at_step(W);
  EXPECT_THROW(make_lr_schedule(c, 0, 0), ConfigError);
}

TEST(LrSchedule, CosineAsFastNNWithMinRatio) {
  // W = 100, S = 1100: span 1000, halfway at step 600.
  JobConfig c = base("cosine", 0.1, 1100);
  c.set_warmup_steps(100);
  LrSchedule s = make_lr_schedule(c, 0, 0);
  EXPECT_NEAR(s.lr_at(100), 0.1, kTol);
  EXPECT_NEAR(s.lr_at(600), 0.05, kTol);
  EXPECT_NEAR(s.lr_at(350), 0.1 * 0.5 * (1 + std::cos(std::numbers::pi / 4)), kTol);
  EXPECT_NEAR(s.lr_at(1100), 0.0, kTol);
  EXPECT_NEAR(s.lr_at(2000), 0.0, kTol);
  // FastNN does not clamp step - W at 0: warmup steps are also cosine-scaled (cos is even).
  EXPECT_NEAR(s.lr_at(0), 0.001 * 0.5 * (1 + std::cos(std::numbers::pi * 0.1)), kTol);
  c.set_min_lr_ratio(0.1);
  s = make_lr_schedule(c, 0, 0);
  EXPECT_NEAR(s.lr_at(600), 0.1 * (0.9 * 0.5 + 0.1), kTol);
  EXPECT_NEAR(s.lr_at(1100), 0.01, kTol);
  c.set_warmup_steps(1100);
  EXPECT_THROW(make_lr_schedule(c, 0, 0), ConfigError);
}

TEST(LrSchedule, PiecewiseConstantAsTF) {
  JobConfig c = base("piecewise", 0.1, 1000);
  for (int64_t b : {100, 200}) c.add_lr_boundaries(b);
  for (double v : {0.1, 0.01, 0.001}) c.add_lr_values(v);
  LrSchedule s = make_lr_schedule(c, 0, 0);
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(100), 0.1);  // step <= boundary keeps the earlier value
  EXPECT_DOUBLE_EQ(s.lr_at(101), 0.01);
  EXPECT_DOUBLE_EQ(s.lr_at(200), 0.01);
  EXPECT_DOUBLE_EQ(s.lr_at(201), 0.001);
  c.set_warmup_steps(10);
  c.set_warmup_scheme("linear");
  EXPECT_NEAR(make_lr_schedule(c, 0, 0).lr_at(4), 0.05, kTol);
  c.add_lr_values(0.0001);
  EXPECT_THROW(make_lr_schedule(c, 0, 0), ConfigError);  // 3 boundaries needed for 4 values
  c.add_lr_boundaries(150);
  EXPECT_THROW(make_lr_schedule(c, 0, 0), ConfigError);  // not increasing
}

TEST(LrSchedule, FixedIgnoresWarmupAsFastNN) {
  JobConfig c = base("fixed", 0.3, 100);
  c.set_warmup_steps(50);
  c.set_decay_scheme("luong5");
  const LrSchedule s = make_lr_schedule(c, 0, 0);
  for (int64_t step : {0, 25, 50, 99, 100}) EXPECT_DOUBLE_EQ(s.lr_at(step), 0.3);
}

TEST(LrSchedule, DefaultConfigIsConstantFastNNRate) {
  const LrSchedule s = make_lr_schedule(JobConfig(), 0, 0);
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.01);
  EXPECT_DOUBLE_EQ(s.lr_at(99), 0.01);
  EXPECT_NE(s.describe().find("exponential"), std::string::npos);
}

TEST(LrSchedule, AcceptsEveryChoiceTheSchemaOffers) {
  const Descriptor& d = *JobConfig::descriptor();
  for (const char* name : {"learning_rate_decay_type", "warmup_scheme", "decay_scheme"}) {
    const std::vector<std::string> choices = field_choices(*d.FindFieldByName(name));
    ASSERT_FALSE(choices.empty()) << name;
    for (const std::string& choice : choices) {
      JobConfig c = base("exponential", 0.1, 1000);
      c.GetReflection()->SetString(&c, d.FindFieldByName(name), choice);
      if (c.learning_rate_decay_type() == "piecewise") c.add_lr_values(0.1);
      EXPECT_NO_THROW(make_lr_schedule(c, 50000, 128)) << name << " = \"" << choice << "\"";
    }
  }
}

TEST(LrSchedule, ErrorsForUnusableSettings) {
  JobConfig c = base("exponential", 0.1, 10);
  c.set_decay_scheme("luong10");  // start 5, 5/10 = 0 steps between decays
  EXPECT_THROW(make_lr_schedule(c, 0, 0), ConfigError);
  c.set_decay_scheme("luong3");
  EXPECT_THROW(make_lr_schedule(c, 0, 0), ConfigError);
  c.set_decay_scheme("");
  c.set_learning_rate_decay_type("linear");
  EXPECT_THROW(make_lr_schedule(c, 0, 0), ConfigError);
  EXPECT_THROW(make_lr_schedule(JobConfig(), 0, 0).lr_at(-1), Error);
}

}  // namespace
}  // namespace fastnn
