// store/store_backends.h — the Store backends the conformance suite runs against (test-only).
//
// A backend joins the suite by adding itself to StoreBackends() (store_backends.cc); every test
// of store_conformance_test.cc then runs against it unchanged (RocksDB's env_basic_test pattern).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "evident/store.h"

namespace evident {

struct StoreBackend {
  std::string name;  // part of the test names: letters, digits and underscores
  // Opens the store kept in `dir`: fresh and empty the first time, the same one after a restart
  // (the earlier store destroyed), or a second store on it while the first is open (a second
  // process). `dir` exists; the suite empties it before each test. A backend takes from
  // `options` what it has (StoreOptions::deciders), and sets its own short lock wait.
  std::function<Result<std::unique_ptr<Store>>(const std::filesystem::path& dir,
                                               const StoreOptions& options)>
      open;
  // It keeps consumer groups (store_groups.h); one that does not refuses them.
  bool keeps_groups = true;
};

// gtest prints a parameter it cannot format as raw bytes, padding included (valgrind reports the
// read of uninitialised memory); the name is what a reader wants anyway.
inline void PrintTo(const StoreBackend& backend, std::ostream* out) { *out << backend.name; }

// Every backend built into this test binary.
std::vector<StoreBackend> StoreBackends();

}  // namespace evident
