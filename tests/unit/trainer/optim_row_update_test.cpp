// The device's row update (DeviceRowOptimizer: a sharded classifier head's rows, PartialFC's lazy update)
// walked on the host: what prepare_rows and update_rows run for each selected row — the gradient
// prepared by rule::prepared_gradient, the rule from rule_dispatch.h's with_rule at the row
// rule::selected_row names — is bitwise the CPU head's update (weight decay into the compact gradient,
// the clipping factor, Optimizer::step_rows) for all eight optimizers, over three steps with different
// row selections and over every row (rows null); and slot_inits names and starts the slots as the CPU
// optimizer does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "tests/unit/trainer/optim_test_options.h"
#include "trainer/optim/optimizers.h"
#include "trainer/optim/rule_dispatch.h"
#include "trainer/optim/update_rules.h"

namespace fastnn::optim {
namespace {

constexpr int64_t kRows = 9, kLen = 5;

OptimizerOptions options(const std::string& name) {
  OptimizerOptions o = optim_test::every_rule_options(name);
  o.use_nesterov = name == "momentum";  // momentum's Nesterov branch too
  return o;
}

float value_at(int step, int64_t k) { return std::sin(0.37f * static_cast<float>(k + 1) + 1.1f * static_cast<float>(step)); }

// prepare_rows_kernel and update_rows_kernel as host loops (inv_scale: the StepControl's; lr: its lr).
template <typename Rule>
void walk_rows(Rule r, float lr, const int64_t* rows, int64_t count, float* grad, float inv_scale, float wd,
               float factor, float* master, float* s0, float* s1) {
  for (int64_t j = 0; j < count; ++j)
    for (int64_t k = 0; k < kLen; ++k) {
      const float* w = master + rule::selected_row(rows, j) * kLen;
      grad[j * kLen + k] = rule::prepared_gradient(grad[j * kLen + k], inv_scale, wd, wd != 0.0f ? w[k] : 0.0f);
    }
  r.lr = lr;
  for (int64_t j = 0; j < count; ++j)
    for (int64_t k = 0; k < kLen; ++k)
      rule::apply_at(r, rule::selected_row(rows, j) * kLen + k, rule::mul(grad[j * kLen + k], factor), master, s0, s1, true);
}

class RowUpdate : public testing::TestWithParam<std::string> {};

TEST_P(RowUpdate, BitwiseTheCpuHeadsLazyUpdate) {
  const OptimizerOptions o = options(GetParam());
  const float wd = 0.01f, factor = 0.75f;
  std::vector<float> w_cpu(kRows * kLen), g_cpu(kRows * kLen);
  for (size_t k = 0; k < w_cpu.size(); ++k) w_cpu[k] = value_at(-1, static_cast<int64_t>(k));
  std::vector<float> w_dev = w_cpu;
  std::unique_ptr<Optimizer> cpu = make_optimizer(o, {{"Head/weights", w_cpu.data(), g_cpu.data(), w_cpu.size(), true}});
  const std::vector<SlotInit> inits = slot_inits(o);
  std::vector<std::vector<float>> slots;
  for (const SlotInit& s : inits) slots.emplace_back(w_dev.size(), s.init);
  // The CPU optimizer's slots: the same names, in the same order, starting at the same values.
  {
    const std::vector<StateArray> state = cpu->state();
    for (size_t i = 0; i < inits.size(); ++i) {
      ASSERT_LT(i, state.size());
      EXPECT_EQ(state[i].name, "Head/weights/" + inits[i].name);
      EXPECT_EQ(std::memcmp(state[i].data, slots[i].data(), state[i].count * sizeof(float)), 0) << state[i].name;
    }
  }
  float b1p = static_cast<float>(o.adam_beta1), b2p = static_cast<float>(o.adam_beta2);
  const std::vector<std::vector<int64_t>> selections = {{0, 3, 4, 8}, {}, {1, 2, 3, 4, 5, 6, 7}, {}};
  for (int step = 0; step < 4; ++step) {
    const bool every_row = step == 3;
    const std::vector<int64_t>& rows = selections[static_cast<size_t>(step)];
    const int64_t count = every_row ? kRows : static_cast<int64_t>(rows.size());
    const float lr = 0.1f / static_cast<float>(step + 1);
    // The CPU head (head_step.cpp): decay into the compact gradient, scale by the factor, step the rows.
    std::vector<float> compact(static_cast<size_t>(count * kLen));
    for (int64_t j = 0; j < count; ++j)
      for (int64_t k = 0; k < kLen; ++k) {
        const int64_t row = every_row ? j : rows[static_cast<size_t>(j)];
        compact[static_cast<size_t>(j * kLen + k)] = value_at(step, j * kLen + k);
        float& g = compact[static_cast<size_t>(j * kLen + k)];
        g += wd * w_cpu[static_cast<size_t>(row * kLen + k)];
        g *= factor;
      }
    if (every_row) {
      std::copy(compact.begin(), compact.end(), g_cpu.begin());
      cpu->step(lr);
    } else {
      cpu->step_rows(lr, rows, kLen, compact.data());
    }
    // The device's walk from the raw gradients.
    std::vector<float> grad(static_cast<size_t>(count * kLen));
    for (int64_t i = 0; i < count * kLen; ++i) grad[static_cast<size_t>(i)] = value_at(step, i);
    float* s0 = slots.size() > 0 ? slots[0].data() : nullptr;
    float* s1 = slots.size() > 1 ? slots[1].data() : nullptr;
    const float lr_rule = o.optimizer == "adam" ? rule::adam_lr_t(lr, b1p, b2p) : lr;
    with_rule(o, [&](auto r) {
      walk_rows(r, lr_rule, every_row ? nullptr : rows.data(), count, grad.data(), 1.0f, wd, factor, w_dev.data(), s0, s1);
    });
    b1p = rule::mul(b1p, static_cast<float>(o.adam_beta1));
    b2p = rule::mul(b2p, static_cast<float>(o.adam_beta2));
  }
  EXPECT_EQ(std::memcmp(w_cpu.data(), w_dev.data(), w_cpu.size() * sizeof(float)), 0) << o.optimizer << " weights";
  const std::vector<StateArray> state = cpu->state();
  for (size_t i = 0; i < slots.size(); ++i)
    EXPECT_EQ(std::memcmp(state[i].data, slots[i].data(), state[i].count * sizeof(float)), 0) << state[i].name;
}

INSTANTIATE_TEST_SUITE_P(EightOptimizers, RowUpdate,
                         testing::Values("sgd", "momentum", "adam", "adamweightdecay", "rmsprop", "adagrad", "adadelta",
                                         "ftrl"),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(RowUpdate, OptimizersTheKernelsDoNotRunAreConfigErrors) {
  EXPECT_THROW(with_rule(options("lamb"), [](auto) {}), ConfigError);
  EXPECT_THROW(with_rule(options("nadam"), [](auto) {}), ConfigError);
}

}  // namespace
}  // namespace fastnn::optim
