// Job config: FastNN's names and defaults, text files, command-line overrides of every type, and the
// error messages users see.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "core/check.h"
#include "trainer/config/config_fields.h"
#include "trainer/config/job_config.h"
#include "trainer/config/overrides.h"

namespace fastnn {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

void override_with(JobConfig& c, std::vector<std::string> args) { apply_overrides(c, args); }

TEST(JobConfig, DefaultsAreFastNNs) {
  // Values from FastNN's flag definitions (shared/reference/fastnn-hyperparameters.md).
  const JobConfig c;
  EXPECT_EQ(c.dataset_name(), "mock");
  EXPECT_EQ(c.num_sample_per_epoch(), 1000000);
  EXPECT_EQ(c.num_classes(), 100);
  EXPECT_EQ(c.labels_offset(), 0);
  EXPECT_EQ(c.shuffle_buffer_size(), 1024);
  EXPECT_EQ(c.num_parallel_batches(), 8);
  EXPECT_EQ(c.prefetch_buffer_size(), 32);
  EXPECT_EQ(c.num_preprocessing_threads(), 16);
  EXPECT_FALSE(c.datasets_use_caching());
  EXPECT_EQ(c.task_type(), "pretrain");
  EXPECT_EQ(c.model_name(), "inception_resnet_v2");
  EXPECT_EQ(c.num_epochs(), 100);
  EXPECT_DOUBLE_EQ(c.weight_decay(), 0.00004);
  EXPECT_FALSE(c.has_max_gradient_norm());
  EXPECT_EQ(c.batch_size(), 32);
  EXPECT_DOUBLE_EQ(c.learning_rate(), 0.01);
  EXPECT_EQ(c.learning_rate_decay_type(), "exponential");
  EXPECT_DOUBLE_EQ(c.learning_rate_decay_factor(), 0.94);
  EXPECT_DOUBLE_EQ(c.end_learning_rate(), 0.0001);
  EXPECT_EQ(c.warmup_steps(), 0);
  EXPECT_EQ(c.warmup_scheme(), "t2t");
  EXPECT_EQ(c.decay_scheme(), "");
  EXPECT_EQ(c.optimizer(), "rmsprop");
  EXPECT_DOUBLE_EQ(c.adadelta_rho(), 0.95);
  EXPECT_DOUBLE_EQ(c.adagrad_initial_accumulator_value(), 0.1);
  EXPECT_DOUBLE_EQ(c.adam_beta1(), 0.9);
  EXPECT_DOUBLE_EQ(c.adam_beta2(), 0.999);
  EXPECT_DOUBLE_EQ(c.opt_epsilon(), 1.0);
  EXPECT_DOUBLE_EQ(c.ftrl_learning_rate_power(), -0.5);
  EXPECT_DOUBLE_EQ(c.ftrl_initial_accumulator_value(), 0.1);
  EXPECT_DOUBLE_EQ(c.ftrl_l1(), 0.0);
  EXPECT_DOUBLE_EQ(c.ftrl_l2(), 0.0);
  EXPECT_DOUBLE_EQ(c.momentum(), 0.9);
  EXPECT_DOUBLE_EQ(c.rmsprop_momentum(), 0.9);
  EXPECT_DOUBLE_EQ(c.rmsprop_decay(), 0.9);
  EXPECT_EQ(c.stop_at_step(), 100);
  EXPECT_EQ(c.log_loss_every_n_iters(), 10);
  EXPECT_EQ(c.profile_every_n_iters(), 0);
  EXPECT_EQ(c.profile_at_task(), 0);
  EXPECT_FALSE(c.log_device_placement());
  EXPECT_FALSE(c.print_model_statistics());
  EXPECT_EQ(c.hooks(), "StopAtStepHook,ProfilerHook,LoggingTensorHook,CheckpointSaverHook");
  EXPECT_EQ(c.save_checkpoints_steps(), 1000);
  EXPECT_TRUE(c.use_fp16());
  EXPECT_DOUBLE_EQ(c.loss_scale(), 1.0);
  EXPECT_NO_THROW(validate_job_config(c));
}

TEST(JobConfig, EveryFastNNFlagIsAFieldByItsExactName) {
  for (const char* name :
       {"dataset_name", "dataset_dir", "file_pattern", "train_files", "eval_files", "num_sample_per_epoch",
        "num_classes", "labels_offset", "preprocessing_name", "shuffle_buffer_size", "num_parallel_batches",
        "prefetch_buffer_size", "num_preprocessing_threads", "datasets_use_caching", "task_type", "model_name",
        "num_epochs", "weight_decay", "max_gradient_norm", "batch_size", "model_dir", "ckpt_file_name",
        "learning_rate", "learning_rate_decay_type", "learning_rate_decay_factor", "num_epochs_per_decay",
        "end_learning_rate", "warmup_steps", "warmup_scheme", "decay_scheme", "optimizer", "adadelta_rho",
        "adagrad_initial_accumulator_value", "adam_beta1", "adam_beta2", "opt_epsilon",
        "ftrl_learning_rate_power", "ftrl_initial_accumulator_value", "ftrl_l1", "ftrl_l2", "momentum",
        "rmsprop_momentum", "rmsprop_decay", "stop_at_step", "log_loss_every_n_iters", "profile_every_n_iters",
        "profile_at_task", "log_device_placement", "print_model_statistics", "hooks", "save_checkpoints_steps",
        "use_fp16", "loss_scale", "enable_paisoar", "protocol"}) {
    const FieldDescriptor* f = JobConfig::descriptor()->FindFieldByName(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_FALSE(field_help(*f).empty()) << name << " has no (fastnn.help)";
  }
}

TEST(JobConfig, ParsesTextFormat) {
  const JobConfig c = parse_job_config_text(R"(
      # a FastNN-style job
      model_name: "resnet_v1_50"
      batch_size: 64
      learning_rate: 0.1
      optimizer: "momentum"
      use_fp16: false
      max_gradient_norm: 5
      lr_boundaries: [1000, 2000]
      lr_values: 0.1 lr_values: 0.01 lr_values: 0.001
      stop_at_step: 123456789012
  )", "job.pbtxt");
  EXPECT_EQ(c.model_name(), "resnet_v1_50");
  EXPECT_EQ(c.batch_size(), 64);
  EXPECT_DOUBLE_EQ(c.learning_rate(), 0.1);
  EXPECT_EQ(c.optimizer(), "momentum");
  EXPECT_FALSE(c.use_fp16());
  EXPECT_TRUE(c.has_max_gradient_norm());
  EXPECT_DOUBLE_EQ(c.max_gradient_norm(), 5.0);
  EXPECT_EQ(c.lr_boundaries_size(), 2);
  EXPECT_EQ(c.lr_values_size(), 3);
  EXPECT_EQ(c.stop_at_step(), 123456789012);
  EXPECT_EQ(c.num_classes(), 100);  // untouched fields keep FastNN defaults
  EXPECT_FALSE(c.has_num_classes());
}

TEST(JobConfig, TextErrorsNameFileLineAndSuggestFields) {
  const std::string e = error_of([] { parse_job_config_text("model_name: \"x\"\nbatchsize: 3\n", "job.pbtxt"); });
  EXPECT_NE(e.find("job.pbtxt:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("batchsize"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean batch_size"), std::string::npos) << e;
  const std::string syntax = error_of([] { parse_job_config_text("batch_size: 3\n\nlearning_rate: {\n", "a.txt"); });
  EXPECT_NE(syntax.find("a.txt:3:"), std::string::npos) << syntax;
  const std::string type = error_of([] { parse_job_config_text("batch_size: \"many\"\n", "b.txt"); });
  EXPECT_NE(type.find("b.txt:1:"), std::string::npos) << type;
}

TEST(JobConfig, ReadsFilesAndOverridesWin) {
  const std::string path = (std::filesystem::temp_directory_path() / "fastnn_config_test.pbtxt").string();
  {
    std::ofstream out(path);
    out << "batch_size: 16\noptimizer: \"adam\"\nenable_paisoar: false\n";
  }
  const std::vector<std::string> args = {"--batch_size=128", "--learning_rate", "0.5"};
  const JobConfig c = load_job_config(path, args);
  EXPECT_EQ(c.batch_size(), 128);
  EXPECT_EQ(c.optimizer(), "adam");
  EXPECT_DOUBLE_EQ(c.learning_rate(), 0.5);
  ASSERT_EQ(ignored_field_notices(c).size(), 1u);
  EXPECT_NE(ignored_field_notices(c)[0].find("enable_paisoar"), std::string::npos);
  std::filesystem::remove(path);
  EXPECT_THROW(read_job_config_file(path), IoError);
  EXPECT_TRUE(ignored_field_notices(JobConfig()).empty());
}

TEST(Overrides, EveryScalarType) {
  JobConfig c;
  override_with(c, {"--batch_size=256", "--stop_at_step=5000000000", "--weight_decay=1e-5",
                    "--model_name=vgg_16", "--optimizer=adamweightdecay", "--decay_scheme=luong234"});
  EXPECT_EQ(c.batch_size(), 256);
  EXPECT_EQ(c.stop_at_step(), 5000000000);
  EXPECT_DOUBLE_EQ(c.weight_decay(), 1e-5);
  EXPECT_EQ(c.model_name(), "vgg_16");
  EXPECT_EQ(c.optimizer(), "adamweightdecay");
  EXPECT_EQ(c.decay_scheme(), "luong234");
  override_with(c, {"--decay_scheme="});  // "" is one of decay_scheme's choices
  EXPECT_EQ(c.decay_scheme(), "");
  EXPECT_TRUE(c.has_decay_scheme());
  override_with(c, {"--labels_offset=-1", "--learning_rate=+0.25"});
  EXPECT_EQ(c.labels_offset(), -1);
  EXPECT_DOUBLE_EQ(c.learning_rate(), 0.25);
}

TEST(Overrides, BoolForms) {
  JobConfig c;
  for (const auto& [arg, want] : std::vector<std::pair<std::string, bool>>{
           {"--use_fp16=false", false}, {"--use_fp16=TRUE", true}, {"--use_fp16=0", false},
           {"--use_fp16=1", true}, {"--nouse_fp16", false}, {"--use_fp16", true}, {"--use_fp16=False", false}}) {
    override_with(c, {arg});
    EXPECT_EQ(c.use_fp16(), want) << arg;
  }
  override_with(c, {"--datasets_use_caching", "--batch_size", "7"});
  EXPECT_TRUE(c.datasets_use_caching());
  EXPECT_EQ(c.batch_size(), 7);
}

TEST(Overrides, RepeatedFieldsTakeCommaSeparatedLists) {
  JobConfig c;
  c.add_lr_boundaries(1);
  override_with(c, {"--lr_boundaries=100, 200,300", "--lr_values=0.1,0.01,1e-3,0.0001"});
  EXPECT_EQ(std::vector<int64_t>(c.lr_boundaries().begin(), c.lr_boundaries().end()),
            (std::vector<int64_t>{100, 200, 300}));
  EXPECT_EQ(std::vector<double>(c.lr_values().begin(), c.lr_values().end()),
            (std::vector<double>{0.1, 0.01, 1e-3, 0.0001}));
  const std::string e = error_of([&] { override_with(c, {"--lr_boundaries=5,x,7"}); });
  EXPECT_NE(e.find("element 2"), std::string::npos) << e;
  EXPECT_EQ(c.lr_boundaries_size(), 3);  // unchanged by the failed override
  override_with(c, {"--lr_boundaries="});
  EXPECT_EQ(c.lr_boundaries_size(), 0);
}

TEST(Overrides, EmptyValueClearsAScalar) {
  JobConfig c;
  override_with(c, {"--max_gradient_norm=5"});
  EXPECT_TRUE(c.has_max_gradient_norm());
  override_with(c, {"--max_gradient_norm="});
  EXPECT_FALSE(c.has_max_gradient_norm());
  override_with(c, {"--batch_size=8", "--batch_size="});
  EXPECT_EQ(c.batch_size(), 32);
}

TEST(Overrides, UnknownNameSuggestsClosestFields) {
  JobConfig c;
  std::string e = error_of([&] { override_with(c, {"--learnig_rate=0.1"}); });
  EXPECT_NE(e.find("unknown flag --learnig_rate"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean --learning_rate"), std::string::npos) << e;
  EXPECT_NE(e.find("fastnn train --help"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"--epsilon=1e-8"}); });
  EXPECT_NE(e.find("--opt_epsilon"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"--batch-sizes=3"}); });  // --batch-size itself is --batch_size
  EXPECT_NE(e.find("did you mean --batch_size"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"--zzzzzzzzzzzzzzzz"}); });
  EXPECT_EQ(e.find("did you mean"), std::string::npos) << e;
  EXPECT_EQ(closest_field_names(*JobConfig::descriptor(), "adam_beta"),
            (std::vector<std::string>{"adam_beta1", "adam_beta2"}));
}

TEST(Overrides, BadValuesNameFieldTypeAndChoices) {
  JobConfig c;
  std::string e = error_of([&] { override_with(c, {"--optimizer=adamx"}); });
  EXPECT_NE(e.find("optimizer must be one of: adadelta, adagrad, adam, ftrl, momentum, sgd, rmsprop, "
                   "adamweightdecay, adamw, lars"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"--decay_scheme=luong3"}); });
  EXPECT_NE(e.find("\"\", luong234, luong5, luong10, epochs"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"--batch_size=abc"}); });
  EXPECT_NE(e.find("batch_size is an int"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"--batch_size=3000000000"}); });
  EXPECT_NE(e.find("32-bit"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"--batch_size=3.5"}); });
  EXPECT_NE(e.find("not an integer"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"--learning_rate=fast"}); });
  EXPECT_NE(e.find("learning_rate is a float"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"--use_fp16=maybe"}); });
  EXPECT_NE(e.find("use_fp16 is a bool"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"--model_dir"}); });
  EXPECT_NE(e.find("needs a value"), std::string::npos) << e;
  e = error_of([&] { override_with(c, {"resnet"}); });
  EXPECT_NE(e.find("unexpected argument 'resnet'"), std::string::npos) << e;
  EXPECT_EQ(c.optimizer(), "rmsprop");
  EXPECT_EQ(c.batch_size(), 32);
}

TEST(Validate, RejectsBadEnumsFromFilesWithChoicesAndListsAllProblems) {
  const JobConfig c = parse_job_config_text(
      "optimizer: \"adamx\"\nbatch_size: 0\nlearning_rate_decay_type: \"step\"\n", "job.pbtxt");
  const std::string e = error_of([&] { validate_job_config(c); });
  EXPECT_NE(e.find("optimizer \"adamx\" is not one of: adadelta"), std::string::npos) << e;
  EXPECT_NE(e.find("learning_rate_decay_type \"step\" is not one of: fixed, exponential, polynomial, cosine, "
                   "piecewise"), std::string::npos) << e;
  EXPECT_NE(e.find("batch_size must be >= 1"), std::string::npos) << e;
}

TEST(Validate, CrossFieldRules) {
  JobConfig c;
  c.set_task_type("finetune");
  EXPECT_NE(error_of([&] { validate_job_config(c); }).find("model_dir"), std::string::npos);
  c.set_model_dir("/ckpt");
  EXPECT_NO_THROW(validate_job_config(c));
  c.set_learning_rate_decay_type("cosine");
  c.set_decay_scheme("luong5");
  EXPECT_NE(error_of([&] { validate_job_config(c); }).find("decay_scheme"), std::string::npos);
  c.set_decay_scheme("");
  c.set_learning_rate_decay_type("piecewise");
  c.add_lr_values(0.1);
  c.add_lr_values(0.2);
  EXPECT_NE(error_of([&] { validate_job_config(c); }).find("lr_boundaries"), std::string::npos);
  c.add_lr_boundaries(10);
  EXPECT_NO_THROW(validate_job_config(c));
  c.set_max_gradient_norm(0);
  EXPECT_NE(error_of([&] { validate_job_config(c); }).find("max_gradient_norm"), std::string::npos);
  c.set_max_gradient_norm(std::nan(""));
  EXPECT_NE(error_of([&] { validate_job_config(c); }).find("max_gradient_norm"), std::string::npos);
}

TEST(JobConfig, FastNNFileListsAndLabelsOffsetAreAccepted) {
  JobConfig c;
  EXPECT_NO_THROW(validate_job_config(c));
  c.set_labels_offset(1);
  c.set_train_files("a.tfrecord,b.tfrecord");
  c.set_eval_files("c.tfrecord");
  EXPECT_NO_THROW(validate_job_config(c));  // the files are resolved by the run (loop_setup_test)
  c.set_labels_offset(-1);
  EXPECT_NE(error_of([&] { validate_job_config(c); }).find("labels_offset must be >= 0"), std::string::npos);
}

TEST(JobConfig, TextRoundTripAndLists) {
  JobConfig c;
  override_with(c, {"--learning_rate=0.003", "--lr_values=0.5,0.25", "--train_files=a.tfrecord, b.tfrecord,,"});
  EXPECT_EQ(parse_job_config_text(job_config_to_text(c), "x").SerializeAsString(), c.SerializeAsString());
  EXPECT_EQ(split_list(c.train_files()), (std::vector<std::string>{"a.tfrecord", "b.tfrecord"}));
  EXPECT_EQ(split_list(JobConfig().hooks()).size(), 4u);
  EXPECT_TRUE(split_list("").empty());
}

TEST(ConfigHelp, ListsEveryFieldWithTypeDefaultAndChoices) {
  const std::string help = format_config_help(*JobConfig::descriptor());
  const Descriptor& d = *JobConfig::descriptor();
  for (int i = 0; i < d.field_count(); ++i) {
    EXPECT_NE(help.find("--" + d.field(i)->name() + "=<"), std::string::npos) << d.field(i)->name();
  }
  EXPECT_NE(help.find("--learning_rate=<float>   default 0.01\n"), std::string::npos) << help;
  EXPECT_NE(help.find("--weight_decay=<float>   default 0.00004\n"), std::string::npos);
  EXPECT_NE(help.find("--use_fp16=<bool>   default true\n"), std::string::npos);
  EXPECT_NE(help.find("--lr_boundaries=<int list>   default []\n"), std::string::npos);
  EXPECT_NE(help.find("--max_gradient_norm=<float>   default unset (no clipping)\n"), std::string::npos);
  EXPECT_NE(help.find("One of: adadelta, adagrad, adam, ftrl, momentum, sgd, rmsprop, adamweightdecay, adamw, lars"),
            std::string::npos);
  EXPECT_NE(help.find("Learning rate:\n"), std::string::npos);
}

}  // namespace
}  // namespace fastnn

namespace fastnn {
namespace {

TEST(JobConfig, DropPathFieldsAreCheckedWhenSet) {
  JobConfig c;
  override_with(c, {"--drop_path_keep_prob=0.7", "--total_training_steps=1000"});
  EXPECT_NO_THROW(validate_job_config(c));
  EXPECT_DOUBLE_EQ(c.drop_path_keep_prob(), 0.7);
  EXPECT_EQ(c.total_training_steps(), 1000);
  override_with(c, {"--drop_path_keep_prob=0"});
  EXPECT_NE(error_of([&] { validate_job_config(c); }).find("drop_path_keep_prob"), std::string::npos);
  JobConfig d;
  override_with(d, {"--total_training_steps=-1"});
  EXPECT_NE(error_of([&] { validate_job_config(d); }).find("total_training_steps"), std::string::npos);
}

}  // namespace
}  // namespace fastnn
