// `evident contracts push|list|show`: contracts kept in a store (stored_contracts.h). Push
// checks a directory and keeps it as the store's next set; list and show read the sets back.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "compat/report.h"
#include "core/rfc3339.h"
#include "evident/clock.h"
#include "evident/store.h"
#include "evident/stored_contracts.h"
#include "json/files.h"
#include "json/writer.h"

namespace evident::cli {
namespace {

struct PushFlags {
  std::string store, contracts, format = "text";
  std::string profile = "cloudevents", profile_file, schema_version_at, subject_version_at;
  int64_t partitions = 1;
  int64_t event_bytes_max = int64_t{1} << 20;
  bool repartition = false;
};

struct ReadFlags {
  std::string store, file, format = "text";
  int64_t version = 0;
  int64_t rows_max = 100;
};

int Fail(std::string_view command, const Status& status) {
  std::cerr << "evident contracts " << command << ": " << status.ToString() << "\n";
  return kExitUsage;
}

// A read-only view of the store, with the store it reads kept alive beside it.
struct View {
  std::unique_ptr<Store> store;
  std::unique_ptr<Snapshot> snapshot;
};
Result<View> ReadStore(const std::string& uri) {
  View view;
  EVIDENT_ASSIGN_OR_RETURN(view.store, OpenStore(uri, {.read_only = true}));
  EVIDENT_ASSIGN_OR_RETURN(view.snapshot, view.store->Read());
  return view;
}

Result<AppendSettings> SettingsOf(const PushFlags& flags) {
  AppendSettings settings{.profile = flags.profile,
                          .schema_version_at = flags.schema_version_at,
                          .subject_version_at = flags.subject_version_at,
                          .partition_count = flags.partitions,
                          .event_bytes_max = flags.event_bytes_max};
  if (!flags.profile_file.empty()) {
    EVIDENT_ASSIGN_OR_RETURN(settings.profile_json,
                             ReadFileToString(flags.profile_file, kProfileBytesMax));
    settings.profile.clear();
  }
  EVIDENT_RETURN_IF_ERROR(ProfileOf(settings).status().Annotate(flags.profile_file));
  return settings;
}

std::string PushText(const ContractsPush& push) {
  switch (push.outcome) {
    case PushOutcome::kPushed:
      return "pushed contracts v" + std::to_string(push.version) + " (" +
             std::to_string(push.files) + " files, " + push.digest + ")\n";
    case PushOutcome::kUnchanged:
      return "unchanged: the store's contracts v" + std::to_string(push.version) +
             " hold these files and settings (" + push.digest + ")\n";
    case PushOutcome::kRefused:
      break;
  }
  return compat::LintToText(push.findings) + "refused: nothing was pushed\n";
}

std::string PushJson(const ContractsPush& push) {
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("outcome", PushOutcomeName(push.outcome));
  w.Key("version");
  push.version == 0 ? w.Null() : w.Int(push.version);
  w.Field("digest", push.digest).Key("files").Int(push.files).Key("findings").BeginArray();
  for (const LintFinding& f : push.findings) {
    w.BeginObject().Field("code", f.code).Field("file", f.file).Field("message", f.message);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return out + "\n";
}

int RunPush(const PushFlags& flags) {
  const Result<AppendSettings> settings = SettingsOf(flags);
  if (!settings.ok()) return Fail("push", settings.status());
  Result<std::unique_ptr<Store>> store = OpenStore(flags.store);
  if (!store.ok()) return Fail("push", store.status());
  const Result<ContractsPush> push = PushContractsDir(
      **store, flags.contracts,
      ContractsPushOptions{.settings = *settings, .repartition = flags.repartition},
      SystemClock().NowMs());
  if (!push.ok()) return Fail("push", push.status());
  if (!WriteStdout(flags.format == "json" ? PushJson(*push) : PushText(*push)) ||
      std::fflush(stdout) != 0) {
    return Fail("push",
                Status::IoError("cannot write the result" +
                                (push->outcome == PushOutcome::kPushed
                                     ? " (contracts v" + std::to_string(push->version) +
                                           " were pushed: evident contracts list shows them)"
                                     : std::string())));
  }
  return push->outcome == PushOutcome::kRefused ? kExitNegative : kExitOk;
}

void SetJson(const StoredContracts& set, const AppendSettings* settings,
             const std::map<std::string, std::string>* files, std::string& out) {
  json::Writer w(out);
  w.BeginObject().Key("version").Int(set.version).Key("pushed_at_ms").Int(set.pushed_at_ms);
  w.Field("pushed_at", rfc3339::FormatMs(set.pushed_at_ms)).Field("digest", set.digest);
  if (settings != nullptr) w.Key("settings").Raw(AppendSettingsJson(*settings));
  if (files != nullptr) {
    w.Key("files").BeginArray();
    for (const auto& [path, text] : *files) {
      w.BeginObject().Field("path", path).Key("bytes").Int(static_cast<int64_t>(text.size()));
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  out.push_back('\n');
}

int RunList(const ReadFlags& flags) {
  Result<View> view = ReadStore(flags.store);
  if (!view.ok()) return Fail("list", view.status());
  const Result<std::vector<StoredContracts>> sets =
      view->snapshot->ContractsHistory(flags.rows_max);
  if (!sets.ok()) return Fail("list", sets.status());
  std::string out;
  if (flags.format != "json") {
    out = sets->empty() ? "no contracts pushed\n" : "VERSION  PUSHED AT                 DIGEST\n";
  }
  for (const StoredContracts& set : *sets) {
    if (flags.format == "json") {
      SetJson(set, nullptr, nullptr, out);
      continue;
    }
    std::string version = std::to_string(set.version);
    version.resize(std::max<size_t>(version.size() + 1, 9), ' ');
    out += version + rfc3339::FormatMs(set.pushed_at_ms) + "  " + set.digest + "\n";
  }
  return WriteStdout(out) ? kExitOk : Fail("list", Status::IoError("cannot write the list"));
}

std::string ShowText(const StoredContracts& set, const AppendSettings& s,
                     const std::map<std::string, std::string>& files) {
  std::string out = "contracts v" + std::to_string(set.version) + ", pushed " +
                    rfc3339::FormatMs(set.pushed_at_ms) + "\ndigest              " + set.digest +
                    "\nprofile             " + (s.profile_json.empty() ? s.profile : "(given)") +
                    "\nschema version at   " +
                    (s.schema_version_at.empty() ? "(the profile's)" : s.schema_version_at) +
                    "\nsubject version at  " +
                    (s.subject_version_at.empty() ? "(the profile's)" : s.subject_version_at) +
                    "\npartitions          " + std::to_string(s.partition_count) +
                    "\nevent bytes max     " + std::to_string(s.event_bytes_max) + "\nfiles\n";
  for (const auto& [path, text] : files) {
    out += "  " + path + " (" + std::to_string(text.size()) + " bytes)\n";
  }
  return out;
}

int RunShow(const ReadFlags& flags) {
  Result<View> view = ReadStore(flags.store);
  if (!view.ok()) return Fail("show", view.status());
  const Result<std::optional<StoredContracts>> set = view->snapshot->ContractsAt(flags.version);
  if (!set.ok()) return Fail("show", set.status());
  if (!set->has_value()) {
    return Fail("show", Status::NotFound(flags.version == 0 ? "the store holds no contracts"
                                                            : "the store holds no contracts v" +
                                                                  std::to_string(flags.version)));
  }
  const Result<AppendSettings> settings = ParseAppendSettings((*set)->settings);
  const Result<std::map<std::string, std::string>> files =
      settings.ok() ? FilesOf(**set)
                    : Result<std::map<std::string, std::string>>(settings.status());
  if (!files.ok()) return Fail("show", files.status());
  std::string out;
  if (!flags.file.empty()) {
    const auto it = files->find(flags.file);
    if (it == files->end()) {
      return Fail("show", Status::NotFound("contracts v" + std::to_string((*set)->version) +
                                           " hold no file " + flags.file));
    }
    out = it->second;
  } else if (flags.format == "json") {
    SetJson(**set, &*settings, &*files, out);
  } else {
    out = ShowText(**set, *settings, *files);
  }
  return WriteStdout(out) ? kExitOk : Fail("show", Status::IoError("cannot write the set"));
}

void AddPush(CLI::App& contracts, Runner& run) {
  auto flags = std::make_shared<PushFlags>();
  CLI::App* cmd = contracts.add_subcommand(
      "push",
      "Check a contracts directory (lint, adapters, each new schema version under its type's "
      "compatibility mode, every version pushed before kept byte for byte) and keep it, with the "
      "append settings, as the store's next set. Exit 0 pushed or unchanged, 1 refused, 2 "
      "usage or I/O.");
  cmd->add_option("--store", flags->store, StoreHelp())->required();
  cmd->add_option("--contracts", flags->contracts, "The contracts directory")->required();
  cmd->add_option("--profile", flags->profile, "Envelope profile: cloudevents, flat, ...")
      ->capture_default_str();
  cmd->add_option("--profile-file", flags->profile_file, "Envelope profile as JSON")
      ->excludes("--profile");
  cmd->add_option("--schema-version-at", flags->schema_version_at,
                  "JSON Pointer of the schema version, e.g. /data/schemaVersion");
  cmd->add_option("--subject-version-at", flags->subject_version_at,
                  "JSON Pointer of the owner's version of the subject, e.g. /data/orderVersion");
  cmd->add_option("--partitions", flags->partitions, "Partitions, by a hash of the subject")
      ->check(IntegerFrom(1, 1 << 16))
      ->capture_default_str();
  cmd->add_option("--event-bytes-max", flags->event_bytes_max, "Largest event, in bytes")
      ->check(IntegerFrom(int64_t{64} << 10, int64_t{64} << 20))
      ->capture_default_str();
  cmd->add_flag("--repartition", flags->repartition,
                "Allow a partition count other than the latest set's (let the relay send what is "
                "pending first: a subject's old and new rows would be in different partitions)");
  AddFormatOption(*cmd, flags->format);
  cmd->callback([flags, &run] { run = [flags] { return RunPush(*flags); }; });
}

}  // namespace

void AddContractStoreCommands(CLI::App& app, Runner& run) {
  CLI::App* contracts = SharedSubcommand(app, "contracts", kContractsHelp);
  AddPush(*contracts, run);
  auto list = std::make_shared<ReadFlags>();
  CLI::App* list_cmd =
      contracts->add_subcommand("list", "The contract sets a store keeps, newest first.");
  list_cmd->add_option("--store", list->store, StoreHelp())->required();
  list_cmd->add_option("--limit", list->rows_max, "Sets shown at most")
      ->check(IntegerFrom(1, 1'000'000))
      ->capture_default_str();
  AddFormatOption(*list_cmd, list->format);
  list_cmd->callback([list, &run] { run = [list] { return RunList(*list); }; });

  auto show = std::make_shared<ReadFlags>();
  CLI::App* show_cmd = contracts->add_subcommand(
      "show", "One contract set: its settings and files, or one file's text (--file).");
  show_cmd->add_option("--store", show->store, StoreHelp())->required();
  show_cmd->add_option("--version", show->version, "The set (default: the latest)")
      ->check(IntegerFrom(1, int64_t{1} << 62));
  show_cmd->add_option("--file", show->file, "Print this file of the set, e.g. consumers/x.yaml");
  AddFormatOption(*show_cmd, show->format);
  show_cmd->callback([show, &run] { run = [show] { return RunShow(*show); }; });
}

}  // namespace evident::cli
