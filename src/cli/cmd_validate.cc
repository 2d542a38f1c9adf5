// `evident validate`: envelope validation of events from a file or standard input.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "evident/envelope.h"
#include "json/files.h"
#include "json/writer.h"

namespace evident::cli {
namespace {

struct ValidateFlags {
  std::string input = "-";
  std::string profile = "cloudevents";
  std::string profile_file;
  std::string schema_version_at;
  std::vector<std::string> boundary;
  bool require_schema_version = false;
  size_t event_bytes_max = size_t{1} << 20;
  size_t input_bytes_max = size_t{1} << 30;
};

Result<Profile> ChooseProfile(const ValidateFlags& flags) {
  Result<Profile> profile = Status::Internal("unset");
  if (!flags.profile_file.empty()) {
    EVIDENT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(flags.profile_file, 1 << 20));
    profile = Profile::FromJson(text);
  } else {
    profile = Profile::Named(flags.profile);
  }
  if (!profile.ok() || flags.schema_version_at.empty()) return profile;
  if (!IsValidJsonPointer(flags.schema_version_at)) {
    return Status::InvalidArgument("--schema-version-at must be a JSON Pointer");
  }
  return profile->WithSchemaVersionAt(flags.schema_version_at);
}

int RunValidate(const ValidateFlags& flags) {
  Result<Profile> profile = ChooseProfile(flags);
  if (!profile.ok()) {
    std::cerr << "evident validate: " << profile.status().ToString() << "\n";
    return kExitUsage;
  }
  auto parser = EnvelopeParser::Create({.event_bytes_max = flags.event_bytes_max,
                                        .source_boundary = flags.boundary,
                                        .require_schema_version = flags.require_schema_version,
                                        .profile = std::move(profile).value()});
  if (!parser.ok()) {
    std::cerr << "evident validate: " << parser.status().ToString() << "\n";
    return kExitUsage;
  }
  Result<std::string> input = ReadFileToString(flags.input, flags.input_bytes_max);
  if (!input.ok()) {
    std::cerr << "evident validate: " << input.status().ToString() << "\n";
    return kExitUsage;
  }
  const SplitInput split = SplitEvents(*input, (*parser)->options().nesting_depth_max);
  bool any_rejected = false;
  std::string line;
  for (const InputSlice& slice : split.slices) {
    const EnvelopeParser::Outcome outcome = (*parser)->Parse(slice.bytes);
    line.clear();
    json::Writer out(line);
    out.BeginObject().Key("index").Uint(slice.index);
    if (outcome.ok()) {
      out.Field("id", outcome.event.id).Field("source", outcome.event.source);
      out.Field("type", outcome.event.type);
      if (outcome.event.schemaversion) out.Key("schemaversion").Int(*outcome.event.schemaversion);
      out.Field("outcome", "valid");
    } else {
      any_rejected = true;
      const Rejection& r = *outcome.rejection;
      if (!r.id.empty()) out.Field("id", r.id);
      if (!r.source.empty()) out.Field("source", r.source);
      out.Field("outcome", "rejected").Field("reason", ReasonCode(r.reason));
      out.Field("message", r.message);
    }
    out.EndObject();
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  return any_rejected ? kExitNegative : kExitOk;
}

}  // namespace

void AddValidateCommand(CLI::App& app, Runner& run) {
  auto flags = std::make_shared<ValidateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Validate CloudEvents envelopes: NDJSON (one event per line), one JSON object, or a "
      "batch array. One NDJSON result line per event; exit 0 all valid, 1 any rejected, "
      "2 usage or I/O error.");
  cmd->add_option("input", flags->input, "Input file, or - for standard input")
      ->capture_default_str();
  cmd->add_option("--profile", flags->profile, "Envelope profile: cloudevents or flat")
      ->capture_default_str();
  cmd->add_option("--profile-file", flags->profile_file, "Envelope profile from a JSON file");
  cmd->add_option("--schema-version-at", flags->schema_version_at,
                  "JSON Pointer of the schema version, e.g. /data/schemaVersion");
  cmd->add_option("--boundary", flags->boundary, "Allowed source prefix (repeatable)");
  cmd->add_flag("--require-schema-version", flags->require_schema_version,
                "Reject events without a schema version");
  cmd->add_option("--event-bytes-max", flags->event_bytes_max, "Largest accepted event in bytes")
      ->capture_default_str();
  cmd->callback([flags, &run] { run = [flags] { return RunValidate(*flags); }; });
}

}  // namespace evident::cli
