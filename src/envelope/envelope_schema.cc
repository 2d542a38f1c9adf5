// The envelope of a profile as a JSON Schema (evident/envelope_schema.h). Each rule mirrors one
// check of envelope.cc, named in its comment; what no keyword can say is listed in kNotExpressed
// and in docs/envelope.md.
#include "evident/envelope_schema.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json/pointer.h"
#include "json/writer.h"

namespace evident {
namespace {

// One canonical attribute: its name, what it holds (for the descriptions), and whether a
// passthrough profile reads it from the top-level member of its name (GatherTopLevelMember:
// traceid, spanid and contractversion are ordinary extension attributes there).
struct Attribute {
  std::string_view name;
  std::string_view meaning;
  bool top_level_name;
};

constexpr std::array<Attribute, 18> kAttributes = {{
    {"specversion", "the CloudEvents version, \"1.0\"", true},
    {"id", "identifies the event; (source, id) is unique", true},
    {"source", "where the event happened: a URI-reference (RFC 3986)", true},
    {"type", "the kind of event", true},
    {"subject", "the object the event is about", true},
    {"time", "when it happened: an RFC 3339 timestamp", true},
    {"datacontenttype", "the media type of data (RFC 2046)", true},
    {"dataschema", "the schema of data: an absolute URI", true},
    {"data", "the payload: any JSON value", true},
    {"data_base64", "a binary payload in base64 (RFC 4648), never with data", true},
    {"schemaversion", "the version of the payload schema: a non-negative 64-bit integer", true},
    {"subjectversion", "the owner's version of the subject: a non-negative 64-bit integer", true},
    {"traceparent", "a W3C Trace Context traceparent", true},
    {"correlationid", "the conversation this event belongs to", true},
    {"causationid", "the event or command that caused this one", true},
    {"traceid", "a W3C trace id: 32 lowercase hex digits, not all zero", false},
    {"spanid", "a W3C parent id: 16 lowercase hex digits, not all zero (empty: none)", false},
    {"contractversion", "the contract's version: a positive integer or a non-empty string", false},
}};

// CloudEvents' String holds no control character, U+0000-U+001F or U+007F-U+009F
// (syntax::HasControlCharacter).
constexpr std::string_view kNoControlPattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$";
// The characters of a URI-reference (syntax::IsUriReference) and, for dataschema, a scheme
// (syntax::IsAbsoluteUri): what a validator that takes "format" as an annotation still checks.
constexpr std::string_view kUriReferencePattern =
    R"re(^(?:[A-Za-z0-9._~!$&'()*+,;=:@/?#\[\]-]|%[0-9A-Fa-f]{2})*$)re";
constexpr std::string_view kAbsoluteUriPattern =
    R"re(^[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9._~!$&'()*+,;=:@/?#\[\]-]|%[0-9A-Fa-f]{2})*$)re";
// The shape of an RFC 3339 date-time (rfc3339::IsDateTime); the calendar is format's.
constexpr std::string_view kDateTimePattern =
    R"re(^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2})re"
    R"re((?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})$)re";
// token "/" token, then spaces, then the end or ";" and parameters (syntax::IsMediaType).
constexpr std::string_view kMediaTypePattern =
    R"re(^[A-Za-z0-9!#$%&'*+.^_`|~-]+/[A-Za-z0-9!#$%&'*+.^_`|~-]+ *(?:;|$))re";
// Padded base64, the empty string included (syntax::IsBase64).
constexpr std::string_view kBase64Pattern =
    R"re(^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$)re";
// syntax::IsTraceparent: the fields, then (a second pattern: RE2 has no lookahead) version ff,
// an all-zero trace id or an all-zero parent id.
constexpr std::string_view kTraceparentPattern =
    "^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$";
constexpr std::string_view kTraceparentForbiddenPattern =
    "^ff-|^[0-9a-f]{2}-0{32}-|-0{16}-[0-9a-f]{2}$";
// syntax::IsExtensionName.
constexpr std::string_view kExtensionNamePattern = "^[a-z0-9]+$";
// Present, in validate's sense: a member holding null counts as absent.
constexpr std::string_view kNotNull = R"({"not":{"type":"null"}})";

constexpr std::string_view kNotExpressed =
    "evident validate also refuses what this schema cannot express (docs/envelope.md, "
    "\"The envelope as a JSON Schema\"): an event larger than --event-bytes-max; input that is "
    "not I-JSON (invalid UTF-8, an unpaired surrogate escape, a member name twice in one "
    "object, nesting deeper than 64, a number no 64-bit integer or double holds); an extension "
    "value written with a fraction or an exponent (3.0); a version past 2^63-1, or written with "
    "a fraction or an exponent past 9e15; a source outside the consumer's --boundary. The "
    "date-time, uri and uri-reference formats are checked only where a validator asserts "
    "format.";

using Path = std::vector<std::string>;

// The schema of one place in the input layout: the rules for the value there and the members
// below it that attributes live in. Built from the profile's pointers, then written out.
struct LocationNode {
  std::string description;
  std::vector<std::string> rules;     // schemas (JSON text) the value satisfies, every one
  std::vector<std::string> required;  // members that must be present
  std::vector<std::string> names;     // members[i] is the schema of the member names[i]
  std::vector<LocationNode> members;

  LocationNode* Find(std::string_view name) {
    const auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? nullptr : &members[static_cast<size_t>(it - names.begin())];
  }

  // The node at `path` below this one, made on first use. `present`: each member on the way
  // must be present, so each node on it is an object (a pointer through anything else finds
  // nothing, which validate reads as absent).
  LocationNode& At(const Path& path, bool present) {
    LocationNode* node = this;
    for (const std::string& token : path) {
      std::vector<std::string>& names_required = node->required;
      if (present &&
          std::find(names_required.begin(), names_required.end(), token) == names_required.end()) {
        names_required.push_back(token);
      }
      LocationNode* next = node->Find(token);
      if (next == nullptr) {
        node->names.push_back(token);
        node->members.emplace_back();
        next = &node->members.back();
      }
      node = next;
    }
    return *node;
  }
};

void WriteNode(const LocationNode& node, json::Writer& w);

// "required" and "properties" of a node, then its rules under "allOf".
void WriteNodeKeywords(const LocationNode& node, json::Writer& w) {
  if (!node.required.empty()) {
    w.Key("required").BeginArray();
    for (const std::string& name : node.required) w.String(name);
    w.EndArray();
  }
  if (!node.members.empty()) {
    w.Key("properties").BeginObject();
    for (size_t i = 0; i < node.members.size(); ++i) {
      w.Key(node.names[i]);
      WriteNode(node.members[i], w);
    }
    w.EndObject();
  }
  if (!node.rules.empty()) {
    w.Key("allOf").BeginArray();
    for (const std::string& rule : node.rules) w.Raw(rule);
    w.EndArray();
  }
}

// A node as one schema: its one rule as it stands when it has nothing else, else an object.
void WriteNode(const LocationNode& node, json::Writer& w) {
  const bool bare = node.description.empty() && node.required.empty() && node.members.empty();
  if (bare && node.rules.size() == 1) {
    w.Raw(node.rules.front());
    return;
  }
  w.BeginObject();
  if (!node.description.empty()) w.Field("description", node.description);
  if (!node.required.empty()) w.Field("type", "object");
  WriteNodeKeywords(node, w);
  w.EndObject();
}

std::string NodeText(const LocationNode& node) {
  std::string out;
  json::Writer w(out);
  WriteNode(node, w);
  return out;
}

std::string Describe(const Attribute& attribute) {
  return std::string(attribute.name) + ": " + std::string(attribute.meaning);
}

const Attribute& AttributeNamed(std::string_view name) {
  const auto it = std::find_if(kAttributes.begin(), kAttributes.end(),
                               [&](const Attribute& attribute) { return attribute.name == name; });
  assert(it != kAttributes.end());
  return *it;
}

bool IsTopLevelAttribute(std::string_view name) {
  return std::any_of(kAttributes.begin(), kAttributes.end(), [&](const Attribute& attribute) {
    return attribute.top_level_name && attribute.name == name;
  });
}

// Where the parser reads `attribute` (GatherTopLevelMember, GatherAttributes): the last pointer
// the profile maps it to (each one read replaces the one before), the payload pointer for data
// unless a passthrough profile keeps it in "data", the top-level member of its name under
// passthrough, else nowhere.
std::optional<Path> LocationOf(const Profile& profile, const Attribute& attribute) {
  std::optional<std::string_view> pointer;
  if (attribute.name == "data" && (!profile.passthrough || profile.data_pointer != "/data")) {
    pointer = std::string_view(profile.data_pointer);
  }
  const auto& mapped = profile.attribute_pointers;
  for (auto it = mapped.rbegin(); !pointer.has_value() && it != mapped.rend(); ++it) {
    if (it->first == attribute.name) pointer = std::string_view(it->second);
  }
  if (pointer.has_value()) {
    Path path;
    if (!json::SplitPointer(*pointer, path)) return std::nullopt;  // Create refused it already
    return path;
  }
  if (profile.passthrough && attribute.top_level_name) return Path{std::string(attribute.name)};
  return std::nullopt;
}

bool HasConstant(const Profile& profile, std::string_view name) {
  return std::any_of(profile.constants.begin(), profile.constants.end(),
                     [&](const std::pair<std::string, std::string>& c) { return c.first == name; });
}

bool ProfileRequires(const Profile& profile, std::string_view name) {
  return std::find(profile.required.begin(), profile.required.end(), name) !=
         profile.required.end();
}

// Whether the document itself must hold `name` (CheckRequiredAttributes, CheckProfileRequired,
// CheckSchemaVersionPresent). A constant fills a String attribute the input lacks, but never a
// version: CheckVersions refuses a constant one, so a version must come from the document.
bool RequiredInDocument(const EnvelopeOptions& options, std::string_view name) {
  const Profile& profile = options.profile;
  const bool constant = HasConstant(profile, name);
  if (name == "schemaversion" || name == "subjectversion") {
    return constant || (name == "schemaversion" &&
                        (options.require_schema_version || ProfileRequires(profile, name)));
  }
  const bool core = name == "specversion" || name == "id" || name == "source" || name == "type";
  return (core || ProfileRequires(profile, name)) && !constant;
}

// "type": `base`, or [`base`, "null"] where the attribute may be absent: a member holding null
// counts as absent (GatherAttributes).
void WriteType(json::Writer& w, std::string_view base, bool nullable) {
  w.Key("type");
  if (!nullable) {
    w.String(base);
    return;
  }
  w.BeginArray().String(base).String("null").EndArray();
}

// id, type, subject, correlationid, causationid: non-empty, no control character
// (CheckRequiredAttributes, OptionalString).
void WriteNonEmptyString(json::Writer& w, bool nullable) {
  WriteType(w, "string", nullable);
  w.Key("minLength").Int(1).Field("pattern", kNoControlPattern);
}

// CheckSpecversion.
void WriteSpecversion(json::Writer& w, bool nullable) {
  if (!nullable) {
    w.Field("const", "1.0");
    return;
  }
  w.Key("enum").BeginArray().String("1.0").Null().EndArray();
}

// source (a URI-reference, CheckSourceSyntax) and dataschema (an absolute URI).
void WriteUri(json::Writer& w, bool nullable, std::string_view pattern, std::string_view format) {
  WriteType(w, "string", nullable);
  w.Key("minLength").Int(1).Field("pattern", pattern).Field("format", format);
}

void WritePatternString(json::Writer& w, bool nullable, std::string_view pattern) {
  WriteType(w, "string", nullable);
  w.Field("pattern", pattern);
}

// schemaversion and subjectversion (CheckVersions). Their 64-bit bound is in the description:
// what validate reads past 9e15 depends on the number's spelling, which JSON Schema ignores.
void WriteVersion(json::Writer& w, bool nullable) {
  WriteType(w, "integer", nullable);
  w.Key("minimum").Int(0);
}

// CheckTraceparent.
void WriteTraceparent(json::Writer& w, bool nullable) {
  WriteType(w, "string", nullable);
  w.Field("pattern", kTraceparentPattern);
  w.Key("not").BeginObject().Field("type", "string");
  w.Field("pattern", kTraceparentForbiddenPattern).EndObject();
}

// A required contractversion (CheckProfileRequired): a non-empty string or an integer >= 1.
void WriteContractVersion(json::Writer& w) {
  w.Key("type").BeginArray().String("string").String("integer").EndArray();
  w.Key("minLength").Int(1).Key("minimum").Int(1);
}

// The schema of `attribute`'s value where the layout keeps it, or empty where validate checks
// nothing (data; traceid and spanid, checked together by AddTraceIds; a contractversion the
// profile does not require).
std::string AttributeRule(const Attribute& attribute, bool required) {
  const std::string_view name = attribute.name;
  const bool nullable = !required;
  if (name == "data" || name == "traceid" || name == "spanid" ||
      (name == "contractversion" && !required)) {
    return "";
  }
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("description", Describe(attribute));
  if (name == "specversion") {
    WriteSpecversion(w, nullable);
  } else if (name == "source") {
    WriteUri(w, nullable, kUriReferencePattern, "uri-reference");
  } else if (name == "dataschema") {
    WriteUri(w, nullable, kAbsoluteUriPattern, "uri");
  } else if (name == "time") {
    WritePatternString(w, nullable, kDateTimePattern);
    w.Field("format", "date-time");
  } else if (name == "datacontenttype") {
    WritePatternString(w, nullable, kMediaTypePattern);
  } else if (name == "data_base64") {
    WritePatternString(w, nullable, kBase64Pattern);
  } else if (name == "schemaversion" || name == "subjectversion") {
    WriteVersion(w, nullable);
  } else if (name == "traceparent") {
    WriteTraceparent(w, nullable);
  } else if (name == "contractversion") {
    WriteContractVersion(w);
  } else {
    WriteNonEmptyString(w, nullable);  // id, type, subject, correlationid, causationid
  }
  w.EndObject();
  return out;
}

// A required attribute the profile reads from nowhere: validate refuses every event.
std::string Unsatisfiable(const Attribute& attribute) {
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("$comment", std::string(attribute.name) +
                                        " is required and the profile reads it from nowhere");
  w.Key("not").BeginObject().EndObject().EndObject();
  return out;
}

// Puts `attribute`'s rule where the layout keeps it.
void AddAttribute(const EnvelopeOptions& options, const Attribute& attribute, LocationNode& root) {
  const bool required = RequiredInDocument(options, attribute.name);
  const std::optional<Path> path = LocationOf(options.profile, attribute);
  if (!path.has_value()) {
    if (required) root.rules.push_back(Unsatisfiable(attribute));
    return;
  }
  LocationNode& node = root.At(*path, required);
  std::string rule = AttributeRule(attribute, required);
  if (!rule.empty()) {
    node.rules.push_back(std::move(rule));
  } else if (node.description.empty()) {
    node.description = Describe(attribute);
  }
}

// An extension attribute's value (GatherTopLevelMember): a string without a control character,
// an integer or a boolean; null counts as absent.
std::string ExtensionValueRule() {
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("description", "an extension attribute: a string, an integer or a boolean");
  w.Key("type").BeginArray().String("string").String("integer").String("boolean");
  w.String("null").EndArray();
  w.Field("pattern", kNoControlPattern).EndObject();
  return out;
}

// Extension names are [a-z0-9]+, except where the member holds null (GatherTopLevelMember skips
// it). Only additionalProperties ties a member's name to its value, hence a subschema of its own:
// data_base64 and the good names pass, any other name must hold null.
std::string ExtensionNamesRule() {
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("$comment",
                        "extension attribute names are lowercase letters and digits; a member "
                        "holding null is ignored");
  w.Key("properties").BeginObject().Key("data_base64").Bool(true).EndObject();
  w.Key("patternProperties").BeginObject().Key(kExtensionNamePattern).Bool(true).EndObject();
  w.Key("additionalProperties").BeginObject().Field("type", "null").EndObject();
  w.EndObject();
  return out;
}

// A passthrough profile reads every top-level member (GatherTopLevelMember): a canonical name
// the profile reads elsewhere is ignored, and any other member, one a pointer of the profile
// goes through included, is an extension attribute as well.
void AddPassthroughMembers(LocationNode& root) {
  for (const Attribute& attribute : kAttributes) {
    if (!attribute.top_level_name || root.Find(attribute.name) != nullptr) continue;
    root.At({std::string(attribute.name)}, false).description =
        std::string(attribute.name) + ": not read here; the profile reads it elsewhere";
  }
  for (size_t i = 0; i < root.names.size(); ++i) {
    if (!IsTopLevelAttribute(root.names[i])) root.members[i].rules.push_back(ExtensionValueRule());
  }
  root.rules.push_back(ExtensionNamesRule());
}

// data and data_base64 never together (CheckData): not both present and not null.
void AddDataExclusion(const Profile& profile, LocationNode& root) {
  const std::optional<Path> data = LocationOf(profile, AttributeNamed("data"));
  const std::optional<Path> base64 = LocationOf(profile, AttributeNamed("data_base64"));
  if (!data.has_value() || !base64.has_value()) return;
  LocationNode both;
  both.At(*data, true).rules.push_back(std::string(kNotNull));
  both.At(*base64, true).rules.push_back(std::string(kNotNull));
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("$comment", "data and data_base64: at most one");
  w.Key("not").Raw(NodeText(both)).EndObject();
  root.rules.push_back(std::move(out));
}

// A trace id or span id of `digits` lowercase hex digits, not all zero; a span id may be empty.
std::string HexIdRule(const Attribute& attribute, size_t digits, bool span) {
  const std::string hex = "[0-9a-f]{" + std::to_string(digits) + "}";
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("description", Describe(attribute));
  WriteType(w, "string", span);
  w.Field("pattern", span ? "^(?:" + hex + ")?$" : "^" + hex + "$");
  w.Key("not").BeginObject().Field("const", std::string(digits, '0')).EndObject();
  w.EndObject();
  return out;
}

// When AddTraceIds' rule applies: a trace id present and, where the layout has one, no
// traceparent (it wins over the pair).
std::string TraceIdsCondition(const Profile& profile, const Path& trace) {
  LocationNode given;
  given.At(trace, true).rules.push_back(std::string(kNotNull));
  const std::optional<Path> parent = LocationOf(profile, AttributeNamed("traceparent"));
  if (!parent.has_value()) return NodeText(given);
  LocationNode parent_given;
  parent_given.At(*parent, true).rules.push_back(std::string(kNotNull));
  std::string out;
  json::Writer w(out);
  w.BeginObject().Key("allOf").BeginArray().Raw(NodeText(given));
  w.BeginObject().Key("not").Raw(NodeText(parent_given)).EndObject();
  w.EndArray().EndObject();
  return out;
}

// Layouts that carry the trace id and span id apart (CheckTraceparent composes a traceparent):
// with a trace id, it is 32 hex digits and the span id, if any, 16 or empty.
void AddTraceIds(const Profile& profile, LocationNode& root) {
  const std::optional<Path> trace = LocationOf(profile, AttributeNamed("traceid"));
  if (!trace.has_value()) return;
  LocationNode then;
  then.At(*trace, true).rules.push_back(HexIdRule(AttributeNamed("traceid"), 32, false));
  if (const std::optional<Path> span = LocationOf(profile, AttributeNamed("spanid"))) {
    then.At(*span, false).rules.push_back(HexIdRule(AttributeNamed("spanid"), 16, true));
  }
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("$comment", "a trace id and span id compose the traceparent");
  w.Key("if").Raw(TraceIdsCondition(profile, *trace));
  w.Key("then").Raw(NodeText(then)).EndObject();
  root.rules.push_back(std::move(out));
}

// kEnvelopeSchemaIdPrefix, the name with every byte but RFC 3986's unreserved ones
// percent-encoded (a file profile's name is free text), and ".json".
std::string SchemaId(std::string_view name) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string id(kEnvelopeSchemaIdPrefix);
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      id.push_back(c);
    } else {
      id.push_back('%');
      id.push_back(kHex[byte >> 4]);
      id.push_back(kHex[byte & 15]);
    }
  }
  return id + ".json";
}

std::string Description(const EnvelopeOptions& options) {
  const Profile& profile = options.profile;
  std::string text = "The envelope evident validate reads with the " + profile.name + " profile";
  const std::string version_at = profile.PointerFor("schemaversion");
  if (!version_at.empty()) text += ", the schema version at " + version_at;
  if (RequiredInDocument(options, "schemaversion")) text += ", a schema version required";
  return text +
         ". Every rule here is one of validate's; $comment lists the ones JSON Schema "
         "cannot express.";
}

std::string WriteDocument(const EnvelopeOptions& options, const LocationNode& root) {
  const Profile& profile = options.profile;
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("$schema", "https://json-schema.org/draft/2020-12/schema");
  w.Field("$id", SchemaId(profile.name));
  w.Field("title", "evident envelope, profile " + profile.name);
  w.Field("description", Description(options)).Field("$comment", kNotExpressed);
  w.Field("type", "object");  // not-an-object
  WriteNodeKeywords(root, w);
  // Under passthrough every other top-level member is an extension attribute; otherwise the
  // parser ignores what it does not read.
  if (profile.passthrough) w.Key("additionalProperties").Raw(ExtensionValueRule());
  w.EndObject();
  return out;
}

}  // namespace

Result<std::string> EnvelopeJsonSchema(const EnvelopeOptions& options) {
  // The parser's own checks of the options: a schema describes only a parser that can exist.
  EVIDENT_RETURN_IF_ERROR(EnvelopeParser::Create(options).status());
  LocationNode root;
  for (const Attribute& attribute : kAttributes) AddAttribute(options, attribute, root);
  if (options.profile.passthrough) AddPassthroughMembers(root);
  AddDataExclusion(options.profile, root);
  AddTraceIds(options.profile, root);
  return WriteDocument(options, root);
}

}  // namespace evident
