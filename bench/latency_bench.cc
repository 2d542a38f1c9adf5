// End-to-end latency at a steady rate: outbox commit -> relay -> JetStream -> consumer commit.
//
//   producer: appends one event per 1/RATE s (absolute deadlines, so a late commit does not
//             shift the ones after it) to a SQLite outbox through Outbox::Append, each in a
//             transaction of its own, and records when each commit returned;
//   relay:    RunRelay (once = false, default poll_ms) from a second handle on that store to a
//             JetStream stream through OpenJetStreamPublisher;
//   consumer: Consume over OpenJetStreamSource into a second SQLite store with
//             examples/orders/evident.yaml (linger_ms 5), its outcomes (written right after
//             each commit) into a pipe that a reader thread stamps line by line;
//   observer: a plain NATS subscription to the stream's subjects stamps each message as the
//             broker forwards it, which splits the latency into relay and consumer halves.
// Latency = consumer outcome stamp - outbox commit stamp (one steady clock, one process), over
// the events committed after the warm-up.
//
//   build/bench/latency_bench [MEASURE_S=10] [WARMUP_S=2] [RATE=1000] [FETCH_BATCH=64]
//                             [BUSY_POLL_US=0]
// Diagnostics, defaults as the library's: FETCH_BATCH is JetStreamOptions::fetch_batch of the
// consumer's source; BUSY_POLL_US > 0 replaces the SQLite busy handler of the producer's and the
// relay's outbox connections (the store's: sqlite3_busy_timeout) by one that retries every
// BUSY_POLL_US microseconds, to show what the write-lock hand-over costs (docs/BENCHMARKS.md).
#include <nats/nats.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "evident/config.h"
#include "evident/consumer.h"
#include "evident/jetstream.h"
#include "evident/outbox.h"
#include "evident/relay.h"
#include "evident/store_sqlite.h"
#include "nats_server.h"
#include "order_events.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kStream = "LATENCY";
constexpr const char* kSubjectPrefix = "evident";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "latency_bench: %s\n", what.c_str());
  std::exit(1);
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// Stamps per event index, written by one thread each and read once every thread has ended.
using Stamps = std::vector<std::atomic<int64_t>>;

// The event id after the last `separator` of `text`.
std::string_view IdAfterLast(std::string_view text, char separator) {
  const size_t at = text.rfind(separator);
  return at == std::string_view::npos ? text : text.substr(at + 1);
}

struct Observer {
  const std::unordered_map<std::string, size_t>* index = nullptr;
  Stamps* stamps = nullptr;
};

// The broker forwarded a message: stamp its event (its Nats-Msg-Id is "<source> <id>").
void OnBrokerMessage(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  const int64_t now = NowNs();
  auto* observer = static_cast<Observer*>(closure);
  const char* id = nullptr;
  if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) == NATS_OK && id != nullptr) {
    const auto it = observer->index->find(std::string(IdAfterLast(id, ' ')));
    if (it != observer->index->end()) {
      int64_t unset = 0;  // the first copy counts
      (*observer->stamps)[it->second].compare_exchange_strong(unset, now);
    }
  }
  natsMsg_Destroy(msg);
}

// The relay's store handle, timing how long each Begin waits for the write lock (the relay
// begins one transaction per round, to mark the round's batch sent) and each Read.
class TimedStore final : public evident::Store {
 public:
  explicit TimedStore(evident::Store& store) : store_(store) {}
  evident::Result<std::unique_ptr<evident::Transaction>> Begin() override {
    const auto start = Clock::now();
    auto tx = store_.Begin();
    begin_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    return tx;
  }
  evident::Result<std::unique_ptr<evident::Snapshot>> Read() override {
    const auto start = Clock::now();
    auto snapshot = store_.Read();
    read_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    return snapshot;
  }
  std::vector<double> begin_ms, read_ms;  // read once the relay has ended

 private:
  evident::Store& store_;
};

// A busy handler that retries every *closure microseconds, for at most 5 s (the store's
// busy_timeout_ms); SQLite's own sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50 and then 100 ms.
int PollBusy(void* closure, int attempts) {
  const int poll_us = *static_cast<int*>(closure);
  if (static_cast<int64_t>(attempts) * poll_us > 5'000'000) return 0;
  usleep(static_cast<useconds_t>(poll_us));
  return 1;
}

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
  size_t count = 0;
};

Percentiles Of(std::vector<double> v) {
  Percentiles p;
  p.count = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  const auto at = [&v](double q) {
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.p999 = at(0.999);
  p.max = v.back();
  return p;
}

void Print(const char* what, const Percentiles& p, const char* unit = "events") {
  std::printf("%-46s p50 %7.2f  p90 %7.2f  p99 %7.2f  p99.9 %7.2f  max %7.2f ms  (%zu %s)\n", what,
              p.p50, p.p90, p.p99, p.p999, p.max, p.count, unit);
}

}  // namespace

int main(int argc, char** argv) {
  evident::ConfigureSqliteProcess();
  const int measure_s = argc > 1 ? std::max(1, std::stoi(argv[1])) : 10;
  const int warmup_s = argc > 2 ? std::max(0, std::stoi(argv[2])) : 2;
  const int rate = argc > 3 ? std::max(1, std::stoi(argv[3])) : 1000;
  const size_t total = static_cast<size_t>(measure_s + warmup_s) * static_cast<size_t>(rate);
  const std::vector<std::string> events = evident::bench::MakeContractOrderEvents(total, 7);
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < total; ++i) {
    const size_t at = events[i].find("\"id\":\"") + 6;
    index.emplace(events[i].substr(at, events[i].find('"', at) - at), i);
  }

  evident::bench::NatsServer server;
  if (!server.Start(EVIDENT_SOURCE_DIR)) return 1;
  evident::bench::NatsAdmin admin;
  if (!admin.Connect(server.url())) Die("cannot connect to " + server.url());
  evident::JetStreamOptions js{
      .url = server.url(), .stream = kStream, .subject_prefix = kSubjectPrefix};
  if (argc > 4) js.fetch_batch = std::max(1, std::stoi(argv[4]));
  int busy_poll_us = argc > 5 ? std::max(0, std::stoi(argv[5])) : 0;
  if (!admin.CreateStream(kStream, kSubjectPrefix, js.duplicate_window_ms)) return 1;

  Stamps committed(total), brokered(total), consumed(total), deadline_late(total);
  Observer observer{&index, &brokered};
  natsSubscription* subscription = nullptr;
  if (natsConnection_Subscribe(&subscription, admin.connection,
                               (std::string(kSubjectPrefix) + ".>").c_str(), &OnBrokerMessage,
                               &observer) != NATS_OK ||
      natsConnection_Flush(admin.connection) != NATS_OK) {
    Die("observer subscription");
  }

  const fs::path dir = fs::path(server.dir()) / "stores";
  fs::create_directories(dir);
  const std::string outbox_path = (dir / "outbox.db").string();
  auto producer_store = evident::OpenSqliteStore(outbox_path);
  auto relay_store = evident::OpenSqliteStore(outbox_path);
  auto consumer_store = evident::OpenSqliteStore((dir / "consumer.db").string());
  if (!producer_store.ok() || !relay_store.ok() || !consumer_store.ok()) Die("cannot open stores");
  if (busy_poll_us > 0) {
    for (evident::Store* store : {producer_store->get(), relay_store->get()}) {
      auto tx = store->Begin();  // the store's connection is reached through a transaction
      if (!tx.ok()) Die(tx.status().ToString());
      sqlite3_busy_handler(evident::SqliteConnection(**tx), &PollBusy, &busy_poll_us);
      if (auto s = (*tx)->Rollback(); !s.ok()) Die(s.ToString());
    }
  }
  auto outbox = evident::Outbox::Create(
      {.contracts_dir = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts"});
  if (!outbox.ok()) Die(outbox.status().ToString());
  auto config =
      evident::LoadConfig(std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/evident.yaml");
  if (!config.ok()) Die(config.status().ToString());
  auto pipeline = evident::Pipeline::Create(*config);
  if (!pipeline.ok()) Die(pipeline.status().ToString());
  auto source = evident::OpenJetStreamSource(js, "latency", "");
  if (!source.ok()) Die(source.status().ToString());
  const evident::RelayOptions relay_defaults;

  // The consumer's outcomes: a pipe, read line by line and stamped on arrival.
  int fds[2];
  if (pipe(fds) != 0) Die("pipe");
  std::unique_ptr<evident::WritableFile> outcomes =
      evident::WritableFileOnDescriptor(fds[1], "the outcomes pipe");
  std::atomic<size_t> seen{0}, applied{0};
  std::thread reader([&] {
    std::string pending;
    char buffer[1 << 16];
    while (true) {
      const ssize_t n = read(fds[0], buffer, sizeof buffer);
      if (n <= 0) break;
      const int64_t now = NowNs();  // every line of this read arrived by now
      pending.append(buffer, static_cast<size_t>(n));
      size_t begin = 0;
      for (size_t end; (end = pending.find('\n', begin)) != std::string::npos; begin = end + 1) {
        const std::string_view line(pending.data() + begin, end - begin);
        const size_t key = line.find("\"key\":\"");
        if (key == std::string_view::npos) continue;
        const size_t key_end = line.find('"', key + 7);
        const auto it =
            index.find(std::string(IdAfterLast(line.substr(key + 7, key_end - key - 7), ':')));
        if (it == index.end()) continue;
        int64_t unset = 0;
        if (consumed[it->second].compare_exchange_strong(unset, now)) seen.fetch_add(1);
        if (line.find("\"outcome\":\"applied\"") != std::string_view::npos) applied.fetch_add(1);
      }
      pending.erase(0, begin);
    }
    close(fds[0]);
  });

  evident::CancelToken relay_cancel, consumer_cancel;
  evident::Status consumer_status, relay_status;
  evident::ConsumeSummary consume_summary;
  std::thread consumer([&] {
    auto summary = evident::Consume(**pipeline, **consumer_store, **source,
                                    {.outcomes = outcomes.get(), .cancel = &consumer_cancel});
    if (!summary.ok()) consumer_status = summary.status();
    if (summary.ok()) consume_summary = *summary;
    if (!outcomes->Close().ok()) consumer_status = evident::Status::IoError("outcomes pipe");
    close(fds[1]);  // the reader sees the end
  });
  const evident::PublisherFactory open = [&js] { return evident::OpenJetStreamPublisher(js); };
  TimedStore timed_relay_store(**relay_store);
  evident::RelaySummary relay_summary;
  std::thread relay([&] {
    auto summary = evident::RunRelay(timed_relay_store, open,
                                     {.destination_name = kStream, .cancel = &relay_cancel});
    if (!summary.ok()) relay_status = summary.status();
    if (summary.ok()) relay_summary = *summary;
  });

  std::printf(
      "latency benchmark: %d events/s for %d s after a %d s warm-up (%zu events, one outbox "
      "transaction each), relay poll_ms %lld and batches of %lld, consumer linger_ms %lld and "
      "batch_count_max %zu, JetStream pull batch %d, SQLite synchronous=FULL WAL on both sides, "
      "outbox busy handler: %s\n",
      rate, measure_s, warmup_s, total, static_cast<long long>(relay_defaults.poll_ms),
      static_cast<long long>(relay_defaults.batch_count_max),
      static_cast<long long>(config->linger_ms), config->batch_count_max, js.fetch_batch,
      busy_poll_us > 0 ? ("a retry every " + std::to_string(busy_poll_us) + " us").c_str()
                       : "the store's (sqlite3_busy_timeout)");
  std::fflush(stdout);

  // The producer, on this thread.
  const auto period = std::chrono::nanoseconds(1'000'000'000 / rate);
  const auto start = Clock::now() + std::chrono::milliseconds(200);
  std::vector<double> append_ms, begin_ms, commit_ms;
  for (size_t i = 0; i < total; ++i) {
    const auto deadline = start + period * static_cast<int64_t>(i);
    std::this_thread::sleep_until(deadline);
    const auto begun = Clock::now();
    deadline_late[i] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(begun - deadline).count();
    auto tx = (*producer_store)->Begin();
    if (!tx.ok()) Die("producer: " + tx.status().ToString());
    const auto locked = Clock::now();
    begin_ms.push_back(std::chrono::duration<double, std::milli>(locked - begun).count());
    auto decision = (*outbox)->Append(**tx, events[i], 1'785'000'000'000);
    if (!decision.ok() || decision->outcome != evident::OutboxDecisionOutcome::kAppended) {
      Die("producer: event " + std::to_string(i) + " not appended");
    }
    const auto appended = Clock::now();
    if (auto s = (*tx)->Commit(); !s.ok()) Die("producer: " + s.ToString());
    const auto done = Clock::now();
    committed[i] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(done.time_since_epoch()).count();
    commit_ms.push_back(std::chrono::duration<double, std::milli>(done - appended).count());
    append_ms.push_back(std::chrono::duration<double, std::milli>(done - begun).count());
  }
  const double produced_s = std::chrono::duration<double>(Clock::now() - start).count();

  // Wait for the consumer to commit everything (bounded), then stop the relay and the consumer.
  const auto drain_deadline = Clock::now() + std::chrono::seconds(60);
  while (seen.load() < total && Clock::now() < drain_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  relay_cancel.Cancel();
  consumer_cancel.Cancel();
  relay.join();
  consumer.join();
  reader.join();
  natsSubscription_Unsubscribe(subscription);
  natsSubscription_Destroy(subscription);
  if (!relay_status.ok()) Die("relay: " + relay_status.ToString());
  if (!consumer_status.ok()) Die("consumer: " + consumer_status.ToString());
  if (seen.load() != total) {
    Die("the consumer committed " + std::to_string(seen.load()) + " of " + std::to_string(total));
  }

  const int64_t warm_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              start.time_since_epoch() + std::chrono::seconds(warmup_s))
                              .count();
  std::vector<double> end_to_end, relay_half, consumer_half, late;
  for (size_t i = 0; i < total; ++i) {
    if (committed[i] < warm_ns) continue;
    end_to_end.push_back(static_cast<double>(consumed[i] - committed[i]) / 1e6);
    late.push_back(static_cast<double>(deadline_late[i]) / 1e6);
    if (brokered[i] != 0) {
      relay_half.push_back(static_cast<double>(brokered[i] - committed[i]) / 1e6);
      consumer_half.push_back(static_cast<double>(consumed[i] - brokered[i]) / 1e6);
    }
  }
  const Percentiles e2e = Of(end_to_end);
  std::printf("producer: %zu events in %.2f s (%.0f events/s); %zu of %zu applied\n", total,
              produced_s, static_cast<double>(total) / produced_s, applied.load(), total);
  Print("producer start after its deadline", Of(late));
  Print("producer Begin + Append + Commit", Of(append_ms));
  Print("  of which Begin (the write lock)", Of(begin_ms));
  Print("  of which Commit", Of(commit_ms));
  std::printf(
      "relay: %lld sent (%lld of them duplicates at the broker) in %zu write transactions (%.1f "
      "rows each), %lld failed rounds%s%s\n",
      static_cast<long long>(relay_summary.sent), static_cast<long long>(relay_summary.duplicates),
      timed_relay_store.begin_ms.size(),
      static_cast<double>(relay_summary.sent) /
          static_cast<double>(std::max<size_t>(1, timed_relay_store.begin_ms.size())),
      static_cast<long long>(relay_summary.failed_rounds),
      relay_summary.last_error.empty() ? "" : "; last error: ", relay_summary.last_error.c_str());
  // Every round reads; a round that found rows begins a transaction to mark them; one that
  // found none sleeps poll_ms.
  std::printf("relay rounds that found nothing pending and slept poll_ms: %zu (of %zu)\n",
              timed_relay_store.read_ms.size() -
                  std::min(timed_relay_store.read_ms.size(), timed_relay_store.begin_ms.size()),
              timed_relay_store.read_ms.size());
  Print("relay Begin (the write lock)", Of(timed_relay_store.begin_ms), "calls");
  Print("relay Read (the snapshot)", Of(timed_relay_store.read_ms), "calls");
  Print("outbox commit -> broker forwards (relay)", Of(relay_half));
  std::printf("consumer: %lld events in %lld transactions (%.1f each)\n",
              static_cast<long long>(consume_summary.events),
              static_cast<long long>(consume_summary.batches),
              static_cast<double>(consume_summary.events) /
                  static_cast<double>(std::max<int64_t>(1, consume_summary.batches)));
  Print("broker forwards -> consumer commit", Of(consumer_half));
  Print("outbox commit -> consumer commit (end to end)", e2e);
  std::printf(
      "ratio p50 end to end / relay poll_ms (%lld ms): %.2f; / consumer linger_ms (%lld ms): "
      "%.2f; / their sum: %.2f\n",
      static_cast<long long>(relay_defaults.poll_ms),
      e2e.p50 / static_cast<double>(relay_defaults.poll_ms),
      static_cast<long long>(config->linger_ms), e2e.p50 / static_cast<double>(config->linger_ms),
      e2e.p50 / static_cast<double>(relay_defaults.poll_ms + config->linger_ms));
  return 0;
}
