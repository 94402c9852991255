// An optimizer's per-element rule (update_rules.h) and its slots, by the FastNN config name, for the
// updates that run the rules themselves: the device optimizers' kernels (device_optimizer.h,
// device_row_optimizer.h) and the host tests that walk what those kernels walk.
//
//   with_rule(options, [&](auto rule) { rule.lr = lr; ... rule::apply_at(rule, k, g, w, s0, s1, decay); });
//
// with_rule calls fn once with the rule struct for options.optimizer, its hyperparameters taken from
// `options` as the CPU optimizer takes them (rule.lr left 0: the step sets it; adam's is its
// bias-corrected lr_t). slot_inits lists the slots the CPU optimizer registers (optimizers.h), in its
// order, with their initial values, so device state is named and started as the CPU's.
// ConfigError for a name that is not one of the eight.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "trainer/optim/optimizers.h"
#include "trainer/optim/update_rules.h"

namespace fastnn::optim {

struct SlotInit {
  std::string name;  // "<param>/<name>" in the state
  float init;
};

inline std::vector<SlotInit> slot_inits(const OptimizerOptions& o) {
  const std::string& n = o.optimizer;
  const auto f = [](double v) { return static_cast<float>(v); };
  if (n == "sgd") return {};
  if (n == "momentum") return {{"momentum", 0.0f}};
  if (n == "adam" || n == "adamweightdecay") return {{"adam_m", 0.0f}, {"adam_v", 0.0f}};
  if (n == "rmsprop") return {{"rms", 1.0f}, {"momentum", 0.0f}};
  if (n == "adagrad") return {{"accumulator", f(o.adagrad_initial_accumulator_value)}};
  if (n == "adadelta") return {{"accum", 0.0f}, {"accum_update", 0.0f}};
  if (n == "ftrl") return {{"accum", f(o.ftrl_initial_accumulator_value)}, {"linear", 0.0f}};
  throw ConfigError(str("optimizer \"", n, "\" is not a FastNN optimizer"));
}

template <typename Fn>
void with_rule(const OptimizerOptions& o, Fn&& fn) {
  const std::string& n = o.optimizer;
  const auto f = [](double v) { return static_cast<float>(v); };
  if (n == "sgd") return fn(rule::Sgd{});
  if (n == "momentum") return fn(rule::Momentum{.momentum = f(o.momentum), .nesterov = o.use_nesterov});
  if (n == "adam")
    return fn(rule::Adam{.one_minus_beta1 = 1.0f - f(o.adam_beta1), .one_minus_beta2 = 1.0f - f(o.adam_beta2),
                         .epsilon = f(o.opt_epsilon)});
  if (n == "adamweightdecay")
    return fn(rule::AdamWeightDecay{.beta1 = f(o.adam_beta1), .beta2 = f(o.adam_beta2), .epsilon = f(o.opt_epsilon),
                                    .rate = f(o.adam_weight_decay_rate)});
  if (n == "rmsprop")
    return fn(rule::RmsProp{.one_minus_decay = 1.0f - f(o.rmsprop_decay), .momentum = f(o.rmsprop_momentum),
                            .epsilon = f(o.opt_epsilon)});
  if (n == "adagrad") return fn(rule::Adagrad{});
  if (n == "adadelta") return fn(rule::Adadelta{.rho = f(o.adadelta_rho), .epsilon = f(o.opt_epsilon)});
  if (n == "ftrl")
    return fn(rule::Ftrl{.lr_power = f(o.ftrl_learning_rate_power), .l1 = f(o.ftrl_l1), .l2 = f(o.ftrl_l2)});
  throw ConfigError(str("optimizer \"", n, "\" is not a FastNN optimizer"));
}

}  // namespace fastnn::optim
