// lars (tf.contrib.opt.LARSOptimizer as MLPerf's ResNet-50 uses it): the per-element rule and the trust
// ratio are update_rules.h's, the per-parameter norms gradient_ops.h's (deterministic for any thread count).
#include "core/check.h"
#include "trainer/optim/gradient_ops.h"
#include "trainer/optim/optimizers.h"

namespace fastnn {
namespace {

class Lars final : public Optimizer {
 public:
  Lars(std::vector<ParamRef> params, double momentum, double eeta, double epsilon, double weight_decay)
      : Optimizer("lars", std::move(params)),
        momentum_(momentum), eeta_(eeta), epsilon_(epsilon), weight_decay_(weight_decay) {
    accum_ = add_slot("momentum", 0.0f);
  }

 private:
  void update(size_t i, float lr) override {
    if (updating_rows())
      throw ConfigError("lars cannot update some rows of a parameter (a sharded classifier head): its trust ratio "
                        "needs the whole parameter's gradient");
    const ParamRef& p = params()[i];
    optim::rule::Lars r{.lr = lr, .momentum = static_cast<float>(momentum_)};
    if (p.decay) {  // MLPerf's skip list is fastnn's decay exclusion: biases and batch norm
      const double trust = optim::rule::lars_trust_ratio(l2_norm(p.value, p.count), l2_norm(p.grad, p.count), eeta_,
                                                         weight_decay_, epsilon_);
      r.lr = static_cast<float>(lr * trust);
      r.weight_decay = static_cast<float>(weight_decay_);
    }
    apply(r, i, slot(accum_, i), nullptr);
  }

  double momentum_, eeta_, epsilon_, weight_decay_;
  size_t accum_;
};

}  // namespace

std::unique_ptr<Optimizer> make_lars(std::vector<ParamRef> params, double momentum, double eeta, double epsilon,
                                     double weight_decay) {
  return std::make_unique<Lars>(std::move(params), momentum, eeta, epsilon, weight_decay);
}

}  // namespace fastnn
