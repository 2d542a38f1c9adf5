// evident_append inside application transactions against a plain INSERT of the same bytes into
// a table of the same file, measured in the same run, on connections set up alike:
//   evident: BEGIN IMMEDIATE; the business write (an upsert of the order's row); SELECT
//            evident_append(?) (envelope checks, the store's contracts, the payload schema, the
//            outbox row); COMMIT;
//   plain:   BEGIN IMMEDIATE; the same business write; INSERT INTO plain_outbox(bytes)
//            VALUES(?); COMMIT (what an outbox table without evident does: nothing checked).
// `batch` events per application transaction. Both sides run on one connection of this
// process's SQLite with the module loaded, WAL, synchronous=FULL, on a fresh store file per run
// (migrated, the orders example's contracts pushed: not timed); the sides alternate, round by
// round; the median of the per-round ratios is the figure.
//
//   build/bench/sqlite_ext_bench [N=20000] [ROUNDS=5] [BATCH=1]      (see docs/BENCHMARKS.md)
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "append_rounds.h"
#include "evident/store_sqlite.h"
#include "evident/stored_contracts.h"
#include "order_events.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "sqlite_ext_bench: %s\n", what.c_str());
  std::exit(1);
}

void Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error != nullptr ? error : "?";
    sqlite3_free(error);
    Die(sql + ": " + message);
  }
}

void RemoveStore(const fs::path& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
}

// A fresh store with the orders contracts pushed, and the application's connection to it.
sqlite3* FreshConnection(const fs::path& path) {
  RemoveStore(path);
  {
    auto store = evident::OpenSqliteStore(path.string());
    if (!store.ok()) Die(store.status().ToString());
    const evident::ContractsPushOptions options;  // the events carry `schemaversion`
    auto push = evident::PushContractsDir(
        **store, std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts", options, 1);
    if (!push.ok() || push->outcome != evident::PushOutcome::kPushed) Die("push failed");
  }
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) Die("cannot open " + path.string());
  Exec(db, "PRAGMA synchronous=FULL");
  char* error = nullptr;
  if (sqlite3_enable_load_extension(db, 1) != SQLITE_OK ||
      sqlite3_load_extension(db, EVIDENT_SQLITE_MODULE, nullptr, &error) != SQLITE_OK) {
    Die(std::string("cannot load the module: ") + (error != nullptr ? error : "?"));
  }
  Exec(db, "CREATE TABLE orders(id TEXT PRIMARY KEY, version INTEGER NOT NULL)");
  Exec(db, "CREATE TABLE plain_outbox(seq INTEGER PRIMARY KEY, bytes BLOB NOT NULL)");
  return db;
}

// One side's run: `append` is the statement that takes the event's bytes.
double Run(const fs::path& path, const std::vector<std::string>& events, size_t batch,
           const char* append_sql) {
  sqlite3* db = FreshConnection(path);
  sqlite3_stmt* business = nullptr;
  sqlite3_stmt* append = nullptr;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO orders(id, version) VALUES(?1, 1) ON CONFLICT(id) DO "
                         "UPDATE SET version = version + 1",
                         -1, &business, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db, append_sql, -1, &append, nullptr) != SQLITE_OK) {
    Die(std::string("prepare: ") + sqlite3_errmsg(db));
  }
  const auto start = Clock::now();
  for (size_t i = 0; i < events.size(); ++i) {
    if (i % batch == 0) Exec(db, "BEGIN IMMEDIATE");
    const std::string order = "order-" + std::to_string(i / 3);
    sqlite3_bind_text(business, 1, order.data(), static_cast<int>(order.size()), SQLITE_STATIC);
    if (sqlite3_step(business) != SQLITE_DONE) Die(sqlite3_errmsg(db));
    sqlite3_reset(business);
    sqlite3_bind_text(append, 1, events[i].data(), static_cast<int>(events[i].size()),
                      SQLITE_STATIC);
    const int rc = sqlite3_step(append);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      Die("event " + std::to_string(i) + ": " + sqlite3_errmsg(db));
    sqlite3_reset(append);
    if (i % batch == batch - 1 || i == events.size() - 1) Exec(db, "COMMIT");
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  sqlite3_finalize(business);
  sqlite3_finalize(append);
  sqlite3_close(db);
  RemoveStore(path);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::stoul(argv[1]) : 20'000;
  const int rounds = argc > 2 ? std::max(1, std::stoi(argv[2])) : 5;
  const size_t batch = argc > 3 ? std::max<size_t>(1, std::stoul(argv[3])) : 1;
  const std::vector<std::string> events = evident::bench::MakeContractOrderEvents(count);
  const fs::path dir =
      fs::temp_directory_path() / ("evident-sqlite-ext-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "shop.db";
  std::printf(
      "evident_append benchmark: %zu events, %zu per application transaction, "
      "synchronous=FULL, WAL, %d rounds\n",
      count, batch, rounds);
  constexpr const char* kEvident = "SELECT evident_append(?1)";
  constexpr const char* kPlain = "INSERT INTO plain_outbox(bytes) VALUES(?1)";
  evident::bench::AppendRounds(
      rounds, count, [&](int) { return Run(path, events, batch, kPlain); },
      [&](int) { return Run(path, events, batch, kEvident); });
  fs::remove_all(dir);
  return 0;
}
