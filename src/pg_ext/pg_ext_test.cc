// evident_pg.so driven from C++ through libpq, inside the tests' PostgreSQL server (the
// `postgres` fixture), each test in a schema of its own: every outcome of evident_append and
// evident_try_append with the caller's business row, a push taken by a producer's next call
// without a restart, and a store the module cannot work on said as such.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "evident/store_postgres.h"
#include "evident/stored_contracts.h"
#include "store/postgres/test_database.h"
#include "testing/schema_bomb.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

constexpr const char* kV1 = R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
 "type":"object","required":["sku"],"properties":{"sku":{"type":"string"}}})";
// v2 reads v1's data (a new optional field).
constexpr const char* kV2 = R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
 "type":"object","required":["sku"],"properties":{"sku":{"type":"string"},
 "note":{"type":"string"}}})";

std::string Event(const std::string& id, int64_t schema_version, const std::string& data) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"https://example.test/stock","type":"stock.reserved","subject":"sku-1",)"
         R"("schemaversion":)" +
         std::to_string(schema_version) + R"(,"data":)" + data + "}";
}

// The module copied where the server's OS user can read it.
std::string ModuleOnServer() {
  static const Result<std::string> path = CopyToTestServer(EVIDENT_PG_MODULE);
  return path.ok() ? *path : std::string();
}

// One answer of the server: its SQLSTATE and primary message when it failed, else its rows.
struct Answer {
  std::string sqlstate;
  std::string message;
  std::vector<std::vector<std::string>> rows;  // NULL as "<null>"
  bool ok() const { return sqlstate.empty(); }
};

class Session {
 public:
  explicit Session(const std::string& url) : conn_(PQconnectdb(url.c_str()), &PQfinish) {
    EXPECT_EQ(PQstatus(conn_.get()), CONNECTION_OK) << PQerrorMessage(conn_.get());
  }
  // `sql` with `bytes` as its bytea parameters ($1, $2, ..).
  Answer Run(const std::string& sql, const std::vector<std::string>& bytes = {}) {
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    for (const std::string& b : bytes) {
      values.push_back(b.data());
      lengths.push_back(static_cast<int>(b.size()));
      formats.push_back(1);
    }
    PGresult* result = PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(bytes.size()),
                                    nullptr, values.data(), lengths.data(), formats.data(), 0);
    Answer answer;
    const ExecStatusType type = PQresultStatus(result);
    if (type != PGRES_COMMAND_OK && type != PGRES_TUPLES_OK) {
      const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
      const char* message = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
      answer.sqlstate = state != nullptr ? state : "?????";
      answer.message = message != nullptr ? message : PQerrorMessage(conn_.get());
    }
    for (int r = 0; r < PQntuples(result); ++r) {
      std::vector<std::string>& row = answer.rows.emplace_back();
      for (int c = 0; c < PQnfields(result); ++c) {
        row.emplace_back(PQgetisnull(result, r, c) != 0 ? "<null>" : PQgetvalue(result, r, c));
      }
    }
    PQclear(result);
    return answer;
  }
  std::string One(const std::string& sql, const std::vector<std::string>& bytes = {}) {
    const Answer answer = Run(sql, bytes);
    EXPECT_TRUE(answer.ok()) << sql << ": " << answer.sqlstate << " " << answer.message;
    return answer.rows.empty() || answer.rows[0].empty() ? "" : answer.rows[0][0];
  }

 private:
  std::unique_ptr<PGconn, void (*)(PGconn*)> conn_;
};

class PgFunctions : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(ModuleOnServer().empty()) << "run through ctest (the postgres fixture)";
    Result<std::string> url = FreshPostgresSchema("pg_functions");
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    url_ = *url;
    ASSERT_TRUE(MigratePostgresStore(url_).ok());
    Result<PostgresFunctions> installed = InstallPostgresFunctions(url_, ModuleOnServer());
    ASSERT_TRUE(installed.ok()) << installed.status().ToString();
    dir_ = fs::temp_directory_path() /
           ("evident-pg-functions-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "stock.reserved");
    Write("stock.reserved/v1.schema.json", kV1);
    Push();
    session_ = std::make_unique<Session>(url_);
    session_->One("CREATE TABLE reservation(sku text PRIMARY KEY)");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& path, const std::string& text) {
    std::ofstream(dir_ / path, std::ios::binary | std::ios::trunc) << text;
  }
  void Push() {
    std::unique_ptr<Store> store = OpenPostgresStore(url_).value();
    Result<ContractsPush> push = PushContractsDir(*store, dir_.string(), {}, 1000);
    ASSERT_TRUE(push.ok()) << push.status().ToString();
    ASSERT_EQ(push->outcome, PushOutcome::kPushed);
  }
  // A reservation and its event in one transaction of the caller's: the answer of
  // evident_append, and whether the reservation was committed.
  Answer Reserve(Session& s, const std::string& sku, const std::string& event) {
    EXPECT_EQ(s.Run("BEGIN").sqlstate, "");
    EXPECT_EQ(s.Run("INSERT INTO reservation VALUES('" + sku + "')").sqlstate, "");
    Answer answer = s.Run("SELECT evident_append($1)", {event});
    EXPECT_EQ(s.Run(answer.ok() ? "COMMIT" : "ROLLBACK").sqlstate, "");
    return answer;
  }
  std::string Count(const std::string& table) {
    return session_->One("SELECT count(*) FROM " + table);
  }

  std::string url_;
  fs::path dir_;
  std::unique_ptr<Session> session_;
};

TEST_F(PgFunctions, EachOutcomeWithTheCallersRow) {
  const std::string event = Event("e1", 1, R"({"sku":"a"})");
  Answer appended = Reserve(*session_, "a", event);
  ASSERT_TRUE(appended.ok()) << appended.message;
  EXPECT_EQ(appended.rows[0][0], "1");
  // The same bytes again: the existing row's seq, and the caller's transaction goes on.
  Answer duplicate = Reserve(*session_, "a2", event);
  ASSERT_TRUE(duplicate.ok()) << duplicate.message;
  EXPECT_EQ(duplicate.rows[0][0], "1");
  // Other bytes under the same id: EV002, and the reservation is rolled back with it.
  Answer conflict = Reserve(*session_, "b", Event("e1", 1, R"({"sku":"b"})"));
  EXPECT_EQ(conflict.sqlstate, "EV002");
  EXPECT_EQ(conflict.message.rfind("id-conflict: conflict: ", 0), 0u) << conflict.message;
  // Refusals: EV001, the reason code first.
  for (const auto& [bytes, reason] : std::vector<std::pair<std::string, std::string>>{
           {Event("e2", 1, R"({"sku":7})"), "schema-violation"},
           {Event("e3", 2, R"({"sku":"c"})"), "unaccepted-schema-version"},
           {R"({"specversion":"1.0","id":"e4"})", "missing-source"},
           {"\xff\xfe", "invalid-utf8"},
           {std::string(2u << 20, '['), "envelope-too-large"}}) {
    Answer refused = Reserve(*session_, "c", bytes);
    EXPECT_EQ(refused.sqlstate, "EV001") << reason << ": " << refused.message;
    EXPECT_EQ(refused.message.rfind(reason + ": ", 0), 0u) << refused.message;
  }
  EXPECT_EQ(session_->One("SELECT string_agg(sku, ',' ORDER BY sku) FROM reservation"), "a,a2");
  EXPECT_EQ(Count("outbox"), "1");
  // evident_try_append answers a refusal as a row: the caller's transaction is not aborted.
  ASSERT_TRUE(session_->Run("BEGIN").ok());
  ASSERT_TRUE(session_->Run("INSERT INTO reservation VALUES('d')").ok());
  Answer tried = session_->Run("SELECT outcome, reason, seq FROM evident_try_append($1)",
                               {Event("e5", 1, "{}")});
  ASSERT_TRUE(tried.ok()) << tried.message;
  EXPECT_EQ(
      tried.rows,
      (std::vector<std::vector<std::string>>{{"payload-invalid", "schema-violation", "<null>"}}));
  ASSERT_TRUE(session_->Run("COMMIT").ok());
  EXPECT_EQ(Count("reservation WHERE sku='d'"), "1");
  EXPECT_EQ(Count("outbox"), "1");
}

// A set pushed while a producer appends: its next call takes it, without a restart, and no
// call sees a part of it. v2 events are refused until the push commits and appended from then
// on, never refused again; v1 events are appended throughout.
TEST_F(PgFunctions, APushIsTakenAtTheProducersNextCall) {
  std::atomic<bool> pushed{false};
  std::atomic<int> calls{0};
  std::vector<std::string> v2_outcomes;
  std::string unexpected;
  std::thread producer([&] {
    Session s(url_);
    int after = 0;  // rounds since the push was committed
    for (int i = 0; i < 5000 && after < 20; ++i) {
      if (pushed.load()) ++after;
      for (const int version : {1, 2}) {
        const std::string id = "p" + std::to_string(i) + "v" + std::to_string(version);
        const Answer a = s.Run("SELECT outcome, reason FROM evident_try_append($1)",
                               {Event(id, version, R"({"sku":"x"})")});
        const std::string outcome = a.ok() ? a.rows[0][0] + " " + a.rows[0][1] : a.message;
        if (version == 2) v2_outcomes.push_back(outcome);
        if (version == 1 && outcome != "appended <null>") unexpected = outcome;
      }
      ++calls;
    }
  });
  while (calls.load() < 10) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Write("stock.reserved/v2.schema.json", kV2);
  Push();
  pushed = true;
  producer.join();
  EXPECT_EQ(unexpected, "");
  ASSERT_FALSE(v2_outcomes.empty());
  EXPECT_EQ(v2_outcomes.front(), "rejected unaccepted-schema-version");
  EXPECT_EQ(v2_outcomes.back(), "appended <null>");
  size_t first_appended = 0;
  while (v2_outcomes[first_appended] != "appended <null>") {
    EXPECT_EQ(v2_outcomes[first_appended], "rejected unaccepted-schema-version");
    ++first_appended;
  }
  for (size_t i = first_appended; i < v2_outcomes.size(); ++i) {
    EXPECT_EQ(v2_outcomes[i], "appended <null>") << "call " << i;
  }
}

// The functions work on the store of their own schema, whatever the caller's search_path; a
// store of another layout, or none there, is said as such (EV003).
TEST_F(PgFunctions, TheStoreIsTheFunctionsSchemasAndItsLayoutIsChecked) {
  const std::string schema = session_->One("SELECT current_schema()");
  ASSERT_TRUE(session_->Run("CREATE SCHEMA IF NOT EXISTS elsewhere").ok());
  ASSERT_TRUE(session_->Run("CREATE TABLE elsewhere.outbox(seq bigint)").ok());
  ASSERT_TRUE(session_->Run("SET search_path = elsewhere").ok());
  EXPECT_EQ(
      session_->One("SELECT " + schema + ".evident_append($1)", {Event("e1", 1, R"({"sku":"a"})")}),
      "1");
  EXPECT_EQ(session_->One("SELECT count(*) FROM " + schema + ".outbox"), "1");
  EXPECT_EQ(session_->One("SELECT count(*) FROM elsewhere.outbox"), "0");
  ASSERT_TRUE(session_->Run("DROP SCHEMA elsewhere CASCADE").ok());
  ASSERT_TRUE(session_->Run("SET search_path = " + schema).ok());

  ASSERT_TRUE(session_->Run("INSERT INTO evident_schema(version) VALUES(99)").ok());
  Answer newer = session_->Run("SELECT evident_append($1)", {Event("e2", 1, R"({"sku":"a"})")});
  EXPECT_EQ(newer.sqlstate, "EV003");
  EXPECT_NE(newer.message.find("has layout 99; this evident_pg.so works on layout"),
            std::string::npos)
      << newer.message;
  ASSERT_TRUE(session_->Run("DROP TABLE evident_schema").ok());
  Answer none = session_->Run("SELECT evident_append($1)", {Event("e2", 1, R"({"sku":"a"})")});
  EXPECT_EQ(none.sqlstate, "EV003");
  EXPECT_NE(none.message.find("no evident store in schema \"" + schema + "\""), std::string::npos)
      << none.message;
}

// The caller's own savepoint around a refused evident_append: rolled back to, the caller's
// transaction commits its other writes, and the backend appends again afterwards.
TEST_F(PgFunctions, ARefusalUnderTheCallersSavepointLeavesTheRestOfItsTransaction) {
  ASSERT_TRUE(session_->Run("BEGIN").ok());
  ASSERT_TRUE(session_->Run("INSERT INTO reservation VALUES('kept')").ok());
  ASSERT_TRUE(session_->Run("SAVEPOINT before_event").ok());
  EXPECT_EQ(session_->Run("SELECT evident_append($1)", {Event("e1", 1, "{}")}).sqlstate, "EV001");
  ASSERT_TRUE(session_->Run("ROLLBACK TO SAVEPOINT before_event").ok());
  EXPECT_EQ(session_->One("SELECT evident_append($1)", {Event("e2", 1, R"({"sku":"k"})")}), "1");
  ASSERT_TRUE(session_->Run("COMMIT").ok());
  EXPECT_EQ(Count("reservation"), "1");
  EXPECT_EQ(Count("outbox"), "1");
}

// A statement the server refuses inside a function is raised as it was: a lock not granted in
// time is 55P03 with PostgreSQL's own message, a permission the caller lacks 42501. Nothing of
// the call is left, and the caller can retry.
TEST_F(PgFunctions, TheServersOwnErrorsKeepTheirSqlstate) {
  const std::string event = Event("e1", 1, R"({"sku":"a"})");
  Session holder(url_);
  ASSERT_TRUE(holder.Run("BEGIN").ok());
  ASSERT_EQ(holder.One("SELECT evident_append($1)", {event}), "1");
  // The same id, uncommitted in the holder's transaction: the insert waits on its key.
  ASSERT_TRUE(session_->Run("SET lock_timeout = '200ms'").ok());
  Answer waited = session_->Run("SELECT evident_append($1)", {event});
  EXPECT_EQ(waited.sqlstate, "55P03");
  EXPECT_EQ(waited.message, "canceling statement due to lock timeout");
  ASSERT_TRUE(holder.Run("COMMIT").ok());
  EXPECT_EQ(session_->One("SELECT evident_append($1)", {event}), "1");  // a duplicate now

  const std::string schema = session_->One("SELECT current_schema()");
  ASSERT_TRUE(session_->Run("DROP ROLE IF EXISTS " + schema + "_reader").ok());
  ASSERT_TRUE(session_->Run("CREATE ROLE " + schema + "_reader").ok());
  ASSERT_TRUE(session_->Run("GRANT USAGE ON SCHEMA " + schema + " TO " + schema + "_reader").ok());
  ASSERT_TRUE(
      session_->Run("GRANT SELECT ON ALL TABLES IN SCHEMA " + schema + " TO " + schema + "_reader")
          .ok());
  ASSERT_TRUE(session_->Run("SET ROLE " + schema + "_reader").ok());
  Answer denied = session_->Run("SELECT evident_append($1)", {Event("e2", 1, R"({"sku":"b"})")});
  EXPECT_EQ(denied.sqlstate, "42501");
  EXPECT_EQ(denied.message, "permission denied for table outbox");
  ASSERT_TRUE(session_->Run("RESET ROLE").ok());
  ASSERT_TRUE(session_->Run("DROP OWNED BY " + schema + "_reader").ok());
  ASSERT_TRUE(session_->Run("DROP ROLE " + schema + "_reader").ok());
  EXPECT_EQ(Count("outbox"), "1");
}

// A schema-shaped bomb pushed as a contract: 40 $defs, each an allOf of two $refs to the next,
// under unevaluatedProperties (2^40 paths memoization cannot share). An event under it is
// decided inside the backend within the validation budget, and the backend serves on.
TEST_F(PgFunctions, AnEventUnderASchemaBombIsDecidedWithinTheBudget) {
  fs::create_directories(dir_ / "order.nested");
  Write("order.nested/v1.schema.json", test_support::AllOfChainBomb(40));
  Push();
  const std::string pid = session_->One("SELECT pg_backend_pid()");
  const auto start = std::chrono::steady_clock::now();
  const Answer a =
      session_->Run("SELECT outcome, reason FROM evident_try_append($1)",
                    {R"({"specversion":"1.0","id":"b1","source":"https://example.test/stock",)"
                     R"("type":"order.nested","schemaversion":1,"data":{}})"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(a.ok()) << a.message;
  EXPECT_EQ(
      a.rows,
      (std::vector<std::vector<std::string>>{{"payload-invalid", "validation-budget-exceeded"}}));
  EXPECT_LT(seconds, 30.0);
  EXPECT_EQ(session_->One("SELECT pg_backend_pid()"), pid);
  EXPECT_EQ(Count("outbox"), "0");
}

// Installed with --security-definer: the functions run with the store owner's rights, and a
// producer granted EXECUTE alone appends through them but cannot insert into the outbox itself;
// a role without EXECUTE cannot call them.
TEST_F(PgFunctions, SecurityDefinerFunctionsCannotBeGoneAround) {
  const std::string schema = session_->One("SELECT current_schema()");
  const std::string owner = schema + "_owner", producer = schema + "_producer",
                    other = schema + "_other";
  for (const std::string& role : {owner, producer, other}) {
    ASSERT_TRUE(session_->Run("DROP ROLE IF EXISTS " + role).ok());
    ASSERT_TRUE(session_->Run("CREATE ROLE " + role).ok());
    ASSERT_TRUE(session_->Run("GRANT USAGE ON SCHEMA " + schema + " TO " + role).ok());
  }
  // Without the owner's grants the installation is refused, naming what is missing.
  Result<PostgresFunctions> refused =
      InstallPostgresFunctions(url_, ModuleOnServer(), {.definer = owner});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("lacks INSERT on outbox"), std::string::npos)
      << refused.status().ToString();
  ASSERT_TRUE(
      session_
          ->Run("GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA " + schema + " TO " + owner)
          .ok());
  ASSERT_TRUE(
      session_->Run("GRANT USAGE ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + owner).ok());
  Result<PostgresFunctions> installed =
      InstallPostgresFunctions(url_, ModuleOnServer(), {.definer = owner});
  ASSERT_TRUE(installed.ok()) << installed.status().ToString();
  ASSERT_TRUE(session_->Run("GRANT EXECUTE ON FUNCTION evident_append(bytea) TO " + producer).ok());

  ASSERT_TRUE(session_->Run("SET ROLE " + producer).ok());
  EXPECT_EQ(session_->One("SELECT evident_append($1)", {Event("d1", 1, R"({"sku":"a"})")}), "1");
  EXPECT_EQ(session_->Run("SELECT evident_append($1)", {Event("d2", 1, "{}")}).sqlstate, "EV001");
  Answer direct = session_->Run(
      "INSERT INTO outbox(source, event_id, type, subject, event_partition, bytes, created_at_ms)"
      " VALUES('s', 'forged', 't', 'x', 0, '\\x00', 0)");
  EXPECT_EQ(direct.sqlstate, "42501") << direct.message;
  ASSERT_TRUE(session_->Run("SET ROLE " + other).ok());
  EXPECT_EQ(session_->Run("SELECT evident_append($1)", {Event("d3", 1, R"({"sku":"a"})")}).sqlstate,
            "42501");
  ASSERT_TRUE(session_->Run("RESET ROLE").ok());
  EXPECT_EQ(Count("outbox"), "1");
  for (const std::string& role : {owner, producer, other}) {
    ASSERT_TRUE(session_->Run("DROP OWNED BY " + role).ok());
    ASSERT_TRUE(session_->Run("DROP ROLE " + role).ok());
  }
}

// Many events in one transaction of the caller's: each call's writes are the caller's own, all
// committed together, with no subtransaction of evident's (a subtransaction that writes takes a
// transaction id of its own, and past 64 of them every backend's snapshots overflow; the ids
// taken meanwhile, other tests' included, stay well under one per event).
TEST_F(PgFunctions, TwoThousandEventsInOneTransactionTakeOneTransactionId) {
  constexpr int kEvents = 2000;
  const int64_t before = std::stoll(session_->One("SELECT pg_current_xact_id()::text::bigint"));
  ASSERT_TRUE(session_->Run("BEGIN").ok());
  for (int i = 0; i < kEvents; ++i) {
    const Answer a = session_->Run("SELECT evident_append($1)",
                                   {Event("m" + std::to_string(i), 1, R"({"sku":"m"})")});
    ASSERT_TRUE(a.ok()) << a.message;
  }
  ASSERT_TRUE(session_->Run("COMMIT").ok());
  const int64_t after = std::stoll(session_->One("SELECT pg_current_xact_id()::text::bigint"));
  EXPECT_LT(after - before, kEvents);
  EXPECT_EQ(Count("outbox"), std::to_string(kEvents));
}

}  // namespace
}  // namespace evident
