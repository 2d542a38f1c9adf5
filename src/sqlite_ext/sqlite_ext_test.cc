// evident_sqlite.so loaded into a plain SQLite connection (this test's libsqlite3): appended,
// duplicate, conflict and every refusal inside the caller's transaction, the business row gone
// with a refused event, the connection's settings checked, a newly pushed set taken without a
// reload, hostile events refused in bounded time.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "evident/store_sqlite.h"
#include "evident/stored_contracts.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

const std::string kOrders = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts";

std::string Event(const std::string& id, const std::string& status, int schema_version = 1) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"training://orders/checkout","type":"order.status.changed",)"
         R"("subject":"order-1","data":{"schemaVersion":)" +
         std::to_string(schema_version) + R"(,"orderId":"order-1","status":")" + status + R"("}})";
}

// One statement's answer: the first column as text, or the error.
struct Answer {
  int rc = SQLITE_OK;
  std::string text;  // the value, or the error message
};

class SqliteExtensionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-sqlite-ext-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "shop.db").string();
    store_ = OpenSqliteStore(path_).value();
  }
  void TearDown() override {
    if (db_ != nullptr) sqlite3_close(db_);
    store_.reset();
    fs::remove_all(dir_);
  }
  void PushOrders() {
    ContractsPushOptions options;
    options.settings.schema_version_at = "/data/schemaVersion";
    const Result<ContractsPush> push = PushContractsDir(*store_, kOrders, options, 1000);
    ASSERT_TRUE(push.ok() && push->outcome == PushOutcome::kPushed);
  }
  // A connection of the application's own, with the module loaded and a business table.
  void Connect(const std::string& path, const char* synchronous = "FULL") {
    ASSERT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    Exec(std::string("PRAGMA synchronous=") + synchronous);
    ASSERT_EQ(sqlite3_enable_load_extension(db_, 1), SQLITE_OK);
    char* error = nullptr;
    ASSERT_EQ(sqlite3_load_extension(db_, EVIDENT_SQLITE_MODULE, nullptr, &error), SQLITE_OK)
        << (error != nullptr ? error : "");
    Exec("CREATE TABLE IF NOT EXISTS orders(id TEXT PRIMARY KEY, status TEXT NOT NULL)");
  }
  Answer Query(const std::string& sql, const std::string& bound = "") {
    sqlite3_stmt* statement = nullptr;
    Answer a;
    a.rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr);
    if (a.rc == SQLITE_OK && !bound.empty()) {
      sqlite3_bind_text(statement, 1, bound.data(), static_cast<int>(bound.size()),
                        SQLITE_TRANSIENT);
    }
    if (a.rc == SQLITE_OK) a.rc = sqlite3_step(statement);
    if (a.rc == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
      a.text = text == nullptr ? "" : text;
      a.rc = SQLITE_OK;
    } else if (a.rc != SQLITE_DONE) {
      a.text = sqlite3_errmsg(db_);
    } else {
      a.rc = SQLITE_OK;
    }
    sqlite3_finalize(statement);
    return a;
  }
  void Exec(const std::string& sql) {
    const Answer a = Query(sql);
    ASSERT_EQ(a.rc, SQLITE_OK) << sql << ": " << a.text;
  }
  int64_t Count(const std::string& table) {
    return std::stoll(Query("SELECT count(*) FROM " + table).text);
  }
  int64_t OutboxRows() {
    return static_cast<int64_t>(
        store_->Read().value()->OutboxRows(OutboxSelect::kAll, 0).value().rows.size());
  }
  // The business write and the append in one transaction, committed when the append answered.
  Answer ChangeAndAppend(const std::string& order, const std::string& event,
                         const std::string& function = "evident_append") {
    Exec("BEGIN IMMEDIATE");
    Exec("INSERT OR REPLACE INTO orders(id, status) VALUES('" + order + "', 'paid')");
    const Answer a = Query("SELECT " + function + "(?1)", event);
    Exec(a.rc == SQLITE_OK ? "COMMIT" : "ROLLBACK");
    return a;
  }

  fs::path dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
  sqlite3* db_ = nullptr;
};

TEST_F(SqliteExtensionTest, AppendsInTheCallersTransactionAndAnswersDuplicatesAndConflicts) {
  PushOrders();
  Connect(path_);
  const Answer first = ChangeAndAppend("order-1", Event("e1", "paid"));
  ASSERT_EQ(first.rc, SQLITE_OK) << first.text;
  EXPECT_EQ(ChangeAndAppend("order-1", Event("e1", "paid")).text, first.text);  // duplicate
  const Answer conflict = ChangeAndAppend("order-2", Event("e1", "shipped"));
  EXPECT_NE(conflict.rc, SQLITE_OK);
  EXPECT_TRUE(conflict.text.starts_with("id-conflict: conflict: ")) << conflict.text;
  EXPECT_EQ(Count("orders"), 1);  // order-2 rolled back with its event
  EXPECT_EQ(OutboxRows(), 1);
  const Answer tried = ChangeAndAppend("order-3", Event("e2", "paid"), "evident_try_append");
  ASSERT_TRUE(tried.text.starts_with(R"({"outcome":"appended","reason":null,"seq":)"))
      << tried.text;
  EXPECT_GT(std::stoll(tried.text.substr(tried.text.rfind(':') + 1)), std::stoll(first.text));
  EXPECT_EQ(OutboxRows(), 2);
}

TEST_F(SqliteExtensionTest, EachRefusalRollsTheBusinessChangeBackWithIt) {
  PushOrders();
  Connect(path_);
  const struct {
    std::string event, reason;
  } kRefused[] = {
      {Event("e1", "paid", 9), "unaccepted-schema-version"},
      {R"({"specversion":"1.0","id":"e2","source":"s","type":"nope","data":{"schemaVersion":1}})",
       "unknown-type"},
      {"not json", "malformed-json"},
      {Event("e3", "paid")
           .replace(Event("e3", "paid").find("\"status\":\"paid\""), 15, "\"status\":12345"),
       "schema-violation"},
  };
  for (const auto& refused : kRefused) {
    const Answer a = ChangeAndAppend("order-1", refused.event);
    EXPECT_EQ(a.rc, SQLITE_CONSTRAINT) << a.text;
    EXPECT_TRUE(a.text.starts_with(refused.reason + ": ")) << a.text;
    const Answer tried = ChangeAndAppend("order-1", refused.event, "evident_try_append");
    EXPECT_EQ(tried.rc, SQLITE_OK) << tried.text;
    EXPECT_NE(tried.text.find(R"("reason":")" + refused.reason + "\""), std::string::npos)
        << tried.text;
    EXPECT_NE(tried.text.find(R"("seq":null)"), std::string::npos) << tried.text;
  }
  // The tried ones committed their business rows (a refusal is a value there); the failed ones
  // rolled theirs back; no event of either was appended.
  EXPECT_EQ(OutboxRows(), 0);
}

TEST_F(SqliteExtensionTest, ACompensationIsInsertedOnce) {
  PushOrders();
  Connect(path_);
  Exec("BEGIN IMMEDIATE");
  const std::string call =
      "SELECT evident_compensate('compensation:order-1:reservation:v2', 'order-1', "
      "'training://orders/checkout', 2, 'reservation-rejected')";
  EXPECT_EQ(Query(call).text, "1");
  EXPECT_EQ(Query(call).text, "0");
  Exec("COMMIT");
  EXPECT_EQ(store_->Read().value()->ListCompensations("", "").value().rows.size(), 1u);
}

TEST_F(SqliteExtensionTest, ItRefusesACallOutsideATransactionAndAStoreWithoutContracts) {
  Connect(path_);
  Exec("BEGIN IMMEDIATE");
  const Answer none = Query("SELECT evident_append(?1)", Event("e1", "paid"));
  EXPECT_NE(none.text.find("the store holds no contracts"), std::string::npos) << none.text;
  Exec("ROLLBACK");
  PushOrders();
  const Answer outside = Query("SELECT evident_append(?1)", Event("e1", "paid"));
  EXPECT_NE(outside.rc, SQLITE_OK);
  EXPECT_NE(outside.text.find("between BEGIN IMMEDIATE and COMMIT"), std::string::npos)
      << outside.text;
  EXPECT_EQ(OutboxRows(), 0);
}

TEST_F(SqliteExtensionTest, ItRefusesACallInsideAStatementThatWrites) {
  PushOrders();
  Connect(path_);
  Exec("CREATE TABLE sent(seq INTEGER)");
  Exec("BEGIN IMMEDIATE");
  const Answer inside =
      Query("INSERT INTO sent(seq) VALUES(evident_append(?1))", Event("e1", "paid"));
  EXPECT_NE(inside.rc, SQLITE_OK);
  EXPECT_NE(inside.text.find("runs in a SELECT of its own"), std::string::npos) << inside.text;
  // The caller's transaction goes on: the same event appended in a SELECT of its own.
  EXPECT_EQ(Query("SELECT evident_append(?1)", Event("e1", "paid")).rc, SQLITE_OK);
  Exec("COMMIT");
  EXPECT_EQ(OutboxRows(), 1);
}

TEST_F(SqliteExtensionTest, ItRefusesAConnectionBelowSynchronousFullOrNotInWal) {
  PushOrders();
  Connect(path_, "NORMAL");
  const Answer normal = ChangeAndAppend("order-1", Event("e1", "paid"));
  EXPECT_NE(normal.text.find("synchronous=NORMAL, below FULL"), std::string::npos) << normal.text;
  sqlite3_close(db_);
  db_ = nullptr;
  Connect((dir_ / "plain.db").string());  // a rollback-journal database
  const Answer plain = ChangeAndAppend("order-1", Event("e1", "paid"));
  EXPECT_NE(plain.text.find("journal_mode is delete, not wal"), std::string::npos) << plain.text;
  Exec("PRAGMA journal_mode=WAL");
  const Answer not_store = ChangeAndAppend("order-1", Event("e1", "paid"));
  EXPECT_NE(not_store.text.find("not an evident store: run evident store migrate --store sqlite:"),
            std::string::npos)
      << not_store.text;
}

TEST_F(SqliteExtensionTest, ANewlyPushedSetIsTakenByAConnectionWithoutAReload) {
  PushOrders();
  Connect(path_);
  const std::string refunded =
      R"({"specversion":"1.0","id":"r1","source":"s","type":"order.refunded","subject":"o",)"
      R"("data":{"schemaVersion":1}})";
  EXPECT_TRUE(ChangeAndAppend("order-1", refunded).text.starts_with("unknown-type: "));
  const fs::path contracts = dir_ / "contracts";
  fs::copy(kOrders, contracts, fs::copy_options::recursive);
  fs::create_directories(contracts / "order.refunded");
  std::ofstream(contracts / "order.refunded/v1.schema.json") << R"({"type":"object"})";
  ContractsPushOptions options;
  options.settings.schema_version_at = "/data/schemaVersion";
  ASSERT_EQ(PushContractsDir(*store_, contracts.string(), options, 2000).value().outcome,
            PushOutcome::kPushed);
  EXPECT_EQ(ChangeAndAppend("order-1", refunded).rc, SQLITE_OK);
}

TEST_F(SqliteExtensionTest, HostileEventsAreRefusedInBoundedTime) {
  PushOrders();
  Connect(path_);
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  std::string huge = Event("e1", "paid");
  huge.insert(huge.size() - 2, ",\"pad\":\"" + std::string(2 << 20, 'x') + "\"");
  std::string bad_utf8 = Event("e2", "paid");
  bad_utf8.replace(bad_utf8.find("paid"), 4, "p\xC3\x28id");
  for (const std::string& event : {deep, huge, bad_utf8}) {
    const auto start = std::chrono::steady_clock::now();
    const Answer a = ChangeAndAppend("order-1", event);
    EXPECT_EQ(a.rc, SQLITE_CONSTRAINT) << a.text.substr(0, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
  EXPECT_EQ(OutboxRows(), 0);
  EXPECT_EQ(Count("orders"), 0);
}

}  // namespace
}  // namespace evident
