#include "evident/contract.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cassert>
#include <filesystem>
#include <set>

#include "contract/contract_yaml.h"
#include "evident/profile.h"
#include "json/files.h"

namespace evident {
namespace {

// yaml-cpp reports errors by exception; they stop at this module's boundary.
struct ContractError {
  std::string message;
};

[[noreturn]] void Fail(std::string_view origin, const YAML::Node& node, const std::string& what) {
  std::string where(origin);
  if (node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
  throw ContractError{where + ": " + what};
}

std::string String(std::string_view origin, const YAML::Node& node, const std::string& name) {
  if (!node.IsScalar()) Fail(origin, node, "'" + name + "' must be a string");
  return node.as<std::string>();
}

int64_t Integer(std::string_view origin, const YAML::Node& node, const std::string& name) {
  int64_t value = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value)) {
    Fail(origin, node, "'" + name + "' must be an integer");
  }
  return value;
}

std::string Pointer(std::string_view origin, const YAML::Node& node, const std::string& name) {
  std::string pointer = String(origin, node, name);
  if (pointer.empty() || !IsValidJsonPointer(pointer)) {
    Fail(origin, node,
         "'" + name + "' must be a JSON Pointer such as /data/orderId, got '" + pointer + "'");
  }
  return pointer;
}

std::vector<std::string> StringList(std::string_view origin, const YAML::Node& node,
                                    const std::string& name, bool pointers) {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    out.push_back(pointers ? Pointer(origin, node, name) : String(origin, node, name));
    return out;
  }
  if (!node.IsSequence()) Fail(origin, node, "'" + name + "' must be a list");
  for (const YAML::Node& item : node) {
    out.push_back(pointers ? Pointer(origin, item, name) : String(origin, item, name));
  }
  return out;
}

// via_adapter: the versions read through version adapters (adapter.h), each with the adapter
// that brings it to an accepted version, or the declared chain of them: {4: a} or
// {5: [b, a]}. A list of versions ([4]) takes, for each, the one adapter of the contracts
// directory from that version to an accepted one (the configuration resolves it).
void ParseViaAdapter(std::string_view origin, const YAML::Node& node, AcceptedType& accepted) {
  const auto add = [&](const YAML::Node& at, int64_t version, std::vector<std::string> chain) {
    if (version < 1) Fail(origin, at, "'via_adapter' versions start at 1");
    if (std::binary_search(accepted.versions.begin(), accepted.versions.end(), version)) {
      Fail(origin, at,
           "version " + std::to_string(version) + " is accepted as it is; 'via_adapter' is " +
               "for versions read through an adapter");
    }
    if (chain.size() > kAdapterChainMax) {
      Fail(origin, at,
           "an adapter chain has at most " + std::to_string(kAdapterChainMax) + " adapters");
    }
    for (const std::string& id : chain) {
      if (id.empty()) Fail(origin, at, "an adapter id must not be empty");
    }
    if (!accepted.via_adapter.emplace(version, std::move(chain)).second) {
      Fail(origin, at, "'via_adapter' lists version " + std::to_string(version) + " twice");
    }
  };
  if (node.IsSequence() || node.IsScalar()) {
    for (const YAML::Node& v : node.IsScalar()
                                   ? std::vector<YAML::Node>{node}
                                   : std::vector<YAML::Node>(node.begin(), node.end())) {
      add(v, Integer(origin, v, "via_adapter"), {});
    }
    return;
  }
  if (!node.IsMap()) {
    Fail(origin, node, "'via_adapter' maps versions to an adapter id or a chain of ids");
  }
  for (const auto& item : node) {
    add(item.first, Integer(origin, item.first, "via_adapter"),
        StringList(origin, item.second, "via_adapter", false));
  }
}

void CheckKeys(std::string_view origin, const YAML::Node& node,
               std::initializer_list<std::string_view> allowed, const std::string& what) {
  if (!node.IsMap()) Fail(origin, node, what + " must be a mapping");
  for (const auto& entry : node) {
    const std::string key = entry.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      Fail(origin, entry.first, "unknown key '" + key + "' in " + what);
    }
  }
}

AcceptedType ParseAccepted(std::string_view origin, const YAML::Node& node) {
  CheckKeys(origin, node, {"type", "versions", "reads", "via_adapter", "default_schema_version"},
            "an accepts entry");
  AcceptedType accepted;
  if (!node["type"]) Fail(origin, node, "an accepts entry needs 'type'");
  accepted.type = String(origin, node["type"], "type");
  if (accepted.type.empty()) Fail(origin, node["type"], "'type' must not be empty");
  const YAML::Node versions = node["versions"];
  if (!versions) Fail(origin, node, "accepts entry '" + accepted.type + "' needs 'versions'");
  if (versions.IsScalar()) {
    accepted.versions.push_back(Integer(origin, versions, "versions"));
  } else if (versions.IsSequence()) {
    for (const YAML::Node& v : versions)
      accepted.versions.push_back(Integer(origin, v, "versions"));
  } else {
    Fail(origin, versions, "'versions' must be an integer or a list of integers");
  }
  if (accepted.versions.empty()) Fail(origin, versions, "'versions' must not be empty");
  std::sort(accepted.versions.begin(), accepted.versions.end());
  if (std::adjacent_find(accepted.versions.begin(), accepted.versions.end()) !=
      accepted.versions.end()) {
    Fail(origin, versions, "'versions' lists a version twice");
  }
  if (accepted.versions.front() < 1) Fail(origin, versions, "schema versions start at 1");
  if (node["reads"]) accepted.reads = StringList(origin, node["reads"], "reads", true);
  if (node["via_adapter"]) ParseViaAdapter(origin, node["via_adapter"], accepted);
  if (const YAML::Node fallback = node["default_schema_version"]) {
    const int64_t version = Integer(origin, fallback, "default_schema_version");
    const bool accepted_version =
        std::binary_search(accepted.versions.begin(), accepted.versions.end(), version) ||
        accepted.via_adapter.count(version) > 0;
    if (!accepted_version) {
      Fail(origin, fallback,
           "'default_schema_version' " + std::to_string(version) +
               " is not one of the versions this entry accepts (or reads via_adapter)");
    }
    accepted.default_schema_version = version;
  }
  return accepted;
}

// 'id' (required: it names the consumer in keys and paths) and 'resultversion'.
void ParseIdentity(std::string_view origin, const YAML::Node& root, ConsumerContract& contract) {
  if (!root["id"]) Fail(origin, root, "a consumer contract needs 'id'");
  contract.id = String(origin, root["id"], "id");
  if (contract.id.empty() || contract.id.find_first_of(": \t\n/") != std::string::npos) {
    Fail(origin, root["id"], "'id' must be non-empty, without ':', '/' or spaces");
  }
  if (root["resultversion"]) {
    contract.result_version = Integer(origin, root["resultversion"], "resultversion");
    if (contract.result_version < 1) Fail(origin, root["resultversion"], "resultversion >= 1");
  }
}

// What the contract asks of each envelope: 'boundary', 'schemaversion_at', 'unknown_version'.
void ParseEnvelopeRules(std::string_view origin, const YAML::Node& root,
                        ConsumerContract& contract) {
  if (root["boundary"]) contract.boundary = StringList(origin, root["boundary"], "boundary", false);
  if (root["owners"]) contract.owners = StringList(origin, root["owners"], "owners", false);
  if (root["schemaversion_at"]) {
    contract.schema_version_at = Pointer(origin, root["schemaversion_at"], "schemaversion_at");
  }
  if (root["unknown_version"]) {
    const std::string outcome = String(origin, root["unknown_version"], "unknown_version");
    if (outcome == "contract-update-required") {
      contract.unknown_version = UnknownVersionOutcome::kContractUpdateRequired;
    } else if (outcome == "manual") {
      contract.unknown_version = UnknownVersionOutcome::kManual;
    } else {
      Fail(origin, root["unknown_version"],
           "'unknown_version' must be contract-update-required or manual");
    }
  }
}

// 'accepts': at least one entry, each type once.
std::vector<AcceptedType> ParseAcceptsList(std::string_view origin, const YAML::Node& root) {
  if (!root["accepts"] || !root["accepts"].IsSequence() || root["accepts"].size() == 0) {
    Fail(origin, root, "'accepts' must list at least one {type, versions, reads}");
  }
  std::vector<AcceptedType> accepts;
  std::set<std::string> types;
  for (const YAML::Node& entry : root["accepts"]) {
    accepts.push_back(ParseAccepted(origin, entry));
    if (!types.insert(accepts.back().type).second) {
      Fail(origin, entry, "type '" + accepts.back().type + "' is listed twice");
    }
  }
  assert(!accepts.empty() && types.size() == accepts.size());
  return accepts;
}

// 'ordering': none, or by subject with optional pointers to the subject and its version.
Ordering ParseOrdering(std::string_view origin, const YAML::Node& ordering) {
  Ordering out;
  if (ordering.IsScalar() && ordering.as<std::string>() == "none") return out;  // unordered
  CheckKeys(origin, ordering, {"by", "subject_at", "version_at", "start"}, "'ordering'");
  if (!ordering["by"] || ordering["by"].as<std::string>() != "subject") {
    Fail(origin, ordering, "'ordering.by' must be 'subject' (or write ordering: none)");
  }
  out.by_subject = true;
  if (ordering["subject_at"]) {
    out.subject_at = Pointer(origin, ordering["subject_at"], "subject_at");
  }
  if (ordering["version_at"]) {
    out.version_at = Pointer(origin, ordering["version_at"], "version_at");
  }
  if (const YAML::Node start = ordering["start"]) {
    const std::string text = start.IsScalar() ? start.as<std::string>() : std::string();
    if (text == "first-seen") {
      out.start = Ordering::Start::kFirstSeen;
    } else if (text != "1") {
      Fail(origin, start, "'ordering.start' must be 1 or first-seen");
    }
  }
  return out;
}

// 'gap': how long a gap may stay open and where it goes then.
GapPolicy ParseGap(std::string_view origin, const YAML::Node& gap) {
  CheckKeys(origin, gap, {"deadline_seconds", "route"}, "'gap'");
  GapPolicy out;
  if (gap["deadline_seconds"]) {
    out.deadline_seconds = Integer(origin, gap["deadline_seconds"], "deadline_seconds");
    if (out.deadline_seconds < 0 || out.deadline_seconds > kGapDeadlineSecondsMax) {
      Fail(origin, gap,
           "deadline_seconds from 0 to " + std::to_string(kGapDeadlineSecondsMax) + " (100 years)");
    }
  }
  if (gap["route"]) {
    const std::string route = String(origin, gap["route"], "route");
    if (route == "wait")
      out.route = GapRoute::kWait;
    else if (route == "request-replay")
      out.route = GapRoute::kRequestReplay;
    else if (route == "manual")
      out.route = GapRoute::kManual;
    else
      Fail(origin, gap["route"], "'gap.route' must be wait, request-replay or manual");
  }
  return out;
}

}  // namespace

const AcceptedType* ConsumerContract::Find(std::string_view type) const {
  for (const AcceptedType& accepted : accepts) {
    if (accepted.type == type) return &accepted;
  }
  return nullptr;
}

bool ConsumerContract::Accepts(std::string_view type, int64_t version) const {
  const AcceptedType* accepted = Find(type);
  return accepted != nullptr &&
         std::binary_search(accepted->versions.begin(), accepted->versions.end(), version);
}

Result<ConsumerContract> ConsumerContractFromYaml(std::string_view yaml_text,
                                                  std::string_view origin,
                                                  ContractProblem* problem) {
  EVIDENT_ASSIGN_OR_RETURN(const YAML::Node root, LoadYaml(yaml_text, origin, problem));
  Result<ConsumerContract> contract = ConsumerContractFromNode(root, origin);
  if (problem != nullptr && !contract.ok()) *problem = ContractProblem::kInvalid;
  return contract;
}

Result<ConsumerContract> ConsumerContractFromNode(const YAML::Node& root, std::string_view origin) {
  try {
    // Keys a consumer entry in evident.yaml may carry besides the contract itself.
    CheckKeys(origin, root,
              {"id", "resultversion", "boundary", "owners", "schemaversion_at", "unknown_version",
               "accepts", "ordering", "gap", "projection", "guards", "effects", "compensations"},
              "a consumer contract");
    ConsumerContract contract;
    ParseIdentity(origin, root, contract);
    ParseEnvelopeRules(origin, root, contract);
    contract.accepts = ParseAcceptsList(origin, root);
    if (const YAML::Node ordering = root["ordering"]) {
      contract.ordering = ParseOrdering(origin, ordering);
    }
    if (const YAML::Node gap = root["gap"]) contract.gap = ParseGap(origin, gap);
    assert(!contract.id.empty() && !contract.accepts.empty());
    return contract;
  } catch (const ContractError& e) {
    return Status::InvalidArgument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(origin) + ": " + e.what());
  }
}

std::string ContractsDir::SchemaPath(std::string_view type, int64_t version) const {
  const auto t = schemas.find(std::string(type));
  if (t == schemas.end()) return {};
  const auto v = t->second.find(version);
  return v == t->second.end() ? std::string() : v->second;
}

namespace {

bool IsYaml(std::string_view name) {
  // std::filesystem's reading: a name that only begins with a dot (".yaml") has no extension.
  const std::string extension = std::filesystem::path(name).extension().string();
  return extension == ".yaml" || extension == ".yml";
}

// One type's directory, or adapters/, or consumers/: what it holds, added to `out`.
Status LoadSubdirectory(Env& env, const std::string& sub, const std::string& name,
                        ContractsDir& out) {
  // A directory that cannot be listed (lost+found at a file system's root, not ours to read)
  // holds no type: skipped, as a directory of no schema file is.
  const Result<std::vector<std::string>> listed = env.GetChildren(sub);
  if (!listed.ok()) return Status::Ok();
  for (const std::string& filename : *listed) {
    const std::string file = sub + "/" + filename;
    if (name == "adapters") {
      if (IsYaml(filename)) out.adapter_files.push_back(file);
      continue;
    }
    if (name == "consumers") {
      if (!IsYaml(filename)) continue;
      Result<std::string> text = ReadWholeFile(env, file, kContractBytesMax);
      // A listed file that cannot be opened (a dangling link) is unreadable, not missing:
      // kNotFound from here means the directory itself (config.cc, LintAdapters).
      if (!text.ok() && text.status().code() == Code::kNotFound) {
        return Status::IoError(text.status().message());
      }
      EVIDENT_RETURN_IF_ERROR(text.status());
      EVIDENT_ASSIGN_OR_RETURN(ConsumerContract contract, ConsumerContractFromYaml(*text, file));
      out.consumers.push_back(std::move(contract));
      continue;
    }
    const int64_t version = SchemaVersionOfFileName(filename);
    if (version >= 0) out.schemas[name][version] = file;
  }
  return Status::Ok();
}

}  // namespace

Result<ContractsDir> LoadContractsDir(const std::string& dir, Env* env_or_null) {
  Env& env = EnvOr(env_or_null);
  ContractsDir out;
  out.path = dir;
  out.env = env_or_null;
  EVIDENT_ASSIGN_OR_RETURN(const bool directory, env.IsDirectory(dir));
  if (!directory) return Status::NotFound("no contracts directory at " + dir);
  // "dir/type/v1.schema.json", for "dir" and "dir/" alike.
  std::string base = dir;
  if (!base.empty() && base.back() == '/') base.pop_back();
  EVIDENT_ASSIGN_OR_RETURN(const std::vector<std::string> entries, env.GetChildren(dir));
  for (const std::string& name : entries) {
    const std::string sub = base + "/" + name;
    // Hidden directories (.git, .github) are the repository's, not types.
    EVIDENT_ASSIGN_OR_RETURN(const bool is_type, env.IsDirectory(sub));
    if (!is_type || name.starts_with('.')) continue;
    EVIDENT_RETURN_IF_ERROR(LoadSubdirectory(env, sub, name, out));
  }
  return out;
}

std::string ChainName(const std::vector<std::string>& chain) {
  std::string out;
  for (const std::string& id : chain) out += (out.empty() ? "" : ",") + id;
  return out;
}

int64_t SchemaVersionOfFileName(std::string_view file_name) {
  constexpr std::string_view kSuffix = ".schema.json";
  if (file_name.size() <= 1 + kSuffix.size() || file_name[0] != 'v' ||
      !file_name.ends_with(kSuffix)) {
    return -1;
  }
  const std::string_view digits = file_name.substr(1, file_name.size() - 1 - kSuffix.size());
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return -1;
  }
  int64_t version = 0;
  for (const char c : digits) version = version * 10 + (c - '0');
  return version;
}

}  // namespace evident
