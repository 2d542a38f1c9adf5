#include "evident/progress.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace evident {
namespace {

TEST(ProgressLine, AKnownSizeGivesABarThePercentageTheRateAndTheTimeLeft) {
  // A quarter done in 10 s: 30 s left, at 40 events a second.
  EXPECT_EQ(ProgressLine({.done = 250, .total = 1000, .items = 400, .seconds = 10}, "events"),
            "[#####---------------]  25%  400 events  40/s  0:30 left");
  EXPECT_EQ(ProgressLine({.done = 1000, .total = 1000, .items = 400, .seconds = 10}, "rows",
                         "applied 400"),
            "[####################] 100%  400 rows  40/s  0:00 left, applied 400");
  EXPECT_EQ(ProgressLine({.done = 1, .total = 1000, .items = 1, .seconds = 10}, "events"),
            "[--------------------]   0%  1 events  0/s  2:46:30 left");
}

TEST(ProgressLine, AnUnknownSizeGivesTheCountAndTheRateOnly) {
  EXPECT_EQ(ProgressLine({.done = 0, .total = -1, .items = 90, .seconds = 3}, "events", "x 1"),
            "90 events  30/s, x 1");
}

TEST(ProgressBar, ItPrintsAtMostEveryIntervalAndEndsItsLineAtFinish) {
  ManualClock clock(0);
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  ASSERT_NE(out, nullptr);
  {
    ProgressBar bar(out, "events", clock, 200);
    bar.Update(1, 10, 1);  // the first: shown
    bar.Update(2, 10, 2);  // within the interval: not shown
    EXPECT_FALSE(bar.Due());
    clock.Advance(200);
    EXPECT_TRUE(bar.Due());
    bar.Update(5, 10, 5);  // shown
    bar.Finish();          // shown once more, and a newline
  }
  std::fclose(out);
  const std::string written(text, size);
  std::free(text);
  EXPECT_EQ(written,
            "\r[##------------------]  10%  1 events  0/s"
            "\r[##########----------]  50%  5 events  25/s  0:00 left"
            "\r[##########----------]  50%  5 events  25/s  0:00 left\n");
}

TEST(ProgressBar, WithoutAnOutputItDoesNothing) {
  ProgressBar bar(nullptr, "events");
  EXPECT_FALSE(bar.Due());
  bar.Update(1, 2, 3);
  bar.Finish();
}

TEST(ProgressMode, ParsesItsThreeWordsAndRefusesOthers) {
  EXPECT_EQ(ParseProgressMode("auto").value(), ProgressMode::kAuto);
  EXPECT_EQ(ParseProgressMode("always").value(), ProgressMode::kAlways);
  EXPECT_EQ(ParseProgressMode("never").value(), ProgressMode::kNever);
  EXPECT_EQ(ParseProgressMode("sometimes").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ProgressOutput(ProgressMode::kNever), nullptr);
  EXPECT_EQ(ProgressOutput(ProgressMode::kAlways), stderr);
}

}  // namespace
}  // namespace evident
