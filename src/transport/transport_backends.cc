// The backends of the Source and Publisher conformance suites (transport_backends.h).
#include "transport/transport_backends.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <nats/nats.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>

#include "core/fnv1a.h"
#include "evident/env.h"
#include "evident/fault_transport.h"
#include "evident/jetstream.h"
#include "evident/kafka.h"
#include "testing/shell.h"
#include "transport/http/intake.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

using test_support::Shell;

// One nats-server for the test process, started on first use, stopped at exit.
class NatsServer {
 public:
  ~NatsServer() {
    if (dir_.empty()) return;
    int rc = 0;
    Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh stop " + dir_, &rc);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Stops the server (false) or starts it again on its port with its streams (true).
  void SetUp(bool up) {
    std::lock_guard<std::mutex> lock(mu_);
    if (dir_.empty()) return;
    int rc = 0;
    const std::string port = url_.substr(url_.rfind(':') + 1);
    const std::string out =
        Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh " +
                  std::string(up ? "start " + dir_ + " " + port : "stop " + dir_),
              &rc);
    EXPECT_EQ(rc, 0) << "nats-server did not " << (up ? "start again: " : "stop: ") << out;
  }
  // nats://127.0.0.1:PORT; the test fails when the server cannot start.
  std::string Url() {
    std::lock_guard<std::mutex> lock(mu_);
    if (url_.empty()) {
      char tmpl[] = "/tmp/evident-transport-js-XXXXXX";
      if (mkdtemp(tmpl) == nullptr) return "";
      dir_ = tmpl;
      int rc = 0;
      url_ = Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh start " + dir_, &rc);
      EXPECT_EQ(rc, 0) << "nats-server did not start: " << url_;
      if (rc != 0) url_.clear();
    }
    return url_;
  }

 private:
  std::mutex mu_;
  std::string dir_, url_;
};

NatsServer& Nats() {
  static NatsServer server;
  return server;
}

// A stream of its own per test directory, with subjects of its own (streams of one server may not
// share subjects).
JetStreamOptions StreamFor(const fs::path& dir) {
  char name[32];
  std::snprintf(name, sizeof name, "S%016llx",
                static_cast<unsigned long long>(Fnv1a(kFnv1aOffset, dir.string())));
  // 2 s: a delivery and its ack are apart far less than that, on a loaded machine too; a
  // message fetched and never acknowledged comes again that soon.
  return {.url = Nats().Url(), .stream = name, .subject_prefix = name, .ack_wait_ms = 2000};
}

std::unique_ptr<Source> OpenJetStream(const fs::path& dir,
                                      const std::vector<std::string>& messages) {
  const JetStreamOptions js = StreamFor(dir);
  if (!fs::exists(dir / "published")) {
    auto publisher = OpenJetStreamPublisher(js);
    EXPECT_TRUE(publisher.ok()) << publisher.status().ToString();
    if (!publisher.ok()) return nullptr;
    std::vector<OutgoingMessage> batch;
    for (size_t i = 0; i < messages.size(); ++i) {
      batch.push_back({"p0.suite", "m" + std::to_string(i), messages[i]});
    }
    if (!batch.empty()) {
      const Result<size_t> accepted = (*publisher)->Publish(batch);
      EXPECT_TRUE(accepted.ok() && *accepted == batch.size()) << accepted.status().ToString();
    }
    EXPECT_TRUE((*publisher)->Close().ok());
    std::ofstream(dir / "published") << "yes\n";
  }
  auto source = OpenJetStreamSource(js, "suite", "");
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  return source.ok() ? std::move(source).value() : nullptr;
}

// One mock Kafka cluster (scripts/kafka.sh, tools/kafka-mock) for the test process, started on
// first use, stopped at exit: its data lives in that process, so an outage takes its brokers
// down and brings them up again rather than restarting it.
class KafkaCluster {
 public:
  ~KafkaCluster() {
    if (dir_.empty()) return;
    int rc = 0;
    Shell("bash " EVIDENT_SOURCE_DIR "/scripts/kafka.sh stop " + dir_, &rc);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // "host:port,..."; the test fails when the cluster cannot start.
  std::string Bootstrap() {
    std::lock_guard<std::mutex> lock(mu_);
    if (bootstrap_.empty()) {
      char tmpl[] = "/tmp/evident-transport-kafka-XXXXXX";
      if (mkdtemp(tmpl) == nullptr) return "";
      dir_ = tmpl;
      int rc = 0;
      const std::string url = Shell("EVIDENT_KAFKA_MOCK=" EVIDENT_BINARY_DIR
                                    "/tools/kafka-mock/evident-kafka-mock bash " EVIDENT_SOURCE_DIR
                                    "/scripts/kafka.sh start " +
                                        dir_ + " 3",
                                    &rc);
      EXPECT_EQ(rc, 0) << "the mock Kafka cluster did not start: " << url;
      if (rc == 0) bootstrap_ = url.substr(std::string("kafka://").size());
    }
    return bootstrap_;
  }
  // A command of scripts/kafka.sh ctl: "topic T 1", "down -1", "up -1".
  void Control(const std::string& command) {
    (void)Bootstrap();
    int rc = 0;
    const std::string out = Shell("EVIDENT_KAFKA_MOCK=" EVIDENT_BINARY_DIR
                                  "/tools/kafka-mock/evident-kafka-mock bash " EVIDENT_SOURCE_DIR
                                  "/scripts/kafka.sh ctl " +
                                      dir_ + " " + command,
                                  &rc);
    EXPECT_EQ(rc, 0) << command << ": " << out;
  }

 private:
  std::mutex mu_;
  std::string dir_, bootstrap_;
};

KafkaCluster& Kafka() {
  static KafkaCluster cluster;
  return cluster;
}

// A topic of its own per test directory, of one partition (the suite's order is one
// partition's), made on first use.
KafkaOptions TopicFor(const fs::path& dir) {
  char name[32];
  std::snprintf(name, sizeof name, "T%016llx",
                static_cast<unsigned long long>(Fnv1a(kFnv1aOffset, dir.string())));
  if (!fs::exists(dir / "topic")) {
    Kafka().Control(std::string("topic ") + name + " 1");
    std::ofstream(dir / "topic") << name << "\n";
  }
  return {.bootstrap = Kafka().Bootstrap(),
          .topic = name,
          .publish_timeout_ms = 10'000,
          .group = "suite"};
}

std::unique_ptr<Source> OpenKafka(const fs::path& dir, const std::vector<std::string>& messages) {
  const KafkaOptions kafka = TopicFor(dir);
  if (!fs::exists(dir / "published")) {
    auto publisher = OpenKafkaPublisher(kafka);
    EXPECT_TRUE(publisher.ok()) << publisher.status().ToString();
    if (!publisher.ok()) return nullptr;
    std::vector<OutgoingMessage> batch;
    for (size_t i = 0; i < messages.size(); ++i) {
      batch.push_back({.id = "m" + std::to_string(i), .bytes = messages[i]});
    }
    if (!batch.empty()) {
      const Result<size_t> accepted = (*publisher)->Publish(batch);
      EXPECT_TRUE(accepted.ok() && *accepted == batch.size()) << accepted.status().ToString();
    }
    EXPECT_TRUE((*publisher)->Close().ok());
    std::ofstream(dir / "published") << "yes\n";
  }
  auto source = OpenKafkaSource(kafka);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  return source.ok() ? std::move(source).value() : nullptr;
}

// The records of a topic's partition 0, in order, read from its beginning to its end.
std::vector<std::string> TopicHeld(const KafkaOptions& kafka) {
  std::vector<std::string> out;
  char why[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", kafka.bootstrap.c_str(), why, sizeof why);
  rd_kafka_conf_set(conf, "group.id", "suite-reader", why, sizeof why);
  rd_kafka_conf_set(conf, "enable.partition.eof", "true", why, sizeof why);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why);
  if (rk == nullptr) return out;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, kafka.topic.c_str(), 0)->offset =
      RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  for (int quiet = 0; quiet < 100;) {  // 10 s of silence at most
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == nullptr) {
      ++quiet;
      continue;
    }
    const bool end = m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      out.emplace_back(static_cast<const char*>(m->payload), m->len);
    }
    rd_kafka_message_destroy(m);
    if (end) break;
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

std::unique_ptr<Source> OpenIntake(const fs::path&, const std::vector<std::string>& messages) {
  auto intake = std::make_unique<http::Intake>(1024, size_t{1} << 20);
  if (!messages.empty()) {
    auto exchange = std::make_shared<http::Exchange>([] {});
    std::vector<std::string> events = messages;
    EXPECT_EQ(intake->Submit(exchange, std::move(events)), http::Intake::Taken::kTaken);
  }
  return intake;
}

// The messages a stream holds, in order (libnats: each by its sequence).
std::vector<std::string> StreamHeld(const JetStreamOptions& js) {
  std::vector<std::string> out;
  natsConnection* nc = nullptr;
  jsCtx* ctx = nullptr;
  jsStreamInfo* si = nullptr;
  if (natsConnection_ConnectTo(&nc, js.url.c_str()) == NATS_OK &&
      natsConnection_JetStream(&ctx, nc, nullptr) == NATS_OK &&
      js_GetStreamInfo(&si, ctx, js.stream.c_str(), nullptr, nullptr) == NATS_OK) {
    for (uint64_t seq = si->State.FirstSeq; seq <= si->State.LastSeq && si->State.Msgs > 0; ++seq) {
      natsMsg* msg = nullptr;
      if (js_GetMsg(&msg, ctx, js.stream.c_str(), seq, nullptr, nullptr) != NATS_OK) continue;
      out.emplace_back(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
      natsMsg_Destroy(msg);
    }
    jsStreamInfo_Destroy(si);
  }
  if (ctx != nullptr) jsCtx_Destroy(ctx);
  if (nc != nullptr) natsConnection_Destroy(nc);
  return out;
}

std::vector<std::string> FileHeld(const fs::path& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The fd publisher writes to a descriptor its caller keeps: this one keeps it for the test.
class OwnedFdPublisher final : public Publisher {
 public:
  OwnedFdPublisher(int fd, std::unique_ptr<Publisher> target)
      : fd_(fd), target_(std::move(target)) {}
  ~OwnedFdPublisher() override { ::close(fd_); }
  Result<size_t> Publish(std::span<const OutgoingMessage> batch) override {
    return target_->Publish(batch);
  }
  Status Close() override { return target_->Close(); }

 private:
  int fd_;
  std::unique_ptr<Publisher> target_;
};

OutgoingMessage WithNewline() { return {"p0.suite", "bad", "{\"id\":\"bad\"}\n{}"}; }

}  // namespace

std::vector<SourceBackend> SourceBackends() {
  using Redelivery = SourceCapabilities::Redelivery;
  return {
      {"ndjson",
       {.ends = true, .resumes_from_position = true, .redelivers = Redelivery::kNo},
       [](const fs::path& dir, const std::vector<std::string>& messages) {
         const fs::path path = dir / "events.ndjson";
         if (!fs::exists(path)) {
           std::ofstream out(path);
           for (const std::string& m : messages) out << m << '\n';
         }
         return OpenNdjsonSource(path.string()).value();
       }},
      {"memory",
       {.ends = true, .resumes_from_position = true, .redelivers = Redelivery::kInOrder},
       [](const fs::path&, const std::vector<std::string>& messages) {
         return NewMemorySource("memory-source", messages);
       }},
      {"jetstream",
       {.ends = false,
        .resumes_from_position = false,
        .remembers_acknowledgements = true,
        .redelivers = Redelivery::kAnyOrder,
        .reports_outages = true},
       &OpenJetStream,
       [](bool up) { Nats().SetUp(up); }},
      {"kafka",
       {.ends = false,
        .resumes_from_position = true,
        .redelivers = Redelivery::kInOrder,
        .reports_outages = true},
       &OpenKafka,
       [](bool up) { Kafka().Control(up ? "up -1" : "down -1"); }},
      {"http_intake", {.ends = false, .redelivers = Redelivery::kNo}, &OpenIntake},
      // The fault wrapper with nothing armed forwards every call: a memory source's claims.
      {"fault_over_memory",
       {.ends = true, .resumes_from_position = true, .redelivers = Redelivery::kInOrder},
       [](const fs::path&, const std::vector<std::string>& messages) -> std::unique_ptr<Source> {
         return std::make_unique<FaultSource>(NewMemorySource("memory-source", messages));
       }},
  };
}

std::vector<PublisherBackend> PublisherBackends() {
  return {
      {"file",
       {},
       [](const fs::path& dir) { return OpenNdjsonPublisher(PosixEnv(), (dir / "out").string()); },
       [](const fs::path& dir) { return FileHeld(dir / "out"); },
       &WithNewline},
      {"fd",
       {},
       [](const fs::path& dir) -> Result<std::unique_ptr<Publisher>> {
         const std::string path = (dir / "out").string();
         const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
         if (fd < 0) return Status::IoError("open " + path);
         auto target = OpenFdPublisher(fd, path);
         if (!target.ok()) {
           ::close(fd);
           return target.status();
         }
         return std::unique_ptr<Publisher>(new OwnedFdPublisher(fd, std::move(target).value()));
       },
       [](const fs::path& dir) { return FileHeld(dir / "out"); },
       &WithNewline},
      {"fault_over_file",
       {},
       [](const fs::path& dir) -> Result<std::unique_ptr<Publisher>> {
         auto inner = OpenNdjsonPublisher(PosixEnv(), (dir / "out").string());
         if (!inner.ok()) return inner.status();
         return std::unique_ptr<Publisher>(new FaultPublisher(std::move(inner).value()));
       },
       [](const fs::path& dir) { return FileHeld(dir / "out"); },
       &WithNewline},
      {"jetstream",
       {.deduplicates = true, .numbers_messages = true},
       [](const fs::path& dir) { return OpenJetStreamPublisher(StreamFor(dir)); },
       [](const fs::path& dir) { return StreamHeld(StreamFor(dir)); },
       // Larger than the server's max_payload (1 MiB): the client library refuses it.
       [] {
         return OutgoingMessage{
             "p0.suite", "big",
             "{\"id\":\"big\",\"d\":\"" + std::string(size_t{2} << 20, 'x') + "\"}"};
       }},
      {"kafka",
       {},
       [](const fs::path& dir) { return OpenKafkaPublisher(TopicFor(dir)); },
       [](const fs::path& dir) { return TopicHeld(TopicFor(dir)); },
       // Larger than the producer's message.max.bytes (1,000,000): refused before it is sent.
       [] {
         return OutgoingMessage{
             .id = "big",
             .bytes = "{\"id\":\"big\",\"d\":\"" + std::string(size_t{2} << 20, 'x') + "\"}"};
       }},
  };
}

}  // namespace evident
