// RunRelay against a memory store, with a scripted publisher and the NDJSON file publisher on a
// fault-injecting memory Env; a manual clock makes every wait visible and instant.
#include "evident/relay.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "evident/env.h"
#include "evident/fault_store.h"
#include "evident/store_memory.h"

namespace evident {
namespace {

// Accepts what its script says, one entry per Publish: a prefix length, or an error.
class ScriptedPublisher final : public Publisher {
 public:
  struct Step {
    size_t accept = SIZE_MAX;  // SIZE_MAX: the whole batch
    Status error;              // when not OK: Publish fails with it
  };
  ScriptedPublisher(std::deque<Step>* script, std::vector<std::string>* log, int* closes)
      : script_(script), log_(log), closes_(closes) {}

  Result<size_t> Publish(std::span<const OutgoingMessage> batch) override {
    Step step;
    if (!script_->empty()) {
      step = script_->front();
      script_->pop_front();
    }
    if (!step.error.ok()) return step.error;
    const size_t n = std::min(step.accept, batch.size());
    acks_.clear();
    for (size_t i = 0; i < n; ++i) {
      log_->push_back(batch[i].destination + "|" + batch[i].id + "|" + batch[i].bytes);
      acks_.push_back({next_sequence_++, false});
    }
    return n;
  }
  const std::vector<PublishAck>& acks() const override { return acks_; }
  Status Close() override {
    ++*closes_;
    return Status::Ok();
  }

 private:
  std::deque<Step>* script_;
  std::vector<std::string>* log_;
  int* closes_;
  std::vector<PublishAck> acks_;
  uint64_t next_sequence_ = 1;
};

class RelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenMemoryStore(database_).value();
    options_.destination_name = "EVENTS";
    options_.clock = &clock_;
    options_.once = true;
  }

  void AppendRows(int n, const std::string& type = "com.example.order.cancelled") {
    auto tx = store_->Begin().value();
    for (int i = 0; i < n; ++i) {
      const int k = appended_++;
      OutboxRow row{.source = "svc",
                    .event_id = "e" + std::to_string(k),
                    .type = type,
                    .subject = "order-" + std::to_string(k % 3),
                    .partition = k % 3,
                    .bytes = R"({"id":"e)" + std::to_string(k) + R"("})",
                    .created_at_ms = clock_.NowMs()};
      ASSERT_TRUE(tx->AppendOutbox(row).ok());
    }
    ASSERT_TRUE(tx->Commit().ok());
  }

  // A row whose event is written over several lines (a newline-delimited file refuses it).
  void AppendPrettyRow(const std::string& id) {
    auto tx = store_->Begin().value();
    const int k = appended_;
    OutboxRow row{.source = "svc",
                  .event_id = id,
                  .type = "com.example.order.cancelled",
                  .subject = "order-" + std::to_string(k % 3),
                  .partition = k % 3,
                  .bytes = "{\n\"id\": \"" + id + "\"\n}",
                  .created_at_ms = clock_.NowMs()};
    ASSERT_TRUE(tx->AppendOutbox(row).ok());
    ASSERT_TRUE(tx->Commit().ok());
  }

  std::vector<OutboxRow> AllRows() {
    return store_->Read().value()->OutboxRows(OutboxSelect::kAll, 0, 1000).value().rows;
  }

  PublisherFactory Scripted() {
    return [this]() -> Result<std::unique_ptr<Publisher>> {
      ++opens_;
      if (!open_errors_.empty()) {
        Status s = open_errors_.front();
        open_errors_.pop_front();
        return s;
      }
      return std::unique_ptr<Publisher>(new ScriptedPublisher(&script_, &log_, &closes_));
    };
  }

  ManualClock clock_{1'000'000};
  std::shared_ptr<MemoryDatabase> database_ = NewMemoryDatabase();
  std::unique_ptr<Store> store_;
  RelayOptions options_;
  std::deque<ScriptedPublisher::Step> script_;
  std::deque<Status> open_errors_;
  std::vector<std::string> log_;
  int opens_ = 0, closes_ = 0, appended_ = 0;
};

TEST_F(RelayTest, PublishesEveryPendingRowInSeqOrderAndMarksItSent) {
  AppendRows(5);
  options_.batch_count_max = 2;  // three rounds
  const Result<RelaySummary> summary = RunRelay(*store_, Scripted(), options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->sent, 5);
  EXPECT_EQ(summary->failed_rounds, 0);
  ASSERT_EQ(log_.size(), 5u);
  EXPECT_EQ(log_[0], R"(p0.com.example.order.cancelled|svc e0|{"id":"e0"})");
  EXPECT_EQ(log_[4], R"(p1.com.example.order.cancelled|svc e4|{"id":"e4"})");
  const std::vector<OutboxRow> rows = AllRows();
  ASSERT_EQ(rows.size(), 5u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].sent_at_ms, clock_.NowMs());
    EXPECT_EQ(rows[i].stream, "EVENTS");
    EXPECT_EQ(rows[i].stream_sequence, static_cast<int64_t>(i + 1)) << i;
    EXPECT_EQ(rows[i].attempts, 0);
  }
  EXPECT_EQ(opens_, 1);
  EXPECT_EQ(closes_, 1);
}

TEST_F(RelayTest, RepartitionsBySubjectWhenAskedTo) {
  AppendRows(3);
  options_.partition_count = 1;
  ASSERT_TRUE(RunRelay(*store_, Scripted(), options_).ok());
  ASSERT_EQ(log_.size(), 3u);
  for (const std::string& line : log_) EXPECT_EQ(line.rfind("p0.", 0), 0u) << line;
}

TEST_F(RelayTest, APrefixIsMarkedAndTheRestCountsAnAttemptAndGoesAgain) {
  AppendRows(4);
  script_ = {{.accept = 1}};  // then everything
  const Result<RelaySummary> summary = RunRelay(*store_, Scripted(), options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->sent, 4);
  ASSERT_EQ(log_.size(), 4u);  // each row published once: the prefix, then the rest
  const std::vector<OutboxRow> rows = AllRows();
  EXPECT_EQ(rows[0].attempts, 0);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(rows[i].attempts, 1) << i;
    EXPECT_NE(rows[i].last_error.find("accepted 1 of 4"), std::string::npos) << rows[i].last_error;
    EXPECT_TRUE(rows[i].sent_at_ms.has_value());
  }
  EXPECT_EQ(opens_, 2);  // the refusing publisher was closed and opened again
}

TEST_F(RelayTest, FailuresBackOffWithJitterAndRecordTheError) {
  AppendRows(2);
  const Status down = Status(Code::kUnavailable, "no responders");
  script_ = {{.error = down}, {.error = down}, {.error = down}};
  options_.backoff_initial_ms = 100;
  options_.backoff_max_ms = 250;
  const Result<RelaySummary> summary = RunRelay(*store_, Scripted(), options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->failed_rounds, 3);
  EXPECT_EQ(summary->sent, 2);
  // Waits drawn from [50,100], [100,200], [125,250].
  EXPECT_GE(clock_.slept_ms(), 275);
  EXPECT_LE(clock_.slept_ms(), 550);
  for (const OutboxRow& row : AllRows()) {
    EXPECT_EQ(row.attempts, 3);
    EXPECT_NE(row.last_error.find("no responders"), std::string::npos) << row.last_error;
  }
}

TEST_F(RelayTest, ADestinationThatCannotBeOpenedIsRetried) {
  AppendRows(1);
  open_errors_ = {Status(Code::kUnavailable, "connection refused")};
  const Result<RelaySummary> summary = RunRelay(*store_, Scripted(), options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(opens_, 2);
  EXPECT_EQ(summary->sent, 1);
  EXPECT_EQ(summary->failed_rounds, 1);
  EXPECT_EQ(AllRows()[0].attempts, 0);  // never offered while the destination was closed
}

TEST_F(RelayTest, OnceGivesUpAfterItsLimitWithTheLastError) {
  AppendRows(1);
  options_.once_failures_max = 3;
  for (int i = 0; i < 5; ++i) script_.push_back({.error = Status(Code::kUnavailable, "down")});
  const Result<RelaySummary> summary = RunRelay(*store_, Scripted(), options_);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), Code::kUnavailable);
  EXPECT_NE(summary.status().message().find("3 failed rounds"), std::string::npos)
      << summary.status().ToString();
  EXPECT_EQ(AllRows()[0].attempts, 3);
  EXPECT_FALSE(AllRows()[0].sent_at_ms.has_value());
}

// A series of failed rounds is told as it goes (its first, then every tenth), not only in the
// summary at the end; and a destination that does not fit the relay ends the run at once.
TEST_F(RelayTest, FailedRoundsAreLoggedAndAMisfitDestinationEndsTheRun) {
  AppendRows(1);
  options_.once_failures_max = 12;
  for (int i = 0; i < 12; ++i) script_.push_back({.error = Status(Code::kUnavailable, "down")});
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  options_.log = log;
  ASSERT_FALSE(RunRelay(*store_, Scripted(), options_).ok());
  std::rewind(log);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), log));
  std::fclose(log);
  EXPECT_NE(text.find("a round failed (1 in a row): unavailable: down"), std::string::npos) << text;
  EXPECT_NE(text.find("(10 in a row)"), std::string::npos) << text;
  EXPECT_EQ(text.find("(2 in a row)"), std::string::npos) << text;
  open_errors_ = {Status::InvalidArgument("stream S takes the subjects x.>, not evident.>")};
  options_.log = nullptr;
  const Result<RelaySummary> misfit = RunRelay(*store_, Scripted(), options_);
  ASSERT_FALSE(misfit.ok());
  EXPECT_EQ(misfit.status().code(), Code::kInvalidArgument);
}

// Runs a hook after every sleep of the code under test, on its thread: what a test does there
// happens "while the relay waits".
class HookClock final : public Clock {
 public:
  HookClock(ManualClock& inner, std::function<void()> hook)
      : inner_(inner), hook_(std::move(hook)) {}
  int64_t NowMs() override { return inner_.NowMs(); }
  void SleepMs(int64_t duration_ms) override {
    inner_.SleepMs(duration_ms);
    hook_();
  }

 private:
  ManualClock& inner_;
  std::function<void()> hook_;
};

TEST_F(RelayTest, WithoutOnceItPollsForNewRowsUntilCancelled) {
  options_.once = false;
  options_.poll_ms = 40;
  CancelToken cancel;
  options_.cancel = &cancel;
  int sleeps = 0;
  HookClock clock(clock_, [&] {
    ++sleeps;
    if (sleeps == 3) AppendRows(2);  // arrives while the relay idles
    if (sleeps == 6) cancel.Cancel();
  });
  options_.clock = &clock;
  const Result<RelaySummary> summary = RunRelay(*store_, Scripted(), options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->stopped);
  EXPECT_EQ(summary->sent, 2);
  EXPECT_EQ(log_.size(), 2u);
  EXPECT_EQ(sleeps, 6);
  EXPECT_EQ(clock_.slept_ms(), 6 * 40);  // every wait was one poll interval: no spinning
  for (const OutboxRow& row : AllRows()) EXPECT_TRUE(row.sent_at_ms.has_value());
}

// The first batch's mark fails (the store busy) while the second batch is already on its way:
// the round fails, the second batch is waited for but not marked, and the next round offers
// everything from the oldest unmarked row again (the ids make the second copies duplicates).
TEST_F(RelayTest, AMarkThatFailsWhileTheNextBatchIsInFlightOffersBothAgain) {
  AppendRows(4);
  options_.batch_count_max = 2;
  FaultStore store(OpenMemoryStore(database_).value(), nullptr);
  store.Add({.call = StoreCall::kBegin, .nth = 1, .code = Code::kUnavailable});
  const Result<RelaySummary> summary = RunRelay(store, Scripted(), options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->failed_rounds, 1);
  EXPECT_EQ(summary->sent, 4);
  ASSERT_EQ(log_.size(), 8u);  // e0 e1 (unmarked), e2 e3 (in flight, unmarked), then all again
  EXPECT_NE(log_[2].find("svc e2|"), std::string::npos) << log_[2];
  EXPECT_NE(log_[4].find("svc e0|"), std::string::npos) << log_[4];
  for (const OutboxRow& row : AllRows()) EXPECT_TRUE(row.sent_at_ms.has_value()) << row.seq;
}

TEST_F(RelayTest, RetentionDeletesSentRowsPastKeepSentInBoundedBatches) {
  AppendRows(5);
  options_.keep_sent_ms = 1000;
  options_.delete_count_max = 2;
  ASSERT_TRUE(RunRelay(*store_, Scripted(), options_).ok());
  EXPECT_EQ(AllRows().size(), 5u);  // sent just now: kept
  clock_.Advance(1001);
  AppendRows(1);
  const Result<RelaySummary> later = RunRelay(*store_, Scripted(), options_);
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ(later->deleted, 5);
  const std::vector<OutboxRow> rows = AllRows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].event_id, "e5");
}

// A relay whose sent rows the configuration's retention removes (delete_sent false) deletes
// none itself, however old: retention archives them first.
TEST_F(RelayTest, SentRowsLeftToRetentionAreNotDeleted) {
  AppendRows(3);
  options_.keep_sent_ms = 0;
  options_.delete_sent = false;
  ASSERT_TRUE(RunRelay(*store_, Scripted(), options_).ok());
  clock_.Advance(86'400'000);
  const Result<RelaySummary> later = RunRelay(*store_, Scripted(), options_);
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ(later->deleted, 0);
  const std::vector<OutboxRow> rows = AllRows();
  ASSERT_EQ(rows.size(), 3u);
  for (const OutboxRow& row : rows) EXPECT_TRUE(row.sent_at_ms.has_value()) << row.seq;
}

// Retention is not only for idle moments: a relay that always finds rows deletes too.
TEST_F(RelayTest, ABusyRelayStillDeletesSentRowsPastKeepSent) {
  AppendRows(6);
  options_.once = false;
  options_.batch_count_max = 2;
  options_.keep_sent_ms = 0;
  options_.retention_interval_ms = 0;
  CancelToken cancel;
  options_.cancel = &cancel;
  int publishes = 0;
  PublisherFactory open = [&]() -> Result<std::unique_ptr<Publisher>> {
    class CancelOnThird final : public Publisher {
     public:
      CancelOnThird(CancelToken* c, int* n) : c_(c), n_(n) {}
      Result<size_t> Publish(std::span<const OutgoingMessage> batch) override {
        if (++*n_ == 3) c_->Cancel();
        return batch.size();
      }
      Status Close() override { return Status::Ok(); }

     private:
      CancelToken* c_;
      int* n_;
    };
    return std::unique_ptr<Publisher>(new CancelOnThird(&cancel, &publishes));
  };
  // Time moves 1 ms at every reading: a row marked sent is past keep_sent (0) a moment later.
  class Ticking final : public Clock {
   public:
    explicit Ticking(ManualClock& inner) : inner_(inner) {}
    int64_t NowMs() override {
      inner_.Advance(1);
      return inner_.NowMs();
    }
    void SleepMs(int64_t duration_ms) override { inner_.SleepMs(duration_ms); }

   private:
    ManualClock& inner_;
  } clock(clock_);
  options_.clock = &clock;
  const Result<RelaySummary> summary = RunRelay(*store_, open, options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->stopped);
  EXPECT_EQ(summary->sent, 6);
  EXPECT_GE(summary->deleted, 2) << "no round was idle, and nothing was deleted";
}

TEST_F(RelayTest, ToAFileTheLinesAreTheExactBytesAndSurviveAPowerLoss) {
  FaultInjectionEnv env(NewMemoryEnv());
  AppendRows(3);
  options_.destination_name = "file:/out.ndjson";
  PublisherFactory open = [&]() { return OpenNdjsonPublisher(env, "/out.ndjson"); };
  const Result<RelaySummary> summary = RunRelay(*store_, open, options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_TRUE(env.SimulatePowerLoss().ok());
  EXPECT_EQ(ReadWholeFile(env, "/out.ndjson", 1 << 20).value(),
            "{\"id\":\"e0\"}\n{\"id\":\"e1\"}\n{\"id\":\"e2\"}\n");
  for (const OutboxRow& row : AllRows()) {
    EXPECT_EQ(row.stream, "file:/out.ndjson");
    EXPECT_FALSE(row.stream_sequence.has_value());
  }
}

TEST_F(RelayTest, AFailedFileSyncIsRetriedOnAFreshPublisher) {
  FaultInjectionEnv env(NewMemoryEnv());
  AppendRows(2);
  env.FailNth(FileOperation::kSync, 1);
  PublisherFactory open = [&]() { return OpenNdjsonPublisher(env, "/out.ndjson"); };
  const Result<RelaySummary> summary = RunRelay(*store_, open, options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->failed_rounds, 1);
  EXPECT_EQ(summary->sent, 2);
  for (const OutboxRow& row : AllRows()) EXPECT_EQ(row.attempts, 1);
}

// A row the destination refuses for what it is (a newline in a line of a file) is parked once
// its attempts reach park_refused_after_attempts, and the rows behind it go out; it is kept
// whole, with the relay's reason and the destination's words.
TEST_F(RelayTest, ARowRefusedForWhatItIsIsParkedAtItsAttemptsAndTheRowsBehindItGoOut) {
  const std::unique_ptr<Env> env = NewMemoryEnv();
  AppendRows(1);
  AppendPrettyRow("bad");
  AppendRows(3);
  options_.destination_name = "file:/out.ndjson";
  options_.park_refused_after_attempts = 3;
  char* log_bytes = nullptr;
  size_t log_size = 0;
  options_.log = open_memstream(&log_bytes, &log_size);
  ASSERT_NE(options_.log, nullptr);
  PublisherFactory open = [&]() { return OpenNdjsonPublisher(*env, "/out.ndjson"); };
  const Result<RelaySummary> summary = RunRelay(*store_, open, options_);
  ASSERT_EQ(std::fclose(options_.log), 0);
  const std::string log(log_bytes, log_size);
  std::free(log_bytes);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->sent, 4);
  EXPECT_EQ(summary->parked, 1);
  EXPECT_EQ(ReadWholeFile(*env, "/out.ndjson", 1 << 20).value(),
            "{\"id\":\"e0\"}\n{\"id\":\"e1\"}\n{\"id\":\"e2\"}\n{\"id\":\"e3\"}\n");
  const std::vector<OutboxRow> parked =
      store_->Read().value()->OutboxRows(OutboxSelect::kParked, 0, 10).value().rows;
  ASSERT_EQ(parked.size(), 1u);
  EXPECT_EQ(parked[0].event_id, "bad");
  EXPECT_EQ(parked[0].bytes, "{\n\"id\": \"bad\"\n}");
  EXPECT_EQ(parked[0].attempts, 3);  // the batch's "not acknowledged", then two refusals
  EXPECT_FALSE(parked[0].sent_at_ms.has_value());
  EXPECT_NE(parked[0].parked_reason.find("parked by the relay"), std::string::npos)
      << parked[0].parked_reason;
  EXPECT_NE(parked[0].parked_reason.find("3 attempts"), std::string::npos)
      << parked[0].parked_reason;
  EXPECT_NE(parked[0].parked_reason.find("message svc bad holds a newline"), std::string::npos)
      << parked[0].parked_reason;
  EXPECT_NE(log.find("parked outbox row 2 after 3 attempts"), std::string::npos) << log;
  // The rows behind it were held back by it, not refused: their own attempt and error stay.
  for (const OutboxRow& row : AllRows()) {
    if (row.event_id == "bad") continue;
    EXPECT_LE(row.attempts, 1) << row.event_id;
    EXPECT_EQ(row.last_error.find("newline"), std::string::npos) << row.last_error;
  }
}

// A run of rows refused for what they are is parked one a round, each round progress: no
// backoff between them, and --once does not give up however many there are.
TEST_F(RelayTest, ARunOfRefusedRowsIsParkedOneARoundWithoutBackingOff) {
  const std::unique_ptr<Env> env = NewMemoryEnv();
  AppendPrettyRow("bad-1");
  AppendPrettyRow("bad-2");
  AppendPrettyRow("bad-3");
  AppendRows(2);
  options_.park_refused_after_attempts = 1;
  options_.once_failures_max = 1;
  PublisherFactory open = [&]() { return OpenNdjsonPublisher(*env, "/out.ndjson"); };
  const Result<RelaySummary> summary = RunRelay(*store_, open, options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->parked, 3);
  EXPECT_EQ(summary->sent, 2);
  EXPECT_EQ(summary->failed_rounds, 0);
  EXPECT_EQ(clock_.slept_ms(), 0);
  for (const OutboxRow& row : AllRows()) {
    EXPECT_EQ(row.attempts, row.event_id.rfind("bad", 0) == 0 ? 1 : 0) << row.event_id;
  }
  EXPECT_EQ(ReadWholeFile(*env, "/out.ndjson", 1 << 20).value(),
            "{\"id\":\"e0\"}\n{\"id\":\"e1\"}\n");
}

// Without park_refused_after_attempts such a row holds back the rows behind it, as before:
// --once gives up with the destination's words, nothing behind it is sent.
TEST_F(RelayTest, WithoutParkingARefusedRowHoldsBackTheRowsBehindIt) {
  const std::unique_ptr<Env> env = NewMemoryEnv();
  AppendRows(1);
  AppendPrettyRow("bad");
  AppendRows(1);
  options_.once_failures_max = 4;
  PublisherFactory open = [&]() { return OpenNdjsonPublisher(*env, "/out.ndjson"); };
  const Result<RelaySummary> summary = RunRelay(*store_, open, options_);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("holds a newline"), std::string::npos)
      << summary.status().ToString();
  const std::vector<OutboxRow> rows = AllRows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].sent_at_ms.has_value());
  EXPECT_FALSE(rows[1].sent_at_ms.has_value());
  EXPECT_FALSE(rows[1].parked_at_ms.has_value());
  EXPECT_EQ(rows[1].attempts, 5);  // the batch's "not acknowledged", then four refusals
  EXPECT_FALSE(rows[2].sent_at_ms.has_value());
  EXPECT_EQ(rows[2].attempts, 1);  // held back by it since: its own "not acknowledged" only
  EXPECT_NE(rows[2].last_error.find("accepted 1 of 3"), std::string::npos) << rows[2].last_error;
}

// A destination that is down is not a refusal of the row: however many attempts fail that
// way, nothing is parked, and the rows go out once it is back.
TEST_F(RelayTest, ARowIsNeverParkedForADestinationThatIsDown) {
  AppendRows(2);
  options_.park_refused_after_attempts = 2;
  for (int i = 0; i < 4; ++i) script_.push_back({.error = Status(Code::kUnavailable, "down")});
  const Result<RelaySummary> summary = RunRelay(*store_, Scripted(), options_);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->sent, 2);
  EXPECT_EQ(summary->parked, 0);
  for (const OutboxRow& row : AllRows()) {
    EXPECT_EQ(row.attempts, 4);
    EXPECT_FALSE(row.parked_at_ms.has_value());
  }
}

TEST(RelayDestination, KeepsTokensAndMakesAnyTypeAValidSubject) {
  EXPECT_EQ(RelayDestination(3, "com.example.order.cancelled"), "p3.com.example.order.cancelled");
  EXPECT_EQ(RelayDestination(0, "a..b"), "p0.a._.b");
  EXPECT_EQ(RelayDestination(0, "x*.>. y"), "p0.x_._._y");
  EXPECT_EQ(RelayDestination(12, ""), "p12._");
  EXPECT_EQ(RelayDestination(1, "a."), "p1.a._");
}

TEST(RelayMessageId, IsPrintableAndUnambiguous) {
  EXPECT_EQ(RelayMessageId("https://x.test/svc", "id-1"), "https://x.test/svc id-1");
  EXPECT_EQ(RelayMessageId("a b", "c"), "a%20b c");
  EXPECT_EQ(RelayMessageId("a", "b c"), "a b%20c");
  EXPECT_EQ(RelayMessageId("x", "line\r\nX-Inject: 1"), "x line%0D%0AX-Inject:%201");
  EXPECT_EQ(RelayMessageId("50%", "\xff"), "50%25 %FF");
  EXPECT_NE(RelayMessageId("a%20b", "c"), RelayMessageId("a b", "c"));
}

TEST(RelayOptionsCheck, OutOfRangeIsInvalidArgument) {
  auto store = OpenMemoryStore(NewMemoryDatabase()).value();
  RelayOptions options;
  options.batch_count_max = 0;
  PublisherFactory never = []() -> Result<std::unique_ptr<Publisher>> {
    return Status::Internal("not opened");
  };
  EXPECT_EQ(RunRelay(*store, never, options).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace evident
