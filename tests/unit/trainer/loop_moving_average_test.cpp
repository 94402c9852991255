// moving_average_decay (trainer/loop/moving_average.h): tf.train.ExponentialMovingAverage's update with TF's
// num_updates warm-up, against the formula in double over several steps; timm's constant decay; shadows
// starting at the values; restoring from a checkpoint saved in RUN/ema/, and the error naming a missing one.
#include "trainer/loop/moving_average.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/loop/checkpoint_io.h"

namespace fastnn::loop {
namespace {

std::vector<graph::NamedTensor> two_variables() {
  std::vector<graph::NamedTensor> v(2);
  v[0].name = "net/conv1/weights";
  v[0].value = Tensor::from<float>({2, 3}, {1, -2, 3, 0.5f, 0, 7});
  v[1].name = "net/BatchNorm/moving_mean";
  v[1].value = Tensor::from<float>({2}, {0.25f, -4});
  return v;
}

// Step t changes every value, differently per element.
void change(std::vector<graph::NamedTensor>& v, int t) {
  for (graph::NamedTensor& x : v) {
    float* d = x.value.data<float>();
    for (int64_t k = 0; k < x.value.numel(); ++k) d[k] += static_cast<float>(std::sin(0.9 * t + k) * 0.3);
  }
}

TEST(MovingAverages, FollowTensorFlowsUpdateWithItsWarmUp) {
  for (bool warmup : {true, false}) {
    std::vector<graph::NamedTensor> v = two_variables();
    const double decay = 0.8;
    MovingAverages ema(decay, warmup, v);
    std::vector<std::vector<double>> ref;
    for (const graph::NamedTensor& x : v) ref.emplace_back(x.value.data<float>(), x.value.data<float>() + x.value.numel());
    for (int t = 0; t < 12; ++t) {
      change(v, t);
      ema.update(v, t);
      const double d = warmup ? std::min(decay, (1.0 + t) / (10.0 + t)) : decay;
      EXPECT_DOUBLE_EQ(ema.decay_at(t), d);
      for (size_t i = 0; i < v.size(); ++i)
        for (int64_t k = 0; k < v[i].value.numel(); ++k) {
          ref[i][k] -= (1 - d) * (ref[i][k] - v[i].value.data<float>()[k]);
          EXPECT_NEAR(ema.shadows()[i].data[k], ref[i][k], 1e-5) << v[i].name << " step " << t << " warmup " << warmup;
        }
    }
  }
  // The warm-up's first decays: 0.1, 2/11, ... until the configured decay takes over.
  MovingAverages ema(0.9999, true, two_variables());
  EXPECT_DOUBLE_EQ(ema.decay_at(0), 0.1);
  EXPECT_DOUBLE_EQ(ema.decay_at(1), 2.0 / 11.0);
  EXPECT_DOUBLE_EQ(ema.decay_at(100000000), 0.9999);
}

TEST(MovingAverages, StartAtTheValuesAndRefuseADecayOutsideZeroToOne) {
  const std::vector<graph::NamedTensor> v = two_variables();
  MovingAverages ema(0.99, true, v);
  ASSERT_EQ(ema.shadows().size(), 2u);
  EXPECT_EQ(ema.shadows()[0].name, "net/conv1/weights");
  EXPECT_EQ(ema.shadows()[0].data, (std::vector<float>{1, -2, 3, 0.5f, 0, 7}));
  EXPECT_EQ(ema.shadows()[1].data, (std::vector<float>{0.25f, -4}));
  for (double bad : {0.0, 1.0, -0.5, 1.5}) EXPECT_THROW(MovingAverages(bad, true, v), ConfigError) << bad;
}

TEST(MovingAverages, RestoreFromTheRunsEmaFolderOrNameTheMissingCheckpoint) {
  testing_util::ScratchDir run("ema");
  std::vector<graph::NamedTensor> v = two_variables();
  MovingAverages ema(0.5, false, v);
  change(v, 1);
  ema.update(v, 0);
  const std::string dir = moving_average_dir(run.path());
  checkpoint::CheckpointManager manager(dir, {});
  manager.save(7, variable_views(v, ema.shadows()), {}, CheckpointMeta());

  MovingAverages fresh(0.5, false, two_variables());
  fresh.restore(saved_moving_averages(v, dir, 7));
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(fresh.shadows()[i].data, ema.shadows()[i].data) << v[i].name;
  try {
    saved_moving_averages(v, dir, 8);
    FAIL() << "a missing checkpoint was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/ckpt-8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fastnn::loop
