// The flags and files users bring from TF-slim, timm and PLSC: a field's other names (TF-slim's
// train_dir, max_number_of_steps..., timm's lr, epochs, bn_momentum as 1 - decay), flat YAML and JSON
// job configs (unknown keys listed together, nested sections refused), a YAML-looking file without the
// extension, usage errors as UsageError, did-you-mean for model names.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "core/check.h"
#include "trainer/config/config_file.h"
#include "trainer/config/job_config.h"
#include "trainer/config/overrides.h"
#include "trainer/zoo/zoo.h"

namespace fastnn {
namespace {

namespace fs = std::filesystem;

template <typename E = ConfigError>
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error of the expected type";
  return "";
}

JobConfig overridden(std::vector<std::string> args) {
  JobConfig c;
  apply_overrides(c, args);
  return c;
}

TEST(Aliases, TfSlimAndTimmNamesSetTheirFields) {
  const JobConfig c = overridden({"--train_dir=runs/x", "--max_number_of_steps=123", "--log_every_n_steps=7",
                            "--save_interval_secs=600", "--lr=0.5", "--epochs", "3", "--model=lenet", "--opt=adam",
                            "--smoothing=0.1", "--clip_grad=2", "--bn_eps=0.002"});
  EXPECT_EQ(c.output_dir(), "runs/x");
  EXPECT_EQ(c.stop_at_step(), 123);
  EXPECT_EQ(c.log_loss_every_n_iters(), 7);
  EXPECT_EQ(c.save_checkpoints_secs(), 600);
  EXPECT_EQ(c.learning_rate(), 0.5);
  EXPECT_EQ(c.num_epochs(), 3);
  EXPECT_EQ(c.model_name(), "lenet");
  EXPECT_EQ(c.optimizer(), "adam");
  EXPECT_DOUBLE_EQ(c.label_smoothing(), 0.1);
  EXPECT_EQ(c.max_gradient_norm(), 2);
  EXPECT_DOUBLE_EQ(c.batch_norm_epsilon(), 0.002);
  // A dash spelling of an alias works as for field names.
  EXPECT_EQ(overridden({"--train-dir=d"}).output_dir(), "d");
  // A bool field's alias-less negation still works.
  EXPECT_FALSE(overridden({"--noaux_logits"}).aux_logits());
}

TEST(Aliases, BnMomentumIsOneMinusTheDecay) {
  const JobConfig c = overridden({"--bn_momentum=0.01"});
  EXPECT_DOUBLE_EQ(c.batch_norm_decay(), 0.99);
  const std::string e = error_of<UsageError>([] { overridden({"--bn_momentum=2"}); });
  EXPECT_NE(e.find("in [0, 1]"), std::string::npos) << e;
}

TEST(Aliases, UnknownFlagsAreUsageErrorsSuggestingAliasesToo) {
  const std::string e = error_of<UsageError>([] { overridden({"--train_dri=x"}); });
  EXPECT_NE(e.find("did you mean --train_dir"), std::string::npos) << e;
  EXPECT_NE(error_of<UsageError>([] { overridden({"--batch_size=many"}); }).find("not an integer"), std::string::npos);
  EXPECT_NE(error_of<UsageError>([] { overridden({"--optimizer=adamx"}); }).find("must be one of"), std::string::npos);
}

class ConfigFiles : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fastnn_config_files_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  fs::path dir_;
};

TEST_F(ConfigFiles, FlatYamlWithAliasesListsAndNulls) {
  const JobConfig c = read_config_file(write("job.yaml",
                                             "# timm-style\nmodel: lenet\nlr: 0.05\nbatch_size: 16\n"
                                             "train_files: [a.tfrecord, b.tfrecord]\nuse_fp16: False\nseed: null\n"));
  EXPECT_EQ(c.model_name(), "lenet");
  EXPECT_EQ(c.learning_rate(), 0.05);
  EXPECT_EQ(c.batch_size(), 16);
  EXPECT_EQ(c.train_files(), "a.tfrecord,b.tfrecord");
  EXPECT_FALSE(c.use_fp16());
  EXPECT_FALSE(c.has_seed());
}

TEST_F(ConfigFiles, FlatJson) {
  const JobConfig c = read_config_file(write("job.json", R"({"model_name": "mlp", "stop_at_step": 9, "use_fp16": true})"));
  EXPECT_EQ(c.model_name(), "mlp");
  EXPECT_EQ(c.stop_at_step(), 9);
  EXPECT_NE(error_of([&] { read_config_file(write("n.json", R"({"net": {"name": "x"}})")); }).find("holds an object"),
            std::string::npos);
}

TEST_F(ConfigFiles, UnknownKeysAreListedTogether) {
  const std::string p = write("args.yaml", "model: lenet\naa: rand-m9\nmixup_mode: batch\njsd_loss: true\nlearnig_rate: 1\nbce_loss: true\n");
  const std::string e = error_of<UsageError>([&] { read_config_file(p); });
  EXPECT_NE(e.find(p + ": 4 key(s) that are not job config fields"), std::string::npos) << e;
  EXPECT_NE(e.find("learnig_rate (learning_rate?)"), std::string::npos) << e;
}

TEST_F(ConfigFiles, SectionedYamlIsRefusedNamingTheKey) {
  const std::string e = error_of([&] { read_config_file(write("plsc.yaml", "Global:\n  epochs: 10\n")); });
  EXPECT_NE(e.find("key 'Global' holds a mapping"), std::string::npos) << e;
  EXPECT_NE(e.find(":1:"), std::string::npos) << e;
}

TEST_F(ConfigFiles, TextFormatFirstThenYamlLookingFiles) {
  // Protobuf text format stays the default for any other name...
  EXPECT_EQ(read_config_file(write("job.pbtxt", "model_name: \"lenet\"\nbatch_size: 8\n")).batch_size(), 8);
  // ...and a file text format refuses (an unquoted string) but YAML reads whole is taken as YAML.
  EXPECT_EQ(read_config_file(write("job.cfg", "model_name: lenet\nbatch_size: 4\n")).model_name(), "lenet");
  // Where neither reads it, the text-format error (line, suggestion) stands.
  const std::string e = error_of([&] { read_config_file(write("bad.pbtxt", "batchsize: 4\n")); });
  EXPECT_NE(e.find("bad.pbtxt:1"), std::string::npos) << e;
}

TEST(ZooNames, UnknownModelSuggestsNearNames) {
  const std::string e = error_of([] { zoo::zoo_model("resnet50"); });
  // torchvision's resnet50 is ResNet-50 v1.5, named first; TF-slim's v1 is the nearest spelling.
  EXPECT_NE(e.find("did you mean resnet_v1_5_50 (torchvision's and timm's resnet50), resnet_v1_50"), std::string::npos)
      << e;
  EXPECT_NE(error_of([] { zoo::zoo_model("resnet_v150"); }).find("did you mean resnet_v1_50"), std::string::npos);
  EXPECT_EQ(e.find("the zoo has"), std::string::npos) << e;  // not the whole list
  EXPECT_NE(error_of([] { zoo::zoo_model("?"); }).find("the zoo has: "), std::string::npos);
}

TEST(ZooOptions, BatchNormDecayAndEpsilonReachEveryBatchNorm) {
  const NetDef net = zoo::build_net("mobilenet_v1_025", {.num_classes = 3, .height = 32, .width = 32,
                                                         .batch_norm_decay = 0.9, .batch_norm_epsilon = 0.01});
  int n = 0;
  for (const LayerDef& l : net.layers()) {
    if (!l.has_batch_norm()) continue;
    ++n;
    EXPECT_FLOAT_EQ(l.batch_norm().momentum(), 0.9f) << l.name();
    EXPECT_FLOAT_EQ(l.batch_norm().epsilon(), 0.01f) << l.name();
  }
  EXPECT_GT(n, 10);
  const NetDef plain = zoo::build_net("mobilenet_v1_025", {.num_classes = 3, .height = 32, .width = 32});
  for (const LayerDef& l : plain.layers())
    if (l.has_batch_norm()) {
      EXPECT_FLOAT_EQ(l.batch_norm().momentum(), 0.9997f) << l.name();  // TF-slim's own
    }
}

}  // namespace
}  // namespace fastnn
