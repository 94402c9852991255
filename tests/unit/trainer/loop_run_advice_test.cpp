// Runs that explain themselves: an evaluation collapsed to one class (or with an exploded loss) while
// training fits is said with the batch-norm numbers that usually explain it; a preset that crops big
// images down to a sliver, or blows small ones up, is said at the start.
#include <gtest/gtest.h>

#include <cmath>

#include "trainer/loop/input_geometry.h"
#include "trainer/loop/sanity.h"

namespace fastnn::loop {
namespace {

EvalShape collapsed(double decay) {
  EvalShape e;
  e.train_accuracy = 0.95;
  e.eval_accuracy = 0.5;
  e.eval_loss = 0.9;
  e.num_classes = 2;
  e.confusion = {50, 0, 50, 0};  // everything predicted as class 0, the classes balanced
  e.steps = 60;
  e.batch_norm_decay = decay;
  return e;
}

TEST(EvalCollapse, OneClassEverywhereNamesTheMovingAverages) {
  const std::string r = eval_collapse_report(collapsed(0.9997));
  EXPECT_NE(r.find("predicts class 0 for 100% of its 100 examples"), std::string::npos) << r;
  EXPECT_NE(r.find("60 updates at decay 0.9997"), std::string::npos) << r;
  // 0.9997^60 = 0.982: 98% of the starting values remain; 3 / 0.0003 = 10000 steps to settle.
  EXPECT_NE(r.find("still hold 98%"), std::string::npos) << r;
  EXPECT_NE(r.find("about 10000 steps"), std::string::npos) << r;
  EXPECT_NE(r.find("batch_norm_decay=0.9 "), std::string::npos) << r;  // 60 steps: only 0.9 settles in them
  EvalShape longer = collapsed(0.9997);
  longer.steps = 2000;
  const std::string l = eval_collapse_report(longer);
  EXPECT_NE(l.find("batch_norm_decay=0.99 (timm: bn_momentum=0.01), which settles in about 300 steps"), std::string::npos) << l;
}

TEST(EvalCollapse, ADecayAlreadyAtTheAdviceIsNotAdvisedAgain) {
  // resnet_v1_5_50 keeps its moving averages at decay 0.9 already: 12 steps leave 0.9^12 = 28%.
  EvalShape e = collapsed(0.9);
  e.steps = 12;
  const std::string r = eval_collapse_report(e);
  EXPECT_NE(r.find("12 updates at decay 0.9 and still hold 28%"), std::string::npos) << r;
  EXPECT_NE(r.find("about 30 steps to settle. Train longer."), std::string::npos) << r;
  EXPECT_EQ(r.find("batch_norm_decay="), std::string::npos) << r;
}

TEST(EvalCollapse, WithoutBatchNormItNamesOverFitting) {
  const std::string r = eval_collapse_report(collapsed(-1));
  EXPECT_NE(r.find("over-fitting"), std::string::npos) << r;
}

TEST(EvalCollapse, SaneOrUntrainedEvaluationsAreQuiet) {
  EvalShape fine = collapsed(0.9997);
  fine.confusion = {45, 5, 6, 44};
  EXPECT_EQ(eval_collapse_report(fine), "");
  EvalShape untrained = collapsed(0.9997);
  untrained.train_accuracy = 0.55;  // training does not fit either: nothing to explain by batch norm
  EXPECT_EQ(eval_collapse_report(untrained), "");
  EvalShape skewed = collapsed(0.9997);
  skewed.confusion = {95, 0, 5, 0};  // the data itself is 95% class 0
  EXPECT_EQ(eval_collapse_report(skewed), "");
}

TEST(EvalCollapse, AnExplodedLossIsSaidEvenWithoutAConfusionMatrix) {
  EvalShape e = collapsed(0.997);
  e.confusion.clear();
  e.num_classes = 1000;
  e.eval_loss = 7377077;
  const std::string r = eval_collapse_report(e);
  EXPECT_NE(r.find("loss is 7.37708e+06"), std::string::npos) << r;
  EXPECT_NE(r.find("decay 0.997"), std::string::npos) << r;
}

RunSetup setup_for(const std::string& preset, int size, int64_t data_h, int64_t data_w) {
  RunSetup s;
  s.preset = preset;
  s.height = s.width = size;
  s.manifest.image.height = data_h;
  s.manifest.image.width = data_w;
  return s;
}

TEST(InputGeometry, CroppingPresetsWarnAboutBigImages) {
  const InputGeometry g = describe_input_geometry(setup_for("lenet", 28, 256, 256));
  EXPECT_NE(g.line.find("centre crop or zero-pad to 28x28"), std::string::npos) << g.line;
  EXPECT_NE(g.line.find("images 256x256 (every record)"), std::string::npos) << g.line;
  EXPECT_NE(g.warning.find("each 256x256 image becomes a 28x28 crop of it (1% of its area)"), std::string::npos)
      << g.warning;
  EXPECT_FALSE(describe_input_geometry(setup_for("cifarnet", 32, 213, 213)).warning.empty());
  EXPECT_TRUE(describe_input_geometry(setup_for("lenet", 28, 28, 28)).warning.empty());
  EXPECT_TRUE(describe_input_geometry(setup_for("cifarnet", 32, 32, 32)).warning.empty());
}

TEST(InputGeometry, ResizingPresetsWarnOnlyAboutBlowingUp) {
  EXPECT_TRUE(describe_input_geometry(setup_for("inception", 224, 427, 640)).warning.empty());
  const InputGeometry g = describe_input_geometry(setup_for("inception", 224, 28, 28));
  EXPECT_NE(g.warning.find("blown up to 224x224"), std::string::npos) << g.warning;
  // Unknown sizes (no manifest size, no training file): the line only, no warning.
  const InputGeometry u = describe_input_geometry(setup_for("vgg", 224, 0, 0));
  EXPECT_NE(u.line.find("shorter side resized"), std::string::npos) << u.line;
  EXPECT_TRUE(u.warning.empty());
}

}  // namespace
}  // namespace fastnn::loop
