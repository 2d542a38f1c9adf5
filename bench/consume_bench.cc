// `evident consume` throughput on SQLite (synchronous=FULL), against two figures measured in
// the same run on the same machine:
//   (a) the practical ceiling: the same number of ledger rows inserted with the sqlite3 library
//       into the same table, in transactions of the same batch size;
//   (b) evident with one transaction per event (what a naive inbox table does).
// Peak memory (ru_maxrss) of the real `evident consume` process at 100k and at N events shows
// whether memory stays flat as the input grows. The configuration is the orders example without
// its effects and compensations (what intents cost is measured apart: docs/BENCHMARKS.md), so
// that the figures stay comparable with the runs before the example gained them.
//
//   build/bench/consume_bench [N=1000000] [ROUNDS=5]      (see docs/BENCHMARKS.md)
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "consume_input.h"
#include "evident/store_sqlite.h"

namespace {

namespace fs = std::filesystem;
using evident::bench::WriteConfigWithoutEffects;
using evident::bench::WriteEvents;
using Clock = std::chrono::steady_clock;

constexpr int kBatchCountMax = 1000;

struct RunResult {
  double seconds = 0;
  long max_rss_kib = 0;
};

RunResult RunEvident(const std::string& evident, const std::string& config, const fs::path& input,
                     const fs::path& store, int batch) {
  fs::remove(store);
  const std::string batch_text = std::to_string(batch);
  const std::string store_uri = "sqlite:" + store.string();
  std::fflush(stdout);
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    execl(evident.c_str(), evident.c_str(), "consume", "--config", config.c_str(), "--store",
          store_uri.c_str(), "--input", input.c_str(), "--batch-count-max", batch_text.c_str(),
          "--synchronous", "FULL", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  RunResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.max_rss_kib = usage.ru_maxrss;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "evident consume failed (status %d)\n", status);
    std::exit(1);
  }
  return r;
}

// (a): ledger rows straight into the store's own ledger table, same batch size, same pragmas.
// With `batch` 1 this is (c): what one transaction per row costs the sqlite3 library itself on
// this disk, which bounds any (b) ratio from above: evident/(b) <= (a)/(c).
double InsertLedgerRows(const fs::path& store, int64_t count, int64_t batch = kBatchCountMax) {
  fs::remove(store);
  {
    auto opened = evident::OpenSqliteStore(store.string());  // creates the same schema
    if (!opened.ok()) std::exit(1);
  }
  sqlite3* db = nullptr;
  sqlite3_open(store.c_str(), &db);
  // The store's own pragmas: WAL, FULL, and its default page cache.
  const std::string pragmas =
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
      "PRAGMA cache_size=-" +
      std::to_string(evident::SqliteOptions{}.cache_kib);
  sqlite3_exec(db, pragmas.c_str(), nullptr, nullptr, nullptr);
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO ledger(consumer, source, event_id, state, type, subject, "
                     "subject_version, input_schema_version, result_version, projection_version, "
                     "committed_at_ms) VALUES(?1,?2,?3,'applied',?4,?5,?6,1,1,?6,?7)",
                     -1, &insert, nullptr);
  const auto start = Clock::now();
  for (int64_t i = 0; i < count; ++i) {
    if (i % batch == 0) sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    const std::string id = "evt-" + std::to_string(i / 4) + "-" + std::to_string(i % 4 + 1);
    const std::string subject = "order-" + std::to_string(i / 4);
    sqlite3_bind_text(insert, 1, "fulfillment", -1, SQLITE_STATIC);
    sqlite3_bind_text(insert, 2, "https://example.test/order-service", -1, SQLITE_STATIC);
    sqlite3_bind_text(insert, 3, id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 4, "com.example.training.order.paid", -1, SQLITE_STATIC);
    sqlite3_bind_text(insert, 5, subject.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert, 6, i % 4 + 1);
    sqlite3_bind_int64(insert, 7, 1785000000000 + i);
    if (sqlite3_step(insert) != SQLITE_DONE) {
      std::fprintf(stderr, "insert failed: %s\n", sqlite3_errmsg(db));
      std::exit(1);
    }
    sqlite3_reset(insert);
    if (i % batch == batch - 1 || i == count - 1) {
      sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  sqlite3_finalize(insert);
  sqlite3_close(db);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  // --write-input DIR COUNT: only the configuration (DIR/evident.yaml) and COUNT events
  // (DIR/events.ndjson), for an A/B of two binaries (bench/ab.sh).
  if (argc == 4 && std::string_view(argv[1]) == "--write-input") {
    const fs::path dir = argv[2];
    WriteConfigWithoutEffects(dir / "evident.yaml");
    WriteEvents(dir / "events.ndjson", std::stoll(argv[3]));
    return 0;
  }
  // The same process-wide SQLite settings as the evident binary, for the sqlite3 figures.
  evident::ConfigureSqliteProcess();
  const int64_t count = argc > 1 ? std::stoll(argv[1]) : 1'000'000;
  // The machine is shared and noisy: (a) and evident run alternately, `rounds` times, and the
  // median of the per-round ratios is reported beside every round's figures.
  const int rounds = argc > 2 ? std::max(1, std::stoi(argv[2])) : 5;
  const int64_t small = std::min<int64_t>(100'000, count);
  const int64_t per_event_count = std::min<int64_t>(3'000, count);
  const std::string evident = EVIDENT_BINARY;
  const fs::path dir = fs::temp_directory_path() / ("evident-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string config = (dir / "evident.yaml").string();
  WriteConfigWithoutEffects(config);
  WriteEvents(dir / "small.ndjson", small);
  WriteEvents(dir / "large.ndjson", count);
  WriteEvents(dir / "per-event.ndjson", per_event_count);

  std::printf("consume benchmark: %lld events, batches of %d, synchronous=FULL, WAL, %d rounds\n",
              static_cast<long long>(count), kBatchCountMax, rounds);
  std::vector<double> ratios_a, ratios_b, bounds_b;
  long large_rss_kib = 0;
  for (int round = 1; round <= rounds; ++round) {
    const double ceiling_s = InsertLedgerRows(dir / "ceiling.db", count);
    const RunResult large =
        RunEvident(evident, config, dir / "large.ndjson", dir / "large.db", kBatchCountMax);
    const RunResult per_event =
        RunEvident(evident, config, dir / "per-event.ndjson", dir / "per-event.db", 1);
    const double per_row_s = InsertLedgerRows(dir / "per-row.db", per_event_count, 1);
    large_rss_kib = std::max(large_rss_kib, large.max_rss_kib);
    const double evident_rate = static_cast<double>(count) / large.seconds;
    const double ceiling_rate = static_cast<double>(count) / ceiling_s;
    const double per_event_rate = static_cast<double>(per_event_count) / per_event.seconds;
    ratios_a.push_back(evident_rate / ceiling_rate);
    ratios_b.push_back(evident_rate / per_event_rate);
    const double per_row_rate = static_cast<double>(per_event_count) / per_row_s;
    bounds_b.push_back(ceiling_rate / per_row_rate);
    std::printf(
        "round %d: (a) ceiling %8.0f rows/s | evident %8.0f events/s (process start and schema "
        "compile included) | (b) one transaction per event %6.0f events/s | evident/(a) %.3f | "
        "evident/(b) %.1fx | (c) sqlite3 one row per transaction %6.0f rows/s, (a)/(c) %.1fx\n",
        round, ceiling_rate, evident_rate, per_event_rate, ratios_a.back(), ratios_b.back(),
        per_row_rate, bounds_b.back());
    std::fflush(stdout);
  }
  const RunResult small_run =
      RunEvident(evident, config, dir / "small.ndjson", dir / "small.db", kBatchCountMax);
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("median ratio evident / (a) ceiling        : %.3f   (goal >= 0.5)\n",
              median(ratios_a));
  std::printf("median ratio evident / (b) per-event      : %.1fx  (goal >= 50x)\n",
              median(ratios_b));
  std::printf("median (a)/(c), the most any (b) ratio can reach on this disk: %.1fx\n",
              median(bounds_b));
  std::vector<double> share_of_bound;
  for (size_t i = 0; i < ratios_b.size(); ++i) {
    share_of_bound.push_back(ratios_b[i] / bounds_b[i]);
  }
  std::printf("median evident/(b) as a share of that bound, per round: %.2f\n",
              median(share_of_bound));
  std::printf("peak RSS: %lld events %ld KiB, %lld events %ld KiB, ratio %.2f (flat = 1.0)\n",
              static_cast<long long>(small), small_run.max_rss_kib, static_cast<long long>(count),
              large_rss_kib,
              static_cast<double>(large_rss_kib) / static_cast<double>(small_run.max_rss_kib));
  fs::remove_all(dir);
  return 0;
}
