// converters/class_balance: records per class, the missing classes, the largest / smallest ratio, and
// the warnings `check` and `convert` print (with names and numbers), including the 94:2 split that the
// shard balance test alone called OK.
#include "converters/class_balance.h"

#include <gtest/gtest.h>

namespace fastnn::converters {
namespace {

TEST(ClassBalance, RatioOverPresentClassesAndMissingOnes) {
  const ClassBalance b = class_balance({94, 0, 2, 50});
  EXPECT_EQ(b.total, 146u);
  EXPECT_EQ(b.largest, 0);
  EXPECT_EQ(b.smallest, 2);
  EXPECT_DOUBLE_EQ(b.ratio, 47.0);
  EXPECT_EQ(b.missing, (std::vector<int64_t>{1}));
}

TEST(ClassBalance, TiesGoToTheLowestIdAndEmptySplitsHaveNoRatio) {
  const ClassBalance b = class_balance({5, 5, 5});
  EXPECT_EQ(b.largest, 0);
  EXPECT_EQ(b.smallest, 0);
  EXPECT_DOUBLE_EQ(b.ratio, 1.0);
  const ClassBalance e = class_balance({0, 0});
  EXPECT_EQ(e.largest, -1);
  EXPECT_DOUBLE_EQ(e.ratio, 0.0);
  EXPECT_EQ(e.missing.size(), 2u);
}

TEST(ClassBalanceWarnings, ImbalanceAboveTheThresholdWithNamesAndNumbers) {
  const std::vector<std::string> names = {"daisy", "roses"};
  const auto w = class_balance_warnings("train", class_balance({94, 2}), names, 10);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "split train: class 0 \"daisy\" has 94 records, class 1 \"roses\" 2: 47.0 times as many (warned "
                  "above 10, `fastnn check --max-class-ratio`); the largest class alone is 97.9% of the split, the "
                  "accuracy of always predicting it");
  EXPECT_TRUE(class_balance_warnings("train", class_balance({94, 2}), names, 50).empty());
  EXPECT_TRUE(class_balance_warnings("train", class_balance({20, 2}), names, 10).empty());  // exactly 10: not above
}

TEST(ClassBalanceWarnings, MissingClassesAreNamed) {
  const std::vector<std::string> names = {"a", "b", "c", "d", "e", "f", "g", "h"};
  auto w = class_balance_warnings("validation", class_balance({3, 0, 3, 3, 3, 3, 3, 3}), names, 10);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "split validation has no record of 1 of the 8 classes: 1 \"b\"; its accuracy says nothing about them");
  w = class_balance_warnings("test", class_balance({1, 0, 0, 0, 0, 0, 0, 1}), names, 10);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("6 of the 8 classes: 1 \"b\", 2 \"c\", 3 \"d\", 4 \"e\", 5 \"f\" and 1 more"), std::string::npos)
      << w[0];
  // A class beyond the names (no labels.txt) is shown by number.
  w = class_balance_warnings("train", class_balance({1, 0, 1}), {"x"}, 10);
  EXPECT_NE(w[0].find("classes: 1;"), std::string::npos) << w[0];
}

}  // namespace
}  // namespace fastnn::converters
