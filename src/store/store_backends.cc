// The conformance suite's backends: adding one is one entry in StoreBackends().
#include "store/store_backends.h"

#include <fstream>
#include <map>
#include <mutex>

#include "evident/fault_store.h"
#include "evident/store_memory.h"
#include "evident/store_postgres.h"
#include "evident/store_sqlite.h"
#include "store/postgres/test_database.h"

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

}  // namespace

std::vector<StoreBackend> StoreBackends() {
  return {
      {"memory", &OpenMemory, false},
      {"fault_over_memory", &OpenFaultOverMemory, false},
      {"sqlite", &OpenSqlite},
      {"postgresql", &OpenPostgres},
      {"fault_over_postgresql", &OpenFaultOverPostgres},
  };
}

}  // namespace evident
