// kill -9 at chosen points and at random times: a child `evident consume --resume` is killed
// with SIGKILL over and over while it works through a large input, first at each fault point of
// the consume path (src/core/fault_point.h: just before and after the checkpoint write, the
// commit, the acknowledgement and a WAL checkpoint), then at random times. After the last restart
// the store must equal the store of one uninterrupted run over the same input in every column a
// decision writes (wall-clock times aside), read back through the Store API; every acknowledged
// decision must be durable when acknowledged, and no event may be acknowledged as applied twice.
// The input grows by chunks of new orders appended before a run that needs more unconsumed lines
// to reach its fault point (LinesToReach), so that no fault run can see its input end first.
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
#include <string_view>

#include "evident/store.h"
#include "orders_input.h"
#include "run_process.h"
#include "store/postgres/test_database.h"
#include "store_dump.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

// Orders appended to the input at a time (about 1,700 lines).
constexpr int kChunkOrders = 250;
// The random kills: over at least this many unconsumed lines, at most this many times; then a
// last run goes to the end of the input.
constexpr int64_t kRandomLines = 15000;
constexpr int kRandomKillsMax = 100;

// Every fault point on the consume path, in the order a batch meets them. The WAL checkpoint
// points are hit on the committing connection (batches of 50) or on the checkpoint thread
// (batches of 500).
constexpr const char* kFaultPoints[] = {
    "before-checkpoint", "after-checkpoint", "before-commit",         "after-commit",
    "before-ack",        "after-ack",        "before-wal-checkpoint", "after-wal-checkpoint"};

// The input file of the runs, grown by chunks of new orders (orders_input.h) appended at its
// end. A --resume position is the count and hash of the lines before it, so lines appended after
// a run leave the position it committed valid.
class GrowingInput {
 public:
  explicit GrowingInput(fs::path path) : path_(std::move(path)) {}

  // Appends chunks until at least `lines` lines follow the first `consumed`.
  void Ensure(int64_t consumed, int64_t lines) {
    while (lines_ - consumed < lines) Append();
  }

  const fs::path& path() const { return path_; }
  int orders() const { return orders_; }
  int64_t lines() const { return lines_; }

 private:
  // One chunk: kChunkOrders orders numbered on from the last chunk's, with a seed of its own.
  void Append() {
    std::ofstream out(path_, std::ios::app);
    for (const std::string& line : MakeInput(kChunkOrders, 7 + chunks_, orders_)) {
      out << line << '\n';
      ++lines_;
    }
    out.close();
    EXPECT_TRUE(out.good()) << "cannot append to " << path_;
    orders_ += kChunkOrders;
    ++chunks_;
  }

  fs::path path_;
  int orders_ = 0;
  int chunks_ = 0;
  int64_t lines_ = 0;
};

// The store at `path` (a SQLite file, or a store URI), decoded through the Store read API:
// every subject of the input (and "" for inputs that name none), every consumer, and the
// input's checkpoint.
std::vector<Table> ReadStore(const std::string& path, const GrowingInput& input) {
  DumpOptions options{.consumers = {std::begin(kOrderConsumers), std::end(kOrderConsumers)},
                      .subjects = {""},
                      .position_source = fs::absolute(input.path()).lexically_normal().string()};
  for (int o = 0; o < input.orders(); ++o) {
    options.subjects.push_back("order-" + std::to_string(o));
  }
  return evident::testing::ReadStore(path, options);
}

// The input position's line count ("lines=N bytes=B hash=H") of the store at `path`, read without
// changing the files a crash left: the Store API would checkpoint the WAL into the database and
// remove it on close, so the next restart would no longer meet the WAL the kill left behind.
int64_t SqliteCheckpointPosition(const std::string& path) {
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

// The same for a store on a server (read through the Store API, which changes nothing there):
// the line count of the position of `source`; -1 when there is none.
int64_t ServerCheckpointPosition(const std::string& uri, const std::string& source) {
  auto store = OpenStore(uri, {.read_only = true});
  if (!store.ok()) return -1;  // a store the first run has not created yet
  auto snapshot = (*store)->Read();
  if (!snapshot.ok()) return -1;
  const auto position = (*snapshot)->GetPosition(source);
  if (!position.ok() || !position->has_value()) return -1;
  const std::string& text = **position;  // "lines=N bytes=B hash=H"
  if (text.rfind("lines=", 0) != 0) return -1;
  return std::stoll(text.substr(6, text.find(' ') - 6));
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
// A store of the backend under test: a SQLite file in the test's directory, or a schema of its
// own on the tests' PostgreSQL server.
class TestStore {
 public:
  TestStore(const std::string& backend, const fs::path& file) {
    if (backend == "sqlite") {
      path_ = file.string();
      uri_ = "sqlite:" + path_;
      return;
    }
    const Result<std::string> uri = FreshPostgresSchema("crash_" + file.stem().string());
    EXPECT_TRUE(uri.ok()) << uri.status().ToString();
    if (uri.ok()) uri_ = *uri;
    path_ = uri_;
  }
  const std::string& uri() const { return uri_; }    // for --store
  const std::string& path() const { return path_; }  // for ReadStore
  // The line count of the input's committed position (-1: none yet).
  int64_t Position(const std::string& source) const {
    return uri_.rfind("sqlite:", 0) == 0 ? SqliteCheckpointPosition(path_)
                                         : ServerCheckpointPosition(uri_, source);
  }

 private:
  std::string uri_, path_;
};

class CrashingRuns {
 public:
  CrashingRuns(std::vector<std::string> common, fs::path dir, const std::string& backend,
               std::string source)
      : common_(std::move(common)),
        dir_(std::move(dir)),
        store_(backend, dir_ / "crashed.db"),
        source_(std::move(source)) {}

  // One run; returns its wait status after checking what it acknowledged.
  int Run(const std::string& fault, int64_t kill_after_us) {
    const fs::path outcomes = dir_ / ("outcomes-" + std::to_string(runs_++) + ".ndjson");
    std::vector<std::string> argv = {EVIDENT_BINARY};
    argv.insert(argv.end(), common_.begin(), common_.end());
    argv.insert(argv.end(), {"--store", store_.uri(), "--outcomes", outcomes.string()});
    const int status = RunAndKill(argv, fault, kill_after_us);
    const Acknowledged a = ReadOutcomes(outcomes, Killed(status));
    // Acknowledged means durable: the committed checkpoint covers every acknowledged line.
    if (a.index_max >= 0) {
      EXPECT_GT(Position(), a.index_max)
          << "run " << runs_ - 1 << " (" << (fault.empty() ? "random kill" : fault)
          << ") acknowledged input line " << a.index_max << " before it was committed";
    }
    for (const std::string& key : a.applied) {
      EXPECT_TRUE(applied_.insert(key).second) << key << " was acknowledged as applied twice";
    }
    return status;
  }

  const TestStore& store() const { return store_; }
  int64_t Position() const { return store_.Position(source_); }
  const std::set<std::string>& applied() const { return applied_; }

 private:
  std::vector<std::string> common_;
  fs::path dir_;
  TestStore store_;
  std::string source_;  // the input's source name, as positions are kept
  int runs_ = 0;
  std::set<std::string> applied_;  // keys acknowledged as applied, over all runs
};

// One batch size, and the most input lines a WAL checkpoint cycle takes at it: from a WAL that
// has just restarted to the commit that leaves SqliteOptions::checkpoint_wal_pages (1,000) in it.
// Batches of 50 events commit 14 to 51 WAL pages each (33 typically), so the committing
// connection runs every checkpoint itself, and a cycle took 1,450 to 1,800 lines; full batches of
// 500 commit 65 to 104 pages, over checkpoint_thread_commit_pages (64), so checkpoints run on the
// store's checkpoint thread while the next batch is decided, kills land during them too, and a
// cycle took 6,000 to 7,500 lines (measured over 6,000 orders of this input, also beside a busy
// loop; the longest is the first cycle of a new store; a batch that linger_ms cuts short commits
// more pages per line, not fewer). The bounds below leave room above those.
// PostgreSQL has no WAL checkpoint points (the server checkpoints on its own): its runs are
// killed at the other points and at random times.
struct BatchCase {
  std::string backend;  // "sqlite" or "postgresql"
  int batch_count_max;
  int64_t wal_cycle_lines_max;
};
void PrintTo(const BatchCase& c, std::ostream* out) {
  *out << c.backend << " batch_count_max " << c.batch_count_max;
}

// The unconsumed input lines a run needs to meet `point` for the `hit`th time before its input
// ends, whatever the timing. Each batch meets each point of the consume path once (a batch cut
// short by linger_ms meets them sooner). A WAL checkpoint is asked for by every commit that
// leaves checkpoint_wal_pages or more in the WAL, and the WAL restarts from empty only at the
// first write after a checkpoint copied all of it, so a run meets the WAL points at least once
// a cycle (how many more times depends on whether the thread's checkpoint ends before the next
// batch begins: 1 to 5 measured), the first time after at most a full cycle (the previous run
// may have been killed just after its checkpoint, before the restart). One more batch lets the
// last cycle's request run on the thread: a request still pending when the input ends is
// dropped, and the store's close checkpoints without meeting the points.
int64_t LinesToReach(std::string_view point, int hit, const BatchCase& c) {
  if (point.ends_with("wal-checkpoint")) return hit * c.wal_cycle_lines_max + c.batch_count_max;
  return int64_t{hit} * c.batch_count_max;
}

class Crash : public ::testing::TestWithParam<BatchCase> {};
INSTANTIATE_TEST_SUITE_P(
    BatchCountMax, Crash,
    ::testing::Values(BatchCase{"sqlite", 50, 3000}, BatchCase{"sqlite", 500, 10000},
                      BatchCase{"postgresql", 50, 0}, BatchCase{"postgresql", 500, 0}),
    [](const ::testing::TestParamInfo<BatchCase>& param_info) {
      return param_info.param.backend + "_" + std::to_string(param_info.param.batch_count_max);
    });

TEST_P(Crash, KillNineAtFaultPointsAndRandomTimesConvergesToTheUninterruptedStore) {
  const std::string batch = std::to_string(GetParam().batch_count_max);
  const fs::path dir = fs::temp_directory_path() / ("evident-crash-" + std::to_string(getpid()) +
                                                    "-" + GetParam().backend + "-" + batch);
  fs::remove_all(dir);
  fs::create_directories(dir);
  GrowingInput input(dir / "events.ndjson");
  const std::string config = SourcePath("examples/orders/evident.yaml");
  // Batches close on their count only (never on batch_ms_max on a slow machine): the checkpoint
  // path each batch size takes, and the hits of each point, hold on every machine.
  const std::vector<std::string> common = {
      "consume",           "--config", config,           "--input", input.path().string(),
      "--batch-count-max", batch,      "--batch-ms-max", "600000",  "--resume"};

  // Kills at every fault point (its first and its third hit in a run), each run restarted with
  // --resume where the last one was killed, on an input grown first to what the run needs.
  const std::string source = fs::absolute(input.path()).lexically_normal().string();
  CrashingRuns runs(common, dir, GetParam().backend, source);
  int fault_points = 0;
  for (const char* point : kFaultPoints) {
    if (GetParam().backend != "sqlite" && std::string_view(point).ends_with("wal-checkpoint")) {
      continue;
    }
    ++fault_points;
    for (const int hit : {1, 3}) {
      const std::string fault = point + (":" + std::to_string(hit));
      const int64_t lines = LinesToReach(point, hit, GetParam());
      input.Ensure(std::max<int64_t>(0, runs.Position()), lines);
      ASSERT_TRUE(Killed(runs.Run(fault, -1)))
          << "fault point " << fault << " was never reached in " << lines << " lines";
    }
  }
  // Then at random times, over what the fault runs left of the input (what they were given beyond
  // what they used) and at least kRandomLines, then to its end.
  input.Ensure(std::max<int64_t>(0, runs.Position()), kRandomLines);
  std::mt19937_64 rng(12345);
  int kills = 0;
  bool finished = false;
  for (int attempt = 0; attempt < kRandomKillsMax && !finished; ++attempt) {
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
  std::cout << "killed at " << fault_points * 2 << " fault points and " << kills
            << " random times, then ran to the end of " << input.lines() << " lines ("
            << input.orders() << " orders)\n";

  // The reference: one uninterrupted run over the same input.
  const TestStore reference(GetParam().backend, dir / "reference.db");
  std::vector<std::string> args = common;
  args.insert(args.end(),
              {"--store", reference.uri(), "--outcomes", (dir / "reference.ndjson").string()});
  const ProcessResult clean = RunEvident(args);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  const Acknowledged want = ReadOutcomes(dir / "reference.ndjson", false);
  const std::set<std::string> want_applied(want.applied.begin(), want.applied.end());
  ASSERT_EQ(want_applied.size(), want.applied.size()) << "the reference applied an event twice";

  // Nothing acknowledged as applied that the reference did not apply (each once, checked above).
  for (const std::string& key : runs.applied()) {
    EXPECT_TRUE(want_applied.contains(key)) << key << " applied, but not by the reference";
  }
  const std::vector<Table> want_tables = ReadStore(reference.path(), input);
  const std::vector<Table> got_tables = ReadStore(runs.store().path(), input);
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
  EXPECT_GT(applied_receipts, int64_t{input.orders()} * 15 / 4);  // about 5.9 an order are
  fs::remove_all(dir);
}

}  // namespace
}  // namespace evident::testing
