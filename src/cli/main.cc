// evident — the command-line tool. See README.md and docs/cli.md.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "evident/store.h"

int main(int argc, char** argv) {
  using namespace evident::cli;
  evident::ConfigureSqliteProcess();
  CLI::App app{"evident: event contracts with evidence", "evident"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "evident 0.1.0");
  Runner run;
  AddValidateCommand(app, run);
  AddSchemaCommand(app, run);
  AddConsumeCommand(app, run);
  AddEvidenceCommands(app, run);
  AddContractEvolutionCommands(app, run);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (!run) {
    std::cerr << "evident: no command chosen\n";
    return kExitUsage;
  }
  const int exit_code = run();
  std::fflush(stdout);
  return exit_code;
}
