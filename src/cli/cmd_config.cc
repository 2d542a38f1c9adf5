// `evident config check` and `evident config schema`: the configuration file, described and
// checked (every problem at once: CheckConfig, evident/config.h).
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "evident/config.h"
#include "json/writer.h"

namespace evident::cli {
namespace {

struct CheckFlags {
  std::string config;
  std::string format = "text";
};

std::string ProblemsToText(const std::string& path, const std::vector<ConfigProblem>& problems) {
  if (problems.empty()) return path + ": no problems\n";
  std::string out;
  for (const ConfigProblem& p : problems) {
    out += p.file + (p.line > 0 ? ":" + std::to_string(p.line) : std::string()) + ": " + p.code +
           ": " + p.message + "\n";
  }
  return out + std::to_string(problems.size()) + " problem(s)\n";
}

std::string ProblemsToJson(const std::vector<ConfigProblem>& problems) {
  std::string text;
  json::Writer out(text);
  out.BeginObject().Field("clean", problems.empty()).Key("problems").BeginArray();
  for (const ConfigProblem& p : problems) {
    out.BeginObject().Field("code", p.code).Field("file", p.file);
    if (p.line > 0) out.Field("line", p.line);
    out.Field("message", p.message).EndObject();
  }
  out.EndArray().EndObject();
  return text + "\n";
}

int RunCheck(const CheckFlags& flags) {
  const std::vector<ConfigProblem> problems = CheckConfig(flags.config);
  const bool unreadable = problems.size() == 1 && problems[0].code == "CONFIG_UNREADABLE";
  if (!WriteStdout(flags.format == "json" ? ProblemsToJson(problems)
                                          : ProblemsToText(flags.config, problems))) {
    return kExitUsage;  // main() reports the failed write
  }
  if (unreadable) return kExitUsage;
  return problems.empty() ? kExitOk : kExitNegative;
}

}  // namespace

void AddConfigCommands(CLI::App& app, Runner& run) {
  CLI::App* config =
      app.add_subcommand("config", "The configuration file (evident.yaml): check, schema.");
  config->require_subcommand(1);
  auto flags = std::make_shared<CheckFlags>();
  CLI::App* check = config->add_subcommand(
      "check",
      "Report every problem of a configuration at once, each with its file and line: its YAML, "
      "its JSON Schema (`config schema`), what consume and serve would refuse, undeclared reads, "
      "and `contracts lint` of its contracts directory. Exit 0 clean, 1 problems, 2 unreadable "
      "or usage.");
  check->add_option("--config", flags->config, "The configuration file")->required();
  AddFormatOption(*check, flags->format);
  check->callback([flags, &run] { run = [flags] { return RunCheck(*flags); }; });
  CLI::App* schema = config->add_subcommand(
      "schema",
      "Print the JSON Schema (2020-12) of evident.yaml, for editors: with yaml-language-server, "
      "a first line `# yaml-language-server: $schema=FILE` checks and completes as you type.");
  schema->callback([&run] {
    run = [] { return WriteStdout(std::string(ConfigSchemaJson())) ? kExitOk : kExitUsage; };
  });
}

}  // namespace evident::cli
