// env/env_backends.h — the Env backends the conformance suite runs against (test-only).
//
// A backend joins the suite by adding itself to EnvBackends(); every test of
// env_conformance_test.cc then runs against it unchanged (RocksDB's env_basic_test pattern).
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "evident/env.h"

namespace evident {

struct EnvBackend {
  std::string name;  // a gtest parameter name: letters, digits and underscores
  // Makes the Env under test. `tmp_dir` is an empty directory of the real file system, removed
  // after the test; the suite's files are named under it, whatever the backend. Shared, not
  // unique: the process-wide PosixEnv() is handed out with a deleter that does nothing.
  std::function<std::shared_ptr<Env>(const std::string& tmp_dir)> make;
};

// gtest prints a parameter it cannot format as raw bytes, padding included (valgrind reports the
// read of uninitialised memory); the name is what a reader wants anyway.
inline void PrintTo(const EnvBackend& backend, std::ostream* out) { *out << backend.name; }

inline const std::vector<EnvBackend>& EnvBackends() {
  static const std::vector<EnvBackend> backends = {
      {"posix", [](const std::string&) { return std::shared_ptr<Env>(&PosixEnv(), [](Env*) {}); }},
      {"memory", [](const std::string&) { return std::shared_ptr<Env>(NewMemoryEnv()); }},
      // With no fault armed, the wrapper must be invisible.
      {"fault_injection_over_memory",
       [](const std::string&) -> std::shared_ptr<Env> {
         return std::make_shared<FaultInjectionEnv>(NewMemoryEnv());
       }},
      {"fault_injection_over_posix",
       [](const std::string&) -> std::shared_ptr<Env> {
         return std::make_shared<FaultInjectionEnv>(PosixEnv());
       }},
  };
  return backends;
}

}  // namespace evident
