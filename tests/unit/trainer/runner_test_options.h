// The runner options the CPU step tests share: a small NHWC, fused, momentum step on the fast kernels
// (runner_cpu_repeatable_test, runner_cpu_bf16_test).
#pragma once

#include "tests/unit/trainer/config_test_util.h"
#include "trainer/runner/step_runner.h"

namespace fastnn::runner {

inline StepRunnerOptions nhwc_momentum_options() {
  StepRunnerOptions o;
  o.batch_size = 8;
  o.seed = 5;
  o.layout = Layout::kNHWC;
  o.fuse = true;
  o.weight_decay = 1e-4;
  o.optimizer = optimizer_options(config_of({"--optimizer=momentum"}));
  return o;
}

}  // namespace fastnn::runner
