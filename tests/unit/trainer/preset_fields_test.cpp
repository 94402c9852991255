// The job's own values for its preprocessing preset under timm's names (--ratio, --mean, --std,
// --crop_pct, as flags and in an args.yaml; timm's --scale is random_crop_scale): parsed into pixel
// units, refused with the reason when malformed or in the wrong units, carried from a checkpoint into
// evaluation, and refused by the presets that cannot honour them.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "core/check.h"
#include "pipeline/preset.h"
#include "trainer/config/config_file.h"
#include "trainer/config/overrides.h"
#include "trainer/loop/trainer.h"
#include "trainer/loop/preset_fields.h"

namespace fastnn::loop {
namespace {

JobConfig with_flags(const std::vector<std::string>& args) {
  JobConfig c;
  apply_overrides(c, args);
  return c;
}

std::string preset_field_error(const std::vector<std::string>& args) {
  const JobConfig c = with_flags(args);
  try {
    preset_fields(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

TEST(PresetFields, TimmFlagsSetThePresetsValuesInPixelUnits) {
  const JobConfig c = with_flags({"--preprocessing_name=torchvision", "--random_crop_scale=0.25,1", "--ratio=0.5,2",
                                  "--mean=0.5,0.25,0", "--std=0.5", "--crop_pct=0.95"});
  EXPECT_EQ(c.random_crop_scale(), "0.25,1");
  EXPECT_EQ(c.random_crop_ratio(), "0.5,2");  // --ratio, timm's name
  const PresetFields f = preset_fields(c);
  EXPECT_EQ(f.mean, (std::vector<float>{127.5f, 63.75f, 0}));
  EXPECT_EQ(f.std, (std::vector<float>{127.5f}));
  pipeline::PreprocessConfig p;
  p.preset = c.preprocessing_name();
  apply_preset_fields(f, p);
  p = pipeline::resolve_preset(p);
  EXPECT_EQ(p.area_min, 0.25f);
  EXPECT_EQ(p.aspect_max, 2.0f);
  EXPECT_EQ(p.std, (std::vector<float>{127.5f, 127.5f, 127.5f}));  // one value for every channel
  EXPECT_EQ(p.eval_resize, 235);                                   // floor(224 / 0.95)
  // Unset: the preset's own.
  EXPECT_TRUE(preset_fields(JobConfig()).mean.empty());
  EXPECT_EQ(preset_fields(JobConfig()).crop_pct, 0);
}

TEST(PresetFields, TimmArgsYamlListsWork) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fastnn_preset_fields_" + std::to_string(::getpid()) + ".yaml")).string();
  std::ofstream(path) << "model: resnet_v1_5_50\nrandom_crop_scale: [0.08, 1.0]\nratio: [0.75, 1.3333333333333333]\n"
                         "mean: [0.485, 0.456, 0.406]\nstd: [0.229, 0.224, 0.225]\ncrop_pct: 0.875\n";
  const JobConfig c = read_config_file(path);
  std::filesystem::remove(path);
  const PresetFields f = preset_fields(c);
  EXPECT_EQ(f.area_min, 0.08f);
  EXPECT_EQ(f.aspect_min, 0.75f);
  ASSERT_EQ(f.mean.size(), 3u);
  EXPECT_FLOAT_EQ(f.mean[0], 0.485f * 255);
  EXPECT_FLOAT_EQ(f.std[2], 0.225f * 255);
  EXPECT_EQ(f.crop_pct, 0.875);
}

TEST(PresetFields, MalformedOrPixelUnitValuesAreRefusedWithTheReason) {
  std::string e = preset_field_error({"--mean=123.68,116.78,103.94"});
  EXPECT_NE(e.find("fractions of 255"), std::string::npos) << e;
  EXPECT_NE(e.find("0.485"), std::string::npos) << e;  // 123.68 / 255
  e = preset_field_error({"--std=58.4"});
  EXPECT_NE(e.find("input_std"), std::string::npos) << e;
  EXPECT_NE(preset_field_error({"--std=0"}).find("> 0"), std::string::npos);
  EXPECT_NE(preset_field_error({"--random_crop_scale=0.5"}).find("give two"), std::string::npos);
  EXPECT_NE(preset_field_error({"--random_crop_scale=0.5,0.2"}).find("0 < lo <= hi <= 1"), std::string::npos);
  EXPECT_NE(preset_field_error({"--random_crop_scale=0.5,1.5"}).find("<= 1"), std::string::npos);
  EXPECT_NE(preset_field_error({"--ratio=0,2"}).find("0 < lo <= hi"), std::string::npos);
  EXPECT_NE(preset_field_error({"--mean=0.5,x,0.5"}).find("item 2 \"x\""), std::string::npos);
  EXPECT_NE(preset_field_error({"--crop_pct=1.2"}).find("(0, 1]"), std::string::npos);
  EXPECT_NE(preset_field_error({"--crop_pct=0"}).find("(0, 1]"), std::string::npos);
}

TEST(PresetFields, PresetsRefuseWhatTheyCannotHonour) {
  const JobConfig c = with_flags({"--random_crop_scale=0.08,1"});
  pipeline::PreprocessConfig p;
  p.preset = "vgg";
  apply_preset_fields(preset_fields(c), p);
  EXPECT_THROW(pipeline::resolve_preset(p), ConfigError);
  p.preset = "inception";
  EXPECT_EQ(pipeline::resolve_preset(p).area_min, 0.08f);
  // Three means for a gray model.
  const JobConfig gray = with_flags({"--mean=0.5,0.5,0.5"});
  pipeline::PreprocessConfig q;
  q.preset = "lenet";
  apply_preset_fields(preset_fields(gray), q);
  EXPECT_THROW(pipeline::resolve_preset(q), ConfigError);
}

TEST(PresetFields, EvaluationReadsTheCheckpointsValues) {
  JobConfig saved;
  saved.set_model_name("resnet_v1_5_50");
  saved.set_preprocessing_name("torchvision");
  saved.set_input_mean("0.5");
  saved.set_input_std("0.25");
  saved.set_crop_pct(0.9);
  saved.set_random_crop_scale("0.35,1");
  CheckpointMeta meta;
  meta.set_model_name("resnet_v1_5_50");
  *meta.mutable_config() = saved;
  const JobConfig c = with_checkpoint_model(JobConfig(), meta);
  EXPECT_EQ(c.preprocessing_name(), "torchvision");
  EXPECT_EQ(c.input_mean(), "0.5");
  EXPECT_EQ(c.input_std(), "0.25");
  EXPECT_EQ(c.crop_pct(), 0.9);
  EXPECT_FALSE(c.has_random_crop_scale());  // training images only
  JobConfig given;
  given.set_crop_pct(1.0);  // what the command says wins
  EXPECT_EQ(with_checkpoint_model(given, meta).crop_pct(), 1.0);
}

}  // namespace
}  // namespace fastnn::loop
