// `evident outbox append|stats|list|park|unpark` end to end, on the orders example's contracts.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

std::string Status(const std::string& id, int schema_version, const std::string& status) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"training://orders/checkout","type":"order.status.changed",)"
         R"("subject":"order-104","data":{"schemaVersion":)" +
         std::to_string(schema_version) + R"(,"orderId":"order-104","status":")" + status +
         R"("}})";
}

class OutboxCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-outbox-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = "sqlite:" + (dir_ / "s.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessResult Append(const std::string& input) {
    return RunEvident({"outbox", "append", "--store", store_, "--contracts",
                       SourcePath("examples/orders/contracts"), "--schema-version-at",
                       "/data/schemaVersion", "-"},
                      input);
  }
  // The "outcome" of each result line.
  static std::vector<std::string> Outcomes(const std::string& out) {
    std::vector<std::string> outcomes;
    simdjson::dom::parser parser;
    for (const std::string& line : Lines(out)) {
      simdjson::dom::element e;
      EXPECT_EQ(parser.parse(line).get(e), simdjson::SUCCESS) << line;
      outcomes.emplace_back(e["outcome"].get_string().value());
    }
    return outcomes;
  }

  fs::path dir_;
  std::string store_;
};

TEST_F(OutboxCliTest, EachEventGetsOneResultAndARefusalExitsOne) {
  std::string conflicting = Status("e1", 1, "shipped");
  const std::string input = Status("e1", 1, "paid") + "\n" + Status("e1", 1, "paid") + "\n" +
                            conflicting + "\n" + Status("e2", 9, "paid") + "\n" +
                            R"({"specversion":"1.0","id":"e3","source":"training://orders/)"
                            R"(checkout","type":"order.status.changed","data":{"schemaVersion":1}})"
                            "\n" +
                            "not json\n";
  const ProcessResult r = Append(input);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::vector<std::string> want = {"appended", "duplicate",       "conflict",
                                         "rejected", "payload-invalid", "rejected"};
  EXPECT_EQ(Outcomes(r.out), want) << r.out;
  const ProcessResult stats =
      RunEvident({"outbox", "stats", "--store", store_, "--format", "json"});
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find(R"("pending":1,"sent":0)"), std::string::npos) << stats.out;
}

TEST_F(OutboxCliTest, AppendingTheSameEventsAgainIsAllDuplicatesAndExitsZero) {
  const std::string input = Status("e1", 1, "paid") + "\n" + Status("e2", 2, "paid") + "\n";
  ASSERT_EQ(Append(input).exit_code, 0);
  const ProcessResult again = Append(input);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Outcomes(again.out), (std::vector<std::string>{"duplicate", "duplicate"}));
  const ProcessResult list =
      RunEvident({"outbox", "list", "--store", store_, "--pending", "--format", "json"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  ASSERT_EQ(Lines(list.out).size(), 2u) << list.out;
  // The exact bytes are kept.
  EXPECT_NE(list.out.find(R"("bytes":"{\"specversion\":\"1.0\",\"id\":\"e1\")"), std::string::npos)
      << list.out;
}

// An input is read as `validate` reads it: a batch array, one result per element (indexed by
// its place), what follows the array refused malformed-json even when it is an event.
TEST_F(OutboxCliTest, ABatchArrayIsOneResultPerElement) {
  const ProcessResult r = Append("[\n  " + Status("e1", 1, "paid") + ",\n  " +
                                 Status("e2", 1, "packed") + "\n] " + Status("e3", 1, "paid"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(Outcomes(r.out), (std::vector<std::string>{"appended", "appended", "rejected"}))
      << r.out;
  EXPECT_NE(r.out.find("malformed-json"), std::string::npos) << r.out;
  const ProcessResult list =
      RunEvident({"outbox", "list", "--store", store_, "--pending", "--format", "json"});
  ASSERT_EQ(Lines(list.out).size(), 2U) << list.out;
}

// A parked row stays out of the relay's rounds while the rows behind it go out; it is listed and
// counted apart with the operator's words, and once unparked the next round sends it.
TEST_F(OutboxCliTest, AParkedRowWaitsAsideWhileTheRowsBehindItGoOut) {
  ASSERT_EQ(Append(Status("e1", 1, "paid") + "\n" + Status("e2", 1, "packed") + "\n" +
                   Status("e3", 1, "shipped") + "\n")
                .exit_code,
            0);
  const auto park = [&](const std::string& seq, const std::string& reason) {
    return RunEvident({"outbox", "park", "--store", store_, "--seq", seq, "--reason", reason});
  };
  const ProcessResult parked = park("1", "refused by the broker: ticket 7");
  ASSERT_EQ(parked.exit_code, 0) << parked.err;
  EXPECT_NE(parked.out.find("outbox row 1 parked"), std::string::npos) << parked.out;
  const ProcessResult twice = park("1", "again");
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.err.find("parked already"), std::string::npos) << twice.err;
  EXPECT_EQ(park("9", "absent").exit_code, 1);
  EXPECT_EQ(park("2", " ").exit_code, 2);  // a reason must say something
  EXPECT_EQ(park("2", "\t\n ").exit_code, 2);
  const ProcessResult not_text = park("2", "\xff\xfe");
  EXPECT_EQ(not_text.exit_code, 2);
  EXPECT_NE(not_text.err.find("UTF-8"), std::string::npos) << not_text.err;
  const ProcessResult absent_store =
      RunEvident({"outbox", "park", "--store", "sqlite:" + (dir_ / "no" / "s.db").string(), "--seq",
                  "1", "--reason", "r"});
  EXPECT_EQ(absent_store.exit_code, 2) << absent_store.err;  // a store failure, not a refusal

  const ProcessResult relayed = RunEvident({"relay", "--store", store_, "--to", "-", "--once"});
  ASSERT_EQ(relayed.exit_code, 0) << relayed.err;
  EXPECT_EQ(relayed.out, Status("e2", 1, "packed") + "\n" + Status("e3", 1, "shipped") + "\n");
  const ProcessResult listed =
      RunEvident({"outbox", "list", "--store", store_, "--parked", "--format", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  ASSERT_EQ(Lines(listed.out).size(), 1U) << listed.out;
  simdjson::dom::parser parser;
  const simdjson::dom::element row = parser.parse(listed.out).value();
  EXPECT_EQ(row["seq"].get_int64().value(), 1);
  EXPECT_EQ(row["parked_reason"].get_string().value(), "refused by the broker: ticket 7");
  EXPECT_TRUE(row["sent_at_ms"].is_null());
  EXPECT_EQ(row["bytes"].get_string().value(), Status("e1", 1, "paid"));
  const ProcessResult stats =
      RunEvident({"outbox", "stats", "--store", store_, "--format", "json"});
  EXPECT_NE(stats.out.find(R"("pending":0,"sent":2,"parked":1)"), std::string::npos) << stats.out;
  const ProcessResult sent_one = park("2", "too late");
  EXPECT_EQ(sent_one.exit_code, 1);
  EXPECT_NE(sent_one.err.find("sent already"), std::string::npos) << sent_one.err;

  const ProcessResult unparked = RunEvident({"outbox", "unpark", "--store", store_, "--seq", "1"});
  ASSERT_EQ(unparked.exit_code, 0) << unparked.err;
  EXPECT_EQ(RunEvident({"outbox", "unpark", "--store", store_, "--seq", "1"}).exit_code, 1);
  const ProcessResult last = RunEvident({"relay", "--store", store_, "--to", "-", "--once"});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_EQ(last.out, Status("e1", 1, "paid") + "\n");
}

TEST_F(OutboxCliTest, UsageAndStoreErrorsExitTwo) {
  EXPECT_EQ(RunEvident({"outbox", "append", "--store", store_, "-"}, "").exit_code, 2);
  const ProcessResult missing_contracts = RunEvident(
      {"outbox", "append", "--store", store_, "--contracts", (dir_ / "none").string(), "-"}, "");
  EXPECT_EQ(missing_contracts.exit_code, 2);
  const ProcessResult no_store =
      RunEvident({"outbox", "stats", "--store", "sqlite:" + (dir_ / "absent.db").string()});
  EXPECT_EQ(no_store.exit_code, 2);
  EXPECT_NE(no_store.err.find("no evident store"), std::string::npos) << no_store.err;
}

// `evident relay` without a broker: standard output and a file get the exact bytes in order,
// every row is marked sent with its destination, a second run sends nothing.
TEST_F(OutboxCliTest, RelayToStandardOutputAndToAFileSendsTheExactBytesOnce) {
  const std::string a = Status("r-1", 1, "paid"), b = Status("r-2", 1, "packed");
  ASSERT_EQ(Append(a + "\n" + b + "\n").exit_code, 0);
  const ProcessResult first = RunEvident({"relay", "--store", store_, "--to", "-", "--once"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, a + "\n" + b + "\n");
  EXPECT_NE(first.err.find("2 sent to stdout"), std::string::npos) << first.err;
  const ProcessResult again = RunEvident({"relay", "--store", store_, "--to", "-", "--once"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "");
  const ProcessResult list = RunEvident({"outbox", "list", "--store", store_, "--format", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const std::vector<std::string> listed = Lines(list.out);
  ASSERT_EQ(listed.size(), 2u) << list.out;
  simdjson::dom::parser parser;
  for (const std::string& line : listed) {
    simdjson::dom::element row = parser.parse(line).value();
    EXPECT_FALSE(row["sent_at_ms"].is_null()) << line;
    EXPECT_EQ(std::string(row["stream"].get_string().value()), "stdout") << line;
    EXPECT_TRUE(row["stream_sequence"].is_null()) << line;
  }
  const std::string c = Status("r-3", 3, "shipped");
  ASSERT_EQ(RunEvident({"outbox", "append", "--store", store_, "--contracts",
                        SourcePath("examples/orders/contracts"), "--schema-version-at",
                        "/data/schemaVersion", "-"},
                       c + "\n")
                .exit_code,
            1);  // no schema version 3: refused, never relayed
  const std::string d = Status("r-4", 1, "shipped");
  ASSERT_EQ(Append(d + "\n").exit_code, 0);
  const fs::path file = dir_ / "out.ndjson";
  const ProcessResult to_file =
      RunEvident({"relay", "--store", store_, "--to", "file:" + file.string(), "--once"});
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  std::ifstream in(file);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), d + "\n");
}

TEST_F(OutboxCliTest, RelayExitCodes) {
  ASSERT_EQ(Append(Status("x-1", 1, "paid") + "\n").exit_code, 0);
  const ProcessResult bad_to = RunEvident({"relay", "--store", store_, "--to", "amqp://x"});
  EXPECT_EQ(bad_to.exit_code, 2);
  EXPECT_NE(bad_to.err.find("expected nats://HOST:PORT[,HOST:PORT...], "
                            "kafka://HOST:PORT[,HOST:PORT...], file:PATH or -"),
            std::string::npos)
      << bad_to.err;
  const ProcessResult bad_keep =
      RunEvident({"relay", "--store", store_, "--to", "-", "--keep-sent", "soon"});
  EXPECT_EQ(bad_keep.exit_code, 2);
  const ProcessResult short_window = RunEvident(
      {"relay", "--store", store_, "--to", "nats://127.0.0.1:1", "--duplicate-window", "1m"});
  EXPECT_EQ(short_window.exit_code, 2);
  EXPECT_NE(short_window.err.find("shorter than two minutes"), std::string::npos)
      << short_window.err;
  // Nothing listens on port 1: --once gives up after its failed rounds, exit 1, nothing marked.
  const ProcessResult down = RunEvident({"relay", "--store", store_, "--to", "nats://127.0.0.1:1",
                                         "--once", "--once-failures-max", "2"});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_NE(down.err.find("gave up after 2 failed rounds"), std::string::npos) << down.err;
  const ProcessResult stats =
      RunEvident({"outbox", "stats", "--store", store_, "--format", "json"});
  EXPECT_NE(stats.out.find("\"pending\":1,"), std::string::npos) << stats.out;
  // Into a directory: the file cannot be opened, --once gives up, the row stays pending.
  const ProcessResult dir = RunEvident({"relay", "--store", store_, "--to", "file:" + dir_.string(),
                                        "--once", "--once-failures-max", "1"});
  EXPECT_EQ(dir.exit_code, 1) << dir.err;
  const ProcessResult no_store =
      RunEvident({"relay", "--store", "sqlite:" + (dir_ / "absent.db").string(), "--to", "-",
                  "--once"});  // (--once: a regression that creates the store still ends)
  EXPECT_EQ(no_store.exit_code, 2);
  EXPECT_NE(no_store.err.find("no evident store"), std::string::npos) << no_store.err;
  EXPECT_FALSE(fs::exists(dir_ / "absent.db"));
}

// A park whose confirmation cannot be written still happened: exit 2, and standard error says
// that the row is parked (or pending again), so the exit status is not read as "nothing done".
TEST_F(OutboxCliTest, AParkThatCannotSaySoOnStandardOutputSaysItOnStandardError) {
  ASSERT_EQ(Append(Status("e1", 1, "paid") + "\n").exit_code, 0);
  const auto to_full = [&](const std::string& args) {
    return RunProcess({"/bin/sh", "-c",
                       std::string(EVIDENT_BINARY) + " outbox " + args + " --store " + store_ +
                           " --seq 1 > /dev/full"});
  };
  const ProcessResult parked = to_full("park --reason stuck");
  EXPECT_EQ(parked.exit_code, 2);
  EXPECT_NE(parked.err.find("outbox row 1 parked (committed)"), std::string::npos) << parked.err;
  const ProcessResult stats =
      RunEvident({"outbox", "stats", "--store", store_, "--format", "json"});
  EXPECT_NE(stats.out.find(R"("parked":1)"), std::string::npos) << stats.out;
  const ProcessResult unparked = to_full("unpark");
  EXPECT_EQ(unparked.exit_code, 2);
  EXPECT_NE(unparked.err.find("outbox row 1 is pending again (committed)"), std::string::npos)
      << unparked.err;
}

}  // namespace
}  // namespace evident::testing
