// Chi-square tests for `fastnn check`: does each shard's label histogram look like a random sample of
// the split's global label distribution?
#pragma once

#include <cstdint>
#include <span>

namespace fastnn::converters {

// Regularized upper incomplete gamma function Q(a, x) = Γ(a, x) / Γ(a), a > 0, x >= 0: a series for
// x < a + 1, Lentz's continued fraction otherwise (relative accuracy ~1e-12).
double gamma_q(double a, double x);

// P(X >= chi2) for X ~ chi-square with `dof` degrees of freedom; 1 when dof <= 0.
double chi_square_p_value(double chi2, double dof);

struct ChiSquare {
  double statistic = 0;
  int64_t dof = 0;
  double p_value = 1;
};

// Goodness of fit of `observed` (one shard) against the proportions of `global` (the split):
// expected_c = n × global_c / N over the classes with global_c > 0; dof = those classes − 1.
ChiSquare chi_square_goodness_of_fit(std::span<const uint64_t> observed, std::span<const uint64_t> global);

}  // namespace fastnn::converters
