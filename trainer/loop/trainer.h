// The training loop and checkpoint evaluation behind `fastnn train` / `fastnn eval` (docs/TRAINING.md).
//
// run_training: builds the model from the zoo (run_setup.h), the optimizer, the LR schedule, the
// train and held-out pipelines, then per step: next batch -> forward/backward (TrainStep) -> weight
// decay -> global-norm clipping -> optimizer step at lr_at(step). Hooks by config:
//   StopAtStepHook       always: stops after total_train_steps() updates
//   LoggingTensorHook    every log_loss_every_n_iters: log line, metrics.jsonl, TensorBoard scalars
//   CheckpointSaverHook  every save_checkpoints_steps and at the end (CheckpointManager, keep K)
//   ProfilerHook         every profile_every_n_iters: a Chrome trace of one step (loop/profiler.h)
// Evaluation on the whole held-out split every eval_every_n_steps and at the end.
// resume: continues from the run directory's latest checkpoint (weights, optimizer state, step);
// the data position is restored by replaying the deterministic pipeline up to that step, and dropout
// masks depend only on (seed, layer, step), so the resumed run repeats the uninterrupted one.
// task_type=finetune (when not resuming an existing run): weights by name from model_dir.
// The run directory is locked for the whole run and never silently taken over (run_directory.h);
// SIGTERM/SIGINT end the run after the current step with a checkpoint there (stop_signal.h).
// Under mpirun (world > 1) the run is data-parallel (data_parallel.h, docs/DISTRIBUTED.md): batch_size
// is per rank, gradients and metrics are averaged over ranks, rank 0 alone logs and writes metrics,
// events and checkpoints; an error on one rank aborts the whole job.
// Errors: fastnn::Error subclasses (config, data, divergence); never exits.
#pragma once

#include <cstdint>
#include <string>

#include "schemas/checkpoint_meta.pb.h"
#include "schemas/job_config.pb.h"
#include "trainer/loop/evaluate.h"

namespace fastnn::loop {

struct TrainOptions {
  bool resume = false;
  bool overwrite = false;  // start over: remove the run files of the folder first (run_directory.h)
  bool progress_lines = true;  // the step and eval lines on stdout (train -q and --json turn them off)
};

struct TrainSummary {
  int64_t first_step = 0, steps = 0;  // steps = the global step at the end
  double last_loss = 0;
  bool evaluated = false;
  EvalResult eval;
  double train_seconds = 0;  // the step loop alone, evaluations excluded
  double images_per_sec = 0;  // over all ranks
  std::string run_dir;
  int rank = 0, world_size = 1;  // data-parallel: only rank 0 (the chief) reports
  int stop_signal = 0;  // SIGTERM/SIGINT stopped the run after `steps` (checkpoint saved); 0: it ran to the end
  bool already_finished = false;  // the run had reached its last step: nothing trained; `eval` is the recorded one
  // early_stopping_patience ran out at `steps` (a checkpoint saved there); `eval` is that step's.
  bool stopped_early = false;
  // keep_best_checkpoint / early stopping: the best evaluation (best_step -1: none) and, when kept, its
  // checkpoint prefix.
  std::string best_metric, best_checkpoint;
  int64_t best_step = -1;
  double best_value = 0;
};

TrainSummary run_training(const JobConfig& config, const TrainOptions& options = {});

struct CheckpointEval {
  std::string checkpoint;  // the prefix evaluated
  int64_t step = 0;
  EvalResult result;
};
// Evaluates `checkpoint` (a prefix, file or directory; empty: the latest in the run directory).
CheckpointEval evaluate_checkpoint(const JobConfig& config, const std::string& checkpoint);
// The config eval runs: `given` completed from the checkpoint's metadata (model_name, num_classes,
// preprocessing_name, labels_offset, train_image_size, a config's own net) where the caller did not set them.
JobConfig with_checkpoint_model(const JobConfig& given, const CheckpointMeta& meta);

}  // namespace fastnn::loop
