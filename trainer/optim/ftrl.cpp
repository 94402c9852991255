// ftrl (tf.train.FtrlOptimizer without l2 shrinkage, i.e. the ApplyFtrl kernel); the per-element rule is
// update_rules.h's, shared with the GPU.
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
    apply(optim::rule::Ftrl{.lr = lr, .lr_power = lr_power_, .l1 = l1_, .l2 = l2_}, i, slot(accum_, i),
               slot(linear_, i));
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
