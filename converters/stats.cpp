#include "converters/stats.h"

#include <cmath>
#include <limits>

#include "core/check.h"

namespace fastnn::converters {
namespace {

constexpr double kEps = 1e-15;
constexpr int kMaxIter = 100000;

// P(a, x) by its power series: e^-x x^a / Γ(a+1) · Σ x^n / ((a+1)…(a+n)).
double gamma_p_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < kMaxIter; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * kEps) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Q(a, x) by the continued fraction of Γ(a, x), evaluated with the modified Lentz method.
double gamma_q_fraction(double a, double x) {
  const double tiny = std::numeric_limits<double>::min() / kEps;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < kMaxIter; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < kEps) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

}  // namespace

double gamma_q(double a, double x) {
  FASTNN_CHECK(a > 0 && x >= 0, "gamma_q(", a, ", ", x, ")");
  if (x == 0) return 1;
  if (x < a + 1) return 1 - gamma_p_series(a, x);
  return gamma_q_fraction(a, x);
}

double chi_square_p_value(double chi2, double dof) {
  if (dof <= 0) return 1;
  if (chi2 <= 0) return 1;
  return gamma_q(dof / 2, chi2 / 2);
}

ChiSquare chi_square_goodness_of_fit(std::span<const uint64_t> observed, std::span<const uint64_t> global) {
  FASTNN_CHECK(observed.size() == global.size(), "histograms of different sizes");
  ChiSquare r;
  uint64_t n = 0, total = 0;
  int64_t classes = 0;
  for (size_t c = 0; c < global.size(); ++c) {
    n += observed[c];
    total += global[c];
    classes += global[c] > 0;
  }
  if (n == 0 || total == 0 || classes < 2) return r;
  for (size_t c = 0; c < global.size(); ++c) {
    if (global[c] == 0) continue;
    double e = static_cast<double>(n) * global[c] / total;
    double d = static_cast<double>(observed[c]) - e;
    r.statistic += d * d / e;
  }
  r.dof = classes - 1;
  r.p_value = chi_square_p_value(r.statistic, static_cast<double>(r.dof));
  return r;
}

}  // namespace fastnn::converters
