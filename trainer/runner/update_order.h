// FastNN's order of what happens between backward and the new weights, written once for every device.
// Each step runner supplies the stages for its device; this decides which run, in which order:
//
//   1. average    the gradients over the ranks (data parallel; absent for one process)
//   2. decay      unscale (f16 loss scaling) and add weight decay (grad += wd * w) into the gradients
//                 the optimizer reads
//   3. check      the global gradient norm and whether any gradient is non-finite — only when
//                 clipping (max_gradient_norm > 0) or loss scaling (overflow decides) needs it
//   4. accept     the loss scaler's decision: an overflowed step under dynamic scaling is skipped
//                 (weights and optimizer slots untouched)
//   5. apply      the optimizer step with the gradients multiplied by clip_factor(norm) (1: no clipping)
//
// clip_factor (optim::rule::clip_factor, update_rules.h) is tf.clip_by_global_norm's: max_norm / norm when norm > max_norm, NaN for a non-finite
// norm (TF turns every gradient into NaN so an overflow is never applied silently), else 1.
//
// Steps 3 and 4 are optim::rule::decide (update_rules.h). A runner whose device can take that decision
// itself (the CUDA runner: a one-thread kernel steps the same rule on device-resident scaler state) sets
// `decide_on_device` instead of `check`: then nothing is read back to the host inside the step, and
// `apply` always runs, its kernels reading the device's decision (skip, clipping factor).
#pragma once

#include <functional>

#include "trainer/optim/loss_scaler.h"

namespace fastnn::runner {

struct GradientCheck {
  double norm = 0;        // sqrt of the sum of all squared gradients (after decay)
  bool overflow = false;  // a non-finite gradient element or norm
};

struct UpdateStages {
  std::function<void()> average;           // empty: one process
  std::function<void()> decay;             // empty: nothing to do
  std::function<GradientCheck()> check;
  std::function<void()> decide_on_device;  // set: steps 3-4 run on the device; apply gets factor 1
  std::function<void(float factor)> apply;
};

struct UpdatePolicy {
  double max_gradient_norm = 0;  // 0: no clipping
  LossScaler* scaler = nullptr;  // f16 runners: overflow check and skip decision; nullptr: none
};

struct UpdateOutcome {
  bool applied = true;
  double norm = 0;  // the global norm before clipping; 0 when it was not computed
};

UpdateOutcome apply_update(const UpdateStages& stages, const UpdatePolicy& policy);

}  // namespace fastnn::runner
