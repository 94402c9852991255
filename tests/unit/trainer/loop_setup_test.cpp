// Training-loop pieces that need no data: step-count and directory rules, presets, sanity checks,
// and the weights round trip through checkpoint arrays.
#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"
#include "core/named_array.h"
#include "trainer/loop/checkpoint_io.h"
#include "trainer/loop/run_setup.h"
#include "trainer/loop/sanity.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::loop {
namespace {

TEST(LoopSetup, TotalStepsTakesTheSmallerOfWhatIsSet) {
  JobConfig c;
  EXPECT_EQ(total_train_steps(c, 1000), 100);  // defaults: stop_at_step 100 < 100 epochs
  EXPECT_EQ(total_train_steps(c, 0), 0);
  c.set_num_epochs(2);
  EXPECT_EQ(total_train_steps(c, 937), 1874);  // epochs alone win over the default stop_at_step
  c.set_stop_at_step(500);
  EXPECT_EQ(total_train_steps(c, 937), 500);
  c.set_stop_at_step(5000);
  EXPECT_EQ(total_train_steps(c, 937), 1874);
  c.clear_num_epochs();
  EXPECT_EQ(total_train_steps(c, 937), 5000);  // stop_at_step alone: the data repeats
}

TEST(LoopSetup, RunDirectory) {
  JobConfig c;
  EXPECT_EQ(run_directory(c), ".");
  c.set_model_dir("runA");
  EXPECT_EQ(run_directory(c), "runA");
  c.set_task_type("finetune");  // model_dir is then the checkpoint to start from
  EXPECT_EQ(run_directory(c), ".");
  c.set_output_dir("out");
  EXPECT_EQ(run_directory(c), "out");
}

TEST(LoopSetup, PresetFollowsTheModelFamily) {
  EXPECT_EQ(preset_for_model("lenet"), "lenet");
  EXPECT_EQ(preset_for_model("mlp"), "lenet");
  EXPECT_EQ(preset_for_model("resnet_cifar_20"), "cifarnet");
  EXPECT_EQ(preset_for_model("resnet_v1_50"), "resnet");
  EXPECT_EQ(preset_for_model("vgg_16"), "vgg");
  EXPECT_EQ(preset_for_model("inception_v3"), "inception");
}

TEST(LoopSetup, MissingDatasetDirIsAConfigError) {
  JobConfig c;
  c.set_model_name("lenet");
  EXPECT_THROW(make_run_setup(c), ConfigError);
}

TEST(LoopSanity, FirstLossNearLnClasses) {
  const double ln10 = std::log(10.0);
  EXPECT_FALSE(first_loss_warning(ln10, 10).has_value());
  EXPECT_FALSE(first_loss_warning(ln10 * 1.8, 10).has_value());
  ASSERT_TRUE(first_loss_warning(40.0, 10).has_value());
  EXPECT_NE(first_loss_warning(40.0, 10)->find("ln(10)"), std::string::npos);
  EXPECT_TRUE(first_loss_warning(0.01, 10).has_value());  // near-certain from step 0: leaked labels
}

TEST(LoopSanity, NonFiniteLossStops) {
  EXPECT_NO_THROW(check_loss_finite(2.3, 5, 0.1));
  try {
    check_loss_finite(std::nan(""), 17, 0.5);
    FAIL() << "NaN accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NaN at step 17"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_loss_finite(INFINITY, 1, 0.1), Error);
}

TEST(LoopSanity, AccuracyGap) {
  EXPECT_FALSE(accuracy_gap_report(0.9, 0.88).suspicious);
  const GapReport r = accuracy_gap_report(0.95, 0.4);
  EXPECT_TRUE(r.suspicious);
  EXPECT_NE(r.line.find("+0.5500"), std::string::npos) << r.line;
}

TEST(LoopCheckpointIo, WeightsRoundTripIntoDifferentlySeededGraph) {
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  graph::Graph a(net, {.batch_size = 2, .seed = 1});
  graph::Graph b(net, {.batch_size = 2, .seed = 2});
  const std::vector<ckpt::ArrayView> views = weight_views(a);
  ASSERT_EQ(views.size(), a.variables().size());
  const auto first_a = a.variables()[0].value.to_vector<float>();
  ASSERT_NE(first_a, b.variables()[0].value.to_vector<float>());
  const std::vector<ckpt::Array> copies = ckpt::to_arrays(views);  // as if read back from a file
  restore_weights(b, ckpt::views_of(copies), "test");
  for (size_t i = 0; i < views.size(); ++i)
    EXPECT_EQ(a.variables()[i].value.to_vector<float>(), b.variables()[i].value.to_vector<float>()) << views[i].name;
  // A missing array is an error naming it.
  std::vector<ckpt::ArrayView> partial = ckpt::views_of(copies);
  const std::string dropped = partial.back().name;
  partial.pop_back();
  try {
    restore_weights(b, partial, "ckpt-9");
    FAIL() << "missing array accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(dropped), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fastnn::loop
