// Quarantine and replay through the library: one record per input with its attempts, replay in
// first-seen order with ids unchanged, a second replay that applies nothing, dry runs, discards,
// the audit, the ledger answering duplicate before the contract, and transient failures that end
// in `retries-exhausted`. Run against the memory and the SQLite store.
#include "evident/quarantine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "evident/fault_store.h"
#include "evident/store_memory.h"
#include "evident/store_sqlite.h"
#include "paid_contracts.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

using evident::testing::Paid;  // tests/paid_contracts.h: the consumer `ledgerist` and its events

// The ordered consumer `ledgerist` of order.paid, accepting the schema versions listed.
void WriteContracts(const fs::path& dir, const std::string& versions) {
  evident::testing::WritePaidConfig(dir, versions);
}

class QuarantineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = c == '/' ? '_' : c;
    dir_ =
        fs::temp_directory_path() / ("quarantine_test_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Contracts("[1]");
    store_ = OpenTestStore();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  std::unique_ptr<Store> OpenTestStore() {
    if (GetParam() == "sqlite") return OpenSqliteStore((dir_ / "store.db").string()).value();
    if (database_ == nullptr) database_ = NewMemoryDatabase();
    return OpenMemoryStore(database_).value();
  }

  // Today's contract: the consumer accepts `versions`; events up to `event_bytes_max`.
  void Contracts(const std::string& versions, int64_t event_bytes_max = 0) {
    WriteContracts(dir_, versions);
    auto config = LoadConfig((dir_ / "evident.yaml").string());
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    if (event_bytes_max > 0) config->event_bytes_max = event_bytes_max;
    auto pipeline = Pipeline::Create(*config);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status().ToString();
    pipeline_ = std::move(pipeline).value();
  }

  // Consumes `events` as one input, `now_ms` on every decision.
  std::vector<Decision> Consume(const std::vector<std::string>& events, int64_t now_ms = 1000) {
    std::vector<Decision> decisions;
    auto tx = store_->Begin().value();
    for (size_t i = 0; i < events.size(); ++i) {
      EXPECT_TRUE(
          pipeline_->Process(*tx, events[i], static_cast<int64_t>(i), now_ms, decisions).ok());
    }
    EXPECT_TRUE(tx->Commit().ok());
    return decisions;
  }

  std::vector<QuarantineRecord> List(const QuarantineFilter& filter = {}) {
    return store_->Read().value()->ListQuarantine(filter).value().rows;
  }

  ReplaySummary Replay(ReplayOptions options) {
    if (options.by.empty()) options.by = "ops";
    if (options.note.empty()) options.note = "contract v2 accepted";
    options.clock = &clock_;
    auto summary = ReplayQuarantine(*pipeline_, *store_, options);
    EXPECT_TRUE(summary.ok()) << summary.status().ToString();
    return summary.ok() ? *summary : ReplaySummary{};
  }

  std::optional<Projection> ProjectionOf(const std::string& subject) {
    return store_->Read().value()->FindProjection("ledgerist", subject).value();
  }

  fs::path dir_;
  std::shared_ptr<MemoryDatabase> database_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Pipeline> pipeline_;
  ManualClock clock_{5000};
};

TEST_P(QuarantineTest, TheSameBadInputFiveTimesIsOneRecordWithFiveAttempts) {
  for (int i = 0; i < 5; ++i) Consume({Paid("e1", 1, 2)}, 1000 + i);
  Consume({"{not json"}, 2000);
  Consume({"{not json"}, 2001);
  const std::vector<QuarantineRecord> records = List();
  ASSERT_EQ(records.size(), 2u);
  const QuarantineRecord& r = records[0];
  EXPECT_EQ(r.attempts, 5);
  EXPECT_EQ(r.first_seen_ms, 1000);
  EXPECT_EQ(r.last_seen_ms, 1004);
  EXPECT_EQ(r.consumer, "ledgerist");
  EXPECT_EQ(r.outcome, Outcome::kContractUpdateRequired);
  EXPECT_EQ(r.reason, "unaccepted-schema-version");
  EXPECT_EQ(r.schema_version, 2);
  EXPECT_EQ(r.subject, "order-1");
  EXPECT_EQ(r.status, QuarantineStatus::kOpen);
  EXPECT_EQ(r.raw, Paid("e1", 1, 2));
  EXPECT_EQ(records[1].attempts, 2);  // no id: its bytes
  EXPECT_EQ(records[1].reason, "malformed-json");
}

// An input rejected before any consumer was chosen keeps the subject it names.
TEST_P(QuarantineTest, AnEnvelopeRejectionKeepsItsSubject) {
  Consume({R"({"specversion":"1.0","source":"shop","type":"order.paid","subject":"order-9"})"});
  const std::vector<QuarantineRecord> of =
      store_->Read().value()->QuarantineOf("order-9").value().rows;
  ASSERT_EQ(of.size(), 1u);
  EXPECT_EQ(of[0].reason, "missing-id");
  EXPECT_EQ(of[0].consumer, "");
}

// The acceptance scenario: 1,000 events of a version the contract did not accept, replayed once
// it does, apply in their original order with their ids; a second replay applies nothing.
TEST_P(QuarantineTest, AThousandRefusedEventsReplayInOrderOnce) {
  std::vector<std::string> events;
  for (int v = 1; v <= 1000; ++v) events.push_back(Paid("evt-" + std::to_string(v), v, 2));
  for (size_t from = 0; from < events.size(); from += 100) {  // ten inputs, ten times
    Consume({events.begin() + static_cast<ptrdiff_t>(from),
             events.begin() + static_cast<ptrdiff_t>(from + 100)},
            1000 + static_cast<int64_t>(from));
  }
  ASSERT_EQ(List({.status = QuarantineStatus::kOpen}).size(), 1000u);
  EXPECT_FALSE(ProjectionOf("order-1").has_value());

  Contracts("[1, 2]");
  const std::unique_ptr<Env> memory = NewMemoryEnv();
  std::unique_ptr<WritableFile> lines = memory->NewWritableFile("outcomes").value();
  ReplaySummary s = Replay({.batch_count_max = 64, .outcomes = lines.get()});
  EXPECT_EQ(s.records, 1000);
  EXPECT_EQ(s.replayed, 1000);
  EXPECT_EQ(s.refused, 0);
  EXPECT_EQ(s.batches, 16);
  ASSERT_TRUE(lines->Close().ok());
  std::istringstream text(ReadWholeFile(*memory, "outcomes", size_t{64} << 20).value());
  int64_t line_count = 0;
  for (std::string line; std::getline(text, line);) {
    const std::string want = "\"event_id\":\"evt-" + std::to_string(++line_count) + "\"";
    EXPECT_NE(line.find(want), std::string::npos) << line;
    EXPECT_NE(line.find("\"outcome\":\"applied\""), std::string::npos) << line;
  }
  EXPECT_EQ(line_count, 1000);
  const std::optional<Projection> p = ProjectionOf("order-1");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->version, 1000);
  auto snapshot = store_->Read().value();
  const Rows<LedgerEntry> ledger = snapshot->LedgerOf("ledgerist", "order-1", 2000).value();
  ASSERT_EQ(ledger.rows.size(), 1000u);
  for (size_t i = 0; i < ledger.rows.size(); ++i) {
    EXPECT_EQ(ledger.rows[i].event_id, "evt-" + std::to_string(i + 1));  // ids unchanged
    EXPECT_EQ(ledger.rows[i].source, "shop");
    EXPECT_EQ(ledger.rows[i].input_schema_version, 2);
    EXPECT_EQ(ledger.rows[i].projection_version, static_cast<int64_t>(i + 1));  // in order
  }
  const std::vector<QuarantineRecord> after = snapshot->ListQuarantine({}).value().rows;
  for (const QuarantineRecord& r : after) {
    EXPECT_EQ(r.status, QuarantineStatus::kReplayed);
    const Rows<QuarantineAudit> audit = snapshot->AuditOf(r.id).value();
    ASSERT_EQ(audit.rows.size(), 1u);
    EXPECT_EQ(audit.rows[0].by, "ops");
    EXPECT_EQ(audit.rows[0].note, "contract v2 accepted");
    EXPECT_EQ(audit.rows[0].outcome, "applied");
    EXPECT_EQ(audit.rows[0].at_ms, 5000);
  }
  snapshot.reset();

  s = Replay({.select = {.consumer = "ledgerist"}});  // open records only: none left
  EXPECT_EQ(s.records, 0);
  EXPECT_EQ(ProjectionOf("order-1")->version, 1000);
  // Asked for by id, an applied record answers duplicate and stays replayed.
  s = Replay({.select = {.ids = {after[0].id, after[1].id}}});
  EXPECT_EQ(s.records, 2);
  EXPECT_EQ(s.duplicates, 2);
  EXPECT_EQ(s.replayed, 0);
  EXPECT_EQ(ProjectionOf("order-1")->version, 1000);
}

// Refused again: the record stays open with one more attempt and the new reason.
TEST_P(QuarantineTest, ARecordRefusedAgainStaysOpenWithOneMoreAttempt) {
  Consume({Paid("e1", 1, 2)});
  const int64_t id = List().at(0).id;
  const ReplaySummary s = Replay({.select = {.ids = {id}}});
  EXPECT_EQ(s.refused, 1);
  const QuarantineRecord r = List().at(0);
  EXPECT_EQ(r.id, id);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(r.last_seen_ms, 5000);
  EXPECT_EQ(r.status, QuarantineStatus::kOpen);
  const Rows<QuarantineAudit> audit = store_->Read().value()->AuditOf(id).value();
  ASSERT_EQ(audit.rows.size(), 1u);
  EXPECT_EQ(audit.rows[0].outcome, "contract-update-required");
  EXPECT_EQ(audit.rows[0].reason, "unaccepted-schema-version");
  EXPECT_EQ(audit.rows[0].status_after, QuarantineStatus::kOpen);
}

// The envelope refuses a consumer's record on replay (here: today's size limit): the refusal is
// that consumer's, counted on the same record, which stays open; no record without a consumer
// appears, and nothing reads as replayed.
TEST_P(QuarantineTest, AnEnvelopeRefusalOnReplayKeepsTheConsumersRecordOpen) {
  std::string big = Paid("e1", 1, 2);
  big.insert(big.size() - 2, R"(,"pad":")" + std::string(70000, 'x') + "\"");
  Consume({big});  // within the default 1 MiB
  const int64_t id = List().at(0).id;
  Contracts("[1, 2]", int64_t{64} << 10);
  const ReplaySummary s = Replay({.select = {.consumer = "ledgerist"}});
  EXPECT_EQ(s.refused, 1);
  EXPECT_EQ(s.replayed, 0);
  const std::vector<QuarantineRecord> records = List();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].id, id);
  EXPECT_EQ(records[0].status, QuarantineStatus::kOpen);
  EXPECT_EQ(records[0].attempts, 2);
  EXPECT_EQ(records[0].reason, "envelope-too-large");
  EXPECT_FALSE(ProjectionOf("order-1").has_value());
}

TEST_P(QuarantineTest, DiscardOfAnIdNamedTwiceDiscardsItOnce) {
  Consume({Paid("e1", 1, 2)});
  const int64_t id = List().at(0).id;
  EXPECT_EQ(DiscardQuarantine(*store_, {id, id}, "ops", "n", 10).value(), 1);
  EXPECT_EQ(store_->Read().value()->AuditOf(id).value().rows.size(), 1u);
}

TEST_P(QuarantineTest, ADryRunDecidesInOrderAndCommitsNothing) {
  Consume({Paid("e1", 1, 2), Paid("e2", 2, 2)});
  Contracts("[1, 2]");
  const ReplaySummary s = Replay({.dry_run = true});
  EXPECT_EQ(s.replayed, 2);  // e2 saw e1 applied in the same dry run: applied, not deferred
  EXPECT_EQ(s.batches, 0);
  EXPECT_FALSE(ProjectionOf("order-1").has_value());
  for (const QuarantineRecord& r : List()) {
    EXPECT_EQ(r.status, QuarantineStatus::kOpen);
    EXPECT_EQ(r.attempts, 1);
    EXPECT_TRUE(store_->Read().value()->AuditOf(r.id).value().rows.empty());
  }
}

TEST_P(QuarantineTest, DiscardClosesOpenRecordsAllOrNone) {
  Consume({Paid("e1", 1, 2), Paid("e2", 2, 2)});
  const std::vector<QuarantineRecord> records = List();
  EXPECT_EQ(DiscardQuarantine(*store_, {records[0].id}, "", "n", 10).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(DiscardQuarantine(*store_, {records[0].id, 999}, "ops", "n", 10).status().code(),
            Code::kNotFound);
  EXPECT_EQ(List({.status = QuarantineStatus::kOpen}).size(), 2u);  // none of them
  EXPECT_EQ(DiscardQuarantine(*store_, {records[0].id}, "ops", "producer bug", 10).value(), 1);
  EXPECT_EQ(
      DiscardQuarantine(*store_, {records[1].id, records[0].id}, "ops", "n", 11).status().code(),
      Code::kFailedPrecondition);
  EXPECT_EQ(List({.status = QuarantineStatus::kDiscarded}).size(), 1u);
  const Rows<QuarantineAudit> audit = store_->Read().value()->AuditOf(records[0].id).value();
  ASSERT_EQ(audit.rows.size(), 1u);
  EXPECT_EQ(audit.rows[0].action, QuarantineAction::kDiscard);
  EXPECT_EQ(audit.rows[0].note, "producer bug");
  // A discarded record is not replayed by a selection, only by its id.
  Contracts("[1, 2]");
  EXPECT_EQ(Replay({.select = {.consumer = "ledgerist"}}).records, 1);
}

// Item 4: an event applied before is a duplicate whatever today's contract says of it.
TEST_P(QuarantineTest, AnAppliedEventRedeliveredAfterItsVersionLeftTheContractIsADuplicate) {
  Contracts("[1, 2]");
  EXPECT_EQ(Consume({Paid("e1", 1, 2)}).at(0).outcome, Outcome::kApplied);
  Contracts("[1]");
  const std::vector<Decision> again = Consume({Paid("e1", 1, 2)});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].outcome, Outcome::kDuplicate);
  EXPECT_TRUE(List().empty());
  // A payload that today's schema refuses, too.
  const std::vector<Decision> bad = Consume({R"({"specversion":"1.0","id":"e1","source":"shop",)"
                                             R"("type":"order.paid","subject":"order-1",)"
                                             R"("schemaversion":1,"data":{"orderVersion":"x"}})"});
  EXPECT_EQ(bad.at(0).outcome, Outcome::kDuplicate);
}

// An input kept for both consumers (its schema version 2 accepted by neither yet), then applied
// by both as a corrected copy (same source and id, schema version 1), then replayed once both
// accept version 2: the ledger answers `duplicate` for the ordered consumer and for the
// unordered one, whose receipt insert is the only thing that can tell (no version to compare),
// and nothing is applied a second time.
TEST_P(QuarantineTest, AnInputAppliedSinceItWasKeptReplaysAsADuplicateOrderedOrNot) {
  evident::testing::WritePaidConfig(dir_, "[1]", /*with_archivist=*/true);
  const auto archivist_accepts = [&](const std::string& versions) {
    const fs::path file = dir_ / "contracts/consumers/archivist.yaml";
    std::ifstream in(file);
    std::string yaml((std::istreambuf_iterator<char>(in)), {});
    const size_t at = yaml.find("versions: [1]");
    ASSERT_NE(at, std::string::npos) << yaml;
    yaml.replace(at, std::string("versions: [1]").size(), "versions: " + versions);
    std::ofstream(file) << yaml;
  };
  auto reload = [&] {
    auto config = LoadConfig((dir_ / "evident.yaml").string());
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    pipeline_ = std::move(Pipeline::Create(*config)).value();
  };
  reload();
  const std::vector<Decision> kept = Consume({Paid("e1", 1, 2)});
  ASSERT_EQ(kept.size(), 2u);
  for (const Decision& d : kept)
    EXPECT_EQ(d.outcome, Outcome::kContractUpdateRequired) << d.consumer;
  ASSERT_EQ(List({.status = QuarantineStatus::kOpen}).size(), 2u);
  const std::vector<Decision> applied = Consume({Paid("e1", 1, 1)}, 2000);
  ASSERT_EQ(applied.size(), 2u);
  for (const Decision& d : applied) EXPECT_EQ(d.outcome, Outcome::kApplied) << d.consumer;

  evident::testing::WritePaidConfig(dir_, "[1, 2]", /*with_archivist=*/true);
  archivist_accepts("[1, 2]");
  reload();
  const std::unique_ptr<Env> memory = NewMemoryEnv();
  std::unique_ptr<WritableFile> lines = memory->NewWritableFile("outcomes").value();
  const ReplaySummary s = Replay({.outcomes = lines.get()});
  ASSERT_TRUE(lines->Close().ok());
  EXPECT_EQ(s.records, 2);
  EXPECT_EQ(s.duplicates, 2);
  EXPECT_EQ(s.replayed, 0);
  const std::string text = ReadWholeFile(*memory, "outcomes", size_t{1} << 20).value();
  EXPECT_NE(text.find(R"("consumer":"archivist")"), std::string::npos) << text;
  EXPECT_EQ(text.find(R"("outcome":"applied")"), std::string::npos) << text;
  EXPECT_EQ(ProjectionOf("order-1")->version, 1);
  auto snapshot = store_->Read().value();
  for (const char* consumer : {"ledgerist", "archivist"}) {
    const Rows<LedgerEntry> ledger = snapshot->LedgerOf(consumer, "order-1", 10).value();
    ASSERT_EQ(ledger.rows.size(), 1u) << consumer;
    EXPECT_EQ(ledger.rows[0].input_schema_version, 1) << consumer;  // the copy applied, once
  }
  for (const QuarantineRecord& r : snapshot->ListQuarantine({}).value().rows) {
    EXPECT_EQ(r.status, QuarantineStatus::kReplayed) << r.consumer;
  }
}

TEST_P(QuarantineTest, ReplayOfAnIdThatIsNoRecordReplaysNothing) {
  Consume({Paid("e1", 1, 2)});
  Contracts("[1, 2]");
  const int64_t id = List().at(0).id;
  ReplayOptions options{.by = "ops", .note = "n"};
  options.select.ids = {id, id + 100};
  EXPECT_EQ(ReplayQuarantine(*pipeline_, *store_, options).status().code(), Code::kNotFound);
  EXPECT_EQ(List().at(0).status, QuarantineStatus::kOpen);
  EXPECT_FALSE(ProjectionOf("order-1").has_value());
}

// The names a typo's message offers come from records read a page at a time (a record keeps its
// input's bytes): a reason first seen after the first page is named too.
TEST_P(QuarantineTest, TheNamesOfferedForATypoComeFromRecordsPastTheFirstPage) {
  std::vector<std::string> events;
  for (int i = 0; i < 130; ++i) events.push_back(Paid("e" + std::to_string(i), 1, 2));
  Consume(events, 1000);
  Consume({"{not json"}, 2000);  // seen last: on the second page
  ASSERT_EQ(List().size(), 131u);
  ReplayOptions options{.by = "ops", .note = "n"};
  options.select.reason = "malformed-jsno";
  const Status typo = ReplayQuarantine(*pipeline_, *store_, options).status();
  EXPECT_EQ(typo.code(), Code::kNotFound);
  EXPECT_NE(typo.message().find("reasons: malformed-json, unaccepted-schema-version;"),
            std::string::npos)
      << typo.ToString();
}

// A consumer or reason no record has (a typo) replays nothing and says which ones there are; one
// whose records are all closed already is no mistake: nothing to replay, and OK.
TEST_P(QuarantineTest, AConsumerOrReasonNoRecordHasIsNamedWithTheOnesThereAre) {
  ReplayOptions options{.by = "ops", .note = "n"};
  options.select.consumer = "ledgerist";
  Status empty = ReplayQuarantine(*pipeline_, *store_, options).status();
  EXPECT_EQ(empty.code(), Code::kNotFound);
  EXPECT_NE(empty.message().find("the quarantine is empty"), std::string::npos) << empty.ToString();

  Consume({Paid("e1", 1, 2)});
  Contracts("[1, 2]");
  options.select.consumer = "ledgerst";
  Status typo = ReplayQuarantine(*pipeline_, *store_, options).status();
  EXPECT_EQ(typo.code(), Code::kNotFound);
  EXPECT_NE(typo.message().find("consumer 'ledgerst' (consumers: ledgerist;"), std::string::npos)
      << typo.ToString();
  options.select.consumer = "ledgerist";
  options.select.reason = "unaccepted-schema-versoin";
  typo = ReplayQuarantine(*pipeline_, *store_, options).status();
  EXPECT_EQ(typo.code(), Code::kNotFound);
  EXPECT_NE(typo.message().find("reasons: unaccepted-schema-version;"), std::string::npos)
      << typo.ToString();
  EXPECT_EQ(List().at(0).status, QuarantineStatus::kOpen);

  options.select.reason = "unaccepted-schema-version";
  EXPECT_EQ(Replay(options).replayed, 1);
  EXPECT_EQ(Replay(options).records, 0);  // closed now: nothing left, no error
}

TEST_P(QuarantineTest, ReplayNeedsWhoAndWhy) {
  ReplayOptions options{.by = "", .note = "n"};
  EXPECT_EQ(ReplayQuarantine(*pipeline_, *store_, options).status().code(), Code::kInvalidArgument);
  options = {.by = "ops", .note = ""};
  EXPECT_EQ(ReplayQuarantine(*pipeline_, *store_, options).status().code(), Code::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Stores, QuarantineTest, ::testing::Values("memory", "sqlite"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// A consume run of e1 and e2 (ledgerist, schema v1) in one batch, on a fault store over a memory
// database, retrying three times without waiting; the faults are the test's.
struct RetryRun {
  explicit RetryRun(const std::string& name)
      : dir(fs::temp_directory_path() / (name + "_" + std::to_string(getpid()))) {
    fs::remove_all(dir);
    WriteContracts(dir, "[1]");
    auto config = LoadConfig((dir / "evident.yaml").string()).value();
    config.batch_count_max = 2;
    config.linger_ms = kLingerMsLimit;
    config.batch_ms_max = kBatchMsMaxLimit;
    pipeline = Pipeline::Create(config).value();
  }
  ~RetryRun() { fs::remove_all(dir); }
  Result<ConsumeSummary> Run() {
    auto source = NewMemorySource("m", {Paid("e1", 1, 1), Paid("e2", 2, 1)});
    ManualClock clock(0);
    ConsumeOptions options{.clock = &clock};
    options.busy_retry = {.attempts_max = 3, .backoff_initial_ms = 10, .backoff_max_ms = 10};
    return Consume(*pipeline, store, *source, options);
  }
  std::unique_ptr<Snapshot> Read() { return OpenMemoryStore(database).value()->Read().value(); }
  // Commits 1 through `last` fail as a busy store's would.
  void FailCommits(int last) {
    for (int nth = 1; nth <= last; ++nth) {
      store.Add({.call = StoreCall::kCommit, .nth = nth, .code = Code::kUnavailable});
    }
  }

  fs::path dir;
  std::unique_ptr<Pipeline> pipeline;
  std::shared_ptr<MemoryDatabase> database = NewMemoryDatabase();
  FaultStore store{OpenMemoryStore(database).value(), [](int64_t) {}};
};

// A batch that keeps failing transiently is decided again, then input by input; the input that
// still cannot be decided is quarantined as retries-exhausted and the others apply.
TEST(QuarantineRetries, AnInputThatCannotBeDecidedEndsAsRetriesExhausted) {
  RetryRun run("quarantine_retries");
  FaultStore& store = run.store;
  // Commits 1-7 fail: the batch three times (attempts_max 3), then its first input three
  // times, then once more right before its quarantine; the quarantine of that input and the
  // second input commit.
  run.FailCommits(7);
  const auto summary = run.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(store.calls(StoreCall::kCommit), 9);
  auto snapshot = run.Read();
  const std::vector<QuarantineRecord> records = snapshot->ListQuarantine({}).value().rows;
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason, "retries-exhausted");
  EXPECT_EQ(records[0].raw, Paid("e1", 1, 1));
  EXPECT_EQ(records[0].source, "shop");  // the identity a re-delivery would have
  EXPECT_EQ(records[0].event_id, "e1");
  EXPECT_EQ(records[0].type, "order.paid");
  EXPECT_EQ(records[0].subject, "order-1");
  EXPECT_NE(records[0].message.find("injected fault"), std::string::npos) << records[0].message;
  // e2 waits for version 1, which is in the quarantine: deferred, not lost.
  EXPECT_TRUE(snapshot->FindLedger("ledgerist", "shop", "e2").value().has_value());
  EXPECT_EQ(summary->counts.at("").at(static_cast<size_t>(Outcome::kRejected)), 1);
}

// The writer an input kept meeting is gone by the time its retries are spent: the try right
// before the quarantine decides it, and nothing is kept as exhausted.
TEST(QuarantineRetries, AnInputIsDecidedOnceMoreBeforeItIsKeptAsExhausted) {
  RetryRun run("quarantine_last_try");
  FaultStore& store = run.store;
  // Commits 1-6 fail: the batch three times, then its first input three times; the try before
  // the quarantine (commit 7) and the second input (commit 8) commit.
  run.FailCommits(6);
  const auto summary = run.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(store.calls(StoreCall::kCommit), 8);
  auto snapshot = run.Read();
  EXPECT_TRUE(snapshot->ListQuarantine({}).value().rows.empty());
  EXPECT_TRUE(snapshot->FindLedger("ledgerist", "shop", "e1").value().has_value());
  EXPECT_TRUE(snapshot->FindLedger("ledgerist", "shop", "e2").value().has_value());
  EXPECT_EQ(summary->counts.count(""), 0U);  // no decision without a consumer
}

// Input by input, the first input commits and the second fails for good: the run fails, and the
// first input's decision stands (committed, reported as such in the error).
TEST(QuarantineRetries, APartlyRecoveredBatchKeepsWhatItCommitted) {
  RetryRun run("quarantine_partly");
  FaultStore& store = run.store;
  run.FailCommits(3);
  store.Add({.call = StoreCall::kCommit, .nth = 5, .code = Code::kIoError});
  const auto summary = run.Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), Code::kIoError);
  EXPECT_NE(summary.status().message().find("first 1 input(s) were committed"), std::string::npos)
      << summary.status().message();
  auto snapshot = run.Read();
  EXPECT_TRUE(snapshot->FindLedger("ledgerist", "shop", "e1").value().has_value());
  EXPECT_FALSE(snapshot->FindLedger("ledgerist", "shop", "e2").value().has_value());
  EXPECT_TRUE(snapshot->ListQuarantine({}).value().rows.empty());
}

}  // namespace
// A replay batch that meets another writer (its commit aborted by a deadlock or a conflict, or
// refused past the lock wait) is rolled back and decided again; the records are replayed once,
// and the summary counts them once.
TEST(QuarantineRetries, AReplayBatchThatMeetsAnotherWriterIsDecidedAgain) {
  RetryRun run("quarantine_replay_retries");
  auto source = NewMemorySource("m", {Paid("e1", 1, 2), Paid("e2", 2, 2)});
  ManualClock clock(0);
  ASSERT_TRUE(Consume(*run.pipeline, run.store, *source, {.clock = &clock}).ok());
  ASSERT_EQ(run.Read()->ListQuarantine({}).value().rows.size(), 2U);
  WriteContracts(run.dir, "[1, 2]");
  auto accepting = Pipeline::Create(LoadConfig((run.dir / "evident.yaml").string()).value());
  ASSERT_TRUE(accepting.ok());
  const int64_t commits = run.store.calls(StoreCall::kCommit);
  run.store.Add({.call = StoreCall::kCommit, .nth = commits + 1, .code = Code::kAborted});
  run.store.Add({.call = StoreCall::kCommit, .nth = commits + 2, .code = Code::kUnavailable});
  clock.Set(1000);  // the replay starts after the records were first seen
  ReplayOptions options{.by = "ops", .note = "v2 accepted", .clock = &clock};
  options.busy_retry = {.attempts_max = 3, .backoff_initial_ms = 1, .backoff_max_ms = 1};
  const Result<ReplaySummary> summary = ReplayQuarantine(**accepting, run.store, options);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->records, 2);
  EXPECT_EQ(summary->replayed, 2);
  EXPECT_EQ(summary->batches, 1);
  EXPECT_EQ(run.store.calls(StoreCall::kCommit), commits + 3);
  for (const QuarantineRecord& r : run.Read()->ListQuarantine({}).value().rows) {
    EXPECT_EQ(r.status, QuarantineStatus::kReplayed) << r.id;
  }
}

}  // namespace evident
