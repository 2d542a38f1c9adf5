// Kafka, measured in one run against librdkafka's mock cluster (tools/kafka-mock, three brokers
// on loopback, started through scripts/kafka.sh; docs/kafka.md says what the mock is not):
//   relay:   evident's relay (RunRelay, once, a SQLite outbox of N order events, the Kafka
//            publisher) against a raw librdkafka idempotent producer sending the same bytes,
//            keys (the subjects) and headers (content-type, ce_id, ce_source, ce_type), with the
//            producer settings evident's publisher uses, flushed to the last delivery report;
//            each side into a topic of its own of four partitions. Ratio: raw s / evident s.
//            Also (b): a hand-written relay on the outbox's own schema (rows read with the sqlite3
//            library a batch at a time, produced as raw does, flushed, each row marked sent with
//            one prepared UPDATE in one transaction per batch). Ratio: (b) s / evident s.
//            And (b) with a cheaper record of delivery than evident's layout has: each delivery a
//            row appended to a table of its own, the outbox row untouched (RawOutbox's
//            kDeliveryTable), to size that change. Ratios: raw s / (b) s and raw s / that s.
//   consume: the consume loop (examples/orders without effects, a fresh SQLite store) over a
//            Kafka topic holding N events against the same loop over a file of the same events;
//            each run is timed until Consume returns (the last event committed, the run stopped).
//            Ratio: file s / Kafka s. Also: a file of the records in the order a consumer of the
//            topic receives them (a partition's run, then another's), which separates what the
//            transport costs from what that order costs the store. Ratio: that file s / Kafka s.
// The sides alternate round by round; each figure is the median of the per-round ratios.
//
//   build/bench/kafka_bench [N=50000] [ROUNDS=5] [RELAY_BATCH=1024]   (docs/BENCHMARKS.md)
//   KAFKA_BENCH_ONLY=relay|consume runs one half; KAFKA_BENCH_BATCHES=1 prints each consume's
//   batch count and when its first and last commits came.
#include <librdkafka/rdkafka.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "consume_input.h"
#include "evident/cancel.h"
#include "evident/config.h"
#include "evident/consumer.h"
#include "evident/kafka.h"
#include "evident/relay.h"
#include "evident/store_sqlite.h"
#include "median.h"
#include "order_events.h"
#include "outbox_fill.h"
#include "raw_outbox.h"
#include "shell.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The mock cluster's directory while it runs: a benchmark that dies stops it first (its process
// would outlive the benchmark).
std::string g_cluster_dir;  // NOLINT: one per process, read by Die

std::string KafkaScript() {
  return "EVIDENT_KAFKA_MOCK=" EVIDENT_KAFKA_MOCK " bash " EVIDENT_SOURCE_DIR "/scripts/kafka.sh";
}

void StopCluster() {
  if (g_cluster_dir.empty()) return;
  (void)std::system((KafkaScript() + " stop " + g_cluster_dir).c_str());
  g_cluster_dir.clear();
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "kafka_bench: %s\n", what.c_str());
  StopCluster();
  std::exit(1);
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// `command`'s output; exits when it fails.
std::string Run(const std::string& command) {
  int rc = 0;
  std::string out = evident::bench::Shell(command, rc);
  if (rc != 0) Die(command + " failed: " + out);
  return out;
}

// The mock cluster of this run, stopped when the run ends.
class Cluster {
 public:
  explicit Cluster(fs::path dir) : dir_(std::move(dir)) {
    const std::string url = Run(KafkaScript() + " start " + dir_.string() + " 3");
    g_cluster_dir = dir_.string();
    // An exit from elsewhere (raw_outbox.h's failures exit too) stops it as well.
    static const bool registered = std::atexit(&StopCluster) == 0;
    (void)registered;
    bootstrap_ = url.substr(std::string("kafka://").size());
  }
  ~Cluster() { StopCluster(); }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  void Topic(const std::string& name) {
    (void)Run(KafkaScript() + " ctl " + dir_.string() + " topic " + name + " 4");
  }
  const std::string& bootstrap() const { return bootstrap_; }

 private:
  fs::path dir_;
  std::string bootstrap_;
};

double RunEvidentRelay(const Cluster& cluster, const std::string& topic, evident::Store& store,
                       size_t count, int64_t batch) {
  const evident::KafkaOptions kafka{.bootstrap = cluster.bootstrap(), .topic = topic};
  const evident::PublisherFactory open = [&kafka] { return evident::OpenKafkaPublisher(kafka); };
  const auto start = Clock::now();
  auto summary = evident::RunRelay(
      store, open, {.destination_name = topic, .batch_count_max = batch, .once = true});
  const double seconds = Seconds(start);
  if (!summary.ok()) Die("relay: " + summary.status().ToString());
  if (summary->sent != static_cast<int64_t>(count) || summary->failed_rounds != 0) {
    Die("relay sent " + std::to_string(summary->sent) + " of " + std::to_string(count) + ": " +
        summary->last_error);
  }
  return seconds;
}

// A raw idempotent producer with evident's publisher settings, its reports to `report`.
rd_kafka_t* NewRawProducer(const Cluster& cluster, void* opaque,
                           void (*report)(rd_kafka_t*, const rd_kafka_message_t*, void*)) {
  char why[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"bootstrap.servers", cluster.bootstrap()},
                                                        {"enable.idempotence", "true"},
                                                        {"acks", "all"},
                                                        {"partitioner", "murmur2_random"},
                                                        {"linger.ms", "2"}}) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), why, sizeof why) != RD_KAFKA_CONF_OK) {
      Die(why);
    }
  }
  rd_kafka_conf_set_opaque(conf, opaque);
  rd_kafka_conf_set_dr_msg_cb(conf, report);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
  if (rk == nullptr) Die(why);
  return rk;
}

struct RawReports {
  size_t done = 0, failed = 0;
};

void OnRawReport(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* reports = static_cast<RawReports*>(opaque);
  ++reports->done;
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) ++reports->failed;
}

// The raw librdkafka program: the idempotent producer with evident's publisher settings, every
// row's bytes, key and headers, then a flush to the last delivery report; with `flush_every`,
// also a flush after each batch of that many (the discipline of a relay that marks a batch
// sent once its reports are in).
double RunRawProducer(const Cluster& cluster, const std::string& topic,
                      const std::vector<evident::OutboxRow>& rows, size_t flush_every) {
  const auto start = Clock::now();
  RawReports reports;
  rd_kafka_t* rk = NewRawProducer(cluster, &reports, &OnRawReport);
  for (size_t i = 0; i < rows.size(); ++i) {
    const evident::OutboxRow& row = rows[i];
    if (flush_every > 0 && i > 0 && i % flush_every == 0) (void)rd_kafka_flush(rk, 60'000);
    rd_kafka_headers_t* headers = rd_kafka_headers_new(4);
    rd_kafka_header_add(headers, "content-type", -1, "application/cloudevents+json", -1);
    rd_kafka_header_add(headers, "ce_id", -1, row.event_id.data(), row.event_id.size());
    rd_kafka_header_add(headers, "ce_source", -1, row.source.data(), row.source.size());
    rd_kafka_header_add(headers, "ce_type", -1, row.type.data(), row.type.size());
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(topic.c_str()),
                RD_KAFKA_V_KEY(row.subject.data(), row.subject.size()),
                RD_KAFKA_V_VALUE(const_cast<char*>(row.bytes.data()), row.bytes.size()),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers),
                RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(rk, 10);
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) Die(std::string("raw: ") + rd_kafka_err2str(err));
  }
  if (rd_kafka_flush(rk, 60'000) != RD_KAFKA_RESP_ERR_NO_ERROR) Die("raw: flush timed out");
  rd_kafka_destroy(rk);
  const double seconds = Seconds(start);
  if (reports.done != rows.size() || reports.failed != 0) Die("raw: deliveries failed");
  return seconds;
}

// (b)'s delivery reports: each record's offset at its index in the batch (its opaque).
struct RawRelayReports {
  std::vector<int64_t> offsets;
  size_t failed = 0;
};

void OnRawRelayReport(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* reports = static_cast<RawRelayReports*>(opaque);
  const auto index = reinterpret_cast<uintptr_t>(m->_private);
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR || index >= reports->offsets.size()) {
    ++reports->failed;
    return;
  }
  reports->offsets[index] = m->offset;
}

// Produces the row RawOutbox::Pending stepped to as record `index`.
void ProduceRow(rd_kafka_t* rk, const std::string& topic, sqlite3_stmt* row, size_t index) {
  using evident::bench::RawOutbox;
  const std::string_view id = RawOutbox::Text(row, RawOutbox::kEventId);
  const std::string_view source = RawOutbox::Text(row, RawOutbox::kSource);
  const std::string_view type = RawOutbox::Text(row, RawOutbox::kType);
  const std::string_view subject = RawOutbox::Text(row, RawOutbox::kSubject);
  const std::string_view bytes = RawOutbox::Text(row, RawOutbox::kBytes);
  rd_kafka_headers_t* headers = rd_kafka_headers_new(4);
  rd_kafka_header_add(headers, "content-type", -1, "application/cloudevents+json", -1);
  rd_kafka_header_add(headers, "ce_id", -1, id.data(), static_cast<ssize_t>(id.size()));
  rd_kafka_header_add(headers, "ce_source", -1, source.data(), static_cast<ssize_t>(source.size()));
  rd_kafka_header_add(headers, "ce_type", -1, type.data(), static_cast<ssize_t>(type.size()));
  rd_kafka_resp_err_t err;
  while ((err = rd_kafka_producev(
              rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(subject.data(), subject.size()),
              RD_KAFKA_V_VALUE(const_cast<char*>(bytes.data()), bytes.size()),
              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers),
              RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<uintptr_t>(index))),
              RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
    rd_kafka_poll(rk, 10);
  }
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) Die(std::string("raw relay: ") + rd_kafka_err2str(err));
}

// (b): read a batch of pending rows with the sqlite3 library, produce them, flush to the last
// delivery report, mark each row sent with its offset (one prepared UPDATE per row, one
// transaction per batch, synchronous=FULL), and again until none is pending.
double RunRawRelay(
    const Cluster& cluster, const std::string& topic, const fs::path& outbox, size_t count,
    int64_t batch,
    evident::bench::RawOutbox::Record record = evident::bench::RawOutbox::Record::kUpdate) {
  const auto start = Clock::now();
  evident::bench::RawOutbox rows(outbox, record);
  RawRelayReports reports;
  rd_kafka_t* rk = NewRawProducer(cluster, &reports, &OnRawRelayReport);
  size_t sent = 0;
  std::vector<int64_t> seqs;
  while (sent < count) {
    seqs.clear();
    reports.offsets.assign(static_cast<size_t>(batch), -1);
    rows.Pending(batch, [&](sqlite3_stmt* row) {
      ProduceRow(rk, topic, row, seqs.size());
      seqs.push_back(sqlite3_column_int64(row, evident::bench::RawOutbox::kSeq));
    });
    if (seqs.empty()) Die("raw relay: no pending rows");
    if (rd_kafka_flush(rk, 60'000) != RD_KAFKA_RESP_ERR_NO_ERROR || reports.failed != 0) {
      Die("raw relay: deliveries failed");
    }
    reports.offsets.resize(seqs.size());
    rows.MarkSent(seqs, topic, reports.offsets);
    sent += seqs.size();
  }
  rd_kafka_destroy(rk);
  rows.Close();
  return Seconds(start);
}

// The orders consumers over `source` into a fresh store at `db`, until `count` events are
// committed; its seconds.
double RunConsume(const evident::Config& config, evident::Source& source, const fs::path& db,
                  int64_t count) {
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);
  auto store = evident::OpenSqliteStore(db.string());
  if (!store.ok()) Die(store.status().ToString());
  auto pipeline = evident::Pipeline::Create(config);
  if (!pipeline.ok()) Die(pipeline.status().ToString());
  evident::CancelToken done;
  int64_t committed = 0;
  evident::ConsumeOptions options{.cancel = &done};
  const auto start = Clock::now();
  double first_commit_s = 0, last_commit_s = 0;
  options.on_committed = [&](const evident::CommittedBatch& batch) {
    if (committed == 0) first_commit_s = Seconds(start);
    last_commit_s = Seconds(start);
    committed += static_cast<int64_t>(batch.events);
    if (committed >= count) done.Cancel();
    return evident::Status::Ok();
  };
  auto summary = evident::Consume(**pipeline, **store, source, options);
  const double seconds = Seconds(start);
  if (!summary.ok()) Die("consume: " + summary.status().ToString());
  if (summary->events != count) Die("consume decided " + std::to_string(summary->events));
  if (std::getenv("KAFKA_BENCH_BATCHES") != nullptr) {
    std::printf("  %s: %lld batches, first commit at %.3f s, last at %.3f s, returned at %.3f s\n",
                source.name().c_str(), (long long)summary->batches, first_commit_s, last_commit_s,
                seconds);
  }
  return seconds;
}

// The Kafka source alone: `count` records fetched and acknowledged, nothing decided; its seconds
// (where a consume's time goes: the source's hand-over, or the loop's work).
double DrainSource(evident::Source& source, int64_t count, std::ofstream* order = nullptr) {
  const auto start = Clock::now();
  if (!source.Start(std::nullopt).ok()) Die("the source did not start");
  evident::Message m;
  for (int64_t n = 0; n < count;) {
    auto fetched = source.Fetch(m, 1000);
    if (!fetched.ok()) Die("fetch: " + fetched.status().ToString());
    if (*fetched != evident::Source::Fetched::kMessage) continue;
    if (order != nullptr) *order << m.bytes << '\n';
    if (++n % 1000 == 0 || n == count) (void)source.Acknowledge(m.cursor);
  }
  return Seconds(start);
}

std::vector<evident::OutboxRow> RowsOf(evident::Store& store, size_t count) {
  auto snapshot = store.Read();
  if (!snapshot.ok()) Die(snapshot.status().ToString());
  auto rows =
      (*snapshot)->OutboxRows(evident::OutboxSelect::kPending, 0, static_cast<int64_t>(count));
  if (!rows.ok() || rows->rows.size() != count) Die("outbox rows not read back");
  return std::move(rows->rows);
}

// The file's lines into `topic`, keyed by subject, through evident's publisher (not timed).
void Load(const Cluster& cluster, const std::string& topic, const fs::path& file) {
  auto publisher = evident::OpenKafkaPublisher({.bootstrap = cluster.bootstrap(), .topic = topic});
  if (!publisher.ok()) Die(publisher.status().ToString());
  std::ifstream in(file);
  std::vector<evident::OutgoingMessage> batch;
  for (std::string line; std::getline(in, line);) {
    evident::OutgoingMessage m{.id = std::to_string(batch.size()), .bytes = line};
    const size_t at = line.find("\"subject\":\"");
    if (at != std::string::npos) m.key = line.substr(at + 11, line.find('"', at + 11) - at - 11);
    batch.push_back(std::move(m));
  }
  for (size_t i = 0; i < batch.size();) {
    auto accepted =
        (*publisher)
            ->Publish(std::span(batch).subspan(i, std::min<size_t>(4096, batch.size() - i)));
    if (!accepted.ok() || *accepted == 0) Die("load: " + accepted.status().ToString());
    i += *accepted;
  }
}

// A fresh store at `db` consumed from a new source of the topic (group `group`); its seconds.
double RunTopic(const Cluster& cluster, const evident::Config& config, const fs::path& db,
                const std::string& group, size_t count) {
  auto kafka = evident::OpenKafkaSource(
      {.bootstrap = cluster.bootstrap(), .topic = "consume-in", .group = group});
  if (!kafka.ok()) Die("cannot open the source: " + kafka.status().ToString());
  return RunConsume(config, **kafka, db, static_cast<int64_t>(count));
}

double RunFile(const evident::Config& config, const fs::path& file, const fs::path& db,
               size_t count) {
  auto source = evident::OpenNdjsonSource(file.string());
  if (!source.ok()) Die("cannot open " + file.string());
  return RunConsume(config, **source, db, static_cast<int64_t>(count));
}

struct ConsumeFigures {
  std::vector<double> file;         // file s / Kafka s: the file in the generator's order
  std::vector<double> topic_order;  // the same events in a file, in the order the topic gave them
};

// The consume rounds: the loop over the topic, over a file of the same events, and over a file
// of the records in the order a consumer of the topic receives them (partition by partition:
// what the transport costs, apart from the order it hands the events in), alternating which
// goes first; each round also drains a fresh Kafka source alone.
ConsumeFigures ConsumeRounds(Cluster& cluster, const fs::path& dir, size_t count, int rounds) {
  ConsumeFigures figures;
  const fs::path config_path = dir / "evident.yaml", events_path = dir / "events.ndjson";
  evident::bench::WriteConfigWithoutEffects(config_path);
  evident::bench::WriteEvents(events_path, static_cast<int64_t>(count));
  auto config = evident::LoadConfig(config_path.string());
  if (!config.ok()) Die(config.status().ToString());
  cluster.Topic("consume-in");
  Load(cluster, "consume-in", events_path);
  const fs::path topic_order_path = dir / "topic-order.ndjson";
  {
    auto once = evident::OpenKafkaSource(
        {.bootstrap = cluster.bootstrap(), .topic = "consume-in", .group = "order"});
    if (!once.ok()) Die("cannot open the source");
    std::ofstream order(topic_order_path);
    DrainSource(**once, static_cast<int64_t>(count), &order);
    order.close();
    if (!order) Die("cannot write " + topic_order_path.string());
  }
  for (int round = 0; round < rounds; ++round) {
    const std::string group = "bench-" + std::to_string(round);
    double file_s = 0, kafka_s = 0, ordered_s = 0;
    if (round % 2 == 0) {
      kafka_s = RunTopic(cluster, *config, dir / "kafka.db", group, count);
      file_s = RunFile(*config, events_path, dir / "file.db", count);
      ordered_s = RunFile(*config, topic_order_path, dir / "ordered.db", count);
    } else {
      ordered_s = RunFile(*config, topic_order_path, dir / "ordered.db", count);
      file_s = RunFile(*config, events_path, dir / "file.db", count);
      kafka_s = RunTopic(cluster, *config, dir / "kafka.db", group, count);
    }
    figures.file.push_back(file_s / kafka_s);
    figures.topic_order.push_back(ordered_s / kafka_s);
    auto alone = evident::OpenKafkaSource({.bootstrap = cluster.bootstrap(),
                                           .topic = "consume-in",
                                           .group = "drain-" + std::to_string(round)});
    if (!alone.ok()) Die("cannot open the source");
    const double drain_s = DrainSource(**alone, static_cast<int64_t>(count));
    std::printf(
        "round %d consume: from Kafka %.3f s (%.0f/s); from a file %.3f s (%.0f/s), %.3f; from a "
        "file in the topic's order %.3f s, %.3f; the Kafka source alone %.3f s\n",
        round, kafka_s, count / kafka_s, file_s, count / file_s, file_s / kafka_s, ordered_s,
        ordered_s / kafka_s, drain_s);
  }
  return figures;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::stoul(argv[1]) : 50'000;
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 5;
  const int64_t batch = argc > 3 ? std::stoll(argv[3]) : evident::RelayOptions{}.batch_count_max;
  const fs::path dir =
      fs::temp_directory_path() / ("evident-kafka-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  Cluster cluster(dir / "kafka");
  std::printf("kafka_bench: %zu events, %d rounds, relay batches of %lld, the mock cluster at %s\n",
              count, rounds, static_cast<long long>(batch), cluster.bootstrap().c_str());

  // KAFKA_BENCH_ONLY=relay or =consume runs one half (to profile it alone); the other prints no
  // figure.
  const char* only_env = std::getenv("KAFKA_BENCH_ONLY");
  const std::string only = only_env == nullptr ? "" : only_env;
  const int relay_rounds = only == "consume" ? 0 : rounds;
  std::vector<double> relay_ratios, batched_ratios, raw_relay_ratios;
  std::vector<double> update_shares, delivery_shares;  // raw producer s / a hand-written relay s
  for (int round = 0; round < relay_rounds; ++round) {
    const std::vector<std::string> events =
        evident::bench::MakeContractOrderEvents(count, 1000 + static_cast<uint64_t>(round));
    std::unique_ptr<evident::Store> store = evident::bench::FillOutbox(dir / "outbox.db", events);
    const std::vector<evident::OutboxRow> rows = RowsOf(*store, count);
    const fs::path raw_outbox = dir / "raw-outbox.db";
    for (const char* part : {"", "-wal", "-shm"}) fs::remove(raw_outbox.string() + part);
    evident::bench::FillOutbox(raw_outbox, events).reset();  // closed: (b) opens it with sqlite3
    const fs::path delivery_outbox = dir / "delivery-outbox.db";
    for (const char* part : {"", "-wal", "-shm"}) fs::remove(delivery_outbox.string() + part);
    evident::bench::FillOutbox(delivery_outbox, events).reset();
    const std::string suffix = std::to_string(round);
    cluster.Topic("relay-" + suffix);
    cluster.Topic("raw-" + suffix);
    cluster.Topic("batched-" + suffix);
    cluster.Topic("rawrelay-" + suffix);
    cluster.Topic("delivery-" + suffix);
    constexpr auto kDeliveryTable = evident::bench::RawOutbox::Record::kDeliveryTable;
    double evident_s = 0, raw_s = 0, batched_s = 0, raw_relay_s = 0, delivery_s = 0;
    if (round % 2 == 0) {
      evident_s = RunEvidentRelay(cluster, "relay-" + suffix, *store, count, batch);
      raw_relay_s = RunRawRelay(cluster, "rawrelay-" + suffix, raw_outbox, count, batch);
      delivery_s =
          RunRawRelay(cluster, "delivery-" + suffix, delivery_outbox, count, batch, kDeliveryTable);
      raw_s = RunRawProducer(cluster, "raw-" + suffix, rows, 0);
      batched_s = RunRawProducer(cluster, "batched-" + suffix, rows, static_cast<size_t>(batch));
    } else {
      batched_s = RunRawProducer(cluster, "batched-" + suffix, rows, static_cast<size_t>(batch));
      raw_s = RunRawProducer(cluster, "raw-" + suffix, rows, 0);
      delivery_s =
          RunRawRelay(cluster, "delivery-" + suffix, delivery_outbox, count, batch, kDeliveryTable);
      raw_relay_s = RunRawRelay(cluster, "rawrelay-" + suffix, raw_outbox, count, batch);
      evident_s = RunEvidentRelay(cluster, "relay-" + suffix, *store, count, batch);
    }
    relay_ratios.push_back(raw_s / evident_s);
    batched_ratios.push_back(batched_s / evident_s);
    raw_relay_ratios.push_back(raw_relay_s / evident_s);
    update_shares.push_back(raw_s / raw_relay_s);
    delivery_shares.push_back(raw_s / delivery_s);
    std::printf(
        "round %d hand-written relays against the raw producer: marking with an UPDATE per row "
        "%.3f; recording deliveries in a table of their own %.3f s (%.0f/s), %.3f\n",
        round, raw_s / raw_relay_s, delivery_s, count / delivery_s, raw_s / delivery_s);
    std::printf(
        "round %d relay: evident %.3f s (%.0f/s); raw producer %.3f s (%.0f/s), %.3f; "
        "raw flushing per batch %.3f s (%.0f/s), %.3f; (b) raw relay %.3f s (%.0f/s), %.3f\n",
        round, evident_s, count / evident_s, raw_s, count / raw_s, raw_s / evident_s, batched_s,
        count / batched_s, batched_s / evident_s, raw_relay_s, count / raw_relay_s,
        raw_relay_s / evident_s);
  }

  const ConsumeFigures consume =
      only == "relay" ? ConsumeFigures{} : ConsumeRounds(cluster, dir, count, rounds);
  // One line per figure, its median and spread (bench/median.h); a half not run prints none.
  evident::bench::PrintFigure("kafka_relay_raw", relay_ratios);
  evident::bench::PrintFigure("kafka_relay_raw_batched", batched_ratios);
  evident::bench::PrintFigure("kafka_relay_raw_store", raw_relay_ratios);
  evident::bench::PrintFigure("kafka_raw_relay_update_share", update_shares);
  evident::bench::PrintFigure("kafka_raw_relay_delivery_table_share", delivery_shares);
  evident::bench::PrintFigure("kafka_consume_file", consume.file);
  evident::bench::PrintFigure("kafka_consume_file_topic_order", consume.topic_order);
  StopCluster();  // before its directory goes: kafka.sh finds the mock by the pid file there
  fs::remove_all(dir);
  return 0;
}
