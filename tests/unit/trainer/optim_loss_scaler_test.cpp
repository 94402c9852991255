// LossScaler (trainer/optim/loss_scaler.h): the dynamic loss-scaling state machine as plain host logic,
// the part of mixed-precision training that is testable without a GPU.
#include <gtest/gtest.h>

#include "core/check.h"
#include "trainer/optim/loss_scaler.h"

namespace fastnn {
namespace {

TEST(LossScaler, StaticScaleNeverChangesAndNeverSkips) {
  LossScaler s({.initial_scale = 128, .dynamic = false});
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(s.update(i % 3 == 0));
  EXPECT_EQ(s.scale(), 128);
  EXPECT_EQ(s.skipped_steps(), 0);
  EXPECT_FLOAT_EQ(s.inverse_scale(), 1.0f / 128);
}

TEST(LossScaler, OverflowHalvesAndSkipsCleanStepsGrowAfterTheWindow) {
  LossScaler s({.initial_scale = 1024, .dynamic = true, .growth_interval = 3});
  EXPECT_FALSE(s.update(true));  // overflow: skip, halve
  EXPECT_EQ(s.scale(), 512);
  EXPECT_TRUE(s.update(false));
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 512);  // 2 clean steps of 3
  EXPECT_EQ(s.clean_steps(), 2);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 1024);  // third clean step: doubled, count restarts
  EXPECT_EQ(s.clean_steps(), 0);
  EXPECT_TRUE(s.update(false));
  EXPECT_TRUE(s.update(false));
  EXPECT_FALSE(s.update(true));  // an overflow resets the count
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.clean_steps(), 0);
  EXPECT_TRUE(s.update(false));
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.skipped_steps(), 2);
}

TEST(LossScaler, ScaleStaysWithinItsBounds) {
  LossScaler s({.initial_scale = 4, .dynamic = true, .growth_interval = 1, .min_scale = 1, .max_scale = 16});
  for (int i = 0; i < 10; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 1);
  for (int i = 0; i < 10; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 16);
}

TEST(LossScaler, RestoreContinuesFromSavedState) {
  LossScaler s({.initial_scale = 8, .dynamic = true, .growth_interval = 4});
  s.restore(64, 3);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 128);
  EXPECT_THROW(s.restore(0, 0), Error);
  EXPECT_THROW(s.restore(2, -1), Error);
}

TEST(LossScaler, RejectsBadOptions) {
  EXPECT_THROW(LossScaler({.initial_scale = 0}), ConfigError);
  EXPECT_THROW(LossScaler({.initial_scale = -1}), ConfigError);
  EXPECT_THROW(LossScaler({.initial_scale = 1, .dynamic = true, .growth_interval = 0}), ConfigError);
  EXPECT_THROW(LossScaler({.initial_scale = 1, .min_scale = 4, .max_scale = 2}), ConfigError);
}

}  // namespace
}  // namespace fastnn
