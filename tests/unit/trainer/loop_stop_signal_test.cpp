// StopSignalScope: a first SIGTERM/SIGINT only sets the flag, the second ends the process at once with
// 128 + signal, and the previous handlers come back when the scope ends.
#include <gtest/gtest.h>
#include <signal.h>

#include "trainer/loop/stop_signal.h"

namespace fastnn::loop {
namespace {

volatile sig_atomic_t g_previous_ran = 0;
extern "C" void previous_handler(int) { g_previous_ran = 1; }

TEST(StopSignal, FirstSignalSetsTheFlag) {
  for (int sig : {SIGTERM, SIGINT}) {
    StopSignalScope scope;
    EXPECT_FALSE(stop_requested());
    EXPECT_EQ(stop_exit_code(), 0);
    ASSERT_EQ(::raise(sig), 0);  // handled synchronously by this thread before raise returns
    EXPECT_TRUE(stop_requested());
    EXPECT_EQ(stop_signal(), sig);
    EXPECT_EQ(stop_exit_code(), 128 + sig);
  }
}

TEST(StopSignal, PreviousHandlersAreRestored) {
  struct sigaction sa {}, old {};
  sa.sa_handler = previous_handler;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(::sigaction(SIGTERM, &sa, &old), 0);
  { StopSignalScope scope; }
  g_previous_ran = 0;
  ::raise(SIGTERM);
  EXPECT_EQ(g_previous_ran, 1);
  ::sigaction(SIGTERM, &old, nullptr);
}

TEST(StopSignalDeathTest, SecondSignalExitsAtOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StopSignalScope scope;
        ::raise(SIGTERM);
        ::raise(SIGTERM);
        std::_Exit(0);  // not reached
      },
      testing::ExitedWithCode(128 + SIGTERM), "stop requested");
}

}  // namespace
}  // namespace fastnn::loop
