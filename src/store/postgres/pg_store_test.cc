// The PostgreSQL store's layouts (store_postgres.h): a layout-1 store is refused until it is
// migrated, migrating it keeps its rows and lets relays claim them, and a newer layout is refused.
// Deciders of one consumer in several processes (StoreOptions::deciders) take turns, or run side
// by side when they say their leases keep them apart.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "evident/store_memory.h"
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

// Layouts 10 and 11's digests tables are readable by whoever could read the ledger and the
// intents: a role granted SELECT on either before the migration (a reader of evidence, a
// --security-definer role) reads its digests after it, and gets no right it did not have there.
TEST_F(PgLayoutTest, Layouts10And11GiveTheGranteesOfTheirTablesTheSameRightsOnTheirDigests) {
  ASSERT_TRUE(OpenPostgresStore(uri_).ok());
  // A role of this run's own (roles are the cluster's), dropped at the end.
  const std::string role = "evident_reader_" + std::to_string(::getpid());
  Exec(uri_,
       "DROP TABLE ledger_digest; DROP TABLE effect_digest;"
       "ALTER TABLE retention_run DROP COLUMN forgot_before_ms;"
       "DELETE FROM evident_schema WHERE version >= 10;"
       "CREATE ROLE " +
           role + "; GRANT SELECT ON ledger, effect_intent TO " + role +
           " WITH GRANT OPTION;"
           "GRANT INSERT ON ledger, effect_intent TO PUBLIC;");
  Result<int64_t> before = MigratePostgresStore(uri_);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(*before, 9);
  std::unique_ptr<PGconn, void (*)(PGconn*)> conn(PQconnectdb(uri_.c_str()), &PQfinish);
  for (const std::string table : {"ledger_digest", "effect_digest"}) {
    SCOPED_TRACE(table);
    PGresult* result = PQexec(
        conn.get(),
        ("SELECT has_table_privilege('" + role + "', '" + table + "', 'SELECT')" +
         " || ' ' || has_table_privilege('" + role + "', '" + table +
         "', 'SELECT WITH GRANT OPTION') || ' ' || has_table_privilege('" + role + "', '" + table +
         "', 'UPDATE') || ' ' ||"
         " (SELECT count(*) FROM aclexplode((SELECT relacl FROM pg_class WHERE oid ="
         " to_regclass('" +
         table + "'))) WHERE grantee = 0 AND privilege_type = 'INSERT')")
            .c_str());
    ASSERT_EQ(PQresultStatus(result), PGRES_TUPLES_OK) << PQresultErrorMessage(result);
    EXPECT_EQ(std::string(PQgetvalue(result, 0, 0)), "true true false 1");
    PQclear(result);
  }
  // The run record's new column is there, and the store opens.
  ASSERT_TRUE(OpenPostgresStore(uri_).ok());
  Exec(uri_, "SELECT forgot_before_ms FROM retention_run");
  Exec(uri_, "DROP OWNED BY " + role + "; DROP ROLE " + role + ";");
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

// Two stores of one schema (two processes), their consumers' locks exclusive or shared; a lock
// held elsewhere is waited for `lock_timeout_ms`.
class PgDecidersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> uri = FreshPostgresSchema("deciders");
    ASSERT_TRUE(uri.ok()) << uri.status().ToString();
    uri_ = *uri;
  }
  std::unique_ptr<Store> Open(bool shared, int64_t lock_timeout_ms = 200) {
    Result<std::unique_ptr<Store>> store =
        OpenPostgresStore(uri_, {.lock_timeout_ms = lock_timeout_ms, .deciders_shared = shared});
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }
  static BatchKeys Subject(const std::string& consumer, const std::string& subject) {
    return BatchKeys{.ledger = {}, .subjects = {{consumer, subject}}};
  }
  // Removing `rows` fails while a decider of fulfillment/order-1 is in flight (its lock held
  // shared), nothing removed, and takes `removed` of them once that decider ended.
  void ExpectRemovedOnlyWithoutADecider(Store& decider, Store& retention, const RetainedRows& rows,
                                        int64_t removed) {
    auto in_flight = decider.Begin();
    ASSERT_TRUE(in_flight.ok());
    ASSERT_TRUE((*in_flight)->Load(Subject("fulfillment", "order-1")).ok());
    {
      auto tx = retention.Begin();
      ASSERT_TRUE(tx.ok());
      Result<int64_t> refused = (*tx)->RemoveRetained(rows, 100);
      Status committed = refused.ok() ? (*tx)->Commit() : refused.status();
      EXPECT_FALSE(committed.ok()) << "removed while a decider held its consumer's lock";
      if (!committed.ok()) (void)(*tx)->Rollback();
    }
    ASSERT_TRUE((*in_flight)->Rollback().ok());
    auto tx = retention.Begin();
    ASSERT_TRUE(tx.ok());
    Result<int64_t> done = (*tx)->RemoveRetained(rows, 100);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    EXPECT_EQ(*done, removed);
    ASSERT_TRUE((*tx)->Commit().ok());
  }
  std::string uri_;
};

// Retention compacts a consumer's receipts under that consumer's lock held exclusively, whatever
// its own session's deciders do: while a decider of the consumer is in flight (its lock shared
// here) the compaction waits, past the lock timeout it fails with nothing removed, and once the
// decider is done it goes through.
TEST_F(PgDecidersTest, ReceiptsAreCompactedOnlyWhileNoDeciderOfTheirConsumerIsInFlight) {
  std::unique_ptr<Store> decider = Open(true), retention = Open(true);
  ASSERT_TRUE(decider && retention);
  {
    auto tx = decider->Begin();
    ASSERT_TRUE(tx.ok());
    for (const char* id : {"e1", "e2"}) {
      LedgerEntry e{.consumer = "fulfillment", .source = "s", .event_id = id};
      e.subject = "order-1";
      e.committed_at_ms = 10;
      ASSERT_TRUE((*tx)->InsertLedger(e).ok());
    }
    ASSERT_TRUE((*tx)->Commit().ok());
  }
  const RetainedRows rows =
      std::move(std::move(retention->Read()).value()->RetainableLedger(100, LedgerKey{}, 10))
          .value();
  ASSERT_EQ(rows.ledger.size(), 2u);
  ExpectRemovedOnlyWithoutADecider(*decider, *retention, rows, 2);
  EXPECT_TRUE(std::move(std::move(retention->Read()).value()->FindLedger("fulfillment", "s", "e1"))
                  .value()
                  ->retained);
}

// Intents, likewise: an earlier settled intent becomes its key's digest only while no decider of
// its consumer is in flight (a decider may be intending that very key again).
TEST_F(PgDecidersTest, IntentsAreRemovedOnlyWhileNoDeciderOfTheirConsumerIsInFlight) {
  std::unique_ptr<Store> decider = Open(true), retention = Open(true);
  ASSERT_TRUE(decider && retention);
  {
    auto tx = decider->Begin();
    ASSERT_TRUE(tx.ok());
    for (const char* key : {"reserve:order-1:v1", "reserve:order-1:v2"}) {
      EffectIntent e{.key = key,
                     .effect = "reserve-stock",
                     .consumer = "fulfillment",
                     .subject = "order-1",
                     .state = EffectState::kDone,
                     .settled_at_ms = 10};
      ASSERT_TRUE((*tx)->InsertIntent(e).ok());
    }
    ASSERT_TRUE((*tx)->Commit().ok());
  }
  const RetainedRows rows =
      std::move(std::move(retention->Read()).value()->Retainable(RetainedKind::kIntent, 100, 0, 10))
          .value();
  ASSERT_EQ(rows.intents.size(), 1u);
  ExpectRemovedOnlyWithoutADecider(*decider, *retention, rows, 1);
  EXPECT_TRUE(std::move(std::move(retention->Read()).value()->FindIntent("reserve:order-1:v1"))
                  .value()
                  ->retained);
}

// Another consumer intending a key while retention turns that key's intent into a digest: its
// insert waits for the removal on the key's index and, its snapshot older than the digest, does
// not see it; a statement of its own checks again, and the intent is refused, not written anew.
TEST_F(PgDecidersTest, AKeyRetainedWhileAnotherConsumerIntendsItIsRefused) {
  std::unique_ptr<Store> retention = Open(true), other = Open(true, 10'000);
  ASSERT_TRUE(retention && other);
  {
    auto tx = retention->Begin();
    ASSERT_TRUE(tx.ok());
    for (const char* key : {"reserve:order-1:v1", "reserve:order-1:v2"}) {
      ASSERT_TRUE((*tx)
                      ->InsertIntent(EffectIntent{.key = key,
                                                  .effect = "reserve-stock",
                                                  .consumer = "fulfillment",
                                                  .subject = "order-1",
                                                  .state = EffectState::kDone,
                                                  .settled_at_ms = 10})
                      .ok());
    }
    ASSERT_TRUE((*tx)->Commit().ok());
  }
  const RetainedRows rows =
      std::move(std::move(retention->Read()).value()->Retainable(RetainedKind::kIntent, 100, 0, 10))
          .value();
  ASSERT_EQ(rows.intents.size(), 1u);
  auto removing = retention->Begin();
  ASSERT_TRUE(removing.ok());
  ASSERT_EQ(std::move((*removing)->RemoveRetained(rows, 100)).value(), 1);
  auto racing = other->Begin();
  ASSERT_TRUE(racing.ok());
  const EffectIntent billing{.key = "reserve:order-1:v1",
                             .effect = "invoice",
                             .consumer = "billing",
                             .subject = "order-1",
                             .state = EffectState::kIntended};
  ASSERT_TRUE((*racing)->IntendOnce(billing, "x").ok());  // sent, answered at the commit
  std::future<Status> committed =
      std::async(std::launch::async, [&] { return (*racing)->Commit(); });
  EXPECT_EQ(committed.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the insert did not wait for the removal of the key's intent";
  ASSERT_TRUE((*removing)->Commit().ok());
  const Status status = committed.get();
  EXPECT_EQ(status.code(), Code::kFailedPrecondition) << status.ToString();
  const std::optional<EffectIntent> found =
      std::move(std::move(retention->Read()).value()->FindIntent("reserve:order-1:v1")).value();
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->retained);
  EXPECT_EQ(found->consumer, "fulfillment");
}

TEST_F(PgDecidersTest, TwoExclusiveDecidersOfOneConsumerTakeTurnsAndOtherConsumersDoNotWait) {
  std::unique_ptr<Store> a = Open(false), b = Open(false);
  ASSERT_TRUE(a && b);
  auto first = a->Begin();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Load(Subject("fulfillment", "order-1")).ok());

  auto second = b->Begin();
  ASSERT_TRUE(second.ok());
  // Another subject of the same consumer waits too: the lock is the consumer's.
  Result<BatchRows> refused = (*second)->Load(Subject("fulfillment", "order-2"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kUnavailable) << refused.status().ToString();
  (void)(*second)->Rollback();

  auto other = b->Begin();
  ASSERT_TRUE(other.ok());
  Result<BatchRows> billing = (*other)->Load(Subject("billing", "order-1"));
  EXPECT_TRUE(billing.ok()) << billing.status().ToString();
  Projection scratch;
  Result<bool> read = (*other)->ReadProjection("billing", "order-9", scratch);
  EXPECT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE((*other)->Commit().ok());

  ASSERT_TRUE((*first)->Commit().ok());
  auto after = b->Begin();
  ASSERT_TRUE(after.ok());
  Result<BatchRows> loaded = (*after)->Load(Subject("fulfillment", "order-2"));
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_TRUE((*after)->Rollback().ok());
}

// What a waiting decider reads is what the one before it committed: no statement of its batch
// sees the other's batch half done (at READ COMMITTED each statement has its own snapshot).
TEST_F(PgDecidersTest, AWaitingDeciderReadsWhatTheOneBeforeItCommitted) {
  std::unique_ptr<Store> a = Open(false), b = Open(false, 10'000);
  ASSERT_TRUE(a && b);
  auto first = a->Begin();
  ASSERT_TRUE(first.ok());
  Result<BatchRows> before = (*first)->Load(Subject("fulfillment", "order-1"));
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->projections.empty());

  std::promise<void> started;
  std::future<Result<BatchRows>> waited = std::async(std::launch::async, [&] {
    auto second = b->Begin();
    if (!second.ok()) return Result<BatchRows>(second.status());
    started.set_value();
    Result<BatchRows> rows = (*second)->Load(Subject("fulfillment", "order-1"));
    (void)(*second)->Rollback();
    return rows;
  });
  started.get_future().wait();
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  Projection put{.consumer = "fulfillment", .subject = "order-1", .version = 1, .state = "paid"};
  ASSERT_TRUE((*first)->PutProjection(put, std::nullopt).ok());
  ASSERT_TRUE((*first)->Commit().ok());

  Result<BatchRows> rows = waited.get();
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->projections.size(), 1U);
  EXPECT_EQ(rows->projections[0].version, 1);
}

// WillDecide takes every consumer's lock at once, before any row is read: a second decider of
// any of them waits from the start, so that two deciders cannot each hold one lock and wait for
// the other's (locks taken as rows are first read come in the order events arrive).
TEST_F(PgDecidersTest, WillDecideTakesEveryConsumersLockAtOnce) {
  std::unique_ptr<Store> a = Open(false), b = Open(false);
  ASSERT_TRUE(a && b);
  auto first = a->Begin();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->WillDecide({"fulfillment", "billing"}).ok());
  ASSERT_TRUE((*first)->Load(Subject("fulfillment", "order-1")).ok());  // sends what is queued
  for (const char* consumer : {"billing", "fulfillment"}) {
    auto second = b->Begin();
    ASSERT_TRUE(second.ok());
    Projection scratch;
    Result<bool> read = (*second)->ReadProjection(consumer, "order-2", scratch);
    ASSERT_FALSE(read.ok()) << consumer;
    EXPECT_EQ(read.status().code(), Code::kUnavailable) << read.status().ToString();
    (void)(*second)->Rollback();
  }
  auto other = b->Begin();
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE((*other)->WillDecide({"shipping"}).ok());
  EXPECT_TRUE((*other)->Load(Subject("shipping", "order-1")).ok());
  EXPECT_TRUE((*other)->Commit().ok());
  EXPECT_TRUE((*first)->Commit().ok());
}

// Shared deciders (a group's members) lock the subjects of their batch: a decider of the same
// subject elsewhere (evident_decide inside an application's transaction) takes turns with them,
// while other subjects go on.
TEST_F(PgDecidersTest, SharedDecidersOfOneSubjectTakeTurns) {
  std::unique_ptr<Store> a = Open(true), b = Open(true);
  ASSERT_TRUE(a && b);
  auto first = a->Begin();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Load(Subject("fulfillment", "order-1")).ok());
  auto second = b->Begin();
  ASSERT_TRUE(second.ok());
  Result<BatchRows> same = (*second)->Load(Subject("fulfillment", "order-1"));
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.status().code(), Code::kUnavailable) << same.status().ToString();
  (void)(*second)->Rollback();
  auto third = b->Begin();
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE((*third)->Load(Subject("fulfillment", "order-2")).ok());
  EXPECT_TRUE((*third)->Commit().ok());
  EXPECT_TRUE((*first)->Commit().ok());
}

TEST_F(PgDecidersTest, SharedDecidersRunSideBySideAndAnExclusiveOneExcludesThem) {
  std::unique_ptr<Store> a = Open(true), b = Open(true), outside = Open(false);
  ASSERT_TRUE(a && b && outside);
  auto first = a->Begin();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Load(Subject("fulfillment", "order-1")).ok());
  auto second = b->Begin();
  ASSERT_TRUE(second.ok());
  Result<BatchRows> beside = (*second)->Load(Subject("fulfillment", "order-2"));
  EXPECT_TRUE(beside.ok()) << beside.status().ToString();

  auto replay = outside->Begin();
  ASSERT_TRUE(replay.ok());
  Projection scratch;
  Result<bool> refused = (*replay)->ReadProjection("fulfillment", "order-3", scratch);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kUnavailable) << refused.status().ToString();
  (void)(*replay)->Rollback();

  ASSERT_TRUE((*first)->Commit().ok());
  ASSERT_TRUE((*second)->Commit().ok());
  auto later = outside->Begin();
  ASSERT_TRUE(later.ok());
  Result<bool> read = (*later)->ReadProjection("fulfillment", "order-3", scratch);
  EXPECT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE((*later)->Rollback().ok());
}

}  // namespace
}  // namespace evident

namespace evident {
namespace {

// The caller's own statements in a transaction of the store (PostgresConnection): a business
// table beside evident's, on the store's schema.
class PgLentConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> uri = FreshPostgresSchema("lent");
    ASSERT_TRUE(uri.ok()) << uri.status().ToString();
    uri_ = *uri;
    Result<std::unique_ptr<Store>> store = OpenPostgresStore(uri_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    Exec(uri_, "CREATE TABLE orders(id text PRIMARY KEY, status text NOT NULL)");
  }
  // Runs `sql` on `conn`; its error message, empty when it ran.
  static std::string Run(PGconn* conn, const std::string& sql) {
    PGresult* result = PQexec(conn, sql.c_str());
    const ExecStatusType status = PQresultStatus(result);
    std::string message = PQresultErrorMessage(result);
    PQclear(result);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK ? "" : message;
  }
  // What the store's tables hold, as another session sees it: orders, then outbox rows.
  std::pair<int64_t, int64_t> Counts() {
    std::unique_ptr<PGconn, void (*)(PGconn*)> conn(PQconnectdb(uri_.c_str()), &PQfinish);
    PGresult* result =
        PQexec(conn.get(), "SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM outbox)");
    std::pair<int64_t, int64_t> out{-1, -1};
    if (PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) == 1) {
      out = {std::stoll(PQgetvalue(result, 0, 0)), std::stoll(PQgetvalue(result, 0, 1))};
    }
    PQclear(result);
    return out;
  }
  // A transaction in which the caller writes order-1 through the lent connection, then runs
  // `then` there (refused by the server when `then_fails`): its Commit's status.
  Status CommitAfter(const std::string& then, bool then_fails) {
    auto tx = store_->Begin().value();
    PGconn* conn = PostgresConnection(*tx).value();
    EXPECT_EQ(Run(conn, "INSERT INTO orders VALUES('order-1', 'paid')"), "");
    EXPECT_EQ(Run(conn, then).empty(), !then_fails) << then;
    return tx->Commit();
  }
  // The store's connection serves the next transaction as before: one more outbox row commits.
  void ExpectTheNextTransactionCommits() {
    auto tx = store_->Begin().value();
    ASSERT_TRUE(tx->AppendOutbox(Row("b")).ok());
    ASSERT_TRUE(tx->Commit().ok());
  }
  static OutboxRow Row(const std::string& id) {
    return OutboxRow{.source = "s", .event_id = id, .type = "t", .subject = id, .bytes = "{}"};
  }
  std::string uri_;
  std::unique_ptr<Store> store_;
};

TEST_F(PgLentConnectionTest, TheCallersRowAndTheOutboxRowCommitTogetherOrNotAtAll) {
  {
    auto tx = store_->Begin().value();
    ASSERT_TRUE(tx->AppendOutbox(Row("a")).ok());  // buffered or pipelined before the lending
    Result<PGconn*> conn = PostgresConnection(*tx);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    EXPECT_EQ(Run(*conn, "INSERT INTO orders VALUES('order-1', 'paid')"), "");
    EXPECT_EQ(Run(*conn, "SELECT count(*) FROM outbox"), "");  // synchronous calls work
    ASSERT_TRUE(tx->AppendOutbox(Row("b")).ok());              // evident's calls go on after it
    ASSERT_TRUE(tx->Commit().ok());
  }
  EXPECT_EQ(Counts(), std::make_pair(int64_t{1}, int64_t{2}));
  {
    auto tx = store_->Begin().value();
    Result<PGconn*> conn = PostgresConnection(*tx);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    EXPECT_EQ(Run(*conn, "INSERT INTO orders VALUES('order-2', 'paid')"), "");
    ASSERT_TRUE(tx->AppendOutbox(Row("c")).ok());
    ASSERT_TRUE(tx->Rollback().ok());
  }
  EXPECT_EQ(Counts(), std::make_pair(int64_t{1}, int64_t{2})) << "a rollback kept a row";
}

TEST_F(PgLentConnectionTest, AFailedStatementOfTheCallersRefusesTheCommitAndWritesNothing) {
  const Status committed = CommitAfter("INSERT INTO orders VALUES('order-1', 'again')", true);
  EXPECT_EQ(committed.code(), Code::kAborted) << committed.ToString();
  EXPECT_NE(committed.message().find("statement of the caller's failed"), std::string::npos)
      << committed.ToString();
  EXPECT_EQ(Counts(), std::make_pair(int64_t{0}, int64_t{0}));
  ExpectTheNextTransactionCommits();
  EXPECT_EQ(Counts(), std::make_pair(int64_t{0}, int64_t{1}));
}

TEST_F(PgLentConnectionTest, ACommitOfTheCallersOwnIsRefusedAtTheTransactionsNextCall) {
  const Status committed = CommitAfter("COMMIT", false);
  EXPECT_EQ(committed.code(), Code::kFailedPrecondition) << committed.ToString();
  EXPECT_NE(committed.message().find("ended the transaction"), std::string::npos)
      << committed.ToString();
  ExpectTheNextTransactionCommits();
  EXPECT_EQ(Counts(), std::make_pair(int64_t{1}, int64_t{1}));  // order-1 went with its COMMIT
}

TEST_F(PgLentConnectionTest, AConnectionLostWhileLentIsSaidSoAndTheNextTransactionReconnects) {
  const Status committed = CommitAfter("SELECT pg_terminate_backend(pg_backend_pid())", true);
  EXPECT_EQ(committed.code(), Code::kUnavailable) << committed.ToString();
  EXPECT_NE(committed.message().find("connection lost"), std::string::npos) << committed.ToString();
  EXPECT_EQ(Counts(), std::make_pair(int64_t{0}, int64_t{0}));
  ExpectTheNextTransactionCommits();
  EXPECT_EQ(Counts(), std::make_pair(int64_t{0}, int64_t{1}));
}

TEST_F(PgLentConnectionTest, ATransactionOfAnotherStoreHasNoPostgresConnection) {
  auto memory = OpenMemoryStore(NewMemoryDatabase()).value();
  auto tx = memory->Begin().value();
  EXPECT_EQ(PostgresConnection(*tx).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace evident
