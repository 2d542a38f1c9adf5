// schema/compile.cc — turns schema documents into a Plan (see plan.h).
//
// Two phases. Indexing walks every loaded document once through the keywords that hold
// subschemas, recording each subschema's base URI, dialect and vocabularies, every resource
// ($id) and every anchor. Compilation then turns subschemas into Nodes on demand, starting from
// the root: a $ref becomes the index of its target's Node, loading registry documents as needed.
// Nodes are compiled from a work list, not recursively, so deep schemas cannot exhaust the stack.
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <map>
#include <span>
#include <unordered_map>

#include "evident/schema.h"
#include "json/files.h"
#include "schema/format.h"
#include "schema/metaschemas.h"
#include "schema/plan.h"
#include "schema/regex.h"
#include "schema/uri.h"

namespace evident::schema {
namespace internal {
namespace {

namespace dom = simdjson::dom;

enum Vocab : uint32_t {
  kVocabCore = 1,
  kVocabApplicator = 2,
  kVocabUnevaluated = 4,
  kVocabValidation = 8,
  kVocabMetaData = 16,
  kVocabFormatAnnotation = 32,
  kVocabFormatAssertion = 64,
  kVocabContent = 128,
};
constexpr uint32_t kVocabDefault2020 = kVocabCore | kVocabApplicator | kVocabUnevaluated |
                                       kVocabValidation | kVocabMetaData | kVocabFormatAnnotation |
                                       kVocabContent;
// Draft 7 has no vocabularies; every keyword is on.
constexpr uint32_t kVocabAllDraft7 = kVocabDefault2020;

// Nesting of one schema document the indexer follows (documents parse with simdjson's depth
// limit of 1024 anyway; this keeps the recursive walk well inside any thread's stack).
constexpr size_t kIndexDepthMax = 1024;
// Chains of "$schema" meta-schemas followed to find vocabularies.
constexpr size_t kMetaschemaChainMax = 8;

struct Location {
  uint32_t doc = 0;
  std::string pointer;  // escaped JSON Pointer from the document root
};

struct SchemaInfo {
  std::string base;
  uint32_t resource = 0;
  Dialect dialect = Dialect::kDraft2020_12;
  uint32_t vocab = kVocabDefault2020;
  // The subschema itself: finding it again from its pointer would scan every member of every
  // object on the way (simdjson looks members up linearly), which is quadratic for wide schemas.
  dom::element element;
};

std::string LocationKey(uint32_t doc, std::string_view pointer) {
  std::string key = std::to_string(doc);
  key.push_back(':');
  key.append(pointer);
  return key;
}

std::string StripEmptyFragment(std::string uri) {
  if (!uri.empty() && uri.back() == '#') uri.pop_back();
  return uri;
}

bool GetCount(dom::element el, uint64_t& out) {
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  if (el.get_int64().get(i) == simdjson::SUCCESS) {
    if (i < 0) return false;
    out = static_cast<uint64_t>(i);
    return true;
  }
  if (el.get_uint64().get(u) == simdjson::SUCCESS) {
    out = u;
    return true;
  }
  if (el.get_double().get(d) == simdjson::SUCCESS && d >= 0 && std::floor(d) == d && d < 1.8e19) {
    out = static_cast<uint64_t>(d);
    return true;
  }
  return false;
}

bool GetNumber(dom::element el, double& number, bool& is_integer, int64_t& integer) {
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  is_integer = false;
  if (el.get_int64().get(i) == simdjson::SUCCESS) {
    number = static_cast<double>(i);
    integer = i;
    is_integer = true;
    return true;
  }
  if (el.get_uint64().get(u) == simdjson::SUCCESS) {
    number = static_cast<double>(u);
    return true;
  }
  if (el.get_double().get(d) == simdjson::SUCCESS) {
    number = d;
    if (std::floor(d) == d && std::fabs(d) < 9.0e18) {
      is_integer = true;
      integer = static_cast<int64_t>(d);
    }
    return true;
  }
  return false;
}

std::optional<uint8_t> TypeBitFor(std::string_view name) {
  if (name == "null") return kTypeNull;
  if (name == "boolean") return kTypeBoolean;
  if (name == "object") return kTypeObject;
  if (name == "array") return kTypeArray;
  if (name == "number") return kTypeNumber;
  if (name == "string") return kTypeString;
  if (name == "integer") return kTypeInteger;
  return std::nullopt;
}

struct KnownDialect {
  Dialect dialect;
  uint32_t vocab;
};

std::optional<KnownDialect> KnownMetaschema(const std::string& uri) {
  if (uri == "https://json-schema.org/draft/2020-12/schema" ||
      uri == "https://json-schema.org/draft/2019-09/schema") {
    return KnownDialect{Dialect::kDraft2020_12, kVocabDefault2020};
  }
  if (uri == "http://json-schema.org/draft-07/schema" ||
      uri == "http://json-schema.org/draft-06/schema" ||
      uri == "http://json-schema.org/draft-04/schema") {
    return KnownDialect{Dialect::kDraft7, kVocabAllDraft7};
  }
  return std::nullopt;
}

std::optional<uint32_t> VocabularyBit(std::string_view uri) {
  static const std::pair<std::string_view, uint32_t> kKnown[] = {
      {"https://json-schema.org/draft/2020-12/vocab/core", kVocabCore},
      {"https://json-schema.org/draft/2020-12/vocab/applicator", kVocabApplicator},
      {"https://json-schema.org/draft/2020-12/vocab/unevaluated", kVocabUnevaluated},
      {"https://json-schema.org/draft/2020-12/vocab/validation", kVocabValidation},
      {"https://json-schema.org/draft/2020-12/vocab/meta-data", kVocabMetaData},
      {"https://json-schema.org/draft/2020-12/vocab/format-annotation", kVocabFormatAnnotation},
      {"https://json-schema.org/draft/2020-12/vocab/format-assertion", kVocabFormatAssertion},
      {"https://json-schema.org/draft/2020-12/vocab/content", kVocabContent},
      {"https://json-schema.org/draft/2019-09/vocab/core", kVocabCore},
      {"https://json-schema.org/draft/2019-09/vocab/applicator",
       kVocabApplicator | kVocabUnevaluated},
      {"https://json-schema.org/draft/2019-09/vocab/validation", kVocabValidation},
      {"https://json-schema.org/draft/2019-09/vocab/meta-data", kVocabMetaData},
      {"https://json-schema.org/draft/2019-09/vocab/format", kVocabFormatAnnotation},
      {"https://json-schema.org/draft/2019-09/vocab/content", kVocabContent},
  };
  for (const auto& [name, bit] : kKnown) {
    if (name == uri) return bit;
  }
  return std::nullopt;
}

// Where a subschema sits while indexing: the base URI, resource and dialect it inherits from
// its parent unless its own "$id" (or "$schema") says otherwise.
struct IndexScope {
  std::string base;
  uint32_t resource = 0;
  KnownDialect dialect;

  SchemaInfo InfoOf(dom::element el) const {
    return SchemaInfo{base, resource, dialect.dialect, dialect.vocab, el};
  }
};

// The keywords whose value is a subschema (single), an array of subschemas (arrays) or an
// object of them (maps): the ones the indexer follows. A keyword may be in two lists (draft 7
// "items" is a schema or an array of schemas).
struct SubschemaKeywords {
  std::span<const std::string_view> single, arrays, maps;
};
constexpr std::string_view kSingle2020[] = {"additionalProperties",
                                            "propertyNames",
                                            "items",
                                            "contains",
                                            "not",
                                            "if",
                                            "then",
                                            "else",
                                            "unevaluatedItems",
                                            "unevaluatedProperties",
                                            "contentSchema"};
constexpr std::string_view kArrays2020[] = {"allOf", "anyOf", "oneOf", "prefixItems"};
constexpr std::string_view kMaps2020[] = {
    "$defs", "definitions", "properties", "patternProperties", "dependentSchemas", "dependencies"};
constexpr std::string_view kSingle7[] = {"additionalProperties",
                                         "propertyNames",
                                         "additionalItems",
                                         "contains",
                                         "not",
                                         "if",
                                         "then",
                                         "else",
                                         "items"};
constexpr std::string_view kArrays7[] = {"allOf", "anyOf", "oneOf", "items"};
constexpr std::string_view kMaps7[] = {"definitions", "properties", "patternProperties",
                                       "dependencies"};
constexpr SubschemaKeywords kSubschemaKeywords2020{kSingle2020, kArrays2020, kMaps2020};
constexpr SubschemaKeywords kSubschemaKeywords7{kSingle7, kArrays7, kMaps7};

bool Lists(std::span<const std::string_view> list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

class Compiler {
 public:
  Compiler(const Registry& registry, const CompileOptions& options)
      : registry_(registry), options_(options), plan_(std::make_unique<Plan>()) {
    plan_->options = options;
  }

  Result<std::unique_ptr<Plan>> Run(std::string_view json, std::string base_uri) {
    const std::string retrieval = base_uri.empty() ? "urn:evident:root" : base_uri;
    const KnownDialect initial{
        options_.default_dialect,
        options_.default_dialect == Dialect::kDraft7 ? kVocabAllDraft7 : kVocabDefault2020};
    EVIDENT_ASSIGN_OR_RETURN(uint32_t doc, LoadDocument(std::string(json), retrieval, initial));
    const SchemaInfo& root_info = info_.at(LocationKey(doc, ""));
    plan_->dialect = root_info.dialect;
    EVIDENT_ASSIGN_OR_RETURN(plan_->root, NodeFor(Location{doc, ""}));
    // A bounded work list: every node is compiled once and NodeFor enforces schema_nodes_max.
    while (!pending_.empty()) {
      const uint32_t node = pending_.front();
      pending_.pop_front();
      EVIDENT_RETURN_IF_ERROR(CompileNode(node));
    }
    EVIDENT_RETURN_IF_ERROR(CheckCycles());
    MarkSharedNodes();
    return std::move(plan_);
  }

 private:
  // ---- documents and indexing --------------------------------------------------------------

  Result<uint32_t> LoadDocument(std::string json, const std::string& retrieval_uri,
                                KnownDialect inherited) {
    if (plan_->documents.size() >= options_.documents_max) {
      return Status::LimitExceeded("schema loads more than " +
                                   std::to_string(options_.documents_max) + " documents");
    }
    if (json.size() > options_.schema_bytes_max) {
      return Status::LimitExceeded("schema document " + retrieval_uri + " is larger than " +
                                   std::to_string(options_.schema_bytes_max) + " bytes");
    }
    auto parser = std::make_unique<dom::parser>();
    dom::element root;
    if (auto error = parser->parse(json).get(root); error) {
      return Status::InvalidArgument("schema document " + retrieval_uri +
                                     " is not valid JSON: " + simdjson::error_message(error));
    }
    const uint32_t doc = static_cast<uint32_t>(plan_->documents.size());
    plan_->documents.push_back(std::move(parser));
    document_roots_.push_back(root);
    loaded_uris_[StripEmptyFragment(retrieval_uri)] = doc;
    EVIDENT_ASSIGN_OR_RETURN(KnownDialect dialect, DialectOf(root, inherited, 0));
    const uint32_t resource = AddResource(StripEmptyFragment(retrieval_uri), Location{doc, ""});
    EVIDENT_RETURN_IF_ERROR(
        Index(doc, root, "", IndexScope{StripEmptyFragment(retrieval_uri), resource, dialect}, 0));
    return doc;
  }

  uint32_t AddResource(const std::string& uri, const Location& root) {
    auto it = resources_by_uri_.find(uri);
    if (it != resources_by_uri_.end()) return it->second;
    const uint32_t index = static_cast<uint32_t>(plan_->resources.size());
    plan_->resources.push_back(Resource{uri, {}});
    resource_roots_.push_back(root);
    resource_dynamic_anchors_.emplace_back();
    resource_started_.push_back(false);
    resources_by_uri_[uri] = index;
    return index;
  }

  // The dialect and vocabularies of a resource root: its "$schema" or else what it inherits.
  Result<KnownDialect> DialectOf(dom::element el, KnownDialect inherited, size_t chain) {
    dom::object object;
    if (el.get_object().get(object) != simdjson::SUCCESS) return inherited;
    dom::element schema_member;
    if (object["$schema"].get(schema_member) != simdjson::SUCCESS) return inherited;
    std::string_view schema_uri;
    if (schema_member.get_string().get(schema_uri) != simdjson::SUCCESS) {
      return Status::InvalidArgument("\"$schema\" must be a string (a meta-schema URI)");
    }
    const std::string uri = StripEmptyFragment(ResolveUri("", schema_uri));
    if (auto known = KnownMetaschema(uri)) return *known;
    if (chain >= kMetaschemaChainMax) {
      return Status::InvalidArgument("meta-schema chain through " + uri + " is too long");
    }
    // A custom meta-schema: its $vocabulary says which keywords are on.
    EVIDENT_ASSIGN_OR_RETURN(uint32_t doc, EnsureDocument(uri, inherited));
    dom::object meta;
    if (document_roots_[doc].get_object().get(meta) != simdjson::SUCCESS) {
      return Status::InvalidArgument("meta-schema " + uri + " is not an object");
    }
    dom::object vocabulary;
    if (meta["$vocabulary"].get_object().get(vocabulary) != simdjson::SUCCESS) {
      return DialectOf(document_roots_[doc], inherited, chain + 1);
    }
    uint32_t bits = kVocabCore;
    for (auto [name, required] : vocabulary) {
      const auto bit = VocabularyBit(name);
      bool is_required = false;
      if (required.get_bool().get(is_required) != simdjson::SUCCESS) is_required = false;
      if (!bit) {
        if (is_required) {
          return Status::InvalidArgument("meta-schema " + uri + " requires unknown vocabulary " +
                                         std::string(name));
        }
        continue;
      }
      bits |= *bit;
    }
    return KnownDialect{Dialect::kDraft2020_12, bits};
  }

  // Loads the document for `uri` (no fragment) unless already known as a resource.
  Result<uint32_t> EnsureDocument(const std::string& uri, KnownDialect inherited) {
    if (auto it = loaded_uris_.find(uri); it != loaded_uris_.end()) return it->second;
    if (auto it = resources_by_uri_.find(uri); it != resources_by_uri_.end()) {
      return resource_roots_[it->second].doc;
    }
    Result<std::string> text = registry_.Load(uri);
    if (!text.ok()) {
      if (auto builtin = BuiltinMetaschema(uri)) {
        text = std::string(*builtin);
      } else {
        return Status::NotFound("cannot resolve " + uri +
                                ": not in the registry (remote documents are never fetched)");
      }
    }
    return LoadDocument(std::move(text).value(), uri, inherited);
  }

  // Records the subschema at (doc, pointer) and, through the keywords that hold subschemas,
  // every subschema below it. `scope` is what the subschema inherits from its parent.
  Status Index(uint32_t doc, dom::element el, const std::string& pointer, IndexScope scope,
               size_t depth) {
    if (depth > kIndexDepthMax) {
      return Status::LimitExceeded("schema nesting deeper than " + std::to_string(kIndexDepthMax));
    }
    dom::object object;
    if (el.get_object().get(object) != simdjson::SUCCESS) {
      info_.emplace(LocationKey(doc, pointer), scope.InfoOf(el));
      return Status::Ok();
    }
    EVIDENT_RETURN_IF_ERROR(IndexIdentifiers(doc, pointer, el, object, scope));
    info_.emplace(LocationKey(doc, pointer), scope.InfoOf(el));
    return IndexChildren(doc, pointer, object, scope, depth);
  }

  // "$id" (a new resource and base URI, and maybe a new dialect; in draft 7 also an anchor),
  // "$anchor" and "$dynamicAnchor" of one schema object. Updates `scope` for it and below.
  Status IndexIdentifiers(uint32_t doc, const std::string& pointer, dom::element el,
                          dom::object object, IndexScope& scope) {
    const bool draft7 = scope.dialect.dialect == Dialect::kDraft7;
    std::string_view id;
    const bool has_ref = object["$ref"].error() == simdjson::SUCCESS;
    if (object["$id"].get_string().get(id) == simdjson::SUCCESS && !(draft7 && has_ref)) {
      if (draft7 && id.starts_with("#")) {
        anchors_[scope.base + std::string(id)] = Location{doc, pointer};
      } else {
        const std::string resolved = ResolveUri(scope.base, id);
        std::string without_fragment, fragment;
        SplitFragment(resolved, without_fragment, fragment);
        if (!pointer.empty()) {
          EVIDENT_ASSIGN_OR_RETURN(scope.dialect, DialectOf(el, scope.dialect, 0));
        }
        scope.base = without_fragment;
        scope.resource = AddResource(scope.base, Location{doc, pointer});
        if (draft7 && !fragment.empty()) {
          anchors_[scope.base + "#" + fragment] = Location{doc, pointer};
        }
      }
    }
    if (draft7) return Status::Ok();
    std::string_view anchor;
    if (object["$anchor"].get_string().get(anchor) == simdjson::SUCCESS) {
      anchors_[scope.base + "#" + std::string(anchor)] = Location{doc, pointer};
    }
    if (object["$dynamicAnchor"].get_string().get(anchor) == simdjson::SUCCESS) {
      anchors_.emplace(scope.base + "#" + std::string(anchor), Location{doc, pointer});
      assert(scope.resource < resource_dynamic_anchors_.size());
      resource_dynamic_anchors_[scope.resource].emplace(std::string(anchor),
                                                        Location{doc, pointer});
    }
    return Status::Ok();
  }

  // Indexes the subschemas under the keywords of `object` that hold them, in member order.
  Status IndexChildren(uint32_t doc, const std::string& pointer, dom::object object,
                       const IndexScope& scope, size_t depth) {
    const SubschemaKeywords& keywords =
        scope.dialect.dialect == Dialect::kDraft7 ? kSubschemaKeywords7 : kSubschemaKeywords2020;
    auto visit = [&](dom::element child, const std::string& child_pointer) -> Status {
      if (!child.is_object() && !child.is_bool()) return Status::Ok();
      return Index(doc, child, child_pointer, scope, depth + 1);
    };
    for (auto [key, value] : object) {
      const std::string child_pointer = pointer + "/" + EscapePointerToken(key);
      if (Lists(keywords.single, key)) {
        EVIDENT_RETURN_IF_ERROR(visit(value, child_pointer));
      }
      if (Lists(keywords.arrays, key) && value.is_array()) {
        size_t i = 0;
        for (dom::element item : dom::array(value.get_array().value_unsafe())) {
          EVIDENT_RETURN_IF_ERROR(visit(item, child_pointer + "/" + std::to_string(i++)));
        }
      }
      if (Lists(keywords.maps, key) && value.is_object()) {
        for (auto [member_name, sub] : dom::object(value.get_object().value_unsafe())) {
          EVIDENT_RETURN_IF_ERROR(
              visit(sub, child_pointer + "/" + EscapePointerToken(member_name)));
        }
      }
    }
    return Status::Ok();
  }

  // ---- references ---------------------------------------------------------------------------

  Result<Location> Resolve(const SchemaInfo& from, std::string_view reference) {
    const std::string target = ResolveUri(from.base, reference);
    std::string uri, fragment;
    SplitFragment(target, uri, fragment);
    EVIDENT_ASSIGN_OR_RETURN(uint32_t doc_unused,
                             EnsureDocument(uri, KnownDialect{from.dialect, from.vocab}));
    (void)doc_unused;
    auto resource = resources_by_uri_.find(uri);
    if (resource == resources_by_uri_.end()) {
      return Status::NotFound("cannot resolve \"" + std::string(reference) + "\" (" + target + ")");
    }
    const Location& root = resource_roots_[resource->second];
    if (fragment.empty()) return root;
    if (fragment[0] == '/') {
      std::vector<std::string> tokens;
      if (!json::SplitPointer(PercentDecode(fragment), tokens)) {
        return Status::InvalidArgument("bad JSON Pointer in \"" + std::string(reference) + "\"");
      }
      Location location = root;
      for (const std::string& token : tokens) location.pointer += "/" + EscapePointerToken(token);
      // Most references point at indexed subschemas ($defs members): no walk needed.
      if (info_.contains(LocationKey(location.doc, location.pointer))) return location;
      location.pointer = root.pointer;
      dom::element el;
      EVIDENT_RETURN_IF_ERROR(ElementAt(root, el));
      for (const std::string& token : tokens) {
        dom::element next;
        if (el.is_object()) {
          if (el.get_object().value_unsafe()[token].get(next) != simdjson::SUCCESS) {
            return Status::NotFound("\"" + std::string(reference) + "\": no member \"" + token +
                                    "\"");
          }
        } else if (el.is_array()) {
          size_t index = 0;
          if (token.empty() || token.size() > 9 ||
              token.find_first_not_of("0123456789") != std::string::npos) {
            return Status::NotFound("\"" + std::string(reference) + "\": bad array index");
          }
          index = std::stoul(token);
          if (el.get_array().value_unsafe().at(index).get(next) != simdjson::SUCCESS) {
            return Status::NotFound("\"" + std::string(reference) + "\": index out of range");
          }
        } else {
          return Status::NotFound("\"" + std::string(reference) + "\" points into a scalar");
        }
        el = next;
        location.pointer += "/" + EscapePointerToken(token);
      }
      return location;
    }
    auto anchor = anchors_.find(uri + "#" + PercentDecode(fragment));
    if (anchor == anchors_.end()) {
      return Status::NotFound("cannot resolve anchor in \"" + std::string(reference) + "\"");
    }
    return anchor->second;
  }

  // The subschema at `location`: remembered when indexed, else found by walking its pointer.
  Status ElementAt(const Location& location, dom::element& out) {
    auto it = info_.find(LocationKey(location.doc, location.pointer));
    if (it == info_.end()) return Navigate(location, out);
    out = it->second.element;
    return Status::Ok();
  }

  Status Navigate(const Location& location, dom::element& out) {
    std::vector<std::string> tokens;
    if (!json::SplitPointer(location.pointer, tokens))
      return Status::Internal("bad stored pointer");
    dom::element el = document_roots_[location.doc];
    for (const std::string& token : tokens) {
      dom::element next;
      if (el.is_object()) {
        if (el.get_object().value_unsafe()[token].get(next) != simdjson::SUCCESS) {
          return Status::Internal("stored pointer does not resolve");
        }
      } else {
        // A token that is not an index (a $ref such as "#/items/x" into an array) resolves to
        // nothing: the schema's error, not an exception.
        size_t index = 0;
        const char* end = token.data() + token.size();
        const auto parsed = std::from_chars(token.data(), end, index);
        if (token.empty() || parsed.ec != std::errc() || parsed.ptr != end ||
            el.get_array().value_unsafe().at(index).get(next) != simdjson::SUCCESS) {
          return Status::InvalidArgument("reference " + location.pointer +
                                         " does not resolve to a schema");
        }
      }
      el = next;
    }
    out = el;
    return Status::Ok();
  }

  const SchemaInfo& InfoFor(const Location& location) {
    std::string pointer = location.pointer;
    // Subschemas under unknown keywords were not indexed: they take the nearest indexed
    // ancestor's base URI and dialect. The document root is always indexed.
    for (;;) {
      auto it = info_.find(LocationKey(location.doc, pointer));
      if (it != info_.end()) return it->second;
      assert(!pointer.empty());
      pointer.erase(pointer.rfind('/'));
    }
  }

  Result<uint32_t> NodeFor(const Location& location) {
    const std::string key = LocationKey(location.doc, location.pointer);
    if (auto it = node_by_location_.find(key); it != node_by_location_.end()) return it->second;
    if (plan_->nodes.size() >= options_.schema_nodes_max) {
      return Status::LimitExceeded("schema has more than " +
                                   std::to_string(options_.schema_nodes_max) + " subschemas");
    }
    const SchemaInfo info = InfoFor(location);
    const uint32_t index = static_cast<uint32_t>(plan_->nodes.size());
    plan_->nodes.emplace_back();
    node_locations_.push_back(location);
    node_by_location_[key] = index;
    Node& node = plan_->nodes.back();
    node.resource = info.resource;
    const Location& root = resource_roots_[info.resource];
    std::string relative = location.doc == root.doc && location.pointer.starts_with(root.pointer)
                               ? location.pointer.substr(root.pointer.size())
                               : location.pointer;
    node.absolute = plan_->resources[info.resource].uri + "#" + relative;
    pending_.push_back(index);
    if (!resource_started_[info.resource]) {
      // The dynamic scope may reach any $dynamicAnchor of a resource once it is entered.
      resource_started_[info.resource] = true;
      for (const auto& [name, anchor_location] : resource_dynamic_anchors_[info.resource]) {
        EVIDENT_ASSIGN_OR_RETURN(uint32_t anchor_node, NodeFor(anchor_location));
        plan_->resources[info.resource].dynamic_anchors[name] = anchor_node;
      }
    }
    return index;
  }

  // ---- node compilation ---------------------------------------------------------------------

  uint32_t AddKeyword(std::string path) {
    plan_->keywords.push_back(Keyword{std::move(path)});
    return static_cast<uint32_t>(plan_->keywords.size() - 1);
  }

  Status Error(const Node& node, std::string_view keyword, std::string message) {
    return Status::InvalidArgument("schema at " + node.absolute + "/" + std::string(keyword) +
                                   ": " + std::move(message));
  }

  Result<uint32_t> Child(const Location& parent, std::string_view token) {
    return NodeFor(Location{parent.doc, parent.pointer + "/" + EscapePointerToken(token)});
  }
  Result<uint32_t> Child(const Location& parent, std::string_view token, std::string_view token2) {
    return NodeFor(Location{parent.doc, parent.pointer + "/" + EscapePointerToken(token) + "/" +
                                            EscapePointerToken(token2)});
  }

  Result<uint32_t> SchemaList(const Location& location, const Node& node, dom::object object,
                              std::string_view keyword) {
    dom::array array;
    if (object[keyword].get_array().get(array) != simdjson::SUCCESS || array.size() == 0) {
      return Error(node, keyword, "must be a non-empty array of schemas");
    }
    std::vector<uint32_t> list;
    for (size_t i = 0; i < array.size(); ++i) {
      EVIDENT_ASSIGN_OR_RETURN(uint32_t child, Child(location, keyword, std::to_string(i)));
      list.push_back(child);
    }
    plan_->node_lists.push_back(std::move(list));
    return static_cast<uint32_t>(plan_->node_lists.size() - 1);
  }

  Result<std::shared_ptr<const re2::RE2>> Regex(std::string_view source) {
    if (auto it = regex_cache_.find(std::string(source)); it != regex_cache_.end()) {
      return it->second;
    }
    EVIDENT_ASSIGN_OR_RETURN(auto regex,
                             CompileEcmaRegex(source, options_.regex_program_bytes_max));
    regex_cache_[std::string(source)] = regex;
    return regex;
  }

  Status CompileNode(uint32_t index) {
    assert(index < plan_->nodes.size() && node_locations_.size() == plan_->nodes.size());
    const Location location = node_locations_[index];
    const SchemaInfo info = InfoFor(location);
    dom::element el;
    EVIDENT_RETURN_IF_ERROR(ElementAt(location, el));
    Node node;
    {
      const Node& stored = plan_->nodes[index];
      node.resource = stored.resource;
      node.absolute = stored.absolute;
    }
    bool boolean = false;
    if (el.get_bool().get(boolean) == simdjson::SUCCESS) {
      if (!boolean) {
        node.is_false = true;
        node.any_ops.push_back(Op{.kind = OpKind::kFalse, .keyword = AddKeyword("")});
      } else {
        node.shortcut = Shortcut::kAlwaysTrue;
      }
      plan_->nodes[index] = std::move(node);
      return Status::Ok();
    }
    dom::object object;
    if (el.get_object().get(object) != simdjson::SUCCESS) {
      return Status::InvalidArgument("schema at " + node.absolute +
                                     " must be an object or a boolean");
    }
    if (info.dialect == Dialect::kDraft7) {
      EVIDENT_RETURN_IF_ERROR(CompileDraft7(location, info, object, node));
    } else {
      EVIDENT_RETURN_IF_ERROR(Compile2020(location, info, object, node));
    }
    node.tracks_evaluated = !node.final_ops.empty();
    const size_t op_count = node.any_ops.size() + node.number_ops.size() + node.string_ops.size() +
                            node.array_ops.size() + node.object_ops.size() + node.final_ops.size();
    if (op_count == 0) {
      node.shortcut = Shortcut::kAlwaysTrue;
    } else if (op_count == 1 && node.any_ops.size() == 1 && node.any_ops[0].kind == OpKind::kType) {
      node.shortcut = Shortcut::kTypeOnly;
      node.shortcut_type_mask = node.any_ops[0].type_mask;
    }
    plan_->nodes[index] = std::move(node);
    return Status::Ok();
  }

  Status CompileRef(const Location& location, const SchemaInfo& info, dom::object object,
                    Node& node) {
    std::string_view reference;
    if (object["$ref"].get_string().get(reference) != simdjson::SUCCESS) {
      if (object["$ref"].error() == simdjson::SUCCESS) return Error(node, "$ref", "not a string");
      return Status::Ok();
    }
    auto target = Resolve(info, reference);
    if (!target.ok()) return Error(node, "$ref", target.status().message());
    EVIDENT_ASSIGN_OR_RETURN(uint32_t target_node, NodeFor(*target));
    node.any_ops.push_back(
        Op{.kind = OpKind::kRef, .keyword = AddKeyword("$ref"), .node = target_node});
    return Status::Ok();
  }

  // Keywords shared by both drafts, gated by vocabulary in 2020-12. The order of the steps is
  // the order in which a schema with several bad keywords reports the first one.
  Status CompileValidation(const Location& location, dom::object object, Node& node, bool draft7) {
    EVIDENT_RETURN_IF_ERROR(CompileType(object, node));
    EVIDENT_RETURN_IF_ERROR(CompileConstAndEnum(object, node));
    EVIDENT_RETURN_IF_ERROR(CompileNumberLimits(object, node));
    EVIDENT_RETURN_IF_ERROR(CompileCountLimits(object, node));
    bool unique = false;
    if (object["uniqueItems"].get_bool().get(unique) == simdjson::SUCCESS && unique) {
      node.array_ops.push_back(
          Op{.kind = OpKind::kUniqueItems, .keyword = AddKeyword("uniqueItems")});
    }
    EVIDENT_RETURN_IF_ERROR(CompilePattern(object, node));
    if (!draft7) EVIDENT_RETURN_IF_ERROR(CompileDependentRequired(object, node));
    (void)location;
    return Status::Ok();
  }

  // "type": a name or an array of names, one bit each.
  Status CompileType(dom::object object, Node& node) {
    dom::element value;
    if (object["type"].get(value) != simdjson::SUCCESS) return Status::Ok();
    uint8_t mask = 0;
    std::string_view name;
    auto add = [&](dom::element item) -> Status {
      if (item.get_string().get(name) != simdjson::SUCCESS) {
        return Error(node, "type", "must be a string or an array of strings");
      }
      auto bit = TypeBitFor(name);
      if (!bit) return Error(node, "type", "unknown type \"" + std::string(name) + "\"");
      mask |= *bit;
      return Status::Ok();
    };
    if (value.is_array()) {
      for (dom::element item : dom::array(value.get_array().value_unsafe())) {
        EVIDENT_RETURN_IF_ERROR(add(item));
      }
    } else {
      EVIDENT_RETURN_IF_ERROR(add(value));
    }
    node.any_ops.push_back(
        Op{.kind = OpKind::kType, .type_mask = mask, .keyword = AddKeyword("type")});
    return Status::Ok();
  }

  // "const" and "enum": the values stay in the schema document (plan.h keeps it alive).
  Status CompileConstAndEnum(dom::object object, Node& node) {
    dom::element value;
    if (object["const"].get(value) == simdjson::SUCCESS) {
      plan_->consts.push_back(value);
      node.any_ops.push_back(Op{.kind = OpKind::kConst,
                                .keyword = AddKeyword("const"),
                                .table = static_cast<uint32_t>(plan_->consts.size() - 1)});
    }
    if (object["enum"].get(value) == simdjson::SUCCESS) {
      dom::array array;
      if (value.get_array().get(array) != simdjson::SUCCESS) {
        return Error(node, "enum", "must be an array");
      }
      std::vector<dom::element> values(array.begin(), array.end());
      plan_->enums.push_back(std::move(values));
      node.any_ops.push_back(Op{.kind = OpKind::kEnum,
                                .keyword = AddKeyword("enum"),
                                .table = static_cast<uint32_t>(plan_->enums.size() - 1)});
    }
    return Status::Ok();
  }

  // multipleOf, maximum, minimum, exclusiveMaximum, exclusiveMinimum (2020-12 numbers).
  Status CompileNumberLimits(dom::object object, Node& node) {
    struct NumberKeyword {
      std::string_view name;
      OpKind kind;
    };
    static constexpr NumberKeyword kNumbers[] = {{"multipleOf", OpKind::kMultipleOf},
                                                 {"maximum", OpKind::kMaximum},
                                                 {"minimum", OpKind::kMinimum},
                                                 {"exclusiveMaximum", OpKind::kExclusiveMaximum},
                                                 {"exclusiveMinimum", OpKind::kExclusiveMinimum}};
    dom::element value;
    for (const NumberKeyword& keyword : kNumbers) {
      if (object[keyword.name].get(value) != simdjson::SUCCESS) continue;
      Op op{.kind = keyword.kind, .keyword = AddKeyword(std::string(keyword.name))};
      bool is_integer = false;
      if (!GetNumber(value, op.number, is_integer, op.integer)) {
        return Error(node, keyword.name, "must be a number");
      }
      op.limit_is_integer = is_integer;
      if (keyword.kind == OpKind::kMultipleOf && !(op.number > 0)) {
        return Error(node, keyword.name, "must be greater than 0");
      }
      assert(!is_integer || static_cast<double>(op.integer) == op.number);
      node.number_ops.push_back(op);
    }
    return Status::Ok();
  }

  // The length and count bounds of strings, arrays and objects, each into its type's ops.
  Status CompileCountLimits(dom::object object, Node& node) {
    struct CountKeyword {
      std::string_view name;
      OpKind kind;
      std::vector<Op> Node::*ops;
    };
    static const CountKeyword kCounts[] = {
        {"minLength", OpKind::kMinLength, &Node::string_ops},
        {"maxLength", OpKind::kMaxLength, &Node::string_ops},
        {"minItems", OpKind::kMinItems, &Node::array_ops},
        {"maxItems", OpKind::kMaxItems, &Node::array_ops},
        {"minProperties", OpKind::kMinProperties, &Node::object_ops},
        {"maxProperties", OpKind::kMaxProperties, &Node::object_ops}};
    dom::element value;
    for (const CountKeyword& keyword : kCounts) {
      if (object[keyword.name].get(value) != simdjson::SUCCESS) continue;
      Op op{.kind = keyword.kind, .keyword = AddKeyword(std::string(keyword.name))};
      if (!GetCount(value, op.count)) {
        return Error(node, keyword.name, "must be a non-negative integer");
      }
      (node.*keyword.ops).push_back(op);
    }
    return Status::Ok();
  }

  // "pattern": an ECMA-262 regex, translated and compiled once per distinct source.
  Status CompilePattern(dom::object object, Node& node) {
    dom::element value;
    if (object["pattern"].get(value) != simdjson::SUCCESS) return Status::Ok();
    std::string_view pattern;
    if (value.get_string().get(pattern) != simdjson::SUCCESS) {
      return Error(node, "pattern", "must be a string");
    }
    auto regex = Regex(pattern);
    if (!regex.ok()) return Error(node, "pattern", regex.status().message());
    plan_->regexes.push_back(*regex);
    plan_->regex_sources.emplace_back(pattern);
    assert(plan_->regexes.size() == plan_->regex_sources.size());
    node.string_ops.push_back(Op{.kind = OpKind::kPattern,
                                 .keyword = AddKeyword("pattern"),
                                 .table = static_cast<uint32_t>(plan_->regexes.size() - 1)});
    return Status::Ok();
  }

  // 2020-12 "dependentRequired": member name -> names required with it.
  Status CompileDependentRequired(dom::object object, Node& node) {
    dom::element value;
    if (object["dependentRequired"].get(value) != simdjson::SUCCESS) return Status::Ok();
    std::vector<std::pair<std::string, std::vector<std::string>>> table;
    dom::object map;
    if (value.get_object().get(map) != simdjson::SUCCESS) {
      return Error(node, "dependentRequired", "must be an object");
    }
    for (auto [name, list] : map) {
      std::vector<std::string> names;
      EVIDENT_RETURN_IF_ERROR(StringList(node, "dependentRequired", list, names));
      table.emplace_back(std::string(name), std::move(names));
    }
    AddDependentRequired(node, std::move(table), "dependentRequired");
    return Status::Ok();
  }

  void AddDependentRequired(Node& node,
                            std::vector<std::pair<std::string, std::vector<std::string>>> table,
                            std::string keyword) {
    if (table.empty()) return;
    plan_->dependent_required.push_back(std::move(table));
    node.object_ops.push_back(
        Op{.kind = OpKind::kDependentRequired,
           .keyword = AddKeyword(std::move(keyword)),
           .table = static_cast<uint32_t>(plan_->dependent_required.size() - 1)});
  }

  Status StringList(const Node& node, std::string_view keyword, dom::element value,
                    std::vector<std::string>& out) {
    dom::array array;
    if (value.get_array().get(array) != simdjson::SUCCESS) {
      return Error(node, keyword, "must be an array of strings");
    }
    for (dom::element item : array) {
      std::string_view text;
      if (item.get_string().get(text) != simdjson::SUCCESS) {
        return Error(node, keyword, "must be an array of strings");
      }
      out.emplace_back(text);
    }
    return Status::Ok();
  }

  Status CompileFormat(dom::object object, Node& node, bool assert_format) {
    dom::element member;
    if (object["format"].get(member) != simdjson::SUCCESS) return Status::Ok();
    std::string_view name;
    if (member.get_string().get(name) != simdjson::SUCCESS) {
      return Status::InvalidArgument("\"format\" must be a string");
    }
    if (!assert_format) return Status::Ok();
    auto kind = ParseFormatName(name);
    if (!kind) return Status::Ok();  // unknown formats are annotations
    node.string_ops.push_back(Op{.kind = OpKind::kFormat,
                                 .keyword = AddKeyword("format"),
                                 .table = static_cast<uint32_t>(*kind)});
    return Status::Ok();
  }

  // properties, patternProperties, additionalProperties and required as one pass.
  Status CompileProperties(const Location& location, dom::object object, Node& node,
                           bool applicators, bool validation) {
    ObjectPlan plan;
    // Entry by name while building: "required" is matched against "properties" through it, not
    // by a scan per name (quadratic when both are long).
    std::unordered_map<std::string, size_t> entry_by_name;
    plan.properties_keyword = AddKeyword("properties");
    plan.patterns_keyword = AddKeyword("patternProperties");
    plan.additional_keyword = AddKeyword("additionalProperties");
    plan.required_keyword = AddKeyword("required");
    bool any = false;
    dom::element value;
    if (applicators && object["properties"].get(value) == simdjson::SUCCESS) {
      dom::object map;
      if (value.get_object().get(map) != simdjson::SUCCESS) {
        return Error(node, "properties", "must be an object");
      }
      for (auto [name, sub] : map) {
        EVIDENT_ASSIGN_OR_RETURN(uint32_t child, Child(location, "properties", name));
        entry_by_name.emplace(name, plan.entries.size());
        plan.entries.push_back(PropertyEntry{std::string(name), child, -1});
        any = true;
      }
    }
    if (applicators && object["patternProperties"].get(value) == simdjson::SUCCESS) {
      dom::object map;
      if (value.get_object().get(map) != simdjson::SUCCESS) {
        return Error(node, "patternProperties", "must be an object");
      }
      for (auto [source, sub] : map) {
        auto regex = Regex(source);
        if (!regex.ok()) return Error(node, "patternProperties", regex.status().message());
        EVIDENT_ASSIGN_OR_RETURN(uint32_t child, Child(location, "patternProperties", source));
        plan.patterns.push_back(PatternEntry{*regex, std::string(source), child});
        any = true;
      }
    }
    if (applicators && object["additionalProperties"].error() == simdjson::SUCCESS) {
      EVIDENT_ASSIGN_OR_RETURN(plan.additional, Child(location, "additionalProperties"));
      any = true;
    }
    if (validation && object["required"].get(value) == simdjson::SUCCESS) {
      std::vector<std::string> names;
      EVIDENT_RETURN_IF_ERROR(StringList(node, "required", value, names));
      for (std::string& name : names) {
        const auto [found, added] = entry_by_name.emplace(name, plan.entries.size());
        if (added) plan.entries.push_back(PropertyEntry{name, kNoNode, -1});
        PropertyEntry& entry = plan.entries[found->second];
        if (entry.required_index >= 0) continue;  // duplicate
        entry.required_index = static_cast<int32_t>(plan.required.size());
        plan.required.push_back(std::move(name));
        any = true;
      }
    }
    if (!any) return Status::Ok();
    plan_->objects.push_back(std::move(plan));
    // The index is built on the stored plan: its string_views point into `entries`, whose
    // elements stay where they are when the plan (and the vector holding it) moves again.
    // Small tables are scanned linearly (faster than hashing for a handful of short keys).
    ObjectPlan& stored = plan_->objects.back();
    if (stored.entries.size() > 8) {
      for (uint32_t i = 0; i < stored.entries.size(); ++i) {
        stored.index.emplace(stored.entries[i].name, i);
      }
    }
    node.object_ops.push_back(
        Op{.kind = OpKind::kProperties, .table = static_cast<uint32_t>(plan_->objects.size() - 1)});
    return Status::Ok();
  }

  Status CompileInPlace(const Location& location, dom::object object, Node& node) {
    static constexpr std::pair<std::string_view, OpKind> kLists[] = {
        {"allOf", OpKind::kAllOf}, {"anyOf", OpKind::kAnyOf}, {"oneOf", OpKind::kOneOf}};
    for (const auto& [name, kind] : kLists) {
      if (object[name].error() != simdjson::SUCCESS) continue;
      EVIDENT_ASSIGN_OR_RETURN(uint32_t table, SchemaList(location, node, object, name));
      node.any_ops.push_back(
          Op{.kind = kind, .keyword = AddKeyword(std::string(name)), .table = table});
    }
    if (object["not"].error() == simdjson::SUCCESS) {
      EVIDENT_ASSIGN_OR_RETURN(uint32_t child, Child(location, "not"));
      node.any_ops.push_back(Op{.kind = OpKind::kNot, .keyword = AddKeyword("not"), .node = child});
    }
    if (object["if"].error() == simdjson::SUCCESS) {
      Op op{.kind = OpKind::kIfThenElse, .keyword = AddKeyword("if")};
      EVIDENT_ASSIGN_OR_RETURN(op.node, Child(location, "if"));
      if (object["then"].error() == simdjson::SUCCESS) {
        EVIDENT_ASSIGN_OR_RETURN(op.node2, Child(location, "then"));
      }
      if (object["else"].error() == simdjson::SUCCESS) {
        EVIDENT_ASSIGN_OR_RETURN(op.node3, Child(location, "else"));
      }
      node.any_ops.push_back(op);
    }
    if (object["propertyNames"].error() == simdjson::SUCCESS) {
      EVIDENT_ASSIGN_OR_RETURN(uint32_t child, Child(location, "propertyNames"));
      node.object_ops.push_back(Op{
          .kind = OpKind::kPropertyNames, .keyword = AddKeyword("propertyNames"), .node = child});
    }
    return Status::Ok();
  }

  Status CompileContains(const Location& location, dom::object object, Node& node,
                         bool validation) {
    if (object["contains"].error() != simdjson::SUCCESS) return Status::Ok();
    Op op{.kind = OpKind::kContains, .keyword = AddKeyword("contains"), .count = 1};
    EVIDENT_ASSIGN_OR_RETURN(op.node, Child(location, "contains"));
    dom::element value;
    if (validation && object["minContains"].get(value) == simdjson::SUCCESS &&
        !GetCount(value, op.count)) {
      return Error(node, "minContains", "must be a non-negative integer");
    }
    if (validation && object["maxContains"].get(value) == simdjson::SUCCESS &&
        !GetCount(value, op.count2)) {
      return Error(node, "maxContains", "must be a non-negative integer");
    }
    node.array_ops.push_back(op);
    return Status::Ok();
  }

  Status Compile2020(const Location& location, const SchemaInfo& info, dom::object object,
                     Node& node) {
    const bool applicators = info.vocab & kVocabApplicator;
    const bool validation = info.vocab & kVocabValidation;
    EVIDENT_RETURN_IF_ERROR(CompileRef(location, info, object, node));
    EVIDENT_RETURN_IF_ERROR(CompileDynamicRef(info, object, node));
    if (validation) EVIDENT_RETURN_IF_ERROR(CompileValidation(location, object, node, false));
    EVIDENT_RETURN_IF_ERROR(CompileFormat(
        object, node, options_.format_assertion || (info.vocab & kVocabFormatAssertion)));
    if (applicators) {
      EVIDENT_RETURN_IF_ERROR(CompileInPlace(location, object, node));
      EVIDENT_RETURN_IF_ERROR(CompileContains(location, object, node, validation));
      EVIDENT_RETURN_IF_ERROR(CompileDependentSchemas(location, object, node));
      EVIDENT_RETURN_IF_ERROR(CompileItems2020(location, object, node));
    }
    if (applicators && validation) {
      EVIDENT_RETURN_IF_ERROR(CompileDependencies(location, object, node));
    }
    EVIDENT_RETURN_IF_ERROR(CompileProperties(location, object, node, applicators, validation));
    if (info.vocab & kVocabUnevaluated) {
      EVIDENT_RETURN_IF_ERROR(CompileUnevaluated(location, object, node));
    }
    return Status::Ok();
  }

  // "$dynamicRef": resolved statically like "$ref", and marked dynamic when its target
  // declares the fragment as its "$dynamicAnchor" (then the plan tracks the dynamic scope).
  Status CompileDynamicRef(const SchemaInfo& info, dom::object object, Node& node) {
    std::string_view reference;
    if (object["$dynamicRef"].get_string().get(reference) != simdjson::SUCCESS) {
      return Status::Ok();
    }
    auto target = Resolve(info, reference);
    if (!target.ok()) return Error(node, "$dynamicRef", target.status().message());
    DynamicRefPlan dynamic;
    EVIDENT_ASSIGN_OR_RETURN(dynamic.target, NodeFor(*target));
    // Dynamic only when the fragment is a plain name and the static target declares that
    // name as its $dynamicAnchor; otherwise $dynamicRef behaves exactly like $ref.
    const size_t hash = reference.find('#');
    if (hash != std::string_view::npos) {
      const std::string name = PercentDecode(reference.substr(hash + 1));
      dom::element target_el;
      EVIDENT_RETURN_IF_ERROR(ElementAt(*target, target_el));
      std::string_view declared;
      if (!name.empty() && name[0] != '/' && target_el.is_object() &&
          target_el.get_object().value_unsafe()["$dynamicAnchor"].get_string().get(declared) ==
              simdjson::SUCCESS &&
          declared == name) {
        dynamic.anchor = name;
        plan_->uses_dynamic_scope = true;
      }
    }
    plan_->dynamic_refs.push_back(std::move(dynamic));
    node.any_ops.push_back(Op{.kind = OpKind::kDynamicRef,
                              .keyword = AddKeyword("$dynamicRef"),
                              .table = static_cast<uint32_t>(plan_->dynamic_refs.size() - 1)});
    return Status::Ok();
  }

  // 2020-12 "dependentSchemas": member name -> schema applied when the member is present.
  Status CompileDependentSchemas(const Location& location, dom::object object, Node& node) {
    dom::object map;
    if (object["dependentSchemas"].get_object().get(map) != simdjson::SUCCESS) {
      return Status::Ok();
    }
    std::vector<std::pair<std::string, uint32_t>> table;
    for (auto [name, sub] : map) {
      EVIDENT_ASSIGN_OR_RETURN(uint32_t child, Child(location, "dependentSchemas", name));
      table.emplace_back(std::string(name), child);
    }
    plan_->dependent_schemas.push_back(std::move(table));
    node.object_ops.push_back(
        Op{.kind = OpKind::kDependentSchemas,
           .keyword = AddKeyword("dependentSchemas"),
           .table = static_cast<uint32_t>(plan_->dependent_schemas.size() - 1)});
    return Status::Ok();
  }

  // 2020-12 "prefixItems" (schemas by position) and "items" (the rest).
  Status CompileItems2020(const Location& location, dom::object object, Node& node) {
    ItemsPlan items;
    items.prefix_keyword = AddKeyword("prefixItems");
    items.rest_keyword = AddKeyword("items");
    if (object["prefixItems"].error() == simdjson::SUCCESS) {
      EVIDENT_ASSIGN_OR_RETURN(uint32_t list, SchemaList(location, node, object, "prefixItems"));
      items.prefix = plan_->node_lists[list];
    }
    if (object["items"].error() == simdjson::SUCCESS) {
      EVIDENT_ASSIGN_OR_RETURN(items.rest, Child(location, "items"));
    }
    AddItems(node, std::move(items));
    return Status::Ok();
  }

  // "unevaluatedItems" and "unevaluatedProperties": final ops, after every other keyword of
  // the node has left its annotations.
  Status CompileUnevaluated(const Location& location, dom::object object, Node& node) {
    if (object["unevaluatedItems"].error() == simdjson::SUCCESS) {
      EVIDENT_ASSIGN_OR_RETURN(uint32_t child, Child(location, "unevaluatedItems"));
      node.final_ops.push_back(Op{.kind = OpKind::kUnevaluatedItems,
                                  .keyword = AddKeyword("unevaluatedItems"),
                                  .node = child});
    }
    if (object["unevaluatedProperties"].error() == simdjson::SUCCESS) {
      EVIDENT_ASSIGN_OR_RETURN(uint32_t child, Child(location, "unevaluatedProperties"));
      node.final_ops.push_back(Op{.kind = OpKind::kUnevaluatedProperties,
                                  .keyword = AddKeyword("unevaluatedProperties"),
                                  .node = child});
    }
    return Status::Ok();
  }

  void AddItems(Node& node, ItemsPlan items) {
    if (items.prefix.empty() && items.rest == kNoNode) return;
    plan_->items.push_back(std::move(items));
    node.array_ops.push_back(
        Op{.kind = OpKind::kItems, .table = static_cast<uint32_t>(plan_->items.size() - 1)});
  }

  // Draft 7 "dependencies" (also honoured in 2020-12 for compatibility): an array value is
  // dependentRequired, a schema value is dependentSchemas.
  Status CompileDependencies(const Location& location, dom::object object, Node& node) {
    dom::object dependencies;
    if (object["dependencies"].get_object().get(dependencies) == simdjson::SUCCESS) {
      std::vector<std::pair<std::string, std::vector<std::string>>> required;
      std::vector<std::pair<std::string, uint32_t>> schemas;
      for (auto [name, value] : dependencies) {
        if (value.is_array()) {
          std::vector<std::string> names;
          EVIDENT_RETURN_IF_ERROR(StringList(node, "dependencies", value, names));
          required.emplace_back(std::string(name), std::move(names));
        } else {
          EVIDENT_ASSIGN_OR_RETURN(uint32_t child, Child(location, "dependencies", name));
          schemas.emplace_back(std::string(name), child);
        }
      }
      AddDependentRequired(node, std::move(required), "dependencies");
      if (!schemas.empty()) {
        plan_->dependent_schemas.push_back(std::move(schemas));
        node.object_ops.push_back(
            Op{.kind = OpKind::kDependentSchemas,
               .keyword = AddKeyword("dependencies"),
               .table = static_cast<uint32_t>(plan_->dependent_schemas.size() - 1)});
      }
    }
    return Status::Ok();
  }

  Status CompileDraft7(const Location& location, const SchemaInfo& info, dom::object object,
                       Node& node) {
    if (object["$ref"].error() == simdjson::SUCCESS) {
      // Draft 7: "$ref" makes every sibling keyword ignored.
      return CompileRef(location, info, object, node);
    }
    EVIDENT_RETURN_IF_ERROR(CompileValidation(location, object, node, true));
    EVIDENT_RETURN_IF_ERROR(CompileFormat(object, node, options_.format_assertion));
    EVIDENT_RETURN_IF_ERROR(CompileInPlace(location, object, node));
    EVIDENT_RETURN_IF_ERROR(CompileContains(location, object, node, false));
    dom::element items_value;
    if (object["items"].get(items_value) == simdjson::SUCCESS) {
      ItemsPlan items;
      if (items_value.is_array()) {
        items.prefix_keyword = AddKeyword("items");
        items.rest_keyword = AddKeyword("additionalItems");
        const size_t count = items_value.get_array().value_unsafe().size();
        for (size_t i = 0; i < count; ++i) {
          EVIDENT_ASSIGN_OR_RETURN(uint32_t child, Child(location, "items", std::to_string(i)));
          items.prefix.push_back(child);
        }
        if (object["additionalItems"].error() == simdjson::SUCCESS) {
          EVIDENT_ASSIGN_OR_RETURN(items.rest, Child(location, "additionalItems"));
        }
        if (items.prefix.empty() && items.rest == kNoNode) items.prefix_keyword = 0;
      } else {
        items.rest_keyword = AddKeyword("items");
        EVIDENT_ASSIGN_OR_RETURN(items.rest, Child(location, "items"));
      }
      AddItems(node, std::move(items));
    }
    EVIDENT_RETURN_IF_ERROR(CompileDependencies(location, object, node));
    return CompileProperties(location, object, node, true, true);
  }

  // ---- shared nodes (memoized at validation, see plan.h) ------------------------------------

  // Calls `visit` for every child node an op evaluates, through any keyword.
  template <typename Visit>
  void ForEachChild(const Op& op, Visit&& visit) const {
    for (uint32_t child : {op.node, op.node2, op.node3}) {
      if (child != kNoNode) visit(child);
    }
    switch (op.kind) {
      case OpKind::kDynamicRef:
        visit(plan_->dynamic_refs[op.table].target);
        break;
      case OpKind::kAllOf:
      case OpKind::kAnyOf:
      case OpKind::kOneOf:
        for (uint32_t child : plan_->node_lists[op.table]) visit(child);
        break;
      case OpKind::kItems:
        for (uint32_t child : plan_->items[op.table].prefix) visit(child);
        if (plan_->items[op.table].rest != kNoNode) visit(plan_->items[op.table].rest);
        break;
      case OpKind::kProperties: {
        const ObjectPlan& object = plan_->objects[op.table];
        for (const PropertyEntry& entry : object.entries) {
          if (entry.node != kNoNode) visit(entry.node);
        }
        for (const PatternEntry& pattern : object.patterns) visit(pattern.node);
        if (object.additional != kNoNode) visit(object.additional);
        break;
      }
      case OpKind::kDependentSchemas:
        for (const auto& [name, child] : plan_->dependent_schemas[op.table]) visit(child);
        break;
      default:
        break;
    }
  }

  // A node with one way in is evaluated at most once per evaluation of its parent at one
  // location, so only nodes with two or more ways in can repeat (node, location) pairs.
  void MarkSharedNodes() {
    std::vector<uint8_t> incoming(plan_->nodes.size(), 0);  // saturates at 2
    auto count = [&](uint32_t child) {
      if (incoming[child] < 2) ++incoming[child];
    };
    count(plan_->root);
    for (const Node& node : plan_->nodes) {
      for (const auto* ops : {&node.any_ops, &node.number_ops, &node.string_ops, &node.array_ops,
                              &node.object_ops, &node.final_ops}) {
        for (const Op& op : *ops) ForEachChild(op, count);
      }
    }
    for (const Resource& resource : plan_->resources) {
      for (const auto& [name, anchor] : resource.dynamic_anchors) count(anchor);
    }
    for (size_t i = 0; i < plan_->nodes.size(); ++i) plan_->nodes[i].shared = incoming[i] >= 2;
  }

  // ---- cycles --------------------------------------------------------------------------------

  // Edges between nodes that evaluate the same instance location. A cycle among them can never
  // terminate (nothing is consumed between two visits), so it is a compile error.
  void SameInstanceEdges(const Node& node, std::vector<std::pair<uint32_t, uint32_t>>& out) {
    auto add = [&](uint32_t target, uint32_t keyword) {
      if (target != kNoNode) out.emplace_back(target, keyword);
    };
    for (const Op& op : node.any_ops) {
      switch (op.kind) {
        case OpKind::kRef:
        case OpKind::kNot:
          add(op.node, op.keyword);
          break;
        case OpKind::kDynamicRef:
          add(plan_->dynamic_refs[op.table].target, op.keyword);
          break;
        case OpKind::kAllOf:
        case OpKind::kAnyOf:
        case OpKind::kOneOf:
          for (uint32_t child : plan_->node_lists[op.table]) add(child, op.keyword);
          break;
        case OpKind::kIfThenElse:
          add(op.node, op.keyword);
          add(op.node2, op.keyword);
          add(op.node3, op.keyword);
          break;
        default:
          break;
      }
    }
    for (const Op& op : node.object_ops) {
      if (op.kind == OpKind::kDependentSchemas) {
        for (const auto& [name, child] : plan_->dependent_schemas[op.table]) {
          add(child, op.keyword);
        }
      }
    }
  }

  Status CheckCycles() {
    const size_t count = plan_->nodes.size();
    std::vector<uint8_t> color(count, 0);  // 0 new, 1 on the stack, 2 done
    struct Frame {
      uint32_t node;
      std::vector<std::pair<uint32_t, uint32_t>> edges;
      size_t next = 0;
    };
    for (uint32_t start = 0; start < count; ++start) {
      if (color[start] != 0) continue;
      std::vector<Frame> stack;
      stack.push_back(Frame{start, {}, 0});
      SameInstanceEdges(plan_->nodes[start], stack.back().edges);
      color[start] = 1;
      // Bounded: each node is pushed at most once over the whole check.
      while (!stack.empty()) {
        Frame& frame = stack.back();
        if (frame.next == frame.edges.size()) {
          color[frame.node] = 2;
          stack.pop_back();
          continue;
        }
        const auto [target, keyword] = frame.edges[frame.next++];
        if (color[target] == 1) {
          return Status::InvalidArgument(
              "schema at " + plan_->nodes[frame.node].absolute + "/" +
              plan_->keywords[keyword].path +
              ": reference cycle that never consumes the instance (it would never terminate)");
        }
        if (color[target] == 0) {
          color[target] = 1;
          Frame next{target, {}, 0};
          SameInstanceEdges(plan_->nodes[target], next.edges);
          stack.push_back(std::move(next));
        }
      }
    }
    return Status::Ok();
  }

  const Registry& registry_;
  const CompileOptions& options_;
  std::unique_ptr<Plan> plan_;
  std::vector<dom::element> document_roots_;
  std::unordered_map<std::string, uint32_t> loaded_uris_;
  std::unordered_map<std::string, uint32_t> resources_by_uri_;
  std::vector<Location> resource_roots_;
  std::vector<std::map<std::string, Location>> resource_dynamic_anchors_;
  std::vector<bool> resource_started_;
  std::unordered_map<std::string, Location> anchors_;
  std::unordered_map<std::string, SchemaInfo> info_;
  std::unordered_map<std::string, uint32_t> node_by_location_;
  std::vector<Location> node_locations_;
  std::deque<uint32_t> pending_;
  std::unordered_map<std::string, std::shared_ptr<const re2::RE2>> regex_cache_;
};

}  // namespace
}  // namespace internal

Result<Dialect> ParseDialect(std::string_view name) {
  if (name == "2020-12" || name == "draft2020-12") return Dialect::kDraft2020_12;
  if (name == "7" || name == "draft7" || name == "draft-07") return Dialect::kDraft7;
  return Status::InvalidArgument("unknown draft \"" + std::string(name) +
                                 "\" (expected 2020-12 or 7)");
}

Status Registry::Add(std::string uri, std::string schema_json) {
  uri = internal::StripEmptyFragment(internal::ResolveUri("", uri));
  if (documents_.contains(uri)) return Status::AlreadyExists("schema " + uri + " is registered");
  documents_.emplace(std::move(uri), std::move(schema_json));
  return Status::Ok();
}

Status Registry::AddDirectory(std::string uri_prefix, std::string dir, Env* env) {
  if (uri_prefix.empty() || dir.empty()) {
    return Status::InvalidArgument("a directory mapping needs a URI prefix and a directory");
  }
  if (uri_prefix.back() != '/') uri_prefix.push_back('/');
  directories_.push_back({std::move(uri_prefix), std::move(dir), env});
  return Status::Ok();
}

Result<std::string> Registry::Load(const std::string& uri) const {
  if (auto it = documents_.find(uri); it != documents_.end()) return it->second;
  for (const auto& [prefix, dir, env] : directories_) {
    if (!uri.starts_with(prefix)) continue;
    const std::string rest = uri.substr(prefix.size());
    if (rest.empty() || rest.find("..") != std::string::npos ||
        rest.find('?') != std::string::npos || rest[0] == '/') {
      return Status::InvalidArgument("refusing to map " + uri + " to a file");
    }
    return ReadWholeFile(EnvOr(env), dir + "/" + rest, 16u << 20);
  }
  return Status::NotFound(uri + " is not registered");
}

namespace internal {
Result<std::unique_ptr<Plan>> CompilePlan(std::string_view schema_json, const Registry& registry,
                                          const CompileOptions& options, std::string base_uri) {
  Compiler compiler(registry, options);
  return compiler.Run(schema_json, std::move(base_uri));
}
}  // namespace internal

Result<std::shared_ptr<const Schema>> Schema::Compile(std::string_view schema_json,
                                                      const Registry& registry,
                                                      const CompileOptions& options,
                                                      std::string base_uri) {
  EVIDENT_ASSIGN_OR_RETURN(
      auto plan, internal::CompilePlan(schema_json, registry, options, std::move(base_uri)));
  return std::shared_ptr<const Schema>(std::make_shared<Schema>(std::move(plan)));
}

Schema::Schema(std::unique_ptr<internal::Plan> plan) : plan_(std::move(plan)) {}
Schema::~Schema() = default;

Dialect Schema::dialect() const { return plan_->dialect; }

bool Schema::IsValid(simdjson::dom::element instance) const {
  return internal::PlanIsValid(*plan_, instance);
}

Output Schema::Validate(simdjson::dom::element instance, size_t errors_max) const {
  return internal::PlanValidate(*plan_, instance, errors_max);
}

}  // namespace evident::schema
