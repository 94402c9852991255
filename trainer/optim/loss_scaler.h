// Loss scaling for half-precision training, as host logic (no CUDA): the GPU step multiplies the loss
// gradient by scale(), divides the parameter gradients by it inside the optimizer update, and reports
// whether any gradient element was non-finite (the overflow count of the global-norm reduction).
//
//   static  (dynamic = false): scale() stays `initial_scale`; every step is applied, overflow or not
//           (as FastNN's fixed loss_scale: a NaN then reaches the loss and the loop's NaN check stops
//           the run, naming the step).
//   dynamic (dynamic = true):  on overflow the step is skipped and the scale halved (never below
//           min_scale); after `growth_interval` consecutive applied steps it is doubled (never above
//           max_scale) and the count restarts. A skipped step resets the count.
//
// The state (scale, clean-step count) is two numbers, exported for checkpoints so a resumed run scales
// as the uninterrupted one. The rule itself is update_rules.h's ScalerRule, which the GPU runner steps on
// the device (no host read inside a step) from the state this class holds. Not thread-safe.
#pragma once

#include <cstdint>

#include "trainer/optim/update_rules.h"

namespace fastnn {

struct LossScalerOptions {
  double initial_scale = 1.0;
  bool dynamic = false;
  int64_t growth_interval = 2000;
  double min_scale = 1.0;
  double max_scale = 16777216.0;  // 2^24: beyond it f16 gradients of O(1) values overflow anyway
};

class LossScaler {
 public:
  // ConfigError for a scale <= 0 or not finite, growth_interval < 1, or min_scale > max_scale.
  explicit LossScaler(const LossScalerOptions& options = {});

  double scale() const { return state_.scale; }
  // 1 / scale() as the float the update kernels multiply gradients by.
  float inverse_scale() const { return static_cast<float>(1.0 / state_.scale); }
  bool dynamic() const { return rule_.dynamic; }

  // Records one step's gradient check; returns true when the update must be applied.
  bool update(bool overflow);

  int64_t clean_steps() const { return state_.clean; }     // applied steps since the last change of scale
  int64_t skipped_steps() const { return state_.skipped; }  // over the scaler's life

  const optim::rule::ScalerRule& rule() const { return rule_; }
  const optim::rule::ScalerState& state() const { return state_; }
  void set_state(const optim::rule::ScalerState& s) { state_ = s; }  // read back from a device scaler

  // Checkpoint state: {scale, clean steps}.
  void restore(double scale, int64_t clean_steps);

 private:
  optim::rule::ScalerRule rule_;
  optim::rule::ScalerState state_;
};

}  // namespace fastnn
