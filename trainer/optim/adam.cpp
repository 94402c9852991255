// adam (tf.train.AdamOptimizer) and adamweightdecay (BERT's AdamWeightDecayOptimizer as FastNN uses it).
#include <cmath>

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
  void begin_step(float lr) override {
    const double b1p = *beta1_power_, b2p = *beta2_power_;
    lr_t_ = static_cast<float>(lr * std::sqrt(1.0 - b2p) / (1.0 - b1p));
  }

  void update(size_t i, float) override {
    const ParamRef& p = params()[i];
    float* w = p.value;
    const float* g = p.grad;
    float* m = slot(m_, i);
    float* v = slot(v_, i);
    const float one_minus_b1 = 1.0f - beta1_, one_minus_b2 = 1.0f - beta2_, eps = epsilon_, lr_t = lr_t_;
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) {
        m[k] += (g[k] - m[k]) * one_minus_b1;
        v[k] += (g[k] * g[k] - v[k]) * one_minus_b2;
        w[k] -= (m[k] * lr_t) / (std::sqrt(v[k]) + eps);
      }
    });
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
    const ParamRef& p = params()[i];
    float* w = p.value;
    const float* g = p.grad;
    float* m = slot(m_, i);
    float* v = slot(v_, i);
    const float b1 = beta1_, b2 = beta2_, eps = epsilon_;
    // BERT skips the decay term entirely for excluded parameters and when the rate is 0.
    const float rate = (p.decay && rate_ != 0.0f) ? rate_ : 0.0f;
    parallel_elementwise(p.count, [=](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) {
        m[k] = b1 * m[k] + (1.0f - b1) * g[k];
        v[k] = b2 * v[k] + (1.0f - b2) * (g[k] * g[k]);
        float u = m[k] / (std::sqrt(v[k]) + eps);
        if (rate != 0.0f) u += rate * w[k];
        w[k] -= lr * u;
      }
    });
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
