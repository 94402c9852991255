// trainer/loop/best_checkpoint.h: which evaluations improve on the best (by eval_metric, beyond
// early_stopping_min_delta), when patience runs out, a resumed run's replay of metrics.jsonl, and the
// settings refused.
#include "trainer/loop/best_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"

namespace fastnn::loop {
namespace {

JobConfig config(const std::string& metric, int patience, double min_delta = 0, bool keep = true) {
  JobConfig c;
  c.set_keep_best_checkpoint(keep);
  c.set_eval_metric(metric);
  c.set_early_stopping_patience(patience);
  c.set_early_stopping_min_delta(min_delta);
  c.set_eval_every_n_steps(100);
  return c;
}

TEST(BestTracker, Top1ImprovesUpwardAndPatienceCountsEvaluationsInARow) {
  BestTracker t(config("top1", 2));
  EXPECT_TRUE(t.add(100, 0.50, 0.9, 1.0));   // the first is the best so far
  EXPECT_TRUE(t.add(200, 0.60, 0.9, 0.9));
  EXPECT_FALSE(t.add(300, 0.60, 0.95, 0.8));  // equal is not better
  EXPECT_FALSE(t.patience_exhausted());
  EXPECT_TRUE(t.add(400, 0.61, 0.9, 0.9));   // improving resets the count
  EXPECT_FALSE(t.add(500, 0.55, 0.9, 0.9));
  EXPECT_FALSE(t.add(600, 0.58, 0.9, 0.9));
  EXPECT_TRUE(t.patience_exhausted());
  EXPECT_EQ(t.best_step(), 400);
  EXPECT_DOUBLE_EQ(t.best_value(), 0.61);
  EXPECT_EQ(t.describe_best(), "top1 0.61 at step 400");
}

TEST(BestTracker, LossImprovesDownwardBeyondMinDelta) {
  BestTracker t(config("loss", 1, 0.05));
  EXPECT_TRUE(t.add(100, 0.1, 0.2, 1.00));
  EXPECT_FALSE(t.add(200, 0.9, 0.9, 0.96));  // a fall of 0.04: within min_delta
  EXPECT_TRUE(t.patience_exhausted());
  EXPECT_TRUE(t.add(300, 0.0, 0.0, 0.90));   // best is still 1.00: a fall of 0.10
  EXPECT_FALSE(t.patience_exhausted());
  EXPECT_EQ(t.best_step(), 300);
}

TEST(BestTracker, PatienceZeroNeverStops) {
  BestTracker t(config("top5", 0));
  EXPECT_TRUE(t.keeps_best());
  EXPECT_FALSE(t.stops_early());
  t.add(1, 0, 0.5, 0);
  for (int i = 2; i < 50; ++i) t.add(i, 0, 0.1, 0);
  EXPECT_FALSE(t.patience_exhausted());
}

TEST(BestTracker, AResumedRunReplaysTheEvaluationsUpToItsStart) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("fastnn_best_" + std::to_string(::getpid()) + ".jsonl");
  {
    std::ofstream f(p);
    f << R"({"event":"train","step":50,"loss":2,"accuracy":0.1,"lr":0.1,"images_per_sec":1})" << "\n"
      << R"({"event":"eval","step":100,"split":"test","top1":0.7,"top5":0.9,"loss":0.8})" << "\n"
      << R"({"event":"eval","step":200,"split":"test","top1":0.6,"top5":0.9,"loss":0.9})" << "\n"
      << R"({"event":"eval","step":300,"split":"test","top1":0.9,"top5":0.9,"loss":0.1})" << "\n";  // after the start
  }
  BestTracker t(config("top1", 2));
  t.replay(p.string(), 200);
  EXPECT_EQ(t.best_step(), 100);
  EXPECT_EQ(t.stale(), 1);
  EXPECT_FALSE(t.add(300, 0.65, 0.9, 0.9));
  EXPECT_TRUE(t.patience_exhausted());  // as the uninterrupted run: 200 and 300 did not improve
  std::filesystem::remove(p);
  BestTracker missing(config("top1", 2));
  missing.replay("/nonexistent/metrics.jsonl", 200);  // no file: nothing replayed, no failure
  EXPECT_FALSE(missing.has_best());
}

TEST(BestTracker, SettingsThatCannotWorkAreRefused) {
  JobConfig no_evals = config("top1", 3);
  no_evals.set_eval_every_n_steps(0);
  try {
    BestTracker t(no_evals);
    FAIL() << "no evaluations accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("set eval_every_n_steps"), std::string::npos) << e.what();
  }
  EXPECT_THROW(BestTracker(config("accuracy", 1)), ConfigError);
  EXPECT_THROW(BestTracker(config("top1", -1)), ConfigError);
  EXPECT_THROW(BestTracker(config("top1", 1, -0.1)), ConfigError);
  JobConfig off;  // neither option: no evaluations needed
  EXPECT_FALSE(BestTracker(off).enabled());
}

}  // namespace
}  // namespace fastnn::loop
