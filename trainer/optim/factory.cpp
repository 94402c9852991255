// Optimizer by config name, FastNN's configure_optimizer.
#include "core/check.h"
#include "schemas/job_config.pb.h"
#include "trainer/optim/optimizer_catalog.h"
#include "trainer/optim/optimizers.h"

namespace fastnn {

OptimizerOptions optimizer_options(const JobConfig& c) {
  OptimizerOptions o;
  o.optimizer = c.optimizer();
  o.adadelta_rho = c.adadelta_rho();
  o.adagrad_initial_accumulator_value = c.adagrad_initial_accumulator_value();
  o.adam_beta1 = c.adam_beta1();
  o.adam_beta2 = c.adam_beta2();
  o.opt_epsilon = c.opt_epsilon();
  o.ftrl_learning_rate_power = c.ftrl_learning_rate_power();
  o.ftrl_initial_accumulator_value = c.ftrl_initial_accumulator_value();
  o.ftrl_l1 = c.ftrl_l1();
  o.ftrl_l2 = c.ftrl_l2();
  o.momentum = c.momentum();
  o.use_nesterov = c.use_nesterov();
  o.rmsprop_momentum = c.rmsprop_momentum();
  o.rmsprop_decay = c.rmsprop_decay();
  o.adam_weight_decay_rate = c.adam_weight_decay_rate();
  if (o.optimizer == "adamw") {  // PyTorch's AdamW defaults where the config leaves FastNN's in place
    o.adamw_weight_decay = c.has_weight_decay() ? c.weight_decay() : 0.01;
    o.opt_epsilon = c.has_opt_epsilon() ? c.opt_epsilon() : 1e-8;
  }
  if (o.optimizer == "lamb") {  // timm's Lamb defaults where the config leaves FastNN's in place
    o.lamb_weight_decay = c.has_weight_decay() ? c.weight_decay() : 0.01;
    o.opt_epsilon = c.has_opt_epsilon() ? c.opt_epsilon() : 1e-6;
  }
  o.lars_eeta = c.lars_eeta();
  o.lars_epsilon = c.lars_epsilon();
  if (o.optimizer == "lars") o.lars_weight_decay = c.weight_decay();
  return o;
}

bool applies_weight_decay_itself(const std::string& optimizer) {
  return optim::optimizer_traits(optimizer).decays_itself;
}

const std::vector<std::string_view>& optimizer_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> n;
    for (const optim::OptimizerTraits& t : optim::optimizer_catalog()) n.push_back(t.name);
    return n;
  }();
  return names;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& o, std::vector<ParamRef> params) {
  const std::string& n = o.optimizer;
  auto f = [](double v) { return static_cast<float>(v); };
  if (n == "adadelta") return make_adadelta(std::move(params), f(o.adadelta_rho), f(o.opt_epsilon));
  if (n == "adagrad") return make_adagrad(std::move(params), f(o.adagrad_initial_accumulator_value));
  if (n == "adam") return make_adam(std::move(params), f(o.adam_beta1), f(o.adam_beta2), f(o.opt_epsilon));
  if (n == "ftrl") {
    return make_ftrl(std::move(params), f(o.ftrl_learning_rate_power), f(o.ftrl_initial_accumulator_value),
                     f(o.ftrl_l1), f(o.ftrl_l2));
  }
  if (n == "momentum") return make_momentum(std::move(params), f(o.momentum), o.use_nesterov);
  if (n == "sgd") return make_sgd(std::move(params));
  if (n == "rmsprop") {
    return make_rmsprop(std::move(params), f(o.rmsprop_decay), f(o.rmsprop_momentum), f(o.opt_epsilon));
  }
  if (n == "adamweightdecay") {
    return make_adam_weight_decay(std::move(params), f(o.adam_beta1), f(o.adam_beta2), f(o.opt_epsilon),
                                  f(o.adam_weight_decay_rate));
  }
  if (n == "lars")
    return make_lars(std::move(params), o.momentum, o.lars_eeta, o.lars_epsilon, o.lars_weight_decay);
  if (n == "lamb")
    return make_lamb(std::move(params), o.adam_beta1, o.adam_beta2, o.opt_epsilon, o.lamb_weight_decay);
  if (n == "adamw")
    return make_adamw(std::move(params), o.adam_beta1, o.adam_beta2, o.opt_epsilon, o.adamw_weight_decay);
  optim::optimizer_traits(n);  // throws, naming the valid ones
  throw ConfigError(str("optimizer \"", n, "\" has no CPU optimizer"));
}

std::unique_ptr<Optimizer> make_optimizer(const JobConfig& config, std::vector<ParamRef> params) {
  return make_optimizer(optimizer_options(config), std::move(params));
}

}  // namespace fastnn
