// No flag silently does nothing: field_effects.h's warnings for flags another flag makes inert, the
// hook names, and the '-' spelling of flags.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "trainer/config/field_effects.h"
#include "trainer/config/job_config.h"
#include "trainer/config/overrides.h"

namespace fastnn {
namespace {

JobConfig validated(std::vector<std::string> args) {
  JobConfig c;
  apply_overrides(c, args);
  validate_job_config(c);
  return c;
}

// The one warning that names `field`, or "" (and a failure when there are several).
std::string warning_for(const JobConfig& c, const std::string& field) {
  std::vector<std::string> hits;
  for (const std::string& w : inert_field_warnings(c))
    if (w.rfind(field + "=", 0) == 0 || w.rfind(field + " ", 0) == 0) hits.push_back(w);
  EXPECT_LE(hits.size(), 1u) << field;
  return hits.empty() ? "" : hits[0];
}

TEST(FieldEffects, DefaultsAndAConsistentConfigAreQuiet) {
  EXPECT_TRUE(inert_field_warnings(JobConfig()).empty());
  const JobConfig c = validated({"--optimizer=adam", "--adam_beta1=0.8", "--opt_epsilon=1e-8",
                            "--learning_rate_decay_type=exponential", "--decay_scheme=epochs",
                            "--num_epochs_per_decay=4", "--learning_rate_decay_factor=0.5", "--warmup_steps=10",
                            "--warmup_scheme=linear", "--num_sample_per_epoch=60000"});
  EXPECT_TRUE(inert_field_warnings(c).empty()) << inert_field_warnings(c)[0];
}

TEST(FieldEffects, OptimizerHyperparametersOfAnotherOptimizer) {
  const JobConfig c = validated({"--optimizer=momentum", "--adam_beta1=0.8", "--rmsprop_decay=0.5", "--momentum=0.5"});
  EXPECT_EQ(warning_for(c, "adam_beta1"), "adam_beta1=0.8 has no effect: optimizer is momentum; only adam, adamweightdecay, adamw or lamb read it");
  EXPECT_NE(warning_for(c, "rmsprop_decay"), "");
  EXPECT_EQ(warning_for(c, "momentum"), "");  // momentum reads it
  EXPECT_EQ(warning_for(validated({"--optimizer=lars", "--momentum=0.5"}), "momentum"), "");  // so does lars
  EXPECT_EQ(warning_for(validated({"--optimizer=momentum", "--lars_eeta=0.01"}), "lars_eeta"),
            "lars_eeta=0.01 has no effect: optimizer is momentum; only lars read it");
}

TEST(FieldEffects, LearningRateFieldsTheDecayTypeIgnores) {
  JobConfig c = validated({"--num_epochs_per_decay=4"});
  EXPECT_NE(warning_for(c, "num_epochs_per_decay").find("decay_scheme epochs"), std::string::npos);
  c = validated({"--learning_rate_decay_type=exponential"});
  EXPECT_NE(warning_for(c, "learning_rate_decay_type").find("keeps the rate constant"), std::string::npos);
  c = validated({"--learning_rate_decay_type=cosine", "--end_learning_rate=0.1", "--min_lr_ratio=0.1"});
  EXPECT_NE(warning_for(c, "end_learning_rate").find("polynomial"), std::string::npos);
  EXPECT_EQ(warning_for(c, "min_lr_ratio"), "");
  c = validated({"--learning_rate_decay_type=piecewise", "--lr_boundaries=10", "--lr_values=1,0.1", "--learning_rate=3"});
  EXPECT_NE(warning_for(c, "learning_rate").find("lr_values"), std::string::npos);
  c = validated({"--lr_values=1,0.1"});
  EXPECT_NE(warning_for(c, "lr_values").find("not piecewise"), std::string::npos);
  c = validated({"--learning_rate_decay_type=fixed", "--warmup_steps=100", "--decay_scheme=luong5"});
  EXPECT_NE(warning_for(c, "warmup_steps").find("no warmup"), std::string::npos);
  EXPECT_NE(warning_for(c, "decay_scheme").find("does not read it"), std::string::npos);
  c = validated({"--num_sample_per_epoch=500"});
  EXPECT_NE(warning_for(c, "num_sample_per_epoch").find("decay_scheme epochs"), std::string::npos);
  c = validated({"--polynomial_decay_power=2"});
  EXPECT_NE(warning_for(c, "polynomial_decay_power").find("polynomial, which is exponential"), std::string::npos);
  c = validated({"--learning_rate_decay_type=polynomial", "--polynomial_decay_power=2", "--decay_scheme=after_warmup",
                 "--warmup_steps=10", "--warmup_scheme=linear"});
  EXPECT_EQ(warning_for(c, "polynomial_decay_power"), "");
  EXPECT_THROW(validated({"--polynomial_decay_power=0"}), ConfigError);
}

TEST(FieldEffects, HookReadersAndStartCheckpoints) {
  JobConfig c = validated({"--hooks=StopAtStepHook", "--log_loss_every_n_iters=5", "--keep_checkpoint_max=2",
                      "--profile_every_n_iters=10"});
  EXPECT_NE(warning_for(c, "log_loss_every_n_iters").find("LoggingTensorHook"), std::string::npos);
  EXPECT_NE(warning_for(c, "keep_checkpoint_max").find("CheckpointSaverHook"), std::string::npos);
  EXPECT_NE(warning_for(c, "profile_every_n_iters").find("ProfilerHook"), std::string::npos);
  c = validated({"--hooks=LoggingTensorHook"});
  EXPECT_NE(warning_for(c, "hooks").find("still stops at stop_at_step"), std::string::npos);
  c = validated({"--ckpt_file_name=ckpt-5", "--checkpoint_exclude_scopes=a/"});
  EXPECT_NE(warning_for(c, "ckpt_file_name").find("task_type is pretrain"), std::string::npos);
  EXPECT_NE(warning_for(c, "checkpoint_exclude_scopes").find("no checkpoint starts the run"), std::string::npos);
  c = validated({"--checkpoint_path=/ckpt/model", "--checkpoint_exclude_scopes=a/"});
  EXPECT_EQ(warning_for(c, "checkpoint_exclude_scopes"), "");
  EXPECT_EQ(start_checkpoint(c), "/ckpt/model");
  EXPECT_EQ(start_checkpoint(validated({"--task_type=finetune", "--model_dir=m", "--ckpt_file_name=ckpt-3"})), "m/ckpt-3");
  EXPECT_EQ(start_checkpoint(JobConfig()), "");
  EXPECT_THROW(validated({"--task_type=finetune", "--model_dir=m", "--checkpoint_path=p"}), ConfigError);
  EXPECT_NO_THROW(validated({"--task_type=finetune", "--checkpoint_path=p"}));
}

TEST(FieldEffects, LossScalingOutsideFp16) {
  JobConfig c = validated({"--nouse_fp16", "--loss_scale=128", "--dynamic_loss_scale", "--loss_scale_window=10"});
  EXPECT_NE(warning_for(c, "loss_scale").find("loss scaling is for fp16 compute"), std::string::npos);
  EXPECT_NE(warning_for(c, "dynamic_loss_scale"), "");
  EXPECT_NE(warning_for(c, "loss_scale_window"), "");
  c = validated({"--loss_scale_window=10"});  // fp16 (the default), static scale
  EXPECT_NE(warning_for(c, "loss_scale_window").find("dynamic_loss_scale is false"), std::string::npos);
  c = validated({"--precision=bf16", "--use_fp16"});
  EXPECT_NE(warning_for(c, "use_fp16").find("precision=bf16"), std::string::npos);
}

TEST(FieldEffects, MarginAndScaleOfTheClassifierHead) {
  JobConfig c = validated({"--loss_type=softmax", "--emb_dim=16", "--margin=0.3", "--scale=30"});
  EXPECT_EQ(warning_for(c, "margin"), "margin=0.3 has no effect: loss_type softmax has no margin (arcface, cosface and "
                                      "their dist_ forms read it)");
  EXPECT_NE(warning_for(c, "scale").find("uses the plain logits"), std::string::npos);
  c = validated({"--loss_type=dist_softmax", "--margin=0.3"});
  EXPECT_NE(warning_for(c, "margin"), "");
  c = validated({"--loss_type=dist_arcface", "--margin=0.3", "--margin2=0.4"});
  EXPECT_NE(warning_for(c, "margin").find("the combined margin"), std::string::npos);
  c = validated({"--loss_type=arcface", "--margin=0.3", "--scale=30"});  // both read
  EXPECT_EQ(warning_for(c, "margin"), "");
  EXPECT_EQ(warning_for(c, "scale"), "");
}

TEST(FieldEffects, UnknownHooksAreRefusedWithTheClosestName) {
  try {
    validated({"--hooks=StopAtStepHook,LogingTensorHook"});
    FAIL() << "an unknown hook was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown hook \"LogingTensorHook\"; did you mean LoggingTensorHook?"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(validated({"--hooks=NanTensorHook"}), ConfigError);
  EXPECT_NO_THROW(validated({"--hooks= CheckpointSaverHook , StopAtStepHook"}));
}

TEST(FieldEffects, DashAndUnderscoreSpellTheSameFlag) {
  const JobConfig c = validated({"--batch-size=7", "--learning-rate", "0.5", "--no-use-fp16", "--model-name=a-b"});
  EXPECT_EQ(c.batch_size(), 7);
  EXPECT_DOUBLE_EQ(c.learning_rate(), 0.5);
  EXPECT_FALSE(c.use_fp16());
  EXPECT_EQ(c.model_name(), "a-b");  // the value keeps its dashes
}

}  // namespace
}  // namespace fastnn

namespace fastnn {
namespace {

TEST(FieldEffects, MixupFieldsNeedMixing) {
  EXPECT_NE(warning_for(validated({"--mixup_prob=0.5"}), "mixup_prob").find("cutmix_alpha are 0"), std::string::npos);
  EXPECT_NE(warning_for(validated({"--mixup_off_epoch=5"}), "mixup_off_epoch"), "");
  EXPECT_NE(warning_for(validated({"--mixup=0.2", "--mixup_switch_prob=0.3"}), "mixup_switch_prob"), "");
  const JobConfig both = validated({"--mixup=0.8", "--cutmix=1.0", "--mixup_prob=0.5", "--mixup_switch_prob=0.3",
                               "--mixup_off_epoch=5"});
  EXPECT_TRUE(inert_field_warnings(both).empty()) << inert_field_warnings(both)[0];
  EXPECT_EQ(both.mixup_alpha(), 0.8);  // timm's flag names are the fields' other names
  EXPECT_EQ(both.cutmix_alpha(), 1.0);
}

TEST(FieldEffects, DropPathFieldsNeedANasnet) {
  EXPECT_NE(warning_for(validated({"--drop_path_keep_prob=0.8"}), "drop_path_keep_prob").find("inception_resnet_v2"),
            std::string::npos);
  EXPECT_NE(warning_for(validated({"--total_training_steps=10"}), "total_training_steps"), "");
  EXPECT_EQ(warning_for(validated({"--model_name=nasnet_mobile", "--drop_path_keep_prob=0.8", "--total_training_steps=10"}),
                        "drop_path_keep_prob"),
            "");
  EXPECT_EQ(warning_for(validated({"--model_name=pnasnet_large", "--total_training_steps=10"}), "total_training_steps"), "");
}

}  // namespace
}  // namespace fastnn
