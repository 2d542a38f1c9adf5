// `evident validate`: envelope validation of events from a file or standard input.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "evident/envelope.h"
#include "evident/envelope_schema.h"
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
  bool print_schema = false;
  size_t event_bytes_max = size_t{1} << 20;
  size_t input_bytes_max = size_t{1} << 30;
};

}  // namespace

Result<Profile> ChooseProfile(const std::string& name, const std::string& profile_file,
                              const std::string& schema_version_at) {
  Result<Profile> profile = Status::Internal("unset");
  if (!profile_file.empty()) {
    profile = LoadProfileFile(profile_file);
  } else {
    profile = Profile::Named(name);
  }
  if (!profile.ok() || schema_version_at.empty()) return profile;
  if (!IsValidJsonPointer(schema_version_at)) {
    return Status::InvalidArgument("--schema-version-at must be a JSON Pointer");
  }
  return profile->WithSchemaVersionAt(schema_version_at);
}

namespace {

// One result line: the event's fields when it is valid, the reason and message when not.
void FormatResult(size_t index, const Rejection* rejection, const EventView& event,
                  std::string& out) {
  out.clear();
  json::Writer w(out);
  w.BeginObject().Key("index").Uint(index);
  if (rejection == nullptr) {
    w.Field("id", event.id).Field("source", event.source);
    w.Field("type", event.type);
    if (event.schemaversion) w.Key("schemaversion").Int(*event.schemaversion);
    w.Field("outcome", "valid");
  } else {
    if (!rejection->id.empty()) w.Field("id", rejection->id);
    if (!rejection->source.empty()) w.Field("source", rejection->source);
    w.Field("outcome", "rejected").Field("reason", ReasonCode(rejection->reason));
    w.Field("message", rejection->message);
  }
  w.EndObject();
  out.push_back('\n');
}

// Reads the input into the splitter as it arrives: read(2) returns what is there, so a live
// stream (`tail -f events | evident validate`) is validated event by event, not in 64 KiB steps,
// and the results of each read are flushed. A batch array larger than `batch_bytes_max` stops
// it with LimitExceeded (the results of the elements that ended before the limit are out
// already); a sequence of values has no total limit.
Status FeedInput(int fd, const std::string& name, size_t batch_bytes_max, EventSplitter& splitter,
                 const EventSplitter::Sink& sink) {
  constexpr size_t kChunkBytes = size_t{1} << 16;
  std::vector<char> buffer(kChunkBytes);
  uint64_t total = 0;
  while (true) {
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::IoError("error reading " + name + ": " + std::strerror(errno));
    if (got == 0) break;
    std::string_view chunk(buffer.data(), static_cast<size_t>(got));
    if (splitter.layout() != InputLayout::kNdjson && total + chunk.size() > batch_bytes_max) {
      const size_t allowed = total < batch_bytes_max ? batch_bytes_max - total : 0;
      EVIDENT_RETURN_IF_ERROR(splitter.Feed(chunk.substr(0, allowed), sink));
      total += allowed;
      chunk.remove_prefix(allowed);
      // Past the limit, whitespace adds nothing to a batch (a final newline after its ']');
      // the first other byte decides: more of a batch, or (layout still open) the first byte
      // of the input, which makes it a batch or a sequence of values.
      const size_t solid = chunk.find_first_not_of(" \t\r\n");
      const bool batch = splitter.layout() == InputLayout::kBatch ||
                         (!splitter.layout().has_value() && solid != std::string_view::npos &&
                          chunk[solid] == '[');
      if (batch && solid != std::string_view::npos) {
        return Status::LimitExceeded(name + " is a batch array larger than " +
                                     std::to_string(batch_bytes_max) +
                                     " bytes (--input-bytes-max)");
      }
    }
    total += chunk.size();
    EVIDENT_RETURN_IF_ERROR(splitter.Feed(chunk, sink));
    if (std::fflush(stdout) != 0) return Status::IoError("cannot write to standard output");
  }
  return splitter.Finish(sink);
}

// --print-schema: the chosen profile's envelope as a JSON Schema, one document and a newline;
// no input is read.
int PrintSchema(const EnvelopeOptions& options) {
  Result<std::string> schema = EnvelopeJsonSchema(options);
  if (!schema.ok()) {
    std::cerr << "evident validate: " << schema.status().ToString() << "\n";
    return kExitUsage;
  }
  schema->push_back('\n');
  if (!WriteStdout(*schema)) {
    std::cerr << "evident validate: cannot write to standard output\n";
    return kExitUsage;
  }
  return kExitOk;
}

int RunValidate(const ValidateFlags& flags) {
  Result<Profile> profile =
      ChooseProfile(flags.profile, flags.profile_file, flags.schema_version_at);
  if (!profile.ok()) {
    std::cerr << "evident validate: " << profile.status().ToString() << "\n";
    return kExitUsage;
  }
  EnvelopeOptions options{.event_bytes_max = flags.event_bytes_max,
                          .source_boundary = flags.boundary,
                          .require_schema_version = flags.require_schema_version,
                          .profile = std::move(profile).value()};
  if (flags.print_schema) return PrintSchema(options);
  auto parser = EnvelopeParser::Create(std::move(options));
  if (!parser.ok()) {
    std::cerr << "evident validate: " << parser.status().ToString() << "\n";
    return kExitUsage;
  }
  const int fd =
      flags.input == "-" ? STDIN_FILENO : ::open(flags.input.c_str(), O_RDONLY | O_CLOEXEC);
  NoteTerminalInput(flags.input, "validate");
  if (fd < 0) {
    std::cerr << "evident validate: cannot open " << flags.input << ": " << std::strerror(errno)
              << "\n";
    return kExitUsage;
  }
  // Each event is validated and its result written as soon as the splitter hands it over:
  // memory is bounded by the largest event, whatever the input's size or layout.
  bool any_rejected = false;
  std::string out;
  const EventSplitter::Sink emit = [&](const SplitEvent& split) {
    const Rejection* rejection = split.rejection ? &*split.rejection : nullptr;
    EnvelopeParser::Outcome outcome;
    if (rejection == nullptr) {
      outcome = (*parser)->Parse(split.bytes);
      if (outcome.rejection) rejection = &*outcome.rejection;
    }
    any_rejected = any_rejected || rejection != nullptr;
    FormatResult(split.index, rejection, outcome.event, out);
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) {
      return Status::IoError("cannot write to standard output");
    }
    return Status::Ok();
  };
  EventSplitter splitter(flags.event_bytes_max);
  Status status = FeedInput(fd, flags.input, flags.input_bytes_max, splitter, emit);
  if (fd != STDIN_FILENO) ::close(fd);
  if (std::fflush(stdout) != 0 && status.ok()) {
    status = Status::IoError("cannot write to standard output");
  }
  if (!status.ok()) {
    std::cerr << "evident validate: " << status.message() << "\n";
    return kExitUsage;
  }
  return any_rejected ? kExitNegative : kExitOk;
}

}  // namespace

void AddValidateCommand(CLI::App& app, Runner& run) {
  auto flags = std::make_shared<ValidateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Validate CloudEvents envelopes: NDJSON (one event per line), pretty-printed objects, or "
      "a batch array, streamed. One NDJSON result line per event; exit 0 all valid, 1 any "
      "rejected, 2 usage or I/O error.");
  CLI::Option* input = cmd->add_option("input", flags->input, "Input file, or - for standard input")
                           ->capture_default_str();
  cmd->add_option("--profile", flags->profile, "Envelope profile: cloudevents, flat or contract")
      ->capture_default_str();
  cmd->add_option("--profile-file", flags->profile_file, "Envelope profile from a JSON file")
      ->excludes("--profile");
  cmd->add_option("--schema-version-at", flags->schema_version_at,
                  "JSON Pointer of the schema version, e.g. /data/schemaVersion");
  // One value per occurrence: a trailing input file is never taken as a second prefix.
  CLI::Option* boundary =
      cmd->add_option("--boundary", flags->boundary, "Allowed source prefix (repeatable)")
          ->allow_extra_args(false);
  cmd->add_flag("--require-schema-version", flags->require_schema_version,
                "Reject events without a schema version");
  // The schema describes the envelope, not a stream: no input to read, and a boundary (a
  // consumer's, not the envelope's) it cannot carry is refused rather than silently left out.
  cmd->add_flag("--print-schema", flags->print_schema,
                "Print the profile's envelope as a JSON Schema (2020-12) and exit; reads no input")
      ->excludes(input)
      ->excludes(boundary);
  cmd->add_option("--event-bytes-max", flags->event_bytes_max, "Largest accepted event in bytes")
      ->check(IntegerFrom(int64_t{64} << 10, int64_t{64} << 20))
      ->capture_default_str();
  cmd->add_option(
         "--input-bytes-max", flags->input_bytes_max,
         "Largest batch array in bytes (exit 2 past it); other layouts have no total limit")
      ->check(IntegerFrom(1, int64_t{1} << 50))
      ->capture_default_str();
  cmd->callback([flags, &run] { run = [flags] { return RunValidate(*flags); }; });
}

}  // namespace evident::cli
