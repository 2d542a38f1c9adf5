#include "core/fault_point.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>

namespace evident {
namespace {

TEST(FaultPoint, ParsesNameAndHit) {
  EXPECT_EQ(ParseFaultPoint("before-commit").point, "before-commit");
  EXPECT_EQ(ParseFaultPoint("before-commit").hit, 1);
  EXPECT_EQ(ParseFaultPoint("after-ack:12").point, "after-ack");
  EXPECT_EQ(ParseFaultPoint("after-ack:12").hit, 12);
  EXPECT_FALSE(ParseFaultPoint("after-ack:12").stop);
  EXPECT_EQ(ParseFaultPoint("after-ack:3:stop").point, "after-ack");
  EXPECT_EQ(ParseFaultPoint("after-ack:3:stop").hit, 3);
  EXPECT_TRUE(ParseFaultPoint("after-ack:3:stop").stop);
  EXPECT_EQ(ParseFaultPoint("after-ack:3:halt").hit, 0);
  // Anything malformed arms nothing rather than a surprising point.
  EXPECT_EQ(ParseFaultPoint("").hit, 0);
  EXPECT_EQ(ParseFaultPoint(":3").hit, 0);
  EXPECT_EQ(ParseFaultPoint("x:0").hit, 0);
  EXPECT_EQ(ParseFaultPoint("x:-1").hit, 0);
  EXPECT_EQ(ParseFaultPoint("x:2y").hit, 0);
  EXPECT_EQ(ParseFaultPoint("x:").hit, 0);
}

// The armed point kills at its Nth hit and not before; other points never do. The death tests
// re-execute this binary ("threadsafe"), so the child reads the variable set here afresh.
TEST(FaultPointDeathTest, KillsAtTheArmedHitWithSigkill) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_EQ(setenv(kFaultPointVariable, "here:3", 1), 0);
  EXPECT_EXIT(
      {
        FaultPoint("elsewhere");
        FaultPoint("here");
        FaultPoint("here");
        std::fputs("two hits survived\n", stderr);
        FaultPoint("here");
        std::fputs("the third hit survived\n", stderr);
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "two hits survived");
  ASSERT_EQ(unsetenv(kFaultPointVariable), 0);
}

TEST(FaultPointDeathTest, UnarmedPointsDoNothing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_EQ(unsetenv(kFaultPointVariable), 0);
  EXPECT_EXIT(
      {
        for (int i = 0; i < 3; ++i) FaultPoint("before-commit");
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace evident
