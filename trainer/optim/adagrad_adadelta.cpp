// adagrad (tf.train.AdagradOptimizer) and adadelta (tf.train.AdadeltaOptimizer).
#include <cmath>

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
    const ParamRef& p = params()[i];
    float* w = p.value;
    const float* g = p.grad;
    float* acc = slot(accum_, i);
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) {
        acc[k] += g[k] * g[k];
        w[k] -= g[k] * lr / std::sqrt(acc[k]);
      }
    });
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
    const ParamRef& p = params()[i];
    float* w = p.value;
    const float* g = p.grad;
    float* acc = slot(accum_, i);
    float* acc_up = slot(accum_update_, i);
    const float rho = rho_, eps = epsilon_;
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) {
        acc[k] = acc[k] * rho + g[k] * g[k] * (1.0f - rho);
        const float u = std::sqrt(acc_up[k] + eps) / std::sqrt(acc[k] + eps) * g[k];
        w[k] -= u * lr;
        acc_up[k] = acc_up[k] * rho + u * u * (1.0f - rho);
      }
    });
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
