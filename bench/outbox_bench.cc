// Outbox::Append into a SQLite store against raw sqlite3 INSERTs of the same rows, measured in
// the same run, in transactions of the same size, with the same durability:
//   evident: Outbox::Append (envelope checks, payload schema, then Transaction::AppendOutbox)
//            into an OpenSqliteStore store, `batch` events per transaction;
//   raw:     one prepared INSERT per row into the store's own outbox table (the columns
//            AppendOutbox writes, its unique and partial indexes), `batch` rows per BEGIN
//            IMMEDIATE .. COMMIT, with the pragmas OpenSqliteStore sets (WAL, synchronous=FULL,
//            its 16 MiB page cache, foreign_keys on) and SQLite's own checkpoints;
//   (c):     Transaction::AppendOutbox of the same rows, no checks: splits evident's cost between
//            the checks and the store layer.
// The row fields the raw side binds (source, id, type, subject, subject version, partition) are
// taken, before timing, from an Outbox's append of the same events to a memory store. Every
// side starts from a fresh store file; the sides alternate, round by round; the median of the
// per-round ratios is the figure.
//
//   build/bench/outbox_bench [N=100000] [ROUNDS=5] [BATCH=256]      (see docs/BENCHMARKS.md)
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "evident/outbox.h"
#include "evident/store.h"
#include "evident/store_memory.h"
#include "evident/store_sqlite.h"
#include "median.h"
#include "order_events.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int64_t kNowMs = 1'785'000'000'000;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "outbox_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string Contracts() { return std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts"; }

std::unique_ptr<evident::Outbox> NewOutbox() {
  auto outbox = evident::Outbox::Create({.contracts_dir = Contracts()});
  if (!outbox.ok()) Die(outbox.status().ToString());
  return std::move(outbox).value();
}

void RemoveStore(const fs::path& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
}

std::unique_ptr<evident::Store> OpenFresh(const fs::path& path) {
  RemoveStore(path);
  auto store = evident::OpenSqliteStore(path.string());
  if (!store.ok()) Die(store.status().ToString());
  return std::move(store).value();
}

// The rows an Outbox makes of `events` (appended to a memory store), for the raw side.
std::vector<evident::OutboxRow> RowsOf(const std::vector<std::string>& events) {
  auto store = evident::OpenMemoryStore(evident::NewMemoryDatabase());
  if (!store.ok()) Die(store.status().ToString());
  std::unique_ptr<evident::Outbox> outbox = NewOutbox();
  auto tx = (*store)->Begin();
  for (const std::string& event : events) {
    auto decision = outbox->Append(**tx, event, kNowMs);
    if (!decision.ok() || decision->outcome != evident::OutboxDecisionOutcome::kAppended) {
      Die("an event was not appended: " + (decision.ok()
                                               ? decision->reason + " " + decision->message
                                               : decision.status().ToString()));
    }
  }
  if (auto s = (*tx)->Commit(); !s.ok()) Die(s.ToString());
  auto rows = (*store)->Read().value()->OutboxRows(evident::OutboxSelect::kAll, 0,
                                                   static_cast<int64_t>(events.size()));
  if (!rows.ok() || rows->rows.size() != events.size()) Die("rows not read back");
  return std::move(rows->rows);
}

// evident: Outbox::Append, `batch` per transaction. Opening the store and compiling the
// contracts are not timed.
double RunEvident(const fs::path& path, const std::vector<std::string>& events, size_t batch) {
  std::unique_ptr<evident::Store> store = OpenFresh(path);
  std::unique_ptr<evident::Outbox> outbox = NewOutbox();
  const auto start = Clock::now();
  for (size_t i = 0; i < events.size(); i += batch) {
    auto tx = store->Begin();
    if (!tx.ok()) Die(tx.status().ToString());
    for (size_t j = i; j < std::min(events.size(), i + batch); ++j) {
      auto decision = outbox->Append(**tx, events[j], kNowMs);
      if (!decision.ok() || decision->outcome != evident::OutboxDecisionOutcome::kAppended) {
        Die("evident: event " + std::to_string(j) + " not appended");
      }
    }
    if (auto s = (*tx)->Commit(); !s.ok()) Die(s.ToString());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  store.reset();
  RemoveStore(path);
  return seconds;
}

// (c): the store layer alone, Transaction::AppendOutbox of the prepared rows.
double RunStoreLayer(const fs::path& path, const std::vector<evident::OutboxRow>& rows,
                     size_t batch) {
  std::unique_ptr<evident::Store> store = OpenFresh(path);
  const auto start = Clock::now();
  for (size_t i = 0; i < rows.size(); i += batch) {
    auto tx = store->Begin();
    if (!tx.ok()) Die(tx.status().ToString());
    for (size_t j = i; j < std::min(rows.size(), i + batch); ++j) {
      auto appended = (*tx)->AppendOutbox(rows[j]);
      if (!appended.ok() || appended->outcome != evident::OutboxOutcome::kAppended) {
        Die("store layer: row " + std::to_string(j) + " not appended");
      }
    }
    if (auto s = (*tx)->Commit(); !s.ok()) Die(s.ToString());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  store.reset();
  RemoveStore(path);
  return seconds;
}

void Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error != nullptr ? error : "?";
    sqlite3_free(error);
    Die(sql + ": " + message);
  }
}

// raw: prepared INSERTs into the outbox table of a freshly created store (so the table and its
// indexes are exactly the store's), with the store's pragmas.
double RunRaw(const fs::path& path, const std::vector<evident::OutboxRow>& rows, size_t batch) {
  OpenFresh(path).reset();  // creates the schema, then closes
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    Die("raw: cannot open " + path.string());
  }
  Exec(db, "PRAGMA journal_mode=WAL");
  Exec(db, "PRAGMA synchronous=FULL");
  Exec(db, "PRAGMA cache_size=-" + std::to_string(evident::SqliteOptions{}.cache_kib));
  Exec(db, "PRAGMA foreign_keys=ON");
  // The store's layout: the row, and its bytes in outbox_body (sqlite_store.cc, layout 4).
  sqlite3_stmt* insert = nullptr;
  sqlite3_stmt* body = nullptr;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO outbox(source, event_id, type, subject, subject_version, "
                         "event_partition, created_at_ms) VALUES(?1,?2,?3,?4,?5,?6,?8)",
                         -1, &insert, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "INSERT INTO outbox_body(seq, bytes) VALUES(?1,?2)", -1, &body,
                         nullptr) != SQLITE_OK) {
    Die(std::string("raw: prepare: ") + sqlite3_errmsg(db));
  }
  const auto start = Clock::now();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i % batch == 0) Exec(db, "BEGIN IMMEDIATE");
    const evident::OutboxRow& r = rows[i];
    sqlite3_bind_text(insert, 1, r.source.data(), static_cast<int>(r.source.size()), SQLITE_STATIC);
    sqlite3_bind_text(insert, 2, r.event_id.data(), static_cast<int>(r.event_id.size()),
                      SQLITE_STATIC);
    sqlite3_bind_text(insert, 3, r.type.data(), static_cast<int>(r.type.size()), SQLITE_STATIC);
    sqlite3_bind_text(insert, 4, r.subject.data(), static_cast<int>(r.subject.size()),
                      SQLITE_STATIC);
    if (r.subject_version.has_value()) {
      sqlite3_bind_int64(insert, 5, *r.subject_version);
    } else {
      sqlite3_bind_null(insert, 5);
    }
    sqlite3_bind_int64(insert, 6, r.partition);
    sqlite3_bind_int64(insert, 8, r.created_at_ms);
    if (sqlite3_step(insert) != SQLITE_DONE) Die(std::string("raw: ") + sqlite3_errmsg(db));
    sqlite3_reset(insert);
    sqlite3_bind_int64(body, 1, sqlite3_last_insert_rowid(db));
    sqlite3_bind_blob(body, 2, r.bytes.data(), static_cast<int>(r.bytes.size()), SQLITE_STATIC);
    if (sqlite3_step(body) != SQLITE_DONE) Die(std::string("raw: ") + sqlite3_errmsg(db));
    sqlite3_reset(body);
    if (i % batch == batch - 1 || i == rows.size() - 1) Exec(db, "COMMIT");
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  sqlite3_finalize(insert);
  sqlite3_finalize(body);
  sqlite3_close(db);
  RemoveStore(path);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  // The same process-wide SQLite settings as the evident binary, for every side.
  evident::ConfigureSqliteProcess();
  const size_t count = argc > 1 ? std::stoul(argv[1]) : 100'000;
  const int rounds = argc > 2 ? std::max(1, std::stoi(argv[2])) : 5;
  const size_t batch = argc > 3 ? std::max<size_t>(1, std::stoul(argv[3])) : 256;
  const std::vector<std::string> events = evident::bench::MakeContractOrderEvents(count);
  const std::vector<evident::OutboxRow> rows = RowsOf(events);
  size_t bytes = 0;
  for (const std::string& e : events) bytes += e.size();
  const fs::path dir =
      fs::temp_directory_path() / ("evident-outbox-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "outbox.db";

  std::printf(
      "outbox benchmark: %zu events, %.0f bytes on average, %zu per transaction, "
      "synchronous=FULL, WAL, %d rounds\n",
      count, static_cast<double>(bytes) / static_cast<double>(count), batch, rounds);
  std::vector<double> ratios, store_ratios;
  for (int round = 1; round <= rounds; ++round) {
    double raw_s = 0, evident_s = 0, store_s = 0;
    if (round % 2 == 1) {
      raw_s = RunRaw(path, rows, batch);
      evident_s = RunEvident(path, events, batch);
      store_s = RunStoreLayer(path, rows, batch);
    } else {
      store_s = RunStoreLayer(path, rows, batch);
      evident_s = RunEvident(path, events, batch);
      raw_s = RunRaw(path, rows, batch);
    }
    const double n = static_cast<double>(count);
    ratios.push_back(raw_s / evident_s);
    store_ratios.push_back(raw_s / store_s);
    std::printf(
        "round %d: raw sqlite3 %8.0f rows/s | evident Outbox::Append %8.0f events/s | (c) "
        "AppendOutbox alone %8.0f rows/s | evident/raw %.3f | (c)/raw %.3f | per event: raw "
        "%.2f us, checks %.2f us, store layer over raw %.2f us\n",
        round, n / raw_s, n / evident_s, n / store_s, ratios.back(), store_ratios.back(),
        raw_s / n * 1e6, (evident_s - store_s) / n * 1e6, (store_s - raw_s) / n * 1e6);
    std::fflush(stdout);
  }
  std::printf("median ratio evident Outbox::Append / raw sqlite3 : %.3f   (goal >= 0.5)\n",
              evident::bench::Median(ratios));
  std::printf("median ratio (c) AppendOutbox alone / raw sqlite3 : %.3f\n",
              evident::bench::Median(store_ratios));
  fs::remove_all(dir);
  return 0;
}
