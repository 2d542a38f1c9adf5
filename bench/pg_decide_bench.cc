// evident_decide (evident_pg.so) inside application transactions against the inbox the peers
// keep (MassTransit's, NServiceBus's, Eventuate's: a row per message id, INSERT ... ON CONFLICT
// DO NOTHING), measured in the same run, on one server:
//   evident: BEGIN; per event: SELECT outcome FROM evident_decide('reservations', $1) (envelope,
//            boundary, contract, payload schema, ledger, per-subject order with deferral,
//            journal, in the caller's transaction) and the service's own write (an upsert of
//            the order's reservation); COMMIT;
//   inbox:   BEGIN; per event: INSERT INTO inbox(consumer, message_id) VALUES(...) ON CONFLICT
//            DO NOTHING and the same write; COMMIT (a dedup row, nothing checked, no order).
// `batch` events per application transaction (default 100), both sides over one libpq
// connection with prepared statements, a fresh schema per run (store migrated, the consumers of
// examples/orders/reservations.yaml pushed, the functions installed: not timed); the sides
// alternate, round by round; the median of the per-round ratios is the figure. The events are
// the orders example's paid and cancelled events (per order v1 then v2, in order). The server
// is a cluster of scripts/postgres.sh with fsync on (EVIDENT_PG_DURABLE=1), on loopback.
//
//   build/bench/pg_decide_bench [N=20000] [ROUNDS=5] [BATCH=100]      (see docs/BENCHMARKS.md)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "append_rounds.h"
#include "evident/store_postgres.h"
#include "evident/stored_consumers.h"
#include "order_events.h"
#include "pg_module_bench.h"

namespace {

using Clock = std::chrono::steady_clock;
using evident::bench::PgCheck;
using evident::bench::PgConnect;
using evident::bench::PgDie;
using evident::bench::PgExec;
using evident::bench::PgModuleServer;

// A fresh schema holding a store with the reservations consumer and evident's functions, the
// service's tables beside it; its URI.
std::string FreshStore(const PgModuleServer& server, const std::string& schema) {
  const std::string uri = server.FreshSchema(schema);
  if (!evident::MigratePostgresStore(uri).ok()) PgDie("migrate failed");
  {
    auto store = evident::OpenPostgresStore(uri);
    if (!store.ok()) PgDie(store.status().ToString());
    auto push = evident::PushConsumersConfig(
        **store, std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/reservations.yaml", {}, 1);
    if (!push.ok() || push->outcome != evident::PushOutcome::kPushed) PgDie("push failed");
  }
  const auto installed = evident::InstallPostgresFunctions(uri, server.module());
  if (!installed.ok()) PgDie(installed.status().ToString());
  evident::bench::PgConnection conn = PgConnect(uri);
  PgExec(conn.get(), "CREATE TABLE reservations(id text PRIMARY KEY, version bigint NOT NULL)");
  PgExec(conn.get(),
         "CREATE TABLE inbox(consumer text NOT NULL, message_id text NOT NULL,"
         " PRIMARY KEY(consumer, message_id))");
  return uri;
}

// One side's run: `decide_sql` is the statement that takes the event (its bytes, or its id).
double Run(const std::string& uri, const std::vector<std::string>& events,
           const std::vector<std::string>& ids, size_t batch, const char* decide_sql, bool by_id) {
  evident::bench::PgConnection conn = PgConnect(uri);
  PGconn* db = conn.get();
  PgCheck(PQprepare(db, "business",
                    "INSERT INTO reservations(id, version) VALUES($1, 1) ON CONFLICT(id) DO "
                    "UPDATE SET version = reservations.version + 1",
                    1, nullptr),
          "prepare");
  PgCheck(PQprepare(db, "decide", decide_sql, 1, nullptr), "prepare");
  const int binary[1] = {by_id ? 0 : 1};
  const auto start = Clock::now();
  for (size_t i = 0; i < events.size(); ++i) {
    if (i % batch == 0) PgExec(db, "BEGIN");
    const std::string& input = by_id ? ids[i] : events[i];
    const char* event[1] = {input.c_str()};
    const int length[1] = {static_cast<int>(input.size())};
    PgCheck(PQexecPrepared(db, "decide", 1, event, length, binary, 0),
            "event " + std::to_string(i));
    const std::string order = "order-" + std::to_string(i / 2);
    const char* business[1] = {order.c_str()};
    PgCheck(PQexecPrepared(db, "business", 1, business, nullptr, nullptr, 0), "business");
    if (i % batch == batch - 1 || i == events.size() - 1) PgExec(db, "COMMIT");
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::stoul(argv[1]) : 20'000;
  const int rounds = argc > 2 ? std::max(1, std::stoi(argv[2])) : 5;
  const size_t batch = argc > 3 ? std::max<size_t>(1, std::stoul(argv[3])) : 100;
  // The paid and cancelled events of the orders (the status changes are another consumer's).
  std::vector<std::string> events, ids;
  for (std::string& e : evident::bench::MakeContractOrderEvents(count * 3 / 2 + 3)) {
    if (e.find("\"type\":\"order.status.changed\"") != std::string::npos) continue;
    if (events.size() == count) break;
    const size_t at = e.find("\"id\":\"") + 6;
    ids.push_back(e.substr(at, e.find('"', at) - at));
    events.push_back(std::move(e));
  }
  const PgModuleServer server("pg-decide-bench", EVIDENT_PG_MODULE);
  std::printf(
      "evident_decide benchmark (PostgreSQL): %zu events, %zu per application transaction, "
      "fsync on, loopback, %d rounds\n",
      events.size(), batch, rounds);
  constexpr const char* kEvident = "SELECT outcome FROM evident_decide('reservations', $1)";
  constexpr const char* kInbox =
      "INSERT INTO inbox(consumer, message_id) VALUES('reservations', $1) ON CONFLICT DO NOTHING";
  const auto side = [&](const std::string& name, const char* sql, bool by_id) {
    return [&, name, sql, by_id](int round) {
      return Run(FreshStore(server, name + std::to_string(round)), events, ids, batch, sql, by_id);
    };
  };
  evident::bench::AppendRounds(rounds, events.size(), side("inbox", kInbox, true),
                               side("decide", kEvident, false), "inbox INSERT", "evident_decide");
  return 0;
}
