// The order service of seed 002, written with the outbox: the stock reservation of order-417's
// version 2 was rejected, so the owner cancels the order and, in ONE local transaction of the
// evident store (SQLite or PostgreSQL), makes the conditional update (paid v2 -> cancelled v3),
// records the compensation keyed by its decision (compensation:order-417:reservation:v2) and
// appends the `cancelled` event to the outbox: all three commit together or not at all (no "updated
// but never announced", no compensation without its decision). A retried cancel finds the order
// moved on and inserts nothing twice.
//
//   build/examples/cpp/order_service CONTRACTS_DIR STORE
//
// STORE: a SQLite file's path, or a PostgreSQL URI (postgresql://...). The service's own
// statements join the store's transaction through SqliteConnection or PostgresConnection.
//
// Exit codes: 0 cancelled (or already announced: an idempotent repeat), 1 the order is no longer
// at the version read (another writer got there first), 2 an error.
//
// For the crash test, EVIDENT_FAULT_POINT=between-business-and-outbox kills the process after
// the order update and before the outbox append: neither may be found afterwards.
#include <libpq-fe.h>
#include <sqlite3.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "evident/outbox.h"
#include "evident/store.h"
#include "evident/store_postgres.h"
#include "evident/store_sqlite.h"

namespace {

using namespace evident;

constexpr const char* kOrderId = "order-417";
constexpr int64_t kReadVersion = 2;  // the version the service read before deciding to cancel
constexpr int64_t kNowMs = 1785000000000;

constexpr const char* kCreateOrders =
    "CREATE TABLE IF NOT EXISTS orders(id TEXT PRIMARY KEY, status TEXT NOT NULL,"
    " version INTEGER NOT NULL)";
constexpr const char* kInsertOrder =
    "INSERT INTO orders(id, status, version) VALUES('order-417', 'paid', 2)"
    " ON CONFLICT (id) DO NOTHING";
// The conditional update: it changes the row only at the version read.
constexpr const char* kCancel =
    "UPDATE orders SET status='cancelled', version = version + 1 WHERE id=$1 AND version=$2";

// The crash test's switch: EVIDENT_FAULT_POINT=`name` kills the process here (SIGKILL: no
// cleanup, no rollback sent; the server or SQLite's journal must undo the open transaction).
void FaultPoint(const char* name) {
  const char* armed = std::getenv("EVIDENT_FAULT_POINT");
  if (armed != nullptr && std::string(armed) == name) std::raise(SIGKILL);
}

// The service's own statements, in the store's transaction: on SQLite through its connection,
// on PostgreSQL through libpq's.
class Orders {
 public:
  virtual ~Orders() = default;
  virtual Status Exec(Transaction& tx, const char* sql) = 0;
  // kCancel with the order and the version read: the rows it changed.
  virtual Result<int64_t> Cancel(Transaction& tx) = 0;
};

class SqliteOrders final : public Orders {
 public:
  Status Exec(Transaction& tx, const char* sql) override {
    sqlite3* db = SqliteConnection(tx);
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
      return Status::IoError(sqlite3_errmsg(db));
    }
    return Status::Ok();
  }
  Result<int64_t> Cancel(Transaction& tx) override {
    sqlite3* db = SqliteConnection(tx);
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db, kCancel, -1, &statement, nullptr) != SQLITE_OK) {
      return Status::IoError(sqlite3_errmsg(db));
    }
    sqlite3_bind_text(statement, 1, kOrderId, -1, SQLITE_STATIC);
    sqlite3_bind_int64(statement, 2, kReadVersion);
    const int rc = sqlite3_step(statement);
    sqlite3_finalize(statement);
    if (rc != SQLITE_DONE) return Status::IoError(sqlite3_errmsg(db));
    return sqlite3_changes(db);
  }
};

class PostgresOrders final : public Orders {
 public:
  Status Exec(Transaction& tx, const char* sql) override {
    EVIDENT_ASSIGN_OR_RETURN(PGconn * conn, PostgresConnection(tx));
    return Checked(PQexec(conn, sql)).status();
  }
  Result<int64_t> Cancel(Transaction& tx) override {
    EVIDENT_ASSIGN_OR_RETURN(PGconn * conn, PostgresConnection(tx));
    const std::string version = std::to_string(kReadVersion);
    const char* params[] = {kOrderId, version.c_str()};
    return Checked(PQexecParams(conn, kCancel, 2, nullptr, params, nullptr, nullptr, 0));
  }

 private:
  // The rows a statement changed, or its error; `result` is freed.
  static Result<int64_t> Checked(PGresult* result) {
    const bool ok = PQresultStatus(result) == PGRES_COMMAND_OK;
    const std::string message = PQresultErrorMessage(result);
    const std::string changed = PQcmdTuples(result);
    PQclear(result);
    if (!ok) return Status::IoError("PostgreSQL: " + message);
    return changed.empty() ? 0 : std::stoll(changed);
  }
};

// The service's own table, in the evident store; an order to cancel, at version 2.
Status CreateOrders(Store& store, Orders& orders) {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
  EVIDENT_RETURN_IF_ERROR(orders.Exec(*tx, kCreateOrders));
  EVIDENT_RETURN_IF_ERROR(orders.Exec(*tx, kInsertOrder));
  return tx->Commit();
}

std::string CancelledEvent() {
  const std::string version = std::to_string(kReadVersion + 1);
  return R"({"specversion":"1.0","id":"order-417-cancelled-v)" + version +
         R"(","source":"https://example.test/order-service",)"
         R"("type":"com.example.training.order.cancelled","subject":"order-417",)"
         R"("schemaversion":1,"subjectversion":)" +
         version + R"(,"data":{"orderId":"order-417","orderVersion":)" + version +
         R"(,"reason":"reservation-rejected"}})";
}

// Seed 002's owner compensation, keyed by this decision: the reservation of the version read.
OwnerCompensation Compensation() {
  return {.key = std::string("compensation:") + kOrderId + ":reservation:v" +
                 std::to_string(kReadVersion),
          .subject = kOrderId,
          .owner_source = "https://example.test/order-service",
          .owner_version = kReadVersion,
          .decision = "reservation-rejected"};
}

// One transaction: the conditional update, then the outbox row; commit.
Result<int> CancelAndAnnounce(Store& store, Orders& orders, Outbox& outbox) {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
  EVIDENT_ASSIGN_OR_RETURN(const int64_t changed, orders.Cancel(*tx));
  if (changed != 1) {
    std::printf("%s is no longer at version %lld: nothing cancelled\n", kOrderId,
                static_cast<long long>(kReadVersion));
    EVIDENT_RETURN_IF_ERROR(tx->Rollback());
    return 1;
  }
  EVIDENT_ASSIGN_OR_RETURN(const bool recorded,
                           RecordOwnerCompensation(*tx, Compensation(), kNowMs));
  FaultPoint("between-business-and-outbox");
  EVIDENT_ASSIGN_OR_RETURN(const OutboxDecision decision,
                           outbox.Append(*tx, CancelledEvent(), kNowMs));
  if (decision.outcome != OutboxDecisionOutcome::kAppended) {
    // Refused (or already there): the cancellation is not committed without its event.
    std::printf("outbox: %s %s: %s\n", std::string(OutboxDecisionName(decision.outcome)).c_str(),
                decision.reason.c_str(), decision.message.c_str());
    EVIDENT_RETURN_IF_ERROR(tx->Rollback());
    return 2;
  }
  EVIDENT_RETURN_IF_ERROR(tx->Commit());
  std::printf("cancelled %s at version %lld; compensation %s %s; outbox seq %lld\n", kOrderId,
              static_cast<long long>(kReadVersion + 1), Compensation().key.c_str(),
              recorded ? "recorded" : "already there", static_cast<long long>(*decision.seq));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CONTRACTS_DIR STORE (a SQLite path or postgresql://...)\n",
                 argv[0]);
    return 2;
  }
  const std::string where = argv[2];
  const bool postgres = where.rfind("postgresql://", 0) == 0 || where.rfind("postgres://", 0) == 0;
  Result<std::unique_ptr<Outbox>> outbox = Outbox::Create({.contracts_dir = argv[1]});
  Result<std::unique_ptr<Store>> store =
      postgres ? OpenPostgresStore(where) : OpenSqliteStore(where);
  SqliteOrders on_sqlite;
  PostgresOrders on_postgres;
  Orders& orders = postgres ? static_cast<Orders&>(on_postgres) : on_sqlite;
  if (!outbox.ok() || !store.ok()) {
    std::fprintf(stderr, "%s\n",
                 (outbox.ok() ? store.status() : outbox.status()).ToString().c_str());
    return 2;
  }
  if (const Status created = CreateOrders(**store, orders); !created.ok()) {
    std::fprintf(stderr, "%s\n", created.ToString().c_str());
    return 2;
  }
  const Result<int> code = CancelAndAnnounce(**store, orders, **outbox);
  if (!code.ok()) {
    std::fprintf(stderr, "%s\n", code.status().ToString().c_str());
    return 2;
  }
  return *code;
}
