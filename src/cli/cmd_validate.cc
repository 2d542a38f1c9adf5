// `evident validate`: envelope validation of events from a file or standard input.
#include <simdjson.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
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
  std::ifstream file;
  std::istream* in = OpenInput(flags.input, file);
  if (in == nullptr) {
    std::cerr << "evident validate: cannot open " << flags.input << "\n";
    return kExitUsage;
  }
  bool any_rejected = false;
  std::string out;
  const auto emit = [&](std::string_view bytes, size_t index) {
    const EnvelopeParser::Outcome outcome = (*parser)->Parse(bytes);
    out.clear();
    json::Writer w(out);
    w.BeginObject().Key("index").Uint(index);
    if (outcome.ok()) {
      w.Field("id", outcome.event.id).Field("source", outcome.event.source);
      w.Field("type", outcome.event.type);
      if (outcome.event.schemaversion) w.Key("schemaversion").Int(*outcome.event.schemaversion);
      w.Field("outcome", "valid");
    } else {
      any_rejected = true;
      const Rejection& r = *outcome.rejection;
      if (!r.id.empty()) w.Field("id", r.id);
      if (!r.source.empty()) w.Field("source", r.source);
      w.Field("outcome", "rejected").Field("reason", ReasonCode(r.reason));
      w.Field("message", r.message);
    }
    w.EndObject();
    out.push_back('\n');
    std::fwrite(out.data(), 1, out.size(), stdout);
  };
  const auto blank = [](std::string_view line) {
    return line.find_first_not_of(" \t\r") == std::string_view::npos;
  };

  // NDJSON is validated as it streams: memory stays bounded by the longest line, not by the
  // input. The layout is NDJSON when the first non-blank line is a whole JSON value and another
  // non-blank line follows (the rule of SplitEvents). Any other input (one document, a batch
  // array, text whose first line is not whole) is read whole, up to --input-bytes-max, and split
  // by SplitEvents.
  std::string text;  // what was read, kept for the whole-input path
  std::string first, line;
  size_t line_index = 0, first_index = 0;
  const auto too_large = [&] {
    std::cerr << "evident validate: " << flags.input << " is larger than " << flags.input_bytes_max
              << " bytes\n";
    return kExitUsage;
  };
  bool have_first = false;
  while (ReadLineBounded(*in, first, flags.input_bytes_max)) {
    if (first.size() > flags.input_bytes_max) return too_large();
    first_index = line_index++;
    if (!blank(first)) {
      have_first = true;
      break;
    }
    text += first + "\n";
  }
  bool first_whole = false;
  if (have_first) {
    simdjson::dom::parser probe;
    simdjson::dom::element ignored;
    first_whole = probe.allocate(first.size(), (*parser)->options().nesting_depth_max + 1) ==
                      simdjson::SUCCESS &&
                  probe.parse(first).get(ignored) == simdjson::SUCCESS;
  }
  const size_t line_bytes_max = flags.event_bytes_max + 1;  // the parser rejects longer ones
  if (first_whole) {
    bool streaming = false;
    while (ReadLineBounded(*in, line, streaming ? line_bytes_max : flags.input_bytes_max)) {
      const size_t index = line_index++;
      if (blank(line)) continue;  // whitespace: nothing to keep for the whole-input path
      if (!streaming) {           // a second value: NDJSON
        streaming = true;
        text.clear();
        emit(first, first_index);
        first.clear();
        first.shrink_to_fit();
      }
      emit(line, index);
    }
    if (streaming) {
      if (in->bad()) {
        std::cerr << "evident validate: error reading " << flags.input << "\n";
        return kExitUsage;
      }
      return any_rejected ? kExitNegative : kExitOk;
    }
  }
  // The whole input, in memory.
  if (have_first) text += first + "\n";
  while (ReadLineBounded(*in, line, flags.input_bytes_max)) {
    if (text.size() + line.size() + 1 > flags.input_bytes_max) return too_large();
    text += line + "\n";
  }
  if (in->bad()) {
    std::cerr << "evident validate: error reading " << flags.input << "\n";
    return kExitUsage;
  }
  if (text.size() > flags.input_bytes_max) return too_large();
  const SplitInput split = SplitEvents(text, (*parser)->options().nesting_depth_max);
  for (const InputSlice& slice : split.slices) emit(slice.bytes, slice.index);
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
  cmd->add_option("--input-bytes-max", flags->input_bytes_max,
                  "Largest input read whole (one document or a batch array); NDJSON streams")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([flags, &run] { run = [flags] { return RunValidate(*flags); }; });
}

}  // namespace evident::cli
