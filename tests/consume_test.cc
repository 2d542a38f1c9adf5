// End-to-end tests of `evident consume`, `evidence`, `gaps` and `guard`: the real binary on
// the orders example, a real SQLite file.
#include <gtest/gtest.h>
#include <poll.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

// One "index consumer outcome[ drained]" string per outcome line, in order.
std::vector<std::string> Summaries(const std::vector<std::string>& lines) {
  simdjson::dom::parser parser;
  std::vector<std::string> seen;
  for (const std::string& line : lines) {
    simdjson::dom::element e;
    EXPECT_EQ(parser.parse(line).get(e), simdjson::SUCCESS) << line;
    if (e.is_null()) continue;
    std::string_view consumer = "null";
    if (e["consumer"].get(consumer) != simdjson::SUCCESS) consumer = "null";
    const bool drained = e["drained"].get_bool().value();
    seen.push_back(std::to_string(e["index"].get_int64().value()) + " " + std::string(consumer) +
                   " " + std::string(e["outcome"].get_string().value()) +
                   (drained ? " drained" : ""));
  }
  return seen;
}

// The evidence records of the first consumer of an `evident evidence --format json` document,
// one "name source id vVERSION" string each.
std::vector<std::string> EvidenceRecords(simdjson::dom::element packet) {
  std::vector<std::string> out;
  for (simdjson::dom::element r : packet["consumers"].at(0)["evidence"].get_array()) {
    out.push_back(std::string(r["name"].get_string().value()) + " " +
                  std::string(r["source"].get_string().value()) + " " +
                  std::string(r["id"].get_string().value()) + " v" +
                  std::to_string(r["subject_version"].get_int64().value()));
  }
  return out;
}

class ConsumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-consume-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = "sqlite:" + (dir_ / "orders.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessResult Consume(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"consume", "--config", config_, "--store",
                                     store_,    "--input",  events_};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunEvident(args);
  }

  std::string ReadFile(const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  fs::path dir_;
  std::string store_;
  const std::string config_ = SourcePath("examples/orders/evident.yaml");
  const std::string events_ = SourcePath("examples/orders/events.ndjson");
};

TEST_F(ConsumeTest, EveryOutcomeInProcessingOrder) {
  const std::string outcomes = (dir_ / "outcomes.ndjson").string();
  const auto r = Consume({"--outcomes", outcomes});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  std::vector<std::string> lines = Lines(ReadFile(outcomes));
  const std::vector<std::string> seen = Summaries(lines);
  const std::vector<std::string> expected = {
      "0 orders-projection applied",
      "1 orders-projection duplicate",
      "2 orders-projection applied",
      "3 orders-projection contract-update-required",
      "4 orders-projection payload-invalid",
      "5 orders-projection rejected",
      "6 fulfillment applied",
      "7 fulfillment deferred",
      "8 fulfillment duplicate",
      "9 fulfillment applied",
      "7 fulfillment applied drained",
      "10 fulfillment duplicate",
      "11 fulfillment same-version-conflict",
      "12 fulfillment stale",
      "13 fulfillment applied",
      "14 fulfillment deferred",
      "15 fulfillment applied",
      "16 fulfillment applied",
      "17 null unrouted",
      "18 null rejected",
      "19 null rejected",
  };
  EXPECT_EQ(seen, expected);
  // The deferred line carries the expected version, as documented.
  simdjson::dom::element deferred;
  ASSERT_EQ(parser.parse(lines[7]).get(deferred), simdjson::SUCCESS);
  EXPECT_EQ(deferred["expected_version"].get_int64().value(), 2);
  EXPECT_EQ(deferred["projection_version"].get_int64().value(), 1);
  EXPECT_EQ(std::string(deferred["key"].get_string().value()),
            "fulfillment:https://example.test/order-service:evt-order-417-cancelled-v3");
  // The summary table names every consumer.
  EXPECT_NE(r.out.find("fulfillment"), std::string::npos);
  EXPECT_NE(r.out.find("same-version-conflict"), std::string::npos);
}

TEST_F(ConsumeTest, RerunAppliesNothingTwice) {
  ASSERT_EQ(Consume().exit_code, 0);
  const auto first = RunEvident({"evidence", "order-417", "--store", store_, "--format", "json"});
  const auto r = Consume({"--outcomes", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Every input line is decided again: what applied or waits is a duplicate (so nothing drains),
  // the other outcomes are decided as before.
  const std::vector<std::string> expected = {
      "0 orders-projection duplicate",
      "1 orders-projection duplicate",
      "2 orders-projection duplicate",
      "3 orders-projection contract-update-required",
      "4 orders-projection payload-invalid",
      "5 orders-projection rejected",
      "6 fulfillment duplicate",
      "7 fulfillment duplicate",
      "8 fulfillment duplicate",
      "9 fulfillment duplicate",
      "10 fulfillment duplicate",
      "11 fulfillment same-version-conflict",
      "12 fulfillment stale",
      "13 fulfillment duplicate",
      "14 fulfillment duplicate",
      "15 fulfillment duplicate",
      "16 fulfillment duplicate",
      "17 null unrouted",
      "18 null rejected",
      "19 null rejected",
  };
  EXPECT_EQ(Summaries(Lines(r.out)), expected);
  // The projection is unchanged by the rerun.
  const auto second = RunEvident({"evidence", "order-417", "--store", store_, "--format", "json"});
  simdjson::dom::parser p1, p2;
  simdjson::dom::element a, b;
  ASSERT_EQ(p1.parse(first.out).get(a), simdjson::SUCCESS);
  ASSERT_EQ(p2.parse(second.out).get(b), simdjson::SUCCESS);
  EXPECT_EQ(a["consumers"].at(0)["projection_version"].get_int64().value(),
            b["consumers"].at(0)["projection_version"].get_int64().value());
  EXPECT_EQ(b["consumers"].at(0)["applied"].get_array().size(), 3u);
}

TEST_F(ConsumeTest, EvidencePacketAnswersEveryQuestion) {
  ASSERT_EQ(Consume().exit_code, 0);
  const auto r = RunEvident({"evidence", "order-417", "--store", store_, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  ASSERT_EQ(parser.parse(r.out).get(e), simdjson::SUCCESS) << r.out;
  EXPECT_EQ(std::string(e["subject"].get_string().value()), "order-417");
  simdjson::dom::element c = e["consumers"].at(0);
  EXPECT_EQ(std::string(c["consumer"].get_string().value()), "fulfillment");
  EXPECT_EQ(std::string(c["owner_source"].get_string().value()),
            "https://example.test/order-service");
  EXPECT_EQ(c["projection_version"].get_int64().value(), 3);
  EXPECT_EQ(c["owner_version_seen"].get_int64().value(), 3);
  EXPECT_EQ(std::string(c["state"].get_string().value()), "cancelled");
  simdjson::dom::array applied = c["applied"].get_array();
  ASSERT_EQ(applied.size(), 3u);
  const std::string owner = "https://example.test/order-service";
  const char* applied_ids[] = {"evt-order-417-paid-v1", "evt-order-417-paid-v2",
                               "evt-order-417-cancelled-v3"};
  for (int v = 0; v < 3; ++v) {
    simdjson::dom::element a = applied.at(v);
    EXPECT_EQ(a["subject_version"].get_int64().value(), v + 1);
    EXPECT_EQ(a["input_schema_version"].get_int64().value(), 1);
    EXPECT_EQ(a["result_version"].get_int64().value(), 1);
    EXPECT_EQ(std::string(a["source"].get_string().value()), owner);
    EXPECT_EQ(std::string(a["id"].get_string().value()), applied_ids[v]);
  }
  // v2 replaced v1's payment evidence; the drained v3 recorded the cancellation.
  const std::vector<std::string> evidence = {
      "cancellation " + owner + " evt-order-417-cancelled-v3 v3",
      "payment " + owner + " evt-order-417-paid-v2 v2"};
  EXPECT_EQ(EvidenceRecords(e), evidence);
  EXPECT_EQ(c["deferred"].get_array().size(), 0u);
  EXPECT_EQ(c["duplicates"]["count"].get_int64().value(), 2);
  EXPECT_EQ(c["duplicates"]["deliveries"].get_array().size(), 2u);
  ASSERT_EQ(c["conflicts"].get_array().size(), 1u);
  EXPECT_EQ(std::string(c["conflicts"].at(0)["id"].get_string().value()), "evt-order-417-other-v3");
  ASSERT_EQ(c["kept"].get_array().size(), 2u);  // the conflict and the stale event
  // Kept inputs carry their original bytes.
  const std::string stale_bytes(c["kept"].at(1)["original_bytes"].get_string().value());
  EXPECT_NE(ReadFile(events_).find(stale_bytes), std::string::npos);

  // A subject with a gap shows the deferred event, its expected version and route.
  const auto gap = RunEvident({"evidence", "order-418", "--store", store_, "--format", "json"});
  simdjson::dom::element g;
  ASSERT_EQ(parser.parse(gap.out).get(g), simdjson::SUCCESS);
  simdjson::dom::element d = g["consumers"].at(0)["deferred"].at(0);
  EXPECT_EQ(d["expected_version"].get_int64().value(), 2);
  EXPECT_EQ(d["subject_version"].get_int64().value(), 4);
  EXPECT_EQ(std::string(d["route"].get_string().value()), "request-replay");
  EXPECT_EQ(g["consumers"].at(0)["owner_version_seen"].get_int64().value(), 4);
  // Only v1 applied: its payment is the one record; the deferred v4 recorded nothing.
  EXPECT_EQ(EvidenceRecords(g),
            std::vector<std::string>{"payment " + owner + " evt-order-418-paid-v1 v1"});

  // Text format and an unknown subject.
  EXPECT_EQ(RunEvident({"evidence", "order-417", "--store", store_}).exit_code, 0);
  EXPECT_EQ(RunEvident({"evidence", "order-999", "--store", store_}).exit_code, 1);
}

TEST_F(ConsumeTest, GuardAndGaps) {
  ASSERT_EQ(Consume().exit_code, 0);
  const auto guard = [&](const std::string& subject) {
    return RunEvident({"guard", "--config", config_, "--store", store_, "--consumer", "fulfillment",
                       "--subject", subject, "--action", "ship"});
  };
  auto r = guard("order-417");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("denied"), std::string::npos);
  EXPECT_NE(r.out.find("state 'cancelled'"), std::string::npos) << r.out;
  r = guard("order-418");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("gap open"), std::string::npos) << r.out;
  // Paid and in sync, but the stock is not reserved: the effect's evidence is missing until
  // the intent is done (here a person records it).
  r = guard("order-420");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("evidence 'reserve-stock' is not recorded"), std::string::npos) << r.out;
  ASSERT_EQ(RunEvident({"effects", "resolve", "reserve:order-420", "--store", store_, "--outcome",
                        "done", "--by", "ops", "--note", "reserved by hand"})
                .exit_code,
            0);
  r = guard("order-420");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("allowed"), std::string::npos);
  r = guard("order-999");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(RunEvident({"guard", "--config", config_, "--store", store_, "--consumer",
                        "fulfillment", "--subject", "order-420", "--action", "teleport"})
                .exit_code,
            2);

  r = RunEvident({"gaps", "--store", store_, "--all", "--format", "json"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"subject\":\"order-418\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"expected_version\":2"), std::string::npos);
  // The deadline is 300 s away: not listed as near with a 60 s window.
  r = RunEvident({"gaps", "--store", store_, "--within", "60"});
  EXPECT_NE(r.out.find("no open gaps"), std::string::npos) << r.out;
  r = RunEvident({"gaps", "--store", store_, "--within", "400"});
  EXPECT_NE(r.out.find("order-418"), std::string::npos) << r.out;
}

TEST_F(ConsumeTest, ResumeSkipsCommittedLines) {
  ASSERT_EQ(Consume().exit_code, 0);
  const auto r = Consume({"--resume", "--outcomes", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("20 events skipped"), std::string::npos) << r.err;
}

// consume reads what validate reads: a pretty-printed event is one decision (not one
// malformed-json record per line), a batch array one per element; what the layout refuses (an
// event after the array's ']') is rejected malformed-json and kept with its bytes.
TEST_F(ConsumeTest, ReadsOneValueABatchOrNdjsonAsValidateDoes) {
  const auto consume = [&](const std::string& input, const std::string& store) {
    return RunEvident(
        {"consume", "--config", config_, "--store", store, "--input", input, "--outcomes", "-"});
  };
  const auto pretty =
      consume(SourcePath("examples/envelopes/seed-000.json"), "sqlite:" + (dir_ / "a.db").string());
  ASSERT_EQ(pretty.exit_code, 0) << pretty.err;
  ASSERT_EQ(Lines(pretty.out).size(), 1U) << pretty.out;
  EXPECT_EQ(pretty.out.find("malformed-json"), std::string::npos) << pretty.out;
  EXPECT_EQ(Summaries(Lines(pretty.out)), std::vector<std::string>{"0 null rejected"});

  const auto batch = consume(SourcePath("examples/envelopes/batch.json"), store_);
  ASSERT_EQ(batch.exit_code, 0) << batch.err;
  EXPECT_EQ(
      Summaries(Lines(batch.out)),
      (std::vector<std::string>{"0 orders-projection applied", "1 orders-projection rejected"}));

  // The same batch with an event after its ']': the event is valid, its place is not.
  std::ifstream in(SourcePath("examples/envelopes/batch.json"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::string stray =
      R"({"specversion":"1.0","id":"evt-stray","source":"training://orders/checkout","type":"order.status.changed","subject":"order-9","data":{"schemaVersion":1,"orderId":"order-9","status":"paid"}})";
  const fs::path broken = dir_ / "broken.json";
  std::ofstream(broken) << text << stray << "\n";
  const auto trailing = consume(broken.string(), "sqlite:" + (dir_ / "b.db").string());
  ASSERT_EQ(trailing.exit_code, 0) << trailing.err;
  const std::vector<std::string> lines = Lines(trailing.out);
  ASSERT_EQ(lines.size(), 3U) << trailing.out;
  EXPECT_NE(lines[2].find("\"reason\":\"malformed-json\""), std::string::npos) << lines[2];
  const auto kept =
      RunEvident({"quarantine", "list", "--store", "sqlite:" + (dir_ / "b.db").string(), "--reason",
                  "malformed-json", "--format", "json"});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  ASSERT_EQ(Lines(kept.out).size(), 1U) << kept.out;
  simdjson::dom::parser parser;
  const int64_t id = parser.parse(Lines(kept.out)[0]).value()["id"].get_int64().value();
  const auto shown =
      RunEvident({"quarantine", "show", "--store", "sqlite:" + (dir_ / "b.db").string(),
                  std::to_string(id), "--format", "json"});
  // The stray event's own bytes, base64: {"specversion":"1.0","id":"evt-stray",...
  EXPECT_NE(shown.out.find(
                "\"original_bytes_base64\":\"eyJzcGVjdmVyc2lvbiI6IjEuMCIsImlkIjoiZXZ0LXN0cmF5Ii"),
            std::string::npos)
      << shown.out << shown.err;
}

TEST_F(ConsumeTest, StdinInputAndBadUsage) {
  std::ifstream in(events_);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto r =
      RunEvident({"consume", "--config", config_, "--store", store_, "--outcomes", "-"}, text);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 21u);
  EXPECT_EQ(RunEvident({"consume", "--config", "/nonexistent.yaml", "--store", store_}).exit_code,
            2);
  EXPECT_EQ(RunEvident({"consume", "--config", config_, "--store", "postgres://x"}).exit_code, 2);
  EXPECT_EQ(
      RunEvident({"consume", "--config", config_, "--store", store_, "--input", "/nonexistent"})
          .exit_code,
      2);
}

TEST_F(ConsumeTest, OversizedLineIsRejectedAndTheRestGoesOn) {
  const fs::path input = dir_ / "big.ndjson";
  {
    std::ofstream out(input);
    out << R"({"specversion":"1.0","id":"big","source":"training://orders/x","type":"order.status.changed","data":{"pad":")"
        << std::string(3 << 20, 'x') << "\"}}\n";
    out << R"({"specversion":"1.0","id":"evt-1","source":"training://orders/checkout","type":"order.status.changed","subject":"order-1","data":{"schemaVersion":1,"orderId":"order-1","status":"paid"}})"
        << "\n";
  }
  const auto r = RunEvident({"consume", "--config", config_, "--store", store_, "--input",
                             input.string(), "--outcomes", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("envelope-too-large"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"outcome\":\"applied\""), std::string::npos) << lines[1];
}

// A pause in the input commits the open batch after linger_ms: the first event's outcome appears
// while the input is still open, long before batch_count_max events arrived.
TEST_F(ConsumeTest, LingerCommitsAPartialBatchWhenInputPauses) {
  int in_pipe[2], out_pipe[2];
  ASSERT_EQ(pipe(in_pipe), 0);
  ASSERT_EQ(pipe(out_pipe), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    close(in_pipe[1]);
    close(out_pipe[0]);
    execl(EVIDENT_BINARY, EVIDENT_BINARY, "consume", "--config", config_.c_str(), "--store",
          store_.c_str(), "--outcomes", "-", "--linger-ms", "20", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  const std::string line =
      R"({"specversion":"1.0","id":"evt-1","source":"training://orders/checkout","type":"order.status.changed","subject":"order-1","data":{"schemaVersion":1,"orderId":"order-1","status":"paid"}})"
      "\n";
  ASSERT_EQ(write(in_pipe[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
  // Wait (bounded: 10 s) for the outcome while stdin stays open.
  pollfd pfd{out_pipe[0], POLLIN, 0};
  const int ready = poll(&pfd, 1, 10000);
  std::string out;
  if (ready > 0) {
    char buffer[4096];
    const ssize_t n = read(out_pipe[0], buffer, sizeof buffer);
    if (n > 0) out.assign(buffer, static_cast<size_t>(n));
  }
  close(in_pipe[1]);  // end of input: the consumer finishes
  int status = 0;
  waitpid(pid, &status, 0);
  close(out_pipe[0]);
  ASSERT_GT(ready, 0) << "no outcome while the input stayed open: the batch did not linger-commit";
  EXPECT_NE(out.find("\"outcome\":\"applied\""), std::string::npos) << out;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace evident::testing
