// `evident projection correct`: a person's correction of a projection with the facts kept first
// (evident/correction.h). The work is the library's; this file parses flags and formats.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/text.h"
#include "evident/clock.h"
#include "evident/consumer.h"
#include "evident/correction.h"
#include "evident/store.h"

namespace evident::cli {
namespace {

struct CorrectFlags {
  std::string config, store;
  CorrectionRequest request;
  std::vector<std::string> fields;  // "/pointer=JSON"
};

// "/p=JSON" into (pointer, JSON); the pointer ends at the first '='.
bool SplitField(const std::string& text, std::pair<std::string, std::string>& out) {
  const size_t at = text.find('=');
  if (at == std::string::npos) return false;
  out = {text.substr(0, at), text.substr(at + 1)};
  return true;
}

std::string ResultText(const CorrectionResult& r) {
  const ProjectionCorrection& c = r.correction;
  std::string out = std::string(r.committed ? "corrected " : "would correct (dry run) ") +
                    Printable(c.consumer) + " " + Printable(c.subject) + " (" + Printable(c.basis) +
                    ")\n  before " + PrintableJson(c.before_json) + "\n  after  " +
                    PrintableJson(c.after_json) + "\n";
  out += "  gap records closed: " + std::to_string(r.gaps_closed) + "\n";
  for (const Decision& d : r.decisions) {
    out += "  " + std::string(OutcomeName(d.outcome)) + " v" +
           (d.subject_version ? std::to_string(*d.subject_version) : std::string("-")) + " " +
           Printable(d.key) + (d.drained ? " (drained)" : "") +
           (d.message.empty() ? "" : ": " + Printable(d.message)) + "\n";
  }
  return out;
}

int RunCorrect(CorrectFlags& flags) {
  for (const std::string& field : flags.fields) {
    std::pair<std::string, std::string> parsed;
    if (!SplitField(field, parsed)) {
      std::cerr << "evident projection correct: --field takes /POINTER=JSON, not "
                << Printable(field) << "\n";
      return kExitUsage;
    }
    flags.request.fields.push_back(std::move(parsed));
  }
  auto config = LoadConfig(flags.config);
  auto pipeline =
      config.ok() ? Pipeline::Create(*config) : Result<std::unique_ptr<Pipeline>>(config.status());
  auto store = pipeline.ok() ? OpenStore(flags.store, {.create = false})
                             : Result<std::unique_ptr<Store>>(pipeline.status());
  if (!store.ok()) {
    std::cerr << "evident projection correct: " << store.status().ToString() << "\n";
    return kExitUsage;
  }
  auto result = CorrectProjection(**pipeline, **store, flags.request, SystemClock());
  if (!result.ok()) {
    std::cerr << "evident projection correct: " << result.status().ToString() << "\n";
    return result.status().code() == Code::kFailedPrecondition ? kExitNegative : kExitUsage;
  }
  return WriteStdout(ResultText(*result)) ? kExitOk : kExitUsage;
}

}  // namespace

void AddProjectionCommands(CLI::App& app, Runner& run) {
  CLI::App* cmd = app.add_subcommand("projection", "A person's correction of a projection.");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<CorrectFlags>();
  CorrectionRequest& r = flags->request;
  CLI::App* sub = cmd->add_subcommand(
      "correct",
      "Set a consumer's projection of a subject to a version above its own, keeping before and "
      "after, who and why; allowed with an open gap or a quarantined input of the subject, or "
      "--force. Closes its gaps as corrected, re-examines its deferred events; intends no "
      "effect itself.");
  sub->add_option("--config", flags->config, "evident.yaml")->required();
  sub->add_option("--store", flags->store, StoreHelp())->required();
  sub->add_option("--consumer", r.consumer, "The consumer whose projection is corrected")
      ->required();
  sub->add_option("--subject", r.subject, "The subject")->required();
  sub->add_option("--version", r.version, "The corrected version: above the projection's")
      ->required()
      ->check(IntegerFrom(1, INT64_MAX));
  sub->add_option("--state", r.state, "The projection's state after the correction")->required();
  sub->add_option("--field", flags->fields,
                  "A copied field's value, /POINTER=JSON (a pointer the projection copies)");
  sub->add_option("--by", r.by, "Who corrects (kept with the correction)")->required();
  sub->add_option("--note", r.note, "Why, and what was checked (kept with it)")->required();
  sub->add_flag("--force", r.force,
                "Allowed without an open gap or a quarantined input (recorded as forced)");
  sub->add_flag("--dry-run", r.dry_run, "Show what it would do; commit nothing");
  sub->callback([flags, &run] { run = [flags] { return RunCorrect(*flags); }; });
}

}  // namespace evident::cli
