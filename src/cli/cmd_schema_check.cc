// `evident schema check` and `evident contracts lint|impact`: contract evolution as a CI gate.
//
// The `schema` and `contracts` subcommands are shared with other commands (`schema validate`):
// each Add* function takes the existing subcommand when there is one and creates it otherwise.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "compat/report.h"
#include "evident/adapter.h"
#include "evident/compat.h"
#include "evident/config.h"
#include "evident/contract.h"
#include "json/files.h"

namespace evident::cli {
namespace {

struct CheckFlags {
  std::string old_schema;
  std::string new_schema;
  std::string contracts;
  std::string type;
  std::string mode = "backward";
  std::string strictness = "lenient";
  std::string format = "text";
  std::string version_at;
  int64_t comparisons_max = DiffOptions{}.comparisons_max;
};

struct ImpactFlags {
  std::string contracts;
  std::string type;
  std::string schema;
  int64_t version = 0;  // the new schema's version; 0: from its file name (vN.schema.json)
  std::string format = "text";
};

struct LintFlags {
  std::string dir;
  std::string config;  // an evident.yaml whose consumers read DIR's contracts: its reads checked
  std::string format = "text";
};

int Fail(std::string_view command, const Status& status) {
  std::cerr << "evident " << command << ": " << status.ToString() << "\n";
  return kExitUsage;
}

void Print(const std::string& text) { (void)WriteStdout(text); }  // main() checks stdout

int RunCheck(const CheckFlags& flags) {
  constexpr std::string_view kName = "schema check";
  const bool pair = !flags.old_schema.empty() || !flags.new_schema.empty();
  const bool dir = !flags.contracts.empty() || !flags.type.empty();
  if (pair == dir || (pair && (flags.old_schema.empty() || flags.new_schema.empty())) ||
      (dir && (flags.contracts.empty() || flags.type.empty()))) {
    return Fail(kName, Status::InvalidArgument(
                           "give either OLD NEW, or --contracts DIR --type T (not both)"));
  }
  Result<CompatMode> mode = ParseCompatMode(flags.mode);
  if (!mode.ok()) return Fail(kName, mode.status());
  Result<Strictness> strictness = ParseStrictness(flags.strictness);
  if (!strictness.ok()) return Fail(kName, strictness.status());
  DiffOptions options;
  options.strictness = *strictness;
  options.version_at = flags.version_at;
  options.comparisons_max = flags.comparisons_max;
  const bool json = flags.format == "json";
  if (pair) {
    const size_t bytes_max = static_cast<size_t>(options.schema_bytes_max);
    Result<std::string> old_text = ReadFileToString(flags.old_schema, bytes_max);
    if (!old_text.ok()) return Fail(kName, old_text.status());
    Result<std::string> new_text = ReadFileToString(flags.new_schema, bytes_max);
    if (!new_text.ok()) return Fail(kName, new_text.status());
    Result<SchemaDiff> diff = DiffSchemas(*old_text, *new_text, options);
    if (!diff.ok()) return Fail(kName, diff.status());
    Print(json ? compat::DiffToJson(*diff, *mode, *strictness)
               : compat::DiffToText(*diff, *mode, *strictness));
    return diff->CompatibleUnder(*mode) ? kExitOk : kExitNegative;
  }
  Result<ContractsDir> contracts = LoadContractsDir(flags.contracts);
  if (!contracts.ok()) return Fail(kName, contracts.status());
  Result<EvolutionReport> report = CheckEvolution(*contracts, flags.type, *mode, options);
  if (!report.ok()) return Fail(kName, report.status());
  Print(json ? compat::EvolutionToJson(*report, *strictness)
             : compat::EvolutionToText(*report, *strictness));
  return report->compatible ? kExitOk : kExitNegative;
}

int RunImpact(const ImpactFlags& flags) {
  constexpr std::string_view kName = "contracts impact";
  Result<ContractsDir> contracts = LoadContractsDir(flags.contracts);
  if (!contracts.ok()) return Fail(kName, contracts.status());
  const DiffOptions options;
  Result<std::string> text =
      ReadFileToString(flags.schema, static_cast<size_t>(options.schema_bytes_max));
  if (!text.ok()) return Fail(kName, text.status());
  const int64_t version =
      flags.version > 0
          ? flags.version
          : std::max<int64_t>(0, SchemaVersionOfFileName(
                                     std::filesystem::path(flags.schema).filename().string()));
  Result<ImpactReport> report = AnalyzeImpact(*contracts, flags.type, *text, options, version);
  if (!report.ok()) return Fail(kName, report.status());
  const Status tried = CheckImpactThroughAdapters(*contracts, *text, *report);
  if (!tried.ok()) return Fail(kName, tried);
  Print(flags.format == "json" ? compat::ImpactToJson(*report) : compat::ImpactToText(*report));
  return report->all_safe ? kExitOk : kExitNegative;
}

// The configuration's undeclared reads (UndeclaredReads) as UNDECLARED_READ findings. The
// configuration must read its contracts from `dir`: otherwise the findings would be of others.
Status LintConfigReads(const std::string& dir, const std::string& path,
                       std::vector<LintFinding>& findings) {
  Result<Config> config = LoadConfig(path, {.check_reads = false});
  if (!config.ok()) return config.status();
  std::error_code error;
  if (!std::filesystem::equivalent(dir, config->contracts_dir, error) || error) {
    return Status::InvalidArgument(path + " reads its contracts from " + config->contracts_dir +
                                   ", not " + dir);
  }
  for (const UndeclaredRead& read : UndeclaredReads(*config)) {
    findings.push_back({"UNDECLARED_READ", path, DescribeUndeclaredRead(read)});
  }
  return Status::Ok();
}

int RunLint(const LintFlags& flags) {
  Result<std::vector<LintFinding>> findings = LintContractsDir(flags.dir);
  if (!findings.ok()) return Fail("contracts lint", findings.status());
  Result<std::vector<LintFinding>> adapters = LintAdapters(flags.dir);
  if (!adapters.ok()) return Fail("contracts lint", adapters.status());
  findings->insert(findings->end(), adapters->begin(), adapters->end());
  if (!flags.config.empty()) {
    const Status checked = LintConfigReads(flags.dir, flags.config, *findings);
    if (!checked.ok()) return Fail("contracts lint", checked);
  }
  Print(flags.format == "json" ? compat::LintToJson(*findings) : compat::LintToText(*findings));
  return findings->empty() ? kExitOk : kExitNegative;
}

void AddSchemaCheck(CLI::App& app, Runner& run) {
  CLI::App* schema = SharedSubcommand(app, "schema", "Payload schemas: validate and check");
  auto flags = std::make_shared<CheckFlags>();
  CLI::App* cmd = schema->add_subcommand(
      "check",
      "Check that a new schema version is compatible with an old one (OLD NEW), or every version "
      "of a type in a contracts directory (--contracts DIR --type T). Exit 0 compatible, "
      "1 incompatible, 2 usage, I/O or unparseable schema.");
  cmd->add_option("old", flags->old_schema, "The old schema file");
  cmd->add_option("new", flags->new_schema, "The new schema file");
  cmd->add_option("--contracts", flags->contracts, "A contracts directory");
  cmd->add_option("--type", flags->type, "The event type whose versions to check");
  cmd->add_option("--mode", flags->mode,
                  "backward, forward, full, none, backward-transitive, forward-transitive, "
                  "full-transitive")
      ->capture_default_str();
  cmd->add_option("--strictness", flags->strictness, "lenient or strict")->capture_default_str();
  AddFormatOption(*cmd, flags->format);
  cmd->add_option("--version-at", flags->version_at,
                  "Data JSON Pointer of the version marker (default: /schemaVersion)")
      ->check(JsonPointer());
  cmd->add_option("--comparisons-max", flags->comparisons_max,
                  "Most subschema comparisons before giving up")
      ->check(IntegerFrom(1, int64_t{1} << 40))
      ->capture_default_str();
  cmd->callback([flags, &run] { run = [flags] { return RunCheck(*flags); }; });
}

void AddContracts(CLI::App& app, Runner& run) {
  CLI::App* contracts = SharedSubcommand(app, "contracts", kContractsHelp);
  auto lint = std::make_shared<LintFlags>();
  CLI::App* lint_cmd = contracts->add_subcommand(
      "lint", "Report every problem in a contracts directory. Exit 0 clean, 1 findings, 2 usage.");
  lint_cmd->add_option("dir", lint->dir, "The contracts directory")->required();
  lint_cmd->add_option("--config", lint->config,
                       "An evident.yaml reading DIR: also report what its projections, adapters "
                       "and effect templates read beyond their contracts' reads");
  AddFormatOption(*lint_cmd, lint->format);
  lint_cmd->callback([lint, &run] { run = [lint] { return RunLint(*lint); }; });

  auto impact = std::make_shared<ImpactFlags>();
  CLI::App* impact_cmd = contracts->add_subcommand(
      "impact",
      "For every consumer of a type: safe, or contract-update-required with the reasons per "
      "field it reads. Exit 0 all safe, 1 any update required, 2 usage.");
  impact_cmd->add_option("--contracts", impact->contracts, "The contracts directory")->required();
  impact_cmd->add_option("--type", impact->type, "The event type")->required();
  impact_cmd->add_option("--schema", impact->schema, "The new schema file")->required();
  impact_cmd
      ->add_option("--version", impact->version,
                   "The new schema's version (default: N of a file named vN.schema.json); "
                   "a consumer that reads it via_adapter is safe through its adapter")
      ->check(CLI::Range(int64_t{1}, int64_t{999'999'999}));
  AddFormatOption(*impact_cmd, impact->format);
  impact_cmd->callback([impact, &run] { run = [impact] { return RunImpact(*impact); }; });
}

}  // namespace

CLI::App* SharedSubcommand(CLI::App& app, const std::string& name, const std::string& help) {
  try {
    return app.get_subcommand(name);
  } catch (const CLI::OptionNotFound&) {
    CLI::App* cmd = app.add_subcommand(name, help);
    cmd->require_subcommand(1);
    return cmd;
  }
}

void AddContractEvolutionCommands(CLI::App& app, Runner& run) {
  AddSchemaCheck(app, run);
  AddContracts(app, run);
}

}  // namespace evident::cli
