// OpenStore(uri): the scheme table. Adding a backend adds one row here (and its library to
// src/store/CMakeLists.txt).
#include <array>
#include <functional>

#include "evident/store.h"
#include "evident/store_memory.h"
#include "evident/store_postgres.h"
#include "evident/store_sqlite.h"

namespace evident {
namespace {

struct Scheme {
  std::string_view prefix;  // "sqlite:"
  std::string_view usage;   // for the refusal message
  Result<std::unique_ptr<Store>> (*open)(std::string_view rest, const StoreOptions& options);
};

Result<std::unique_ptr<Store>> OpenSqlite(std::string_view path, const StoreOptions& options) {
  return OpenSqliteStore(std::string(path),
                         SqliteOptions{.busy_timeout_ms = options.busy_timeout_ms,
                                       .read_only = options.read_only,
                                       .create = options.create});
}

Result<std::unique_ptr<Store>> OpenMemory(std::string_view name, const StoreOptions& options) {
  if (options.read_only) {
    return Status::InvalidArgument("a memory store cannot be opened read-only");
  }
  return OpenMemoryStore(NamedMemoryDatabase(name));
}

// The whole URI goes to libpq, scheme included.
Result<std::unique_ptr<Store>> OpenPostgresql(std::string_view rest, const StoreOptions& options) {
  return OpenPostgresStore(
      "postgresql:" + std::string(rest),
      PostgresOptions{.lock_timeout_ms = options.busy_timeout_ms,
                      .idle_transaction_timeout_ms = options.idle_transaction_timeout_ms,
                      .read_only = options.read_only,
                      .create = options.create,
                      .deciders_shared = options.deciders == StoreOptions::Deciders::kShared});
}
Result<std::unique_ptr<Store>> OpenPostgres(std::string_view rest, const StoreOptions& options) {
  return OpenPostgresql(rest, options);
}

constexpr std::array<Scheme, 4> kSchemes = {{
    {"sqlite:", "sqlite:PATH", &OpenSqlite},
    {"memory:", "memory:NAME", &OpenMemory},
    {"postgresql:", "postgresql://USER@HOST:PORT/DB", &OpenPostgresql},
    {"postgres:", "postgres://USER@HOST:PORT/DB", &OpenPostgres},
}};

}  // namespace

Result<std::unique_ptr<Store>> OpenStore(std::string_view uri, const StoreOptions& options) {
  std::string usage;
  for (const Scheme& scheme : kSchemes) {
    if (uri.substr(0, scheme.prefix.size()) == scheme.prefix && uri.size() > scheme.prefix.size()) {
      return scheme.open(uri.substr(scheme.prefix.size()), options);
    }
    usage += (usage.empty() ? "" : ", ") + std::string(scheme.usage);
  }
  return Status::InvalidArgument("unknown store '" + std::string(uri) + "' (expected " + usage +
                                 ")");
}

Result<StoreMigration> MigrateStore(std::string_view uri) {
  if (uri.rfind("postgresql:", 0) == 0 || uri.rfind("postgres:", 0) == 0) {
    EVIDENT_ASSIGN_OR_RETURN(const int64_t before, MigratePostgresStore(std::string(uri)));
    return StoreMigration{.layout_before = before, .layout = kPostgresLayoutVersion};
  }
  EVIDENT_RETURN_IF_ERROR(OpenStore(uri).status());  // a writable open migrates
  if (uri.rfind("sqlite:", 0) == 0) return StoreMigration{.layout = kSqliteLayoutVersion};
  return Status::InvalidArgument("a " + std::string(uri.substr(0, uri.find(':'))) +
                                 " store has no layout to migrate");
}

}  // namespace evident
