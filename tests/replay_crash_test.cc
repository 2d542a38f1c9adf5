// kill -9 during `evident quarantine replay`: a store holds about 3,000 events of an ordered
// consumer quarantined as contract-update-required (consumed while the contract accepted schema
// version 1 only, the events carrying version 2); with the contract changed to accept [1, 2], a
// child `evident quarantine replay --all` is SIGKILLed at each fault point a replay passes
// (src/core/fault_point.h: around SQLite's COMMIT of a batch and around a WAL checkpoint), then at
// random times, and started again each time until a run exits 0. After every run the files the
// kill left must hold whole batches only (each replayed record with exactly one audit entry and
// one ledger row, no open record with either) and every outcome line written must be durable;
// at the end the store must equal the store of one uninterrupted replay of an identical starting
// store, read back through the Store API (wall-clock columns aside), with each event applied once.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string_view>

#include "evident/store_sqlite.h"
#include "paid_contracts.h"
#include "run_process.h"
#include "store_dump.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

// The input: kSubjects subjects with versions 1..kVersions each, interleaved, and in every
// kSwapEvery-th subject each tenth pair of versions swapped (the later one is deferred by the
// replay, then drained); and a subject whose version 1 never comes, so that its versions 2..
// kGapVersions stay deferred. Every event carries schema version 2.
constexpr int kSubjects = 12;
constexpr int kVersions = 250;
constexpr int kSwapEvery = 3;
constexpr int kGapVersions = 11;
constexpr const char* kGapSubject = "order-gap";
constexpr int64_t kRecords = int64_t{kSubjects} * kVersions + (kGapVersions - 1);
// The records the replay defers: the first of each swapped pair, and the gap subject's.
constexpr int64_t kDeferredRecords =
    (kSubjects + kSwapEvery - 1) / kSwapEvery * (kVersions / 10) + (kGapVersions - 1);
// Records per replay transaction.
constexpr int kBatchCountMax = 50;
// The random kills: at most kRandomKillsMax runs, each killed at a random time from half its
// start-up (measured on the reference store) to its start-up plus a step of the work of a whole
// replay (a sixteenth). A run often takes longer than that start-up to commit its first batch:
// while the WAL holds the 1,000 pages the WAL points left, each run recovers it on open and copies
// it again at its first commit (the WAL restarts only at a write after a checkpoint of the same
// process), so a kill that lands before any commit puts the next one a step later, until one
// commits. Kills land while the store opens, while it checkpoints and while records are
// replayed; the 1,700 records the fault runs leave took 14 to 20 kills, 11 to 16 of them after
// some progress and before the end (six runs on a loaded 2-core machine). At least
// kRandomKillsLandedMin must, or the test did not test much.
constexpr int kRandomKillsMax = 100;
constexpr int kRandomKillWorkDivisor = 16;
constexpr int kRandomKillsLandedMin = 3;

// The replay's fault points, in the order they are killed at. A batch meets the commit points
// once each. The WAL points are met by the commit that leaves checkpoint_wal_pages (1,000) in
// the WAL: a batch of 50 of these records writes about 40 pages (Padding), less than
// checkpoint_thread_commit_pages, so the committing connection checkpoints, after about 1,250
// records of a new WAL (measured). A killed run leaves its WAL to the next, which therefore
// meets before-wal-checkpoint after about 1,000 records once the commit points took 300; a kill
// there leaves a WAL of 1,000 pages, which the next run checkpoints at its first commit (a
// restarted connection cannot know what was copied before, so the WAL does not restart until a
// checkpoint copies it again), where after-wal-checkpoint kills it. That leaves about 1,700
// records to the random kills.
struct FaultCase {
  const char* point;
  int hit;
};
constexpr FaultCase kFaultCases[] = {{"before-commit", 1},         {"after-commit", 1},
                                     {"before-commit", 3},         {"after-commit", 3},
                                     {"before-wal-checkpoint", 1}, {"after-wal-checkpoint", 1}};

std::string Subject(int s) { return "order-" + std::to_string(s); }
bool Swapped(int s, int v) { return s % kSwapEvery == 0 && v % 10 == 1 && v < kVersions; }

// A note in each event's data: longer quarantine rows, so that a batch's status updates touch
// more pages and a WAL checkpoint comes within the first half of the records.
std::string Padding() { return R"(,"note":")" + std::string(400, 'x') + "\""; }

std::vector<std::string> MakeEvents() {
  std::vector<std::string> lines;
  const std::string padding = Padding();
  for (int v = 1; v <= kVersions; ++v) {
    for (int s = 0; s < kSubjects; ++s) {
      // A swapped pair: version v+1 takes v's place in the input, v takes v+1's.
      int version = v;
      if (Swapped(s, v)) version = v + 1;
      if (v > 1 && Swapped(s, v - 1)) version = v - 1;
      lines.push_back(
          Paid(Subject(s) + "-v" + std::to_string(version), version, 2, Subject(s), padding));
    }
    if (v < kGapVersions) {
      lines.push_back(Paid(std::string(kGapSubject) + "-v" + std::to_string(v + 1), v + 1, 2,
                           kGapSubject, padding));
    }
  }
  return lines;
}

// Opens the store file read-only without checkpointing its WAL on close: the Store API would
// copy the WAL into the database and remove it, so the next run would not meet the WAL the
// kill left behind.
class RawStore {
 public:
  explicit RawStore(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "cannot open " << path << ": " << sqlite3_errmsg(db_);
    }
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  }
  ~RawStore() { sqlite3_close(db_); }
  RawStore(const RawStore&) = delete;
  RawStore& operator=(const RawStore&) = delete;

  // The integers of the first column of `sql`'s rows.
  std::vector<int64_t> Ints(const std::string& sql) {
    std::vector<int64_t> out;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
      return out;
    }
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) out.push_back(sqlite3_column_int64(stmt, 0));
    EXPECT_EQ(rc, SQLITE_DONE) << sql << ": " << sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    return out;
  }
  int64_t Int(const std::string& sql) {
    const std::vector<int64_t> rows = Ints(sql);
    return rows.size() == 1 ? rows[0] : -1;
  }

 private:
  sqlite3* db_ = nullptr;
};

// What the files of the store show after a run: the records replayed so far. Fails the test
// when they hold part of a batch: a replayed record without exactly one audit entry, an open
// record with one, or ledger rows that are not one per replayed record (each record of this
// input puts exactly one: applied, or deferred for the swapped and gap versions).
std::set<int64_t> CheckWholeBatches(const std::string& path, const std::string& run) {
  RawStore db(path);
  const std::vector<int64_t> replayed =
      db.Ints("SELECT id FROM quarantine WHERE status = 'replayed' ORDER BY id");
  EXPECT_EQ(db.Int("SELECT count(*) FROM quarantine WHERE status NOT IN ('open', 'replayed')"), 0)
      << run;
  EXPECT_EQ(db.Int("SELECT count(*) FROM quarantine q WHERE status = 'replayed' AND "
                   "(SELECT count(*) FROM quarantine_audit a WHERE a.record_id = q.id) != 1"),
            0)
      << run << ": a replayed record without exactly one audit entry";
  EXPECT_EQ(db.Int("SELECT count(*) FROM quarantine q JOIN quarantine_audit a "
                   "ON a.record_id = q.id WHERE q.status = 'open'"),
            0)
      << run << ": an open record has an audit entry (a batch's audit without its decisions)";
  EXPECT_EQ(db.Int("SELECT count(*) FROM ledger"), static_cast<int64_t>(replayed.size()))
      << run << ": the ledger is not one row per replayed record";
  // Records replay in first-seen order: the replayed ones are a prefix of the ids.
  if (!replayed.empty()) {
    EXPECT_EQ(db.Int("SELECT count(*) FROM quarantine WHERE status = 'open' AND id < " +
                     std::to_string(replayed.back())),
              0)
        << run << ": an open record before a replayed one";
  }
  return {replayed.begin(), replayed.end()};
}

// The quarantine ids of the whole outcome lines of a run (a killed run's last line may be torn:
// SIGKILL can cut a write short), each checked to say applied or deferred and replayed.
std::vector<int64_t> ReportedIds(const fs::path& path, bool may_tear) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  if (!may_tear && !text.empty()) {
    EXPECT_EQ(text.back(), '\n') << path << ": a run that was not killed left a torn last line";
  }
  simdjson::dom::parser parser;
  std::vector<int64_t> ids;
  const std::vector<std::string> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    simdjson::dom::element e;
    const simdjson::error_code parsed = parser.parse(lines[i]).get(e);
    if (parsed != simdjson::SUCCESS && may_tear && i + 1 == lines.size() && text.back() != '\n') {
      break;
    }
    EXPECT_EQ(parsed, simdjson::SUCCESS) << path << ": " << lines[i];
    if (parsed != simdjson::SUCCESS) continue;
    const std::string_view outcome = e["outcome"].get_string().value();
    EXPECT_TRUE(outcome == "applied" || outcome == "deferred") << lines[i];
    EXPECT_EQ(std::string(e["status"].get_string().value()), "replayed") << lines[i];
    ids.push_back(e["quarantine_id"].get_int64().value());
  }
  return ids;
}

// The replays over one store: each run writes its own outcomes file, checked as it ends.
class CrashingReplays {
 public:
  CrashingReplays(std::vector<std::string> argv, fs::path dir, std::string store)
      : argv_(std::move(argv)), dir_(std::move(dir)), store_(std::move(store)) {}

  // One run; returns its wait status after checking what the store and the outcomes hold.
  int Run(const std::string& fault, int64_t kill_after_us) {
    const std::string name = fault.empty() ? "random kill" : fault;
    const fs::path outcomes = dir_ / ("outcomes-" + std::to_string(runs_) + ".ndjson");
    std::vector<std::string> argv = argv_;
    argv.insert(argv.end(), {"--outcomes", outcomes.string()});
    const int status = RunAndKill(argv, fault, kill_after_us,
                                  (dir_ / ("run-" + std::to_string(runs_) + ".log")).string());
    const std::string run = "run " + std::to_string(runs_++) + " (" + name + ")";
    const std::set<int64_t> replayed = CheckWholeBatches(store_, run);
    EXPECT_GE(replayed.size(), replayed_) << run << ": fewer records replayed than before";
    progress_ = static_cast<int64_t>(replayed.size() - std::min(replayed.size(), replayed_));
    replayed_ = replayed.size();
    // Reported means durable, and no record is reported twice over all runs (one failure per
    // run, naming the first record).
    std::vector<int64_t> not_durable, again;
    for (const int64_t id : ReportedIds(outcomes, Killed(status))) {
      if (!replayed.contains(id)) not_durable.push_back(id);
      if (!reported_.insert(id).second) again.push_back(id);
    }
    EXPECT_TRUE(not_durable.empty())
        << run << " reported " << not_durable.size()
        << " record(s) before their batch was committed, the first " << not_durable.front();
    EXPECT_TRUE(again.empty()) << run << " reported " << again.size()
                               << " record(s) an earlier run reported, the first " << again.front();
    return status;
  }

  size_t replayed() const { return replayed_; }
  int64_t progress() const { return progress_; }  // records the last run replayed

 private:
  std::vector<std::string> argv_;
  fs::path dir_;
  std::string store_;
  int runs_ = 0;
  size_t replayed_ = 0;
  int64_t progress_ = 0;
  std::set<int64_t> reported_;
};

// The store at `path` through the read API: every subject of the input, the one consumer.
StoreRows ReadReplayedStore(const std::string& path) {
  DumpOptions options{.consumers = {kPaidConsumer}, .subjects = {kGapSubject}};
  for (int s = 0; s < kSubjects; ++s) options.subjects.push_back(Subject(s));
  return ReadStoreRows(path, options);
}

// Every record's audit, one text line per entry without its time, by record id.
std::vector<std::string> AuditLines(const std::string& path) {
  std::vector<std::string> out;
  auto store = OpenSqliteStore(path);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return out;
  auto snapshot = (*store)->Read().value();
  const Rows<QuarantineRecord> records = snapshot->ListQuarantine({}, {}, 2 * kRecords).value();
  EXPECT_FALSE(records.truncated);
  for (const QuarantineRecord& r : records.rows) {
    for (const QuarantineAudit& a : snapshot->AuditOf(r.id).value().rows) {
      out.push_back(Row()("record", a.record_id)("action", QuarantineActionName(a.action))(
                        "by", a.by)("note", a.note)("outcome", a.outcome)("reason", a.reason)(
                        "status_after", QuarantineStatusName(a.status_after))
                        .text());
    }
  }
  return out;
}

// The first line where two lists differ, or "" when they are equal.
std::string FirstLineDifference(const std::vector<std::string>& want,
                                const std::vector<std::string>& got) {
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    if (want[i] != got[i]) {
      return "line " + std::to_string(i) + ":\n  want " + want[i] + "\n  got  " + got[i];
    }
  }
  if (want.size() == got.size()) return "";
  return "want " + std::to_string(want.size()) + " lines, got " + std::to_string(got.size());
}

class ReplayCrash : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("evident-replay-crash-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_ = (dir_ / "evident.yaml").string();
    initial_ = (dir_ / "initial.db").string();
    crashed_ = (dir_ / "crashed.db").string();
    reference_ = (dir_ / "reference.db").string();
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);  // kept for a look when the test failed
  }

  // The starting store: every event quarantined under a contract of schema version 1 only,
  // nothing else written; then today's contract, which accepts [1, 2].
  void QuarantineEveryEvent() {
    WritePaidConfig(dir_, "[1]");
    std::ofstream input(dir_ / "events.ndjson");
    for (const std::string& line : MakeEvents()) input << line << '\n';
    input.close();
    ASSERT_TRUE(input.good());
    const ProcessResult consumed =
        RunEvident({"consume", "--config", config_, "--store", "sqlite:" + initial_, "--input",
                    (dir_ / "events.ndjson").string()});
    ASSERT_EQ(consumed.exit_code, 0) << consumed.err;
    {
      auto store = OpenSqliteStore(initial_).value();
      auto snapshot = store->Read().value();
      const QuarantineFilter refused = {.consumer = kPaidConsumer,
                                        .reason = "unaccepted-schema-version",
                                        .status = QuarantineStatus::kOpen};
      const Rows<QuarantineRecord> open =
          snapshot->ListQuarantine(refused, {}, 2 * kRecords).value();
      ASSERT_EQ(static_cast<int64_t>(open.rows.size()), kRecords);
      for (const auto& [table, rows] : snapshot->Counts().value()) {
        if (table != "quarantine") {
          EXPECT_EQ(rows, 0) << table;
        }
      }
    }
    // Closed by the last connection, the store has no WAL: the file is the whole store.
    ASSERT_FALSE(fs::exists(initial_ + "-wal"));
    fs::copy_file(initial_, crashed_);
    fs::copy_file(initial_, reference_);
    WritePaidConfig(dir_, "[1, 2]");
  }

  std::vector<std::string> ReplayArgv(const std::string& store) const {
    return {EVIDENT_BINARY,
            "quarantine",
            "replay",
            "--config",
            config_,
            "--store",
            "sqlite:" + store,
            "--all",
            "--by",
            "t",
            "--note",
            "n",
            "--batch-count-max",
            std::to_string(kBatchCountMax)};
  }

  // How long a run takes to start (process, configuration, store) and to replay every record.
  struct Timing {
    int64_t startup_us = 0, work_us = 0;
  };

  // The reference: one uninterrupted replay; then a second, which finds nothing left open and
  // measures the start-up alone.
  Timing ReplayReference() {
    const auto timed = [&](const std::string& want_summary) {
      const auto start = std::chrono::steady_clock::now();
      const ProcessResult r = RunProcess(ReplayArgv(reference_));
      const auto took = std::chrono::steady_clock::now() - start;
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.out.find(want_summary), std::string::npos) << r.out;
      return std::chrono::duration_cast<std::chrono::microseconds>(took).count();
    };
    const std::string records = std::to_string(kRecords);
    const int64_t whole_us =
        timed(records + " record(s): " + records + " replayed, 0 duplicate, 0 refused again");
    const int64_t startup_us = timed("0 record(s): 0 replayed, 0 duplicate, 0 refused again");
    return {startup_us, std::max<int64_t>(whole_us - startup_us, 1000)};
  }

  // The crashed store equals the reference's in every table the replay writes, with every
  // record replayed once and each event applied once, in order.
  void ExpectConverged() {
    const StoreRows want = ReadReplayedStore(reference_);
    const StoreRows got = ReadReplayedStore(crashed_);
    const std::vector<Table> want_tables = Tables(want), got_tables = Tables(got);
    for (const Table& t : want_tables) {
      EXPECT_EQ(t.rows.empty(), t.name == "evidence") << t.name << " rows in the reference";
    }
    ASSERT_EQ(FirstDifference(want_tables, got_tables), "")
        << "the store differs after crashes:\n"
        << Differences(want_tables, got_tables, 20);
    ASSERT_EQ(static_cast<int64_t>(got.kept.size()), kRecords);
    for (const QuarantineRecord& r : got.kept) {
      EXPECT_EQ(r.status, QuarantineStatus::kReplayed) << r.event_id;
      EXPECT_EQ(r.attempts, 1) << r.event_id;
    }
    std::set<std::string> keys;
    for (const LedgerEntry& e : got.ledger) {
      EXPECT_TRUE(keys.insert(e.source + ":" + e.event_id).second) << e.event_id << " twice";
      EXPECT_EQ(e.duplicates, 0) << e.event_id;
      EXPECT_EQ(e.state, e.subject == kGapSubject ? LedgerState::kDeferred : LedgerState::kApplied)
          << e.event_id;
      if (e.subject != kGapSubject) {
        EXPECT_EQ(e.projection_version, e.subject_version) << e.event_id << " out of order";
      }
    }
    EXPECT_EQ(static_cast<int64_t>(keys.size()), kRecords);
    ASSERT_EQ(got.projections.size(), static_cast<size_t>(kSubjects + 1));
    for (const Projection& p : got.projections) {
      EXPECT_EQ(p.version, p.subject == kGapSubject ? 0 : kVersions) << p.subject;
    }
    EXPECT_EQ(static_cast<int64_t>(got.deferred.size()), kGapVersions - 1);
    for (const JournalEntry& j : got.journal) {
      EXPECT_EQ(j.outcome, Outcome::kDeferred) << j.event_id << ": " << OutcomeName(j.outcome);
    }
    EXPECT_EQ(static_cast<int64_t>(got.journal.size()), kDeferredRecords);
  }

  // Each record has the one audit entry of the batch that replayed it, as in the reference:
  // applied, or deferred for the versions that came before their predecessor.
  void ExpectOneAuditEntryPerRecord() {
    const std::vector<std::string> want = AuditLines(reference_);
    const std::vector<std::string> got = AuditLines(crashed_);
    ASSERT_EQ(static_cast<int64_t>(got.size()), kRecords);
    ASSERT_EQ(FirstLineDifference(want, got), "") << "the audit differs after crashes";
    int64_t applied = 0;
    for (const std::string& line : got) {
      EXPECT_NE(line.find(" action=replay by=t note=n "), std::string::npos) << line;
      EXPECT_NE(line.find(" status_after=replayed "), std::string::npos) << line;
      if (line.find(" outcome=applied ") != std::string::npos) ++applied;
    }
    EXPECT_EQ(applied, kRecords - kDeferredRecords);
  }

  fs::path dir_;
  std::string config_, initial_, crashed_, reference_;
};

TEST_F(ReplayCrash, KillNineAtFaultPointsAndRandomTimesConvergesToTheUninterruptedReplay) {
  ASSERT_NO_FATAL_FAILURE(QuarantineEveryEvent());
  const Timing timing = ReplayReference();
  ASSERT_FALSE(HasFailure());

  // Kills at the fault points, each run started again on what the last one left.
  CrashingReplays runs(ReplayArgv(crashed_), dir_, crashed_);
  for (const FaultCase& c : kFaultCases) {
    const std::string fault = std::string(c.point) + ":" + std::to_string(c.hit);
    ASSERT_LT(runs.replayed(), static_cast<size_t>(kRecords)) << "no records left for " << fault;
    ASSERT_TRUE(Killed(runs.Run(fault, -1))) << "the replay never reached fault point " << fault;
  }
  const size_t after_faults = runs.replayed();
  // Then at random times, until a run ends by itself.
  std::mt19937_64 rng(20240611);
  const int64_t step_us = timing.work_us / kRandomKillWorkDivisor;
  int64_t later_us = 0;  // added to the next kill's time after runs killed before any commit
  int kills = 0, landed = 0;
  bool finished = false;
  for (int attempt = 0; attempt < kRandomKillsMax && !finished; ++attempt) {
    const int64_t from_us = timing.startup_us / 2 + later_us;
    const int64_t range_us = timing.startup_us / 2 + step_us;
    const int status =
        runs.Run("", from_us + static_cast<int64_t>(rng() % static_cast<uint64_t>(range_us)));
    if (Killed(status)) {
      ++kills;
      if (runs.progress() > 0 && runs.replayed() < static_cast<size_t>(kRecords)) ++landed;
      later_us = runs.progress() > 0 ? 0 : later_us + step_us;
    } else {
      ASSERT_TRUE(Finished(status)) << "status " << status;
      finished = true;
    }
  }
  if (!finished) {
    ASSERT_TRUE(Finished(runs.Run("", -1)));
  }
  std::cout << "reference replay: start-up " << timing.startup_us / 1000 << " ms, work "
            << timing.work_us / 1000 << " ms; killed at " << std::size(kFaultCases)
            << " fault points (" << after_faults << " records replayed by then) and " << kills
            << " random times (" << landed << " after some progress and before the end)\n";
  EXPECT_GE(landed, kRandomKillsLandedMin)
      << "the random kills did not land while the replay was working";
  EXPECT_EQ(runs.replayed(), static_cast<size_t>(kRecords));

  ExpectConverged();
  ExpectOneAuditEntryPerRecord();
}

}  // namespace
}  // namespace evident::testing
