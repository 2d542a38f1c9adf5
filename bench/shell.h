// bench/shell.h — a command's output, for the benchmarks that start a server through scripts/.
#pragma once

#include <string>

#include "testing/shell.h"

namespace evident::bench {

// The output of `command`, without its trailing newlines; `rc` is pclose's status.
inline std::string Shell(const std::string& command, int& rc) {
  return test_support::Shell(command, &rc);
}

}  // namespace evident::bench
