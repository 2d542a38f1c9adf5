// evident — the command-line tool. See README.md and docs/cli.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "evident/store_sqlite.h"

namespace {

// Exit 0 means everything was written: a full disk or a closed pipe on standard output is an
// I/O error, even when the command itself succeeded. fclose reports what fflush cannot (an
// error surfacing at close, as on NFS).
int FinishStdout(int exit_code) {
  std::cout.flush();
  errno = 0;
  const bool written = std::cout.good() && std::fflush(stdout) == 0 && !std::ferror(stdout);
  const int flush_errno = errno;
  if (std::fclose(stdout) != 0 || !written) {
    const int error = flush_errno != 0 ? flush_errno : errno;
    std::fprintf(stderr, "evident: cannot write standard output: %s\n",
                 error != 0 ? std::strerror(error) : "write error (a full disk, a closed pipe?)");
    return evident::cli::kExitUsage;
  }
  return exit_code;
}

// Standard input can be read once: "-" given to two options that read it, or to one while the
// input is left at its default "-", would hand the second reader nothing (a schema read from
// it, then no instances). Empty when at most one option reads it. ("-" for --outcomes and
// --to is standard output.)
std::string StdinClash(const CLI::App& app) {
  const CLI::App* leaf = &app;
  while (!leaf->get_subcommands().empty()) leaf = leaf->get_subcommands().front();
  const CLI::Option* from = leaf->get_option_no_throw("--from");
  const bool from_broker = from != nullptr && from->count() > 0;
  std::vector<std::string> readers;
  for (const CLI::Option* option : leaf->get_options()) {
    const std::string name = option->get_name();
    if (name == "--outcomes" || name == "--to") continue;
    if (option->count() > 0) {
      const auto& given = option->results();
      if (std::find(given.begin(), given.end(), "-") != given.end()) readers.push_back(name);
    } else if (option->get_default_str() == "-" && !from_broker) {
      readers.push_back(name + " (not given, so standard input)");
    }
  }
  if (readers.size() < 2) return "";
  return "standard input can be read once, but " + readers[0] + " and " + readers[1] +
         " would both read it; name a file for one of them";
}

}  // namespace

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
  AddOutboxCommands(app, run);
  AddRelayCommand(app, run);
  AddQuarantineCommands(app, run);
  AddBaselineCommands(app, run);
  AddEffectsCommands(app, run);
  AddStoreCommands(app, run);
  AddGroupCommands(app, run);
  AddServeCommand(app, run);

  int exit_code = kExitUsage;
  try {
    app.parse(argc, argv);
    if (const std::string clash = StdinClash(app); !clash.empty()) {
      std::cerr << "evident: " << clash << "\n";
    } else if (run) {
      exit_code = run();
    } else {
      std::cerr << "evident: no command chosen\n";
    }
  } catch (const CLI::ParseError& e) {
    // --help and --version are answers on standard output: checked like any other below.
    exit_code = app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  return FinishStdout(exit_code);
}
