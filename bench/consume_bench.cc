// `evident consume` throughput on SQLite (synchronous=FULL), against figures measured in the
// same run on the same machine:
//   (a) the ledger-only ceiling: the same number of ledger rows inserted with the sqlite3 library
//       into the same table, in transactions of the same batch size;
//   (b) evident with one transaction per event (what a naive inbox table does), and (c) the
//       sqlite3 library with one transaction per row, the most any evident/(b) can reach;
//   (d) the rows ceiling: every row evident's run left in its store (receipts, projections,
//       evidence, intents, compensations, positions) written again with the sqlite3 library
//       alone into a fresh store of the same schema, in as many transactions as evident's
//       batches — the same rows without parsing, validating or deciding anything.
// Peak memory (ru_maxrss) of the real `evident consume` process at 100k and at N events shows
// whether memory stays flat as the input grows. The configuration is the orders example without
// its effects and compensations (what intents cost is measured apart: docs/BENCHMARKS.md), so
// that the figures stay comparable with the runs before the example gained them; `--effects`
// runs the whole example against (d) alone.
//
//   build/bench/consume_bench [N=1000000] [ROUNDS=5] [--effects]   (see docs/BENCHMARKS.md)
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
#include "median.h"

namespace {

namespace fs = std::filesystem;
using evident::bench::Median;
using evident::bench::PrintFigure;
using evident::bench::WriteConfigWithEffects;
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

// One table's rows as (d) writes them again, read into memory before the clock starts.
struct TableRows {
  std::string name;
  int columns = 0;
  std::vector<int> types;  // SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL
  std::vector<int64_t> integers;
  std::vector<double> reals;
  std::vector<std::string> bytes;
  int64_t rows = 0;
};

sqlite3* OpenRaw(const fs::path& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    std::exit(1);
  }
  return db;
}

void MustExec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::fprintf(stderr, "%s: %s\n", sql.c_str(), error != nullptr ? error : "");
    std::exit(1);
  }
}

sqlite3_stmt* MustPrepare(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "%s: %s\n", sql.c_str(), sqlite3_errmsg(db));
    std::exit(1);
  }
  return statement;
}

// The rows of `table` in `db`; exits when the table is not there (a fresh store lacking a table
// evident's run filled would leave (d) with less to write).
int64_t CountRows(sqlite3* db, const std::string& table) {
  sqlite3_stmt* count = MustPrepare(db, "SELECT count(*) FROM \"" + table + "\"");
  if (sqlite3_step(count) != SQLITE_ROW) {
    std::fprintf(stderr, "count of %s: %s\n", table.c_str(), sqlite3_errmsg(db));
    std::exit(1);
  }
  const int64_t n = sqlite3_column_int64(count, 0);
  sqlite3_finalize(count);
  return n;
}

// Every table evident's run filled that a fresh store does not already hold rows of.
std::vector<TableRows> ReadRowsWritten(const fs::path& evident_store, sqlite3* fresh) {
  sqlite3* db = OpenRaw(evident_store);
  std::vector<std::string> names;
  sqlite3_stmt* list = MustPrepare(db,
                                   "SELECT name FROM sqlite_master WHERE type='table' AND name NOT "
                                   "LIKE 'sqlite_%' ORDER BY name");
  while (sqlite3_step(list) == SQLITE_ROW) {
    names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(list, 0)));
  }
  sqlite3_finalize(list);
  std::vector<TableRows> tables;
  for (const std::string& name : names) {
    if (CountRows(fresh, name) != 0) continue;  // the schema's own rows
    TableRows t{.name = name};
    sqlite3_stmt* read = MustPrepare(db, "SELECT * FROM \"" + name + "\"");
    t.columns = sqlite3_column_count(read);
    int step = SQLITE_ROW;
    while ((step = sqlite3_step(read)) == SQLITE_ROW) {
      for (int c = 0; c < t.columns; ++c) {
        const int type = sqlite3_column_type(read, c);
        t.types.push_back(type);
        t.integers.push_back(type == SQLITE_INTEGER ? sqlite3_column_int64(read, c) : 0);
        t.reals.push_back(type == SQLITE_FLOAT ? sqlite3_column_double(read, c) : 0);
        const auto* data = static_cast<const char*>(sqlite3_column_blob(read, c));
        t.bytes.emplace_back(data != nullptr ? data : "",
                             static_cast<size_t>(sqlite3_column_bytes(read, c)));
      }
      ++t.rows;
    }
    if (step != SQLITE_DONE) {
      std::fprintf(stderr, "reading %s: %s\n", name.c_str(), sqlite3_errmsg(db));
      std::exit(1);
    }
    sqlite3_finalize(read);
    if (t.rows > 0) tables.push_back(std::move(t));
  }
  sqlite3_close(db);
  return tables;
}

void InsertRow(sqlite3* db, sqlite3_stmt* insert, const TableRows& t, int64_t row) {
  for (int c = 0; c < t.columns; ++c) {
    const size_t i = static_cast<size_t>(row * t.columns + c);
    switch (t.types[i]) {
      case SQLITE_INTEGER:
        sqlite3_bind_int64(insert, c + 1, t.integers[i]);
        break;
      case SQLITE_FLOAT:
        sqlite3_bind_double(insert, c + 1, t.reals[i]);
        break;
      case SQLITE_TEXT:
        sqlite3_bind_text(insert, c + 1, t.bytes[i].data(), static_cast<int>(t.bytes[i].size()),
                          SQLITE_STATIC);
        break;
      case SQLITE_BLOB:
        sqlite3_bind_blob(insert, c + 1, t.bytes[i].data(), static_cast<int>(t.bytes[i].size()),
                          SQLITE_STATIC);
        break;
      default:
        sqlite3_bind_null(insert, c + 1);
    }
  }
  if (sqlite3_step(insert) != SQLITE_DONE) {
    std::fprintf(stderr, "(d) insert into %s failed: %s\n", t.name.c_str(), sqlite3_errmsg(db));
    std::exit(1);
  }
  sqlite3_reset(insert);
}

// (d): the rows evident's run wrote (final rows: a projection row updated three times is written
// once; and a table without rowid is read, so written, in key order, appending to its B-tree's
// right edge where evident inserts in arrival order: both favour the ceiling), written with the
// sqlite3 library into a fresh store of the same schema and pragmas, in as many transactions as
// evident had batches, each holding its share of every table. Returns the seconds of the writes
// alone.
double WriteRowsAgain(const fs::path& evident_store, const fs::path& target, int64_t events) {
  fs::remove(target);
  {
    auto opened = evident::OpenSqliteStore(target.string());  // creates the same schema
    if (!opened.ok()) std::exit(1);
  }
  sqlite3* db = OpenRaw(target);
  MustExec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA cache_size=-" +
                   std::to_string(evident::SqliteOptions{}.cache_kib));
  const std::vector<TableRows> tables = ReadRowsWritten(evident_store, db);
  static bool described = false;  // which rows (d) writes, once per process
  if (!described) {
    described = true;
    std::printf("(d) writes per run:");
    for (const TableRows& t : tables) std::printf(" %s %lld", t.name.c_str(), (long long)t.rows);
    std::printf("\n");
  }
  std::vector<sqlite3_stmt*> inserts;
  for (const TableRows& t : tables) {
    std::string sql = "INSERT INTO \"" + t.name + "\" VALUES(";
    for (int c = 0; c < t.columns; ++c) sql += c == 0 ? "?" : ",?";
    sqlite3_stmt* insert = nullptr;
    if (sqlite3_prepare_v2(db, (sql + ")").c_str(), -1, &insert, nullptr) != SQLITE_OK) {
      std::fprintf(stderr, "%s: %s\n", sql.c_str(), sqlite3_errmsg(db));
      std::exit(1);
    }
    inserts.push_back(insert);
  }
  const int64_t batches = std::max<int64_t>(1, (events + kBatchCountMax - 1) / kBatchCountMax);
  const auto start = Clock::now();
  for (int64_t b = 0; b < batches; ++b) {
    MustExec(db, "BEGIN IMMEDIATE");
    for (size_t k = 0; k < tables.size(); ++k) {
      const TableRows& t = tables[k];
      for (int64_t row = t.rows * b / batches; row < t.rows * (b + 1) / batches; ++row) {
        InsertRow(db, inserts[k], t, row);
      }
    }
    MustExec(db, "COMMIT");
  }
  for (sqlite3_stmt* insert : inserts) sqlite3_finalize(insert);
  if (sqlite3_close(db) != SQLITE_OK) std::exit(1);  // its last checkpoint, as evident's exit
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// --effects: the whole orders example against (d) alone.
int MeasureWithEffects(const std::string& evident, const fs::path& dir, int64_t count, int rounds) {
  const std::string config = (dir / "evident.yaml").string();
  WriteConfigWithEffects(config);
  WriteEvents(dir / "large.ndjson", count);
  std::printf("consume benchmark, the orders example with effects: %lld events, %d rounds\n",
              static_cast<long long>(count), rounds);
  std::vector<double> ratios;
  for (int round = 1; round <= rounds; ++round) {
    // (d) writes the rows of the latest evident run: an odd round runs evident first, an even
    // round writes the previous round's rows first.
    RunResult run;
    double rows_s = 0;
    if (round % 2 == 1) {
      run = RunEvident(evident, config, dir / "large.ndjson", dir / "large.db", kBatchCountMax);
      rows_s = WriteRowsAgain(dir / "large.db", dir / "rows.db", count);
    } else {
      rows_s = WriteRowsAgain(dir / "large.db", dir / "rows.db", count);
      run = RunEvident(evident, config, dir / "large.ndjson", dir / "large.db", kBatchCountMax);
    }
    const double evident_rate = static_cast<double>(count) / run.seconds;
    const double rows_rate = static_cast<double>(count) / rows_s;
    ratios.push_back(evident_rate / rows_rate);
    std::printf(
        "round %d: (d) the same rows, raw sqlite3 %8.0f events/s | evident %8.0f events/s "
        "| evident/(d) %.3f\n",
        round, rows_rate, evident_rate, ratios.back());
    std::fflush(stdout);
  }
  std::printf("median ratio evident / (d) rows ceiling, with effects: %.3f   (goal >= 0.85)\n",
              Median(ratios));
  PrintFigure("consume_sqlite", ratios);
  fs::remove_all(dir);
  return 0;
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
  const std::string evident = EVIDENT_BINARY;
  const fs::path dir = fs::temp_directory_path() / ("evident-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::vector<std::string> positional;
  bool effects = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--effects") {
      effects = true;
    } else {
      positional.emplace_back(argv[i]);
    }
  }
  const int64_t count = !positional.empty() ? std::stoll(positional[0]) : 1'000'000;
  // The machine is shared and noisy: the sides run alternately, `rounds` times, and the median
  // of the per-round ratios is reported beside every round's figures.
  const int rounds = positional.size() > 1 ? std::max(1, std::stoi(positional[1])) : 5;
  if (effects) return MeasureWithEffects(evident, dir, count, rounds);
  const int64_t small = std::min<int64_t>(100'000, count);
  const int64_t per_event_count = std::min<int64_t>(3'000, count);
  const std::string config = (dir / "evident.yaml").string();
  WriteConfigWithoutEffects(config);
  WriteEvents(dir / "small.ndjson", small);
  WriteEvents(dir / "large.ndjson", count);
  WriteEvents(dir / "per-event.ndjson", per_event_count);

  std::printf("consume benchmark: %lld events, batches of %d, synchronous=FULL, WAL, %d rounds\n",
              static_cast<long long>(count), kBatchCountMax, rounds);
  std::vector<double> ratios_a, ratios_b, bounds_b, ratios_d;
  long large_rss_kib = 0;
  for (int round = 1; round <= rounds; ++round) {
    const double ceiling_s = InsertLedgerRows(dir / "ceiling.db", count);
    const RunResult large =
        RunEvident(evident, config, dir / "large.ndjson", dir / "large.db", kBatchCountMax);
    const double rows_s = WriteRowsAgain(dir / "large.db", dir / "rows.db", count);
    const RunResult per_event =
        RunEvident(evident, config, dir / "per-event.ndjson", dir / "per-event.db", 1);
    const double per_row_s = InsertLedgerRows(dir / "per-row.db", per_event_count, 1);
    large_rss_kib = std::max(large_rss_kib, large.max_rss_kib);
    const double evident_rate = static_cast<double>(count) / large.seconds;
    const double ceiling_rate = static_cast<double>(count) / ceiling_s;
    const double per_event_rate = static_cast<double>(per_event_count) / per_event.seconds;
    ratios_a.push_back(evident_rate / ceiling_rate);
    ratios_b.push_back(evident_rate / per_event_rate);
    ratios_d.push_back(evident_rate * rows_s / static_cast<double>(count));
    const double per_row_rate = static_cast<double>(per_event_count) / per_row_s;
    bounds_b.push_back(ceiling_rate / per_row_rate);
    std::printf(
        "round %d: (a) ceiling %8.0f rows/s | evident %8.0f events/s (process start and schema "
        "compile included) | (b) one transaction per event %6.0f events/s | evident/(a) %.3f | "
        "evident/(b) %.1fx | (c) sqlite3 one row per transaction %6.0f rows/s, (a)/(c) %.1fx | "
        "(d) the same rows raw %8.0f events/s, evident/(d) %.3f\n",
        round, ceiling_rate, evident_rate, per_event_rate, ratios_a.back(), ratios_b.back(),
        per_row_rate, bounds_b.back(), static_cast<double>(count) / rows_s, ratios_d.back());
    std::fflush(stdout);
  }
  const RunResult small_run =
      RunEvident(evident, config, dir / "small.ndjson", dir / "small.db", kBatchCountMax);
  std::printf("median ratio evident / (a) ceiling        : %.3f   (goal >= 0.5)\n",
              Median(ratios_a));
  std::printf("median ratio evident / (b) per-event      : %.1fx  (goal >= 50x)\n",
              Median(ratios_b));
  std::printf("median (a)/(c), the most any (b) ratio can reach on this disk: %.1fx\n",
              Median(bounds_b));
  std::vector<double> share_of_bound;
  for (size_t i = 0; i < ratios_b.size(); ++i) {
    share_of_bound.push_back(ratios_b[i] / bounds_b[i]);
  }
  std::printf("median evident/(b) as a share of that bound, per round: %.2f\n",
              Median(share_of_bound));
  std::printf("median ratio evident / (d) rows ceiling, without effects: %.3f\n", Median(ratios_d));
  std::printf("peak RSS: %lld events %ld KiB, %lld events %ld KiB, ratio %.2f (flat = 1.0)\n",
              static_cast<long long>(small), small_run.max_rss_kib, static_cast<long long>(count),
              large_rss_kib,
              static_cast<double>(large_rss_kib) / static_cast<double>(small_run.max_rss_kib));
  PrintFigure("consume_bench_ledger", ratios_a);
  PrintFigure("consume_bench_fsync_bound", share_of_bound);
  PrintFigure("consume_sqlite_no_effects", ratios_d);
  fs::remove_all(dir);
  return 0;
}
