// `evident relay --to nats://` against a real nats-server (scripts/nats.sh), never skipped: a
// server that cannot start fails the test.
//
//   - the relay killed -9 at random times, over and over, then a --once run: the stream holds
//     every outbox row exactly once, with its exact bytes, and every row is marked sent;
//   - the server killed -9 and restarted on the same port and store while the relay works:
//     nothing lost, nothing twice;
//   - the server down for 10 s: the relay waits (its CPU time stays near zero), then finishes;
//   - three relays sharing one PostgreSQL store while rows keep coming, one killed -9 and one
//     stopped past its claim's hold time and then continued: every row once, in order per
//     subject, marked sent with its message's sequence;
//   - a server demanding TLS and a password: reached with --broker-config, refused without.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nats/nats.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "run_process.h"
#include "store/postgres/test_database.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

std::string StatusEvent(int n) {
  return R"({"specversion":"1.0","id":"evt-)" + std::to_string(n) +
         R"(","source":"training://orders/checkout","type":"order.status.changed","subject":"order-)" +
         std::to_string(n % 97) + R"(","data":{"schemaVersion":1,"orderId":"order-)" +
         std::to_string(n % 97) + R"(","status":"s)" + std::to_string(n) + R"("}})";
}

// CPU time (user + system) a process has used so far, in ms; -1 when it cannot be read.
int64_t CpuMs(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return (utime + stime) * 1000 / sysconf(_SC_CLK_TCK);
}

// The distinct events (their "key") in a file of outcome lines so far: a message delivered
// again adds a line, not an event.
size_t DistinctKeys(const std::string& outcomes) {
  std::ifstream in(outcomes);
  std::set<std::string> keys;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("\"key\":\"");
    if (at == std::string::npos) continue;
    keys.insert(line.substr(at + 7, line.find('"', at + 7) - (at + 7)));
  }
  return keys.size();
}

// Polls the outcomes every 50 ms for up to 30 s; true once `n` distinct events are in them.
bool WaitForDistinctKeys(const std::string& outcomes, size_t n) {
  for (int i = 0; i < 600 && DistinctKeys(outcomes) < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return DistinctKeys(outcomes) >= n;
}

class RelayNats : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeDir();
    StartServer("");
  }
  void MakeDir() {
    char tmpl[] = "/tmp/evident-relay-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    store_ = "sqlite:" + (fs::path(dir_) / "outbox.db").string();
  }

  void TearDown() override {
    int rc = 0;
    Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh stop " + NatsDir(), &rc);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string NatsDir() const { return (fs::path(dir_) / "nats").string(); }

  // Starts the server; on `port` when given (a restart keeps its streams).
  void StartServer(const std::string& port) {
    int rc = 0;
    url_ =
        Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh start " + NatsDir() + " " + port, &rc);
    ASSERT_EQ(rc, 0) << "nats-server did not start: " << url_;
    ASSERT_EQ(url_.rfind("nats://", 0), 0u) << url_;
  }
  std::string Port() const { return url_.substr(url_.rfind(':') + 1); }
  // The running server's process id (0 when the pid file cannot be read).
  pid_t ServerPid() const {
    std::ifstream in(fs::path(NatsDir()) / "pid");
    pid_t pid = 0;
    in >> pid;
    return pid;
  }
  void KillServer() {
    const pid_t pid = ServerPid();
    ASSERT_GT(pid, 0);
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int rc = 0;
    Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh stop " + NatsDir(), &rc);  // reaps
  }

  // Appends events [from, from + n) to the outbox; returns their bytes by id.
  void Append(int from, int n) {
    std::string input;
    for (int i = from; i < from + n; ++i) {
      const std::string e = StatusEvent(i);
      input += e + "\n";
      bytes_by_id_["training://orders/checkout evt-" + std::to_string(i)] = e;
    }
    const ProcessResult r =
        RunEvident({"outbox", "append", "--store", store_, "--contracts",
                    SourcePath("examples/orders/contracts"), "--schema-version-at",
                    "/data/schemaVersion", "--partitions", "4", "-"},
                   input);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // Polls `outbox stats` every 100 ms for up to `seconds`; true once nothing is pending.
  bool WaitUntilNothingPending(int seconds) {
    for (int i = 0; i < seconds * 10; ++i) {
      const ProcessResult stats =
          RunEvident({"outbox", "stats", "--store", store_, "--format", "json"});
      if (stats.exit_code == 0 && stats.out.find("\"pending\":0") != std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  int64_t SentRows() {
    const ProcessResult stats =
        RunEvident({"outbox", "stats", "--store", store_, "--format", "json"});
    EXPECT_EQ(stats.exit_code, 0) << stats.err;
    simdjson::dom::parser parser;
    simdjson::dom::element e;
    if (parser.parse(stats.out).get(e) != simdjson::SUCCESS) return -1;
    return e["sent"].get_int64().value();
  }

  std::vector<std::string> RelayArgs(bool once) const {
    std::vector<std::string> argv = {
        EVIDENT_BINARY, "relay",  "--store",           store_, "--to", url_,
        "--stream",     "ORDERS", "--batch-count-max", "100"};
    if (once) argv.push_back("--once");
    return argv;
  }

  // The stream's leader ("n2", a cluster's) and its configured replicas, as the servers of
  // url_ answer; "" and 0 when none does.
  std::pair<std::string, int64_t> StreamPlacement() {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    jsStreamInfo* si = nullptr;
    std::pair<std::string, int64_t> out;
    if (natsConnection_ConnectTo(&nc, url_.c_str()) == NATS_OK &&
        natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
        js_GetStreamInfo(&si, js, "ORDERS", nullptr, nullptr) == NATS_OK) {
      if (si->Cluster != nullptr && si->Cluster->Leader != nullptr) out.first = si->Cluster->Leader;
      if (si->Config != nullptr) out.second = si->Config->Replicas;
    }
    if (si != nullptr) jsStreamInfo_Destroy(si);
    if (js != nullptr) jsCtx_Destroy(js);
    if (nc != nullptr) natsConnection_Destroy(nc);
    return out;
  }

  // Every message of the stream: its Nats-Msg-Id and body, by stream sequence.
  std::map<uint64_t, std::pair<std::string, std::string>> StreamMessages() {
    std::map<uint64_t, std::pair<std::string, std::string>> got;
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    jsStreamInfo* si = nullptr;
    EXPECT_EQ(natsConnection_ConnectTo(&nc, url_.c_str()), NATS_OK);
    EXPECT_EQ(natsConnection_JetStream(&js, nc, nullptr), NATS_OK);
    EXPECT_EQ(js_GetStreamInfo(&si, js, "ORDERS", nullptr, nullptr), NATS_OK);
    const uint64_t last = si != nullptr ? si->State.LastSeq : 0;
    EXPECT_EQ(si != nullptr ? si->State.Msgs : 0, last) << "the stream has holes";
    if (si != nullptr) jsStreamInfo_Destroy(si);
    for (uint64_t seq = 1; seq <= last; ++seq) {
      natsMsg* m = nullptr;
      if (js_GetMsg(&m, js, "ORDERS", seq, nullptr, nullptr) != NATS_OK) {
        ADD_FAILURE() << "cannot read stream message " << seq;
        continue;
      }
      const char* id = nullptr;
      natsMsgHeader_Get(m, "Nats-Msg-Id", &id);
      got[seq] = {id != nullptr ? id : "",
                  std::string(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m)))};
      natsMsg_Destroy(m);
    }
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return got;
  }

  // The stream holds every appended event exactly once, with its bytes; every row is sent and
  // names its message.
  void ExpectEveryRowOnceAndSent() {
    const auto messages = StreamMessages();
    std::map<std::string, uint64_t> seq_by_id;
    for (const auto& [seq, m] : messages) {
      EXPECT_TRUE(seq_by_id.emplace(m.first, seq).second) << m.first << " is in the stream twice";
      const auto want = bytes_by_id_.find(m.first);
      if (want == bytes_by_id_.end()) {
        ADD_FAILURE() << "message " << seq << " has an unknown id " << m.first;
        continue;
      }
      EXPECT_EQ(m.second, want->second) << "message " << seq << " changed bytes";
    }
    EXPECT_EQ(messages.size(), bytes_by_id_.size());
    const ProcessResult list =
        RunEvident({"outbox", "list", "--store", store_, "--format", "json", "--limit", "1000000"});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    simdjson::dom::parser parser;
    size_t rows = 0, sequenced = 0;
    for (const std::string& line : Lines(list.out)) {
      simdjson::dom::element row = parser.parse(line).value();
      ++rows;
      const std::string id =
          "training://orders/checkout " + std::string(row["id"].get_string().value());
      EXPECT_FALSE(row["sent_at_ms"].is_null()) << id << " is not marked sent";
      if (row["stream_sequence"].is_null()) continue;
      ++sequenced;
      EXPECT_EQ(static_cast<uint64_t>(row["stream_sequence"].get_int64().value()), seq_by_id[id])
          << id;
      EXPECT_EQ(std::string(row["stream"].get_string().value()), "ORDERS");
    }
    EXPECT_EQ(rows, bytes_by_id_.size());
    EXPECT_EQ(sequenced, rows) << "rows marked sent without their message's sequence";
  }

  std::string dir_, store_, url_;
  std::map<std::string, std::string> bytes_by_id_;
};

// Each run finds 400 new rows and is killed at a random moment of the time a whole run takes
// (measured first, with --once, on this machine under its load now): some runs die before they
// publish, most while rows are going out (between a publish and its mark, too). Runs go on past
// the 24th until at least 3 kills landed mid-round (60 runs at most).
TEST_F(RelayNats, KilledNineAtRandomTimesThenOnceEveryRowIsInTheStreamExactlyOnce) {
  std::mt19937_64 rng(20261201);
  Append(0, 400);
  const auto begun = std::chrono::steady_clock::now();
  const ProcessResult calibration = RunProcess(RelayArgs(true));
  ASSERT_EQ(calibration.exit_code, 0) << calibration.err;
  // The calibration may run under a burst of load: the window adapts, shrinking after a run
  // that finished before its kill and growing after one that sent nothing.
  int64_t round_us =
      std::max<int64_t>(20'000, std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - begun)
                                    .count());
  const int64_t calibrated_us = round_us;
  const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  int killed = 0, mid_work = 0;
  int64_t sent_before = SentRows();
  ASSERT_EQ(sent_before, 400);
  int run = 1;
  for (; run <= 24 || (mid_work < 3 && run <= 60); ++run) {
    Append(run * 400, 400);
    // Without --once: the relay would go on polling, so every run ends by the kill.
    const pid_t pid = StartProcess(RelayArgs(false), {.out = null_fd, .err = null_fd});
    ASSERT_GT(pid, 0);
    usleep(static_cast<useconds_t>(
        round_us / 10 + static_cast<int64_t>(rng() % static_cast<uint64_t>(round_us * 11 / 10))));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    killed += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 1 : 0;
    const int64_t sent = SentRows();
    if (sent > sent_before && sent < (run + 1) * 400) ++mid_work;
    if (sent == (run + 1) * 400) round_us = std::max<int64_t>(20'000, round_us * 3 / 4);
    if (sent == sent_before) round_us = std::min<int64_t>(calibrated_us * 4, round_us * 5 / 4);
    sent_before = sent;
  }
  close(null_fd);
  std::printf(
      "a whole run took %lld us (window at the end %lld us); %d runs, %d kills, %d of them after "
      "some rows of the run were marked and before all\n",
      static_cast<long long>(calibrated_us), static_cast<long long>(round_us), run - 1, killed,
      mid_work);
  EXPECT_GE(killed, 20);
  EXPECT_GE(mid_work, 3) << "the kills did not land while rows were going out";
  const ProcessResult last = RunProcess(RelayArgs(true));
  ASSERT_EQ(last.exit_code, 0) << last.err;
  ExpectEveryRowOnceAndSent();
}

TEST_F(RelayNats, TheServerKilledNineAndRestartedLosesNothing) {
  Append(0, 2000);
  const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  std::vector<std::string> argv = RelayArgs(false);
  // A publish gives up on its acknowledgements after a second: the stop below outlasts two.
  argv.insert(argv.end(), {"--backoff-max-ms", "500", "--publish-timeout-ms", "1000"});
  const pid_t relay = StartProcess(argv, {.out = null_fd, .err = null_fd});
  ASSERT_GT(relay, 0);
  // Rows keep arriving while the server dies and comes back.
  std::thread producer([this] {
    for (int i = 0; i < 10; ++i) {
      Append(2000 + i * 200, 200);
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
    }
  });
  // Once rows are going out, the server is stopped (SIGSTOP): rows are pending (asserted), so
  // the relay publishes and waits for acknowledgements that cannot come, and no row is marked
  // meanwhile (asserted). The server is then killed with those publishes unanswered.
  int64_t sent_before = 0;
  for (int i = 0; i < 300 && (sent_before = SentRows()) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(sent_before, 0) << "the relay sent nothing in 3 s";
  const pid_t server = ServerPid();
  ASSERT_GT(server, 0);  // kill(0, ...) would stop this test's own process group
  ASSERT_EQ(kill(server, SIGSTOP), 0);
  // Acknowledgements the server sent just before it stopped may still be marked: wait until the
  // count holds still for a second, ten readings 100 ms apart (10 s at most). Three readings
  // were too few on a loaded machine: a mark of acknowledged rows came 300 ms late once (a
  // fresh clone's run, 500 then 508 sent), which the check below took for a mark without them.
  int64_t sent_at_stop = SentRows();
  for (int i = 0, still = 0; i < 100 && still < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int64_t now = SentRows();
    still = now == sent_at_stop ? still + 1 : 0;
    sent_at_stop = now;
  }
  // Longer than two publish timeouts: a publish that ended without its acknowledgements (and a
  // relay that counted them as accepted all the same) would have marked rows by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(SentRows(), sent_at_stop) << "rows were marked sent while the server was stopped";
  const ProcessResult stats =
      RunEvident({"outbox", "stats", "--store", store_, "--format", "json"});
  EXPECT_EQ(stats.out.find("\"pending\":0,"), std::string::npos)
      << "nothing was pending, so nothing was in flight: " << stats.out;
  const std::string port = Port();
  KillServer();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  StartServer(port);
  producer.join();
  // Wait until nothing is pending, then stop the relay as a supervisor would.
  const bool drained = WaitUntilNothingPending(30);
  kill(relay, SIGTERM);
  int status = 0;
  waitpid(relay, &status, 0);
  close(null_fd);
  EXPECT_TRUE(drained) << "rows still pending 30 s after the server came back";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "relay status " << status;
  ExpectEveryRowOnceAndSent();
}

// --replicas names the copies of a stream the relay creates: more than one server can hold is
// refused (exit 2, saying why); an existing stream of fewer copies than asked for is warned of,
// and refused with --require-replicas.
TEST_F(RelayNats, ReplicasAreCheckedAgainstTheServerAndTheExistingStream) {
  Append(0, 10);
  const auto relay = [&](std::vector<std::string> more) {
    std::vector<std::string> argv = RelayArgs(true);
    argv.insert(argv.end(), more.begin(), more.end());
    return RunProcess(argv);
  };
  const ProcessResult three = relay({"--replicas", "3"});
  EXPECT_EQ(three.exit_code, 2) << three.err;
  EXPECT_NE(three.err.find("a stream of 3 replicas needs a JetStream cluster"), std::string::npos)
      << three.err;
  const ProcessResult one = relay({});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(StreamPlacement().second, 1);
  Append(10, 10);
  const ProcessResult asked = relay({"--replicas", "2"});
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  EXPECT_NE(asked.err.find("evident relay: warning: stream ORDERS exists with 1 replica, fewer "
                           "than the 2 asked for"),
            std::string::npos)
      << asked.err;
  Append(20, 10);
  const ProcessResult required = relay({"--require-replicas", "2"});
  EXPECT_EQ(required.exit_code, 2) << required.err;
  EXPECT_NE(required.err.find("stream ORDERS has 1 replica, fewer than the 2 required"),
            std::string::npos)
      << required.err;
  const ProcessResult file =
      RunProcess({EVIDENT_BINARY, "relay", "--store", store_, "--to",
                  "file:" + (fs::path(dir_) / "out.ndjson").string(), "--replicas", "3", "--once"});
  EXPECT_EQ(file.exit_code, 2) << file.err;  // a file has no replicas: refused, not ignored
  EXPECT_NE(file.err.find("--replicas"), std::string::npos) << file.err;
  ASSERT_EQ(relay({}).exit_code, 0);
  ExpectEveryRowOnceAndSent();
}

TEST_F(RelayNats, WhileTheServerIsDownTheRelayWaitsWithoutSpinningThenFinishes) {
  Append(0, 500);
  const std::string port = Port();
  int rc = 0;
  Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh stop " + NatsDir(), &rc);
  ASSERT_EQ(rc, 0);
  const int err_fd =
      open((fs::path(dir_) / "relay.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::vector<std::string> argv = RelayArgs(false);
  argv.insert(argv.end(), {"--backoff-max-ms", "2000"});
  const pid_t relay = StartProcess(argv, {.err = err_fd});
  ASSERT_GT(relay, 0);
  // Until its first round has failed (it says so on standard error): started, now backing off.
  const auto said = [&] {
    std::ifstream in(fs::path(dir_) / "relay.err");
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  bool backing_off = false;
  for (int i = 0; i < 200 && !backing_off; ++i) {
    backing_off = said().find("a round failed (1 in a row)") != std::string::npos;
    if (!backing_off) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (!backing_off) {
    kill(relay, SIGKILL);
    waitpid(relay, nullptr, 0);
    close(err_fd);
    FAIL() << "the relay never tried the stopped server in 5 s: " << said();
  }
  const int64_t cpu_before = CpuMs(relay);
  std::this_thread::sleep_for(std::chrono::seconds(10));
  const int64_t cpu_after = CpuMs(relay);
  ASSERT_GE(cpu_before, 0);
  std::printf("relay CPU while the server was down for 10 s: %lld ms\n",
              static_cast<long long>(cpu_after - cpu_before));
  // 10 s of a server that refuses connections: a relay that backs off spends a few ms of CPU.
  EXPECT_LT(cpu_after - cpu_before, 200) << "CPU ms over 10 s while the server was down";
  StartServer(port);
  const bool drained = WaitUntilNothingPending(10);
  kill(relay, SIGTERM);
  int status = 0;
  waitpid(relay, &status, 0);
  close(err_fd);
  EXPECT_TRUE(drained) << "rows still pending 10 s after the server came back";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "relay status " << status;
  std::ifstream err(fs::path(dir_) / "relay.err");
  const std::string summary((std::istreambuf_iterator<char>(err)), {});
  EXPECT_NE(summary.find("500 sent to ORDERS"), std::string::npos) << summary;
  EXPECT_NE(summary.find("last error"), std::string::npos) << summary;  // the refused connects
  ExpectEveryRowOnceAndSent();
}

// An event the outbox takes (within its 1 MiB) and the server does not: its max_payload, 1 MiB
// by default, counts the message's Nats-Msg-Id header too. Without --park-refused-after the row
// holds back the rows behind it and --once gives up naming the limit; with it, the row is
// parked (its attempts of the first run count) and the rows behind it go out, in order.
TEST_F(RelayNats, AnEventTooLargeForTheServerIsParkedWhenAskedAndTheRowsBehindItGoOut) {
  Append(0, 5);
  const std::string head =
      R"({"specversion":"1.0","id":"evt-big","source":"training://orders/checkout",)"
      R"("type":"order.status.changed","subject":"order-1","data":{"schemaVersion":1,)"
      R"("orderId":"order-1","status":")";
  const std::string tail = R"("}})";
  const size_t size = (size_t{1} << 20) - 16;  // the header is about 60 bytes
  const std::string big = head + std::string(size - head.size() - tail.size(), 'x') + tail;
  const ProcessResult appended =
      RunEvident({"outbox", "append", "--store", store_, "--contracts",
                  SourcePath("examples/orders/contracts"), "--schema-version-at",
                  "/data/schemaVersion", "--partitions", "4", "-"},
                 big + "\n");
  ASSERT_EQ(appended.exit_code, 0) << appended.err;
  Append(5, 5);

  std::vector<std::string> held = RelayArgs(true);
  held.insert(held.end(), {"--once-failures-max", "2", "--backoff-max-ms", "100"});
  const ProcessResult gave_up = RunProcess(held);
  EXPECT_EQ(gave_up.exit_code, 1) << gave_up.err;
  EXPECT_NE(gave_up.err.find("greater than maximum allowed: 1048576"), std::string::npos)
      << gave_up.err;
  EXPECT_EQ(StreamMessages().size(), 5u) << "rows behind the refused one went out";

  std::vector<std::string> parking = RelayArgs(true);
  parking.insert(parking.end(), {"--park-refused-after", "3", "--backoff-max-ms", "100"});
  const ProcessResult parked = RunProcess(parking);
  EXPECT_EQ(parked.exit_code, 0) << parked.err;
  EXPECT_NE(parked.err.find("parked outbox row 6 after 4 attempts"), std::string::npos)
      << parked.err;
  EXPECT_NE(parked.err.find("; 1 parked;"), std::string::npos) << parked.err;
  const auto messages = StreamMessages();
  std::vector<std::string> ids;
  for (const auto& [seq, m] : messages) ids.push_back(m.first);
  std::vector<std::string> want;
  for (int i = 0; i < 10; ++i)
    want.push_back("training://orders/checkout evt-" + std::to_string(i));
  EXPECT_EQ(ids, want);

  const ProcessResult list =
      RunEvident({"outbox", "list", "--store", store_, "--parked", "--format", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const std::vector<std::string> lines = Lines(list.out);
  ASSERT_EQ(lines.size(), 1u) << list.out.substr(0, 500);
  simdjson::dom::parser parser;
  const simdjson::dom::element row = parser.parse(lines[0]).value();
  EXPECT_EQ(std::string(row["id"].get_string().value()), "evt-big");
  const std::string reason(row["parked_reason"].get_string().value());
  EXPECT_NE(reason.find("parked by the relay"), std::string::npos) << reason;
  EXPECT_NE(reason.find("maximum allowed"), std::string::npos) << reason;
  EXPECT_TRUE(row["sent_at_ms"].is_null());
}

// The same fixture on a PostgreSQL store of its own (the tests' server, scripts/postgres.sh).
// A relay with its own subject prefix, and a consumer that reads it with the same prefix: every
// event is decided once. Without a prefix (and without --filter) the consumer reads every
// subject of the stream, so a store of its own decides the same 50; a prefix that no subject can
// begin with is refused before anything is opened.
TEST_F(RelayNats, AConsumerReadsARelaysStreamWithItsSubjectPrefix) {
  Append(0, 50);
  std::vector<std::string> relay = RelayArgs(true);
  relay.insert(relay.end(), {"--subject-prefix", "shop.eu"});
  const ProcessResult relayed = RunProcess(relay);
  ASSERT_EQ(relayed.exit_code, 0) << relayed.err;
  const auto consume = [this](const std::string& prefix, const std::string& store) {
    std::vector<std::string> argv = {"consume",
                                     "--config",
                                     SourcePath("examples/orders/evident.yaml"),
                                     "--store",
                                     store,
                                     "--from",
                                     url_,
                                     "--stream",
                                     "ORDERS",
                                     "--durable",
                                     "d-" + std::to_string(prefix.size()),
                                     "--until-idle",
                                     "1",
                                     "--outcomes",
                                     "-"};
    if (!prefix.empty()) argv.insert(argv.end(), {"--subject-prefix", prefix});
    return RunEvident(argv);
  };
  const std::string store = "sqlite:" + (fs::path(dir_) / "consumer.db").string();
  const ProcessResult unprefixed =
      consume("", "sqlite:" + (fs::path(dir_) / "unprefixed.db").string());
  ASSERT_EQ(unprefixed.exit_code, 0) << unprefixed.err;
  EXPECT_EQ(std::count(unprefixed.out.begin(), unprefixed.out.end(), '\n'), 50) << unprefixed.out;
  EXPECT_EQ(unprefixed.out.find("rejected"), std::string::npos) << unprefixed.out;
  const ProcessResult read = consume("shop.eu", store);
  ASSERT_EQ(read.exit_code, 0) << read.err;
  size_t applied = 0;
  for (size_t at = 0; (at = read.out.find("\"outcome\":\"applied\"", at)) != std::string::npos;
       ++at) {
    ++applied;
  }
  // 50 status events of 47 subjects; each decided once, applied or stale (a later status of a
  // subject seen first), never rejected.
  EXPECT_EQ(std::count(read.out.begin(), read.out.end(), '\n'), 50) << read.out;
  EXPECT_GT(applied, 0U);
  EXPECT_EQ(read.out.find("rejected"), std::string::npos) << read.out;
  for (const std::string bad : {"shop.>", "shop..eu", "shop eu", ".shop"}) {
    const ProcessResult refused = consume(bad, store);
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_NE(refused.err.find("subject prefix '" + bad + "'"), std::string::npos) << refused.err;
  }
}

// A consumer whose server is gone when its run ends cannot know its acknowledgements arrived:
// it says so and exits 3, not 0. Its decisions are committed, so a run after the server is back
// answers whatever comes again `duplicate`, never applies an event twice.
TEST_F(RelayNats, AConsumerWhoseServerIsGoneAtTheEndSaysItsAcknowledgementsAreUnconfirmed) {
  Append(0, 50);
  const ProcessResult relayed = RunProcess(RelayArgs(true));
  ASSERT_EQ(relayed.exit_code, 0) << relayed.err;
  const std::string store = "sqlite:" + (fs::path(dir_) / "consumer.db").string();
  const auto consume_args = [&](const std::string& outcomes, const std::string& idle) {
    return std::vector<std::string>{
        EVIDENT_BINARY, "consume", "--config",      SourcePath("examples/orders/evident.yaml"),
        "--store",      store,     "--from",        url_,
        "--stream",     "ORDERS",  "--ack-wait-ms", "5000",
        "--until-idle", idle,      "--outcomes",    outcomes};
  };
  const std::string outcomes = (fs::path(dir_) / "first.ndjson").string();
  const std::string err_path = (fs::path(dir_) / "first.err").string();
  const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(err_fd, 0);
  const pid_t pid = StartProcess(consume_args(outcomes, "3"), {.err = err_fd});
  close(err_fd);
  ASSERT_GT(pid, 0);
  if (!WaitForDistinctKeys(outcomes, 50)) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    std::ifstream err_in(err_path);
    FAIL() << "the consumer did not decide the stream: "
           << std::string((std::istreambuf_iterator<char>(err_in)), {});
  }
  const std::string port = Port();
  KillServer();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::ifstream err_in(err_path);
  const std::string err((std::istreambuf_iterator<char>(err_in)), {});
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << EndedBy(status) << "\n" << err;
  // It ended because the server was gone as long as --until-idle, not because it was idle, and
  // one message says that the acknowledgements are not confirmed either.
  EXPECT_NE(err.find("has not been reachable for at least"), std::string::npos) << err;
  EXPECT_NE(err.find("nor could it confirm the acknowledgements"), std::string::npos) << err;
  EXPECT_EQ(err.find("the broker did not confirm every acknowledgement"), std::string::npos) << err;

  StartServer(port);
  const ProcessResult again = RunProcess(consume_args("-", "2"));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  // What comes again (any acknowledgement the server kept before it died does not) is a
  // duplicate, never applied a second time.
  const std::vector<std::string> again_lines = Lines(again.out);
  EXPECT_LE(again_lines.size(), 50u) << again.out;
  EXPECT_EQ(again.out.find("\"outcome\":\"applied\""), std::string::npos)
      << "an event was applied twice: " << again.out;
  for (const std::string& line : again_lines) {
    EXPECT_NE(line.find("\"outcome\":\"duplicate\""), std::string::npos) << line;
  }
}

// The end of an idle run is the server's word, not silence alone: with --until-idle 0 every
// message in the stream is decided (the run used to end at its first pause, with the messages
// of its first pull held from every consumer until their ack wait ended), and a frozen server
// (SIGSTOP: its connection looks up, it answers nothing) ends the run with exit 3 saying it
// could not be reached, never exit 0.
TEST_F(RelayNats, AnIdleRunEndsOnTheServersWordNotOnSilence) {
  Append(0, 500);
  ASSERT_EQ(RunProcess(RelayArgs(true)).exit_code, 0);
  const auto consume = [&](const std::string& durable, const std::string& idle) {
    return std::vector<std::string>{
        EVIDENT_BINARY, "consume",
        "--config",     SourcePath("examples/orders/evident.yaml"),
        "--store",      "sqlite:" + (fs::path(dir_) / (durable + ".db")).string(),
        "--from",       url_,
        "--stream",     "ORDERS",
        "--durable",    durable,
        "--until-idle", idle};
  };
  std::vector<std::string> zero = consume("zero", "0");
  zero.insert(zero.end(), {"--outcomes", "-"});
  const ProcessResult at_once = RunProcess(zero);
  EXPECT_EQ(at_once.exit_code, 0) << at_once.err;
  EXPECT_EQ(Lines(at_once.out).size(), 500u) << at_once.err;

  const std::string err_path = (fs::path(dir_) / "frozen.err").string();
  const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(err_fd, 0);
  const int null_fd = open("/dev/null", O_WRONLY);
  const std::string frozen_outcomes = (fs::path(dir_) / "frozen.ndjson").string();
  std::vector<std::string> frozen = consume("frozen", "3");
  frozen.insert(frozen.end(), {"--outcomes", frozen_outcomes});
  const pid_t pid = StartProcess(frozen, {.out = null_fd, .err = err_fd});
  close(err_fd);
  close(null_fd);
  ASSERT_GT(pid, 0);
  if (!WaitForDistinctKeys(frozen_outcomes, 500)) {  // the freeze comes once all are decided
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    FAIL() << "the run decided " << DistinctKeys(frozen_outcomes) << " of 500";
  }
  const pid_t server = ServerPid();
  ASSERT_GT(server, 0);
  ASSERT_EQ(kill(server, SIGSTOP), 0);
  int status = 0;
  const pid_t ended = waitpid(pid, &status, 0);
  kill(server, SIGCONT);
  ASSERT_EQ(ended, pid);
  std::ifstream err_in(err_path);
  const std::string err((std::istreambuf_iterator<char>(err_in)), {});
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << EndedBy(status) << "\n" << err;
  EXPECT_NE(err.find("has not been reachable for at least"), std::string::npos) << err;
  EXPECT_NE(err.find("a round trip to the server"), std::string::npos) << err;
}

// --until-idle counts silence from a server that answers: a consumer quiet for 6 s and then
// without its server for 5 s plus the restart (killed -9, or stopped gracefully: a pull the
// server breaks off as it shuts down), 11 s and more in all, is still running with --until-idle
// 10, and decides what the relay publishes after the restart before it ends with exit 0. (The
// outage the consumer sees is about 1.5 s longer than the sleep: stopping and starting the
// server take that long here. Each phase alone stays 3.5 s or more short of 10 s, so a slow
// machine does not end the run in either.)
class IdleConsumer : public RelayNats, public ::testing::WithParamInterface<bool> {};

TEST_P(IdleConsumer, DoesNotEndWhileTheServerIsDown) {
  const bool graceful = GetParam();
  Append(0, 20);
  ASSERT_EQ(RunProcess(RelayArgs(true)).exit_code, 0);
  const std::string outcomes = (fs::path(dir_) / "outcomes.ndjson").string();
  const std::string err_path = (fs::path(dir_) / "consume.err").string();
  const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(err_fd, 0);
  const pid_t pid = StartProcess(
      {EVIDENT_BINARY, "consume", "--config", SourcePath("examples/orders/evident.yaml"), "--store",
       "sqlite:" + (fs::path(dir_) / "consumer.db").string(), "--from", url_, "--stream", "ORDERS",
       "--until-idle", "10", "--outcomes", outcomes},
      {.err = err_fd});
  close(err_fd);
  ASSERT_GT(pid, 0);
  const auto decided = [&] { return DistinctKeys(outcomes); };
  ASSERT_TRUE(WaitForDistinctKeys(outcomes, 20)) << decided() << " of 20 decided";
  std::this_thread::sleep_for(std::chrono::seconds(6));
  const std::string port = Port();
  if (graceful) {
    int rc = 0;
    Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh stop " + NatsDir(), &rc);  // SIGTERM
    ASSERT_EQ(rc, 0);
  } else {
    KillServer();
  }
  std::this_thread::sleep_for(std::chrono::seconds(5));  // 11 s without a message in all
  int status = 0;
  const pid_t ended = waitpid(pid, &status, WNOHANG);
  if (ended != 0) {
    std::ifstream err_in(err_path);
    FAIL() << "the consumer ended while the server was down (" << EndedBy(status)
           << "): " << std::string((std::istreambuf_iterator<char>(err_in)), {});
  }
  StartServer(port);
  Append(20, 20);
  ASSERT_EQ(RunProcess(RelayArgs(true)).exit_code, 0);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::ifstream err_in(err_path);
  const std::string err((std::istreambuf_iterator<char>(err_in)), {});
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << EndedBy(status) << "\n" << err;
  EXPECT_EQ(decided(), 40u) << err;
}

INSTANTIATE_TEST_SUITE_P(Stopped, IdleConsumer, ::testing::Values(false, true),
                         // Not `info`: the macro's own parameter has that name (-Wshadow).
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return param_info.param ? "Gracefully" : "KilledNine";
                         });

class RelayNatsPostgres : public RelayNats {
 protected:
  void SetUp() override {
    RelayNats::SetUp();
    Result<std::string> uri = FreshPostgresSchema("relay_nats");
    ASSERT_TRUE(uri.ok()) << uri.status().ToString();
    store_ = *uri;
  }

  // In the stream's order, each subject's events come in the order they were appended.
  void ExpectOrderPerSubject() {
    std::map<int, int> last_by_subject;
    for (const auto& [seq, m] : StreamMessages()) {
      const int n = std::stoi(m.first.substr(m.first.rfind("evt-") + 4));
      const auto [it, first] = last_by_subject.emplace(n % 97, n);
      if (!first) {
        EXPECT_LT(it->second, n) << "order-" << n % 97 << ": evt-" << n << " at " << seq
                                 << " after evt-" << it->second;
        it->second = n;
      }
    }
  }
};

TEST_F(RelayNatsPostgres, ThreeRelaysOneKilledOneStoppedPastItsHoldEveryRowOnceInOrder) {
  Append(0, 400);
  std::vector<std::string> argv = RelayArgs(false);
  argv.insert(argv.end(), {"--claim-hold-ms", "1000", "--claim-partitions-max", "1",
                           "--backoff-max-ms", "500"});
  std::vector<pid_t> relays;
  std::vector<int> err_fds;
  for (int r = 0; r < 3; ++r) {
    err_fds.push_back(open((fs::path(dir_) / ("relay" + std::to_string(r) + ".err")).c_str(),
                           O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    relays.push_back(StartProcess(argv, {.err = err_fds.back()}));
    ASSERT_GT(relays.back(), 0);
  }
  int status = 0;
  for (int chunk = 1; chunk <= 10; ++chunk) {
    Append(chunk * 400, 400);  // the relays wake on each commit
    if (chunk == 3) {
      ASSERT_EQ(kill(relays[0], SIGKILL), 0);
      waitpid(relays[0], &status, 0);
    }
    if (chunk == 5) {
      ASSERT_EQ(kill(relays[1], SIGSTOP), 0);
    }
    if (chunk == 8) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the 1 s hold
      ASSERT_EQ(kill(relays[1], SIGCONT), 0);
    }
  }
  const bool drained = WaitUntilNothingPending(60);
  for (int r = 1; r < 3; ++r) {
    kill(relays[r], SIGTERM);
    waitpid(relays[r], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "relay " << r << " " << status;
  }
  for (const int fd : err_fds) close(fd);
  for (int r = 1; r < 3; ++r) {
    std::ifstream err(fs::path(dir_) / ("relay" + std::to_string(r) + ".err"));
    std::printf("relay %d: %s", r, std::string((std::istreambuf_iterator<char>(err)), {}).c_str());
  }
  EXPECT_TRUE(drained) << "rows still pending 60 s after the last append";
  ExpectEveryRowOnceAndSent();
  ExpectOrderPerSubject();
}

// A JetStream cluster of three servers on loopback (scripts/nats.sh cluster), the relay given
// their seed list.
class RelayNatsCluster : public RelayNats {
 protected:
  void SetUp() override {
    MakeDir();
    int rc = 0;
    url_ = Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh cluster " + NatsDir() + " 3", &rc);
    ASSERT_EQ(rc, 0) << "the cluster did not start: " << url_;
    ASSERT_EQ(std::count(url_.begin(), url_.end(), ','), 2) << url_;
  }
  // Waits (up to `seconds`) until the stream's leader reports every other replica current, with
  // no lag, and holds `messages`; true once it does.
  bool WaitReplicasCurrent(int seconds, uint64_t messages) {
    for (int i = 0; i < seconds * 10; ++i) {
      natsConnection* nc = nullptr;
      jsCtx* js = nullptr;
      jsStreamInfo* si = nullptr;
      bool current = false;
      if (natsConnection_ConnectTo(&nc, url_.c_str()) == NATS_OK &&
          natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
          js_GetStreamInfo(&si, js, "ORDERS", nullptr, nullptr) == NATS_OK &&
          si->Cluster != nullptr && si->Cluster->ReplicasLen == 2) {
        current = si->State.Msgs == messages;
        for (int r = 0; r < si->Cluster->ReplicasLen; ++r) {
          const jsPeerInfo* peer = si->Cluster->Replicas[r];
          current = current && peer->Current && !peer->Offline && peer->Lag == 0;
        }
      }
      if (si != nullptr) jsStreamInfo_Destroy(si);
      if (js != nullptr) jsCtx_Destroy(js);
      if (nc != nullptr) natsConnection_Destroy(nc);
      if (current) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  void Node(const std::string& what, const std::string& name) {
    int rc = 0;
    const std::string out = Shell(
        "bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh " + what + " " + NatsDir() + " " + name, &rc);
    ASSERT_EQ(rc, 0) << what << " " << name << ": " << out;
  }
  // Starts a relay that creates the stream with three replicas and keeps running; returns once
  // it has sent rows (0 when it sent none in 30 s).
  pid_t StartReplicatedRelay() {
    std::vector<std::string> argv = RelayArgs(false);
    argv.insert(argv.end(), {"--replicas", "3", "--backoff-max-ms", "500"});
    const pid_t relay = StartProcess(argv, {.out = null_fd_, .err = null_fd_});
    if (relay <= 0) return 0;
    for (int i = 0; i < 3000 && SentRows() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (SentRows() > 0) return relay;
    kill(relay, SIGKILL);
    waitpid(relay, nullptr, 0);
    return 0;
  }
  // Stops the relay as a supervisor would: true when it exited 0.
  static bool StopRelay(pid_t relay) {
    kill(relay, SIGTERM);
    int status = 0;
    waitpid(relay, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  // Starts a consumer of the seed list with the durable consumer `durable`, its outcomes in
  // Outcomes() and its standard error in consume.err, ending after 15 s idle.
  pid_t StartConsumer(const std::string& durable) {
    consume_err_ = open((fs::path(dir_) / "consume.err").c_str(),
                        O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    return StartProcess(
        {EVIDENT_BINARY, "consume", "--config", SourcePath("examples/orders/evident.yaml"),
         "--from", url_, "--stream", "ORDERS", "--durable", durable, "--store",
         "sqlite:" + (fs::path(dir_) / "consumer.db").string(), "--batch-count-max", "50",
         "--until-idle", "15", "--outcomes", Outcomes()},
        {.err = consume_err_});
  }
  std::string Outcomes() const { return (fs::path(dir_) / "outcomes.ndjson").string(); }
  // Waits up to 120 s for the consumer to end (killed after): "" when it exited 0, else why,
  // with what it said.
  std::string ConsumerEnd(pid_t consumer) {
    int status = 0;
    bool ended = false;
    for (int i = 0; i < 1200 && !(ended = waitpid(consumer, &status, WNOHANG) == consumer); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!ended) {
      kill(consumer, SIGKILL);
      waitpid(consumer, &status, 0);
    }
    std::ifstream err((fs::path(dir_) / "consume.err").string());
    const std::string said((std::istreambuf_iterator<char>(err)), {});
    if (!ended) return "the consume did not end within 120 s: " + said;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
    return "consume status " + std::to_string(status) + ": " + said;
  }
  void TearDown() override {
    if (consume_err_ >= 0) close(consume_err_);
    close(null_fd_);
    RelayNats::TearDown();
  }
  int null_fd_ = open("/dev/null", O_WRONLY | O_CLOEXEC);
  int consume_err_ = -1;
};

// The relay creates a stream of three replicas and keeps publishing while the server leading
// it is killed -9 with rows pending: the two others elect a leader, the relay reconnects to one
// of them, and the stream holds every row exactly once, read from the two; the killed server,
// started again, catches up (the leader reports it current, with no lag, at 7,000 messages).
TEST_F(RelayNatsCluster, AStreamOfThreeReplicasLosesNothingWhenItsLeaderIsKilled) {
  Append(0, 6000);
  const pid_t relay = StartReplicatedRelay();
  ASSERT_GT(relay, 0) << "the relay sent nothing in 30 s";
  const auto [leader, replicas] = StreamPlacement();
  ASSERT_FALSE(leader.empty()) << "the stream has no leader";
  EXPECT_EQ(replicas, 3);
  Node("node-stop", leader + " KILL");
  EXPECT_LT(SentRows(), 6000) << "every row was sent before the leader died";
  Append(6000, 1000);  // rows keep coming while the two others elect a leader
  const bool drained = WaitUntilNothingPending(60);
  const std::string new_leader = StreamPlacement().first;
  EXPECT_NE(new_leader, leader);
  EXPECT_FALSE(new_leader.empty());
  EXPECT_TRUE(StopRelay(relay));
  EXPECT_TRUE(drained) << "rows still pending 60 s after the leader died";
  {
    SCOPED_TRACE("read from the two servers left");
    ExpectEveryRowOnceAndSent();
  }
  Node("node-start", leader);
  EXPECT_TRUE(WaitReplicasCurrent(30, 7000)) << "the restarted server did not catch up in 30 s";
}

// A follower of the three-replica stream is killed -9 while the relay publishes (1,000 rows are
// appended after its death) and a consumer fetches and acknowledges, then started again: the two
// others keep a majority, so PubAcks and acks go on; the stream holds every row once, the consumer
// decides every event once, and the restarted follower catches up (current, no lag, at 3,000
// messages).
TEST_F(RelayNatsCluster, AFollowerKilledMidPublishAndMidAckLosesNothing) {
  Append(0, 2000);
  const pid_t relay = StartReplicatedRelay();
  ASSERT_GT(relay, 0) << "the relay sent nothing in 30 s";
  const pid_t consumer = StartConsumer("follower");
  ASSERT_GT(consumer, 0);
  ASSERT_TRUE(WaitForDistinctKeys(Outcomes(), 100)) << "the consumer decided nothing in 30 s";
  const std::string leader = StreamPlacement().first;
  ASSERT_FALSE(leader.empty()) << "the stream has no leader";
  const std::string follower = leader == "n1" ? "n2" : "n1";
  Node("node-stop", follower + " KILL");
  Append(2000, 1000);  // published, fetched and acknowledged while the follower is down
  const bool drained = WaitUntilNothingPending(60);
  bool consumed = false;  // every event decided before the follower comes back: 90 s at most
  for (int i = 0; i < 900 && !(consumed = DistinctKeys(Outcomes()) >= 3000); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(consumed) << DistinctKeys(Outcomes()) << " events decided with a follower down";
  Node("node-start", follower);
  EXPECT_TRUE(StopRelay(relay));
  EXPECT_TRUE(drained) << "rows still pending 60 s after the follower died";
  EXPECT_EQ(ConsumerEnd(consumer), "");
  EXPECT_EQ(DistinctKeys(Outcomes()), 3000u);
  {
    SCOPED_TRACE("the stream, after the follower's return");
    ExpectEveryRowOnceAndSent();
  }
  EXPECT_TRUE(WaitReplicasCurrent(30, 3000)) << "the restarted follower did not catch up in 30 s";
}

// A consumer given the seed list decides every event of a three-replica stream exactly once
// while the server leading its durable consumer is killed -9 and started again: the election
// and the reconnection fit in its --until-idle (15 s; a source unreachable longer than that
// ends the run with exit 3, saying so).
TEST_F(RelayNatsCluster, AConsumerRidesThroughItsConsumerLeadersDeath) {
  Append(0, 2000);
  const ProcessResult relayed = RunProcess([&] {
    std::vector<std::string> argv = RelayArgs(true);
    argv.insert(argv.end(), {"--replicas", "3"});
    return argv;
  }());
  ASSERT_EQ(relayed.exit_code, 0) << relayed.err;
  const std::string outcomes = Outcomes();
  const pid_t consumer = StartConsumer("cluster");
  ASSERT_GT(consumer, 0);
  ASSERT_TRUE(WaitForDistinctKeys(outcomes, 200)) << "the consumer decided nothing in 30 s";
  // The durable consumer's leader, asked of the cluster.
  std::string leader;
  {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    jsConsumerInfo* ci = nullptr;
    if (natsConnection_ConnectTo(&nc, url_.c_str()) == NATS_OK &&
        natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
        js_GetConsumerInfo(&ci, js, "ORDERS", "cluster", nullptr, nullptr) == NATS_OK &&
        ci->Cluster != nullptr && ci->Cluster->Leader != nullptr) {
      leader = ci->Cluster->Leader;
    }
    if (ci != nullptr) jsConsumerInfo_Destroy(ci);
    if (js != nullptr) jsCtx_Destroy(js);
    if (nc != nullptr) natsConnection_Destroy(nc);
  }
  ASSERT_FALSE(leader.empty()) << "the durable consumer has no leader";
  Node("node-stop", leader + " KILL");
  EXPECT_LT(DistinctKeys(outcomes), 2000u) << "every event was decided before the leader died";
  std::this_thread::sleep_for(std::chrono::seconds(2));
  Node("node-start", leader);
  EXPECT_EQ(ConsumerEnd(consumer), "");  // within 120 s: 2,000 events and --until-idle 15
  EXPECT_EQ(DistinctKeys(outcomes), 2000u);
}

// A consumer started, with a new durable, just as the server leading its three-replica stream
// is killed -9: making the durable consumer meets the election (a timeout, or the cluster
// saying it is not available), which is tried again within --open-wait-ms, and every event is
// decided once. A cluster that is wholly gone ends the run with exit 3 once --open-wait-ms has
// passed, saying for how long it tried.
TEST_F(RelayNatsCluster, AConsumerMadeDuringAnElectionWaitsItOutAndAGoneClusterEndsIt) {
  Append(0, 500);
  const ProcessResult relayed = RunProcess([&] {
    std::vector<std::string> argv = RelayArgs(true);
    argv.insert(argv.end(), {"--replicas", "3"});
    return argv;
  }());
  ASSERT_EQ(relayed.exit_code, 0) << relayed.err;
  ASSERT_TRUE(WaitReplicasCurrent(30, 500)) << "the replicas did not catch up in 30 s";
  const std::string leader = StreamPlacement().first;
  ASSERT_FALSE(leader.empty()) << "the stream has no leader";
  const auto consume = [&](const std::string& durable, const std::string& wait_ms) {
    return std::vector<std::string>{
        EVIDENT_BINARY,   "consume",
        "--config",       SourcePath("examples/orders/evident.yaml"),
        "--from",         url_,
        "--stream",       "ORDERS",
        "--durable",      durable,
        "--store",        "sqlite:" + (fs::path(dir_) / (durable + ".db")).string(),
        "--until-idle",   "5",
        "--open-wait-ms", wait_ms,
        "--outcomes",     (fs::path(dir_) / (durable + ".out")).string()};
  };
  Node("node-stop", leader + " KILL");
  const ProcessResult during = RunProcess(consume("during", "60000"));
  EXPECT_EQ(during.exit_code, 0) << during.err;
  // It did meet the election (the kill is just before its start; an election takes seconds).
  EXPECT_NE(during.err.find("trying again for up to 60000 ms"), std::string::npos) << during.err;
  EXPECT_EQ(DistinctKeys((fs::path(dir_) / "during.out").string()), 500u) << during.err;
  EXPECT_NE(StreamPlacement().first, leader);
  for (const std::string name : {"n1", "n2", "n3"}) {
    if (name != leader) Node("node-stop", name);
  }
  const auto began = std::chrono::steady_clock::now();
  const ProcessResult gone = RunProcess(consume("gone", "3000"));
  const auto took = std::chrono::steady_clock::now() - began;
  EXPECT_EQ(gone.exit_code, 3) << gone.err;
  EXPECT_NE(gone.err.find("trying again for up to 3000 ms"), std::string::npos) << gone.err;
  EXPECT_NE(gone.err.find("unavailable for"), std::string::npos) << gone.err;
  EXPECT_GE(took, std::chrono::seconds(3));
  EXPECT_LT(took, std::chrono::seconds(30));
}

// A server that demands TLS (its clients' certificates verified against a CA made at test time)
// and a user's password: the relay and a consumer reach it with --broker-config, the password
// from a file; without the credentials, or without TLS, each is refused at once (exit 2, the
// reason said, the password never shown) rather than retried.
class RelayNatsSecured : public RelayNats {
 protected:
  void SetUp() override {
    MakeDir();
    int rc = 0;
    const std::string tls = dir_ + "/tls";
    const std::string made = Shell(
        "bash " EVIDENT_SOURCE_DIR "/tests/fixtures/nats-auth/make-tls.sh " + tls + " 2>&1", &rc);
    ASSERT_EQ(rc, 0) << made;
    const std::string conf = dir_ + "/server.conf";
    std::ofstream(conf) << "tls {\n  cert_file: \"" << tls << "/server.pem\"\n  key_file: \"" << tls
                        << "/server.key\"\n  ca_file: \"" << tls
                        << "/ca.pem\"\n  verify: true\n}\nauthorization {\n  user: relay\n"
                        << "  password: \"pw-7f3a9c\"\n}\n";
    std::ofstream(dir_ + "/pw") << "pw-7f3a9c\n";
    url_ = Shell(
        "NATS_CONFIG=" + conf + " bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh start " + NatsDir(),
        &rc);
    ASSERT_EQ(rc, 0) << "nats-server did not start: " << url_;
    secured_ = {"--broker-config", "tls.ca=" + tls + "/ca.pem",
                "--broker-config", "tls.cert=" + tls + "/client.pem",
                "--broker-config", "tls.key=" + tls + "/client.key",
                "--broker-config", "user=relay",
                "--broker-config", "password_file=" + dir_ + "/pw"};
  }
  std::vector<std::string> Consume(const std::vector<std::string>& config) const {
    std::vector<std::string> argv = {EVIDENT_BINARY, "consume",
                                     "--config",     SourcePath("examples/orders/evident.yaml"),
                                     "--store",      "sqlite:" + dir_ + "/consumer.db",
                                     "--from",       url_,
                                     "--stream",     "ORDERS",
                                     "--until-idle", "1",
                                     "--outcomes",   "-"};
    argv.insert(argv.end(), config.begin(), config.end());
    return argv;
  }
  std::vector<std::string> secured_;
};

TEST_F(RelayNatsSecured, TheRelayAndAConsumerReachItWithTlsAndAPasswordFromAFile) {
  Append(0, 50);
  std::vector<std::string> relay = RelayArgs(true);
  const ProcessResult bare = RunProcess(relay);
  EXPECT_EQ(bare.exit_code, 2) << bare.err;
  EXPECT_NE(bare.err.find("TLS handshake failed"), std::string::npos) << bare.err;
  std::vector<std::string> no_password = relay;
  no_password.insert(no_password.end(), secured_.begin(), secured_.end() - 4);
  const ProcessResult refused = RunProcess(no_password);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("refused the credentials"), std::string::npos) << refused.err;
  EXPECT_EQ(SentRows(), 0);
  relay.insert(relay.end(), secured_.begin(), secured_.end());
  const ProcessResult relayed = RunProcess(relay);
  ASSERT_EQ(relayed.exit_code, 0) << relayed.err;
  EXPECT_EQ(SentRows(), 50);

  std::vector<std::string> wrong = secured_;
  wrong.back() = "password=pw-wrong-1b2c";
  const ProcessResult unread = RunProcess(Consume(wrong));
  EXPECT_NE(unread.exit_code, 0) << unread.err;
  EXPECT_NE(unread.err.find("refused the credentials"), std::string::npos) << unread.err;
  EXPECT_EQ(unread.err.find("pw-wrong-1b2c"), std::string::npos) << unread.err;
  const ProcessResult read = RunProcess(Consume(secured_));
  ASSERT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(std::count(read.out.begin(), read.out.end(), '\n'), 50) << read.out;
  EXPECT_EQ(read.out.find("rejected"), std::string::npos) << read.out;
}

}  // namespace
}  // namespace evident::testing
