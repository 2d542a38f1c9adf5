// The conformance suite's backends: adding one is one entry in StoreBackends().
#include "store/store_backends.h"

#include <sqlite3.h>

#include <fstream>
#include <map>
#include <mutex>

#include "evident/fault_store.h"
#include "evident/store_memory.h"
#include "evident/store_postgres.h"
#include "evident/store_sqlite.h"
#include "evident/store_wrapper.h"
#include "store/postgres/test_database.h"
#ifdef EVIDENT_PG_SPI_TEST_MODULE
#include "pg_ext/spi_proxy.h"
#endif

namespace evident {
namespace {

namespace fs = std::filesystem;

// The memory database "kept in" `dir`: a file there names it, so that a directory the suite
// empties starts a fresh database, and reopening the directory finds the same one.
Result<std::shared_ptr<MemoryDatabase>> MemoryDatabaseIn(const fs::path& dir) {
  static std::mutex mutex;
  static int64_t databases_made = 0;
  std::lock_guard lock(mutex);
  const fs::path marker = dir / "memory-database";
  std::string name;
  std::getline(std::ifstream(marker), name);
  if (name.empty()) {
    name = "conformance-" + std::to_string(++databases_made);
    std::ofstream out(marker);
    out << name << "\n";
    if (!out.flush()) return Status::IoError("cannot write " + marker.string());
  }
  return NamedMemoryDatabase(name);
}

Result<std::unique_ptr<Store>> OpenMemory(const fs::path& dir, const StoreOptions&) {
  EVIDENT_ASSIGN_OR_RETURN(std::shared_ptr<MemoryDatabase> database, MemoryDatabaseIn(dir));
  return OpenMemoryStore(std::move(database));
}

// The fault wrapper with no faults set: it must change nothing.
Result<std::unique_ptr<Store>> OpenFaultOverMemory(const fs::path& dir,
                                                   const StoreOptions& options) {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> inner, OpenMemory(dir, options));
  return std::unique_ptr<Store>(new FaultStore(std::move(inner)));
}

// A short busy timeout: the suite's second writer is refused after it, not after the default 5 s.
Result<std::unique_ptr<Store>> OpenSqlite(const fs::path& dir, const StoreOptions&) {
  return OpenSqliteStore((dir / "store.db").string(), {.busy_timeout_ms = 100});
}

// A connection the application opened (the SQLite extension's case): each store, transaction
// and snapshot holds it, so that it closes after the last of them, as an application would. The
// holder is the first base: it is destroyed after the wrapper (and the rollback of an unfinished
// transaction the wrapped one does then). `joined`: the application has a transaction of its
// own open around each of evident's (BEGIN IMMEDIATE, or BEGIN for a snapshot), which evident's
// joins as a savepoint; the holder ends it after evident's, with evident's outcome.
using Connection = std::shared_ptr<sqlite3>;
struct ConnectionHolder {
  Connection db;
  bool joined = false;
  ~ConnectionHolder() {
    if (joined && sqlite3_get_autocommit(db.get()) == 0) (void)End("ROLLBACK");
  }
  Status End(const char* sql) const {
    if (sqlite3_exec(db.get(), sql, nullptr, nullptr, nullptr) == SQLITE_OK) return Status::Ok();
    return Status::IoError(std::string(sql) + ": " + sqlite3_errmsg(db.get()));
  }
};

class ConnectionTransaction final : private ConnectionHolder, public TransactionWrapper {
 public:
  ConnectionTransaction(std::unique_ptr<Transaction> target, Connection connection, bool join)
      : ConnectionHolder{std::move(connection), join}, TransactionWrapper(std::move(target)) {}
  Status Commit() override {
    const Status committed = TransactionWrapper::Commit();
    if (!joined) return committed;
    if (committed.ok()) return End("COMMIT");
    (void)End("ROLLBACK");
    return committed;
  }
  Status Rollback() override {
    const Status rolled_back = TransactionWrapper::Rollback();
    return joined ? End("ROLLBACK") : rolled_back;
  }
};
class ConnectionSnapshot final : private ConnectionHolder, public SnapshotWrapper {
 public:
  ConnectionSnapshot(std::unique_ptr<Snapshot> target, Connection connection, bool join)
      : ConnectionHolder{std::move(connection), join}, SnapshotWrapper(std::move(target)) {}
};
class ConnectionStore final : private ConnectionHolder, public StoreWrapper {
 public:
  ConnectionStore(std::unique_ptr<Store> target, Connection connection, bool join)
      : ConnectionHolder{std::move(connection), false},
        StoreWrapper(std::move(target)),
        join_(joined) {}
  Result<std::unique_ptr<Transaction>> Begin() override {
    EVIDENT_RETURN_IF_ERROR(Open("BEGIN IMMEDIATE"));
    Result<std::unique_ptr<Transaction>> tx = StoreWrapper::Begin();
    if (!tx.ok()) return Close(tx.status());
    return std::unique_ptr<Transaction>(new ConnectionTransaction(std::move(*tx), db, join_));
  }
  Result<std::unique_ptr<Snapshot>> Read() override {
    EVIDENT_RETURN_IF_ERROR(Open("BEGIN"));
    Result<std::unique_ptr<Snapshot>> snapshot = StoreWrapper::Read();
    if (!snapshot.ok()) return Close(snapshot.status());
    return std::unique_ptr<Snapshot>(new ConnectionSnapshot(std::move(*snapshot), db, join_));
  }

 private:
  // The application's own transaction around evident's; busy as SQLite's busy handler says.
  Status Open(const char* begin) const {
    if (!join_ || sqlite3_exec(db.get(), begin, nullptr, nullptr, nullptr) == SQLITE_OK) {
      return Status::Ok();
    }
    const int code = sqlite3_extended_errcode(db.get()) & 0xFF;
    const std::string message = std::string(begin) + ": " + sqlite3_errmsg(db.get());
    return code == SQLITE_BUSY ? Status::Unavailable(message) : Status::IoError(message);
  }
  Status Close(const Status& status) const {
    if (join_) (void)End("ROLLBACK");
    return status;
  }
  bool join_ = false;
};

// The caller's-connection backend (OpenSqliteStoreOnConnection) on a file the SQLite backend
// created, the connection set as the extension requires (WAL, synchronous=FULL) with the same
// short busy timeout.
Result<std::unique_ptr<Store>> OpenConnection(const fs::path& dir, bool joined) {
  const std::string path = (dir / "store.db").string();
  EVIDENT_RETURN_IF_ERROR(OpenSqliteStore(path).status());
  sqlite3* raw = nullptr;
  if (sqlite3_open(path.c_str(), &raw) != SQLITE_OK) {
    sqlite3_close(raw);
    return Status::IoError("cannot open " + path);
  }
  Connection db(raw, [](sqlite3* d) { sqlite3_close_v2(d); });
  sqlite3_busy_timeout(raw, 100);
  if (sqlite3_exec(raw, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Status::IoError("cannot set synchronous on " + path);
  }
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenSqliteStoreOnConnection(raw));
  return std::unique_ptr<Store>(new ConnectionStore(std::move(store), std::move(db), joined));
}
Result<std::unique_ptr<Store>> OpenSqliteConnection(const fs::path& dir, const StoreOptions&) {
  return OpenConnection(dir, false);
}
Result<std::unique_ptr<Store>> OpenSqliteConnectionJoined(const fs::path& dir,
                                                          const StoreOptions&) {
  return OpenConnection(dir, true);
}

// A schema of the tests' PostgreSQL server per directory: a file there names it, as for the
// memory backend. A short lock timeout, as SQLite's busy timeout above.
Result<std::unique_ptr<Store>> OpenPostgres(const fs::path& dir, const StoreOptions& options) {
  const fs::path marker = dir / "postgres-schema";
  std::string uri;
  std::getline(std::ifstream(marker), uri);
  if (uri.empty()) {
    EVIDENT_ASSIGN_OR_RETURN(uri, FreshPostgresSchema(dir.filename().string()));
    std::ofstream out(marker);
    out << uri << "\n";
    if (!out.flush()) return Status::IoError("cannot write " + marker.string());
  }
  return OpenPostgresStore(
      uri, {.lock_timeout_ms = 100,
            .deciders_shared = options.deciders == StoreOptions::Deciders::kShared});
}

// The fault wrapper around PostgreSQL, no faults set: every call, the group leases, claims and
// locks included, must reach the server as it would unwrapped (store_wrapper.h).
Result<std::unique_ptr<Store>> OpenFaultOverPostgres(const fs::path& dir,
                                                     const StoreOptions& options) {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> inner, OpenPostgres(dir, options));
  return std::unique_ptr<Store>(new FaultStore(std::move(inner)));
}

#ifdef EVIDENT_PG_SPI_TEST_MODULE
// The PostgreSQL store with every statement run inside the server over SPI, in the transaction of
// the store's own libpq connection (pg_ext/spi_proxy.h): as evident_pg.so runs it inside a
// caller's transaction. A schema per directory, as OpenPostgres.
Result<std::unique_ptr<Store>> OpenPostgresSpi(const fs::path& dir, const StoreOptions& options) {
  static const Result<std::string> module = CopyToTestServer(EVIDENT_PG_SPI_TEST_MODULE);
  EVIDENT_RETURN_IF_ERROR(module.status());
  const fs::path marker = dir / "postgres-schema";
  std::string uri;
  std::getline(std::ifstream(marker), uri);
  if (uri.empty()) {
    EVIDENT_ASSIGN_OR_RETURN(uri, FreshPostgresSchema(dir.filename().string()));
    EVIDENT_RETURN_IF_ERROR(MigratePostgresStore(uri).status());
    EVIDENT_RETURN_IF_ERROR(InstallSpiStatementFunction(uri, *module));
    std::ofstream out(marker);
    out << uri << "\n";
    if (!out.flush()) return Status::IoError("cannot write " + marker.string());
  }
  return OpenSpiProxyStore(uri, options.deciders == StoreOptions::Deciders::kShared);
}
#endif

}  // namespace

std::vector<StoreBackend> StoreBackends() {
  return {
      {"memory", &OpenMemory, false},
      {"fault_over_memory", &OpenFaultOverMemory, false},
      {"sqlite", &OpenSqlite},
      {"sqlite_connection", &OpenSqliteConnection},
      {"sqlite_connection_joined", &OpenSqliteConnectionJoined},
      {"postgresql", &OpenPostgres},
      {"fault_over_postgresql", &OpenFaultOverPostgres},
#ifdef EVIDENT_PG_SPI_TEST_MODULE
      {"postgresql_spi", &OpenPostgresSpi},
#endif
  };
}

}  // namespace evident
