// rmsprop (tf.train.RMSPropOptimizer, centered=False); the per-element rule is update_rules.h's.
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
    const optim::rule::RmsProp r{.lr = lr, .one_minus_decay = 1.0f - decay_, .momentum = momentum_, .epsilon = epsilon_};
    apply(r, i, slot(ms_, i), slot(mom_, i));
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
