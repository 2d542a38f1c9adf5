// Retention over a store (evident/retention.h): batches, the archive first, a failure at any
// step leaving every record in the store or in the archive, the run recorded, a dry run.
#include "evident/retention.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "evident/fault_store.h"
#include "evident/store_memory.h"
#include "evident/store_sqlite.h"

namespace evident {
namespace {

constexpr int64_t kHourMs = 3'600'000;
constexpr int64_t kNowMs = 100 * kHourMs;

// An archive in memory that counts its syncs and can be told to fail them.
class MemoryArchive final : public RetentionArchive {
 public:
  Status Append(std::string_view lines) override {
    pending_ += lines;
    return Status::Ok();
  }
  Status Sync() override {
    if (fail_syncs_) return Status::IoError("sync archive: no space left on device");
    synced_ += pending_;
    pending_.clear();
    ++syncs_;
    return Status::Ok();
  }
  Status Close() override { return Status::Ok(); }
  const std::string& name() const override { return name_; }

  bool fail_syncs_ = false;
  std::string synced_, pending_;
  int syncs_ = 0;

 private:
  std::string name_ = "memory-archive";
};

// "kind" -> archived records, every line checked to be one JSON object of the documented shape.
std::map<std::string, int> ArchivedKinds(const std::string& lines) {
  std::map<std::string, int> kinds;
  simdjson::dom::parser parser;
  size_t start = 0;
  while (start < lines.size()) {
    const size_t end = lines.find('\n', start);
    EXPECT_NE(end, std::string::npos) << "an archive line ends with a newline";
    const std::string line = lines.substr(start, end - start);
    simdjson::dom::element e;
    EXPECT_EQ(parser.parse(line).get(e), simdjson::SUCCESS) << line;
    std::string_view kind;
    EXPECT_EQ(e["retained"].get(kind), simdjson::SUCCESS) << line;
    EXPECT_TRUE(e["horizon"].is_string()) << line;
    EXPECT_TRUE(e["record"].is_object()) << line;
    ++kinds[std::string(kind)];
    start = end + 1;
  }
  return kinds;
}

class Retention : public ::testing::Test {
 protected:
  void SetUp() override {
    database_ = NewMemoryDatabase();
    store_ = std::move(OpenMemoryStore(database_)).value();
  }

  // `old` journal entries an hour before the horizon and `recent` ones after it, and one sent
  // outbox row of each age.
  void Fill(int old, int recent) {
    auto tx = std::move(store_->Begin()).value();
    for (int i = 0; i < old + recent; ++i) {
      const int64_t at = i < old ? kNowMs - 3 * kHourMs : kNowMs - kHourMs / 2;
      ASSERT_TRUE(tx->Journal(JournalEntry{.consumer = "c",
                                           .outcome = Outcome::kApplied,
                                           .source = "s",
                                           .event_id = "e" + std::to_string(i),
                                           .subject = "order-1",
                                           .at_ms = at})
                      .ok());
    }
    for (const int64_t sent : {kNowMs - 3 * kHourMs, kNowMs - 60'000}) {
      const OutboxAppend row =
          std::move(tx->AppendOutbox(OutboxRow{.source = "s",
                                               .event_id = "o" + std::to_string(sent),
                                               .type = "t",
                                               .subject = "order-1",
                                               .bytes = R"({"id":"x"})",
                                               .created_at_ms = sent}))
              .value();
      ASSERT_TRUE(tx->MarkOutboxSent(row.seq, "S", 1, sent).ok());
    }
    ASSERT_TRUE(tx->Commit().ok());
  }

  int64_t JournalLeft() {
    auto snapshot = std::move(store_->Read()).value();
    return static_cast<int64_t>(std::move(snapshot->JournalOf("c", "order-1")).value().rows.size());
  }

  RetainOptions Options(int64_t batch = 500) {
    return RetainOptions{.older_than_ms = 2 * kHourMs, .batch_count_max = batch, .clock = &clock_};
  }

  ManualClock clock_{kNowMs};
  std::shared_ptr<MemoryDatabase> database_;
  std::unique_ptr<Store> store_;
};

TEST_F(Retention, RemovesWhatSettledBeforeTheHorizonInBatchesArchivingEachFirst) {
  Fill(25, 5);
  MemoryArchive archive;
  const RetainSummary s = std::move(Retain(*store_, Options(10), &archive)).value();
  EXPECT_EQ(s.horizon_ms, kNowMs - 2 * kHourMs);
  EXPECT_EQ(s.removed[static_cast<size_t>(RetainedKind::kJournal)], 25);
  EXPECT_EQ(s.removed[static_cast<size_t>(RetainedKind::kOutbox)], 1);
  EXPECT_EQ(s.total(), 26);
  EXPECT_EQ(s.transactions, 4);  // journal 10 + 10 + 5, outbox 1
  EXPECT_EQ(archive.syncs_, 4);  // one per transaction, before it
  EXPECT_TRUE(archive.pending_.empty());
  EXPECT_EQ(ArchivedKinds(archive.synced_),
            (std::map<std::string, int>{{"journal", 25}, {"outbox", 1}}));
  EXPECT_EQ(JournalLeft(), 5);
  const std::optional<RetentionRun> run =
      std::move(std::move(store_->Read()).value()->LatestRetention()).value();
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->horizon_ms, s.horizon_ms);
  EXPECT_EQ(run->archive, "memory-archive");
  EXPECT_EQ(run->removed, 26);
  // Again: nothing left to remove, nothing archived, no run recorded.
  MemoryArchive second;
  const RetainSummary again = std::move(Retain(*store_, Options(10), &second)).value();
  EXPECT_EQ(again.total(), 0);
  EXPECT_TRUE(second.synced_.empty());
}

// Receipts past the horizon go in batches, each archived first in the packet's shape, and
// their keys stay as digests: the key is still there for a redelivery. A later run that forgets
// digests drops only those committed before its own horizon, and counts them in a dry run.
TEST_F(Retention, ReceiptsBecomeDigestsAndOnlyAForgettingDropsThem) {
  {
    auto tx = std::move(store_->Begin()).value();
    for (int i = 0; i < 12; ++i) {
      LedgerEntry e{.consumer = "c", .source = "s", .event_id = "e" + std::to_string(i)};
      e.subject = "order-" + std::to_string(i);
      e.committed_at_ms = i < 9 ? kNowMs - 3 * kHourMs : kNowMs - kHourMs;
      e.wrote_json = R"({"state":"placed"})";
      ASSERT_EQ(std::move(tx->InsertLedger(e)).value(), Insert::kInserted);
    }
    ASSERT_TRUE(tx->Commit().ok());
  }
  MemoryArchive archive;
  const RetainSummary s = std::move(Retain(*store_, Options(4), &archive)).value();
  EXPECT_EQ(s.removed[static_cast<size_t>(RetainedKind::kLedger)], 9);
  EXPECT_EQ(s.transactions, 3);  // 4 + 4 + 1
  EXPECT_EQ(ArchivedKinds(archive.synced_), (std::map<std::string, int>{{"ledger", 9}}));
  EXPECT_NE(archive.synced_.find(
                R"("record":{"consumer":"c","subject":"order-0","source":"s","id":"e0")"),
            std::string::npos)
      << archive.synced_;
  EXPECT_NE(archive.synced_.find(R"("wrote":{"state":"placed"})"), std::string::npos);
  {
    auto tx = std::move(store_->Begin()).value();
    const LedgerEntry again{.consumer = "c", .source = "s", .event_id = "e0"};
    EXPECT_EQ(std::move(tx->InsertLedger(again)).value(), Insert::kAlreadyThere);
    EXPECT_TRUE(std::move(tx->FindLedger("c", "s", "e0")).value()->retained);
    ASSERT_TRUE(tx->Rollback().ok());
  }
  // Forgetting after 4h leaves the 3h-old digests alone.
  RetainOptions forget = Options(2);
  forget.forget_ledger_after_ms = 4 * kHourMs;
  RetainSummary kept = std::move(Retain(*store_, forget, nullptr)).value();
  EXPECT_EQ(kept.digests_forgotten, 0);
  EXPECT_EQ(kept.forget_horizon_ms, kNowMs - 4 * kHourMs);
  clock_.Advance(2 * kHourMs);  // the digests are 5h old now, the last three receipts 3h
  forget.dry_run = true;
  EXPECT_EQ(std::move(Retain(*store_, forget, nullptr)).value().digests_forgotten, 9);
  forget.dry_run = false;
  const RetainSummary forgot = std::move(Retain(*store_, forget, nullptr)).value();
  EXPECT_EQ(forgot.removed[static_cast<size_t>(RetainedKind::kLedger)], 3);
  EXPECT_EQ(forgot.digests_forgotten, 9);
  // The run says what it forgot, for the evidence packet, and a later run that forgets nothing
  // leaves that said.
  const auto latest = [&] {
    return std::move(std::move(store_->Read()).value()->LatestRetention()).value().value();
  };
  EXPECT_EQ(latest().forgot_before_ms, kNowMs - 2 * kHourMs);
  clock_.Advance(kHourMs);
  Fill(1, 0);
  EXPECT_EQ(std::move(Retain(*store_, Options(), nullptr)).value().total(), 2);
  EXPECT_EQ(latest().at_ms, kNowMs + 3 * kHourMs);
  EXPECT_EQ(latest().forgot_before_ms, kNowMs - 2 * kHourMs);
  auto tx = std::move(store_->Begin()).value();
  EXPECT_FALSE(std::move(tx->FindLedger("c", "s", "e0")).value().has_value());
  EXPECT_TRUE(std::move(tx->FindLedger("c", "s", "e10")).value()->retained);
  ASSERT_TRUE(tx->Rollback().ok());
}

// An earlier intent of a subject's effect, settled and its log gone, goes archived whole (its
// request too) and leaves its key's digest; the subject's latest intent of that effect stays.
TEST_F(Retention, EarlierIntentsBecomeKeyDigestsAndTheLatestStays) {
  {
    auto tx = std::move(store_->Begin()).value();
    for (const char* key : {"reserve:order-1:v1", "reserve:order-1:v2"}) {
      EffectIntent e{.key = key,
                     .effect = "reserve-stock",
                     .consumer = "c",
                     .subject = "order-1",
                     .source = "s",
                     .event_id = key,
                     .request = R"({"id":"e1","data":{"n":1}})",
                     .state = EffectState::kDone,
                     .intended_at_ms = kNowMs - 4 * kHourMs,
                     .settled_at_ms = kNowMs - 3 * kHourMs};
      ASSERT_EQ(std::move(tx->InsertIntent(e)).value(), Insert::kInserted);
      ASSERT_TRUE(tx->LogIntent({.key = key,
                                 .action = EffectAction::kAttempt,
                                 .by = "runner",
                                 .state_after = EffectState::kDone,
                                 .at_ms = kNowMs - 3 * kHourMs})
                      .ok());
    }
    ASSERT_TRUE(tx->Commit().ok());
  }
  MemoryArchive archive;
  const RetainSummary s = std::move(Retain(*store_, Options(), &archive)).value();
  // The newest log entry stays (its seq is never given again), and so does its intent's key.
  EXPECT_EQ(s.removed[static_cast<size_t>(RetainedKind::kEffectLog)], 1);
  EXPECT_EQ(s.removed[static_cast<size_t>(RetainedKind::kIntent)], 1);
  EXPECT_EQ(ArchivedKinds(archive.synced_),
            (std::map<std::string, int>{{"effect-log", 1}, {"intent", 1}}));
  EXPECT_NE(archive.synced_.find(R"({"retained":"intent","horizon":")"), std::string::npos);
  EXPECT_NE(archive.synced_.find(R"("key":"reserve:order-1:v1","effect":"reserve-stock")"),
            std::string::npos)
      << archive.synced_;
  EXPECT_NE(archive.synced_.find(R"("request":"{\"id\":\"e1\",\"data\":{\"n\":1}}"})"),
            std::string::npos)
      << archive.synced_;
  auto snapshot = std::move(store_->Read()).value();
  const std::optional<EffectIntent> v1 =
      std::move(snapshot->FindIntent("reserve:order-1:v1")).value();
  ASSERT_TRUE(v1.has_value());
  EXPECT_TRUE(v1->retained);
  EXPECT_EQ(v1->state, EffectState::kDone);
  EXPECT_FALSE(std::move(snapshot->FindIntent("reserve:order-1:v2")).value()->retained);
}

// After each look and its transaction a run pauses `yield_percent` of the time they took (here
// on a clock that moves 40 ms per read, so each took 40 ms), at most a second; 0 runs back to
// back.
TEST_F(Retention, EachTransactionIsFollowedByItsYield) {
  class SlowClock final : public Clock {
   public:
    int64_t NowMs() override { return kNowMs; }
    int64_t MonotonicMs() override { return now_ms_ += 40; }
    void SleepMs(int64_t ms) override { slept_ms_ += ms; }
    int64_t now_ms_ = 0;
    int64_t slept_ms_ = 0;
  };
  const auto slept = [&](int64_t percent) {
    SetUp();
    Fill(25, 5);
    SlowClock clock;
    RetainOptions options = Options(10);
    options.clock = &clock;
    options.yield_percent = percent;
    EXPECT_EQ(std::move(Retain(*store_, options, nullptr)).value().total(), 26);
    return clock.slept_ms_;
  };
  const int64_t full = slept(100);
  // At least a look per kind, and the journal's 30 entries in 10s: 40 ms after each.
  EXPECT_GE(full, 40 * (static_cast<int64_t>(kRetainedKindCount) + 3));
  EXPECT_EQ(full % 40, 0);
  EXPECT_EQ(slept(0), 0);
  EXPECT_EQ(slept(50), full / 2);
  EXPECT_EQ(slept(1000), full * 10);
  EXPECT_EQ(slept(10'000), full / 40 * 1000);  // 4 s each, cut to a second
}

TEST_F(Retention, ADryRunCountsAndChangesNothing) {
  Fill(7, 3);
  RetainOptions options = Options();
  options.dry_run = true;
  const RetainSummary s = std::move(Retain(*store_, options, nullptr)).value();
  EXPECT_TRUE(s.dry_run);
  EXPECT_EQ(s.removed[static_cast<size_t>(RetainedKind::kJournal)], 7);
  EXPECT_EQ(s.transactions, 0);
  EXPECT_EQ(JournalLeft(), 10);
  EXPECT_FALSE(std::move(std::move(store_->Read()).value()->LatestRetention()).value());
}

// An archive that cannot be made durable stops the run before the removal: the records stay.
TEST_F(Retention, AnArchiveThatCannotSyncRemovesNothing) {
  Fill(5, 0);
  MemoryArchive archive;
  archive.fail_syncs_ = true;
  const Result<RetainSummary> s = Retain(*store_, Options(), &archive);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().ToString().find("no space left"), std::string::npos);
  EXPECT_EQ(JournalLeft(), 5);
}

// A removal that fails to commit (the process killed between the archive's sync and the
// commit) leaves its records in the store and in the archive; the next run archives them again
// and removes them: no record is ever in neither.
TEST_F(Retention, ACommitThatFailsAfterTheArchiveLeavesRecordsInBoth) {
  Fill(12, 0);
  auto faulty = std::make_unique<FaultStore>(std::move(store_));
  FaultStore* fault = faulty.get();
  store_ = std::move(faulty);
  fault->Add({.call = StoreCall::kCommit, .nth = fault->calls(StoreCall::kCommit) + 2});
  MemoryArchive archive;
  const Result<RetainSummary> first = Retain(*store_, Options(5), &archive);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(JournalLeft(), 12 - 5);  // the second batch stayed
  EXPECT_EQ(ArchivedKinds(archive.synced_)["journal"], 10);
  const RetainSummary second = std::move(Retain(*store_, Options(5), &archive)).value();
  EXPECT_EQ(second.removed[static_cast<size_t>(RetainedKind::kJournal)], 6);
  EXPECT_EQ(JournalLeft(), 1);                               // the newest always stays
  EXPECT_EQ(ArchivedKinds(archive.synced_)["journal"], 16);  // the failed batch twice
}

// The configuration's retention: each kind by its own horizon, a kind it does not name kept,
// kinds of one horizon in one run.
TEST_F(Retention, AsConfiguredEachKindGoesByItsOwnHorizon) {
  Fill(6, 4);  // journal: 6 three hours old, 4 half an hour; sent rows: 3 h and 1 min old
  RetentionConfig config{.every_ms = 1000};
  config.older_than_ms[static_cast<size_t>(RetainedKind::kOutbox)] = kHourMs / 2;
  std::vector<RetainSummary> runs =
      std::move(RetainAsConfigured(*store_, config, nullptr, &clock_, nullptr)).value();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].removed[static_cast<size_t>(RetainedKind::kOutbox)], 1);
  EXPECT_EQ(runs[0].total(), 1);
  EXPECT_EQ(JournalLeft(), 10);  // the journal is not named: kept, however old

  config.older_than_ms[static_cast<size_t>(RetainedKind::kJournal)] = 4 * kHourMs;
  config.older_than_ms[static_cast<size_t>(RetainedKind::kOutbox)] = 30'000;
  runs = std::move(RetainAsConfigured(*store_, config, nullptr, &clock_, nullptr)).value();
  ASSERT_EQ(runs.size(), 2u);  // the shorter horizon first
  EXPECT_EQ(runs[0].horizon_ms, kNowMs - 30'000);
  EXPECT_EQ(runs[0].removed[static_cast<size_t>(RetainedKind::kOutbox)], 1);
  // Each horizon's run starts in a millisecond of its own (a store keeps a run by its start).
  EXPECT_EQ(runs[1].horizon_ms, kNowMs + 1 - 4 * kHourMs);
  EXPECT_EQ(runs[1].total(), 0);  // nothing in the journal is four hours old
  EXPECT_EQ(JournalLeft(), 10);
  // The run that removed something is recorded as itself (the other one removed nothing).
  std::optional<RetentionRun> recorded =
      std::move(std::move(store_->Read()).value()->LatestRetention()).value();
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(recorded->horizon_ms, kNowMs - 30'000);
  EXPECT_EQ(recorded->removed, 1);

  config.older_than_ms[static_cast<size_t>(RetainedKind::kJournal)] = 2 * kHourMs;
  MemoryArchive archive;
  runs = std::move(RetainAsConfigured(*store_, config, &archive, &clock_, nullptr)).value();
  EXPECT_EQ(runs.back().removed[static_cast<size_t>(RetainedKind::kJournal)], 6);
  EXPECT_EQ(ArchivedKinds(archive.synced_), (std::map<std::string, int>{{"journal", 6}}));
  EXPECT_EQ(JournalLeft(), 4);
  // The journal's run (the longest horizon, last) is the store's latest record, as itself.
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs.back().horizon_ms, runs.front().horizon_ms - 2 * kHourMs + 30'000 + 1);
  recorded = std::move(std::move(store_->Read()).value()->LatestRetention()).value();
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(recorded->horizon_ms, runs.back().horizon_ms);
  EXPECT_EQ(recorded->removed, 6);
}

// The timer beside a long-running command: a run at start on a store of its own; a run that
// fails (here the store cannot be opened once) is said and tried again at the next tick.
TEST_F(Retention, TheTimerRunsOnItsOwnStoreAndOutlivesAFailedRun) {
  Fill(25, 5);
  char* log_text = nullptr;
  size_t log_size = 0;
  std::FILE* log = open_memstream(&log_text, &log_size);
  ASSERT_NE(log, nullptr);
  RetentionConfig config{.every_ms = 1};
  config.older_than_ms.fill(2 * kHourMs);
  int opened = 0;
  RetentionTimer timer({.config = config,
                        .open_store = [&]() -> Result<std::unique_ptr<Store>> {
                          if (++opened == 1) return Status::Unavailable("the store is down");
                          return OpenMemoryStore(database_);
                        },
                        .clock = &clock_,
                        .log = log,
                        .command = "consume"});
  for (int i = 0; i < 10'000 && timer.counts().removed < 26; ++i) SystemClock().SleepMs(1);
  timer.Stop();
  const RetentionTimer::Counts counts = timer.counts();
  EXPECT_EQ(counts.failures, 1);
  EXPECT_GE(counts.runs, 2);
  EXPECT_EQ(counts.removed, 26);
  EXPECT_EQ(JournalLeft(), 5);
  ASSERT_EQ(std::fclose(log), 0);
  const std::string text(log_text, log_size);
  std::free(log_text);
  EXPECT_NE(text.find("evident consume: retention run failed, tried again in 1ms: "
                      "unavailable: the store is down"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("evident consume: retention removed 26 (journal 25, outbox 1)\n"),
            std::string::npos)
      << text;
  timer.Stop();  // again: nothing happens
}

// On SQLite, which keeps a run by its start time: two horizons that both remove records are two
// runs, neither overwriting the other.
TEST(RetentionSqlite, EachHorizonIsARunOfItsOwn) {
  const std::string path = ::testing::TempDir() + "/retention-horizons.db";
  std::remove(path.c_str());
  std::unique_ptr<Store> store = std::move(OpenSqliteStore(path)).value();
  {
    auto tx = std::move(store->Begin()).value();
    for (int i = 0; i < 4; ++i) {  // three 3 h old, the newest half an hour
      ASSERT_TRUE(tx->Journal(JournalEntry{.consumer = "c",
                                           .outcome = Outcome::kApplied,
                                           .source = "s",
                                           .event_id = "e" + std::to_string(i),
                                           .subject = "order-1",
                                           .at_ms = kNowMs - (i < 3 ? 3 * kHourMs : kHourMs / 2)})
                      .ok());
    }
    for (int i = 0; i < 2; ++i) {
      const OutboxAppend row =
          std::move(tx->AppendOutbox(OutboxRow{.source = "s",
                                               .event_id = "o" + std::to_string(i),
                                               .type = "t",
                                               .subject = "order-1",
                                               .bytes = "{}",
                                               .created_at_ms = kNowMs - 3 * kHourMs}))
              .value();
      ASSERT_TRUE(tx->MarkOutboxSent(row.seq, "S", i, kNowMs - 3 * kHourMs).ok());
    }
    ASSERT_TRUE(tx->Commit().ok());
  }
  ManualClock clock(kNowMs);
  RetentionConfig config{.every_ms = 1000};
  config.older_than_ms[static_cast<size_t>(RetainedKind::kJournal)] = 2 * kHourMs;
  config.older_than_ms[static_cast<size_t>(RetainedKind::kOutbox)] = kHourMs;
  const std::vector<RetainSummary> runs =
      std::move(RetainAsConfigured(*store, config, nullptr, &clock, nullptr)).value();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].removed[static_cast<size_t>(RetainedKind::kOutbox)], 2);
  EXPECT_EQ(runs[1].removed[static_cast<size_t>(RetainedKind::kJournal)], 3);
  store.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT horizon_ms, removed FROM retention_run ORDER BY seq", -1,
                               &statement, nullptr),
            SQLITE_OK);
  std::vector<std::pair<int64_t, int64_t>> recorded;
  while (sqlite3_step(statement) == SQLITE_ROW) {
    recorded.emplace_back(sqlite3_column_int64(statement, 0), sqlite3_column_int64(statement, 1));
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  EXPECT_EQ(recorded, (std::vector<std::pair<int64_t, int64_t>>{{runs[0].horizon_ms, 2},
                                                                {runs[1].horizon_ms, 3}}));
  std::remove(path.c_str());
}

// On SQLite, a new store gives the pages retention frees back to the file system.
TEST(RetentionSqlite, ANewStoreGivesItsFreedSpaceBack) {
  const std::string path = ::testing::TempDir() + "/retention-space.db";
  std::remove(path.c_str());
  std::unique_ptr<Store> store = std::move(OpenSqliteStore(path)).value();
  {
    auto tx = std::move(store->Begin()).value();
    const std::string padding(400, 'x');
    for (int i = 0; i < 20000; ++i) {
      ASSERT_TRUE(tx->Journal(JournalEntry{.consumer = "c",
                                           .outcome = Outcome::kApplied,
                                           .source = "s",
                                           .event_id = padding + std::to_string(i),
                                           .subject = "order-1",
                                           .at_ms = 1000})
                      .ok());
    }
    ASSERT_TRUE(tx->Commit().ok());
  }
  ASSERT_TRUE(store->ReturnSpace(1'000'000).ok());
  const Store::Space before = std::move(store->SpaceNow()).value();
  EXPECT_TRUE(before.applies);
  EXPECT_TRUE(before.incremental);
  ManualClock clock(kNowMs);
  const RetainSummary s =
      std::move(Retain(*store, {.older_than_ms = kHourMs, .clock = &clock}, nullptr)).value();
  EXPECT_EQ(s.removed[static_cast<size_t>(RetainedKind::kJournal)], 19999);
  const Store::Space freed = std::move(store->SpaceNow()).value();
  EXPECT_GT(freed.free_bytes, before.file_bytes / 2);
  const int64_t given = std::move(store->ReturnSpace(1'000'000)).value();
  const Store::Space after = std::move(store->SpaceNow()).value();
  EXPECT_EQ(after.free_bytes, 0);
  EXPECT_EQ(given, before.file_bytes - after.file_bytes);
  EXPECT_LT(after.file_bytes, before.file_bytes / 4);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace evident
