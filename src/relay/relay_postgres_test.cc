// Several relays on one PostgreSQL store (relay.h, claim mode), each with a Store of its own as
// it would have in its own process: every row is published and marked once, a partition's rows
// go out in seq order, a relay that stalls past its claim's hold time loses the rows to another
// and its marks are refused, and an idle relay wakes on a producer's commit (LISTEN/NOTIFY).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "evident/relay.h"
#include "evident/store_postgres.h"
#include "store/postgres/test_database.h"

namespace evident {
namespace {

using std::chrono::milliseconds;

// What the relays published, in the order the destination received it.
struct Received {
  std::mutex mutex;
  std::vector<std::string> ids;  // RelayMessageId of each message
  std::map<std::string, int> copies;
  std::map<std::string, std::vector<int64_t>> by_partition;  // event numbers per "pN"
};

// Accepts every batch whole, records it, and can run a hook once before answering (a stall).
class RecordingPublisher final : public Publisher {
 public:
  RecordingPublisher(Received* received, std::function<void()> before_first)
      : received_(received), before_first_(std::move(before_first)) {}
  Result<size_t> Publish(std::span<const OutgoingMessage> batch) override {
    if (before_first_) std::exchange(before_first_, nullptr)();
    const std::lock_guard<std::mutex> lock(received_->mutex);
    acks_.clear();
    for (const OutgoingMessage& m : batch) {
      received_->ids.push_back(m.id);
      ++received_->copies[m.id];
      const std::string partition = m.destination.substr(0, m.destination.find('.'));
      // The id is "svc e<N>": N is the append order, which is seq order (one producer).
      received_->by_partition[partition].push_back(std::stoll(m.id.substr(m.id.find(" e") + 2)));
      acks_.push_back({static_cast<uint64_t>(received_->ids.size()), false});
    }
    return batch.size();
  }
  const std::vector<PublishAck>& acks() const override { return acks_; }
  Status Close() override { return Status::Ok(); }

 private:
  Received* received_;
  std::function<void()> before_first_;
  std::vector<PublishAck> acks_;
};

class RelayPostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> uri = FreshPostgresSchema("relay");
    ASSERT_TRUE(uri.ok()) << uri.status().ToString();
    uri_ = *uri;
    Result<std::unique_ptr<Store>> producer = OpenPostgresStore(uri_);
    ASSERT_TRUE(producer.ok()) << producer.status().ToString();
    producer_ = std::move(producer).value();
  }

  // Appends `count` rows in transactions of `per_commit`, spread over `partitions`.
  void Append(int count, int partitions, int per_commit = 100) {
    for (int done = 0; done < count;) {
      auto tx = producer_->Begin();
      ASSERT_TRUE(tx.ok()) << tx.status().ToString();
      for (int i = 0; i < per_commit && done < count; ++i, ++done) {
        const int k = appended_++;
        OutboxRow row{.source = "svc",
                      .event_id = "e" + std::to_string(k),
                      .type = "com.example.order.cancelled",
                      .subject = "order-" + std::to_string(k % (2 * partitions)),
                      .partition = k % partitions,
                      .bytes = R"({"id":"e)" + std::to_string(k) + R"("})",
                      .created_at_ms = 1000};
        ASSERT_TRUE((*tx)->AppendOutbox(row).ok());
      }
      const Status committed = (*tx)->Commit();
      ASSERT_TRUE(committed.ok()) << committed.ToString();
    }
  }

  int64_t Pending() {
    auto snapshot = producer_->Read();
    EXPECT_TRUE(snapshot.ok()) << snapshot.status().ToString();
    if (!snapshot.ok()) return -1;
    Result<OutboxStats> stats = (*snapshot)->OutboxStatsNow(0);
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    return stats.ok() ? stats->pending : -1;
  }

  // Runs a relay on a store of its own until `cancel`, returning its summary.
  Result<RelaySummary> RunOne(const std::string& name, RelayOptions options, Received* received,
                              std::function<void()> stall_first = nullptr) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenPostgresStore(uri_));
    options.destination_name = name;
    const PublisherFactory open = [&]() -> Result<std::unique_ptr<Publisher>> {
      auto publisher =
          std::make_unique<RecordingPublisher>(received, std::exchange(stall_first, nullptr));
      return std::unique_ptr<Publisher>(std::move(publisher));
    };
    return RunRelay(*store, open, options);
  }

  std::string uri_;
  std::unique_ptr<Store> producer_;
  int appended_ = 0;
};

TEST_F(RelayPostgresTest, ThreeRelaysPublishAndMarkEveryRowOnceInOrderPerPartition) {
  constexpr int kRows = 3000;
  Received received;
  CancelToken stop;
  RelayOptions options{.batch_count_max = 64, .claim_partitions_max = 2, .cancel = &stop};
  std::vector<Result<RelaySummary>> summaries(3, Status::Internal("not run"));
  std::vector<std::thread> relays;
  for (int r = 0; r < 3; ++r) {
    relays.emplace_back(
        [&, r] { summaries[r] = RunOne("relay" + std::to_string(r), options, &received); });
  }
  Append(kRows, 8, 50);  // while the relays run: they wake on the commits
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (Pending() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  stop.Cancel();
  for (std::thread& t : relays) t.join();

  int64_t marked = 0;
  int relays_that_sent = 0;
  for (const Result<RelaySummary>& s : summaries) {
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    marked += s->sent;
    relays_that_sent += s->sent > 0 ? 1 : 0;
    EXPECT_EQ(s->failed_rounds, 0) << s->last_error;
  }
  EXPECT_EQ(Pending(), 0);
  EXPECT_EQ(marked, kRows);  // no row marked by two relays
  EXPECT_EQ(received.ids.size(), static_cast<size_t>(kRows));
  EXPECT_EQ(received.copies.size(), static_cast<size_t>(kRows));  // each row published once
  for (const auto& [partition, numbers] : received.by_partition) {
    EXPECT_TRUE(std::is_sorted(numbers.begin(), numbers.end())) << partition;
  }
  EXPECT_EQ(received.by_partition.size(), 8U);
  EXPECT_GE(relays_that_sent, 2);  // claims of disjoint partitions let relays work side by side
}

// A holds the claim and stalls in Publish until B has taken the rows over (the stall is told
// when it begins and ended when B is done: no sleep stands in for either).
TEST_F(RelayPostgresTest, ARelayStalledPastItsHoldLosesItsRowsToAnotherAndCannotMarkThem) {
  Append(50, 1);
  Received received;
  RelayOptions stalled{.claim_hold_ms = 300, .once = true};
  Result<RelaySummary> a = Status::Internal("not run");
  std::promise<void> stalling, b_done;
  std::shared_future<void> b_finished = b_done.get_future().share();
  std::future<void> a_stalls = stalling.get_future();
  std::thread first([&] {
    a = RunOne("A", stalled, &received, [&] {
      stalling.set_value();
      (void)b_finished.wait_for(std::chrono::seconds(30));
    });
  });
  if (a_stalls.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    b_done.set_value();
    first.join();
    FAIL() << "relay A never published: " << (a.ok() ? "" : a.status().ToString());
  }
  RelayOptions other{.once = true};
  Result<RelaySummary> b = Status::Internal("not run");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  // B finds the partition claimed until A's hold lapses, then takes it over.
  while (std::chrono::steady_clock::now() < deadline) {
    b = RunOne("B", other, &received);
    if (!b.ok() || b->sent > 0) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  b_done.set_value();
  first.join();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->sent, 50);
  EXPECT_EQ(a->sent, 0);  // published, but its marks were refused
  EXPECT_GE(a->failed_rounds, 1);
  EXPECT_NE(a->last_error.find("claim"), std::string::npos) << a->last_error;
  EXPECT_EQ(received.ids.size(), 100U);  // each row twice: JetStream's ids would drop the copies
  auto snapshot = producer_->Read();
  ASSERT_TRUE(snapshot.ok());
  Result<Rows<OutboxRow>> rows = (*snapshot)->OutboxRows(OutboxSelect::kAll, 0);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 50U);
  for (const OutboxRow& row : rows->rows) EXPECT_EQ(row.stream, "B") << row.seq;
}

TEST_F(RelayPostgresTest, AnIdleRelayWakesOnAProducersCommit) {
  Received received;
  CancelToken stop;
  // Without the notification the relay would look again only after ten minutes.
  RelayOptions options{.notify_wait_ms = 600'000, .cancel = &stop};
  Result<RelaySummary> summary = Status::Internal("not run");
  std::thread relay([&] { summary = RunOne("R", options, &received); });
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(milliseconds(300));  // the relay found nothing and waits
    Append(1, 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (Pending() != 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_EQ(Pending(), 0) << "round " << round;
  }
  stop.Cancel();
  relay.join();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->sent, 3);
}

}  // namespace
}  // namespace evident
