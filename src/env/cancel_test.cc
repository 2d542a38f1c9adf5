#include "evident/cancel.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>

namespace evident {
namespace {

TEST(CancelToken, StartsClearAndStaysCancelled) {
  CancelToken token;
  EXPECT_FALSE(token.cancelled());
  token.Cancel();
  EXPECT_TRUE(token.cancelled());
  token.Cancel();
  EXPECT_TRUE(token.cancelled());
}

// The signal tests run in a child (a death test), so that the test process keeps its own
// dispositions and a second signal kills only the child.
TEST(StopSignalsDeathTest, SigtermCancelsTheToken) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        static CancelToken token;
        InstallStopSignals(token);
        raise(SIGTERM);  // the handler runs before raise() returns
        std::exit(token.cancelled() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StopSignalsDeathTest, SigintCancelsAndASecondSignalKills) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        static CancelToken token;
        InstallStopSignals(token);
        raise(SIGINT);
        if (!token.cancelled()) std::exit(1);
        std::fputs("cancelled by the first signal\n", stderr);
        raise(SIGTERM);  // the other signal kills too: both were reset
        std::exit(2);
      },
      ::testing::KilledBySignal(SIGTERM), "cancelled by the first signal");
}

// In the test process itself: one SIGTERM to self, after which the default dispositions are
// back (no later test raises a stop signal).
TEST(StopSignals, SigtermToSelfCancelsAndRestoresTheDefault) {
  static CancelToken token;
  InstallStopSignals(token);
  ASSERT_EQ(raise(SIGTERM), 0);
  EXPECT_TRUE(token.cancelled());
  struct sigaction current = {};
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &current), 0);
  EXPECT_EQ(current.sa_handler, SIG_DFL);
  ASSERT_EQ(sigaction(SIGINT, nullptr, &current), 0);
  EXPECT_EQ(current.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace evident
