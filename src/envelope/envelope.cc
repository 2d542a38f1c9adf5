#include "evident/envelope.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <optional>

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
    "missing-subject",
    "missing-contract-version",
    "invalid-contract-version",
    "number-out-of-range",
    "control-character",
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
  kContractversion,
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
                                                                 "spanid",
                                                                 "contractversion"};

// A slot per attribute name, from its length and first two bytes (collision-free for the names
// above: checked at compile time), so that a member name is compared with one candidate at most.
constexpr size_t AttrSlot(std::string_view name) {
  return (name.size() * 2 + static_cast<unsigned char>(name[0]) * 15 +
          static_cast<unsigned char>(name[1])) &
         63;
}

constexpr std::array<int8_t, 64> kAttrBySlot = [] {
  std::array<int8_t, 64> slots{};
  for (int8_t& slot : slots) slot = -1;
  for (int i = 0; i < kAttrCount; ++i) {
    if (slots[AttrSlot(kAttrNames[i])] != -1) throw "two attribute names share a slot";
    slots[AttrSlot(kAttrNames[i])] = static_cast<int8_t>(i);
  }
  return slots;
}();

// True when the `size` bytes at `a` and `b` are equal, for 2 <= size <= 16: two overlapping
// loads per side instead of a call to memcmp, which was 4% of the envelope's time (perf,
// envelope_bench; a name is compared with its one candidate for every top-level member).
inline bool EqualShort(const char* a, const char* b, size_t size) {
  assert(size >= 2 && size <= 16);
  const auto same = [&](auto tag) {
    using Word = decltype(tag);
    Word a_head, b_head, a_tail, b_tail;
    std::memcpy(&a_head, a, sizeof(Word));
    std::memcpy(&b_head, b, sizeof(Word));
    std::memcpy(&a_tail, a + size - sizeof(Word), sizeof(Word));
    std::memcpy(&b_tail, b + size - sizeof(Word), sizeof(Word));
    return ((a_head ^ b_head) | (a_tail ^ b_tail)) == 0;
  };
  if (size >= 8) return same(uint64_t{});
  if (size >= 4) return same(uint32_t{});
  return same(uint16_t{});
}

inline int AttrIndex(std::string_view name) {
  if (name.size() < 2 || name.size() > 15) return -1;  // fast exit for most extensions
  const int candidate = kAttrBySlot[AttrSlot(name)];
  return candidate >= 0 && kAttrNames[candidate].size() == name.size() &&
                 EqualShort(kAttrNames[candidate].data(), name.data(), name.size())
             ? candidate
             : -1;
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

// True when every number outside the strings of `bytes` follows JSON's grammar (RFC 8259
// section 6). simdjson reports a number it cannot represent (2^64, 1e400) with the error of a
// malformed one; when all are well formed, the parse failed on a number's range.
bool NumbersAreWellFormed(std::string_view bytes) {
  const auto digits = [&](size_t& i) {
    const size_t start = i;
    while (i < bytes.size() && bytes[i] >= '0' && bytes[i] <= '9') ++i;
    return i > start;
  };
  bool in_string = false;
  for (size_t i = 0; i < bytes.size();) {
    const char c = bytes[i];
    if (in_string) {
      in_string = c != '"';
      i += c == '\\' ? 2 : 1;
      continue;
    }
    if (c == '"') in_string = true;
    if (c != '-' && (c < '0' || c > '9')) {
      ++i;
      continue;
    }
    if (c == '-') ++i;
    if (i < bytes.size() && bytes[i] == '0') {
      ++i;
    } else if (!digits(i)) {
      return false;
    }
    if (i < bytes.size() && bytes[i] == '.' && !digits(++i)) return false;
    if (i < bytes.size() && (bytes[i] == 'e' || bytes[i] == 'E')) {
      ++i;
      if (i < bytes.size() && (bytes[i] == '+' || bytes[i] == '-')) ++i;
      if (!digits(i)) return false;
    }
    if (i < bytes.size() && ((bytes[i] >= '0' && bytes[i] <= '9') || bytes[i] == '.')) {
      return false;  // "01", "1.2.3"
    }
  }
  return true;
}

// A member name's bit in a 64-bit filter: names with different bits differ. Length and first
// byte: the middle and last bytes cost more loads than the rare extra comparisons they saved
// (bench/envelope_bench).
uint64_t NameBit(std::string_view name) {
  size_t mix = name.size();
  if (!name.empty()) mix += 3u * static_cast<unsigned char>(name.front());
  return uint64_t{1} << (mix & 63);
}

// One object's member names, checked for a repeat as they come. Up to kPairwiseKeysMax names,
// the common case, a name is compared with the earlier ones only when its filter bit was seen
// before, so an object of distinct names costs one pass. Larger objects are sorted at the end
// (no quadratic worst case for an attacker's object of many names).
class MemberNames {
 public:
  explicit MemberNames(std::vector<std::string_view>& keys) : keys_(keys) { keys_.clear(); }

  // False when `name` repeats one of the first kPairwiseKeysMax names (then in `duplicate`).
  [[gnu::always_inline]] bool Add(std::string_view name, std::string& duplicate) {
    if (keys_.size() < kPairwiseKeysMax) {
      const uint64_t bit = NameBit(name);
      if ((seen_ & bit) != 0 && std::find(keys_.begin(), keys_.end(), name) != keys_.end()) {
        duplicate = std::string(name);
        return false;
      }
      seen_ |= bit;
    }
    keys_.push_back(name);
    return true;
  }

  // False when the object has more than kPairwiseKeysMax names and two are equal.
  [[gnu::always_inline]] bool Finish(std::string& duplicate) {
    return keys_.size() <= kPairwiseKeysMax || !AnyEqualSorted(duplicate);
  }

 private:
  static constexpr size_t kPairwiseKeysMax = 16;

  [[gnu::noinline]] bool AnyEqualSorted(std::string& duplicate) {
    std::sort(keys_.begin(), keys_.end());
    const auto it = std::adjacent_find(keys_.begin(), keys_.end());
    if (it == keys_.end()) return false;
    duplicate = std::string(*it);
    return true;
  }

  std::vector<std::string_view>& keys_;
  uint64_t seen_ = 0;  // NameBit of each name so far
};

// Finds the first object holding a member name twice (I-JSON, RFC 7493 section 2.3). simdjson
// keeps duplicates as they come, so this walks the tree with an explicit stack (depth is already
// bounded by the parser). `stack` and `keys` are the caller's scratch space, reused across
// events. Each member of a root object is handed to `on_root_member(name, value)` on the way:
// the envelope's attributes are read in the same pass (a second pass over the root members was
// a tenth of the envelope's own time, bench/envelope_bench).
template <typename OnRootMember>
bool FindDuplicateMember(element root, std::vector<element>& stack,
                         std::vector<std::string_view>& keys, std::string& duplicate_name,
                         OnRootMember&& on_root_member) {
  const auto push_container = [&stack](element value) {
    if (value.is_array() || value.is_object()) stack.push_back(value);
  };
  // False when a name of `object` repeats; each member goes to `on_member` on the way.
  const auto check_names = [&](simdjson::dom::object object, auto&& on_member) {
    MemberNames names(keys);
    for (auto field : object) {
      if (!names.Add(field.key, duplicate_name)) return false;
      on_member(field.key, field.value);
      push_container(field.value);
    }
    return names.Finish(duplicate_name);
  };
  stack.clear();
  if (root.is_object()) {
    if (!check_names(root.get_object().value_unsafe(), on_root_member)) return true;
  } else {
    push_container(root);
  }
  const auto nothing = [](std::string_view, element) {};
  while (!stack.empty()) {
    const element node = stack.back();
    stack.pop_back();
    if (node.is_array()) {
      for (element child : node.get_array()) push_container(child);
      continue;
    }
    assert(node.is_object());
    if (!check_names(node.get_object().value_unsafe(), nothing)) return true;
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
  assert(static_cast<size_t>(reason) < kReasonCodes.size());
  return kReasonCodes[static_cast<size_t>(reason)];
}

std::vector<EnvelopeReason> AllEnvelopeReasons() {
  std::vector<EnvelopeReason> all;
  for (int i = 0; i < kEnvelopeReasonCount; ++i) all.push_back(static_cast<EnvelopeReason>(i));
  return all;
}

namespace {

// True for "." and "..", their percent-encoded forms included ("%2e", "%2E").
bool IsDotSegment(std::string_view segment) {
  size_t dots = 0;
  while (!segment.empty()) {
    if (segment[0] == '.') {
      segment.remove_prefix(1);
    } else if (segment.size() >= 3 && segment[0] == '%' && segment[1] == '2' &&
               (segment[2] == 'e' || segment[2] == 'E')) {
      segment.remove_prefix(3);
    } else {
      return false;
    }
    ++dots;
  }
  return dots == 1 || dots == 2;
}

// 3 when `rest` starts with a percent-encoded '/' or '\' ("%2f", "%2F", "%5c", "%5C"), else 0.
size_t EncodedSeparatorWidth(std::string_view rest) {
  if (rest.size() < 3 || rest[0] != '%') return 0;
  const char high = rest[1], low = static_cast<char>(rest[2] | 0x20);
  return (high == '2' && low == 'f') || (high == '5' && low == 'c') ? 3 : 0;
}

// True when a segment of the source's path (before any '?' or '#') is "." or "..", also when
// percent-encoded ("%2e%2E"). Such a source may name a place outside the prefix it starts with
// ("https://example.test/order-service/../payment-service"), so a boundary refuses it rather
// than guess how its reader resolves it. '\' counts as a separator: some URL parsers treat it
// as '/'.
// One pass over the path, up to its query or fragment. Not find_first_of with a set of
// separators: libstdc++ calls memchr on the set for every character, which was an eighth of
// the envelope's time (perf, envelope_bench).
bool HasDotSegment(std::string_view source) {
  size_t start = 0;
  for (size_t i = 0; i <= source.size(); ++i) {
    const char c = i < source.size() ? source[i] : '/';  // the end closes the last segment
    if (c == '?' || c == '#') return IsDotSegment(source.substr(start, i - start));
    // A percent-encoded '/' or '\' separates too: a reader that decodes before resolving
    // would step out through "..%2f".
    const size_t width = c == '%' ? EncodedSeparatorWidth(source.substr(i)) : 1;
    if (width == 0 || (width == 1 && c != '/' && c != '\\')) continue;
    if (IsDotSegment(source.substr(start, i - start))) return true;
    start = i + width;
    i += width - 1;
  }
  return false;
}

}  // namespace

bool SourceUnder(std::string_view source, std::string_view prefix) {
  if (prefix.empty() || source.substr(0, prefix.size()) != prefix) return false;
  if (source.size() == prefix.size()) return true;
  const char last = prefix.back();
  if (last == '/' || last == ':' || last == '#' || last == '?') return true;
  const char next = source[prefix.size()];
  return next == '/' || next == '?' || next == '#';
}

bool SourceInsideBoundary(std::string_view source, const std::vector<std::string>& boundary) {
  if (boundary.empty()) return true;
  if (HasDotSegment(source)) return false;
  // A query or fragment makes another source of the same path (`...?x=1`, `...#f`): only a
  // boundary entry that says so (ends in '?' or '#') admits one.
  const bool query_or_fragment = source.find_first_of("?#") != std::string_view::npos;
  for (const std::string& prefix : boundary) {
    if (!SourceUnder(source, prefix)) continue;
    if (query_or_fragment && prefix.back() != '?' && prefix.back() != '#') continue;
    return true;
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
  for (const std::string& name : options.profile.required) {
    if (name != "subject" && name != "contractversion" && name != "schemaversion") {
      return Status::InvalidArgument("a profile can require subject, contractversion and " +
                                     std::string("schemaversion, not '") + name + "'");
    }
    // contractversion is never read from a top-level member of its own name (to CloudEvents it
    // is an ordinary extension): required, it needs a pointer, or no event could have it.
    if (name == "contractversion" && options.profile.PointerFor(name).empty()) {
      return Status::InvalidArgument(
          "a profile that requires contractversion must map it (attributes: "
          "{\"contractversion\": \"/contractVersion\"})");
    }
  }
  auto parser = std::unique_ptr<EnvelopeParser>(new EnvelopeParser(std::move(options)));
  parser->require_schema_version_ = parser->options_.require_schema_version;
  for (const std::string& name : parser->options_.profile.required) {
    if (name == "schemaversion") {
      parser->require_schema_version_ = true;
    } else {
      parser->required_attrs_.push_back(AttrIndex(name));
    }
  }
  for (const auto& [name, pointer] : parser->options_.profile.attribute_pointers) {
    parser->pointer_attrs_.push_back(AttrIndex(name));
  }
  for (const auto& [name, value] : parser->options_.profile.constants) {
    parser->constant_attrs_.push_back(AttrIndex(name));
  }
  // simdjson's depth counts the level a value sits in: containers nested nesting_depth_max deep
  // may hold values only with one more (without it, 64 arrays around a number were "deeper
  // than 64"). An empty container one level deeper still passes: it holds nothing.
  if (parser->parser_.allocate(parser->options_.event_bytes_max,
                               parser->options_.nesting_depth_max + 1) != simdjson::SUCCESS) {
    return Status::Internal("cannot allocate the JSON parser");
  }
  return parser;
}

// One call of EnvelopeParser::Parse. The checks run in the order envelope.h states, each only
// after every earlier one passed; a check that fails sets the outcome's rejection and returns
// false. The checks share the canonical attributes gathered from the document (slots_).
//
// Each step runs once per event on the hot path. GCC does not inline a member function of a
// class with external linkage merely because it has one caller, and as calls the steps cost
// about 0.4% more instructions per event (bench/envelope_bench's corpus under cachegrind), so
// they are always inlined; Reject, on the rejection path only, is not.
class EnvelopeParser::ParseRun {
 public:
  ParseRun(EnvelopeParser& owner, Outcome& outcome)
      : owner_(owner), options_(owner.options_), outcome_(outcome), event_(outcome.event) {}

  [[gnu::always_inline]] inline bool CheckSize();
  [[gnu::always_inline]] inline bool ParseJson();
  [[gnu::always_inline]] inline void GatherAttributes();
  [[gnu::always_inline]] inline bool CheckRequiredAttributes();
  [[gnu::always_inline]] inline bool CheckProfileRequired();
  [[gnu::always_inline]] inline bool CheckSpecversion();
  [[gnu::always_inline]] inline bool CheckSourceSyntax();
  [[gnu::always_inline]] inline bool CheckOptionalAttributes();
  [[gnu::always_inline]] inline bool CheckData();
  [[gnu::always_inline]] inline bool CheckExtensionMembers();
  [[gnu::always_inline]] inline bool CheckVersions();
  [[gnu::always_inline]] inline bool CheckCorrelationIds();
  [[gnu::always_inline]] inline bool CheckTraceparent();
  [[gnu::always_inline]] inline bool CheckSourceBoundary();
  [[gnu::always_inline]] inline bool CheckSchemaVersionPresent();

 private:
  [[gnu::always_inline]] inline void GatherTopLevelMember(std::string_view name, element value);
  [[gnu::always_inline]] inline bool StringOf(Attr attr, std::string_view& out) const;
  [[gnu::always_inline]] inline bool OptionalString(Attr attr, EnvelopeReason reason,
                                                    std::optional<std::string_view>& out,
                                                    bool (*valid)(std::string_view),
                                                    std::string_view expected);
  bool Reject(EnvelopeReason reason, std::string message);
  bool RejectControl(std::string_view attribute);

  EnvelopeParser& owner_;  // its simdjson parser, scratch space and source cache
  const EnvelopeOptions& options_;
  Outcome& outcome_;
  EventView& event_;  // outcome_.event
  std::array<Slot, kAttrCount> slots_;
  // The first extension member that breaks the naming or type rules (its name may be empty).
  std::optional<std::string> bad_extension_;
  EnvelopeReason bad_extension_reason_ = EnvelopeReason::kInvalidAttributeName;
  bool source_inside_boundary_ = false;  // set by CheckSourceSyntax, from its cache
};

// Sets the rejection (the first failing check is the only one to) and returns false.
bool EnvelopeParser::ParseRun::Reject(EnvelopeReason reason, std::string message) {
  assert(!outcome_.rejection.has_value());
  outcome_.rejection =
      Rejection{reason, std::move(message), std::string(event_.id), std::string(event_.source)};
  // The subject too, when the input has a string one: `evidence SUBJECT` then finds the input.
  std::string_view subject;
  if (slots_[kSubject].present && StringOf(kSubject, subject) &&
      !syntax::HasControlCharacter(subject)) {
    outcome_.rejection->subject = std::string(subject);
  }
  return false;
}

// A String attribute that holds a control character. The rejection does not carry the value: a
// store's text columns (PostgreSQL's) cannot hold a NUL, and the raw bytes keep it anyway.
bool EnvelopeParser::ParseRun::RejectControl(std::string_view attribute) {
  return Reject(EnvelopeReason::kControlCharacter,
                "attribute '" + std::string(attribute) +
                    "' holds a control character (U+0000-U+001F or U+007F-U+009F), which "
                    "CloudEvents forbids in a String");
}

// 1. Size.
bool EnvelopeParser::ParseRun::CheckSize() {
  if (event_.raw.size() <= options_.event_bytes_max) return true;
  // No size in the message: readers hand over only the first event_bytes_max + 1 bytes of a
  // larger event (cli validate's splitter, which scans to the end, says the real size).
  return Reject(
      EnvelopeReason::kEnvelopeTooLarge,
      "event exceeds the limit of " + std::to_string(options_.event_bytes_max) + " bytes");
}

// 2. Well-formed I-JSON: parses, no member name twice in one object, an object at the top.
bool EnvelopeParser::ParseRun::ParseJson() {
  const std::string_view bytes = event_.raw;
  assert(bytes.size() <= options_.event_bytes_max);  // CheckSize passed
  element root;
  const simdjson::error_code parse_error =
      owner_.parser_.parse(bytes.data(), bytes.size()).get(root);
  switch (parse_error) {
    case simdjson::SUCCESS:
      break;
    case simdjson::UTF8_ERROR:
      return Reject(EnvelopeReason::kInvalidUtf8, "input is not valid UTF-8");
    case simdjson::DEPTH_ERROR:
      return Reject(EnvelopeReason::kNestingTooDeep,
                    "nesting is deeper than " + std::to_string(options_.nesting_depth_max));
    case simdjson::NUMBER_ERROR:
      if (NumbersAreWellFormed(bytes)) {
        return Reject(EnvelopeReason::kNumberOutOfRange,
                      "a number is beyond what can be read exactly: an integer past 64 bits or "
                      "a value past an IEEE 754 double (I-JSON, RFC 7493 section 2.2); send it "
                      "as a string");
      }
      return Reject(EnvelopeReason::kMalformedJson,
                    std::string("not well-formed JSON: ") + simdjson::error_message(parse_error));
    case simdjson::STRING_ERROR:
      if (HasLoneSurrogateEscape(bytes)) {
        return Reject(EnvelopeReason::kLoneSurrogate,
                      "a string holds an unpaired UTF-16 surrogate escape");
      }
      [[fallthrough]];
    default:
      return Reject(EnvelopeReason::kMalformedJson,
                    std::string("not well-formed JSON: ") + simdjson::error_message(parse_error));
  }
  event_.root = root;
  std::string duplicate;
  const bool passthrough = options_.profile.passthrough;
  const auto on_root_member = [&](std::string_view name, element value) {
    if (passthrough) GatherTopLevelMember(name, value);
  };
  if (FindDuplicateMember(root, owner_.scratch_stack_, owner_.scratch_keys_, duplicate,
                          on_root_member)) {
    slots_ = {};  // a rejection before the attributes names no subject
    bad_extension_.reset();
    return Reject(EnvelopeReason::kDuplicateMember,
                  "member name '" + duplicate + "' appears twice in one object");
  }
  if (!root.is_object()) {
    return Reject(EnvelopeReason::kNotAnObject,
                  "an event must be a JSON object, got " + std::string(TypeName(root.type())));
  }
  return true;
}

// Fills slots_ with each canonical attribute, read from the document through the profile: the
// top-level members (passthrough), then the profile's pointers, its data pointer and its
// constants (a constant only where the document has no value).
void EnvelopeParser::ParseRun::GatherAttributes() {
  const Profile& profile = options_.profile;
  const element root = event_.root;
  assert(root.is_object());  // ParseJson passed
  // Create resolved one canonical attribute per pointer and per constant, in the same order.
  assert(owner_.pointer_attrs_.size() == profile.attribute_pointers.size());
  assert(owner_.constant_attrs_.size() == profile.constants.size());
  // Passthrough members were gathered by ParseJson's walk (GatherTopLevelMember).
  for (size_t i = 0; i < profile.attribute_pointers.size(); ++i) {
    const std::string& pointer = profile.attribute_pointers[i].second;
    assert(static_cast<size_t>(owner_.pointer_attrs_[i]) < kAttrCount);
    Slot& slot = slots_[owner_.pointer_attrs_[i]];
    element value;
    slot = Slot{};
    if (root.at_pointer(pointer).get(value) == simdjson::SUCCESS && !value.is_null()) {
      slot.present = true;
      slot.value = value;
    }
  }
  if (!profile.passthrough || profile.data_pointer != "/data") {
    slots_[kData] = Slot{};
    element data;
    if (root.at_pointer(profile.data_pointer).get(data) == simdjson::SUCCESS && !data.is_null()) {
      slots_[kData] = Slot{true, false, data, {}};
    }
  }
  for (size_t i = 0; i < profile.constants.size(); ++i) {
    assert(static_cast<size_t>(owner_.constant_attrs_[i]) < kAttrCount);
    Slot& slot = slots_[owner_.constant_attrs_[i]];
    if (!slot.present) slot = Slot{true, true, {}, profile.constants[i].second};
  }
}

// Passthrough: a top-level member named like a canonical attribute fills its slot (a null one
// counts as absent). Notes the first other member that breaks the extension naming or type
// rules; CheckExtensionMembers reports it in its turn. Called by ParseJson's walk, for each
// member in the document's order.
void EnvelopeParser::ParseRun::GatherTopLevelMember(std::string_view name, element value) {
  const int index = AttrIndex(name);
  if (index >= 0 && index != kTraceid && index != kSpanid && index != kContractversion) {
    slots_[index].present = !value.is_null();
    slots_[index].value = value;
    return;
  }
  // A bad name outranks a bad value wherever each stands (envelope.h's order: names, then
  // values); within each kind the first in the document is reported.
  if (value.is_null() || (bad_extension_.has_value() &&
                          bad_extension_reason_ == EnvelopeReason::kInvalidAttributeName)) {
    return;
  }
  if (!syntax::IsExtensionName(name)) {
    bad_extension_ = name;
    bad_extension_reason_ = EnvelopeReason::kInvalidAttributeName;
  } else if (!bad_extension_.has_value() &&
             (value.is_object() || value.is_array() || value.type() == element_type::DOUBLE)) {
    bad_extension_ = name;
    bad_extension_reason_ = EnvelopeReason::kInvalidExtensionValue;
  } else if (std::string_view text; !bad_extension_.has_value() &&
                                    value.get(text) == simdjson::SUCCESS &&
                                    syntax::HasControlCharacter(text)) {
    bad_extension_ = name;
    bad_extension_reason_ = EnvelopeReason::kControlCharacter;
  }
}

bool EnvelopeParser::ParseRun::StringOf(Attr attr, std::string_view& out) const {
  const Slot& slot = slots_[attr];
  if (slot.constant) {
    out = slot.constant_value;
    return true;
  }
  return slot.value.get(out) == simdjson::SUCCESS;
}

// An optional string attribute: absent, or non-empty and `valid` (when given).
bool EnvelopeParser::ParseRun::OptionalString(Attr attr, EnvelopeReason reason,
                                              std::optional<std::string_view>& out,
                                              bool (*valid)(std::string_view),
                                              std::string_view expected) {
  if (!slots_[attr].present) return true;
  std::string_view value;
  if (!StringOf(attr, value) || value.empty() || (valid != nullptr && !valid(value))) {
    return Reject(reason, std::string(kAttrNames[attr]) + " must be " + std::string(expected));
  }
  // The grammars of the others (`valid`) already refuse control characters.
  if (valid == nullptr && syntax::HasControlCharacter(value))
    return RejectControl(kAttrNames[attr]);
  out = value;
  return true;
}

// 3. Required attributes are non-empty strings.
bool EnvelopeParser::ParseRun::CheckRequiredAttributes() {
  constexpr std::array<std::pair<Attr, EnvelopeReason>, 4> kRequired = {{
      {kSpecversion, EnvelopeReason::kMissingSpecversion},
      {kId, EnvelopeReason::kMissingId},
      {kSource, EnvelopeReason::kMissingSource},
      {kType, EnvelopeReason::kMissingType},
  }};
  std::array<std::string_view, 4> required_values;
  for (size_t i = 0; i < kRequired.size(); ++i) {
    const auto [attr, reason] = kRequired[i];
    const std::string_view name = kAttrNames[attr];  // made a string only for a message
    if (!slots_[attr].present) {
      return Reject(reason, "required attribute '" + std::string(name) + "' is absent");
    }
    if (!StringOf(attr, required_values[i])) {
      return Reject(reason, "required attribute '" + std::string(name) +
                                "' must be a string, got " +
                                std::string(TypeName(slots_[attr].value.type())));
    }
    if (required_values[i].empty()) {
      return Reject(reason, "required attribute '" + std::string(name) + "' is empty");
    }
    if (syntax::HasControlCharacter(required_values[i])) return RejectControl(name);
    // Set as soon as read: a later rejection names the event by them.
    if (attr == kId) event_.id = required_values[i];
    if (attr == kSource) event_.source = required_values[i];
  }
  event_.specversion = required_values[0];
  event_.type = required_values[3];
  return true;
}

// 3. (cont.) The attributes the profile requires beyond the core four (the `contract` profile's
// subject and contractVersion): present and not empty. contractVersion is a positive integer or
// a non-empty string.
bool EnvelopeParser::ParseRun::CheckProfileRequired() {
  for (const int index : owner_.required_attrs_) {
    const Attr attr = static_cast<Attr>(index);
    const Slot& slot = slots_[attr];
    const std::string name(kAttrNames[attr]);  // only on the rejection paths
    const EnvelopeReason missing = attr == kSubject ? EnvelopeReason::kMissingSubject
                                                    : EnvelopeReason::kMissingContractVersion;
    std::string_view text;
    const bool is_string = slot.present && StringOf(attr, text);
    if (!slot.present || (is_string && text.empty())) {
      const std::string where = options_.profile.PointerFor(kAttrNames[attr]);
      return Reject(missing, "required attribute '" + name + "'" +
                                 (where.empty() ? "" : " (" + where + ")") + " is " +
                                 (slot.present ? "empty" : "absent"));
    }
    if (is_string) continue;
    if (attr == kSubject) {
      return Reject(EnvelopeReason::kInvalidSubject, "subject must be a non-empty string");
    }
    int64_t version = 0;
    if (!ReadVersion(slot.value, version) || version < 1) {
      return Reject(EnvelopeReason::kInvalidContractVersion,
                    "contractVersion must be a positive integer or a non-empty string, got " +
                        std::string(TypeName(slot.value.type())));
    }
  }
  return true;
}

// 4. specversion is 1.0.
bool EnvelopeParser::ParseRun::CheckSpecversion() {
  assert(!event_.specversion.empty() && !event_.id.empty() && !event_.source.empty() &&
         !event_.type.empty());  // CheckRequiredAttributes passed
  if (event_.specversion == "1.0") return true;
  return Reject(EnvelopeReason::kUnsupportedSpecversion,
                "specversion '" + std::string(event_.specversion) + "' is not supported (1.0)");
}

// 5. Attribute types, from here to CheckTraceparent. source is a URI-reference; a stream
// interleaves a few sources, so the check runs once per source new to the cache, and so does
// CheckSourceBoundary's (its verdict is cached with the source).
bool EnvelopeParser::ParseRun::CheckSourceSyntax() {
  std::vector<ValidSource>& valid_sources = owner_.valid_sources_;
  const auto known = std::find_if(valid_sources.begin(), valid_sources.end(),
                                  [&](const ValidSource& v) { return v.source == event_.source; });
  if (known == valid_sources.end()) {
    if (!syntax::IsUriReference(event_.source)) {
      return Reject(EnvelopeReason::kInvalidSource, "source is not a URI-reference (RFC 3986)");
    }
    if (valid_sources.size() < kValidSourcesMax) valid_sources.emplace_back();
    std::rotate(valid_sources.rbegin(), valid_sources.rbegin() + 1, valid_sources.rend());
    valid_sources.front().source.assign(event_.source);
    valid_sources.front().inside_boundary =
        SourceInsideBoundary(event_.source, options_.source_boundary);
  } else if (known != valid_sources.begin()) {
    std::rotate(valid_sources.begin(), known, known + 1);  // most recent first
  }
  assert(valid_sources.size() <= kValidSourcesMax && valid_sources.front().source == event_.source);
  source_inside_boundary_ = valid_sources.front().inside_boundary;
  return true;
}

// subject, time, datacontenttype and dataschema.
bool EnvelopeParser::ParseRun::CheckOptionalAttributes() {
  return OptionalString(kSubject, EnvelopeReason::kInvalidSubject, event_.subject, nullptr,
                        "a non-empty string") &&
         OptionalString(kTime, EnvelopeReason::kInvalidTime, event_.time,
                        syntax::IsRfc3339Timestamp, "an RFC 3339 timestamp") &&
         OptionalString(kDatacontenttype, EnvelopeReason::kInvalidDatacontenttype,
                        event_.datacontenttype, syntax::IsMediaType,
                        "an RFC 2046 media type such as application/json") &&
         OptionalString(kDataschema, EnvelopeReason::kInvalidDataschema, event_.dataschema,
                        syntax::IsAbsoluteUri, "an absolute URI");
}

// At most one of data and data_base64; data_base64 is base64.
bool EnvelopeParser::ParseRun::CheckData() {
  if (slots_[kData].present && slots_[kDataBase64].present) {
    return Reject(EnvelopeReason::kDataAndDataBase64,
                  "data and data_base64 are both present; at most one may be");
  }
  if (slots_[kDataBase64].present) {
    std::string_view base64;
    if (!StringOf(kDataBase64, base64) || !syntax::IsBase64(base64)) {
      return Reject(EnvelopeReason::kInvalidDataBase64,
                    "data_base64 must be a base64 string (RFC 4648)");
    }
    event_.data_base64 = base64;
  }
  if (slots_[kData].present) event_.data = slots_[kData].value;
  assert(!(event_.data && event_.data_base64));
  return true;
}

// The first extension member GatherTopLevelMember found breaking a rule, if any.
bool EnvelopeParser::ParseRun::CheckExtensionMembers() {
  if (!bad_extension_.has_value()) return true;
  if (bad_extension_reason_ == EnvelopeReason::kControlCharacter) {
    return RejectControl(*bad_extension_);
  }
  return Reject(bad_extension_reason_,
                bad_extension_reason_ == EnvelopeReason::kInvalidAttributeName
                    ? "extension attribute name '" + *bad_extension_ +
                          "' must be lowercase letters and digits"
                    : "extension attribute '" + *bad_extension_ +
                          "' must be a string, an integer or a boolean");
}

// schemaversion and subjectversion are non-negative integers read from the document.
bool EnvelopeParser::ParseRun::CheckVersions() {
  for (const auto& [attr, reason, target] :
       {std::tuple{kSchemaversion, EnvelopeReason::kInvalidSchemaVersion, &event_.schemaversion},
        std::tuple{kSubjectversion, EnvelopeReason::kInvalidSubjectVersion,
                   &event_.subjectversion}}) {
    if (!slots_[attr].present) continue;
    int64_t version = 0;
    if (slots_[attr].constant || !ReadVersion(slots_[attr].value, version)) {
      return Reject(reason, std::string(kAttrNames[attr]) + " must be a non-negative integer");
    }
    *target = version;
  }
  return true;
}

bool EnvelopeParser::ParseRun::CheckCorrelationIds() {
  return OptionalString(kCorrelationid, EnvelopeReason::kInvalidExtensionValue,
                        event_.correlationid, nullptr, "a non-empty string") &&
         OptionalString(kCausationid, EnvelopeReason::kInvalidExtensionValue, event_.causationid,
                        nullptr, "a non-empty string");
}

// traceparent is a W3C traceparent; layouts that carry trace_id and span_id apart (seed 001)
// compose one.
bool EnvelopeParser::ParseRun::CheckTraceparent() {
  if (slots_[kTraceparent].present) {
    return OptionalString(kTraceparent, EnvelopeReason::kInvalidTraceparent, event_.traceparent,
                          syntax::IsTraceparent,
                          "a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)");
  }
  if (!slots_[kTraceid].present) return true;
  std::string_view trace_id, span_id;
  if (!StringOf(kTraceid, trace_id) || (slots_[kSpanid].present && !StringOf(kSpanid, span_id))) {
    return Reject(EnvelopeReason::kInvalidTraceparent, "trace_id and span_id must be strings");
  }
  std::string& traceparent = owner_.traceparent_scratch_;
  traceparent = "00-";
  traceparent.append(trace_id).append("-");
  traceparent.append(span_id.empty() ? "0000000000000001" : span_id).append("-01");
  if (!syntax::IsTraceparent(traceparent)) {
    return Reject(EnvelopeReason::kInvalidTraceparent,
                  "trace_id must be 32 and span_id 16 lowercase hex digits");
  }
  event_.traceparent = traceparent;
  return true;
}

// 6. Source inside the boundary.
bool EnvelopeParser::ParseRun::CheckSourceBoundary() {
  if (source_inside_boundary_) return true;  // cached with the source by CheckSourceSyntax
  return Reject(
      EnvelopeReason::kSourceOutsideBoundary,
      "source '" + std::string(event_.source) + "' is outside the boundary" +
          (HasDotSegment(event_.source) ? " (a '.' or '..' segment in a source is never inside one)"
                                        : ""));
}

// 7. Schema version present (when required).
bool EnvelopeParser::ParseRun::CheckSchemaVersionPresent() {
  if (!owner_.require_schema_version_ || event_.schemaversion) return true;
  const std::string where = options_.profile.PointerFor("schemaversion");
  return Reject(EnvelopeReason::kMissingSchemaVersion,
                "no schema version" + (where.empty() ? std::string(" attribute") : " at " + where));
}

EnvelopeParser::Outcome EnvelopeParser::Parse(std::string_view bytes) {
  Outcome outcome;
  outcome.event.raw = bytes;
  outcome.event.profile = &options_.profile;
  ParseRun run(*this, outcome);
  if (!run.CheckSize() || !run.ParseJson()) return outcome;
  run.GatherAttributes();
  // The order is part of the interface (envelope.h): the first check that fails names the
  // reason.
  [[maybe_unused]] const bool accepted =
      run.CheckRequiredAttributes() && run.CheckProfileRequired() && run.CheckSpecversion() &&
      run.CheckSourceSyntax() && run.CheckOptionalAttributes() && run.CheckData() &&
      run.CheckExtensionMembers() && run.CheckVersions() && run.CheckCorrelationIds() &&
      run.CheckTraceparent() && run.CheckSourceBoundary() && run.CheckSchemaVersionPresent();
  assert(accepted == outcome.ok());
  return outcome;
}

}  // namespace evident
