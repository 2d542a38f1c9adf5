#include "transport/http/intake.h"

#include <gtest/gtest.h>

namespace evident::http {
namespace {

std::shared_ptr<Exchange> NewExchange(int* wakes) {
  return std::make_shared<Exchange>([wakes] { ++*wakes; });
}

Decision At(int64_t index, Outcome outcome, bool drained = false) {
  Decision d;
  d.index = index;
  d.consumer.assign(1, 'c');
  d.outcome = outcome;
  d.drained = drained;
  return d;
}

TEST(IntakeTest, EachRequestIsAnsweredOnceAllItsEventsAreCommitted) {
  Intake intake(100, 1 << 20);
  int wakes = 0;
  auto first = NewExchange(&wakes), second = NewExchange(&wakes);
  ASSERT_EQ(intake.Submit(first, {"a", "b"}), Intake::Taken::kTaken);
  ASSERT_EQ(intake.Submit(second, {"c"}), Intake::Taken::kTaken);
  EXPECT_TRUE(first->Suspend([] {}));
  Message m;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(*intake.Fetch(m, 0), Source::Fetched::kMessage);
    EXPECT_EQ(m.index, i);
  }
  EXPECT_EQ(*intake.Fetch(m, 0), Source::Fetched::kWouldWait);
  // A batch that ends inside the first request: nobody is answered yet.
  std::vector<Decision> batch = {At(0, Outcome::kApplied)};
  ASSERT_TRUE(intake.OnCommitted({.decisions = batch, .events = 1}).ok());
  ASSERT_TRUE(intake.Acknowledge(Cursor{.a = 0}).ok());
  EXPECT_FALSE(first->answered());
  // The next batch: event 1 deferred earlier is drained by event 2 of the second request.
  batch = {At(1, Outcome::kDeferred), At(2, Outcome::kApplied), At(1, Outcome::kApplied, true)};
  ASSERT_TRUE(intake.OnCommitted({.decisions = batch, .events = 2}).ok());
  ASSERT_TRUE(intake.Acknowledge(Cursor{.a = 2}).ok());
  EXPECT_TRUE(first->answered());
  EXPECT_TRUE(second->answered());
  EXPECT_EQ(wakes, 1);  // only the suspended one is woken
  EXPECT_EQ(first->status(), 200);
  EXPECT_NE(first->body().find(R"("events":2)"), std::string::npos);
  EXPECT_NE(first->body().find(R"("index":1,"consumer":"c","outcome":"deferred")"),
            std::string::npos)
      << first->body();
  // Event 1, drained while the batch decided event 2, is the first request's: its answer says so.
  EXPECT_NE(first->body().find(R"("drained":true)"), std::string::npos) << first->body();
  EXPECT_EQ(second->body().find(R"("drained":true)"), std::string::npos) << second->body();
  EXPECT_EQ(intake.outstanding(), 0u);
}

TEST(IntakeTest, ADrainedEventOfAnAnsweredRequestGoesToTheRequestThatClosedTheGap) {
  Intake intake(100, 1 << 20);
  int wakes = 0;
  auto early = NewExchange(&wakes), late = NewExchange(&wakes);
  ASSERT_EQ(intake.Submit(early, {"v2"}), Intake::Taken::kTaken);
  std::vector<Decision> batch = {At(0, Outcome::kDeferred)};
  ASSERT_TRUE(intake.OnCommitted({.decisions = batch}).ok());
  ASSERT_TRUE(intake.Acknowledge(Cursor{.a = 0}).ok());
  ASSERT_TRUE(early->answered());
  ASSERT_EQ(intake.Submit(late, {"v1"}), Intake::Taken::kTaken);
  batch = {At(1, Outcome::kApplied), At(0, Outcome::kApplied, true)};
  ASSERT_TRUE(intake.OnCommitted({.decisions = batch}).ok());
  ASSERT_TRUE(intake.Acknowledge(Cursor{.a = 1}).ok());
  EXPECT_NE(late->body().find(R"("index":0,"consumer":"c","outcome":"applied")"), std::string::npos)
      << late->body();
  EXPECT_NE(late->body().find(R"("drained":true)"), std::string::npos) << late->body();
}

// A drained event deferred by an earlier run carries that run's index, which may be a sequence
// number of this run's requests: it still goes to the request whose event closed the gap.
TEST(IntakeTest, ADrainedEventFromAnEarlierRunGoesToTheRequestThatClosedTheGap) {
  Intake intake(100, 1 << 20);
  int wakes = 0;
  auto filler = NewExchange(&wakes), closer = NewExchange(&wakes);
  ASSERT_EQ(intake.Submit(filler, {"d0", "d1", "d2"}), Intake::Taken::kTaken);
  ASSERT_EQ(intake.Submit(closer, {"v1"}), Intake::Taken::kTaken);
  // v1 (seq 3) closes a gap; v2, deferred in an earlier run at index 0, is drained.
  const std::vector<Decision> batch = {At(0, Outcome::kApplied), At(1, Outcome::kApplied),
                                       At(2, Outcome::kApplied), At(3, Outcome::kApplied),
                                       At(0, Outcome::kApplied, true)};
  ASSERT_TRUE(intake.OnCommitted({.decisions = batch, .events = 4}).ok());
  ASSERT_TRUE(intake.Acknowledge(Cursor{.a = 3}).ok());
  EXPECT_EQ(filler->body().find(R"("drained":true)"), std::string::npos) << filler->body();
  EXPECT_NE(closer->body().find(R"("index":0,"consumer":"c","outcome":"applied")"),
            std::string::npos)
      << closer->body();
  EXPECT_NE(closer->body().find(R"("drained":true)"), std::string::npos) << closer->body();
}

TEST(IntakeTest, BoundsClosingAndFailures) {
  Intake intake(3, 1 << 20);
  int wakes = 0;
  EXPECT_EQ(intake.Submit(NewExchange(&wakes), {"a", "b"}), Intake::Taken::kTaken);
  EXPECT_EQ(intake.Submit(NewExchange(&wakes), {"c", "d"}), Intake::Taken::kFull);
  // An empty queue takes any one request the request bounds let in.
  Intake roomy(1, 1 << 20);
  EXPECT_EQ(roomy.Submit(NewExchange(&wakes), {"a", "b"}), Intake::Taken::kTaken);
  auto waiting = NewExchange(&wakes);
  EXPECT_EQ(intake.Submit(waiting, {"c"}), Intake::Taken::kTaken);
  EXPECT_TRUE(waiting->Suspend([] {}));
  intake.SetDown(true);
  EXPECT_EQ(intake.Submit(NewExchange(&wakes), {"e"}), Intake::Taken::kDown);
  intake.Close();
  EXPECT_EQ(intake.Submit(NewExchange(&wakes), {"e"}), Intake::Taken::kClosed);
  EXPECT_EQ(intake.FailOutstanding(503, "store-unavailable", "gone"), 2u);
  EXPECT_EQ(waiting->status(), 503);
  EXPECT_NE(waiting->body().find(R"("reason":"store-unavailable")"), std::string::npos);
  EXPECT_EQ(wakes, 1);
  Message m;
  EXPECT_EQ(*intake.Fetch(m, 0), Source::Fetched::kWouldWait);  // the queue was emptied
  intake.Stop();
  EXPECT_EQ(*intake.Fetch(m, -1), Source::Fetched::kEnd);
}

TEST(IntakeTest, AnAnswerBeforeTheSuspensionIsNotLost) {
  int wakes = 0;
  auto exchange = NewExchange(&wakes);
  exchange->Answer(200, "{}");
  bool suspended = false;
  EXPECT_FALSE(exchange->Suspend([&] { suspended = true; }));
  EXPECT_FALSE(suspended);
  EXPECT_EQ(wakes, 0);
  exchange->Answer(503, "late");  // the first answer stands
  EXPECT_EQ(exchange->status(), 200);
}

}  // namespace
}  // namespace evident::http
