// Applying an adapter to a payload, and describing its steps.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <memory>

#include "adapter/decimal.h"
#include "adapter/json_text.h"
#include "compat/json_tree.h"
#include "evident/adapter.h"
#include "json/pointer.h"
#include "json/writer.h"

namespace evident {
namespace {

using compat::JsonMember;
using compat::JsonValue;

// Payloads nest at most this deep (the schema validator's instances are far shallower).
constexpr int64_t kPayloadDepthMax = 64;
// How much of an unmapped value a message quotes.
constexpr size_t kQuotedBytesMax = 64;

std::string_view KindName(AdapterStepKind kind) {
  switch (kind) {
    case AdapterStepKind::kMove:
      return "move";
    case AdapterStepKind::kSet:
      return "set";
    case AdapterStepKind::kMap:
      return "map";
    case AdapterStepKind::kConvert:
      return "convert";
    case AdapterStepKind::kDrop:
      return "drop";
  }
  return "?";
}

std::string_view RoundingName(Rounding rounding) {
  switch (rounding) {
    case Rounding::kNone:
      return "none";
    case Rounding::kHalfUp:
      return "half-up";
    case Rounding::kHalfEven:
      return "half-even";
    case Rounding::kDown:
      return "down";
    case Rounding::kUp:
      return "up";
    case Rounding::kFloor:
      return "floor";
    case Rounding::kCeiling:
      return "ceiling";
  }
  return "?";
}

std::string_view TypeName(const JsonValue& value) {
  switch (value.kind) {
    case JsonValue::Kind::kNull:
      return "null";
    case JsonValue::Kind::kBool:
      return "a boolean";
    case JsonValue::Kind::kNumber:
      return "a number";
    case JsonValue::Kind::kString:
      return "a string";
    case JsonValue::Kind::kArray:
      return "an array";
    case JsonValue::Kind::kObject:
      return "an object";
  }
  return "?";
}

// The child of an object (by member name) or of an array (by index: decimal, no leading zero).
JsonValue* Child(JsonValue& container, const std::string& token) {
  if (container.IsObject()) {
    for (JsonMember& member : container.object) {
      if (member.name == token) return &member.value;
    }
    return nullptr;
  }
  if (!container.IsArray() || token.empty() || token.size() > 9 ||
      token.find_first_not_of("0123456789") != std::string::npos ||
      (token.size() > 1 && token[0] == '0')) {
    return nullptr;
  }
  const size_t index = std::stoul(token);
  return index < container.array.size() ? &container.array[index] : nullptr;
}

// Where a pointer's last token lives: its parent container, when every token before it leads to
// an object or array member that exists. `blocked`: the walk met a string, number, boolean or
// null before the last token (as opposed to a missing member).
struct Place {
  JsonValue* parent = nullptr;
  std::string name;
  bool blocked = false;
};

Place Locate(JsonValue& root, const std::string& pointer) {
  std::vector<std::string> tokens;
  const bool valid = json::SplitPointer(pointer, tokens);
  assert(valid && !tokens.empty());  // checked by the parser, and by ApplyAdapter
  (void)valid;
  Place place;
  JsonValue* at = &root;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (!at->IsObject() && !at->IsArray()) {
      place.blocked = true;
      return place;
    }
    at = Child(*at, tokens[i]);
    if (at == nullptr) return place;
  }
  if (!at->IsObject() && !at->IsArray()) {
    place.blocked = true;
    return place;
  }
  place.parent = at;
  place.name = std::move(tokens.back());
  return place;
}

// The value at `pointer`, or nullptr when there is none.
JsonValue* Find(JsonValue& root, const std::string& pointer) {
  const Place place = Locate(root, pointer);
  return place.parent == nullptr ? nullptr : Child(*place.parent, place.name);
}

// Writes `value` at `pointer` (replacing a member in its place, or appending a new one). The
// parent must be an existing object. Returns the problem, or "" when written.
std::string Put(JsonValue& root, const std::string& pointer, JsonValue value) {
  Place place = Locate(root, pointer);
  if (place.blocked) {
    return "the path to " + pointer + " passes through a value that is not an object";
  }
  if (place.parent == nullptr) return "the parent of " + pointer + " does not exist";
  if (!place.parent->IsObject()) return "the parent of " + pointer + " is an array, not an object";
  if (JsonValue* existing = Child(*place.parent, place.name)) {
    *existing = std::move(value);
  } else {
    place.parent->object.push_back(JsonMember{std::move(place.name), std::move(value)});
  }
  return {};
}

// Removes the member at `pointer` into `taken`. Returns the problem ("" when removed or absent);
// `found` tells the two apart.
std::string Take(JsonValue& root, const std::string& pointer, JsonValue& taken, bool& found) {
  found = false;
  const Place place = Locate(root, pointer);
  if (place.parent == nullptr || Child(*place.parent, place.name) == nullptr) return {};
  if (!place.parent->IsObject()) {
    return "the parent of " + pointer + " is an array: only object members can be removed";
  }
  auto& members = place.parent->object;
  for (auto it = members.begin(); it != members.end(); ++it) {
    if (it->name == place.name) {
      taken = std::move(it->value);
      members.erase(it);
      found = true;
      return {};
    }
  }
  assert(false && "Child found a member that the loop did not");
  return {};
}

std::string ApplyMove(JsonValue& root, const AdapterStep& step) {
  JsonValue value;
  bool found = false;
  std::string problem = Take(root, step.at, value, found);
  if (!problem.empty()) return problem;
  if (!found) return step.required ? step.at + " is absent and the move is required" : "";
  return Put(root, step.to, std::move(value));
}

std::string ApplySet(JsonValue& root, const AdapterStep& step) {
  Result<std::unique_ptr<JsonValue>> value =
      compat::ParseJsonTree(step.value_json, kPayloadDepthMax);
  if (!value.ok()) return "the value is not JSON: " + value.status().message();
  return Put(root, step.at, std::move(**value));
}

std::string ApplyDrop(JsonValue& root, const AdapterStep& step) {
  JsonValue dropped;
  bool found = false;
  return Take(root, step.at, dropped, found);
}

// Keys compare as text in the compact form that AdapterFromYaml writes and JsonText reproduces:
// strings quoted alike, integers in decimal, other numbers as their shortest text (1.0 is "1").
std::string ApplyMap(JsonValue& root, const AdapterStep& step) {
  JsonValue* value = Find(root, step.at);
  if (value == nullptr) return {};
  const std::string key = adapter::JsonText(*value);
  for (const auto& [from, to] : step.values) {
    if (from != key) continue;
    Result<std::unique_ptr<JsonValue>> replacement = compat::ParseJsonTree(to, kPayloadDepthMax);
    if (!replacement.ok()) return "the replacement " + to + " is not JSON";
    *value = std::move(**replacement);
    return {};
  }
  if (step.keep_unmapped) return {};
  // Cut whole characters: the message is stored as text, and a database refuses half a UTF-8
  // sequence.
  const std::string_view shown = json::Utf8Prefix(key, kQuotedBytesMax);
  return "value " + std::string(shown) + (shown.size() < key.size() ? "..." : "") +
         " has no mapping (unmapped: refuse)";
}

std::string ApplyConvert(JsonValue& root, const AdapterStep& step) {
  if (!std::isfinite(step.factor) || step.factor == 0 || step.digits < 0 || step.digits > 15) {
    return "the step is invalid (factor must be finite and non-zero, digits 0 to 15)";
  }
  JsonValue* value = Find(root, step.at);
  if (value == nullptr) return {};
  if (!value->IsNumber()) return std::string(TypeName(*value)) + " is not a number";
  const adapter::Decimal number = value->is_integer ? adapter::DecimalFromInteger(value->integer)
                                                    : adapter::DecimalFromDouble(value->number);
  const adapter::Decimal result =
      adapter::Round(adapter::Multiply(number, adapter::DecimalFromDouble(step.factor)),
                     step.rounding, step.digits);
  JsonValue out;
  out.kind = JsonValue::Kind::kNumber;
  if (const auto integer = adapter::ToInteger(result); integer && step.digits == 0) {
    out.is_integer = true;
    out.integer = *integer;
    out.number = static_cast<double>(*integer);
  } else if (const auto number_out = adapter::ToDouble(result)) {
    out.number = *number_out;
  } else {
    return "the result " + adapter::DecimalText(result) + " is out of range";
  }
  *value = std::move(out);
  return {};
}

std::string ApplyStep(JsonValue& root, const AdapterStep& step) {
  switch (step.kind) {
    case AdapterStepKind::kMove:
      return ApplyMove(root, step);
    case AdapterStepKind::kSet:
      return ApplySet(root, step);
    case AdapterStepKind::kMap:
      return ApplyMap(root, step);
    case AdapterStepKind::kConvert:
      return ApplyConvert(root, step);
    case AdapterStepKind::kDrop:
      return ApplyDrop(root, step);
  }
  return "unknown step kind";
}

bool PointersValid(const AdapterStep& step) {
  const auto valid = [](const std::string& p) { return !p.empty() && json::IsPointer(p); };
  return valid(step.at) && (step.kind != AdapterStepKind::kMove || valid(step.to));
}

// "step 2 (convert /amount)", "step 1 (move /state -> /status)".
std::string StepName(size_t index, const AdapterStep& step) {
  std::string name =
      "step " + std::to_string(index + 1) + " (" + std::string(KindName(step.kind)) + " " + step.at;
  if (step.kind == AdapterStepKind::kMove) name += " -> " + step.to;
  return name + ")";
}

}  // namespace

Result<std::string> ApplyAdapter(const Adapter& adapter, std::string_view payload_json) {
  const std::string context = "adapter '" + adapter.id + "'";
  Result<std::unique_ptr<JsonValue>> root = compat::ParseJsonTree(payload_json, kPayloadDepthMax);
  if (!root.ok()) {
    return Status::InvalidArgument(context + ": payload: " + root.status().message());
  }
  for (size_t i = 0; i < adapter.steps.size(); ++i) {
    const AdapterStep& step = adapter.steps[i];
    std::string problem = PointersValid(step)
                              ? ApplyStep(**root, step)
                              : std::string("a pointer is not a JSON Pointer to a member");
    if (!problem.empty()) {
      return Status::InvalidArgument(context + " " + StepName(i, step) + ": " + problem);
    }
  }
  return adapter::JsonText(**root);
}

namespace {

std::string DescribeStep(const AdapterStep& step) {
  std::string line(KindName(step.kind));
  line += " " + step.at;
  switch (step.kind) {
    case AdapterStepKind::kMove:
      line += " -> " + step.to;
      if (step.required) line += " (required)";
      break;
    case AdapterStepKind::kSet:
      line += " = " + step.value_json;
      break;
    case AdapterStepKind::kMap:
      for (size_t i = 0; i < step.values.size(); ++i) {
        line += (i == 0 ? ": " : ", ") + step.values[i].first + " -> " + step.values[i].second;
      }
      line += step.keep_unmapped ? "; others kept" : "; others refused";
      break;
    case AdapterStepKind::kConvert:
      line += " * " + (std::isfinite(step.factor) ? adapter::ShortestNumberText(step.factor)
                                                  : std::string("(not finite)"));
      if (step.rounding != Rounding::kNone) {
        line += ", round " + std::string(RoundingName(step.rounding)) + " to " +
                std::to_string(step.digits) + (step.digits == 1 ? " digit" : " digits");
      }
      break;
    case AdapterStepKind::kDrop:
      break;
  }
  return line;
}

}  // namespace

std::string DescribeSteps(const Adapter& adapter) {
  std::string out;
  for (const AdapterStep& step : adapter.steps) out += DescribeStep(step) + "\n";
  return out;
}

}  // namespace evident
