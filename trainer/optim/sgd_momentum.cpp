// sgd and momentum (tf.train.GradientDescentOptimizer, tf.train.MomentumOptimizer).
#include "trainer/optim/optimizers.h"

namespace fastnn {
namespace {

class Sgd final : public Optimizer {
 public:
  explicit Sgd(std::vector<ParamRef> params) : Optimizer("sgd", std::move(params)) {}

 private:
  void update(size_t i, float lr) override {
    const ParamRef& p = params()[i];
    float* w = p.value;
    const float* g = p.grad;
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) w[k] -= lr * g[k];
    });
  }
};

class Momentum final : public Optimizer {
 public:
  Momentum(std::vector<ParamRef> params, float momentum, bool nesterov)
      : Optimizer("momentum", std::move(params)), momentum_(momentum), nesterov_(nesterov) {
    accum_ = add_slot("momentum", 0.0f);
  }

 private:
  void update(size_t i, float lr) override {
    const ParamRef& p = params()[i];
    float* w = p.value;
    const float* g = p.grad;
    float* a = slot(accum_, i);
    const float m = momentum_;
    if (nesterov_) {
      parallel_elementwise(p.count, [=](size_t b, size_t e) {
        for (size_t k = b; k < e; ++k) {
          a[k] = m * a[k] + g[k];
          w[k] -= g[k] * lr + a[k] * m * lr;
        }
      });
    } else {
      parallel_elementwise(p.count, [=](size_t b, size_t e) {
        for (size_t k = b; k < e; ++k) {
          a[k] = m * a[k] + g[k];
          w[k] -= lr * a[k];
        }
      });
    }
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
