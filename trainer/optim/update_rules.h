// The FastNN optimizer rules (and PyTorch's AdamW), per element, written once for the CPU optimizers (trainer/optim/*.cpp)
// and the CUDA update kernels (update_kernels.cu): the same float operations in the same order, each
// rounded on its own, so an update on the GPU is bitwise the CPU's by construction (the rules and their TF
// origins are listed in optimizers.h). Also the per-step decision both devices share: the global-norm
// clipping factor and the loss scaler's rule (update_order.h says in which order they run).
//
// Rounding: core/host_device_math.h — on the device every product, quotient, sum and square root is an _rn
// intrinsic (nvcc would otherwise contract a*b+c into one FMA); on the host they are plain operators (g++
// does not contract them in ISO C++ mode, and the x86-64 baseline has no FMA to contract into).
//
// A rule is a small struct of hyperparameters with
//   static constexpr int kSlots;                 // optimizer slots per element (0, 1 or 2)
//   void operator()(float g, float& w, float& s0, float& s1, bool decay) const;
// `g` is the gradient as the update reads it (already multiplied by the clipping factor), `decay` is the
// parameter's ParamRef::decay (only adamweightdecay looks at it), unused slots are dummies. `lr` is the
// member the step's learning rate goes into (adam: its bias-corrected lr_t).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "core/host_device_math.h"

namespace fastnn::optim::rule {

// ---- rounded float arithmetic, the same on both sides (core/host_device_math.h) ----
using hd::add;
using hd::div;
using hd::finite;
using hd::mul;
using hd::pow;
using hd::quiet_nan;
using hd::sqrt;
using hd::sub;

// ---- the rules (optimizers.h has each one in formula form) ----

struct Sgd {
  static constexpr int kSlots = 0;
  float lr = 0;
  FASTNN_HD inline void operator()(float g, float& w, float&, float&, bool) const { w = sub(w, mul(lr, g)); }
};

struct Momentum {
  static constexpr int kSlots = 1;
  float lr = 0, momentum = 0;
  bool nesterov = false;
  FASTNN_HD inline void operator()(float g, float& w, float& a, float&, bool) const {
    a = add(mul(momentum, a), g);
    if (nesterov) w = sub(w, add(mul(g, lr), mul(mul(a, momentum), lr)));
    else w = sub(w, mul(lr, a));
  }
};

struct Adam {
  static constexpr int kSlots = 2;
  float lr = 0;  // lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t): adam_lr_t()
  float one_minus_beta1 = 0, one_minus_beta2 = 0, epsilon = 0;
  FASTNN_HD inline void operator()(float g, float& w, float& m, float& v, bool) const {
    m = add(m, mul(sub(g, m), one_minus_beta1));
    v = add(v, mul(sub(mul(g, g), v), one_minus_beta2));
    w = sub(w, div(mul(m, lr), add(rule::sqrt(v), epsilon)));
  }
};

struct AdamWeightDecay {
  static constexpr int kSlots = 2;
  float lr = 0, beta1 = 0, beta2 = 0, epsilon = 0, rate = 0;
  FASTNN_HD inline void operator()(float g, float& w, float& m, float& v, bool decay) const {
    m = add(mul(beta1, m), mul(1.0f - beta1, g));
    v = add(mul(beta2, v), mul(1.0f - beta2, mul(g, g)));
    float u = div(m, add(rule::sqrt(v), epsilon));
    // BERT skips the decay term entirely for excluded parameters and when the rate is 0.
    if (decay && rate != 0.0f) u = add(u, mul(rate, w));
    w = sub(w, mul(lr, u));
  }
};

// PyTorch's torch.optim.AdamW (Loshchilov & Hutter's decoupled weight decay, with Adam's bias correction
// applied as PyTorch applies it: eps is added after sqrt(v) is divided by sqrt(1 - beta2^t), unlike TF's
// adam). The per-step scalars come from adamw_step_scalars() in double, as PyTorch computes them in Python.
struct AdamW {
  static constexpr int kSlots = 2;
  float lr = 0;                 // unused: the step's rate is in step_size and decay_factor
  float step_size = 0;          // lr / (1 - beta1^t)
  float bias_correction2_sqrt = 1;  // sqrt(1 - beta2^t)
  float decay_factor = 1;       // 1 - lr * weight_decay, for the parameters that decay
  float one_minus_beta1 = 0, beta2 = 0, one_minus_beta2 = 0, epsilon = 0;
  FASTNN_HD inline void operator()(float g, float& w, float& m, float& v, bool decay) const {
    if (decay) w = mul(w, decay_factor);
    m = add(m, mul(one_minus_beta1, sub(g, m)));              // exp_avg.lerp_(grad, 1 - beta1)
    v = add(mul(v, beta2), mul(mul(one_minus_beta2, g), g));  // exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2)
    const float denom = add(div(rule::sqrt(v), bias_correction2_sqrt), epsilon);
    w = sub(w, div(mul(step_size, m), denom));  // param.addcdiv_(exp_avg, denom, value=-step_size)
  }
};

// tf.contrib.opt.LARSOptimizer (You et al., 2017) as MLPerf's ResNet-50 runs it: the parameter's lr scaled
// by its trust ratio (lars_trust_ratio), weight decay added to the gradient inside the optimizer, then TF's
// ApplyMomentum with lr 1 over grad * scaled lr. A parameter excluded from decay (biases, batch norm:
// MLPerf's skip list) gets the lr unscaled and no decay; the caller sets lr and weight_decay so.
struct Lars {
  static constexpr int kSlots = 1;
  float lr = 0;  // this parameter's scaled lr
  float momentum = 0, weight_decay = 0;
  FASTNN_HD inline void operator()(float g, float& w, float& a, float&, bool) const {
    const float grad = weight_decay != 0.0f ? add(g, mul(weight_decay, w)) : g;
    a = add(mul(a, momentum), mul(grad, lr));
    w = sub(w, a);  // var -= lr * accum with lr 1
  }
};

// LARS's trust ratio from one parameter's norms: eeta ||w|| / (||g|| + weight_decay ||w|| + epsilon) when
// both norms are positive, else 1.
FASTNN_HD inline double lars_trust_ratio(double w_norm, double g_norm, double eeta, double weight_decay,
                                         double epsilon) {
  if (!(w_norm > 0) || !(g_norm > 0)) return 1.0;
  return eeta * w_norm / (g_norm + weight_decay * w_norm + epsilon);
}

// LAMB (You et al., 2020) as timm's Lamb (timm/optim/lamb.py) computes it, in two parts because its trust
// ratio needs a whole parameter's update first. lamb_moments: Adam's moments (exp_avg.lerp_(grad,
// 1 - beta1), exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2)). The direction: lamb_adam_step,
// the bias-corrected update (m / bias_correction1) / (sqrt(v) / sqrt(bias_correction2) + eps), then
// lamb_add_decay, + weight_decay * w, where the parameter decays. The parameter then moves by
// lr * trust * direction, trust from lamb_trust_ratio (1 where it does not decay: timm adapts only groups
// with weight decay).
struct Lamb {
  float one_minus_beta1 = 0, beta2 = 0, one_minus_beta2 = 0;
  float bias_correction1 = 1, bias_correction2_sqrt = 1, epsilon = 0;
  float weight_decay = 0;  // 0 for a parameter that does not decay
};
FASTNN_HD inline void lamb_moments(const Lamb& r, float g, float& m, float& v) {
  m = add(m, mul(r.one_minus_beta1, sub(g, m)));
  v = add(mul(v, r.beta2), mul(mul(r.one_minus_beta2, g), g));
}
// Two parts, so that a loop over a whole parameter decides once whether it decays (a branch per element
// keeps the loop from vectorising).
FASTNN_HD inline float lamb_adam_step(const Lamb& r, float m, float v) {
  const float denom = add(div(rule::sqrt(v), r.bias_correction2_sqrt), r.epsilon);
  return div(div(m, r.bias_correction1), denom);
}
FASTNN_HD inline float lamb_add_decay(const Lamb& r, float u, float w) { return add(u, mul(w, r.weight_decay)); }
// ||w|| / ||direction|| when both are positive, else 1 (timm's torch.where pair).
FASTNN_HD inline double lamb_trust_ratio(double w_norm, double u_norm) {
  return w_norm > 0 && u_norm > 0 ? w_norm / u_norm : 1.0;
}

// Adam's bias corrections of step t (1, 2, ...), in double as PyTorch and timm compute them in Python:
// 1 - beta1^t and sqrt(1 - beta2^t).
struct BiasCorrections {
  double first, second_sqrt;
};
inline BiasCorrections bias_corrections(double beta1, double beta2, int64_t t) {
  return {1.0 - std::pow(beta1, static_cast<double>(t)), std::sqrt(1.0 - std::pow(beta2, static_cast<double>(t)))};
}

struct AdamWScalars {
  float step_size, bias_correction2_sqrt, decay_factor;
};
// The scalars of step t (1, 2, ...) for learning rate lr.
inline AdamWScalars adamw_step_scalars(double lr, double beta1, double beta2, double weight_decay, int64_t t) {
  const BiasCorrections bc = bias_corrections(beta1, beta2, t);
  return {static_cast<float>(lr / bc.first), static_cast<float>(bc.second_sqrt), static_cast<float>(1.0 - lr * weight_decay)};
}

struct RmsProp {
  static constexpr int kSlots = 2;
  float lr = 0, one_minus_decay = 0, momentum = 0, epsilon = 0;
  FASTNN_HD inline void operator()(float g, float& w, float& ms, float& mom, bool) const {
    ms = add(ms, mul(sub(mul(g, g), ms), one_minus_decay));
    mom = add(mul(mom, momentum), div(mul(g, lr), rule::sqrt(add(ms, epsilon))));
    w = sub(w, mom);
  }
};

struct Adagrad {
  static constexpr int kSlots = 1;
  float lr = 0;
  FASTNN_HD inline void operator()(float g, float& w, float& acc, float&, bool) const {
    acc = add(acc, mul(g, g));
    w = sub(w, div(mul(g, lr), rule::sqrt(acc)));
  }
};

struct Adadelta {
  static constexpr int kSlots = 2;
  float lr = 0, rho = 0, epsilon = 0;
  FASTNN_HD inline void operator()(float g, float& w, float& acc, float& up, bool) const {
    const float one_minus_rho = 1.0f - rho;
    acc = add(mul(acc, rho), mul(mul(g, g), one_minus_rho));
    const float u = mul(div(rule::sqrt(add(up, epsilon)), rule::sqrt(add(acc, epsilon))), g);
    w = sub(w, mul(u, lr));
    up = add(mul(up, rho), mul(mul(u, u), one_minus_rho));
  }
};

// TF's ApplyFtrl (no l2 shrinkage); lr must be > 0 (the callers check before the step).
struct Ftrl {
  static constexpr int kSlots = 2;
  float lr = 0, lr_power = -0.5f, l1 = 0, l2 = 0;
  FASTNN_HD inline void operator()(float g, float& w, float& acc, float& lin, bool) const {
    const bool sqrt_power = lr_power == -0.5f;  // TF's fast path, and exact for the default
    const float old_acc = acc;
    const float new_acc = add(old_acc, mul(g, g));
    const float pow_new = sqrt_power ? rule::sqrt(new_acc) : rule::pow(new_acc, -lr_power);
    const float pow_old = sqrt_power ? rule::sqrt(old_acc) : rule::pow(old_acc, -lr_power);
    lin = add(lin, sub(g, mul(div(sub(pow_new, pow_old), lr), w)));
    const float quadratic = add(div(pow_new, lr), 2.0f * l2);
    if ((lin < 0 ? -lin : lin) > l1) w = div(sub(lin > 0.0f ? l1 : -l1, lin), quadratic);
    else w = 0.0f;
    acc = new_acc;
  }
};

// Adam's bias-corrected rate, in double from the float beta powers (TF keeps beta^t as float variables).
FASTNN_HD inline float adam_lr_t(float lr, float beta1_power, float beta2_power) {
  const double b1p = beta1_power, b2p = beta2_power;
#if defined(__CUDA_ARCH__)
  return static_cast<float>(__ddiv_rn(__dmul_rn(static_cast<double>(lr), __dsqrt_rn(__dsub_rn(1.0, b2p))),
                                      __dsub_rn(1.0, b1p)));
#else
  return static_cast<float>(static_cast<double>(lr) * std::sqrt(1.0 - b2p) / (1.0 - b1p));
#endif
}

// Applies `r` to elements [b, e) of one parameter (host loops and device threads alike).
template <typename Rule>
FASTNN_HD inline void apply_at(const Rule& r, int64_t k, float g, float* w, float* s0, float* s1, bool decay) {
  float d0 = 0, d1 = 0;
  float& a = Rule::kSlots > 0 ? s0[k] : d0;
  float& b = Rule::kSlots > 1 ? s1[k] : d1;
  r(g, w[k], a, b, decay);
}

// The gradient an update reads, prepared from the backward's: unscaled (inv_scale = 1 / loss scale) plus
// weight decay (update_order.h's step 2), each product and sum rounded on its own.
FASTNN_HD inline float prepared_gradient(float g, float inv_scale, float weight_decay, float w) {
  const float v = mul(g, inv_scale);
  return weight_decay != 0.0f ? add(v, mul(weight_decay, w)) : v;
}

// Row updates (PartialFC's lazy update of a sharded head): the j-th selected row is rows[j], or row j
// itself when rows is null (every row, in order).
FASTNN_HD inline int64_t selected_row(const int64_t* rows, int64_t j) { return rows ? rows[j] : j; }

// ---- the step's decision (update_order.h) ----

// tf.clip_by_global_norm's factor: max_norm / norm when norm > max_norm, NaN for a non-finite norm (TF
// turns every gradient into NaN so an overflow is never applied silently), else 1; 1 without clipping.
FASTNN_HD inline float clip_factor(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0f;
  if (!finite(norm)) return quiet_nan();
  return norm > max_norm ? static_cast<float>(max_norm / norm) : 1.0f;
}

// The loss scaler's state and rule (loss_scaler.h describes the policy). The host LossScaler and the
// GPU's device-side scaler both step this rule, so a GPU run scales as the host logic says.
struct ScalerState {
  double scale = 1;
  int64_t clean = 0;    // applied steps since the scale last changed
  int64_t skipped = 0;  // over the scaler's life
};

struct ScalerRule {
  bool dynamic = false;
  int64_t growth_interval = 2000;
  double min_scale = 1, max_scale = 16777216.0;
  // Records one step's overflow check; returns whether the update is applied.
  FASTNN_HD inline bool record(ScalerState& s, bool overflow) const {
    if (!dynamic) return true;
    if (overflow) {
      s.scale = s.scale / 2 < min_scale ? min_scale : s.scale / 2;
      s.clean = 0;
      ++s.skipped;
      return false;
    }
    if (++s.clean >= growth_interval) {
      s.scale = s.scale * 2 > max_scale ? max_scale : s.scale * 2;
      s.clean = 0;
    }
    return true;
  }
};

struct Decision {
  bool apply = true;
  float factor = 1.0f;  // the clipping factor the update multiplies gradients by
};

// After the gradient check: the scaler (when there is one) decides whether the step is applied, then
// the clipping factor.
FASTNN_HD inline Decision decide(double norm, bool overflow, double max_norm, const ScalerRule* scaler, ScalerState* state) {
  Decision d;
  if (scaler && !scaler->record(*state, overflow || !finite(norm))) {
    d.apply = false;
    return d;
  }
  d.factor = clip_factor(norm, max_norm);
  return d;
}

}  // namespace fastnn::optim::rule
