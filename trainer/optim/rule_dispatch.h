// An optimizer's per-element rule (update_rules.h), by the FastNN config name, for the
// updates that run the rules themselves: the device optimizers' kernels (device_optimizer.h,
// device_row_optimizer.h) and the host tests that walk what those kernels walk.
//
//   with_rule(options, [&](auto rule) { rule.lr = lr; ... rule::apply_at(rule, k, g, w, s0, s1, decay); });
//
// with_rule calls fn once with the rule struct for options.optimizer, its hyperparameters taken from
// `options` as the CPU optimizer takes them (rule.lr left 0: the step sets it; adam's is its
// bias-corrected lr_t). The slots the rule's s0 / s1 point into are optimizer_catalog.h's slot_inits,
// named and started as the CPU optimizer's. ConfigError for a name the kernels do not run
// (OptimizerTraits::on_device).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "trainer/optim/optimizer_catalog.h"
#include "trainer/optim/optimizers.h"
#include "trainer/optim/update_rules.h"

namespace fastnn::optim {

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
