// The consume loop's time through its Clock: linger, a batch's age, idle and unreachable time
// measured on a ManualClock, with the events read on the deciding thread (read_ahead false), so
// that each run is the same run and takes no real time. A scripted source's pauses move the
// clock as a real wait would.
#include <gtest/gtest.h>

#include <chrono>
#include <variant>

#include "evident/consumer.h"
#include "evident/store_memory.h"

namespace evident {
namespace {

std::string StatusEvent(int n) {
  return std::string(R"({"specversion":"1.0","id":"s-)") + std::to_string(n) +
         R"(","source":"training://orders/checkout","type":"order.status.changed",)"
         R"("subject":"order-104","data":{"schemaVersion":1,"orderId":"order-104",)"
         R"("status":"paid"}})";
}

// A message, or a silence of `ms` (-1: for ever) during which the source cannot be reached
// when `unreachable`.
struct Pause {
  int64_t ms = 0;
  bool unreachable = false;
};
using Step = std::variant<std::string, Pause>;

// Delivers its steps in order; a pause passes as the waits the loop asks for: each Fetch in it
// advances the clock by its wait (or what is left of the pause) and says kWouldWait.
class ScriptedSource final : public Source {
 public:
  ScriptedSource(std::vector<Step> steps, ManualClock& clock)
      : steps_(std::move(steps)), clock_(clock) {}

  const std::string& name() const override { return name_; }
  Status Start(const std::optional<std::string>&) override { return Status::Ok(); }
  Result<Fetched> Fetch(Message& out, int wait_ms) override {
    if (stopped_ || at_ >= steps_.size()) return Fetched::kEnd;
    if (const auto* pause = std::get_if<Pause>(&steps_[at_])) return Wait(*pause, wait_ms);
    unreachable_ = false;
    out.bytes = std::get<std::string>(steps_[at_]);
    out.index = static_cast<int64_t>(at_);
    out.cursor = Cursor{static_cast<int64_t>(++at_), 0, 0};
    return Fetched::kMessage;
  }
  std::string EncodePosition(const Cursor& cursor) const override {
    return std::to_string(cursor.a);
  }
  Status Acknowledge(const Cursor& cursor) override {
    acked.push_back(cursor.a);
    return Status::Ok();
  }
  Status Reject(const Cursor&, int64_t) override { return Status::Ok(); }
  void Stop() override { stopped_ = true; }
  bool unreachable() const override { return unreachable_; }
  Result<bool> ConfirmIdle() override {
    ++idle_asked;
    return true;
  }

  std::vector<int64_t> acked;  // cursor.a of each acknowledgement
  int idle_asked = 0;

 private:
  Result<Fetched> Wait(const Pause& pause, int wait_ms) {
    unreachable_ = pause.unreachable;
    if (pause.ms < 0) {  // for ever: only a wait with a limit returns
      EXPECT_GE(wait_ms, 0) << "the loop would wait for ever";
      clock_.Advance(std::max(wait_ms, 0));
      return Fetched::kWouldWait;
    }
    const int64_t left_ms = pause.ms - waited_ms_;
    const int64_t step_ms = wait_ms < 0 ? left_ms : std::min<int64_t>(wait_ms, left_ms);
    clock_.Advance(step_ms);
    waited_ms_ += step_ms;
    if (waited_ms_ >= pause.ms) {
      waited_ms_ = 0;
      ++at_;
    }
    return Fetched::kWouldWait;
  }

  std::vector<Step> steps_;
  ManualClock& clock_;
  const std::string name_ = "scripted";
  size_t at_ = 0;
  int64_t waited_ms_ = 0;  // of the pause at at_
  bool stopped_ = false, unreachable_ = false;
};

class LoopTimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = LoadConfig(std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/evident.yaml");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config_ = *std::move(config);
    config_.batch_count_max = 1000;
    config_.linger_ms = 100;
    config_.batch_ms_max = 10'000;
  }

  // Runs `steps`; the summary, with how much real time the run took in `real_ms`.
  Result<ConsumeSummary> Run(ScriptedSource& source, ConsumeOptions options) {
    auto pipeline = Pipeline::Create(config_);
    EXPECT_TRUE(pipeline.ok()) << pipeline.status().ToString();
    auto store = OpenMemoryStore(NewMemoryDatabase()).value();
    options.clock = &clock_;
    options.read_ahead = false;
    options.gap_check_interval_ms = -1;
    const auto started = std::chrono::steady_clock::now();
    Result<ConsumeSummary> summary = Consume(**pipeline, *store, source, options);
    real_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count();
    return summary;
  }

  Config config_;
  ManualClock clock_{1'785'000'000'000};
  int64_t real_ms_ = 0;
};

// A pause longer than linger_ms closes the batch in hand; the waits are the clock's, not real.
TEST_F(LoopTimeTest, LingerClosesTheBatchInHandWhenTheInputPauses) {
  const int64_t start_ms = clock_.MonotonicMs();
  ScriptedSource source({StatusEvent(0), StatusEvent(1), StatusEvent(2), Pause{.ms = 5000},
                         StatusEvent(3), StatusEvent(4)},
                        clock_);
  const Result<ConsumeSummary> summary = Run(source, {});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->batches, 2);
  EXPECT_EQ(source.acked, (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(clock_.MonotonicMs() - start_ms, 5000);  // the pause, waited as the loop asked
  EXPECT_LT(real_ms_, 2000);
}

// No batch waits longer than batch_ms_max, however steadily events trickle in under linger_ms.
TEST_F(LoopTimeTest, ABatchOlderThanBatchMsMaxCommitsWhileEventsTrickleIn) {
  config_.batch_ms_max = 150;
  std::vector<Step> steps;
  for (int i = 0; i < 10; ++i) {
    steps.push_back(StatusEvent(i));
    steps.push_back(Pause{.ms = 40});  // under linger_ms: never a pause long enough
  }
  ScriptedSource source(std::move(steps), clock_);
  const Result<ConsumeSummary> summary = Run(source, {});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  // Events at 0, 40, 80, 120, 160 ms of a batch: at 160 it is 160 ms old, past 150.
  ASSERT_GE(source.acked.size(), 2u);
  EXPECT_EQ(source.acked[0], 7);  // the cursor of the fourth event (steps: event, pause, ...)
  EXPECT_EQ(summary->events, 10);
  EXPECT_LT(real_ms_, 2000);
}

// A source that never ends: the run ends once it was idle for until_idle_ms and the source
// says nothing is left.
TEST_F(LoopTimeTest, UntilIdleEndsARunOnTheClocksIdleTime) {
  const int64_t start_ms = clock_.MonotonicMs();
  ScriptedSource source({StatusEvent(0), StatusEvent(1), Pause{.ms = -1}}, clock_);
  const Result<ConsumeSummary> summary = Run(source, {.until_idle_ms = 60'000});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->events, 2);
  EXPECT_EQ(source.idle_asked, 1);
  EXPECT_TRUE(summary->unreachable_error.empty());
  EXPECT_GE(clock_.MonotonicMs() - start_ms, 60'000);
  EXPECT_LT(clock_.MonotonicMs() - start_ms, 60'000 + 1000);
  EXPECT_LT(real_ms_, 2000);  // a minute of idle time, on the manual clock
}

// Time the broker cannot be reached is not idle time; an outage as long as until_idle_ms ends
// the run saying so.
TEST_F(LoopTimeTest, AnOutageAsLongAsUntilIdleEndsTheRunSayingSo) {
  ScriptedSource source({StatusEvent(0), Pause{.ms = -1, .unreachable = true}}, clock_);
  const Result<ConsumeSummary> summary = Run(source, {.until_idle_ms = 30'000});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->events, 1);
  EXPECT_EQ(source.idle_asked, 0);  // never idle: unreachable all along
  EXPECT_NE(summary->unreachable_error.find("has not been reachable for at least 30000 ms"),
            std::string::npos)
      << summary->unreachable_error;
  EXPECT_LT(real_ms_, 2000);
}

// An outage shorter than until_idle_ms is waited out; the idle time counts from its end.
TEST_F(LoopTimeTest, AShorterOutageIsWaitedOutAndIdleTimeStartsAfterIt) {
  const int64_t start_ms = clock_.MonotonicMs();
  ScriptedSource source({StatusEvent(0), Pause{.ms = 20'000, .unreachable = true}, Pause{.ms = -1}},
                        clock_);
  const Result<ConsumeSummary> summary = Run(source, {.until_idle_ms = 30'000});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->unreachable_error.empty()) << summary->unreachable_error;
  EXPECT_EQ(source.idle_asked, 1);
  // 20 s unreachable, then 30 s idle (give or take the loop's last wait).
  EXPECT_GE(clock_.MonotonicMs() - start_ms, 50'000);
  EXPECT_LT(clock_.MonotonicMs() - start_ms, 51'000);
}

}  // namespace
}  // namespace evident
