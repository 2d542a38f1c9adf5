#include "adapter/generate.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "adapter/json_text.h"
#include "compat/json_tree.h"
#include "json/pointer.h"
#include "json/writer.h"

namespace evident::adapter {
namespace {

using compat::JsonMember;
using compat::JsonValue;

// Schema documents nest deeper than payloads ($defs inside properties inside ...).
constexpr int64_t kSchemaDepthMax = 256;
// allOf / anyOf / oneOf merges along one path (each makes a new, merged schema).
constexpr int kMergeDepthMax = 16;
constexpr size_t kAttemptsPerInstance = 8;
constexpr size_t kAttemptsExtra = 16;
// Strings are at most this long (a larger minLength gives an invalid candidate).
constexpr size_t kStringLengthMax = 1024;
// Numbers are chosen within +-2^53, where doubles are exact integers.
constexpr double kNumberMagnitudeMax = 9007199254740992.0;
// A range without bounds, or with one, spans this much.
constexpr double kDefaultSpan = 1000;

enum class Mode { kRequiredOnly, kAllOptional, kRandom };

// How far one path has come: nested values, $ref hops, merges.
struct Depth {
  int nesting = 0;
  int refs = 0;
  int merges = 0;
};

const JsonValue& EmptySchema() {
  static const JsonValue* const empty = [] {
    auto* value = new JsonValue;
    value->kind = JsonValue::Kind::kObject;
    return value;
  }();
  return *empty;
}

// A number keyword of `schema` (a boolean exclusiveMinimum of draft 4 is not one).
std::optional<double> NumberKeyword(const JsonValue& schema, std::string_view name) {
  const JsonValue* value = schema.Get(name);
  if (value == nullptr || !value->IsNumber()) return std::nullopt;
  return value->number;
}

// A copy of `schema` without `removed` and without the definitions (which $ref resolves in the
// root document, so merged copies need not carry them).
JsonValue Without(const JsonValue& schema, std::string_view removed) {
  JsonValue out;
  out.kind = JsonValue::Kind::kObject;
  for (const JsonMember& member : schema.object) {
    if (member.name == removed || member.name == "$defs" || member.name == "definitions") continue;
    out.object.push_back(member);
  }
  return out;
}

// Naive merge of `member` into `base`: its properties join (base wins on a name), required
// lists join, and any other keyword is taken when base has none.
void MergeInto(JsonValue& base, const JsonValue& member) {
  if (!member.IsObject()) return;
  for (const JsonMember& keyword : member.object) {
    JsonValue* mine = nullptr;
    for (JsonMember& existing : base.object) {
      if (existing.name == keyword.name) mine = &existing.value;
    }
    if (mine == nullptr) {
      if (keyword.name != "$defs" && keyword.name != "definitions") base.object.push_back(keyword);
      continue;
    }
    if (keyword.name == "properties" && mine->IsObject() && keyword.value.IsObject()) {
      for (const JsonMember& property : keyword.value.object) {
        if (mine->Get(property.name) == nullptr) mine->object.push_back(property);
      }
    } else if (keyword.name == "required" && mine->IsArray() && keyword.value.IsArray()) {
      for (const JsonValue& name : keyword.value.array) {
        const bool present =
            std::any_of(mine->array.begin(), mine->array.end(),
                        [&](const JsonValue& v) { return v.string == name.string; });
        if (!present) mine->array.push_back(name);
      }
    }
  }
}

// Writes one candidate at a time; owns the PRNG (splitmix64, the same on every platform).
class Generator {
 public:
  Generator(const JsonValue& root, uint64_t seed) : root_(root), state_(seed) {}

  // One candidate into `out`; false when it outgrew kGenerateInstanceBytesMax.
  bool Candidate(Mode mode, std::string& out) {
    out.clear();
    mode_ = mode;
    out_ = &out;
    overflow_ = false;
    json::Writer writer(out);
    writer_ = &writer;
    Value(root_, Depth{});
    writer_ = nullptr;
    return !overflow_ && out.size() <= kGenerateInstanceBytesMax;
  }

 private:
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform enough in [0, n) for n > 0 (the modulo bias is irrelevant here).
  uint64_t Below(uint64_t n) {
    assert(n > 0);
    return Next() % n;
  }
  // At the depth limits a value can only be a null that stands for "too deep", so optional
  // members and items beyond minItems are left out there.
  static bool AtLimit(const Depth& depth) {
    return depth.nesting > kGenerateDepthMax || depth.refs >= kGenerateRefDepthMax;
  }
  // Whether an optional member is written.
  bool Include(const Depth& depth) {
    if (AtLimit(depth)) return false;
    return mode_ == Mode::kAllOptional || (mode_ == Mode::kRandom && Below(2) == 0);
  }

  void Value(const JsonValue& schema, Depth depth);
  bool Combine(const JsonValue& schema, Depth depth);
  const JsonValue& Target(const std::string& ref) const;
  JsonValue Flatten(const JsonValue& schema, Depth& depth) const;
  std::string TypeOf(const JsonValue& schema);
  void Object(const JsonValue& schema, Depth depth);
  void Array(const JsonValue& schema, Depth depth);
  void String(const JsonValue& schema);
  void Integer(const JsonValue& schema);
  void Number(const JsonValue& schema);
  std::string Formatted(std::string_view format);

  const JsonValue& root_;
  uint64_t state_;
  Mode mode_ = Mode::kRandom;
  std::string* out_ = nullptr;
  json::Writer* writer_ = nullptr;
  bool overflow_ = false;
};

// The schema a $ref names: a local one ("#/$defs/x", "#/definitions/x", any "#/..." pointer) in
// the root document; a remote or dangling one stands for any value ({}).
const JsonValue& Generator::Target(const std::string& ref) const {
  if (ref.empty() || ref[0] != '#') return EmptySchema();
  const JsonValue* target = compat::Resolve(root_, json::PercentDecode(ref.substr(1)));
  return target == nullptr ? EmptySchema() : *target;
}

// `schema` with its $ref chain merged in (the keywords beside a $ref win), at most
// kGenerateRefDepthMax hops along the path.
JsonValue Generator::Flatten(const JsonValue& schema, Depth& depth) const {
  if (!schema.IsObject()) return EmptySchema();  // a boolean schema adds nothing to a merge
  JsonValue out = Without(schema, "$ref");
  const JsonValue* ref = schema.Get("$ref");
  if (ref != nullptr && ref->IsString() && ++depth.refs <= kGenerateRefDepthMax) {
    MergeInto(out, Flatten(Target(ref->string), depth));
  }
  return out;
}

// $ref, allOf, anyOf, oneOf: writes the value of the merged schema and returns true; false when
// `schema` has none of them.
bool Generator::Combine(const JsonValue& schema, Depth depth) {
  if (const JsonValue* ref = schema.Get("$ref"); ref != nullptr && ref->IsString()) {
    if (depth.refs >= kGenerateRefDepthMax) {
      writer_->Null();
      return true;
    }
    Value(Flatten(schema, depth), depth);
    return true;
  }
  for (const std::string_view name : {"allOf", "anyOf", "oneOf"}) {
    const JsonValue* members = schema.Get(name);
    if (members == nullptr || !members->IsArray() || members->array.empty()) continue;
    if (++depth.merges > kMergeDepthMax) {
      writer_->Null();
      return true;
    }
    JsonValue merged = Without(schema, name);
    if (name == "allOf") {
      for (const JsonValue& member : members->array) MergeInto(merged, Flatten(member, depth));
    } else {
      MergeInto(merged, Flatten(members->array[Below(members->array.size())], depth));
    }
    Value(merged, depth);
    return true;
  }
  return false;
}

void Generator::Value(const JsonValue& schema, Depth depth) {
  // Every value writes at least one byte, so the size check also bounds the work.
  if (overflow_ || out_->size() > kGenerateInstanceBytesMax || depth.nesting > kGenerateDepthMax) {
    overflow_ = overflow_ || out_->size() > kGenerateInstanceBytesMax;
    writer_->Null();  // keeps the writer's nesting paired; the candidate is dropped or filtered
    return;
  }
  if (schema.IsBool()) {
    // true admits anything; false admits nothing (the candidate will be filtered out).
    if (schema.boolean) {
      String(EmptySchema());
    } else {
      writer_->Null();
    }
    return;
  }
  if (!schema.IsObject()) {
    writer_->Null();
    return;
  }
  if (Combine(schema, depth)) return;
  if (const JsonValue* constant = schema.Get("const")) {
    WriteJson(*constant, *writer_);
    return;
  }
  if (const JsonValue* values = schema.Get("enum");
      values != nullptr && values->IsArray() && !values->array.empty()) {
    WriteJson(values->array[Below(values->array.size())], *writer_);
    return;
  }
  const std::string type = TypeOf(schema);
  ++depth.nesting;
  if (type == "object") {
    Object(schema, depth);
  } else if (type == "array") {
    Array(schema, depth);
  } else if (type == "integer") {
    Integer(schema);
  } else if (type == "number") {
    Number(schema);
  } else if (type == "boolean") {
    writer_->Bool(Below(2) == 0);
  } else if (type == "null") {
    writer_->Null();
  } else {
    String(schema);
  }
}

// The declared type (one of a list, chosen), or the one its keywords suggest; "string" when
// nothing does.
std::string Generator::TypeOf(const JsonValue& schema) {
  if (const JsonValue* type = schema.Get("type")) {
    if (type->IsString()) return type->string;
    if (type->IsArray() && !type->array.empty()) {
      const JsonValue& chosen = type->array[Below(type->array.size())];
      return chosen.IsString() ? chosen.string : "null";
    }
  }
  const auto has = [&](std::initializer_list<std::string_view> names) {
    return std::any_of(names.begin(), names.end(),
                       [&](std::string_view name) { return schema.Get(name) != nullptr; });
  };
  if (has({"properties", "required", "additionalProperties"})) return "object";
  if (has({"items", "prefixItems", "minItems", "maxItems"})) return "array";
  if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})) {
    return "number";
  }
  return "string";
}

// Required members always, optional ones by mode; a required name without a property schema
// takes the additionalProperties schema (or any string).
void Generator::Object(const JsonValue& schema, Depth depth) {
  std::vector<std::string_view> required;
  if (const JsonValue* names = schema.Get("required"); names != nullptr && names->IsArray()) {
    for (const JsonValue& name : names->array) {
      if (name.IsString()) required.push_back(name.string);
    }
  }
  const auto is_required = [&](std::string_view name) {
    return std::find(required.begin(), required.end(), name) != required.end();
  };
  const JsonValue* properties = schema.Get("properties");
  if (properties != nullptr && !properties->IsObject()) properties = nullptr;
  const JsonValue* additional = schema.Get("additionalProperties");
  size_t members = 0;
  writer_->BeginObject();
  if (properties != nullptr) {
    for (const JsonMember& property : properties->object) {
      if (members == kGenerateMembersMax) break;
      if (!is_required(property.name) && !Include(depth)) continue;
      writer_->Key(property.name);
      Value(property.value, depth);
      ++members;
    }
  }
  for (const std::string_view name : required) {
    if (members == kGenerateMembersMax) break;
    if (properties != nullptr && properties->Get(name) != nullptr) continue;
    writer_->Key(name);
    Value(additional != nullptr && additional->IsObject() ? *additional : EmptySchema(), depth);
    ++members;
  }
  writer_->EndObject();
}

// minItems..maxItems items (clamped to kGenerateItemsMax), by prefixItems (2020-12) or an items
// list (draft 7) first, then items (2020-12, draft 7) or additionalItems (draft 7).
void Generator::Array(const JsonValue& schema, Depth depth) {
  const JsonValue* prefix = schema.Get("prefixItems");
  const JsonValue* rest = schema.Get("items");
  if (rest != nullptr && rest->IsArray()) {  // draft 7 tuple
    prefix = rest;
    rest = schema.Get("additionalItems");
  }
  if (prefix != nullptr && !prefix->IsArray()) prefix = nullptr;
  const size_t prefix_size = prefix == nullptr ? 0 : prefix->array.size();
  const std::optional<double> min_items = NumberKeyword(schema, "minItems");
  const std::optional<double> max_items = NumberKeyword(schema, "maxItems");
  const auto clamp = [](double n) {
    return static_cast<size_t>(std::clamp(n, 0.0, static_cast<double>(kGenerateItemsMax)));
  };
  size_t high = clamp(max_items.value_or(static_cast<double>(kGenerateItemsMax)));
  if (rest != nullptr && rest->IsBool() && !rest->boolean) high = std::min(high, prefix_size);
  const size_t low = std::min(clamp(min_items.value_or(0)), high);
  size_t count = low;
  if (!AtLimit(depth) && mode_ != Mode::kRequiredOnly) {
    count = mode_ == Mode::kAllOptional ? high : low + Below(high - low + 1);
  }
  writer_->BeginArray();
  for (size_t i = 0; i < count; ++i) {
    const JsonValue* item = i < prefix_size ? &prefix->array[i] : rest;
    Value(item == nullptr ? EmptySchema() : *item, depth);
  }
  writer_->EndArray();
}

// A value of a known format, or "" for a format this does not know.
std::string Generator::Formatted(std::string_view format) {
  char buffer[64];
  if (format == "date-time" || format == "date" || format == "time") {
    const auto month = 1 + Below(12), day = 1 + Below(28), hour = Below(24), minute = Below(60),
               second = Below(60);
    if (format == "date") {
      std::snprintf(buffer, sizeof buffer, "2024-%02d-%02d", static_cast<int>(month),
                    static_cast<int>(day));
    } else if (format == "time") {
      std::snprintf(buffer, sizeof buffer, "%02d:%02d:%02dZ", static_cast<int>(hour),
                    static_cast<int>(minute), static_cast<int>(second));
    } else {
      std::snprintf(buffer, sizeof buffer, "2024-%02d-%02dT%02d:%02d:%02dZ",
                    static_cast<int>(month), static_cast<int>(day), static_cast<int>(hour),
                    static_cast<int>(minute), static_cast<int>(second));
    }
    return buffer;
  }
  if (format == "uuid") {
    const uint64_t high = Next(), low = Next();
    // Version 4, variant 10xx.
    std::snprintf(buffer, sizeof buffer, "%08x-%04x-4%03x-%04x-%012llx",
                  static_cast<unsigned>(high >> 32), static_cast<unsigned>((high >> 16) & 0xFFFF),
                  static_cast<unsigned>(high & 0xFFF),
                  static_cast<unsigned>(0x8000 | ((low >> 48) & 0x3FFF)),
                  static_cast<unsigned long long>(low & 0xFFFFFFFFFFFFULL));
    return buffer;
  }
  if (format == "email") return "user" + std::to_string(Below(10000)) + "@example.com";
  if (format == "uri") return "https://example.com/" + std::to_string(Below(10000));
  return {};
}

// A formatted value, or lowercase letters within minLength..maxLength (at most
// kStringLengthMax).
void Generator::String(const JsonValue& schema) {
  if (const JsonValue* format = schema.Get("format"); format != nullptr && format->IsString()) {
    if (std::string text = Formatted(format->string); !text.empty()) {
      writer_->String(text);
      return;
    }
  }
  const auto length = [&](std::string_view name, double fallback) {
    return static_cast<size_t>(std::clamp(NumberKeyword(schema, name).value_or(fallback), 0.0,
                                          static_cast<double>(kStringLengthMax)));
  };
  const size_t length_min = length("minLength", 0);
  const size_t length_max = length("maxLength", static_cast<double>(length_min + 12));
  const size_t low = std::max(length_min, std::min<size_t>(1, length_max));  // not empty if allowed
  const size_t high = std::max(low, std::min(length_max, low + 12));
  const size_t count = low + Below(high - low + 1);
  std::string text;
  for (size_t i = 0; i < count; ++i) text.push_back(static_cast<char>('a' + Below(26)));
  writer_->String(text);
}

// The bounds of a number: [minimum, maximum], narrowed by exclusiveMinimum / exclusiveMaximum by
// `step` (1 for integers), defaulting to a span of kDefaultSpan around the bound that is given.
std::pair<double, double> Bounds(const JsonValue& schema, double step) {
  std::optional<double> low = NumberKeyword(schema, "minimum");
  std::optional<double> high = NumberKeyword(schema, "maximum");
  if (const auto exclusive = NumberKeyword(schema, "exclusiveMinimum")) {
    low = std::max(low.value_or(*exclusive + step), *exclusive + step);
  }
  if (const auto exclusive = NumberKeyword(schema, "exclusiveMaximum")) {
    high = std::min(high.value_or(*exclusive - step), *exclusive - step);
  }
  if (!low && !high) low = 0;
  if (!low) low = *high - kDefaultSpan;
  if (!high) high = *low + kDefaultSpan;
  return {std::clamp(*low, -kNumberMagnitudeMax, kNumberMagnitudeMax),
          std::clamp(*high, -kNumberMagnitudeMax, kNumberMagnitudeMax)};
}

// An integer in the bounds; a multiple of multipleOf when it is a positive integer.
void Generator::Integer(const JsonValue& schema) {
  auto [low, high] = Bounds(schema, 1);
  low = std::ceil(low);
  high = std::floor(high);
  double unit = 1;
  if (const auto multiple = NumberKeyword(schema, "multipleOf");
      multiple && *multiple >= 1 && *multiple == std::floor(*multiple)) {
    unit = *multiple;
  }
  const double first = std::ceil(low / unit), last = std::floor(high / unit);
  if (!(first <= last) || !std::isfinite(first) ||
      !std::isfinite(last)) {  // no such integer: the candidate will be filtered out
    writer_->Int(static_cast<int64_t>(low));
    return;
  }
  const auto k = first + static_cast<double>(Below(static_cast<uint64_t>(last - first) + 1));
  writer_->Int(static_cast<int64_t>(k * unit));
}

// A number in the bounds with at most two decimals, or a multiple of multipleOf.
void Generator::Number(const JsonValue& schema) {
  auto [low, high] = Bounds(schema, 0.01);
  double value = low;
  if (const auto multiple = NumberKeyword(schema, "multipleOf"); multiple && *multiple > 0) {
    const double first = std::ceil(low / *multiple), last = std::floor(high / *multiple);
    // A tiny multipleOf sends the quotients to infinity: then the bound itself stands.
    if (std::isfinite(first) && std::isfinite(last) && first <= last) {
      const double span = std::min(last - first, 1e6);
      value = (first + static_cast<double>(Below(static_cast<uint64_t>(span) + 1))) * *multiple;
    }
  } else if (low <= high) {
    const double hundredths = std::floor((high - low) * 100);
    value = low +
            static_cast<double>(Below(static_cast<uint64_t>(std::min(hundredths, 1e9)) + 1)) / 100;
    value = std::round(value * 100) / 100;
    if (value < low || value > high) value = low;
  }
  if (!std::isfinite(value)) value = low;  // low is clamped, so finite
  writer_->Raw(ShortestNumberText(value));
}

}  // namespace

Result<std::vector<std::string>> GenerateInstances(std::string_view schema_json, size_t count_max,
                                                   uint64_t seed) {
  Result<std::unique_ptr<JsonValue>> root = compat::ParseJsonTree(schema_json, kSchemaDepthMax);
  if (!root.ok()) return Status::InvalidArgument("schema: " + root.status().message());
  if (!(*root)->IsObject() && !(*root)->IsBool()) {
    return Status::InvalidArgument("schema: a schema is an object or a boolean");
  }
  // A limit on attempts, not only on results: a schema with few distinct instances (an enum of
  // three) cannot make the loop spin.
  const size_t attempts_max =
      std::min(count_max, size_t{1} << 20) * kAttemptsPerInstance + kAttemptsExtra;
  Generator generator(**root, seed);
  std::set<std::string> seen;
  std::vector<std::string> out;
  std::string text;
  for (size_t attempt = 0; attempt < attempts_max && out.size() < count_max; ++attempt) {
    const Mode mode = attempt == 0   ? Mode::kRequiredOnly
                      : attempt == 1 ? Mode::kAllOptional
                                     : Mode::kRandom;
    if (!generator.Candidate(mode, text)) continue;
    if (seen.insert(text).second) out.push_back(text);
  }
  assert(out.size() <= count_max);
  return out;
}

}  // namespace evident::adapter
