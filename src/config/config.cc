#include "evident/config.h"

#include <yaml-cpp/yaml.h>

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
  try {
    if (!root.IsMap()) Fail(origin, root, "the configuration must be a mapping");
    for (const auto& item : root) {
      const std::string key = item.first.as<std::string>();
      if (key != "contracts" && key != "profile" && key != "consumers" &&
          key != "batch_count_max" && key != "linger_ms" && key != "event_bytes_max") {
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
    if (root["event_bytes_max"]) {
      const int64_t n = root["event_bytes_max"].as<int64_t>();
      if (n < kEventBytesFloor || n > kEventBytesLimit) {
        Fail(origin, root["event_bytes_max"],
             "event_bytes_max must be from " + std::to_string(kEventBytesFloor) +
                 " (the CloudEvents minimum) to " + std::to_string(kEventBytesLimit));
      }
      config.event_bytes_max = static_cast<size_t>(n);
    }
  } catch (const ConfigError& e) {
    return Status::InvalidArgument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(origin + ": " + e.what());
  }

  EVIDENT_ASSIGN_OR_RETURN(config.contracts, LoadContractsDir(config.contracts_dir));

  try {
    const YAML::Node consumers = root["consumers"];
    if (!consumers || !consumers.IsSequence() || consumers.size() == 0) {
      Fail(origin, root, "'consumers' must list at least one consumer");
    }
    for (const YAML::Node& entry : consumers) {
      if (!entry.IsMap() || !entry["id"]) Fail(origin, entry, "a consumer needs an 'id'");
      ConsumerConfig consumer;
      const std::string id = entry["id"].as<std::string>();
      if (entry["accepts"]) {
        // The inline contract is read where it stands, so its errors cite evident.yaml's lines.
        auto contract = ConsumerContractFromNode(entry, origin);
        if (!contract.ok()) return contract.status();
        consumer.contract = std::move(contract).value();
      } else {
        const ConsumerContract* found = nullptr;
        for (const ConsumerContract& c : config.contracts.consumers) {
          if (c.id == id) found = &c;
        }
        if (found == nullptr) {
          Fail(origin, entry,
               "consumer '" + id + "' has no 'accepts' here and no contract in " +
                   config.contracts_dir + "/consumers/");
        }
        consumer.contract = *found;
        for (const auto& item : entry) {
          const std::string key = item.first.as<std::string>();
          if (key != "id" && key != "projection" && key != "guards") {
            Fail(origin, item.first,
                 "'" + key + "' belongs in the contract file of '" + id +
                     "' (or give the whole contract inline with 'accepts')");
          }
        }
      }
      if (config.Find(consumer.contract.id) != nullptr) {
        Fail(origin, entry, "consumer '" + id + "' is listed twice");
      }
      ParseExtras(origin, entry, consumer);
      config.consumers.push_back(std::move(consumer));
    }
  } catch (const ConfigError& e) {
    return Status::InvalidArgument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(origin + ": " + e.what());
  }

  // Every accepted (type, version) needs its payload schema.
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
  return config;
}

Result<Config> LoadConfig(const std::string& path) {
  constexpr size_t kConfigBytesMax = 16u << 20;
  EVIDENT_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path, kConfigBytesMax));
  const std::string base = fs::path(path).parent_path().string();
  return ConfigFromYaml(text, base.empty() ? "." : base, path);
}

}  // namespace evident
