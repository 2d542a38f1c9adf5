// The consume loop on PostgreSQL (tests' server: the CTest `postgres` fixture): a batch costs a
// fixed number of round trips to the server, whatever its size, and the decisions equal those
// the memory store makes of the same events.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "evident/consumer.h"
#include "evident/store_memory.h"
#include "evident/store_postgres.h"
#include "store/postgres/test_database.h"

namespace evident {
namespace {

// A status change of order-<subject>, the `n`th event of the run.
std::string StatusChange(int n, int subject) {
  return std::string(R"({"specversion":"1.0","id":"rt-)") + std::to_string(n) +
         R"(","source":"training://orders/checkout","type":"order.status.changed",)"
         R"("subject":"order-)" +
         std::to_string(subject) + R"(","data":{"schemaVersion":1,"orderId":"order-)" +
         std::to_string(subject) + R"(","status":"paid"}})";
}

// `count` events over `subjects` subjects, each subject's in turn; every tenth event is
// delivered twice (a duplicate).
std::vector<std::string> Events(int count, int subjects) {
  std::vector<std::string> out;
  for (int n = 0; n < count; ++n) {
    out.push_back(StatusChange(n, n % subjects));
    if (n % 10 == 9) out.push_back(out.back());
  }
  return out;
}

// Orders of the ordered consumer (fulfillment): paid v1, paid v2, cancelled v3, every third
// order's v2 before its v1 (deferred, then drained), and a status change per order. The
// cancellations' reason requires no compensation: a compensation that acts on the effect it
// compensates reads that intent, locked, and costs round trips of its own (docs/postgresql.md).
std::vector<std::string> OrderedEvents(int orders, const std::string& reason = "duplicate-order") {
  std::vector<std::string> out;
  for (int order = 0; order < orders; ++order) {
    const std::string o = std::to_string(order);
    std::vector<std::string> lines;
    for (int v = 1; v <= 3; ++v) {
      lines.push_back(
          R"({"specversion":"1.0","id":"evt-)" + o + "-" + std::to_string(v) +
          R"(","source":"https://example.test/order-service","type":"com.example.training.order.)" +
          (v == 3 ? "cancelled" : "paid") + R"(","subject":"order-)" + o +
          R"(","schemaversion":1,"data":{"orderId":"order-)" + o + R"(","orderVersion":)" +
          std::to_string(v) + (v == 3 ? R"(,"reason":")" + reason + R"(")" : "") + "}}");
    }
    if (order % 3 == 0) std::swap(lines[0], lines[1]);
    lines.push_back(StatusChange(order, order));
    out.insert(out.end(), lines.begin(), lines.end());
  }
  return out;
}

std::unique_ptr<Pipeline> PipelineWithBatches(int64_t batch_count_max) {
  auto config = LoadConfig(std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/evident.yaml");
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  config->batch_count_max = batch_count_max;
  // Batches close on their count or at the end of the source, never on a pause of the reading
  // thread: the batches are the same every run.
  config->linger_ms = kLingerMsLimit;
  config->batch_ms_max = kBatchMsMaxLimit;
  return Pipeline::Create(*config).value();
}

struct PgRun {
  ConsumeSummary summary;
  int64_t round_trips = 0;
  int64_t buffered_inserts = 0;  // multi-row ledger and projection INSERTs
  std::vector<std::pair<std::string, int64_t>> counts;
};

PgRun ConsumeOnPostgres(int64_t batch_count_max, const std::vector<std::string>& events,
                        bool read_ahead = true) {
  PgRun run;
  const Result<std::string> uri = FreshPostgresSchema("round_trips");
  EXPECT_TRUE(uri.ok()) << uri.status().ToString();
  if (!uri.ok()) return run;
  auto store = OpenPostgresStore(*uri);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return run;
  auto pipeline = PipelineWithBatches(batch_count_max);
  auto source = NewMemorySource("m", events);
  const int64_t before = PostgresRoundTrips(**store);
  const int64_t inserts_before = PostgresBufferedInserts(**store);
  auto summary =
      Consume(*pipeline, **store, *source, {.read_ahead = read_ahead, .gap_check_interval_ms = -1});
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  if (!summary.ok()) return run;
  run.round_trips = PostgresRoundTrips(**store) - before;
  run.buffered_inserts = PostgresBufferedInserts(**store) - inserts_before;
  run.summary = *summary;
  run.counts = (*store)->Read().value()->Counts().value();
  return run;
}

TEST(PostgresConsume, RoundTripsPerBatchDoNotGrowWithTheBatchSize) {
  const std::vector<std::string> events = Events(2000, 150);
  const PgRun small = ConsumeOnPostgres(20, events);
  const PgRun large = ConsumeOnPostgres(125, events);
  ASSERT_GT(small.summary.batches, 0);
  ASSERT_GT(large.summary.batches, 0);
  EXPECT_EQ(small.summary.batches, 110);  // 2,200 deliveries / 20
  EXPECT_EQ(large.summary.batches, 18);   // / 125
  const double small_per_batch =
      static_cast<double>(small.round_trips) / static_cast<double>(small.summary.batches);
  const double large_per_batch =
      static_cast<double>(large.round_trips) / static_cast<double>(large.summary.batches);
  // A Load and a Commit per batch (a batch may need one more Load when the reading thread had
  // not prepared the whole batch yet; it prepares up to 128 events ahead): six times the events
  // per batch, not more round trips.
  std::printf(
      "round trips: %lld for %lld batches of 20 (%.2f a batch), %lld for %lld of 125 "
      "(%.2f a batch)\n",
      static_cast<long long>(small.round_trips), static_cast<long long>(small.summary.batches),
      small_per_batch, static_cast<long long>(large.round_trips),
      static_cast<long long>(large.summary.batches), large_per_batch);
  EXPECT_LE(large_per_batch, small_per_batch + 1.0)
      << small.round_trips << " round trips for " << small.summary.batches << " batches of 20; "
      << large.round_trips << " for " << large.summary.batches << " batches of 125";
  EXPECT_LE(large_per_batch, 8.0) << large.round_trips << " round trips";
  EXPECT_EQ(small.counts, large.counts);
}

TEST(PostgresConsume, DecisionsEqualTheMemoryStores) {
  const std::vector<std::string> events = Events(600, 40);
  const PgRun on_postgres = ConsumeOnPostgres(50, events);
  auto memory = OpenMemoryStore(NewMemoryDatabase()).value();
  auto pipeline = PipelineWithBatches(50);
  auto source = NewMemorySource("m", events);
  auto summary = Consume(*pipeline, *memory, *source, {.gap_check_interval_ms = -1});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(on_postgres.summary.counts, summary->counts);
  EXPECT_EQ(on_postgres.counts, memory->Read().value()->Counts().value());
  // Every event applied once (600 ledger rows), the 60 repeats counted as duplicates.
  EXPECT_EQ(
      on_postgres.summary.counts.at("orders-projection")[static_cast<size_t>(Outcome::kDuplicate)],
      60);
}

}  // namespace
}  // namespace evident

namespace evident {
namespace {

// The ordered consumer's path (deferral, drain, the gap records it closes, evidence, effect
// intents): still a fixed number of round trips per batch.
TEST(PostgresConsume, OrderedConsumersCostAFixedNumberOfRoundTripsPerBatch) {
  const std::vector<std::string> events = OrderedEvents(500);  // 2,000 events
  const PgRun small = ConsumeOnPostgres(20, events);
  const PgRun large = ConsumeOnPostgres(125, events);
  ASSERT_EQ(small.summary.batches, 100);
  ASSERT_EQ(large.summary.batches, 16);
  const double small_per_batch =
      static_cast<double>(small.round_trips) / static_cast<double>(small.summary.batches);
  const double large_per_batch =
      static_cast<double>(large.round_trips) / static_cast<double>(large.summary.batches);
  std::printf(
      "ordered: %lld round trips for 100 batches of 20 (%.2f a batch), %lld for 16 of "
      "125 (%.2f a batch)\n",
      static_cast<long long>(small.round_trips), small_per_batch,
      static_cast<long long>(large.round_trips), large_per_batch);
  EXPECT_LE(large_per_batch, small_per_batch + 1.0);
  EXPECT_EQ(small.counts, large.counts);
}

// A batch's ledger rows go out in one multi-row INSERT and its new projections in another,
// however many of its events are deferred, close a gap, intend an effect or compensate one (the
// cancellations here ask for a compensation: the latest intent read, the compensation
// inserted, the intent withdrawn and logged, its compensations read): no write of the batch
// sends the buffered rows early (the gap records once did, at every deferral: 168 INSERTs a
// batch of 1,000 in postgres_bench, where one or two are meant; the effects' statements did, at
// every intent: 209 a batch here). Read on the deciding thread, so that each batch's rows are
// loaded at once whatever this machine's load: a Load sends the buffered rows first (it reads the
// ledger), and how many Loads a batch makes with a reading thread depends on its pace.
TEST(PostgresConsume, ABatchSendsItsLedgerAndProjectionRowsInTwoStatementsWhateverElseItWrites) {
  // 2,000 events, 167 deferred, 500 cancellations compensated
  const std::vector<std::string> events = OrderedEvents(500, "customer-request");
  const PgRun run = ConsumeOnPostgres(250, events, /*read_ahead=*/false);
  ASSERT_EQ(run.summary.batches, 8);
  const double per_batch =
      static_cast<double>(run.buffered_inserts) / static_cast<double>(run.summary.batches);
  std::printf("%lld multi-row inserts for 8 batches of 250 (%.2f a batch)\n",
              static_cast<long long>(run.buffered_inserts), per_batch);
  EXPECT_EQ(run.buffered_inserts, 16);  // each batch: its ledger rows, its new projections
  const auto compensations = std::find(run.counts.begin(), run.counts.end(),
                                       std::pair<std::string, int64_t>("compensation", 500));
  EXPECT_NE(compensations, run.counts.end()) << "every cancellation recorded a compensation";
}

// A cancellation that compensates an intent still waiting (withdrawn before any attempt) waits
// for three answers of the server: the latest intent, read locked; whether its compensation is
// new; and the compensations of the withdrawn intent. The withdrawal's update and log entry go
// out without waiting: the transaction holds the intent locked (they were two more round trips
// each, and PostgreSQL with effects ran at about 2,900 events/s: docs/BENCHMARKS.md).
TEST(PostgresConsume, ACompensatedCancellationWaitsForThreeAnswers) {
  const PgRun plain = ConsumeOnPostgres(1000, OrderedEvents(200), /*read_ahead=*/false);
  const PgRun compensated =
      ConsumeOnPostgres(1000, OrderedEvents(200, "customer-request"), /*read_ahead=*/false);
  ASSERT_EQ(plain.summary.batches, 1);
  ASSERT_EQ(compensated.summary.batches, 1);
  const double extra = static_cast<double>(compensated.round_trips - plain.round_trips) / 200.0;
  std::printf("round trips: %lld without compensations, %lld with 200 (%.2f each)\n",
              static_cast<long long>(plain.round_trips),
              static_cast<long long>(compensated.round_trips), extra);
  EXPECT_EQ(compensated.round_trips - plain.round_trips, 600) << extra << " each";
}

}  // namespace
}  // namespace evident
