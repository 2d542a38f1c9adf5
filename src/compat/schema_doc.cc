#include "compat/schema_doc.h"

#include <algorithm>

#include "json/pointer.h"

namespace evident::compat {
namespace {

// A `$ref` chain longer than this without reaching a schema is a cycle of bare references.
constexpr int kRefHopsMax = 64;
// How many `allOf`/`anyOf`/`oneOf` levels LookupField searches for a property.
constexpr int kLookupCompositionDepthMax = 16;

bool IsAnnotationKeyword(std::string_view name) {
  return name.starts_with("x-") || name == "title" || name == "description" || name == "default" ||
         name == "examples" || name == "$comment" || name == "deprecated";
}

// Keywords whose values are data, not schemas: the indexer does not look for anchors there.
bool HoldsData(std::string_view name) {
  return name == "const" || name == "enum" || name == "default" || name == "examples" ||
         IsMeaningKeyword(name);
}

std::string WithoutFragment(std::string_view uri) {
  const size_t hash = uri.find('#');
  return std::string(uri.substr(0, hash));
}

}  // namespace

bool IsMeaningKeyword(std::string_view name) {
  return name == "x-unit" || name == "x-currency" || name == "x-rounding" || name == "x-meaning";
}

const JsonValue* Node::Keyword(std::string_view name) const {
  if (name == "$ref") return nullptr;
  for (const JsonValue* site : sites) {
    if (dialect == Dialect::kDraft7 && !IsAnnotationKeyword(name)) continue;
    if (const JsonValue* found = site->Get(name)) return found;
  }
  return value->IsObject() ? value->Get(name) : nullptr;
}

std::string Node::KeywordPointer(std::string_view name) const {
  for (size_t i = 0; i < sites.size(); ++i) {
    if (dialect == Dialect::kDraft7 && !IsAnnotationKeyword(name)) continue;
    if (sites[i]->Get(name) != nullptr) return AppendToken(site_pointers[i], name);
  }
  return AppendToken(pointer, name);
}

Result<std::unique_ptr<SchemaDocument>> SchemaDocument::Parse(std::string_view text,
                                                              std::string_view origin,
                                                              const DiffOptions& options,
                                                              SchemaProblem* problem) {
  SchemaProblem ignored;
  SchemaProblem& kind = problem != nullptr ? *problem : ignored;
  kind = SchemaProblem::kNone;
  if (static_cast<int64_t>(text.size()) > options.schema_bytes_max) {
    kind = SchemaProblem::kTooLarge;
    return Status::LimitExceeded(std::string(origin) + ": larger than schema_bytes_max=" +
                                 std::to_string(options.schema_bytes_max) + " bytes");
  }
  auto tree = ParseJsonTree(text, options.nesting_depth_max);
  if (!tree.ok()) {
    kind = SchemaProblem::kNotJson;
    return tree.status().Annotate(origin);
  }
  auto doc = std::unique_ptr<SchemaDocument>(new SchemaDocument());
  doc->root_ = std::move(tree).value();
  doc->origin_ = std::string(origin);
  const JsonValue& root = *doc->root_;
  if (!root.IsObject() && !root.IsBool()) {
    kind = SchemaProblem::kNotSchema;
    return Status::InvalidArgument(std::string(origin) +
                                   ": a schema must be a JSON object or a boolean");
  }
  if (const JsonValue* schema = root.Get("$schema")) {
    const std::string& uri = schema->string;
    if (!schema->IsString()) {
      kind = SchemaProblem::kUnsupported;
      return Status::InvalidArgument(std::string(origin) + ": $schema must be a string");
    }
    if (uri.find("draft-07") != std::string::npos || uri.find("draft-06") != std::string::npos ||
        uri.find("draft-04") != std::string::npos) {
      doc->dialect_ = Dialect::kDraft7;
    } else if (uri.find("draft/2020-12") != std::string::npos ||
               uri.find("draft/2019-09") != std::string::npos) {
      doc->dialect_ = Dialect::kDraft2020;
    } else {
      kind = SchemaProblem::kUnsupported;
      return Status::InvalidArgument(std::string(origin) + ": unsupported $schema '" + uri +
                                     "' (supported: draft 2020-12, 2019-09, draft 7, 6, 4)");
    }
  }
  if (const JsonValue* id = root.Get("$id"); id != nullptr && id->IsString()) {
    doc->base_id_ = WithoutFragment(id->string);
  } else if (const JsonValue* old_id = root.Get("id"); old_id != nullptr && old_id->IsString()) {
    doc->base_id_ = WithoutFragment(old_id->string);
  }
  doc->Index(root, "", 0);
  if (Status refs = doc->CheckRefs(root, ""); !refs.ok()) {
    kind = SchemaProblem::kUnresolvedRef;
    return refs;
  }
  return doc;
}

void SchemaDocument::Index(const JsonValue& value, const std::string& pointer, int64_t depth) {
  if (value.IsArray()) {
    for (size_t i = 0; i < value.array.size(); ++i) {
      Index(value.array[i], AppendToken(pointer, std::to_string(i)), depth + 1);
    }
    return;
  }
  if (!value.IsObject()) return;
  if (const JsonValue* anchor = value.Get("$anchor"); anchor != nullptr && anchor->IsString()) {
    anchors_.emplace("#" + anchor->string, pointer);
  }
  if (const JsonValue* id = value.Get("$id"); id != nullptr && id->IsString() && !pointer.empty()) {
    // Draft 7 spells an anchor as "$id": "#name"; later drafts embed resources by "$id".
    anchors_.emplace(id->string, pointer);
  }
  for (const auto& [name, member] : value.object) {
    if (HoldsData(name)) continue;
    Index(member, AppendToken(pointer, name), depth + 1);
  }
}

Status SchemaDocument::CheckRefs(const JsonValue& value, const std::string& pointer) const {
  if (value.IsArray()) {
    for (size_t i = 0; i < value.array.size(); ++i) {
      EVIDENT_RETURN_IF_ERROR(CheckRefs(value.array[i], AppendToken(pointer, std::to_string(i))));
    }
    return Status::Ok();
  }
  if (!value.IsObject()) return Status::Ok();
  if (const JsonValue* ref = value.Get("$ref"); ref != nullptr && ref->IsString()) {
    EVIDENT_ASSIGN_OR_RETURN(const Node node, View(&value, pointer));
    (void)node;
  }
  for (const auto& [name, member] : value.object) {
    if (HoldsData(name)) continue;
    EVIDENT_RETURN_IF_ERROR(CheckRefs(member, AppendToken(pointer, name)));
  }
  return Status::Ok();
}

Result<SchemaDocument::Target> SchemaDocument::ResolveRef(std::string_view ref) const {
  std::string local(ref);
  if (!base_id_.empty() && local.starts_with(base_id_) &&
      (local.size() == base_id_.size() || local[base_id_.size()] == '#')) {
    local = local.substr(base_id_.size());
    if (local.empty()) local = "#";
  }
  if (const auto anchor = anchors_.find(local); anchor != anchors_.end()) {
    return Target{Resolve(*root_, anchor->second), anchor->second};
  }
  if (local.starts_with("#")) {
    const std::string pointer = json::PercentDecode(std::string_view(local).substr(1));
    if (!pointer.empty() && pointer[0] != '/') {
      return Status::InvalidArgument(origin_ + ": $ref '" + std::string(ref) +
                                     "' names an anchor the document does not define");
    }
    const JsonValue* target = Resolve(*root_, pointer);
    if (target == nullptr) {
      return Status::InvalidArgument(origin_ + ": $ref '" + std::string(ref) +
                                     "' does not resolve inside the document");
    }
    return Target{target, pointer};
  }
  return Target{};  // external: another document, compared by its text
}

Result<Node> SchemaDocument::View(const JsonValue* value, std::string pointer) const {
  static const JsonValue kTrue = [] {
    JsonValue v;
    v.kind = JsonValue::Kind::kBool;
    v.boolean = true;
    return v;
  }();
  Node node;
  node.dialect = dialect_;
  node.value = value == nullptr ? &kTrue : value;
  node.pointer = std::move(pointer);
  for (int hops = 0; node.value->IsObject(); ++hops) {
    const JsonValue* ref = node.value->Get("$ref");
    if (ref == nullptr || !ref->IsString()) break;
    if (hops >= kRefHopsMax) {
      return Status::InvalidArgument(origin_ + ": $ref at " + node.pointer +
                                     " is a cycle of references that never reaches a schema");
    }
    EVIDENT_ASSIGN_OR_RETURN(Target target, ResolveRef(ref->string));
    if (target.value == nullptr) {
      node.unresolved_ref = ref->string;
      break;
    }
    node.sites.push_back(node.value);
    node.site_pointers.push_back(node.pointer);
    node.value = target.value;
    node.pointer = std::move(target.pointer);
  }
  return node;
}

namespace {

bool ListsName(const JsonValue* required, std::string_view name) {
  if (required == nullptr || !required->IsArray()) return false;
  return std::any_of(required->array.begin(), required->array.end(),
                     [&](const JsonValue& v) { return v.IsString() && v.string == name; });
}

bool IsIndexToken(std::string_view token) {
  return token == "*" || token == "-" ||
         (!token.empty() && token.find_first_not_of("0123456789") == std::string_view::npos);
}

// Finds `token` one level below `node`: a property (also inside allOf/anyOf/oneOf members) or an
// array item. Sets `out` when found.
Status FindChild(const SchemaDocument& doc, const Node& node, std::string_view token,
                 FieldLookup& out, int depth) {
  if (const JsonValue* properties = node.Keyword("properties");
      properties != nullptr && properties->IsObject()) {
    if (const JsonValue* property = properties->Get(token)) {
      out.defined = true;
      out.required = ListsName(node.Keyword("required"), token);
      out.value = property;
      out.pointer = AppendToken(node.KeywordPointer("properties"), token);
      return Status::Ok();
    }
  }
  if (IsIndexToken(token)) {
    const JsonValue* prefix =
        node.Keyword(node.dialect == Dialect::kDraft7 ? "items" : "prefixItems");
    if (prefix == nullptr || !prefix->IsArray()) prefix = nullptr;
    if (prefix == nullptr) {
      if (const JsonValue* items = node.Keyword("items"); items != nullptr && items->IsArray()) {
        prefix = items;
      }
    }
    const bool numeric = token != "*" && token != "-" && token.size() < 9;
    const size_t index = numeric ? std::stoul(std::string(token)) : 0;
    if (prefix != nullptr && numeric && index < prefix->array.size()) {
      out = {true, false, &prefix->array[index],
             AppendToken(AppendToken(node.pointer,
                                     prefix == node.Keyword("items") ? "items" : "prefixItems"),
                         std::string(token))};
      return Status::Ok();
    }
    const char* rest_name =
        prefix != nullptr && prefix == node.Keyword("items") ? "additionalItems" : "items";
    if (const JsonValue* rest = node.Keyword(rest_name); rest != nullptr && !rest->IsArray()) {
      out = {true, false, rest, node.KeywordPointer(rest_name)};
      return Status::Ok();
    }
  }
  if (depth >= kLookupCompositionDepthMax) return Status::Ok();
  for (const char* keyword : {"allOf", "anyOf", "oneOf"}) {
    const JsonValue* members = node.Keyword(keyword);
    if (members == nullptr || !members->IsArray()) continue;
    for (size_t i = 0; i < members->array.size(); ++i) {
      EVIDENT_ASSIGN_OR_RETURN(
          Node member, doc.View(&members->array[i],
                                AppendToken(node.KeywordPointer(keyword), std::to_string(i))));
      EVIDENT_RETURN_IF_ERROR(FindChild(doc, member, token, out, depth + 1));
      if (out.defined) {
        // A property required by an allOf member, or by the node itself, is required.
        out.required = out.required || ListsName(node.Keyword("required"), token);
        return Status::Ok();
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<FieldLookup> LookupField(const SchemaDocument& doc, std::string_view data_pointer) {
  std::vector<std::string> tokens;
  if (!json::SplitPointer(data_pointer, tokens)) return FieldLookup{};  // not a JSON Pointer
  FieldLookup at{true, true, &doc.root(), ""};
  for (const std::string& token : tokens) {
    EVIDENT_ASSIGN_OR_RETURN(Node node, doc.View(at.value, at.pointer));
    FieldLookup child;
    EVIDENT_RETURN_IF_ERROR(FindChild(doc, node, token, child, 0));
    if (!child.defined) return FieldLookup{};
    child.required = child.required && at.required;
    at = std::move(child);
  }
  return at;
}

}  // namespace evident::compat
