// For the host-side update tests (optim_tensor_chunks_test, optim_row_update_test): hyperparameters under
// which every optimizer's rule does all of its work — both slots move, rmsprop's momentum, ftrl's l1 and
// l2 and adamw's decay are on — so a walk that differs from the CPU optimizer anywhere shows.
#pragma once

#include <string>

#include "trainer/optim/optimizers.h"

namespace fastnn::optim_test {

inline OptimizerOptions every_rule_options(const std::string& name) {
  OptimizerOptions o;
  o.optimizer = name;
  o.momentum = 0.9;
  o.adam_beta1 = 0.9;
  o.adam_beta2 = 0.999;
  o.opt_epsilon = 1e-3;
  o.rmsprop_decay = 0.9;
  o.rmsprop_momentum = 0.5;
  o.adagrad_initial_accumulator_value = 0.1;
  o.adadelta_rho = 0.95;
  o.ftrl_learning_rate_power = -0.5;
  o.ftrl_initial_accumulator_value = 0.1;
  o.ftrl_l1 = 0.01;
  o.ftrl_l2 = 0.02;
  o.adam_weight_decay_rate = 0.01;
  return o;
}

}  // namespace fastnn::optim_test
