// Training-loop pieces that need no data: step-count and directory rules, presets, sanity checks,
// and the weights round trip through checkpoint arrays.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/check.h"
#include "core/named_array.h"
#include "core/tfrecord.h"
#include "pipeline/preset.h"
#include "trainer/config/job_config.h"
#include "trainer/loop/checkpoint_io.h"
#include "trainer/loop/input_geometry.h"
#include "trainer/loop/run_setup.h"
#include "trainer/loop/sanity.h"
#include "trainer/runner/step_runner.h"
#include "trainer/loop/trainer.h"
#include "trainer/zoo/zoo.h"
#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/train_step.h"

namespace fastnn::loop {
namespace {

// A fresh scratch folder holding one shard, a.tfrecord, of one record: enough for make_run_setup.
std::filesystem::path one_record_dataset(const std::string& tag) {
  const std::filesystem::path dir =
      std::filesystem::path(FASTNN_BINARY_DIR) / "test-scratch" / str(tag, "-", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  TFRecordWriter w((dir / "a.tfrecord").string());
  w.write("x");
  w.close();
  return dir;
}

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
  EXPECT_EQ(run_directory(c), "runs/inception_resnet_v2");  // never the current directory by default
  c.set_model_name("lenet");
  EXPECT_EQ(run_directory(c), "runs/lenet");
  c.set_model_dir("runA");
  EXPECT_EQ(run_directory(c), "runA");
  c.set_task_type("finetune");  // model_dir is then the checkpoint to start from
  EXPECT_EQ(run_directory(c), "runs/lenet");
  c.set_output_dir("out");
  EXPECT_EQ(run_directory(c), "out");
  c.set_output_dir(".");  // asked for
  EXPECT_EQ(run_directory(c), ".");
}

TEST(LoopSetup, PresetFollowsTheModelFamily) {
  EXPECT_EQ(preset_for_model("lenet"), "lenet");
  EXPECT_EQ(preset_for_model("mlp"), "lenet");
  EXPECT_EQ(preset_for_model("resnet_cifar_20"), "cifarnet");
  EXPECT_EQ(preset_for_model("resnet_v1_50"), "resnet");
  EXPECT_EQ(preset_for_model("vgg_16"), "vgg");
  EXPECT_EQ(preset_for_model("inception_v3"), "inception");
}

// train_files / eval_files name plain TFRecord files (no manifest): counted once, in the given order.
TEST(LoopSetup, TrainAndEvalFilesNamePlainTfrecordFiles) {
  const std::filesystem::path dir =
      std::filesystem::path(FASTNN_BINARY_DIR) / "test-scratch" / str("train-files-", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const auto& [name, n] : std::vector<std::pair<std::string, int>>{{"a.tfrecord", 3}, {"b.tfrecord", 5}, {"c.tfrecord", 2}}) {
    TFRecordWriter w((dir / name).string());
    for (int r = 0; r < n; ++r) w.write(str(name, r));
    w.close();
  }
  JobConfig c;
  c.set_model_name("lenet");
  c.set_dataset_dir(dir.string());
  c.set_train_files("b.tfrecord, a.tfrecord");
  c.set_eval_files((dir / "c.tfrecord").string());
  c.set_labels_offset(1);
  EXPECT_THROW(make_run_setup(c), ConfigError);  // no manifest to read num_classes from
  c.set_num_classes(10);
  const RunSetup s = make_run_setup(c);
  ASSERT_EQ(s.train_files.files.size(), 2u);
  EXPECT_EQ(s.train_files.files[0].path, (dir / "b.tfrecord").string());  // the order given
  EXPECT_EQ(s.train_files.files[0].records, 5);
  EXPECT_EQ(s.train_files.files[1].records, 3);
  EXPECT_EQ(s.samples_per_epoch, 8);
  EXPECT_EQ(s.eval_split, "eval_files");
  EXPECT_EQ(s.eval_files.total_records(), 2u);
  EXPECT_EQ(s.labels_offset, 1);
  c.set_train_files("a.tfrecord,missing.tfrecord");
  EXPECT_THROW(make_run_setup(c), ConfigError);
  std::filesystem::remove_all(dir);
}

// drop_path_keep_prob / total_training_steps reach the NASNet a run builds (TF-slim's hparams otherwise).
TEST(LoopSetup, DropPathFieldsReachTheNasnet) {
  const std::filesystem::path dir = one_record_dataset("drop-path");
  JobConfig c;
  c.set_model_name("nasnet_cifar");
  c.set_dataset_dir(dir.string());
  c.set_train_files("a.tfrecord");
  c.set_num_classes(10);
  const auto drop_paths = [&] {
    std::vector<DropPathLayer> v;
    const RunSetup s = make_run_setup(c);
    for (const LayerDef& l : s.net.layers())
      if (l.has_drop_path()) v.push_back(l.drop_path());
    return v;
  };
  std::vector<DropPathLayer> d = drop_paths();
  ASSERT_FALSE(d.empty());
  EXPECT_FLOAT_EQ(d[0].keep_prob(), 0.6f);  // slim's cifar_config
  EXPECT_EQ(d[0].total_steps(), 937500);
  EXPECT_EQ(preset_for_model("nasnet_cifar"), "cifarnet");
  c.set_drop_path_keep_prob(0.9);
  c.set_total_training_steps(500);
  d = drop_paths();
  ASSERT_FALSE(d.empty());
  EXPECT_FLOAT_EQ(d[0].keep_prob(), 0.9f);
  EXPECT_EQ(d[0].total_steps(), 500);
  std::filesystem::remove_all(dir);
}

// The data's class map: dataset_dir's labels.txt (less labels_offset); eval files from a folder whose
// labels.txt numbers the classes otherwise are refused, naming the folder and the first difference.
TEST(LoopSetup, ClassMapOfTheDataAndFoldersThatDisagree) {
  const std::filesystem::path root =
      std::filesystem::path(FASTNN_BINARY_DIR) / "test-scratch" / str("class-map-", ::getpid());
  std::filesystem::remove_all(root);
  for (const char* d : {"train", "val"}) {
    std::filesystem::create_directories(root / d);
    TFRecordWriter w((root / d / str(d, "-00000-of-00001.tfrecord")).string());
    w.write("x");
    w.close();
  }
  { std::ofstream(root / "train/labels.txt") << "0:background\n1:daisy\n2:roses\n"; }
  JobConfig c;
  c.set_model_name("lenet");
  c.set_dataset_dir((root / "train").string());
  c.set_file_pattern("%s-*.tfrecord");
  c.set_eval_files((root / "val/val-00000-of-00001.tfrecord").string());
  RunSetup s = make_run_setup(c);  // val has no labels.txt: nothing to compare
  ASSERT_TRUE(s.classes.has_value());
  EXPECT_EQ(s.classes->names, (std::vector<std::string>{"background", "daisy", "roses"}));
  EXPECT_EQ(s.classes->origin, (root / "train/labels.txt").string());
  { std::ofstream(root / "val/labels.txt") << "background\ndaisy\nroses\n"; }
  EXPECT_NO_THROW(make_run_setup(c));
  c.set_labels_offset(1);
  EXPECT_EQ(make_run_setup(c).classes->names, (std::vector<std::string>{"daisy", "roses"}));
  { std::ofstream(root / "val/labels.txt") << "background\ndaisy\ntulips\n"; }
  try {
    make_run_setup(c);
    FAIL() << "eval files of another class map accepted";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(str("eval files in ", (root / "val").string(), ": the class maps differ: class 1 is \"roses\"")),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("\"tulips\" in " + (root / "val/labels.txt").string()), std::string::npos) << m;
    EXPECT_NE(m.find("--labels-from"), std::string::npos) << m;
  }
  std::filesystem::remove_all(root);
}

// FastNN's file_pattern (%s = split) and globs in train_files, on a TF-slim layout without a manifest:
// labels.txt gives the class count (less labels_offset, as TF-slim), validation before test.
TEST(LoopSetup, FilePatternGlobsAndLabelsTxt) {
  const std::filesystem::path dir =
      std::filesystem::path(FASTNN_BINARY_DIR) / "test-scratch" / str("file-pattern-", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const auto& [name, n] : std::vector<std::pair<std::string, int>>{{"flowers_train_00001-of-00002.tfrecord", 3},
                                                                       {"flowers_train_00000-of-00002.tfrecord", 5},
                                                                       {"flowers_test_00000-of-00001.tfrecord", 2},
                                                                       {"flowers_validation_00000-of-00001.tfrecord", 4}}) {
    TFRecordWriter w((dir / name).string());
    for (int r = 0; r < n; ++r) w.write(str(name, r));
    w.close();
  }
  JobConfig c;
  c.set_model_name("lenet");
  c.set_dataset_dir(dir.string());
  c.set_file_pattern("flowers_%s_*.tfrecord");
  EXPECT_THROW(make_run_setup(c), ConfigError);  // neither manifest nor labels.txt nor num_classes
  { std::ofstream(dir / "labels.txt") << "0:background\n1:daisy\n2:roses\n"; }
  RunSetup s = make_run_setup(c);
  EXPECT_EQ(s.num_classes, 3);
  ASSERT_EQ(s.train_files.files.size(), 2u);
  EXPECT_EQ(s.train_files.files[0].path, (dir / "flowers_train_00000-of-00002.tfrecord").string());  // sorted
  EXPECT_EQ(s.samples_per_epoch, 8);
  EXPECT_EQ(s.eval_split, "validation");
  EXPECT_EQ(s.eval_files.total_records(), 4u);
  c.set_labels_offset(1);
  EXPECT_EQ(make_run_setup(c).num_classes, 2);
  c.set_num_classes(7);  // an explicit num_classes wins
  EXPECT_EQ(make_run_setup(c).num_classes, 7);
  std::filesystem::remove(dir / "flowers_validation_00000-of-00001.tfrecord");
  s = make_run_setup(c);
  EXPECT_EQ(s.eval_split, "test");
  EXPECT_EQ(s.eval_files.total_records(), 2u);
  // train_files globs beat file_pattern; a glob matching nothing is an error naming it.
  c.set_train_files("flowers_train_0000[1]-*, flowers_test_*");
  s = make_run_setup(c);
  EXPECT_EQ(s.samples_per_epoch, 5);
  c.set_train_files("flowers_nothing_*");
  try {
    make_run_setup(c);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("train_files: flowers_nothing_* matches no file"), std::string::npos) << e.what();
  }
  c.clear_train_files();
  c.set_file_pattern("flowers_%s_*.tf");
  EXPECT_THROW(make_run_setup(c), ConfigError);  // no train match
  c.set_file_pattern("flowers_*.tfrecord");
  EXPECT_THROW(make_run_setup(c), ConfigError);  // no %s
  std::filesystem::remove_all(dir);
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

TEST(LoopSanity, LabelAgnosticLossKnownAnswers) {
  const std::vector<double> uniform{1.5, 1.5, 1.5, -2, -2, -2};  // 2 rows of equal logits: ln 3
  EXPECT_NEAR(label_agnostic_loss(uniform, 3), std::log(3.0), 1e-12);
  const std::vector<double> z{0, std::log(3.0)};  // ln(1 + 3) - ln(3)/2
  EXPECT_NEAR(label_agnostic_loss(z, 2), std::log(4.0) - std::log(3.0) / 2, 1e-12);
  EXPECT_THROW(label_agnostic_loss(z, 3), Error);
}

TEST(LoopSanity, LargeInitialLogitsGetANoteNotAWarning) {
  const FirstLossCheck hot = first_loss_check(14.7, 10, 13.9);
  EXPECT_FALSE(hot.warning);
  EXPECT_NE(hot.line.find("initial logits are large"), std::string::npos);
  EXPECT_TRUE(first_loss_check(0.01, 10, 13.9).warning);  // labels leaked even though logits are large
  EXPECT_TRUE(first_loss_check(40.0, 10, std::log(10.0)).warning);  // far above what the logits explain
  EXPECT_TRUE(first_loss_check(std::log(10.0), 10, 13.9).line.empty());
}

// TF-slim's LeNet with its published init on inputs in [-1, 1): the first loss is far above ln 10, and
// the check explains it (a note) instead of warning.
TEST(LoopSanity, LenetFirstLossIsExplainedByItsInit) {
  graph::Graph g(zoo::build_net("lenet", {.num_classes = 10}), {.batch_size = 16, .seed = 1});
  TrainStep ts(g);
  const Tensor x = testing_util::random_tensor({16, 1, 28, 28}, DType::kF32, 5);
  const Tensor labels = testing_util::labels_of({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5});
  const StepResult r = ts.loss(x, labels, 0);
  const double l0 = label_agnostic_loss(g.output(0).to_vector<double>(), 10);
  EXPECT_GT(r.main_loss, 2 * std::log(10.0) + 1);  // the old check's window: it used to warn
  const FirstLossCheck c = first_loss_check(r.main_loss, 10, l0);
  EXPECT_FALSE(c.warning) << c.line << " (label-agnostic " << l0 << ")";
  EXPECT_FALSE(c.line.empty());
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

// The loop's checkpoint path on a step runner: host values -> views -> arrays (as if read back from a
// file) -> checkpoint_variables -> set_host_variables into a differently seeded runner.
TEST(LoopCheckpointIo, WeightsRoundTripIntoDifferentlySeededRunner) {
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  runner::StepRunnerOptions o{.batch_size = 2, .seed = 1};
  o.optimizer.optimizer = "sgd";
  auto a = runner::make_step_runner(net, o);
  o.seed = 2;
  auto b = runner::make_step_runner(net, o);
  const std::vector<NamedArray> values = a->host_variables();
  const std::vector<checkpoint::ArrayView> views = variable_views(a->graph().variables(), values);
  ASSERT_EQ(views.size(), a->graph().variables().size());
  ASSERT_NE(values[0].data, b->host_variables()[0].data);
  const std::vector<checkpoint::Array> copies = checkpoint::to_arrays(views);
  b->set_host_variables(checkpoint_variables(b->graph().variables(), checkpoint::views_of(copies), "test"));
  const std::vector<NamedArray> restored = b->host_variables();
  for (size_t i = 0; i < views.size(); ++i) EXPECT_EQ(values[i].data, restored[i].data) << views[i].name;
  // A missing array is an error naming it.
  std::vector<checkpoint::ArrayView> partial = checkpoint::views_of(copies);
  const std::string dropped = partial.back().name;
  partial.pop_back();
  try {
    checkpoint_variables(b->graph().variables(), partial, "ckpt-9");
    FAIL() << "missing array accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(dropped), std::string::npos) << e.what();
  }
}

// train_image_size (TF-slim's flag) sets a zoo model's input size for training and evaluation; below the
// model's smallest size, out of range, or beside a config's own net it is refused; eval takes it from
// the checkpoint's config when the caller does not set it.
// color_distortion: training images of the inception preset get it, evaluation images never; another
// preset refuses it before any work.
TEST(LoopSetup, ColorDistortionReachesTrainingImagesOfTheInceptionPreset) {
  const std::filesystem::path dir = one_record_dataset("color");
  JobConfig c;
  c.set_model_name("inception_v3");
  c.set_dataset_dir(dir.string());
  c.set_train_files("a.tfrecord");
  c.set_num_classes(10);
  EXPECT_FALSE(preprocess_config(make_run_setup(c), true).color_distortion);
  c.set_color_distortion(true);
  const RunSetup s = make_run_setup(c);
  EXPECT_TRUE(preprocess_config(s, true).color_distortion);
  EXPECT_FALSE(preprocess_config(s, false).color_distortion);
  // Two samples' plans differ only by the distortion's draw: it is on, per sample, with TF-slim's ranges.
  const pipeline::PreprocessConfig train = pipeline::resolve_preset(preprocess_config(s, true));
  for (uint64_t index = 0; index < 20; ++index) {
    const pipeline::SamplePlan p = pipeline::plan_sample(train, 640, 480, 7, 0, index);
    EXPECT_TRUE(p.color.enabled);
    EXPECT_LE(std::abs(p.color.brightness), 32.0f);
    EXPECT_GE(p.color.saturation, 0.5f);
    EXPECT_LE(p.color.saturation, 1.5f);
  }
  // Random erasing (timm's reprob / remode) goes to the training mapper of any preset, never to eval.
  c.set_random_erase_prob(0.25);
  c.set_random_erase_mode("const");
  const RunSetup e = make_run_setup(c);
  EXPECT_EQ(preprocess_config(e, true).erase.prob, 0.25f);
  EXPECT_EQ(preprocess_config(e, true).erase.mode, pipeline::EraseMode::kConst);
  EXPECT_EQ(preprocess_config(e, false).erase.prob, 0.0f);
  c.set_random_erase_prob(1.5);
  EXPECT_THROW(make_run_setup(c), ConfigError);
  c.set_random_erase_prob(0);
  c.set_model_name("lenet");
  try {
    make_run_setup(c);
    ADD_FAILURE() << "lenet's preset accepted color_distortion";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("color_distortion is the inception preset's"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// auto_augment (torchvision's RandAugment / TrivialAugmentWide) goes to the training mapper of any
// preset, grey or colour, with its num_ops / magnitude / bins, never to eval; bad values are refused
// before any work, an unknown policy with the list of the known ones.
TEST(LoopSetup, AutoAugmentReachesTrainingImagesOnly) {
  const std::filesystem::path dir = one_record_dataset("auto-augment");
  JobConfig c;
  c.set_model_name("lenet");
  c.set_dataset_dir(dir.string());
  c.set_train_files("a.tfrecord");
  c.set_num_classes(10);
  EXPECT_EQ(preprocess_config(make_run_setup(c), true).auto_augment.policy, pipeline::AutoAugmentPolicy::kNone);
  c.set_auto_augment("randaugment");
  c.set_auto_augment_num_ops(3);
  c.set_auto_augment_magnitude(12);
  c.set_auto_augment_magnitude_bins(21);
  const RunSetup s = make_run_setup(c);
  const pipeline::AutoAugmentOptions t = preprocess_config(s, true).auto_augment;
  EXPECT_EQ(t.policy, pipeline::AutoAugmentPolicy::kRandAugment);
  EXPECT_EQ(t.num_ops, 3);
  EXPECT_EQ(t.magnitude, 12);
  EXPECT_EQ(t.magnitude_bins, 21);
  EXPECT_EQ(preprocess_config(s, false).auto_augment.policy, pipeline::AutoAugmentPolicy::kNone);
  EXPECT_NE(describe_input_geometry(s).line.find("RandAugment of training images (3 ops at magnitude 12 of 0-20)"),
            std::string::npos) << describe_input_geometry(s).line;
  c.set_model_name("inception_v3");  // a colour preset
  c.set_auto_augment("trivialaugmentwide");
  EXPECT_EQ(preprocess_config(make_run_setup(c), true).auto_augment.policy,
            pipeline::AutoAugmentPolicy::kTrivialAugmentWide);
  c.set_auto_augment_magnitude(21);  // out of RandAugment's range, but TrivialAugmentWide draws its own bin
  EXPECT_NO_THROW(make_run_setup(c));
  c.set_auto_augment("randaugment");
  EXPECT_THROW(make_run_setup(c), ConfigError);  // magnitude 21 of bins 0-20
  c.set_auto_augment_magnitude(9);
  c.set_auto_augment_num_ops(-1);
  EXPECT_THROW(make_run_setup(c), ConfigError);
  c.set_auto_augment_num_ops(2);
  c.set_auto_augment_magnitude_bins(1);
  EXPECT_THROW(make_run_setup(c), ConfigError);
  c.set_auto_augment_magnitude_bins(31);
  c.set_auto_augment("rand-m9-mstd0.5");  // timm's syntax: its op set is not torchvision's
  try {
    make_run_setup(c);
    ADD_FAILURE() << "timm's rand-m9-mstd0.5 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("randaugment, trivialaugmentwide"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(LoopSetup, TrainImageSizeSetsTheZooInput) {
  const std::filesystem::path dir = one_record_dataset("image-size");
  JobConfig c;
  c.set_model_name("mobilenet_v2");
  c.set_dataset_dir(dir.string());
  c.set_train_files("a.tfrecord");
  c.set_num_classes(10);
  EXPECT_EQ(make_run_setup(c).height, 224);  // the zoo default
  c.set_train_image_size(32);
  const RunSetup s = make_run_setup(c);
  EXPECT_EQ(s.height, 32);
  EXPECT_EQ(s.width, 32);
  EXPECT_EQ(s.net.input().height(), 32);
  EXPECT_EQ(s.net.input().width(), 32);
  c.set_train_image_size(16);  // mobilenet_v2's smallest input is 32
  EXPECT_THROW(make_run_setup(c), ConfigError);
  c.set_train_image_size(0);
  EXPECT_THROW(validate_job_config(c), ConfigError);
  c.set_train_image_size(32);
  c.mutable_net()->mutable_input()->set_channels(1);
  EXPECT_THROW(validate_job_config(c), ConfigError);
  std::filesystem::remove_all(dir);

  JobConfig saved;
  saved.set_model_name("mobilenet_v2");
  saved.set_train_image_size(32);
  CheckpointMeta meta;
  meta.set_model_name("mobilenet_v2");
  *meta.mutable_config() = saved;
  EXPECT_EQ(with_checkpoint_model(JobConfig(), meta).train_image_size(), 32);
  JobConfig given;
  given.set_model_name("mobilenet_v2");
  EXPECT_EQ(with_checkpoint_model(given, meta).train_image_size(), 32);  // the same model: its size
  given.set_model_name("mobilenet_v1");
  EXPECT_FALSE(with_checkpoint_model(given, meta).has_train_image_size());  // another model: its default
}

}  // namespace
}  // namespace fastnn::loop
