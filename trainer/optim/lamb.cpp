// lamb (timm's Lamb: You et al., 2020, "Large Batch Optimization for Deep Learning"): Adam's moments and
// bias correction, weight decay added to the update, and each decaying parameter's step scaled by the
// trust ratio ||w|| / ||update||. The per-element formulas are update_rules.h's; the norms are summed in
// double in a fixed chunk order (gradient_ops.h), so the result is bitwise the same on any thread count.
//
// Passes over a parameter: the moments; for a parameter that adapts, the norms of the weights and of the
// update (the update computed chunk by chunk into a small buffer, so that the loop vectorises, then
// squared and summed); the step (the update computed again rather than kept for the whole parameter).
#include <cmath>

#include "core/check.h"
#include "trainer/optim/gradient_ops.h"
#include "trainer/optim/optimizers.h"

namespace fastnn {
namespace {

class Lamb final : public Optimizer {
 public:
  Lamb(std::vector<ParamRef> params, double beta1, double beta2, double epsilon, double weight_decay)
      : Optimizer("lamb", std::move(params)),
        beta1_(beta1), beta2_(beta2), epsilon_(epsilon), weight_decay_(weight_decay) {
    m_ = add_slot("adam_m", 0.0f);
    v_ = add_slot("adam_v", 0.0f);
    step_ = add_scalar("step", 0.0f);  // timm's state["step"]: a resumed run continues bit for bit
  }

 private:
  void begin_step(float) override {
    const optim::rule::BiasCorrections bc =
        optim::rule::bias_corrections(beta1_, beta2_, static_cast<int64_t>(*step_) + 1);
    rule_ = {.one_minus_beta1 = static_cast<float>(1.0 - beta1_),
             .beta2 = static_cast<float>(beta2_), .one_minus_beta2 = static_cast<float>(1.0 - beta2_),
             .bias_correction1 = static_cast<float>(bc.first),
             .bias_correction2_sqrt = static_cast<float>(bc.second_sqrt),
             .epsilon = static_cast<float>(epsilon_)};
  }

  void update(size_t i, float lr) override {
    if (updating_rows())
      throw ConfigError("lamb cannot update some rows of a parameter (a sharded classifier head): its trust ratio "
                        "needs the whole parameter's update");
    const ParamRef& p = params()[i];
    optim::rule::Lamb r = rule_;
    // timm adapts (and decays) only parameter groups with weight decay; fastnn's decay flag is its grouping
    // (biases and normalisation parameters excluded).
    const bool adapt = p.decay && weight_decay_ != 0.0;
    if (adapt) r.weight_decay = static_cast<float>(weight_decay_);
    const float* w = p.value;
    const float* g = p.grad;
    float* m = slot(m_, i);
    float* v = slot(v_, i);
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) optim::rule::lamb_moments(r, g[k], m[k], v[k]);
    });
    if (r.weight_decay != 0.0f) {
      step_along(p, lr, adapt, [=](size_t k) {
        return optim::rule::lamb_add_decay(r, optim::rule::lamb_adam_step(r, m[k], v[k]), w[k]);
      });
    } else {
      step_along(p, lr, adapt, [=](size_t k) { return optim::rule::lamb_adam_step(r, m[k], v[k]); });
    }
  }

  // w -= lr * trust * direction(k), trust = ||w|| / ||direction|| where the parameter adapts, else 1.
  // Whether the direction includes the decay is decided by the caller, once for the whole parameter.
  template <typename Direction>
  static void step_along(const ParamRef& p, float lr, bool adapt, Direction direction) {
    float* w = p.value;
    float trust = 1.0f;
    if (adapt) {
      const double u_norm = std::sqrt(deterministic_sum_of_squares(p.count, [=](size_t b, size_t e, float* out) {
        for (size_t k = b; k < e; ++k) out[k - b] = direction(k);
      }));
      trust = static_cast<float>(optim::rule::lamb_trust_ratio(l2_norm(w, p.count), u_norm));
    }
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k)
        w[k] = optim::rule::sub(w[k], optim::rule::mul(lr, optim::rule::mul(direction(k), trust)));
    });
  }

  void end_step() override { *step_ += 1.0f; }

  double beta1_, beta2_, epsilon_, weight_decay_;
  size_t m_, v_;
  float* step_;
  optim::rule::Lamb rule_;
};

}  // namespace

std::unique_ptr<Optimizer> make_lamb(std::vector<ParamRef> params, double beta1, double beta2, double epsilon,
                                     double weight_decay) {
  return std::make_unique<Lamb>(std::move(params), beta1, beta2, epsilon, weight_decay);
}

}  // namespace fastnn
