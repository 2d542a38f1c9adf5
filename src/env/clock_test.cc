#include "evident/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace evident {
namespace {

TEST(ManualClock, MovesOnlyWhenTold) {
  ManualClock clock(1'700'000'000'000);
  EXPECT_EQ(clock.NowMs(), 1'700'000'000'000);
  EXPECT_EQ(clock.NowMs(), 1'700'000'000'000);
  clock.Advance(250);
  EXPECT_EQ(clock.NowMs(), 1'700'000'000'250);
  clock.Set(5);  // backwards, as an NTP step may
  EXPECT_EQ(clock.NowMs(), 5);
  EXPECT_EQ(clock.slept_ms(), 0);
}

TEST(ManualClock, SleepAdvancesInsteadOfWaiting) {
  ManualClock clock;
  const auto start = std::chrono::steady_clock::now();
  clock.SleepMs(3'600'000);  // an hour, at once
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(clock.NowMs(), 3'600'000);
  clock.SleepMs(0);
  clock.SleepMs(-5);  // nothing, as for the system clock
  clock.Advance(10);
  EXPECT_EQ(clock.NowMs(), 3'600'010);
  EXPECT_EQ(clock.slept_ms(), 3'600'000);
}

TEST(ManualClock, AdvancesFromManyThreadsAddUp) {
  ManualClock clock;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < 10'000; ++i) {
        clock.Advance(1);
        clock.SleepMs(2);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(clock.NowMs(), 4 * 10'000 * 3);
  EXPECT_EQ(clock.slept_ms(), 4 * 10'000 * 2);
}

TEST(SystemClock, ReadsTheTimeOfDay) {
  const int64_t expected_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  EXPECT_NEAR(static_cast<double>(SystemClock().NowMs()), static_cast<double>(expected_ms), 5000);
  EXPECT_EQ(&SystemClock(), &SystemClock());
}

TEST(SystemClock, SleepWaitsAtLeastTheDuration) {
  const auto start = std::chrono::steady_clock::now();
  SystemClock().SleepMs(20);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
}

}  // namespace
}  // namespace evident
