// Learning-rate schedules with FastNN's definitions (its optimizer_utils.configure_learning_rate).
//
// lr_at(step) is a pure function of the global step (the number of updates already applied: 0 for the
// first update), so a resumed run gets exactly the rates it would have had. S = stop_at_step,
// W = warmup_steps, lr = learning_rate.
//
// Warmup (applies to every decay type except fixed):
//   t2t     step < W: lr * f^(W - step), f = exp(ln(0.01)/W)   (lr/100 at step 0, lr/10 at W/2)
//   linear  step < W: lr * (step + 1)/W                          (fastnn; never 0, lr at step W-1)
//   none    lr
// Decay start and interval, from decay_scheme:
//   luong234  start = floor(2S/3), 4 decays;  luong5 / luong10: start = floor(S/2), 5 / 10 decays;
//             decay_steps = floor((S - start)/decays)
//   epochs    (fastnn, TF-slim) start = 0, decay_steps = floor(num_samples_per_epoch
//             * num_epochs_per_decay / global_batch_size)
//   after_warmup  (fastnn, MLPerf's LARS schedule) start = W, decay_steps = S - W: one decay
//   ""        no decay ever
// Decay types, with r(step) the warmed-up rate:
//   fixed        lr, always (FastNN: no warmup either)
//   exponential  step < start: r;  else r * factor^floor((step - start)/decay_steps)
//   polynomial   step < start: r;  else (r - end)*(1 - min(step - start, decay_steps)/decay_steps)^power + end
//                (tf.train.polynomial_decay without cycle; power = polynomial_decay_power, 1 by default)
//   cosine       (FastNN's tutorial trainer: tf.train.cosine_decay, ignores decay_scheme)
//                r * ((1 - a)*0.5*(1 + cos(pi*min(step - W, S - W)/(S - W))) + a), a = min_lr_ratio.
//                As in FastNN, step - W is not clamped at 0, so warmup steps are also slightly scaled.
//   piecewise    (fastnn, tf.train.piecewise_constant) values[i] * warmup_multiplier(step),
//                i = number of boundaries b with step > b
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fastnn {

class JobConfig;

enum class LrDecayType { kFixed, kExponential, kPolynomial, kCosine, kPiecewise };
enum class LrWarmupScheme { kNone, kT2T, kLinear };

struct LrSchedule {
  double learning_rate = 0.0;
  LrDecayType decay_type = LrDecayType::kFixed;
  LrWarmupScheme warmup_scheme = LrWarmupScheme::kNone;
  int64_t warmup_steps = 0;
  // exponential / polynomial: whether a decay_scheme is set, where decay starts and its interval.
  bool decays = false;
  int64_t start_decay_step = 0;
  int64_t decay_steps = 0;
  double decay_factor = 1.0;
  double end_learning_rate = 0.0;
  double polynomial_power = 1.0;
  // cosine
  int64_t stop_at_step = 0;
  double min_lr_ratio = 0.0;
  // piecewise
  std::vector<int64_t> boundaries;
  std::vector<double> values;

  // The rate for the update at global step `step` (>= 0).
  double lr_at(int64_t step) const;
  // r(step)/learning_rate: the warmup factor alone (1 after warmup).
  double warmup_multiplier(int64_t step) const;
  // One line for the log: "exponential, t2t warmup 100 steps, decay x0.94 every 8 steps from step 66".
  std::string describe() const;
};

// Builds the schedule from the config. num_samples_per_epoch (the manifest's count, or the config's)
// and global_batch_size (batch_size x number of processes) are only used by decay_scheme "epochs".
// ConfigError for unknown names, a decay interval that rounds to 0 steps, a cosine span <= 0, or
// piecewise boundaries / values that do not match.
LrSchedule make_lr_schedule(const JobConfig& config, int64_t num_samples_per_epoch, int64_t global_batch_size);

}  // namespace fastnn
