// libFuzzer target: the schema diff (src/compat, DiffSchemas and its reports).
//
// Input: old schema bytes, a NUL byte, new schema bytes (no NUL: the input is diffed against
// itself). Small limits keep each run fast. Invariants checked: no crash, no sanitizer report,
// a schema diffed against itself has no changes, both reports of every diff are JSON that
// parses back, and (the composition path) an object schema without references or a top-level
// combinator is fully compatible, both ways, with itself wrapped as the one member of an
// `allOf`, `anyOf` or `oneOf`; and (the levels around a property) an object schema with an
// empty `allOf` member is fully compatible, both ways, with the same schema whose member repeats
// its `properties` and `required`.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "compat/report.h"
#include "evident/compat.h"

namespace {

// A schema and the same schema as the single member of a combinator admit the same data.
void CheckSingletonWrap(std::string_view schema, const evident::DiffOptions& options) {
  using namespace evident;
  if (schema.find('$') != std::string_view::npos) return;  // references would move
  static simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(schema.data(), schema.size()).get(object) != simdjson::SUCCESS) return;
  for (const char* keyword : {"anyOf", "oneOf", "allOf"}) {
    if (object[keyword].error() == simdjson::SUCCESS) return;
  }
  for (const char* keyword : {"anyOf", "oneOf", "allOf"}) {
    const std::string wrapped = std::string("{\"") + keyword + "\":[" + std::string(schema) + "]}";
    for (const bool forth : {true, false}) {
      const auto diff =
          forth ? DiffSchemas(schema, wrapped, options) : DiffSchemas(wrapped, schema, options);
      if (diff.ok() && !diff->CompatibleUnder(CompatMode::kFull)) __builtin_trap();
    }
  }
}

// An allOf member that repeats the base's `properties` and `required` admits the same data as
// an empty member: the levels around a property (compat/context.cc) must see that.
void CheckRepeatedInMember(std::string_view schema, const evident::DiffOptions& options) {
  using namespace evident;
  if (schema.find('$') != std::string_view::npos) return;
  static simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(schema.data(), schema.size()).get(object) != simdjson::SUCCESS) return;
  simdjson::dom::object properties;
  if (object["properties"].get(properties) != simdjson::SUCCESS) return;
  for (const char* keyword : {"anyOf", "oneOf", "allOf"}) {
    if (object[keyword].error() == simdjson::SUCCESS) return;
  }
  std::string member = "{\"properties\":" + simdjson::minify(properties);
  simdjson::dom::array required;
  if (object["required"].get(required) == simdjson::SUCCESS) {
    member += ",\"required\":" + simdjson::minify(required);
  }
  member += "}";
  std::string base = simdjson::minify(object);
  base.pop_back();  // the closing brace; the object has a member, so a comma follows
  const std::string empty = base + ",\"allOf\":[{}]}";
  const std::string repeated = base + ",\"allOf\":[" + member + "]}";
  for (const bool forth : {true, false}) {
    const auto diff =
        forth ? DiffSchemas(empty, repeated, options) : DiffSchemas(repeated, empty, options);
    if (diff.ok() && !diff->CompatibleUnder(CompatMode::kFull)) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace evident;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t separator = input.find('\0');
  const std::string_view old_json = input.substr(0, separator);
  const std::string_view new_json =
      separator == std::string_view::npos ? old_json : input.substr(separator + 1);

  DiffOptions options;
  options.comparisons_max = 20'000;
  options.depth_max = 64;
  options.nesting_depth_max = 64;
  options.strictness = size % 2 == 0 ? Strictness::kLenient : Strictness::kStrict;
  const auto diff = DiffSchemas(old_json, new_json, options);
  if (!diff.ok()) return 0;
  if (old_json == new_json && !diff->changes.empty()) __builtin_trap();
  CheckSingletonWrap(old_json, options);
  CheckRepeatedInMember(old_json, options);

  static simdjson::dom::parser parser;
  for (const CompatMode mode : {CompatMode::kBackward, CompatMode::kForward, CompatMode::kFull}) {
    const std::string json = compat::DiffToJson(*diff, mode, options.strictness);
    simdjson::dom::element parsed;
    if (parser.parse(json).get(parsed) != simdjson::SUCCESS) __builtin_trap();
    (void)compat::DiffToText(*diff, mode, options.strictness);
  }
  return 0;
}
