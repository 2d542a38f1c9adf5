// Consumers kept in the store: what a push keeps, refuses and leaves unchanged; the Decider's
// answers for seed 002's story; its decisions equal `consume`'s for the orders example's events,
// on a memory and an SQLite store; a configuration that differs from the stored one is refused.
#include "evident/stored_consumers.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "evident/store_memory.h"
#include "evident/store_sqlite.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

const std::string kOrders = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders";

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// An order event of seed 002's story.
std::string OrderEvent(const std::string& id, const std::string& kind, int64_t version) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"https://example.test/order-service","type":"com.example.training.order.)" +
         kind + R"(","subject":"order-417","schemaversion":1,"data":{"orderId":"order-417",)" +
         R"("orderVersion":)" + std::to_string(version) +
         (kind == "cancelled" ? R"(,"reason":"customer-request"})" : "}") + "}";
}

class StoredConsumersTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-stored-consumers-" + std::to_string(getpid()) + "-" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            std::to_string(counter_++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = Open("decider");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Store> Open(const std::string& name) {
    if (GetParam() == "memory") return OpenMemoryStore(NewMemoryDatabase()).value();
    return OpenSqliteStore((dir_ / (name + ".db")).string()).value();
  }

  // Decides one event in a transaction of its own, committed.
  std::vector<DecidedEvent> Decide(const std::string& consumer, const std::string& event) {
    std::unique_ptr<Transaction> tx = store_->Begin().value();
    Result<std::vector<DecidedEvent>> out = decider_.Decide(*tx, consumer, event, 1000);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE(tx->Commit().ok());
    return out.ok() ? std::move(out).value() : std::vector<DecidedEvent>();
  }

  static inline int counter_ = 0;
  fs::path dir_;
  std::unique_ptr<Store> store_;
  Decider decider_;
};

TEST_P(StoredConsumersTest, PushKeepsTheConfigurationThenAnswersUnchanged) {
  Result<ConsumersPush> push =
      PushConsumersConfig(*store_, kOrders + "/evident.yaml", {}, /*now_ms=*/1000);
  ASSERT_TRUE(push.ok()) << push.status().ToString();
  EXPECT_EQ(push->outcome, PushOutcome::kPushed);
  EXPECT_EQ(push->version, 1);
  EXPECT_EQ(push->consumers, (std::vector<std::string>{"orders-projection", "fulfillment"}));
  Result<ConsumersPush> again = PushConsumersConfig(*store_, kOrders + "/evident.yaml", {}, 2000);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->outcome, PushOutcome::kUnchanged);
  EXPECT_EQ(again->version, 1);
  // The contract sets are numbered apart.
  std::unique_ptr<Snapshot> snapshot = store_->Read().value();
  EXPECT_EQ(snapshot->LatestContractsVersion().value(), 0);
  EXPECT_EQ(snapshot->LatestSetVersion(SetKind::kConsumers).value(), 1);
}

TEST_P(StoredConsumersTest, PushRefusesAConfigurationWithProblems) {
  std::ofstream(dir_ / "evident.yaml") << "contracts: nowhere\nconsumers: []\n";
  Result<ConsumersPush> push =
      PushConsumersConfig(*store_, (dir_ / "evident.yaml").string(), {}, 1);
  ASSERT_TRUE(push.ok()) << push.status().ToString();
  EXPECT_EQ(push->outcome, PushOutcome::kRefused);
  ASSERT_FALSE(push->problems.empty());
  std::unique_ptr<Snapshot> snapshot = store_->Read().value();
  EXPECT_EQ(snapshot->LatestSetVersion(SetKind::kConsumers).value(), 0);
}

TEST_P(StoredConsumersTest, DecideWithoutAStoredSetIsNotFound) {
  std::unique_ptr<Transaction> tx = store_->Begin().value();
  const auto out = decider_.Decide(*tx, "fulfillment", OrderEvent("e1", "paid", 1), 1);
  EXPECT_EQ(out.status().code(), Code::kNotFound);
  EXPECT_TRUE(tx->Rollback().ok());
}

// Seed 002: v3 before v2 waits; v2 applies and drains v3; repeats are duplicates; a second
// event claiming v3 is a conflict.
TEST_P(StoredConsumersTest, SeedTwoStoryDecidedOneCallAtATime) {
  ASSERT_TRUE(PushConsumersConfig(*store_, kOrders + "/evident.yaml", {}, 1).ok());
  auto first = Decide("fulfillment", OrderEvent("paid-v1", "paid", 1));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].decision.outcome, Outcome::kApplied);

  const std::string v3 = OrderEvent("cancelled-v3", "cancelled", 3);
  auto deferred = Decide("fulfillment", v3);
  ASSERT_EQ(deferred.size(), 1u);
  EXPECT_EQ(deferred[0].decision.outcome, Outcome::kDeferred);
  EXPECT_EQ(deferred[0].decision.subject_version, 3);

  const std::string v2 = OrderEvent("paid-v2", "paid", 2);
  auto drained = Decide("fulfillment", v2);
  ASSERT_EQ(drained.size(), 2u);
  EXPECT_EQ(drained[0].decision.outcome, Outcome::kApplied);
  EXPECT_EQ(drained[0].decision.subject_version, 2);
  EXPECT_FALSE(drained[0].decision.drained);
  EXPECT_EQ(drained[0].event, v2);
  EXPECT_EQ(drained[0].schema_version, 1);
  EXPECT_EQ(drained[1].decision.outcome, Outcome::kApplied);
  EXPECT_EQ(drained[1].decision.subject_version, 3);
  EXPECT_TRUE(drained[1].decision.drained);
  EXPECT_EQ(drained[1].event, v3);  // the deferred event's own bytes

  for (const std::string& repeat : {v2, v3}) {
    auto dup = Decide("fulfillment", repeat);
    ASSERT_EQ(dup.size(), 1u);
    EXPECT_EQ(dup[0].decision.outcome, Outcome::kDuplicate);
  }
  auto conflict = Decide("fulfillment", OrderEvent("other-v3", "cancelled", 3));
  ASSERT_EQ(conflict.size(), 1u);
  EXPECT_EQ(conflict[0].decision.outcome, Outcome::kSameVersionConflict);
}

// A stored set is built from its files in memory: no temporary directory is needed (TMPDIR
// names none), and nothing is left on the disk.
TEST_P(StoredConsumersTest, ASetIsBuiltWithoutTheDisk) {
  ASSERT_TRUE(PushConsumersConfig(*store_, kOrders + "/evident.yaml", {}, 1).ok());
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before != nullptr ? before : "";
  ASSERT_EQ(::setenv("TMPDIR", (dir_ / "no-such-directory").c_str(), 1), 0);
  auto first = Decide("fulfillment", OrderEvent("paid-v1", "paid", 1));
  if (before != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].decision.outcome, Outcome::kApplied);
  EXPECT_FALSE(fs::exists(dir_ / "no-such-directory"));
}

// A rolled-back transaction leaves nothing: the event is decided afresh.
TEST_P(StoredConsumersTest, RolledBackDecisionIsDecidedAfresh) {
  ASSERT_TRUE(PushConsumersConfig(*store_, kOrders + "/evident.yaml", {}, 1).ok());
  const std::string v1 = OrderEvent("paid-v1", "paid", 1);
  {
    std::unique_ptr<Transaction> tx = store_->Begin().value();
    auto out = decider_.Decide(*tx, "fulfillment", v1, 1);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ((*out)[0].decision.outcome, Outcome::kApplied);
    ASSERT_TRUE(tx->Rollback().ok());
  }
  auto again = Decide("fulfillment", v1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].decision.outcome, Outcome::kApplied);
}

// An event read through an adapter is answered as the accepted version's payload.
TEST_P(StoredConsumersTest, AdaptedEventIsAnsweredWithTheAdaptedPayload) {
  ASSERT_TRUE(PushConsumersConfig(*store_, kOrders + "/evident.yaml", {}, 1).ok());
  const std::vector<std::string> v4 = Lines(kOrders + "/events-v4.ndjson");
  ASSERT_FALSE(v4.empty());
  auto out = Decide("orders-projection", v4[0]);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_FALSE(out[0].decision.adapter.empty()) << out[0].event;
  EXPECT_NE(out[0].event, v4[0]);
  EXPECT_EQ(out[0].schema_version, 2);
  EXPECT_NE(out[0].event.find("\"specversion\":\"1.0\""), std::string::npos);
}

// An explicit default of the consumer's projection step is filled in the answered event; an
// event that lacks nothing is answered with its own bytes.
TEST_P(StoredConsumersTest, ExplicitDefaultsAreFilledIn) {
  ASSERT_TRUE(PushConsumersConfig(*store_, kOrders + "/evident.yaml", {}, 1).ok());
  const std::vector<std::string> events = Lines(kOrders + "/events.ndjson");
  auto v1 = Decide("orders-projection", events[0]);  // v1: no paymentReference
  ASSERT_EQ(v1.size(), 1u);
  EXPECT_EQ(v1[0].decision.outcome, Outcome::kApplied);
  EXPECT_EQ(events[0].find("paymentReference"), std::string::npos) << "not in v1's bytes";
  EXPECT_NE(v1[0].event, events[0]);
  EXPECT_NE(v1[0].event.find(R"("status":"paid","paymentReference":null})"), std::string::npos)
      << v1[0].event;
  auto v2 = Decide("orders-projection", events[2]);  // v2 carries it
  ASSERT_EQ(v2.size(), 1u);
  EXPECT_EQ(v2[0].event, events[2]);
}

// The Decider decides as `consume` does: same outcomes, same order, for every consumer.
TEST_P(StoredConsumersTest, DecisionsEqualConsumesForTheOrdersExample) {
  ASSERT_TRUE(PushConsumersConfig(*store_, kOrders + "/evident.yaml", {}, 1).ok());
  Config config = LoadConfig(kOrders + "/evident.yaml").value();
  std::unique_ptr<Pipeline> pipeline = Pipeline::Create(config).value();
  std::unique_ptr<Store> consumed = Open("consume");
  int64_t compared = 0;
  const std::vector<std::string> events = Lines(kOrders + "/events.ndjson");
  for (size_t i = 0; i < events.size(); ++i) {
    std::vector<Decision> expected;
    {
      std::unique_ptr<Transaction> tx = consumed->Begin().value();
      ASSERT_TRUE(pipeline->Process(*tx, events[i], static_cast<int64_t>(i), 1000, expected).ok());
      ASSERT_TRUE(tx->Commit().ok());
    }
    for (const ConsumerConfig& consumer : config.consumers) {
      const std::string& id = consumer.contract.id;
      std::vector<const Decision*> theirs;
      for (const Decision& d : expected) {
        if (d.consumer == id || (d.consumer.empty() && d.outcome == Outcome::kRejected)) {
          theirs.push_back(&d);
        }
      }
      std::vector<DecidedEvent> ours = Decide(id, events[i]);
      if (theirs.empty()) {  // not routed to this consumer
        ASSERT_EQ(ours.size(), 1u) << i;
        EXPECT_EQ(ours[0].decision.outcome, Outcome::kUnrouted) << i;
        continue;
      }
      ASSERT_EQ(ours.size(), theirs.size()) << "event " << i << " consumer " << id;
      for (size_t k = 0; k < ours.size(); ++k) {
        const Decision& a = ours[k].decision;
        const Decision& b = *theirs[k];
        EXPECT_EQ(a.outcome, b.outcome) << "event " << i << " consumer " << id;
        EXPECT_EQ(a.reason, b.reason) << "event " << i << " consumer " << id;
        EXPECT_EQ(a.key, b.key) << "event " << i;
        EXPECT_EQ(a.subject_version, b.subject_version) << "event " << i;
        EXPECT_EQ(a.projection_version, b.projection_version) << "event " << i;
        EXPECT_EQ(a.drained, b.drained) << "event " << i;
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 20);
}

TEST_P(StoredConsumersTest, AConfigurationThatDiffersFromTheStoredOneIsRefused) {
  fs::copy(kOrders, dir_ / "orders", fs::copy_options::recursive);
  const std::string path = (dir_ / "orders" / "evident.yaml").string();
  ASSERT_TRUE(CheckConfigAgainstStore(*store_, path).ok());  // nothing stored yet
  ASSERT_TRUE(PushConsumersConfig(*store_, path, {}, 1).ok());
  EXPECT_TRUE(CheckConfigAgainstStore(*store_, path).ok());
  // Comments do not count; a projection step does.
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::string yaml = text.str();
  std::ofstream(path, std::ios::trunc) << "# a comment\n" << yaml;
  EXPECT_TRUE(CheckConfigAgainstStore(*store_, path).ok());
  const std::string from = "state: cancelled";
  ASSERT_NE(yaml.find(from), std::string::npos);
  yaml.replace(yaml.find(from), from.size(), "state: canceled");
  std::ofstream(path, std::ios::trunc) << yaml;
  const Status refused = CheckConfigAgainstStore(*store_, path);
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find("consumer 'fulfillment'"), std::string::npos);
  EXPECT_NE(refused.message().find("consumer set v1"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoredConsumersTest, ::testing::Values("memory", "sqlite"));

}  // namespace
}  // namespace evident
