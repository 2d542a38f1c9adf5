// `evident baseline import`: a snapshot of the owner's subjects imported as a consumer's
// projections (evident/baseline.h), all of the file or none of it. This file parses flags and
// formats.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/text.h"
#include "evident/baseline.h"
#include "evident/clock.h"
#include "evident/config.h"
#include "evident/store.h"

namespace evident::cli {
namespace {

// A snapshot line longer than this is refused (a subject's state and fields, not an archive).
constexpr size_t kBaselineLineBytesMax = size_t{1} << 20;

struct ImportFlags {
  std::string config, store, consumer, input;
};

// Imports every line of `in` in one transaction; a bad line or a conflict rolls all of it back.
int Import(const ImportFlags& flags, std::istream& in, Store& store) {
  auto tx = store.Begin();
  if (!tx.ok()) {
    std::cerr << "evident baseline import: " << tx.status().ToString() << "\n";
    return kExitUsage;
  }
  const std::string origin =
      flags.input == "-" ? "stdin" : std::filesystem::path(flags.input).filename().string();
  const int64_t now_ms = SystemClock().NowMs();
  int64_t counts[3] = {0, 0, 0};
  std::string line;
  for (int64_t number = 1; ReadLineBounded(in, line, kBaselineLineBytesMax); ++number) {
    if (line.empty()) continue;
    if (line.size() > kBaselineLineBytesMax) {
      std::cerr << "evident baseline import: line " << number << ": longer than "
                << kBaselineLineBytesMax << " bytes; nothing was imported\n";
      return kExitNegative;
    }
    auto entry = ParseBaselineLine(line);
    auto outcome = entry.ok() ? ImportBaseline(**tx, flags.consumer, *entry, origin, now_ms)
                              : Result<BaselineOutcome>(entry.status());
    if (!outcome.ok()) {
      std::cerr << "evident baseline import: line " << number << ": " << outcome.status().message()
                << "; nothing was imported\n";
      return outcome.status().code() == Code::kInvalidArgument ? kExitNegative : kExitUsage;
    }
    if (*outcome == BaselineOutcome::kConflict) {
      std::cerr << "evident baseline import: line " << number << ": " << flags.consumer
                << " already has a projection of " << Printable(entry->subject)
                << " at another version; nothing was imported\n";
      return kExitNegative;
    }
    ++counts[static_cast<size_t>(*outcome)];
  }
  if (in.bad()) {
    std::cerr << "evident baseline import: cannot read " << flags.input << "\n";
    return kExitUsage;
  }
  if (Status committed = (*tx)->Commit(); !committed.ok()) {
    std::cerr << "evident baseline import: " << committed.ToString() << "\n";
    return kExitUsage;
  }
  std::printf("imported %lld baseline(s) for %s, %lld already there\n",
              static_cast<long long>(counts[0]), Printable(flags.consumer).c_str(),
              static_cast<long long>(counts[1]));
  return kExitOk;
}

int RunImport(const ImportFlags& flags) {
  auto config = LoadConfig(flags.config);
  if (!config.ok()) {
    std::cerr << "evident baseline import: " << config.status().ToString() << "\n";
    return kExitUsage;
  }
  const ConsumerConfig* consumer = config->Find(flags.consumer);
  if (consumer == nullptr || !consumer->contract.ordering.by_subject) {
    std::cerr << "evident baseline import: " << flags.consumer
              << (consumer == nullptr ? " is not a consumer of " + flags.config
                                      : std::string(" is not ordered by subject: it has no "
                                                    "versions to start from"))
              << "\n";
    return kExitUsage;
  }
  std::ifstream file;
  NoteTerminalInput(flags.input, "baseline import");
  std::istream* in = OpenInput(flags.input, file);
  if (in == nullptr) {
    std::cerr << "evident baseline import: cannot open " << flags.input << "\n";
    return kExitUsage;
  }
  auto store = OpenStore(flags.store);
  if (!store.ok()) {
    std::cerr << "evident baseline import: " << store.status().ToString() << "\n";
    return kExitUsage;
  }
  return Import(flags, *in, **store);
}

}  // namespace

void AddBaselineCommands(CLI::App& app, Runner& run) {
  CLI::App* cmd = app.add_subcommand("baseline", "Baselines for consumers that join late.");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<ImportFlags>();
  CLI::App* sub = cmd->add_subcommand(
      "import",
      "Import a snapshot (NDJSON: subject, version, state, fields) as a consumer's "
      "projections: all of it, or none when a line is bad or conflicts.");
  sub->add_option("input", flags->input, "Snapshot file, or - for standard input")->required();
  sub->add_option("--config", flags->config, "evident.yaml")->required();
  sub->add_option("--store", flags->store, StoreHelp())->required();
  sub->add_option("--consumer", flags->consumer, "The consumer the baseline is for")->required();
  sub->callback([flags, &run] { run = [flags] { return RunImport(*flags); }; });
}

}  // namespace evident::cli
