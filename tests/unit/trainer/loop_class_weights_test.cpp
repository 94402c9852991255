// class_weights resolved from the config (trainer/loop/class_weights.h): balanced is scikit-learn's
// n / (K x count) from the manifest's train histogram (labels_offset shifting the classes); a list is
// taken as given; every refusal names what was wrong.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/loop/class_weights.h"

namespace fastnn::loop {
namespace {

RunSetup setup_with_histogram(std::vector<uint64_t> histogram, int64_t num_classes, int64_t labels_offset = 0) {
  RunSetup s;
  SplitInfo train;
  train.name = "train";
  train.label_histogram = std::move(histogram);
  s.manifest.splits.push_back(train);
  s.num_classes = num_classes;
  s.labels_offset = labels_offset;
  return s;
}

JobConfig config(const std::string& weights) {
  JobConfig c;
  c.set_dataset_dir("data");
  c.set_class_weights(weights);
  return c;
}

std::string error_of(const JobConfig& c, const RunSetup& s) {
  try {
    resolve_class_weights(c, s);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ClassWeights, NoneIsEmpty) {
  EXPECT_TRUE(resolve_class_weights(config(""), setup_with_histogram({5, 5}, 2)).empty());
}

TEST(ClassWeights, BalancedIsScikitLearns) {
  // compute_class_weight("balanced", classes=[0,1,2], y) with counts 10, 30, 60: 100 / (3 x count).
  const std::vector<double> w = resolve_class_weights(config("balanced"), setup_with_histogram({10, 30, 60}, 3));
  ASSERT_EQ(w.size(), 3u);
  EXPECT_DOUBLE_EQ(w[0], 100.0 / 30);
  EXPECT_DOUBLE_EQ(w[1], 100.0 / 90);
  EXPECT_DOUBLE_EQ(w[2], 100.0 / 180);
  // Equal counts: every weight 1.
  for (double v : resolve_class_weights(config("balanced"), setup_with_histogram({7, 7, 7, 7}, 4))) EXPECT_EQ(v, 1.0);
}

TEST(ClassWeights, BalancedFollowsLabelsOffset) {
  // labels_offset 1: the data's class 0 (a background class) is not the model's; model class m is data m + 1.
  const std::vector<double> w =
      resolve_class_weights(config("balanced"), setup_with_histogram({1000, 20, 60}, 2, /*labels_offset=*/1));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_DOUBLE_EQ(w[0], 80.0 / 40);
  EXPECT_DOUBLE_EQ(w[1], 80.0 / 120);
}

TEST(ClassWeights, BalancedRefusals) {
  EXPECT_NE(error_of(config("balanced"), setup_with_histogram({4, 0, 4}, 3)).find("class 1 has no record"),
            std::string::npos);
  RunSetup no_manifest;
  no_manifest.num_classes = 3;
  EXPECT_NE(error_of(config("balanced"), no_manifest).find("give num_classes weights instead"), std::string::npos);
  JobConfig named = config("balanced");
  named.set_train_files("a.tfrecord");
  EXPECT_NE(error_of(named, setup_with_histogram({4, 4, 4}, 3)).find("train_files"), std::string::npos);
}

TEST(ClassWeights, ListIsTakenAsGiven) {
  const std::vector<double> w = resolve_class_weights(config("0.5, 2,1e1"), setup_with_histogram({}, 3));
  EXPECT_EQ(w, (std::vector<double>{0.5, 2, 10}));
}

TEST(ClassWeights, ListRefusals) {
  const RunSetup s = setup_with_histogram({}, 3);
  EXPECT_NE(error_of(config("1,2"), s).find("lists 2 weight(s) for 3 classes"), std::string::npos);
  EXPECT_NE(error_of(config("1,2,3,4"), s).find("lists 4 weight(s) for 3 classes"), std::string::npos);
  EXPECT_NE(error_of(config("1,x,3"), s).find("item 2 \"x\" is not a number"), std::string::npos);
  EXPECT_NE(error_of(config("1,,3"), s).find("item 2"), std::string::npos);
  EXPECT_NE(error_of(config("1,0,3"), s).find("class 1 is 0"), std::string::npos);
  EXPECT_NE(error_of(config("1,-2,3"), s).find("> 0"), std::string::npos);
  EXPECT_NE(error_of(config("1,inf,3"), s).find("> 0"), std::string::npos);
  EXPECT_NE(error_of(config("Balanced"), s).find("not a number"), std::string::npos);
}

TEST(ClassWeights, LogText) {
  EXPECT_EQ(class_weights_text({0.5, 2}), "class weights 0.5, 2");
  EXPECT_NE(class_weights_text(std::vector<double>(20, 1)).find("and 8 more"), std::string::npos);
}

}  // namespace
}  // namespace fastnn::loop
