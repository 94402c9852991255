// adam (tf.train.AdamOptimizer) and adamweightdecay (BERT's AdamWeightDecayOptimizer as FastNN uses it);
// the per-element rules and adam's lr_t are update_rules.h's, shared with the GPU.
#include "trainer/optim/optimizers.h"

namespace fastnn {
namespace {

class Adam final : public Optimizer {
 public:
  Adam(std::vector<ParamRef> params, float beta1, float beta2, float epsilon)
      : Optimizer("adam", std::move(params)), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {
    m_ = add_slot("adam_m", 0.0f);
    v_ = add_slot("adam_v", 0.0f);
    // TF keeps beta^t as float variables starting at beta and multiplied after each step; saving them
    // (rather than a step count) makes a resumed run continue bit for bit.
    beta1_power_ = add_scalar("beta1_power", beta1);
    beta2_power_ = add_scalar("beta2_power", beta2);
  }

 private:
  void begin_step(float lr) override { lr_t_ = optim::rule::adam_lr_t(lr, *beta1_power_, *beta2_power_); }
  void update(size_t i, float) override {
    const optim::rule::Adam r{.lr = lr_t_, .one_minus_beta1 = 1.0f - beta1_, .one_minus_beta2 = 1.0f - beta2_,
                              .epsilon = epsilon_};
    apply(r, i, slot(m_, i), slot(v_, i));
  }
  void end_step() override {
    *beta1_power_ *= beta1_;
    *beta2_power_ *= beta2_;
  }

  float beta1_, beta2_, epsilon_;
  size_t m_, v_;
  float* beta1_power_;
  float* beta2_power_;
  float lr_t_ = 0;
};

class AdamWeightDecay final : public Optimizer {
 public:
  AdamWeightDecay(std::vector<ParamRef> params, float beta1, float beta2, float epsilon, float rate)
      : Optimizer("adamweightdecay", std::move(params)),
        beta1_(beta1), beta2_(beta2), epsilon_(epsilon), rate_(rate) {
    m_ = add_slot("adam_m", 0.0f);
    v_ = add_slot("adam_v", 0.0f);
  }

 private:
  void update(size_t i, float lr) override {
    const optim::rule::AdamWeightDecay r{.lr = lr, .beta1 = beta1_, .beta2 = beta2_, .epsilon = epsilon_,
                                         .rate = rate_};
    apply(r, i, slot(m_, i), slot(v_, i));
  }

  float beta1_, beta2_, epsilon_, rate_;
  size_t m_, v_;
};

}  // namespace

std::unique_ptr<Optimizer> make_adam(std::vector<ParamRef> params, float beta1, float beta2, float epsilon) {
  return std::make_unique<Adam>(std::move(params), beta1, beta2, epsilon);
}

std::unique_ptr<Optimizer> make_adam_weight_decay(std::vector<ParamRef> params, float beta1, float beta2,
                                                  float epsilon, float weight_decay_rate) {
  return std::make_unique<AdamWeightDecay>(std::move(params), beta1, beta2, epsilon, weight_decay_rate);
}

}  // namespace fastnn
