// evident/store_sqlite.h — the SQLite backend of evident/store.h: the embedded default, one file
// in WAL mode, one writer at a time (other processes wait up to busy_timeout_ms, then are refused
// with the lock holder named).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "evident/store.h"

struct sqlite3;

namespace evident {

struct SqliteOptions {
  // PRAGMA synchronous: "FULL" (default: a commit survives power loss), "NORMAL" (survives a
  // process crash, not power loss), "OFF" (benchmarks only).
  std::string synchronous = "FULL";
  // Page cache, in KiB. Bounds the store's memory whatever the size of the database.
  int64_t cache_kib = 16 * 1024;
  // How long to wait for a lock held by another process, in milliseconds. A writer that finds
  // the store locked past this is refused (kUnavailable) with the holding process named.
  int64_t busy_timeout_ms = 5000;
  // Open an existing store for reading only: never create the file, never change it (no WAL
  // switch, no tables, no migrations, no checkpoints). A missing file, or a file that is not an
  // evident store, is refused (kNotFound, kFailedPrecondition). For evidence, gaps and guards.
  bool read_only = false;
  // Create the file when absent (a writable open). false: a missing file is kNotFound.
  bool create = true;
  // WAL checkpoints (copying the WAL into the database file, then that file's fsync), in pages
  // of the database (4 KiB unless the file says otherwise). After each commit that leaves at
  // least `checkpoint_wal_pages` in the WAL (SQLite's own automatic threshold; pages already
  // copied count until the WAL restarts), a checkpoint runs: on a thread and connection of
  // their own when the commit wrote at least `checkpoint_thread_commit_pages`, and the next
  // commit does not wait for it; otherwise on the committing connection, as SQLite does.
  // `checkpoint_thread` false: always on the committing connection.
  int64_t checkpoint_wal_pages = 1000;
  bool checkpoint_thread = true;
  int64_t checkpoint_thread_commit_pages = 64;
  // With the thread, a commit that leaves this many pages in the WAL waits for the thread's
  // checkpoint and checkpoints on its own connection, which lets the WAL restart from its
  // beginning (it cannot while commits keep coming). The WAL then holds at most this many pages
  // plus one commit's, unless a reader elsewhere holds an old snapshot (no checkpoint may copy
  // past it). The WAL file keeps its largest size until the store is closed.
  int64_t wal_pages_max = 16000;
};

// The layout version this build writes. A store of an older layout is migrated when opened for
// writing (each step in its own transaction, recorded in the `evident_schema` table); a store of
// a newer layout is refused (kFailedPrecondition) rather than misread.
// Layout 3 added the outbox table, layout 4 the quarantine and gap records, layout 5 effect
// intents, their logs and the compensation ledger, layout 6 what each receipt wrote, layout 7
// parked outbox rows, layout 8 the basis of intents, what compensations did, gap records from
// the gap's opening with how and why it closed, applied payload digests and corrections, layout 9
// consumer groups, layout 10 each receipt's trace context (traceparent, tracestate), layout 11
// retention's runs and its index of closed gaps (a store created at 11 or later also has
// auto_vacuum=INCREMENTAL, so retention can give its space back), layout 12 contract sets kept
// in the store (store_contracts.h), layout 13 consumer sets kept in the store
// (stored_consumers.h), layout 14 the digests of receipts retention compacted (store_retention.h),
// layout 15 the digests of the keys of intents it removed.
inline constexpr int64_t kSqliteLayoutVersion = 15;

// Opens (creating when absent) a SQLite store at `path` in WAL mode.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteOptions& options = {});

// A store over a connection the caller opened and keeps (the SQLite extension's functions run on
// the connection they were called on): nothing of the connection is changed (no pragma, no
// busy handler, no WAL hook: no checkpoint of its own), nothing is cached between transactions
// but prepared statements, and the connection is never closed; destroy the store before the
// connection closes. A Transaction (or Snapshot) joins the transaction open on the connection
// as a savepoint, so its writes commit or roll back with the caller's; with none open it is a
// transaction of its own (BEGIN IMMEDIATE). Refused (kFailedPrecondition, saying which and what
// to run) unless the connection is in WAL mode at synchronous FULL or EXTRA, on a store of
// kSqliteLayoutVersion (`evident store migrate` prepares a file).
// `cache`, when given, keeps what the store learnt of the file's layout for the next store on the
// same connection, valid while the file's schema cookie (PRAGMA schema_version) is unchanged.
struct SqliteConnectionCache {
  int64_t schema_version = -1;  // the cookie the facts below were read under; -1: none yet
  int64_t layout = 0;
  bool subject_first = false;
  bool outbox_bytes_in_row = false;
};
Result<std::unique_ptr<Store>> OpenSqliteStoreOnConnection(sqlite3* db,
                                                           SqliteConnectionCache* cache = nullptr);

// The connection of an open SQLite transaction, for the caller's own statements to join it
// (they commit or roll back with it). Null when `transaction` is not a SQLite one. Valid until
// the transaction ends; do not BEGIN, COMMIT or ROLLBACK on it.
sqlite3* SqliteConnection(Transaction& transaction);

// Process-wide SQLite settings for a program that owns its process (the evident CLI does):
// memory statistics off, which otherwise take a global mutex on every SQLite allocation. Call
// before any store is opened; false when SQLite was already initialized (nothing changes then).
// A library embedding evident in a larger program leaves this to that program.
bool ConfigureSqliteProcess();

}  // namespace evident
