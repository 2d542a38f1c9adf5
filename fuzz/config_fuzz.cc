// libFuzzer target: the YAML readers of consumer contracts (ConsumerContractFromYaml) and of
// evident.yaml (ConfigFromYaml, resolved against examples/orders, whose contracts directory is
// real).
//
// Invariants checked: no crash, no sanitizer report, no exception escapes; a failure is always
// InvalidArgument (bad input, with its message), never another code; an accepted contract or
// configuration is complete and within its limits (ids, at least one accepted type, accepted
// versions positive, consumer ids unique, a schema file for every accepted version, every
// projection step for an accepted type, batch and linger limits; every effect and compensation
// triggered by accepted types, keyed by a template with a placeholder, effects named once with
// an http(s) target within the timeout and retry limits). The text is also parsed as a key
// template: accepted only with a placeholder. And as a version adapter (adapter.h): an accepted
// one has an id, two different positive versions, 1..64 steps with valid non-empty pointers and
// in-range numbers, and applying it to a fixed payload gives JSON or InvalidArgument; an accepted
// configuration's via_adapter chains are resolved (each adapter exists, the first reads the
// version, each reads what the one before gave, the last gives an accepted version) and its
// defaults name pointers the step copies or takes its state from. Inputs over 16 KiB are
// skipped: configuration files are small, and yaml-cpp (not instrumented) is not under test.
// Every configuration is loaded a second time collecting every problem (ConfigOptions::problems)
// and checked whole (CheckConfigText, `config check`): both must agree with the first load.
#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "evident/adapter.h"
#include "evident/config.h"
#include "evident/contract.h"
#include "json/pointer.h"

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

bool HasPlaceholder(const evident::KeyTemplate& key) {
  for (const auto& [part, text] : key.parts) {
    if (part != evident::KeyTemplate::Part::kLiteral) return true;
  }
  return false;
}

void CheckTriggers(const evident::ConsumerConfig& consumer, const std::vector<std::string>& on) {
  if (on.empty()) __builtin_trap();
  for (const std::string& type : on) {
    if (consumer.contract.Find(type) == nullptr) __builtin_trap();
  }
}

void CheckEffects(const evident::ConsumerConfig& consumer) {
  for (const evident::EffectConfig& e : consumer.effects) {
    if (e.name.empty() || consumer.FindEffect(e.name) != &e) __builtin_trap();
    CheckTriggers(consumer, e.on);
    if (!HasPlaceholder(e.key)) __builtin_trap();
    const std::string& url = e.target.url;
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) __builtin_trap();
    if (e.target.timeout_ms < 1 || e.target.timeout_ms > evident::kEffectTimeoutMsLimit) {
      __builtin_trap();
    }
    if (e.retry.attempts_max < 1 || e.retry.backoff_initial_ms < 0) __builtin_trap();
  }
  for (const evident::CompensationConfig& c : consumer.compensations) {
    CheckTriggers(consumer, c.on);
    if (!HasPlaceholder(c.key)) __builtin_trap();
  }
}

void CheckAdapter(const evident::Adapter& a) {
  if (a.id.empty() || a.type.empty() || a.from < 1 || a.to < 1 || a.from == a.to) {
    __builtin_trap();
  }
  if (a.steps.empty() || a.steps.size() > evident::kAdapterStepsMax) __builtin_trap();
  for (const evident::AdapterStep& step : a.steps) {
    if (step.at.empty() || !evident::json::IsPointer(step.at)) __builtin_trap();
    if (step.kind == evident::AdapterStepKind::kMove &&
        (step.to.empty() || !evident::json::IsPointer(step.to))) {
      __builtin_trap();
    }
    if (step.kind == evident::AdapterStepKind::kConvert &&
        (!std::isfinite(step.factor) || step.factor == 0 || step.digits < 0 || step.digits > 15)) {
      __builtin_trap();
    }
  }
  static const char* const kPayload =
      R"({"schemaVersion":4,"orderId":"order-104","state":"paid","amount":1234,)"
      R"("items":[{"sku":"a","qty":2}],"a":{"b":{"c":1.5}},"~":"tilde","x/y":null})";
  const auto adapted = evident::ApplyAdapter(a, kPayload);
  if (adapted.ok()) {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(*adapted).get(root) != simdjson::SUCCESS) __builtin_trap();
  } else if (adapted.status().code() != evident::Code::kInvalidArgument) {
    __builtin_trap();
  }
}

void CheckAdapterChains(const evident::Config& config, const evident::ConsumerConfig& consumer) {
  for (const evident::AcceptedType& accepted : consumer.contract.accepts) {
    for (const auto& [version, chain] : accepted.via_adapter) {
      if (chain.empty() || config.contracts.SchemaPath(accepted.type, version).empty()) {
        __builtin_trap();
      }
      int64_t at = version;
      for (const std::string& id : chain) {
        const evident::Adapter* adapter = evident::FindAdapter(config.adapters, id);
        if (adapter == nullptr || adapter->type != accepted.type || adapter->from != at) {
          __builtin_trap();
        }
        at = adapter->to;
      }
      if (!std::binary_search(accepted.versions.begin(), accepted.versions.end(), at)) {
        __builtin_trap();
      }
    }
  }
  for (const auto& [type, step] : consumer.projection) {
    for (const auto& [pointer, rule] : step.defaults) {
      if (std::find(step.copy.begin(), step.copy.end(), pointer) == step.copy.end() &&
          pointer != step.state_from) {
        __builtin_trap();
      }
    }
  }
}

// Collecting every problem (config check) agrees with stopping at the first (consume): a problem
// recorded exactly when the load fails, and `config check` silent on what the loader refuses
// only where the loader is satisfied.
void CheckEveryProblemAtOnce(const std::string& text, bool loaded) {
  std::vector<evident::ConfigProblem> problems;
  const auto collected =
      evident::ConfigFromYaml(text, EVIDENT_EXAMPLE_DIR, "evident.yaml", {.problems = &problems});
  if (collected.ok() != loaded || problems.empty() != loaded) __builtin_trap();
  const std::vector<evident::ConfigProblem> checked =
      evident::CheckConfigText(text, EVIDENT_EXAMPLE_DIR, "evident.yaml");
  if (!loaded && checked.empty()) __builtin_trap();
  for (const evident::ConfigProblem& p : checked) {
    if (p.code.empty() || p.message.empty() || p.line < 0) __builtin_trap();
    if (loaded && p.code != "CONFIG_SCHEMA") __builtin_trap();
  }
}

}  // namespace

// The example's contracts directory must load, or every configuration input would fail for a
// reason that is not the input's.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const auto contracts = evident::LoadContractsDir(EVIDENT_EXAMPLE_DIR "/contracts");
  if (!contracts.ok()) {
    std::fprintf(stderr, "config_fuzz: %s\n", contracts.status().ToString().c_str());
    std::exit(1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace evident;
  if (size > 16 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);

  const auto contract = ConsumerContractFromYaml(text, "fuzz.yaml");
  if (contract.ok()) {
    CheckContract(*contract);
  } else if (contract.status().code() != Code::kInvalidArgument) {
    __builtin_trap();
  }

  const auto adapter = AdapterFromYaml(text, "fuzz-adapter.yaml");
  if (adapter.ok()) {
    CheckAdapter(*adapter);
  } else if (adapter.status().code() != Code::kInvalidArgument) {
    __builtin_trap();
  }

  const auto key = ParseKeyTemplate(text);
  if (key.ok() ? !HasPlaceholder(*key) : key.status().code() != Code::kInvalidArgument) {
    __builtin_trap();
  }

  if (!NamesTheExampleContracts(text)) return 0;
  const auto config = ConfigFromYaml(text, EVIDENT_EXAMPLE_DIR, "evident.yaml");
  CheckEveryProblemAtOnce(text, config.ok());
  if (!config.ok()) {
    if (config.status().code() != Code::kInvalidArgument) __builtin_trap();
    return 0;
  }
  if (config->consumers.empty() || config->batch_count_max < 1 ||
      config->batch_count_max > 1'000'000 || config->linger_ms < 0 || config->linger_ms > 60'000 ||
      config->event_bytes_max < 65536) {
    __builtin_trap();
  }
  for (const ConsumerConfig& consumer : config->consumers) {
    CheckContract(consumer.contract);
    if (config->Find(consumer.contract.id) != &consumer) __builtin_trap();  // ids unique
    for (const AcceptedType& accepted : consumer.contract.accepts) {
      for (const int64_t version : accepted.versions) {
        if (config->contracts.SchemaPath(accepted.type, version).empty()) __builtin_trap();
      }
    }
    for (const auto& [type, step] : consumer.projection) {
      if (consumer.contract.Find(type) == nullptr) __builtin_trap();
    }
    CheckEffects(consumer);
    CheckAdapterChains(*config, consumer);
  }
  return 0;
}
