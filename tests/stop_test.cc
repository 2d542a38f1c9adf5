// `evident consume` stops cleanly on SIGTERM and SIGINT: what it decided is committed, it says
// so, and it exits 128 + the signal. Standard input stays open (a producer still connected), so
// only the signal can end the run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

struct Child {
  pid_t pid = -1;
  int stdin_fd = -1;
};

// Starts the binary with a pipe on standard input (kept open) and stderr to `err_path`.
Child Spawn(const std::vector<std::string>& argv, const std::string& err_path) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = StartProcess(argv, {fds[0], null_fd, err_fd}, {fds[1]});
  for (int fd : {fds[0], null_fd, err_fd}) {
    if (fd >= 0) close(fd);
  }
  return {pid, fds[1]};
}

// Waits for `pid` to end, up to `timeout`; true with its wait status in `status`. When it does
// not end in time, kills it with SIGKILL (so that nothing is left running) and returns false.
bool WaitFor(pid_t pid, int& status, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t waited = waitpid(pid, &status, WNOHANG);
    if (waited == pid) return true;
    if (waited < 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return false;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Waits until `path` holds `lines` lines (the outcomes of committed batches), up to 60 s.
bool WaitForLines(const fs::path& path, size_t lines) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Lines(ReadFile(path)).size() >= lines) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

class StopTest : public ::testing::TestWithParam<int> {};

TEST_P(StopTest, ASignalEndsTheRunAfterItsCommitWithEverythingDecidedKept) {
  const int signal_number = GetParam();
  const fs::path dir = fs::temp_directory_path() / ("evident-stop-" + std::to_string(getpid()) +
                                                    "-" + std::to_string(signal_number));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string store = "sqlite:" + (dir / "s.db").string();
  const fs::path outcomes = dir / "outcomes.ndjson";
  Child child =
      Spawn({EVIDENT_BINARY, "consume", "--config", SourcePath("examples/orders/evident.yaml"),
             "--store", store, "--input", "-", "--outcomes", outcomes.string()},
            (dir / "err.txt").string());
  ASSERT_GT(child.pid, 0);
  const std::vector<std::string> events =
      Lines(ReadFile(SourcePath("examples/orders/events.ndjson")));
  ASSERT_GE(events.size(), 3u);
  std::string text;
  for (size_t i = 0; i < 3; ++i) text += events[i] + "\n";
  ASSERT_EQ(write(child.stdin_fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  // The batch commits when the input pauses for linger_ms; its outcomes follow the commit.
  ASSERT_TRUE(WaitForLines(outcomes, 3)) << ReadFile(dir / "err.txt");
  kill(child.pid, signal_number);
  int status = 0;
  const bool ended = WaitFor(child.pid, status, std::chrono::seconds(15));
  close(child.stdin_fd);
  if (!ended) {
    FAIL() << "the child did not end within 15 s of signal " << signal_number
           << " (killed with SIGKILL): " << ReadFile(dir / "err.txt");
  }
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 128 + signal_number);
  const std::string err = ReadFile(dir / "err.txt");
  EXPECT_NE(err.find(signal_number == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM"),
            std::string::npos)
      << err;
  // What was decided is in the store.
  const ProcessResult evidence = RunEvident({"evidence", "order-104", "--store", store});
  EXPECT_EQ(evidence.exit_code, 0) << evidence.err;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Signals, StopTest, ::testing::Values(SIGTERM, SIGINT),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return param_info.param == SIGTERM ? std::string("SIGTERM")
                                                              : std::string("SIGINT");
                         });

}  // namespace
}  // namespace evident::testing
