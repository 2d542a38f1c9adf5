// evident — the command-line tool. See README.md and docs/cli.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "evident/registry.h"

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

// An option or positional given the empty string: an unset shell variable, nearly always, and
// never a meaningful path, prefix or name (an empty --boundary refused every source, an empty
// --outcomes ran without outcomes, an empty --input opened the store first). Empty when none.
std::string EmptyValue(const CLI::App& app) {
  for (const CLI::App* at = &app; at != nullptr;) {
    for (const CLI::Option* option : at->get_options()) {
      if (option->get_expected_min() == 0 || option->count() == 0) continue;  // flags
      const auto& given = option->results();
      if (std::find(given.begin(), given.end(), "") != given.end()) {
        const std::string name = option->get_name(/*positional=*/false, /*all_options=*/false);
        return (name.front() == '-' ? name : "the argument <" + name + ">") +
               " was given an empty value (an unset variable?)";
      }
    }
    const auto chosen = at->get_subcommands();
    at = chosen.empty() ? nullptr : chosen.front();
  }
  return "";
}

// "--outcomes=" with nothing after the '=': CLI11 then takes the next argument as the value
// ("--outcomes= --resume" wrote the outcomes to a file named --resume and did not resume), so
// it is refused before CLI11 reads it. Empty when there is none.
std::string EmptyAssignment(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;  // positionals from here
    if (arg.size() > 3 && arg.starts_with("--") && arg.find('=') == arg.size() - 1) {
      return std::string(arg.substr(0, arg.size() - 1)) +
             " was given an empty value (an unset variable?)";
    }
  }
  return "";
}

// Levenshtein distance, for "did you mean": command names are short, so the quadratic table
// is a few hundred cells.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Options before a command: fine when a command of `at` follows them (the group's own options)
// or the option is --help, -h or --version; otherwise the command is missing, which CLI11 reports
// as "A subcommand is required".
std::string CommandAfterOptions(const CLI::App& at, const std::string& path, int argc, char** argv,
                                int first) {
  if (at.get_require_subcommand_min() == 0) return "";
  std::string names;
  for (const CLI::App* c :
       at.get_subcommands([](const CLI::App* c) { return !c->get_name().empty(); })) {
    names += (names.empty() ? "" : ", ") + c->get_name();
    for (int i = first; i < argc; ++i) {
      if (c->check_name(argv[i])) return "";
    }
  }
  for (int i = first; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "--version") return "";
  }
  return path + ": a command is needed before its options: " + names + " (see " + path + " --help)";
}

// The words before the first option name commands, each one of its parent's, as long as the
// parent needs one. CLI11 reports a misspelt or missing one as "A subcommand is required"; this
// names the word, the closest command and the choices instead. Empty when there is no such
// problem (CLI11 then parses as usual).
std::string CommandProblem(const CLI::App& app, int argc, char** argv) {
  const CLI::App* at = &app;
  std::string path = "evident";
  for (int i = 1;; ++i) {
    // Option groups are nameless subcommands in CLI11: not commands.
    const std::vector<const CLI::App*> commands =
        at->get_subcommands([](const CLI::App* c) { return !c->get_name().empty(); });
    if (commands.empty()) return "";
    if (i < argc && argv[i][0] == '-') return CommandAfterOptions(*at, path, argc, argv, i);
    std::string names, closest;
    size_t closest_distance = 3;  // suggest within two edits only
    const CLI::App* next = nullptr;
    for (const CLI::App* c : commands) {
      names += (names.empty() ? "" : ", ") + c->get_name();
      if (i < argc && c->check_name(argv[i])) next = c;
      const size_t d = i < argc ? EditDistance(argv[i], c->get_name()) : closest_distance;
      if (d < closest_distance) closest_distance = d, closest = c->get_name();
    }
    if (next != nullptr) {
      path += " " + next->get_name();
      at = next;
      continue;
    }
    if (at->get_require_subcommand_min() == 0) return "";  // the word is its positional
    if (i >= argc) return path + ": a command is needed: " + names + " (see " + path + " --help)";
    return path + ": no command '" + std::string(argv[i]) + "'" +
           (closest.empty() ? "." : "; did you mean '" + closest + "'?") + " Commands: " + names;
  }
}

// The version and every backend built in, by role: what this binary can open.
std::string VersionText() {
  std::string text = "evident 0.1.0\nbuilt in:";
  const std::vector<evident::BackendInfo> backends = evident::BuiltInBackends();
  size_t width = 0;  // the longest usage's, so that the summaries line up
  for (const evident::BackendInfo& b : backends) width = std::max(width, b.usage.size());
  for (const evident::BackendInfo& b : backends) {
    const char* role = b.role == evident::BackendRole::kStore    ? "store"
                       : b.role == evident::BackendRole::kSource ? "source"
                                                                 : "publisher";
    text += "\n  " + std::string(role) + std::string(11 - std::strlen(role), ' ');
    text += std::string(b.usage) + std::string(width + 1 - b.usage.size(), ' ');
    text += b.summary;
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace evident::cli;
  evident::ConfigureBackendsForProcess();
  CLI::App app{"evident: event contracts with evidence", "evident"};
  app.require_subcommand(1);
  app.set_version_flag("--version", VersionText());
  Runner run;
  AddValidateCommand(app, run);
  AddSchemaCommand(app, run);
  AddConsumeCommand(app, run);
  AddEvidenceCommands(app, run);
  AddContractEvolutionCommands(app, run);
  AddContractStoreCommands(app, run);
  AddConsumerStoreCommands(app, run);
  AddOutboxCommands(app, run);
  AddRelayCommand(app, run);
  AddQuarantineCommands(app, run);
  AddBaselineCommands(app, run);
  AddProjectionCommands(app, run);
  AddReplayRequestsCommands(app, run);
  AddEffectsCommands(app, run);
  AddStoreCommands(app, run);
  AddGroupCommands(app, run);
  AddServeCommand(app, run);
  AddConfigCommands(app, run);

  int exit_code = kExitUsage;
  if (const std::string problem = CommandProblem(app, argc, argv); !problem.empty()) {
    std::cerr << problem << "\n";
    return FinishStdout(exit_code);
  }
  if (const std::string empty = EmptyAssignment(argc, argv); !empty.empty()) {
    std::cerr << "evident: " << empty << "\n";
    return FinishStdout(exit_code);
  }
  try {
    app.parse(argc, argv);
    if (const std::string empty = EmptyValue(app); !empty.empty()) {
      std::cerr << "evident: " << empty << "\n";
    } else if (const std::string clash = StdinClash(app); !clash.empty()) {
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
