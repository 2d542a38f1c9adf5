// The consume loop over the memory store and a memory source: acknowledgement after commit,
// busy-store retry, cancellation, and a commit that fails.
#include <gtest/gtest.h>

#include "evident/consumer.h"
#include "evident/store_memory.h"

namespace evident {
namespace {

std::string Status104(int n) {
  return std::string(R"({"specversion":"1.0","id":"s-)") + std::to_string(n) +
         R"(","source":"training://orders/checkout","type":"order.status.changed",)"
         R"("subject":"order-104","data":{"schemaVersion":1,"orderId":"order-104",)"
         R"("status":"paid"}})";
}

class ConsumeLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = LoadConfig(std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/evident.yaml");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config->batch_count_max = 2;
    pipeline_ = Pipeline::Create(*config).value();
    for (int i = 0; i < 5; ++i) messages_.push_back(Status104(i));
  }
  int64_t Version() {
    auto store = OpenMemoryStore(database_).value();
    auto projection = store->Read().value()->FindProjection("orders-projection", "order-104");
    return projection.value() ? (*projection)->version : 0;
  }

  std::unique_ptr<Pipeline> pipeline_;
  std::shared_ptr<MemoryDatabase> database_ = NewMemoryDatabase();
  std::vector<std::string> messages_;
  ManualClock clock_{1'785'000'000'000};
};

TEST_F(ConsumeLoopTest, ABusyStoreIsTriedAgainWithBackoffBeforeTheRunGivesUp) {
  FaultStore store(OpenMemoryStore(database_).value(), nullptr);
  store.Add({.call = StoreCall::kBegin, .nth = 1, .code = Code::kUnavailable});
  store.Add({.call = StoreCall::kBegin, .nth = 2, .code = Code::kUnavailable});
  auto source = NewMemorySource("m", messages_);
  const auto summary = Consume(*pipeline_, store, *source, {.clock = &clock_});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(Version(), 5);
  EXPECT_EQ(clock_.slept_ms(), 10 + 20);  // RetryPolicy's first two waits, on the manual clock
}

TEST_F(ConsumeLoopTest, ABusyStorePastTheRetriesEndsTheRunNamingTheAttempts) {
  FaultStore store(OpenMemoryStore(database_).value(), nullptr);
  for (int nth = 1; nth <= 3; ++nth) {
    store.Add({.call = StoreCall::kBegin, .nth = nth, .code = Code::kUnavailable});
  }
  auto source = NewMemorySource("m", messages_);
  ConsumeOptions options{.clock = &clock_};
  options.busy_retry.attempts_max = 3;
  const auto summary = Consume(*pipeline_, store, *source, options);
  EXPECT_EQ(summary.status().code(), Code::kUnavailable);
  EXPECT_NE(summary.status().message().find("after 3 attempts"), std::string::npos)
      << summary.status().ToString();
  EXPECT_EQ(Version(), 0);
}

// A commit that fails rolls its batch back; the batches before it stay, the position says
// where, and a resumed run decides the rest once.
TEST_F(ConsumeLoopTest, AFailedCommitLosesOnlyItsBatchAndResumeFinishes) {
  {
    FaultStore store(OpenMemoryStore(database_).value(), nullptr);
    store.Add({.call = StoreCall::kCommit, .nth = 2, .code = Code::kIoError});
    auto source = NewMemorySource("m", messages_);
    const auto summary = Consume(*pipeline_, store, *source, {.clock = &clock_});
    EXPECT_EQ(summary.status().code(), Code::kIoError);
    EXPECT_NE(summary.status().message().find("rolled back"), std::string::npos);
  }
  EXPECT_EQ(Version(), 2);  // the first batch of two
  auto store = OpenMemoryStore(database_).value();
  auto source = NewMemorySource("m", messages_);
  const auto summary = Consume(*pipeline_, *store, *source, {.resume = true, .clock = &clock_});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->skipped, 2);
  EXPECT_EQ(Version(), 5);
}

TEST_F(ConsumeLoopTest, ACancelledRunStopsAfterItsCommitAndSaysSo) {
  auto store = OpenMemoryStore(database_).value();
  auto source = NewMemorySource("m", messages_);
  CancelToken cancel;
  cancel.Cancel();  // before the first batch: nothing is decided, and the run says it stopped
  const auto summary = Consume(*pipeline_, *store, *source, {.cancel = &cancel, .clock = &clock_});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->stopped);
  EXPECT_EQ(summary->events, 0);
  EXPECT_EQ(Version(), 0);
}

}  // namespace
}  // namespace evident
