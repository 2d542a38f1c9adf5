// `evident relay --to kafka://` and `evident consume --from kafka://` against librdkafka's mock
// cluster (tools/kafka-mock through scripts/kafka.sh: three brokers on loopback, a topic of four
// partitions), with faults injected through the mock's control socket. Never skipped: a cluster
// that cannot start fails the test. What the mock cannot prove is in docs/kafka.md.
//
//   - the relay through request errors on produce, a broker down and up again, a leader moved,
//     a slow broker, and kills -9 at random moments, then a --once run: the topic holds every
//     outbox row at least once, with its exact bytes and its subject as the key, the first copy of
//     each row in the outbox's order per subject, and every row is marked sent;
//   - the consumer killed -9 at the fault points of its commit path (after the store's commit
//     and before Kafka's, among them), at random moments, and through errors on offset commits
//     and a broker down, each run restarted from the store's positions: the store it ends with
//     equals, row for row, that of one uninterrupted run over the same topic (a Kafka source
//     begins at the store's positions, so a killed run's uncommitted batch is read again in the
//     same order and nothing is decided twice); and no event was reported applied twice.
#include "evident/kafka.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "evident/store.h"
#include "evident/store_groups.h"
#include "evident/store_sqlite.h"
#include "orders_input.h"
#include "run_process.h"
#include "serve/http_test_client.h"
#include "serve_process.h"
#include "store/postgres/test_database.h"
#include "store_dump.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;
using serve::testing::Http;

constexpr const char* kTopic = "orders";

std::string StatusEvent(int n) {
  return R"({"specversion":"1.0","id":"evt-)" + std::to_string(n) +
         R"(","source":"training://orders/checkout","type":"order.status.changed","subject":"order-)" +
         std::to_string(n % 97) + R"(","data":{"schemaVersion":1,"orderId":"order-)" +
         std::to_string(n % 97) + R"(","status":"s)" + std::to_string(n) + R"("}})";
}

// A record of the topic.
struct Record {
  int32_t partition = 0;
  int64_t offset = 0;
  std::string key, value, content_type;
};

class KafkaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/evident-kafka-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    int rc = 0;
    url_ = Shell(Script() + " start " + KafkaDir() + " 3 " + kTopic + ":4", &rc);
    ASSERT_EQ(rc, 0) << "the mock Kafka cluster did not start: " << url_;
    ASSERT_EQ(url_.rfind("kafka://", 0), 0u) << url_;
  }

  void TearDown() override {
    int rc = 0;
    Shell(Script() + " stop " + KafkaDir(), &rc);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::string Script() {
    return "EVIDENT_KAFKA_MOCK=" EVIDENT_BINARY_DIR
           "/tools/kafka-mock/evident-kafka-mock bash " EVIDENT_SOURCE_DIR "/scripts/kafka.sh";
  }
  std::string KafkaDir() const { return (fs::path(dir_) / "kafka").string(); }
  std::string Path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // A fault, through the mock's control socket.
  void Control(const std::string& command) {
    int rc = 0;
    const std::string answer = Shell(Script() + " ctl " + KafkaDir() + " " + command, &rc);
    EXPECT_EQ(rc, 0) << command << ": " << answer;
  }

  // Every record of the topic, partition by partition, from the beginning to the end.
  std::vector<Record> ReadTopic() {
    std::vector<Record> out;
    char why[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", url_.substr(8).c_str(), why, sizeof why);
    rd_kafka_conf_set(conf, "group.id", "test-reader", why, sizeof why);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", why, sizeof why);
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why);
    if (rk == nullptr) {
      ADD_FAILURE() << why;
      return out;
    }
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(4);
    for (int p = 0; p < 4; ++p) {
      rd_kafka_topic_partition_list_add(list, kTopic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    std::set<int32_t> ended;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (ended.size() < 4 && std::chrono::steady_clock::now() < deadline) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
      if (m == nullptr) continue;
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) ended.insert(m->partition);
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) out.push_back(ToRecord(m));
      rd_kafka_message_destroy(m);
    }
    std::map<int32_t, int> per;
    for (const Record& r : out) per[r.partition]++;
    std::string counts;
    for (const auto& [p, n] : per) counts += " p" + std::to_string(p) + "=" + std::to_string(n);
    EXPECT_EQ(ended.size(), 4u) << "the topic could not be read to its end:" << counts;
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return out;
  }

  // Each line one record, keyed by its subject when it has one.
  void Publish(const std::vector<std::string>& lines) {
    auto publisher = OpenKafkaPublisher({.bootstrap = url_.substr(8), .topic = kTopic});
    ASSERT_TRUE(publisher.ok()) << publisher.status().ToString();
    std::vector<OutgoingMessage> batch;
    for (size_t i = 0; i < lines.size(); ++i) {
      OutgoingMessage m{.id = "line-" + std::to_string(i), .bytes = lines[i]};
      const size_t at = lines[i].find("\"subject\":\"");
      if (at != std::string::npos) {
        m.key = lines[i].substr(at + 11, lines[i].find('"', at + 11) - (at + 11));
      }
      batch.push_back(std::move(m));
    }
    const Result<size_t> accepted = (*publisher)->Publish(batch);
    ASSERT_TRUE(accepted.ok() && *accepted == batch.size()) << accepted.status().ToString();
    ASSERT_TRUE((*publisher)->Close().ok());
  }

  // How often each key was reported applied in the outcome files `paths` (of `consumer` only,
  // when given); a killed run's torn last line is left out.
  static std::map<std::string, int> AppliedKeys(const std::vector<std::string>& paths,
                                                const std::string& consumer = "") {
    std::map<std::string, int> applied;
    for (const std::string& path : paths) {
      std::ifstream in(path);
      for (std::string line; std::getline(in, line);) {
        if (line.find("\"outcome\":\"applied\"") == std::string::npos) continue;
        if (!consumer.empty() &&
            line.find("\"consumer\":\"" + consumer + "\"") == std::string::npos) {
          continue;
        }
        const size_t at = line.find("\"key\":\"");
        if (at == std::string::npos) continue;
        applied[line.substr(at + 7, line.find('"', at + 7) - (at + 7))] += 1;
      }
    }
    return applied;
  }

  static Record ToRecord(const rd_kafka_message_t* m) {
    Record r{.partition = m->partition, .offset = m->offset};
    if (m->key != nullptr) r.key.assign(static_cast<const char*>(m->key), m->key_len);
    if (m->payload != nullptr) r.value.assign(static_cast<const char*>(m->payload), m->len);
    rd_kafka_headers_t* headers = nullptr;
    const void* value = nullptr;
    size_t size = 0;
    if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_header_get_last(headers, "content-type", &value, &size) ==
            RD_KAFKA_RESP_ERR_NO_ERROR) {
      r.content_type.assign(static_cast<const char*>(value), size);
    }
    return r;
  }

  std::string dir_, url_;
};

// ---- The relay ----

class KafkaRelay : public KafkaTest {
 protected:
  void SetUp() override {
    KafkaTest::SetUp();
    store_ = "sqlite:" + Path("outbox.db");
  }

  void Append(int from, int n) {
    std::string input;
    for (int i = from; i < from + n; ++i) {
      input += StatusEvent(i) + "\n";
      appended_.push_back(i);
    }
    const ProcessResult r = RunEvident({"outbox", "append", "--store", store_, "--contracts",
                                        SourcePath("examples/orders/contracts"),
                                        "--schema-version-at", "/data/schemaVersion", "-"},
                                       input);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  std::vector<std::string> RelayArgs(bool once) const {
    std::vector<std::string> argv = {
        EVIDENT_BINARY,      "relay", "--store",          store_, "--to", url_, "--topic", kTopic,
        "--batch-count-max", "100",   "--backoff-max-ms", "200"};
    if (once) argv.push_back("--once");
    return argv;
  }

  // The topic holds every appended event, exactly as appended, keyed by its subject; per subject
  // the first copies come in the outbox's order; every row is marked sent.
  void ExpectEveryRowInTheTopic() {
    std::map<std::string, std::vector<int>> firsts_by_subject;
    std::set<int> seen;
    size_t copies = 0;
    for (const Record& r : ReadTopic()) {
      const size_t at = r.value.find("\"id\":\"evt-");
      ASSERT_NE(at, std::string::npos) << r.value;
      const int n = std::stoi(r.value.substr(at + 10));
      EXPECT_EQ(r.value, StatusEvent(n)) << "record " << r.partition << ":" << r.offset;
      EXPECT_EQ(r.key, "order-" + std::to_string(n % 97));
      EXPECT_EQ(r.content_type, "application/cloudevents+json");
      ++copies;
      if (seen.insert(n).second) firsts_by_subject[r.key].push_back(n);
    }
    EXPECT_EQ(seen, std::set<int>(appended_.begin(), appended_.end()));
    for (const auto& [subject, ns] : firsts_by_subject) {
      EXPECT_TRUE(std::is_sorted(ns.begin(), ns.end())) << subject << " out of order";
    }
    const ProcessResult stats =
        RunEvident({"outbox", "stats", "--store", store_, "--format", "json"});
    EXPECT_NE(stats.out.find("\"pending\":0"), std::string::npos) << stats.out;
    EXPECT_NE(stats.out.find("\"sent\":" + std::to_string(appended_.size())), std::string::npos)
        << stats.out;
    std::printf("topic: %zu records for %zu events\n", copies, appended_.size());
  }

  std::string store_;
  std::vector<int> appended_;
};

TEST_F(KafkaRelay, ThroughProduceErrorsABrokerDownALeaderMovedAndKillsEveryRowArrives) {
  Append(0, 1500);
  // Retriable errors on the first produce requests: the idempotent producer retries them.
  Control("errors Produce NOT_LEADER_FOR_PARTITION REQUEST_TIMED_OUT NOT_ENOUGH_REPLICAS");
  const int log = open(Path("relay.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const pid_t relay = StartProcess(RelayArgs(false), {.out = log, .err = log});
  close(log);
  ASSERT_GT(relay, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Control("down 1");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Control("up 1");
  Append(1500, 500);
  Control("leader orders 0 2");
  Control("rtt 3 50");
  Append(2000, 500);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  Control("rtt 3 0");
  // Killed at random moments while new rows keep coming: some kills land between a batch's
  // delivery and its mark (the next run sends those rows again).
  kill(relay, SIGKILL);
  int status = 0;
  waitpid(relay, &status, 0);
  std::mt19937_64 rng(20261205);
  for (int run = 0; run < 6; ++run) {
    Append(2500 + run * 200, 200);
    const int64_t after_us = std::uniform_int_distribution<int64_t>(20'000, 400'000)(rng);
    status = RunAndKill(RelayArgs(false), "", after_us);
    EXPECT_TRUE(Killed(status)) << EndedBy(status);
  }
  const ProcessResult once = RunProcess(RelayArgs(true));
  ASSERT_EQ(once.exit_code, 0) << once.err;
  ExpectEveryRowInTheTopic();
}

TEST_F(KafkaRelay, ARecordTooLargeForTheClusterIsParkedAndTheRestGoOn) {
  Append(0, 10);
  std::string big = StatusEvent(10);
  big.insert(big.find("\"status\""), "\"pad\":\"" + std::string(1'100'000, 'x') + "\",");
  ProcessResult r = RunEvident({"outbox", "append", "--store", store_, "--contracts",
                                SourcePath("examples/orders/contracts"), "--schema-version-at",
                                "/data/schemaVersion", "--event-bytes-max", "2000000", "-"},
                               big + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Append(11, 10);
  std::vector<std::string> args = RelayArgs(true);
  args.insert(args.end(), {"--park-refused-after", "2"});
  r = RunProcess(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("1 parked"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("MSG_SIZE_TOO_LARGE"), std::string::npos) << r.err;
  ExpectEveryRowInTheTopic();
}

TEST_F(KafkaRelay, ADeniedPermissionOrARequestRefusedWholeParksNothing) {
  Append(0, 300);
  // The broker refuses whole produce requests: for a record too large in it (the head row is
  // then sent alone, and taken), and for a permission it denies (not the rows' fault).
  Control(
      "errors Produce MSG_SIZE_TOO_LARGE TOPIC_AUTHORIZATION_FAILED TOPIC_AUTHORIZATION_FAILED");
  std::vector<std::string> args = RelayArgs(true);
  args.insert(args.end(), {"--park-refused-after", "1"});
  const ProcessResult r = RunProcess(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(" 0 parked"), std::string::npos) << r.err;
  ExpectEveryRowInTheTopic();
}

TEST_F(KafkaRelay, PropertiesItsGuaranteesRestOnAreRefused) {
  for (const char* property :
       {"acks=1", "enable.idempotence=false", "message.timeout.ms=1000", "partitioner=random"}) {
    std::vector<std::string> args = RelayArgs(true);
    args.insert(args.end(), {"--kafka-config", property});
    const ProcessResult r = RunProcess(args);
    EXPECT_EQ(r.exit_code, 2) << property << ": " << r.err;
    EXPECT_NE(r.err.find("is evident's own"), std::string::npos) << r.err;
  }
  std::vector<std::string> args = RelayArgs(true);  // more options than librdkafka has
  for (int i = 0; i < 257; ++i) args.insert(args.end(), {"--kafka-config", "linger.ms=5"});
  const ProcessResult r = RunProcess(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("given 257 times; at most 256"), std::string::npos) << r.err;
}

// ---- The consumer ----

class KafkaConsume : public KafkaTest {
 protected:
  static constexpr int kOrders = 250;

  void SetUp() override {
    KafkaTest::SetUp();
    if (HasFatalFailure()) return;
    lines_ = MakeInput(kOrders, 77);
    Publish(lines_);
  }

  std::vector<std::string> ConsumeArgs(const std::string& db, const std::string& group,
                                       const std::string& outcomes, const std::string& idle) {
    return {EVIDENT_BINARY,
            "consume",
            "--config",
            SourcePath("examples/orders/evident.yaml"),
            "--store",
            "sqlite:" + Path(db),
            "--from",
            url_,
            "--topic",
            kTopic,
            "--durable",
            group,
            "--outcomes",
            Path(outcomes),
            "--until-idle",
            idle,
            "--batch-count-max",
            "200"};
  }

  StoreRows Read(const std::string& db, const std::string& group) {
    DumpOptions read{.consumers = {std::begin(kOrderConsumers), std::end(kOrderConsumers)},
                     .subjects = {""},
                     .position_source = std::string("kafka:") + kTopic + "/" + group};
    for (int o = 0; o < kOrders; ++o) read.subjects.push_back("order-" + std::to_string(o));
    StoreRows rows = ReadStoreRows(Path(db), read);
    // Across partitions, arrival interleaves differently from run to run: the store-wide
    // numbering of kept and journal rows records that, and so does the offset of a record's last
    // delivery when its copies are on several partitions (an input that names no subject is
    // published without a key, to a partition of the producer's choice, and the input holds
    // some twice). Nothing else does.
    for (QuarantineRecord& k : rows.kept) {
      k.id = 0;
      if (k.attempts > 1) k.input_index = 0;
    }
    for (JournalEntry& j : rows.journal) j.seq = 0;
    return rows;
  }

  std::vector<std::string> lines_;
};

TEST_F(KafkaConsume, KilledAtItsCommitPointsAndAtRandomItEndsWithTheStoreOfOneCleanRun) {
  const ProcessResult clean = RunProcess(ConsumeArgs("clean.db", "clean", "clean.ndjson", "2"));
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  // Killed before the position is written, after the store's commit, after the outcomes and
  // before Kafka's commit ("after-ack"); then at random moments, with offset commits failing, a
  // partition's leader moved and a broker down during a run.
  int runs = 0;
  for (const char* fault :
       {"before-checkpoint:2", "after-commit:2", "after-commit:1", "before-ack:2", "after-ack:3"}) {
    const int status = RunAndKill(
        ConsumeArgs("crashed.db", "crashy", "crashed-" + std::to_string(runs++) + ".ndjson", "2"),
        fault, -1, Path("crashy.log"));
    EXPECT_TRUE(Killed(status)) << fault << ": " << EndedBy(status);
  }
  Control("errors OffsetCommit COORDINATOR_NOT_AVAILABLE REQUEST_TIMED_OUT NOT_COORDINATOR");
  std::mt19937_64 rng(4242);
  for (int kill = 0; kill < 4; ++kill) {
    if (kill == 1) Control("leader orders 1 3");
    if (kill == 2) Control("down 2");
    const int64_t after_us = std::uniform_int_distribution<int64_t>(100'000, 900'000)(rng);
    const int status = RunAndKill(
        ConsumeArgs("crashed.db", "crashy", "crashed-" + std::to_string(runs++) + ".ndjson", "2"),
        "", after_us, Path("crashy.log"));
    EXPECT_TRUE(Killed(status) || Finished(status)) << EndedBy(status);
    if (kill == 2) Control("up 2");
  }
  // The fault window ends here: OffsetCommit errors the killed runs did not reach would otherwise
  // meet the last run (each costs a coordinator lookup and its backoff; two such runs were seen
  // to outlast their 5 s acknowledgement wait under a full test run's load).
  Control("clear OffsetCommit");
  ProcessResult last = RunProcess(ConsumeArgs("crashed.db", "crashy", "crashed-last.ndjson", "2"));
  if (last.exit_code == 3) {
    // Every decision committed, but Kafka's offsets not confirmed in time: the OffsetCommit
    // errors injected above may outlast the killed runs and meet this one (seen under load in
    // a full test run). The next run brings Kafka's offsets to the store's positions.
    last = RunProcess(ConsumeArgs("crashed.db", "crashy", "crashed-last-again.ndjson", "2"));
  }
  ASSERT_EQ(last.exit_code, 0) << last.err;

  StoreRows want = Read("clean.db", "clean"), got = Read("crashed.db", "crashy");
  EXPECT_EQ(got.position, want.position) << "the positions differ";
  want.position_source.reset();
  got.position_source.reset();
  EXPECT_EQ(FirstDifference(Tables(want), Tables(got)), "");

  // No event reported applied twice over all the runs (a killed run's torn last line aside).
  std::vector<std::string> outcomes;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("crashed-", 0) == 0) outcomes.push_back(entry.path().string());
  }
  const std::map<std::string, int> applied = AppliedKeys(outcomes, "fulfillment");
  EXPECT_FALSE(applied.empty());
  for (const auto& [key, count] : applied) EXPECT_EQ(count, 1) << key << " applied twice";
}

// Records no event can be made of (a null value, as a tombstone has; bytes that are not JSON; a
// record past the config's event_bytes_max) are each decided rejected with their reason, their
// bytes kept in quarantine (the long one's first event_bytes_max + 1 bytes), and the run goes on
// to the records after them.
TEST_F(KafkaConsume, RecordsNoEventCanBeMadeOfAreQuarantinedAndTheRunGoesOn) {
  char why[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", url_.substr(8).c_str(), why, sizeof why);
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
  ASSERT_NE(producer, nullptr) << why;
  const std::string long_record(200'000, 'x');
  const std::string not_json = "not json at all";
  const std::string key = "order-1";
  for (const std::string* value :
       {static_cast<const std::string*>(nullptr), &not_json, &long_record}) {
    void* bytes = value == nullptr ? nullptr : const_cast<char*>(value->data());
    const size_t size = value == nullptr ? 0 : value->size();
    const rd_kafka_resp_err_t err = rd_kafka_producev(
        producer, RD_KAFKA_V_TOPIC(kTopic), RD_KAFKA_V_KEY(key.data(), key.size()),
        RD_KAFKA_V_VALUE(bytes, size), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    ASSERT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(err);
  }
  ASSERT_EQ(rd_kafka_flush(producer, 10'000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(producer);
  Publish(MakeInput(5, 9, 1000));  // events after them, on every partition their keys reach

  std::ifstream in(SourcePath("examples/orders/evident.yaml"));
  std::string config((std::istreambuf_iterator<char>(in)), {});
  config.replace(
      config.find("contracts: contracts"), 20,
      "contracts: " + SourcePath("examples/orders/contracts") + "\nevent_bytes_max: 65536");
  std::ofstream(Path("small.yaml")) << config;
  std::vector<std::string> argv = ConsumeArgs("odd.db", "odd", "odd.ndjson", "2");
  argv[3] = Path("small.yaml");
  const ProcessResult r = RunProcess(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream outcomes(Path("odd.ndjson"));
  std::map<std::string, int> reasons;
  int decided = 0;
  for (std::string line; std::getline(outcomes, line);) {
    ++decided;
    const size_t at = line.find("\"reason\":\"");
    if (at != std::string::npos)
      reasons[line.substr(at + 10, line.find('"', at + 10) - (at + 10))]++;
  }
  EXPECT_EQ(reasons["envelope-too-large"], 1);
  // The inputs' own broken lines, and the null value and the text.
  int broken = 0;
  simdjson::dom::parser parser;
  std::vector<std::string> inputs = lines_;
  for (const std::string& line : MakeInput(5, 9, 1000)) inputs.push_back(line);
  for (const std::string& line : inputs) {
    simdjson::dom::element e;
    broken += parser.parse(line).get(e) == simdjson::SUCCESS ? 0 : 1;
  }
  EXPECT_EQ(reasons["malformed-json"], broken + 2);
  EXPECT_GT(decided, 3);
  const ProcessResult kept =
      RunEvident({"quarantine", "list", "--store", "sqlite:" + Path("odd.db"), "--format", "json"});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_NE(kept.out.find("envelope-too-large"), std::string::npos) << kept.out;
}

TEST_F(KafkaConsume, WithEveryBrokerDownARunEndsOnItsIdleBoundAndSaysSo) {
  Control("down -1");
  const auto begun = std::chrono::steady_clock::now();
  const ProcessResult r = RunProcess(ConsumeArgs("down.db", "down", "down.ndjson", "3"));
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - begun)
          .count();
  Control("up -1");
  // Opening needs the cluster's metadata: waited for (its own timeout, then again while
  // --until-idle's 3 s last), then exit 3 saying for how long; nothing hangs on a commit or a
  // close.
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("unavailable for"), std::string::npos) << r.err;
  EXPECT_LT(seconds, 20) << r.err;
}

TEST_F(KafkaConsume, BrokersGoingDownMidRunEndItAsUnreachableWithoutHanging) {
  const pid_t pid = [&] {
    const int log = open(Path("mid.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const pid_t child =
        StartProcess(ConsumeArgs("mid.db", "mid", "mid.ndjson", "3"), {.out = log, .err = log});
    close(log);
    return child;
  }();
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // some batches committed
  Control("down -1");
  const auto begun = std::chrono::steady_clock::now();
  int status = 0;
  for (int i = 0; i < 400 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - begun)
          .count();
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ADD_FAILURE() << "the run did not end within 40 s of its brokers going down";
  }
  Control("up -1");
  std::ifstream in(Path("mid.log"));
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  // Either it had decided everything already (exit 0), or it ends as unreachable (exit 3)
  // after its idle bound, not after a commit's or a close's timeout.
  EXPECT_TRUE(Finished(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 3))
      << EndedBy(status) << "\n"
      << log;
  EXPECT_LT(seconds, 15) << log;
  // The next run, the brokers back, decides the rest: the store ends as one clean run's.
  const ProcessResult rest = RunProcess(ConsumeArgs("mid.db", "mid", "mid-rest.ndjson", "2"));
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  const ProcessResult clean = RunProcess(ConsumeArgs("clean.db", "clean", "clean.ndjson", "2"));
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  StoreRows want = Read("clean.db", "clean"), got = Read("mid.db", "mid");
  EXPECT_EQ(got.position, want.position);
  want.position_source.reset();
  got.position_source.reset();
  EXPECT_EQ(FirstDifference(Tables(want), Tables(got)), "");
}

// A run asked to stop ends then, not a poll later: Stop wakes a Fetch waiting in librdkafka's
// poll (it waits in polls of up to 200 ms; without the wake a stop 50 ms into one waited 150 ms
// more, the tail every consume and serve run paid at its end).
TEST_F(KafkaTest, StopEndsAFetchWaitingOnAnEmptyTopicAtOnce) {
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::duration> late;  // from each Stop to its Fetch's return
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto source = OpenKafkaSource(
        {.bootstrap = url_.substr(8), .topic = kTopic, .group = "stop-" + std::to_string(attempt)});
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    ASSERT_TRUE((*source)->Start(std::nullopt).ok());
    Message m;
    Result<Source::Fetched> fetched = Source::Fetched::kMessage;
    Clock::time_point returned;
    std::thread reader([&] {
      fetched = (*source)->Fetch(m, 60'000);
      returned = Clock::now();
    });
    // 20 to 60 ms into a poll of up to 200 ms: a stop that waited for the poll to end would
    // come back 140 ms or more later.
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + 20 * attempt));
    const Clock::time_point stopped = Clock::now();
    (*source)->Stop();
    reader.join();
    ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
    EXPECT_EQ(*fetched, Source::Fetched::kEnd);
    late.push_back(returned - stopped);
  }
  // The median of three: one stall of a loaded machine does not decide it.
  std::sort(late.begin(), late.end());
  EXPECT_LT(late[1], std::chrono::milliseconds(100))
      << std::chrono::duration_cast<std::chrono::milliseconds>(late[1]).count() << " ms";
}

// ---- The daemon ----

TEST_F(KafkaTest, ServeReadsTheTopicBesideHttpAndARestartBeginsAtTheStoresPositions) {
  const std::string store = Path("served.db");
  auto publish = [&](const std::vector<std::string>& ids) {
    auto publisher = OpenKafkaPublisher({.bootstrap = url_.substr(8), .topic = kTopic});
    ASSERT_TRUE(publisher.ok()) << publisher.status().ToString();
    std::vector<OutgoingMessage> batch;
    for (const std::string& id : ids) {
      batch.push_back({.id = id, .bytes = ServeStatusEvent(id), .key = "order-" + id});
    }
    const Result<size_t> sent = (*publisher)->Publish(batch);
    ASSERT_TRUE(sent.ok() && *sent == ids.size()) << sent.status().ToString();
  };
  auto applied = [&](const std::string& id) {
    auto opened = OpenSqliteStore(store, {.read_only = true});
    if (!opened.ok()) return false;
    auto snapshot = (*opened)->Read();
    if (!snapshot.ok()) return false;
    auto entry = (*snapshot)->FindLedger("orders-projection", kServeSource, id);
    return entry.ok() && entry->has_value();
  };
  auto eventually = [](auto condition) {
    for (int i = 0; i < 400; ++i) {
      if (condition()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  const std::vector<std::string> args = {"--config",    SourcePath("examples/orders/evident.yaml"),
                                         "--store",     "sqlite:" + store,
                                         "--from",      url_,
                                         "--topic",     kTopic,
                                         "--durable",   "daemon",
                                         "--no-effects"};
  publish({"k-1", "k-2", "k-3"});
  pid_t pid = -1;
  int port = StartServe(args, Path("serve.log"), &pid);
  ASSERT_NE(port, 0);
  EXPECT_TRUE(eventually([&] { return applied("k-1") && applied("k-2") && applied("k-3"); }));
  EXPECT_EQ(Http(port, "GET", "/readyz").status, 200);
  EXPECT_TRUE(Finished(StopServe(&pid)));

  // Started again: it begins where its store left each partition, so only the new event is
  // decided (an event read again would count as a duplicate).
  publish({"k-4"});
  port = StartServe(args, Path("serve.log"), &pid);
  ASSERT_NE(port, 0);
  EXPECT_TRUE(eventually([&] { return applied("k-4"); }));
  const auto metrics = Http(port, "GET", "/metrics");
  EXPECT_NE(
      metrics.body.find(
          R"(evident_decisions_total{consumer="orders-projection",outcome="applied",reason=""} 1)"),
      std::string::npos)
      << metrics.body;
  EXPECT_EQ(metrics.body.find(R"(outcome="duplicate")"), std::string::npos) << metrics.body;
  EXPECT_TRUE(Finished(StopServe(&pid)));
}

// ---- Consumer groups by Kafka's own protocol ----

// Three `consume --group` members over one topic and one PostgreSQL store, against one
// uninterrupted member over the same topic: the topic grows in thirds while they run; after the
// first third member 0 is killed -9, after the second member 1 is stopped past its session and
// then continued. Every record is decided exactly once, per subject in the topic's order: the
// group's store equals the single member's, and no event was reported applied twice.
class KafkaGroup : public KafkaTest {
 protected:
  static constexpr int kGroupOrders = 450;

  std::vector<std::string> Member(const std::string& store, const std::string& group,
                                  const std::string& name) const {
    return {EVIDENT_BINARY,
            "consume",
            "--config",
            SourcePath("examples/orders/evident.yaml"),
            "--from",
            url_,
            "--topic",
            kTopic,
            "--store",
            store,
            "--group",
            group,
            "--lease-ms",
            "3000",
            "--member",
            name,
            "--batch-count-max",
            "40",
            "--outcomes",
            Path(group + "-" + name + ".ndjson")};
  }

  // The store's position of each partition of `group` ("kafka:orders/<group>/p<k>").
  static std::map<int32_t, int64_t> Positions(const std::string& store_uri,
                                              const std::string& group) {
    std::map<int32_t, int64_t> out;
    auto store = OpenStore(store_uri, {.read_only = true});  // a member may not have made it yet
    if (!store.ok()) return out;
    auto snapshot = (*store)->Read();
    if (!snapshot.ok()) return out;
    for (int32_t p = 0; p < 4; ++p) {
      auto stored = (*snapshot)->GetPosition(std::string("kafka:") + kTopic + "/" + group + "/p" +
                                             std::to_string(p));
      if (stored.ok() && stored->has_value()) out[p] = std::stoll(**stored);
    }
    return out;
  }

  // Whether, within `seconds`, the store's positions reach `ends` (each partition's end).
  static bool WaitUntilDecided(const std::string& store_uri, const std::string& group,
                               const std::map<int32_t, int64_t>& ends, int seconds) {
    for (int i = 0; i < seconds * 10; ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const std::map<int32_t, int64_t> at = Positions(store_uri, group);
      bool all = true;
      for (const auto& [p, end] : ends) all = all && at.count(p) > 0 && at.at(p) >= end;
      if (all) return true;
    }
    return false;
  }

  // Whether, within `seconds`, the partitions held (their leases seized and not released) are
  // held by exactly `names`, every partition by one of them.
  static bool WaitUntilHeldBy(const std::string& store_uri, const std::string& group,
                              const std::set<std::string>& names, int seconds) {
    for (int i = 0; i < seconds * 10; ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      auto store = OpenStore(store_uri, {.read_only = true});
      if (!store.ok()) continue;
      auto snapshot = (*store)->Read();
      auto leases = snapshot.ok() ? (*snapshot)->GroupLeases(group)
                                  : Result<std::vector<GroupLease>>(snapshot.status());
      if (!leases.ok()) continue;
      std::set<std::string> holding;
      int held = 0;
      for (const GroupLease& l : *leases) {
        if (l.expires_at_ms == 0) continue;  // released
        holding.insert(l.holder);
        ++held;
      }
      if (held == 4 && holding == names) return true;
    }
    return false;
  }

  // Each partition's end: the offset after its last record.
  std::map<int32_t, int64_t> Ends() {
    std::map<int32_t, int64_t> ends;
    for (const Record& r : ReadTopic()) {
      ends[r.partition] = std::max(ends[r.partition], r.offset + 1);
    }
    return ends;
  }

  StoreRows Rows(const std::string& store_uri) const {
    DumpOptions read{.consumers = {std::begin(kOrderConsumers), std::end(kOrderConsumers)},
                     .subjects = {""}};
    for (int o = 0; o < kGroupOrders; ++o) read.subjects.push_back("order-" + std::to_string(o));
    StoreRows rows = ReadStoreRows(store_uri, read);
    // Store-wide numbering records how the members' batches interleaved, and so does the offset
    // of a record's last delivery when its copies are on several partitions (an input that
    // names no subject goes to a partition of the producer's choice); nothing else does.
    for (QuarantineRecord& k : rows.kept) {
      k.id = 0;
      if (k.attempts > 1) k.input_index = 0;
    }
    for (JournalEntry& j : rows.journal) j.seq = 0;
    return rows;
  }
};

TEST_F(KafkaGroup, ThreeMembersOneKilledOneStoppedPastItsSessionEqualOneUninterrupted) {
  const Result<std::string> grouped = FreshPostgresSchema("kafka_group");
  const Result<std::string> reference = FreshPostgresSchema("kafka_group_reference");
  ASSERT_TRUE(grouped.ok() && reference.ok()) << grouped.status().ToString();
  const std::vector<std::string> lines = MakeInput(kGroupOrders, 31);
  const size_t third = lines.size() / 3;
  const auto part = [&](size_t from, size_t n) {
    return std::vector<std::string>(lines.begin() + static_cast<std::ptrdiff_t>(from),
                                    lines.begin() + static_cast<std::ptrdiff_t>(from + n));
  };
  const auto stop = [](pid_t pid) {
    int status = 0;
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    return status;
  };
  // The three join before the first third is published, so that each has records to decide.
  // Member 1 stops itself (SIGSTOP) at its second commit, before the fence: a batch in hand,
  // its transaction open. Once the broker has shared the partitions between members 0 and 2,
  // member 0 is killed -9; once member 2 seized every partition, member 1 is continued: its
  // batch must not commit.
  std::vector<pid_t> members;
  std::vector<int> logs;
  for (int m = 0; m < 3; ++m) {
    const std::string name = "m" + std::to_string(m);
    logs.push_back(
        open(Path(name + ".log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    std::vector<std::pair<std::string, std::optional<std::string>>> env;
    if (m == 1) env.emplace_back("EVIDENT_FAULT_POINT", "before-checkpoint:2:stop");
    members.push_back(StartProcess(Member(*grouped, "g", name),
                                   {.out = logs.back(), .err = logs.back()}, {}, env));
    ASSERT_GT(members.back(), 0);
  }
  ASSERT_TRUE(WaitUntilHeldBy(*grouped, "g", {"m0", "m1", "m2"}, 60))
      << "the broker did not share the partitions among the three: see " << dir_;
  Publish(part(0, third));
  int status = 0;
  bool stopped = false;
  for (int i = 0; i < 600 && !stopped; ++i) {
    stopped = waitpid(members[1], &status, WUNTRACED | WNOHANG) == members[1] && WIFSTOPPED(status);
    if (!stopped) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(stopped) << "member 1 did not reach its second commit in 60 s: see " << dir_;
  ASSERT_TRUE(WaitUntilHeldBy(*grouped, "g", {"m0", "m2"}, 60))
      << "the broker did not share the partitions between members 0 and 2: see " << dir_;
  Publish(part(third, third));
  ASSERT_EQ(kill(members[0], SIGKILL), 0);
  waitpid(members[0], &status, 0);
  const bool taken_over = WaitUntilHeldBy(*grouped, "g", {"m2"}, 60);
  Publish(part(2 * third, lines.size() - 2 * third));
  ASSERT_EQ(kill(members[1], SIGCONT), 0);
  ASSERT_TRUE(taken_over) << "member 2 did not take every partition over: see " << dir_;
  const std::map<int32_t, int64_t> ends = Ends();
  const bool decided = WaitUntilDecided(*grouped, "g", ends, 90);
  EXPECT_TRUE(Finished(stop(members[1]))) << "member 1 did not stop cleanly: see " << dir_;
  EXPECT_TRUE(Finished(stop(members[2]))) << "member 2 did not stop cleanly: see " << dir_;
  for (const int fd : logs) close(fd);
  ASSERT_TRUE(decided) << "the group did not decide the whole topic in 90 s: see " << dir_;
  for (const char* name : {"m1", "m2"}) {
    std::ifstream log(Path(std::string(name) + ".log"));
    const std::string text((std::istreambuf_iterator<char>(log)), {});
    std::printf("%s: %s", name, text.c_str());
    if (std::string(name) == "m1") {
      EXPECT_EQ(text.find(" 0 lost to another member"), std::string::npos)
          << "the stopped member's batch in hand was not fenced off: " << text;
    }
  }

  const pid_t alone = StartProcess(Member(*reference, "ref", "alone"), {});
  ASSERT_GT(alone, 0);
  const bool reference_decided = WaitUntilDecided(*reference, "ref", ends, 90);
  EXPECT_TRUE(Finished(stop(alone)));
  ASSERT_TRUE(reference_decided) << "the reference did not decide the whole topic in 90 s";

  // No event reported applied twice, by one member or by two.
  const std::map<std::string, int> applied =
      AppliedKeys({Path("g-m0.ndjson"), Path("g-m1.ndjson"), Path("g-m2.ndjson")});
  EXPECT_GT(applied.size(), 0U);
  for (const auto& [key, count] : applied) EXPECT_EQ(count, 1) << key << " applied twice";
  EXPECT_EQ(FirstDifference(Tables(Rows(*reference)), Tables(Rows(*grouped))), "")
      << "the group's store differs from one uninterrupted member's";
}

// A group of one on SQLite (the broker assigns it every partition): it decides the whole topic,
// its batches fenced by the leases it seized there; run again under another name, it seizes them
// again and begins at the store's positions: nothing is decided twice.
TEST_F(KafkaGroup, AGroupOfOneOnSqliteBeginsAgainAtTheStoresPositions) {
  const std::string store = "sqlite:" + Path("member.db");
  const auto run = [&](const std::string& name) {
    const pid_t member = StartProcess(Member(store, "solo", name), {});
    EXPECT_GT(member, 0);
    const bool decided = WaitUntilDecided(store, "solo", Ends(), 60);
    int status = 0;
    kill(member, SIGTERM);
    waitpid(member, &status, 0);
    EXPECT_TRUE(Finished(status)) << name << " did not stop cleanly: " << EndedBy(status);
    return decided;
  };
  const std::vector<std::string> lines = MakeInput(60, 5);
  Publish(std::vector<std::string>(lines.begin(), lines.begin() + 200));
  ASSERT_TRUE(run("first")) << "the first run did not decide the topic";
  Publish(std::vector<std::string>(lines.begin() + 200, lines.end()));
  ASSERT_TRUE(run("second")) << "the second run did not decide the rest";

  const std::map<std::string, int> applied =
      AppliedKeys({Path("solo-first.ndjson"), Path("solo-second.ndjson")});
  EXPECT_GT(applied.size(), 100U);
  for (const auto& [key, count] : applied) EXPECT_EQ(count, 1) << key << " applied twice";
  auto opened = OpenStore(store, {.read_only = true});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const std::vector<GroupLease> leases = (*opened)->Read().value()->GroupLeases("solo").value();
  ASSERT_EQ(leases.size(), 4U);
  for (const GroupLease& l : leases) {
    EXPECT_EQ(l.epoch, 2) << "partition " << l.partition << " seized once per run";
    EXPECT_EQ(l.holder, "second");
  }
  // `group status` asks the broker too: each partition's committed offset is the store's
  // position, at the partition's end, and nothing is left.
  const ProcessResult status = RunEvident({"group", "status", "--store", store, "--group", "solo",
                                           "--from", url_, "--topic", kTopic, "--format", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const std::map<int32_t, int64_t> ends = Ends();
  for (const auto& [p, end] : ends) {
    const std::string want =
        "{\"partition\":" + std::to_string(p) + ",\"holder\":\"second\",\"epoch\":2,";
    const size_t at = status.out.find(want);
    ASSERT_NE(at, std::string::npos) << status.out;
    const std::string lease = status.out.substr(at, status.out.find('}', at) - at);
    const std::string e = std::to_string(end);
    EXPECT_NE(lease.find("\"state\":\"released\",\"position\":" + e +
                         ",\"lag\":0,\"committed\":" + e + ",\"end\":" + e),
              std::string::npos)
        << lease;
  }
}

}  // namespace
}  // namespace evident::testing
