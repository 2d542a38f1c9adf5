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
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "append_rounds.h"
#include "evident/store_postgres.h"
#include "evident/stored_contracts.h"
#include "order_events.h"
#include "pg_module_bench.h"

namespace {

using Clock = std::chrono::steady_clock;
using evident::bench::PgCheck;
using evident::bench::PgConnect;
using evident::bench::PgDie;
using evident::bench::PgExec;
using evident::bench::PgModuleServer;

// A fresh schema holding a store with the orders contracts and evident's functions, the
// application's tables beside it; its URI.
std::string FreshStore(const PgModuleServer& server, const std::string& schema) {
  const std::string uri = server.FreshSchema(schema);
  if (!evident::MigratePostgresStore(uri).ok()) PgDie("migrate failed");
  {
    auto store = evident::OpenPostgresStore(uri);
    if (!store.ok()) PgDie(store.status().ToString());
    const evident::ContractsPushOptions options;  // the events carry `schemaversion`
    auto push = evident::PushContractsDir(
        **store, std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts", options, 1);
    if (!push.ok() || push->outcome != evident::PushOutcome::kPushed) PgDie("push failed");
  }
  const auto installed = evident::InstallPostgresFunctions(uri, server.module());
  if (!installed.ok()) PgDie(installed.status().ToString());
  evident::bench::PgConnection conn = PgConnect(uri);
  PgExec(conn.get(), "CREATE TABLE orders(id text PRIMARY KEY, version bigint NOT NULL)");
  PgExec(conn.get(),
         "CREATE TABLE plain_outbox(seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
         " bytes bytea NOT NULL)");
  return uri;
}

// One side's run: `append_sql` is the statement that takes the event's bytes.
double Run(const std::string& uri, const std::vector<std::string>& events, size_t batch,
           const char* append_sql) {
  evident::bench::PgConnection conn = PgConnect(uri);
  PGconn* db = conn.get();
  PgCheck(PQprepare(db, "business",
                    "INSERT INTO orders(id, version) VALUES($1, 1) ON CONFLICT(id) DO UPDATE SET "
                    "version = orders.version + 1",
                    1, nullptr),
          "prepare");
  PgCheck(PQprepare(db, "append", append_sql, 1, nullptr), "prepare");
  const int binary[1] = {1};
  const auto start = Clock::now();
  for (size_t i = 0; i < events.size(); ++i) {
    if (i % batch == 0) PgExec(db, "BEGIN");
    const std::string order = "order-" + std::to_string(i / 3);
    const char* business[1] = {order.c_str()};
    PgCheck(PQexecPrepared(db, "business", 1, business, nullptr, nullptr, 0), "business");
    const char* event[1] = {events[i].data()};
    const int length[1] = {static_cast<int>(events[i].size())};
    PgCheck(PQexecPrepared(db, "append", 1, event, length, binary, 0),
            "event " + std::to_string(i));
    if (i % batch == batch - 1 || i == events.size() - 1) PgExec(db, "COMMIT");
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::stoul(argv[1]) : 20'000;
  const int rounds = argc > 2 ? std::max(1, std::stoi(argv[2])) : 5;
  const size_t batch = argc > 3 ? std::max<size_t>(1, std::stoul(argv[3])) : 1;
  const std::vector<std::string> events = evident::bench::MakeContractOrderEvents(count);
  const PgModuleServer server("pg-ext-bench", EVIDENT_PG_MODULE);
  std::printf(
      "evident_append benchmark (PostgreSQL): %zu events, %zu per application transaction, "
      "fsync on, loopback, %d rounds\n",
      count, batch, rounds);
  constexpr const char* kEvident = "SELECT evident_append($1)";
  constexpr const char* kPlain = "INSERT INTO plain_outbox(bytes) VALUES($1)";
  const auto side = [&](const std::string& name, const char* sql) {
    return [&, name, sql](int round) {
      return Run(FreshStore(server, name + std::to_string(round)), events, batch, sql);
    };
  };
  evident::bench::AppendRounds(rounds, count, side("plain", kPlain), side("evident", kEvident));
  return 0;
}
