// Outbox::Append: every decision, against the examples/orders contracts and a memory store.
#include "evident/outbox.h"

#include <gtest/gtest.h>

#include <string>

#include "evident/fault_store.h"
#include "evident/store.h"
#include "evident/store_memory.h"

namespace evident {
namespace {

const std::string kContracts = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts";

std::string Cancelled(const std::string& id, int64_t version, const std::string& reason,
                      const std::string& subject = "order-417", int64_t schema_version = 1) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"https://example.test/order-service",)"
         R"("type":"com.example.training.order.cancelled","subject":")" +
         subject + R"(","schemaversion":)" + std::to_string(schema_version) +
         R"(,"subjectversion":)" + std::to_string(version) + R"(,"data":{"orderId":")" + subject +
         R"(","orderVersion":)" + std::to_string(version) + R"(,"reason":")" + reason + R"("}})";
}

class OutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto outbox = Outbox::Create({.contracts_dir = kContracts, .partition_count = 8});
    ASSERT_TRUE(outbox.ok()) << outbox.status().ToString();
    outbox_ = std::move(outbox).value();
    auto store = OpenMemoryStore(NewMemoryDatabase());
    ASSERT_TRUE(store.ok());
    store_ = std::move(store).value();
  }
  // Appends `bytes` in a transaction of its own, committed.
  OutboxDecision Append(const std::string& bytes) {
    auto tx = store_->Begin().value();
    auto decision = outbox_->Append(*tx, bytes, 1000);
    EXPECT_TRUE(decision.ok()) << decision.status().ToString();
    EXPECT_TRUE(tx->Commit().ok());
    return decision.ok() ? *decision : OutboxDecision{};
  }
  std::vector<OutboxRow> Rows() {
    return store_->Read().value()->OutboxRows(OutboxSelect::kAll, 0).value().rows;
  }

  std::unique_ptr<Outbox> outbox_;
  std::unique_ptr<Store> store_;
};

TEST_F(OutboxTest, AppendsAValidEventWithItsFieldsAndPartition) {
  const std::string bytes = Cancelled("evt-1", 3, "customer-request");
  const OutboxDecision d = Append(bytes);
  EXPECT_EQ(d.outcome, OutboxDecisionOutcome::kAppended);
  ASSERT_TRUE(d.seq);
  const std::vector<OutboxRow> rows = Rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].seq, *d.seq);
  EXPECT_EQ(rows[0].bytes, bytes);
  EXPECT_EQ(rows[0].source, "https://example.test/order-service");
  EXPECT_EQ(rows[0].event_id, "evt-1");
  EXPECT_EQ(rows[0].type, "com.example.training.order.cancelled");
  EXPECT_EQ(rows[0].subject, "order-417");
  EXPECT_EQ(rows[0].subject_version, 3);
  EXPECT_EQ(rows[0].created_at_ms, 1000);
  EXPECT_EQ(rows[0].partition, outbox_->PartitionOf("order-417"));
  EXPECT_EQ(OutboxDecisionName(d.outcome), "appended");
}

TEST_F(OutboxTest, OneSubjectAlwaysLandsInOnePartition) {
  // FNV-1a 64 of "" is its offset basis; of "a", a published test vector.
  EXPECT_EQ(outbox_->PartitionOf(""), static_cast<int64_t>(14695981039346656037ull % 8));
  EXPECT_EQ(outbox_->PartitionOf("a"), static_cast<int64_t>(0xaf63dc4c8601ec8cull % 8));
  EXPECT_EQ(outbox_->PartitionOf("order-417"), outbox_->PartitionOf("order-417"));
  auto single = Outbox::Create({.contracts_dir = kContracts});
  ASSERT_TRUE(single.ok());
  EXPECT_EQ((*single)->PartitionOf("order-417"), 0);
  EXPECT_FALSE(Outbox::Create({.contracts_dir = kContracts, .partition_count = 0}).ok());
}

TEST_F(OutboxTest, TheSameEventAgainIsADuplicateAndOtherBytesAConflict) {
  const OutboxDecision first = Append(Cancelled("evt-1", 3, "customer-request"));
  const OutboxDecision again = Append(Cancelled("evt-1", 3, "customer-request"));
  EXPECT_EQ(again.outcome, OutboxDecisionOutcome::kDuplicate);
  EXPECT_EQ(again.seq, first.seq);
  const OutboxDecision other = Append(Cancelled("evt-1", 3, "out-of-stock"));
  EXPECT_EQ(other.outcome, OutboxDecisionOutcome::kConflict);
  EXPECT_EQ(other.reason, "id-conflict");
  EXPECT_EQ(Rows().size(), 1u);
}

TEST_F(OutboxTest, ABadEnvelopeIsRejectedWithItsReasonCode) {
  OutboxDecision d = Append(R"({"specversion":"1.0","source":"s","type":"t","schemaversion":1})");
  EXPECT_EQ(d.outcome, OutboxDecisionOutcome::kRejected);
  EXPECT_EQ(d.reason, "missing-id");
  EXPECT_FALSE(d.seq);
  d = Append("{not json");
  EXPECT_EQ(d.outcome, OutboxDecisionOutcome::kRejected);
  EXPECT_EQ(d.reason, "malformed-json");
  std::string no_version = Cancelled("evt-2", 1, "x");
  no_version.replace(no_version.find(R"("schemaversion":1,)"), 18, "");
  d = Append(no_version);
  EXPECT_EQ(d.outcome, OutboxDecisionOutcome::kRejected);
  EXPECT_EQ(d.reason, "missing-schema-version");
  EXPECT_TRUE(Rows().empty());
}

TEST_F(OutboxTest, APayloadThatFailsItsSchemaIsPayloadInvalid) {
  const OutboxDecision d = Append(Cancelled("evt-1", 3, ""));  // reason: minLength 1
  EXPECT_EQ(d.outcome, OutboxDecisionOutcome::kPayloadInvalid);
  EXPECT_EQ(d.reason, "schema-violation");
  EXPECT_NE(d.message.find("/reason"), std::string::npos) << d.message;
  EXPECT_TRUE(Rows().empty());
}

TEST_F(OutboxTest, AnUnknownTypeOrSchemaVersionIsRefused) {
  std::string unknown = Cancelled("evt-1", 3, "x");
  unknown.replace(unknown.find("order.cancelled"), 15, "order.vanished");
  OutboxDecision d = Append(unknown);
  EXPECT_EQ(d.outcome, OutboxDecisionOutcome::kRejected);
  EXPECT_EQ(d.reason, "unknown-type");
  d = Append(Cancelled("evt-2", 3, "x", "order-417", 7));
  EXPECT_EQ(d.outcome, OutboxDecisionOutcome::kRejected);
  EXPECT_EQ(d.reason, "unaccepted-schema-version");
  EXPECT_TRUE(Rows().empty());
}

TEST_F(OutboxTest, ARolledBackTransactionTakesItsOutboxRowWithIt) {
  {
    auto tx = store_->Begin().value();
    auto d = outbox_->Append(*tx, Cancelled("evt-1", 3, "x"), 1000);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->outcome, OutboxDecisionOutcome::kAppended);
    ASSERT_TRUE(tx->Rollback().ok());
  }
  EXPECT_TRUE(Rows().empty());
}

TEST_F(OutboxTest, AStoreFailureIsAnError) {
  FaultStore faulty(OpenMemoryStore(NewMemoryDatabase()).value());
  faulty.Add({.call = StoreCall::kAppendOutbox, .nth = 1, .code = Code::kIoError});
  auto tx = faulty.Begin().value();
  auto d = outbox_->Append(*tx, Cancelled("evt-1", 3, "x"), 1000);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Code::kIoError);
}

TEST_F(OutboxTest, AMissingContractsDirectoryIsAnError) {
  EXPECT_FALSE(Outbox::Create({.contracts_dir = "/nonexistent/contracts"}).ok());
}

}  // namespace
}  // namespace evident
