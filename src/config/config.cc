#include "evident/config.h"

#include <yaml-cpp/yaml.h>

#include <cassert>
#include <filesystem>

#include "contract/contract_yaml.h"
#include "json/files.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

// yaml-cpp reports errors by exception; they stop at this module's boundary.
struct ConfigError {
  std::string message;
};

[[noreturn]] void Fail(const std::string& origin, const YAML::Node& node, const std::string& what) {
  std::string where = origin;
  if (node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
  throw ConfigError{where + ": " + what};
}

std::vector<std::string> Pointers(const std::string& origin, const YAML::Node& node,
                                  const std::string& name) {
  std::vector<std::string> out;
  const auto one = [&](const YAML::Node& item) {
    if (!item.IsScalar()) Fail(origin, item, "'" + name + "' must hold JSON Pointers");
    std::string p = item.as<std::string>();
    if (p.empty() || !IsValidJsonPointer(p)) {
      Fail(origin, item, "'" + name + "' entry '" + p + "' is not a JSON Pointer");
    }
    out.push_back(std::move(p));
  };
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) one(item);
  } else {
    one(node);
  }
  return out;
}

std::string OnePointer(const std::string& origin, const YAML::Node& node, const std::string& name) {
  std::vector<std::string> pointers = Pointers(origin, node, name);
  if (pointers.size() != 1) Fail(origin, node, "'" + name + "' takes one JSON Pointer");
  return std::move(pointers[0]);
}

std::vector<std::string> Names(const std::string& origin, const YAML::Node& node,
                               const std::string& name) {
  std::vector<std::string> out;
  if (node.IsScalar()) return {node.as<std::string>()};
  if (!node.IsSequence()) Fail(origin, node, "'" + name + "' must be a list of names");
  for (const YAML::Node& item : node) {
    if (!item.IsScalar()) Fail(origin, item, "'" + name + "' must be a list of names");
    out.push_back(item.as<std::string>());
  }
  return out;
}

void ParseExtras(const std::string& origin, const YAML::Node& entry, ConsumerConfig& consumer) {
  const ConsumerContract& contract = consumer.contract;
  if (const YAML::Node projection = entry["projection"]) {
    if (!projection.IsMap()) Fail(origin, projection, "'projection' maps event types to steps");
    for (const auto& item : projection) {
      const std::string type = item.first.as<std::string>();
      if (contract.Find(type) == nullptr) {
        Fail(origin, item.first,
             "projection for type '" + type + "' that consumer '" + contract.id +
                 "' does not accept");
      }
      const YAML::Node step_node = item.second;
      if (!step_node.IsMap()) Fail(origin, step_node, "a projection step must be a mapping");
      ProjectionStep step;
      for (const auto& field : step_node) {
        const std::string key = field.first.as<std::string>();
        if (key == "state")
          step.state = field.second.as<std::string>();
        else if (key == "state_from")
          step.state_from = OnePointer(origin, field.second, key);
        else if (key == "copy")
          step.copy = Pointers(origin, field.second, key);
        else if (key == "evidence")
          step.evidence = Names(origin, field.second, key);
        else
          Fail(origin, field.first, "unknown key '" + key + "' in a projection step");
      }
      if (!step.state.empty() && !step.state_from.empty()) {
        Fail(origin, step_node, "a projection step has 'state' or 'state_from', not both");
      }
      consumer.projection[type] = std::move(step);
    }
  }
  if (const YAML::Node guards = entry["guards"]) {
    if (!guards.IsMap()) Fail(origin, guards, "'guards' maps action names to rules");
    for (const auto& item : guards) {
      Guard guard;
      guard.action = item.first.as<std::string>();
      if (!item.second.IsMap()) Fail(origin, item.second, "a guard must be a mapping");
      for (const auto& field : item.second) {
        const std::string key = field.first.as<std::string>();
        if (key == "in_sync")
          guard.in_sync = field.second.as<bool>();
        else if (key == "states")
          guard.states = Names(origin, field.second, key);
        else if (key == "evidence")
          guard.evidence = Names(origin, field.second, key);
        else
          Fail(origin, field.first, "unknown key '" + key + "' in guard '" + guard.action + "'");
      }
      consumer.guards[guard.action] = std::move(guard);
    }
  }
}

// Runs `parse`, turning the exceptions of this file (Fail) and of yaml-cpp into the
// InvalidArgument status they stand for: no exception leaves the module.
template <typename Parse>
Status CatchParseErrors(const std::string& origin, Parse&& parse) {
  try {
    return parse();
  } catch (const ConfigError& e) {
    return Status::InvalidArgument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(origin + ": " + e.what());
  }
}

// batch_count_max, linger_ms, batch_ms_max and event_bytes_max, each within its limits
// (config.h).
void ParseLimits(const std::string& origin, const YAML::Node& root, Config& config) {
  if (root["batch_count_max"]) {
    const int64_t n = root["batch_count_max"].as<int64_t>();
    if (n < 1 || n > kBatchCountMaxLimit) {
      Fail(origin, root["batch_count_max"],
           "batch_count_max must be from 1 to " + std::to_string(kBatchCountMaxLimit));
    }
    config.batch_count_max = static_cast<size_t>(n);
  }
  if (root["linger_ms"]) {
    config.linger_ms = root["linger_ms"].as<int64_t>();
    if (config.linger_ms < 0 || config.linger_ms > kLingerMsLimit) {
      Fail(origin, root["linger_ms"],
           "linger_ms must be from 0 to " + std::to_string(kLingerMsLimit));
    }
  }
  if (root["batch_ms_max"]) {
    config.batch_ms_max = root["batch_ms_max"].as<int64_t>();
    if (config.batch_ms_max < 1 || config.batch_ms_max > kBatchMsMaxLimit) {
      Fail(origin, root["batch_ms_max"],
           "batch_ms_max must be from 1 to " + std::to_string(kBatchMsMaxLimit));
    }
  }
  if (root["event_bytes_max"]) {
    const int64_t n = root["event_bytes_max"].as<int64_t>();
    if (n < kEventBytesFloor || n > kEventBytesLimit) {
      Fail(origin, root["event_bytes_max"],
           "event_bytes_max must be from " + std::to_string(kEventBytesFloor) +
               " (the CloudEvents minimum) to " + std::to_string(kEventBytesLimit));
    }
    config.event_bytes_max = static_cast<size_t>(n);
  }
  assert(config.batch_count_max >= 1 && config.linger_ms >= 0 && config.batch_ms_max >= 1 &&
         config.event_bytes_max >= static_cast<size_t>(kEventBytesFloor));
}

// Everything but the consumers: the known keys only, the contracts directory (resolved against
// `base_dir`), the envelope profile and the limits.
void ParseSettings(const std::string& origin, const YAML::Node& root, const std::string& base_dir,
                   Config& config) {
  if (!root.IsMap()) Fail(origin, root, "the configuration must be a mapping");
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>();
    if (key != "contracts" && key != "profile" && key != "consumers" && key != "batch_count_max" &&
        key != "linger_ms" && key != "batch_ms_max" && key != "event_bytes_max") {
      Fail(origin, item.first, "unknown key '" + key + "'");
    }
  }
  if (!root["contracts"]) Fail(origin, root, "'contracts' (the contracts directory) is required");
  const fs::path contracts = root["contracts"].as<std::string>();
  config.contracts_dir = (contracts.is_absolute() ? contracts : fs::path(base_dir) / contracts)
                             .lexically_normal()
                             .string();
  if (root["profile"]) {
    auto profile = Profile::Named(root["profile"].as<std::string>());
    if (!profile.ok()) Fail(origin, root["profile"], profile.status().message());
    config.profile = std::move(profile).value();
  }
  ParseLimits(origin, root, config);
}

// The contract of one consumers entry: given inline (it has 'accepts'; read where it stands,
// so its errors cite evident.yaml's lines), or the one of the same id in the contracts
// directory, next to which the entry may only add 'projection' and 'guards'.
Result<ConsumerContract> EntryContract(const std::string& origin, const YAML::Node& entry,
                                       const std::string& id, const Config& config) {
  if (entry["accepts"]) return ConsumerContractFromNode(entry, origin);
  const ConsumerContract* found = nullptr;
  for (const ConsumerContract& c : config.contracts.consumers) {
    if (c.id == id) found = &c;
  }
  if (found == nullptr) {
    Fail(origin, entry,
         "consumer '" + id + "' has no 'accepts' here and no contract in " + config.contracts_dir +
             "/consumers/");
  }
  for (const auto& item : entry) {
    const std::string key = item.first.as<std::string>();
    if (key != "id" && key != "projection" && key != "guards") {
      Fail(origin, item.first,
           "'" + key + "' belongs in the contract file of '" + id +
               "' (or give the whole contract inline with 'accepts')");
    }
  }
  return *found;
}

// 'consumers': at least one, each id once, each with its contract and extras.
Status ParseConsumers(const std::string& origin, const YAML::Node& root, Config& config) {
  const YAML::Node consumers = root["consumers"];
  if (!consumers || !consumers.IsSequence() || consumers.size() == 0) {
    Fail(origin, root, "'consumers' must list at least one consumer");
  }
  for (const YAML::Node& entry : consumers) {
    if (!entry.IsMap() || !entry["id"]) Fail(origin, entry, "a consumer needs an 'id'");
    ConsumerConfig consumer;
    const std::string id = entry["id"].as<std::string>();
    EVIDENT_ASSIGN_OR_RETURN(consumer.contract, EntryContract(origin, entry, id, config));
    if (config.Find(consumer.contract.id) != nullptr) {
      Fail(origin, entry, "consumer '" + id + "' is listed twice");
    }
    ParseExtras(origin, entry, consumer);
    config.consumers.push_back(std::move(consumer));
  }
  assert(!config.consumers.empty());
  return Status::Ok();
}

// Every accepted (type, version) needs its payload schema in the contracts directory.
Status CheckSchemasExist(const std::string& origin, const Config& config) {
  for (const ConsumerConfig& consumer : config.consumers) {
    for (const AcceptedType& accepted : consumer.contract.accepts) {
      for (int64_t version : accepted.versions) {
        if (config.contracts.SchemaPath(accepted.type, version).empty()) {
          return Status::InvalidArgument(
              origin + ": consumer '" + consumer.contract.id + "' accepts " + accepted.type + " v" +
              std::to_string(version) + " but " + config.contracts_dir + "/" + accepted.type +
              "/v" + std::to_string(version) + ".schema.json does not exist");
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

const ConsumerConfig* Config::Find(std::string_view consumer_id) const {
  for (const ConsumerConfig& c : consumers) {
    if (c.contract.id == consumer_id) return &c;
  }
  return nullptr;
}

Result<Config> ConfigFromYaml(std::string_view yaml_text, const std::string& base_dir,
                              const std::string& origin) {
  Config config;
  config.path = origin;
  // Loaded once, repeated keys refused: every error below cites a line of this very text.
  EVIDENT_ASSIGN_OR_RETURN(const YAML::Node root, LoadYaml(yaml_text, origin));
  EVIDENT_RETURN_IF_ERROR(CatchParseErrors(origin, [&] {
    ParseSettings(origin, root, base_dir, config);
    return Status::Ok();
  }));
  EVIDENT_ASSIGN_OR_RETURN(config.contracts, LoadContractsDir(config.contracts_dir));
  EVIDENT_RETURN_IF_ERROR(
      CatchParseErrors(origin, [&] { return ParseConsumers(origin, root, config); }));
  EVIDENT_RETURN_IF_ERROR(CheckSchemasExist(origin, config));
  return config;
}

Result<Config> LoadConfig(const std::string& path) {
  constexpr size_t kConfigBytesMax = 16u << 20;
  EVIDENT_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path, kConfigBytesMax));
  const std::string base = fs::path(path).parent_path().string();
  return ConfigFromYaml(text, base.empty() ? "." : base, path);
}

}  // namespace evident
