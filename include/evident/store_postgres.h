// evident/store_postgres.h — the PostgreSQL backend of evident/store.h: one store shared by
// several processes and machines, each Store one connection.
//
// Round trips: a transaction sends its writes without waiting (libpq pipeline mode) and reads
// their results with its next read or its commit. Transaction::Load reads everything a batch
// needs in one round trip and keeps it: the batch's FindLedger, ReadProjection and FindDeferred
// of loaded keys are then answered without asking the server, and its inserts of keys known to
// be absent are sent without waiting. A batch then costs a fixed number of round trips (its
// Load and its Commit), whatever its size.
//
// Deciders of one consumer take turns: a transaction takes an advisory lock per consumer before
// it reads that consumer's rows (StoreOptions::deciders), so that each statement's fresh
// snapshot cannot show it another decider's half-done batch.
//
// Concurrency is the database's: transactions run at READ COMMITTED; a projection put whose
// expected version no longer holds, an insert of a key another writer inserted meanwhile, a
// serialization failure or a deadlock fail with kAborted (roll back and retry the batch); a lock
// held elsewhere past `lock_timeout_ms` is kUnavailable. Snapshots are REPEATABLE READ.
//
// The tables live in the connection's search_path (a schema per deployment:
// "postgresql://u@h/db?options=-csearch_path%3Dorders").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "evident/store.h"

struct pg_conn;

namespace evident {

struct PostgresOptions {
  // How long a statement waits for a lock another transaction holds, in milliseconds, before
  // the write is refused (kUnavailable).
  int64_t lock_timeout_ms = 5000;
  // A transaction that says nothing to the server for this long is ended by it (its session
  // closed, its locks released, its commit refused); 0: never. See StoreOptions.
  int64_t idle_transaction_timeout_ms = 0;
  // Open an existing store for reading only: never create tables, never write.
  bool read_only = false;
  // Create the tables when the database has none. false: a database without them is kNotFound.
  bool create = true;
  // Whether this store's transactions take their consumers' lock shared (StoreOptions).
  bool deciders_shared = false;
};

// The schema layout this build writes, recorded in the `evident_schema` table. A store of an
// older layout is migrated by `evident store migrate` (MigratePostgresStore); opening one is
// refused until then, since other processes may still run the older program. A store of a newer
// layout is refused (kFailedPrecondition) rather than misread.
// Layout 6 added each receipt's trace context, layout 7 retention's runs and its index of closed
// gaps, layout 8 contract sets kept in the store (store_contracts.h), layout 9 consumer sets
// (stored_consumers.h), layout 10 the digests of receipts retention compacted
// (store_retention.h), layout 11 the digests of the keys of intents it removed.
inline constexpr int64_t kPostgresLayoutVersion = 11;

// Opens the store at a libpq connection URI ("postgresql://..." or "postgres://...").
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& uri,
                                                 const PostgresOptions& options = {});

// Brings the store at `uri` to kPostgresLayoutVersion (creating it when absent), every step in
// one transaction under an advisory lock; returns the layout found before.
Result<int64_t> MigratePostgresStore(const std::string& uri);

// Creates (or replaces) evident's functions in the schema of the store at `uri` (its
// current_schema), from the module evident_pg.so at `library`, a path on the database server
// ("/usr/lib/evident/evident_pg.so", or "$libdir/evident_pg"): evident_append,
// evident_try_append and evident_compensate (docs/any-language.md), each bound to that schema's
// store (SET search_path), whatever the caller's search_path. One transaction; the server loads
// the module to check it. A superuser's step (C functions), apart from `store migrate`.
// kNotFound when the database has no store there, kFailedPrecondition at another layout.
struct PostgresFunctionsOptions {
  // Empty: the functions run with their caller's rights (SECURITY INVOKER): a producer needs the
  // store's grants (INSERT on outbox, ...), and could then insert without them. A role: they run
  // with that role's rights (SECURITY DEFINER, owned by it; it must hold INSERT on outbox and
  // SELECT on the store's tables), EXECUTE is revoked from PUBLIC, and a producer needs only
  // USAGE on the schema and EXECUTE on the functions: none of the store's tables, so the
  // checks cannot be gone around.
  std::string definer;
};
struct PostgresFunctions {
  std::string schema;
  std::vector<std::string> names;
};
Result<PostgresFunctions> InstallPostgresFunctions(const std::string& uri,
                                                   const std::string& library,
                                                   const PostgresFunctionsOptions& options = {});

// The libpq connection of `transaction` (a transaction of a PostgreSQL store), for the caller's
// own statements in that transaction, as SqliteConnection: a business row and an outbox row
// then commit together or not at all. Until the transaction's next call the connection is the
// caller's, out of pipeline mode, so that libpq's synchronous calls (PQexec, PQexecParams)
// work. Read every result of yours (PQexec does), leave COMMIT and ROLLBACK to the
// transaction, and write tables of your own only: the transaction keeps what it read of
// evident's. A statement of yours that fails aborts the server's transaction: the
// transaction's next call then fails (kAborted) and its Commit is refused.
// kInvalidArgument for a transaction of another store; the first failure among the
// transaction's writes so far, when one failed.
Result<pg_conn*> PostgresConnection(Transaction& transaction);

// Round trips to the server this store's connection has made (for tests and metrics); -1 when
// `store` is not a PostgreSQL store.
int64_t PostgresRoundTrips(const Store& store);

// The multi-row INSERTs this store's writes have sent the buffered ledger and projection rows in
// (for tests: a batch sends them in one or two, whatever its size); -1 when `store` is not a
// PostgreSQL store.
int64_t PostgresBufferedInserts(const Store& store);

}  // namespace evident
