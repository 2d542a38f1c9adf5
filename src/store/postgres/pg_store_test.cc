// The PostgreSQL store's layouts (store_postgres.h): a layout-1 store is refused until it is
// migrated, migrating it keeps its rows and lets relays claim them, and a newer layout is refused.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <memory>
#include <string>

#include "evident/store_postgres.h"
#include "store/postgres/pg_schema.h"
#include "store/postgres/test_database.h"

namespace evident {
namespace {

// Runs `sql` (several statements) on the store's schema; the test fails when it does not run.
void Exec(const std::string& uri, const std::string& sql) {
  std::unique_ptr<PGconn, void (*)(PGconn*)> conn(PQconnectdb(uri.c_str()), &PQfinish);
  ASSERT_EQ(PQstatus(conn.get()), CONNECTION_OK) << PQerrorMessage(conn.get());
  PGresult* result = PQexec(conn.get(), ("SET client_min_messages = warning;" + sql).c_str());
  const ExecStatusType status = PQresultStatus(result);
  const std::string message = PQresultErrorMessage(result);
  PQclear(result);
  ASSERT_TRUE(status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) << message;
}

class PgLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> uri = FreshPostgresSchema("layout");
    ASSERT_TRUE(uri.ok()) << uri.status().ToString();
    uri_ = *uri;
  }
  std::string uri_;
};

TEST_F(PgLayoutTest, ALayout1StoreIsRefusedUntilMigratedAndItsPendingRowsCanThenBeClaimed) {
  // A store as layout 1 wrote it, with two pending outbox rows in partitions 2 and 5 and one
  // sent row in partition 7.
  Exec(uri_, std::string(postgres::kSchemaLayout1) +
                 "INSERT INTO evident_schema(version) VALUES(1);"
                 "INSERT INTO outbox(source, event_id, type, subject, event_partition, bytes,"
                 " created_at_ms, sent_at_ms) VALUES"
                 " ('s','a','t','x',2,'\\x7b7d',1,NULL), ('s','b','t','y',5,'\\x7b7d',1,NULL),"
                 " ('s','c','t','z',7,'\\x7b7d',1,9)");
  Result<std::unique_ptr<Store>> refused = OpenPostgresStore(uri_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("evident store migrate"), std::string::npos)
      << refused.status().ToString();

  Result<int64_t> before = MigratePostgresStore(uri_);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(*before, 1);
  Result<int64_t> again = MigratePostgresStore(uri_);  // a second run finds nothing to do
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, kPostgresLayoutVersion);

  Result<std::unique_ptr<Store>> store = OpenPostgresStore(uri_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto tx = (*store)->Begin();
  ASSERT_TRUE(tx.ok());
  Result<Rows<OutboxRow>> claimed = (*tx)->ClaimOutbox(10, 8, 30'000, 0);
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  ASSERT_EQ(claimed->rows.size(), 2U);
  EXPECT_EQ(claimed->rows[0].event_id, "a");
  EXPECT_EQ(claimed->rows[1].event_id, "b");
  EXPECT_TRUE((*tx)->Rollback().ok());
}

TEST_F(PgLayoutTest, ANewerLayoutIsRefusedByOpenAndByMigrate) {
  ASSERT_TRUE(MigratePostgresStore(uri_).ok());  // created
  Exec(uri_, "INSERT INTO evident_schema(version) VALUES(" +
                 std::to_string(kPostgresLayoutVersion + 1) + ")");
  for (const Status& s : {OpenPostgresStore(uri_).status(), MigratePostgresStore(uri_).status()}) {
    EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("newer evident"), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace evident
