// adagrad (tf.train.AdagradOptimizer) and adadelta (tf.train.AdadeltaOptimizer); the per-element rules are
// update_rules.h's, shared with the GPU.
#include "trainer/optim/optimizers.h"

namespace fastnn {
namespace {

class Adagrad final : public Optimizer {
 public:
  Adagrad(std::vector<ParamRef> params, float initial_accumulator_value)
      : Optimizer("adagrad", std::move(params)) {
    accum_ = add_slot("accumulator", initial_accumulator_value);
  }

 private:
  void update(size_t i, float lr) override {
    apply(optim::rule::Adagrad{.lr = lr}, i, slot(accum_, i), nullptr);
  }

  size_t accum_;
};

class Adadelta final : public Optimizer {
 public:
  Adadelta(std::vector<ParamRef> params, float rho, float epsilon)
      : Optimizer("adadelta", std::move(params)), rho_(rho), epsilon_(epsilon) {
    accum_ = add_slot("accum", 0.0f);
    accum_update_ = add_slot("accum_update", 0.0f);
  }

 private:
  void update(size_t i, float lr) override {
    apply(optim::rule::Adadelta{.lr = lr, .rho = rho_, .epsilon = epsilon_}, i, slot(accum_, i),
               slot(accum_update_, i));
  }

  float rho_, epsilon_;
  size_t accum_, accum_update_;
};

}  // namespace

std::unique_ptr<Optimizer> make_adagrad(std::vector<ParamRef> params, float initial_accumulator_value) {
  return std::make_unique<Adagrad>(std::move(params), initial_accumulator_value);
}

std::unique_ptr<Optimizer> make_adadelta(std::vector<ParamRef> params, float rho, float epsilon) {
  return std::make_unique<Adadelta>(std::move(params), rho, epsilon);
}

}  // namespace fastnn
