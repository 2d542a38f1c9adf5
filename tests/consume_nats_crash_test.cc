// kill -9 of `evident consume --from nats://` mid-stream: the orders input (orders_input.h) is
// published to a JetStream stream of a real nats-server (scripts/nats.sh; the test fails when it
// cannot start), consumed once without interruption by durable "clean" into clean.db, and by
// durable "crashy" into crashed.db by runs that are killed with SIGKILL at the fault points of
// the commit path and at random times, each restarted on the same durable, the last one ended
// by --until-idle. Then:
//
// A. crashed.db equals clean.db in everything evident decides independently of arrival order.
// B. crashed.db equals, subject by subject, a replay.db made by one uninterrupted
//    `consume --input` over the deliveries the crashing runs reported, in the order they reported
//    them: the arrival-dependent columns are exactly what that arrival order gives.
// C. Every reported decision is in crashed.db, no event was reported applied twice, and the
//    durable consumer ends with nothing pending and nothing unacknowledged.
//
// Why two comparisons. A killed run leaves messages delivered but unacknowledged; the server
// redelivers them only after the ack wait, by which time the restarted run has taken later
// messages: the crashing runs see events in a different order than the clean run (stream order),
// and see again what a run committed but did not acknowledge. evident promises convergence under
// that, not an arrival log that ignores it. Some columns record arrival by design, for this input:
// - journal rows (every duplicate delivery and every deferral) and ledger `duplicates` /
//   `last_duplicate_at` count deliveries; a redelivered message adds to them;
// - a quarantine record counts the deliveries of its input (a rejected line redelivered after its
//   batch committed adds an attempt, like a line given twice in the input); its id numbers
//   arrivals; its input_index is the stream sequence of the copy kept: an input the stream holds
//   twice is kept at whichever copy arrives first (A names it by the first copy);
// - orders-projection is unordered: its projection state is the last status to arrive, and a
//   receipt's projection_version is its rank of arrival;
// - a deferred event's expected_version is the projection version + 1 when it arrived, and its
//   input_index is the stream sequence of the copy deferred: an event the stream holds twice (a
//   duplicate in the input) is deferred at whichever copy arrives first (a redelivery after a
//   kill can bring the second copy first);
// - where two events claim one version of a subject (evt-conflict-N and evt-N-v2), the first to
//   arrive takes it and the other is kept as same-version-conflict or stale;
// - the stored position (the last decided message's stream sequence) is not compared at all:
//   the durable consumer, not the store, is a JetStream source's position (Start ignores it).
// A blanks exactly these (contested versions: the claimant's id and raw bytes) and drops
// the journal, and compares kept rows as the set of stream messages kept, with why. B compares
// every column, including these, for every subject whose decisions the runs all reported; only
// a run killed between its commit and its outcome lines leaves decisions unreported (B cannot
// know their order; C still checks the store holds no fewer decisions than were reported).
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
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <span>
#include <string_view>
#include <thread>
#include <tuple>

#include "core/fnv1a.h"
#include "evident/jetstream.h"
#include "orders_input.h"
#include "run_process.h"
#include "store/postgres/test_database.h"
#include "store_dump.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kOrders = 1500;  // about 10,300 messages
constexpr const char* kStream = "EVENTS";
constexpr const char* kOrdered = "fulfillment";          // examples/orders: by subject version
constexpr const char* kUnordered = "orders-projection";  // examples/orders: last status wins
// The crashing runs' ack wait: a killed run's messages come back after it. The final run waits
// for them: --until-idle longer than the ack wait.
constexpr int64_t kAckWaitMs = 2000;
constexpr const char* kFinalIdle = "6";
// The points a batch meets on this path: before and after the position write, the SQLite commit,
// the outcome lines ("before-ack" is before them, "after-ack" after them and before the
// JetStream acks). The WAL checkpoint points are SQLite's alone; crash_test covers them.
constexpr const char* kFaultPoints[] = {
    "before-checkpoint:2", "after-checkpoint:2", "before-commit:2", "after-commit:2",
    "before-ack:2",        "after-ack:2",        "after-commit:1",  "after-ack:1"};
// Random kills: each after a random number of outcome lines (up to twice the messages not yet
// reported, shared among the kills left, so that the kills spread over the stream) and 0-20 ms
// more, so that it lands anywhere in a batch; a run that has not got that far after kRandomRunMs
// (the stream consumed, redeliveries awaited: longer than the ack wait) is killed then.
constexpr int kRandomKills = 10;
constexpr int64_t kRandomRunMs = 2500;

// A nats-server with JetStream for one test, stopped by Stop or when this goes (nats.sh stop
// finds the server by the pid file in `dir`: stop it before removing the directory).
class NatsServer {
 public:
  explicit NatsServer(fs::path dir) : dir_(std::move(dir)) {
    int rc = 0;
    url_ = Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh start " + dir_.string(), &rc);
    if (rc != 0 || url_.rfind("nats://", 0) != 0) url_.clear();
  }
  ~NatsServer() { Stop(); }
  void Stop() {
    int rc = 0;
    Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh stop " + dir_.string(), &rc);
    EXPECT_EQ(rc, 0) << "nats-server in " << dir_ << " did not stop";
  }
  const std::string& url() const { return url_; }  // "" when the server did not start

 private:
  fs::path dir_;
  std::string url_;
};

// One message per input line, the line's bytes as the payload and Msg-Id "line-<i>": a line
// given twice is two messages (a producer that sent an event again after the server's duplicate
// window), and line i is stream sequence i + 1.
void Publish(const std::string& url, const std::vector<std::string>& lines) {
  auto publisher = OpenJetStreamPublisher({.url = url, .stream = kStream});
  ASSERT_TRUE(publisher.ok()) << publisher.status().ToString();
  std::vector<OutgoingMessage> all;
  for (size_t i = 0; i < lines.size(); ++i) {
    all.push_back({"p0.orders", "line-" + std::to_string(i), lines[i]});
  }
  size_t done = 0;
  for (int attempt = 0; done < all.size() && attempt < 1000; ++attempt) {
    const size_t n = std::min<size_t>(256, all.size() - done);
    Result<size_t> accepted = (*publisher)->Publish(std::span(all).subspan(done, n));
    ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
    for (size_t i = 0; i < *accepted; ++i) {
      ASSERT_EQ((*publisher)->acks()[i].sequence, done + i + 1);
      ASSERT_FALSE((*publisher)->acks()[i].duplicate);
    }
    done += *accepted;
  }
  ASSERT_EQ(done, all.size());
  ASSERT_TRUE((*publisher)->Close().ok());
}

// What the server says about a durable consumer.
struct DurableState {
  bool read = false;
  uint64_t delivered_consumer = 0;  // deliveries, redeliveries included
  uint64_t ack_floor_stream = 0;
  int64_t ack_pending = -1, pending = -1;
};

DurableState ReadDurable(const std::string& url, const std::string& durable) {
  DurableState state;
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  jsConsumerInfo* ci = nullptr;
  if (natsConnection_ConnectTo(&nc, url.c_str()) == NATS_OK &&
      natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
      js_GetConsumerInfo(&ci, js, kStream, durable.c_str(), nullptr, nullptr) == NATS_OK) {
    state.read = true;
    state.delivered_consumer = ci->Delivered.Consumer;
    state.ack_floor_stream = ci->AckFloor.Stream;
    state.ack_pending = ci->NumAckPending;
    state.pending = static_cast<int64_t>(ci->NumPending);
    jsConsumerInfo_Destroy(ci);
  }
  if (js != nullptr) jsCtx_Destroy(js);
  if (nc != nullptr) natsConnection_Destroy(nc);
  return state;
}

// One outcome line: a decision, written only after its batch committed.
struct Reported {
  int64_t index = 0;     // the message's stream sequence
  std::string consumer;  // "" for null (rejected before any consumer)
  std::string outcome, key, subject;
  bool drained = false;  // a deferred event applied when its gap closed: no delivery of its own
};

std::string StringOrEmpty(simdjson::dom::element e) {
  return e.is_null() ? std::string() : std::string(e.get_string().value());
}

// The lines of one run's outcomes file. A killed run's last line may be torn (SIGKILL can cut a
// write short, see crash_test); it is left out: its decision counts as unreported.
std::vector<Reported> ReadReported(const fs::path& path, bool may_tear) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  if (!may_tear && !text.empty()) {
    EXPECT_EQ(text.back(), '\n') << path << ": a run that was not killed left a torn last line";
  }
  std::vector<Reported> out;
  simdjson::dom::parser parser;
  const std::vector<std::string> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    simdjson::dom::element e;
    const simdjson::error_code parsed = parser.parse(lines[i]).get(e);
    if (parsed != simdjson::SUCCESS && may_tear && i + 1 == lines.size() && text.back() != '\n') {
      break;
    }
    EXPECT_EQ(parsed, simdjson::SUCCESS) << path << ": " << lines[i];
    if (parsed != simdjson::SUCCESS) continue;
    Reported r;
    r.index = e["index"].get_int64().value();
    r.consumer = StringOrEmpty(e["consumer"].value());
    r.outcome = std::string(e["outcome"].get_string().value());
    r.key = StringOrEmpty(e["key"].value());
    r.subject = StringOrEmpty(e["subject"].value());
    r.drained = e["drained"].get_bool().value();
    out.push_back(std::move(r));
  }
  return out;
}

// (consumer, subject, version) of the ordered consumer that more than one event id claims, with
// those ids.
using Slot = std::tuple<std::string, std::string, int64_t>;
std::map<Slot, std::set<std::string>> ContestedSlots(const std::vector<std::string>& lines) {
  std::map<Slot, std::set<std::string>> claimants;
  simdjson::dom::parser parser;
  for (const std::string& line : lines) {
    simdjson::dom::element e;
    if (parser.parse(line).get(e) != simdjson::SUCCESS) continue;
    std::string_view type, subject, id;
    int64_t version = 0;
    if (e["type"].get(type) || e["subject"].get(subject) || e["id"].get(id) ||
        e["data"]["orderVersion"].get(version)) {
      continue;
    }
    if (type.rfind("com.example.training.order.", 0) != 0) continue;
    claimants[{kOrdered, std::string(subject), version}].insert(std::string(id));
  }
  std::erase_if(claimants, [](const auto& slot_ids) { return slot_ids.second.size() < 2; });
  return claimants;
}

using Contested = std::map<Slot, std::set<std::string>>;

bool IsContested(const Contested& contested, const std::string& consumer,
                 const std::string& subject, const std::optional<int64_t>& version) {
  return version && contested.contains({consumer, subject, *version});
}

// A: what evident decides independently of arrival order (the file comment says why each
// blanked column records arrival). Changes `rows` and returns its tables, kept rows as a set.
// `lines` are the stream's messages (line i is stream sequence i + 1).
std::vector<Table> OrderIndependent(StoreRows rows, const Contested& contested,
                                    const std::vector<std::string>& lines) {
  constexpr const char* kClaimant = "(first claimant to arrive)";
  for (LedgerEntry& e : rows.ledger) {
    e.duplicates = 0;
    e.last_duplicate_at_ms.reset();
    if (e.consumer == kUnordered) e.projection_version.reset();
    if (IsContested(contested, e.consumer, e.subject, e.subject_version)) e.event_id = kClaimant;
  }
  for (Projection& p : rows.projections) {
    if (p.consumer == kUnordered) p.state = "(last status to arrive)";
  }
  for (EvidenceRecord& r : rows.evidence) {
    if (IsContested(contested, r.consumer, r.subject, r.subject_version)) r.event_id = kClaimant;
  }
  for (DeferredEvent& d : rows.deferred) {
    d.expected_version = 0;
    d.input_index = 0;
    if (IsContested(contested, d.consumer, d.subject, d.subject_version)) {
      d.event_id = kClaimant;
      d.raw.clear();
    }
  }
  for (EffectIntent& e : rows.effects) {  // the key is the version's; the event, the claimant's
    if (!IsContested(contested, e.consumer, e.subject, e.subject_version)) continue;
    e.event_id = kClaimant;
    e.request.clear();
  }
  for (CompensationRecord& c : rows.compensations) {
    if (IsContested(contested, c.consumer, c.subject, c.owner_version)) c.event_id = kClaimant;
  }
  std::erase_if(rows.kept, [&](const QuarantineRecord& k) {
    return IsContested(contested, k.consumer, k.subject, k.subject_version);
  });
  std::map<std::string_view, int64_t> first_copy;  // bytes -> the first stream sequence
  for (size_t i = lines.size(); i-- > 0;) first_copy[lines[i]] = static_cast<int64_t>(i) + 1;
  for (QuarantineRecord& k : rows.kept) {
    k.id = 0;
    k.attempts = 0;  // a redelivered refused message counts one more
    if (const auto it = first_copy.find(k.raw); it != first_copy.end()) k.input_index = it->second;
  }
  rows.journal.clear();
  rows.position_source.reset();
  std::vector<Table> tables = Tables(rows);
  for (Table& t : tables) {
    if (t.name == "quarantine")
      t.rows.erase(std::unique(t.rows.begin(), t.rows.end()), t.rows.end());
  }
  return tables;
}

// B: every column, with the store-wide numbering made per subject (kept and journal seq become
// the rank within their subject, and consumer for the journal: other subjects and unreported
// decisions take numbers in between) and input_index mapped to the stream sequence by
// `sequence_of` (the replay's index is its line; empty: already a stream sequence).
std::vector<Table> ArrivalComparable(StoreRows rows, const std::vector<int64_t>& sequence_of) {
  const auto map_index = [&](int64_t index) {
    return sequence_of.empty() ? index : sequence_of.at(static_cast<size_t>(index));
  };
  std::sort(rows.kept.begin(), rows.kept.end(),
            [](const QuarantineRecord& a, const QuarantineRecord& b) { return a.id < b.id; });
  std::map<std::string, int64_t> rank;
  for (QuarantineRecord& k : rows.kept) {
    k.id = ++rank[k.subject];
    k.input_index = map_index(k.input_index);
  }
  std::sort(rows.journal.begin(), rows.journal.end(),
            [](const JournalEntry& a, const JournalEntry& b) { return a.seq < b.seq; });
  rank.clear();
  for (JournalEntry& j : rows.journal) j.seq = ++rank[j.consumer + "\n" + j.subject];
  for (DeferredEvent& d : rows.deferred) d.input_index = map_index(d.input_index);
  rows.position_source.reset();
  return Tables(rows);
}

// Starts `argv` (output to `log`) and kills it with SIGKILL `extra_us` after its outcomes file
// holds `lines` lines, or `deadline_ms` after it started, whichever comes first: kills land
// mid-stream however fast the machine is, and, once the stream is consumed, while the run waits
// for redeliveries. Returns the wait status.
int RunKilledAfterLines(const std::vector<std::string>& argv, const fs::path& outcomes,
                        int64_t lines, int64_t extra_us, int64_t deadline_ms, const fs::path& log) {
  const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const pid_t pid = StartProcess(argv, {.out = log_fd, .err = log_fd}, {},
                                 {{"EVIDENT_FAULT_POINT", std::nullopt}});
  if (log_fd >= 0) close(log_fd);
  if (pid < 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
  int status = 0;
  int fd = -1;
  off_t offset = 0;
  int64_t seen = 0;
  while (seen < lines && std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      if (fd >= 0) close(fd);
      return status;
    }
    if (fd < 0) fd = open(outcomes.c_str(), O_RDONLY | O_CLOEXEC);
    char buffer[65536];
    ssize_t n = 0;
    while (fd >= 0 && (n = pread(fd, buffer, sizeof buffer, offset)) > 0) {
      seen += std::count(buffer, buffer + n, '\n');
      offset += n;
    }
    usleep(2000);
  }
  if (fd >= 0) close(fd);
  usleep(static_cast<useconds_t>(extra_us));
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return status;
}

// The crashing runs over one store and one durable: each run writes its own outcomes file.
class CrashingRuns {
 public:
  CrashingRuns(std::vector<std::string> common, fs::path dir)
      : common_(std::move(common)), dir_(std::move(dir)) {}

  // A run with `fault` armed ("": none), not killed otherwise, ended by --until-idle.
  int Run(const std::string& fault) {
    return Record([&](const std::vector<std::string>& argv, const fs::path&, const fs::path& log) {
      return RunAndKill(argv, fault, -1, log.string());
    });
  }

  // A run killed as RunKilledAfterLines says.
  int RunKilledAfter(int64_t lines, int64_t extra_us, int64_t deadline_ms) {
    return Record(
        [&](const std::vector<std::string>& argv, const fs::path& outcomes, const fs::path& log) {
          return RunKilledAfterLines(argv, outcomes, lines, extra_us, deadline_ms, log);
        });
  }

  int runs() const { return runs_; }
  fs::path last_log() const { return dir_ / ("crashy-" + std::to_string(runs_ - 1) + ".log"); }
  const std::vector<Reported>& reported() const { return reported_; }
  const std::set<std::string>& applied() const { return applied_; }

 private:
  template <typename Runner>
  int Record(const Runner& run) {
    const std::string n = std::to_string(runs_++);
    const fs::path outcomes = dir_ / ("crashy-" + n + ".ndjson");
    std::vector<std::string> argv = common_;
    argv.insert(argv.end(), {"--outcomes", outcomes.string()});
    const int status = run(argv, outcomes, dir_ / ("crashy-" + n + ".log"));
    for (Reported& r : ReadReported(outcomes, Killed(status))) {
      if (r.outcome == "applied") {
        EXPECT_TRUE(applied_.insert(r.key).second)
            << r.key << " was reported applied twice (run " << n << ")";
      }
      reported_.push_back(std::move(r));
    }
    return status;
  }

  std::vector<std::string> common_;
  fs::path dir_;
  int runs_ = 0;
  std::vector<Reported> reported_;  // every run's lines, in the order they were written
  std::set<std::string> applied_;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Batches of 50 (less than one fetch of 64) and of 500 (a killed run leaves several fetches
// unacknowledged, and a lost batch is large).
class ConsumeNatsCrash : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(BatchCountMax, ConsumeNatsCrash, ::testing::Values(50, 500));

TEST_P(ConsumeNatsCrash, KillNineMidStreamConvergesToTheUninterruptedStore) {
  const std::string batch = std::to_string(GetParam());
  const fs::path dir =
      fs::temp_directory_path() / ("evident-nats-crash-" + std::to_string(getpid()) + "-" + batch);
  fs::remove_all(dir);
  fs::create_directories(dir);
  NatsServer server(dir / "nats");
  ASSERT_NE(server.url(), "") << "nats-server did not start (scripts/nats.sh start)";
  const std::vector<std::string> lines = MakeInput(kOrders, 7);
  Publish(server.url(), lines);
  if (HasFatalFailure()) return;
  const int64_t messages = static_cast<int64_t>(lines.size());
  const Contested contested = ContestedSlots(lines);
  std::set<std::string> claimant_ids;
  for (const auto& [slot, ids] : contested) claimant_ids.insert(ids.begin(), ids.end());

  const std::string config = SourcePath("examples/orders/evident.yaml");
  const auto consume = [&](const std::string& durable, const std::string& store) {
    return std::vector<std::string>{
        EVIDENT_BINARY,      "consume", "--config",  config,  "--from",  server.url(),
        "--stream",          kStream,   "--durable", durable, "--store", store,
        "--batch-count-max", batch};
  };

  // The reference: durable "clean", its default ack wait (30 s) long enough that nothing comes
  // twice, so it decides every message once, in stream order.
  const std::string clean_db = (dir / "clean.db").string();
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> argv = consume("clean", "sqlite:" + clean_db);
  argv.insert(argv.end(), {"--until-idle", "3", "--outcomes", (dir / "clean.ndjson").string()});
  ASSERT_TRUE(Finished(RunAndKill(argv, "", -1, (dir / "clean.log").string())))
      << "see " << dir / "clean.log";
  const double clean_seconds = SecondsSince(start);
  const std::vector<Reported> clean = ReadReported(dir / "clean.ndjson", false);
  std::set<std::string> clean_applied;
  int64_t next_index = 1;
  for (const Reported& r : clean) {
    if (r.outcome == "applied") clean_applied.insert(r.key);
    if (r.drained) continue;
    ASSERT_EQ(r.index, next_index) << "the clean run did not decide each message once, in order";
    ++next_index;
  }
  ASSERT_EQ(next_index, messages + 1) << "the clean run did not decide every message";

  // The crashing runs: durable "crashy", killed at the fault points, then at random points of
  // the stream, then left to end by --until-idle.
  start = std::chrono::steady_clock::now();
  std::vector<std::string> common = consume("crashy", "sqlite:" + (dir / "crashed.db").string());
  common.insert(common.end(),
                {"--ack-wait-ms", std::to_string(kAckWaitMs), "--until-idle", kFinalIdle});
  CrashingRuns runs(common, dir);
  for (const char* fault : kFaultPoints) {
    const int status = runs.Run(fault);
    ASSERT_TRUE(Killed(status)) << "fault point " << fault
                                << " was never reached: the run ended by " << EndedBy(status)
                                << " (its log: " << runs.last_log() << ")";
  }
  std::mt19937_64 rng(12345);
  for (int i = 0; i < kRandomKills; ++i) {
    std::set<int64_t> reported_messages;
    for (const Reported& r : runs.reported()) reported_messages.insert(r.index);
    const int64_t left = messages - static_cast<int64_t>(reported_messages.size());
    const int64_t lines_reported =
        1 + static_cast<int64_t>(rng() % std::max<int64_t>(1, 2 * left / (kRandomKills - i + 1)));
    const int64_t extra_us = static_cast<int64_t>(rng() % 20000);
    const int status = runs.RunKilledAfter(lines_reported, extra_us, kRandomRunMs);
    ASSERT_TRUE(Killed(status)) << "a random kill's run ended by itself, by " << EndedBy(status)
                                << " (its log: " << runs.last_log() << ")";
  }
  ASSERT_TRUE(Finished(runs.Run(""))) << "the final run did not end cleanly";
  const double crashy_seconds = SecondsSince(start);

  // C. The durable consumer acknowledged every message and holds none back.
  const DurableState durable = ReadDurable(server.url(), "crashy");
  ASSERT_TRUE(durable.read);
  EXPECT_EQ(durable.pending, 0) << "messages never delivered";
  EXPECT_EQ(durable.ack_pending, 0) << "messages delivered, never acknowledged";
  EXPECT_EQ(durable.ack_floor_stream, static_cast<uint64_t>(messages));

  // The deliveries the runs reported, in order (one undrained line per delivery: each type has
  // one consumer), by subject.
  std::vector<int64_t> deliveries;
  std::map<std::string, int64_t> reported_by_subject;
  std::map<std::string, std::vector<int64_t>> first_by_subject;  // each message once
  std::set<int64_t> seen;
  int64_t duplicates = 0;
  for (const Reported& r : runs.reported()) {
    if (r.drained) continue;
    deliveries.push_back(r.index);
    ++reported_by_subject[r.subject];
    if (seen.insert(r.index).second) first_by_subject[r.subject].push_back(r.index);
    duplicates += r.outcome == "duplicate" ? 1 : 0;
  }
  int reordered = 0;
  for (const auto& [subject, order] : first_by_subject) {
    reordered += std::is_sorted(order.begin(), order.end()) ? 0 : 1;
  }
  // The scenario did what this test is about: runs reordered some subject's events, and
  // messages committed but not acknowledged came back.
  EXPECT_GT(reordered, 0) << "no subject saw its events out of stream order";
  EXPECT_GT(static_cast<int64_t>(deliveries.size()), messages) << "nothing was redelivered";
  EXPECT_FALSE(runs.applied().empty()) << "the crashing runs reported nothing applied";
  for (const std::string& key : runs.applied()) {
    EXPECT_TRUE(clean_applied.contains(key) ||
                claimant_ids.contains(key.substr(key.rfind(':') + 1)))
        << key << " was applied, but not by the clean run, and it claims no contested version";
  }

  DumpOptions read{.consumers = {std::begin(kOrderConsumers), std::end(kOrderConsumers)},
                   .subjects = {""}};
  for (int o = 0; o < kOrders; ++o) read.subjects.push_back("order-" + std::to_string(o));
  read.position_source = "jetstream:" + std::string(kStream) + "/clean";
  const StoreRows clean_rows = ReadStoreRows(clean_db, read);
  read.position_source = "jetstream:" + std::string(kStream) + "/crashy";
  const StoreRows crashed_rows = ReadStoreRows((dir / "crashed.db").string(), read);

  // C. Every reported decision is in the store: per subject, the store holds at least as many
  // decisions (a receipt per applied or deferred event, a journal row per duplicate, a kept row
  // per kept delivery) as were reported; more means a run was killed between a commit and its
  // outcome lines, and B leaves that subject to A.
  std::map<std::string, int64_t> stored_by_subject;
  std::set<std::string> stored_keys;
  for (const LedgerEntry& e : crashed_rows.ledger) {
    ++stored_by_subject[e.subject];
    stored_keys.insert(e.consumer + ":" + e.source + ":" + e.event_id);
  }
  for (const JournalEntry& j : crashed_rows.journal) {
    stored_by_subject[j.subject] += j.outcome == Outcome::kDuplicate ? 1 : 0;
  }
  for (const QuarantineRecord& k : crashed_rows.kept) stored_by_subject[k.subject] += k.attempts;
  for (const Reported& r : runs.reported()) {
    if (r.outcome == "applied" || r.outcome == "deferred") {
      EXPECT_TRUE(stored_keys.contains(r.key))
          << r.key << " reported " << r.outcome << ", but the store has no receipt";
    }
  }
  std::vector<std::string> complete;
  for (const std::string& subject : read.subjects) {
    const int64_t stored = stored_by_subject[subject], reported = reported_by_subject[subject];
    EXPECT_GE(stored, reported) << "subject '" << subject << "': " << reported
                                << " decisions reported, " << stored << " in the store";
    if (stored == reported) complete.push_back(subject);
  }
  EXPECT_GT(complete.size(), read.subjects.size() / 2) << "B would compare too few subjects";

  // A. Order-independent: equal to the clean run.
  const std::vector<Table> want = OrderIndependent(clean_rows, contested, lines);
  const std::vector<Table> got = OrderIndependent(crashed_rows, contested, lines);
  for (const Table& t : want) {
    if (t.name != "journal") {
      EXPECT_FALSE(t.rows.empty()) << t.name << " is empty in clean.db";
    }
  }
  EXPECT_EQ(FirstDifference(want, got), "")
      << "crashed.db differs from clean.db in what arrival order does not decide:\n"
      << Differences(want, got, 40);

  // B. Arrival-dependent: equal to an uninterrupted replay of the reported deliveries.
  const fs::path replay_input = dir / "replay.ndjson";
  {
    std::ofstream out(replay_input);
    for (int64_t sequence : deliveries) out << lines.at(static_cast<size_t>(sequence - 1)) << '\n';
  }
  const std::string replay_db = (dir / "replay.db").string();
  const ProcessResult replayed =
      RunEvident({"consume", "--config", config, "--input", replay_input.string(), "--store",
                  "sqlite:" + replay_db, "--batch-count-max", batch});
  ASSERT_EQ(replayed.exit_code, 0) << replayed.err;
  DumpOptions complete_read = read;
  complete_read.subjects = complete;
  complete_read.position_source.reset();
  complete_read.every_row = false;  // only these subjects; A's reads reached every row
  const StoreRows crashed_complete = ReadStoreRows((dir / "crashed.db").string(), complete_read);
  const StoreRows replay_complete = ReadStoreRows(replay_db, complete_read);
  const std::vector<Table> want_arrival = ArrivalComparable(replay_complete, deliveries);
  const std::vector<Table> got_arrival = ArrivalComparable(crashed_complete, {});
  EXPECT_EQ(FirstDifference(want_arrival, got_arrival), "")
      << "crashed.db differs from the replay of its own deliveries:\n"
      << Differences(want_arrival, got_arrival, 40);

  std::cout << messages << " messages; clean run " << clean_seconds << " s; "
            << std::size(kFaultPoints) << " kills at fault points and " << kRandomKills
            << " at random times, then a final run: " << runs.runs() << " runs in "
            << crashy_seconds << " s\n"
            << deliveries.size() << " deliveries reported (" << duplicates
            << " duplicates), the server made " << durable.delivered_consumer << " deliveries; "
            << reordered << " subjects saw their events out of stream order; B compared "
            << complete.size() << " of " << read.subjects.size() << " subjects\n";
  for (size_t i = 0; i < want.size(); ++i) {
    std::cout << want[i].name << ": A " << want[i].rows.size() << " rows"
              << (want[i].name == "journal" ? " (not compared)" : "") << ", B "
              << want_arrival[i].rows.size() << " rows, equal\n";
  }
  server.Stop();
  if (!HasFailure()) fs::remove_all(dir);
}

// --- consumer groups (group.h): three `consume --group` processes over one stream and one
// PostgreSQL store, one killed -9 and one stopped past its lease and continued, against one
// uninterrupted member over the same stream.

constexpr int64_t kGroupPartitions = 4;
constexpr const char* kGroupStream = "GROUPED";

// Publishes `lines` as the relay would: line i to "p<k>.orders", k the partition of its subject
// (FNV-1a 64 modulo kGroupPartitions; a line that is not JSON has none), Msg-Id "line-<i>",
// stream sequence first_seq + i. Returns the last stream sequence of each partition.
std::vector<int64_t> PublishPartitioned(const std::string& url, std::span<const std::string> lines,
                                        int64_t first_seq, std::vector<int64_t> last_seq) {
  auto publisher = OpenJetStreamPublisher({.url = url, .stream = kGroupStream});
  EXPECT_TRUE(publisher.ok()) << publisher.status().ToString();
  if (!publisher.ok()) return last_seq;
  simdjson::dom::parser parser;
  std::vector<OutgoingMessage> all;
  for (size_t i = 0; i < lines.size(); ++i) {
    simdjson::dom::element e;
    std::string_view subject;
    if (parser.parse(lines[i]).get(e) == simdjson::SUCCESS && e.is_object()) {
      if (e["subject"].get_string().get(subject) != simdjson::SUCCESS) subject = {};
    }
    const auto k = static_cast<int64_t>(Fnv1a(kFnv1aOffset, subject) % kGroupPartitions);
    const int64_t seq = first_seq + static_cast<int64_t>(i);
    last_seq[static_cast<size_t>(k)] = seq;
    all.push_back(
        {"p" + std::to_string(k) + ".orders", "line-" + std::to_string(seq - 1), lines[i]});
  }
  for (size_t done = 0; done < all.size();) {
    const size_t n = std::min<size_t>(256, all.size() - done);
    Result<size_t> accepted = (*publisher)->Publish(std::span(all).subspan(done, n));
    EXPECT_TRUE(accepted.ok() && *accepted > 0) << accepted.status().ToString();
    if (!accepted.ok() || *accepted == 0) return last_seq;
    done += *accepted;
  }
  EXPECT_TRUE((*publisher)->Close().ok());
  return last_seq;
}

// Waits up to `seconds` until every partition of `group` is decided through `last_seq` (the
// positions its holders committed); true when it is.
bool WaitUntilDecided(const std::string& store_uri, const std::string& group,
                      const std::vector<int64_t>& last_seq, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto store = OpenStore(store_uri, {.read_only = true});  // a member may not have made it yet
    if (!store.ok()) continue;
    auto snapshot = (*store)->Read();
    auto leases = snapshot.ok() ? (*snapshot)->GroupLeases(group)
                                : Result<std::vector<GroupLease>>(snapshot.status());
    if (leases.ok()) {
      size_t done = 0;
      for (const GroupLease& l : *leases) {
        const int64_t want = last_seq.at(static_cast<size_t>(l.partition));
        done += want == 0 || l.position.value_or(0) >= want ? 1 : 0;
      }
      if (done == last_seq.size()) return true;
    }
  }
  return false;
}

// Waits up to `seconds` until each of `names` holds a lease of `group` that has not expired.
// Whether, within `seconds`, each of `names` holds an unexpired lease of the group (and, with
// `only`, nobody else does).
bool WaitUntilEachHolds(const std::string& store_uri, const std::string& group,
                        const std::set<std::string>& names, int seconds, bool only = false) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto store = OpenStore(store_uri, {.read_only = true});
    if (!store.ok()) continue;
    auto snapshot = (*store)->Read();
    auto leases = snapshot.ok() ? (*snapshot)->GroupLeases(group)
                                : Result<std::vector<GroupLease>>(snapshot.status());
    if (!leases.ok()) continue;
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    std::set<std::string> holding;
    for (const GroupLease& l : *leases) {
      if (l.expires_at_ms >= now) holding.insert(l.holder);
    }
    if (only ? holding == names
             : std::includes(holding.begin(), holding.end(), names.begin(), names.end())) {
      return true;
    }
  }
  return false;
}

TEST(ConsumeNatsGroup, ThreeMembersOneKilledOneStoppedPastItsLeaseEqualOneUninterrupted) {
  const fs::path dir =
      fs::temp_directory_path() / ("evident-nats-group-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  NatsServer server(dir / "nats");
  ASSERT_NE(server.url(), "") << "nats-server did not start (scripts/nats.sh start)";
  constexpr int kGroupOrders = 600;
  const std::vector<std::string> lines = MakeInput(kGroupOrders, 11);
  const std::span<const std::string> all(lines);
  const size_t third = lines.size() / 3;
  const Result<std::string> reference = FreshPostgresSchema("group_reference");
  const Result<std::string> grouped = FreshPostgresSchema("group_crashy");
  ASSERT_TRUE(reference.ok() && grouped.ok()) << reference.status().ToString();
  const auto member = [&](const std::string& store, const std::string& group,
                          const std::string& name) {
    return std::vector<std::string>{EVIDENT_BINARY,
                                    "consume",
                                    "--config",
                                    SourcePath("examples/orders/evident.yaml"),
                                    "--from",
                                    server.url(),
                                    "--stream",
                                    kGroupStream,
                                    "--store",
                                    store,
                                    "--group",
                                    group,
                                    "--partitions",
                                    std::to_string(kGroupPartitions),
                                    "--lease-ms",
                                    "1500",
                                    "--member",
                                    name,
                                    "--batch-count-max",
                                    "40",
                                    "--outcomes",
                                    (dir / (group + "-" + name + ".ndjson")).string()};
  };
  const auto stop = [](pid_t pid) {
    int status = 0;
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    return status;
  };

  // Three members; the stream grows in thirds while they run. After the first third member 0 is
  // killed -9; after the second, member 1 is stopped for three leases and then continued.
  std::vector<int64_t> last_seq(kGroupPartitions, 0);
  last_seq = PublishPartitioned(server.url(), all.subspan(0, third), 1, last_seq);
  std::vector<pid_t> members;
  std::vector<int> logs;
  for (int m = 0; m < 3; ++m) {
    const std::string name = "m" + std::to_string(m);
    logs.push_back(
        open((dir / (name + ".log")).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    members.push_back(
        StartProcess(member(*grouped, "g", name), {.out = logs.back(), .err = logs.back()}));
    ASSERT_GT(members.back(), 0);
  }
  // Killed while holding a partition, once the three shared them out.
  ASSERT_TRUE(WaitUntilEachHolds(*grouped, "g", {"m0", "m1", "m2"}, 30))
      << "the members did not share the partitions: see " << dir;
  ASSERT_EQ(kill(members[0], SIGKILL), 0);
  int status = 0;
  waitpid(members[0], &status, 0);
  last_seq = PublishPartitioned(server.url(), all.subspan(third, third),
                                static_cast<int64_t>(third) + 1, last_seq);
  ASSERT_TRUE(WaitUntilEachHolds(*grouped, "g", {"m1", "m2"}, 30))
      << "the two members left did not share the partitions: see " << dir;
  ASSERT_EQ(kill(members[1], SIGSTOP), 0);  // stopped while holding a partition
  last_seq = PublishPartitioned(server.url(), all.subspan(2 * third),
                                static_cast<int64_t>(2 * third) + 1, last_seq);
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));  // three leases
  // Continued only once member 2 holds every partition: member 1's leases are then another's,
  // whichever of its threads notices first (the renewal, or a batch whose held transaction the
  // server ended).
  const bool taken_over = WaitUntilEachHolds(*grouped, "g", {"m2"}, 30, /*only=*/true);
  ASSERT_EQ(kill(members[1], SIGCONT), 0);
  ASSERT_TRUE(taken_over) << "member 2 did not take over the stopped member's partitions: see "
                          << dir;
  const bool decided = WaitUntilDecided(*grouped, "g", last_seq, 60);
  EXPECT_TRUE(Finished(stop(members[1]))) << "member 1 did not stop cleanly: see " << dir;
  EXPECT_TRUE(Finished(stop(members[2]))) << "member 2 did not stop cleanly: see " << dir;
  for (const int fd : logs) close(fd);
  ASSERT_TRUE(decided) << "the group did not decide the whole stream in 60 s: see " << dir;
  std::ifstream log1(dir / "m1.log");
  const std::string stopped_log((std::istreambuf_iterator<char>(log1)), {});
  std::printf("member 1 (stopped and continued): %s", stopped_log.c_str());
  EXPECT_EQ(stopped_log.find(" 0 lost to another member"), std::string::npos)
      << "the stopped member lost no lease: " << stopped_log;

  // The reference: one member, never interrupted, over the same stream.
  const pid_t alone = StartProcess(member(*reference, "ref", "alone"), {});
  ASSERT_GT(alone, 0);
  const bool reference_decided = WaitUntilDecided(*reference, "ref", last_seq, 60);
  EXPECT_TRUE(Finished(stop(alone)));
  ASSERT_TRUE(reference_decided) << "the reference did not decide the whole stream in 60 s";

  // No event was reported applied twice, by one member or by two.
  std::map<std::string, int> applied;
  for (const char* name : {"g-m0", "g-m1", "g-m2"}) {
    for (const Reported& r : ReadReported(dir / (std::string(name) + ".ndjson"), true)) {
      if (r.outcome == "applied") ++applied[r.key];
    }
  }
  for (const auto& [key, times] : applied) EXPECT_EQ(times, 1) << key << " reported applied";
  EXPECT_GT(applied.size(), 0U);

  // Each subject's events were decided in stream order by whichever member held its partition,
  // each exactly once: every column equals the uninterrupted member's, with the store-wide
  // numbering (kept records, journal rows) compared as ranks within each subject.
  DumpOptions read{.consumers = {std::begin(kOrderConsumers), std::end(kOrderConsumers)},
                   .subjects = {""}};
  for (int o = 0; o < kGroupOrders; ++o) read.subjects.push_back("order-" + std::to_string(o));
  const std::vector<Table> want = ArrivalComparable(ReadStoreRows(*reference, read), {});
  const std::vector<Table> got = ArrivalComparable(ReadStoreRows(*grouped, read), {});
  for (const Table& t : want) {  // two empty stores would be equal
    if (t.name == "ledger" || t.name == "projection") {
      EXPECT_FALSE(t.rows.empty()) << t.name << " is empty in the reference store";
    }
  }
  EXPECT_EQ(FirstDifference(want, got), "")
      << "the group's store differs from one uninterrupted member's:\n"
      << Differences(want, got, 40);
  server.Stop();  // before its directory goes: nats.sh finds the server by the pid file there
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace evident::testing
