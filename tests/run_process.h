// tests/run_process.h — runs a child process with given standard input, captures its output.
#pragma once

#include <string>
#include <vector>

namespace evident::testing {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128 + signal when killed
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] is the program path) with `input` on standard input.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input = "");

// Runs the evident binary under test with `args`.
ProcessResult RunEvident(const std::vector<std::string>& args, const std::string& input = "");

// Splits text into lines (without the newlines), dropping a final empty line.
std::vector<std::string> Lines(const std::string& text);

// Path of a file in the source tree, e.g. SourcePath("examples/orders/evident.yaml").
std::string SourcePath(const std::string& relative);

}  // namespace evident::testing
