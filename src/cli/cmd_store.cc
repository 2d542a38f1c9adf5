// `evident store migrate`: brings a store's schema to the layout this build writes.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "evident/store.h"

namespace evident::cli {
namespace {

struct MigrateFlags {
  std::string store;
};

int RunMigrate(const MigrateFlags& flags) {
  const Result<StoreMigration> done = MigrateStore(flags.store);
  if (!done.ok()) {
    std::cerr << "evident store migrate: " << done.status().ToString() << "\n";
    return kExitUsage;
  }
  std::string line = "store at layout " + std::to_string(done->layout);
  if (done->layout_before) {
    line += *done->layout_before == 0 ? " (created)"
            : *done->layout_before == done->layout
                ? " (already)"
                : " (was " + std::to_string(*done->layout_before) + ")";
  }
  line += "\n";
  return WriteStdout(line) ? kExitOk : kExitUsage;
}

}  // namespace

void AddStoreCommands(CLI::App& app, Runner& run) {
  CLI::App* store = app.add_subcommand("store", "The store itself: its schema.");
  store->require_subcommand(1);
  auto migrate = std::make_shared<MigrateFlags>();
  CLI::App* cmd = store->add_subcommand(
      "migrate",
      "Bring the store's tables to the layout this build writes (creating them when absent). "
      "A PostgreSQL store is migrated only by this command, once every process sharing it runs "
      "this build. Exit 0 done, 2 refused (a newer layout) or unreachable.");
  cmd->add_option("--store", migrate->store, StoreHelp())->required();
  cmd->callback([migrate, &run] { run = [migrate] { return RunMigrate(*migrate); }; });
}

}  // namespace evident::cli
