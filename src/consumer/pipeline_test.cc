// The consumer pipeline against a real SQLite store, scenario by scenario.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "evident/baseline.h"
#include "evident/consumer.h"
#include "evident/effects.h"
#include "evident/store_memory.h"
#include "evident/store_sqlite.h"
#include "testing/schema_bomb.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kNow = 1'785'000'000'000;

std::string OrderEvent(std::string_view id, std::string_view type, int order_version,
                       std::string_view extra_data = "", int schema_version = 1) {
  return std::string(R"({"specversion":"1.0","id":")") + std::string(id) +
         R"(","source":"https://example.test/order-service","type":")" + std::string(type) +
         R"(","subject":"order-417","schemaversion":)" + std::to_string(schema_version) +
         R"(,"data":{"orderId":"order-417","orderVersion":)" + std::to_string(order_version) +
         std::string(extra_data) + "}}";
}
std::string Paid(std::string_view id, int v) {
  return OrderEvent(id, "com.example.training.order.paid", v);
}
std::string Cancelled(std::string_view id, int v) {
  return OrderEvent(id, "com.example.training.order.cancelled", v,
                    R"(,"reason":"reservation-rejected")");
}
std::string StatusChanged(std::string_view id, int schema_version, std::string_view status,
                          std::string_view source = "training://orders/checkout") {
  return std::string(R"({"specversion":"1.0","id":")") + std::string(id) + R"(","source":")" +
         std::string(source) +
         R"(","type":"order.status.changed","subject":"order-104","data":{"schemaVersion":)" +
         std::to_string(schema_version) + R"(,"orderId":"order-104","status":")" +
         std::string(status) + R"("}})";
}

class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-pipeline-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto config = LoadConfig(std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/evident.yaml");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config_ = std::move(config).value();
    auto pipeline = Pipeline::Create(config_);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status().ToString();
    pipeline_ = std::move(pipeline).value();
    auto store = OpenSqliteStore((dir_ / "store.db").string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    snapshot_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  // Runs one event in its own transaction; returns its decisions.
  std::vector<Decision> Run(const std::string& event) {
    std::vector<Decision> decisions;
    snapshot_.reset();
    auto tx = store_->Begin();
    EXPECT_TRUE(tx.ok()) << tx.status().ToString();
    const Status s = pipeline_->Process(**tx, event, index_++, kNow, decisions);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE((*tx)->Commit().ok());
    return decisions;
  }
  // A fresh snapshot of the store, valid until the next Read or Run.
  Snapshot& Read() {
    snapshot_.reset();
    snapshot_ = store_->Read().value();
    return *snapshot_;
  }
  Decision RunOne(const std::string& event) {
    auto d = Run(event);
    EXPECT_EQ(d.size(), 1u) << event;
    return d.empty() ? Decision{} : d[0];
  }
  int64_t Count(const std::string& table) {
    for (const auto& [name, n] : Read().Counts().value()) {
      if (name == table) return n;
    }
    return -1;
  }
  Projection FulfillmentProjection() {
    return Read().FindProjection("fulfillment", "order-417").value().value();
  }
  // fulfillment's evidence records of order-417, one "name source id vVERSION" string each, by
  // name: what a guard and `evident evidence` read back.
  std::vector<std::string> Evidence() {
    std::vector<std::string> out;
    for (const EvidenceRecord& r : Read().EvidenceOf("fulfillment", "order-417").value().rows) {
      EXPECT_EQ(r.consumer, "fulfillment");
      EXPECT_EQ(r.subject, "order-417");
      out.push_back(r.name + " " + r.source + " " + r.event_id + " v" +
                    (r.subject_version ? std::to_string(*r.subject_version) : "null"));
    }
    return out;
  }
  GuardDecision Ship() {
    return EvaluateGuard(Read(), *config_.Find("fulfillment"), "order-417", "ship").value();
  }

  fs::path dir_;
  Config config_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Snapshot> snapshot_;
  int64_t index_ = 0;
};

// Seed 000: first delivery records one result, a repeat of the same source:id records none,
// schema version 3 gives contract-update-required with no effect.
TEST_F(PipelineTest, Seed000FirstDeliveryRepeatAndUnknownVersion) {
  Decision d = RunOne(StatusChanged("evt-104", 1, "paid"));
  EXPECT_EQ(d.outcome, Outcome::kApplied);
  EXPECT_EQ(d.consumer, "orders-projection");
  EXPECT_EQ(d.key, "orders-projection:training://orders/checkout:evt-104");
  EXPECT_EQ(Count("ledger"), 1);
  auto receipt = Read()
                     .FindLedger("orders-projection", "training://orders/checkout", "evt-104")
                     .value()
                     .value();
  EXPECT_EQ(receipt.input_schema_version, 1);
  EXPECT_EQ(receipt.result_version, 1);
  EXPECT_EQ(receipt.projection_version, 1);

  d = RunOne(StatusChanged("evt-104", 1, "paid"));
  EXPECT_EQ(d.outcome, Outcome::kDuplicate);
  EXPECT_EQ(Count("ledger"), 1);
  auto projection = Read().FindProjection("orders-projection", "order-104").value().value();
  EXPECT_EQ(projection.version, 1);
  EXPECT_EQ(projection.state, "paid");
  EXPECT_EQ(Read()
                .FindLedger("orders-projection", "training://orders/checkout", "evt-104")
                .value()
                ->duplicates,
            1);
  // Every further delivery counts.
  EXPECT_EQ(RunOne(StatusChanged("evt-104", 1, "paid")).outcome, Outcome::kDuplicate);
  EXPECT_EQ(Read()
                .FindLedger("orders-projection", "training://orders/checkout", "evt-104")
                .value()
                ->duplicates,
            2);

  d = RunOne(StatusChanged("evt-105", 3, "shipped"));
  EXPECT_EQ(d.outcome, Outcome::kContractUpdateRequired);
  EXPECT_EQ(d.reason, "unaccepted-schema-version");
  EXPECT_EQ(Count("ledger"), 1);
  projection = Read().FindProjection("orders-projection", "order-104").value().value();
  EXPECT_EQ(projection.state, "paid");  // no effect
  auto kept = Read().QuarantineOf("order-104").value().rows;
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].outcome, Outcome::kContractUpdateRequired);
  EXPECT_EQ(kept[0].raw, StatusChanged("evt-105", 3, "shipped"));  // original bytes
}

TEST_F(PipelineTest, Seed000SchemaVersionTwoAndBoundaryAndPayload) {
  // v2 with the optional paymentReference applies; the field is copied.
  std::string v2 = StatusChanged("evt-201", 2, "paid");
  v2.insert(v2.rfind('}') - 1 + 1 - 1, R"(,"paymentReference":"pay-9")");
  Decision d = RunOne(v2);
  EXPECT_EQ(d.outcome, Outcome::kApplied) << d.message;
  auto projection = Read().FindProjection("orders-projection", "order-104").value().value();
  EXPECT_NE(projection.fields_json.find("\"paymentReference\":\"pay-9\""), std::string::npos)
      << projection.fields_json;
  // A source outside the boundary is rejected for this consumer, kept, no effect.
  d = RunOne(StatusChanged("evt-202", 1, "paid", "training://payments/x"));
  EXPECT_EQ(d.outcome, Outcome::kRejected);
  EXPECT_EQ(d.reason, "source-outside-boundary");
  // A v1 payload without status is payload-invalid with the schema error path.
  d = RunOne(
      R"({"specversion":"1.0","id":"evt-203","source":"training://orders/checkout","type":"order.status.changed","subject":"order-104","data":{"schemaVersion":1,"orderId":"order-104"}})");
  EXPECT_EQ(d.outcome, Outcome::kPayloadInvalid);
  ASSERT_FALSE(d.errors.empty());
  EXPECT_NE(d.errors[0].find("status"), std::string::npos) << d.errors[0];
  // The schema version missing entirely.
  d = RunOne(
      R"({"specversion":"1.0","id":"evt-204","source":"training://orders/checkout","type":"order.status.changed","data":{"orderId":"o"}})");
  EXPECT_EQ(d.reason, "missing-schema-version");
  EXPECT_EQ(Read().FindProjection("orders-projection", "order-104").value()->version, 1);
}

// Seed 002: v3 before v2 is deferred with expected version 2 and the projection stays at 1; v2
// applies and drains v3; repeats are duplicates; another id claiming 3 is a conflict; ship is
// denied while the gap is open and once the owner cancelled.
TEST_F(PipelineTest, Seed002GapDeferDrainDuplicatesConflictAndGuard) {
  EXPECT_FALSE(Ship().allowed);  // nothing applied yet
  Decision d = RunOne(Paid("evt-order-417-v1", 1));
  EXPECT_EQ(d.outcome, Outcome::kApplied);
  EXPECT_EQ(d.projection_version, 1);
  // Paid, but the stock is not reserved yet: the effect's evidence is missing.
  ASSERT_EQ(Ship().reasons, std::vector<std::string>{"evidence 'reserve-stock' is not recorded"});
  const std::optional<EffectIntent> intent = Read().FindIntent("reserve:order-417").value();
  ASSERT_TRUE(intent.has_value());
  EXPECT_EQ(intent->state, EffectState::kIntended);
  snapshot_.reset();
  ASSERT_TRUE(ResolveEffect(*store_,
                            {.key = "reserve:order-417",
                             .outcome = EffectState::kDone,
                             .by = "test",
                             .note = "the stock service shows the reservation"},
                            kNow)
                  .ok());
  EXPECT_TRUE(Ship().allowed) << Ship().reasons[0];
  const std::string owner = "https://example.test/order-service";
  const std::vector<std::string> at_v1 = {"payment " + owner + " evt-order-417-v1 v1",
                                          "reserve-stock " + owner + " evt-order-417-v1 v1"};
  EXPECT_EQ(Evidence(), at_v1);

  d = RunOne(Cancelled("evt-order-417-cancelled-v3", 3));
  EXPECT_EQ(d.outcome, Outcome::kDeferred);
  EXPECT_EQ(d.expected_version, 2);
  EXPECT_EQ(d.projection_version, 1);
  EXPECT_EQ(FulfillmentProjection().version, 1);
  EXPECT_EQ(FulfillmentProjection().state, "awaiting-reservation");
  EXPECT_EQ(FulfillmentProjection().owner_version_seen, 3);
  GuardDecision guard = Ship();
  EXPECT_FALSE(guard.allowed);  // gap open, not in sync
  ASSERT_EQ(guard.reasons.size(), 2u);
  EXPECT_NE(guard.reasons[0].find("behind the owner version seen 3"), std::string::npos);
  EXPECT_NE(guard.reasons[1].find("gap open: version 2 expected"), std::string::npos);

  // A repeat of the deferred v3 is a duplicate, not a second deferral.
  EXPECT_EQ(RunOne(Cancelled("evt-order-417-cancelled-v3", 3)).outcome, Outcome::kDuplicate);
  // Nothing deferred records evidence.
  EXPECT_EQ(Evidence(), at_v1);

  // v2 applies and drains v3 in the same transaction.
  auto decisions = Run(Paid("evt-order-417-paid-v2", 2));
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions[0].outcome, Outcome::kApplied);
  EXPECT_EQ(decisions[0].projection_version, 2);
  EXPECT_FALSE(decisions[0].drained);
  EXPECT_EQ(decisions[1].outcome, Outcome::kApplied);
  EXPECT_TRUE(decisions[1].drained);
  EXPECT_EQ(decisions[1].subject_version, 3);
  EXPECT_EQ(decisions[1].index, 1);  // the input position of the deferred event
  EXPECT_EQ(FulfillmentProjection().version, 3);
  EXPECT_EQ(FulfillmentProjection().state, "cancelled");
  EXPECT_EQ(Count("deferred"), 0);
  auto drained = Read()
                     .FindLedger("fulfillment", "https://example.test/order-service",
                                 "evt-order-417-cancelled-v3")
                     .value()
                     .value();
  EXPECT_EQ(drained.state, LedgerState::kApplied);
  EXPECT_EQ(drained.projection_version, 3);
  // v2 replaced the payment evidence; the drained v3 recorded the cancellation (the stock
  // reserved for v1 stays recorded: v2 triggered the same operation, a no-op).
  const std::vector<std::string> evidence = {
      "cancellation " + owner + " evt-order-417-cancelled-v3 v3",
      "payment " + owner + " evt-order-417-paid-v2 v2",
      "reserve-stock " + owner + " evt-order-417-v1 v1"};
  EXPECT_EQ(Evidence(), evidence);
  // The cancellation's reason requires compensating the reservation, once; it was done, so its
  // release is intended, in the same transaction.
  const std::vector<CompensationRecord> compensations =
      Read().ListCompensations("fulfillment", "order-417").value().rows;
  ASSERT_EQ(compensations.size(), 1u);
  EXPECT_EQ(compensations[0].key, "compensation:order-417:reservation:v2");
  EXPECT_EQ(compensations[0].owner_source, owner);
  EXPECT_EQ(compensations[0].owner_version, 3);
  EXPECT_EQ(compensations[0].event_id, "evt-order-417-cancelled-v3");
  EXPECT_EQ(compensations[0].covers, "reserve:order-417");
  EXPECT_EQ(compensations[0].state, CompensationState::kCompensating);
  const std::optional<EffectIntent> release = Read().FindIntent("release:order-417").value();
  ASSERT_TRUE(release.has_value());
  EXPECT_EQ(release->state, EffectState::kIntended);
  EXPECT_EQ(release->basis_version, 3);

  // Repeats of v2 or v3 are duplicates.
  EXPECT_EQ(RunOne(Paid("evt-order-417-paid-v2", 2)).outcome, Outcome::kDuplicate);
  EXPECT_EQ(RunOne(Cancelled("evt-order-417-cancelled-v3", 3)).outcome, Outcome::kDuplicate);
  // Another event id claiming version 3 is a conflict; version 2 from another id is stale.
  d = RunOne(Cancelled("evt-impostor-v3", 3));
  EXPECT_EQ(d.outcome, Outcome::kSameVersionConflict);
  EXPECT_EQ(RunOne(Paid("evt-late-v2", 2)).outcome, Outcome::kStale);
  EXPECT_EQ(FulfillmentProjection().state, "cancelled");

  // The owner cancelled: ship is denied, with the state as the reason.
  guard = Ship();
  EXPECT_FALSE(guard.allowed);
  ASSERT_EQ(guard.reasons.size(), 1u);
  EXPECT_NE(guard.reasons[0].find("state 'cancelled'"), std::string::npos) << guard.reasons[0];
  EXPECT_EQ(Count("ledger"), 3);
  EXPECT_EQ(Count("quarantine"), 2);  // conflict + stale, with their bytes
  const std::vector<QuarantineRecord> kept = Read().QuarantineOf("order-417").value().rows;
  ASSERT_EQ(kept.size(), 2u);
  const struct {
    std::string outcome, reason, message, id, type, raw;
    int64_t version, index;
  } want[] = {
      {"same-version-conflict", "version-already-applied",
       owner + ":evt-order-417-cancelled-v3 already applied version 3; reported to the owner " +
           owner + " (conflict:fulfillment:order-417:v3:" + owner +
           ":evt-impostor-v3, routed once a relay sends it)",
       "evt-impostor-v3", "com.example.training.order.cancelled", Cancelled("evt-impostor-v3", 3),
       3, 6},
      {"stale", "stale-version", "version 2 is below the projection version 3", "evt-late-v2",
       "com.example.training.order.paid", Paid("evt-late-v2", 2), 2, 7}};
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(kept[i].consumer, "fulfillment");
    EXPECT_EQ(OutcomeName(kept[i].outcome), want[i].outcome);
    EXPECT_EQ(kept[i].reason, want[i].reason);
    EXPECT_EQ(kept[i].message, want[i].message);
    EXPECT_EQ(kept[i].source, owner);
    EXPECT_EQ(kept[i].event_id, want[i].id);
    EXPECT_EQ(kept[i].type, want[i].type);
    EXPECT_EQ(kept[i].subject, "order-417");
    EXPECT_EQ(kept[i].subject_version, want[i].version);
    EXPECT_EQ(kept[i].raw, want[i].raw);
    EXPECT_EQ(kept[i].first_seen_ms, kNow);
    EXPECT_EQ(kept[i].last_seen_ms, kNow);
    EXPECT_EQ(kept[i].attempts, 1);
    EXPECT_EQ(kept[i].input_index, want[i].index);
  }
  // Neither recorded evidence; and the records read the same from a reopened store (decoded
  // from the stored form, not from this store's cache).
  EXPECT_EQ(Evidence(), evidence);
  snapshot_.reset();
  store_.reset();
  store_ = OpenSqliteStore((dir_ / "store.db").string()).value();
  EXPECT_EQ(Evidence(), evidence);
}

// Two successors wait; the version that closes the gap drains both, in version order, each
// with its own input index, and each records its evidence.
TEST_F(PipelineTest, DrainAppliesEveryWaitingSuccessorInVersionOrder) {
  EXPECT_EQ(RunOne(Paid("a1", 1)).outcome, Outcome::kApplied);
  EXPECT_EQ(RunOne(Cancelled("c4", 4)).outcome, Outcome::kDeferred);
  Decision d = RunOne(Paid("p3", 3));
  EXPECT_EQ(d.outcome, Outcome::kDeferred);
  EXPECT_EQ(d.expected_version, 2);
  EXPECT_EQ(Count("deferred"), 2);
  const std::vector<Decision> decisions = Run(Paid("p2", 2));
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(decisions[0].outcome, Outcome::kApplied);
  EXPECT_FALSE(decisions[0].drained);
  EXPECT_EQ(decisions[0].index, 3);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(decisions[i].outcome, Outcome::kApplied);
    EXPECT_TRUE(decisions[i].drained);
    EXPECT_EQ(decisions[i].subject_version, static_cast<int64_t>(i + 2));
    EXPECT_EQ(decisions[i].projection_version, static_cast<int64_t>(i + 2));
    EXPECT_EQ(decisions[i].index, static_cast<int64_t>(3 - i));  // where it stood in the input
  }
  EXPECT_EQ(decisions[1].key, "fulfillment:https://example.test/order-service:p3");
  EXPECT_EQ(decisions[2].key, "fulfillment:https://example.test/order-service:c4");
  EXPECT_EQ(FulfillmentProjection().version, 4);
  EXPECT_EQ(FulfillmentProjection().state, "cancelled");
  EXPECT_EQ(Count("deferred"), 0);
  const std::string owner = "https://example.test/order-service";
  const std::vector<std::string> evidence = {"cancellation " + owner + " c4 v4",
                                             "payment " + owner + " p3 v3"};
  EXPECT_EQ(Evidence(), evidence);
}

TEST_F(PipelineTest, ConflictWithADeferredVersion) {
  RunOne(Paid("a1", 1));
  EXPECT_EQ(RunOne(Cancelled("a3", 3)).outcome, Outcome::kDeferred);
  Decision d = RunOne(Cancelled("b3", 3));
  EXPECT_EQ(d.outcome, Outcome::kSameVersionConflict);
  EXPECT_EQ(d.reason, "version-already-deferred");
}

TEST_F(PipelineTest, RejectedUnroutedAndMissingOrderingData) {
  Decision d = RunOne("{not json");
  EXPECT_EQ(d.outcome, Outcome::kRejected);
  EXPECT_EQ(d.reason, "malformed-json");
  EXPECT_TRUE(d.consumer.empty());
  d = RunOne(R"({"specversion":"1.0","id":"u1","source":"s","type":"invoice.created","data":{}})");
  EXPECT_EQ(d.outcome, Outcome::kUnrouted);
  d = RunOne(
      R"({"specversion":"1.0","id":"m1","source":"https://example.test/order-service","type":"com.example.training.order.paid","schemaversion":1,"data":{"orderId":"o","orderVersion":1}})");
  EXPECT_EQ(d.outcome, Outcome::kRejected);
  EXPECT_EQ(d.reason, "missing-subject");
  EXPECT_EQ(Count("quarantine"), 3);
  EXPECT_EQ(Count("ledger"), 0);
}

// Seed 001's example event (shared/seeds/001: version 7, id evt-example-1), with `id` and
// `version` in their places.
std::string Seed001Event(std::string_view id, int version) {
  return std::string(R"({"timestamp":"2026-07-24T12:34:56.123Z","event.id":")") + std::string(id) +
         R"(","event.name":"order.approved","event.schema_version":2,)"
         R"("producer.id":"orders-api","trace_id":"0123456789abcdef0123456789abcdef",)"
         R"("span_id":"0123456789abcdef","correlation_id":"corr-example-1",)"
         R"("aggregate.version":)" +
         std::to_string(version) +
         R"(,"payload":{"order_id":"ord-example","approved_at":"2026-07-24T12:34:56.123Z",)"
         R"("approval_channel":"operator"}})";
}

// Seed 001 with the flat profile: a v1 consumer ignores approval_channel, and aggregate version
// 7 after 8 is stale.
TEST(PipelineFlat, Seed001FlatProfileStale) {
  const fs::path dir = fs::temp_directory_path() / ("evident-flat-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "contracts" / "order.approved");
  {
    std::ofstream(dir / "contracts" / "order.approved" / "v1.schema.json")
        << R"({"type":"object","required":["order_id","approved_at"],"properties":{"order_id":{"type":"string"},"approved_at":{"type":"string","format":"date-time"}}})";
    std::ofstream(dir / "contracts" / "order.approved" / "v2.schema.json")
        << R"({"type":"object","required":["order_id","approved_at"],"properties":{"order_id":{"type":"string"},"approved_at":{"type":"string"},"approval_channel":{"type":"string"}}})";
  }
  auto config = ConfigFromYaml(R"(
contracts: contracts
profile: flat
consumers:
  - id: approvals
    resultversion: 1
    boundary: [orders-api]
    accepts: [{type: order.approved, versions: [1, 2], reads: [/order_id, /approved_at]}]
    ordering: {by: subject, subject_at: /data/order_id}
    projection:
      order.approved: {state: approved, copy: [/order_id]}
)",
                               dir.string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto pipeline = Pipeline::Create(*config).value();
  auto store = OpenSqliteStore((dir / "s.db").string()).value();
  const auto flat = [](std::string_view id, int version) { return Seed001Event(id, version); };
  std::vector<Decision> decisions;
  auto tx = store->Begin().value();
  for (int v = 1; v <= 8; ++v) {
    ASSERT_TRUE(
        pipeline->Process(*tx, flat("evt-" + std::to_string(v), v), v, kNow, decisions).ok());
  }
  ASSERT_TRUE(pipeline->Process(*tx, flat("evt-late-7", 7), 9, kNow, decisions).ok());
  ASSERT_TRUE(tx->Commit().ok());
  ASSERT_EQ(decisions.size(), 9u);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(decisions[i].outcome, Outcome::kApplied) << decisions[i].message;
  EXPECT_EQ(decisions[8].outcome, Outcome::kStale);
  EXPECT_EQ(decisions[8].subject, "ord-example");
  auto projection =
      store->Read().value()->FindProjection("approvals", "ord-example").value().value();
  EXPECT_EQ(projection.version, 8);
  EXPECT_EQ(projection.fields_json, R"({"order_id":"ord-example"})");  // approval_channel ignored
  store.reset();
  fs::remove_all(dir);
}

// A consumer that joins late (item 6 of the quarantine issue): with `start: first-seen` the seed's
// own events work without versions 1-6: version 8 arrives first and becomes the projection (its
// baseline, 7, recorded as evidence), and the seed's event, version 7, is stale. With `start: 1`
// version 8 would wait for version 1 forever. A baseline imported from a snapshot does the same
// for a consumer that keeps `start: 1`.
class LateJoiner : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("evident-late-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "contracts" / "order.approved");
    std::ofstream(dir_ / "contracts" / "order.approved" / "v2.schema.json")
        << R"({"type":"object","required":["order_id","approved_at"]})";
    store_ = OpenSqliteStore((dir_ / "s.db").string()).value();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  void Start(const std::string& start) {
    auto config = ConfigFromYaml(R"(
contracts: contracts
profile: flat
consumers:
  - id: approvals
    resultversion: 1
    boundary: [orders-api]
    accepts: [{type: order.approved, versions: [2], reads: [/order_id, /approved_at]}]
    ordering: {by: subject, subject_at: /data/order_id, start: )" +
                                     start + R"(}
    projection:
      order.approved: {state: approved, copy: [/order_id]}
)",
                                 dir_.string());
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    pipeline_ = Pipeline::Create(*config).value();
  }
  // The seed's event verbatim (version 7), or with another id and version.
  static std::string Seed(std::string_view id = "evt-example-1", int version = 7) {
    return Seed001Event(id, version);
  }
  std::vector<Decision> Run(const std::vector<std::string>& events) {
    std::vector<Decision> decisions;
    auto tx = store_->Begin().value();
    for (const std::string& e : events)
      EXPECT_TRUE(pipeline_->Process(*tx, e, 0, kNow, decisions).ok());
    EXPECT_TRUE(tx->Commit().ok());
    return decisions;
  }
  std::optional<Projection> Projected() {
    return store_->Read().value()->FindProjection("approvals", "ord-example").value();
  }

  fs::path dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Pipeline> pipeline_;
};

TEST_F(LateJoiner, FirstSeenTakesTheFirstVersionAsItsBaseline) {
  Start("first-seen");
  std::vector<Decision> d = Run({Seed("evt-example-2", 8), Seed()});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].outcome, Outcome::kApplied) << d[0].message;
  EXPECT_EQ(d[0].projection_version, 8);
  EXPECT_EQ(d[1].outcome, Outcome::kStale);
  EXPECT_EQ(d[1].reason, "stale-version");
  EXPECT_EQ(Projected()->version, 8);
  const Rows<EvidenceRecord> evidence =
      store_->Read().value()->EvidenceOf("approvals", "ord-example").value();
  ASSERT_EQ(evidence.rows.size(), 1u);
  EXPECT_EQ(evidence.rows[0].name, "baseline");
  EXPECT_EQ(evidence.rows[0].subject_version, 7);
  EXPECT_EQ(evidence.rows[0].event_id, "evt-example-2");
  // The baseline is taken once: version 10 now waits for 9.
  d = Run({Seed("evt-example-4", 10)});
  EXPECT_EQ(d.at(0).outcome, Outcome::kDeferred);
  EXPECT_EQ(d.at(0).expected_version, 9);
}

TEST_F(LateJoiner, StartOneWaitsForVersionOne) {
  Start("1");
  const std::vector<Decision> d = Run({Seed("evt-example-2", 8)});
  EXPECT_EQ(d.at(0).outcome, Outcome::kDeferred);
  EXPECT_EQ(d.at(0).expected_version, 1);
}

TEST_F(LateJoiner, AnImportedBaselineIsWhereTheConsumerStarts) {
  Start("1");
  auto entry = ParseBaselineLine(
      R"({"subject":"ord-example","version":7,"state":"approved","fields":{"order_id":"ord-example"},"owner_source":"orders-api"})");
  ASSERT_TRUE(entry.ok()) << entry.status().ToString();
  {
    auto tx = store_->Begin().value();
    EXPECT_EQ(ImportBaseline(*tx, "approvals", *entry, "snap.ndjson", kNow).value(),
              BaselineOutcome::kImported);
    ASSERT_TRUE(tx->Commit().ok());
  }
  EXPECT_EQ(Projected()->version, 7);
  EXPECT_EQ(Projected()->state, "approved");
  const std::vector<Decision> d = Run({Seed(), Seed("evt-example-2", 8)});
  EXPECT_EQ(d.at(0).outcome, Outcome::kSameVersionConflict);  // 7 is the snapshot's
  EXPECT_EQ(d.at(1).outcome, Outcome::kApplied);
  auto tx = store_->Begin().value();
  EXPECT_EQ(ImportBaseline(*tx, "approvals", *entry, "snap.ndjson", kNow).value(),
            BaselineOutcome::kConflict);  // the projection moved on to 8
  entry->version = 8;
  EXPECT_EQ(ImportBaseline(*tx, "approvals", *entry, "snap.ndjson", kNow).value(),
            BaselineOutcome::kAlreadyThere);
  ASSERT_TRUE(tx->Rollback().ok());
  const Rows<EvidenceRecord> evidence =
      store_->Read().value()->EvidenceOf("approvals", "ord-example").value();
  ASSERT_EQ(evidence.rows.size(), 1u);
  EXPECT_EQ(evidence.rows[0].source, "snapshot:snap.ndjson");
}

TEST(Baseline, BadSnapshotLinesSayWhatIsWrong) {
  for (const char* line :
       {"[]", "{\"version\":1}", "{\"subject\":\"\",\"version\":1}",
        "{\"subject\":\"s\",\"version\":-1}", "{\"subject\":\"s\",\"version\":\"1\"}",
        "{\"subject\":\"s\",\"version\":1,\"state\":3}",
        "{\"subject\":\"s\",\"version\":1,\"fields\":[]}",
        "{\"subject\":\"s\",\"version\":1,\"extra\":1}", "{not json"}) {
    EXPECT_EQ(ParseBaselineLine(line).status().code(), Code::kInvalidArgument) << line;
  }
  const BaselineEntry e =
      ParseBaselineLine(R"({"subject":"s","version":0,"fields":{"a": [1, 2]}})").value();
  EXPECT_EQ(e.fields_json, R"({"a":[1,2]})");
}

// A payload whose schema needs more than validation_steps_max steps is payload-invalid with
// its own reason (validation-budget-exceeded), not a schema violation, and the pipeline goes on.
TEST(PipelineBudget, PayloadBeyondTheStepBudgetHasItsOwnReason) {
  const fs::path dir = fs::temp_directory_path() / ("evident-budget-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "contracts" / "order.nested");
  // 2^40 allOf paths that memoization cannot share.
  std::ofstream(dir / "contracts" / "order.nested" / "v1.schema.json")
      << test_support::AllOfChainBomb(40);
  auto config = ConfigFromYaml(R"(
contracts: contracts
consumers:
  - id: nested
    resultversion: 1
    boundary: [orders-api]
    accepts: [{type: order.nested, versions: [1], reads: []}]
    projection:
      order.nested: {state: seen}
)",
                               dir.string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto pipeline = Pipeline::Create(*config);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().ToString();
  auto store = OpenSqliteStore((dir / "s.db").string()).value();
  std::vector<Decision> decisions;
  auto tx = store->Begin().value();
  ASSERT_TRUE((*pipeline)
                  ->Process(*tx,
                            R"({"specversion":"1.0","id":"e1","source":"orders-api",)"
                            R"("type":"order.nested","schemaversion":1,"data":{}})",
                            1, kNow, decisions)
                  .ok());
  ASSERT_TRUE(tx->Commit().ok());
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].outcome, Outcome::kPayloadInvalid);
  EXPECT_EQ(decisions[0].reason, "validation-budget-exceeded") << decisions[0].message;
  ASSERT_FALSE(decisions[0].errors.empty());
  EXPECT_NE(decisions[0].errors[0].find("validation_steps_max"), std::string::npos)
      << decisions[0].errors[0];
  store.reset();
  fs::remove_all(dir);
}

TEST(PipelineConfig, RejectsAConsumerAcceptingAVersionWithoutSchema) {
  auto config = ConfigFromYaml(R"(
contracts: contracts
consumers:
  - id: x
    accepts: [{type: order.status.changed, versions: [1, 2, 5]}]
)",
                               std::string(EVIDENT_SOURCE_DIR) + "/examples/orders");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("v5.schema.json does not exist"), std::string::npos)
      << config.status().message();
}

TEST(PipelineConfig, StateFromTakesExactlyOnePointer) {
  auto config = ConfigFromYaml(R"(
contracts: contracts
consumers:
  - id: orders-projection
    projection:
      order.status.changed: {state_from: []}
)",
                               std::string(EVIDENT_SOURCE_DIR) + "/examples/orders");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("'state_from' takes one JSON Pointer"),
            std::string::npos)
      << config.status().message();
}

// An inline consumer contract is read where it stands: its errors cite the lines of
// evident.yaml itself, and its projection and guards stay with the consumer.
TEST(PipelineConfig, InlineContractErrorsCiteTheConfigFileLines) {
  const std::string dir = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders";
  auto config = ConfigFromYaml(R"(contracts: contracts
consumers:
  - id: x
    accepts: [{type: order.status.changed, versions: [1]}]
    projection:
      order.status.changed: {state_from: /status}
    gap: {deadline_seconds: 60, route: somewhere}
)",
                               dir, "evident.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("evident.yaml:7: 'gap.route' must be"),
            std::string::npos)
      << config.status().message();

  auto valid = ConfigFromYaml(R"(contracts: contracts
consumers:
  - id: x
    accepts: [{type: order.status.changed, versions: [1], reads: [/status]}]
    projection:
      order.status.changed: {state_from: /status}
)",
                              dir, "evident.yaml");
  ASSERT_TRUE(valid.ok()) << valid.status().ToString();
  ASSERT_EQ(valid->consumers.size(), 1u);
  EXPECT_EQ(valid->consumers[0].contract.id, "x");
  EXPECT_EQ(valid->consumers[0].projection.at("order.status.changed").state_from, "/status");
}

// A key given twice in evident.yaml is refused with both lines, at the top level and inside an
// inline consumer contract: the first `boundary: []` would otherwise win and accept any source.
TEST(PipelineConfig, RefusesADuplicateKeyWithBothLines) {
  const std::string dir = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders";
  auto inline_twice = ConfigFromYaml(R"(contracts: contracts
consumers:
  - id: x
    boundary: []
    accepts: [{type: order.status.changed, versions: [1]}]
    boundary: ["training://orders/"]
)",
                                     dir, "evident.yaml");
  ASSERT_FALSE(inline_twice.ok());
  EXPECT_EQ(inline_twice.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(inline_twice.status().message(),
            "evident.yaml:6: duplicate key 'boundary' at line 6 (first at line 4)");

  auto top_twice = ConfigFromYaml(R"(contracts: contracts
linger_ms: 5
consumers:
  - id: x
    accepts: [{type: order.status.changed, versions: [1]}]
linger_ms: 50
)",
                                  dir, "evident.yaml");
  ASSERT_FALSE(top_twice.ok());
  EXPECT_EQ(top_twice.status().message(),
            "evident.yaml:6: duplicate key 'linger_ms' at line 6 (first at line 2)");
}

// A deferred receipt has no projection version yet, even right after an applied event (whose
// receipt has one) in the same batch; a repeat of it says so.
TEST_F(PipelineTest, DeferredReceiptHasNoProjectionVersion) {
  std::vector<Decision> decisions;
  auto tx = store_->Begin().value();
  ASSERT_TRUE(pipeline_->Process(*tx, Paid("evt-1", 1), 0, kNow, decisions).ok());
  ASSERT_TRUE(pipeline_->Process(*tx, Cancelled("evt-3", 3), 1, kNow, decisions).ok());
  ASSERT_TRUE(pipeline_->Process(*tx, Cancelled("evt-3", 3), 2, kNow, decisions).ok());
  ASSERT_TRUE(tx->Commit().ok());
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_EQ(decisions[0].outcome, Outcome::kApplied);
  EXPECT_EQ(decisions[1].outcome, Outcome::kDeferred);
  EXPECT_EQ(decisions[2].outcome, Outcome::kDuplicate);
  EXPECT_EQ(decisions[2].projection_version, std::nullopt);
  const LedgerEntry deferred =
      Read()
          .FindLedger("fulfillment", "https://example.test/order-service", "evt-3")
          .value()
          .value();
  EXPECT_EQ(deferred.state, LedgerState::kDeferred);
  EXPECT_EQ(deferred.projection_version, std::nullopt);
}

// Version 0 is no version at all: against a subject never seen (projection version 0) it used
// to read as "another event already applied version 0; routed to the owner " with no owner.
TEST_F(PipelineTest, SubjectVersionBelowOneIsRejected) {
  for (ConsumerConfig& c : config_.consumers) c.contract.ordering.version_at.clear();
  pipeline_ = Pipeline::Create(config_).value();
  for (const int version : {0}) {  // a negative one is refused by the envelope already
    std::string event = Paid("evt-v" + std::to_string(version), 1);
    event.insert(event.find(R"("data")"), R"("subjectversion":)" + std::to_string(version) + ",");
    const Decision d = RunOne(event);
    EXPECT_EQ(d.consumer, "fulfillment");
    EXPECT_EQ(d.outcome, Outcome::kRejected) << d.message;
    EXPECT_EQ(d.reason, "invalid-subject-version");
    EXPECT_NE(d.message.find("start at 1"), std::string::npos) << d.message;
  }
  EXPECT_FALSE(Read().FindProjection("fulfillment", "order-417").value().has_value());
  EXPECT_EQ(RunOne([&] {
              std::string e = Paid("evt-v1", 1);
              e.insert(e.find(R"("data")"), R"("subjectversion":1,)");
              return e;
            }())
                .outcome,
            Outcome::kApplied);
}

// The version a gap waits for follows the projection: deferred v3 waits for v1, and once v1
// applies, for v2 (the stored expected_version still says 1).
TEST_F(PipelineTest, ExpectedVersionFollowsTheProjection) {
  ASSERT_EQ(RunOne(Cancelled("evt-c3", 3)).outcome, Outcome::kDeferred);
  EXPECT_EQ(ExpectedVersion(Read().FindProjection("fulfillment", "order-417").value()), 1);
  ASSERT_EQ(RunOne(Paid("evt-p1", 1)).outcome, Outcome::kApplied);
  EXPECT_EQ(ExpectedVersion(Read().FindProjection("fulfillment", "order-417").value()), 2);
  const auto guard = EvaluateGuard(Read(), *config_.Find("fulfillment"), "order-417", "ship");
  ASSERT_TRUE(guard.ok());
  ASSERT_FALSE(guard->allowed);
  bool gap_reason = false;
  for (const std::string& r : guard->reasons) {
    if (r.rfind("gap open", 0) != 0) continue;
    gap_reason = true;
    EXPECT_NE(r.find("version 2 expected"), std::string::npos) << r;
  }
  EXPECT_TRUE(gap_reason);
}

// Issue 40's forged owner: a source the boundary admits beside the owner (a path under it) can
// neither take a subject over nor write its intents; one deferred before the subject had an owner
// is refused when the owner's version drains it.
std::string FromSource(std::string event, std::string_view source) {
  const std::string owner = "https://example.test/order-service";
  event.replace(event.find(owner), owner.size(), source);
  return event;
}

TEST_F(PipelineTest, ASourceBesideTheOwnerCannotTakeTheSubjectOver) {
  const std::string owner = "https://example.test/order-service";
  const std::string evil = owner + "/evil";
  // Deferred before the subject had an owner; refused at drain, its version missing again.
  EXPECT_EQ(RunOne(FromSource(Paid("e2", 2), evil)).outcome, Outcome::kDeferred);
  std::vector<Decision> d = Run(Paid("a1", 1));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].outcome, Outcome::kApplied);
  EXPECT_EQ(d[1].outcome, Outcome::kRejected);
  EXPECT_EQ(d[1].reason, "owner-mismatch");
  EXPECT_EQ(d[1].message, "the owner of order-417 is " + owner +
                              " (the source of its first applied event or baseline); this event "
                              "comes from " +
                              evil);
  EXPECT_EQ(Count("deferred"), 0);
  EXPECT_EQ(Count("ledger"), 1);
  EXPECT_EQ(FulfillmentProjection().version, 1);
  EXPECT_EQ(FulfillmentProjection().owner_source, owner);
  // Once owned: rejected at once, whatever the version, with nothing written but the record.
  const int64_t intents = Count("effect");
  for (const std::string& forged :
       {FromSource(Paid("e2b", 2), evil), FromSource(Cancelled("e3", 3), evil)}) {
    const Decision r = RunOne(forged);
    EXPECT_EQ(r.outcome, Outcome::kRejected);
    EXPECT_EQ(r.reason, "owner-mismatch");
  }
  EXPECT_EQ(Count("ledger"), 1);
  EXPECT_EQ(Count("deferred"), 0);
  EXPECT_EQ(Count("effect"), intents);
  EXPECT_EQ(FulfillmentProjection().version, 1);
  EXPECT_EQ(FulfillmentProjection().owner_source, owner);
  const std::vector<QuarantineRecord> kept = Read().QuarantineOf("order-417").value().rows;
  ASSERT_EQ(kept.size(), 3u);
  for (const QuarantineRecord& r : kept) {
    EXPECT_EQ(r.reason, "owner-mismatch");
    EXPECT_EQ(r.source, evil);
    EXPECT_FALSE(r.raw.empty());
  }
  // A query or a fragment is another source, outside the boundary.
  for (const char* suffix : {"?x=1", "#f"}) {
    const Decision r = RunOne(FromSource(Paid(std::string("q") + suffix, 2), owner + suffix));
    EXPECT_EQ(r.reason, "source-outside-boundary") << suffix;
  }
  // The owner's own next version applies.
  EXPECT_EQ(RunOne(Paid("a2", 2)).outcome, Outcome::kApplied);
  EXPECT_EQ(FulfillmentProjection().version, 2);
}

TEST_F(PipelineTest, SourcesTheContractListsShareTheOwnership) {
  const std::string owner = "https://example.test/order-service";
  const std::string second = owner + "/eu";
  for (ConsumerConfig& c : config_.consumers) {
    if (c.contract.id == "fulfillment") c.contract.owners = {owner, second};
  }
  pipeline_ = Pipeline::Create(config_).value();
  EXPECT_EQ(RunOne(Paid("a1", 1)).outcome, Outcome::kApplied);
  EXPECT_EQ(RunOne(FromSource(Paid("b2", 2), second)).outcome, Outcome::kApplied);
  EXPECT_EQ(FulfillmentProjection().owner_source, owner);  // the first applied event's
  const Decision other = RunOne(FromSource(Cancelled("c3", 3), owner + "/us"));
  EXPECT_EQ(other.reason, "owner-mismatch");
  EXPECT_EQ(RunOne(Cancelled("a3", 3)).outcome, Outcome::kApplied);
}

// Issue 40: a configuration reads only what its contract declares, or `contracts impact` could
// call a breaking change of a member it reads safe. Each kind of reader is named in the refusal.
TEST(PipelineConfig, RefusesReadingAMemberTheContractDoesNotDeclare) {
  const std::string dir = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders";
  const auto load = [&](const std::string& extras) {
    return ConfigFromYaml(R"(contracts: contracts
consumers:
  - id: x
    accepts: [{type: order.status.changed, versions: [1, 2], reads: [/orderId, /status]}]
)" + extras,
                          dir, "evident.yaml");
  };
  ASSERT_TRUE(load("    projection:\n      order.status.changed: {state_from: /status, copy: "
                   "[/orderId]}\n")
                  .ok());
  const struct {
    std::string extras, what, pointer;
  } cases[] = {
      {"    projection:\n      order.status.changed: {copy: [/orderId, /paymentReference]}\n",
       "the projection's copy", "/paymentReference"},
      {"    projection:\n      order.status.changed: {state_from: /state}\n",
       "the projection's state_from", "/state"},
      {"    effects:\n      - {name: e, on: order.status.changed, key: 'k:{/customer/id}', "
       "target: {url: 'http://127.0.0.1:1/'}}\n",
       "effect 'e''s key", "/customer/id"},
      {"    effects:\n      - {name: e, on: order.status.changed, when: {/channel: web}, key: "
       "'k:{subject}', target: {url: 'http://127.0.0.1:1/'}}\n",
       "effect 'e''s when", "/channel"},
      {"    compensations:\n      - {on: order.status.changed, key: 'c:{/refund}'}\n",
       "the compensation keyed 'c:{/refund}''s key", "/refund"},
  };
  for (const auto& c : cases) {
    const Result<Config> config = load(c.extras);
    ASSERT_FALSE(config.ok()) << c.extras;
    const std::string message = config.status().message();
    EXPECT_NE(message.find("consumer 'x': " + c.what + " reads " + c.pointer +
                           " of order.status.changed, which its contract (inline in "
                           "evident.yaml) does not declare in reads"),
              std::string::npos)
        << message;
    // Loaded without the check, the same reads are listed (contracts lint --config).
    const Result<Config> unchecked = ConfigFromYaml(R"(contracts: contracts
consumers:
  - id: x
    accepts: [{type: order.status.changed, versions: [1, 2], reads: [/orderId, /status]}]
)" + c.extras,
                                                    dir, "evident.yaml", {.check_reads = false});
    ASSERT_TRUE(unchecked.ok()) << unchecked.status().ToString();
    const std::vector<UndeclaredRead> listed = UndeclaredReads(*unchecked);
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].pointer, c.pointer);
  }
  // A read covers the members under it.
  const Result<Config> nested = ConfigFromYaml(R"(contracts: contracts
consumers:
  - id: x
    accepts: [{type: order.status.changed, versions: [1], reads: [/status, /customer]}]
    projection:
      order.status.changed: {state_from: /status, copy: [/customer/name]}
)",
                                               dir, "evident.yaml");
  EXPECT_TRUE(nested.ok()) << nested.status().ToString();
  // The example reads what it declares (its contract lists /paymentReference).
  EXPECT_TRUE(LoadConfig(dir + "/evident.yaml").ok());
}

// The last adapter of a via_adapter chain writes what the consumer reads: a member it moves there
// (or maps, or converts) and the consumer does not read is an undeclared read.
TEST(PipelineConfig, AnAdapterReadsOnlyWhatTheConsumerDeclares) {
  const std::string dir = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders";
  const Result<Config> config = ConfigFromYaml(R"(contracts: contracts
consumers:
  - id: x
    accepts:
      - {type: order.status.changed, versions: [2], via_adapter: {4: order-status-v4-to-v2},
         reads: [/orderId]}
)",
                                               dir, "evident.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find(
                "adapter 'order-status-v4-to-v2''s move reads /status of order.status.changed"),
            std::string::npos)
      << config.status().message();
}

// Issue 40: seed 002's own event carries no schema version. A contract may declare the version
// such an event is read as (seed 000's explicit default rule); the receipt and the decision say
// it was defaulted. Without the declaration it stays missing-schema-version.
TEST(DefaultSchemaVersion, TheSeedsOwnEventIsReadAsTheDeclaredVersion) {
  const fs::path dir = fs::temp_directory_path() / ("evident-default-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "contracts" / "com.example.training.order.cancelled");
  std::ofstream(dir / "contracts" / "com.example.training.order.cancelled" / "v1.schema.json")
      << R"({"type":"object","required":["orderVersion","reason"]})";
  const auto load = [&](const std::string& fallback) {
    return ConfigFromYaml(R"(contracts: contracts
consumers:
  - id: fulfillment
    boundary: ["https://example.test/order-service"]
    accepts:
      - {type: com.example.training.order.cancelled, versions: [1], reads: [/orderVersion, /reason])" +
                              fallback + R"(}
    ordering: {by: subject, version_at: /data/orderVersion, start: first-seen}
    projection:
      com.example.training.order.cancelled: {state: cancelled, copy: [/reason]}
)",
                          dir.string());
  };
  // The seed's envelope, verbatim (shared/seeds/002).
  const std::string seed =
      R"({"specversion":"1.0","id":"evt-order-417-cancelled-v3","source":"https://example.test/order-service","type":"com.example.training.order.cancelled","subject":"order-417","data":{"orderVersion":3,"reason":"reservation-rejected"}})";
  const auto decide = [&](const Config& config, const std::string& event) {
    auto pipeline = Pipeline::Create(config).value();
    auto store = OpenMemoryStore(NewMemoryDatabase()).value();
    auto tx = store->Begin().value();
    std::vector<Decision> decisions;
    EXPECT_TRUE(pipeline->Process(*tx, event, 0, kNow, decisions).ok());
    std::optional<LedgerEntry> receipt =
        tx->FindLedger("fulfillment", "https://example.test/order-service",
                       "evt-order-417-cancelled-v3")
            .value();
    EXPECT_TRUE(tx->Commit().ok());
    EXPECT_EQ(decisions.size(), 1u);
    return std::make_pair(decisions.empty() ? Decision{} : decisions[0], receipt);
  };
  const Result<Config> without = load("");
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  EXPECT_EQ(decide(*without, seed).first.reason, "missing-schema-version");

  const Result<Config> with = load(", default_schema_version: 1");
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  const auto [d, receipt] = decide(*with, seed);
  EXPECT_EQ(d.outcome, Outcome::kApplied) << d.reason << " " << d.message;
  EXPECT_TRUE(d.schema_version_defaulted);
  std::string line;
  AppendDecisionJson(d, line);
  EXPECT_NE(line.find(R"("schema_version_defaulted":true)"), std::string::npos) << line;
  ASSERT_TRUE(receipt.has_value());
  EXPECT_EQ(receipt->input_schema_version, 1);
  EXPECT_EQ(
      receipt->wrote_json,
      R"({"state":"cancelled","fields":{"reason":"reservation-rejected"},"schema_version_defaulted":1})");
  // An event that carries its version is read as it says, never as the default.
  std::string carried = seed;
  carried.insert(carried.find(R"("data")"), R"("schemaversion":2,)");
  const Decision explicit_version = decide(*with, carried).first;
  EXPECT_EQ(explicit_version.outcome, Outcome::kContractUpdateRequired);
  EXPECT_FALSE(explicit_version.schema_version_defaulted);
  // The default is one of the versions the entry reads.
  const Result<Config> stray = load(", default_schema_version: 2");
  ASSERT_FALSE(stray.ok());
  EXPECT_NE(stray.status().message().find("'default_schema_version' 2 is not one of the versions"),
            std::string::npos)
      << stray.status().message();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace evident
