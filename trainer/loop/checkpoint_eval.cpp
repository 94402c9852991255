// `fastnn eval`: a checkpoint evaluated on the held-out split, with the model (and, unless the command
// names data, the data) its run recorded. Declared in trainer.h beside run_training.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "core/check.h"
#include "core/class_map.h"
#include "core/logging.h"
#include "core/progress.h"
#include "trainer/checkpoint/checkpoint_classes.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/config/job_config.h"
#include "trainer/loop/checkpoint_io.h"
#include "trainer/runner/device_setup.h"
#include "trainer/loop/evaluate.h"
#include "trainer/loop/preset_fields.h"
#include "trainer/loop/run_setup.h"
#include "trainer/runner/step_runner.h"
#include "trainer/loop/trainer.h"

namespace fastnn::loop {

JobConfig with_checkpoint_model(const JobConfig& given, const CheckpointMeta& meta) {
  JobConfig c = given;
  const JobConfig* saved = meta.has_config() ? &meta.config() : nullptr;
  if (!given.has_model_name() && meta.has_model_name()) c.set_model_name(meta.model_name());
  if (!given.has_model_name() && !given.has_net() && saved && saved->has_net()) *c.mutable_net() = saved->net();
  if (saved) {
    if (!given.has_num_classes() && saved->has_num_classes()) c.set_num_classes(saved->num_classes());
    if (!given.has_preprocessing_name() && saved->has_preprocessing_name())
      c.set_preprocessing_name(saved->preprocessing_name());
    // The evaluation images' crop and values, as trained (the training crop's ranges are not read).
    if (!given.has_input_mean() && saved->has_input_mean()) c.set_input_mean(saved->input_mean());
    if (!given.has_input_std() && saved->has_input_std()) c.set_input_std(saved->input_std());
    if (!given.has_crop_pct() && saved->has_crop_pct()) c.set_crop_pct(saved->crop_pct());
    if (!given.has_labels_offset() && saved->has_labels_offset()) c.set_labels_offset(saved->labels_offset());
    if (!given.has_train_image_size() && saved->has_train_image_size() &&
        (!given.has_model_name() || given.model_name() == saved->model_name()))
      c.set_train_image_size(saved->train_image_size());
    copy_head_fields(given, *saved, c);
    // What shapes the model or its evaluation-mode numbers: as trained (an epsilon differs the outputs;
    // a run without the aux head has no aux arrays).
    if (!given.has_aux_logits() && saved->has_aux_logits()) c.set_aux_logits(saved->aux_logits());
    if (!given.has_batch_norm_epsilon() && saved->has_batch_norm_epsilon())
      c.set_batch_norm_epsilon(saved->batch_norm_epsilon());
    if (!given.has_batch_norm_decay() && saved->has_batch_norm_decay()) c.set_batch_norm_decay(saved->batch_norm_decay());
    // The run's data when the command names none (predict and report read it from the run too):
    // `fastnn eval --output_dir=run` evaluates on what the run held out.
    const bool names_data = given.has_dataset_dir() || given.has_eval_files() || given.has_file_pattern() ||
                            given.has_train_files();
    if (!names_data && saved->has_dataset_dir()) {
      c.set_dataset_dir(saved->dataset_dir());
      if (saved->has_file_pattern()) c.set_file_pattern(saved->file_pattern());
      if (saved->has_train_files()) c.set_train_files(saved->train_files());
      if (saved->has_eval_files()) c.set_eval_files(saved->eval_files());
      log_info("evaluating on ", saved->dataset_dir(), ", the run's data (set dataset_dir to choose another)");
    }
    // dataset_split_name given to eval names the split to evaluate; the training split is the run's.
    c.clear_dataset_split_name();
    if (saved->has_dataset_split_name()) c.set_dataset_split_name(saved->dataset_split_name());
  } else {
    c.clear_dataset_split_name();
  }
  if (!given.has_model_name() && c.model_name() != given.model_name())
    log_info("evaluating ", c.model_name(), ", the model the checkpoint holds (set model_name to choose another)");
  if (const std::string own = evaluation_fields_text(preset_fields(c)); !own.empty())
    log_info("evaluation images: ", c.preprocessing_name().empty() ? preset_for_model(c.model_name()) : c.preprocessing_name(),
             " preprocessing, ", own);
  return c;
}

CheckpointEval evaluate_checkpoint(const JobConfig& given, const std::string& checkpoint) {
  const std::string path = checkpoint.empty() ? eval_run_directory(given) : checkpoint;
  checkpoint::LoadedCheckpoint l = checkpoint::load_checkpoint(path, {.optimizer = false});
  const JobConfig config = with_checkpoint_model(given, l.meta);
  RunSetup setup = make_run_setup(config, /*for_training=*/false);
  if (given.has_dataset_split_name()) {  // TF-slim's eval_image_classifier: --dataset_split_name=validation
    if (!setup.manifest.find_split(given.dataset_split_name()))
      throw ConfigError(str(config.dataset_dir(), "/manifest.json has no ", given.dataset_split_name(), " split"));
    setup.eval_split = given.dataset_split_name();
    setup.eval_files = pipeline::file_list_from_manifest(config.dataset_dir(), setup.eval_split);
    setup.eval_files_also_trained = files_in_both(setup.train_files, setup.eval_files);
    if (!setup.eval_files_also_trained.empty())
      log_warn("the evaluation (", setup.eval_split, ") is not held out: the run trained on its files");
  }
  if (setup.eval_split.empty())
    throw ConfigError(str(config.dataset_dir(), " has no validation or test split (name files with eval_files)"));
  if (const std::optional<ClassMap> trained = checkpoint::checkpoint_class_map(l); trained && setup.classes)
    require_same_classes(*trained, *setup.classes, str(l.prefix, " evaluated on ", config.dataset_dir()), kClassMapAdvice);
  const runner::ComputeTarget target = runner::resolve_compute_target(config);
  runner::StepRunnerOptions o = runner::forward_only(runner::step_runner_options(config, target));
  o.label_smoothing = 0;  // the held-out loss is the plain cross-entropy
  o.input = setup.input;
  o.head = head_for(config, setup);
  const std::unique_ptr<runner::StepRunner> runner = runner::make_step_runner(setup.net, o);
  setup.batch = runner->batch_format();
  runner->set_host_variables(checkpoint_variables(runner->variables(), l.weights.arrays(), l.prefix));
  load_head_rows(*runner, l, /*optimizer=*/false);
  CheckpointEval out;
  out.checkpoint = l.prefix;
  out.step = l.meta.step();
  runner::StepRunner& r = *runner;
  // A progress line with ETA on a terminal (the held-out split of a large dataset takes minutes on a CPU).
  Progress progress(str("eval ", setup.eval_split.empty() ? std::string("eval_files") : setup.eval_split),
                    setup.eval_files.counts_known() ? setup.eval_files.total_records() : 0, "images");
  progress.set_silent(log_level() > LogLevel::kInfo);
  out.result = evaluate_dataset(r.graph(), [&r](const Tensor& x, const Tensor& y) { return r.evaluate(x, y); },
                                make_eval_dataset(setup, config, config.batch_size()),
                                [&r] { return r.host_logits(); }, &progress);
  progress.finish();
  return out;
}

}  // namespace fastnn::loop
