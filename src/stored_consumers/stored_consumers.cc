#include "evident/stored_consumers.h"

#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include "core/digest.h"
#include "evident/env.h"
#include "json/files.h"
#include "json/writer.h"

namespace evident {
namespace fs = std::filesystem;

namespace {

using Files = std::map<std::string, std::string>;

// The names a consumer set gives the files it keeps: the configuration, its profile file, and
// each file of its contracts directory under kContractsPrefix.
constexpr std::string_view kConfigName = "config.yaml";
constexpr std::string_view kProfileName = "profile.json";
constexpr std::string_view kContractsPrefix = "contracts/";
constexpr size_t kConfigBytesMax = size_t{16} << 20;

// What a configuration is decided with, read from its files.
struct ConsumerSource {
  std::string config_text;
  Files contracts;           // the contracts directory's files, by relative path
  std::string profile_text;  // the profile file's, or empty
  Config config;
};

Result<ConsumerSource> ReadSource(const std::string& config_path,
                                  const ConsumersPushOptions& options,
                                  std::vector<ConfigProblem>& problems) {
  ConsumerSource out;
  EVIDENT_ASSIGN_OR_RETURN(out.config_text, ReadFileToString(config_path, kConfigBytesMax));
  EVIDENT_ASSIGN_OR_RETURN(out.config, LoadConfig(config_path));
  std::vector<LintFinding> findings;
  bool cut = false;
  EVIDENT_ASSIGN_OR_RETURN(out.contracts,
                           ReadSetFiles(out.config.contracts_dir,
                                        ContractsPushOptions{.files_max = options.files_max,
                                                             .bytes_max = options.bytes_max},
                                        findings, cut));
  for (LintFinding& f : findings) {
    problems.push_back(ConfigProblem{.code = f.code, .file = f.file, .message = f.message});
  }
  if (!out.config.profile_file.empty()) {
    EVIDENT_ASSIGN_OR_RETURN(out.profile_text,
                             ReadFileToString(out.config.profile_file, kConfigBytesMax));
  }
  return out;
}

// The consumer's entry of the file, emitted again (comments and layout aside).
std::string EntryText(const YAML::Node& root, std::string_view id) {
  const YAML::Node consumers = root["consumers"];
  if (!consumers || !consumers.IsSequence()) return {};
  for (const YAML::Node& entry : consumers) {
    if (entry.IsMap() && entry["id"] && entry["id"].as<std::string>() == id) {
      YAML::Emitter out;
      out << entry;
      return out.c_str();
    }
  }
  return {};
}

// Each consumer's digest: of its entry, its contract file, the schemas of what it accepts, the
// adapters and the profile, each part named and length-prefixed.
Result<std::map<std::string, std::string>> DigestsOf(const ConsumerSource& source) {
  YAML::Node root;
  try {
    root = YAML::Load(source.config_text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("the configuration does not parse: ") + e.what());
  }
  std::string shared;
  const auto part = [](std::string& out, std::string_view name, std::string_view text) {
    out += name;
    out += ' ';
    out += std::to_string(text.size());
    out += '\n';
    out += text;
    out += '\n';
  };
  // The settings every consumer is decided with (the envelope's profile and limits), emitted
  // again without the consumers.
  YAML::Node settings = YAML::Clone(root);
  if (settings.IsMap()) settings.remove("consumers");
  YAML::Emitter emitted;
  emitted << settings;
  part(shared, "settings", emitted.c_str());
  part(shared, "profile_file", source.profile_text);
  // The types each consumer accepts: the schema folders of the others' types are theirs alone.
  std::set<std::string> types;
  for (const ConsumerConfig& consumer : source.config.consumers) {
    for (const AcceptedType& accepted : consumer.contract.accepts) types.insert(accepted.type);
  }
  std::map<std::string, std::string> out;
  for (const ConsumerConfig& consumer : source.config.consumers) {
    const std::string& id = consumer.contract.id;
    std::set<std::string> own;
    for (const AcceptedType& accepted : consumer.contract.accepts) own.insert(accepted.type);
    std::string material = shared;
    part(material, "entry", EntryText(root, id));
    // Every file but the other consumers' contracts and the schemas of types it does not accept
    // (a schema may $ref any other file: those stay in).
    for (const auto& [path, text] : source.contracts) {
      const std::string folder = path.substr(0, path.find('/'));
      if (folder == "consumers" && path != "consumers/" + id + ".yaml" &&
          path != "consumers/" + id + ".yml") {
        continue;
      }
      if (types.contains(folder) && !own.contains(folder)) continue;
      part(material, path, text);
    }
    out.emplace(id, Sha256Digest(material));
  }
  return out;
}

std::string SettingsJson(const ConsumerSource& source,
                         const std::map<std::string, std::string>& digests,
                         const std::string& config_path) {
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("config", config_path).Key("consumers").BeginObject();
  for (const ConsumerConfig& consumer : source.config.consumers) {
    w.Field(consumer.contract.id, digests.at(consumer.contract.id));
  }
  w.EndObject().EndObject();
  return out;
}

// The consumer digests a stored set's settings record.
Result<std::map<std::string, std::string>> StoredDigests(const StoredContracts& set) {
  simdjson::dom::parser parser;
  simdjson::dom::object consumers;
  if (parser.parse(set.settings).at_key("consumers").get(consumers) != simdjson::SUCCESS) {
    return Status::Corruption("consumer set v" + std::to_string(set.version) +
                              " records no consumers");
  }
  std::map<std::string, std::string> out;
  for (const auto field : consumers) {
    std::string_view digest;
    if (field.value.get(digest) != simdjson::SUCCESS) {
      return Status::Corruption("consumer set v" + std::to_string(set.version) +
                                " records a digest that is not text");
    }
    out.emplace(std::string(field.key), std::string(digest));
  }
  return out;
}

std::string SetFilesJsonOf(const ConsumerSource& source) {
  Files files;
  files.emplace(kConfigName, source.config_text);
  if (!source.config.profile_file.empty()) files.emplace(kProfileName, source.profile_text);
  for (const auto& [path, text] : source.contracts) {
    files.emplace(std::string(kContractsPrefix) + path, text);
  }
  return SetFilesJson(files);
}

// The set's files in `env` below `dir`; a name that would leave it is corruption.
Status WriteFiles(Env& env, const std::string& dir, const Files& files, int64_t version) {
  for (const auto& [name, text] : files) {
    const fs::path relative = fs::path(name).lexically_normal();
    // Only names in their normal form: "contracts/../config.yaml" would overwrite another.
    if (relative.is_absolute() || relative.empty() || *relative.begin() == ".." ||
        relative.generic_string() != name) {
      return Status::Corruption("consumer set v" + std::to_string(version) +
                                " holds a file outside its directory: " + name);
    }
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                             env.NewWritableFile(dir + "/" + name));
    EVIDENT_RETURN_IF_ERROR(file->Append(text));
    EVIDENT_RETURN_IF_ERROR(file->Close());
  }
  return Status::Ok();
}

}  // namespace

Result<ConsumersPush> PushConsumersConfig(Store& store, const std::string& config_path,
                                          const ConsumersPushOptions& options, int64_t now_ms) {
  ConsumersPush push;
  push.problems = CheckConfig(config_path);
  if (!push.problems.empty()) return push;
  EVIDENT_ASSIGN_OR_RETURN(const ConsumerSource source,
                           ReadSource(config_path, options, push.problems));
  if (!push.problems.empty()) return push;
  for (const ConsumerConfig& c : source.config.consumers) push.consumers.push_back(c.contract.id);
  EVIDENT_ASSIGN_OR_RETURN(const auto digests, DigestsOf(source));
  StoredContracts candidate{.settings = SettingsJson(source, digests, config_path),
                            .files = SetFilesJsonOf(source)};
  candidate.digest = Sha256Digest(candidate.files);
  push.digest = candidate.digest;
  // The set must build as the deciders will build it.
  if (const auto built = PipelineOf(candidate); !built.ok()) {
    push.problems.push_back(ConfigProblem{
        .code = "SET_UNUSABLE", .file = config_path, .message = built.status().message()});
    return push;
  }
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<StoredContracts> latest,
                           tx->SetAt(SetKind::kConsumers, 0));
  if (latest && latest->digest == candidate.digest) {
    EVIDENT_RETURN_IF_ERROR(tx->Rollback());
    push.outcome = PushOutcome::kUnchanged;
    push.version = latest->version;
    return push;
  }
  candidate.version = latest ? latest->version + 1 : 1;
  candidate.pushed_at_ms = now_ms;
  EVIDENT_ASSIGN_OR_RETURN(push.version, tx->PushSet(SetKind::kConsumers, candidate));
  EVIDENT_RETURN_IF_ERROR(tx->Commit());
  push.outcome = PushOutcome::kPushed;
  return push;
}

// The set's files are put in an Env in memory and loaded from there as `consume` loads a file;
// the pipeline reads every file while it is built, so the Env goes with this call.
Result<std::unique_ptr<Pipeline>> PipelineOf(const StoredContracts& set) {
  EVIDENT_ASSIGN_OR_RETURN(const Files files, FilesOf(set));
  if (!files.contains(std::string(kConfigName))) {
    return Status::Corruption("consumer set v" + std::to_string(set.version) +
                              " holds no configuration");
  }
  const std::unique_ptr<Env> env = NewMemoryEnv();
  const std::string dir = "/consumer-set";
  EVIDENT_RETURN_IF_ERROR(WriteFiles(*env, dir, files, set.version));
  EVIDENT_RETURN_IF_ERROR(env->CreateDir(dir + "/contracts"));  // a set may hold no contract file
  ConfigOptions load;
  load.env = env.get();
  load.contracts_dir = dir + "/contracts";
  // Always the set's own profile file: a configuration naming another path (or one the set does
  // not hold) reads nothing outside the set, and fails as a missing file.
  load.profile_file = dir + "/" + std::string(kProfileName);
  const std::string name = "consumer set v" + std::to_string(set.version);
  Result<Config> config = LoadConfig(dir + "/" + std::string(kConfigName), load);
  if (!config.ok()) return config.status().Annotate(name);
  config->path = name;
  Result<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(*config);
  if (!pipeline.ok()) return pipeline.status().Annotate(name);
  return pipeline;
}

Result<std::unique_ptr<Pipeline>> LatestStoredPipeline(ContractReads& reads) {
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<StoredContracts> set,
                           reads.SetAt(SetKind::kConsumers, 0));
  if (!set) {
    return Status::NotFound(
        "the store holds no consumers (push them with `evident consumers push --config F`, or "
        "give --config)");
  }
  return PipelineOf(*set);
}

Result<std::map<std::string, std::string>> ConsumerDigests(const std::string& config_path) {
  std::vector<ConfigProblem> problems;
  EVIDENT_ASSIGN_OR_RETURN(const ConsumerSource source, ReadSource(config_path, {}, problems));
  if (!problems.empty()) return Status::InvalidArgument(problems.front().message);
  return DigestsOf(source);
}

Status CheckConfigAgainstStore(Store& store, const std::string& config_path) {
  std::optional<StoredContracts> latest;
  {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
    EVIDENT_ASSIGN_OR_RETURN(const int64_t version,
                             snapshot->LatestSetVersion(SetKind::kConsumers));
    if (version == 0) return Status::Ok();
    EVIDENT_ASSIGN_OR_RETURN(latest, snapshot->SetAt(SetKind::kConsumers, version));
  }
  if (!latest) return Status::Ok();
  EVIDENT_ASSIGN_OR_RETURN(const auto stored, StoredDigests(*latest));
  EVIDENT_ASSIGN_OR_RETURN(const auto here, ConsumerDigests(config_path));
  for (const auto& [id, digest] : here) {
    const auto it = stored.find(id);
    if (it == stored.end() || it->second == digest) continue;
    return Status::FailedPrecondition(
        "consumer '" + id + "' of " + config_path + " (digest " + digest.substr(0, 12) +
        ") is not the store's: consumer set v" + std::to_string(latest->version) +
        " holds another version of it (digest " + it->second.substr(0, 12) +
        "); the store decides with its own: push this configuration (`evident consumers push`) "
        "or run with the pushed one");
  }
  return Status::Ok();
}

Result<Pipeline*> Decider::For(Transaction& tx) {
  // The latest set's number and digest, without its files: a set pushed again under a number
  // already seen (a store restored or created anew) is built again.
  EVIDENT_ASSIGN_OR_RETURN(const std::vector<StoredContracts> newest,
                           tx.SetHistory(SetKind::kConsumers, 1));
  if (newest.empty()) {
    return Status::NotFound(
        "the store holds no consumers (push them with `evident consumers push --config F`)");
  }
  const int64_t latest = newest.front().version;
  if (latest == version_ && newest.front().digest == digest_ && pipeline_ != nullptr) {
    return pipeline_.get();
  }
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<StoredContracts> set,
                           tx.SetAt(SetKind::kConsumers, latest));
  if (!set) return Status::Corruption("consumer set v" + std::to_string(latest) + " is missing");
  Result<std::unique_ptr<Pipeline>> pipeline = PipelineOf(*set);
  if (!pipeline.ok()) {
    return Status::FailedPrecondition(pipeline.status().message());
  }
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<PreparedEvent> slot, (*pipeline)->NewPreparedEvent());
  pipeline_ = std::move(pipeline).value();
  slot_ = std::move(slot);
  version_ = latest;
  digest_ = set->digest;
  return pipeline_.get();
}

Result<std::vector<DecidedEvent>> Decider::Decide(Transaction& tx, std::string_view consumer,
                                                  std::string_view event, int64_t now_ms) {
  EVIDENT_ASSIGN_OR_RETURN(Pipeline * pipeline, For(tx));
  if (pipeline->config().Find(consumer) == nullptr) {
    return Status::NotFound("consumer set v" + std::to_string(version_) + " holds no consumer '" +
                            std::string(consumer) + "'");
  }
  if (consumer.empty()) return Status::InvalidArgument("name the consumer to decide for");
  pipeline->Prepare(*slot_, event);
  std::vector<Decision> decisions;
  EVIDENT_RETURN_IF_ERROR(
      pipeline->DecideReading(tx, *slot_, consumer, /*index=*/0, now_ms, decisions));
  std::vector<DecidedEvent> out;
  out.reserve(decisions.size());
  for (Decision& d : decisions) {
    DecidedEvent e;
    e.event = std::move(d.read_event);
    e.schema_version = d.read_schema_version;
    e.decision = std::move(d);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace evident
