// evident_append (evident_pg.so) inside application transactions against a plain INSERT of the
// same bytes into a table of the same database, measured in the same run, on one server:
//   evident: BEGIN; the business write (an upsert of the order's row); SELECT
//            evident_append($1) (envelope checks, the store's contracts, the payload schema,
//            the outbox row, in a subtransaction of the caller's); COMMIT;
//   plain:   BEGIN; the same business write; INSERT INTO plain_outbox(bytes) VALUES($1);
//            COMMIT (an outbox table without evident: nothing checked).
// `batch` events per application transaction, both sides over one libpq connection with
// prepared statements, a fresh schema per run (store migrated, the orders example's contracts
// pushed, the functions installed: not timed); the sides alternate, round by round; the median
// of the per-round ratios is the figure. The server is a cluster of scripts/postgres.sh with
// fsync on (EVIDENT_PG_DURABLE=1), on loopback.
//
//   build/bench/pg_ext_bench [N=20000] [ROUNDS=5] [BATCH=1]      (see docs/BENCHMARKS.md)
#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "append_rounds.h"
#include "evident/store_postgres.h"
#include "evident/stored_contracts.h"
#include "order_events.h"
#include "shell.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Connection = std::unique_ptr<PGconn, void (*)(PGconn*)>;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "pg_ext_bench: %s\n", what.c_str());
  std::exit(1);
}

Connection Connect(const std::string& uri) {
  Connection conn(PQconnectdb(uri.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) Die(PQerrorMessage(conn.get()));
  return conn;
}

void Check(PGconn* conn, PGresult* result, const std::string& what) {
  const ExecStatusType type = PQresultStatus(result);
  const std::string message = PQresultErrorMessage(result);
  PQclear(result);
  if (type != PGRES_COMMAND_OK && type != PGRES_TUPLES_OK) Die(what + ": " + message);
  (void)conn;
}

void Exec(PGconn* conn, const std::string& sql) { Check(conn, PQexec(conn, sql.c_str()), sql); }

// A fresh schema holding a store with the orders contracts and evident's functions, the
// application's tables beside it; its URI.
std::string FreshStore(const std::string& server, const std::string& schema,
                       const std::string& module) {
  {
    Connection conn = Connect(server);
    Exec(conn.get(), "SET client_min_messages = warning; DROP SCHEMA IF EXISTS " + schema +
                         " CASCADE; CREATE SCHEMA " + schema);
  }
  const std::string uri = server + "?options=-csearch_path%3D" + schema;
  if (!evident::MigratePostgresStore(uri).ok()) Die("migrate failed");
  {
    auto store = evident::OpenPostgresStore(uri);
    if (!store.ok()) Die(store.status().ToString());
    const evident::ContractsPushOptions options;  // the events carry `schemaversion`
    auto push = evident::PushContractsDir(
        **store, std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts", options, 1);
    if (!push.ok() || push->outcome != evident::PushOutcome::kPushed) Die("push failed");
  }
  const auto installed = evident::InstallPostgresFunctions(uri, module);
  if (!installed.ok()) Die(installed.status().ToString());
  Connection conn = Connect(uri);
  Exec(conn.get(), "CREATE TABLE orders(id text PRIMARY KEY, version bigint NOT NULL)");
  Exec(conn.get(),
       "CREATE TABLE plain_outbox(seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
       " bytes bytea NOT NULL)");
  return uri;
}

// One side's run: `append_sql` is the statement that takes the event's bytes.
double Run(const std::string& uri, const std::vector<std::string>& events, size_t batch,
           const char* append_sql) {
  Connection conn = Connect(uri);
  PGconn* db = conn.get();
  Check(db,
        PQprepare(db, "business",
                  "INSERT INTO orders(id, version) VALUES($1, 1) ON CONFLICT(id) DO UPDATE SET "
                  "version = orders.version + 1",
                  1, nullptr),
        "prepare");
  Check(db, PQprepare(db, "append", append_sql, 1, nullptr), "prepare");
  const int binary[1] = {1};
  const auto start = Clock::now();
  for (size_t i = 0; i < events.size(); ++i) {
    if (i % batch == 0) Exec(db, "BEGIN");
    const std::string order = "order-" + std::to_string(i / 3);
    const char* business[1] = {order.c_str()};
    Check(db, PQexecPrepared(db, "business", 1, business, nullptr, nullptr, 0), "business");
    const char* event[1] = {events[i].data()};
    const int length[1] = {static_cast<int>(events[i].size())};
    Check(db, PQexecPrepared(db, "append", 1, event, length, binary, 0),
          "event " + std::to_string(i));
    if (i % batch == batch - 1 || i == events.size() - 1) Exec(db, "COMMIT");
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::stoul(argv[1]) : 20'000;
  const int rounds = argc > 2 ? std::max(1, std::stoi(argv[2])) : 5;
  const size_t batch = argc > 3 ? std::max<size_t>(1, std::stoul(argv[3])) : 1;
  const std::vector<std::string> events = evident::bench::MakeContractOrderEvents(count);
  const fs::path dir =
      fs::temp_directory_path() / ("evident-pg-ext-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string script = std::string(EVIDENT_SOURCE_DIR) + "/scripts/postgres.sh";
  int rc = 0;
  const std::string server = evident::bench::Shell(
      "EVIDENT_PG_DURABLE=1 bash " + script + " start " + (dir / "server").string(), rc);
  if (rc != 0) Die("the server did not start: " + server);
  // The module where the server's OS user can read it.
  std::string data;
  std::getline(std::ifstream(dir / "server" / "data"), data);
  const fs::path module = fs::path(data) / "evident_pg.so";
  fs::copy_file(EVIDENT_PG_MODULE, module, fs::copy_options::overwrite_existing);
  fs::permissions(module, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  std::printf(
      "evident_append benchmark (PostgreSQL): %zu events, %zu per application transaction, "
      "fsync on, loopback, %d rounds\n",
      count, batch, rounds);
  constexpr const char* kEvident = "SELECT evident_append($1)";
  constexpr const char* kPlain = "INSERT INTO plain_outbox(bytes) VALUES($1)";
  const auto side = [&](const std::string& name, const char* sql) {
    return [&, name, sql](int round) {
      return Run(FreshStore(server, name + std::to_string(round), module), events, batch, sql);
    };
  };
  evident::bench::AppendRounds(rounds, count, side("plain", kPlain), side("evident", kEvident));
  (void)evident::bench::Shell("bash " + script + " stop " + (dir / "server").string(), rc);
  fs::remove_all(dir);
  return 0;
}
