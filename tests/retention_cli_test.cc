// `evident store retain` driven as a user runs it: SIGKILLed around each commit and at random
// times, every record stays in the store or in the archive (never in neither) and a last run
// ends with the store holding only what the horizon keeps; and retention running beside
// `evident consume` on the same SQLite store, both ending 0 with every event decided once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>

#include "evident/clock.h"
#include "evident/store.h"
#include "evident/store_sqlite.h"
#include "run_process.h"
#include "store/postgres/test_database.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kJournal = 1500;         // journal entries, all a day old
constexpr int kSent = 300;             // sent outbox rows, a day old
constexpr int kReceipts = 300;         // applied receipts, a day old
constexpr int kIntents = 200;          // effect intents settled a day ago, of seven subjects
constexpr size_t kFilledKept = 1 + 7;  // the newest journal entry, each subject's latest intent
constexpr int64_t kDayMs = 86'400'000;

class RetentionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("retention-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  // A path is a SQLite file; anything with a scheme is a store URI already.
  static std::string Uri(const std::string& db) {
    return db.find("://") != std::string::npos || db.rfind("sqlite:", 0) == 0 ? db : "sqlite:" + db;
  }

  // A store of a day-old journal and receipts, and eight-day-old sent outbox rows (`db`: a
  // SQLite file, or a store URI with its scheme).
  void Fill(const std::string& db) {
    std::unique_ptr<Store> store = std::move(OpenStore(Uri(db))).value();
    auto tx = std::move(store->Begin()).value();
    const int64_t day_ago = SystemClock().NowMs() - kDayMs;
    // Sent past a relay's default --keep-sent (7d): a relay that deletes them itself would.
    const int64_t week_ago = day_ago - 7 * kDayMs;
    for (int i = 0; i < kJournal; ++i) {
      ASSERT_TRUE(tx->Journal(JournalEntry{.consumer = "c",
                                           .outcome = Outcome::kApplied,
                                           .source = "s",
                                           .event_id = "e" + std::to_string(i),
                                           .subject = "order-" + std::to_string(i % 7),
                                           .at_ms = day_ago})
                      .ok());
    }
    for (int i = 0; i < kSent; ++i) {
      const OutboxAppend row =
          std::move(tx->AppendOutbox(OutboxRow{.source = "s",
                                               .event_id = "o" + std::to_string(i),
                                               .type = "t",
                                               .subject = "order-1",
                                               .bytes = R"({"n":)" + std::to_string(i) + "}",
                                               .created_at_ms = week_ago}))
              .value();
      ASSERT_TRUE(tx->MarkOutboxSent(row.seq, "S", i, week_ago).ok());
    }
    for (int i = 0; i < kReceipts; ++i) {
      LedgerEntry e{.consumer = "c", .source = "s", .event_id = "r" + std::to_string(i)};
      e.subject = "order-" + std::to_string(i % 7);
      e.committed_at_ms = day_ago;
      ASSERT_EQ(std::move(tx->InsertLedger(e)).value(), Insert::kInserted);
    }
    for (int i = 0; i < kIntents; ++i) {
      const EffectIntent e{.key = "reserve:" + std::to_string(i),
                           .effect = "reserve-stock",
                           .consumer = "c",
                           .subject = "order-" + std::to_string(i % 7),
                           .source = "s",
                           .event_id = "i" + std::to_string(i),
                           .request = R"({"id":"i"})",
                           .state = EffectState::kDone,
                           .intended_at_ms = day_ago,
                           .settled_at_ms = day_ago};
      ASSERT_EQ(std::move(tx->InsertIntent(e)).value(), Insert::kInserted);
    }
    ASSERT_TRUE(tx->Commit().ok());
  }

  // The journal entries', receipts', intents' and outbox rows' ids the store still holds (a
  // receipt or an intent kept as a digest is not).
  std::set<std::string> InStore(const std::string& db) {
    std::set<std::string> out;
    std::unique_ptr<Store> store = std::move(OpenStore(Uri(db), {.read_only = true})).value();
    auto snapshot = std::move(store->Read()).value();
    for (int s = 0; s < 7; ++s) {
      for (const JournalEntry& j :
           std::move(snapshot->JournalOf("c", "order-" + std::to_string(s))).value().rows) {
        out.insert("journal:" + j.event_id);
      }
      for (const LedgerEntry& e :
           std::move(snapshot->LedgerOf("c", "order-" + std::to_string(s))).value().rows) {
        out.insert("ledger:" + e.event_id);
      }
    }
    for (const OutboxRow& o : std::move(snapshot->OutboxRows(OutboxSelect::kAll, 0)).value().rows) {
      out.insert("outbox:" + o.event_id);
    }
    EffectFilter of_c;
    of_c.consumer = "c";
    for (const EffectIntent& e : std::move(snapshot->ListIntents(of_c, 0, 1000)).value().rows) {
      out.insert("intent:" + e.event_id);
    }
    return out;
  }

  // The same of the archive. A kill inside a large write(2) may cut the run's last line short
  // (the kernel stops a write early for a killed process; that batch was never synced, so its
  // records are still in the store); the next run ends it with a newline. Such a line is the
  // start of a whole one, and there is at most one per killed run (`cut_lines_max`).
  std::set<std::string> InArchive(const std::string& path, int cut_lines_max = 0) {
    std::set<std::string> out;
    std::ifstream in(path);
    simdjson::dom::parser parser;
    int cut = 0;
    for (std::string line; std::getline(in, line);) {
      simdjson::dom::element e;
      if (parser.parse(line).get(e) != simdjson::SUCCESS) {
        EXPECT_TRUE(line.starts_with("{")) << "not a cut record: " << line;
        EXPECT_LE(++cut, cut_lines_max) << "more cut lines than killed runs: " << line;
        continue;
      }
      std::string_view kind, id;
      EXPECT_EQ(e["retained"].get(kind), simdjson::SUCCESS);
      EXPECT_EQ(e["record"]["id"].get(id), simdjson::SUCCESS) << line;
      out.insert(std::string(kind) + ":" + std::string(id));
    }
    return out;
  }

  std::vector<std::string> RetainArgs(const std::string& db, const std::string& archive) {
    return {EVIDENT_BINARY, "store",     "retain", "--store",           Uri(db), "--older-than",
            "1h",           "--archive", archive,  "--batch-count-max", "50"};
  }

  // The orders example `copies` times over, with distinct event ids and subjects per copy.
  static void WriteCopies(const std::string& path, int copies) {
    std::ifstream example(SourcePath("examples/orders/events.ndjson"));
    std::vector<std::string> lines;
    for (std::string line; std::getline(example, line);) lines.push_back(line);
    std::ofstream out(path);
    for (int copy = 0; copy < copies; ++copy) {
      for (const std::string& line : lines) {
        std::string changed = line;
        for (const char* key : {"\"id\":\"", "\"subject\":\""}) {
          const size_t at = changed.find(key);
          if (at != std::string::npos) {
            changed.insert(at + std::strlen(key), std::to_string(copy) + "-");
          }
        }
        out << changed << "\n";
      }
    }
  }

  fs::path dir_;
};

// On SQLite and on PostgreSQL (the tests' server, a schema of this test's own).
class RetentionKill : public RetentionCli, public ::testing::WithParamInterface<std::string> {
 protected:
  std::string StoreUri() {
    if (GetParam() == "sqlite") return Path("store.db");
    Result<std::string> uri = FreshPostgresSchema("retention_kill");
    EXPECT_TRUE(uri.ok()) << uri.status().ToString();
    return uri.ok() ? *uri : std::string("postgresql://unavailable");
  }
};

TEST_P(RetentionKill, KilledAnywhereEveryRecordIsInTheStoreOrTheArchive) {
  const std::string db = StoreUri(), archive = Path("archive.ndjson");
  Fill(db);
  std::set<std::string> all = InStore(db);
  ASSERT_EQ(all.size(), static_cast<size_t>(kJournal + kSent + kReceipts + kIntents));
  int killed = 0;
  const auto check = [&](const std::string& when) {
    const std::set<std::string> store = InStore(db), archived = InArchive(archive, killed);
    for (const std::string& record : all) {
      EXPECT_TRUE(store.count(record) > 0 || archived.count(record) > 0)
          << record << " is in neither, " << when;
    }
  };
  int runs = 0;
  // 46 batches in all (1,500 + 200 + 300 + 300 records, 50 a batch): the points below leave 24
  // to the random kills.
  for (const char* fault : {"before-commit:1", "after-commit:1", "before-commit:5",
                            "after-commit:9", "before-commit:6", "after-commit:3"}) {
    const int status = RunAndKill(RetainArgs(db, archive), fault, -1, Path("retain.log"));
    EXPECT_TRUE(Killed(status)) << fault << ": " << EndedBy(status);
    check(std::string("after a kill at ") + fault);
    ++runs;
  }
  std::mt19937_64 rng(4848);
  for (int kill = 0; kill < 6; ++kill) {
    const int64_t after_us = std::uniform_int_distribution<int64_t>(5'000, 200'000)(rng);
    const int status = RunAndKill(RetainArgs(db, archive), "", after_us, Path("retain.log"));
    EXPECT_TRUE(Killed(status) || Finished(status)) << EndedBy(status);
    if (Killed(status)) ++killed;
    check("after a kill at " + std::to_string(after_us) + " us");
  }
  const ProcessResult last = RunProcess(RetainArgs(db, archive));
  ASSERT_EQ(last.exit_code, 0) << last.err;
  check("at the end");
  // Only the newest journal entry stays (its seq is never given again), and the latest intent of
  // each subject; every receipt is a digest, still there for a redelivery, and every other
  // intent's key too.
  const std::set<std::string> left = InStore(db);
  std::set<std::string> want = {"journal:e" + std::to_string(kJournal - 1)};
  for (int i = kIntents - 7; i < kIntents; ++i) want.insert("intent:i" + std::to_string(i));
  EXPECT_EQ(left, want);
  {
    std::unique_ptr<Store> store = std::move(OpenStore(Uri(db))).value();
    auto tx = std::move(store->Begin()).value();
    for (int i = 0; i < kReceipts; ++i) {
      const std::optional<LedgerEntry> found =
          std::move(tx->FindLedger("c", "s", "r" + std::to_string(i))).value();
      ASSERT_TRUE(found.has_value() && found->retained) << "r" << i;
    }
    for (int i = 0; i < kIntents - 7; ++i) {
      const std::string key = "reserve:" + std::to_string(i);
      const std::optional<EffectIntent> found = std::move(tx->FindIntent(key)).value();
      ASSERT_TRUE(found.has_value() && found->retained) << key;
      EXPECT_EQ(std::move(tx->InsertIntent(EffectIntent{.key = key})).value(),
                Insert::kAlreadyThere);
    }
    ASSERT_TRUE(tx->Rollback().ok());
  }
  EXPECT_EQ(InArchive(archive, killed).size(), all.size() - want.size());
  // The evidence of a subject says what retention removed.
  const ProcessResult evidence =
      RunProcess({EVIDENT_BINARY, "evidence", "order-1", "--store", Uri(db)});
  EXPECT_NE(evidence.out.find("Retention: what settled before"), std::string::npos)
      << evidence.out << evidence.err;
  EXPECT_NE(evidence.out.find("archived to " + archive), std::string::npos) << evidence.out;
}

INSTANTIATE_TEST_SUITE_P(Backends, RetentionKill, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& backend) { return backend.param; });

// The decision table of a consume's report (its lines from the header on): what each consumer
// decided, without the timing line above it.
std::string DecisionTable(const std::string& report) {
  const size_t at = report.find("consumer ");
  return at == std::string::npos ? "no table in: " + report : report.substr(at);
}

// Receipts past the horizon become digests on SQLite and PostgreSQL: the same input consumed
// again is decided exactly as it is against a store that kept every receipt (every applied
// event a duplicate); once the digests are forgotten, the applied events are decided afresh.
TEST_P(RetentionKill, ARetainedReceiptStillAnswersDuplicateUntilItsDigestIsForgotten) {
  const std::string input = Path("orders.ndjson");
  WriteCopies(input, 3);
  const auto consume = [&](const std::string& db) {
    return RunProcess({EVIDENT_BINARY, "consume", "--config",
                       SourcePath("examples/orders/evident.yaml"), "--store", Uri(db), "--input",
                       input});
  };
  const std::string control = Path("control.db"), db = StoreUri();
  for (const std::string& store : {control, db}) {
    const ProcessResult first = consume(store);
    ASSERT_EQ(first.exit_code, 0) << first.err;
  }
  ::usleep(5'000);
  const ProcessResult retained = RunProcess({EVIDENT_BINARY, "store", "retain", "--store", Uri(db),
                                             "--older-than", "1ms", "--format", "json"});
  ASSERT_EQ(retained.exit_code, 0) << retained.err;
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.parse(retained.out).get(summary), simdjson::SUCCESS) << retained.out;
  int64_t receipts = 0;
  ASSERT_EQ(summary["removed"]["ledger"].get(receipts), simdjson::SUCCESS) << retained.out;
  // Every applied receipt of three copies but those of a subject whose effect intent was never
  // run (effects run is not part of this test): they stay, as the rule says.
  EXPECT_GE(receipts, 3 * 5) << retained.out;
  const ProcessResult again = consume(db), control_again = consume(control);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  ASSERT_EQ(control_again.exit_code, 0) << control_again.err;
  EXPECT_EQ(DecisionTable(again.out), DecisionTable(control_again.out));
  EXPECT_NE(DecisionTable(again.out).find(" duplicate "), std::string::npos);

  // Digests keep the second their receipt was committed in: one second later they can go.
  ::sleep(1);
  const ProcessResult forgot = RunProcess({EVIDENT_BINARY, "store", "retain", "--store", Uri(db),
                                           "--older-than", "1ms", "--forget-ledger-after", "1ms"});
  ASSERT_EQ(forgot.exit_code, 0) << forgot.err;
  const size_t at = forgot.out.find("forgot ");
  ASSERT_NE(at, std::string::npos) << forgot.out;
  EXPECT_GE(std::atoll(forgot.out.c_str() + at + 7), receipts) << forgot.out;
  // The evidence says that digests were forgotten, and from when.
  const ProcessResult evidence =
      RunProcess({EVIDENT_BINARY, "evidence", "0-order-417", "--store", Uri(db)});
  EXPECT_NE(evidence.out.find("Retention forgot the ledger digests of receipts committed before"),
            std::string::npos)
      << evidence.out << evidence.err;
  const ProcessResult third = consume(db), control_third = consume(control);
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_NE(DecisionTable(third.out), DecisionTable(control_third.out))
      << "forgotten keys are decided afresh: " << third.out;
}

// An earlier intent of a subject's effect, settled a day ago, goes archived whole and leaves
// its key's digest; `effects show` says so, `effects resolve` refuses it as settled, and the
// latest intent of that effect stays whole.
TEST_P(RetentionKill, AnEarlierIntentLeavesItsKeyAndTheLatestStaysWhole) {
  const std::string db = StoreUri(), archive = Path("archive.ndjson");
  {
    std::unique_ptr<Store> store = std::move(OpenStore(Uri(db))).value();
    auto tx = std::move(store->Begin()).value();
    const int64_t day_ago = SystemClock().NowMs() - kDayMs;
    for (const char* version : {"1", "2"}) {
      const std::string key = std::string("reserve:order-1:v") + version;
      EffectIntent e{.key = key,
                     .effect = "reserve-stock",
                     .consumer = "fulfillment",
                     .subject = "order-1",
                     .source = "s",
                     .event_id = std::string("e") + version,
                     .request = R"({"id":"e1"})",
                     .state = EffectState::kDone,
                     .intended_at_ms = day_ago,
                     .settled_at_ms = day_ago};
      ASSERT_EQ(std::move(tx->InsertIntent(e)).value(), Insert::kInserted);
    }
    ASSERT_TRUE(tx->Commit().ok());
  }
  const ProcessResult retained =
      RunProcess({EVIDENT_BINARY, "store", "retain", "--store", Uri(db), "--older-than", "1h",
                  "--archive", archive, "--format", "json"});
  ASSERT_EQ(retained.exit_code, 0) << retained.err;
  EXPECT_NE(retained.out.find(R"("intent":1)"), std::string::npos) << retained.out;
  EXPECT_EQ(InArchive(archive), std::set<std::string>{"intent:e1"});
  const auto show = [&](const char* key, const char* format) {
    return RunProcess(
        {EVIDENT_BINARY, "effects", "show", key, "--store", Uri(db), "--format", format});
  };
  const ProcessResult text = show("reserve:order-1:v1", "text");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(
      text.out.starts_with("reserve:order-1:v1  done  reserve-stock  fulfillment  "
                           "removed by retention (settled in the second of "))
      << text.out;
  const ProcessResult json = show("reserve:order-1:v1", "json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find(R"("state":"done","settled_at":")"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find(R"("retained":true)"), std::string::npos) << json.out;
  const ProcessResult latest = show("reserve:order-1:v2", "json");
  ASSERT_EQ(latest.exit_code, 0) << latest.err;
  EXPECT_EQ(latest.out.find("retained"), std::string::npos) << latest.out;
  EXPECT_NE(latest.out.find(R"("id":"e2")"), std::string::npos) << latest.out;
  const ProcessResult resolve =
      RunProcess({EVIDENT_BINARY, "effects", "resolve", "reserve:order-1:v1", "--store", Uri(db),
                  "--outcome", "failed", "--by", "ops", "--note", "checked"});
  EXPECT_EQ(resolve.exit_code, 1) << resolve.out << resolve.err;
  EXPECT_NE(resolve.err.find("is already done (removed by retention"), std::string::npos)
      << resolve.err;
  // A second run finds nothing more: the latest intent stays however old.
  const ProcessResult again = RunProcess({EVIDENT_BINARY, "store", "retain", "--store", Uri(db),
                                          "--older-than", "1h", "--format", "json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find(R"("intent":0)"), std::string::npos) << again.out;
}

// The store's rows per table but the journal (which retention shortens).
std::map<std::string, int64_t> Decided(const std::string& db) {
  std::unique_ptr<Store> store = std::move(OpenSqliteStore(db, {.read_only = true})).value();
  std::map<std::string, int64_t> out;
  for (const auto& [table, rows] : std::move(std::move(store->Read()).value()->Counts()).value()) {
    if (table != "journal") out[table] = rows;
  }
  return out;
}

// Retention beside a consume of the orders example many times over (distinct ids): both end 0,
// and the consume decides exactly what it decides alone.
TEST_F(RetentionCli, RunsBesideConsumeOnTheSameStore) {
  const std::string input = Path("orders.ndjson");
  WriteCopies(input, 400);
  const auto consume = [&](const std::string& db) -> std::vector<std::string> {
    return {EVIDENT_BINARY,      "consume",
            "--config",          SourcePath("examples/orders/evident.yaml"),
            "--store",           "sqlite:" + db,
            "--input",           input,
            "--batch-count-max", "20"};
  };
  const ProcessResult alone = RunProcess(consume(Path("alone.db")));
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const std::string db = Path("beside.db");
  Fill(db);
  const pid_t child = StartProcess(consume(db), {});
  ASSERT_GT(child, 0);
  int retains = 0, status = 0;
  while (::waitpid(child, &status, WNOHANG) == 0) {
    const ProcessResult r = RunProcess(RetainArgs(db, Path("archive.ndjson")));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ++retains;
  }
  EXPECT_TRUE(Finished(status)) << EndedBy(status);
  EXPECT_GE(retains, 1);
  std::map<std::string, int64_t> want = Decided(Path("alone.db")), got = Decided(db);
  EXPECT_GT(want["ledger"], 1000);
  want["effect"] += 7;  // the filled intents each subject's latest of which stays
  EXPECT_EQ(got, want);
}

// Receipts compacted into digests while a consume goes on: a store holds a first consume of
// the input; one retention run compacts its receipts, then a second consume delivers every
// event of the input twice more while `store retain --older-than 1ms` runs in a loop beside it
// (compacting what it applies as it goes). It decides exactly what the same second consume
// decides against a store that kept every receipt: every redelivery answered by a digest as by a
// receipt.
TEST_F(RetentionCli, CompactingReceiptsBesideConsumeChangesNoDecision) {
  const std::string first = Path("first.ndjson"), again = Path("again.ndjson");
  WriteCopies(first, 200);
  {
    std::ifstream once(first);
    const std::string all((std::istreambuf_iterator<char>(once)), std::istreambuf_iterator<char>());
    std::ofstream(again) << all << all;
  }
  const auto consume = [&](const std::string& db,
                           const std::string& input) -> std::vector<std::string> {
    return {EVIDENT_BINARY,      "consume",
            "--config",          SourcePath("examples/orders/evident.yaml"),
            "--store",           "sqlite:" + db,
            "--input",           input,
            "--batch-count-max", "20"};
  };
  const auto retain = [&](const std::string& db) {
    const ProcessResult r = RunProcess({EVIDENT_BINARY, "store", "retain", "--store",
                                        "sqlite:" + db, "--older-than", "1ms", "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    simdjson::dom::parser parser;
    int64_t receipts = -1;
    EXPECT_EQ(parser.parse(r.out)["removed"]["ledger"].get(receipts), simdjson::SUCCESS) << r.out;
    return receipts;
  };
  const std::string db = Path("beside.db");
  for (const std::string& store : {Path("alone.db"), db}) {
    const ProcessResult r = RunProcess(consume(store, first));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const ProcessResult alone = RunProcess(consume(Path("alone.db"), again));
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  ::usleep(2'000);
  EXPECT_GT(retain(db), 0) << "the first consume's receipts are compacted before the second";
  const std::string report = Path("beside.out");
  const int out = ::open(report.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(out, 0);
  const pid_t child = StartProcess(consume(db, again), {.out = out});
  ::close(out);
  ASSERT_GT(child, 0);
  int status = 0, retains = 0;
  while (::waitpid(child, &status, WNOHANG) == 0) {
    EXPECT_GE(retain(db), 0);
    ++retains;
  }
  EXPECT_TRUE(Finished(status)) << EndedBy(status);
  std::ifstream beside(report);
  const std::string text((std::istreambuf_iterator<char>(beside)),
                         std::istreambuf_iterator<char>());
  EXPECT_EQ(DecisionTable(text), DecisionTable(alone.out)) << retains << " runs beside";
  EXPECT_NE(DecisionTable(text).find(" duplicate "), std::string::npos);
}

// The intents' states and the open quarantine records of a store: what effects run and
// quarantine replay decided, which retention must not change (it removes only settled
// records: replayed or discarded ones, and the logs of settled intents).
struct Outcomes {
  std::map<std::string, std::string> intents;  // key -> state
  std::set<int64_t> open_records;
  bool operator==(const Outcomes&) const = default;
};
Outcomes OutcomesOf(const std::string& db) {
  std::unique_ptr<Store> store = std::move(OpenSqliteStore(db, {.read_only = true})).value();
  auto snapshot = std::move(store->Read()).value();
  Outcomes out;
  for (const EffectIntent& e : std::move(snapshot->ListIntents(EffectFilter{})).value().rows) {
    out.intents[e.key] = std::string(EffectStateName(e.state));
  }
  QuarantineFilter open;
  open.status = QuarantineStatus::kOpen;
  for (const QuarantineRecord& r :
       std::move(snapshot->ListQuarantine(open, QuarantineCursor{})).value().rows) {
    out.open_records.insert(r.id);
  }
  return out;
}

// Retention in a loop beside `evident effects run` and `evident quarantine replay` on one
// store: each ends as it does without retention, with the same intents' states and the same
// open records.
TEST_F(RetentionCli, RunsBesideEffectsRunAndQuarantineReplay) {
  WriteCopies(Path("orders.ndjson"), 100);
  const pid_t downstream = StartProcess({EVIDENT_DOWNSTREAM, "--listen", "127.0.0.1:0",
                                         "--port-file", Path("port"), "--answer", "=200"},
                                        {});
  ASSERT_GT(downstream, 0);
  std::string port;
  for (int i = 0; i < 500 && port.empty(); ++i) {
    ::usleep(10'000);
    std::ifstream in(Path("port"));
    std::getline(in, port);
  }
  ASSERT_FALSE(port.empty());
  ::setenv("STOCK_SERVICE_URL", ("http://127.0.0.1:" + port + "/reservations").c_str(), 1);
  ::setenv("STOCK_RELEASE_URL", ("http://127.0.0.1:" + port + "/releases").c_str(), 1);
  const std::string config = SourcePath("examples/orders/evident.yaml");
  const auto work = [&](const std::string& db) -> std::vector<std::vector<std::string>> {
    return {{EVIDENT_BINARY, "effects", "run", "--config", config, "--store", "sqlite:" + db,
             "--until-idle", "1"},
            {EVIDENT_BINARY, "quarantine", "replay", "--all", "--config", config, "--store",
             "sqlite:" + db, "--by", "ops", "--note", "retention test"}};
  };
  for (const std::string& db : {Path("alone.db"), Path("beside.db")}) {
    const ProcessResult consumed =
        RunProcess({EVIDENT_BINARY, "consume", "--config", config, "--store", "sqlite:" + db,
                    "--input", Path("orders.ndjson")});
    ASSERT_EQ(consumed.exit_code, 0) << consumed.err;
  }
  std::vector<int> alone_exits;
  for (const auto& argv : work(Path("alone.db"))) alone_exits.push_back(RunProcess(argv).exit_code);
  std::vector<pid_t> children;
  for (const auto& argv : work(Path("beside.db"))) children.push_back(StartProcess(argv, {}));
  std::vector<int> beside_exits;
  int retains = 0;
  for (const pid_t child : children) {
    int status = 0;
    while (::waitpid(child, &status, WNOHANG) == 0) {
      const ProcessResult r =
          RunProcess({EVIDENT_BINARY, "store", "retain", "--store", "sqlite:" + Path("beside.db"),
                      "--older-than", "1ms", "--batch-count-max", "20"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      ++retains;
    }
    beside_exits.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  ::kill(downstream, SIGTERM);
  ::waitpid(downstream, nullptr, 0);
  EXPECT_EQ(beside_exits, alone_exits);
  EXPECT_EQ(alone_exits, (std::vector<int>{0, 1}));  // the replayed inputs are refused again
  EXPECT_GE(retains, 1);
  const Outcomes alone = OutcomesOf(Path("alone.db")), beside = OutcomesOf(Path("beside.db"));
  EXPECT_GT(alone.intents.size(), 100u);
  EXPECT_GT(alone.open_records.size(), 100u);
  EXPECT_TRUE(alone == beside);
}

// The configuration's `retention:` applied by the long-running commands themselves, on the
// same SQLite store: a consume reading a FIFO that stays open, and a relay that keeps running,
// each remove what is settled (archived first) while they run, and say so on standard error.
class ConfiguredRetention : public RetentionCli {
 protected:
  // The orders example's configuration (its contracts directory absolute) with a retention of
  // every kind older than an hour, every 100 ms, archived to archive.ndjson beside it.
  std::string WriteConfig() {
    std::ifstream example(SourcePath("examples/orders/evident.yaml"));
    std::string text((std::istreambuf_iterator<char>(example)), std::istreambuf_iterator<char>());
    const std::string relative = "contracts: contracts";
    const size_t at = text.find(relative);
    EXPECT_NE(at, std::string::npos);
    text.replace(at, relative.size(), "contracts: " + SourcePath("examples/orders/contracts"));
    text += "retention:\n  every: 100ms\n  older_than: 1h\n  archive: archive.ndjson\n";
    const std::string path = Path("evident.yaml");
    std::ofstream(path) << text;
    return path;
  }

  // The records Fill wrote (the command beside retention writes its own).
  static std::set<std::string> Filled() {
    std::set<std::string> filled;
    for (int i = 0; i < kJournal; ++i) filled.insert("journal:e" + std::to_string(i));
    for (int i = 0; i < kSent; ++i) filled.insert("outbox:o" + std::to_string(i));
    for (int i = 0; i < kReceipts; ++i) filled.insert("ledger:r" + std::to_string(i));
    for (int i = 0; i < kIntents; ++i) filled.insert("intent:i" + std::to_string(i));
    return filled;
  }

  // How many filled records the store still holds.
  size_t FilledLeft(const std::string& db) {
    const std::set<std::string> filled = Filled();
    size_t left = 0;
    for (const std::string& record : InStore(db)) left += filled.count(record);
    return left;
  }

  // Waits (up to 60 s) until the store holds at most `kept` of the filled records (the newest
  // journal entry stays while it is the newest, and each subject's latest intent:
  // kFilledKept); true when it came to that.
  bool WaitRetained(const std::string& db, size_t kept) {
    for (int i = 0; i < 600; ++i) {
      if (FilledLeft(db) <= kept) return true;
      SystemClock().SleepMs(100);
    }
    return false;
  }

  // Every filled record is in the store or in the archive, and the archive holds only those.
  void ExpectAllArchived(const std::string& db) {
    const std::set<std::string> archived = InArchive(Path("archive.ndjson")), left = InStore(db);
    for (const std::string& record : Filled()) {
      EXPECT_TRUE(archived.count(record) > 0 || left.count(record) > 0) << record;
    }
    for (const std::string& record : archived) EXPECT_EQ(Filled().count(record), 1u) << record;
  }

  static int WaitExit(pid_t pid) {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
};

TEST_F(ConfiguredRetention, ALongRunningConsumeRemovesWhatSettledBesideItsWork) {
  const std::string db = Path("store.db");
  Fill(db);
  const std::string config = WriteConfig();
  const std::string fifo = Path("events.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int err = ::open(Path("consume.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(err, 0);
  const pid_t pid =
      StartProcess({EVIDENT_BINARY, "consume", "--config", config, "--store", "sqlite:" + db,
                    "--input", fifo, "--outcomes", Path("outcomes.ndjson")},
                   {.err = err});
  ::close(err);
  ASSERT_GT(pid, 0);
  // The consumer opens the FIFO to read it; until then a writer's open fails (ENXIO).
  int input = -1;
  for (int i = 0; i < 2000 && input < 0; ++i) {
    input = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (input < 0) SystemClock().SleepMs(10);
  }
  ASSERT_GE(input, 0) << "the consumer did not open its input in 20 s";
  ASSERT_EQ(::fcntl(input, F_SETFL, 0), 0);  // blocking writes from here
  const std::string events = Read(SourcePath("examples/orders/events.ndjson"));
  ASSERT_EQ(::write(input, events.data(), events.size()), static_cast<ssize_t>(events.size()));
  // The consume's own journal entries are new: only the filled ones are past the horizon.
  const bool retained = WaitRetained(db, kFilledKept);
  ::close(input);  // the input ends: the consume finishes
  EXPECT_EQ(WaitExit(pid), 0) << Read(Path("consume.err"));
  EXPECT_TRUE(retained) << FilledLeft(db) << " filled records left";
  ExpectAllArchived(db);
  // Every event decided: a line per decision (a drained deferral is reported again).
  EXPECT_GE(Lines(Read(Path("outcomes.ndjson"))).size(), Lines(events).size());
  EXPECT_NE(Read(Path("consume.err")).find("evident consume: retention removed "),
            std::string::npos)
      << Read(Path("consume.err"));
}

TEST_F(ConfiguredRetention, ARelayThatKeepsRunningRemovesWhatSettled) {
  const std::string db = Path("store.db");
  Fill(db);
  const std::string config = WriteConfig();
  const int err = ::open(Path("relay.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(err, 0);
  const pid_t pid = StartProcess({EVIDENT_BINARY, "relay", "--store", "sqlite:" + db, "--to",
                                  "file:" + Path("sent.ndjson"), "--config", config},
                                 {.err = err});
  ::close(err);
  ASSERT_GT(pid, 0);
  const bool retained = WaitRetained(db, kFilledKept);
  ::kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid), 0) << Read(Path("relay.err"));
  EXPECT_TRUE(retained) << FilledLeft(db) << " filled records left";
  ExpectAllArchived(db);
  EXPECT_NE(Read(Path("relay.err"))
                .find("evident relay: retention removed 2292 (journal 1499, intent 193, "
                      "outbox 300, ledger 300), archived first to " +
                      Path("archive.ndjson")),
            std::string::npos)
      << Read(Path("relay.err"));
}

// With --once the relay runs no retention: it deletes sent rows past --keep-sent (7d) itself,
// as without --config (a relay from cron must not leave its outbox to a timer that never runs).
TEST_F(ConfiguredRetention, ARelayRunOnceDeletesItsSentRowsItself) {
  const std::string db = Path("store.db");
  Fill(db);
  const ProcessResult once = RunProcess({EVIDENT_BINARY, "relay", "--store", "sqlite:" + db, "--to",
                                         "file:" + Path("sent.ndjson"), "--config", WriteConfig(),
                                         "--once", "--progress", "never"});
  ASSERT_EQ(once.exit_code, 0) << once.err;
  EXPECT_NE(once.err.find("300 sent rows deleted"), std::string::npos) << once.err;
  EXPECT_EQ(once.err.find("retention removed"), std::string::npos) << once.err;
  // The journal, the receipts and the intents are not the relay's.
  EXPECT_EQ(FilledLeft(db), static_cast<size_t>(kJournal + kReceipts + kIntents));
}

}  // namespace
}  // namespace evident::testing
