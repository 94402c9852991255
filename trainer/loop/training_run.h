// One run of `fastnn train` (run_training, trainer.h): what it holds and the steps it takes, private to
// trainer/loop/. Its work is in two files by job:
//   trainer.cpp            start-up (runner, data, schedule), the resumed or fine-tuned start, the step
//                          loop with its log lines, checkpoints;
//   training_run_eval.cpp  evaluations while training: the held-out split, the moving averages' own
//                          evaluation, the best checkpoint and early stopping.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/clock.h"
#include "pipeline/dataset.h"
#include "schemas/job_config.pb.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/config/job_config.h"
#include "trainer/loop/best_checkpoint.h"
#include "trainer/loop/data_parallel.h"
#include "trainer/runner/device_setup.h"
#include "trainer/loop/moving_average.h"
#include "trainer/loop/nccl_collectives.h"
#include "trainer/loop/run_directory.h"
#include "trainer/loop/run_setup.h"
#include "trainer/runner/step_runner.h"
#include "trainer/loop/step_window.h"
#include "trainer/loop/trainer.h"
#include "trainer/metrics/event_writer.h"
#include "trainer/metrics/jsonl_writer.h"
#include "trainer/schedule/lr_schedule.h"

namespace fastnn::loop {

class TrainingRun {
 public:
  TrainingRun(const JobConfig& config, const TrainOptions& options, DataParallel& dp);
  TrainSummary run();

 private:
  void recall_eval(int64_t step);
  void restore_or_init();
  void log_window(int64_t step, double lr);
  void run_eval(int64_t step, double lr);
  void run_moving_average_eval(int64_t step);
  // The held-out split through the runner as it is now (every rank takes part).
  EvalResult evaluate_held_out();
  // best: into RUN/best/ (keep_best_checkpoint) instead of the run directory.
  void save(int64_t step, double lr, bool best = false);
  void watch_best(int64_t step, double lr, const EvalResult& r);
  void start_best_tracking();
  void note_best();  // the summary's best_* fields (chief)
  void start_moving_averages();
  // The averages with their batch-norm statistics averaged over the ranks (every rank calls it).
  std::vector<NamedArray> rank_averaged_shadows();
  void close_writers() {
    for (EventFileWriter* w : {events_.get(), eval_events_.get()})
      if (w) w->close();
    if (jsonl_) jsonl_->close();
  }
  double epoch_of(int64_t step) const { return static_cast<double>(step) / static_cast<double>(bpe_); }
  int64_t global_batch() const { return static_cast<int64_t>(dp_.world()) * step_batch_size(c_); }

  DataParallel& dp_;
  JobConfig c_;
  TrainOptions options_;
  RunSetup setup_;
  runner::ComputeTarget target_;
  std::unique_ptr<runner::DeviceCollectives> collectives_;
  std::optional<pipeline::Dataset> train_ds_;
  std::unique_ptr<runner::StepRunner> runner_;
  LrSchedule schedule_;
  int64_t bpe_ = 0, total_ = 0, start_ = 0, replay_ = 0;  // replay_: per-rank batches to skip on resume
  double loop_seconds_ = 0;  // the step loop's time so far, evaluations excluded
  std::unique_ptr<RunDirectory> run_dir_;  // run directory: lock, take-over rules (run_directory.h)
  std::unique_ptr<checkpoint::CheckpointManager> ckpt_;
  BestTracker best_;                                     // keep_best_checkpoint, early stopping
  std::unique_ptr<checkpoint::CheckpointManager> best_ckpt_;  // RUN/best/ (keep_best_checkpoint; chief)
  bool stop_early_ = false;                              // early_stopping_patience ran out (agreed over ranks)
  std::unique_ptr<MovingAverages> ema_;                  // moving_average_decay
  std::unique_ptr<checkpoint::CheckpointManager> ema_ckpt_;    // RUN/ema/ (moving_average_decay; chief)
  std::unique_ptr<JsonlMetricsWriter> jsonl_;
  std::unique_ptr<EventFileWriter> events_, eval_events_;  // RUN/ and RUN/eval/ (chief)
  StepWindow log_window_, eval_window_;
  std::optional<Clock::time_point> last_summary_;  // the last TensorBoard write (save_summaries_secs)
  double last_logged_accuracy_ = -1;                // the last log line's training accuracy
  TrainSummary summary_;
};

}  // namespace fastnn::loop
