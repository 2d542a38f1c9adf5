// libFuzzer target: the YAML readers of consumer contracts (ConsumerContractFromYaml) and of
// evident.yaml (ConfigFromYaml, resolved against examples/orders, whose contracts directory is
// real).
//
// Invariants checked: no crash, no sanitizer report, no exception escapes; a failure is always
// InvalidArgument (bad input, with its message), never another code; an accepted contract or
// configuration is complete (ids, at least one accepted type, every accepted version positive,
// every projection step for an accepted type).
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "evident/config.h"
#include "evident/contract.h"

namespace {

void CheckContract(const evident::ConsumerContract& c) {
  if (c.id.empty() || c.accepts.empty()) __builtin_trap();
  for (const evident::AcceptedType& a : c.accepts) {
    if (a.type.empty() || a.versions.empty()) __builtin_trap();
    for (const int64_t v : a.versions) {
      if (v < 1) __builtin_trap();
    }
  }
}

// Only the example's own contracts directory: a fuzzed `contracts:` path could name any
// directory of the machine, and reading one is not what is under test.
bool NamesTheExampleContracts(const std::string& text) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap() || !root["contracts"]) return true;  // refused before any directory
    const YAML::Node contracts = root["contracts"];
    return contracts.IsScalar() && contracts.Scalar() == "contracts";
  } catch (const YAML::Exception&) {
    return true;  // refused while parsing, before any directory
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace evident;
  const std::string text(reinterpret_cast<const char*>(data), size);

  const auto contract = ConsumerContractFromYaml(text, "fuzz.yaml");
  if (contract.ok()) {
    CheckContract(*contract);
  } else if (contract.status().code() != Code::kInvalidArgument) {
    __builtin_trap();
  }

  if (!NamesTheExampleContracts(text)) return 0;
  const auto config = ConfigFromYaml(text, EVIDENT_EXAMPLE_DIR, "evident.yaml");
  if (!config.ok()) {
    if (config.status().code() != Code::kInvalidArgument) __builtin_trap();
    return 0;
  }
  if (config->consumers.empty() || config->batch_count_max < 1) __builtin_trap();
  for (const ConsumerConfig& consumer : config->consumers) {
    CheckContract(consumer.contract);
    for (const auto& [type, step] : consumer.projection) {
      if (consumer.contract.Find(type) == nullptr) __builtin_trap();
    }
  }
  return 0;
}
