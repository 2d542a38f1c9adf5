// Contracts kept in the store: what a push keeps, refuses and leaves unchanged, and the Outbox
// that follows the latest set, on a memory store (the store calls have their conformance suite).
#include "evident/stored_contracts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "evident/store_memory.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

const std::string kOrders = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts";

constexpr const char* kV1 = R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
 "type":"object","required":["sku"],
 "$defs":{"qty":{"type":"integer","minimum":1}},
 "properties":{"sku":{"type":"string"},"qty":{"$ref":"#/$defs/qty"}}})";
// v2 reads v1's data (a new optional field).
constexpr const char* kV2 = R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
 "type":"object","required":["sku"],
 "$defs":{"qty":{"type":"integer","minimum":1}},
 "properties":{"sku":{"type":"string"},"qty":{"$ref":"#/$defs/qty"},
  "note":{"type":"string"}}})";
// Another type's schema reaching stock.reserved v1's definition through a $ref between files.
constexpr const char* kReleased = R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
 "type":"object","properties":{"qty":{"$ref":"../stock.reserved/v1.schema.json#/$defs/qty"}}})";
// v3 narrows `sku` to an integer: not backward compatible.
constexpr const char* kV3 = R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
 "type":"object","required":["sku"],"properties":{"sku":{"type":"integer"}}})";

std::string Event(const std::string& id, int64_t schema_version, const std::string& data) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"https://example.test/stock","type":"stock.reserved","subject":"sku-1",)"
         R"("schemaversion":)" +
         std::to_string(schema_version) + R"(,"data":)" + data + "}";
}

class StoredContractsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-stored-contracts-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "stock.reserved");
    Write("stock.reserved/v1.schema.json", kV1);
    store_ = OpenMemoryStore(NewMemoryDatabase()).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& path, const std::string& text) {
    std::ofstream(dir_ / path, std::ios::binary | std::ios::trunc) << text;
  }
  ContractsPush Push(const ContractsPushOptions& options = {}) {
    Result<ContractsPush> push = PushContractsDir(*store_, dir_.string(), options, 1000);
    EXPECT_TRUE(push.ok()) << push.status().ToString();
    return push.ok() ? *push : ContractsPush{};
  }
  static std::string Codes(const ContractsPush& push) {
    std::string out;
    for (const LintFinding& f : push.findings) out += (out.empty() ? "" : " ") + f.code;
    return out;
  }
  OutboxDecision Append(StoredOutbox& outbox, const std::string& bytes) {
    auto tx = store_->Begin().value();
    Result<Outbox*> current = outbox.For(*tx);
    EXPECT_TRUE(current.ok()) << current.status().ToString();
    if (!current.ok()) return {};
    Result<OutboxDecision> decision = (*current)->Append(*tx, bytes, 1000);
    EXPECT_TRUE(decision.ok() && tx->Commit().ok());
    return decision.ok() ? *decision : OutboxDecision{};
  }

  fs::path dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoredContractsTest, PushKeepsTheFilesAndSettingsOnceAndNumbersEachChange) {
  ContractsPushOptions options;
  options.settings.partition_count = 4;
  const ContractsPush first = Push(options);
  EXPECT_EQ(first.outcome, PushOutcome::kPushed) << Codes(first);
  EXPECT_EQ(first.version, 1);
  EXPECT_EQ(first.files, 1);
  EXPECT_TRUE(first.digest.starts_with("sha256:"));
  const ContractsPush again = Push(options);
  EXPECT_EQ(again.outcome, PushOutcome::kUnchanged);
  EXPECT_EQ(again.version, 1);
  EXPECT_EQ(again.digest, first.digest);
  options.settings.partition_count = 8;  // settings alone make a new set
  options.repartition = true;
  EXPECT_EQ(Push(options).version, 2);
  Write("stock.reserved/v2.schema.json", kV2);
  Write("README.md", "not kept");
  const ContractsPush third = Push(options);
  EXPECT_EQ(third.outcome, PushOutcome::kPushed) << Codes(third);
  EXPECT_EQ(third.version, 3);
  EXPECT_EQ(third.files, 2);

  const std::optional<StoredContracts> set = store_->Read().value()->ContractsAt(0).value();
  ASSERT_TRUE(set.has_value());
  const auto files = FilesOf(*set).value();
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files.at("stock.reserved/v2.schema.json"), kV2);
  const OutboxOptions outbox = OutboxOptionsOf(*set).value();
  EXPECT_EQ(outbox.partition_count, 8);
}

TEST_F(StoredContractsTest, PushRefusesWhatLintRefusesAndKeepsNothing) {
  Write("stock.reserved/v2.schema.json", "{not json");
  const ContractsPush push = Push();
  EXPECT_EQ(push.outcome, PushOutcome::kRefused);
  EXPECT_NE(Codes(push).find("SCHEMA_"), std::string::npos) << Codes(push);
  EXPECT_EQ(store_->Read().value()->LatestContractsVersion().value(), 0);
}

TEST_F(StoredContractsTest, AVersionOncePushedStaysByteForByte) {
  ASSERT_EQ(Push().outcome, PushOutcome::kPushed);
  Write("stock.reserved/v1.schema.json", std::string(kV1) + "\n");
  EXPECT_EQ(Codes(Push()), "SCHEMA_VERSION_CHANGED");
  fs::remove(dir_ / "stock.reserved/v1.schema.json");
  Write("stock.reserved/v2.schema.json", kV2);  // the type stays; its v1 is gone
  const ContractsPush removed = Push();
  EXPECT_NE(Codes(removed).find("SCHEMA_VERSION_REMOVED"), std::string::npos) << Codes(removed);
  EXPECT_EQ(store_->Read().value()->LatestContractsVersion().value(), 1);
}

TEST_F(StoredContractsTest, ANewVersionKeepsTheModeDeclaredForItsType) {
  Write("stock.reserved/v2.schema.json", kV2);
  const ContractsPush second = Push();
  ASSERT_EQ(second.outcome, PushOutcome::kPushed) << Codes(second);
  Write("stock.reserved/v3.schema.json", kV3);
  const ContractsPush refused = Push();
  ASSERT_EQ(Codes(refused), "INCOMPATIBLE_VERSION");
  EXPECT_NE(refused.findings[0].message.find("TYPE_CHANGED"), std::string::npos)
      << refused.findings[0].message;
  EXPECT_NE(refused.findings[0].message.find("backward"), std::string::npos);
  // Easing the mode in the push that adds the version it would refuse: refused; the mode first.
  Write("compatibility.yaml", "default: backward\ntypes:\n  stock.reserved: none\n");
  EXPECT_EQ(Codes(Push()), "COMPATIBILITY_CHANGED_WITH_VERSION");
  fs::remove(dir_ / "stock.reserved/v3.schema.json");
  EXPECT_EQ(Push().outcome, PushOutcome::kPushed);
  Write("stock.reserved/v3.schema.json", kV3);
  EXPECT_EQ(Push().outcome, PushOutcome::kPushed);
  Write("compatibility.yaml", "default: sideways\n");
  EXPECT_EQ(Codes(Push()), "COMPATIBILITY_INVALID");
  Write("compatibility.yaml", "types:\n  stock.nowhere: none\n");
  EXPECT_EQ(Codes(Push()), "COMPATIBILITY_INVALID");
}

TEST_F(StoredContractsTest, TheStoredOutboxChecksAgainstTheLatestSetItsTransactionSees) {
  StoredOutbox outbox;
  {
    auto tx = store_->Begin().value();
    EXPECT_EQ(outbox.For(*tx).status().code(), Code::kFailedPrecondition);
  }
  ASSERT_EQ(Push().outcome, PushOutcome::kPushed);
  EXPECT_EQ(Append(outbox, Event("e1", 1, R"({"sku":"a","qty":2})")).outcome,
            OutboxDecisionOutcome::kAppended);
  EXPECT_EQ(outbox.version(), 1);
  const OutboxDecision v2_early = Append(outbox, Event("e2", 2, R"({"sku":"a","qty":2})"));
  EXPECT_EQ(v2_early.reason, "unaccepted-schema-version");
  Write("stock.reserved/v2.schema.json", kV2);
  fs::create_directories(dir_ / "stock.released");
  Write("stock.released/v1.schema.json", kReleased);
  const ContractsPush second = Push();
  ASSERT_EQ(second.outcome, PushOutcome::kPushed) << Codes(second);
  // The same StoredOutbox, no restart: the next transaction sees set 2.
  EXPECT_EQ(Append(outbox, Event("e2", 2, R"({"sku":"a","qty":2})")).outcome,
            OutboxDecisionOutcome::kAppended);
  EXPECT_EQ(outbox.version(), 2);
  const OutboxDecision invalid = Append(outbox, Event("e3", 2, R"({"sku":"a","qty":0})"));
  EXPECT_EQ(invalid.outcome, OutboxDecisionOutcome::kPayloadInvalid);
  EXPECT_EQ(invalid.reason, "schema-violation");
  // A $ref between the set's files resolves inside the set, not on this machine's disk.
  fs::remove_all(dir_);
  std::string released = Event("e4", 1, R"({"qty":0})");
  released.replace(released.find("stock.reserved"), 14, "stock.released");
  EXPECT_EQ(Append(outbox, released).outcome, OutboxDecisionOutcome::kPayloadInvalid);
}

TEST_F(StoredContractsTest, ThePartitionCountStaysUnlessThePushRepartitions) {
  ASSERT_EQ(Push().outcome, PushOutcome::kPushed);
  ContractsPushOptions options;
  options.settings.partition_count = 4;
  EXPECT_EQ(Codes(Push(options)), "PARTITIONS_CHANGED");
  options.repartition = true;
  EXPECT_EQ(Push(options).version, 2);
}

TEST_F(StoredContractsTest, ASetIsFilesWithinBoundsThatAProducerCanCompile) {
  fs::create_symlink(dir_ / "stock.reserved/v1.schema.json",
                     dir_ / "stock.reserved/v2.schema.json");
  EXPECT_EQ(Codes(Push()), "SYMLINK");
  fs::remove(dir_ / "stock.reserved/v2.schema.json");
  ContractsPushOptions small;
  small.bytes_max = 100;  // v1 is larger
  const ContractsPush cut = Push(small);
  EXPECT_EQ(Codes(cut), "TOO_MANY_FILES");
  EXPECT_EQ(cut.outcome, PushOutcome::kRefused);
  // A $ref to a file the set does not keep (a hidden one): lint passes, a producer could not
  // compile the schema, so the push is refused rather than every append after it.
  fs::create_directories(dir_ / ".shared");
  Write(".shared/qty.json", R"({"type":"integer"})");
  fs::create_directories(dir_ / "stock.counted");
  Write("stock.counted/v1.schema.json",
        R"({"type":"object","properties":{"qty":{"$ref":"../.shared/qty.json"}}})");
  EXPECT_EQ(Codes(Push()), "SET_UNUSABLE");
  EXPECT_EQ(store_->Read().value()->LatestContractsVersion().value(), 0);
}

TEST_F(StoredContractsTest, TheOrdersExampleIsKeptWithItsConsumersAndAdapters) {
  Result<ContractsPush> push = PushContractsDir(*store_, kOrders, {}, 1000);
  ASSERT_TRUE(push.ok()) << push.status().ToString();
  ASSERT_EQ(push->outcome, PushOutcome::kPushed) << Codes(*push);
  const auto files = FilesOf(*store_->Read().value()->ContractsAt(1).value()).value();
  EXPECT_TRUE(files.contains("consumers/fulfillment.yaml"));
  EXPECT_TRUE(files.contains("adapters/order-status-v4-to-v2.yaml"));
  EXPECT_TRUE(files.contains("order.status.changed/v4.schema.json"));
  EXPECT_TRUE(files.contains("compatibility.yaml"));
}

}  // namespace
}  // namespace evident
