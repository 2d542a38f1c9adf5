// bench/shell.h — a command's output, for the benchmarks that start a server through scripts/.
#pragma once

#include <cstdio>
#include <string>

namespace evident::bench {

// The output of `command`, without its trailing newlines; `rc` is pclose's status.
inline std::string Shell(const std::string& command, int& rc) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    rc = -1;
    return out;
  }
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  rc = pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace evident::bench
