#include "evident/envelope.h"

#include <algorithm>
#include <array>
#include <cassert>

#include "envelope/syntax.h"

namespace evident {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr std::array<std::string_view, kEnvelopeReasonCount> kReasonCodes = {
    "envelope-too-large",
    "malformed-json",
    "invalid-utf8",
    "lone-surrogate",
    "duplicate-member",
    "nesting-too-deep",
    "not-an-object",
    "missing-specversion",
    "missing-id",
    "missing-source",
    "missing-type",
    "unsupported-specversion",
    "invalid-source",
    "invalid-subject",
    "invalid-time",
    "invalid-datacontenttype",
    "invalid-dataschema",
    "data-and-data-base64",
    "invalid-data-base64",
    "invalid-attribute-name",
    "invalid-extension-value",
    "invalid-schema-version",
    "invalid-subject-version",
    "invalid-traceparent",
    "source-outside-boundary",
    "missing-schema-version",
};
static_assert(kReasonCodes.size() == kEnvelopeReasonCount);

// The canonical attributes the parser knows. Index into Slots.
enum Attr : uint8_t {
  kSpecversion,
  kId,
  kSource,
  kType,
  kSubject,
  kTime,
  kDatacontenttype,
  kDataschema,
  kData,
  kDataBase64,
  kSchemaversion,
  kSubjectversion,
  kTraceparent,
  kCorrelationid,
  kCausationid,
  kTraceid,
  kSpanid,
  kAttrCount
};
constexpr std::array<std::string_view, kAttrCount> kAttrNames = {"specversion",
                                                                 "id",
                                                                 "source",
                                                                 "type",
                                                                 "subject",
                                                                 "time",
                                                                 "datacontenttype",
                                                                 "dataschema",
                                                                 "data",
                                                                 "data_base64",
                                                                 "schemaversion",
                                                                 "subjectversion",
                                                                 "traceparent",
                                                                 "correlationid",
                                                                 "causationid",
                                                                 "traceid",
                                                                 "spanid"};

int AttrIndex(std::string_view name) {
  if (name.size() < 2 || name.size() > 15) return -1;  // fast exit for most extensions
  for (int i = 0; i < kAttrCount; ++i) {
    if (kAttrNames[i].size() == name.size() && kAttrNames[i] == name) return i;
  }
  return -1;
}

// Where one canonical attribute's value came from: an element of the document or a constant.
struct Slot {
  bool present = false;
  bool constant = false;
  element value;
  std::string_view constant_value;
};

std::string_view TypeName(element_type type) {
  switch (type) {
    case element_type::ARRAY:
      return "array";
    case element_type::OBJECT:
      return "object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return "number";
    case element_type::STRING:
      return "string";
    case element_type::BOOL:
      return "boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "unknown";
}

// True when a STRING_ERROR from simdjson comes from a \u escape of an unpaired UTF-16 surrogate
// (simdjson reports every bad string the same way; the reason code should say which it was).
bool HasLoneSurrogateEscape(std::string_view bytes) {
  const auto hex_value = [&](size_t at, uint32_t& out) {
    if (at + 4 > bytes.size()) return false;
    out = 0;
    for (size_t i = at; i < at + 4; ++i) {
      const char c = bytes[i];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        out |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        out |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return false;
    }
    return true;
  };
  for (size_t i = 0; i + 5 < bytes.size(); ++i) {
    if (bytes[i] != '\\') continue;
    if (bytes[i + 1] != 'u') {
      ++i;  // skip the escaped character (handles "\\u")
      continue;
    }
    uint32_t unit = 0;
    if (!hex_value(i + 2, unit)) continue;
    if (unit >= 0xDC00 && unit <= 0xDFFF) return true;
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      uint32_t low = 0;
      if (i + 7 >= bytes.size() || bytes[i + 6] != '\\' || bytes[i + 7] != 'u' ||
          !hex_value(i + 8, low) || low < 0xDC00 || low > 0xDFFF) {
        return true;
      }
      i += 11;
      continue;
    }
    i += 5;
  }
  return false;
}

// Finds the first object holding a member name twice (I-JSON, RFC 7493 section 2.3). simdjson
// keeps duplicates as they come, so this walks the tree with an explicit stack (depth is already
// bounded by the parser). Small objects, the common case, are compared pairwise; larger ones are
// sorted. `stack` and `keys` are the caller's scratch space, reused across events.
bool FindDuplicateMember(element root, std::vector<element>& stack,
                         std::vector<std::string_view>& keys, std::string& duplicate_name) {
  constexpr size_t kPairwiseKeysMax = 16;
  stack.clear();
  stack.push_back(root);
  while (!stack.empty()) {
    const element node = stack.back();
    stack.pop_back();
    if (node.is_array()) {
      for (element child : node.get_array()) {
        if (child.is_array() || child.is_object()) stack.push_back(child);
      }
      continue;
    }
    if (!node.is_object()) continue;
    keys.clear();
    for (auto field : node.get_object()) {
      keys.push_back(field.key);
      if (field.value.is_array() || field.value.is_object()) stack.push_back(field.value);
    }
    if (keys.size() <= kPairwiseKeysMax) {
      for (size_t i = 1; i < keys.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (keys[i] == keys[j]) {
            duplicate_name = std::string(keys[i]);
            return true;
          }
        }
      }
      continue;
    }
    std::sort(keys.begin(), keys.end());
    const auto it = std::adjacent_find(keys.begin(), keys.end());
    if (it != keys.end()) {
      duplicate_name = std::string(*it);
      return true;
    }
  }
  return false;
}

}  // namespace

// Reads a non-negative integer that fits int64 (CloudEvents "Integer", widened: versions
// outgrow 2^31 in long-lived aggregates).
bool ReadVersion(simdjson::dom::element value, int64_t& out) {
  if (value.type() == simdjson::dom::element_type::INT64) {
    out = value.get_int64().value_unsafe();
    return out >= 0;
  }
  if (value.type() == simdjson::dom::element_type::UINT64) return false;  // above int64
  if (value.type() == simdjson::dom::element_type::DOUBLE) {
    // 3.0 is an integer in JSON Schema's sense; accept it only when exact.
    const double d = value.get_double().value_unsafe();
    if (d >= 0 && d <= 9.0e15 && static_cast<double>(static_cast<int64_t>(d)) == d) {
      out = static_cast<int64_t>(d);
      return true;
    }
  }
  return false;
}

std::string_view ReasonCode(EnvelopeReason reason) {
  return kReasonCodes[static_cast<size_t>(reason)];
}

std::vector<EnvelopeReason> AllEnvelopeReasons() {
  std::vector<EnvelopeReason> all;
  for (int i = 0; i < kEnvelopeReasonCount; ++i) all.push_back(static_cast<EnvelopeReason>(i));
  return all;
}

namespace {

// True when a segment of the source's path (before any '?' or '#') is "." or "..", also when
// percent-encoded ("%2e%2E"). Such a source may name a place outside the prefix it starts with
// ("https://example.test/order-service/../payment-service"), so a boundary refuses it rather
// than guess how its reader resolves it. '\' counts as a separator: some URL parsers treat it
// as '/'.
bool HasDotSegment(std::string_view source) {
  source = source.substr(0, source.find_first_of("?#"));
  size_t start = 0;
  while (start <= source.size()) {
    size_t end = source.find_first_of("/\\", start);
    if (end == std::string_view::npos) end = source.size();
    std::string_view segment = source.substr(start, end - start);
    size_t dots = 0;
    while (!segment.empty()) {
      if (segment[0] == '.') {
        segment.remove_prefix(1);
      } else if (segment.size() >= 3 && segment[0] == '%' && segment[1] == '2' &&
                 (segment[2] == 'e' || segment[2] == 'E')) {
        segment.remove_prefix(3);
      } else {
        break;
      }
      ++dots;
    }
    if (segment.empty() && (dots == 1 || dots == 2)) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

bool SourceInsideBoundary(std::string_view source, const std::vector<std::string>& boundary) {
  if (boundary.empty()) return true;
  if (HasDotSegment(source)) return false;
  for (const std::string& prefix : boundary) {
    if (prefix.empty() || source.substr(0, prefix.size()) != prefix) continue;
    if (source.size() == prefix.size()) return true;
    const char last = prefix.back();
    if (last == '/' || last == ':' || last == '#' || last == '?') return true;
    const char next = source[prefix.size()];
    if (next == '/' || next == '?' || next == '#') return true;
  }
  return false;
}

simdjson::simdjson_result<element> EventView::At(std::string_view pointer) const {
  assert(profile != nullptr);
  if (pointer.empty()) return simdjson::simdjson_result<element>(element(root));
  // Split off the first token: "/data/orderVersion" -> "data", "/orderVersion".
  const size_t end = pointer.find('/', 1);
  const std::string_view first = pointer.substr(1, end == std::string_view::npos ? end : end - 1);
  const std::string_view rest = end == std::string_view::npos ? "" : pointer.substr(end);
  // The payload is already located: a pointer into it needs no translation.
  if (first == "data" && data) {
    return rest.empty() ? simdjson::simdjson_result<element>(element(*data))
                        : data->at_pointer(rest);
  }
  std::string mapped;
  if (first == "data") {
    mapped = profile->data_pointer;
  } else {
    mapped = profile->PointerFor(first);
  }
  if (mapped.empty()) {
    if (!profile->passthrough && first != "data") return simdjson::NO_SUCH_FIELD;
    return root.at_pointer(pointer);
  }
  mapped.append(rest);
  return root.at_pointer(mapped);
}

EnvelopeParser::EnvelopeParser(EnvelopeOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<EnvelopeParser>> EnvelopeParser::Create(EnvelopeOptions options) {
  if (options.event_bytes_max < kCloudEventsBytesMin) {
    return Status::InvalidArgument(
        "event_bytes_max must be at least 65536 (CloudEvents 1.0 "
        "requires accepting events of 64 KiB)");
  }
  if (options.nesting_depth_max < 2 || options.nesting_depth_max > 1024) {
    return Status::InvalidArgument("nesting_depth_max must be between 2 and 1024");
  }
  if (!IsValidJsonPointer(options.profile.data_pointer)) {
    return Status::InvalidArgument("profile data pointer is not a JSON Pointer");
  }
  for (const auto& [name, pointer] : options.profile.attribute_pointers) {
    if (!IsValidJsonPointer(pointer)) {
      return Status::InvalidArgument("profile pointer for '" + name + "' is not a JSON Pointer");
    }
    if (AttrIndex(name) < 0) {
      return Status::InvalidArgument("profile maps unknown attribute '" + name + "'");
    }
  }
  for (const auto& [name, value] : options.profile.constants) {
    if (AttrIndex(name) < 0) {
      return Status::InvalidArgument("profile sets unknown attribute '" + name + "'");
    }
  }
  auto parser = std::unique_ptr<EnvelopeParser>(new EnvelopeParser(std::move(options)));
  for (const auto& [name, pointer] : parser->options_.profile.attribute_pointers) {
    parser->pointer_attrs_.push_back(AttrIndex(name));
  }
  for (const auto& [name, value] : parser->options_.profile.constants) {
    parser->constant_attrs_.push_back(AttrIndex(name));
  }
  if (parser->parser_.allocate(parser->options_.event_bytes_max,
                               parser->options_.nesting_depth_max) != simdjson::SUCCESS) {
    return Status::Internal("cannot allocate the JSON parser");
  }
  return parser;
}

EnvelopeParser::Outcome EnvelopeParser::Parse(std::string_view bytes) {
  Outcome outcome;
  EventView& event = outcome.event;
  event.raw = bytes;
  event.profile = &options_.profile;
  const auto reject = [&](EnvelopeReason reason, std::string message) {
    outcome.rejection =
        Rejection{reason, std::move(message), std::string(event.id), std::string(event.source)};
    return outcome;
  };

  // 1. Size.
  if (bytes.size() > options_.event_bytes_max) {
    // No size in the message: readers hand over only the first event_bytes_max + 1 bytes of a
    // larger event (cli validate's splitter, which scans to the end, says the real size).
    return reject(
        EnvelopeReason::kEnvelopeTooLarge,
        "event exceeds the limit of " + std::to_string(options_.event_bytes_max) + " bytes");
  }

  // 2. Well-formed I-JSON.
  element root;
  const simdjson::error_code parse_error = parser_.parse(bytes.data(), bytes.size()).get(root);
  switch (parse_error) {
    case simdjson::SUCCESS:
      break;
    case simdjson::UTF8_ERROR:
      return reject(EnvelopeReason::kInvalidUtf8, "input is not valid UTF-8");
    case simdjson::DEPTH_ERROR:
      return reject(EnvelopeReason::kNestingTooDeep,
                    "nesting is deeper than " + std::to_string(options_.nesting_depth_max));
    case simdjson::STRING_ERROR:
      if (HasLoneSurrogateEscape(bytes)) {
        return reject(EnvelopeReason::kLoneSurrogate,
                      "a string holds an unpaired UTF-16 surrogate escape");
      }
      [[fallthrough]];
    default:
      return reject(EnvelopeReason::kMalformedJson,
                    std::string("not well-formed JSON: ") + simdjson::error_message(parse_error));
  }
  event.root = root;
  std::string duplicate;
  if (FindDuplicateMember(root, scratch_stack_, scratch_keys_, duplicate)) {
    return reject(EnvelopeReason::kDuplicateMember,
                  "member name '" + duplicate + "' appears twice in one object");
  }
  if (!root.is_object()) {
    return reject(EnvelopeReason::kNotAnObject,
                  "an event must be a JSON object, got " + std::string(TypeName(root.type())));
  }

  // Gather each canonical attribute from the document through the profile.
  const Profile& profile = options_.profile;
  std::array<Slot, kAttrCount> slots;
  std::string bad_extension;  // first extension that breaks the naming or type rules
  EnvelopeReason bad_extension_reason = EnvelopeReason::kInvalidAttributeName;
  if (profile.passthrough) {
    for (auto field : root.get_object()) {
      const int index = AttrIndex(field.key);
      if (index >= 0 && index != kTraceid && index != kSpanid) {
        slots[index].present = !field.value.is_null();
        slots[index].value = field.value;
        continue;
      }
      if (!bad_extension.empty() || field.value.is_null()) continue;
      if (!syntax::IsExtensionName(field.key)) {
        bad_extension = field.key;
        bad_extension_reason = EnvelopeReason::kInvalidAttributeName;
      } else if (field.value.is_object() || field.value.is_array() ||
                 field.value.type() == element_type::DOUBLE) {
        bad_extension = field.key;
        bad_extension_reason = EnvelopeReason::kInvalidExtensionValue;
      }
    }
  }
  for (size_t i = 0; i < profile.attribute_pointers.size(); ++i) {
    const std::string& pointer = profile.attribute_pointers[i].second;
    Slot& slot = slots[pointer_attrs_[i]];
    element value;
    slot = Slot{};
    if (root.at_pointer(pointer).get(value) == simdjson::SUCCESS && !value.is_null()) {
      slot.present = true;
      slot.value = value;
    }
  }
  if (!profile.passthrough || profile.data_pointer != "/data") {
    slots[kData] = Slot{};
    element data;
    if (root.at_pointer(profile.data_pointer).get(data) == simdjson::SUCCESS && !data.is_null()) {
      slots[kData] = Slot{true, false, data, {}};
    }
  }
  for (size_t i = 0; i < profile.constants.size(); ++i) {
    Slot& slot = slots[constant_attrs_[i]];
    if (!slot.present) slot = Slot{true, true, {}, profile.constants[i].second};
  }
  const auto string_of = [&](Attr attr, std::string_view& out) {
    const Slot& slot = slots[attr];
    if (slot.constant) {
      out = slot.constant_value;
      return true;
    }
    return slot.value.get(out) == simdjson::SUCCESS;
  };

  // 3. Required attributes are non-empty strings; 4. specversion is 1.0.
  constexpr std::array<std::pair<Attr, EnvelopeReason>, 4> kRequired = {{
      {kSpecversion, EnvelopeReason::kMissingSpecversion},
      {kId, EnvelopeReason::kMissingId},
      {kSource, EnvelopeReason::kMissingSource},
      {kType, EnvelopeReason::kMissingType},
  }};
  std::array<std::string_view, 4> required_values;
  for (size_t i = 0; i < kRequired.size(); ++i) {
    const auto [attr, reason] = kRequired[i];
    const std::string name(kAttrNames[attr]);
    if (!slots[attr].present) return reject(reason, "required attribute '" + name + "' is absent");
    if (!string_of(attr, required_values[i])) {
      return reject(reason, "required attribute '" + name + "' must be a string, got " +
                                std::string(TypeName(slots[attr].value.type())));
    }
    if (required_values[i].empty()) {
      return reject(reason, "required attribute '" + name + "' is empty");
    }
    if (attr == kId) event.id = required_values[i];
    if (attr == kSource) event.source = required_values[i];
  }
  event.specversion = required_values[0];
  event.type = required_values[3];
  if (event.specversion != "1.0") {
    return reject(EnvelopeReason::kUnsupportedSpecversion,
                  "specversion '" + std::string(event.specversion) + "' is not supported (1.0)");
  }

  // 5. Attribute types.
  if (const auto known = std::find(valid_sources_.begin(), valid_sources_.end(), event.source);
      known == valid_sources_.end()) {
    if (!syntax::IsUriReference(event.source)) {
      return reject(EnvelopeReason::kInvalidSource, "source is not a URI-reference (RFC 3986)");
    }
    if (valid_sources_.size() < kValidSourcesMax) valid_sources_.emplace_back();
    std::rotate(valid_sources_.rbegin(), valid_sources_.rbegin() + 1, valid_sources_.rend());
    valid_sources_.front().assign(event.source);
  } else if (known != valid_sources_.begin()) {
    std::rotate(valid_sources_.begin(), known, known + 1);  // most recent first
  }
  const auto optional_string =
      [&](Attr attr, EnvelopeReason reason, std::optional<std::string_view>& out,
          bool (*valid)(std::string_view), std::string_view expected) -> bool {
    if (!slots[attr].present) return true;
    std::string_view value;
    if (!string_of(attr, value) || value.empty() || (valid != nullptr && !valid(value))) {
      reject(reason, std::string(kAttrNames[attr]) + " must be " + std::string(expected));
      return false;
    }
    out = value;
    return true;
  };
  if (!optional_string(kSubject, EnvelopeReason::kInvalidSubject, event.subject, nullptr,
                       "a non-empty string") ||
      !optional_string(kTime, EnvelopeReason::kInvalidTime, event.time, syntax::IsRfc3339Timestamp,
                       "an RFC 3339 timestamp") ||
      !optional_string(kDatacontenttype, EnvelopeReason::kInvalidDatacontenttype,
                       event.datacontenttype, syntax::IsMediaType,
                       "an RFC 2046 media type such as application/json") ||
      !optional_string(kDataschema, EnvelopeReason::kInvalidDataschema, event.dataschema,
                       syntax::IsAbsoluteUri, "an absolute URI")) {
    return outcome;
  }
  if (slots[kData].present && slots[kDataBase64].present) {
    return reject(EnvelopeReason::kDataAndDataBase64,
                  "data and data_base64 are both present; at most one may be");
  }
  if (slots[kDataBase64].present) {
    std::string_view base64;
    if (!string_of(kDataBase64, base64) || !syntax::IsBase64(base64)) {
      return reject(EnvelopeReason::kInvalidDataBase64,
                    "data_base64 must be a base64 string (RFC 4648)");
    }
    event.data_base64 = base64;
  }
  if (slots[kData].present) event.data = slots[kData].value;
  if (!bad_extension.empty()) {
    return reject(bad_extension_reason,
                  bad_extension_reason == EnvelopeReason::kInvalidAttributeName
                      ? "extension attribute name '" + bad_extension +
                            "' must be lowercase letters and digits"
                      : "extension attribute '" + bad_extension +
                            "' must be a string, an integer or a boolean");
  }
  for (const auto& [attr, reason, target] :
       {std::tuple{kSchemaversion, EnvelopeReason::kInvalidSchemaVersion, &event.schemaversion},
        std::tuple{kSubjectversion, EnvelopeReason::kInvalidSubjectVersion,
                   &event.subjectversion}}) {
    if (!slots[attr].present) continue;
    int64_t version = 0;
    if (slots[attr].constant || !ReadVersion(slots[attr].value, version)) {
      return reject(reason, std::string(kAttrNames[attr]) + " must be a non-negative integer");
    }
    *target = version;
  }
  if (!optional_string(kCorrelationid, EnvelopeReason::kInvalidExtensionValue, event.correlationid,
                       nullptr, "a non-empty string") ||
      !optional_string(kCausationid, EnvelopeReason::kInvalidExtensionValue, event.causationid,
                       nullptr, "a non-empty string")) {
    return outcome;
  }
  if (slots[kTraceparent].present) {
    if (!optional_string(kTraceparent, EnvelopeReason::kInvalidTraceparent, event.traceparent,
                         syntax::IsTraceparent,
                         "a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)")) {
      return outcome;
    }
  } else if (slots[kTraceid].present) {
    // Layouts that carry trace_id and span_id apart (seed 001) compose a traceparent.
    std::string_view trace_id, span_id;
    if (!string_of(kTraceid, trace_id) ||
        (slots[kSpanid].present && !string_of(kSpanid, span_id))) {
      return reject(EnvelopeReason::kInvalidTraceparent, "trace_id and span_id must be strings");
    }
    traceparent_scratch_ = "00-";
    traceparent_scratch_.append(trace_id).append("-");
    traceparent_scratch_.append(span_id.empty() ? "0000000000000001" : span_id).append("-01");
    if (!syntax::IsTraceparent(traceparent_scratch_)) {
      return reject(EnvelopeReason::kInvalidTraceparent,
                    "trace_id must be 32 and span_id 16 lowercase hex digits");
    }
    event.traceparent = traceparent_scratch_;
  }

  // 6. Source inside the boundary.
  if (!SourceInsideBoundary(event.source, options_.source_boundary)) {
    return reject(EnvelopeReason::kSourceOutsideBoundary,
                  "source '" + std::string(event.source) + "' is outside the boundary" +
                      (HasDotSegment(event.source)
                           ? " (a '.' or '..' segment in a source is never inside one)"
                           : ""));
  }

  // 7. Schema version present (when required).
  if (options_.require_schema_version && !event.schemaversion) {
    const std::string where = profile.PointerFor("schemaversion");
    return reject(
        EnvelopeReason::kMissingSchemaVersion,
        "no schema version" + (where.empty() ? std::string(" attribute") : " at " + where));
  }
  return outcome;
}

}  // namespace evident
