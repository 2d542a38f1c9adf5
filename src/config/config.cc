#include "evident/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "adapter/yaml_json.h"
#include "config/problem.h"
#include "contract/contract_yaml.h"
#include "evident/duration.h"
#include "json/files.h"
#include "json/writer.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

// yaml-cpp reports errors by exception; they stop at this module's boundary.
struct ConfigError {
  std::string message;
};

[[noreturn]] void Fail(const std::string& origin, const YAML::Node& node, const std::string& what) {
  std::string where = origin;
  // A missing member is an invalid node, which has no place: callers pass its parent instead.
  if (node.IsDefined() && node.Mark().line >= 0) {
    where += ":" + std::to_string(node.Mark().line + 1);
  }
  throw ConfigError{where + ": " + what};
}

// Where the parse's problems go: the first one ends the parse (consume, serve), or each is
// recorded and the parse goes on with its next part (config check: ConfigOptions::problems).
class Sink {
 public:
  explicit Sink(std::vector<ConfigProblem>* problems) : problems_(problems) {}

  // Runs one part of the parse (a setting, a consumer, an effect, a projection step). Without a
  // list its failure ends the parse (the exception goes on); with one it is recorded. Returns
  // whether the part succeeded.
  template <typename Part>
  bool Attempt(const std::string& origin, Part&& part) {
    if (problems_ == nullptr) {
      part();
      return true;
    }
    // Enough to read: a hostile file (aliases repeating one bad entry) is not parsed further.
    if (problems_->size() >= kProblemsMax) return false;
    try {
      part();
      return true;
    } catch (const ConfigError& e) {
      problems_->push_back(config::ProblemFromMessage("CONFIG_INVALID", origin, e.message));
    } catch (const YAML::Exception& e) {
      problems_->push_back({"CONFIG_INVALID", origin, e.mark.line + 1, e.msg});
    }
    return false;
  }

  // A problem found outside Fail: returned as it is without a list; recorded (then Ok) with one.
  Status Add(const std::string& origin, Status status) {
    if (problems_ == nullptr || status.ok()) return status;
    problems_->push_back(config::ProblemFromMessage("CONFIG_INVALID", origin, status.message()));
    return Status::Ok();
  }

  size_t recorded() const { return problems_ == nullptr ? 0 : problems_->size(); }

 private:
  static constexpr size_t kProblemsMax = 1000;
  std::vector<ConfigProblem>* problems_;
};

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

// `on`: one event type or a list, each accepted by the consumer.
std::vector<std::string> Triggers(const std::string& origin, const YAML::Node& node,
                                  const ConsumerContract& contract, const std::string& what) {
  if (!node) Fail(origin, node, what + " needs 'on': the event type(s) that trigger it");
  std::vector<std::string> types = Names(origin, node, "on");
  if (types.empty()) Fail(origin, node, what + ": 'on' lists no event type");
  for (const std::string& type : types) {
    if (contract.Find(type) == nullptr) {
      Fail(origin, node,
           what + " on type '" + type + "' that consumer '" + contract.id + "' does not accept");
    }
  }
  return types;
}

// `when`: a mapping of JSON Pointers into the payload to the scalar each must equal.
std::vector<PayloadCondition> Conditions(const std::string& origin, const YAML::Node& node) {
  std::vector<PayloadCondition> out;
  if (!node) return out;
  if (!node.IsMap()) Fail(origin, node, "'when' maps JSON Pointers into the payload to values");
  for (const auto& item : node) {
    const std::string pointer = item.first.as<std::string>();
    if (pointer.empty() || !IsValidJsonPointer(pointer)) {
      Fail(origin, item.first, "'when' key '" + pointer + "' is not a JSON Pointer");
    }
    if (!item.second.IsScalar()) Fail(origin, item.second, "a 'when' value must be a scalar");
    out.push_back({pointer, item.second.as<std::string>()});
  }
  return out;
}

KeyTemplate Key(const std::string& origin, const YAML::Node& node, const std::string& what) {
  if (!node || !node.IsScalar()) Fail(origin, node, what + " needs a 'key' template");
  auto parsed = ParseKeyTemplate(node.as<std::string>());
  if (!parsed.ok()) Fail(origin, node, what + ": " + parsed.status().message());
  return std::move(parsed).value();
}

int64_t IntIn(const std::string& origin, const YAML::Node& node, const std::string& name,
              int64_t low, int64_t high) {
  const int64_t n = node.as<int64_t>();
  if (n < low || n > high) {
    Fail(origin, node,
         "'" + name + "' must be from " + std::to_string(low) + " to " + std::to_string(high));
  }
  return n;
}

// A target's url may name environment variables, so one configuration serves every
// environment: ${NAME} (which must be set) or ${NAME:-default}.
std::string ExpandEnvironment(const std::string& origin, const YAML::Node& node,
                              const std::string& text) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find("${", at);
    if (open == std::string::npos) {
      out += text.substr(at);
      break;
    }
    const size_t close = text.find('}', open);
    if (close == std::string::npos) Fail(origin, node, "'${' without '}' in '" + text + "'");
    out += text.substr(at, open - at);
    const std::string inside = text.substr(open + 2, close - open - 2);
    const size_t dash = inside.find(":-");
    const std::string name = inside.substr(0, dash);
    const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
    if (value != nullptr && *value != '\0') {
      out += value;
    } else if (dash != std::string::npos) {
      out += inside.substr(dash + 2);
    } else {
      Fail(origin, node, "the environment variable '" + name + "' in '" + text + "' is not set");
    }
    at = close + 1;
  }
  return out;
}

void EffectTargetFrom(const std::string& origin, const YAML::Node& node, EffectConfig& effect) {
  if (!node || !node.IsMap()) Fail(origin, node, "effect '" + effect.name + "' needs a 'target'");
  for (const auto& field : node) {
    const std::string key = field.first.as<std::string>();
    if (key == "url") {
      effect.target.url = ExpandEnvironment(origin, field.second, field.second.as<std::string>());
      if (effect.target.url.rfind("http://", 0) != 0 &&
          effect.target.url.rfind("https://", 0) != 0) {
        Fail(origin, field.second, "an effect target's url must start with http:// or https://");
      }
    } else if (key == "timeout_ms") {
      effect.target.timeout_ms = IntIn(origin, field.second, key, 1, kEffectTimeoutMsLimit);
    } else if (key == "idempotent_target") {
      effect.target.idempotent_target = field.second.as<bool>();
    } else {
      Fail(origin, field.first, "unknown key '" + key + "' in the target of '" + effect.name + "'");
    }
  }
  if (effect.target.url.empty()) Fail(origin, node, "effect '" + effect.name + "' needs a url");
}

void EffectRetryFrom(const std::string& origin, const YAML::Node& node, EffectConfig& effect) {
  if (!node) return;
  if (!node.IsMap()) Fail(origin, node, "'retry' is a mapping");
  for (const auto& field : node) {
    const std::string key = field.first.as<std::string>();
    if (key == "attempts_max") {
      effect.retry.attempts_max = static_cast<int>(IntIn(origin, field.second, key, 1, 1000));
    } else if (key == "backoff_initial_ms") {
      effect.retry.backoff_initial_ms = IntIn(origin, field.second, key, 0, 86'400'000);
    } else if (key == "backoff_max_ms") {
      effect.retry.backoff_max_ms = IntIn(origin, field.second, key, 0, 86'400'000);
    } else {
      Fail(origin, field.first, "unknown key '" + key + "' in the retry of '" + effect.name + "'");
    }
  }
}

EffectConfig ParseEffect(const std::string& origin, const YAML::Node& node,
                         const ConsumerConfig& consumer) {
  if (!node.IsMap() || !node["name"]) Fail(origin, node, "an effect needs a 'name'");
  EffectConfig effect;
  effect.name = node["name"].as<std::string>();
  if (effect.name.empty() || consumer.FindEffect(effect.name) != nullptr) {
    Fail(origin, node, "effect names must be non-empty and unique: '" + effect.name + "'");
  }
  for (const auto& field : node) {
    const std::string key = field.first.as<std::string>();
    if (key != "name" && key != "on" && key != "states" && key != "when" && key != "key" &&
        key != "target" && key != "retry" && key != "withdrawn_by") {
      Fail(origin, field.first, "unknown key '" + key + "' in effect '" + effect.name + "'");
    }
  }
  const std::string what = "effect '" + effect.name + "'";
  for (const char* required : {"key", "target"}) {
    if (!node[required]) {
      Fail(origin, node, what + " needs '" + required + "'");
    }
  }
  // Without `on`, only a compensation intends it (checked once compensations are read).
  if (node["on"]) effect.on = Triggers(origin, node["on"], consumer.contract, what);
  if (node["states"]) effect.states = Names(origin, node["states"], "states");
  if (node["withdrawn_by"]) {
    effect.withdrawn_by = Triggers(origin, node["withdrawn_by"], consumer.contract, what);
  }
  effect.when = Conditions(origin, node["when"]);
  effect.key = Key(origin, node["key"], what);
  EffectTargetFrom(origin, node["target"], effect);
  EffectRetryFrom(origin, node["retry"], effect);
  return effect;
}

void ParseEffects(const std::string& origin, const YAML::Node& list, ConsumerConfig& consumer,
                  Sink& sink) {
  if (!list.IsSequence()) Fail(origin, list, "'effects' must be a list");
  for (const YAML::Node& node : list) {
    sink.Attempt(origin, [&] { consumer.effects.push_back(ParseEffect(origin, node, consumer)); });
  }
}

// `compensates: EFFECT` and `compensate_with: EFFECT`: effects of the same consumer; the
// compensating one only together with the compensated one, and not the same.
void CompensatedEffects(const std::string& origin, const YAML::Node& node,
                        const ConsumerConfig& consumer, CompensationConfig& compensation) {
  const auto effect_named = [&](const char* field) {
    const YAML::Node value = node[field];
    if (!value) return std::string();
    if (!value.IsScalar()) Fail(origin, value, std::string("'") + field + "' names an effect");
    const std::string name = value.as<std::string>();
    if (consumer.FindEffect(name) == nullptr) {
      Fail(origin, value,
           std::string("'") + field + "' names effect '" + name + "', which consumer '" +
               consumer.contract.id + "' does not declare");
    }
    return name;
  };
  compensation.compensates = effect_named("compensates");
  compensation.compensate_with = effect_named("compensate_with");
  if (!compensation.compensate_with.empty() && compensation.compensates.empty()) {
    Fail(origin, node,
         "'compensate_with' needs 'compensates': a compensating effect is intended only when "
         "the effect it compensates was done");
  }
  if (!compensation.compensate_with.empty() &&
      compensation.compensate_with == compensation.compensates) {
    Fail(origin, node, "an effect cannot compensate itself");
  }
}

CompensationConfig ParseCompensation(const std::string& origin, const YAML::Node& node,
                                     const ConsumerConfig& consumer) {
  if (!node.IsMap()) Fail(origin, node, "a compensation is a mapping");
  for (const auto& field : node) {
    const std::string key = field.first.as<std::string>();
    if (key != "on" && key != "when" && key != "key" && key != "compensates" &&
        key != "compensate_with") {
      Fail(origin, field.first, "unknown key '" + key + "' in a compensation");
    }
  }
  for (const char* required : {"on", "key"}) {
    if (!node[required]) Fail(origin, node, std::string("a compensation needs '") + required + "'");
  }
  CompensationConfig compensation;
  compensation.on = Triggers(origin, node["on"], consumer.contract, "a compensation");
  compensation.when = Conditions(origin, node["when"]);
  compensation.key = Key(origin, node["key"], "a compensation");
  CompensatedEffects(origin, node, consumer, compensation);
  return compensation;
}

void ParseCompensations(const std::string& origin, const YAML::Node& list, ConsumerConfig& consumer,
                        Sink& sink) {
  if (!list.IsSequence()) Fail(origin, list, "'compensations' must be a list");
  for (const YAML::Node& node : list) {
    sink.Attempt(origin, [&] {
      consumer.compensations.push_back(ParseCompensation(origin, node, consumer));
    });
  }
}

// An effect without `on` is intended by a compensation alone: one must name it.
void CheckEffectsIntended(const std::string& origin, const YAML::Node& entry,
                          const ConsumerConfig& consumer) {
  for (const EffectConfig& effect : consumer.effects) {
    if (!effect.on.empty()) continue;
    const bool named =
        std::any_of(consumer.compensations.begin(), consumer.compensations.end(),
                    [&](const CompensationConfig& c) { return c.compensate_with == effect.name; });
    if (!named) {
      Fail(origin, entry["effects"],
           "effect '" + effect.name +
               "' has no 'on' and no compensation names it under 'compensate_with': nothing "
               "would ever intend it");
    }
  }
}

// A YAML scalar as JSON text, typed as adapters type theirs (adapter/yaml_json.h).
std::string ScalarJson(const std::string& origin, const YAML::Node& node) {
  Result<std::string> json = adapter::ScalarToJson(node, "");
  if (!json.ok()) {
    // Its message starts ":LINE: "; Fail says where in its own words.
    const std::string& message = json.status().message();
    const size_t what = message.find(": ");
    Fail(origin, node, what == std::string::npos ? message : message.substr(what + 2));
  }
  return std::move(json).value();
}

// defaults: {POINTER: null | refuse | {value: X}} for the pointers the step reads.
void ParseDefaults(const std::string& origin, const YAML::Node& node, ProjectionStep& step) {
  if (!node.IsMap()) Fail(origin, node, "'defaults' maps copied pointers to a default");
  for (const auto& item : node) {
    const std::string pointer = OnePointer(origin, item.first, "defaults");
    const bool copied = std::find(step.copy.begin(), step.copy.end(), pointer) != step.copy.end();
    if (!copied && pointer != step.state_from) {
      Fail(origin, item.first,
           "default for '" + pointer + "', which the step neither copies nor takes its state from");
    }
    MemberDefault d;
    const YAML::Node value = item.second;
    if (value.IsNull()) {
      if (!copied) Fail(origin, value, "a state cannot be null: give {value: ...} or refuse");
      d.kind = MemberDefault::Kind::kNull;
    } else if (value.IsScalar() && value.Scalar() == "refuse" && value.Tag() != "!") {
      d.kind = MemberDefault::Kind::kRefuse;
    } else if (value.IsMap() && value.size() == 1 && value["value"]) {
      d.kind = MemberDefault::Kind::kConstant;
      d.value_json = ScalarJson(origin, value["value"]);
    } else {
      Fail(origin, value, "a default is null, refuse or {value: ...}");
    }
    step.defaults[pointer] = std::move(d);
  }
}

// One projection step: what an applied event of `type` writes.
ProjectionStep ParseStep(const std::string& origin, const YAML::Node& type_node,
                         const YAML::Node& step_node, const ConsumerContract& contract) {
  const std::string type = type_node.as<std::string>();
  if (contract.Find(type) == nullptr) {
    Fail(origin, type_node,
         "projection for type '" + type + "' that consumer '" + contract.id + "' does not accept");
  }
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
    else if (key != "defaults")
      Fail(origin, field.first, "unknown key '" + key + "' in a projection step");
  }
  if (step_node["defaults"]) ParseDefaults(origin, step_node["defaults"], step);
  if (!step.state.empty() && !step.state_from.empty()) {
    Fail(origin, step_node, "a projection step has 'state' or 'state_from', not both");
  }
  return step;
}

Guard ParseGuard(const std::string& origin, const YAML::Node& action, const YAML::Node& node) {
  Guard guard;
  guard.action = action.as<std::string>();
  if (!node.IsMap()) Fail(origin, node, "a guard must be a mapping");
  for (const auto& field : node) {
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
  return guard;
}

// What a consumers entry adds to its contract: effects, compensations, projection, guards; each
// item one part of the parse (Sink).
void ParseExtras(const std::string& origin, const YAML::Node& entry, ConsumerConfig& consumer,
                 Sink& sink) {
  if (const YAML::Node effects = entry["effects"]) {
    sink.Attempt(origin, [&] { ParseEffects(origin, effects, consumer, sink); });
  }
  if (const YAML::Node compensations = entry["compensations"]) {
    sink.Attempt(origin, [&] { ParseCompensations(origin, compensations, consumer, sink); });
  }
  sink.Attempt(origin, [&] { CheckEffectsIntended(origin, entry, consumer); });
  if (const YAML::Node projection = entry["projection"]) {
    sink.Attempt(origin, [&] {
      if (!projection.IsMap()) Fail(origin, projection, "'projection' maps event types to steps");
      for (const auto& item : projection) {
        sink.Attempt(origin, [&] {
          consumer.projection[item.first.as<std::string>()] =
              ParseStep(origin, item.first, item.second, consumer.contract);
        });
      }
    });
  }
  if (const YAML::Node guards = entry["guards"]) {
    sink.Attempt(origin, [&] {
      if (!guards.IsMap()) Fail(origin, guards, "'guards' maps action names to rules");
      for (const auto& item : guards) {
        sink.Attempt(origin, [&] {
          Guard guard = ParseGuard(origin, item.first, item.second);
          consumer.guards[guard.action] = std::move(guard);
        });
      }
    });
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
void ParseLimits(const std::string& origin, const YAML::Node& root, Config& config, Sink& sink) {
  int64_t batch_count_max = static_cast<int64_t>(config.batch_count_max);
  int64_t event_bytes_max = static_cast<int64_t>(config.event_bytes_max);
  struct Limit {
    const char* name;
    int64_t low;
    int64_t high;
    int64_t* value;
    const char* why_low;
  };
  const Limit limits[] = {
      {"batch_count_max", 1, kBatchCountMaxLimit, &batch_count_max, ""},
      {"linger_ms", 0, kLingerMsLimit, &config.linger_ms, ""},
      {"batch_ms_max", 1, kBatchMsMaxLimit, &config.batch_ms_max, ""},
      {"event_bytes_max", kEventBytesFloor, kEventBytesLimit, &event_bytes_max,
       " (the CloudEvents minimum)"},
  };
  for (const Limit& limit : limits) {
    const YAML::Node node = root[limit.name];
    if (!node) continue;
    sink.Attempt(origin, [&] {
      const int64_t n = node.as<int64_t>();
      if (n < limit.low || n > limit.high) {
        Fail(origin, node,
             std::string(limit.name) + " must be from " + std::to_string(limit.low) +
                 limit.why_low + " to " + std::to_string(limit.high));
      }
      *limit.value = n;
    });
  }
  config.batch_count_max = static_cast<size_t>(batch_count_max);
  config.event_bytes_max = static_cast<size_t>(event_bytes_max);
  assert(config.batch_count_max >= 1 && config.linger_ms >= 0 && config.batch_ms_max >= 1 &&
         config.event_bytes_max >= static_cast<size_t>(kEventBytesFloor));
}

// One webhook_secrets entry: a source and where its secret is (a file or a variable).
WebhookSecretConfig ParseWebhookSecret(const std::string& origin, const YAML::Node& node,
                                       const std::string& base_dir) {
  if (!node.IsMap()) Fail(origin, node, "a webhook secret is {source, secret_file|secret_env}");
  WebhookSecretConfig secret;
  for (const auto& field : node) {
    const std::string key = field.first.as<std::string>();
    if (key == "source") {
      secret.source = field.second.as<std::string>();
    } else if (key == "secret_file") {
      const fs::path file = field.second.as<std::string>();
      secret.secret_file = (file.is_absolute() ? file : fs::path(base_dir) / file).string();
    } else if (key == "secret_env") {
      secret.secret_env = field.second.as<std::string>();
    } else {
      Fail(origin, field.first, "unknown key '" + key + "' in a webhook secret");
    }
  }
  if (secret.source.empty()) Fail(origin, node, "a webhook secret needs its 'source'");
  if (secret.secret_file.empty() == secret.secret_env.empty()) {
    Fail(origin, node, "a webhook secret gives one of 'secret_file' and 'secret_env'");
  }
  return secret;
}

// http: the daemon's webhook origins, secrets and signature tolerance.
void ParseHttp(const std::string& origin, const YAML::Node& node, const std::string& base_dir,
               HttpConfig& http) {
  if (!node.IsMap()) Fail(origin, node, "'http' must be a mapping");
  for (const auto& field : node) {
    const std::string key = field.first.as<std::string>();
    if (key == "webhook_origins") {
      if (!field.second.IsSequence()) Fail(origin, field.second, "a list of origins");
      for (const auto& o : field.second) http.webhook_origins.push_back(o.as<std::string>());
    } else if (key == "webhook_secrets") {
      if (!field.second.IsSequence()) Fail(origin, field.second, "a list of webhook secrets");
      for (const auto& s : field.second) {
        http.webhook_secrets.push_back(ParseWebhookSecret(origin, s, base_dir));
      }
    } else if (key == "signature_tolerance_s") {
      http.signature_tolerance_s = field.second.as<int64_t>();
      if (http.signature_tolerance_s < 1 || http.signature_tolerance_s > 86'400) {
        Fail(origin, field.second, "signature_tolerance_s must be from 1 to 86400");
      }
    } else {
      Fail(origin, field.first, "unknown key '" + key + "' in 'http'");
    }
  }
}

// The envelope profile: a built-in one by name, or one from a file, not both.
void ParseProfile(const std::string& origin, const YAML::Node& root, const std::string& base_dir,
                  const ConfigOptions& options, Config& config) {
  if (root["profile"]) {
    auto profile = Profile::Named(root["profile"].as<std::string>());
    if (!profile.ok()) Fail(origin, root["profile"], profile.status().message());
    config.profile = std::move(profile).value();
  }
  if (root["profile_file"]) {
    if (root["profile"]) Fail(origin, root["profile_file"], "give 'profile' or 'profile_file'");
    const fs::path file = root["profile_file"].as<std::string>();
    config.profile_file = (file.is_absolute() ? file : fs::path(base_dir) / file).string();
    if (!options.profile_file.empty()) config.profile_file = options.profile_file;
    auto profile = LoadProfileFile(config.profile_file, options.env);
    if (!profile.ok()) Fail(origin, root["profile_file"], profile.status().message());
    config.profile = std::move(profile).value();
  }
}

// tracing: the OTLP collector spans go to, and the service name they carry.
void ParseTracing(const std::string& origin, const YAML::Node& node, TracingConfig& tracing) {
  if (!node.IsMap()) Fail(origin, node, "'tracing' must be a mapping");
  for (const auto& field : node) {
    const std::string key = field.first.as<std::string>();
    if (key == "otlp_endpoint") {
      tracing.otlp_endpoint =
          ExpandEnvironment(origin, field.second, field.second.as<std::string>());
      if (tracing.otlp_endpoint.rfind("http://", 0) != 0 &&
          tracing.otlp_endpoint.rfind("https://", 0) != 0) {
        Fail(origin, field.second, "'otlp_endpoint' must start with http:// or https://");
      }
    } else if (key == "service_name") {
      tracing.service_name = field.second.as<std::string>();
      if (tracing.service_name.empty()) Fail(origin, field.second, "'service_name' is empty");
    } else {
      Fail(origin, field.first, "unknown key '" + key + "' in 'tracing'");
    }
  }
}

// A duration of `retention:` (30d, 12h, 15m): longer than 0.
int64_t RetentionDuration(const std::string& origin, const YAML::Node& node,
                          const std::string& what) {
  if (!node.IsScalar()) Fail(origin, node, "'" + what + "' must be a duration such as 30d");
  const Result<int64_t> ms = ParseDurationMs(node.as<std::string>());
  if (!ms.ok()) Fail(origin, node, "'" + what + "': " + ms.status().message());
  if (*ms <= 0) Fail(origin, node, "'" + what + "' must be longer than 0");
  return *ms;
}

// `older_than`: one duration for every kind, or a mapping of the kinds to remove to theirs.
void ParseRetentionHorizons(const std::string& origin, const YAML::Node& node,
                            RetentionConfig& retention) {
  if (node.IsScalar()) {
    retention.older_than_ms.fill(RetentionDuration(origin, node, "older_than"));
    return;
  }
  if (!node.IsMap() || node.size() == 0) {
    Fail(origin, node, "'older_than' must be a duration, or a mapping of kinds to durations");
  }
  for (const auto& field : node) {
    const std::string name = field.first.as<std::string>();
    const std::optional<RetainedKind> kind = RetainedKindNamed(name);
    if (!kind.has_value()) {
      Fail(origin, field.first,
           "unknown kind '" + name +
               "' in 'older_than' (journal, quarantine, gap, effect-log, "
               "intent, outbox, ledger)");
    }
    retention.older_than_ms[static_cast<size_t>(*kind)] =
        RetentionDuration(origin, field.second, "older_than." + name);
  }
}

// retention: how often long-running commands remove what is settled, and up to which horizon.
void ParseRetention(const std::string& origin, const YAML::Node& node, const std::string& base_dir,
                    RetentionConfig& retention) {
  if (!node.IsMap()) Fail(origin, node, "'retention' must be a mapping");
  if (!node["every"]) Fail(origin, node, "'retention' needs 'every' (how often it runs)");
  if (!node["older_than"]) Fail(origin, node, "'retention' needs 'older_than' (its horizon)");
  for (const auto& field : node) {
    const std::string key = field.first.as<std::string>();
    if (key == "every") {
      retention.every_ms = RetentionDuration(origin, field.second, "every");
    } else if (key == "older_than") {
      ParseRetentionHorizons(origin, field.second, retention);
    } else if (key == "archive") {
      if (!field.second.IsScalar() || field.second.as<std::string>().empty()) {
        Fail(origin, field.second, "'archive' must be a file's path");
      }
      const fs::path file = field.second.as<std::string>();
      // Absolute: the log and the evidence name where the records went, whatever the cwd.
      retention.archive =
          fs::absolute(file.is_absolute() ? file : fs::path(base_dir) / file).string();
    } else if (key == "batch_count_max") {
      retention.batch_count_max = field.second.as<int64_t>();
      if (retention.batch_count_max < 1 || retention.batch_count_max > 100'000) {
        Fail(origin, field.second, "batch_count_max must be from 1 to 100000");
      }
    } else if (key == "yield_percent") {
      retention.yield_percent = field.second.as<int64_t>();
      if (retention.yield_percent < 0 || retention.yield_percent > 1000) {
        Fail(origin, field.second, "yield_percent must be from 0 to 1000");
      }
    } else if (key == "forget_ledger_after") {
      retention.forget_ledger_after_ms =
          RetentionDuration(origin, field.second, "forget_ledger_after");
    } else {
      Fail(origin, field.first, "unknown key '" + key + "' in 'retention'");
    }
  }
  const int64_t ledger_ms = retention.older_than_ms[static_cast<size_t>(RetainedKind::kLedger)];
  if (retention.forget_ledger_after_ms > 0 && ledger_ms == 0) {
    Fail(origin, node["forget_ledger_after"],
         "'forget_ledger_after' needs 'older_than' to cover the ledger (digests are forgotten "
         "after the run that compacts receipts)");
  }
  if (retention.forget_ledger_after_ms > 0 && retention.forget_ledger_after_ms < ledger_ms) {
    Fail(origin, node["forget_ledger_after"],
         "'forget_ledger_after' must be at least the ledger's 'older_than': a receipt is kept as "
         "a digest before its digest can be forgotten");
  }
}

// Everything but the consumers: the known keys only, the contracts directory (resolved against
// `base_dir`), the envelope profile and the limits.
void ParseSettings(const std::string& origin, const YAML::Node& root, const std::string& base_dir,
                   const ConfigOptions& options, Config& config, Sink& sink) {
  if (!root.IsMap()) Fail(origin, root, "the configuration must be a mapping");
  for (const auto& item : root) {
    sink.Attempt(origin, [&] {
      const std::string key = item.first.as<std::string>();
      if (key != "contracts" && key != "profile" && key != "profile_file" && key != "consumers" &&
          key != "batch_count_max" && key != "linger_ms" && key != "batch_ms_max" &&
          key != "event_bytes_max" && key != "http" && key != "tracing" && key != "retention") {
        Fail(origin, item.first, "unknown key '" + key + "'");
      }
    });
  }
  sink.Attempt(origin, [&] {
    if (!root["contracts"]) Fail(origin, root, "'contracts' (the contracts directory) is required");
    const fs::path contracts = root["contracts"].as<std::string>();
    config.contracts_dir = (contracts.is_absolute() ? contracts : fs::path(base_dir) / contracts)
                               .lexically_normal()
                               .string();
    if (!options.contracts_dir.empty()) config.contracts_dir = options.contracts_dir;
  });
  sink.Attempt(origin, [&] { ParseProfile(origin, root, base_dir, options, config); });
  ParseLimits(origin, root, config, sink);
  if (root["http"]) {
    sink.Attempt(origin, [&] { ParseHttp(origin, root["http"], base_dir, config.http); });
  }
  if (root["tracing"]) {
    sink.Attempt(origin, [&] { ParseTracing(origin, root["tracing"], config.tracing); });
  }
  if (root["retention"]) {
    sink.Attempt(origin,
                 [&] { ParseRetention(origin, root["retention"], base_dir, config.retention); });
  }
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
    if (key != "id" && key != "projection" && key != "guards" && key != "effects" &&
        key != "compensations") {
      Fail(origin, item.first,
           "'" + key + "' belongs in the contract file of '" + id +
               "' (or give the whole contract inline with 'accepts')");
    }
  }
  return *found;
}

// 'consumers': at least one, each id once, each with its contract and extras.
void ParseConsumers(const std::string& origin, const YAML::Node& root, Config& config, Sink& sink) {
  const YAML::Node consumers = root["consumers"];
  if (!consumers || !consumers.IsSequence() || consumers.size() == 0) {
    Fail(origin, root, "'consumers' must list at least one consumer");
  }
  for (const YAML::Node& entry : consumers) {
    sink.Attempt(origin, [&] {
      if (!entry.IsMap() || !entry["id"]) Fail(origin, entry, "a consumer needs an 'id'");
      ConsumerConfig consumer;
      const std::string id = entry["id"].as<std::string>();
      Result<ConsumerContract> contract = EntryContract(origin, entry, id, config);
      if (!contract.ok()) throw ConfigError{contract.status().message()};
      consumer.contract = std::move(contract).value();
      consumer.contract_origin =
          entry["accepts"]
              ? "inline in " + origin
              : (fs::path(config.contracts_dir) / "consumers" / (id + ".yaml")).string();
      if (config.Find(consumer.contract.id) != nullptr) {
        Fail(origin, entry, "consumer '" + id + "' is listed twice");
      }
      ParseExtras(origin, entry, consumer, sink);
      config.consumers.push_back(std::move(consumer));
    });
  }
}

// Keys name one intent in the whole store: two effects with one template would share keys, and
// the second would never be intended.
Status CheckKeyTemplatesDiffer(const std::string& origin, const Config& config, Sink& sink) {
  std::map<std::string, std::string> effect_keys;
  for (const ConsumerConfig& consumer : config.consumers) {
    for (const EffectConfig& effect : consumer.effects) {
      const std::string who = "effect " + effect.name + " of " + consumer.contract.id;
      const auto [it, fresh] = effect_keys.emplace(effect.key.text, who);
      if (!fresh) {
        EVIDENT_RETURN_IF_ERROR(sink.Add(
            origin, Status::InvalidArgument(origin + ": " + who + " has the key template '" +
                                            effect.key.text + "' of " + it->second +
                                            "; keys name one intent in the store")));
      }
    }
  }
  return Status::Ok();
}

// Every accepted (type, version) needs its payload schema in the contracts directory.
Status CheckSchemasExist(const std::string& origin, const Config& config, Sink& sink) {
  for (const ConsumerConfig& consumer : config.consumers) {
    for (const AcceptedType& accepted : consumer.contract.accepts) {
      for (int64_t version : accepted.versions) {
        if (config.contracts.SchemaPath(accepted.type, version).empty()) {
          EVIDENT_RETURN_IF_ERROR(sink.Add(
              origin,
              Status::InvalidArgument(
                  origin + ": consumer '" + consumer.contract.id + "' accepts " + accepted.type +
                  " v" + std::to_string(version) + " but " + config.contracts_dir + "/" +
                  accepted.type + "/v" + std::to_string(version) + ".schema.json does not exist")));
        }
      }
      for (const auto& [version, chain] : accepted.via_adapter) {
        if (config.contracts.SchemaPath(accepted.type, version).empty()) {
          EVIDENT_RETURN_IF_ERROR(sink.Add(
              origin,
              Status::InvalidArgument(origin + ": consumer '" + consumer.contract.id + "' reads " +
                                      accepted.type + " v" + std::to_string(version) +
                                      " via_adapter, but it has no schema")));
        }
      }
    }
  }
  return Status::Ok();
}

// Whether `pointer` is one of `reads` or lies under one.
bool Declared(const std::vector<std::string>& reads, std::string_view pointer) {
  return std::any_of(reads.begin(), reads.end(), [&](const std::string& read) {
    return pointer == read ||
           (pointer.size() > read.size() && pointer.substr(0, read.size()) == read &&
            pointer[read.size()] == '/');
  });
}

// Collects the undeclared reads of one consumer's configuration.
class ReadsCheck {
 public:
  ReadsCheck(const ConsumerConfig& consumer, const std::vector<Adapter>& adapters,
             std::vector<UndeclaredRead>& out)
      : consumer_(consumer), adapters_(adapters), out_(out) {}

  void Run() {
    for (const auto& [type, step] : consumer_.projection) Projection(type, step);
    for (const EffectConfig& effect : consumer_.effects) {
      const std::string what = "effect '" + effect.name + "'";
      for (const std::string& type : effect.on) Templates(type, what, effect.when, effect.key);
    }
    for (const CompensationConfig& compensation : consumer_.compensations) {
      const std::string what = "the compensation keyed '" + compensation.key.text + "'";
      const EffectConfig* with = consumer_.FindEffect(compensation.compensate_with);
      for (const std::string& type : compensation.on) {
        Templates(type, what, compensation.when, compensation.key);
        // The compensating effect's key expands with the compensation's event.
        if (with != nullptr) Templates(type, "effect '" + with->name + "'", {}, with->key);
      }
    }
    for (const AcceptedType& accepted : consumer_.contract.accepts) Adapters(accepted);
  }

 private:
  void Check(const std::string& type, const std::string& what, const std::string& pointer) {
    const AcceptedType* accepted = consumer_.contract.Find(type);
    if (accepted == nullptr || Declared(accepted->reads, pointer)) return;
    for (const UndeclaredRead& seen : out_) {
      if (seen.consumer == consumer_.contract.id && seen.type == type && seen.what == what &&
          seen.pointer == pointer) {
        return;
      }
    }
    out_.push_back({consumer_.contract.id, consumer_.contract_origin, type, what, pointer});
  }
  void Projection(const std::string& type, const ProjectionStep& step) {
    if (!step.state_from.empty()) Check(type, "the projection's state_from", step.state_from);
    for (const std::string& p : step.copy) Check(type, "the projection's copy", p);
    for (const auto& [p, unused] : step.defaults) Check(type, "the projection's defaults", p);
  }
  void Templates(const std::string& type, const std::string& what,
                 const std::vector<PayloadCondition>& when, const KeyTemplate& key) {
    for (const PayloadCondition& c : when) Check(type, what + "'s when", c.pointer);
    for (const auto& [part, pointer] : key.parts) {
      if (part == KeyTemplate::Part::kData) Check(type, what + "'s key", pointer);
    }
  }
  // The last adapter of each chain writes the accepted version the consumer reads: a member it
  // moves there, maps or converts must be read (a producer's change to it could fail the step).
  void Adapters(const AcceptedType& accepted) {
    for (const auto& [version, chain] : accepted.via_adapter) {
      if (chain.empty()) continue;
      const std::string& last = chain.back();
      const auto found = std::find_if(adapters_.begin(), adapters_.end(),
                                      [&last](const Adapter& a) { return a.id == last; });
      if (found == adapters_.end()) continue;
      const std::string what = "adapter '" + found->id + "'";
      const std::vector<AdapterStep>& steps = found->steps;
      for (size_t i = 0; i < steps.size(); ++i) {
        const AdapterStep& step = steps[i];
        if (step.kind == AdapterStepKind::kMove) {
          Check(accepted.type, what + "'s move", Delivered(steps, i + 1, step.to));
        } else if (step.kind == AdapterStepKind::kMap) {
          Check(accepted.type, what + "'s map", Delivered(steps, i + 1, step.at));
        } else if (step.kind == AdapterStepKind::kConvert) {
          Check(accepted.type, what + "'s convert", Delivered(steps, i + 1, step.at));
        }
      }
    }
  }

  // Where the member at `pointer` ends up after the moves from step `from` on (a later move of
  // it, or of a member it lies under, carries it along).
  static std::string Delivered(const std::vector<AdapterStep>& steps, size_t from,
                               std::string pointer) {
    for (size_t i = from; i < steps.size(); ++i) {
      if (steps[i].kind != AdapterStepKind::kMove) continue;
      const std::string& moved = steps[i].at;
      if (pointer == moved) {
        pointer = steps[i].to;
      } else if (pointer.size() > moved.size() && pointer.compare(0, moved.size(), moved) == 0 &&
                 pointer[moved.size()] == '/') {
        pointer = steps[i].to + pointer.substr(moved.size());
      }
    }
    return pointer;
  }

  const ConsumerConfig& consumer_;
  const std::vector<Adapter>& adapters_;
  std::vector<UndeclaredRead>& out_;
};

// The load's outcome when the sink recorded problems (ConfigOptions::problems lists them).
Status Problems(const std::string& origin, const Sink& sink) {
  return Status::InvalidArgument(origin + ": " + std::to_string(sink.recorded()) +
                                 " problem(s); evident config check --config " + origin +
                                 " lists them");
}

}  // namespace

std::vector<UndeclaredRead> UndeclaredReads(const Config& config) {
  std::vector<UndeclaredRead> out;
  for (const ConsumerConfig& consumer : config.consumers) {
    ReadsCheck(consumer, config.adapters, out).Run();
  }
  return out;
}

std::string DescribeUndeclaredRead(const UndeclaredRead& read) {
  return "consumer '" + read.consumer + "': " + read.what + " reads " + read.pointer + " of " +
         read.type + ", which its contract (" + read.contract +
         ") does not declare in reads; add it to the contract's reads (so contracts impact "
         "weighs it), or stop reading it";
}

const EffectConfig* ConsumerConfig::FindEffect(std::string_view name) const {
  for (const EffectConfig& e : effects) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

Result<KeyTemplate> ParseKeyTemplate(std::string_view text) {
  static const std::pair<std::string_view, KeyTemplate::Part> kNames[] = {
      {"subject", KeyTemplate::Part::kSubject},
      {"subject_version", KeyTemplate::Part::kSubjectVersion},
      {"previous_version", KeyTemplate::Part::kPreviousVersion},
      {"source", KeyTemplate::Part::kSource},
      {"id", KeyTemplate::Part::kId},
      {"type", KeyTemplate::Part::kType},
      {"consumer", KeyTemplate::Part::kConsumer}};
  KeyTemplate out;
  out.text = std::string(text);
  bool placeholder = false;  // one that differs between events
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find_first_of("{}", at);
    if (open == std::string_view::npos) {
      out.parts.emplace_back(KeyTemplate::Part::kLiteral, std::string(text.substr(at)));
      break;
    }
    if (text[open] == '}') return Status::InvalidArgument("key template: '}' without '{'");
    if (open > at)
      out.parts.emplace_back(KeyTemplate::Part::kLiteral, std::string(text.substr(at, open - at)));
    const size_t close = text.find('}', open);
    if (close == std::string_view::npos)
      return Status::InvalidArgument("key template: '{' without '}'");
    const std::string_view name = text.substr(open + 1, close - open - 1);
    at = close + 1;
    if (!name.empty() && name[0] == '/') {
      if (!IsValidJsonPointer(name)) {
        return Status::InvalidArgument("key template: {" + std::string(name) +
                                       "} is not a JSON Pointer");
      }
      out.parts.emplace_back(KeyTemplate::Part::kData, std::string(name));
      placeholder = true;
      continue;
    }
    const auto* known = std::find_if(std::begin(kNames), std::end(kNames),
                                     [&](const auto& n) { return n.first == name; });
    if (known == std::end(kNames)) {
      return Status::InvalidArgument(
          "key template: unknown placeholder {" + std::string(name) +
          "} (known: subject, subject_version, previous_version, source, id, type, consumer, or "
          "a JSON Pointer into the payload such as {/orderId})");
    }
    out.parts.emplace_back(known->second, std::string());
    const KeyTemplate::Part part = known->second;
    placeholder = placeholder || part == KeyTemplate::Part::kSubject ||
                  part == KeyTemplate::Part::kSubjectVersion ||
                  part == KeyTemplate::Part::kPreviousVersion || part == KeyTemplate::Part::kId;
  }
  if (!placeholder) {
    return Status::InvalidArgument(
        "key template '" + out.text +
        "' has no placeholder that differs between events ({subject}, {subject_version}, "
        "{previous_version}, {id} or a payload member): it would name one intent for many events");
  }
  return out;
}

const ConsumerConfig* Config::Find(std::string_view consumer_id) const {
  for (const ConsumerConfig& c : consumers) {
    if (c.contract.id == consumer_id) return &c;
  }
  return nullptr;
}

namespace {

// Undeclared reads refuse the configuration: the first, with their count, or each one recorded
// (ConfigOptions::problems) with the file of its contract, where the fix goes.
Status CheckReads(const std::string& origin, const Config& config, const ConfigOptions& options) {
  const std::vector<UndeclaredRead> undeclared = UndeclaredReads(config);
  if (undeclared.empty()) return Status::Ok();
  if (options.problems != nullptr) {
    for (const UndeclaredRead& read : undeclared) {
      const bool inline_contract = read.contract.starts_with("inline in ");
      options.problems->push_back({"UNDECLARED_READ", inline_contract ? origin : read.contract, 0,
                                   DescribeUndeclaredRead(read)});
    }
    return Status::Ok();
  }
  std::string more;
  if (undeclared.size() > 1) {
    more = " (and " + std::to_string(undeclared.size() - 1) +
           " more: evident config check --config " + origin + " lists them all)";
  }
  return Status::InvalidArgument(origin + ": " + DescribeUndeclaredRead(undeclared[0]) + more);
}

}  // namespace

Result<Config> ConfigFromYaml(std::string_view yaml_text, const std::string& base_dir,
                              const std::string& origin, const ConfigOptions& options) {
  Config config;
  config.path = origin;
  Sink sink(options.problems);
  // Loaded once, repeated keys refused: every error below cites a line of this very text.
  Result<YAML::Node> loaded = LoadYaml(yaml_text, origin);
  EVIDENT_RETURN_IF_ERROR(sink.Add(origin, loaded.status()));
  if (!loaded.ok()) return Problems(origin, sink);
  const YAML::Node root = std::move(loaded).value();
  EVIDENT_RETURN_IF_ERROR(sink.Add(origin, CatchParseErrors(origin, [&] {
                                     ParseSettings(origin, root, base_dir, options, config, sink);
                                     return Status::Ok();
                                   })));
  if (config.contracts_dir.empty()) return Problems(origin, sink);
  Result<ContractsDir> contracts = LoadContractsDir(config.contracts_dir, options.env);
  if (!contracts.ok() && contracts.status().code() == Code::kNotFound) {
    // The directory itself is missing: the `contracts:` line is where to look.
    contracts = Status::NotFound(origin + ":" + std::to_string(root["contracts"].Mark().line + 1) +
                                 ": " + contracts.status().message());
  }
  EVIDENT_RETURN_IF_ERROR(sink.Add(origin, contracts.status()));
  if (!contracts.ok()) return Problems(origin, sink);
  config.contracts = std::move(contracts).value();
  Result<std::vector<Adapter>> adapters = LoadAdapters(config.contracts);
  EVIDENT_RETURN_IF_ERROR(sink.Add(origin, adapters.status()));
  if (adapters.ok()) config.adapters = std::move(adapters).value();
  EVIDENT_RETURN_IF_ERROR(sink.Add(origin, CatchParseErrors(origin, [&] {
                                     ParseConsumers(origin, root, config, sink);
                                     return Status::Ok();
                                   })));
  for (ConsumerConfig& consumer : config.consumers) {
    const Status resolved = ResolveAdapterChains(config.adapters, consumer.contract);
    if (!resolved.ok()) {
      EVIDENT_RETURN_IF_ERROR(
          sink.Add(origin, Status::InvalidArgument(origin + ": " + resolved.message())));
    }
  }
  EVIDENT_RETURN_IF_ERROR(CheckSchemasExist(origin, config, sink));
  EVIDENT_RETURN_IF_ERROR(CheckKeyTemplatesDiffer(origin, config, sink));
  if (options.check_reads) EVIDENT_RETURN_IF_ERROR(CheckReads(origin, config, options));
  if (sink.recorded() > 0 || (options.problems != nullptr && !options.problems->empty())) {
    return Problems(origin, sink);
  }
  return config;
}

Result<Config> LoadConfig(const std::string& path, const ConfigOptions& options) {
  constexpr size_t kConfigBytesMax = 16u << 20;
  EVIDENT_ASSIGN_OR_RETURN(const std::string text,
                           path == "-" ? ReadFileToString(path, kConfigBytesMax)
                                       : ReadWholeFile(EnvOr(options.env), path, kConfigBytesMax));
  const std::string base = fs::path(path).parent_path().string();
  return ConfigFromYaml(text, base.empty() ? "." : base, path, options);
}

}  // namespace evident
