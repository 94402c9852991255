// ftrl (tf.train.FtrlOptimizer without l2 shrinkage, i.e. the ApplyFtrl kernel).
#include <cmath>

#include "core/check.h"
#include "trainer/optim/optimizers.h"

namespace fastnn {
namespace {

class Ftrl final : public Optimizer {
 public:
  Ftrl(std::vector<ParamRef> params, float lr_power, float initial_accumulator_value, float l1, float l2)
      : Optimizer("ftrl", std::move(params)), lr_power_(lr_power), l1_(l1), l2_(l2) {
    accum_ = add_slot("accum", initial_accumulator_value);
    linear_ = add_slot("linear", 0.0f);
  }

 private:
  void begin_step(float lr) override {
    // The proximal step divides by lr; TF would silently write inf/NaN into the weights.
    if (!(lr > 0.0f)) throw Error(str("ftrl needs a learning rate > 0, got ", lr));
  }

  void update(size_t i, float lr) override {
    const ParamRef& p = params()[i];
    float* w = p.value;
    const float* g = p.grad;
    float* acc = slot(accum_, i);
    float* lin = slot(linear_, i);
    const float l1 = l1_, two_l2 = 2.0f * l2_, neg_power = -lr_power_;
    const bool sqrt_power = lr_power_ == -0.5f;  // TF's fast path, and exact for the default
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) {
        const float new_acc = acc[k] + g[k] * g[k];
        const float pow_new = sqrt_power ? std::sqrt(new_acc) : std::pow(new_acc, neg_power);
        const float pow_old = sqrt_power ? std::sqrt(acc[k]) : std::pow(acc[k], neg_power);
        lin[k] += g[k] - (pow_new - pow_old) / lr * w[k];
        const float quadratic = pow_new / lr + two_l2;
        if (std::fabs(lin[k]) > l1) {
          const float sign_l1 = lin[k] > 0.0f ? l1 : -l1;
          w[k] = (sign_l1 - lin[k]) / quadratic;
        } else {
          w[k] = 0.0f;
        }
        acc[k] = new_acc;
      }
    });
  }

  float lr_power_, l1_, l2_;
  size_t accum_, linear_;
};

}  // namespace

std::unique_ptr<Optimizer> make_ftrl(std::vector<ParamRef> params, float learning_rate_power,
                                     float initial_accumulator_value, float l1, float l2) {
  return std::make_unique<Ftrl>(std::move(params), learning_rate_power, initial_accumulator_value, l1, l2);
}

}  // namespace fastnn
