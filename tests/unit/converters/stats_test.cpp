// converters/stats: the chi-square tail against closed forms (1 and 2 degrees of freedom) and
// published critical values; the goodness-of-fit statistic against a hand computation.
#include "converters/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace fastnn::converters {
namespace {

TEST(Stats, ClosedForms) {
  for (double x : {0.01, 0.5, 1.0, 3.0, 7.5, 20.0, 60.0}) {
    // dof 1: P(X >= x) = erfc(sqrt(x / 2)); dof 2: exp(-x / 2); dof 4: exp(-x/2) (1 + x/2).
    EXPECT_NEAR(chi_square_p_value(x, 1), std::erfc(std::sqrt(x / 2)), 1e-12 + 1e-10 * std::erfc(std::sqrt(x / 2))) << x;
    EXPECT_NEAR(chi_square_p_value(x, 2), std::exp(-x / 2), 1e-12) << x;
    EXPECT_NEAR(chi_square_p_value(x, 4), std::exp(-x / 2) * (1 + x / 2), 1e-12) << x;
  }
  EXPECT_EQ(chi_square_p_value(0, 3), 1.0);
  EXPECT_EQ(chi_square_p_value(5, 0), 1.0);
}

TEST(Stats, CriticalValues) {
  // Upper 5% and 1% points of the chi-square distribution (NIST/SEMATECH e-Handbook, table 1.3.6.7.4).
  struct Row {
    double dof, x05, x01;
  };
  for (Row r : {Row{1, 3.841, 6.635}, Row{5, 11.070, 15.086}, Row{9, 16.919, 21.666}, Row{10, 18.307, 23.209},
                Row{30, 43.773, 50.892}, Row{100, 124.342, 135.807}}) {
    EXPECT_NEAR(chi_square_p_value(r.x05, r.dof), 0.05, 5e-4) << r.dof;
    EXPECT_NEAR(chi_square_p_value(r.x01, r.dof), 0.01, 1e-4) << r.dof;
  }
}

TEST(Stats, GoodnessOfFit) {
  std::vector<uint64_t> global = {100, 200, 300, 0};
  // Exactly proportional: statistic 0, p = 1.
  ChiSquare same = chi_square_goodness_of_fit(std::vector<uint64_t>{10, 20, 30, 0}, global);
  EXPECT_EQ(same.statistic, 0);
  EXPECT_EQ(same.dof, 2);  // the empty class does not count
  EXPECT_EQ(same.p_value, 1);
  // By hand: n = 60, expected 10/20/30; observed 20/20/20 → 100/10 + 0 + 100/30.
  ChiSquare off = chi_square_goodness_of_fit(std::vector<uint64_t>{20, 20, 20, 0}, global);
  EXPECT_NEAR(off.statistic, 10 + 100.0 / 30, 1e-12);
  EXPECT_NEAR(off.p_value, std::exp(-off.statistic / 2), 1e-12);
  // A shard holding only one class of a balanced ten-class split.
  std::vector<uint64_t> g10(10, 1000), one(10, 0);
  one[3] = 500;
  EXPECT_LT(chi_square_goodness_of_fit(one, g10).p_value, 1e-100);
}

}  // namespace
}  // namespace fastnn::converters
