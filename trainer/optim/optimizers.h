// FastNN's optimizers, by their config names (optimizer_catalog.h lists them with their slots), with
// TensorFlow 1.x update rules, PyTorch's AdamW, MLPerf's LARS and timm's Lamb.
// Per element, with g the gradient, w the parameter and lr the step's learning rate (state names in []):
//
//   sgd              w -= lr*g
//   momentum         [momentum] a = momentum*a + g;  w -= lr*a
//                    Nesterov:  a = momentum*a + g;  w -= lr*g + lr*momentum*a
//   adam             [adam_m, adam_v; adam/beta1_power, adam/beta2_power, starting at beta1, beta2]
//                    m += (g - m)*(1-beta1);  v += (g^2 - v)*(1-beta2)
//                    w -= lr_t*m / (sqrt(v) + eps),  lr_t = lr*sqrt(1 - beta2^t)/(1 - beta1^t), t = 1, 2...
//                    (TF's "epsilon hat": eps is added outside the bias correction)
//   adamweightdecay  [adam_m, adam_v] BERT's, as FastNN uses it, no bias correction:
//                    m = beta1*m + (1-beta1)*g;  v = beta2*v + (1-beta2)*g^2
//                    w -= lr*(m/(sqrt(v) + eps) + rate*w)   (rate*w only where ParamRef::decay)
//   adamw            [adam_m, adam_v; adamw/step] PyTorch's torch.optim.AdamW, wd = the config's weight_decay:
//                    w *= 1 - lr*wd (where ParamRef::decay);  m += (g - m)*(1-beta1);  v = beta2*v + (1-beta2)*g^2
//                    w -= (lr/(1 - beta1^t))*m / (sqrt(v)/sqrt(1 - beta2^t) + eps),  t = 1, 2...
//                    (no L2 term in the gradient: the decay is the decoupled one)
//   lars             [momentum] tf.contrib.opt.LARSOptimizer as MLPerf's ResNet-50 runs it, wd = weight_decay:
//                    where ParamRef::decay: trust = eeta*|w| / (|g| + wd*|w| + eps) (1 if a norm is 0),
//                    a = momentum*a + (g + wd*w)*lr*trust; elsewhere a = momentum*a + g*lr;  w -= a
//                    (norms over the whole parameter; no L2 term in the gradient)
//   lamb             [adam_m, adam_v; lamb/step] timm's Lamb (clipping is max_gradient_norm's), wd = weight_decay:
//                    m += (g - m)*(1-beta1);  v = beta2*v + (1-beta2)*g^2
//                    u = (m/(1 - beta1^t)) / (sqrt(v)/sqrt(1 - beta2^t) + eps) + wd*w (wd*w where ParamRef::decay)
//                    where ParamRef::decay and wd != 0: trust = |w| / |u| (1 if a norm is 0), else 1;  w -= lr*trust*u
//                    (norms over the whole parameter; no L2 term in the gradient)
//   rmsprop          [rms starting at 1.0, momentum] ms += (g^2 - ms)*(1-decay)
//                    mom = momentum*mom + lr*g/sqrt(ms + eps);  w -= mom
//   adagrad          [accumulator starting at initial_accumulator_value] acc += g^2;  w -= lr*g/sqrt(acc)
//   adadelta         [accum, accum_update] acc = rho*acc + (1-rho)*g^2
//                    u = sqrt(acc_update + eps)/sqrt(acc + eps)*g;  w -= lr*u
//                    acc_update = rho*acc_update + (1-rho)*u^2
//   ftrl             [accum starting at initial_accumulator_value, linear] (TF ApplyFtrl, p = lr_power)
//                    acc' = acc + g^2;  linear += g - (acc'^-p - acc^-p)/lr*w
//                    w = |linear| > l1 ? (sign(linear)*l1 - linear)/(acc'^-p/lr + 2*l2) : 0;  acc = acc'
//                    (needs lr > 0: step() throws otherwise)
//
// All arithmetic is float32, as TF's kernels; scalars derived once per step (adam's lr_t) in double.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "trainer/optim/optimizer.h"

namespace fastnn {

class JobConfig;

// Optimizer hyperparameters under their FastNN names. Build it from a JobConfig (whose proto defaults
// are FastNN's) rather than by hand: the members here are deliberately zero-initialised.
struct OptimizerOptions {
  std::string optimizer;
  double adadelta_rho = 0;
  double adagrad_initial_accumulator_value = 0;
  double adam_beta1 = 0;
  double adam_beta2 = 0;
  double opt_epsilon = 0;
  double ftrl_learning_rate_power = 0;
  double ftrl_initial_accumulator_value = 0;
  double ftrl_l1 = 0;
  double ftrl_l2 = 0;
  double momentum = 0;
  bool use_nesterov = false;
  double rmsprop_momentum = 0;
  double rmsprop_decay = 0;
  double adam_weight_decay_rate = 0;
  double adamw_weight_decay = 0;  // adamw: the config's weight_decay, decoupled
  double lars_eeta = 0;
  double lars_epsilon = 0;
  double lars_weight_decay = 0;  // lars: the config's weight_decay, applied inside the optimizer
  double lamb_weight_decay = 0;  // lamb: the config's weight_decay, added to the update
};

// The optimizers that apply weight_decay themselves (adamw, lars, lamb) instead of as an L2 term added to the
// gradient before the update. ConfigError for an unknown name.
bool applies_weight_decay_itself(const std::string& optimizer);

OptimizerOptions optimizer_options(const JobConfig& config);

// The names make_optimizer accepts, in FastNN's order (optimizer_catalog.h's).
const std::vector<std::string_view>& optimizer_names();

// Builds options.optimizer over `params`; ConfigError listing the valid names for an unknown one.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options, std::vector<ParamRef> params);
std::unique_ptr<Optimizer> make_optimizer(const JobConfig& config, std::vector<ParamRef> params);

// The optimizers one by one.
std::unique_ptr<Optimizer> make_sgd(std::vector<ParamRef> params);
std::unique_ptr<Optimizer> make_momentum(std::vector<ParamRef> params, float momentum, bool use_nesterov);
std::unique_ptr<Optimizer> make_adam(std::vector<ParamRef> params, float beta1, float beta2, float epsilon);
std::unique_ptr<Optimizer> make_adam_weight_decay(std::vector<ParamRef> params, float beta1, float beta2,
                                                  float epsilon, float weight_decay_rate);
std::unique_ptr<Optimizer> make_adamw(std::vector<ParamRef> params, double beta1, double beta2, double epsilon,
                                      double weight_decay);
std::unique_ptr<Optimizer> make_lamb(std::vector<ParamRef> params, double beta1, double beta2, double epsilon,
                                     double weight_decay);
std::unique_ptr<Optimizer> make_lars(std::vector<ParamRef> params, double momentum, double eeta, double epsilon,
                                     double weight_decay);
std::unique_ptr<Optimizer> make_rmsprop(std::vector<ParamRef> params, float decay, float momentum,
                                        float epsilon);
std::unique_ptr<Optimizer> make_adagrad(std::vector<ParamRef> params, float initial_accumulator_value);
std::unique_ptr<Optimizer> make_adadelta(std::vector<ParamRef> params, float rho, float epsilon);
std::unique_ptr<Optimizer> make_ftrl(std::vector<ParamRef> params, float learning_rate_power,
                                     float initial_accumulator_value, float l1, float l2);

}  // namespace fastnn
