// The consume loop over the memory store and a memory source: acknowledgement after commit,
// busy-store retry, cancellation, and a commit that fails.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <utility>

#include "evident/consumer.h"
#include "evident/fault_store.h"
#include "evident/store_memory.h"

namespace evident {
namespace {

std::string Status104(int n) {
  return std::string(R"({"specversion":"1.0","id":"s-)") + std::to_string(n) +
         R"(","source":"training://orders/checkout","type":"order.status.changed",)"
         R"("subject":"order-104","data":{"schemaVersion":1,"orderId":"order-104",)"
         R"("status":"paid"}})";
}

// Wraps a source and records what the loop tells it: each acknowledgement's cursor with the
// projection version committed in the store at that moment, and each rejection's cursor.
class RecordingSource final : public Source {
 public:
  RecordingSource(std::unique_ptr<Source> inner, std::function<int64_t()> committed_version)
      : inner_(std::move(inner)), committed_version_(std::move(committed_version)) {}

  const std::string& name() const override { return inner_->name(); }
  Status Start(const std::optional<std::string>& position) override {
    return inner_->Start(position);
  }
  Result<Fetched> Fetch(Message& out, int wait_ms) override { return inner_->Fetch(out, wait_ms); }
  std::string EncodePosition(const Cursor& cursor) const override {
    return inner_->EncodePosition(cursor);
  }
  Status Acknowledge(const Cursor& cursor) override {
    acks.emplace_back(cursor.a, committed_version_());
    if (on_acknowledge) on_acknowledge();
    return inner_->Acknowledge(cursor);
  }
  Status Reject(const Cursor& cursor, int64_t delay_ms) override {
    rejects.push_back(cursor.a);
    return inner_->Reject(cursor, delay_ms);
  }
  void Stop() override { inner_->Stop(); }
  int64_t skipped() const override { return inner_->skipped(); }
  Status FlushAcknowledgements(int64_t timeout_ms) override {
    flushes.push_back({static_cast<int64_t>(acks.size()), timeout_ms});
    return flush_result;
  }

  // (acknowledgements before it, its timeout) of each FlushAcknowledgements, in call order.
  std::vector<std::pair<int64_t, int64_t>> flushes;
  Status flush_result = Status::Ok();
  // (cursor.a, the projection's committed version when Acknowledge was called), in call order.
  std::vector<std::pair<int64_t, int64_t>> acks;
  std::vector<int64_t> rejects;  // cursor.a of each Reject, in call order
  std::function<void()> on_acknowledge;

 private:
  std::unique_ptr<Source> inner_;
  std::function<int64_t()> committed_version_;
};

class ConsumeLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = LoadConfig(std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/evident.yaml");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config->batch_count_max = 2;
    // Batches close on their count or at the end of the source, never because the reading
    // thread fell behind for linger_ms on a loaded machine: the batches are the same every run.
    config->linger_ms = kLingerMsLimit;
    config->batch_ms_max = kBatchMsMaxLimit;
    pipeline_ = Pipeline::Create(*config).value();
    for (int i = 0; i < 5; ++i) messages_.push_back(Status104(i));
  }
  int64_t Version() {
    auto store = OpenMemoryStore(database_).value();
    auto projection = store->Read().value()->FindProjection("orders-projection", "order-104");
    return projection.value() ? (*projection)->version : 0;
  }
  std::unique_ptr<RecordingSource> Recording() {
    return std::make_unique<RecordingSource>(NewMemorySource("m", messages_),
                                             [this] { return Version(); });
  }

  std::unique_ptr<Pipeline> pipeline_;
  std::shared_ptr<MemoryDatabase> database_ = NewMemoryDatabase();
  std::vector<std::string> messages_;
  ManualClock clock_{1'785'000'000'000};
};

TEST_F(ConsumeLoopTest, ABusyStoreIsTriedAgainWithBackoffBeforeTheRunGivesUp) {
  FaultStore store(OpenMemoryStore(database_).value(), nullptr);
  store.Add({.call = StoreCall::kBegin, .nth = 1, .code = Code::kUnavailable});
  store.Add({.call = StoreCall::kBegin, .nth = 2, .code = Code::kUnavailable});
  auto source = NewMemorySource("m", messages_);
  const auto summary = Consume(*pipeline_, store, *source, {.clock = &clock_});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(Version(), 5);
  EXPECT_EQ(clock_.slept_ms(), 10 + 20);  // RetryPolicy's first two waits, on the manual clock
}

TEST_F(ConsumeLoopTest, ABusyStorePastTheRetriesEndsTheRunNamingTheAttempts) {
  FaultStore store(OpenMemoryStore(database_).value(), nullptr);
  for (int nth = 1; nth <= 3; ++nth) {
    store.Add({.call = StoreCall::kBegin, .nth = nth, .code = Code::kUnavailable});
  }
  auto source = NewMemorySource("m", messages_);
  ConsumeOptions options{.clock = &clock_};
  options.busy_retry.attempts_max = 3;
  const auto summary = Consume(*pipeline_, store, *source, options);
  EXPECT_EQ(summary.status().code(), Code::kUnavailable);
  EXPECT_NE(summary.status().message().find("after 3 attempts"), std::string::npos)
      << summary.status().ToString();
  EXPECT_EQ(Version(), 0);
}

// A commit that fails rolls its batch back; the batches before it stay, the position says
// where, and a resumed run decides the rest once.
TEST_F(ConsumeLoopTest, AFailedCommitLosesOnlyItsBatchAndResumeFinishes) {
  {
    FaultStore store(OpenMemoryStore(database_).value(), nullptr);
    store.Add({.call = StoreCall::kCommit, .nth = 2, .code = Code::kIoError});
    auto source = Recording();
    const auto summary = Consume(*pipeline_, store, *source, {.clock = &clock_});
    EXPECT_EQ(summary.status().code(), Code::kIoError);
    EXPECT_NE(summary.status().message().find("rolled back"), std::string::npos);
    // The first batch was acknowledged after its commit; the failed one (events 3 and 4) is
    // rejected through its last event, and never acknowledged.
    EXPECT_EQ(source->acks, (std::vector<std::pair<int64_t, int64_t>>{{2, 2}}));
    EXPECT_EQ(source->rejects, std::vector<int64_t>{4});
  }
  EXPECT_EQ(Version(), 2);  // the first batch of two
  auto store = OpenMemoryStore(database_).value();
  auto source = Recording();
  const auto summary = Consume(*pipeline_, *store, *source, {.resume = true, .clock = &clock_});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->skipped, 2);
  EXPECT_EQ(Version(), 5);
  EXPECT_EQ(source->acks, (std::vector<std::pair<int64_t, int64_t>>{{4, 4}, {5, 5}}));
  EXPECT_TRUE(source->rejects.empty());
}

// Each batch is acknowledged once, in order, through its last event, and only when its commit
// is already in the store (the projection's committed version equals the events acknowledged).
// A run that ends on an error says, when asked (ConsumeOptions::partial), what it committed before:
// the batches and their decisions, not the one that failed.
TEST_F(ConsumeLoopTest, ARunEndedByAnErrorReportsWhatItCommittedBefore) {
  int batches = 0;
  ConsumeSummary partial;
  ConsumeOptions options{.clock = &clock_};
  options.partial = &partial;
  options.before_commit = [&](Transaction&, const Cursor&) {
    return ++batches == 3 ? Status::FailedPrecondition("lease lost: test") : Status::Ok();
  };
  auto source = NewMemorySource("m", messages_);
  const auto summary = Consume(*pipeline_, *OpenMemoryStore(database_).value(), *source, options);
  EXPECT_EQ(summary.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(partial.batches, 2);
  int64_t applied = 0;
  for (const auto& [consumer, counts] : partial.counts) {
    applied += counts[static_cast<size_t>(Outcome::kApplied)];
  }
  EXPECT_EQ(applied, 4) << "two batches of two events, one consumer of order-104 applying each";
  EXPECT_EQ(Version(), 4);
}

TEST_F(ConsumeLoopTest, EachBatchIsAcknowledgedOnlyAfterItsCommit) {
  auto store = OpenMemoryStore(database_).value();
  auto source = Recording();
  const auto summary = Consume(*pipeline_, *store, *source, {.clock = &clock_});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->batches, 3);
  EXPECT_EQ(source->acks, (std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {4, 4}, {5, 5}}));
  EXPECT_TRUE(source->rejects.empty());
  EXPECT_EQ(Version(), 5);
}

// At the end of a run the source is asked once, after the last acknowledgement, to make sure
// they arrived; one that cannot say so is in the summary, and the decisions stand.
TEST_F(ConsumeLoopTest, TheAcknowledgementsAreFlushedOnceAtTheEndAndAFailureIsReported) {
  auto store = OpenMemoryStore(database_).value();
  auto source = Recording();
  const auto summary =
      Consume(*pipeline_, *store, *source, {.clock = &clock_, .acknowledgement_wait_ms = 1234});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(source->flushes, (std::vector<std::pair<int64_t, int64_t>>{{3, 1234}}));
  EXPECT_EQ(summary->acknowledgement_error, "");

  messages_.push_back(Status104(5));
  auto failing = Recording();
  failing->flush_result = Status::Unavailable("2 acknowledgement(s) could not be sent");
  const auto unconfirmed = Consume(*pipeline_, *store, *failing, {.clock = &clock_});
  ASSERT_TRUE(unconfirmed.ok()) << unconfirmed.status().ToString();
  EXPECT_NE(unconfirmed->acknowledgement_error.find("2 acknowledgement(s) could not be sent"),
            std::string::npos)
      << unconfirmed->acknowledgement_error;
  EXPECT_EQ(unconfirmed->events, 6);
  EXPECT_EQ(unconfirmed->batches, 3);  // committed all the same
  EXPECT_EQ(failing->flushes.size(), 1u);
}

// A stop asked for while the first batch is being acknowledged ends the run there: the batch
// stays committed, the run says it stopped, and nothing more is decided or acknowledged.
TEST_F(ConsumeLoopTest, ACancelDuringAnAcknowledgementStopsAfterThatBatch) {
  auto store = OpenMemoryStore(database_).value();
  auto source = Recording();
  CancelToken cancel;
  source->on_acknowledge = [&cancel] { cancel.Cancel(); };
  const auto summary = Consume(*pipeline_, *store, *source, {.cancel = &cancel, .clock = &clock_});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->stopped);
  EXPECT_EQ(summary->batches, 1);
  EXPECT_EQ(Version(), 2);
  EXPECT_EQ(source->acks, (std::vector<std::pair<int64_t, int64_t>>{{2, 2}}));
}

TEST_F(ConsumeLoopTest, ACancelledRunStopsAfterItsCommitAndSaysSo) {
  auto store = OpenMemoryStore(database_).value();
  auto source = NewMemorySource("m", messages_);
  CancelToken cancel;
  cancel.Cancel();  // before the first batch: nothing is decided, and the run says it stopped
  const auto summary = Consume(*pipeline_, *store, *source, {.cancel = &cancel, .clock = &clock_});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->stopped);
  EXPECT_EQ(summary->events, 0);
  EXPECT_EQ(Version(), 0);
}

// Events that come every 20 ms never pause for linger_ms (60 s here), yet a batch commits once
// its first event is batch_ms_max old: decisions are not held until batch_count_max gather.
TEST_F(ConsumeLoopTest, ASteadyTrickleCommitsOnceABatchIsBatchMsMaxOld) {
  for (const int64_t batch_ms_max : {int64_t{50}, kBatchMsMaxLimit}) {
    auto config = LoadConfig(std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/evident.yaml");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config->batch_count_max = 1000;
    config->linger_ms = kLingerMsLimit;
    config->batch_ms_max = batch_ms_max;
    auto pipeline = Pipeline::Create(*config).value();
    database_ = NewMemoryDatabase();
    auto store = OpenMemoryStore(database_).value();
    auto source = Recording();
    struct Trickle final : Source {
      explicit Trickle(Source& source) : inner(source) {}
      const std::string& name() const override { return inner.name(); }
      Status Start(const std::optional<std::string>& p) override { return inner.Start(p); }
      // The next message is due 20 ms after the last one; before that the source has nothing,
      // as a broker that is not sending: kWouldWait when the caller will not wait long enough.
      Result<Fetched> Fetch(Message& out, int wait_ms) override {
        const auto now = std::chrono::steady_clock::now();
        if (now < due) {
          if (wait_ms >= 0 && now + std::chrono::milliseconds(wait_ms) < due) {
            std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
            return Fetched::kWouldWait;
          }
          std::this_thread::sleep_until(due);
        }
        due = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
        return inner.Fetch(out, wait_ms);
      }
      std::string EncodePosition(const Cursor& c) const override { return inner.EncodePosition(c); }
      Status Acknowledge(const Cursor& c) override { return inner.Acknowledge(c); }
      Status Reject(const Cursor& c, int64_t d) override { return inner.Reject(c, d); }
      void Stop() override { inner.Stop(); }
      Source& inner;
      std::chrono::steady_clock::time_point due = std::chrono::steady_clock::now();
    } trickle(*source);
    // The system clock: the trickle's waits are real (loop_time_test.cc: the same on a manual one).
    const auto summary = Consume(*pipeline, *store, trickle, {});
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_EQ(Version(), 5);
    ASSERT_FALSE(source->acks.empty());
    if (batch_ms_max == 50) {
      EXPECT_GE(summary->batches, 2);
      EXPECT_LT(source->acks.front().first, 5) << "the first commit waited for the end";
    } else {
      EXPECT_EQ(summary->batches, 1);  // only the end of the source closed the batch
    }
  }
}

// A source that first has nothing (reachable, as a quiet broker), then is unreachable (as a
// broker that is down), then hands out its messages; the phases end at fixed times.
class OutageSource final : public Source {
 public:
  OutageSource(Source& inner, int quiet_ms, int down_ms)
      : inner_(inner),
        down_from_(std::chrono::steady_clock::now() + std::chrono::milliseconds(quiet_ms)),
        back_(down_from_ + std::chrono::milliseconds(down_ms)) {}
  const std::string& name() const override { return inner_.name(); }
  Status Start(const std::optional<std::string>& p) override { return inner_.Start(p); }
  Result<Fetched> Fetch(Message& out, int wait_ms) override {
    const auto now = std::chrono::steady_clock::now();
    if (now < back_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms < 0 ? 20 : wait_ms));
      return Fetched::kWouldWait;
    }
    return inner_.Fetch(out, wait_ms);
  }
  // Asked of the clock when asked (not of the last fetch), so that a reader stalled in the
  // quiet phase does not see a down source as up.
  bool unreachable() const override {
    const auto now = std::chrono::steady_clock::now();
    return now >= down_from_ && now < back_;
  }
  std::string EncodePosition(const Cursor& c) const override { return inner_.EncodePosition(c); }
  Status Acknowledge(const Cursor& c) override { return inner_.Acknowledge(c); }
  Status Reject(const Cursor& c, int64_t d) override { return inner_.Reject(c, d); }
  void Stop() override { inner_.Stop(); }

 private:
  Source& inner_;
  std::chrono::steady_clock::time_point down_from_, back_;
};

// --until-idle counts silence from a source that can answer, not time its broker is down: quiet
// for 800 ms, then down for 1400 ms, is not idle for 2 s, and the messages that come after are
// decided (without that, the run ended 2 s in with nothing decided, and exit 0). Each phase is
// at least 600 ms short of 2 s, so a stalled machine does not make either one idle enough.
TEST_F(ConsumeLoopTest, TimeTheSourceIsUnreachableIsNotIdle) {
  auto store = OpenMemoryStore(database_).value();
  auto source = NewMemorySource("m", messages_);
  OutageSource outage(*source, 800, 1400);
  const auto summary =
      Consume(*pipeline_, *store, outage, {.until_idle_ms = 2000});  // real waits: system clock
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(Version(), 5) << "the run ended during the outage";
  EXPECT_EQ(summary->unreachable_error, "");
}

// An outage as long as --until-idle ends the run, and the summary says why: the source may hold
// messages the run never saw.
TEST_F(ConsumeLoopTest, AnOutageAsLongAsTheIdleTimeEndsTheRunSayingSo) {
  auto store = OpenMemoryStore(database_).value();
  auto source = NewMemorySource("m", messages_);
  OutageSource outage(*source, 0, 60'000);
  const auto started = std::chrono::steady_clock::now();
  const auto summary =
      Consume(*pipeline_, *store, outage, {.until_idle_ms = 500});  // real waits: system clock
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(Version(), 0);
  EXPECT_NE(summary->unreachable_error.find("has not been reachable for at least"),
            std::string::npos)
      << summary->unreachable_error;
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(took, std::chrono::milliseconds(500));
  EXPECT_LT(took, std::chrono::seconds(30));
}

// A source that has nothing for `quiet_ms` and then hands out its messages, and answers
// ConfirmIdle with `confirm`, given the position acknowledged so far (the memory source's
// cursors count messages from 1; a broker asked whether anything is left or awaits its ack).
// Acknowledge runs on the deciding thread, Fetch on the reader: the position is atomic.
class AskedSource final : public Source {
 public:
  AskedSource(Source& inner, int quiet_ms, std::function<Result<bool>(int64_t acked)> confirm)
      : inner_(inner),
        back_(std::chrono::steady_clock::now() + std::chrono::milliseconds(quiet_ms)),
        confirm_(std::move(confirm)) {}
  const std::string& name() const override { return inner_.name(); }
  Status Start(const std::optional<std::string>& p) override { return inner_.Start(p); }
  Result<Fetched> Fetch(Message& out, int wait_ms) override {
    if (std::chrono::steady_clock::now() < back_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms < 0 ? 20 : wait_ms));
      return Fetched::kWouldWait;
    }
    return inner_.Fetch(out, wait_ms);
  }
  Result<bool> ConfirmIdle() override {
    ++asked;
    return confirm_(acked_.load());
  }
  std::string EncodePosition(const Cursor& c) const override { return inner_.EncodePosition(c); }
  Status Acknowledge(const Cursor& c) override {
    if (c.a > acked_.load()) acked_.store(c.a);  // one thread acknowledges
    return inner_.Acknowledge(c);
  }
  Status Reject(const Cursor& c, int64_t d) override { return inner_.Reject(c, d); }
  void Stop() override { inner_.Stop(); }
  std::atomic<int> asked{0};

 private:
  Source& inner_;
  std::chrono::steady_clock::time_point back_;
  std::function<Result<bool>(int64_t acked)> confirm_;
  std::atomic<int64_t> acked_{0};
};

// Silence is not enough: a source that says messages are still waiting for this run (a broker
// holding them back until an ack wait ends) keeps the run going, and they are decided. The
// source says nothing is left only once all five are acknowledged, as a broker would.
TEST_F(ConsumeLoopTest, AnIdleRunEndsOnlyWhenTheSourceSaysNothingIsLeft) {
  auto store = OpenMemoryStore(database_).value();
  auto source = NewMemorySource("m", messages_);
  AskedSource asked(*source, 1000, [](int64_t acked) -> Result<bool> { return acked == 5; });
  const auto summary = Consume(*pipeline_, *store, asked, {.until_idle_ms = 200});  // real waits
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(Version(), 5) << "the run ended while the source held messages";
  EXPECT_GE(asked.asked.load(), 2);  // asked at each idle end, told to wait
  EXPECT_EQ(summary->unreachable_error, "");
}

// A source that cannot be asked (a server that does not answer a ping) is unreachable: as long
// as --until-idle ends the run, and the summary says why.
TEST_F(ConsumeLoopTest, ASourceThatCannotBeAskedIsUnreachable) {
  auto store = OpenMemoryStore(database_).value();
  auto source = NewMemorySource("m", messages_);
  AskedSource asked(*source, 60'000, [](int64_t /*acked*/) -> Result<bool> {
    return Status::Unavailable("no answer to a ping within 2000 ms");
  });
  const auto summary = Consume(*pipeline_, *store, asked, {.until_idle_ms = 300});  // real waits
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(Version(), 0);
  EXPECT_NE(summary->unreachable_error.find("no answer to a ping"), std::string::npos)
      << summary->unreachable_error;
}

}  // namespace
}  // namespace evident
