// testing/shell.h — a command's output, for the tests and benchmarks that start a server through
// scripts/ (nats.sh, kafka.sh, postgres.sh). Test support only: no library links it.
#pragma once

#include <cstdio>
#include <string>

namespace evident::test_support {

// The standard output of `command` (run by /bin/sh), without its trailing newlines; `rc` is
// pclose's status (-1 when the command could not be started).
inline std::string Shell(const std::string& command, int* rc) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *rc = -1;
    return out;
  }
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  *rc = pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace evident::test_support
