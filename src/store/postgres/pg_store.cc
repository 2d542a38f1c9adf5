// The PostgreSQL backend of evident/store.h (store_postgres.h): the Store, opening it, and its
// schema's layout and migrations.
#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "evident/store_postgres.h"
#include "store/postgres/pg_open.h"
#include "store/postgres/pg_schema.h"
#include "store/postgres/pg_transaction.h"

namespace evident {
namespace postgres {
namespace {

// Serializes the creation and migration of one database's tables between processes (two
// sessions running CREATE TABLE IF NOT EXISTS at once can both try to create the table).
constexpr const char* kSchemaLockSql = "SELECT pg_advisory_xact_lock(7321000000000000001)";

// A connection outside pipeline mode, for the schema: several statements in one text.
class PlainConnection {
 public:
  static Result<PlainConnection> Open(const std::string& uri) {
    PlainConnection out(PQconnectdb(uri.c_str()));
    if (out.conn_ == nullptr) return Status::Unavailable("PostgreSQL: out of memory connecting");
    if (PQstatus(out.conn_.get()) != CONNECTION_OK) {
      return Status::Unavailable("cannot connect to PostgreSQL: " + out.Error());
    }
    EVIDENT_RETURN_IF_ERROR(out.Exec("SET client_min_messages = warning").status());
    return out;
  }
  // Runs `sql`; the first row's first column of its last statement, if any.
  Result<std::optional<std::string>> Exec(const char* sql) {
    PGresult* result = PQexec(conn_.get(), sql);
    const ExecStatusType type = PQresultStatus(result);
    if (type != PGRES_COMMAND_OK && type != PGRES_TUPLES_OK) {
      const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
      std::string message = PQresultErrorMessage(result);
      PQclear(result);
      while (!message.empty() && message.back() == '\n') message.pop_back();
      return StatusOf(state == nullptr ? "08000" : state, message);
    }
    std::optional<std::string> first;
    if (type == PGRES_TUPLES_OK && PQntuples(result) > 0 && !PQgetisnull(result, 0, 0)) {
      first = PQgetvalue(result, 0, 0);
    }
    PQclear(result);
    return first;
  }

  // `text` as an SQL identifier, or as a string literal, quoted for this connection.
  Result<std::string> Identifier(const std::string& text) {
    return Quoted(text, &PQescapeIdentifier);
  }
  Result<std::string> Literal(const std::string& text) { return Quoted(text, &PQescapeLiteral); }

 private:
  explicit PlainConnection(PGconn* conn) : conn_(conn, &PQfinish) {}
  Result<std::string> Quoted(const std::string& text,
                             char* (*escape)(PGconn*, const char*, size_t)) {
    char* quoted = escape(conn_.get(), text.data(), text.size());
    if (quoted == nullptr) return Status::InvalidArgument("cannot quote: " + Error());
    std::string out(quoted);
    PQfreemem(quoted);
    return out;
  }
  std::string Error() const {
    std::string message = PQerrorMessage(conn_.get());
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return message;
  }
  std::unique_ptr<PGconn, void (*)(PGconn*)> conn_;

  friend class Listener;
};

// An idle relay's wake-up (Store::WaitForOutbox): a connection of its own that LISTENs on
// kOutboxChannel, opened on the first wait and again after it was lost. Notifications of other
// schemas of the database are read and ignored. A wait that had to open the connection answers
// true at once: a row committed after the relay's last look and before the LISTEN sent no word
// this connection could hear, so the relay looks once more (else it would sleep past it).
class Listener {
 public:
  Result<bool> Wait(const std::string& uri, int64_t timeout_ms) {
    if (!db_ || PQstatus(db_->conn_.get()) != CONNECTION_OK) {
      EVIDENT_RETURN_IF_ERROR(Open(uri));
      return true;
    }
    PGconn* conn = db_->conn_.get();
    EVIDENT_ASSIGN_OR_RETURN(bool told, Drain());
    if (told) return true;
    pollfd fd{.fd = PQsocket(conn), .events = POLLIN, .revents = 0};
    const int ready = poll(&fd, 1, static_cast<int>(std::min<int64_t>(timeout_ms, 1 << 30)));
    if (ready < 0 && errno != EINTR) {
      return Status::Internal(std::string("waiting for PostgreSQL: ") + std::strerror(errno));
    }
    return Drain();
  }

 private:
  Status Open(const std::string& uri) {
    db_.reset();
    EVIDENT_ASSIGN_OR_RETURN(PlainConnection db, PlainConnection::Open(uri));
    EVIDENT_ASSIGN_OR_RETURN(std::optional<std::string> schema, db.Exec("SELECT current_schema()"));
    EVIDENT_RETURN_IF_ERROR(db.Exec((std::string("LISTEN ") + kOutboxChannel).c_str()).status());
    schema_ = schema.value_or("");
    db_ = std::make_unique<PlainConnection>(std::move(db));
    return Status::Ok();
  }
  // Reads what arrived; true when a notification of this schema was among it.
  Result<bool> Drain() {
    PGconn* conn = db_->conn_.get();
    if (PQconsumeInput(conn) == 0) {
      std::string message = PQerrorMessage(conn);
      db_.reset();
      return Status::Unavailable("PostgreSQL is unreachable (listening for outbox rows): " +
                                 message);
    }
    bool told = false;
    while (PGnotify* note = PQnotifies(conn)) {
      told = told || schema_ == note->extra;
      PQfreemem(note);
    }
    return told;
  }

  std::unique_ptr<PlainConnection> db_;
  std::string schema_;
};

// The layout of the database's store: 0 when it has none. Both tables are asked about in one
// statement: asked in two, another process's creation committing between them would read as a
// ledger without evident_schema.
Result<int64_t> LayoutOf(PlainConnection& db) {
  EVIDENT_ASSIGN_OR_RETURN(
      std::optional<std::string> tables,
      db.Exec("SELECT (to_regclass('evident_schema') IS NOT NULL)::text || ' ' ||"
              " (to_regclass('ledger') IS NOT NULL)::text"));
  if (!tables || tables->rfind("true", 0) != 0) {
    if (tables && *tables == "false true") {
      return Status::FailedPrecondition(
          "the database has a ledger table but no evident_schema: not an evident store");
    }
    return 0;
  }
  EVIDENT_ASSIGN_OR_RETURN(std::optional<std::string> version,
                           db.Exec("SELECT max(version) FROM evident_schema"));
  return version ? std::stoll(*version) : 0;
}

Status RefuseNewer(int64_t layout) {
  return Status::FailedPrecondition(
      "the store has layout " + std::to_string(layout) + "; this build reads layouts up to " +
      std::to_string(kPostgresLayoutVersion) + " (a newer evident wrote it)");
}

// The layout, read under the schema lock: after every creation or migration that began before.
Result<int64_t> LayoutUnderLock(PlainConnection& db) {
  EVIDENT_RETURN_IF_ERROR(db.Exec("BEGIN").status());
  Result<int64_t> layout = [&]() -> Result<int64_t> {
    EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLockSql).status());
    return LayoutOf(db);
  }();
  EVIDENT_RETURN_IF_ERROR(db.Exec(layout.ok() ? "COMMIT" : "ROLLBACK").status());
  return layout;
}

// Creates the tables in one transaction under the schema lock, reading the layout again under
// it; returns the layout found.
Result<int64_t> CreateOrMigrate(PlainConnection& db) {
  EVIDENT_RETURN_IF_ERROR(db.Exec("BEGIN").status());
  const auto run = [&]() -> Result<int64_t> {
    EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLockSql).status());
    EVIDENT_ASSIGN_OR_RETURN(const int64_t layout, LayoutOf(db));
    if (layout > kPostgresLayoutVersion) return RefuseNewer(layout);
    if (layout == 0) {
      EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLayout1).status());
      EVIDENT_RETURN_IF_ERROR(db.Exec("INSERT INTO evident_schema(version) VALUES(1)").status());
    }
    // Each later layout's step, from the layout before.
    if (layout < 2) EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLayout2).status());
    if (layout < 3) EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLayout3).status());
    if (layout < 4) EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLayout4).status());
    if (layout < 5) EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLayout5).status());
    if (layout < 6) EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLayout6).status());
    if (layout < 7) EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLayout7).status());
    if (layout < 8) EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLayout8).status());
    if (layout < 9) EVIDENT_RETURN_IF_ERROR(db.Exec(kSchemaLayout9).status());
    if (layout < 10) EVIDENT_RETURN_IF_ERROR(db.Exec(SchemaLayout10().c_str()).status());
    if (layout < 11) EVIDENT_RETURN_IF_ERROR(db.Exec(SchemaLayout11().c_str()).status());
    static_assert(kPostgresLayoutVersion == 11, "a new layout needs its step here");
    return layout;
  };
  Result<int64_t> layout = run();
  if (!layout.ok()) {
    (void)db.Exec("ROLLBACK");
    return layout.status();
  }
  EVIDENT_RETURN_IF_ERROR(db.Exec("COMMIT").status());
  return layout;
}

class PgStore final : public Store {
 public:
  PgStore(std::shared_ptr<Session> session, std::string uri)
      : session_(std::move(session)), uri_(std::move(uri)) {}
  ~PgStore() override = default;

  Result<std::unique_ptr<Transaction>> Begin() override {
    if (session_->read_only) {
      return Status::FailedPrecondition("the store was opened read-only");
    }
    EVIDENT_RETURN_IF_ERROR(Idle("Begin"));
    EVIDENT_RETURN_IF_ERROR(session_->connection->Reset());
    session_->open = Session::Open::kWrite;
    return std::unique_ptr<Transaction>(new PgTransaction(session_));
  }
  Result<std::unique_ptr<Snapshot>> Read() override {
    EVIDENT_RETURN_IF_ERROR(Idle("Read"));
    EVIDENT_RETURN_IF_ERROR(session_->connection->Reset());
    session_->open = Session::Open::kRead;
    return std::unique_ptr<Snapshot>(new PgSnapshot(session_));
  }
  bool BatchLoadPays() const override { return true; }
  bool RelaysShare() const override { return true; }
  Result<bool> WaitForOutbox(int64_t timeout_ms) override {
    if (uri_.empty()) {
      return Status::FailedPrecondition("a store inside the server does not wait for outbox rows");
    }
    return listener_.Wait(uri_, timeout_ms);
  }
  int64_t round_trips() const { return session_->connection->round_trips(); }
  int64_t buffered_inserts() const { return session_->buffered_inserts; }

 private:
  Status Idle(std::string_view call) const {
    if (session_->open == Session::Open::kNone) return Status::Ok();
    return Status::FailedPrecondition(
        std::string(call) + ": this store has a " +
        (session_->open == Session::Open::kWrite ? "transaction" : "snapshot") +
        " open; one at a time per store");
  }

  std::shared_ptr<Session> session_;
  std::string uri_;
  Listener listener_;
};

}  // namespace

std::unique_ptr<Store> OpenStoreOver(std::unique_ptr<Connection> connection, bool deciders_shared,
                                     bool deciders_by_subject) {
  auto session = std::make_shared<Session>();
  session->connection = std::move(connection);
  session->deciders_shared = deciders_shared;
  session->deciders_by_subject = deciders_by_subject;
  return std::make_unique<PgStore>(std::move(session), "");
}

Result<LayoutFound> LayoutIn(Connection& connection, std::string schema, bool has_store,
                             bool has_sets) {
  static const std::string kLayout = "SELECT max(version) FROM evident_schema";
  static const std::string kLayoutAndSet =
      "SELECT (SELECT max(version) FROM evident_schema),"
      " (SELECT digest FROM contract_set ORDER BY version DESC LIMIT 1)";
  LayoutFound found{.schema = std::move(schema)};
  if (!has_store) return found;
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           connection.Query(has_sets ? kLayoutAndSet : kLayout, Params()));
  if (rows.rows() != 1) return Status::Internal("PostgreSQL: no answer for the store's layout");
  found.layout = rows.Int(0, 0);
  if (has_sets && !rows.IsNull(0, 1)) found.contracts_digest = std::string(rows.Text(0, 1));
  EVIDENT_RETURN_IF_ERROR(rows.problem());
  return found;
}

}  // namespace postgres

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& uri,
                                                 const PostgresOptions& options) {
  {
    EVIDENT_ASSIGN_OR_RETURN(postgres::PlainConnection db, postgres::PlainConnection::Open(uri));
    Result<int64_t> found = postgres::LayoutOf(db);
    if (!found.ok() && found.status().code() == Code::kFailedPrecondition) {
      // A process creating the store may be committing this very moment: ask again once its
      // transaction is over (it holds the schema lock until then).
      found = postgres::LayoutUnderLock(db);
    }
    EVIDENT_ASSIGN_OR_RETURN(int64_t layout, found);
    if (layout > kPostgresLayoutVersion) return postgres::RefuseNewer(layout);
    if (layout == 0 && (options.read_only || !options.create)) {
      return Status::NotFound("no evident store in that PostgreSQL database (no evident tables)");
    }
    if (layout == 0) {
      EVIDENT_ASSIGN_OR_RETURN(layout, postgres::CreateOrMigrate(db));
      if (layout == 0) layout = kPostgresLayoutVersion;  // created now
    }
    if (layout != 0 && layout < kPostgresLayoutVersion) {
      return Status::FailedPrecondition(
          "the store has layout " + std::to_string(layout) + "; this build writes layout " +
          std::to_string(kPostgresLayoutVersion) +
          ": run `evident store migrate --store URI` once every process runs this build");
    }
  }
  auto session = std::make_shared<postgres::Session>();
  EVIDENT_ASSIGN_OR_RETURN(session->connection,
                           postgres::Connection::Open(uri, options.lock_timeout_ms,
                                                      options.idle_transaction_timeout_ms));
  session->read_only = options.read_only;
  session->deciders_shared = options.deciders_shared;
  return std::unique_ptr<Store>(new postgres::PgStore(std::move(session), uri));
}

Result<int64_t> MigratePostgresStore(const std::string& uri) {
  EVIDENT_ASSIGN_OR_RETURN(postgres::PlainConnection db, postgres::PlainConnection::Open(uri));
  return postgres::CreateOrMigrate(db);
}

namespace postgres {
namespace {

// The functions: name, arguments, what they return, and their options.
constexpr const char* kFunctions[][4] = {
    {"evident_append", "event bytea", "bigint", "STRICT"},
    {"evident_try_append", "event bytea",
     "TABLE(outcome text, reason text, seq bigint, message text)", "STRICT ROWS 1"},
    {"evident_compensate",
     "key text, subject text, owner_source text, owner_version bigint, decision text", "boolean",
     "CALLED ON NULL INPUT"},
    {"evident_decide", "consumer text, event bytea",
     "TABLE(\"position\" int, outcome text, reason text, key text, subject text,"
     " subject_version bigint, schema_version bigint, event bytea, drained boolean,"
     " adapter text)",
     "CALLED ON NULL INPUT ROWS 2"},
};

Result<std::string> CheckedSchema(PlainConnection& db) {
  EVIDENT_ASSIGN_OR_RETURN(std::optional<std::string> schema, db.Exec("SELECT current_schema()"));
  if (!schema) {
    return Status::FailedPrecondition("no schema: the search_path names none that exists");
  }
  EVIDENT_ASSIGN_OR_RETURN(const int64_t layout, LayoutOf(db));
  if (layout == 0) {
    return Status::NotFound("no evident store in schema \"" + *schema +
                            "\": create it first with `evident store migrate --store URL`");
  }
  if (layout != kPostgresLayoutVersion) {
    return Status::FailedPrecondition(
        "the store has layout " + std::to_string(layout) + "; this build's functions work on " +
        std::to_string(kPostgresLayoutVersion) + " (`evident store migrate` first)");
  }
  return *schema;
}

// The definer's rights the functions need, checked before they are created with them.
Status CheckDefiner(PlainConnection& db, const std::string& role) {
  EVIDENT_ASSIGN_OR_RETURN(const std::string literal, db.Literal(role));
  const std::string sql =
      "SELECT (SELECT count(*) FROM pg_roles WHERE rolname = " + literal + ")::text || ' ' || " +
      "CASE WHEN EXISTS(SELECT 1 FROM pg_roles WHERE rolname = " + literal +
      ") THEN (has_table_privilege(" + literal + ", 'outbox', 'INSERT') AND " +
      "has_table_privilege(" + literal + ", 'contract_set', 'SELECT') AND " +
      "has_table_privilege(" + literal + ", 'consumer_set', 'SELECT') AND " +
      "has_table_privilege(" + literal + ", 'ledger', 'INSERT') AND " + "has_table_privilege(" +
      literal + ", 'ledger_digest', 'SELECT') AND " + "has_table_privilege(" + literal +
      ", 'effect_digest', 'SELECT') AND " + "has_table_privilege(" + literal +
      ", 'projection', 'UPDATE') AND " + "has_table_privilege(" + literal +
      ", 'evident_schema', 'SELECT'))::text ELSE '' END";
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<std::string> found, db.Exec(sql.c_str()));
  if (found.value_or("").rfind("0", 0) == 0) {
    return Status::InvalidArgument("--security-definer: no role \"" + role + "\"");
  }
  if (found.value_or("") != "1 true") {
    return Status::FailedPrecondition(
        "--security-definer: role \"" + role +
        "\" lacks INSERT on outbox or ledger, UPDATE on projection, or SELECT on contract_set, "
        "consumer_set, ledger_digest, effect_digest or evident_schema; the functions would run "
        "with its rights "
        "(the store's owner has them)");
  }
  return Status::Ok();
}

Result<std::string> CreateFunctions(PlainConnection& db, const std::string& library,
                                    const PostgresFunctionsOptions& options) {
  EVIDENT_ASSIGN_OR_RETURN(const std::string schema, CheckedSchema(db));
  const bool definer = !options.definer.empty();
  if (definer) EVIDENT_RETURN_IF_ERROR(CheckDefiner(db, options.definer));
  EVIDENT_ASSIGN_OR_RETURN(const std::string path, db.Literal(library));
  EVIDENT_ASSIGN_OR_RETURN(const std::string name, db.Identifier(schema));
  // Each function works on the store of the schema it is created in, whatever the caller's
  // search_path (its own SET clause): a caller that names the function reaches that store, and
  // no table of another schema earlier on a caller's path, nor a temporary one (pg_temp named
  // last, as PostgreSQL asks of a SECURITY DEFINER function), is taken for the store's.
  for (const auto& f : kFunctions) {
    const std::string function = name + "." + f[0] + "(" + f[1] + ")";
    std::string sql = "CREATE OR REPLACE FUNCTION " + function + " RETURNS " + f[2] + " AS " +
                      path + ", '" + f[0] + "' LANGUAGE C VOLATILE " + f[3] +
                      (definer ? " SECURITY DEFINER" : " SECURITY INVOKER") +
                      " SET search_path = " + name + ", pg_temp";
    if (definer) {
      EVIDENT_ASSIGN_OR_RETURN(const std::string role, db.Identifier(options.definer));
      sql += "; ALTER FUNCTION " + function + " OWNER TO " + role + "; REVOKE ALL ON FUNCTION " +
             function + " FROM PUBLIC";
    }
    Result<std::optional<std::string>> created = db.Exec(sql.c_str());
    if (!created.ok()) {
      return created.status().Annotate(
          std::string("creating ") + f[0] +
          " (C functions are a superuser's to create, and the module must be readable by the "
          "server's own OS user at that path)");
    }
  }
  return schema;
}

}  // namespace
}  // namespace postgres

Result<PostgresFunctions> InstallPostgresFunctions(const std::string& uri,
                                                   const std::string& library,
                                                   const PostgresFunctionsOptions& options) {
  if (uri.rfind("postgresql://", 0) != 0 && uri.rfind("postgres://", 0) != 0) {
    return Status::InvalidArgument(
        "install-functions is for a PostgreSQL store (postgresql://...); a SQLite connection "
        "loads evident_sqlite.so itself (docs/any-language.md)");
  }
  if (library.empty() || (library[0] != '/' && library.rfind("$libdir/", 0) != 0)) {
    return Status::InvalidArgument(
        "--library: the module's absolute path on the database server, or $libdir/NAME");
  }
  EVIDENT_ASSIGN_OR_RETURN(postgres::PlainConnection db, postgres::PlainConnection::Open(uri));
  EVIDENT_RETURN_IF_ERROR(db.Exec("BEGIN").status());
  Result<std::string> schema = postgres::CreateFunctions(db, library, options);
  if (!schema.ok()) {
    (void)db.Exec("ROLLBACK");
    return schema.status();
  }
  EVIDENT_RETURN_IF_ERROR(db.Exec("COMMIT").status());
  PostgresFunctions out{.schema = *schema};
  for (const auto& f : postgres::kFunctions) out.names.emplace_back(f[0]);
  return out;
}

Result<pg_conn*> PostgresConnection(Transaction& transaction) {
  auto* pg = dynamic_cast<postgres::PgTransaction*>(&transaction);
  if (pg == nullptr) {
    return Status::InvalidArgument("PostgresConnection: not a transaction of a PostgreSQL store");
  }
  return pg->Lend();
}

int64_t PostgresRoundTrips(const Store& store) {
  const auto* pg = dynamic_cast<const postgres::PgStore*>(&store);
  return pg == nullptr ? -1 : pg->round_trips();
}

int64_t PostgresBufferedInserts(const Store& store) {
  const auto* pg = dynamic_cast<const postgres::PgStore*>(&store);
  return pg == nullptr ? -1 : pg->buffered_inserts();
}

}  // namespace evident
