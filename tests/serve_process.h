// tests/serve_process.h — `evident serve` as a child process for the end-to-end tests: started
// with its standard error in a file, its port read from the "listening on" line; and the status
// event those tests post.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "run_process.h"

namespace evident::testing {

inline constexpr const char* kServeSource = "training://orders/checkout";

// An order.status.changed event of subject order-<id> that orders-projection applies.
inline std::string ServeStatusEvent(const std::string& id) {
  return R"({"specversion":"1.0","id":")" + id + R"(","source":")" + kServeSource +
         R"(","type":"order.status.changed","subject":"order-)" + id +
         R"(","data":{"schemaVersion":1,"orderId":"o","status":"paid"}})";
}

// Starts `evident serve` with `args` after the command (--listen 127.0.0.1:0 is added), its
// standard error in `log`, and `env` changed; sets *pid and returns the port it listens on, 0
// when it did not listen within 20 s.
inline int StartServe(
    const std::vector<std::string>& args, const std::string& log, pid_t* pid,
    const std::vector<std::pair<std::string, std::optional<std::string>>>& env = {}) {
  const int err = ::open(log.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  std::vector<std::string> argv = {EVIDENT_BINARY, "serve", "--listen", "127.0.0.1:0"};
  argv.insert(argv.end(), args.begin(), args.end());
  *pid = StartProcess(argv, {.err = err}, {}, env);
  ::close(err);
  constexpr const char* kListening = "listening on http://127.0.0.1:";
  for (int i = 0; i < 2000; ++i) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    const size_t at = s.find(kListening);
    if (at != std::string::npos && s.find('\n', at) != std::string::npos) {
      return std::atoi(s.c_str() + at + std::strlen(kListening));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

// SIGTERMs the daemon at *pid, waits for it and returns its wait status (*pid becomes -1).
inline int StopServe(pid_t* pid) {
  ::kill(*pid, SIGTERM);
  int status = 0;
  ::waitpid(*pid, &status, 0);
  *pid = -1;
  return status;
}

}  // namespace evident::testing
