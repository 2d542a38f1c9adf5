// SQLite-specific behaviour of the store, beyond the conformance suite.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "evident/store_sqlite.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

// A store file of its own per test, written with raw SQL first where a test needs rows in a
// given form, and removed afterwards.
class SqliteStore : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("evident-sqlite-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    fs::remove(path_);
  }
  void TearDown() override {
    for (const std::string suffix : {"", "-wal", "-shm"}) fs::remove(path_.string() + suffix);
  }
  void ExecSql(const char* sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  int64_t QueryInt(const char* sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* statement = nullptr;
    int64_t out = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) == SQLITE_OK &&
        sqlite3_step(statement) == SQLITE_ROW) {
      out = sqlite3_column_int64(statement, 0);
    }
    sqlite3_finalize(statement);
    sqlite3_close(db);
    return out;
  }
  // Appends one outbox row through a store opened on the file.
  void AppendOne(const std::string& event_id) {
    auto opened = OpenSqliteStore(path_.string());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    auto tx = (*opened)->Begin().value();
    const auto appended =
        tx->AppendOutbox(OutboxRow{.source = "s", .event_id = event_id, .bytes = "{}"});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    EXPECT_EQ(appended->outcome, OutboxOutcome::kAppended);
    ASSERT_TRUE(tx->Commit().ok());
  }
  fs::path path_;
};

// Layout 2 (before the outbox) opens read-only as it is, with an empty outbox, and gains the
// outbox table when opened for writing.
TEST_F(SqliteStore, ALayout2StoreMigratesToTheCurrentLayout) {
  ASSERT_TRUE(OpenSqliteStore(path_.string()).ok());
  EXPECT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), kSqliteLayoutVersion);
  ExecSql("DROP TABLE outbox; UPDATE evident_schema SET version=2;");
  {
    auto read_only = OpenSqliteStore(path_.string(), {.read_only = true});
    ASSERT_TRUE(read_only.ok()) << read_only.status().ToString();
    auto snapshot = (*read_only)->Read().value();
    EXPECT_TRUE(snapshot->OutboxRows(OutboxSelect::kAll, 0).value().rows.empty());
    EXPECT_EQ(snapshot->OutboxStatsNow(10).value().pending, 0);
  }
  EXPECT_EQ(QueryInt("SELECT count(*) FROM sqlite_master WHERE name='outbox'"), 0);
  AppendOne("e1");
  EXPECT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), kSqliteLayoutVersion);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM outbox"), 1);
  AppendOne("e2");  // a second open does not migrate again
  EXPECT_EQ(QueryInt("SELECT count(*) FROM evident_schema WHERE version=4"), 1);
  auto read_only = OpenSqliteStore(path_.string(), {.read_only = true});
  ASSERT_TRUE(read_only.ok()) << read_only.status().ToString();
  EXPECT_EQ((*read_only)->Read().value()->OutboxRows(OutboxSelect::kAll, 0).value().rows.size(),
            2u);
}

// Layout 8 (no consumer groups) gains the group tables when opened for writing, and keeps what it
// held; a group's lease then fences as on PostgreSQL.
TEST_F(SqliteStore, ALayout8StoreGainsTheGroupTables) {
  AppendOne("e1");
  ExecSql(
      "DROP TABLE consumer_group; DROP TABLE group_member; DROP TABLE group_lease;"
      "UPDATE evident_schema SET version=8;");
  ASSERT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), 8);
  auto store = OpenSqliteStore(path_.string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), kSqliteLayoutVersion);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM outbox"), 1);
  auto tx = (*store)->Begin().value();
  const Result<GroupLease> lease = tx->SeizeLease("g", 0, "m", 10);
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_EQ(lease->epoch, 1);
  ASSERT_TRUE(tx->Commit().ok());
}

// Layout 5 (receipts without what they wrote) reads as it is, read-only, and gains the two
// columns, its receipts kept, when opened for writing.
TEST_F(SqliteStore, ALayout5LedgerReadsAndGainsTheReceiptColumns) {
  const auto receipt = [](const std::string& id) {
    LedgerEntry e;
    e.consumer = "c";
    e.source = "s";
    e.event_id = id;
    e.type = "t";
    e.subject = "x";
    e.subject_version = 1;
    e.input_schema_version = 1;
    e.result_version = 1;
    e.adapter = id == "e2" ? "a21" : "";
    e.wrote_json = R"({"fields":{}})";
    return e;
  };
  {
    auto store = OpenSqliteStore(path_.string()).value();
    auto tx = store->Begin().value();
    ASSERT_TRUE(tx->InsertLedger(receipt("e1")).ok());
    ASSERT_TRUE(tx->Commit().ok());
  }
  ExecSql(
      "ALTER TABLE ledger DROP COLUMN adapter; ALTER TABLE ledger DROP COLUMN wrote;"
      "UPDATE evident_schema SET version=5;");
  ASSERT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), 5);
  {
    auto read_only = OpenSqliteStore(path_.string(), {.read_only = true});
    ASSERT_TRUE(read_only.ok()) << read_only.status().ToString();
    auto snapshot = (*read_only)->Read().value();
    auto found = snapshot->FindLedger("c", "s", "e1");
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    ASSERT_TRUE(found->has_value());
    EXPECT_EQ((*found)->adapter, "");
    EXPECT_EQ((*found)->wrote_json, "");
    auto of = snapshot->LedgerOf("c", "x");
    ASSERT_TRUE(of.ok()) << of.status().ToString();
    EXPECT_EQ(of->rows.size(), 1u);
  }
  EXPECT_EQ(QueryInt("SELECT count(*) FROM pragma_table_info('ledger') WHERE name='wrote'"), 0);
  {
    auto store = OpenSqliteStore(path_.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto tx = (*store)->Begin().value();
    ASSERT_TRUE(tx->InsertLedger(receipt("e2")).ok());
    ASSERT_TRUE(tx->Commit().ok());
    auto snapshot = (*store)->Read().value();
    EXPECT_EQ(snapshot->FindLedger("c", "s", "e1").value()->wrote_json, "");
    EXPECT_EQ(snapshot->FindLedger("c", "s", "e2").value()->adapter, "a21");
    EXPECT_EQ(snapshot->FindLedger("c", "s", "e2").value()->wrote_json, R"({"fields":{}})");
  }
  EXPECT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), kSqliteLayoutVersion);
}

// Layout 9 (receipts without their trace context) reads as it is, read-only, and gains the two
// columns, its receipts kept, when opened for writing.
TEST_F(SqliteStore, ALayout9LedgerReadsAndGainsTheTraceColumns) {
  LedgerEntry e;
  e.consumer = "c";
  e.source = "s";
  e.event_id = "e1";
  e.type = "t";
  e.subject = "x";
  e.subject_version = 1;
  e.input_schema_version = 1;
  e.result_version = 1;
  e.adapter = "a21";
  e.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  {
    auto store = OpenSqliteStore(path_.string()).value();
    auto tx = store->Begin().value();
    ASSERT_TRUE(tx->InsertLedger(e).ok());
    ASSERT_TRUE(tx->Commit().ok());
  }
  ExecSql(
      "ALTER TABLE ledger DROP COLUMN traceparent; ALTER TABLE ledger DROP COLUMN tracestate;"
      "UPDATE evident_schema SET version=9;");
  ASSERT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), 9);
  {
    auto read_only = OpenSqliteStore(path_.string(), {.read_only = true});
    ASSERT_TRUE(read_only.ok()) << read_only.status().ToString();
    auto snapshot = (*read_only)->Read().value();
    auto of = snapshot->LedgerOf("c", "x");
    ASSERT_TRUE(of.ok()) << of.status().ToString();
    ASSERT_EQ(of->rows.size(), 1u);
    EXPECT_EQ(of->rows[0].adapter, "a21");
    EXPECT_EQ(of->rows[0].traceparent, "");
  }
  {
    auto store = OpenSqliteStore(path_.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    e.event_id = "e2";
    auto tx = (*store)->Begin().value();
    ASSERT_TRUE(tx->InsertLedger(e).ok());
    ASSERT_TRUE(tx->Commit().ok());
    auto snapshot = (*store)->Read().value();
    EXPECT_EQ(snapshot->FindLedger("c", "s", "e1").value()->traceparent, "");
    EXPECT_EQ(snapshot->FindLedger("c", "s", "e2").value()->traceparent, e.traceparent);
  }
  EXPECT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), kSqliteLayoutVersion);
}

// Layout 14 (before effect key digests and recorded forgetting) reads its retention runs as they
// are, read-only, and gains the table and the column when opened for writing.
TEST_F(SqliteStore, ALayout14StoreGainsTheEffectDigestsAndTheRunsForgetting) {
  {
    auto store = OpenSqliteStore(path_.string()).value();
    auto tx = store->Begin().value();
    ASSERT_TRUE(tx->RecordRetention({.at_ms = 5, .horizon_ms = 4, .removed = 3}).ok());
    ASSERT_TRUE(tx->Commit().ok());
  }
  ExecSql(
      "DROP TABLE effect_digest; ALTER TABLE retention_run DROP COLUMN forgot_before_ms;"
      "UPDATE evident_schema SET version=14;");
  ASSERT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), 14);
  {
    auto read_only = OpenSqliteStore(path_.string(), {.read_only = true});
    ASSERT_TRUE(read_only.ok()) << read_only.status().ToString();
    auto snapshot = (*read_only)->Read().value();
    const auto run = snapshot->LatestRetention();
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    ASSERT_TRUE(run->has_value());
    EXPECT_EQ((*run)->removed, 3);
    EXPECT_EQ((*run)->forgot_before_ms, 0);
    EXPECT_FALSE(snapshot->FindIntent("k").value().has_value());
    EXPECT_EQ(snapshot->CountRetainable(RetainedKind::kIntent, 100).value(), 0);
  }
  {
    auto store = OpenSqliteStore(path_.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto tx = (*store)->Begin().value();
    ASSERT_TRUE(
        tx->RecordRetention({.at_ms = 6, .horizon_ms = 4, .removed = 3, .forgot_before_ms = 2})
            .ok());
    ASSERT_TRUE(tx->Commit().ok());
    const auto run = (*store)->Read().value()->LatestRetention().value();
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->forgot_before_ms, 2);
  }
  EXPECT_EQ(QueryInt("SELECT count(*) FROM effect_digest"), 0);
  EXPECT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), kSqliteLayoutVersion);
}

// Layout 4 (before effects) opens read-only with no intents and no compensations, and gains
// their tables, its rows kept, when opened for writing.
TEST_F(SqliteStore, ALayout4StoreGainsTheEffectTables) {
  AppendOne("e1");
  ExecSql(
      "DROP TABLE effect_intent; DROP TABLE effect_log; DROP TABLE compensation;"
      "UPDATE evident_schema SET version=4;");
  {
    auto read_only = OpenSqliteStore(path_.string(), {.read_only = true});
    ASSERT_TRUE(read_only.ok()) << read_only.status().ToString();
    auto snapshot = (*read_only)->Read().value();
    EXPECT_FALSE(snapshot->FindIntent("k").value().has_value());
    EXPECT_TRUE(snapshot->ListIntents({}).value().rows.empty());
    EXPECT_TRUE(snapshot->IntentLogOf("k").value().rows.empty());
    EXPECT_TRUE(snapshot->ListCompensations("", "").value().rows.empty());
    EXPECT_EQ(snapshot->Counts().value().size(), 7u);
  }
  EXPECT_EQ(QueryInt("SELECT count(*) FROM sqlite_master WHERE name='effect_intent'"), 0);
  {
    auto opened = OpenSqliteStore(path_.string());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    auto tx = (*opened)->Begin().value();
    EXPECT_EQ(tx->InsertIntent(EffectIntent{.key = "k", .next_attempt_at_ms = 1}).value(),
              Insert::kInserted);
    EXPECT_EQ(tx->InsertCompensation(CompensationRecord{.key = "c"}).value(), Insert::kInserted);
    ASSERT_TRUE(tx->Commit().ok());
  }
  EXPECT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), kSqliteLayoutVersion);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM outbox"), 1);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM effect_intent"), 1);
}

// Layout 3 kept a row per refused delivery; layout 4 has one quarantine record per input. A
// read-only open of layout 3 reads the kept rows as records; opened for writing, the rows of one
// input merge into one record (attempts, first and last seen, the latest refusal), in the order
// the inputs were first kept, and the kept table is gone.
TEST_F(SqliteStore, ALayout3StoreMigratesKeptRowsIntoTheQuarantine) {
  ASSERT_TRUE(OpenSqliteStore(path_.string()).ok());
  ExecSql(
      "DROP TABLE quarantine; DROP TABLE quarantine_audit; UPDATE evident_schema SET version=3;"
      "CREATE TABLE kept(seq INTEGER PRIMARY KEY, consumer TEXT NOT NULL, outcome TEXT NOT NULL,"
      " reason TEXT NOT NULL, message TEXT NOT NULL, source TEXT NOT NULL, event_id TEXT NOT NULL,"
      " type TEXT NOT NULL, subject TEXT NOT NULL, subject_version INTEGER, raw BLOB NOT NULL,"
      " received_at_ms INTEGER NOT NULL, input_index INTEGER NOT NULL);"
      "INSERT INTO kept VALUES(1,'c','stale','stale-version','m1','s','e1','t','o-1',2,'A',10,0);"
      "INSERT INTO kept VALUES(2,'','rejected','malformed-json','bad','','','','','','{x',11,1);"
      "INSERT INTO kept VALUES(3,'c','contract-update-required','unaccepted-schema-version','m3',"
      " 's','e1','t','o-1',2,'A',30,5);"
      "INSERT INTO kept VALUES(4,'','rejected','malformed-json','bad','','','','','','{x',40,7);"
      "INSERT INTO kept VALUES(5,'c','stale','stale-version','m5','s','e1','t','o-1',2,'B',50,9);");
  {
    auto read_only = OpenSqliteStore(path_.string(), {.read_only = true});
    ASSERT_TRUE(read_only.ok()) << read_only.status().ToString();
    auto snapshot = (*read_only)->Read().value();
    EXPECT_EQ(snapshot->QuarantineOf("o-1").value().rows.size(), 3u);
    EXPECT_EQ(snapshot->ListQuarantine({}).status().code(), Code::kFailedPrecondition);
  }
  auto opened = OpenSqliteStore(path_.string());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), kSqliteLayoutVersion);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM sqlite_master WHERE name='kept'"), 0);
  auto snapshot = (*opened)->Read().value();
  const std::vector<QuarantineRecord> all = snapshot->ListQuarantine({}).value().rows;
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].event_id, "e1");  // first kept at 10, twice with bytes A
  EXPECT_EQ(all[0].attempts, 2);
  EXPECT_EQ(all[0].first_seen_ms, 10);
  EXPECT_EQ(all[0].last_seen_ms, 30);
  EXPECT_EQ(all[0].reason, "unaccepted-schema-version");
  EXPECT_EQ(all[0].input_index, 5);
  EXPECT_EQ(all[0].status, QuarantineStatus::kOpen);
  EXPECT_EQ(all[1].raw, "{x");  // no id: its bytes
  EXPECT_EQ(all[1].attempts, 2);
  EXPECT_EQ(all[2].raw, "B");  // the same id with other bytes: another input
  EXPECT_EQ(all[2].attempts, 1);
  // The merged records take further deliveries as attempts.
  snapshot.reset();
  auto tx = (*opened)->Begin().value();
  QuarantineRecord again{.consumer = "c",
                         .outcome = Outcome::kStale,
                         .reason = "stale-version",
                         .source = "s",
                         .event_id = "e1",
                         .raw = "A",
                         .last_seen_ms = 60};
  EXPECT_EQ(tx->Quarantine(again).value().id, all[0].id);
  ASSERT_TRUE(tx->Commit().ok());
}

// A layout-3 outbox holds each event's bytes in its row; layout 4 keeps them in outbox_body. A
// read-only open of layout 3 reads them from the row; opened for writing, they move, and the
// rows read the same, sent or not.
TEST_F(SqliteStore, ALayout3OutboxMovesItsBytesOutOfTheRow) {
  AppendOne("e0");
  ExecSql(
      "DROP TABLE outbox_body; DROP TABLE outbox; UPDATE evident_schema SET version=3;"
      "CREATE TABLE outbox(seq INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL,"
      " event_id TEXT NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL, subject_version INTEGER,"
      " event_partition INTEGER NOT NULL, bytes BLOB NOT NULL, created_at_ms INTEGER NOT NULL,"
      " attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT NOT NULL DEFAULT '',"
      " last_attempt_at_ms INTEGER, sent_at_ms INTEGER, stream TEXT NOT NULL DEFAULT '',"
      " stream_sequence INTEGER);"
      "CREATE UNIQUE INDEX outbox_by_id ON outbox(source, event_id);"
      "CREATE INDEX outbox_pending ON outbox(seq) WHERE sent_at_ms IS NULL;"
      "CREATE INDEX outbox_sent ON outbox(sent_at_ms) WHERE sent_at_ms IS NOT NULL;"
      "INSERT INTO outbox(source, event_id, type, subject, event_partition, bytes, created_at_ms,"
      " sent_at_ms, stream, stream_sequence) VALUES('s','e1','t','o',0,'{\"a\":1}',5,6,'EVENTS',9);"
      "INSERT INTO outbox(source, event_id, type, subject, event_partition, bytes, created_at_ms)"
      " VALUES('s','e2','t','o',0,'{\"a\":2}',7);");
  {
    auto read_only = OpenSqliteStore(path_.string(), {.read_only = true});
    ASSERT_TRUE(read_only.ok()) << read_only.status().ToString();
    const std::vector<OutboxRow> rows =
        (*read_only)->Read().value()->OutboxRows(OutboxSelect::kAll, 0).value().rows;
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].bytes, R"({"a":1})");
  }
  AppendOne("e3");  // opens for writing: migrates
  EXPECT_EQ(QueryInt("SELECT count(*) FROM pragma_table_info('outbox') WHERE name='bytes'"), 0);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM outbox_body"), 3);
  auto opened = OpenSqliteStore(path_.string());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  {
    const std::vector<OutboxRow> rows =
        (*opened)->Read().value()->OutboxRows(OutboxSelect::kAll, 0).value().rows;
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].bytes, R"({"a":1})");
    EXPECT_EQ(rows[0].sent_at_ms, 6);
    EXPECT_EQ(rows[0].stream_sequence, 9);
    EXPECT_EQ(rows[1].bytes, R"({"a":2})");
    EXPECT_FALSE(rows[1].sent_at_ms.has_value());
    EXPECT_EQ(rows[2].event_id, "e3");
  }
  // A duplicate append still compares the bytes; retention deletes row and body together.
  auto tx = (*opened)->Begin().value();
  EXPECT_EQ(tx->AppendOutbox(OutboxRow{.source = "s", .event_id = "e2", .bytes = R"({"a":2})"})
                .value()
                .outcome,
            OutboxOutcome::kDuplicate);
  EXPECT_EQ(tx->AppendOutbox(OutboxRow{.source = "s", .event_id = "e2", .bytes = "other"})
                .value()
                .outcome,
            OutboxOutcome::kConflict);
  EXPECT_EQ(tx->DeleteSentOutbox(100, 10).value(), 1);
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(QueryInt("SELECT count(*) FROM outbox_body"), 2);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM outbox"), 2);
}

// Layout 1 (before evident_schema) migrates through 2 to 4.
TEST_F(SqliteStore, ALayout1StoreMigratesThrough2ToTheCurrentLayout) {
  ExecSql(
      "CREATE TABLE ledger(consumer TEXT, source TEXT, event_id TEXT, subject TEXT);"
      "CREATE TABLE checkpoint(input TEXT PRIMARY KEY, position INTEGER, bytes INTEGER,"
      " prefix_hash INTEGER);"
      "INSERT INTO checkpoint VALUES('in.ndjson', 7, 700, 255);");
  AppendOne("e1");
  EXPECT_EQ(QueryInt("SELECT max(version) FROM evident_schema"), kSqliteLayoutVersion);
  auto opened = OpenSqliteStore(path_.string());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto snapshot = (*opened)->Read().value();
  EXPECT_EQ(snapshot->GetPosition("in.ndjson").value(), "lines=7 bytes=700 hash=00000000000000ff");
  EXPECT_EQ(snapshot->OutboxRows(OutboxSelect::kAll, 0).value().rows.size(), 1u);
}

TEST_F(SqliteStore, ANewerLayoutIsRefused) {
  ASSERT_TRUE(OpenSqliteStore(path_.string()).ok());
  ExecSql("UPDATE evident_schema SET version=99;");
  auto opened = OpenSqliteStore(path_.string());
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), Code::kFailedPrecondition);
  auto read_only = OpenSqliteStore(path_.string(), {.read_only = true});
  ASSERT_FALSE(read_only.ok());
  EXPECT_EQ(read_only.status().code(), Code::kFailedPrecondition);
}

// A store created before projection keys led with the subject keeps its (consumer, subject)
// key; the store opens it as it is and reads and writes it the same way.
TEST_F(SqliteStore, OpensAStoreWithTheEarlierProjectionKeyOrder) {
  const char* kEarlier =
      "CREATE TABLE projection(consumer TEXT NOT NULL, subject TEXT NOT NULL, "
      "version INTEGER NOT NULL, state TEXT NOT NULL, fields_json TEXT NOT NULL, "
      "owner_source TEXT NOT NULL, owner_version_seen INTEGER NOT NULL, "
      "updated_at_ms INTEGER NOT NULL, evidence_json TEXT NOT NULL DEFAULT '{}', "
      "PRIMARY KEY(consumer, subject)) WITHOUT ROWID;"
      "INSERT INTO projection VALUES('a','order-1',3,'paid','{}','s',3,5,"
      "'{\"payment\":{\"source\":\"s\",\"id\":\"e3\",\"subject_version\":3,"
      "\"recorded_at_ms\":5}}');"
      "INSERT INTO projection VALUES('b','order-1',1,'new','{}','s',1,5,'{}');";
  ExecSql(kEarlier);
  {
    auto opened = OpenSqliteStore(path_.string());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Store& store = **opened;
    auto tx = store.Begin().value();
    Projection a, b;
    ASSERT_TRUE(tx->ReadProjection("a", "order-1", a).value());
    EXPECT_EQ(a.version, 3);
    ASSERT_TRUE(tx->ReadProjection("b", "order-1", b).value());
    b.version = 2;
    ASSERT_TRUE(tx->PutProjection(b, 1).ok());
    ASSERT_TRUE(tx->PutProjection({"c", "order-1", 1, "x", "{}", "s", 1, 6}, std::nullopt).ok());
    ASSERT_TRUE(tx->Commit().ok());
    auto read = store.Read().value();
    EXPECT_EQ(read->FindProjection("b", "order-1")->value().version, 2);
    EXPECT_EQ(read->FindProjection("c", "order-1")->value().state, "x");
    const auto evidence = read->EvidenceOf("a", "order-1").value().rows;  // the earlier format
    ASSERT_EQ(evidence.size(), 1u);
    EXPECT_EQ(evidence[0].source, "s");
    EXPECT_EQ(evidence[0].event_id, "e3");
  }
}

// Evidence written by the store reads back; a record that is neither form is reported as
// corruption, not read as something else.
TEST_F(SqliteStore, EvidenceRecordsOfEitherFormAndCorruptOnes) {
  {
    auto opened = OpenSqliteStore(path_.string());
    ASSERT_TRUE(opened.ok());
  }
  const char* kRows =
      "INSERT INTO projection(consumer, subject, version, state, fields_json, "
      "owner_source, owner_version_seen, updated_at_ms, evidence_json) "
      "VALUES('c','new-form',2,'s','{}','owner',2,5,"
      "'{\"payment\":[\"e1\",1,5],\"refund\":[\"e2\",null,6,\"other\"]}');"
      "INSERT INTO projection(consumer, subject, version, state, fields_json, "
      "owner_source, owner_version_seen, updated_at_ms, evidence_json) "
      "VALUES('c','earlier-form',1,'s','{}','owner',1,5,"
      "'{\"payment\":{\"id\":\"e3\",\"subject_version\":1,\"recorded_at_ms\":7}}');"
      "INSERT INTO projection(consumer, subject, version, state, fields_json, "
      "owner_source, owner_version_seen, updated_at_ms, evidence_json) "
      "VALUES('c','short',1,'s','{}','owner',1,5,"
      "'{\"payment\":[\"e4\"]}');";
  ExecSql(kRows);
  auto opened = OpenSqliteStore(path_.string());
  ASSERT_TRUE(opened.ok());
  auto read = (*opened)->Read().value();
  Snapshot& store = *read;
  const auto fresh = store.EvidenceOf("c", "new-form");
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_EQ(fresh->rows.size(), 2u);
  EXPECT_EQ(fresh->rows[0].event_id, "e1");
  EXPECT_EQ(fresh->rows[0].source, "owner");
  EXPECT_EQ(fresh->rows[0].subject_version, 1);
  EXPECT_EQ(fresh->rows[1].source, "other");
  EXPECT_FALSE(fresh->rows[1].subject_version.has_value());
  EXPECT_EQ(fresh->rows[1].recorded_at_ms, 6);
  const auto earlier = store.EvidenceOf("c", "earlier-form");
  ASSERT_TRUE(earlier.ok());
  ASSERT_EQ(earlier->rows.size(), 1u);
  EXPECT_EQ(earlier->rows[0].source, "owner");  // no source member: the owner's
  EXPECT_EQ(earlier->rows[0].recorded_at_ms, 7);
  const auto corrupt = store.EvidenceOf("c", "short");
  EXPECT_EQ(corrupt.status().code(), Code::kCorruption) << corrupt.status().ToString();
}

// Commits `count` transactions of one ledger row each (about 3-4 WAL pages per commit).
void CommitRows(Store& store, int first, int count) {
  for (int i = first; i < first + count; ++i) {
    auto tx = store.Begin().value();
    LedgerEntry e;
    e.consumer = "c";
    e.source = "s";
    e.event_id = "evt-" + std::to_string(i);
    e.state = LedgerState::kApplied;
    e.type = "t";
    e.subject = "order-" + std::to_string(i);
    e.input_schema_version = e.result_version = 1;
    ASSERT_EQ(tx->InsertLedger(e).value(), Insert::kInserted);
    ASSERT_TRUE(tx->Commit().ok());
  }
}

// Rows in the ledger, read through a snapshot.
int64_t LedgerRows(Store& store) { return store.Read().value()->Counts()->at(0).second; }

int64_t FileBytes(const fs::path& path) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  return error ? 0 : static_cast<int64_t>(size);
}

// In WAL mode the database file grows only when a checkpoint copies pages into it. With every
// commit counted large and the committing connection's own checkpoint out of reach
// (wal_pages_max), only the checkpoint thread can make it grow.
TEST_F(SqliteStore, TheCheckpointThreadCopiesTheWalIntoTheDatabaseFile) {
  auto opened = OpenSqliteStore(path_.string(), {.checkpoint_wal_pages = 16,
                                                 .checkpoint_thread_commit_pages = 1,
                                                 .wal_pages_max = 1'000'000'000});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& store = **opened;
  const int64_t initial = FileBytes(path_);
  CommitRows(store, 0, 200);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (FileBytes(path_) <= initial && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(FileBytes(path_), initial) << "no checkpoint ran while the store was open";
  EXPECT_EQ(LedgerRows(store), 200);
}

// Whatever runs the checkpoints, the WAL stays within its bound, and nothing is lost:
// - large commits on the thread: `wal_pages_max` pages plus one commit's (at the bound the
//   committing connection waits for the thread's checkpoint and copies the rest itself);
// - small commits with the thread, or no thread: `checkpoint_wal_pages` plus one commit's,
//   checkpointed on the committing connection (the thread alone could not restart the WAL
//   while commits go on).
TEST_F(SqliteStore, TheWalStaysBoundedWithAndWithoutTheCheckpointThread) {
  constexpr int64_t kFrameBytes = 4096 + 24;  // a page and its WAL frame header
  // One commit here writes 3-4 pages; the one that creates the store a page per table and
  // index (about 34 since layout 15 added the effect key digests' table) and, with incremental
  // vacuum, its pointer-map page.
  constexpr int64_t kCommitPagesMax = 37;
  struct Case {
    const char* name;
    SqliteOptions options;
    int64_t bound_pages;
  };
  const Case cases[] = {
      {"large commits, thread",
       {.synchronous = "NORMAL",
        .checkpoint_wal_pages = 16,
        .checkpoint_thread_commit_pages = 1,
        .wal_pages_max = 64},
       64},
      {"small commits, thread",
       {.synchronous = "NORMAL",
        .checkpoint_wal_pages = 16,
        .checkpoint_thread_commit_pages = 64,
        .wal_pages_max = 1'000'000'000},
       16},
      {"no thread",
       {.synchronous = "NORMAL", .checkpoint_wal_pages = 16, .checkpoint_thread = false},
       16},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TearDown();
    auto opened = OpenSqliteStore(path_.string(), c.options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Store& store = **opened;
    int64_t largest = 0;
    for (int round = 0; round < 40; ++round) {
      CommitRows(store, round * 20, 20);
      largest = std::max(largest, FileBytes(path_.string() + "-wal"));
    }
    // 800 commits wrote far more than the bound: the WAL restarted, and reached the threshold.
    EXPECT_GE(largest, 32 + c.options.checkpoint_wal_pages * kFrameBytes);
    EXPECT_LE(largest, 32 + (c.bound_pages + kCommitPagesMax) * kFrameBytes);
    EXPECT_EQ(LedgerRows(store), 800);
    opened->reset();
    auto reopened = OpenSqliteStore(path_.string());
    ASSERT_TRUE(reopened.ok());
    EXPECT_EQ(LedgerRows(**reopened), 800);
  }
}

TEST_F(SqliteStore, RefusesCheckpointLimitsThatCannotHold) {
  for (const SqliteOptions& options :
       {SqliteOptions{.checkpoint_wal_pages = 0},
        SqliteOptions{.checkpoint_thread_commit_pages = 0},
        SqliteOptions{.checkpoint_wal_pages = 1000, .wal_pages_max = 999}}) {
    const auto opened = OpenSqliteStore(path_.string(), options);
    EXPECT_EQ(opened.status().code(), Code::kInvalidArgument) << opened.status().ToString();
  }
}

// An in-memory store has no WAL and no file for a checkpoint connection; it works as before.
TEST_F(SqliteStore, AnInMemoryStoreNeedsNoCheckpoints) {
  auto opened = OpenSqliteStore(":memory:");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  CommitRows(**opened, 0, 50);
  EXPECT_EQ(LedgerRows(**opened), 50);
}

}  // namespace
}  // namespace evident

namespace evident {
namespace {

// This process's POSIX locks on `file`, as /proc/locks lists them: "<READ|WRITE> <start>".
std::set<std::string> OwnLocks(const std::string& file) {
  struct stat info {};
  std::set<std::string> out;
  if (::stat(file.c_str(), &info) != 0) return out;
  char device[64];
  std::snprintf(device, sizeof device, "%02x:%02x:%llu", major(info.st_dev), minor(info.st_dev),
                static_cast<unsigned long long>(info.st_ino));
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string id, kind, mode, access, at, start;
    long long pid = 0;
    if (fields >> id >> kind >> mode >> access >> pid >> at >> start && kind == "POSIX" &&
        pid == getpid() && at == device) {
      out.insert(access + " " + start);
    }
  }
  return out;
}

// A store that finds the file locked names who holds it without opening the -shm file: closing
// any descriptor of a file drops every POSIX lock the process holds on it, and with SQLite's
// "attached" read lock (byte 128) gone, a reader in another process takes the -shm for
// abandoned and truncates it under this process's mapping (a consumer group's member died of
// SIGBUS so, its lease connection refused while its loop's batch held the lock).
TEST_F(SqliteStore, NamingTheLocksHolderKeepsThisProcesssOwnLocks) {
  auto holder = OpenSqliteStore(path_.string());
  ASSERT_TRUE(holder.ok()) << holder.status().ToString();
  auto waiter = OpenSqliteStore(path_.string(), {.busy_timeout_ms = 50});
  ASSERT_TRUE(waiter.ok()) << waiter.status().ToString();
  auto held = (*holder)->Begin().value();
  ASSERT_TRUE(held->AppendOutbox(OutboxRow{.source = "s", .event_id = "a", .bytes = "{}"}).ok());
  const std::string shm = path_.string() + "-shm";
  ASSERT_EQ(OwnLocks(shm).count("READ 128"), 1U) << "SQLite's attached lock is not where expected";

  auto refused = (*waiter)->Begin();
  Status status = refused.status();
  if (refused.ok()) {
    status =
        (*refused)->AppendOutbox(OutboxRow{.source = "s", .event_id = "b", .bytes = "{}"}).status();
  }
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("this process (another of its connections)"), std::string::npos)
      << status.ToString();
  EXPECT_EQ(OwnLocks(shm).count("READ 128"), 1U) << "naming the holder dropped SQLite's locks";
  EXPECT_TRUE(held->Commit().ok());
}

}  // namespace
}  // namespace evident
