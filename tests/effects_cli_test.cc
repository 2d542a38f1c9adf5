// `evident effects run|list|show|resolve`, `evident compensations list` and the guard that needs
// an effect done, end to end: the orders example's fulfillment consumer reserves stock at a
// scripted downstream (tools/downstream, started per test on a free loopback port) that answers
// 200, 409, 5xx, slow beyond the timeout or a connection reset in a given order, and, when it
// de-duplicates by Idempotency-Key, logs how often it performed each key. The runner is the real
// binary, killed with SIGKILL where a test says so.
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string Order(const std::string& type, const std::string& order, int version,
                  const std::string& extra = "") {
  return R"({"specversion":"1.0","id":")" + type + "-" + order + "-" + std::to_string(version) +
         R"(","source":"https://example.test/order-service","type":"com.example.training.order.)" +
         type + R"(","schemaversion":1,"subject":")" + order + R"(","data":{"orderId":")" + order +
         R"(","orderVersion":)" + std::to_string(version) + extra + "}}\n";
}
std::string Paid(const std::string& order, int version = 1) {
  return Order("paid", order, version);
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The scripted downstream, as a child process on a port of its choosing.
class Downstream {
 public:
  Downstream(const fs::path& dir, const std::vector<std::string>& rules) : dir_(dir) {
    std::vector<std::string> argv = {EVIDENT_DOWNSTREAM, "--listen", "127.0.0.1:0", "--port-file",
                                     port_file(),        "--log",    log_file()};
    argv.insert(argv.end(), rules.begin(), rules.end());
    pid_ = StartProcess(argv, {});
    for (int i = 0; i < 500 && port_.empty(); ++i) {
      std::this_thread::sleep_for(milliseconds(10));
      port_ = ReadText(port_file());
      if (!port_.empty() && port_.back() == '\n') port_.pop_back();
    }
  }
  ~Downstream() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool up() const { return pid_ > 0 && !port_.empty(); }
  std::string url() const { return "http://127.0.0.1:" + port_ + "/reservations"; }
  std::string release_url() const { return "http://127.0.0.1:" + port_ + "/releases"; }
  // Per key: how many requests came, and how many times the downstream performed it.
  std::map<std::string, int> Requests() const { return Tally(false); }
  std::map<std::string, int> Performed() const { return Tally(true); }
  int RequestCount() const { return static_cast<int>(Lines(ReadText(log_file())).size()); }

 private:
  std::string port_file() const { return (dir_ / "downstream.port").string(); }
  std::string log_file() const { return (dir_ / "downstream.ndjson").string(); }
  std::map<std::string, int> Tally(bool performed_only) const {
    std::map<std::string, int> out;
    simdjson::dom::parser parser;
    for (const std::string& line : Lines(ReadText(log_file()))) {
      const simdjson::dom::element entry = parser.parse(line).value();
      if (performed_only && !bool(entry["performed"])) continue;
      out[std::string(std::string_view(entry["key"]))] += 1;
    }
    return out;
  }

  fs::path dir_;
  pid_t pid_ = -1;
  std::string port_;
};

struct Intent {
  std::string state, claimed_by;
  int64_t attempts = 0;
  bool waits = false;  // for reconciliation
  std::string last_error;
};

class EffectsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-effects-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(SourcePath("examples/orders"), dir_, fs::copy_options::recursive);
    config_ = (dir_ / "evident.yaml").string();
    store_ = "sqlite:" + (dir_ / "s.db").string();
  }
  void TearDown() override {
    downstream_.reset();
    unsetenv("STOCK_SERVICE_URL");
    unsetenv("STOCK_RELEASE_URL");
    fs::remove_all(dir_);
  }

  // Starts the downstream with `rules` and points the example's reserve-stock effect at it,
  // with its timeout, idempotency declaration and retry policy set as the test needs.
  void Start(const std::vector<std::string>& rules, bool idempotent, int attempts_max,
             int timeout_ms = 500) {
    downstream_ = std::make_unique<Downstream>(dir_, rules);
    ASSERT_TRUE(downstream_->up()) << "the downstream did not start";
    setenv("STOCK_SERVICE_URL", downstream_->url().c_str(), 1);  // the runners inherit it
    setenv("STOCK_RELEASE_URL", downstream_->release_url().c_str(), 1);
    std::string text = ReadText(config_);
    text = std::regex_replace(text, std::regex("timeout_ms: 2000"),
                              "timeout_ms: " + std::to_string(timeout_ms));
    text = std::regex_replace(text, std::regex("idempotent_target: true"),
                              std::string("idempotent_target: ") + (idempotent ? "true" : "false"));
    text = std::regex_replace(
        text, std::regex("attempts_max: 3, backoff_initial_ms: 200"),
        "attempts_max: " + std::to_string(attempts_max) + ", backoff_initial_ms: 50");
    std::ofstream(config_) << text;
  }
  ProcessResult Consume(const std::string& input) {
    return RunEvident({"consume", "--config", config_, "--store", store_, "--input", "-"}, input);
  }
  std::vector<std::string> RunArgs(const std::string& until_idle_seconds,
                                   const std::string& runner_id = "runner") const {
    return {EVIDENT_BINARY, "effects",   "run",          "--config",         config_,
            "--store",      store_,      "--until-idle", until_idle_seconds, "--claim-margin-ms",
            "200",          "--poll-ms", "20",           "--runner-id",      runner_id};
  }
  ProcessResult RunEffects(const std::string& until_idle_seconds = "1") {
    return RunProcess(RunArgs(until_idle_seconds));
  }
  std::map<std::string, Intent> Intents() {
    const ProcessResult r = RunEvident({"effects", "list", "--store", store_, "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, Intent> out;
    simdjson::dom::parser parser;
    for (const std::string& line : Lines(r.out)) {
      const simdjson::dom::element e = parser.parse(line).value();
      Intent& i = out[std::string(std::string_view(e["key"]))];
      i.state = std::string(std::string_view(e["state"]));
      i.attempts = int64_t(e["attempts"]);
      i.waits = bool(e["waits_for_reconciliation"]);
      std::string_view by;
      if (e["claimed_by"].get(by) == simdjson::SUCCESS) i.claimed_by = std::string(by);
      std::string_view error;
      if (e["last_error"].get(error) == simdjson::SUCCESS) i.last_error = std::string(error);
    }
    return out;
  }
  ProcessResult Ship(const std::string& order) {
    return RunEvident({"guard", "--config", config_, "--store", store_, "--consumer", "fulfillment",
                       "--subject", order, "--action", "ship"});
  }

  fs::path dir_;
  std::string config_, store_;
  std::unique_ptr<Downstream> downstream_;
};

// Every answer path on a target that honours the key: 200 done; 409 failed; 500, a timeout
// (the target performed it), a reset and 429 unknown, then retried with the same key until done.
TEST_F(EffectsCliTest, EveryOutcomePathOnAnIdempotentTarget) {
  // A 3 s timeout, so that only the slow answer (5 s) runs out of it on a loaded machine.
  Start({"--dedupe", "--slow-ms", "5000", "--answer", "order-1=200", "--answer", "order-2=409",
         "--answer", "order-3=500,200", "--answer", "order-4=slow,200", "--answer",
         "order-5=reset,200", "--answer", "order-6=429,201"},
        /*idempotent=*/true, /*attempts_max=*/3, /*timeout_ms=*/3000);
  std::string input;
  for (int i = 1; i <= 6; ++i) input += Paid("order-" + std::to_string(i));
  ASSERT_EQ(Consume(input).exit_code, 0);
  const ProcessResult run = RunEffects("3");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("10 attempt(s): 5 done, 1 failed, 4 unknown"), std::string::npos)
      << run.out;
  std::map<std::string, Intent> intents = Intents();
  ASSERT_EQ(intents.size(), 6u);
  EXPECT_EQ(intents["reserve:order-1"].state, "done");
  EXPECT_EQ(intents["reserve:order-1"].attempts, 1);
  EXPECT_EQ(intents["reserve:order-2"].state, "failed");
  EXPECT_EQ(intents["reserve:order-2"].last_error.rfind("HTTP 409, sha256:", 0), 0u);
  for (const char* key :
       {"reserve:order-3", "reserve:order-4", "reserve:order-5", "reserve:order-6"}) {
    EXPECT_EQ(intents[key].state, "done") << key;
    EXPECT_EQ(intents[key].attempts, 2) << key;
  }
  // Performed once each, the slow one included (its retry was answered from the first result).
  const std::map<std::string, int> performed = downstream_->Performed();
  EXPECT_EQ(performed, (std::map<std::string, int>{{"reserve:order-1", 1},
                                                   {"reserve:order-3", 1},
                                                   {"reserve:order-4", 1},
                                                   {"reserve:order-5", 1},
                                                   {"reserve:order-6", 1}}));
  // Done: the effect's evidence, with the answer's status and digest.
  ProcessResult r = RunEvident({"evidence", "order-4", "--store", store_, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("name":"reserve-stock")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("detail":"HTTP 200, sha256:)"), std::string::npos) << r.out;
  EXPECT_EQ(Ship("order-1").exit_code, 0) << Ship("order-1").out;
  r = Ship("order-2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("evidence 'reserve-stock' is not recorded"), std::string::npos) << r.out;
  // Nothing is due any more: another run calls nothing.
  const int requests = downstream_->RequestCount();
  EXPECT_EQ(RunEffects("0.3").exit_code, 0);
  EXPECT_EQ(downstream_->RequestCount(), requests);
}

// A target that does not declare it honours the key: an unknown outcome is never retried; the
// guard stays denied until a person resolves it, and the resolution is logged.
TEST_F(EffectsCliTest, AnUnknownOutcomeWaitsForAPersonUnlessTheTargetHonoursTheKey) {
  Start({"--answer", "=500"}, /*idempotent=*/false, /*attempts_max=*/5);
  ASSERT_EQ(Consume(Paid("order-1")).exit_code, 0);
  EXPECT_EQ(Ship("order-1").exit_code, 1);
  ASSERT_EQ(RunEffects("0.5").exit_code, 0);
  ASSERT_EQ(RunEffects("0.5").exit_code, 0);  // a restart does not call it again
  EXPECT_EQ(downstream_->RequestCount(), 1);
  Intent intent = Intents()["reserve:order-1"];
  EXPECT_EQ(intent.state, "unknown");
  EXPECT_EQ(intent.attempts, 1);
  EXPECT_TRUE(intent.waits);
  EXPECT_NE(intent.last_error.find("does not declare that it honours Idempotency-Key"),
            std::string::npos)
      << intent.last_error;
  ProcessResult r = Ship("order-1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("evidence 'reserve-stock' is not recorded"), std::string::npos) << r.out;

  // The person first finds that the stock service never saw it: call again, same key.
  r = RunEvident({"effects", "resolve", "reserve:order-1", "--store", store_, "--outcome", "retry",
                  "--by", "ops", "--note", "no reservation in the stock service"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Intents()["reserve:order-1"].state, "intended");
  ASSERT_EQ(RunEffects("0.5").exit_code, 0);
  EXPECT_EQ(downstream_->Requests(), (std::map<std::string, int>{{"reserve:order-1", 2}}));
  intent = Intents()["reserve:order-1"];
  EXPECT_EQ(intent.state, "unknown");  // 500 again; still never retried by itself
  EXPECT_EQ(intent.attempts, 2);
  EXPECT_TRUE(intent.waits);

  const std::vector<std::string> resolve = {"effects",
                                            "resolve",
                                            "reserve:order-1",
                                            "--store",
                                            store_,
                                            "--outcome",
                                            "done",
                                            "--by",
                                            "ops",
                                            "--note",
                                            "the stock service shows reservation 77"};
  r = RunEvident(resolve);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Intents()["reserve:order-1"].state, "done");
  EXPECT_EQ(Ship("order-1").exit_code, 0) << Ship("order-1").out;
  EXPECT_EQ(RunEvident(resolve).exit_code, 1);  // already done
  EXPECT_EQ(RunEvident({"effects", "resolve", "reserve:order-9", "--store", store_, "--outcome",
                        "done", "--by", "ops", "--note", "n"})
                .exit_code,
            1);
  r = RunEvident({"effects", "show", "reserve:order-1", "--store", store_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resolve by ops -> done  the stock service shows reservation 77"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("attempt by"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("resolve by ops -> intended  no reservation in the stock service"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(downstream_->RequestCount(), 2);
}

// On a target that honours the key, an unknown outcome is retried up to the policy's limit and
// then waits for reconciliation.
TEST_F(EffectsCliTest, RetriesStopAtTheLimitAndTheIntentWaits) {
  Start({"--answer", "=503"}, /*idempotent=*/true, /*attempts_max=*/2);
  ASSERT_EQ(Consume(Paid("order-1")).exit_code, 0);
  ASSERT_EQ(RunEffects("0.8").exit_code, 0);
  const Intent intent = Intents()["reserve:order-1"];
  EXPECT_EQ(intent.state, "unknown");
  EXPECT_EQ(intent.attempts, 2);
  EXPECT_TRUE(intent.waits);
  EXPECT_NE(intent.last_error.find("retry limit (2 attempts) reached"), std::string::npos)
      << intent.last_error;
  EXPECT_EQ(downstream_->Requests(), (std::map<std::string, int>{{"reserve:order-1", 2}}));
}

// kill -9 of the runner during a call leaves the intent unknown (never done, never forgotten,
// one key); a restarted runner calls it again with the same key after the claim's lease, and
// the de-duplicating target performs it once. Without the declaration, it is never called again.
TEST_F(EffectsCliTest, KillNineDuringACallLeavesTheIntentUnknownWithItsKey) {
  for (const bool idempotent : {true, false}) {
    SCOPED_TRACE(idempotent ? "idempotent target" : "plain target");
    TearDown();
    SetUp();
    Start({"--dedupe", "--slow-ms", "4000", "--answer", "=slow"}, idempotent, 3,
          /*timeout_ms=*/3000);
    ASSERT_EQ(Consume(Paid("order-1")).exit_code, 0);
    const pid_t runner = StartProcess(RunArgs("30"), {});
    ASSERT_GT(runner, 0);
    for (int i = 0; i < 500 && downstream_->RequestCount() == 0; ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    ASSERT_EQ(downstream_->RequestCount(), 1) << "the runner never called";
    kill(runner, SIGKILL);  // during the call: the downstream is still sleeping on it
    int status = 0;
    waitpid(runner, &status, 0);
    ASSERT_TRUE(Killed(status));
    Intent intent = Intents()["reserve:order-1"];
    EXPECT_EQ(intent.state, "unknown");
    EXPECT_EQ(intent.attempts, 1);
    // The lease is the timeout (3 s) plus the margin (0.2 s); the run waits that long idle
    // (8 s: the lease runs out well before the run would end).
    ASSERT_EQ(RunEffects("8").exit_code, 0);
    const std::map<std::string, Intent> intents = Intents();
    ASSERT_EQ(intents.size(), 1u);  // one intent, one key, whatever happened
    intent = intents.begin()->second;
    EXPECT_EQ(intents.begin()->first, "reserve:order-1");
    if (idempotent) {
      EXPECT_EQ(intent.state, "done");
      EXPECT_EQ(intent.attempts, 2);
      EXPECT_EQ(downstream_->Requests(), (std::map<std::string, int>{{"reserve:order-1", 2}}));
    } else {
      EXPECT_EQ(intent.state, "unknown");
      EXPECT_EQ(intent.attempts, 1);
      EXPECT_TRUE(intent.waits);
      EXPECT_EQ(downstream_->RequestCount(), 1);
    }
    EXPECT_EQ(downstream_->Performed(), (std::map<std::string, int>{{"reserve:order-1", 1}}));
  }
}

// Two runners on one store never perform one intent twice: the downstream does not
// de-duplicate here, so a double claim would show as a second performance.
TEST_F(EffectsCliTest, TwoRunnersPerformEachIntentOnce) {
  // Each call takes 100 ms: the two runners overlap for the whole run.
  Start({"--slow-ms", "100", "--answer", "=slow"}, /*idempotent=*/true, 3, /*timeout_ms=*/2000);
  std::string input;
  constexpr int kOrders = 30;
  for (int i = 1; i <= kOrders; ++i) input += Paid("order-" + std::to_string(i));
  ASSERT_EQ(Consume(input).exit_code, 0);
  const pid_t a = StartProcess(RunArgs("1", "runner-a"), {});
  const pid_t b = StartProcess(RunArgs("1", "runner-b"), {});
  int status_a = 0, status_b = 0;
  waitpid(a, &status_a, 0);
  waitpid(b, &status_b, 0);
  EXPECT_TRUE(Finished(status_a));
  EXPECT_TRUE(Finished(status_b));
  const std::map<std::string, int> performed = downstream_->Performed();
  EXPECT_EQ(static_cast<int>(performed.size()), kOrders);
  for (const auto& [key, count] : performed) EXPECT_EQ(count, 1) << key;
  EXPECT_EQ(downstream_->RequestCount(), kOrders);
  std::map<std::string, int> by_runner;
  for (const auto& [key, intent] : Intents()) {
    EXPECT_EQ(intent.state, "done") << key;
    by_runner[intent.claimed_by] += 1;
  }
  // Both worked: the test is about runners that overlap.
  EXPECT_GT(by_runner["runner-a"], 0);
  EXPECT_GT(by_runner["runner-b"], 0);
  EXPECT_EQ(by_runner["runner-a"] + by_runner["runner-b"], kOrders);
}

// Seed 002's loop closed on facts: a reservation done before the customer's cancellation is
// released once, whatever repeats. The cancellation redelivered, a conflicting cancellation
// replayed from the quarantine, a second run, and a runner killed with SIGKILL during the
// release's call: the stock service performs one reservation and one release.
TEST_F(EffectsCliTest, AReservationDoneBeforeTheCancelIsReleasedOnceWhateverRepeats) {
  Start({"--dedupe", "--slow-ms", "4000", "--answer", "release:=slow,200", "--answer", "=200"},
        /*idempotent=*/true, 3, /*timeout_ms=*/3000);
  ASSERT_EQ(Consume(Paid("order-420")).exit_code, 0);
  ASSERT_EQ(RunEffects("0.5").exit_code, 0);
  ASSERT_EQ(Intents()["reserve:order-420"].state, "done");
  const std::string cancel = Order("cancelled", "order-420", 2, R"(,"reason":"customer-request")");
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Consume(cancel).exit_code, 0);  // two redeliveries
  // Another event claiming the cancellation's version: a conflict, kept; its replay is one too.
  std::string impostor = cancel;
  impostor.replace(impostor.find("cancelled-order-420-2"), 21, "cancelled-order-420-X");
  ASSERT_EQ(Consume(impostor).exit_code, 0);
  ProcessResult r = RunEvident({"quarantine", "replay", "--store", store_, "--config", config_,
                                "--all", "--by", "ops", "--note", "try again"});
  ASSERT_NE(r.exit_code, 2) << r.err;
  std::map<std::string, Intent> intents = Intents();
  ASSERT_EQ(intents.size(), 2u);
  EXPECT_EQ(intents["release:order-420"].state, "intended");
  // The release's call is slow: the runner is killed during it.
  const pid_t runner = StartProcess(RunArgs("30"), {});
  ASSERT_GT(runner, 0);
  for (int i = 0; i < 500 && downstream_->Requests().count("release:order-420") == 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(downstream_->Requests().count("release:order-420"), 1u) << "the runner never called";
  kill(runner, SIGKILL);
  int status = 0;
  waitpid(runner, &status, 0);
  ASSERT_TRUE(Killed(status));
  EXPECT_EQ(Intents()["release:order-420"].state, "unknown");
  // After the claim's lease (3.2 s) the same key is called again; then a second run finds nothing.
  ASSERT_EQ(RunEffects("8").exit_code, 0);
  ASSERT_EQ(RunEffects("0.5").exit_code, 0);
  intents = Intents();
  EXPECT_EQ(intents.size(), 2u);
  EXPECT_EQ(intents["release:order-420"].state, "done");
  EXPECT_EQ(downstream_->Performed(),
            (std::map<std::string, int>{{"reserve:order-420", 1}, {"release:order-420", 1}}));
  r = RunEvident({"compensations", "list", "--store", store_, "--format", "json"});
  ASSERT_EQ(Lines(r.out).size(), 1u) << r.out;
  EXPECT_NE(r.out.find(R"("state":"compensated")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("covers":["reserve:order-420"])"), std::string::npos) << r.out;
}

// Seed 002's readiness test, for the story it tells: v1 paid and reserved, v3 (cancelled because
// the reservation was rejected) arrives before v2 and waits, v2 arrives and v3 drains. The
// evidence packet alone answers: owner and version, the applied event ids, the projection's
// version, the gap's history and cause, the compensation key and the effects it covers.
TEST_F(EffectsCliTest, Seed002ReadinessOfADrainedV3BeforeV2Story) {
  Start({"--dedupe", "--answer", "=200"}, /*idempotent=*/true, 3);
  ASSERT_EQ(Consume(Paid("order-417", 1)).exit_code, 0);
  ASSERT_EQ(RunEffects("0.5").exit_code, 0);
  ASSERT_EQ(
      Consume(Order("cancelled", "order-417", 3, R"(,"reason":"reservation-rejected")")).exit_code,
      0);
  ASSERT_EQ(Consume(Paid("order-417", 2)).exit_code, 0);
  const ProcessResult r =
      RunEvident({"evidence", "order-417", "--store", store_, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element readiness;
  for (simdjson::dom::element c : parser.parse(r.out).value()["consumers"].get_array()) {
    if (std::string_view(c["consumer"]) == "fulfillment") readiness = c["readiness"];
  }
  ASSERT_EQ(readiness.type(), simdjson::dom::element_type::OBJECT) << r.out;
  const std::string owner = "https://example.test/order-service";
  EXPECT_EQ(std::string_view(readiness["owner_id"]), owner);
  EXPECT_EQ(int64_t(readiness["owner_version"]), 3);
  EXPECT_EQ(int64_t(readiness["projection_version"]), 3);
  std::vector<std::string> applied;
  for (simdjson::dom::element id : readiness["applied_event_ids"].get_array()) {
    applied.emplace_back(std::string_view(id));
  }
  EXPECT_EQ(applied,
            (std::vector<std::string>{owner + ":paid-order-417-1", owner + ":paid-order-417-2",
                                      owner + ":cancelled-order-417-3"}));
  EXPECT_TRUE(readiness["gap_reason"].is_null());
  const simdjson::dom::element gap = readiness["gap_history"].at(0);
  EXPECT_EQ(int64_t(gap["missing_from"]), 2);
  EXPECT_EQ(int64_t(gap["missing_to"]), 2);
  EXPECT_EQ(int64_t(gap["waiting_versions"].at(0)), 3);
  EXPECT_FALSE(gap["opened_at"].is_null());
  EXPECT_FALSE(gap["closed_at"].is_null());
  EXPECT_EQ(std::string_view(gap["how"]), "drained");
  EXPECT_EQ(std::string_view(gap["cause"]), "out-of-order");
  EXPECT_EQ(std::string_view(readiness["compensation_keys"].at(0)),
            "compensation:order-417:reservation:v2");
  const simdjson::dom::element compensation = readiness["compensations"].at(0);
  EXPECT_EQ(std::string_view(compensation["covers"].at(0)), "reserve:order-417");
  EXPECT_EQ(std::string_view(compensation["state"]), "compensating");
  EXPECT_EQ(std::string_view(compensation["compensating_key"]), "release:order-417");
  std::map<std::string, std::string> effects;
  for (simdjson::dom::element e : readiness["effects"].get_array()) {
    effects[std::string(std::string_view(e["key"]))] = std::string(std::string_view(e["state"]));
  }
  EXPECT_EQ(effects, (std::map<std::string, std::string>{{"reserve:order-417", "done"},
                                                         {"release:order-417", "intended"}}));
}

// Deliveries repeat; intents and compensations do not: one per key. An order is reserved once,
// whatever its number of `paid` versions (the second is a no-op its intent's log records). Each
// cancellation requires one compensation, keyed by the owner's decision; a reservation never
// performed is withdrawn by it, and nothing is released.
TEST_F(EffectsCliTest, RedeliveriesIntendOnceAndCompensateOnce) {
  Start({"--answer", "=200"}, /*idempotent=*/true, 3);
  const std::string input =
      Paid("order-417", 1) + Paid("order-417", 2) +
      Order("cancelled", "order-417", 3, R"(,"reason":"reservation-rejected")") +
      Paid("order-418", 1) + Order("cancelled", "order-418", 2, R"(,"reason":"customer-request")");
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Consume(input).exit_code, 0);
  std::map<std::string, Intent> intents = Intents();
  EXPECT_EQ(intents.size(), 2u);
  EXPECT_EQ(intents["reserve:order-417"].state, "withdrawn");
  EXPECT_EQ(intents["reserve:order-418"].state, "withdrawn");
  ProcessResult r =
      RunEvident({"effects", "show", "reserve:order-417", "--store", store_, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("action":"trigger")"), std::string::npos) << r.out;  // paid v2, once
  r = RunEvident({"compensations", "list", "--store", store_, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_NE(lines[0].find(R"("key":"compensation:order-417:reservation:v2")"), std::string::npos);
  EXPECT_NE(lines[0].find(R"("owner_version":3)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(R"("covers":["reserve:order-417"])"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(R"("state":"nothing-performed")"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(R"("key":"compensation:order-418:customer-request:v1")"),
            std::string::npos);
  // Nothing was performed, so a runner calls nothing: no reservation, no release.
  ASSERT_EQ(RunEffects("0.3").exit_code, 0);
  EXPECT_EQ(downstream_->RequestCount(), 0);
  // The evidence packet answers seed 002's readiness test.
  r = RunEvident({"evidence", "order-417", "--store", store_, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  const simdjson::dom::element packet = parser.parse(r.out).value();
  simdjson::dom::element readiness;
  for (simdjson::dom::element c : packet["consumers"].get_array()) {
    if (std::string_view(c["consumer"]) == "fulfillment") readiness = c["readiness"];
  }
  ASSERT_EQ(readiness.type(), simdjson::dom::element_type::OBJECT) << r.out;
  EXPECT_EQ(std::string_view(readiness["owner_id"]), "https://example.test/order-service");
  EXPECT_EQ(int64_t(readiness["owner_version"]), 3);
  EXPECT_EQ(int64_t(readiness["projection_version"]), 3);
  EXPECT_EQ(readiness["applied_event_ids"].get_array().size(), 3u);
  EXPECT_TRUE(readiness["gap_reason"].is_null());
  EXPECT_EQ(std::string_view(readiness["compensation_keys"].at(0)),
            "compensation:order-417:reservation:v2");
  EXPECT_EQ(readiness["effects"].get_array().size(), 1u);
  EXPECT_EQ(std::string_view(readiness["effects"].at(0)["state"]), "withdrawn");
}

TEST_F(EffectsCliTest, UsageErrors) {
  EXPECT_EQ(RunEvident({"effects", "list"}).exit_code, 2);
  EXPECT_EQ(RunEvident({"effects", "list", "--store", store_, "--state", "maybe"}).exit_code, 2);
  EXPECT_EQ(RunEvident({"effects", "resolve", "k", "--store", store_, "--outcome", "unknown",
                        "--by", "a", "--note", "n"})
                .exit_code,
            2);
  EXPECT_EQ(RunEvident({"effects", "run", "--config", config_, "--store",
                        "sqlite:" + (dir_ / "none.db").string(), "--until-idle", "0"})
                .exit_code,
            2);
  EXPECT_FALSE(fs::exists(dir_ / "none.db"));
}

}  // namespace
}  // namespace evident::testing
