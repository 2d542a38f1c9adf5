// `evident gaps check|resolve` and `evident baseline import` end to end, on a copy of the orders
// example whose fulfillment gaps are due after one second.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

std::string Paid(const std::string& order, int version) {
  return R"({"specversion":"1.0","id":"paid-)" + order + "-" + std::to_string(version) +
         R"(","source":"https://example.test/order-service","type":"com.example.training.order.paid","schemaversion":1,)"
         R"("subject":")" +
         order + R"(","data":{"orderId":")" + order + R"(","orderVersion":)" +
         std::to_string(version) + "}}";
}

std::string ReadFileText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class GapsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-gaps-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(SourcePath("examples/orders"), dir_, fs::copy_options::recursive);
    store_ = "sqlite:" + (dir_ / "s.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The fulfillment contract with `route` and a deadline of one second.
  void Route(const std::string& route) {
    const fs::path path = dir_ / "contracts/consumers/fulfillment.yaml";
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text = std::regex_replace(text, std::regex("deadline_seconds: 300"), "deadline_seconds: 1");
    text = std::regex_replace(text, std::regex("route: request-replay"), "route: " + route);
    std::ofstream(path) << text;
  }
  ProcessResult Consume(const std::string& input) {
    return RunEvident({"consume", "--config", (dir_ / "evident.yaml").string(), "--store", store_,
                       "--input", "-"},
                      input);
  }
  // Consumes v1 and v4 of order-9 (v2, v3 missing) and waits for the deadline to pass.
  void OpenAGap() {
    ASSERT_EQ(Consume(Paid("order-9", 1) + "\n" + Paid("order-9", 4) + "\n").exit_code, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // a real deadline passes
  }

  fs::path dir_;
  std::string store_;
};

TEST_F(GapsCliTest, ACheckRequestsOneReplayHoweverOftenItRuns) {
  Route("request-replay");
  OpenAGap();
  ProcessResult r = RunEvident({"gaps", "check", "--store", store_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "replay requested 1, opened for a person 0, reported 0, closed 0\n");
  for (int i = 0; i < 3; ++i) {
    r = RunEvident({"gaps", "check", "--store", store_});
    EXPECT_EQ(r.out, "replay requested 0, opened for a person 0, reported 0, closed 0\n");
  }
  // A consume run (a restart) checks too, and asks nothing more.
  ASSERT_EQ(Consume("").exit_code, 0);
  r = RunEvident({"outbox", "list", "--store", store_, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> rows = Lines(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_NE(rows[0].find("evident.replay.requested"), std::string::npos) << rows[0];
  r = RunEvident({"gaps", "--store", store_, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  const simdjson::dom::element gaps = parser.parse(r.out).value();
  ASSERT_EQ(gaps.get_array().size(), 1u);
  EXPECT_EQ(std::string_view(gaps.at(0)["record"]["state"]), "requested");
  EXPECT_EQ(int64_t(gaps.at(0)["record"]["missing_from"]), 2);
  EXPECT_EQ(int64_t(gaps.at(0)["record"]["missing_to"]), 3);
  // The missing versions arrive: the record closes, and the evidence tells the story.
  ASSERT_EQ(Consume(Paid("order-9", 2) + "\n" + Paid("order-9", 3) + "\n").exit_code, 0);
  r = RunEvident({"evidence", "order-9", "--store", store_, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const simdjson::dom::element packet = parser.parse(r.out).value();
  const simdjson::dom::element record = packet["consumers"].at(0)["gaps"].at(0);
  EXPECT_EQ(std::string_view(record["state"]), "closed");
  EXPECT_EQ(std::string_view(record["closed_by"]), "arrival");
}

TEST_F(GapsCliTest, AManualGapIsListedUntilAPersonResolvesIt) {
  Route("manual");
  OpenAGap();
  ProcessResult r = RunEvident({"gaps", "check", "--store", store_});
  EXPECT_EQ(r.out, "replay requested 0, opened for a person 1, reported 0, closed 0\n");
  r = RunEvident({"gaps", "--store", store_});
  EXPECT_NE(r.out.find("opened for a person"), std::string::npos) << r.out;
  r = RunEvident({"gaps", "resolve", "--store", store_, "--consumer", "fulfillment", "--subject",
                  "order-9", "--by", "ops"});
  EXPECT_EQ(r.exit_code, 2) << "--note is required";
  r = RunEvident({"gaps", "resolve", "--store", store_, "--consumer", "fulfillment", "--subject",
                  "order-9", "--by", "ops", "--note", "owner re-sent v2 and v3 by hand"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunEvident({"gaps", "resolve", "--store", store_, "--consumer", "fulfillment", "--subject",
                  "order-9", "--by", "ops", "--note", "again"});
  EXPECT_EQ(r.exit_code, 1);
  r = RunEvident({"evidence", "order-9", "--store", store_});
  EXPECT_NE(r.out.find("by ops (owner re-sent v2 and v3 by hand)"), std::string::npos) << r.out;
  EXPECT_TRUE(RunEvident({"outbox", "list", "--store", store_}).out.find("replay") ==
              std::string::npos);
}

// --store before `check` or `resolve` is theirs too; the listing's options there are refused,
// not dropped.
TEST_F(GapsCliTest, OptionsBeforeTheSubcommandAreTakenOrRefused) {
  Route("manual");
  OpenAGap();
  ProcessResult r = RunEvident({"gaps", "--store", store_, "check"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "replay requested 0, opened for a person 1, reported 0, closed 0\n");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"gaps", "--all", "check", "--store", store_},
           {"gaps", "--store", store_, "--format", "json", "check"},
           {"gaps", "--within", "60", "resolve", "--store", store_, "--consumer", "fulfillment",
            "--subject", "order-9", "--by", "ops", "--note", "n"}}) {
    r = RunEvident(args);
    EXPECT_EQ(r.exit_code, 2) << args[1];
    EXPECT_NE(r.err.find("lists gaps"), std::string::npos) << r.err;
  }
  r = RunEvident({"gaps", "--store", store_, "resolve", "--consumer", "fulfillment", "--subject",
                  "order-9", "--by", "ops", "--note", "resolved with the store given first"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RunEvident({"gaps", "check"}).exit_code, 2);  // no store anywhere
}

// A broker down when replay-requests serve starts is waited for, up to --open-wait-ms, then the
// run ends with exit 3 and says why; a password in --from is never shown.
TEST_F(GapsCliTest, ReplayRequestsServeWaitsForItsBrokerThenSaysWhy) {
  const std::string owner = "sqlite:" + (dir_ / "owner.db").string();
  ASSERT_EQ(RunEvident({"outbox", "append", "--store", owner, "--contracts",
                        (dir_ / "contracts").string(), "-"},
                       Paid("order-7", 1) + "\n")
                .exit_code,
            0);  // the owner's store, with one row
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult r = RunEvident(
      {"replay-requests", "serve", "--store", owner, "--owner-source",
       "https://example.test/order-service", "--from", "nats://u:pw-5f1c@127.0.0.1:1", "--stream",
       "REQUESTS", "--to", "file:" + (dir_ / "answers.ndjson").string(), "--open-wait-ms", "1500"});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("trying again for up to 1500 ms"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unavailable for"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("pw-5f1c"), std::string::npos) << r.err;
  EXPECT_GE(took, std::chrono::milliseconds(1400));
  EXPECT_LT(took, std::chrono::seconds(30));
}

TEST_F(GapsCliTest, GapsWithoutAStoreIsAUsageError) {
  EXPECT_EQ(RunEvident({"gaps"}).exit_code, 2);
  EXPECT_EQ(
      RunEvident({"gaps", "check", "--store", "sqlite:" + (dir_ / "none.db").string()}).exit_code,
      2);
  EXPECT_FALSE(fs::exists(dir_ / "none.db"));
}

TEST_F(GapsCliTest, ABaselineImportIsAllOrNothing) {
  const std::string config = (dir_ / "evident.yaml").string();
  const fs::path snapshot = dir_ / "snapshot.ndjson";
  std::ofstream(snapshot)
      << R"({"subject":"order-7","version":7,"state":"awaiting-reservation","fields":{"orderId":"order-7"}})"
      << "\n"
      << R"({"subject":"order-8","version":3})"
      << "\n";
  const std::vector<std::string> import = {"baseline",   "import",      "--config",
                                           config,       "--store",     store_,
                                           "--consumer", "fulfillment", snapshot.string()};
  ProcessResult r = RunEvident(import);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "imported 2 baseline(s) for fulfillment, 0 already there\n");
  r = RunEvident(import);
  EXPECT_EQ(r.out, "imported 0 baseline(s) for fulfillment, 2 already there\n");
  // Version 8 of order-7 applies at once; 7 was the snapshot's.
  ASSERT_EQ(Consume(Paid("order-7", 8) + "\n").exit_code, 0);
  r = RunEvident({"evidence", "order-7", "--store", store_, "--format", "json"});
  simdjson::dom::parser parser;
  const simdjson::dom::element c = parser.parse(r.out).value()["consumers"].at(0);
  EXPECT_EQ(int64_t(c["projection_version"]), 8);
  EXPECT_EQ(std::string_view(c["evidence"].at(0)["name"]), "baseline");
  // A bad line, or a conflict, imports nothing of the file.
  std::ofstream(snapshot) << R"({"subject":"order-20","version":1})"
                          << "\n"
                          << R"({"subject":"order-21"})"
                          << "\n";
  r = RunEvident(import);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("line 2: 'version'"), std::string::npos) << r.err;
  std::ofstream(snapshot) << R"({"subject":"order-20","version":1})"
                          << "\n"
                          << R"({"subject":"order-7","version":7})"
                          << "\n";
  r = RunEvident(import);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  EXPECT_EQ(RunEvident({"evidence", "order-20", "--store", store_}).exit_code, 1);  // unknown
  r = RunEvident({"baseline", "import", "--config", config, "--store", store_, "--consumer",
                  "orders-projection", snapshot.string()});
  EXPECT_EQ(r.exit_code, 2) << "an unordered consumer has no versions to start from";
}

// --- `evident replay-requests serve`: the owner answers a gap's replay request ---

// The owner keeps order-9 v1..v4 and order-8 v1..v3 in its outbox, with their versions; the
// consumer has v1 and v4 of order-9 (v2, v3 missing) and v1 and v3 of order-8. Once the deadline
// passed, its requests go to the owner, who publishes order-9's v2 onwards again and, for order-8
// whose sent rows it no longer keeps, answers gone; the consumer applies what came and records
// each answer on its gap.
TEST_F(GapsCliTest, AReplayRequestIsAnsweredFromTheOwnersOutbox) {
  Route("request-replay");
  const std::string owner = "sqlite:" + (dir_ / "owner.db").string();
  const auto events = [](const std::string& order, int last) {
    std::string out;
    for (int v = 1; v <= last; ++v) out += Paid(order, v) + "\n";
    return out;
  };
  const auto append = [&](const std::string& input) {
    return RunEvident(
        {"outbox", "append", "--store", owner, "--contracts", (dir_ / "contracts").string(),
         "--subject-version-at", "/data/orderVersion", "-"},
        input);
  };
  // order-8's rows are sent and deleted (--keep-sent 0s) before order-9's are appended.
  ASSERT_EQ(append(events("order-8", 3)).exit_code, 0);
  ProcessResult r =
      RunEvident({"relay", "--store", owner, "--to", "file:" + (dir_ / "sent.ndjson").string(),
                  "--once", "--keep-sent", "0s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(append(events("order-9", 4)).exit_code, 0);
  ASSERT_EQ(Consume(Paid("order-9", 1) + "\n" + Paid("order-9", 4) + "\n" + Paid("order-8", 1) +
                    "\n" + Paid("order-8", 3) + "\n")
                .exit_code,
            0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the deadline passes
  ASSERT_EQ(RunEvident({"gaps", "check", "--store", store_}).exit_code, 0);
  const std::string requests = (dir_ / "requests.ndjson").string();
  r = RunEvident({"relay", "--store", store_, "--to", "file:" + requests, "--once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // An owner that serves another source answers nothing.
  const std::string answers = (dir_ / "answers.ndjson").string();
  r = RunEvident({"replay-requests", "serve", "--store", owner, "--input", requests,
                  "--owner-source", "https://example.test/someone-else", "--to",
                  "file:" + answers});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 request(s): 0 answered with every missing version, 0 with some or all "
                       "gone, 2 for other owners"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(answers) && fs::file_size(answers) > 0);
  r = RunEvident({"replay-requests", "serve", "--store", owner, "--input", requests,
                  "--owner-source", "https://example.test/order-service", "--to",
                  "file:" + answers});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("republished  order-9 for fulfillment: v2, v3, v4"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gone  order-8 for fulfillment: nothing published; gone: v2"),
            std::string::npos)
      << r.out;
  // Each republished event keeps its bytes; its message carries a replay id of its own.
  const std::vector<std::string> published = Lines(ReadFileText(answers));
  // order-8's answer; order-9 v2, v3, v4 and its answer. The two requests are answered in the
  // order they were asked (their gaps' deadlines, a millisecond apart either way).
  ASSERT_EQ(published.size(), 5u);
  const auto v2 = std::find(published.begin(), published.end(), Paid("order-9", 2));
  ASSERT_NE(v2, published.end()) << ReadFileText(answers);
  ASSERT_LE(v2 - published.begin(), 1);
  EXPECT_EQ(*(v2 + 1), Paid("order-9", 3));
  EXPECT_EQ(*(v2 + 2), Paid("order-9", 4));
  r = RunEvident({"consume", "--config", (dir_ / "evident.yaml").string(), "--store", store_,
                  "--input", answers, "--outcomes", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("reason":"replay-answer")"), std::string::npos) << r.out;
  r = RunEvident({"evidence", "order-9", "--store", store_, "--format", "json"});
  EXPECT_NE(r.out.find(R"("projection_version":4)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("replay_answer":"republished v2, v3, v4")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("how":"drained")"), std::string::npos) << r.out;
  r = RunEvident({"evidence", "order-8", "--store", store_, "--format", "json"});
  EXPECT_NE(r.out.find(R"("replay_answer":"gone v2")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("projection_version":1)"), std::string::npos) << r.out;
}

// --- `evident projection correct`: a person's correction with the facts kept first ---

class CorrectCliTest : public GapsCliTest {
 protected:
  ProcessResult Correct(const std::string& subject, int version, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "projection", "correct",
        "--config",   (dir_ / "evident.yaml").string(),
        "--store",    store_,
        "--consumer", "fulfillment",
        "--subject",  subject,
        "--version",  std::to_string(version),
        "--state",    "awaiting-reservation",
        "--by",       "ops",
        "--note",     "the owner says v2 and v3 changed nothing we read"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunEvident(args);
  }
  simdjson::dom::element Packet(const std::string& subject) {
    const ProcessResult r =
        RunEvident({"evidence", subject, "--store", store_, "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    packet_text_ = r.out;
    for (simdjson::dom::element c : parser_.parse(packet_text_).value()["consumers"].get_array()) {
      if (std::string_view(c["consumer"]) == "fulfillment") return c;
    }
    ADD_FAILURE() << "no fulfillment in " << packet_text_;
    return {};
  }
  std::string packet_text_;
  simdjson::dom::parser parser_;
};

// v1 applied, v4 waits (v2 and v3 missing): a correction to v3 keeps the projection before and
// after, closes the gap as corrected (cause missing), and v4 then applies as the next version;
// the correction intends no effect of its own.
TEST_F(CorrectCliTest, ACorrectionClosesTheGapAndTheWaitingVersionApplies) {
  ASSERT_EQ(Consume(Paid("order-9", 1) + "\n" + Paid("order-9", 4) + "\n").exit_code, 0);
  ProcessResult r = Correct("order-9", 3, {"--field", R"(/orderId="order-9")", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("would correct (dry run)"), std::string::npos) << r.out;
  EXPECT_EQ(int64_t(Packet("order-9")["projection_version"]), 1);  // nothing committed
  r = Correct("order-9", 3, {"--field", R"(/orderId="order-9")"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("corrected fulfillment order-9 (open gap: v4 waiting)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("applied v4"), std::string::npos) << r.out;
  const simdjson::dom::element c = Packet("order-9");
  EXPECT_EQ(int64_t(c["projection_version"]), 4);
  EXPECT_TRUE(bool(c["in_sync"]));
  const simdjson::dom::element correction = c["corrections"].at(0);
  EXPECT_EQ(std::string_view(correction["by"]), "ops");
  EXPECT_EQ(std::string_view(correction["basis"]), "open gap: v4 waiting");
  EXPECT_FALSE(bool(correction["forced"]));
  EXPECT_EQ(int64_t(correction["before"]["version"]), 1);
  EXPECT_EQ(int64_t(correction["after"]["version"]), 3);
  const simdjson::dom::element gap = c["gaps"].at(0);
  EXPECT_EQ(std::string_view(gap["how"]), "corrected");
  EXPECT_EQ(std::string_view(gap["cause"]), "missing");
  EXPECT_EQ(std::string_view(gap["closed_by"]), "ops");
  // One intent, from v1: v4 triggered the same operation (a no-op), the correction nothing.
  EXPECT_EQ(c["effects"].get_array().size(), 1u) << packet_text_;
  // Guards read the corrected projection.
  r = RunEvident({"guard", "--config", (dir_ / "evident.yaml").string(), "--store", store_,
                  "--consumer", "fulfillment", "--subject", "order-9", "--action", "ship"});
  EXPECT_EQ(r.out.find("gap open"), std::string::npos) << r.out;
  // The version is now 4: a correction to 4 or below is refused.
  EXPECT_EQ(Correct("order-9", 4, {"--force"}).exit_code, 1);
}

// A correction past a waiting version sets that event aside as stale (its receipt removed, so a
// redelivery is decided afresh as stale) and the gap closes as skipped; a later waiting version
// applies.
TEST_F(CorrectCliTest, ACorrectionPastAWaitingVersionSetsItAsideAsStale) {
  ASSERT_EQ(
      Consume(Paid("order-8", 1) + "\n" + Paid("order-8", 3) + "\n" + Paid("order-8", 5) + "\n")
          .exit_code,
      0);
  ProcessResult r = Correct("order-8", 4, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("stale v3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("applied v5"), std::string::npos) << r.out;
  const simdjson::dom::element c = Packet("order-8");
  EXPECT_EQ(int64_t(c["projection_version"]), 5);
  EXPECT_NE(packet_text_.find(R"("how":"skipped")"), std::string::npos) << packet_text_;
  EXPECT_NE(packet_text_.find(R"("reason":"stale-after-correction")"), std::string::npos)
      << packet_text_;
  r = RunEvident({"consume", "--config", (dir_ / "evident.yaml").string(), "--store", store_,
                  "--input", "-", "--outcomes", "-"},
                 Paid("order-8", 3) + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("outcome":"stale")"), std::string::npos) << r.out;
}

// Without an open gap or a quarantined input a correction is refused unless forced (and then
// recorded as forced); a field the projection does not copy, or a value that is not JSON, is
// refused before anything is read.
TEST_F(CorrectCliTest, ACorrectionNeedsABasisOrForceAndStatesKnownFields) {
  ASSERT_EQ(Consume(Paid("order-7", 1) + "\n").exit_code, 0);
  ProcessResult r = Correct("order-7", 2, {});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no open gap and no quarantined input"), std::string::npos) << r.err;
  EXPECT_EQ(int64_t(Packet("order-7")["projection_version"]), 1);
  r = Correct("order-7", 2, {"--field", R"(/nope="x")", "--force"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not one the projection of fulfillment copies"), std::string::npos)
      << r.err;
  r = Correct("order-7", 2, {"--field", "/orderId={not json", "--force"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not JSON"), std::string::npos) << r.err;
  r = Correct("order-7", 2, {"--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const simdjson::dom::element correction = Packet("order-7")["corrections"].at(0);
  EXPECT_TRUE(bool(correction["forced"]));
  EXPECT_EQ(std::string_view(correction["basis"]), "forced");
}

}  // namespace
}  // namespace evident::testing
