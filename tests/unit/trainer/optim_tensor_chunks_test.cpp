// The multi-tensor chunk table (trainer/optim/tensor_chunks.h) and the shared update rules
// (update_rules.h) on the host: the plan covers every element once, in order, with correctly offset
// pointers; an update that walks the table chunk by chunk — what the GPU's one-launch kernels do, written
// here as host loops over the same rules — is bitwise the CPU optimizer for all eight optimizers; and
// rule::decide is the update order's decision (skip on overflow under dynamic scaling, clipping factor).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "tests/unit/trainer/optim_test_options.h"
#include "trainer/optim/loss_scaler.h"
#include "trainer/optim/optimizers.h"
#include "trainer/optim/tensor_chunks.h"
#include "trainer/optim/update_rules.h"

namespace fastnn::optim {
namespace {

TEST(TensorChunks, CoverEveryElementOnceInOrderWithOffsetPointers) {
  std::vector<float> m0(10), g0(10), m1(3), g1(3), s(10), m2(0), g2(0);
  std::vector<uint16_t> half_grad(10), half_value(10);
  const ChunkSource src[] = {
      {.master = m0.data(), .grad32 = g0.data(), .grad = half_grad.data(), .value = half_value.data(),
       .slot0 = s.data(), .count = 10, .weight_decay = 0.5f, .decay = true, .prepare = true, .grad_bytes = 2,
       .value_bytes = 2},
      {.master = m2.data(), .grad32 = g2.data(), .count = 0},  // empty: no chunk
      {.master = m1.data(), .grad32 = g1.data(), .grad = g1.data(), .count = 3, .decay = false, .prepare = false,
       .grad_f32 = true},
  };
  const std::vector<TensorChunk> c = plan_chunks(src, 4);
  ASSERT_EQ(c.size(), 4u);  // 4 + 4 + 2, then 3
  const int64_t counts[] = {4, 4, 2, 3};
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i].count, counts[i]) << i;
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(c[k].master, m0.data() + 4 * k);
    EXPECT_EQ(c[k].grad32, g0.data() + 4 * k);
    EXPECT_EQ(c[k].grad, half_grad.data() + 4 * k);  // 2-byte elements
    EXPECT_EQ(c[k].value, half_value.data() + 4 * k);
    EXPECT_EQ(c[k].slot0, s.data() + 4 * k);
    EXPECT_EQ(c[k].slot1, nullptr);
    EXPECT_EQ(c[k].weight_decay, 0.5f);
    EXPECT_EQ(c[k].flags, kChunkDecay | kChunkPrepare);
  }
  EXPECT_EQ(c[3].master, m1.data());
  EXPECT_EQ(c[3].value, nullptr);
  EXPECT_EQ(c[3].flags, kChunkGradF32);
  // One chunk per parameter when the chunk is longer than every parameter.
  EXPECT_EQ(plan_chunks(src, kDefaultChunkElements).size(), 2u);
}

TEST(TensorChunks, RejectsBadPlans) {
  std::vector<float> m(4), g(4);
  const ChunkSource ok{.master = m.data(), .grad32 = g.data(), .grad = g.data(), .count = 4};
  EXPECT_THROW(plan_chunks(std::span(&ok, 1), 0), Error);
  ChunkSource no_master = ok;
  no_master.master = nullptr;
  EXPECT_THROW(plan_chunks(std::span(&no_master, 1), 4), Error);
  ChunkSource no_grad = ok;
  no_grad.grad = nullptr;
  EXPECT_THROW(plan_chunks(std::span(&no_grad, 1), 4), Error);
  ChunkSource negative = ok;
  negative.count = -1;
  EXPECT_THROW(plan_chunks(std::span(&negative, 1), 4), Error);
}

// The GPU's three launches as host loops: preparation (g32 = g * inv_scale + wd * w where flagged), the
// decision, the update of every chunk with one rule.
template <typename Rule>
void run_table(const std::vector<TensorChunk>& table, const Rule& rule, float inv_scale, float factor) {
  for (const TensorChunk& c : table) {
    if (!(c.flags & kChunkPrepare)) continue;
    const float* g = static_cast<const float*>(c.grad);
    for (int64_t k = 0; k < c.count; ++k) {
      float v = rule::mul(g[k], inv_scale);
      if (c.weight_decay != 0.0f) v = rule::add(v, rule::mul(c.weight_decay, c.master[k]));
      c.grad32[k] = v;
    }
  }
  for (const TensorChunk& c : table)
    for (int64_t k = 0; k < c.count; ++k)
      rule::apply_at(rule, k, rule::mul(c.grad32[k], factor), c.master, c.slot0, c.slot1, (c.flags & kChunkDecay) != 0);
}

float value_at(int param, int step, int k) {
  return std::sin(0.37f * static_cast<float>(k + 1) + 1.1f * static_cast<float>(step) + static_cast<float>(param));
}

struct Case {
  std::string name;
  std::vector<float> slot_inits;
};

class ChunkedUpdate : public testing::TestWithParam<Case> {};

// Three parameters (1, 37 and 1000 elements, the middle one without decay) walked in chunks of 7: the
// CPU optimizer and the table agree bit for bit after three steps with weight decay and clipping.
TEST_P(ChunkedUpdate, BitwiseEqualToTheCpuOptimizer) {
  const Case& c = GetParam();
  const int64_t sizes[] = {1, 37, 1000};
  const float wd = 0.01f, factor = 0.75f;
  std::vector<std::vector<float>> w_cpu, g_cpu, w_tab, g_raw, g32, s0, s1;
  std::vector<ParamRef> refs;
  for (int i = 0; i < 3; ++i) {
    const auto n = static_cast<size_t>(sizes[i]);
    w_cpu.emplace_back(n);
    for (size_t k = 0; k < n; ++k) w_cpu[i][k] = value_at(i, -1, static_cast<int>(k));
    w_tab.push_back(w_cpu[i]);
    g_cpu.emplace_back(n);
    g_raw.emplace_back(n);
    g32.emplace_back(n);
    s0.emplace_back(n, c.slot_inits.size() > 0 ? c.slot_inits[0] : 0.0f);
    s1.emplace_back(n, c.slot_inits.size() > 1 ? c.slot_inits[1] : 0.0f);
  }
  for (int i = 0; i < 3; ++i) refs.push_back({"p" + std::to_string(i), w_cpu[i].data(), g_cpu[i].data(), w_cpu[i].size(), i != 1});
  const OptimizerOptions o = optim_test::every_rule_options(c.name);
  std::unique_ptr<Optimizer> cpu = make_optimizer(o, refs);
  std::vector<ChunkSource> src;
  for (int i = 0; i < 3; ++i)
    src.push_back({.master = w_tab[i].data(), .grad32 = g32[i].data(), .grad = g_raw[i].data(), .slot0 = s0[i].data(),
                   .slot1 = s1[i].data(), .count = sizes[i], .weight_decay = i != 1 ? wd : 0.0f, .decay = i != 1});
  const std::vector<TensorChunk> table = plan_chunks(src, 7);
  float b1p = 0.9f, b2p = 0.999f;
  for (int step = 0; step < 3; ++step) {
    const float lr = 0.1f / static_cast<float>(step + 1);
    for (int i = 0; i < 3; ++i)
      for (size_t k = 0; k < g_raw[i].size(); ++k) g_raw[i][k] = value_at(i, step, static_cast<int>(k));
    // The CPU runner's order: decay into the gradient, clip, step.
    for (int i = 0; i < 3; ++i)
      for (size_t k = 0; k < g_cpu[i].size(); ++k) {
        float v = g_raw[i][k];
        if (i != 1) v = v + wd * w_cpu[i][k];
        g_cpu[i][k] = v * factor;
      }
    cpu->step(lr);
    const float f = static_cast<float>(o.adam_beta1), b = static_cast<float>(o.adam_beta2);
    const float e = static_cast<float>(o.opt_epsilon);
    if (c.name == "sgd") run_table(table, rule::Sgd{.lr = lr}, 1.0f, factor);
    if (c.name == "momentum") run_table(table, rule::Momentum{.lr = lr, .momentum = 0.9f}, 1.0f, factor);
    if (c.name == "adam") {
      run_table(table, rule::Adam{.lr = rule::adam_lr_t(lr, b1p, b2p), .one_minus_beta1 = 1.0f - f,
                                  .one_minus_beta2 = 1.0f - b, .epsilon = e}, 1.0f, factor);
      b1p *= f;
      b2p *= b;
    }
    if (c.name == "adamweightdecay")
      run_table(table, rule::AdamWeightDecay{.lr = lr, .beta1 = f, .beta2 = b, .epsilon = e, .rate = 0.01f}, 1.0f, factor);
    if (c.name == "rmsprop")
      run_table(table, rule::RmsProp{.lr = lr, .one_minus_decay = 1.0f - 0.9f, .momentum = 0.5f, .epsilon = e}, 1.0f,
                factor);
    if (c.name == "adagrad") run_table(table, rule::Adagrad{.lr = lr}, 1.0f, factor);
    if (c.name == "adadelta") run_table(table, rule::Adadelta{.lr = lr, .rho = 0.95f, .epsilon = e}, 1.0f, factor);
    if (c.name == "ftrl") run_table(table, rule::Ftrl{.lr = lr, .lr_power = -0.5f, .l1 = 0.01f, .l2 = 0.02f}, 1.0f, factor);
  }
  const std::vector<StateArray> state = cpu->state();
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(std::memcmp(w_cpu[i].data(), w_tab[i].data(), w_cpu[i].size() * sizeof(float)), 0) << c.name << " p" << i;
  // Slots in the optimizer's order: slot 0 then slot 1 for each parameter.
  const size_t per_param = c.slot_inits.size();
  for (int i = 0; i < 3; ++i)
    for (size_t j = 0; j < per_param; ++j) {
      const StateArray& a = state[static_cast<size_t>(i) * per_param + j];
      const std::vector<float>& mine = j == 0 ? s0[i] : s1[i];
      ASSERT_EQ(a.count, mine.size()) << a.name;
      EXPECT_EQ(std::memcmp(a.data, mine.data(), a.count * sizeof(float)), 0) << c.name << " " << a.name;
    }
}

INSTANTIATE_TEST_SUITE_P(EightOptimizers, ChunkedUpdate,
                         testing::Values(Case{"sgd", {}}, Case{"momentum", {0.0f}}, Case{"adam", {0.0f, 0.0f}},
                                         Case{"adamweightdecay", {0.0f, 0.0f}}, Case{"rmsprop", {1.0f, 0.0f}},
                                         Case{"adagrad", {0.1f}}, Case{"adadelta", {0.0f, 0.0f}},
                                         Case{"ftrl", {0.1f, 0.0f}}),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(UpdateDecision, DynamicScalerSkipsOverflowsAndGrowsAsLossScalerDoes) {
  const rule::ScalerRule r{.dynamic = true, .growth_interval = 3, .min_scale = 1, .max_scale = 64};
  rule::ScalerState s{.scale = 16};
  LossScaler host({.initial_scale = 16, .dynamic = true, .growth_interval = 3, .min_scale = 1, .max_scale = 64});
  const bool overflow[] = {false, true, false, false, false, false, false, false, true, true, true, true, true, false};
  for (bool o : overflow) {
    const rule::Decision d = rule::decide(o ? INFINITY : 2.0, o, 0, &r, &s);
    EXPECT_EQ(d.apply, host.update(o));
    EXPECT_EQ(d.apply, !o);
    EXPECT_EQ(s.scale, host.scale());
    EXPECT_EQ(s.clean, host.clean_steps());
  }
  EXPECT_EQ(s.skipped, 6);
  EXPECT_EQ(s.scale, 1.0);  // 16, 8 (skip), 16 and 32 (3 clean each), then five skips down to min_scale
}

TEST(UpdateDecision, ClippingFactorAndStaticScaling) {
  EXPECT_EQ(rule::decide(10.0, false, 5.0, nullptr, nullptr).factor, 0.5f);
  EXPECT_EQ(rule::decide(4.0, false, 5.0, nullptr, nullptr).factor, 1.0f);
  EXPECT_EQ(rule::decide(4.0, false, 0.0, nullptr, nullptr).factor, 1.0f);
  // A non-finite norm under clipping turns the update into NaN (TF), never a silent skip.
  const rule::Decision nan = rule::decide(std::numeric_limits<double>::infinity(), true, 5.0, nullptr, nullptr);
  EXPECT_TRUE(nan.apply);
  EXPECT_TRUE(std::isnan(nan.factor));
  // Static scaling applies every step and keeps its scale.
  const rule::ScalerRule fixed{.dynamic = false};
  rule::ScalerState s{.scale = 128};
  EXPECT_TRUE(rule::decide(1.0, true, 0, &fixed, &s).apply);
  EXPECT_EQ(s.scale, 128);
  EXPECT_EQ(s.skipped, 0);
}

}  // namespace
}  // namespace fastnn::optim
