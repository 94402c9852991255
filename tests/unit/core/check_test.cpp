#include "core/check.h"

#include <gtest/gtest.h>

#include "core/progress.h"

namespace fastnn {
namespace {

TEST(Check, PassingCheckDoesNothing) { FASTNN_CHECK(1 + 1 == 2, "math"); }

TEST(Check, FailingCheckThrowsWithMessageAndLocation) {
  try {
    int n = 7;
    FASTNN_CHECK(n < 5, "n is ", n);
    FAIL() << "no throw";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("n is 7"), std::string::npos) << what;
    EXPECT_NE(what.find("check_test.cpp"), std::string::npos) << what;
    EXPECT_NE(what.find("n < 5"), std::string::npos) << what;
  }
}

TEST(Check, StrConcatenates) { EXPECT_EQ(str("a", 1, '-', 2.5), "a1-2.5"); }

TEST(Progress, CountsFromManyThreadsAndFinishesOnce) {
  Progress p("test", 1000, "items", /*interactive=*/false);
  p.set_silent(true);
  for (int i = 0; i < 1000; ++i) p.add();
  EXPECT_EQ(p.count(), 1000u);
  p.finish();
  p.finish();
}

TEST(Progress, HumanUnits) {
  EXPECT_EQ(Progress::human(1500), "1.50 k");
  EXPECT_EQ(Progress::human(2.5e6), "2.50 M");
  EXPECT_EQ(Progress::human(12), "12 ");
}

}  // namespace
}  // namespace fastnn
