// sgd and momentum (tf.train.GradientDescentOptimizer, tf.train.MomentumOptimizer); the per-element rules
// are update_rules.h's, shared with the GPU.
#include "trainer/optim/optimizers.h"

namespace fastnn {
namespace {

class Sgd final : public Optimizer {
 public:
  explicit Sgd(std::vector<ParamRef> params) : Optimizer("sgd", std::move(params)) {}

 private:
  void update(size_t i, float lr) override { apply(optim::rule::Sgd{.lr = lr}, i, nullptr, nullptr); }
};

class Momentum final : public Optimizer {
 public:
  Momentum(std::vector<ParamRef> params, float momentum, bool nesterov)
      : Optimizer("momentum", std::move(params)), momentum_(momentum), nesterov_(nesterov) {
    accum_ = add_slot("momentum", 0.0f);
  }

 private:
  void update(size_t i, float lr) override {
    apply(optim::rule::Momentum{.lr = lr, .momentum = momentum_, .nesterov = nesterov_}, i,
               slot(accum_, i), nullptr);
  }

  float momentum_;
  bool nesterov_;
  size_t accum_;
};

}  // namespace

std::unique_ptr<Optimizer> make_sgd(std::vector<ParamRef> params) {
  return std::make_unique<Sgd>(std::move(params));
}

std::unique_ptr<Optimizer> make_momentum(std::vector<ParamRef> params, float momentum, bool use_nesterov) {
  return std::make_unique<Momentum>(std::move(params), momentum, use_nesterov);
}

}  // namespace fastnn
