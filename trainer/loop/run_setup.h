// What a training or evaluation run is made of, resolved from the job config and the shard manifest:
// the run directory, the model (zoo entry, classes, input size), the preprocessing preset and the
// train / held-out datasets.
//
// Resolution rules (docs/TRAINING.md):
//   run directory   output_dir when set, else model_dir when set and task_type is pretrain, else
//                   runs/<model_name> (never the current directory unless output_dir=.); checkpoints,
//                   metrics.jsonl and TensorBoard events go there
//   model           the `net` field's layers when set (model_name then only names the run), else
//                   the zoo's model_name at its default input size
//   files           train_files / eval_files (items may be globs), else file_pattern (FastNN's %s form:
//                   train, and validation else test for the held-out split), else the manifest's splits
//   num_classes     the config's when set, else the manifest's class count, else (no manifest) the
//                   lines of dataset_dir/labels.txt less labels_offset
//   samples/epoch   the manifest's train record count unless num_sample_per_epoch is set explicitly
//   preset          preprocessing_name, else the zoo entry's preset (zoo::ZooModel::preset: lenet/mlp
//                   -> lenet, cifarnet and resnet_cifar_* -> cifarnet, vgg_*, alexnet_v2, overfeat ->
//                   vgg, resnet_v* -> resnet (but resnet_v1_5_*: inception), else inception; inception for
//                   names not in the zoo), with the job's preset fields (preset_fields.h) over its values
//   held-out split  "validation" if the manifest has it, else "test"
//   class map       dataset_dir's (manifest.json, checked against labels.txt; else labels.txt), less
//                   labels_offset; every other folder holding train_files or eval_files must carry the
//                   same one where it carries any (ConfigError naming the first difference)
//   total steps     stop_at_step and num_epochs x batches_per_epoch: the smaller of those set
//                   explicitly; with neither set, the smaller of both defaults
// Errors: ConfigError (no dataset_dir, unknown model, missing train split, folders whose class maps
// differ), IoError/FormatError from reading the manifest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/class_map.h"
#include "core/manifest.h"
#include "pipeline/shard_plan.h"
#include "pipeline/dataset.h"
#include "pipeline/preset.h"
#include "schemas/job_config.pb.h"
#include "schemas/net.pb.h"
#include "trainer/head/classifier_head.h"
#include "trainer/loop/preset_fields.h"
#include "trainer/runner/input_format.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::loop {

struct RunSetup {
  std::string run_dir;
  Manifest manifest;  // empty when dataset_dir has no manifest.json (train_files / file_pattern named the files)
  pipeline::FileList train_files;  // the manifest's train split, or train_files
  pipeline::FileList eval_files;   // the held-out split (validation, else test) or eval_files; none: empty
  int64_t labels_offset = 0;
  std::string model_name;
  int64_t num_classes = 0;  // above 2^31 - 1 only with a dist_ head (job_config.cpp checks)
  int height = 0, width = 0, channels = 0;
  std::string preset;
  PresetFields preset_fields;     // the job's own mean, std, crop ranges and crop_pct for the preset
  bool color_distortion = false;  // on training images (the inception preset's)
  pipeline::EraseOptions erase;    // random erasing of training images
  pipeline::AutoAugmentOptions auto_augment;  // RandAugment / TrivialAugmentWide on training images
  pipeline::MixOptions mix;                   // mixup / CutMix of training batches (labels mixed in the loss)
  std::string eval_split;  // "validation", "test" or "eval_files"; "" when there is none
  std::optional<ClassMap> classes;  // the data's class map (rule above); nullopt when no file names the classes
  // Eval files that are also train files (the eval is then not held out: said at start and on every
  // eval line); usually empty.
  std::vector<std::string> eval_files_also_trained;
  int64_t samples_per_epoch = 0;
  NetDef net;
  // The batches the step runner reads (StepRunner::batch_format; the CPU's float32 NCHW until the
  // loop sets it) and the preset's normalisation for the uint8 ones.
  runner::BatchFormat batch;
  runner::InputNormalization input;
};

std::string run_directory(const JobConfig& config);
// Eval files that are also train files (same device and inode, however they were named): an accuracy
// measured on them is not a held-out one.
std::vector<std::string> files_in_both(const pipeline::FileList& train, const pipeline::FileList& eval);
// The zoo options a run's model is built with, the same in train, eval, predict and export: the size,
// the outputs (the classes, or a head's emb_dim), TF-slim's drop path, batch norm decay and epsilon
// (the epsilon matters in evaluation too), the auxiliary head.
zoo::ZooOptions model_zoo_options(const JobConfig& config, int outputs, int height, int width, int channels);
// The classifier head's options when the job uses one (head_config.h), seeded with the job's seed.
std::optional<head::HeadOptions> head_for(const JobConfig& config, const RunSetup& setup);
// The head fields (loss_type, emb_dim, margins, scale, sample_ratio) of `saved` that `given` leaves
// unset, into `out`: evaluating a checkpoint rebuilds its head.
void copy_head_fields(const JobConfig& given, const JobConfig& saved, JobConfig& out);
// What `fastnn eval` reads without --checkpoint: run_directory(), except when nothing names the run
// (no output_dir, model_dir, model_name or net): then the only folder under runs/, else ConfigError
// listing them.
std::string eval_run_directory(const JobConfig& config);
// model_name, or for a config `net` without model_name the net's name ("net" when it has none).
std::string model_label(const JobConfig& config);
std::string preset_for_model(const std::string& model_name);
// What to do about data numbered otherwise than a model or another split, for class-map refusals.
inline constexpr const char* kClassMapAdvice =
    "convert the data with --labels-from the training data's folder, so that every split numbers the classes alike";
// `for_training` false (`fastnn eval`): a manifest without a train split is accepted (train_files stay
// empty), so that a validation split converted on its own can be evaluated.
RunSetup make_run_setup(const JobConfig& config, bool for_training = true);

// The preprocessing of the run's training (train) or evaluation images: its preset and the job's values
// for it, size, dtype, layout, label offset, and the training images' augmentations the config asks for.
pipeline::PreprocessConfig preprocess_config(const RunSetup& setup, bool train);
// The config's mixup / CutMix fields; ConfigError naming the one out of range.
pipeline::MixOptions mix_options(const JobConfig& config);

// The training dataset of rank `rank` in a world of `world`: the pipeline's shard(rank, world) of the
// train split, its files read one record from each in turn (interleave with cycle = the rank's file
// count, at most kMaxTrainFilesOpen), balanced by class when class_balanced_sampling asks (seeded
// with rank_seed(seed, rank)), shuffled (shuffle_buffer_size, rank_seed(seed, rank)), repeated
// forever, preprocessed in training mode, NCHW float batches of batch_size (remainder dropped),
// deterministic order. With train shards of equal record counts (fastnn's converters) and without
// shuffling, record-by-record interleaving makes the global order independent of the world size: rank
// r's q-th record is record q x world + r of the one-process stream, so a step of `world` ranks x
// batch_size sees exactly the examples of one process's step at batch world x batch_size.
inline constexpr int kMaxTrainFilesOpen = 64;
pipeline::Dataset make_train_dataset(const RunSetup& s, const JobConfig& config, int rank = 0, int world = 1);
// The whole held-out split in file order, evaluation preprocessing, last batch kept (smaller).
pipeline::Dataset make_eval_dataset(const RunSetup& s, const JobConfig& config, int batch_size);
// Rank `rank`'s part of the held-out split for a sharded evaluation: the split's files i with
// i % world == rank, whole (counts may differ by rank; together the ranks see every record once), as
// make_eval_dataset. nullopt when the rank gets no file.
std::optional<pipeline::Dataset> make_eval_shard(const RunSetup& s, const JobConfig& config, int batch_size,
                                                 int rank, int world);

// Total training steps (rule above) for a dataset of batches_per_epoch batches.
int64_t total_train_steps(const JobConfig& config, int64_t batches_per_epoch);

// True when the comma-separated `hooks` field names `hook` ("LoggingTensorHook", "ProfilerHook"...).
bool has_hook(const JobConfig& config, const std::string& hook);

}  // namespace fastnn::loop
