// The Store conformance suite: every backend of evident/store.h must pass it unchanged. The
// backends are listed in store_backends.cc (RocksDB's env_basic_test pattern): one parameterized
// suite, instantiated once per backend.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>

#include "evident/store.h"
#include "store/store_backends.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

// Thrown by Take() after the failure is recorded: gtest ends the test there.
struct TestStop : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The value of a Result the test needs, or the test stops with its status.
template <typename T>
T Take(Result<T> result) {
  if (!result.ok()) {
    ADD_FAILURE() << result.status().ToString();
    throw TestStop(result.status().ToString());
  }
  return std::move(result).value();
}

#define EXPECT_OK(expr)                                                  \
  do {                                                                   \
    const ::evident::Status expect_ok_status_ = (expr);                  \
    EXPECT_TRUE(expect_ok_status_.ok()) << expect_ok_status_.ToString(); \
  } while (false)

// prefix + n, appended piecewise: GCC 12 warns falsely (-Wrestrict) about "e" + std::to_string(n).
std::string Numbered(std::string_view prefix, int64_t n) {
  std::string out(prefix);
  out += std::to_string(n);
  return out;
}

LedgerEntry Receipt(std::string event_id, LedgerState state = LedgerState::kApplied) {
  LedgerEntry e;
  e.consumer = "c";
  e.source = "s";
  e.event_id = std::move(event_id);
  e.state = state;
  e.type = "t";
  e.subject = "order-1";
  e.subject_version = 1;
  e.input_schema_version = 1;
  e.result_version = 1;
  if (state == LedgerState::kApplied) e.projection_version = 1;
  e.committed_at_ms = 1000;
  return e;
}

Projection MakeProjection(std::string consumer, std::string subject, int64_t version,
                          std::string state, std::string owner_source = "s") {
  return Projection{.consumer = std::move(consumer),
                    .subject = std::move(subject),
                    .version = version,
                    .state = std::move(state),
                    .fields_json = Numbered(R"({"n":)", version) + "}",
                    .owner_source = std::move(owner_source),
                    .owner_version_seen = version,
                    .updated_at_ms = 100 + version};
}

DeferredEvent Deferred(std::string consumer, std::string subject, int64_t version,
                       int64_t deadline_at_ms = 20) {
  return DeferredEvent{.consumer = std::move(consumer),
                       .subject = std::move(subject),
                       .subject_version = version,
                       .source = "s",
                       .event_id = Numbered("e", version),
                       .type = "t",
                       .schema_version = 1,
                       .expected_version = version - 1,
                       .raw = std::string("raw\0bytes", 9),
                       .received_at_ms = 10,
                       .deadline_at_ms = deadline_at_ms,
                       .route = GapRoute::kRequestReplay,
                       .input_index = 5};
}

// A quarantined input of its own: the event id is "e-" + message, so records of different
// messages are different inputs.
QuarantineRecord Kept(std::string subject, std::string message) {
  return QuarantineRecord{.id = 999,  // the store assigns its own
                          .consumer = "c",
                          .outcome = Outcome::kStale,
                          .reason = "stale-version",
                          .message = message,
                          .source = "s",
                          .event_id = "e-" + message,
                          .type = "t",
                          .subject = std::move(subject),
                          .subject_version = 1,
                          .schema_version = 2,
                          .raw = std::string("k\0ept", 5),
                          .attempts = 99,      // ignored
                          .first_seen_ms = 1,  // ignored
                          .last_seen_ms = 7,
                          .status = QuarantineStatus::kDiscarded,  // ignored
                          .input_index = 3};
}

JournalEntry Journaled(std::string consumer, std::string subject, int64_t at_ms) {
  return JournalEntry{.seq = 999,
                      .consumer = std::move(consumer),
                      .outcome = Outcome::kDuplicate,
                      .source = "s",
                      .event_id = Numbered("e", at_ms),
                      .subject = std::move(subject),
                      .subject_version = 2,
                      .at_ms = at_ms};
}

EvidenceRecord Evidence(std::string name, std::string event_id, int64_t version,
                        std::string source = "s") {
  return EvidenceRecord{.consumer = "c",
                        .subject = "order-1",
                        .name = std::move(name),
                        .source = std::move(source),
                        .event_id = std::move(event_id),
                        .subject_version = version,
                        .recorded_at_ms = 50 + version};
}

// An intent of consumer "c" for order-1, due at `due_at_ms`.
EffectIntent Intent(std::string key, std::optional<int64_t> due_at_ms,
                    std::string effect = "reserve-stock", std::string subject = "order-1") {
  return EffectIntent{.seq = 999,  // the store assigns its own
                      .key = std::move(key),
                      .effect = std::move(effect),
                      .consumer = "c",
                      .subject = std::move(subject),
                      .source = "s",
                      .event_id = "e1",
                      .subject_version = 1,
                      .request = std::string("{\"id\":\"e1\"}\0x", 13),
                      .state = EffectState::kIntended,
                      .intended_at_ms = 10,
                      .next_attempt_at_ms = due_at_ms,
                      .revision = 77};  // assigned: 1
}

CompensationRecord Compensation(std::string key, std::string consumer = "c",
                                std::string subject = "order-1") {
  return CompensationRecord{.seq = 999,
                            .key = std::move(key),
                            .consumer = std::move(consumer),
                            .subject = std::move(subject),
                            .owner_source = "https://orders.test",
                            .owner_version = 3,
                            .event_id = "e3",
                            .type = "order.cancelled",
                            .recorded_at_ms = 40};
}

template <typename T, typename Field>
std::vector<Field> Pluck(const std::vector<T>& rows, Field T::*field) {
  std::vector<Field> out;
  for (const T& row : rows) out.push_back(row.*field);
  return out;
}

class StoreConformance : public ::testing::TestWithParam<StoreBackend> {
 protected:
  void SetUp() override {
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '-');
    dir_ = fs::temp_directory_path() / (Numbered("evident-store-", getpid()) + "-" + test);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = Open();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  std::unique_ptr<Store> Open(const StoreOptions& options = {}) {
    return Take(GetParam().open(dir_, options));
  }
  void Reopen() {
    store_.reset();
    store_ = Open();
  }
  std::unique_ptr<Transaction> Begin() { return Take(store_->Begin()); }
  std::unique_ptr<Snapshot> Read() { return Take(store_->Read()); }
  // Runs `write` in one transaction and commits it.
  void Write(const std::function<void(Transaction&)>& write) {
    auto tx = Begin();
    write(*tx);
    EXPECT_OK(tx->Commit());
  }
  // Puts a projection where none is yet, with a receipt of its subject.
  void PutNew(Transaction& tx, const Projection& p) {
    LedgerEntry receipt = Receipt("r-" + p.consumer + "-" + p.subject);
    receipt.consumer = p.consumer;
    receipt.subject = p.subject;
    EXPECT_EQ(Take(tx.InsertLedger(receipt)), Insert::kInserted);
    EXPECT_OK(tx.PutProjection(p, std::nullopt));
  }
  std::vector<std::pair<std::string, int64_t>> Counts() { return Take(Read()->Counts()); }
  static std::vector<std::pair<std::string, int64_t>> CountsOf(int64_t ledger, int64_t projection,
                                                               int64_t deferred, int64_t kept,
                                                               int64_t journal, int64_t effect = 0,
                                                               int64_t compensation = 0) {
    return {{"ledger", ledger},
            {"projection", projection},
            {"deferred", deferred},
            {"quarantine", kept},
            {"journal", journal},
            {"effect", effect},
            {"compensation", compensation}};
  }

  fs::path dir_;
  std::unique_ptr<Store> store_;
};

// --- durability and atomicity ---

TEST_P(StoreConformance, CommittedWritesSurviveAReopen) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e1"))), Insert::kInserted);
    EXPECT_OK(tx.PutProjection(MakeProjection("c", "order-1", 1, "paid"), std::nullopt));
    EXPECT_OK(tx.SetPosition("input.ndjson", "lines=7 bytes=700"));
  });
  Reopen();
  auto tx = Begin();
  const std::optional<LedgerEntry> entry = Take(tx->FindLedger("c", "s", "e1"));
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->projection_version, 1);
  EXPECT_EQ(Take(tx->GetPosition("input.ndjson")), "lines=7 bytes=700");
  EXPECT_OK(tx->Rollback());
  tx.reset();
  auto snapshot = Read();
  const std::optional<Projection> projection = Take(snapshot->FindProjection("c", "order-1"));
  ASSERT_TRUE(projection.has_value());
  EXPECT_EQ(projection->state, "paid");
  EXPECT_EQ(projection->fields_json, R"({"n":1})");
  const std::optional<LedgerEntry> receipt = Take(snapshot->FindLedger("c", "s", "e1"));
  ASSERT_TRUE(receipt.has_value());
  EXPECT_EQ(receipt->projection_version, 1);
  EXPECT_FALSE(Take(snapshot->FindLedger("c", "s", "e2")).has_value());
}

// Writes every table, then ends the transaction without committing (by `end`).
void WriteEverything(Transaction& tx) {
  EXPECT_EQ(Take(tx.InsertLedger(Receipt("e1"))), Insert::kInserted);
  EXPECT_OK(tx.PutProjection(MakeProjection("c", "order-1", 1, "paid"), std::nullopt));
  EXPECT_OK(tx.PutEvidence(Evidence("payment", "e1", 1)));
  EXPECT_EQ(Take(tx.InsertDeferred(Deferred("c", "order-1", 3))), Insert::kInserted);
  EXPECT_OK(tx.Quarantine(Kept("order-1", "m")).status());
  EXPECT_OK(tx.Journal(Journaled("c", "order-1", 5)));
  EXPECT_OK(tx.SetPosition("in", "lines=3"));
  EXPECT_EQ(Take(tx.InsertIntent(Intent("reserve:order-1:v1", 10))), Insert::kInserted);
  EXPECT_EQ(Take(tx.InsertCompensation(Compensation("compensation:order-1:reservation:v1"))),
            Insert::kInserted);
}

void ExpectNothing(Store& store) {
  auto tx = Take(store.Begin());
  EXPECT_FALSE(Take(tx->FindLedger("c", "s", "e1")).has_value());
  EXPECT_FALSE(Take(tx->FindDeferred("c", "order-1", 3)).has_value());
  EXPECT_FALSE(Take(tx->GetPosition("in")).has_value());
  EXPECT_OK(tx->Rollback());
  auto snapshot = Take(store.Read());
  EXPECT_FALSE(Take(snapshot->FindProjection("c", "order-1")).has_value());
  EXPECT_TRUE(Take(snapshot->EvidenceOf("c", "order-1")).rows.empty());
  EXPECT_TRUE(Take(snapshot->QuarantineOf("order-1")).rows.empty());
  EXPECT_TRUE(Take(snapshot->JournalOf("c", "order-1")).rows.empty());
  EXPECT_FALSE(Take(snapshot->FindIntent("reserve:order-1:v1")).has_value());
  EXPECT_TRUE(Take(snapshot->ListCompensations("", "")).rows.empty());
  const std::vector<std::pair<std::string, int64_t>> zero = {
      {"ledger", 0},  {"projection", 0}, {"deferred", 0},    {"quarantine", 0},
      {"journal", 0}, {"effect", 0},     {"compensation", 0}};
  EXPECT_EQ(Take(snapshot->Counts()), zero);
}

TEST_P(StoreConformance, RollbackLeavesNothing) {
  auto tx = Begin();
  WriteEverything(*tx);
  EXPECT_OK(tx->Rollback());
  tx.reset();
  ExpectNothing(*store_);
  Reopen();
  ExpectNothing(*store_);
}

// A transaction destroyed without Commit (a crash of its caller) rolls back, and the store takes
// the next one.
TEST_P(StoreConformance, DestroyingATransactionWithoutCommitLeavesNothing) {
  auto tx = Begin();
  WriteEverything(*tx);
  tx.reset();
  ExpectNothing(*store_);
  Reopen();
  ExpectNothing(*store_);
}

// --- the ledger ---

// A receipt never exists twice: the second insert is an answer, not a failure, and the
// transaction goes on with its other writes.
TEST_P(StoreConformance, LedgerInsertReportsAKeyAlreadyThereAndGoesOn) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e1"))), Insert::kInserted);
    LedgerEntry changed = Receipt("e1");
    changed.type = "other";
    EXPECT_EQ(Take(tx.InsertLedger(changed)), Insert::kAlreadyThere);  // within the transaction
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e2"))), Insert::kInserted);
  });
  Write([&](Transaction& tx) {
    LedgerEntry changed = Receipt("e1");
    changed.type = "other";
    EXPECT_EQ(Take(tx.InsertLedger(changed)), Insert::kAlreadyThere);  // committed before
    EXPECT_EQ(Take(tx.FindLedger("c", "s", "e1"))->type, "t");         // unchanged
    // Another consumer, or another source, is another key.
    changed.consumer = "d";
    EXPECT_EQ(Take(tx.InsertLedger(changed)), Insert::kInserted);
    changed.source = "s2";
    EXPECT_EQ(Take(tx.InsertLedger(changed)), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e3"))), Insert::kInserted);
  });
  EXPECT_EQ(Counts(), CountsOf(5, 0, 0, 0, 0));
}

TEST_P(StoreConformance, LedgerRowsKeepEveryField) {
  LedgerEntry e = Receipt("e1", LedgerState::kDeferred);
  e.subject = "";  // an event that names no subject
  e.subject_version = std::nullopt;
  e.input_schema_version = 3;
  e.result_version = 4;
  e.committed_at_ms = 1234567890123;
  e.duplicates = 2;
  e.last_duplicate_at_ms = 99;
  e.adapter = "order-status-v4-to-v2";
  e.wrote_json = R"({"state":"paid","fields":{"orderId":"o-1","note":"\u00e9 \" ,"}})";
  e.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  e.tracestate = "vendor=opaque,other=1";
  LedgerEntry plain = Receipt("e2");  // nothing adapted, nothing written, no trace
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertLedger(e)), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertLedger(plain)), Insert::kInserted);
  });
  Reopen();
  auto tx = Begin();
  const LedgerEntry read_plain = Take(tx->FindLedger("c", "s", "e2")).value();
  EXPECT_EQ(read_plain.adapter, "");
  EXPECT_EQ(read_plain.wrote_json, "");
  EXPECT_EQ(read_plain.traceparent, "");
  EXPECT_EQ(read_plain.tracestate, "");
  const LedgerEntry read = Take(tx->FindLedger("c", "s", "e1")).value();
  EXPECT_EQ(read.adapter, "order-status-v4-to-v2");
  EXPECT_EQ(read.wrote_json, e.wrote_json);
  EXPECT_EQ(read.traceparent, e.traceparent);
  EXPECT_EQ(read.tracestate, e.tracestate);
  EXPECT_EQ(read.state, LedgerState::kDeferred);
  EXPECT_EQ(read.type, "t");
  EXPECT_EQ(read.subject, "");
  EXPECT_EQ(read.subject_version, std::nullopt);
  EXPECT_EQ(read.input_schema_version, 3);
  EXPECT_EQ(read.result_version, 4);
  EXPECT_EQ(read.projection_version, std::nullopt);
  EXPECT_EQ(read.committed_at_ms, 1234567890123);
  EXPECT_EQ(read.duplicates, 2);
  EXPECT_EQ(read.last_duplicate_at_ms, 99);
}

TEST_P(StoreConformance, CountDuplicateCountsOnTheRow) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e1"))), Insert::kInserted);
    EXPECT_OK(tx.CountDuplicate("c", "s", "e1", 2000));  // on a row of this transaction
  });
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.CountDuplicate("c", "s", "e1", 3000));
    EXPECT_EQ(Take(tx.FindLedger("c", "s", "e1"))->duplicates, 2);  // seen before commit
    EXPECT_OK(tx.CountDuplicate("c", "s", "missing", 3000));        // no row: nothing counted
  });
  Reopen();
  auto tx = Begin();
  const LedgerEntry entry = Take(tx->FindLedger("c", "s", "e1")).value();
  EXPECT_EQ(entry.duplicates, 2);
  EXPECT_EQ(entry.last_duplicate_at_ms, 3000);
  EXPECT_EQ(entry.state, LedgerState::kApplied);  // nothing else changes
  EXPECT_EQ(entry.committed_at_ms, 1000);
  EXPECT_FALSE(Take(tx->FindLedger("c", "s", "missing")).has_value());
}

TEST_P(StoreConformance, MarkAppliedTurnsADeferredRowIntoAReceipt) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e3", LedgerState::kDeferred))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e4"))), Insert::kInserted);
  });
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.MarkApplied("c", "s", "e3", 3, 3000));
    EXPECT_EQ(tx.MarkApplied("c", "s", "e3", 3, 3000).code(), Code::kInternal);  // not deferred
    EXPECT_EQ(tx.MarkApplied("c", "s", "e4", 3, 3000).code(), Code::kInternal);  // applied
    EXPECT_EQ(tx.MarkApplied("c", "s", "e9", 3, 3000).code(), Code::kInternal);  // no row
  });
  Reopen();
  auto tx = Begin();
  const LedgerEntry entry = Take(tx->FindLedger("c", "s", "e3")).value();
  EXPECT_EQ(entry.state, LedgerState::kApplied);
  EXPECT_EQ(entry.projection_version, 3);
  EXPECT_EQ(entry.committed_at_ms, 3000);
  EXPECT_EQ(entry.subject_version, 1);  // the rest stays
  EXPECT_EQ(entry.type, "t");
}

// --- batch loads ---

// Load answers every key at once: the rows that exist, each once however often it was asked
// for, and nothing for the rest; what it found is what the transaction then finds.
TEST_P(StoreConformance, LoadReadsEveryKeyOnce) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e1"))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e3", LedgerState::kDeferred))), Insert::kInserted);
    EXPECT_OK(tx.PutProjection(MakeProjection("c", "order-1", 1, "paid"), std::nullopt));
    EXPECT_EQ(Take(tx.InsertDeferred(Deferred("c", "order-2", 3))), Insert::kInserted);
  });
  auto tx = Begin();
  const BatchRows rows = Take(tx->Load(
      {.ledger = {{"c", "s", "e1"}, {"c", "s", "e2"}, {"c", "s", "e1"}, {"d", "s", "e1"}},
       .subjects = {{"c", "order-1"}, {"c", "order-2"}, {"c", "order-1"}, {"c", "order-9"}}}));
  ASSERT_EQ(rows.ledger.size(), 1u);
  EXPECT_EQ(rows.ledger[0].event_id, "e1");
  ASSERT_EQ(rows.projections.size(), 1u);
  EXPECT_EQ(rows.projections[0].subject, "order-1");
  EXPECT_EQ(rows.projections[0].version, 1);
  ASSERT_EQ(rows.deferred.size(), 1u);
  EXPECT_EQ(rows.deferred[0].subject_version, 3);
  EXPECT_EQ(rows.deferred[0].raw, Deferred("c", "order-2", 3).raw);
  EXPECT_EQ(Take(tx->FindLedger("c", "s", "e1"))->state, LedgerState::kApplied);
  EXPECT_FALSE(Take(tx->FindLedger("c", "s", "e2")).has_value());
  EXPECT_EQ(Take(tx->FindDeferred("c", "order-2", 3))->event_id, "e3");
  EXPECT_FALSE(Take(tx->FindDeferred("c", "order-9", 1)).has_value());
}

// Rows inserted for keys a Load found free, then changed in the same transaction (applied after
// a deferral, counted as duplicates) between statements of other kinds, commit as changed.
TEST_P(StoreConformance, WritesAfterALoadCommitAsChanged) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e7", LedgerState::kDeferred))), Insert::kInserted);
  });
  Write([&](Transaction& tx) {
    (void)Take(tx.Load({.ledger = {{"c", "s", "e5"}, {"c", "s", "e6"}, {"c", "s", "e7"}},
                        .subjects = {{"c", "order-1"}}}));
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e5", LedgerState::kDeferred))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertDeferred(Deferred("c", "order-1", 5))), Insert::kInserted);
    EXPECT_OK(tx.Journal(Journaled("c", "order-1", 5)));
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e6"))), Insert::kInserted);
    EXPECT_OK(tx.MarkApplied("c", "s", "e5", 5, 5000));
    EXPECT_EQ(tx.MarkApplied("c", "s", "e5", 5, 5000).code(), Code::kInternal);  // applied now
    EXPECT_OK(tx.MarkApplied("c", "s", "e7", 7, 7000));  // a row committed before
    EXPECT_OK(tx.DeleteDeferred("c", "order-1", 5));
    EXPECT_OK(tx.CountDuplicate("c", "s", "e5", 6000));
    EXPECT_OK(tx.CountDuplicate("c", "s", "e6", 6500));
    EXPECT_OK(tx.CountDuplicate("c", "s", "e6", 6600));
    EXPECT_EQ(Take(tx.FindLedger("c", "s", "e6"))->duplicates, 2);
  });
  Reopen();
  auto tx = Begin();
  const LedgerEntry e5 = Take(tx->FindLedger("c", "s", "e5")).value();
  EXPECT_EQ(e5.state, LedgerState::kApplied);
  EXPECT_EQ(e5.projection_version, 5);
  EXPECT_EQ(e5.committed_at_ms, 5000);
  EXPECT_EQ(e5.duplicates, 1);
  EXPECT_EQ(e5.last_duplicate_at_ms, 6000);
  const LedgerEntry e6 = Take(tx->FindLedger("c", "s", "e6")).value();
  EXPECT_EQ(e6.duplicates, 2);
  EXPECT_EQ(e6.last_duplicate_at_ms, 6600);
  EXPECT_EQ(Take(tx->FindLedger("c", "s", "e7"))->state, LedgerState::kApplied);
  EXPECT_FALSE(Take(tx->FindDeferred("c", "order-1", 5)).has_value());
}

// Writers that share a store: a deferred row another writer applied after this transaction read
// it is a conflict (kAborted, the batch retried), whatever else the transaction has pending.
TEST_P(StoreConformance, ADeferredRowAnotherWriterAppliedIsAConflict) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e3", LedgerState::kDeferred))), Insert::kInserted);
  });
  // Both writers say their deciders are kept apart (StoreOptions::deciders): an exclusive one
  // would wait for the first instead of coming between (PgDecidersTest).
  const StoreOptions kShared{.deciders = StoreOptions::Deciders::kShared};
  store_ = Open(kShared);
  auto late = Begin();
  (void)Take(late->Load({.ledger = {{"c", "s", "e2"}, {"c", "s", "e3"}}, .subjects = {}}));
  if (!store_->RelaysShare()) {  // whole transactions exclude each other: no one came between
    EXPECT_EQ(Take(late->InsertLedger(Receipt("e2"))), Insert::kInserted);
    EXPECT_OK(late->MarkApplied("c", "s", "e3", 3, 3100));
    EXPECT_OK(late->Commit());
    late.reset();
    EXPECT_EQ(Take(Begin()->FindLedger("c", "s", "e3"))->committed_at_ms, 3100);
    return;
  }
  auto other = Open(kShared);
  {
    auto tx = Take(other->Begin());
    EXPECT_OK(tx->MarkApplied("c", "s", "e3", 3, 3000));
    EXPECT_OK(tx->Commit());
  }
  EXPECT_EQ(Take(late->InsertLedger(Receipt("e2"))), Insert::kInserted);  // buffered
  Status status = late->MarkApplied("c", "s", "e3", 3, 3100);
  if (status.ok()) status = late->Commit();
  EXPECT_EQ(status.code(), Code::kAborted) << status.ToString();
  EXPECT_FALSE(Take(Begin()->FindLedger("c", "s", "e2")).has_value());  // nothing committed
}

// --- projections ---

// ReadProjection assigns every field of the caller's projection: a fresh one (version 0, its
// key set) when none is stored, whatever the caller's held before.
TEST_P(StoreConformance, ReadProjectionFillsTheCallersProjection) {
  Write([&](Transaction& tx) {
    Projection p = MakeProjection("c", "order-1", 4, "shipped", "owner");
    p.owner_version_seen = 6;
    EXPECT_OK(tx.PutProjection(p, std::nullopt));
  });
  auto tx = Begin();
  Projection out = MakeProjection("x", "y", 9, "stale", "z");
  EXPECT_TRUE(Take(tx->ReadProjection("c", "order-1", out)));
  EXPECT_EQ(out.consumer, "c");
  EXPECT_EQ(out.subject, "order-1");
  EXPECT_EQ(out.version, 4);
  EXPECT_EQ(out.state, "shipped");
  EXPECT_EQ(out.fields_json, R"({"n":4})");
  EXPECT_EQ(out.owner_source, "owner");
  EXPECT_EQ(out.owner_version_seen, 6);
  EXPECT_EQ(out.updated_at_ms, 104);
  EXPECT_FALSE(Take(tx->ReadProjection("c", "order-2", out)));
  EXPECT_EQ(out.consumer, "c");
  EXPECT_EQ(out.subject, "order-2");
  EXPECT_EQ(out.version, 0);
  EXPECT_EQ(out.state, "");
  EXPECT_EQ(out.fields_json, "{}");
  EXPECT_EQ(out.owner_source, "");
  EXPECT_EQ(out.owner_version_seen, 0);
  EXPECT_EQ(out.updated_at_ms, 0);
  EXPECT_FALSE(Take(tx->ReadProjection("d", "order-1", out)));  // another consumer's key
}

// A put whose expected version no longer holds writes nothing and says kAborted; the stored
// projection is what it was, in the transaction and after its commit.
TEST_P(StoreConformance, PutProjectionChecksTheExpectedVersion) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(tx.PutProjection(MakeProjection("c", "order-1", 1, "paid"), 0).code(),
              Code::kAborted);  // absent, not at version 0
    EXPECT_OK(tx.PutProjection(MakeProjection("c", "order-1", 1, "paid"), std::nullopt));
    EXPECT_OK(tx.PutProjection(MakeProjection("c", "order-1", 2, "packed"), 1));  // own write
  });
  auto tx = Begin();
  EXPECT_EQ(tx->PutProjection(MakeProjection("c", "order-1", 3, "lost"), std::nullopt).code(),
            Code::kAborted);
  EXPECT_EQ(tx->PutProjection(MakeProjection("c", "order-1", 3, "lost"), 1).code(), Code::kAborted);
  EXPECT_EQ(tx->PutProjection(MakeProjection("c", "order-1", 3, "lost"), 3).code(), Code::kAborted);
  Projection out;
  EXPECT_TRUE(Take(tx->ReadProjection("c", "order-1", out)));
  EXPECT_EQ(out.version, 2);
  EXPECT_EQ(out.state, "packed");
  EXPECT_OK(tx->Commit());
  tx.reset();
  EXPECT_EQ(Take(Read()->FindProjection("c", "order-1"))->state, "packed");
  Write([&](Transaction& next) {
    EXPECT_OK(next.PutProjection(MakeProjection("c", "order-1", 3, "shipped"), 2));
  });
  EXPECT_EQ(Take(Read()->FindProjection("c", "order-1"))->version, 3);
}

// owner_version_seen never goes down: a put keeps the larger of the stored and the new value.
TEST_P(StoreConformance, OwnerVersionSeenNeverGoesDown) {
  const auto put = [](Transaction& tx, int64_t version, int64_t seen,
                      std::optional<int64_t> expected) {
    Projection p = MakeProjection("c", "order-1", version, "v");
    p.owner_version_seen = seen;
    EXPECT_OK(tx.PutProjection(p, expected));
  };
  Write([&](Transaction& tx) {
    put(tx, 1, 5, std::nullopt);
    put(tx, 2, 3, 1);  // within the transaction
    Projection out;
    EXPECT_TRUE(Take(tx.ReadProjection("c", "order-1", out)));
    EXPECT_EQ(out.owner_version_seen, 5);
  });
  Write([&](Transaction& tx) { put(tx, 3, 4, 2); });  // across transactions
  EXPECT_EQ(Take(Read()->FindProjection("c", "order-1"))->owner_version_seen, 5);
  Write([&](Transaction& tx) { put(tx, 4, 8, 3); });
  const Projection p = Take(Read()->FindProjection("c", "order-1")).value();
  EXPECT_EQ(p.owner_version_seen, 8);
  EXPECT_EQ(p.version, 4);
}

// Each consumer of one subject has its own projection, present or absent.
TEST_P(StoreConformance, ProjectionsOfOneSubjectStaySeparatePerConsumer) {
  Write([&](Transaction& tx) {
    PutNew(tx, MakeProjection("a", "order-1", 1, "paid"));
    PutNew(tx, MakeProjection("b", "order-1", 4, "shipped"));
    PutNew(tx, MakeProjection("a", "order-2", 2, "other"));
  });
  Reopen();
  Write([&](Transaction& tx) {
    Projection b;
    EXPECT_TRUE(Take(tx.ReadProjection("b", "order-1", b)));
    EXPECT_EQ(b.state, "shipped");
    b.state = "delivered";
    EXPECT_OK(tx.PutProjection(b, 4));
    Projection a;
    EXPECT_TRUE(Take(tx.ReadProjection("a", "order-1", a)));
    EXPECT_EQ(a.version, 1);
    EXPECT_EQ(a.state, "paid");
    Projection c;
    EXPECT_FALSE(Take(tx.ReadProjection("c", "order-1", c)));
    EXPECT_EQ(c.version, 0);
    EXPECT_TRUE(Take(tx.ReadProjection("b", "order-1", b)));
    EXPECT_EQ(b.state, "delivered");
    EXPECT_FALSE(Take(tx.ReadProjection("b", "order-2", b)));
  });
  Reopen();
  auto snapshot = Read();
  EXPECT_EQ(Take(snapshot->FindProjection("b", "order-1"))->state, "delivered");
  EXPECT_EQ(Take(snapshot->FindProjection("a", "order-1"))->state, "paid");
  EXPECT_FALSE(Take(snapshot->FindProjection("c", "order-1")).has_value());
  const Rows<Projection> all = Take(snapshot->ProjectionsOf("order-1"));
  EXPECT_EQ(Pluck(all.rows, &Projection::consumer), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(all.truncated);
}

// ProjectionsOf lists every projection of the subject, by consumer, whether or not a receipt of
// it is left (retention compacts receipts into digests that name no subject; a baseline has
// none).
TEST_P(StoreConformance, ProjectionsOfListsEveryProjectionOfTheSubject) {
  Write([&](Transaction& tx) {
    PutNew(tx, MakeProjection("b", "order-1", 1, "paid"));
    EXPECT_OK(tx.PutProjection(MakeProjection("a", "order-1", 1, "no-receipt"), std::nullopt));
    EXPECT_OK(tx.PutProjection(MakeProjection("a", "order-2", 1, "other"), std::nullopt));
  });
  EXPECT_EQ(Pluck(Take(Read()->ProjectionsOf("order-1")).rows, &Projection::consumer),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Take(Read()->FindProjection("a", "order-1"))->state, "no-receipt");
}

// --- deferred events ---

TEST_P(StoreConformance, DeferredEventsKeepEveryFieldAndOneWaitsPerVersion) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertDeferred(Deferred("c", "order-1", 3))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e3", LedgerState::kDeferred))), Insert::kInserted);
  });
  Reopen();
  auto tx = Begin();
  const std::optional<DeferredEvent> found = Take(tx->FindDeferred("c", "order-1", 3));
  ASSERT_TRUE(found.has_value());
  const DeferredEvent expected = Deferred("c", "order-1", 3);
  EXPECT_EQ(found->raw, expected.raw);  // bytes, not text
  EXPECT_EQ(found->source, "s");
  EXPECT_EQ(found->event_id, "e3");
  EXPECT_EQ(found->type, "t");
  EXPECT_EQ(found->schema_version, 1);
  EXPECT_EQ(found->expected_version, 2);
  EXPECT_EQ(found->received_at_ms, 10);
  EXPECT_EQ(found->deadline_at_ms, 20);
  EXPECT_EQ(found->route, GapRoute::kRequestReplay);
  EXPECT_EQ(found->input_index, 5);
  EXPECT_FALSE(Take(tx->FindDeferred("c", "order-1", 4)).has_value());
  EXPECT_FALSE(Take(tx->FindDeferred("d", "order-1", 3)).has_value());
  DeferredEvent again = Deferred("c", "order-1", 3);
  again.event_id = "other";
  EXPECT_EQ(Take(tx->InsertDeferred(again)), Insert::kAlreadyThere);  // committed before
  EXPECT_EQ(Take(tx->FindDeferred("c", "order-1", 3))->event_id, "e3");
  EXPECT_EQ(Take(tx->InsertDeferred(Deferred("d", "order-1", 3))), Insert::kInserted);
  EXPECT_OK(tx->MarkApplied("c", "s", "e3", 3, 30));
  EXPECT_OK(tx->DeleteDeferred("c", "order-1", 3));
  EXPECT_OK(tx->DeleteDeferred("c", "order-1", 9));  // none: nothing to delete
  EXPECT_OK(tx->Commit());
  tx.reset();
  auto snapshot = Read();
  EXPECT_TRUE(Take(snapshot->DeferredOf("c", "order-1")).rows.empty());
  EXPECT_EQ(Take(snapshot->DeferredOf("d", "order-1")).rows.size(), 1u);
  EXPECT_EQ(Take(snapshot->AllDeferred()).rows.size(), 1u);
}

// A gap that opens and closes inside one transaction: the deferred event is found, deleted and
// never left behind; one that stays open is there after commit.
TEST_P(StoreConformance, DeferredInsideOneTransaction) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertDeferred(Deferred("c", "order-1", 3))), Insert::kInserted);
    EXPECT_EQ(Take(tx.FindDeferred("c", "order-1", 3))->event_id, "e3");
    EXPECT_EQ(Take(tx.InsertDeferred(Deferred("c", "order-1", 3))), Insert::kAlreadyThere);
    EXPECT_OK(tx.DeleteDeferred("c", "order-1", 3));
    EXPECT_FALSE(Take(tx.FindDeferred("c", "order-1", 3)).has_value());
    EXPECT_EQ(Take(tx.InsertDeferred(Deferred("c", "order-1", 4))), Insert::kInserted);
  });
  Reopen();
  const Rows<DeferredEvent> left = Take(Read()->AllDeferred());
  ASSERT_EQ(left.rows.size(), 1u);
  EXPECT_EQ(left.rows[0].event_id, "e4");
  // Deleted and inserted again in one transaction: the new event waits.
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.DeleteDeferred("c", "order-1", 4));
    DeferredEvent replaced = Deferred("c", "order-1", 4);
    replaced.event_id = "e4-again";
    EXPECT_EQ(Take(tx.InsertDeferred(replaced)), Insert::kInserted);
  });
  EXPECT_EQ(Take(Read()->DeferredOf("c", "order-1")).rows.at(0).event_id, "e4-again");
}

// --- kept inputs, journal, evidence, positions ---

TEST_P(StoreConformance, QuarantineRecordsKeepEveryFieldWithAnIdInOrder) {
  Write([&](Transaction& tx) {
    for (int i = 0; i < 3; ++i)
      EXPECT_OK(tx.Quarantine(Kept("order-1", Numbered("m", i))).status());
    QuarantineRecord rejected = Kept("order-2", "bad");
    rejected.consumer = "";  // rejected before any consumer was chosen
    rejected.outcome = Outcome::kRejected;
    rejected.subject_version = std::nullopt;
    rejected.schema_version = std::nullopt;
    EXPECT_OK(tx.Quarantine(rejected).status());
  });
  Write([&](Transaction& tx) { EXPECT_OK(tx.Quarantine(Kept("order-1", "m3")).status()); });
  Reopen();
  auto snapshot = Read();
  const Rows<QuarantineRecord> kept = Take(snapshot->QuarantineOf("order-1"));
  EXPECT_EQ(Pluck(kept.rows, &QuarantineRecord::message),
            (std::vector<std::string>{"m0", "m1", "m2", "m3"}));
  for (size_t i = 1; i < kept.rows.size(); ++i) EXPECT_LT(kept.rows[i - 1].id, kept.rows[i].id);
  const QuarantineRecord& k = kept.rows.at(0);
  EXPECT_NE(k.id, 999);
  EXPECT_EQ(k.consumer, "c");
  EXPECT_EQ(k.outcome, Outcome::kStale);
  EXPECT_EQ(k.reason, "stale-version");
  EXPECT_EQ(k.source, "s");
  EXPECT_EQ(k.event_id, "e-m0");
  EXPECT_EQ(k.type, "t");
  EXPECT_EQ(k.subject, "order-1");
  EXPECT_EQ(k.subject_version, 1);
  EXPECT_EQ(k.schema_version, 2);
  EXPECT_EQ(k.raw, std::string("k\0ept", 5));
  EXPECT_EQ(k.attempts, 1);
  EXPECT_EQ(k.first_seen_ms, 7);
  EXPECT_EQ(k.last_seen_ms, 7);
  EXPECT_EQ(k.status, QuarantineStatus::kOpen);
  EXPECT_EQ(k.input_index, 3);
  const Rows<QuarantineRecord> other = Take(snapshot->QuarantineOf("order-2"));
  ASSERT_EQ(other.rows.size(), 1u);
  EXPECT_EQ(other.rows[0].consumer, "");
  EXPECT_EQ(other.rows[0].outcome, Outcome::kRejected);
  EXPECT_EQ(other.rows[0].subject_version, std::nullopt);
  EXPECT_EQ(other.rows[0].schema_version, std::nullopt);
  EXPECT_LT(kept.rows[2].id, other.rows[0].id);  // one sequence for the table
  EXPECT_LT(other.rows[0].id, kept.rows[3].id);
  const std::optional<QuarantineRecord> found = Take(snapshot->FindQuarantine(k.id));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->message, "m0");
  EXPECT_FALSE(Take(snapshot->FindQuarantine(123456)).has_value());
}

// The same input again (same consumer, source, id and bytes) is an attempt on its record, in the
// same transaction or a later one; the record takes the latest refusal and keeps its first
// time and status. Another consumer, other bytes, or another id is another record.
TEST_P(StoreConformance, TheSameInputAgainCountsAnAttemptOnItsRecord) {
  int64_t id = 0;
  Write([&](Transaction& tx) {
    const QuarantineKept first = Take(tx.Quarantine(Kept("order-1", "m")));
    EXPECT_TRUE(first.added);
    id = first.id;
    QuarantineRecord again = Kept("order-1", "m");
    again.last_seen_ms = 8;
    const QuarantineKept second = Take(tx.Quarantine(again));
    EXPECT_FALSE(second.added);
    EXPECT_EQ(second.id, id);
  });
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.SetQuarantineStatus(id, QuarantineStatus::kDiscarded));
    for (int64_t at = 9; at <= 11; ++at) {
      QuarantineRecord again = Kept("order-1", "m");
      again.last_seen_ms = at;
      again.reason = "unaccepted-schema-version";
      again.outcome = Outcome::kContractUpdateRequired;
      again.schema_version = 3;
      EXPECT_EQ(Take(tx.Quarantine(again)).id, id);
    }
    QuarantineRecord other_consumer = Kept("order-1", "m");
    other_consumer.consumer = "d";
    EXPECT_TRUE(Take(tx.Quarantine(other_consumer)).added);
    QuarantineRecord other_bytes = Kept("order-1", "m");
    other_bytes.raw = "other";
    EXPECT_TRUE(Take(tx.Quarantine(other_bytes)).added);
    EXPECT_TRUE(Take(tx.Quarantine(Kept("order-1", "n"))).added);
  });
  Reopen();
  auto snapshot = Read();
  const std::optional<QuarantineRecord> r = Take(snapshot->FindQuarantine(id));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->attempts, 5);
  EXPECT_EQ(r->first_seen_ms, 7);
  EXPECT_EQ(r->last_seen_ms, 11);
  EXPECT_EQ(r->status, QuarantineStatus::kDiscarded);
  EXPECT_EQ(r->reason, "unaccepted-schema-version");
  EXPECT_EQ(r->outcome, Outcome::kContractUpdateRequired);
  EXPECT_EQ(r->schema_version, 3);
  EXPECT_EQ(Take(snapshot->QuarantineOf("order-1")).rows.size(), 4u);
}

// Without an id (or a source), the bytes alone are the identity.
TEST_P(StoreConformance, AnInputWithoutAnIdIsItsBytes) {
  Write([&](Transaction& tx) {
    QuarantineRecord garbage{.outcome = Outcome::kRejected,
                             .reason = "malformed-json",
                             .raw = "{not json",
                             .last_seen_ms = 5};
    const int64_t id = Take(tx.Quarantine(garbage)).id;
    EXPECT_EQ(Take(tx.Quarantine(garbage)).id, id);
    garbage.source = "s";  // a source without an id identifies nothing more
    EXPECT_EQ(Take(tx.Quarantine(garbage)).id, id);
    garbage.raw = "{not json either";
    EXPECT_NE(Take(tx.Quarantine(garbage)).id, id);
  });
  auto snapshot = Read();
  const Rows<QuarantineRecord> all = Take(snapshot->ListQuarantine({}));
  ASSERT_EQ(all.rows.size(), 2u);
  EXPECT_EQ(all.rows[0].attempts, 3);
  EXPECT_EQ(all.rows[1].attempts, 1);
}

// ListQuarantine: by first-seen time then id, each filter narrowing, resumable after a cursor,
// bounded.
TEST_P(StoreConformance, ListQuarantineFiltersAndPagesInFirstSeenOrder) {
  std::vector<int64_t> ids;
  Write([&](Transaction& tx) {
    for (int i = 0; i < 6; ++i) {
      QuarantineRecord r = Kept("order-" + std::to_string(i % 2), Numbered("m", i));
      r.last_seen_ms = 100 - i;  // first seen in reverse order of id
      r.consumer = i % 3 == 0 ? "c" : "d";
      r.reason = i < 4 ? "stale-version" : "payload-invalid";
      ids.push_back(Take(tx.Quarantine(r)).id);
    }
    EXPECT_OK(tx.SetQuarantineStatus(ids[1], QuarantineStatus::kReplayed));
  });
  auto snapshot = Read();
  const auto messages = [&](const QuarantineFilter& f, QuarantineCursor after = {},
                            int64_t rows_max = kReadRowsMaxDefault) {
    return Pluck(Take(snapshot->ListQuarantine(f, after, rows_max)).rows,
                 &QuarantineRecord::message);
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(messages({}), (V{"m5", "m4", "m3", "m2", "m1", "m0"}));
  EXPECT_EQ(messages({.consumer = "c"}), (V{"m3", "m0"}));
  EXPECT_EQ(messages({.reason = "payload-invalid"}), (V{"m5", "m4"}));
  EXPECT_EQ(messages({.status = QuarantineStatus::kReplayed}), (V{"m1"}));
  EXPECT_EQ(messages({.status = QuarantineStatus::kOpen, .ids = {ids[0], ids[1], ids[2]}}),
            (V{"m2", "m0"}));
  EXPECT_EQ(messages({.consumer = "d", .reason = "stale-version"}), (V{"m2", "m1"}));
  EXPECT_EQ(messages({}, {.first_seen_ms = 97, .id = ids[3]}), (V{"m2", "m1", "m0"}));
  const Rows<QuarantineRecord> two = Take(snapshot->ListQuarantine({}, {}, 2));
  EXPECT_EQ(two.rows.size(), 2u);
  EXPECT_TRUE(two.truncated);
  EXPECT_TRUE(Take(snapshot->ListQuarantine({.consumer = "nobody"})).rows.empty());
}

TEST_P(StoreConformance, StatusAndAuditBelongToARecord) {
  int64_t id = 0;
  Write([&](Transaction& tx) {
    id = Take(tx.Quarantine(Kept("order-1", "m"))).id;
    EXPECT_EQ(tx.SetQuarantineStatus(id + 100, QuarantineStatus::kReplayed).code(),
              Code::kNotFound);
    EXPECT_EQ(tx.AuditQuarantine({.record_id = id + 100, .by = "ops"}).code(), Code::kNotFound);
    EXPECT_OK(tx.SetQuarantineStatus(id, QuarantineStatus::kReplayed));
    EXPECT_EQ(Take(tx.FindQuarantine(id))->status, QuarantineStatus::kReplayed);
    EXPECT_OK(tx.AuditQuarantine({.seq = 77,
                                  .record_id = id,
                                  .action = QuarantineAction::kReplay,
                                  .by = "ops",
                                  .note = "contract v3 accepted",
                                  .outcome = "applied",
                                  .status_after = QuarantineStatus::kReplayed,
                                  .at_ms = 40}));
    EXPECT_OK(tx.AuditQuarantine({.record_id = id,
                                  .action = QuarantineAction::kDiscard,
                                  .by = "lead",
                                  .note = "n",
                                  .outcome = "discarded",
                                  .reason = "r",
                                  .status_after = QuarantineStatus::kDiscarded,
                                  .at_ms = 50}));
  });
  // A rolled-back status change or audit leaves nothing.
  {
    auto tx = Begin();
    EXPECT_OK(tx->SetQuarantineStatus(id, QuarantineStatus::kDiscarded));
    EXPECT_OK(tx->AuditQuarantine({.record_id = id, .by = "x"}));
    EXPECT_OK(tx->Rollback());
  }
  Reopen();
  auto snapshot = Read();
  EXPECT_EQ(Take(snapshot->FindQuarantine(id))->status, QuarantineStatus::kReplayed);
  const Rows<QuarantineAudit> audit = Take(snapshot->AuditOf(id));
  ASSERT_EQ(audit.rows.size(), 2u);
  const QuarantineAudit& a = audit.rows[0];
  EXPECT_NE(a.seq, 77);
  EXPECT_LT(a.seq, audit.rows[1].seq);
  EXPECT_EQ(a.record_id, id);
  EXPECT_EQ(a.action, QuarantineAction::kReplay);
  EXPECT_EQ(a.by, "ops");
  EXPECT_EQ(a.note, "contract v3 accepted");
  EXPECT_EQ(a.outcome, "applied");
  EXPECT_EQ(a.reason, "");
  EXPECT_EQ(a.status_after, QuarantineStatus::kReplayed);
  EXPECT_EQ(a.at_ms, 40);
  EXPECT_EQ(audit.rows[1].action, QuarantineAction::kDiscard);
  EXPECT_EQ(audit.rows[1].reason, "r");
  const Rows<QuarantineAudit> one = Take(snapshot->AuditOf(id, 1));
  EXPECT_EQ(one.rows.size(), 1u);
  EXPECT_TRUE(one.truncated);
  EXPECT_TRUE(Take(snapshot->AuditOf(id + 1)).rows.empty());
}

// Gap records: one per (consumer, subject, expected version); CloseGaps closes the open ones up
// to a version, once; OpenGapRecords lists the unclosed by deadline.
TEST_P(StoreConformance, GapRecordsAreKeyedClosedOnceAndListedByDeadline) {
  const auto gap = [](std::string subject, int64_t expected, int64_t deadline) {
    return GapRecord{.consumer = "c",
                     .subject = std::move(subject),
                     .expected_version = expected,
                     .missing_to = expected + 1,
                     .route = GapRoute::kRequestReplay,
                     .state = GapState::kRequested,
                     .deadline_at_ms = deadline,
                     .acted_at_ms = deadline + 1,
                     .request_event_id = "r"};
  };
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertGap(gap("order-1", 2, 30))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertGap(gap("order-1", 2, 99))), Insert::kAlreadyThere);
    EXPECT_EQ(Take(tx.InsertGap(gap("order-1", 5, 10))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertGap(gap("order-2", 1, 20))), Insert::kInserted);
    const std::optional<GapRecord> found = Take(tx.FindGap("c", "order-1", 2));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->deadline_at_ms, 30);
    EXPECT_FALSE(Take(tx.FindGap("c", "order-1", 3)).has_value());
  });
  Reopen();
  {
    auto snapshot = Read();
    const Rows<GapRecord> open = Take(snapshot->OpenGapRecords());
    ASSERT_EQ(open.rows.size(), 3u);
    EXPECT_EQ(open.rows[0].expected_version, 5);  // deadline 10
    EXPECT_EQ(open.rows[1].subject, "order-2");   // 20
    const GapRecord& g = open.rows[2];            // 30
    EXPECT_EQ(g.consumer, "c");
    EXPECT_EQ(g.subject, "order-1");
    EXPECT_EQ(g.expected_version, 2);
    EXPECT_EQ(g.missing_to, 3);
    EXPECT_EQ(g.route, GapRoute::kRequestReplay);
    EXPECT_EQ(g.state, GapState::kRequested);
    EXPECT_EQ(g.acted_at_ms, 31);
    EXPECT_EQ(g.request_event_id, "r");
    EXPECT_FALSE(g.closed_at_ms.has_value());
    EXPECT_TRUE(Take(snapshot->OpenGapRecords(1)).truncated);
  }
  Write([&](Transaction& tx) {
    // Loaded twice (and listed twice in one Load): each open record still counts once.
    (void)Take(tx.Load({.subjects = {{"c", "order-1"}, {"c", "order-1"}}}));
    (void)Take(tx.Load({.subjects = {{"c", "order-1"}}}));
    const auto drained = [](int64_t at_ms, std::vector<int64_t> waiting) {
      return GapClosing{.at_ms = at_ms,
                        .how = GapClosedHow::kDrained,
                        .cause = GapCause::kOutOfOrder,
                        .by = "arrival",
                        .note = "",
                        .waiting_versions = std::move(waiting)};
    };
    EXPECT_EQ(Take(tx.CloseGaps("c", "order-1", 4, drained(50, {4}))), 1);
    (void)Take(tx.Load({.subjects = {{"c", "order-1"}}}));                 // the close is seen
    EXPECT_EQ(Take(tx.CloseGaps("c", "order-1", 4, drained(60, {}))), 0);  // once
    EXPECT_EQ(Take(tx.CloseGaps("d", "order-2", 9, drained(60, {}))), 0);
  });
  auto snapshot = Read();
  const Rows<GapRecord> of = Take(snapshot->GapRecordsOf("c", "order-1"));
  ASSERT_EQ(of.rows.size(), 2u);
  EXPECT_EQ(of.rows[0].expected_version, 2);
  EXPECT_EQ(of.rows[0].state, GapState::kClosed);
  EXPECT_EQ(of.rows[0].closed_at_ms, 50);
  EXPECT_EQ(of.rows[0].closed_by, "arrival");
  EXPECT_EQ(of.rows[0].how, GapClosedHow::kDrained);
  EXPECT_EQ(of.rows[0].cause, GapCause::kOutOfOrder);
  EXPECT_EQ(of.rows[0].waiting_versions, (std::vector<int64_t>{4}));
  EXPECT_EQ(of.rows[1].state, GapState::kRequested);
  EXPECT_EQ(of.rows[1].how, GapClosedHow::kNone);
  EXPECT_EQ(Take(snapshot->OpenGapRecords()).rows.size(), 2u);
  EXPECT_TRUE(Take(snapshot->GapRecordsOf("c", "order-9")).rows.empty());
}

TEST_P(StoreConformance, CountsAreRowsPerTable) {
  EXPECT_EQ(Counts(), CountsOf(0, 0, 0, 0, 0));
  Write([&](Transaction& tx) {
    PutNew(tx, MakeProjection("c", "order-1", 1, "paid"));
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("e1"))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertDeferred(Deferred("c", "order-1", 3))), Insert::kInserted);
    EXPECT_OK(tx.Quarantine(Kept("order-1", "m")).status());
    EXPECT_OK(tx.Quarantine(Kept("order-2", "m-2")).status());
    EXPECT_OK(tx.Journal(Journaled("c", "order-1", 1)));
    EXPECT_OK(tx.PutEvidence(Evidence("payment", "e1", 1)));  // not a table of its own
    EXPECT_OK(tx.SetPosition("in", "p"));                     // not counted
  });
  EXPECT_EQ(Counts(), CountsOf(2, 1, 1, 2, 1));
}

// Every list in its documented order.
TEST_P(StoreConformance, ListsComeInTheirDocumentedOrder) {
  Write([&](Transaction& tx) {
    // Ledger: by subject version (a row without one first), then commit time.
    const auto receipt = [&](std::string id, std::optional<int64_t> version, int64_t at_ms) {
      LedgerEntry e = Receipt(std::move(id));
      e.subject_version = version;
      e.committed_at_ms = at_ms;
      EXPECT_EQ(Take(tx.InsertLedger(e)), Insert::kInserted);
    };
    receipt("v2-late", 2, 5);
    receipt("v1", 1, 9);
    receipt("none", std::nullopt, 7);
    receipt("v2-early", 2, 3);
    for (const std::string consumer : {"b", "c", "a"}) {
      PutNew(tx, MakeProjection(consumer, "order-1", 1, "s"));
    }
    // Deferred: by version per subject; all by deadline, consumer, subject, version.
    for (const auto& [consumer, subject, version, deadline] :
         std::vector<std::tuple<std::string, std::string, int64_t, int64_t>>{
             {"c", "order-1", 9, 10},
             {"b", "order-1", 2, 10},
             {"a", "order-2", 1, 20},
             {"c", "order-1", 3, 10},
             {"a", "order-1", 4, 30},
             {"b", "order-0", 5, 10}}) {
      EXPECT_EQ(Take(tx.InsertDeferred(Deferred(consumer, subject, version, deadline))),
                Insert::kInserted);
    }
    for (const std::string name : {"zeta", "alpha", "mid"}) {
      EXPECT_OK(tx.PutEvidence(Evidence(name, "e1", 1)));
    }
  });
  auto snapshot = Read();
  EXPECT_EQ(Pluck(Take(snapshot->LedgerOf("c", "order-1")).rows, &LedgerEntry::event_id),
            (std::vector<std::string>{"none", "v1", "r-c-order-1", "v2-early", "v2-late"}));
  EXPECT_EQ(Pluck(Take(snapshot->ProjectionsOf("order-1")).rows, &Projection::consumer),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Pluck(Take(snapshot->DeferredOf("c", "order-1")).rows, &DeferredEvent::subject_version),
            (std::vector<int64_t>{3, 9}));
  std::vector<std::string> all;
  for (const DeferredEvent& d : Take(snapshot->AllDeferred()).rows) {
    all.push_back(std::to_string(d.deadline_at_ms) + "/" + d.consumer + "/" + d.subject + "/" +
                  std::to_string(d.subject_version));
  }
  EXPECT_EQ(all, (std::vector<std::string>{"10/b/order-0/5", "10/b/order-1/2", "10/c/order-1/3",
                                           "10/c/order-1/9", "20/a/order-2/1", "30/a/order-1/4"}));
  EXPECT_EQ(Pluck(Take(snapshot->EvidenceOf("c", "order-1")).rows, &EvidenceRecord::name),
            (std::vector<std::string>{"alpha", "mid", "zeta"}));
}

// Lists are cut at rows_max, and `truncated` says exactly whether rows were left out.
template <typename T>
void ExpectBounded(const std::function<Result<Rows<T>>(int64_t)>& list, size_t rows_total,
                   const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(Take(list(kReadRowsMaxDefault)).rows.size(), rows_total);
  for (int64_t rows_max :
       {int64_t{0}, int64_t{1}, static_cast<int64_t>(rows_total) - 1,
        static_cast<int64_t>(rows_total), static_cast<int64_t>(rows_total) + 1}) {
    const Rows<T> rows = Take(list(rows_max));
    const size_t expected = std::min(rows_total, static_cast<size_t>(rows_max));
    EXPECT_EQ(rows.rows.size(), expected) << "rows_max " << rows_max;
    EXPECT_EQ(rows.truncated, expected < rows_total) << "rows_max " << rows_max;
  }
}

TEST_P(StoreConformance, ListsAreBoundedAndSayWhenTheyAreCut) {
  constexpr int kRows = 3;
  Write([&](Transaction& tx) {
    for (int i = 0; i < kRows; ++i) {
      const std::string n = std::to_string(i);
      PutNew(tx, MakeProjection("c" + n, "order-1", 1, "s"));
      EXPECT_EQ(Take(tx.InsertLedger(Receipt("e" + n))), Insert::kInserted);
      EXPECT_EQ(Take(tx.InsertDeferred(Deferred("c", "order-1", i + 1))), Insert::kInserted);
      EXPECT_OK(tx.Quarantine(Kept("order-1", n)).status());
      EXPECT_OK(tx.Journal(Journaled("c", "order-1", i)));
      EXPECT_OK(tx.PutEvidence(Evidence("name" + n, "e" + n, i)));
    }
    EXPECT_OK(tx.PutProjection(MakeProjection("c", "order-1", 1, "s"), std::nullopt));
  });
  auto snapshot = Read();
  Snapshot& s = *snapshot;
  ExpectBounded<Projection>([&](int64_t m) { return s.ProjectionsOf("order-1", m); }, kRows + 1,
                            "ProjectionsOf");
  ExpectBounded<LedgerEntry>([&](int64_t m) { return s.LedgerOf("c", "order-1", m); }, kRows,
                             "LedgerOf");
  ExpectBounded<DeferredEvent>([&](int64_t m) { return s.DeferredOf("c", "order-1", m); }, kRows,
                               "DeferredOf");
  ExpectBounded<DeferredEvent>([&](int64_t m) { return s.AllDeferred(m); }, kRows, "AllDeferred");
  ExpectBounded<QuarantineRecord>([&](int64_t m) { return s.QuarantineOf("order-1", m); }, kRows,
                                  "QuarantineOf");
  ExpectBounded<JournalEntry>([&](int64_t m) { return s.JournalOf("c", "order-1", m); }, kRows,
                              "JournalOf");
  ExpectBounded<EvidenceRecord>([&](int64_t m) { return s.EvidenceOf("c", "order-1", m); }, kRows,
                                "EvidenceOf");
  // An empty list is never cut.
  const Rows<QuarantineRecord> none = Take(s.QuarantineOf("order-9", 0));
  EXPECT_TRUE(none.rows.empty());
  EXPECT_FALSE(none.truncated);
}

// --- the outbox ---

OutboxRow OutboxEvent(std::string event_id, std::string bytes, int64_t created_at_ms = 100) {
  return OutboxRow{.source = "s",
                   .event_id = std::move(event_id),
                   .type = "t",
                   .subject = "order-1",
                   .subject_version = 1,
                   .partition = 3,
                   .bytes = std::move(bytes),
                   .created_at_ms = created_at_ms};
}

std::vector<int64_t> SeqsOf(const Rows<OutboxRow>& rows) {
  std::vector<int64_t> out;
  for (const OutboxRow& row : rows.rows) out.push_back(row.seq);
  return out;
}

TEST_P(StoreConformance, OutboxAppendsAssignIncreasingSeqsAndKeepTheBytesExactly) {
  const std::string bytes = std::string("{\"x\":\"caf\xc3\xa9\"}") + '\0' + "tail";
  int64_t first = 0;
  int64_t second = 0;
  Write([&](Transaction& tx) {
    const OutboxAppend a = Take(tx.AppendOutbox(OutboxEvent("e1", bytes)));
    const OutboxAppend b = Take(tx.AppendOutbox(OutboxEvent("e2", "{}")));
    EXPECT_EQ(a.outcome, OutboxOutcome::kAppended);
    EXPECT_EQ(b.outcome, OutboxOutcome::kAppended);
    EXPECT_LT(a.seq, b.seq);
    first = a.seq;
    second = b.seq;
  });
  Write([&](Transaction& tx) {
    const OutboxAppend c = Take(tx.AppendOutbox(OutboxEvent("e3", "{}")));
    EXPECT_GT(c.seq, second);
  });
  Reopen();
  const Rows<OutboxRow> rows = Take(Read()->OutboxRows(OutboxSelect::kAll, 0));
  ASSERT_EQ(rows.rows.size(), 3u);
  const OutboxRow& row = rows.rows[0];
  EXPECT_EQ(row.seq, first);
  EXPECT_EQ(row.bytes, bytes);
  EXPECT_EQ(row.bytes.size(), bytes.size());
  EXPECT_EQ(row.source, "s");
  EXPECT_EQ(row.event_id, "e1");
  EXPECT_EQ(row.type, "t");
  EXPECT_EQ(row.subject, "order-1");
  EXPECT_EQ(row.subject_version, 1);
  EXPECT_EQ(row.partition, 3);
  EXPECT_EQ(row.created_at_ms, 100);
  EXPECT_EQ(row.attempts, 0);
  EXPECT_EQ(row.last_error, "");
  EXPECT_FALSE(row.sent_at_ms);
  EXPECT_FALSE(row.last_attempt_at_ms);
  EXPECT_FALSE(row.stream_sequence);
}

TEST_P(StoreConformance, OutboxDuplicateAndConflictWriteNothing) {
  int64_t seq = 0;
  Write([&](Transaction& tx) { seq = Take(tx.AppendOutbox(OutboxEvent("e1", "{\"a\":1}"))).seq; });
  Write([&](Transaction& tx) {
    const OutboxAppend same = Take(tx.AppendOutbox(OutboxEvent("e1", "{\"a\":1}", 200)));
    EXPECT_EQ(same.outcome, OutboxOutcome::kDuplicate);
    EXPECT_EQ(same.seq, seq);
    const OutboxAppend other = Take(tx.AppendOutbox(OutboxEvent("e1", "{\"a\":2}")));
    EXPECT_EQ(other.outcome, OutboxOutcome::kConflict);
    EXPECT_EQ(other.seq, seq);
    // The same id from another source is another event.
    OutboxRow elsewhere = OutboxEvent("e1", "{\"a\":2}");
    elsewhere.source = "s2";
    EXPECT_EQ(Take(tx.AppendOutbox(elsewhere)).outcome, OutboxOutcome::kAppended);
  });
  // Within one transaction too.
  Write([&](Transaction& tx) {
    const OutboxAppend fresh = Take(tx.AppendOutbox(OutboxEvent("e9", "x")));
    const OutboxAppend again = Take(tx.AppendOutbox(OutboxEvent("e9", "x")));
    EXPECT_EQ(again.outcome, OutboxOutcome::kDuplicate);
    EXPECT_EQ(again.seq, fresh.seq);
    EXPECT_EQ(Take(tx.AppendOutbox(OutboxEvent("e9", "y"))).outcome, OutboxOutcome::kConflict);
  });
  const Rows<OutboxRow> rows = Take(Read()->OutboxRows(OutboxSelect::kAll, 0));
  ASSERT_EQ(rows.rows.size(), 3u);
  EXPECT_EQ(rows.rows[0].bytes, "{\"a\":1}");
  EXPECT_EQ(rows.rows[0].created_at_ms, 100);
  EXPECT_EQ(rows.rows[2].bytes, "x");
}

TEST_P(StoreConformance, OutboxRollbackDropsAppendedRows) {
  {
    auto tx = Begin();
    EXPECT_EQ(Take(tx->AppendOutbox(OutboxEvent("e1", "{}"))).outcome, OutboxOutcome::kAppended);
    EXPECT_OK(tx->Rollback());
  }
  {
    auto tx = Begin();
    EXPECT_EQ(Take(tx->AppendOutbox(OutboxEvent("e2", "{}"))).outcome, OutboxOutcome::kAppended);
  }  // destroyed without Commit: a crash
  EXPECT_TRUE(Take(Read()->OutboxRows(OutboxSelect::kAll, 0)).rows.empty());
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.AppendOutbox(OutboxEvent("e1", "{\"b\":1}"))).outcome,
              OutboxOutcome::kAppended);
  });
}

TEST_P(StoreConformance, OutboxPendingListsUnsentRowsInSeqOrderAfterASeqBounded) {
  std::vector<int64_t> seqs;
  Write([&](Transaction& tx) {
    for (int64_t i = 0; i < 5; ++i) {
      seqs.push_back(Take(tx.AppendOutbox(OutboxEvent(Numbered("e", i), "{}"))).seq);
    }
  });
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.MarkOutboxSent(seqs[1], "ORDERS", 41, 500));
    // Pending within the transaction sees its own writes.
    EXPECT_EQ(SeqsOf(Take(tx.PendingOutbox(0, 10))),
              (std::vector<int64_t>{seqs[0], seqs[2], seqs[3], seqs[4]}));
    const Rows<OutboxRow> cut = Take(tx.PendingOutbox(seqs[0], 2));
    EXPECT_EQ(SeqsOf(cut), (std::vector<int64_t>{seqs[2], seqs[3]}));
    EXPECT_TRUE(cut.truncated);
    const Rows<OutboxRow> rest = Take(tx.PendingOutbox(seqs[3], 2));
    EXPECT_EQ(SeqsOf(rest), (std::vector<int64_t>{seqs[4]}));
    EXPECT_FALSE(rest.truncated);
  });
  auto snapshot = Read();
  EXPECT_EQ(SeqsOf(Take(snapshot->OutboxRows(OutboxSelect::kPending, 0))),
            (std::vector<int64_t>{seqs[0], seqs[2], seqs[3], seqs[4]}));
  EXPECT_EQ(SeqsOf(Take(snapshot->OutboxRows(OutboxSelect::kAll, seqs[2]))),
            (std::vector<int64_t>{seqs[3], seqs[4]}));
  const Rows<OutboxRow> cut = Take(snapshot->OutboxRows(OutboxSelect::kAll, 0, 1));
  EXPECT_EQ(SeqsOf(cut), (std::vector<int64_t>{seqs[0]}));
  EXPECT_TRUE(cut.truncated);
}

// Eight rows over partitions 0..3, two each, interleaved by seq; seqs[i] is in partition i % 4.
std::vector<int64_t> AppendOverFourPartitions(Transaction& tx) {
  std::vector<int64_t> seqs;
  for (int64_t i = 0; i < 8; ++i) {
    OutboxRow row = OutboxEvent(Numbered("p", i), "{}");
    row.partition = i % 4;
    row.subject = Numbered("order-", i % 4);
    seqs.push_back(Take(tx.AppendOutbox(row)).seq);
  }
  return seqs;
}

std::set<int64_t> PartitionsOf(const Rows<OutboxRow>& rows) {
  std::set<int64_t> out;
  for (const OutboxRow& row : rows.rows) out.insert(row.partition);
  return out;
}

TEST_P(StoreConformance, AClaimReturnsTheOldestPendingRowsOfItsPartitionsBySeq) {
  std::vector<int64_t> seqs;
  Write([&](Transaction& tx) { seqs = AppendOverFourPartitions(tx); });
  Write([&](Transaction& tx) { EXPECT_OK(tx.MarkOutboxSent(seqs[0], "ORDERS", 1, 500)); });
  auto tx = Begin();
  const Rows<OutboxRow> all = Take(tx->ClaimOutbox(100, 8, 30'000, 600));
  EXPECT_EQ(SeqsOf(all), std::vector<int64_t>(seqs.begin() + 1, seqs.end()));
  EXPECT_FALSE(all.truncated);
  EXPECT_OK(tx->Rollback());
  tx = Begin();
  const Rows<OutboxRow> cut = Take(tx->ClaimOutbox(2, 8, 30'000, 600));
  EXPECT_EQ(SeqsOf(cut), (std::vector<int64_t>{seqs[1], seqs[2]}));
  EXPECT_TRUE(cut.truncated);
  EXPECT_OK(tx->Rollback());
  EXPECT_EQ(Take(Read()->OutboxRows(OutboxSelect::kPending, 0)).rows.size(),
            7U);  // a claim changes no row
}

// A partition with a backlog does not take a shared store's whole claim: the claimed partitions
// take turns (each one's oldest row, then each one's second, ...), each partition's rows in seq
// order. A store whose transactions exclude each other returns the oldest rows by seq.
TEST_P(StoreConformance, AClaimTakesItsPartitionsInTurn) {
  std::vector<int64_t> seqs;
  Write([&](Transaction& tx) {
    for (int64_t i = 0; i < 8; ++i) {
      OutboxRow row = OutboxEvent(Numbered("b", i), "{}");
      row.partition = i < 6 ? 0 : 1;  // six rows of partition 0 first, then two of partition 1
      row.subject = Numbered("order-", row.partition);
      seqs.push_back(Take(tx.AppendOutbox(row)).seq);
    }
  });
  auto tx = Begin();
  const Rows<OutboxRow> claimed = Take(tx->ClaimOutbox(4, 2, 30'000, 600));
  EXPECT_TRUE(claimed.truncated);
  if (store_->RelaysShare()) {
    EXPECT_EQ(SeqsOf(claimed), (std::vector<int64_t>{seqs[0], seqs[6], seqs[1], seqs[7]}));
  } else {
    EXPECT_EQ(SeqsOf(claimed), (std::vector<int64_t>{seqs[0], seqs[1], seqs[2], seqs[3]}));
  }
  EXPECT_OK(tx->Rollback());
}

// Relays that share a store (Store::RelaysShare) claim disjoint partitions, a producer's append
// does not wait for a claim, and a claim held past its hold time is lost: the partitions go to
// another relay and the holder cannot commit. A store that does not share its relays excludes
// whole transactions instead: a claim there is every pending row (checked above).
TEST_P(StoreConformance, RelaysSharingAStoreClaimDisjointPartitionsAndLoseAClaimHeldTooLong) {
  std::vector<int64_t> seqs;
  Write([&](Transaction& tx) { seqs = AppendOverFourPartitions(tx); });
  if (!store_->RelaysShare()) {
    EXPECT_EQ(SeqsOf(Take(Begin()->ClaimOutbox(100, 2, 30'000, 600))), seqs);
    return;
  }
  auto relay2 = Open();
  auto producer = Open();
  auto first = Begin();
  const Rows<OutboxRow> mine = Take(first->ClaimOutbox(100, 2, 30'000, 600));
  auto second = Take(relay2->Begin());
  const Rows<OutboxRow> theirs = Take(second->ClaimOutbox(100, 8, 30'000, 600));
  EXPECT_EQ(PartitionsOf(mine).size(), 2U);
  EXPECT_EQ(PartitionsOf(theirs).size(), 2U);
  std::set<int64_t> both = PartitionsOf(mine);
  both.merge(PartitionsOf(theirs));
  EXPECT_EQ(both, (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(mine.rows.size() + theirs.rows.size(), 8U);  // every row of a claimed partition
  {  // a producer appends to a claimed partition and commits without waiting for the claim
    auto tx = Take(producer->Begin());
    OutboxRow late = OutboxEvent("late", "{}");
    late.partition = mine.rows.at(0).partition;
    EXPECT_EQ(Take(tx->AppendOutbox(late)).outcome, OutboxOutcome::kAppended);
    EXPECT_OK(tx->Commit());
  }
  for (const OutboxRow& row : mine.rows) EXPECT_OK(first->MarkOutboxSent(row.seq, "A", 1, 700));
  EXPECT_OK(first->Commit());
  EXPECT_OK(second->Rollback());
  // A claim held past its hold time is lost: another relay claims the partition, and the
  // holder's marks do not commit.
  auto stalled = Begin();
  const Rows<OutboxRow> held = Take(stalled->ClaimOutbox(100, 8, 200, 800));
  EXPECT_EQ(held.rows.size(), theirs.rows.size() + 1);  // their rows and the late one
  ::usleep(700'000);
  // The server ends the stalled session once its hold lapsed; on a loaded machine a little
  // later than that, so the taker asks again until it gets the partitions (10 s at most).
  std::unique_ptr<Transaction> taker;
  Rows<OutboxRow> taken;
  for (int i = 0; i < 100 && taken.rows.empty(); ++i) {
    if (taker != nullptr) {
      EXPECT_OK(taker->Rollback());
      ::usleep(100'000);
    }
    taker = Take(relay2->Begin());
    taken = Take(taker->ClaimOutbox(100, 8, 30'000, 900));
  }
  EXPECT_EQ(SeqsOf(taken), SeqsOf(held));
  Status lapsed = stalled->MarkOutboxSent(held.rows.at(0).seq, "STALLED", 1, 900);
  if (lapsed.ok()) lapsed = stalled->Commit();
  EXPECT_EQ(lapsed.code(), Code::kUnavailable) << lapsed.ToString();
  for (const OutboxRow& row : taken.rows) EXPECT_OK(taker->MarkOutboxSent(row.seq, "B", 2, 950));
  EXPECT_OK(taker->Commit());
  const Rows<OutboxRow> rows = Take(Read()->OutboxRows(OutboxSelect::kAll, 0));
  EXPECT_EQ(rows.rows.size(), 9U);
  for (const OutboxRow& row : rows.rows) EXPECT_NE(row.stream, "STALLED") << row.seq;
  EXPECT_TRUE(Take(Read()->OutboxRows(OutboxSelect::kPending, 0)).rows.empty());
}

// Consumer groups (group.h): a store that keeps them keeps members and partition leases with
// fencing epochs, and a batch fenced by a lease its holder lost does not commit. A store that
// does not keep them (memory) refuses groups.
TEST_P(StoreConformance, AGroupLeaseFencesTheCommitsOfAHolderThatLostIt) {
  const Result<std::vector<GroupMember>> joined = Begin()->JoinGroup("g", "a", 4, 1000, 2000);
  if (!GetParam().keeps_groups) {
    EXPECT_EQ(joined.status().code(), Code::kFailedPrecondition) << joined.status().ToString();
    EXPECT_EQ(Read()->GroupLeases("g").status().code(), Code::kFailedPrecondition);
    return;
  }
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.JoinGroup("g", "a", 4, 1000, 2000)).size(), 1U);
    const std::vector<GroupMember> both = Take(tx.JoinGroup("g", "b", 4, 1100, 2100));
    ASSERT_EQ(both.size(), 2U);
    EXPECT_EQ(both[0].member, "a");
    EXPECT_EQ(both[1].member, "b");
    EXPECT_EQ(tx.JoinGroup("g", "c", 5, 1100, 2100).status().code(), Code::kFailedPrecondition);
  });
  Write([&](Transaction& tx) {  // an expired member does not count as alive
    EXPECT_EQ(Take(tx.JoinGroup("g", "b", 4, 2050, 3000)).size(), 1U);
  });
  std::optional<GroupLease> lease;
  Write([&](Transaction& tx) {
    lease = Take(tx.AcquireLease("g", 0, "a", 1000, 2000));
    ASSERT_TRUE(lease.has_value());
    EXPECT_EQ(lease->epoch, 1);
    EXPECT_FALSE(Take(tx.AcquireLease("g", 0, "b", 1500, 2500)).has_value());  // held
    EXPECT_TRUE(Take(tx.RenewLease("g", 0, "a", 1, 2600)));
    EXPECT_FALSE(Take(tx.RenewLease("g", 0, "a", 7, 2600)));  // not at that epoch
  });
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.FenceLease("g", 0, "a", 1, 10, 5, 30'000));
    EXPECT_EQ(Take(tx.InsertLedger(Receipt("fenced-in"))), Insert::kInserted);
  });
  std::vector<GroupLease> leases = Take(Read()->GroupLeases("g"));
  ASSERT_EQ(leases.size(), 1U);
  EXPECT_EQ(leases[0].position, 10);
  EXPECT_EQ(leases[0].lag, 5);
  Write([&](Transaction& tx) {  // expired: b takes it over, and the epoch goes up
    lease = Take(tx.AcquireLease("g", 0, "b", 3000, 4000));
    ASSERT_TRUE(lease.has_value());
    EXPECT_EQ(lease->holder, "b");
    EXPECT_EQ(lease->epoch, 2);
    EXPECT_EQ(lease->acquired_at_ms, 3000);
  });
  {  // a's next batch is fenced off: nothing of it commits
    auto tx = Begin();
    EXPECT_EQ(Take(tx->InsertLedger(Receipt("fenced-out"))), Insert::kInserted);
    Status fenced = tx->FenceLease("g", 0, "a", 1, 20, 0, 30'000);
    if (fenced.ok()) fenced = tx->Commit();
    EXPECT_EQ(fenced.code(), Code::kFailedPrecondition) << fenced.ToString();
    EXPECT_NE(fenced.message().find("lease lost"), std::string::npos) << fenced.ToString();
  }
  EXPECT_TRUE(Take(Read()->FindLedger("c", "s", "fenced-in")).has_value());
  EXPECT_FALSE(Take(Read()->FindLedger("c", "s", "fenced-out")).has_value());
  Write([&](Transaction& tx) {                                // released: free at once
    EXPECT_FALSE(Take(tx.RenewLease("g", 0, "a", 1, 5000)));  // a lost it
    EXPECT_OK(tx.ReleaseLease("g", 0, "b", 2));
    lease = Take(tx.AcquireLease("g", 0, "a", 3100, 4100));
    ASSERT_TRUE(lease.has_value());
    EXPECT_EQ(lease->epoch, 3);
    EXPECT_OK(tx.LeaveGroup("g", "b"));
  });
  Write([&](Transaction& tx) {  // a process run again under the name "a" fences off the first
    lease = Take(tx.AcquireLease("g", 0, "a", 3200, 4200));
    ASSERT_TRUE(lease.has_value());
    EXPECT_EQ(lease->epoch, 4);
    EXPECT_FALSE(Take(tx.RenewLease("g", 0, "a", 3, 4300)));
  });
  {
    auto tx = Begin();
    Status fenced = tx->FenceLease("g", 0, "a", 3, 30, 0, 30'000);
    if (fenced.ok()) fenced = tx->Commit();
    EXPECT_EQ(fenced.code(), Code::kFailedPrecondition) << fenced.ToString();
  }
  auto snapshot = Read();
  EXPECT_EQ(Take(snapshot->GroupPartitionCount("g")), 4);
  EXPECT_EQ(Take(snapshot->GroupPartitionCount("other")), 0);
  const std::vector<GroupMember> members = Take(snapshot->GroupMembers("g"));
  ASSERT_EQ(members.size(), 1U);
  EXPECT_EQ(members[0].member, "a");
  leases = Take(snapshot->GroupLeases("g"));
  ASSERT_EQ(leases.size(), 1U);
  EXPECT_EQ(leases[0].holder, "a");
  EXPECT_EQ(leases[0].position, 10);  // the fenced-off batch recorded nothing
}

// A partition the broker assigned (Kafka's group protocol) is seized whoever holds it, however
// recently renewed: the epoch goes up, the earlier holder's batches are fenced off, and the lease
// never expires by time.
TEST_P(StoreConformance, ASeizedLeaseFencesOffItsHolderWhateverItsExpiry) {
  if (!GetParam().keeps_groups) {
    EXPECT_EQ(Begin()->SeizeLease("g", 0, "a", 1000).status().code(), Code::kFailedPrecondition);
    return;
  }
  Write([&](Transaction& tx) {
    const GroupLease first = Take(tx.SeizeLease("g", 2, "a", 1000));
    EXPECT_EQ(first.epoch, 1);
    EXPECT_EQ(first.holder, "a");
    EXPECT_EQ(first.expires_at_ms, std::numeric_limits<int64_t>::max());
    EXPECT_FALSE(Take(tx.AcquireLease("g", 2, "b", 5000, 6000)).has_value());  // never expires
  });
  Write([&](Transaction& tx) { EXPECT_OK(tx.FenceLease("g", 2, "a", 1, 7, std::nullopt, 1000)); });
  Write([&](Transaction& tx) {
    const GroupLease taken = Take(tx.SeizeLease("g", 2, "b", 1100));
    EXPECT_EQ(taken.epoch, 2);
    EXPECT_EQ(taken.holder, "b");
    EXPECT_EQ(taken.position, 7);  // the last batch's, for the new holder to see
  });
  {
    auto tx = Begin();
    EXPECT_EQ(Take(tx->InsertLedger(Receipt("late"))), Insert::kInserted);
    Status fenced = tx->FenceLease("g", 2, "a", 1, 9, std::nullopt, 1000);
    if (fenced.ok()) fenced = tx->Commit();
    EXPECT_EQ(fenced.code(), Code::kFailedPrecondition) << fenced.ToString();
  }
  EXPECT_FALSE(Take(Read()->FindLedger("c", "s", "late")).has_value());
  Write([&](Transaction& tx) {  // seized again by a run of the same name: a new epoch
    EXPECT_EQ(Take(tx.SeizeLease("g", 2, "b", 1200)).epoch, 3);
  });
  const std::vector<GroupLease> leases = Take(Read()->GroupLeases("g"));
  ASSERT_EQ(leases.size(), 1U);
  EXPECT_EQ(leases[0].partition, 2);
  EXPECT_EQ(leases[0].holder, "b");
  EXPECT_EQ(leases[0].epoch, 3);
}

TEST_P(StoreConformance, OutboxMarkSentAndAttemptsAreRecorded) {
  int64_t seq = 0;
  Write([&](Transaction& tx) { seq = Take(tx.AppendOutbox(OutboxEvent("e1", "{}"))).seq; });
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.RecordOutboxAttempt(seq, "timeout", 150));
    EXPECT_OK(tx.RecordOutboxAttempt(seq, "no responders", 160));
  });
  // A seq with no row: kNotFound from the call, or from the commit of a store that sends the
  // call without waiting; either way nothing of the transaction commits.
  for (const bool mark : {false, true}) {
    auto tx = Begin();
    EXPECT_OK(tx->RecordOutboxAttempt(seq, "lost with the transaction", 155));
    Status missing = mark ? tx->MarkOutboxSent(seq + 100, "ORDERS", 1, 1)
                          : tx->RecordOutboxAttempt(seq + 100, "x", 1);
    if (missing.ok()) missing = tx->Commit();
    EXPECT_EQ(missing.code(), Code::kNotFound) << missing.ToString();
  }
  OutboxRow row = Take(Read()->OutboxRows(OutboxSelect::kPending, 0)).rows.at(0);
  EXPECT_EQ(row.attempts, 2);
  EXPECT_EQ(row.last_error, "no responders");
  EXPECT_EQ(row.last_attempt_at_ms, 160);
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.MarkOutboxSent(seq, "ORDERS", 41, 170));
    EXPECT_OK(tx.MarkOutboxSent(seq, "OTHER", 99, 180));  // the first acknowledgement stays
  });
  auto snapshot = Read();
  EXPECT_TRUE(Take(snapshot->OutboxRows(OutboxSelect::kPending, 0)).rows.empty());
  row = Take(snapshot->OutboxRows(OutboxSelect::kAll, 0)).rows.at(0);
  EXPECT_EQ(row.sent_at_ms, 170);
  EXPECT_EQ(row.stream, "ORDERS");
  EXPECT_EQ(row.stream_sequence, 41);
  EXPECT_EQ(row.attempts, 2);
  EXPECT_EQ(row.bytes, "{}");
}

TEST_P(StoreConformance, OutboxDeleteSentDeletesOnlySentRowsBeforeTheCutoffBounded) {
  std::vector<int64_t> seqs;
  Write([&](Transaction& tx) {
    for (int64_t i = 0; i < 6; ++i) {
      seqs.push_back(Take(tx.AppendOutbox(OutboxEvent(Numbered("e", i), "{}"))).seq);
    }
    // Sent at 10, 20, 30, 40; e4 and e5 pending.
    for (int64_t i = 0; i < 4; ++i) EXPECT_OK(tx.MarkOutboxSent(seqs[i], "S", i, 10 * (i + 1)));
  });
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.DeleteSentOutbox(35, 2)), 2);  // e0, e1
    EXPECT_EQ(Take(tx.DeleteSentOutbox(35, 2)), 1);  // e2; e3 was sent at 40
    EXPECT_EQ(Take(tx.DeleteSentOutbox(35, 2)), 0);
  });
  EXPECT_EQ(SeqsOf(Take(Read()->OutboxRows(OutboxSelect::kAll, 0))),
            (std::vector<int64_t>{seqs[3], seqs[4], seqs[5]}));
  // A deleted row's (source, id) may be appended again, with a new seq.
  Write([&](Transaction& tx) {
    const OutboxAppend again = Take(tx.AppendOutbox(OutboxEvent("e0", "{\"new\":1}")));
    EXPECT_EQ(again.outcome, OutboxOutcome::kAppended);
    EXPECT_GT(again.seq, seqs[5]);
  });
}

TEST_P(StoreConformance, OutboxStatsCountPendingAndSent) {
  OutboxStats empty = Take(Read()->OutboxStatsNow(1000));
  EXPECT_EQ(empty.pending, 0);
  EXPECT_EQ(empty.sent, 0);
  EXPECT_FALSE(empty.oldest_pending_age_ms);
  EXPECT_EQ(empty.attempts_max, 0);
  Write([&](Transaction& tx) {
    const int64_t a = Take(tx.AppendOutbox(OutboxEvent("e1", "{}", 100))).seq;
    const int64_t b = Take(tx.AppendOutbox(OutboxEvent("e2", "{}", 300))).seq;
    Take(tx.AppendOutbox(OutboxEvent("e3", "{}", 400)));
    EXPECT_OK(tx.MarkOutboxSent(a, "S", 1, 500));
    EXPECT_OK(tx.RecordOutboxAttempt(b, "timeout", 600));
    EXPECT_OK(tx.RecordOutboxAttempt(b, "timeout", 700));
  });
  const OutboxStats stats = Take(Read()->OutboxStatsNow(1000));
  EXPECT_EQ(stats.pending, 2);
  EXPECT_EQ(stats.sent, 1);
  EXPECT_EQ(stats.oldest_pending_age_ms, 700);
  EXPECT_EQ(stats.attempts_max, 2);
}

// A parked row is neither pending nor claimed nor sent, is kept whole with the operator's words,
// and counts apart; the rows behind it in its partition go out. Unparked, it is pending again
// with its attempts. Sent, parked or unknown rows are refused by name.
TEST_P(StoreConformance, AParkedOutboxRowIsSetAsideUntilUnparked) {
  std::vector<int64_t> seqs;
  Write([&](Transaction& tx) { seqs = AppendOverFourPartitions(tx); });
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.RecordOutboxAttempt(seqs[0], "maximum payload exceeded", 400));
    EXPECT_OK(tx.MarkOutboxSent(seqs[1], "ORDERS", 1, 500));
    EXPECT_OK(tx.ParkOutbox(seqs[0], "larger than max_payload; ticket 7", 600));
    EXPECT_EQ(Take(tx.PendingOutbox(0, 100)).rows.size(), 6U);  // its own write seen
    EXPECT_EQ(tx.ParkOutbox(seqs[0], "again", 700).code(), Code::kFailedPrecondition);
    const Status sent = tx.ParkOutbox(seqs[1], "sent", 700);
    EXPECT_EQ(sent.code(), Code::kFailedPrecondition);
    EXPECT_NE(sent.message().find("sent already"), std::string::npos) << sent.ToString();
    EXPECT_EQ(tx.ParkOutbox(seqs.back() + 100, "none", 700).code(), Code::kNotFound);
    EXPECT_EQ(tx.UnparkOutbox(seqs[2]).code(), Code::kFailedPrecondition);
    EXPECT_EQ(tx.UnparkOutbox(seqs.back() + 100).code(), Code::kNotFound);
  });
  const std::vector<int64_t> rest(seqs.begin() + 2, seqs.end());
  {
    auto tx = Begin();
    EXPECT_EQ(SeqsOf(Take(tx->PendingOutbox(0, 100))), rest);
    // Partition 0's next row (seqs[4]) goes out although its oldest row is parked.
    std::vector<int64_t> claimed = SeqsOf(Take(tx->ClaimOutbox(100, 8, 30'000, 800)));
    std::sort(claimed.begin(), claimed.end());
    EXPECT_EQ(claimed, rest);
    EXPECT_OK(tx->Rollback());
  }
  auto snapshot = Read();
  EXPECT_EQ(SeqsOf(Take(snapshot->OutboxRows(OutboxSelect::kPending, 0))), rest);
  const Rows<OutboxRow> all = Take(snapshot->OutboxRows(OutboxSelect::kAll, 0));
  ASSERT_EQ(all.rows.size(), seqs.size());
  const OutboxRow& parked = all.rows.front();
  EXPECT_EQ(parked.parked_at_ms, 600);
  EXPECT_EQ(parked.parked_reason, "larger than max_payload; ticket 7");
  EXPECT_EQ(parked.bytes, "{}");
  EXPECT_EQ(parked.attempts, 1);
  EXPECT_FALSE(parked.sent_at_ms);
  EXPECT_FALSE(all.rows[1].parked_at_ms);
  const Rows<OutboxRow> parked_only = Take(snapshot->OutboxRows(OutboxSelect::kParked, 0));
  EXPECT_EQ(SeqsOf(parked_only), std::vector<int64_t>{seqs[0]});
  EXPECT_EQ(parked_only.rows.at(0).parked_reason, "larger than max_payload; ticket 7");
  EXPECT_TRUE(Take(snapshot->OutboxRows(OutboxSelect::kParked, seqs[0])).rows.empty());
  const OutboxStats stats = Take(snapshot->OutboxStatsNow(1000));
  EXPECT_EQ(stats.pending, 6);
  EXPECT_EQ(stats.sent, 1);
  EXPECT_EQ(stats.parked, 1);
  EXPECT_EQ(stats.attempts_max, 0);  // over pending rows
  snapshot.reset();

  Write([&](Transaction& tx) { EXPECT_OK(tx.UnparkOutbox(seqs[0])); });
  const Rows<OutboxRow> pending = Take(Read()->OutboxRows(OutboxSelect::kPending, 0));
  ASSERT_EQ(pending.rows.size(), 7U);
  EXPECT_EQ(pending.rows.front().seq, seqs[0]);
  EXPECT_FALSE(pending.rows.front().parked_at_ms);
  EXPECT_EQ(pending.rows.front().parked_reason, "");
  EXPECT_EQ(pending.rows.front().attempts, 1);
  EXPECT_EQ(Take(Read()->OutboxStatsNow(1000)).parked, 0);
  EXPECT_TRUE(Take(Read()->OutboxRows(OutboxSelect::kParked, 0)).rows.empty());

  // Parked while a relay had it in hand: the relay's mark says the broker has it.
  Write([&](Transaction& tx) { EXPECT_OK(tx.ParkOutbox(seqs[2], "too late", 1100)); });
  Write([&](Transaction& tx) { EXPECT_OK(tx.MarkOutboxSent(seqs[2], "ORDERS", 9, 1200)); });
  const Rows<OutboxRow> after = Take(Read()->OutboxRows(OutboxSelect::kAll, seqs[1], 1));
  ASSERT_EQ(after.rows.size(), 1U);
  EXPECT_EQ(after.rows[0].sent_at_ms, 1200);
  EXPECT_FALSE(after.rows[0].parked_at_ms);
  EXPECT_EQ(after.rows[0].parked_reason, "");
  const OutboxStats last = Take(Read()->OutboxStatsNow(1300));
  EXPECT_EQ(last.sent, 2);
  EXPECT_EQ(last.parked, 0);
}

// Effect intents: one per key, every field kept, seq in write order, revision 1 to begin with.
TEST_P(StoreConformance, IntentsAreWrittenOncePerKeyWithEveryField) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertIntent(Intent("reserve:order-1:v1", 10))), Insert::kInserted);
    EffectIntent again = Intent("reserve:order-1:v1", 99, "other-effect");
    EXPECT_EQ(Take(tx.InsertIntent(again)), Insert::kAlreadyThere);
    EXPECT_EQ(Take(tx.InsertIntent(Intent("reserve:order-2:v1", std::nullopt))), Insert::kInserted);
    const std::optional<EffectIntent> seen = Take(tx.FindIntent("reserve:order-1:v1"));
    ASSERT_TRUE(seen.has_value());
    EXPECT_EQ(seen->effect, "reserve-stock");  // the first write stays
    EXPECT_EQ(seen->revision, 1);
  });
  Reopen();
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertIntent(Intent("reserve:order-1:v1", 5))), Insert::kAlreadyThere);
  });
  auto snapshot = Read();
  const std::optional<EffectIntent> got = Take(snapshot->FindIntent("reserve:order-1:v1"));
  ASSERT_TRUE(got.has_value());
  const EffectIntent want = Intent("reserve:order-1:v1", 10);
  EXPECT_EQ(got->key, want.key);
  EXPECT_EQ(got->effect, want.effect);
  EXPECT_EQ(got->consumer, want.consumer);
  EXPECT_EQ(got->subject, want.subject);
  EXPECT_EQ(got->source, want.source);
  EXPECT_EQ(got->event_id, want.event_id);
  EXPECT_EQ(got->subject_version, want.subject_version);
  EXPECT_EQ(got->request, want.request);  // exact bytes, NUL included
  EXPECT_EQ(got->state, EffectState::kIntended);
  EXPECT_EQ(got->attempts, 0);
  EXPECT_EQ(got->intended_at_ms, 10);
  EXPECT_EQ(got->next_attempt_at_ms, 10);
  EXPECT_FALSE(got->http_status.has_value());
  EXPECT_FALSE(got->settled_at_ms.has_value());
  EXPECT_EQ(got->revision, 1);
  const Rows<EffectIntent> all = Take(snapshot->ListIntents(EffectFilter{}));
  ASSERT_EQ(all.rows.size(), 2u);
  EXPECT_LT(all.rows[0].seq, all.rows[1].seq);
  EXPECT_EQ(all.rows[0].key, "reserve:order-1:v1");
  EXPECT_FALSE(Take(snapshot->FindIntent("reserve:order-9:v1")).has_value());
}

// An update writes the changing fields when the revision is the one read, and raises it; a
// stale revision is refused (kAborted) and writes nothing; the identity never changes.
TEST_P(StoreConformance, UpdateIntentChecksTheRevisionAndKeepsTheIdentity) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertIntent(Intent("k1", 10))), Insert::kInserted);
  });
  EffectIntent claim = Intent("k1", 10, "renamed", "order-9");
  claim.request = "changed";
  claim.state = EffectState::kUnknown;
  claim.attempts = 1;
  claim.last_error = "timeout after 2000 ms";
  claim.http_status = 504;
  claim.response_digest = "sha256:ab";
  claim.last_attempt_at_ms = 20;
  claim.next_attempt_at_ms = std::nullopt;
  claim.settled_at_ms = 30;
  claim.claimed_by = "runner-1";
  Write([&](Transaction& tx) { EXPECT_OK(tx.UpdateIntent(claim, 1)); });
  Write([&](Transaction& tx) {
    EffectIntent late = claim;
    late.state = EffectState::kDone;
    EXPECT_EQ(tx.UpdateIntent(late, 1).code(), Code::kAborted);
    EXPECT_EQ(tx.UpdateIntent(Intent("missing", 1), 1).code(), Code::kNotFound);
  });
  Reopen();
  const std::optional<EffectIntent> got = Take(Read()->FindIntent("k1"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->revision, 2);
  EXPECT_EQ(got->state, EffectState::kUnknown);
  EXPECT_EQ(got->attempts, 1);
  EXPECT_EQ(got->last_error, "timeout after 2000 ms");
  EXPECT_EQ(got->http_status, 504);
  EXPECT_EQ(got->response_digest, "sha256:ab");
  EXPECT_EQ(got->last_attempt_at_ms, 20);
  EXPECT_FALSE(got->next_attempt_at_ms.has_value());
  EXPECT_EQ(got->settled_at_ms, 30);
  EXPECT_EQ(got->claimed_by, "runner-1");
  EXPECT_EQ(got->effect, "reserve-stock");
  EXPECT_EQ(got->subject, "order-1");
  EXPECT_EQ(got->request, Intent("k1", 10).request);
}

// Due: a time set and reached, by that time then seq, bounded; an update in the same
// transaction is seen.
TEST_P(StoreConformance, DueIntentsAreThoseWhoseTimeCameInTimeOrder) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertIntent(Intent("late", 50))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertIntent(Intent("waits", std::nullopt))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertIntent(Intent("early", 20))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertIntent(Intent("early-too", 20))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertIntent(Intent("future", 500))), Insert::kInserted);
  });
  auto tx = Begin();
  Rows<EffectIntent> due = Take(tx->DueIntents(100, 10));
  EXPECT_EQ(Pluck(due.rows, &EffectIntent::key),
            (std::vector<std::string>{"early", "early-too", "late"}));
  EXPECT_FALSE(due.truncated);
  due = Take(tx->DueIntents(100, 2));
  EXPECT_EQ(due.rows.size(), 2u);
  EXPECT_TRUE(due.truncated);
  EffectIntent taken = Take(tx->FindIntent("early")).value();
  taken.next_attempt_at_ms = std::nullopt;
  EXPECT_OK(tx->UpdateIntent(taken, taken.revision));
  EXPECT_EQ(Pluck(Take(tx->DueIntents(100, 10)).rows, &EffectIntent::key),
            (std::vector<std::string>{"early-too", "late"}));
  EXPECT_TRUE(Take(tx->DueIntents(19, 10)).rows.empty());
  EXPECT_OK(tx->Rollback());
}

// The log belongs to an intent, by seq; lists filter and page by seq.
TEST_P(StoreConformance, IntentLogsAndListsFilterAndPage) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertIntent(Intent("a", 10))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertIntent(Intent("b", 10, "notify"))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertIntent(Intent("c", 10, "reserve-stock", "order-2"))),
              Insert::kInserted);
    EXPECT_OK(tx.LogIntent({.key = "a",
                            .action = EffectAction::kAttempt,
                            .by = "runner-1",
                            .state_after = EffectState::kUnknown,
                            .http_status = 503,
                            .detail = "HTTP 503",
                            .at_ms = 11}));
    EXPECT_OK(tx.LogIntent({.key = "a",
                            .action = EffectAction::kResolve,
                            .by = "ops",
                            .state_after = EffectState::kDone,
                            .detail = "checked the warehouse",
                            .at_ms = 12}));
    EXPECT_EQ(tx.LogIntent({.key = "nope", .by = "x"}).code(), Code::kNotFound);
    EffectIntent b = Take(tx.FindIntent("b")).value();
    b.state = EffectState::kFailed;
    EXPECT_OK(tx.UpdateIntent(b, 1));
  });
  auto snapshot = Read();
  const Rows<EffectLogEntry> log = Take(snapshot->IntentLogOf("a"));
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_LT(log.rows[0].seq, log.rows[1].seq);
  EXPECT_EQ(log.rows[0].action, EffectAction::kAttempt);
  EXPECT_EQ(log.rows[0].by, "runner-1");
  EXPECT_EQ(log.rows[0].state_after, EffectState::kUnknown);
  EXPECT_EQ(log.rows[0].http_status, 503);
  EXPECT_EQ(log.rows[0].detail, "HTTP 503");
  EXPECT_EQ(log.rows[0].at_ms, 11);
  EXPECT_EQ(log.rows[1].action, EffectAction::kResolve);
  EXPECT_FALSE(log.rows[1].http_status.has_value());
  EXPECT_TRUE(Take(snapshot->IntentLogOf("b")).rows.empty());
  const auto keys = [&](const EffectFilter& f, int64_t after = 0, int64_t max = 100) {
    return Pluck(Take(snapshot->ListIntents(f, after, max)).rows, &EffectIntent::key);
  };
  using Keys = std::vector<std::string>;
  EXPECT_EQ(keys({}), (Keys{"a", "b", "c"}));
  EXPECT_EQ(keys({.state = EffectState::kFailed}), (Keys{"b"}));
  EXPECT_EQ(keys({.state = EffectState::kIntended}), (Keys{"a", "c"}));
  EXPECT_EQ(keys({.effect = "reserve-stock"}), (Keys{"a", "c"}));
  EXPECT_EQ(keys({.subject = "order-2"}), (Keys{"c"}));
  EXPECT_EQ(keys({.consumer = "other"}), Keys{});
  const Rows<EffectIntent> first = Take(snapshot->ListIntents({}, 0, 2));
  ASSERT_EQ(first.rows.size(), 2u);
  EXPECT_TRUE(first.truncated);
  EXPECT_EQ(keys({}, first.rows.back().seq), (Keys{"c"}));
}

// A compensation is recorded once per key, whatever the writes; listed by seq, filtered.
TEST_P(StoreConformance, CompensationsAreRecordedOncePerKey) {
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertCompensation(Compensation("comp:order-1:v2"))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertCompensation(Compensation("comp:order-2:v1", "c2", "order-2"))),
              Insert::kInserted);
  });
  Reopen();
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertCompensation(Compensation("comp:order-1:v2"))), Insert::kAlreadyThere);
  });
  // One record per (consumer, key): another consumer's record of the same decision, and the
  // owner's (no consumer), live beside it.
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertCompensation(Compensation("comp:order-2:v1", "c", "order-2"))),
              Insert::kInserted);
    CompensationRecord owner = Compensation("comp:order-2:v1", "", "order-2");
    owner.recorded_by = CompensationBy::kOwner;
    EXPECT_EQ(Take(tx.InsertCompensation(owner)), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertCompensation(owner)), Insert::kAlreadyThere);
  });
  EXPECT_EQ(Take(Read()->ListCompensations("", "order-2")).rows.size(), 3u);
  auto snapshot = Read();
  const Rows<CompensationRecord> every = Take(snapshot->ListCompensations("", ""));
  ASSERT_EQ(every.rows.size(), 4u);
  const Rows<CompensationRecord> all = Take(snapshot->ListCompensations("", "", 0, 2));
  ASSERT_EQ(all.rows.size(), 2u);
  const CompensationRecord& c = all.rows[0];
  EXPECT_EQ(c.key, "comp:order-1:v2");
  EXPECT_EQ(c.consumer, "c");
  EXPECT_EQ(c.subject, "order-1");
  EXPECT_EQ(c.owner_source, "https://orders.test");
  EXPECT_EQ(c.owner_version, 3);
  EXPECT_EQ(c.event_id, "e3");
  EXPECT_EQ(c.type, "order.cancelled");
  EXPECT_EQ(c.recorded_at_ms, 40);
  EXPECT_LT(all.rows[0].seq, all.rows[1].seq);
  EXPECT_EQ(Pluck(Take(snapshot->ListCompensations("c2", "")).rows, &CompensationRecord::key),
            std::vector<std::string>{"comp:order-2:v1"});
  EXPECT_EQ(Pluck(Take(snapshot->ListCompensations("", "order-1")).rows, &CompensationRecord::key),
            std::vector<std::string>{"comp:order-1:v2"});
  EXPECT_EQ(Pluck(Take(snapshot->ListCompensations("c", "")).rows, &CompensationRecord::key),
            (std::vector<std::string>{"comp:order-1:v2", "comp:order-2:v1"}));
  EXPECT_TRUE(Take(snapshot->ListCompensations("", "", every.rows[3].seq)).rows.empty());
  snapshot.reset();
  EXPECT_EQ(Counts(), CountsOf(0, 0, 0, 0, 0, 0, 4));
}

// Evidence keeps its detail (an effect's answer) across a reopen, with a source of its own or
// the owner's.
TEST_P(StoreConformance, EvidenceKeepsItsDetail) {
  Write([&](Transaction& tx) {
    PutNew(tx, MakeProjection("c", "order-1", 1, "paid"));
    EvidenceRecord answered = Evidence("reserve-stock", "e1", 1);
    answered.detail = "HTTP 200, sha256:00ff";
    EXPECT_OK(tx.PutEvidence(answered));
    EvidenceRecord elsewhere = Evidence("resolved", "e1", 1, "other-source");
    elsewhere.detail = "resolved done by ops";
    EXPECT_OK(tx.PutEvidence(elsewhere));
    EXPECT_OK(tx.PutEvidence(Evidence("payment", "e1", 1)));
  });
  Reopen();
  const Rows<EvidenceRecord> got = Take(Read()->EvidenceOf("c", "order-1"));
  ASSERT_EQ(got.rows.size(), 3u);
  EXPECT_EQ(got.rows[0].name, "payment");
  EXPECT_EQ(got.rows[0].detail, "");
  EXPECT_EQ(got.rows[1].name, "reserve-stock");
  EXPECT_EQ(got.rows[1].detail, "HTTP 200, sha256:00ff");
  EXPECT_EQ(got.rows[1].source, "s");
  EXPECT_EQ(got.rows[2].name, "resolved");
  EXPECT_EQ(got.rows[2].detail, "resolved done by ops");
  EXPECT_EQ(got.rows[2].source, "other-source");
}

// --- what seed 002's effects, compensations, gaps and corrections keep (layout 8 / 5) ---

// AppliedAfter finds the first applied receipt above a projection version, of the listed types
// (any type for none), this transaction's own included; DeleteLedger removes a row for good.
TEST_P(StoreConformance, AppliedAfterFindsTheNextAppliedReceiptAndDeleteLedgerRemovesOne) {
  const auto receipt = [](std::string id, std::string type, int64_t version,
                          LedgerState state = LedgerState::kApplied) {
    LedgerEntry e = Receipt(std::move(id), state);
    e.type = std::move(type);
    e.subject_version = version;
    e.projection_version =
        state == LedgerState::kApplied ? std::optional<int64_t>(version) : std::nullopt;
    return e;
  };
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertLedger(receipt("p1", "paid", 1))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertLedger(receipt("p2", "paid", 2))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertLedger(receipt("c5", "cancelled", 5, LedgerState::kDeferred))),
              Insert::kInserted);
    LedgerEntry other = receipt("x3", "cancelled", 3);
    other.subject = "order-2";
    EXPECT_EQ(Take(tx.InsertLedger(other)), Insert::kInserted);
  });
  auto tx = Begin();
  EXPECT_EQ(Take(tx->InsertLedger(receipt("c3", "cancelled", 3))), Insert::kInserted);
  const std::vector<std::string> cancelled = {"cancelled"};
  std::optional<LedgerEntry> found = Take(tx->AppliedAfter("c", "order-1", 1, cancelled));
  ASSERT_TRUE(found.has_value());  // its own insert; the deferred v5 and order-2's are not it
  EXPECT_EQ(found->event_id, "c3");
  EXPECT_EQ(found->projection_version, 3);
  found = Take(tx->AppliedAfter("c", "order-1", 1, std::vector<std::string>{}));
  ASSERT_TRUE(found.has_value());  // any type: the lowest version above 1
  EXPECT_EQ(found->event_id, "p2");
  EXPECT_FALSE(Take(tx->AppliedAfter("c", "order-1", 3, std::vector<std::string>{})).has_value());
  EXPECT_FALSE(
      Take(tx->AppliedAfter("c", "order-1", 0, std::vector<std::string>{"refunded"})).has_value());
  EXPECT_FALSE(Take(tx->AppliedAfter("d", "order-1", 0, cancelled)).has_value());
  EXPECT_OK(tx->DeleteLedger("c", "s", "p2"));
  EXPECT_OK(tx->DeleteLedger("c", "s", "no-such"));
  EXPECT_FALSE(Take(tx->FindLedger("c", "s", "p2")).has_value());
  found = Take(tx->AppliedAfter("c", "order-1", 1, std::vector<std::string>{}));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->event_id, "c3");
  EXPECT_OK(tx->Commit());
  tx.reset();
  Reopen();
  auto snapshot = Read();
  EXPECT_FALSE(Take(snapshot->FindLedger("c", "s", "p2")).has_value());
  EXPECT_EQ(Pluck(Take(snapshot->LedgerOf("c", "order-1")).rows, &LedgerEntry::event_id),
            (std::vector<std::string>{"p1", "c3", "c5"}));
}

// A gap's record from its opening: UpdateGap changes what the deadline and the answer bring,
// CloseGaps says how and why it closed, and every field reads back.
TEST_P(StoreConformance, GapRecordsKeepTheirHistoryFromOpeningToClose) {
  GapRecord opened{.consumer = "c",
                   .subject = "order-1",
                   .expected_version = 2,
                   .missing_to = 3,
                   .route = GapRoute::kRequestReplay,
                   .state = GapState::kOpen,
                   .deadline_at_ms = 300};
  opened.opened_at_ms = 10;
  opened.waiting_versions = {4, 6};
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.RecordGap(opened));
    GapRecord other = opened;
    other.subject = "order-2";
    EXPECT_EQ(Take(tx.InsertGap(other)), Insert::kInserted);
  });
  {
    const std::optional<GapRecord> read = Take(Read()->GapRecordsOf("c", "order-1")).rows.front();
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(read->state, GapState::kOpen);
    EXPECT_FALSE(read->acted_at_ms.has_value());
    EXPECT_EQ(read->opened_at_ms, 10);
    EXPECT_EQ(read->waiting_versions, (std::vector<int64_t>{4, 6}));
    EXPECT_EQ(read->how, GapClosedHow::kNone);
    EXPECT_EQ(read->cause, GapCause::kUnknown);
  }
  Write([&](Transaction& tx) {
    GapRecord acted = Take(tx.FindGap("c", "order-1", 2)).value();
    acted.state = GapState::kRequested;
    acted.acted_at_ms = 301;
    acted.request_event_id = "replay-request:c:order-1:2-3";
    acted.waiting_versions = {4, 5, 6};
    acted.answer = "republished versions 2-3";
    acted.answered_at_ms = 320;
    acted.opened_at_ms = 999;  // never changes
    EXPECT_OK(tx.UpdateGap(acted));
    GapRecord absent = acted;
    absent.expected_version = 9;
    EXPECT_EQ(tx.UpdateGap(absent).code(), Code::kNotFound);
    EXPECT_EQ(Take(tx.CloseGaps("c", "order-1", 3,
                                {.at_ms = 330,
                                 .how = GapClosedHow::kDrained,
                                 .cause = GapCause::kOutOfOrder,
                                 .by = "arrival",
                                 .note = "",
                                 .waiting_versions = {4, 5, 6}})),
              1);
    EXPECT_EQ(Take(tx.CloseGaps("c", "order-2", 9,
                                {.at_ms = 340,
                                 .how = GapClosedHow::kCorrected,
                                 .cause = GapCause::kMissing,
                                 .by = "ops",
                                 .note = "set to v9 by hand"})),
              1);
  });
  Reopen();
  auto snapshot = Read();
  const GapRecord one = Take(snapshot->GapRecordsOf("c", "order-1")).rows.at(0);
  EXPECT_EQ(one.state, GapState::kClosed);
  EXPECT_EQ(one.acted_at_ms, 301);
  EXPECT_EQ(one.request_event_id, "replay-request:c:order-1:2-3");
  EXPECT_EQ(one.answer, "republished versions 2-3");
  EXPECT_EQ(one.answered_at_ms, 320);
  EXPECT_EQ(one.opened_at_ms, 10);
  EXPECT_EQ(one.closed_at_ms, 330);
  EXPECT_EQ(one.how, GapClosedHow::kDrained);
  EXPECT_EQ(one.cause, GapCause::kOutOfOrder);
  EXPECT_EQ(one.waiting_versions, (std::vector<int64_t>{4, 5, 6}));
  const GapRecord two = Take(snapshot->GapRecordsOf("c", "order-2")).rows.at(0);
  EXPECT_EQ(two.how, GapClosedHow::kCorrected);
  EXPECT_EQ(two.cause, GapCause::kMissing);
  EXPECT_EQ(two.closed_by, "ops");
  EXPECT_EQ(two.note, "set to v9 by hand");
  EXPECT_EQ(two.waiting_versions, (std::vector<int64_t>{4, 6}));  // kept: the closing named none
  EXPECT_TRUE(Take(snapshot->OpenGapRecords()).rows.empty());
}

// The latest intent of an effect for a consumer's subject is the one with the highest seq; an
// intent keeps the basis it was made on through its updates.
TEST_P(StoreConformance, TheLatestIntentOfAnEffectKeepsItsBasis) {
  Write([&](Transaction& tx) {
    EffectIntent first = Intent("reserve:order-1:a", 10);
    first.basis_version = 1;
    EXPECT_EQ(Take(tx.InsertIntent(first)), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertIntent(Intent("notify:order-1", 10, "notify"))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertIntent(Intent("reserve:order-2", 10, "reserve-stock", "order-2"))),
              Insert::kInserted);
  });
  auto tx = Begin();
  EffectIntent second = Intent("reserve:order-1:b", 10);
  second.basis_version = 4;
  EXPECT_EQ(Take(tx->InsertIntent(second)), Insert::kInserted);
  std::optional<EffectIntent> latest = Take(tx->LatestIntentOf("c", "order-1", "reserve-stock"));
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->key, "reserve:order-1:b");
  EXPECT_EQ(latest->basis_version, 4);
  EXPECT_FALSE(Take(tx->LatestIntentOf("d", "order-1", "reserve-stock")).has_value());
  EXPECT_FALSE(Take(tx->LatestIntentOf("c", "order-9", "reserve-stock")).has_value());
  EffectIntent changed = Take(tx->FindIntent("reserve:order-1:a")).value();
  EXPECT_EQ(changed.basis_version, 1);
  changed.state = EffectState::kWithdrawn;
  changed.next_attempt_at_ms = std::nullopt;
  changed.settled_at_ms = 12;
  changed.basis_version = 77;  // not an updated field
  EXPECT_OK(tx->UpdateIntent(changed, changed.revision));
  EXPECT_OK(tx->Commit());
  tx.reset();
  Reopen();
  auto snapshot = Read();
  const EffectIntent read = Take(snapshot->FindIntent("reserve:order-1:a")).value();
  EXPECT_EQ(read.state, EffectState::kWithdrawn);
  EXPECT_EQ(read.basis_version, 1);
  EXPECT_EQ(read.settled_at_ms, 12);
  EXPECT_FALSE(Take(snapshot->FindIntent("notify:order-1")).value().basis_version.has_value());
}

// A second trigger of an intended key by the same effect is a no-op its log records; by another
// effect, a configuration that would lose an effect.
TEST_P(StoreConformance, IntendOnceLogsASecondTriggerOfTheSameOperation) {
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.IntendOnce(Intent("reserve:order-1", 10), "first"));
    EffectIntent again = Intent("reserve:order-1", 20);
    again.intended_at_ms = 20;
    EXPECT_OK(tx.IntendOnce(again, "triggered again by s:e2 (version 2)"));
  });
  auto tx = Begin();
  // A networked store may send the insert without waiting: its refusal then comes from the
  // commit (store.h).
  Status refused = tx->IntendOnce(Intent("reserve:order-1", 10, "notify"), "x");
  if (refused.ok()) refused = tx->Commit();
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition) << refused.ToString();
  tx.reset();
  auto snapshot = Read();
  const EffectIntent intent = Take(snapshot->FindIntent("reserve:order-1")).value();
  EXPECT_EQ(intent.revision, 1);  // unchanged
  const Rows<EffectLogEntry> log = Take(snapshot->IntentLogOf("reserve:order-1"));
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.rows[0].action, EffectAction::kTrigger);
  EXPECT_EQ(log.rows[0].by, "c");
  EXPECT_EQ(log.rows[0].state_after, EffectState::kIntended);
  EXPECT_EQ(log.rows[0].detail, "triggered again by s:e2 (version 2)");
  EXPECT_EQ(log.rows[0].at_ms, 20);
}

// A trigger logs the intent's state as stored (not the new trigger's); the same effect's key held
// by another consumer is refused as another effect's is.
TEST_P(StoreConformance, IntendOnceLogsTheStoredStateAndRefusesAnotherConsumersKey) {
  Write([&](Transaction& tx) { EXPECT_OK(tx.IntendOnce(Intent("reserve:order-2", 10), "first")); });
  Write([&](Transaction& tx) {
    EffectIntent done = Take(tx.FindIntent("reserve:order-2")).value();
    const int64_t revision = done.revision;
    done.state = EffectState::kDone;
    done.next_attempt_at_ms = std::nullopt;
    done.settled_at_ms = 15;
    EXPECT_OK(tx.UpdateIntent(done, revision));
    EXPECT_OK(tx.IntendOnce(Intent("reserve:order-2", 30), "again"));
  });
  auto tx = Begin();
  EffectIntent other = Intent("reserve:order-2", 10);
  other.consumer = "d";
  Status refused = tx->IntendOnce(other, "x");
  if (refused.ok()) refused = tx->Commit();
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition) << refused.ToString();
  tx.reset();
  const Rows<EffectLogEntry> log = Take(Read()->IntentLogOf("reserve:order-2"));
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.rows[0].action, EffectAction::kTrigger);
  EXPECT_EQ(log.rows[0].state_after, EffectState::kDone);
  EXPECT_FALSE(log.rows[0].http_status.has_value());
  EXPECT_EQ(log.rows[0].detail, "again");
}

// The records of an intent come once each, in the order they were recorded, whichever column
// names it (one naming it in both comes once), whatever their consumer.
TEST_P(StoreConformance, CompensationsOfAnIntentComeOnceInRecordedOrder) {
  Write([&](Transaction& tx) {
    int n = 0;
    for (const char* consumer : {"c", "d", "c", "d"}) {
      CompensationRecord r = Compensation("k" + std::to_string(n), consumer);
      r.compensates = "reserve-stock";
      r.state = CompensationState::kWaitsForReconciliation;
      if (n % 2 == 0) {
        r.covers = "reserve:order-9";
        r.compensating_key = "release:order-" + std::to_string(n);
      } else {
        r.covers = "reserve:order-" + std::to_string(n);
        r.compensate_with = "release-stock";
        r.compensating_key = "reserve:order-9";
      }
      EXPECT_EQ(Take(tx.InsertCompensation(r)), Insert::kInserted);
      ++n;
    }
    CompensationRecord both = Compensation("k4", "c");
    both.compensates = "reserve-stock";
    both.covers = "reserve:order-9";
    both.compensating_key = "reserve:order-9";
    EXPECT_EQ(Take(tx.InsertCompensation(both)), Insert::kInserted);
  });
  auto tx = Begin();
  const std::vector<CompensationRecord> found = Take(tx->CompensationsOfIntent("reserve:order-9"));
  EXPECT_EQ(Pluck(found, &CompensationRecord::key),
            (std::vector<std::string>{"k0", "k1", "k2", "k3", "k4"}));
}

// An owner's record and a consumer's that acted on the effect it compensates keep every field;
// the records that cover an intent are found by its key and change what they did.
TEST_P(StoreConformance, CompensationsKeepWhatTheyDidAndAreFoundByTheIntentTheyCover) {
  CompensationRecord owner{.key = "compensation:order-1:reservation:v2",
                           .subject = "order-1",
                           .owner_source = "https://orders.test",
                           .owner_version = 2,
                           .recorded_at_ms = 30,
                           .recorded_by = CompensationBy::kOwner,
                           .decision = "reservation-rejected"};
  CompensationRecord consumer = Compensation("compensation:order-1:customer:v2");
  consumer.compensates = "reserve-stock";
  consumer.covers = "reserve:order-1";
  consumer.compensate_with = "release-stock";
  consumer.compensating_key = "release:order-1";
  consumer.compensating_request = std::string("{\"id\":\"e3\"}\0z", 13);
  consumer.basis_version = 3;
  consumer.state = CompensationState::kWaitsForReconciliation;
  consumer.detail = "the outcome of reserve:order-1 is unknown";
  consumer.updated_at_ms = 41;
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertCompensation(owner)), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertCompensation(consumer)), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertCompensation(consumer)), Insert::kAlreadyThere);
  });
  auto tx = Begin();
  // Found by the intent it compensates with, too.
  const std::vector<CompensationRecord> compensating =
      Take(tx->CompensationsOfIntent("release:order-1"));
  ASSERT_EQ(compensating.size(), 1u);
  EXPECT_EQ(compensating[0].key, consumer.key);
  std::vector<CompensationRecord> covering = Take(tx->CompensationsOfIntent("reserve:order-1"));
  ASSERT_EQ(covering.size(), 1u);
  EXPECT_EQ(covering[0].key, consumer.key);
  EXPECT_EQ(covering[0].compensating_request, consumer.compensating_request);
  EXPECT_TRUE(Take(tx->CompensationsOfIntent("")).empty());  // an owner's record covers none
  CompensationRecord settled = covering[0];
  settled.state = CompensationState::kCompensating;
  settled.detail = "reconciled as done: release-stock intended";
  settled.updated_at_ms = 50;
  EXPECT_OK(tx->UpdateCompensation(settled));
  CompensationRecord absent = settled;
  absent.key = "no-such";
  EXPECT_EQ(tx->UpdateCompensation(absent).code(), Code::kNotFound);
  EXPECT_OK(tx->Commit());
  tx.reset();
  Reopen();
  const Rows<CompensationRecord> all = Take(Read()->ListCompensations("", "order-1"));
  ASSERT_EQ(all.rows.size(), 2u);
  const CompensationRecord& o = all.rows[0];
  EXPECT_EQ(o.recorded_by, CompensationBy::kOwner);
  EXPECT_EQ(o.consumer, "");
  EXPECT_EQ(o.decision, "reservation-rejected");
  EXPECT_EQ(o.owner_version, 2);
  EXPECT_EQ(o.state, CompensationState::kRecorded);
  const CompensationRecord& c = all.rows[1];
  EXPECT_EQ(c.recorded_by, CompensationBy::kConsumer);
  EXPECT_EQ(c.compensates, "reserve-stock");
  EXPECT_EQ(c.covers, "reserve:order-1");
  EXPECT_EQ(c.compensate_with, "release-stock");
  EXPECT_EQ(c.compensating_key, "release:order-1");
  EXPECT_EQ(c.compensating_request, consumer.compensating_request);
  EXPECT_EQ(c.basis_version, 3);
  EXPECT_EQ(c.state, CompensationState::kCompensating);
  EXPECT_EQ(c.detail, "reconciled as done: release-stock intended");
  EXPECT_EQ(c.updated_at_ms, 50);
}

// A person's corrections of a projection, by seq; and the digest of the payload that set a
// projection's version reads back.
TEST_P(StoreConformance, CorrectionsAndAppliedDigestsReadBack) {
  Write([&](Transaction& tx) {
    Projection p = MakeProjection("c", "order-1", 2, "paid");
    p.applied_digest = "sha256:ab12";
    PutNew(tx, p);
    for (int64_t i = 1; i <= 2; ++i) {
      EXPECT_OK(tx.InsertCorrection({.consumer = "c",
                                     .subject = "order-1",
                                     .before_json = R"({"version":2})",
                                     .after_json = Numbered(R"({"version":)", 2 + i) + "}",
                                     .by = "ops",
                                     .note = Numbered("fix ", i),
                                     .basis = "open gap v3-v3",
                                     .forced = i == 2,
                                     .at_ms = 100 + i}));
    }
  });
  {
    // The locked read answers as the plain one (a shared store also holds the row).
    auto tx = Begin();
    Projection locked;
    ASSERT_TRUE(Take(tx->ReadProjectionLocked("c", "order-1", locked)));
    EXPECT_EQ(locked.version, 2);
    EXPECT_EQ(locked.applied_digest, "sha256:ab12");
    EXPECT_FALSE(Take(tx->ReadProjectionLocked("c", "order-9", locked)));
    EXPECT_EQ(locked.version, 0);
    EXPECT_EQ(locked.subject, "order-9");
    EXPECT_OK(tx->Rollback());
  }
  Reopen();
  auto snapshot = Read();
  EXPECT_EQ(Take(snapshot->FindProjection("c", "order-1")).value().applied_digest, "sha256:ab12");
  EXPECT_EQ(Take(snapshot->ProjectionsOf("order-1")).rows.at(0).applied_digest, "sha256:ab12");
  const Rows<ProjectionCorrection> corrections = Take(snapshot->CorrectionsOf("c", "order-1"));
  ASSERT_EQ(corrections.rows.size(), 2u);
  EXPECT_LT(corrections.rows[0].seq, corrections.rows[1].seq);
  EXPECT_EQ(corrections.rows[0].note, "fix 1");
  EXPECT_EQ(corrections.rows[1].after_json, R"({"version":4})");
  EXPECT_EQ(corrections.rows[1].basis, "open gap v3-v3");
  EXPECT_FALSE(corrections.rows[0].forced);
  EXPECT_TRUE(corrections.rows[1].forced);
  EXPECT_EQ(corrections.rows[1].at_ms, 102);
  EXPECT_TRUE(Take(snapshot->CorrectionsOf("c", "order-2")).rows.empty());
  EXPECT_TRUE(Take(snapshot->CorrectionsOf("d", "order-1")).rows.empty());
  EXPECT_TRUE(Take(snapshot->CorrectionsOf("c", "order-1", 1)).truncated);
}

// An owner finds its kept outbox rows by id, and a subject's by version from the first missing
// one on (replay-requests serve), sent or not.
TEST_P(StoreConformance, OutboxRowsAreFoundByIdAndBySubjectVersion) {
  Write([&](Transaction& tx) {
    for (int64_t v : {3, 1, 2}) {
      OutboxRow row = OutboxEvent(Numbered("e", v), Numbered("bytes ", v));
      row.subject_version = v;
      (void)Take(tx.AppendOutbox(row));
    }
    OutboxRow unversioned = OutboxEvent("u", "u");
    unversioned.subject_version = std::nullopt;
    (void)Take(tx.AppendOutbox(unversioned));
    OutboxRow elsewhere = OutboxEvent("o2", "o");
    elsewhere.source = "other";
    elsewhere.subject_version = 2;
    (void)Take(tx.AppendOutbox(elsewhere));
  });
  auto tx = Begin();
  const OutboxRow e2 = Take(tx->PendingOutbox(0, 100)).rows.at(2);  // by seq: e3, e1, e2
  EXPECT_EQ(e2.event_id, "e2");
  EXPECT_OK(tx->MarkOutboxSent(e2.seq, "ORDERS", 7, 6));
  EXPECT_OK(tx->Commit());
  tx.reset();
  auto snapshot = Read();
  const std::optional<OutboxRow> found = Take(snapshot->FindOutbox("s", "e2"));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->bytes, "bytes 2");
  EXPECT_EQ(found->sent_at_ms, 6);
  EXPECT_EQ(found->stream_sequence, 7);
  EXPECT_FALSE(Take(snapshot->FindOutbox("s", "e9")).has_value());
  EXPECT_FALSE(Take(snapshot->FindOutbox("other", "e2")).has_value());
  const Rows<OutboxRow> from2 = Take(snapshot->OutboxOfSubject("s", "order-1", 2));
  EXPECT_EQ(Pluck(from2.rows, &OutboxRow::event_id), (std::vector<std::string>{"e2", "e3"}));
  EXPECT_FALSE(from2.truncated);
  const Rows<OutboxRow> cut = Take(snapshot->OutboxOfSubject("s", "order-1", 1, 2));
  EXPECT_EQ(Pluck(cut.rows, &OutboxRow::event_id), (std::vector<std::string>{"e1", "e2"}));
  EXPECT_TRUE(cut.truncated);
  EXPECT_TRUE(Take(snapshot->OutboxOfSubject("s", "order-2", 1)).rows.empty());
}

// Retention (store_retention.h). The horizon is 25 throughout: what settled before it goes,
// what settled at or after it, and whatever is open, stays.
constexpr int64_t kHorizon = 25;

// Every retainable record of `kind`, looked at `rows_max` at a time, as "journal:<seq>",
// "quarantine:<id>", "gap:<subject>", "effect-log:<seq>", "intent:<key>" or "outbox:<seq>".
int RetainedKindIndex(RetainedKind kind) { return static_cast<int>(kind); }

std::vector<std::string> RetainableNames(Snapshot& snapshot, RetainedKind kind, int64_t rows_max,
                                         int* looks = nullptr) {
  std::vector<std::string> out;
  int64_t after = std::numeric_limits<int64_t>::min();
  for (int look = 0; look < 100; ++look) {
    const RetainedRows rows = Take(snapshot.Retainable(kind, kHorizon, after, rows_max));
    EXPECT_EQ(rows.kind, kind);
    EXPECT_LE(static_cast<int64_t>(rows.size()), rows_max);
    for (const JournalEntry& j : rows.journal) out.push_back(Numbered("journal:", j.seq));
    for (const QuarantineRecord& r : rows.quarantine) out.push_back(Numbered("quarantine:", r.id));
    for (const GapRecord& g : rows.gaps) out.push_back("gap:" + g.subject);
    for (const EffectLogEntry& e : rows.effect_log) out.push_back(Numbered("effect-log:", e.seq));
    for (const EffectIntent& e : rows.intents) out.push_back("intent:" + e.key);
    for (const OutboxRow& o : rows.outbox) out.push_back(Numbered("outbox:", o.seq));
    if (looks != nullptr) *looks = look + 1;
    if (rows.end) return out;
    // Gaps and outbox rows are all retainable: a look that is not the last is full.
    if (kind == RetainedKind::kGap || kind == RetainedKind::kOutbox) {
      EXPECT_EQ(static_cast<int64_t>(rows.size()), rows_max);
      return out;  // not removed here: the next look would find them again
    }
    after = rows.next;
  }
  ADD_FAILURE() << "the looks never ended";
  return out;
}

struct RetentionScene {
  std::vector<int64_t> journal;     // at 10, 20, 30
  std::vector<int64_t> quarantine;  // discarded at 15, discarded at 40, open
  std::vector<int64_t> outbox;      // sent at 10, sent at 40, pending, parked
  std::vector<int64_t> logs;        // of intents done at 15 (two), unknown, done at 30
};

GapRecord ClosedGap(std::string subject, std::optional<int64_t> closed_at_ms) {
  GapRecord g{.consumer = "c",
              .subject = std::move(subject),
              .expected_version = 2,
              .missing_to = 2,
              .route = GapRoute::kWait,
              .state = closed_at_ms ? GapState::kClosed : GapState::kOpen,
              .deadline_at_ms = 5};
  g.closed_at_ms = closed_at_ms;
  if (closed_at_ms) g.how = GapClosedHow::kDrained;
  return g;
}

TEST_P(StoreConformance, RetentionFindsAndRemovesOnlyWhatSettledBeforeTheHorizon) {
  RetentionScene scene;
  Write([&](Transaction& tx) {
    for (const int64_t at : {10, 20, 30}) EXPECT_OK(tx.Journal(Journaled("c", "order-1", at)));
    for (const char* m : {"old", "recent", "open"}) {
      scene.quarantine.push_back(Take(tx.Quarantine(Kept("order-1", m))).id);
    }
    for (int i = 0; i < 2; ++i) {
      EXPECT_OK(tx.SetQuarantineStatus(scene.quarantine[i], QuarantineStatus::kDiscarded));
      EXPECT_OK(tx.AuditQuarantine(QuarantineAudit{.record_id = scene.quarantine[i],
                                                   .action = QuarantineAction::kDiscard,
                                                   .by = "ops",
                                                   .outcome = "discarded",
                                                   .status_after = QuarantineStatus::kDiscarded,
                                                   .at_ms = i == 0 ? 15 : 40}));
    }
    EXPECT_OK(tx.RecordGap(ClosedGap("order-1", 12)));
    EXPECT_OK(tx.RecordGap(ClosedGap("order-2", 50)));
    EXPECT_OK(tx.RecordGap(ClosedGap("order-3", std::nullopt)));
    for (int i = 0; i < 4; ++i) {
      scene.outbox.push_back(Take(tx.AppendOutbox(OutboxEvent(Numbered("e", i), "{}"))).seq);
    }
    EXPECT_OK(tx.MarkOutboxSent(scene.outbox[0], "S", 1, 10));
    EXPECT_OK(tx.MarkOutboxSent(scene.outbox[1], "S", 2, 40));
    EXPECT_OK(tx.ParkOutbox(scene.outbox[3], "too large", 12));
  });
  // Intents: done at 15 (two log entries), unknown, done at 30.
  const std::pair<const char*, std::optional<int64_t>> intents[] = {
      {"k-done-old", 15}, {"k-unknown", std::nullopt}, {"k-done-recent", 30}};
  Write([&](Transaction& tx) {
    for (const auto& [key, settled] : intents) {
      EXPECT_EQ(Take(tx.InsertIntent(Intent(key, std::nullopt))), Insert::kInserted);
      for (int n = std::string_view(key) == "k-done-old" ? 2 : 1; n > 0; --n) {
        EXPECT_OK(tx.LogIntent(EffectLogEntry{.key = key,
                                              .action = EffectAction::kAttempt,
                                              .by = "runner",
                                              .state_after = EffectState::kUnknown,
                                              .at_ms = 11}));
      }
      EffectIntent e = Take(tx.FindIntent(key)).value();
      e.state = settled ? EffectState::kDone : EffectState::kUnknown;
      e.settled_at_ms = settled;
      EXPECT_OK(tx.UpdateIntent(e, 1));
    }
  });
  std::vector<int64_t> old_logs;
  {
    auto snapshot = Read();
    for (const EffectLogEntry& e : Take(snapshot->IntentLogOf("k-done-old")).rows) {
      old_logs.push_back(e.seq);
    }
  }
  ASSERT_EQ(old_logs.size(), 2u);
  auto snapshot = Read();
  const std::vector<int64_t> journal = [&] {
    std::vector<int64_t> seqs;
    for (const JournalEntry& j : Take(snapshot->JournalOf("c", "order-1")).rows) {
      seqs.push_back(j.seq);
    }
    return seqs;
  }();
  ASSERT_EQ(journal.size(), 3u);
  const std::vector<std::string> want_journal = {Numbered("journal:", journal[0]),
                                                 Numbered("journal:", journal[1])};
  for (const int64_t rows_max : {1, 2, 100}) {
    SCOPED_TRACE(rows_max);
    EXPECT_EQ(RetainableNames(*snapshot, RetainedKind::kJournal, rows_max), want_journal);
    EXPECT_EQ(RetainableNames(*snapshot, RetainedKind::kQuarantine, rows_max),
              std::vector<std::string>{Numbered("quarantine:", scene.quarantine[0])});
    EXPECT_EQ(RetainableNames(*snapshot, RetainedKind::kEffectLog, rows_max),
              (std::vector<std::string>{Numbered("effect-log:", old_logs[0]),
                                        Numbered("effect-log:", old_logs[1])}));
  }
  EXPECT_EQ(RetainableNames(*snapshot, RetainedKind::kGap, 100),
            std::vector<std::string>{"gap:order-1"});
  EXPECT_EQ(RetainableNames(*snapshot, RetainedKind::kOutbox, 100),
            std::vector<std::string>{Numbered("outbox:", scene.outbox[0])});
  const std::pair<RetainedKind, int64_t> counts[] = {{RetainedKind::kJournal, 2},
                                                     {RetainedKind::kQuarantine, 1},
                                                     {RetainedKind::kGap, 1},
                                                     {RetainedKind::kEffectLog, 2},
                                                     {RetainedKind::kOutbox, 1}};
  for (const auto& [kind, count] : counts) {
    EXPECT_EQ(Take(snapshot->CountRetainable(kind, kHorizon)), count);
  }
  // The quarantine record comes with its audit entries.
  const RetainedRows kept = Take(snapshot->Retainable(RetainedKind::kQuarantine, kHorizon,
                                                      std::numeric_limits<int64_t>::min(), 100));
  ASSERT_EQ(kept.quarantine.size(), 1u);
  EXPECT_EQ(kept.quarantine[0].raw, std::string("k\0ept", 5));
  ASSERT_EQ(kept.audit.size(), 1u);
  EXPECT_EQ(kept.audit[0].record_id, scene.quarantine[0]);
  snapshot.reset();

  // Removed, kind by kind, from what was read; a second removal of the same finds nothing.
  for (const auto& [kind, count] : counts) {
    const RetainedRows rows =
        Take(Read()->Retainable(kind, kHorizon, std::numeric_limits<int64_t>::min(), 100));
    Write([&, kind = kind, count = count](Transaction& tx) {
      EXPECT_EQ(Take(tx.RemoveRetained(rows, kHorizon)), count) << RetainedKindIndex(kind);
      EXPECT_EQ(Take(tx.RemoveRetained(rows, kHorizon)), 0);
    });
  }
  Write([&](Transaction& tx) {
    EXPECT_OK(tx.RecordRetention(RetentionRun{
        .seq = 99, .at_ms = 60, .horizon_ms = kHorizon, .archive = "a", .removed = 7}));
  });
  snapshot = Read();
  for (const auto& [kind, count] : counts) {
    EXPECT_EQ(Take(snapshot->CountRetainable(kind, kHorizon)), 0);
  }
  const Rows<JournalEntry> left = Take(snapshot->JournalOf("c", "order-1"));
  ASSERT_EQ(left.rows.size(), 1u);
  EXPECT_EQ(left.rows[0].seq, journal[2]);
  EXPECT_FALSE(Take(snapshot->FindQuarantine(scene.quarantine[0])).has_value());
  EXPECT_TRUE(Take(snapshot->AuditOf(scene.quarantine[0])).rows.empty());
  EXPECT_TRUE(Take(snapshot->FindQuarantine(scene.quarantine[1])).has_value());
  EXPECT_EQ(Take(snapshot->AuditOf(scene.quarantine[1])).rows.size(), 1u);
  EXPECT_TRUE(Take(snapshot->FindQuarantine(scene.quarantine[2])).has_value());
  EXPECT_TRUE(Take(snapshot->GapRecordsOf("c", "order-1")).rows.empty());
  EXPECT_EQ(Take(snapshot->GapRecordsOf("c", "order-2")).rows.size(), 1u);
  EXPECT_EQ(Take(snapshot->GapRecordsOf("c", "order-3")).rows.size(), 1u);
  EXPECT_TRUE(Take(snapshot->IntentLogOf("k-done-old")).rows.empty());
  EXPECT_TRUE(Take(snapshot->FindIntent("k-done-old")).has_value());  // the key stays
  EXPECT_EQ(Take(snapshot->IntentLogOf("k-unknown")).rows.size(), 1u);
  EXPECT_EQ(Take(snapshot->IntentLogOf("k-done-recent")).rows.size(), 1u);
  EXPECT_EQ(SeqsOf(Take(snapshot->OutboxRows(OutboxSelect::kAll, 0))),
            (std::vector<int64_t>{scene.outbox[1], scene.outbox[2], scene.outbox[3]}));
  const std::optional<RetentionRun> run = Take(snapshot->LatestRetention());
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->at_ms, 60);
  EXPECT_EQ(run->horizon_ms, kHorizon);
  EXPECT_EQ(run->archive, "a");
  EXPECT_EQ(run->removed, 7);
}

// A record that changed between the look and the removal (delivered again, audited, its
// intent resolved anew) stays; a gap a person closed while events still wait stays; and the
// newest journal entry, quarantine record and log entry always stay, so that no seq or id is
// ever given twice.
TEST_P(StoreConformance, RetentionKeepsWhatChangedSinceItsLookAndTheNewestOfEachSequence) {
  int64_t id = 0;
  Write([&](Transaction& tx) {
    for (const int64_t at : {10, 11, 12}) EXPECT_OK(tx.Journal(Journaled("c", "order-1", at)));
    id = Take(tx.Quarantine(Kept("order-1", "a"))).id;
    EXPECT_OK(tx.SetQuarantineStatus(id, QuarantineStatus::kReplayed));
    (void)Take(tx.Quarantine(Kept("order-1", "b")));
    EXPECT_OK(tx.SetQuarantineStatus(id + 1, QuarantineStatus::kReplayed));
    // A gap a person closed while its subject's events still wait.
    EXPECT_EQ(Take(tx.InsertDeferred(Deferred("c", "order-9", 3))), Insert::kInserted);
    EXPECT_OK(tx.RecordGap(ClosedGap("order-9", 12)));
  });
  {
    auto snapshot = Read();
    EXPECT_EQ(Take(snapshot->CountRetainable(RetainedKind::kGap, kHorizon)), 0);
    EXPECT_TRUE(Take(snapshot->Retainable(RetainedKind::kGap, kHorizon, 0, 10)).gaps.empty());
  }
  Write([&](Transaction& tx) {
    RetainedRows gap{.kind = RetainedKind::kGap};
    gap.gaps.push_back(ClosedGap("order-9", 12));
    EXPECT_EQ(Take(tx.RemoveRetained(gap, kHorizon)), 0);
  });
  {
    auto snapshot = Read();
    EXPECT_EQ(Take(snapshot->CountRetainable(RetainedKind::kJournal, kHorizon)), 2);     // of 3
    EXPECT_EQ(Take(snapshot->CountRetainable(RetainedKind::kQuarantine, kHorizon)), 1);  // of 2
  }
  const RetainedRows rows = Take(Read()->Retainable(RetainedKind::kQuarantine, kHorizon,
                                                    std::numeric_limits<int64_t>::min(), 10));
  ASSERT_EQ(rows.quarantine.size(), 1u);
  EXPECT_EQ(rows.quarantine[0].id, id);
  Write([&](Transaction& tx) {
    QuarantineRecord again = Kept("order-1", "a");
    again.last_seen_ms = 30;  // delivered again after the horizon
    EXPECT_FALSE(Take(tx.Quarantine(again)).added);
  });
  Write([&](Transaction& tx) { EXPECT_EQ(Take(tx.RemoveRetained(rows, kHorizon)), 0); });
  EXPECT_TRUE(Take(Read()->FindQuarantine(id)).has_value());
}

// Every receipt retainable before the horizon, looked at `rows_max` at a time, by event id.
std::vector<std::string> RetainableReceipts(Snapshot& snapshot, int64_t rows_max) {
  std::vector<std::string> out;
  LedgerKey after;
  for (int look = 0; look < 100; ++look) {
    const RetainedRows rows = Take(snapshot.RetainableLedger(kHorizon, after, rows_max));
    EXPECT_EQ(rows.kind, RetainedKind::kLedger);
    EXPECT_LE(static_cast<int64_t>(rows.size()), rows_max);
    for (const LedgerEntry& e : rows.ledger) out.push_back(e.event_id);
    if (rows.end) return out;
    EXPECT_FALSE(rows.next_key.consumer.empty());
    after = rows.next_key;
  }
  ADD_FAILURE() << "the looks never ended";
  return out;
}

// Receipts (kLedger): an applied receipt committed before the horizon goes and its key stays as
// a digest, so that InsertLedger still answers kAlreadyThere and FindLedger a `retained` entry,
// in a transaction and a snapshot and after a reopen; a deferred receipt, one committed at or
// after the horizon, and one whose consumer and subject have an unsettled intent stay. Only
// ForgetLedgerDigests drops digests, and then the key is new again.
TEST_P(StoreConformance, RetentionKeepsReceiptsAsDigestsUntilForgotten) {
  const auto receipt = [](std::string id, int64_t at, std::string subject = "order-1",
                          LedgerState state = LedgerState::kApplied) {
    LedgerEntry e = Receipt(std::move(id), state);
    e.committed_at_ms = at;
    e.subject = std::move(subject);
    e.wrote_json = R"({"state":"placed"})";
    return e;
  };
  Write([&](Transaction& tx) {
    for (const LedgerEntry& e :
         {receipt("e1", 10), receipt("e2", 10, "order-1", LedgerState::kDeferred),
          receipt("e3", 30), receipt("e4", 10, "order-2"), receipt("e5", 12),
          receipt("e6", 1500, "order-3")}) {
      EXPECT_EQ(Take(tx.InsertLedger(e)), Insert::kInserted);
    }
    // order-1's intent is done (no bar); order-2's is unknown (its receipts stay).
    EXPECT_EQ(Take(tx.InsertIntent(Intent("k-done", std::nullopt))), Insert::kInserted);
    EXPECT_EQ(Take(tx.InsertIntent(Intent("k-open", 5, "reserve-stock", "order-2"))),
              Insert::kInserted);
    EffectIntent done = Take(tx.FindIntent("k-done")).value();
    done.state = EffectState::kDone;
    done.settled_at_ms = 11;
    EXPECT_OK(tx.UpdateIntent(done, 1));
  });
  for (const int64_t rows_max : {1, 2, 100}) {
    SCOPED_TRACE(rows_max);
    EXPECT_EQ(RetainableReceipts(*Read(), rows_max), (std::vector<std::string>{"e1", "e5"}));
  }
  EXPECT_EQ(Take(Read()->CountRetainable(RetainedKind::kLedger, kHorizon)), 2);
  const RetainedRows rows = Take(Read()->Retainable(RetainedKind::kLedger, kHorizon, 0, 100));
  ASSERT_EQ(rows.ledger.size(), 2u);
  EXPECT_EQ(rows.ledger[0].wrote_json, R"({"state":"placed"})");  // read whole, for the archive
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.RemoveRetained(rows, kHorizon)), 2);
    EXPECT_EQ(Take(tx.RemoveRetained(rows, kHorizon)), 0);
    // Within the removing transaction, the key is already a digest.
    EXPECT_EQ(Take(tx.InsertLedger(receipt("e1", 40))), Insert::kAlreadyThere);
  });
  const auto check_retained = [&](const char* when) {
    SCOPED_TRACE(when);
    auto snapshot = Read();
    const std::optional<LedgerEntry> found = Take(snapshot->FindLedger("c", "s", "e1"));
    ASSERT_TRUE(found.has_value());
    EXPECT_TRUE(found->retained);
    EXPECT_EQ(found->event_id, "e1");
    EXPECT_EQ(found->state, LedgerState::kApplied);
    EXPECT_FALSE(Take(snapshot->FindLedger("c", "s", "e1-never")).has_value());
    EXPECT_FALSE(Take(snapshot->FindLedger("d", "s", "e1")).has_value());  // another consumer
    EXPECT_FALSE(Take(snapshot->FindLedger("c", "s", "e3"))->retained);    // a receipt still
    EXPECT_EQ(Pluck(Take(snapshot->LedgerOf("c", "order-1")).rows, &LedgerEntry::event_id),
              (std::vector<std::string>{"e2", "e3"}));
    EXPECT_EQ(Take(snapshot->CountRetainable(RetainedKind::kLedger, kHorizon)), 0);
    EXPECT_EQ(Take(snapshot->CountLedgerDigests(3000)), 2);  // committed in second 0
    EXPECT_EQ(Take(snapshot->CountLedgerDigests(999)), 0);
    snapshot.reset();
    auto tx = Begin();
    EXPECT_EQ(Take(tx->InsertLedger(receipt("e5", 40))), Insert::kAlreadyThere);
    EXPECT_TRUE(Take(tx->FindLedger("c", "s", "e5"))->retained);
    BatchKeys keys;
    keys.ledger = {{"c", "s", "e1"}, {"c", "s", "e7"}};
    (void)Take(tx->Load(keys));  // a loaded key is answered from what the load read
    EXPECT_EQ(Take(tx->InsertLedger(receipt("e1", 40))), Insert::kAlreadyThere);
    EXPECT_TRUE(Take(tx->FindLedger("c", "s", "e1"))->retained);
    EXPECT_FALSE(Take(tx->FindLedger("c", "s", "e7")).has_value());
    EXPECT_OK(tx->Rollback());
  };
  check_retained("committed");
  Reopen();
  check_retained("reopened");

  // Forgetting: only digests of receipts committed before the horizon's second, a bounded look
  // at a time; then the key is decided afresh.
  Write([&](Transaction& tx) {
    const ForgottenDigests none = Take(tx.ForgetLedgerDigests(999, "", 100));
    EXPECT_EQ(none.forgotten, 0);
    EXPECT_TRUE(none.end);
  });
  int64_t forgotten = 0;
  std::string after;
  for (int call = 0; call < 10; ++call) {
    bool end = false;
    Write([&](Transaction& tx) {
      const ForgottenDigests done = Take(tx.ForgetLedgerDigests(3000, after, 1));
      EXPECT_LE(done.forgotten, 1);
      forgotten += done.forgotten;
      end = done.end || done.next.empty();
      after = done.next;
    });
    if (end) break;
  }
  EXPECT_EQ(forgotten, 2);
  EXPECT_EQ(Take(Read()->CountLedgerDigests(3000)), 0);
  EXPECT_FALSE(Take(Read()->FindLedger("c", "s", "e1")).has_value());
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.InsertLedger(receipt("e1", 40))), Insert::kInserted);
  });
}

// Intents (kIntent): a settled intent goes once its log went, when a later intent of its
// consumer, subject and effect follows it and no compensation names it; its key stays as a
// digest, so that InsertIntent answers kAlreadyThere, IntendOnce a no-op (another effect:
// refused) and FindIntent a `retained` intent with its effect, consumer, state and second.
TEST_P(StoreConformance, RetentionKeepsIntentKeysAsDigestsAndTheLatestIntentWhole) {
  struct Scene {
    const char* key;
    const char* effect;
    const char* subject;
    EffectState state;
    std::optional<int64_t> settled_at_ms;
  };
  const Scene scene[] = {
      {"k1", "reserve-stock", "order-1", EffectState::kDone, 10},       // goes
      {"k2", "reserve-stock", "order-1", EffectState::kDone, 12},       // its log stays first
      {"k3", "reserve-stock", "order-1", EffectState::kFailed, 30},     // after the horizon
      {"k4", "reserve-stock", "order-1", EffectState::kWithdrawn, 11},  // a compensation covers
      {"k8", "reserve-stock", "order-1", EffectState::kDone, 10},       // compensating key
      {"k5", "release-stock", "order-1", EffectState::kDone, 10},       // its effect's latest
      {"k6", "reserve-stock", "order-2", EffectState::kDone, 10},       // its subject's latest
      {"k7", "reserve-stock", "order-1", EffectState::kUnknown, std::nullopt},  // the latest
  };
  Write([&](Transaction& tx) {
    for (const Scene& i : scene) {
      EXPECT_EQ(Take(tx.InsertIntent(Intent(i.key, std::nullopt, i.effect, i.subject))),
                Insert::kInserted);
      EffectIntent e = Take(tx.FindIntent(i.key)).value();
      e.state = i.state;
      e.settled_at_ms = i.settled_at_ms;
      EXPECT_OK(tx.UpdateIntent(e, 1));
    }
    for (const char* key : {"k2", "k7"}) {  // k2's entry is not the newest: it can go
      EXPECT_OK(tx.LogIntent(EffectLogEntry{.key = key,
                                            .action = EffectAction::kAttempt,
                                            .by = "runner",
                                            .state_after = EffectState::kUnknown,
                                            .at_ms = 11}));
    }
    CompensationRecord covers = Compensation("compensation:order-1:a");
    covers.covers = "k4";
    EXPECT_OK(tx.RecordCompensation(covers));
    CompensationRecord compensating = Compensation("compensation:order-1:b");
    compensating.compensating_key = "k8";
    EXPECT_OK(tx.RecordCompensation(compensating));
  });
  for (const int64_t rows_max : {1, 2, 100}) {
    SCOPED_TRACE(rows_max);
    EXPECT_EQ(RetainableNames(*Read(), RetainedKind::kIntent, rows_max),
              std::vector<std::string>{"intent:k1"});
  }
  EXPECT_EQ(Take(Read()->CountRetainable(RetainedKind::kIntent, kHorizon)), 1);
  // Its log gone, k2 goes too.
  const RetainedRows logs = Take(Read()->Retainable(RetainedKind::kEffectLog, kHorizon, 0, 100));
  Write([&](Transaction& tx) { EXPECT_EQ(Take(tx.RemoveRetained(logs, kHorizon)), 1); });
  EXPECT_EQ(RetainableNames(*Read(), RetainedKind::kIntent, 100),
            (std::vector<std::string>{"intent:k1", "intent:k2"}));
  const RetainedRows rows = Take(Read()->Retainable(RetainedKind::kIntent, kHorizon, 0, 100));
  ASSERT_EQ(rows.intents.size(), 2u);
  EXPECT_EQ(rows.intents[0].request, Intent("k1", std::nullopt).request);  // whole, to archive
  Write([&](Transaction& tx) {
    EXPECT_EQ(Take(tx.RemoveRetained(rows, kHorizon)), 2);
    EXPECT_EQ(Take(tx.RemoveRetained(rows, kHorizon)), 0);
    // Within the removing transaction, the key is already a digest.
    EXPECT_EQ(Take(tx.InsertIntent(Intent("k1", 40))), Insert::kAlreadyThere);
    EXPECT_TRUE(Take(tx.FindIntent("k1"))->retained);
  });
  const auto check_retained = [&](const char* when) {
    SCOPED_TRACE(when);
    auto snapshot = Read();
    const std::optional<EffectIntent> found = Take(snapshot->FindIntent("k1"));
    ASSERT_TRUE(found.has_value());
    EXPECT_TRUE(found->retained);
    EXPECT_EQ(found->key, "k1");
    EXPECT_EQ(found->effect, "reserve-stock");
    EXPECT_EQ(found->consumer, "c");
    EXPECT_EQ(found->state, EffectState::kDone);
    EXPECT_EQ(found->settled_at_ms, 0);  // the second it settled in
    EXPECT_TRUE(Take(snapshot->FindIntent("k2"))->retained);
    EXPECT_FALSE(Take(snapshot->FindIntent("k-never")).has_value());
    for (const char* key : {"k3", "k4", "k5", "k6", "k7", "k8"}) {
      const std::optional<EffectIntent> kept = Take(snapshot->FindIntent(key));
      ASSERT_TRUE(kept.has_value()) << key;
      EXPECT_FALSE(kept->retained) << key;
      EXPECT_EQ(kept->request, Intent(key, std::nullopt).request) << key;
    }
    EffectFilter order1;
    order1.subject = "order-1";
    EXPECT_EQ(Pluck(Take(snapshot->ListIntents(order1)).rows, &EffectIntent::key),
              (std::vector<std::string>{"k3", "k4", "k8", "k5", "k7"}));
    EXPECT_EQ(Take(snapshot->CountRetainable(RetainedKind::kIntent, kHorizon)), 0);
    snapshot.reset();
    Write([&](Transaction& tx) {
      EXPECT_EQ(Take(tx.LatestIntentOf("c", "order-1", "reserve-stock"))->key, "k7");
      EXPECT_EQ(Take(tx.InsertIntent(Intent("k2", 40))), Insert::kAlreadyThere);
      EXPECT_TRUE(Take(tx.FindIntent("k2"))->retained);
      EXPECT_OK(tx.IntendOnce(Intent("k1", 40), "triggered again"));  // a no-op
    });
    EXPECT_TRUE(Take(Read()->FindIntent("k1"))->retained);
    EXPECT_TRUE(Take(Read()->IntentLogOf("k1")).rows.empty());
    auto tx = Begin();
    Status refused = tx->IntendOnce(Intent("k1", 40, "notify"), "x");
    if (refused.ok()) refused = tx->Commit();
    EXPECT_EQ(refused.code(), Code::kFailedPrecondition) << refused.ToString();
  };
  check_retained("committed");
  Reopen();
  check_retained("reopened");
}

// Contract sets (store_contracts.h): numbered in push order, kept whole, read in the pushing
// transaction and after a reopen; a rolled-back push leaves no number used.
TEST_P(StoreConformance, ContractSetsAreNumberedKeptWholeAndListedNewestFirst) {
  EXPECT_EQ(Take(Read()->LatestContractsVersion()), 0);
  EXPECT_FALSE(Take(Read()->ContractsAt(0)).has_value());
  EXPECT_TRUE(Take(Read()->ContractsHistory(10)).empty());
  const std::string files = R"({"t/v1.schema.json":"{\"type\":\"object\"}"})";
  {
    auto tx = Begin();
    // Only the next number is taken: a pusher that checked against another set is refused.
    EXPECT_EQ(tx->PushContracts(StoredContracts{.version = 2, .settings = "{}", .files = "{}"})
                  .status()
                  .code(),
              Code::kAborted);
    EXPECT_EQ(
        Take(tx->PushContracts(StoredContracts{
            .version = 1, .pushed_at_ms = 10, .digest = "d1", .settings = "{}", .files = files})),
        1);
    EXPECT_EQ(tx->PushContracts(StoredContracts{.version = 1, .settings = "{}", .files = "{}"})
                  .status()
                  .code(),
              Code::kAborted);
    EXPECT_EQ(Take(tx->LatestContractsVersion()), 1);  // seen by its own transaction
    EXPECT_OK(tx->Rollback());
  }
  EXPECT_EQ(Take(Read()->LatestContractsVersion()), 0);
  for (int64_t i = 1; i <= 3; ++i) {
    Write([&](Transaction& tx) {
      EXPECT_EQ(Take(tx.PushContracts(StoredContracts{.version = i,
                                                      .pushed_at_ms = 10 * i,
                                                      .digest = "d" + std::to_string(i),
                                                      .settings = R"({"partitions":2})",
                                                      .files = files})),
                i);
      const std::optional<StoredContracts> latest = Take(tx.ContractsAt(0));
      ASSERT_TRUE(latest.has_value());
      EXPECT_EQ(latest->version, i);
    });
  }
  Reopen();
  auto snapshot = Read();
  EXPECT_EQ(Take(snapshot->LatestContractsVersion()), 3);
  const std::optional<StoredContracts> second = Take(snapshot->ContractsAt(2));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->version, 2);
  EXPECT_EQ(second->pushed_at_ms, 20);
  EXPECT_EQ(second->digest, "d2");
  EXPECT_EQ(second->settings, R"({"partitions":2})");
  EXPECT_EQ(second->files, files);
  EXPECT_EQ(Take(snapshot->ContractsAt(0))->digest, "d3");
  EXPECT_FALSE(Take(snapshot->ContractsAt(4)).has_value());
  const std::vector<StoredContracts> history = Take(snapshot->ContractsHistory(2));
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].version, 3);
  EXPECT_EQ(history[1].version, 2);
  EXPECT_TRUE(history[0].files.empty());
  EXPECT_EQ(history[1].digest, "d2");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreConformance, ::testing::ValuesIn(StoreBackends()),
                         [](const ::testing::TestParamInfo<StoreBackend>& param_info) {
                           return param_info.param.name;
                         });

}  // namespace
}  // namespace evident
