// adam (tf.train.AdamOptimizer), adamweightdecay (BERT's AdamWeightDecayOptimizer as FastNN uses it) and
// adamw (PyTorch's torch.optim.AdamW); the per-element rules and their per-step scalars are
// update_rules.h's, shared with the GPU.
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

class AdamW final : public Optimizer {
 public:
  AdamW(std::vector<ParamRef> params, double beta1, double beta2, double epsilon, double weight_decay)
      : Optimizer("adamw", std::move(params)),
        beta1_(beta1), beta2_(beta2), epsilon_(epsilon), weight_decay_(weight_decay) {
    m_ = add_slot("adam_m", 0.0f);
    v_ = add_slot("adam_v", 0.0f);
    // PyTorch's state["step"], a float32 count too: a resumed run continues bit for bit.
    step_ = add_scalar("step", 0.0f);
  }

 private:
  void begin_step(float lr) override {
    const auto t = static_cast<int64_t>(*step_) + 1;
    const optim::rule::AdamWScalars s = optim::rule::adamw_step_scalars(lr, beta1_, beta2_, weight_decay_, t);
    // The scalars as PyTorch hands them to its float kernels: computed in double, rounded once.
    rule_ = {.step_size = s.step_size, .bias_correction2_sqrt = s.bias_correction2_sqrt,
             .decay_factor = s.decay_factor, .one_minus_beta1 = static_cast<float>(1.0 - beta1_),
             .beta2 = static_cast<float>(beta2_), .one_minus_beta2 = static_cast<float>(1.0 - beta2_),
             .epsilon = static_cast<float>(epsilon_)};
  }
  void update(size_t i, float) override { apply(rule_, i, slot(m_, i), slot(v_, i)); }
  void end_step() override { *step_ += 1.0f; }

  double beta1_, beta2_, epsilon_, weight_decay_;
  size_t m_, v_;
  float* step_;
  optim::rule::AdamW rule_;
};

}  // namespace

std::unique_ptr<Optimizer> make_adamw(std::vector<ParamRef> params, double beta1, double beta2, double epsilon,
                                      double weight_decay) {
  return std::make_unique<AdamW>(std::move(params), beta1, beta2, epsilon, weight_decay);
}

std::unique_ptr<Optimizer> make_adam(std::vector<ParamRef> params, float beta1, float beta2, float epsilon) {
  return std::make_unique<Adam>(std::move(params), beta1, beta2, epsilon);
}

std::unique_ptr<Optimizer> make_adam_weight_decay(std::vector<ParamRef> params, float beta1, float beta2,
                                                  float epsilon, float weight_decay_rate) {
  return std::make_unique<AdamWeightDecay>(std::move(params), beta1, beta2, epsilon, weight_decay_rate);
}

}  // namespace fastnn
