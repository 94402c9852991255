// split_commas keeps every piece (empty ones too) and trim_blanks strips only the ends.
#include "core/comma_list.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace fastnn {
namespace {

using Pieces = std::vector<std::string_view>;

TEST(CommaList, SplitKeepsEveryPieceEmptyOnesIncluded) {
  EXPECT_EQ(split_commas(""), Pieces{""});
  EXPECT_EQ(split_commas("a"), Pieces{"a"});
  EXPECT_EQ(split_commas("a,,b"), (Pieces{"a", "", "b"}));
  EXPECT_EQ(split_commas(",a,"), (Pieces{"", "a", ""}));
  EXPECT_EQ(split_commas(" x y , z"), (Pieces{" x y ", " z"}));
}

TEST(CommaList, TrimStripsBlanksAtBothEndsOnly) {
  EXPECT_EQ(trim_blanks(""), "");
  EXPECT_EQ(trim_blanks(" \t\r\n"), "");
  EXPECT_EQ(trim_blanks("  a b\t"), "a b");
  EXPECT_EQ(trim_blanks("a"), "a");
}

}  // namespace
}  // namespace fastnn
