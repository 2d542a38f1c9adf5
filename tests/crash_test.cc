// kill -9 at chosen points and at random times: a child `evident consume --resume` is killed
// with SIGKILL over and over while it works through a large input, first at each fault point of
// the consume path (src/core/fault_point.h: just before and after the checkpoint write, the
// commit, the acknowledgement and a WAL checkpoint), then at random times. After the last restart
// the store must equal the store of one uninterrupted run in every column a decision writes
// (wall-clock times aside), read back through the Store API; every acknowledged decision must be
// durable when acknowledged, and no event may be acknowledged as applied twice.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>

#include "orders_input.h"
#include "run_process.h"
#include "store_dump.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kOrders = 4000;

// Every fault point on the consume path, in the order a batch meets them. The WAL checkpoint
// points are hit on the committing connection (batches of 50) or on the checkpoint thread
// (batches of 500).
constexpr const char* kFaultPoints[] = {
    "before-checkpoint", "after-checkpoint", "before-commit",         "after-commit",
    "before-ack",        "after-ack",        "before-wal-checkpoint", "after-wal-checkpoint"};

// The store at `path`, decoded through the Store read API: every subject of the input (and ""
// for inputs that name none), every consumer, and the input's checkpoint.
std::vector<Table> ReadStore(const std::string& path, const std::string& input) {
  DumpOptions options{.consumers = {std::begin(kOrderConsumers), std::end(kOrderConsumers)},
                      .subjects = {""},
                      .position_source = fs::absolute(input).lexically_normal().string()};
  for (int o = 0; o < kOrders; ++o) options.subjects.push_back("order-" + std::to_string(o));
  return evident::testing::ReadStore(path, options);
}

// The input position's line count ("lines=N bytes=B hash=H") of the store at `path`, read without
// changing the files a crash left: the Store API would checkpoint the WAL into the database and
// remove it on close, so the next restart would no longer meet the WAL the kill left behind.
int64_t CheckpointPosition(const std::string& path) {
  sqlite3* db = nullptr;
  int64_t position = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(
            db,
            "SELECT max(CAST(substr(position, 7, instr(position, ' ') - 7) AS INTEGER)) "
            "FROM position",
            -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      position = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return position;
}

// What one run acknowledged: its outcome lines (written only after their batch committed).
struct Acknowledged {
  int64_t lines = 0;
  int64_t index_max = -1;
  std::vector<std::string> applied;  // ledger keys
};

// `may_tear`: the run was killed, so its last line may be torn.
Acknowledged ReadOutcomes(const fs::path& path, bool may_tear) {
  Acknowledged a;
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  if (!may_tear && !text.empty()) {
    EXPECT_EQ(text.back(), '\n') << path << ": a run that was not killed left a torn last line";
  }
  // The index leads every outcome line; a torn line holds it whole when the comma after it was
  // written.
  static const std::regex kTornIndex(R"(^\{"index":(\d+),)");
  simdjson::dom::parser parser;
  const std::vector<std::string> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    simdjson::dom::element e;
    const simdjson::error_code parsed = parser.parse(line).get(e);
    // SIGKILL can cut a large write(2) short (the kernel stops copying at a fatal signal), so
    // the last line of a killed run may be torn when it lacks its newline: that line was never
    // written whole. Its batch had committed before its outcomes were written, so its index
    // still counts for "acknowledged before committed". Every other line must be whole.
    const bool torn_tail = may_tear && i + 1 == lines.size() && text.back() != '\n';
    if (parsed != simdjson::SUCCESS && torn_tail) {
      std::smatch m;
      if (std::regex_search(line, m, kTornIndex)) {
        a.index_max = std::max(a.index_max, static_cast<int64_t>(std::stoll(m[1].str())));
      }
      break;
    }
    EXPECT_EQ(parsed, simdjson::SUCCESS) << path << ": " << line;
    if (parsed != simdjson::SUCCESS || e.is_null()) continue;
    ++a.lines;
    a.index_max = std::max(a.index_max, e["index"].get_int64().value());
    if (e["outcome"].get_string().value() == "applied") {
      a.applied.emplace_back(e["key"].get_string().value());
    }
  }
  return a;
}

// The crashing runs over one store: each run writes its own outcomes file, checked as it ends.
class CrashingRuns {
 public:
  CrashingRuns(std::vector<std::string> common, fs::path dir)
      : common_(std::move(common)), dir_(std::move(dir)), store_((dir_ / "crashed.db").string()) {}

  // One run; returns its wait status after checking what it acknowledged.
  int Run(const std::string& fault, int64_t kill_after_us) {
    const fs::path outcomes = dir_ / ("outcomes-" + std::to_string(runs_++) + ".ndjson");
    std::vector<std::string> argv = {EVIDENT_BINARY};
    argv.insert(argv.end(), common_.begin(), common_.end());
    argv.insert(argv.end(), {"--store", "sqlite:" + store_, "--outcomes", outcomes.string()});
    const int status = RunAndKill(argv, fault, kill_after_us);
    const Acknowledged a = ReadOutcomes(outcomes, Killed(status));
    // Acknowledged means durable: the committed checkpoint covers every acknowledged line.
    if (a.index_max >= 0) {
      EXPECT_GT(CheckpointPosition(store_), a.index_max)
          << "run " << runs_ - 1 << " (" << (fault.empty() ? "random kill" : fault)
          << ") acknowledged input line " << a.index_max << " before it was committed";
    }
    for (const std::string& key : a.applied) {
      EXPECT_TRUE(applied_.insert(key).second) << key << " was acknowledged as applied twice";
    }
    return status;
  }

  const std::string& store() const { return store_; }
  const std::set<std::string>& applied() const { return applied_; }

 private:
  std::vector<std::string> common_;
  fs::path dir_;
  std::string store_;
  int runs_ = 0;
  std::set<std::string> applied_;  // keys acknowledged as applied, over all runs
};

// Batches of 50 events commit about 13 WAL pages each, so the committing connection runs every
// checkpoint itself; batches of 500 commit over 64 pages each, so checkpoints run on the store's
// checkpoint thread while the next batch is decided, and kills land during them too.
class Crash : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(BatchCountMax, Crash, ::testing::Values(50, 500));

TEST_P(Crash, KillNineAtFaultPointsAndRandomTimesConvergesToTheUninterruptedStore) {
  const std::string batch = std::to_string(GetParam());
  const fs::path dir =
      fs::temp_directory_path() / ("evident-crash-" + std::to_string(getpid()) + "-" + batch);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path input = dir / "events.ndjson";
  {
    std::ofstream out(input);
    for (const std::string& line : MakeInput(kOrders, 7)) out << line << '\n';
  }
  const std::string config = SourcePath("examples/orders/evident.yaml");
  const std::vector<std::string> common = {"consume",      "--config",          config, "--input",
                                           input.string(), "--batch-count-max", batch,  "--resume"};

  // The reference: one uninterrupted run.
  const std::string reference = (dir / "reference.db").string();
  std::vector<std::string> args = common;
  args.insert(args.end(), {"--store", "sqlite:" + reference, "--outcomes",
                           (dir / "reference.ndjson").string()});
  const ProcessResult clean = RunEvident(args);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  const Acknowledged want = ReadOutcomes(dir / "reference.ndjson", false);
  const std::set<std::string> want_applied(want.applied.begin(), want.applied.end());
  ASSERT_EQ(want_applied.size(), want.applied.size()) << "the reference applied an event twice";

  // The same input, killed at every fault point (its first and its third hit in a run), then at
  // random times, restarted with --resume each time.
  CrashingRuns runs(common, dir);
  for (const char* point : kFaultPoints) {
    for (const char* hit : {":1", ":3"}) {
      const std::string fault = point + std::string(hit);
      ASSERT_TRUE(Killed(runs.Run(fault, -1))) << "fault point " << fault << " was never reached";
    }
  }
  std::mt19937_64 rng(12345);
  int kills = 0;
  bool finished = false;
  for (int attempt = 0; attempt < 200 && !finished; ++attempt) {
    // Later runs start further into the input, so kills land mid-batch and near the end.
    const int status = runs.Run("", static_cast<int64_t>(5000 + rng() % 120000));
    if (Killed(status)) {
      ++kills;
    } else {
      ASSERT_TRUE(Finished(status)) << "status " << status;
      finished = true;
    }
  }
  ASSERT_GE(kills, 5) << "the random kills did not land while the consumer was working";
  if (!finished) {
    ASSERT_TRUE(Finished(runs.Run("", -1)));
  }
  std::cout << "killed at " << std::size(kFaultPoints) * 2 << " fault points and " << kills
            << " random times, then ran to the end\n";

  // Nothing acknowledged as applied that the reference did not apply (each once, checked above).
  for (const std::string& key : runs.applied()) {
    EXPECT_TRUE(want_applied.contains(key)) << key << " applied, but not by the reference";
  }
  const std::vector<Table> want_tables = ReadStore(reference, input.string());
  const std::vector<Table> got_tables = ReadStore(runs.store(), input.string());
  for (const Table& t : want_tables) {
    EXPECT_FALSE(t.rows.empty()) << t.name << " is empty in the reference run";
  }
  const std::string difference = FirstDifference(want_tables, got_tables);
  ASSERT_EQ(difference, "") << "the store differs after crashes";
  for (const Table& t : want_tables)
    std::cout << t.name << ": " << t.rows.size() << " rows, equal\n";
  const int64_t applied_receipts = std::count_if(
      want_tables[0].rows.begin(), want_tables[0].rows.end(),
      [](const std::string& row) { return row.find(" state=applied ") != std::string::npos; });
  EXPECT_GT(applied_receipts, 15000);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace evident::testing
