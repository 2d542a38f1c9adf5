// tests/run_process.h — runs a child process with given standard input, captures its output.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "testing/shell.h"

namespace evident::testing {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128 + signal when killed
  std::string out;
  std::string err;
};

// The descriptors a child gets as its standard input, output and error; -1: this process's.
struct ChildFds {
  int in = -1, out = -1, err = -1;
};

// Starts `argv` (argv[0] is the program path) in a child process and returns its pid (-1 when
// fork fails). The child has SIGPIPE at its default action (RunProcess ignores it in this
// process, and an ignored signal stays ignored across exec), `fds` on 0, 1 and 2, every
// descriptor of `close_in_child` closed, and this process's environment changed by `env`
// (name, value; nullopt removes the name). Unflushed output of this process is flushed first,
// so that the child does not write a copy of it.
pid_t StartProcess(const std::vector<std::string>& argv, ChildFds fds,
                   const std::vector<int>& close_in_child = {},
                   const std::vector<std::pair<std::string, std::optional<std::string>>>& env = {});

// Runs `argv` (argv[0] is the program path) with its standard output and error appended to the
// file `log_path` ("": /dev/null), the fault point `fault` armed through EVIDENT_FAULT_POINT
// ("": none, src/core/fault_point.h), and kills it with SIGKILL after `kill_after_us` (< 0:
// never). Returns its wait status (-1 when it could not start).
int RunAndKill(const std::vector<std::string>& argv, const std::string& fault,
               int64_t kill_after_us, const std::string& log_path = "");
inline bool Killed(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }
// How a process ended, for a failure message: "exit 2", "signal 6 (Aborted)".
inline std::string EndedBy(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  return "status " + std::to_string(status);
}
inline bool Finished(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

// Runs `argv` (argv[0] is the program path) with `input` on standard input.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input = "");

// Runs the evident binary under test with `args`.
ProcessResult RunEvident(const std::vector<std::string>& args, const std::string& input = "");

// Runs `command` through /bin/sh (src/testing/shell.h).
using test_support::Shell;

// Splits text into lines (without the newlines), dropping a final empty line.
std::vector<std::string> Lines(const std::string& text);

// Path of a file in the source tree, e.g. SourcePath("examples/orders/evident.yaml").
std::string SourcePath(const std::string& relative);

}  // namespace evident::testing
