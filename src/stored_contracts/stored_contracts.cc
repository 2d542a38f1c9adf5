// Contracts kept in the store (evident/stored_contracts.h): a push reads the directory, runs
// lint, the compatibility gate and the checks against the latest set inside one transaction,
// and keeps the files whole; a producer reads a set back into an Outbox.
#include "evident/stored_contracts.h"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "contract/contract_yaml.h"
#include "contract/schema_file.h"
#include "core/digest.h"
#include "evident/adapter.h"
#include "json/files.h"
#include "json/writer.h"

namespace evident {

namespace fs = std::filesystem;

std::string AppendSettingsJson(const AppendSettings& s) {
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("profile", s.profile).Field("profile_json", s.profile_json);
  w.Field("schema_version_at", s.schema_version_at);
  w.Field("subject_version_at", s.subject_version_at);
  w.Key("partitions").Int(s.partition_count).Key("event_bytes_max").Int(s.event_bytes_max);
  w.EndObject();
  return out;
}

Result<AppendSettings> ParseAppendSettings(std::string_view json_text) {
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(json_text.data(), json_text.size()).get(object) != simdjson::SUCCESS) {
    return Status::Corruption("a stored set's settings are not a JSON object");
  }
  AppendSettings s;
  std::string_view text;
  const auto text_of = [&](const char* key, std::string& out) {
    if (object[key].get(text) == simdjson::SUCCESS) out.assign(text);
  };
  text_of("profile", s.profile);
  text_of("profile_json", s.profile_json);
  text_of("schema_version_at", s.schema_version_at);
  text_of("subject_version_at", s.subject_version_at);
  int64_t number = 0;
  if (object["partitions"].get(number) == simdjson::SUCCESS) s.partition_count = number;
  if (object["event_bytes_max"].get(number) == simdjson::SUCCESS) s.event_bytes_max = number;
  return s;
}

Result<Profile> ProfileOf(const AppendSettings& s) {
  Result<Profile> profile =
      s.profile_json.empty() ? Profile::Named(s.profile) : Profile::FromJson(s.profile_json);
  if (!profile.ok()) return profile;
  for (const std::string* pointer : {&s.schema_version_at, &s.subject_version_at}) {
    if (!pointer->empty() && !IsValidJsonPointer(*pointer)) {
      return Status::InvalidArgument("'" + *pointer + "' is not a JSON Pointer");
    }
  }
  if (!s.schema_version_at.empty()) profile = profile->WithSchemaVersionAt(s.schema_version_at);
  if (!s.subject_version_at.empty()) {
    profile = profile->WithAttributeAt("subjectversion", s.subject_version_at);
  }
  return profile;
}

std::string_view PushOutcomeName(PushOutcome outcome) {
  switch (outcome) {
    case PushOutcome::kPushed:
      return "pushed";
    case PushOutcome::kUnchanged:
      return "unchanged";
    case PushOutcome::kRefused:
      return "refused";
  }
  return "unknown";
}

namespace {

using Files = std::map<std::string, std::string>;

bool Kept(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".json" || ext == ".yaml" || ext == ".yml";
}

// Every .json, .yaml and .yml file below `dir` (hidden files and directories aside), by its
// path relative to `dir` with '/' separators, within the options' bounds; every file walked
// counts toward files_max, and a file is measured before it is read. A link is a finding: a set
// holds files, and the loader and lint would follow a link the walk does not. Sets `cut` when a
// bound stopped the walk (the files read are then not the directory).
}  // namespace

Result<Files> ReadSetFiles(const std::string& dir, const ContractsPushOptions& options,
                           std::vector<LintFinding>& findings, bool& cut) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound("no contracts directory at " + dir);
  Files files;
  int64_t bytes = 0, walked = 0;
  const auto too_many = [&] {
    cut = true;
    findings.push_back({"TOO_MANY_FILES", dir,
                        "more than " + std::to_string(options.files_max) + " files or " +
                            std::to_string(options.bytes_max) + " bytes to keep"});
  };
  auto it = fs::recursive_directory_iterator(dir, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path path = it->path();
    if (path.filename().string().starts_with('.')) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (++walked > options.files_max) return too_many(), files;
    if (it->is_symlink(ec)) {
      findings.push_back({"SYMLINK", path.string(), "a link: push the files themselves"});
      continue;
    }
    if (!it->is_regular_file(ec) || !Kept(path)) continue;
    const auto size = static_cast<int64_t>(fs::file_size(path, ec));
    if (ec) break;
    if (bytes + size > options.bytes_max) return too_many(), files;
    EVIDENT_ASSIGN_OR_RETURN(std::string text,
                             ReadFileToString(path.string(), static_cast<size_t>(size)));
    bytes += static_cast<int64_t>(text.size());
    if (!simdjson::validate_utf8(text.data(), text.size())) {
      findings.push_back({"FILE_NOT_UTF8", path.string(), "a contract file is UTF-8 text"});
      continue;
    }
    files.emplace(path.lexically_relative(dir).generic_string(), std::move(text));
  }
  if (ec) return Status::IoError("cannot list " + dir + ": " + ec.message());
  return files;
}

namespace {

// The mode of each type: compatibility.yaml's `types`, else its `default`, else backward.
struct Modes {
  CompatMode fallback = CompatMode::kBackward;
  std::map<std::string, CompatMode, std::less<>> by_type;
  CompatMode Of(std::string_view type) const {
    const auto it = by_type.find(type);
    return it == by_type.end() ? fallback : it->second;
  }
};

void ParseModeInto(const YAML::Node& node, const std::string& origin, CompatMode& mode,
                   std::vector<LintFinding>& findings) {
  const Result<CompatMode> parsed =
      node.IsScalar() ? ParseCompatMode(node.Scalar())
                      : Result<CompatMode>(Status::InvalidArgument("a mode is a word"));
  if (parsed.ok()) {
    mode = *parsed;
  } else {
    findings.push_back(
        {"COMPATIBILITY_INVALID", origin,
         "line " + std::to_string(node.Mark().line + 1) + ": " + parsed.status().message()});
  }
}

Modes ReadModes(const Files& files, const std::string& origin, std::vector<LintFinding>& findings) {
  Modes modes;
  const auto it = files.find("compatibility.yaml");
  if (it == files.end()) return modes;
  const Result<YAML::Node> root = LoadYaml(it->second, origin);
  if (!root.ok() || !root->IsMap()) {
    findings.push_back(
        {"COMPATIBILITY_INVALID", origin, root.ok() ? "not a mapping" : root.status().message()});
    return modes;
  }
  for (const auto& entry : *root) {
    const std::string key = entry.first.Scalar();
    if (key == "default") {
      ParseModeInto(entry.second, origin, modes.fallback, findings);
    } else if (key == "types" && entry.second.IsMap()) {
      for (const auto& type : entry.second) {
        ParseModeInto(type.second, origin, modes.by_type[type.first.Scalar()], findings);
      }
    } else {
      findings.push_back({"COMPATIBILITY_INVALID", origin,
                          "unknown key '" + key + "' (default, types: TYPE: MODE)"});
    }
  }
  return modes;
}

// The schema files of a set: type -> version -> path.
std::map<std::string, std::map<int64_t, std::string>> SchemaPaths(const Files& files) {
  std::map<std::string, std::map<int64_t, std::string>> out;
  for (const auto& [path, text] : files) {
    const std::optional<SchemaFile> schema_file = SchemaFileOf(path);
    if (schema_file && schema_file->version > 0)
      out[schema_file->type][schema_file->version] = path;
  }
  return out;
}

}  // namespace

std::string SetFilesJson(const Files& files) {
  std::string out;
  json::Writer w(out);
  w.BeginObject();
  for (const auto& [path, text] : files) w.Field(path, text);
  w.EndObject();
  return out;
}

namespace {

// Every JSON file the latest set holds stays, byte for byte: a schema version, and any file a
// schema may $ref (a change there would change the versions already pushed).
void CheckAgainstLatest(const Files& latest, int64_t latest_version, const Files& files,
                        std::vector<LintFinding>& findings) {
  const std::string set = "the store's set v" + std::to_string(latest_version);
  for (const auto& [path, text] : latest) {
    if (!path.ends_with(".json")) continue;
    const auto now = files.find(path);
    if (now == files.end()) {
      findings.push_back({"SCHEMA_VERSION_REMOVED", path,
                          set + " holds " + path +
                              ": a pushed schema stays (producers may have written against it)"});
    } else if (now->second != text) {
      findings.push_back(
          {"SCHEMA_VERSION_CHANGED", path,
           set + " holds another " + path + ": publish the change as a new version"});
    }
  }
}

// The partition count stays unless the push says otherwise: a subject's rows pending in its old
// partition and its new ones in another could be published out of order.
void CheckPartitions(const StoredContracts& latest, const ContractsPushOptions& options,
                     std::vector<LintFinding>& findings) {
  const Result<AppendSettings> before = ParseAppendSettings(latest.settings);
  if (!before.ok() || options.repartition ||
      before->partition_count == options.settings.partition_count) {
    return;
  }
  findings.push_back({"PARTITIONS_CHANGED", "--partitions",
                      "the store's set v" + std::to_string(latest.version) + " has " +
                          std::to_string(before->partition_count) + " partitions, not " +
                          std::to_string(options.settings.partition_count) +
                          ": let the relay send what is pending first, then push with "
                          "repartition (--repartition)"});
}

// The set as a producer will read it: its schemas compile and its settings hold.
void CheckUsable(const StoredContracts& candidate, const std::string& dir,
                 std::vector<LintFinding>& findings) {
  Result<OutboxOptions> options = OutboxOptionsOf(candidate);
  const Status usable = options.ok() ? Outbox::Create(*options).status() : options.status();
  if (!usable.ok()) findings.push_back({"SET_UNUSABLE", dir, usable.message()});
}

// Each version the latest set does not hold yet, checked under its type's mode.
Status CheckCompatibility(const ContractsDir& dir, const Modes& modes, const Files& latest,
                          const DiffOptions& options, std::vector<LintFinding>& findings) {
  const auto held = SchemaPaths(latest);
  for (const auto& [type, versions] : dir.schemas) {
    const CompatMode mode = modes.Of(type);
    EVIDENT_ASSIGN_OR_RETURN(const EvolutionReport report,
                             CheckEvolution(dir, type, mode, options));
    for (const VersionCheck& check : report.checks) {
      const auto type_held = held.find(type);
      const bool old_pair =
          type_held != held.end() && type_held->second.contains(check.new_version);
      if (check.compatible || old_pair) continue;
      std::string codes;
      for (const Change& change : check.diff.changes) {
        if (change.CompatibleUnder(mode)) continue;
        codes += (codes.empty() ? "" : ", ") + std::string(ChangeCodeName(change.code)) + " at " +
                 (change.pointer.empty() ? "/" : change.pointer);
      }
      findings.push_back({"INCOMPATIBLE_VERSION", dir.SchemaPath(type, check.new_version),
                          type + " v" + std::to_string(check.new_version) + " is not " +
                              std::string(CompatModeName(mode)) + "-compatible with v" +
                              std::to_string(check.old_version) + ": " + codes});
    }
  }
  return Status::Ok();
}

// A mode names a type of the directory, and a type's mode changes in a push of its own: a push
// that eased a mode and added a version the old mode refuses would pass its own gate.
void CheckModes(const ContractsDir& dir, const Modes& modes, const Files& latest,
                const std::string& origin, std::vector<LintFinding>& findings) {
  for (const auto& [type, mode] : modes.by_type) {
    if (!dir.schemas.contains(type)) {
      findings.push_back({"COMPATIBILITY_INVALID", origin, "no type '" + type + "' here"});
    }
  }
  if (latest.empty()) return;
  std::vector<LintFinding> ignored;
  const Modes before = ReadModes(latest, origin, ignored);
  const auto held = SchemaPaths(latest);
  for (const auto& [type, versions] : dir.schemas) {
    const auto type_held = held.find(type);
    const bool adds = std::any_of(versions.begin(), versions.end(), [&](const auto& v) {
      return type_held == held.end() || !type_held->second.contains(v.first);
    });
    if (!adds || modes.Of(type) == before.Of(type) || type_held == held.end()) continue;
    findings.push_back({"COMPATIBILITY_CHANGED_WITH_VERSION", origin,
                        type + "'s mode changes from " +
                            std::string(CompatModeName(before.Of(type))) + " to " +
                            std::string(CompatModeName(modes.Of(type))) +
                            " in the push that adds a version of it: push the mode first"});
  }
}

// Lint (adapters included) and the compatibility gate: the checks that need no earlier set.
Status CheckDirectory(const std::string& dir, const Files& files, const Files& latest,
                      const ContractsPushOptions& options, std::vector<LintFinding>& findings) {
  EVIDENT_ASSIGN_OR_RETURN(std::vector<LintFinding> lint, LintContractsDir(dir, options.diff));
  EVIDENT_ASSIGN_OR_RETURN(std::vector<LintFinding> adapters, LintAdapters(dir));
  findings.insert(findings.end(), lint.begin(), lint.end());
  findings.insert(findings.end(), adapters.begin(), adapters.end());
  const Modes modes = ReadModes(files, (fs::path(dir) / "compatibility.yaml").string(), findings);
  if (!findings.empty()) return Status::Ok();  // a directory lint refuses is not diffed
  EVIDENT_ASSIGN_OR_RETURN(const ContractsDir contracts, LoadContractsDir(dir));
  CheckModes(contracts, modes, latest, (fs::path(dir) / "compatibility.yaml").string(), findings);
  if (!findings.empty()) return Status::Ok();
  return CheckCompatibility(contracts, modes, latest, options.diff, findings);
}

}  // namespace

Result<std::map<std::string, std::string>> FilesOf(const StoredContracts& contracts) {
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(contracts.files.data(), contracts.files.size()).get(object) !=
      simdjson::SUCCESS) {
    return Status::Corruption("the files of contract set v" + std::to_string(contracts.version) +
                              " are not a JSON object");
  }
  Files files;
  for (const auto field : object) {
    std::string_view text;
    if (field.value.get(text) != simdjson::SUCCESS) {
      return Status::Corruption("contract set v" + std::to_string(contracts.version) +
                                " holds a file that is not text");
    }
    files.emplace(std::string(field.key), std::string(text));
  }
  return files;
}

Result<OutboxOptions> OutboxOptionsOf(const StoredContracts& contracts) {
  EVIDENT_ASSIGN_OR_RETURN(const AppendSettings settings, ParseAppendSettings(contracts.settings));
  EVIDENT_ASSIGN_OR_RETURN(Profile profile, ProfileOf(settings));
  OutboxOptions options{.profile = std::move(profile),
                        .partition_count = settings.partition_count,
                        .event_bytes_max = settings.event_bytes_max};
  EVIDENT_ASSIGN_OR_RETURN(options.contracts_files, FilesOf(contracts));
  if (options.contracts_files.empty()) {
    return Status::Corruption("contract set v" + std::to_string(contracts.version) +
                              " holds no file");
  }
  return options;
}

namespace {

// Every check of a push against the directory's files and the latest set (read in a snapshot:
// no write lock is held while lint and the diffs run).
Status CheckPush(Store& store, const std::string& dir, const Files& files, bool cut,
                 const ContractsPushOptions& options, const StoredContracts& candidate,
                 std::optional<StoredContracts>& latest, ContractsPush& push) {
  {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
    EVIDENT_ASSIGN_OR_RETURN(latest, snapshot->ContractsAt(0));
  }
  Files latest_files;
  if (latest) {
    EVIDENT_ASSIGN_OR_RETURN(latest_files, FilesOf(*latest));
  }
  if (push.findings.empty()) {
    EVIDENT_RETURN_IF_ERROR(CheckDirectory(dir, files, latest_files, options, push.findings));
  }
  if (latest && !cut) {
    CheckAgainstLatest(latest_files, latest->version, files, push.findings);
    CheckPartitions(*latest, options, push.findings);
  }
  if (push.findings.empty()) CheckUsable(candidate, dir, push.findings);
  return Status::Ok();
}

}  // namespace

Result<ContractsPush> PushContractsDir(Store& store, const std::string& dir,
                                       const ContractsPushOptions& options, int64_t now_ms) {
  EVIDENT_RETURN_IF_ERROR(ProfileOf(options.settings).status());
  ContractsPush push;
  bool cut = false;
  EVIDENT_ASSIGN_OR_RETURN(const Files files, ReadSetFiles(dir, options, push.findings, cut));
  push.files = static_cast<int64_t>(files.size());
  // The set to keep; its number and time are given when it is pushed.
  StoredContracts candidate{.settings = AppendSettingsJson(options.settings),
                            .files = SetFilesJson(files)};
  candidate.digest = Sha256Digest(candidate.files + "\n" + candidate.settings);
  push.digest = candidate.digest;
  std::optional<StoredContracts> latest;
  EVIDENT_RETURN_IF_ERROR(CheckPush(store, dir, files, cut, options, candidate, latest, push));
  if (!push.findings.empty()) {
    push.outcome = PushOutcome::kRefused;
    return push;
  }
  if (latest && latest->digest == push.digest) {
    push.outcome = PushOutcome::kUnchanged;
    push.version = latest->version;
    return push;
  }
  // Lint and the loader read the directory again: what they checked must be what is kept.
  std::vector<LintFinding> ignored;
  bool cut_again = false;
  EVIDENT_ASSIGN_OR_RETURN(const Files again, ReadSetFiles(dir, options, ignored, cut_again));
  if (again != files) {
    return Status::Aborted(dir + " changed while it was checked; push again");
  }
  // The set checked against must still be the latest (PushContracts refuses otherwise).
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
  candidate.version = latest ? latest->version + 1 : 1;
  candidate.pushed_at_ms = now_ms;
  EVIDENT_ASSIGN_OR_RETURN(push.version, tx->PushContracts(candidate));
  EVIDENT_RETURN_IF_ERROR(tx->Commit());
  push.outcome = PushOutcome::kPushed;
  return push;
}

Result<Outbox*> StoredOutbox::For(Transaction& transaction) {
  EVIDENT_ASSIGN_OR_RETURN(const int64_t latest, transaction.LatestContractsVersion());
  if (latest == 0) {
    return Status::FailedPrecondition(
        "the store holds no contracts (push them with `evident contracts push`)");
  }
  if (latest == version_ && outbox_ != nullptr) return outbox_.get();
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<StoredContracts> set,
                           transaction.ContractsAt(latest));
  if (!set) return Status::Corruption("contract set v" + std::to_string(latest) + " is missing");
  EVIDENT_ASSIGN_OR_RETURN(const OutboxOptions options, OutboxOptionsOf(*set));
  Result<std::unique_ptr<Outbox>> outbox = Outbox::Create(options);
  if (!outbox.ok()) return outbox.status().Annotate("contract set v" + std::to_string(latest));
  outbox_ = std::move(outbox).value();
  version_ = latest;
  return outbox_.get();
}

}  // namespace evident
