// The double-precision reference harness shared by the CPU optimizer tests (optim_optimizers_test,
// optim_decoupled_test): gradients and learning rates that change every step, and a runner that steps an
// optimizer beside a per-element reference and compares each weight.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "trainer/optim/optimizers.h"

namespace fastnn::optim_test {

inline constexpr int kElems = 6;
inline constexpr int kSteps = 7;

// Gradients that change sign and size from step to step and element to element.
inline double grad_at(int t, int k) { return std::sin(0.7 * t + 1.3 * k) * (0.3 + 0.4 * k) + (k == 2 ? 0.05 : 0.0); }
inline double lr_at_step(int t) { return 0.05 / (1.0 + 0.3 * t); }
inline double w0(int k) { return 0.5 - 0.25 * k; }

// Per-element double reference: state is whatever the closure keeps; returns the new weight.
using RefStep = std::function<double(int k, int t, double w, double g, double lr)>;

// Runs `opt` (over one parameter of kElems floats) and the reference side by side for kSteps.
inline void expect_matches(Optimizer& opt, std::vector<float>& w, std::vector<float>& g, const RefStep& ref,
                           double rel_tol = 2e-5) {
  std::vector<double> wr(kElems);
  for (int k = 0; k < kElems; ++k) wr[k] = w[k];
  for (int t = 1; t <= kSteps; ++t) {
    const double lr = lr_at_step(t);
    for (int k = 0; k < kElems; ++k) g[k] = static_cast<float>(grad_at(t, k));
    opt.step(static_cast<float>(lr));
    for (int k = 0; k < kElems; ++k) {
      wr[k] = ref(k, t, wr[k], static_cast<double>(g[k]), static_cast<double>(static_cast<float>(lr)));
      EXPECT_NEAR(w[k], wr[k], rel_tol * std::max(1.0, std::fabs(wr[k])))
          << opt.name() << " step " << t << " element " << k;
    }
  }
}

struct Single {
  std::vector<float> w = std::vector<float>(kElems), g = std::vector<float>(kElems, 0.0f);
  Single() {
    for (int k = 0; k < kElems; ++k) w[k] = static_cast<float>(w0(k));
  }
  std::vector<ParamRef> params(bool decay = true) { return {{"layer/weights", w.data(), g.data(), w.size(), decay}}; }
};

}  // namespace fastnn::optim_test
