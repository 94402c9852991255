// moving_average_decay (TF-slim's train_image_classifier flag; timm's model_ema_decay): an exponential
// moving average of every model variable, weights and batch-norm moving statistics alike (TF-slim
// averages slim.get_model_variables(), timm's ModelEma the whole state dict), updated after each step:
//
//   shadow -= (1 - d) * (shadow - value)        tf.train.ExponentialMovingAverage's update, in float
//   d = min(decay, (1 + t) / (10 + t))          moving_average_warmup (TF's num_updates = global_step, t
//                                                the steps applied before this one), else d = decay (timm)
//
// The shadows start at the variables' values when averaging starts (TF initialises them so). The
// training loop saves them as a checkpoint of their own in RUN/ema/ (same step and meta as the run's),
// so `fastnn eval|predict|export --checkpoint RUN/ema` use the averaged model, and reads them back from
// RUN/ema/ckpt-<step> when the run resumes. Host variables only: device=cuda refuses the field.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "schemas/job_config.pb.h"
#include "trainer/graph/graph.h"
#include "trainer/params.h"

namespace fastnn::loop {

class MovingAverages {
 public:
  // Shadows named and shaped as `variables` (f32 host tensors), starting at their values. ConfigError
  // for a decay outside (0, 1).
  MovingAverages(double decay, bool warmup, const std::vector<graph::NamedTensor>& variables);

  // The decay used by the update after `steps_before` steps were applied.
  double decay_at(int64_t steps_before) const;
  // One update from the variables' current values (the same list, in the same order, as at construction).
  void update(const std::vector<graph::NamedTensor>& variables, int64_t steps_before);

  const std::vector<NamedArray>& shadows() const { return shadows_; }
  // Replaces the shadows (a checkpoint's, in variable order: loop::checkpoint_variables).
  void restore(std::vector<NamedArray> shadows);

 private:
  double decay_;
  bool warmup_;
  std::vector<NamedArray> shadows_;
};

// The averages a run keeps: null when moving_average_decay is 0; else started at `variables` or, when the
// run resumes at `start` > 0, at those saved in RUN/ema/ckpt-<start>. ConfigError with a classifier head
// (its rows are saved in shards the averages do not cover).
std::unique_ptr<MovingAverages> make_moving_averages(const JobConfig& c, const std::vector<graph::NamedTensor>& variables,
                                                     const std::string& run_dir, int64_t start);

// RUN/ema/: the averages' checkpoints.
std::string moving_average_dir(const std::string& run_dir);
// The averages saved at `step` in `dir`, in variable order; FormatError naming the checkpoint when it is
// missing or does not match the model.
std::vector<NamedArray> saved_moving_averages(const std::vector<graph::NamedTensor>& variables, const std::string& dir,
                                              int64_t step);

}  // namespace fastnn::loop
