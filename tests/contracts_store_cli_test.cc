// `evident contracts push|list|show` end to end, and `outbox append` checking events against
// the contracts a store holds: their settings, the refusal of a second source of truth, and a
// running append that takes a newly pushed set without a restart.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

std::string Refunded(const std::string& id) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"training://orders/checkout","type":"order.refunded","subject":"o-1",)"
         R"("data":{"schemaVersion":1,"orderId":"o-1"}})";
}

std::string Status(const std::string& id, int schema_version, const std::string& subject = "o-1") {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"training://orders/checkout","type":"order.status.changed",)"
         R"("subject":")" +
         subject + R"(","data":{"schemaVersion":)" + std::to_string(schema_version) +
         R"(,"orderId":")" + subject +
         R"(","status":"paid","orderVersion":1,)"
         R"("state":"paid","version":1}})";
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ContractsStoreCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-contracts-store-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = "sqlite:" + (dir_ / "s.db").string();
    // A copy of the orders contracts, to which a later push adds a type.
    contracts_ = dir_ / "contracts";
    fs::copy(SourcePath("examples/orders/contracts"), contracts_, fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessResult Push(const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {"contracts",
                                     "push",
                                     "--store",
                                     store_,
                                     "--contracts",
                                     contracts_.string(),
                                     "--schema-version-at",
                                     "/data/schemaVersion"};
    args.insert(args.end(), more.begin(), more.end());
    return RunEvident(args);
  }
  void AddRefunded() {
    fs::create_directories(contracts_ / "order.refunded");
    std::ofstream(contracts_ / "order.refunded/v1.schema.json")
        << R"({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",)"
           R"("required":["orderId"],"properties":{"orderId":{"type":"string"}}})";
  }

  fs::path dir_, contracts_;
  std::string store_;
};

TEST_F(ContractsStoreCliTest, PushListShowAndAppendWithTheStoredSettings) {
  const ProcessResult pushed = Push({"--partitions", "4"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  EXPECT_TRUE(pushed.out.starts_with("pushed contracts v1 (")) << pushed.out;
  const ProcessResult again = Push({"--partitions", "4"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(again.out.starts_with("unchanged: the store's contracts v1")) << again.out;

  const ProcessResult list = RunEvident({"contracts", "list", "--store", store_});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(Lines(list.out).size(), 2u) << list.out;
  const ProcessResult show = RunEvident({"contracts", "show", "--store", store_});
  EXPECT_NE(show.out.find("partitions          4\n"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("schema version at   /data/schemaVersion\n"), std::string::npos);
  const ProcessResult file = RunEvident(
      {"contracts", "show", "--store", store_, "--file", "order.status.changed/v2.schema.json"});
  EXPECT_EQ(file.out, ReadFile(contracts_ / "order.status.changed/v2.schema.json"));

  // No --contracts and no settings: the store's contracts, partitions and version pointer.
  const ProcessResult appended = RunEvident({"outbox", "append", "--store", store_, "-"},
                                            Status("e1", 2, "o-1") + "\n" + Status("e2", 9) + "\n");
  EXPECT_EQ(appended.exit_code, 1) << appended.err;
  EXPECT_NE(appended.out.find(R"("outcome":"appended")"), std::string::npos) << appended.out;
  EXPECT_NE(appended.out.find(R"("reason":"unaccepted-schema-version")"), std::string::npos);
  const ProcessResult rows = RunEvident({"outbox", "list", "--store", store_, "--format", "json"});
  EXPECT_NE(rows.out.find(R"("partition":)"), std::string::npos) << rows.out;
}

TEST_F(ContractsStoreCliTest, AStoreWithContractsRefusesASecondSourceOfTruth) {
  ASSERT_EQ(Push().exit_code, 0);
  const std::string event = Status("e1", 2) + "\n";
  const ProcessResult dir = RunEvident(
      {"outbox", "append", "--store", store_, "--contracts", contracts_.string(), "-"}, event);
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_NE(dir.err.find("the store holds contracts v1"), std::string::npos) << dir.err;
  const ProcessResult partitions =
      RunEvident({"outbox", "append", "--store", store_, "--partitions", "2", "-"}, event);
  EXPECT_EQ(partitions.exit_code, 2);
  EXPECT_NE(partitions.err.find("leave out --partitions"), std::string::npos) << partitions.err;
  const std::string empty = "sqlite:" + (dir_ / "empty.db").string();
  const ProcessResult none = RunEvident({"outbox", "append", "--store", empty, "-"}, event);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("the store holds no contracts"), std::string::npos) << none.err;
}

TEST_F(ContractsStoreCliTest, ARefusedPushSaysEveryFindingAndKeepsNothing) {
  ASSERT_EQ(Push().exit_code, 0);
  std::ofstream(contracts_ / "order.status.changed/v1.schema.json", std::ios::app) << "\n";
  std::ofstream(contracts_ / "compatibility.yaml", std::ios::trunc) << "default: sideways\n";
  const ProcessResult refused = Push({"--format", "json"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.out.find(R"("outcome":"refused")"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("COMPATIBILITY_INVALID"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("SCHEMA_VERSION_CHANGED"), std::string::npos) << refused.out;
  const ProcessResult list =
      RunEvident({"contracts", "list", "--store", store_, "--format", "json"});
  EXPECT_EQ(Lines(list.out).size(), 1u) << list.out;
}

// One `outbox append` reading a pipe, one event per transaction: an event of a type the first
// set lacks is refused, the second set is pushed, and the same process appends the next event
// of that type.
TEST_F(ContractsStoreCliTest, ARunningAppendTakesANewlyPushedSetWithoutARestart) {
  ASSERT_EQ(Push().exit_code, 0);
  int in[2];
  ASSERT_EQ(pipe(in), 0);
  const fs::path out_path = dir_ / "results.ndjson";
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(out, 0);
  const pid_t pid = StartProcess(
      {EVIDENT_BINARY, "outbox", "append", "--store", store_, "--batch-count-max", "1", "-"},
      {.in = in[0], .out = out}, {in[1]});
  close(in[0]);
  close(out);
  ASSERT_GT(pid, 0);
  const auto write_line = [&](const std::string& line) {
    const std::string text = line + "\n";
    ASSERT_EQ(write(in[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  };
  const auto wait_for_lines = [&](size_t count) {
    for (int i = 0; i < 1000 && Lines(ReadFile(out_path)).size() < count; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Lines(ReadFile(out_path));
  };
  write_line(Refunded("e1"));
  ASSERT_EQ(wait_for_lines(1).size(), 1u);
  AddRefunded();
  const ProcessResult pushed = Push();
  ASSERT_EQ(pushed.exit_code, 0) << pushed.out << pushed.err;
  write_line(Refunded("e2"));
  const std::vector<std::string> results = wait_for_lines(2);
  close(in[1]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << EndedBy(status);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_NE(results[0].find("unknown-type"), std::string::npos) << results[0];
  EXPECT_NE(results[1].find(R"("outcome":"appended")"), std::string::npos) << results[1];
}

}  // namespace
}  // namespace evident::testing
