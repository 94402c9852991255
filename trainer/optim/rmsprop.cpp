// rmsprop (tf.train.RMSPropOptimizer, centered=False).
#include <cmath>

#include "trainer/optim/optimizers.h"

namespace fastnn {
namespace {

class RmsProp final : public Optimizer {
 public:
  RmsProp(std::vector<ParamRef> params, float decay, float momentum, float epsilon)
      : Optimizer("rmsprop", std::move(params)), decay_(decay), momentum_(momentum), epsilon_(epsilon) {
    ms_ = add_slot("rms", 1.0f);  // TF 1.x initialises the mean square with ones, not zeros
    mom_ = add_slot("momentum", 0.0f);
  }

 private:
  void update(size_t i, float lr) override {
    const ParamRef& p = params()[i];
    float* w = p.value;
    const float* g = p.grad;
    float* ms = slot(ms_, i);
    float* mom = slot(mom_, i);
    const float one_minus_decay = 1.0f - decay_, momentum = momentum_, eps = epsilon_;
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) {
        ms[k] += (g[k] * g[k] - ms[k]) * one_minus_decay;
        mom[k] = mom[k] * momentum + (g[k] * lr) / std::sqrt(ms[k] + eps);
        w[k] -= mom[k];
      }
    });
  }

  float decay_, momentum_, epsilon_;
  size_t ms_, mom_;
};

}  // namespace

std::unique_ptr<Optimizer> make_rmsprop(std::vector<ParamRef> params, float decay, float momentum,
                                        float epsilon) {
  return std::make_unique<RmsProp>(std::move(params), decay, momentum, epsilon);
}

}  // namespace fastnn
