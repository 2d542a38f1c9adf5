// Parsing an adapter file: every key checked, every pointer validated, numbers typed.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <set>

#include "adapter/json_text.h"
#include "adapter/yaml_json.h"
#include "contract/contract_yaml.h"
#include "evident/adapter.h"
#include "json/pointer.h"
#include "json/writer.h"

namespace evident {
namespace {

constexpr size_t kIdLengthMax = 128;
constexpr size_t kVersionDigitsMax = 9;
constexpr int kDigitsMax = 15;
// How deeply a `set` value may nest (the payload parser allows 64 levels too).
constexpr int kValueDepthMax = 64;

// yaml-cpp reports errors by exception; they, and these, stop at AdapterFromYaml.
struct AdapterError {
  std::string message;
};

[[noreturn]] void Fail(std::string_view origin, const YAML::Node& node, const std::string& what) {
  std::string where(origin);
  if (node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
  throw AdapterError{where + ": " + what};
}

void CheckKeys(std::string_view origin, const YAML::Node& node,
               std::initializer_list<std::string_view> allowed, const std::string& what) {
  if (!node.IsMap()) Fail(origin, node, what + " must be a mapping");
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string("?");
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      Fail(origin, entry.first, "unknown key '" + key + "' in " + what);
    }
  }
}

// The member `key` of `mapping`; refused when it is missing.
YAML::Node Need(std::string_view origin, const YAML::Node& mapping, const char* key,
                const std::string& what) {
  YAML::Node node = mapping[key];
  if (!node) Fail(origin, mapping, what + " needs '" + key + "'");
  return node;
}

std::string String(std::string_view origin, const YAML::Node& node, const std::string& name) {
  if (!node.IsScalar()) Fail(origin, node, "'" + name + "' must be a string");
  return node.Scalar();
}

// A JSON Pointer into the payload; never the empty pointer (the whole payload).
std::string Pointer(std::string_view origin, const YAML::Node& node, const std::string& name) {
  std::string pointer = String(origin, node, name);
  if (pointer.empty() || !json::IsPointer(pointer)) {
    Fail(
        origin, node,
        "'" + name + "' must be a JSON Pointer to a member such as /status, got '" + pointer + "'");
  }
  return pointer;
}

// A schema version: 1 to 9 digits, at least 1.
int64_t Version(std::string_view origin, const YAML::Node& node, const std::string& name) {
  const std::string text = node.IsScalar() ? node.Scalar() : std::string();
  int64_t value = 0;
  const bool digits = !text.empty() && text.size() <= kVersionDigitsMax &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) std::from_chars(text.data(), text.data() + text.size(), value);
  if (!digits || value < 1) {
    Fail(origin, node, "'" + name + "' must be a schema version from 1 to 999999999");
  }
  return value;
}

bool Bool(std::string_view origin, const YAML::Node& node, const std::string& name) {
  const std::string text = node.IsScalar() ? node.Scalar() : std::string();
  if (text == "true") return true;
  if (text == "false") return false;
  Fail(origin, node, "'" + name + "' must be true or false");
}

bool IsQuotedOrString(const YAML::Node& node) {
  return node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str";
}

bool LooksLikeInteger(std::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// [-+]? ( .digits | digits [. digits?] ) ( [eE] [-+]? digits )?
bool LooksLikeFloat(std::string_view text) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i > start;
  };
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  const bool whole = digits();
  bool fraction = false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    fraction = digits();
  }
  if (!whole && !fraction) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (!digits()) return false;
  }
  return i == text.size();
}

// Writes a scalar as JSON by YAML 1.2's core schema: a quoted scalar (or one tagged !!str) is a
// string; a plain one is null (~, null, empty), a boolean (true, false), a decimal integer, a
// decimal number, or else a string. So the key 1 is the number 1 and the key "1" the string "1".
void WriteScalar(std::string_view origin, const YAML::Node& node, json::Writer& writer) {
  const std::string& text = node.IsNull() ? std::string() : node.Scalar();
  if (IsQuotedOrString(node)) {
    writer.String(text);
    return;
  }
  if (node.Tag() != "?" && !node.Tag().empty()) {
    Fail(origin, node, "tag '" + node.Tag() + "' is not supported (quote the value instead)");
  }
  const std::string_view plain = text[0] == '+' ? std::string_view(text).substr(1) : text;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    writer.Null();
  } else if (text == "true" || text == "True" || text == "TRUE") {
    writer.Bool(true);
  } else if (text == "false" || text == "False" || text == "FALSE") {
    writer.Bool(false);
  } else if (LooksLikeInteger(text)) {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(plain.data(), plain.data() + plain.size(), value);
    if (error != std::errc()) Fail(origin, node, "integer " + text + " is out of range");
    writer.Int(value);
  } else if (LooksLikeFloat(text)) {
    double value = 0;
    const auto [end, error] = std::from_chars(plain.data(), plain.data() + plain.size(), value);
    if (error != std::errc() || !std::isfinite(value)) {
      Fail(origin, node, "number " + text + " is out of range");
    }
    writer.Raw(adapter::ShortestNumberText(value));
  } else if (text == ".inf" || text == "-.inf" || text == ".nan" || text == ".NaN") {
    Fail(origin, node, text + " has no JSON form");
  } else {
    writer.String(text);
  }
}

// Writes any YAML value as JSON: scalars by WriteScalar, sequences as arrays, mappings as objects
// (keys by their text, in file order). `out` is the writer's text: past kAdapterBytesMax the
// value is refused, so that aliases (each expanded where it is used) cannot blow a small file up
// into an exponentially large value; every node visited writes a byte at least, so the visits
// are bounded too.
void WriteValue(std::string_view origin, const YAML::Node& node, json::Writer& writer,
                const std::string& out, int depth) {
  if (depth > kValueDepthMax) {
    Fail(origin, node, "value nests deeper than " + std::to_string(kValueDepthMax) + " levels");
  }
  if (out.size() > kAdapterBytesMax) {
    Fail(origin, node, "value is larger than " + std::to_string(kAdapterBytesMax) + " bytes");
  }
  if (node.IsSequence()) {
    writer.BeginArray();
    for (const YAML::Node& item : node) WriteValue(origin, item, writer, out, depth + 1);
    writer.EndArray();
  } else if (node.IsMap()) {
    writer.BeginObject();
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) Fail(origin, entry.first, "a key must be a scalar");
      writer.Key(entry.first.Scalar());
      WriteValue(origin, entry.second, writer, out, depth + 1);
    }
    writer.EndObject();
  } else {
    WriteScalar(origin, node, writer);
  }
}

std::string ScalarJson(std::string_view origin, const YAML::Node& node, const std::string& name) {
  if (!node.IsScalar() && !node.IsNull()) Fail(origin, node, "'" + name + "' must be a scalar");
  std::string out;
  json::Writer writer(out);
  WriteScalar(origin, node, writer);
  return out;
}

std::string ValueJson(std::string_view origin, const YAML::Node& node) {
  std::string out;
  json::Writer writer(out);
  WriteValue(origin, node, writer, out, 0);
  if (out.size() > kAdapterBytesMax) {
    Fail(origin, node, "value is larger than " + std::to_string(kAdapterBytesMax) + " bytes");
  }
  return out;
}

AdapterStep ParseMove(std::string_view origin, const YAML::Node& body) {
  CheckKeys(origin, body, {"from", "to", "required"}, "a move step");
  AdapterStep step;
  step.kind = AdapterStepKind::kMove;
  step.at = Pointer(origin, Need(origin, body, "from", "a move step"), "from");
  step.to = Pointer(origin, Need(origin, body, "to", "a move step"), "to");
  if (body["required"]) step.required = Bool(origin, body["required"], "required");
  if (step.at == step.to) Fail(origin, body, "a move step must move to another pointer");
  if (step.to.starts_with(step.at + "/")) {
    Fail(origin, body, "a move step cannot move " + step.at + " into itself (" + step.to + ")");
  }
  return step;
}

AdapterStep ParseSet(std::string_view origin, const YAML::Node& body) {
  CheckKeys(origin, body, {"at", "value"}, "a set step");
  AdapterStep step;
  step.kind = AdapterStepKind::kSet;
  step.at = Pointer(origin, Need(origin, body, "at", "a set step"), "at");
  step.value_json = ValueJson(origin, Need(origin, body, "value", "a set step"));
  return step;
}

AdapterStep ParseMap(std::string_view origin, const YAML::Node& body) {
  CheckKeys(origin, body, {"at", "values", "unmapped"}, "a map step");
  AdapterStep step;
  step.kind = AdapterStepKind::kMap;
  step.at = Pointer(origin, Need(origin, body, "at", "a map step"), "at");
  const YAML::Node values = Need(origin, body, "values", "a map step");
  if (!values.IsMap() || values.size() == 0) {
    Fail(origin, values, "'values' must map at least one value to its replacement");
  }
  std::set<std::string> seen;  // typed keys: 1 and 1.0 are one number
  for (const auto& entry : values) {
    std::string from = ScalarJson(origin, entry.first, "a key of 'values'");
    if (!seen.insert(from).second) Fail(origin, entry.first, "'values' maps " + from + " twice");
    step.values.emplace_back(std::move(from), ScalarJson(origin, entry.second, "a mapped value"));
  }
  if (const YAML::Node unmapped = body["unmapped"]) {
    const std::string text = String(origin, unmapped, "unmapped");
    if (text != "refuse" && text != "keep") {
      Fail(origin, unmapped, "'unmapped' must be refuse or keep");
    }
    step.keep_unmapped = text == "keep";
  }
  return step;
}

Rounding ParseRounding(std::string_view origin, const YAML::Node& node) {
  const std::string text = String(origin, node, "round");
  if (text == "none") return Rounding::kNone;
  if (text == "half-up") return Rounding::kHalfUp;
  if (text == "half-even") return Rounding::kHalfEven;
  if (text == "down") return Rounding::kDown;
  if (text == "up") return Rounding::kUp;
  if (text == "floor") return Rounding::kFloor;
  if (text == "ceiling") return Rounding::kCeiling;
  Fail(origin, node, "'round' must be none, half-up, half-even, down, up, floor or ceiling");
}

AdapterStep ParseConvert(std::string_view origin, const YAML::Node& body) {
  CheckKeys(origin, body, {"at", "factor", "round", "digits"}, "a convert step");
  AdapterStep step;
  step.kind = AdapterStepKind::kConvert;
  step.at = Pointer(origin, Need(origin, body, "at", "a convert step"), "at");
  const YAML::Node factor = Need(origin, body, "factor", "a convert step");
  const std::string factor_json = ScalarJson(origin, factor, "factor");
  const auto [end, error] =
      std::from_chars(factor_json.data(), factor_json.data() + factor_json.size(), step.factor);
  if (error != std::errc() || end != factor_json.data() + factor_json.size() ||
      !std::isfinite(step.factor) || step.factor == 0) {
    Fail(origin, factor, "'factor' must be a number other than 0");
  }
  if (const YAML::Node round = body["round"]) step.rounding = ParseRounding(origin, round);
  if (const YAML::Node digits = body["digits"]) {
    const std::string text = digits.IsScalar() ? digits.Scalar() : std::string();
    if (text.empty() || text.size() > 2 || !LooksLikeInteger(text) || text[0] == '-' ||
        text[0] == '+' || std::stoi(text) > kDigitsMax) {
      Fail(origin, digits, "'digits' must be an integer from 0 to " + std::to_string(kDigitsMax));
    }
    if (step.rounding == Rounding::kNone) Fail(origin, digits, "'digits' needs a 'round' mode");
    step.digits = std::stoi(text);
  }
  return step;
}

// One step: a mapping with exactly one key, the kind; its value holds the step's fields.
AdapterStep ParseStep(std::string_view origin, const YAML::Node& node) {
  if (!node.IsMap() || node.size() != 1) {
    Fail(origin, node,
         "a step is a mapping with exactly one key naming its kind (move, set, map, convert, "
         "drop)" +
             std::string(node.IsMap() ? ", got " + std::to_string(node.size()) + " keys" : ""));
  }
  const auto entry = *node.begin();
  const std::string kind = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
  const YAML::Node& body = entry.second;
  AdapterStep step;
  if (kind == "move") {
    step = ParseMove(origin, body);
  } else if (kind == "set") {
    step = ParseSet(origin, body);
  } else if (kind == "map") {
    step = ParseMap(origin, body);
  } else if (kind == "convert") {
    step = ParseConvert(origin, body);
  } else if (kind == "drop") {
    step.kind = AdapterStepKind::kDrop;
    step.at = Pointer(origin, body, "drop");
  } else {
    Fail(origin, entry.first, "unknown step kind '" + kind + "' (move, set, map, convert or drop)");
  }
  step.line = node.Mark().line + 1;
  return step;
}

std::string ParseId(std::string_view origin, const YAML::Node& node) {
  std::string id = String(origin, node, "id");
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  };
  const bool valid = !id.empty() && id.size() <= kIdLengthMax && allowed(id[0]) && id[0] != '.' &&
                     id[0] != '_' && id[0] != '-' && std::all_of(id.begin(), id.end(), allowed);
  if (!valid) {
    Fail(origin, node,
         "'id' must match [a-z0-9][a-z0-9._-]* (at most " + std::to_string(kIdLengthMax) +
             " characters), got '" + id + "'");
  }
  return id;
}

std::vector<AdapterStep> ParseSteps(std::string_view origin, const YAML::Node& steps) {
  if (!steps.IsSequence() || steps.size() == 0) {
    Fail(origin, steps, "'steps' must list at least one step");
  }
  if (steps.size() > kAdapterStepsMax) {
    Fail(origin, steps,
         "'steps' lists " + std::to_string(steps.size()) + " steps, more than " +
             std::to_string(kAdapterStepsMax));
  }
  std::vector<AdapterStep> out;
  for (const YAML::Node& step : steps) out.push_back(ParseStep(origin, step));
  assert(!out.empty() && out.size() <= kAdapterStepsMax);
  return out;
}

Adapter ParseAdapter(std::string_view origin, const YAML::Node& root) {
  CheckKeys(origin, root, {"id", "type", "from", "to", "description", "steps"}, "an adapter");
  Adapter adapter;
  adapter.origin = std::string(origin);
  adapter.id = ParseId(origin, Need(origin, root, "id", "an adapter"));
  adapter.type = String(origin, Need(origin, root, "type", "an adapter"), "type");
  if (adapter.type.empty()) Fail(origin, root["type"], "'type' must not be empty");
  adapter.from = Version(origin, Need(origin, root, "from", "an adapter"), "from");
  adapter.to = Version(origin, Need(origin, root, "to", "an adapter"), "to");
  if (adapter.from == adapter.to) {
    Fail(origin, root["to"],
         "'from' and 'to' must differ (both are " + std::to_string(adapter.from) + ")");
  }
  if (const YAML::Node description = root["description"]) {
    adapter.description = String(origin, description, "description");
  }
  adapter.steps = ParseSteps(origin, Need(origin, root, "steps", "an adapter"));
  return adapter;
}

}  // namespace

Result<Adapter> AdapterFromYaml(std::string_view yaml_text, std::string_view origin) {
  if (yaml_text.size() > kAdapterBytesMax) {
    return Status::InvalidArgument(std::string(origin) + ": " + std::to_string(yaml_text.size()) +
                                   " bytes, more than an adapter may hold (" +
                                   std::to_string(kAdapterBytesMax) + ")");
  }
  EVIDENT_ASSIGN_OR_RETURN(const YAML::Node root, LoadYaml(yaml_text, origin));
  try {
    return ParseAdapter(origin, root);
  } catch (const AdapterError& e) {
    return Status::InvalidArgument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(origin) + ": " + e.what());
  }
}

namespace adapter {

Result<std::string> ScalarToJson(const YAML::Node& node, std::string_view origin) {
  try {
    if (!node.IsScalar() && !node.IsNull()) Fail(origin, node, "a value must be a scalar");
    std::string out;
    json::Writer writer(out);
    WriteScalar(origin, node, writer);
    return out;
  } catch (const AdapterError& e) {
    return Status::InvalidArgument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(origin) + ": " + e.what());
  }
}

}  // namespace adapter

}  // namespace evident
