// The relay to JetStream against a raw libnats asynchronous publisher, measured in the same run
// on the same messages (the same bytes, subjects and Nats-Msg-Id headers) into the same kind of
// stream (jetstream.cc's: file storage, subjects "evident.>", a 120 s duplicate window):
//   evident: N order events appended to a SQLite outbox (not timed), then RunRelay (once) with a
//            factory that calls OpenJetStreamPublisher, until every row is marked sent;
//   raw:     js_PublishMsgAsync with the Nats-Msg-Id header for every message, at most
//            in_flight_max (256, evident's default) awaiting their PubAck, then
//            js_PublishAsyncComplete;
//   (b):     a raw relay: the rows read from the same kind of outbox with the sqlite3 library
//            (a batch of the relay's size at a time), published as raw does, and marked sent
//            with one prepared UPDATE per row in one transaction per batch (synchronous=FULL);
//            what a hand-written relay on the same schema does, one step after the other;
//   (c):     evident's JetStream publisher alone, Publish in batches of the relay's size, no
//            store: splits the relay's cost between the publisher and the outbox reads and marks.
// Each side publishes into a stream of its own, created before and deleted after its run, so no
// side finds the other's ids in the duplicate window. The sides alternate, round by round; the
// median of the per-round ratios is the figure.
//
//   build/bench/relay_bench [N=50000] [ROUNDS=5]      (see docs/BENCHMARKS.md)
#include <nats/nats.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "evident/jetstream.h"
#include "evident/outbox.h"
#include "evident/relay.h"
#include "evident/store_sqlite.h"
#include "median.h"
#include "nats_server.h"
#include "order_events.h"
#include "outbox_fill.h"
#include "raw_outbox.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using evident::bench::FillOutbox;
using evident::bench::NatsAdmin;

constexpr const char* kSubjectPrefix = "evident";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "relay_bench: %s\n", what.c_str());
  std::exit(1);
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The messages the relay builds from the outbox's rows: subject, id and bytes.
std::vector<evident::OutgoingMessage> MessagesOf(evident::Store& store, size_t count) {
  auto snapshot = store.Read();
  if (!snapshot.ok()) Die(snapshot.status().ToString());
  auto rows =
      (*snapshot)->OutboxRows(evident::OutboxSelect::kPending, 0, static_cast<int64_t>(count));
  if (!rows.ok() || rows->rows.size() != count) Die("outbox rows not read back");
  std::vector<evident::OutgoingMessage> messages;
  messages.reserve(count);
  for (const evident::OutboxRow& row : rows->rows) {
    messages.push_back({evident::RelayDestination(row.partition, row.type),
                        evident::RelayMessageId(row.source, row.event_id), row.bytes});
  }
  return messages;
}

double RunEvidentRelay(const std::string& url, const std::string& stream, evident::Store& store,
                       size_t count) {
  const evident::JetStreamOptions js{
      .url = url, .stream = stream, .subject_prefix = kSubjectPrefix};
  const evident::PublisherFactory open = [&js] { return evident::OpenJetStreamPublisher(js); };
  const evident::RelayOptions options{.destination_name = stream, .once = true};
  const auto start = Clock::now();
  auto summary = evident::RunRelay(store, open, options);
  const double seconds = Seconds(start);
  if (!summary.ok()) Die("relay: " + summary.status().ToString());
  if (summary->sent != static_cast<int64_t>(count) || summary->duplicates != 0 ||
      summary->failed_rounds != 0) {
    Die("relay sent " + std::to_string(summary->sent) + " of " + std::to_string(count) + ", " +
        std::to_string(summary->duplicates) + " duplicates, " +
        std::to_string(summary->failed_rounds) + " failed rounds: " + summary->last_error);
  }
  return seconds;
}

// What the raw publisher's PubAck handler saw.
struct RawAcks {
  std::atomic<int64_t> stored{0}, duplicates{0}, errors{0};
};

void OnRawAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error, void* closure) {
  auto* acks = static_cast<RawAcks*>(closure);
  if (ack != nullptr) {
    (ack->Duplicate ? acks->duplicates : acks->stored).fetch_add(1, std::memory_order_relaxed);
  } else {
    acks->errors.fetch_add(1, std::memory_order_relaxed);
    if (error != nullptr && error->ErrText != nullptr) {
      std::fprintf(stderr, "raw PubAck error: %s\n", error->ErrText);
    }
  }
  natsMsg_Destroy(msg);
}

// A raw libnats connection and JetStream context with evident's publisher options
// (jetstream.cc Open): at most `in_flight_max` awaiting their PubAck, `handler` called with each.
struct RawJetStream {
  natsConnection* connection = nullptr;
  jsCtx* js = nullptr;
};

RawJetStream ConnectRaw(const std::string& url, int64_t in_flight_max, jsPubAckHandler handler,
                        void* closure) {
  const evident::JetStreamOptions defaults;
  RawJetStream raw;
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = defaults.publish_timeout_ms;
  options.PublishAsync.MaxPending = in_flight_max;
  options.PublishAsync.StallWait = defaults.publish_timeout_ms;
  options.PublishAsync.AckHandler = handler;
  options.PublishAsync.AckHandlerClosure = closure;
  if (natsConnection_ConnectTo(&raw.connection, url.c_str()) != NATS_OK ||
      natsConnection_JetStream(&raw.js, raw.connection, &options) != NATS_OK) {
    Die("raw: connect to " + url);
  }
  return raw;
}

void CloseRaw(RawJetStream& raw) {
  jsCtx_Destroy(raw.js);
  natsConnection_Close(raw.connection);
  natsConnection_Destroy(raw.connection);
}

// The raw libnats program: connect, publish every message asynchronously with its Nats-Msg-Id,
// wait for the PubAcks, close. Options as evident's publisher sets them (jetstream.cc Open).
double RunRawPublisher(const std::string& url,
                       const std::vector<evident::OutgoingMessage>& messages,
                       int64_t in_flight_max) {
  RawAcks acks;
  std::vector<std::string> subjects;
  subjects.reserve(messages.size());
  for (const auto& m : messages)
    subjects.push_back(std::string(kSubjectPrefix) + "." + m.destination);

  const auto start = Clock::now();
  RawJetStream raw = ConnectRaw(url, in_flight_max, &OnRawAck, &acks);
  jsCtx* js = raw.js;
  for (size_t i = 0; i < messages.size(); ++i) {
    const evident::OutgoingMessage& m = messages[i];
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, subjects[i].c_str(), nullptr, m.bytes.data(),
                                  static_cast<int>(m.bytes.size()));
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Msg-Id", m.id.c_str());
    if (s == NATS_OK) s = js_PublishMsgAsync(js, &msg, nullptr);
    if (s != NATS_OK) {
      natsMsg_Destroy(msg);
      Die(std::string("raw publish: ") + natsStatus_GetText(s));
    }
  }
  jsPubOptions complete;
  jsPubOptions_Init(&complete);
  complete.MaxWait = 60'000;
  const natsStatus s = js_PublishAsyncComplete(js, &complete);
  CloseRaw(raw);
  const double seconds = Seconds(start);
  if (s != NATS_OK || acks.stored.load() != static_cast<int64_t>(messages.size()) ||
      acks.errors.load() != 0) {
    Die("raw: " + std::to_string(acks.stored.load()) + " stored, " +
        std::to_string(acks.duplicates.load()) + " duplicates, " +
        std::to_string(acks.errors.load()) + " errors: " + natsStatus_GetText(s));
  }
  return seconds;
}

// (c): evident's publisher alone, in batches of the relay's batch_count_max.
double RunEvidentPublisher(const std::string& url, const std::string& stream,
                           const std::vector<evident::OutgoingMessage>& messages) {
  const auto start = Clock::now();
  auto publisher = evident::OpenJetStreamPublisher(
      {.url = url, .stream = stream, .subject_prefix = kSubjectPrefix});
  if (!publisher.ok()) Die(publisher.status().ToString());
  const size_t batch = static_cast<size_t>(evident::RelayOptions{}.batch_count_max);
  for (size_t i = 0; i < messages.size();) {
    const std::span<const evident::OutgoingMessage> part(messages.data() + i,
                                                         std::min(batch, messages.size() - i));
    auto accepted = (*publisher)->Publish(part);
    if (!accepted.ok() || *accepted == 0) Die("publisher alone: batch not accepted");
    i += *accepted;
  }
  if (auto s = (*publisher)->Close(); !s.ok()) Die(s.ToString());
  return Seconds(start);
}

// (b)'s PubAck handler: the acknowledged stream sequences, in the order they arrive (one
// connection: the order of publication).
struct RawRelayAcks {
  std::mutex mutex;
  std::vector<uint64_t> sequences;
  int64_t errors = 0;
};

void OnRawRelayAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr*, void* closure) {
  auto* acks = static_cast<RawRelayAcks*>(closure);
  const std::lock_guard lock(acks->mutex);
  if (ack != nullptr && !ack->Duplicate) {
    acks->sequences.push_back(ack->Sequence);
  } else {
    ++acks->errors;
  }
  natsMsg_Destroy(msg);
}

// (b): a hand-written relay on the outbox's own schema: read a batch of pending rows with the
// sqlite3 library, publish them as the raw publisher does, wait for their PubAcks, mark each row
// sent (one prepared UPDATE per row, one transaction per batch), and again.
double RunRawRelay(const std::string& url, const std::string& stream, const fs::path& outbox,
                   size_t count, int64_t in_flight_max) {
  using evident::bench::RawOutbox;
  const int64_t batch = evident::RelayOptions{}.batch_count_max;
  RawRelayAcks acks;
  const auto start = Clock::now();
  RawOutbox rows(outbox);
  RawJetStream raw = ConnectRaw(url, in_flight_max, &OnRawRelayAck, &acks);
  jsPubOptions complete;
  jsPubOptions_Init(&complete);
  complete.MaxWait = 60'000;
  size_t sent = 0;
  std::vector<int64_t> seqs, sequences;
  while (sent < count) {
    seqs.clear();
    rows.Pending(batch, [&](sqlite3_stmt* row) {
      seqs.push_back(sqlite3_column_int64(row, RawOutbox::kSeq));
      const std::string subject =
          std::string(kSubjectPrefix) + "." +
          evident::RelayDestination(sqlite3_column_int64(row, RawOutbox::kPartition),
                                    RawOutbox::Text(row, RawOutbox::kType));
      const std::string id = evident::RelayMessageId(RawOutbox::Text(row, RawOutbox::kSource),
                                                     RawOutbox::Text(row, RawOutbox::kEventId));
      const std::string_view bytes = RawOutbox::Text(row, RawOutbox::kBytes);
      natsMsg* msg = nullptr;
      natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, bytes.data(),
                                    static_cast<int>(bytes.size()));
      if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Msg-Id", id.c_str());
      if (s == NATS_OK) s = js_PublishMsgAsync(raw.js, &msg, nullptr);
      if (s != NATS_OK) {
        natsMsg_Destroy(msg);
        Die(std::string("raw relay publish: ") + natsStatus_GetText(s));
      }
    });
    if (seqs.empty()) Die("raw relay: no pending rows");
    if (js_PublishAsyncComplete(raw.js, &complete) != NATS_OK) Die("raw relay: PubAcks not in");
    {
      const std::lock_guard lock(acks.mutex);
      if (acks.errors != 0 || acks.sequences.size() != seqs.size()) {
        Die("raw relay: PubAck errors");
      }
      sequences.assign(acks.sequences.begin(), acks.sequences.end());
      acks.sequences.clear();
    }
    rows.MarkSent(seqs, stream, sequences);
    sent += seqs.size();
  }
  CloseRaw(raw);
  rows.Close();
  return Seconds(start);
}

// Where the relay's time goes: its round (relay.cc Step and Mark) replayed through the same
// public calls, each step timed: read the pending rows (a snapshot), build the messages,
// Publish (until every PubAck of the batch is in), mark the batch sent (one UPDATE per row),
// commit. Runs once, after the rounds, on a fresh outbox and stream.
void PrintBreakdown(const std::string& url, const std::string& stream, evident::Store& store,
                    size_t count) {
  auto publisher = evident::OpenJetStreamPublisher(
      {.url = url, .stream = stream, .subject_prefix = kSubjectPrefix});
  if (!publisher.ok()) Die(publisher.status().ToString());
  const int64_t batch = evident::RelayOptions{}.batch_count_max;
  double read_s = 0, build_s = 0, publish_s = 0, mark_s = 0, commit_s = 0;
  std::vector<evident::OutgoingMessage> messages;
  size_t sent = 0, rounds = 0;
  const auto start = Clock::now();
  while (sent < count) {
    auto t = Clock::now();
    std::vector<evident::OutboxRow> rows;
    {
      auto snapshot = store.Read();
      if (!snapshot.ok()) Die(snapshot.status().ToString());
      auto pending = (*snapshot)->OutboxRows(evident::OutboxSelect::kPending, 0, batch);
      if (!pending.ok() || pending->rows.empty()) Die("breakdown: no pending rows");
      rows = std::move(pending->rows);
    }
    read_s += Seconds(t);
    t = Clock::now();
    messages.resize(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      messages[i].destination = evident::RelayDestination(rows[i].partition, rows[i].type);
      messages[i].id = evident::RelayMessageId(rows[i].source, rows[i].event_id);
      messages[i].bytes = rows[i].bytes;
    }
    build_s += Seconds(t);
    t = Clock::now();
    auto accepted = (*publisher)->Publish(messages);
    if (!accepted.ok() || *accepted != rows.size()) Die("breakdown: batch not accepted");
    publish_s += Seconds(t);
    t = Clock::now();
    auto tx = store.Begin();
    if (!tx.ok()) Die(tx.status().ToString());
    const auto& acks = (*publisher)->acks();
    for (size_t i = 0; i < rows.size(); ++i) {
      if (auto s = (*tx)->MarkOutboxSent(rows[i].seq, stream,
                                         static_cast<int64_t>(acks[i].sequence), 1'785'000'000'000);
          !s.ok()) {
        Die(s.ToString());
      }
    }
    mark_s += Seconds(t);
    t = Clock::now();
    if (auto s = (*tx)->Commit(); !s.ok()) Die(s.ToString());
    commit_s += Seconds(t);
    sent += rows.size();
    ++rounds;
  }
  const double total_s = Seconds(start);
  (void)(*publisher)->Close();
  const double n = static_cast<double>(count);
  const auto us = [n](double seconds) { return seconds / n * 1e6; };
  std::printf(
      "breakdown (relay round replayed, %zu rounds, %.0f events/s): per event read pending "
      "%.2f us, build messages %.2f us, Publish %.2f us, mark sent %.2f us, commit %.2f us "
      "(%.2f ms per commit); total %.2f us\n",
      rounds, n / total_s, us(read_s), us(build_s), us(publish_s), us(mark_s), us(commit_s),
      commit_s / static_cast<double>(rounds) * 1e3, us(total_s));
}

}  // namespace

int main(int argc, char** argv) {
  evident::ConfigureSqliteProcess();
  const size_t count = argc > 1 ? std::stoul(argv[1]) : 50'000;
  const int rounds = argc > 2 ? std::max(1, std::stoi(argv[2])) : 5;
  const int64_t in_flight_max = evident::JetStreamOptions{}.in_flight_max;
  const std::vector<std::string> events = evident::bench::MakeContractOrderEvents(count);
  size_t bytes = 0;
  for (const std::string& e : events) bytes += e.size();

  evident::bench::NatsServer server;
  if (!server.Start(EVIDENT_SOURCE_DIR)) return 1;
  NatsAdmin admin;
  if (!admin.Connect(server.url())) Die("cannot connect to " + server.url());
  const fs::path dir = fs::path(server.dir()) / "stores";
  fs::create_directories(dir);
  const int64_t window_ms = evident::JetStreamOptions{}.duplicate_window_ms;

  std::printf(
      "relay benchmark: %zu events, %.0f bytes on average, relay batches of %lld, in flight at "
      "most %lld, SQLite outbox synchronous=FULL WAL, JetStream file storage, %d rounds\n",
      count, static_cast<double>(bytes) / static_cast<double>(count),
      static_cast<long long>(evident::RelayOptions{}.batch_count_max),
      static_cast<long long>(in_flight_max), rounds);
  std::vector<double> ratios, publisher_ratios, raw_relay_ratios;
  // Runs `side` against a stream of its own, created first and deleted after (neither timed).
  const auto with_stream = [&](const std::string& stream, const auto& side) {
    if (!admin.CreateStream(stream, kSubjectPrefix, window_ms)) Die("stream " + stream);
    const double seconds = side();
    if (admin.StreamMessages(stream) != count) Die("stream " + stream + " lacks messages");
    if (!admin.DeleteStream(stream)) Die("cannot delete stream " + stream);
    return seconds;
  };
  for (int round = 1; round <= rounds; ++round) {
    const std::string r = std::to_string(round);
    const fs::path path = dir / ("outbox-" + r + ".db");
    std::unique_ptr<evident::Store> store = FillOutbox(path, events);
    const std::vector<evident::OutgoingMessage> messages = MessagesOf(*store, count);
    const fs::path raw_path = dir / ("raw-outbox-" + r + ".db");
    FillOutbox(raw_path, events).reset();  // closed: (b) opens it with the sqlite3 library
    double relay_s = 0, raw_s = 0, publisher_s = 0, raw_relay_s = 0;
    const auto relay = [&] {
      relay_s = with_stream(
          "RELAY_" + r, [&] { return RunEvidentRelay(server.url(), "RELAY_" + r, *store, count); });
    };
    const auto raw = [&] {
      raw_s = with_stream("RAW_" + r,
                          [&] { return RunRawPublisher(server.url(), messages, in_flight_max); });
    };
    const auto publisher = [&] {
      publisher_s = with_stream("PUBLISHER_" + r, [&] {
        return RunEvidentPublisher(server.url(), "PUBLISHER_" + r, messages);
      });
    };
    const auto raw_relay = [&] {
      raw_relay_s = with_stream("RAWRELAY_" + r, [&] {
        return RunRawRelay(server.url(), "RAWRELAY_" + r, raw_path, count, in_flight_max);
      });
    };
    if (round % 2 == 1) {
      raw();
      raw_relay();
      relay();
      publisher();
    } else {
      publisher();
      relay();
      raw_relay();
      raw();
    }
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(raw_path.string() + suffix);
    store.reset();
    fs::remove(path);
    fs::remove(path.string() + "-wal");
    fs::remove(path.string() + "-shm");
    const double n = static_cast<double>(count);
    ratios.push_back(raw_s / relay_s);
    publisher_ratios.push_back(raw_s / publisher_s);
    raw_relay_ratios.push_back(raw_relay_s / relay_s);
    std::printf(
        "round %d: raw libnats %8.0f msg/s | (b) raw relay %8.0f events/s | evident relay %8.0f "
        "events/s | evident publisher alone %8.0f msg/s | relay/raw %.3f | relay/(b) %.3f | "
        "publisher alone/raw %.3f\n",
        round, n / raw_s, n / raw_relay_s, n / relay_s, n / publisher_s, ratios.back(),
        raw_relay_ratios.back(), publisher_ratios.back());
    std::fflush(stdout);
  }
  {
    const fs::path path = dir / "outbox-breakdown.db";
    std::unique_ptr<evident::Store> store = FillOutbox(path, events);
    with_stream("BREAKDOWN", [&] {
      PrintBreakdown(server.url(), "BREAKDOWN", *store, count);
      return 0.0;
    });
  }
  std::printf("median ratio evident relay / raw libnats       : %.3f   (goal >= 0.7)\n",
              evident::bench::Median(ratios));
  std::printf("median ratio evident relay / (b) raw relay     : %.3f   (goal >= 0.85)\n",
              evident::bench::Median(raw_relay_ratios));
  std::printf("median ratio evident publisher alone / raw     : %.3f\n",
              evident::bench::Median(publisher_ratios));
  evident::bench::PrintFigure("relay_raw", ratios);
  evident::bench::PrintFigure("relay_raw_store", raw_relay_ratios);
  return 0;
}
