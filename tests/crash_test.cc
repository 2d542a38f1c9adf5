// kill -9 at random points: a child `evident consume --resume` is killed with SIGKILL over and
// over while it works through a large input; after the last restart the store must equal the
// store of one uninterrupted run, and no receipt may exist twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

std::string Paid(int order, int version, const std::string& id) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"https://example.test/order-service","type":"com.example.training.order.paid","subject":"order-)" +
         std::to_string(order) + R"(","schemaversion":1,"data":{"orderId":"order-)" +
         std::to_string(order) + R"(","orderVersion":)" + std::to_string(version) + "}}";
}
std::string Cancelled(int order, int version, const std::string& id) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"https://example.test/order-service","type":"com.example.training.order.cancelled","subject":"order-)" +
         std::to_string(order) + R"(","schemaversion":1,"data":{"orderId":"order-)" +
         std::to_string(order) + R"(","orderVersion":)" + std::to_string(version) +
         R"(,"reason":"customer-request"}})";
}
std::string Status(int order, int n) {
  return R"({"specversion":"1.0","id":"status-)" + std::to_string(order) + "-" + std::to_string(n) +
         R"(","source":"training://orders/checkout","type":"order.status.changed","subject":"order-)" +
         std::to_string(order) + R"(","data":{"schemaVersion":)" + std::to_string(1 + n % 2) +
         R"(,"orderId":"order-)" + std::to_string(order) + R"(","status":"s)" + std::to_string(n) +
         R"("}})";
}

// A deterministic input with every outcome: versions out of order within small windows
// (deferred, then drained), redeliveries, conflicting ids, stale versions, bad lines.
std::vector<std::string> MakeInput(int orders, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> lines;
  for (int o = 0; o < orders; ++o) {
    std::vector<std::string> events;
    const bool lost_v2 = rng() % 25 == 0;  // a gap that never closes: v3, v4 stay deferred
    for (int v = 1; v <= 4; ++v) {
      if (v == 2 && lost_v2) continue;
      const std::string id = "evt-" + std::to_string(o) + "-v" + std::to_string(v);
      events.push_back(v == 4 ? Cancelled(o, v, id) : Paid(o, v, id));
    }
    events.push_back(Status(o, 0));
    events.push_back(Status(o, 1));
    if (rng() % 10 == 0) events.push_back(Paid(o, 2, "evt-conflict-" + std::to_string(o)));
    if (rng() % 20 == 0)
      events.push_back("{\"specversion\":\"1.0\",\"id\":\"broken-" + std::to_string(o));
    std::shuffle(events.begin(), events.end(), rng);
    for (std::string& e : events) {
      lines.push_back(e);
      if (rng() % 8 == 0) lines.push_back(e);  // a redelivery
    }
  }
  return lines;
}

// The store's content, without wall-clock columns, one sorted string per table.
std::vector<std::string> Dump(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::vector<std::string> tables;
  for (const char* sql : {
           "SELECT consumer, source, event_id, state, type, subject, subject_version, "
           "input_schema_version, result_version, projection_version, duplicates FROM ledger "
           "ORDER BY 1,2,3",
           "SELECT consumer, subject, version, state, fields_json, owner_source, "
           "owner_version_seen, (SELECT group_concat(key || ':' || json_extract(value, '$.source') "
           "|| ':' || json_extract(value, '$.id') || ':' || json_extract(value, "
           "'$.subject_version'))"
           " FROM json_each(evidence_json)) FROM projection ORDER BY 1,2",
           "SELECT consumer, subject, subject_version, source, event_id, expected_version, "
           "hex(raw), route, input_index FROM deferred ORDER BY 1,2,3",
           "SELECT consumer, outcome, reason, source, event_id, subject, hex(raw), input_index "
           "FROM kept ORDER BY input_index, consumer",
           "SELECT consumer, outcome, source, event_id, subject, subject_version FROM journal "
           "ORDER BY seq",
       }) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    std::string text;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        const auto* v = sqlite3_column_text(stmt, c);
        text += v == nullptr ? "NULL" : reinterpret_cast<const char*>(v);
        text += '|';
      }
      text += '\n';
    }
    sqlite3_finalize(stmt);
    tables.push_back(std::move(text));
  }
  sqlite3_close(db);
  return tables;
}

int64_t Scalar(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  const int64_t value = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

// Batches of 50 events commit about 13 WAL pages each, so the committing connection runs every
// checkpoint itself; batches of 500 commit over 64 pages each, so checkpoints run on the store's
// checkpoint thread while the next batch is decided, and kills land during them too.
class Crash : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(BatchCountMax, Crash, ::testing::Values(50, 500));

TEST_P(Crash, KillNineAtRandomPointsConvergesToTheUninterruptedStore) {
  const std::string batch = std::to_string(GetParam());
  const fs::path dir =
      fs::temp_directory_path() / ("evident-crash-" + std::to_string(getpid()) + "-" + batch);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path input = dir / "events.ndjson";
  {
    std::ofstream out(input);
    for (const std::string& line : MakeInput(4000, 7)) out << line << '\n';
  }
  const std::string config = SourcePath("examples/orders/evident.yaml");
  const std::vector<std::string> common = {"consume",      "--config",          config, "--input",
                                           input.string(), "--batch-count-max", batch,  "--resume"};

  // The reference: one uninterrupted run.
  const std::string reference = (dir / "reference.db").string();
  std::vector<std::string> args = common;
  args.insert(args.end(), {"--store", "sqlite:" + reference});
  const ProcessResult clean = RunEvident(args);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;

  // The same input, killed with SIGKILL at random points, restarted with --resume each time.
  const std::string crashed = (dir / "crashed.db").string();
  std::vector<std::string> argv = {EVIDENT_BINARY};
  argv.insert(argv.end(), common.begin(), common.end());
  argv.insert(argv.end(), {"--store", "sqlite:" + crashed});
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::mt19937_64 rng(12345);
  int kills = 0;
  bool finished = false;
  for (int attempt = 0; attempt < 200 && !finished; ++attempt) {
    const pid_t pid = fork();
    if (pid == 0) {
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    ASSERT_GT(pid, 0);
    // Let the first runs get going; later ones die sooner so that kills land mid-batch.
    usleep(static_cast<useconds_t>(5000 + rng() % 120000));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
      ++kills;
    } else {
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
      finished = true;
    }
  }
  ASSERT_GE(kills, 5) << "the kills did not land while the consumer was working";
  if (!finished) {
    const ProcessResult last = RunProcess(argv);
    ASSERT_EQ(last.exit_code, 0) << last.err;
  }
  std::cout << "killed " << kills << " times, then ran to the end\n";

  const std::vector<std::string> want = Dump(reference);
  const std::vector<std::string> got = Dump(crashed);
  const char* names[] = {"ledger", "projection (with evidence)", "deferred", "kept", "journal"};
  for (size_t t = 0; t < want.size(); ++t) {
    EXPECT_FALSE(want[t].empty()) << names[t] << " is empty in the reference run";
    EXPECT_TRUE(want[t] == got[t]) << "table " << names[t] << " differs after crashes";
    std::cout << names[t] << ": " << std::count(want[t].begin(), want[t].end(), '\n')
              << " rows, equal\n";
  }
  // No receipt exists twice (the primary key says so; the count proves the key holds).
  EXPECT_EQ(
      Scalar(crashed, "SELECT count(*) FROM ledger"),
      Scalar(crashed,
             "SELECT count(*) FROM (SELECT DISTINCT consumer, source, event_id FROM ledger)"));
  EXPECT_GT(Scalar(crashed, "SELECT count(*) FROM ledger WHERE state='applied'"), 15000);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace evident::testing
