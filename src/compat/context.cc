// compat/context.cc — what the other levels at one data position say of a property.
//
// A property added to an allOf member, a `then` or a dependentSchemas value is not "new to the
// data" when the schema around it already declares, requires, covers or forbids it: the
// parent's `properties` apply to the same value, and so do the other allOf members. The
// lenient assumption that old data lacks an undeclared property holds only when no level
// declares it. Differ::Compare keeps a stack of levels; ContextOf walks the levels with the
// current data pointer (up to the nearest `not` or `propertyNames`) and every allOf member of
// them, and sums up what they say of one name.
#include <re2/re2.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compat/differ.h"
#include "schema/regex.h"

namespace evident::compat {

namespace {

constexpr int64_t kMemberDepthMax = 8;  // allOf inside allOf: deeper nesting is not looked into

// The ways a schema is gathered into a Context (Context::FirstVisit).
enum VisitKind : int { kVisitSiblings, kVisitItems, kVisitSomeItems, kVisitLevel, kVisitMaybe };

bool Requires(const Node& node, const std::string& name) {
  const JsonValue* required = node.Keyword("required");
  if (required == nullptr || !required->IsArray()) return false;
  for (const JsonValue& item : required->array) {
    if (item.IsString() && item.string == name) return true;
  }
  return false;
}

// Every declaration of `name` in `node`: its `properties`, and with a layered `$ref` (2020-12)
// each layer's, since all of them apply (Node::Keyword sees the outermost only).
std::vector<std::pair<const JsonValue*, std::string>> DeclarationsOf(const Node& node,
                                                                     const std::string& name) {
  std::vector<std::pair<const JsonValue*, std::string>> found;
  const auto look = [&](const JsonValue* object, const std::string& at) {
    const JsonValue* properties =
        object != nullptr && object->IsObject() ? object->Get("properties") : nullptr;
    const JsonValue* declared =
        properties != nullptr && properties->IsObject() ? properties->Get(name) : nullptr;
    if (declared != nullptr)
      found.emplace_back(declared, AppendToken(AppendToken(at, "properties"), name));
  };
  if (node.sites.empty() || node.dialect != Dialect::kDraft2020) {
    const JsonValue* properties = node.Keyword("properties");
    const JsonValue* declared =
        properties != nullptr && properties->IsObject() ? properties->Get(name) : nullptr;
    if (declared != nullptr) {
      found.emplace_back(declared, AppendToken(node.KeywordPointer("properties"), name));
    }
    return found;
  }
  look(node.value, node.pointer);
  for (size_t k = 0; k < node.sites.size() && k < node.site_pointers.size(); ++k) {
    look(node.sites[k], node.site_pointers[k]);
  }
  return found;
}

// A schema of `node` that applies to the array items at one position, and whether to every
// such item or to some only.
struct ItemDeclaration {
  const JsonValue* schema;
  std::string pointer;
  bool every;
};

// The schemas of `node` that apply to the array item at position `token`: an index, or "*",
// a position at or past `rest_from` (where the rest of the schema being compared begins, 0 for
// `contains`), which another level's tuple may still cover. They are the tuple entry, the rest
// (ArrayFormOf: the differ's reading of a tuple and its rest) and `contains`, which applies to
// some items only; for "*", so do a level's tuple entries past rest_from and a rest behind a
// longer tuple.
std::vector<ItemDeclaration> ItemDeclarationsOf(const Node& node, const std::string& token,
                                                size_t rest_from) {
  std::vector<ItemDeclaration> found;
  const ArrayForm form = ArrayFormOf(node);
  const JsonValue* rest = form.rest != nullptr && !form.rest->IsArray() ? form.rest : nullptr;
  const size_t tuple_size = form.prefix != nullptr ? form.prefix->array.size() : 0;
  const auto entry = [&](size_t k, bool every) {
    found.push_back(
        {&form.prefix->array[k], AppendToken(form.prefix_pointer, std::to_string(k)), every});
  };
  if (token == "*") {
    for (size_t k = rest_from; k < tuple_size; ++k) entry(k, false);
    if (rest != nullptr) found.push_back({rest, form.rest_pointer, tuple_size <= rest_from});
  } else {
    const size_t index = static_cast<size_t>(std::stoull(token));
    if (index < tuple_size) {
      entry(index, true);
    } else if (rest != nullptr) {
      found.push_back({rest, form.rest_pointer, true});
    }
  }
  if (const JsonValue* contains = node.Keyword("contains"); contains != nullptr) {
    found.push_back({contains, node.KeywordPointer("contains"), false});
  }
  return found;
}

// Whether `through` (a subschema after `$ref` resolution) is one of `node`'s schemas for the
// array item at `token` (an index, or "*"): its tuple entry there, its rest or `contains`.
// Then the comparison reached an array item through that level. Also says where the rest of
// `node` begins (0 when reached through `contains`). Looks at one tuple entry only, so a long
// tuple costs no more per position.
Result<bool> IsItemSchemaOf(const SchemaDocument& doc, const Node& node, const JsonValue* through,
                            const std::string& token, size_t& rest_from) {
  const ArrayForm form = ArrayFormOf(node);
  rest_from = form.prefix != nullptr ? form.prefix->array.size() : 0;
  const auto is = [&](const JsonValue* value, const std::string& at) -> Result<bool> {
    if (value == nullptr || value->IsArray()) return false;
    if (value == through) return true;
    EVIDENT_ASSIGN_OR_RETURN(const Node resolved, doc.View(value, at));
    return resolved.value == through;
  };
  if (token != "*" && form.prefix != nullptr) {
    const size_t index = static_cast<size_t>(std::stoull(token));
    if (index < form.prefix->array.size()) {
      return is(&form.prefix->array[index],
                AppendToken(form.prefix_pointer, std::to_string(index)));
    }
  }
  EVIDENT_ASSIGN_OR_RETURN(const bool in_rest, is(form.rest, form.rest_pointer));
  if (in_rest) return true;
  EVIDENT_ASSIGN_OR_RETURN(const bool in_contains,
                           is(node.Keyword("contains"), node.KeywordPointer("contains")));
  if (in_contains) rest_from = 0;
  return in_contains;
}

bool IsIndex(const std::string& token) {
  return !token.empty() && token.size() < 10 &&
         std::all_of(token.begin(), token.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

// A `$ref` site that carries keywords affecting which properties are evaluated: its layers
// would have to be read one by one (Node::Keyword sees the outermost only).
bool HasLayers(const Node& node) {
  static constexpr std::string_view kEvaluating[] = {"properties",
                                                     "patternProperties",
                                                     "additionalProperties",
                                                     "unevaluatedProperties",
                                                     "allOf",
                                                     "anyOf",
                                                     "oneOf",
                                                     "if",
                                                     "then",
                                                     "else",
                                                     "dependentSchemas",
                                                     "$dynamicRef"};
  for (const JsonValue* site : node.sites) {
    if (site == nullptr || !site->IsObject()) continue;
    for (const JsonMember& member : site->object) {
      for (const std::string_view keyword : kEvaluating) {
        if (member.name == keyword) return true;
      }
    }
  }
  return false;
}

std::string PointerText(const std::string& pointer) {
  return pointer.empty() ? "the root" : pointer;
}

}  // namespace

// Whether a patternProperties pattern of `node` matches `name` (a pattern RE2 cannot evaluate:
// cannot tell). Each pattern is compiled once per diff (RegexOf) and counts as a step.
Differ::Match Differ::PatternsMatch(const Node& node, const std::string& name,
                                    int64_t& steps_left) {
  const JsonValue* patterns = node.Keyword("patternProperties");
  if (patterns == nullptr || !patterns->IsObject()) return Match::kNo;
  for (const JsonMember& pattern : patterns->object) {
    if (--steps_left < 0) return Match::kCannotTell;
    const re2::RE2* regex = RegexOf(pattern.name);
    if (regex == nullptr) return Match::kCannotTell;
    if (schema::internal::RegexSearch(*regex, name)) return Match::kYes;
  }
  return Match::kNo;
}

// The subschemas of `node` that apply in place and whose annotations unevaluatedProperties
// sees, with whether each always applies (allOf) or only for some values.
Differ::Evaluation Differ::EvaluationOf(const SchemaDocument& doc, const Node& node,
                                        const std::string& name, int64_t depth,
                                        int64_t& steps_left) {
  if (--steps_left < 0 || depth > kMemberDepthMax || HasLayers(node) ||
      node.Keyword("$dynamicRef") != nullptr || node.Keyword("$recursiveRef") != nullptr) {
    return Evaluation::kSometimes;  // a layered or dynamic reference, or too much to look at
  }
  if (node.value == nullptr || node.value->IsBool()) return Evaluation::kNever;
  const JsonValue* properties = node.Keyword("properties");
  if (properties != nullptr && properties->IsObject() && properties->Get(name) != nullptr) {
    return Evaluation::kAlways;
  }
  // additionalProperties evaluates every name its level does not declare; a nested
  // unevaluatedProperties every name not evaluated before it.
  if (node.Keyword("additionalProperties") != nullptr ||
      (depth > 0 && node.Keyword("unevaluatedProperties") != nullptr)) {
    return Evaluation::kAlways;
  }
  Evaluation result = Evaluation::kNever;
  switch (PatternsMatch(node, name, steps_left)) {
    case Match::kYes:
      return Evaluation::kAlways;
    case Match::kCannotTell:
      result = Evaluation::kSometimes;
      break;
    case Match::kNo:
      break;
  }
  const auto visit = [&](const JsonValue* value, const std::string& at, bool always) {
    Result<Node> child = doc.View(value, at);
    const Evaluation e = child.ok() ? EvaluationOf(doc, *child, name, depth + 1, steps_left)
                                    : Evaluation::kSometimes;
    if (e == Evaluation::kAlways && always) return true;
    if (e != Evaluation::kNever) result = Evaluation::kSometimes;
    return false;
  };
  for (const char* keyword : {"allOf", "anyOf", "oneOf"}) {
    const JsonValue* members = node.Keyword(keyword);
    if (members == nullptr || !members->IsArray()) continue;
    const std::string at = node.KeywordPointer(keyword);
    for (size_t k = 0; k < members->array.size(); ++k) {
      const bool all = std::string_view(keyword) == "allOf";
      if (visit(&members->array[k], AppendToken(at, std::to_string(k)), all)) {
        return Evaluation::kAlways;
      }
    }
  }
  for (const char* keyword : {"if", "then", "else"}) {
    const JsonValue* branch = node.Keyword(keyword);
    if (branch != nullptr) visit(branch, node.KeywordPointer(keyword), false);
  }
  for (const char* keyword : {"dependentSchemas", "dependencies"}) {
    const JsonValue* dependent = node.Keyword(keyword);
    if (dependent == nullptr || !dependent->IsObject()) continue;
    const std::string at = node.KeywordPointer(keyword);
    for (const JsonMember& member : dependent->object) {
      if (!member.value.IsArray()) visit(&member.value, AppendToken(at, member.name), false);
    }
  }
  return result;
}

// One subschema looked at for a property's context, counted against comparisons_max.
Status Differ::ContextStep() {
  if (++comparisons_ > options_.comparisons_max) {
    return Status::LimitExceeded("the levels around a property need more than comparisons_max=" +
                                 std::to_string(options_.comparisons_max) + " steps");
  }
  return Status::Ok();
}

Result<Differ::Context> Differ::ContextOf(bool old_side, const std::string& name) {
  Context c;
  if (levels_.empty()) return c;
  const SchemaDocument& doc = old_side ? old_doc_ : new_doc_;
  const auto node_of = [&](const Level& level) -> const Node& {
    return old_side ? *level.old_node : *level.new_node;
  };
  const Level& current = levels_.back();
  EVIDENT_RETURN_IF_ERROR(GatherMembers(doc, node_of(current), name, nullptr, 0, c));
  EVIDENT_RETURN_IF_ERROR(GatherBranches(doc, node_of(current), name, nullptr, 0, c));
  if (current.scope_start) return c;
  size_t i = levels_.size() - 1;
  while (i-- > 0) {
    const Level& level = levels_[i];
    if (*level.data != *current.data) break;  // a parent value: the stack only grows deeper
    EVIDENT_RETURN_IF_ERROR(
        GatherLevel(doc, node_of(level), name, node_of(levels_[i + 1]).value, 0, c));
    if (level.scope_start) return c;
  }
  if (i >= levels_.size()) return c;  // the walk reached the root
  // The parent value (levels_[i]) may declare this member again in another level of its own
  // (its `properties` and an allOf member's, say a base schema's): those declarations apply to
  // this value too.
  const std::string& parent_data = *levels_[i].data;
  const std::string& data = *current.data;
  const size_t slash = data.rfind('/');
  if (slash == std::string::npos || data.compare(0, slash, parent_data) != 0 ||
      slash != parent_data.size()) {
    return c;
  }
  std::string token;
  for (size_t k = slash + 1; k < data.size(); ++k) {  // JSON Pointer unescaping
    if (data[k] == '~' && k + 1 < data.size()) {
      token += data[k + 1] == '1' ? '/' : '~';
      ++k;
    } else {
      token += data[k];
    }
  }
  if (AppendToken(parent_data, token) != data) return c;
  const JsonValue* through = node_of(levels_[i + 1]).value;  // the declaration walked through
  EVIDENT_ASSIGN_OR_RETURN(const TokenKind kind, KindOf(old_side, i, token));
  if (token == "*" && !kind.item && !kind.named_star) return c;  // a rest of the properties
  const bool item = kind.item;
  const size_t rest_from = kind.rest_from;
  for (size_t q = i + 1; q-- > 0;) {
    const Level& level = levels_[q];
    if (*level.data != parent_data) break;
    EVIDENT_RETURN_IF_ERROR(
        item ? GatherItemSiblings(doc, node_of(level), token, rest_from, name, through, false, 0, c)
             : GatherSiblings(doc, node_of(level), token, name, through, 0, c));
    if (level.scope_start) break;
  }
  return c;
}

// What the last token of the data pointer of level `i + 1` is, below level `i`: an array item
// when level `i` reached it through one of its item schemas, on this side or on the other
// (where this side has none of its own, the item or the property was added or removed whole,
// and this side's schema for it is a stand-in); else a member, a property ("*" may name one) or
// with "*" the rest of an object's properties, which no sibling names.
Result<Differ::TokenKind> Differ::KindOf(bool old_side, size_t i, const std::string& token) {
  TokenKind kind;
  for (const bool side : {old_side, !old_side}) {
    const Node& parent = side ? *levels_[i].old_node : *levels_[i].new_node;
    const JsonValue* walked =
        side ? levels_[i + 1].old_node->value : levels_[i + 1].new_node->value;
    const SchemaDocument& side_doc = side ? old_doc_ : new_doc_;
    if (walked == nullptr) continue;
    if (token == "*" || IsIndex(token)) {
      size_t from = 0;  // where this side's rest begins (past both tuples: the larger)
      EVIDENT_ASSIGN_OR_RETURN(const bool is_item,
                               IsItemSchemaOf(side_doc, parent, walked, token, from));
      kind.item = kind.item || is_item;
      if (is_item) kind.rest_from = std::max(kind.rest_from, from);
    }
    if (token != "*") continue;
    for (const auto& [value, at] : DeclarationsOf(parent, token)) {
      EVIDENT_ASSIGN_OR_RETURN(const Node resolved, side_doc.View(value, at));
      kind.named_star = kind.named_star || resolved.value == walked;
    }
  }
  kind.named_star = kind.named_star && !kind.item;
  return kind;
}

// The declarations of member `token` in `node` and in its allOf members (but `through`, the
// one the comparison came by), each gathered as a level of that member's value.
Status Differ::GatherSiblings(const SchemaDocument& doc, const Node& node, const std::string& token,
                              const std::string& name, const JsonValue* through, int64_t depth,
                              Context& c) {
  if (!c.FirstVisit(kVisitSiblings, node, depth)) return Status::Ok();
  EVIDENT_RETURN_IF_ERROR(ContextStep());
  if (depth > kMemberDepthMax || node.value == nullptr || node.value->IsBool()) {
    return Status::Ok();
  }
  for (const auto& [declared, at] : DeclarationsOf(node, token)) {
    EVIDENT_ASSIGN_OR_RETURN(const Node sibling, doc.View(declared, at));
    if (sibling.value == through) continue;
    EVIDENT_RETURN_IF_ERROR(GatherLevel(doc, sibling, name, nullptr, 0, c));
  }
  const JsonValue* members = node.Keyword("allOf");
  if (members == nullptr || !members->IsArray()) return Status::Ok();
  const std::string at = node.KeywordPointer("allOf");
  for (size_t k = 0; k < members->array.size(); ++k) {
    EVIDENT_ASSIGN_OR_RETURN(const Node member,
                             doc.View(&members->array[k], AppendToken(at, std::to_string(k))));
    EVIDENT_RETURN_IF_ERROR(GatherSiblings(doc, member, token, name, through, depth + 1, c));
  }
  return Status::Ok();
}

// The schemas of `node` and of its applicators for the array item at `token` (but `through`,
// the one the comparison came by), each gathered as a level of the item's value, or as a
// subschema for some items (GatherMaybe): those of `contains`, of the tuple entries and rest a
// "*" position may or may not reach, and all those found in anyOf/oneOf members and then/else
// (`some`).
Status Differ::GatherItemSiblings(const SchemaDocument& doc, const Node& node,
                                  const std::string& token, size_t rest_from,
                                  const std::string& name, const JsonValue* through, bool some,
                                  int64_t depth, Context& c) {
  if (!c.FirstVisit(some ? kVisitSomeItems : kVisitItems, node, depth)) return Status::Ok();
  EVIDENT_RETURN_IF_ERROR(ContextStep());
  if (depth > kMemberDepthMax || node.value == nullptr || node.value->IsBool()) {
    return Status::Ok();
  }
  for (const ItemDeclaration& declared : ItemDeclarationsOf(node, token, rest_from)) {
    EVIDENT_ASSIGN_OR_RETURN(const Node sibling, doc.View(declared.schema, declared.pointer));
    if (sibling.value == through) continue;
    EVIDENT_RETURN_IF_ERROR(declared.every && !some ? GatherLevel(doc, sibling, name, nullptr, 0, c)
                                                    : GatherMaybe(doc, sibling, name, 0, c));
  }
  for (const char* keyword : {"allOf", "anyOf", "oneOf", "then", "else"}) {
    const JsonValue* members = node.Keyword(keyword);
    if (members == nullptr) continue;
    const bool branch = std::string_view(keyword) != "allOf";
    const std::string at = node.KeywordPointer(keyword);
    if (!members->IsArray()) {  // then, else
      EVIDENT_ASSIGN_OR_RETURN(const Node member, doc.View(members, at));
      EVIDENT_RETURN_IF_ERROR(
          GatherItemSiblings(doc, member, token, rest_from, name, through, true, depth + 1, c));
      continue;
    }
    for (size_t k = 0; k < members->array.size(); ++k) {
      EVIDENT_ASSIGN_OR_RETURN(const Node member,
                               doc.View(&members->array[k], AppendToken(at, std::to_string(k))));
      EVIDENT_RETURN_IF_ERROR(GatherItemSiblings(doc, member, token, rest_from, name, through,
                                                 some || branch, depth + 1, c));
    }
  }
  return Status::Ok();
}

// One level: its declaration of `name`, else what its content model says of the name; its
// `required`; its allOf members but `skip` (the level below it on the stack, walked in turn).
Status Differ::GatherLevel(const SchemaDocument& doc, const Node& node, const std::string& name,
                           const JsonValue* skip, int64_t depth, Context& c) {
  if (skip == nullptr && !c.FirstVisit(kVisitLevel, node, depth)) return Status::Ok();
  EVIDENT_RETURN_IF_ERROR(ContextStep());
  if (node.value == nullptr || node.value->IsBool()) return Status::Ok();
  const auto declarations = DeclarationsOf(node, name);
  for (const auto& [declared, at] : declarations) {
    c.schemas.push_back(declared);
    c.pointers.push_back(at);
    c.Note("declared at " + at);
  }
  if (declarations.empty()) {
    EVIDENT_ASSIGN_OR_RETURN(const Coverage coverage, CoverageOf(doc, node, name));
    switch (coverage.kind) {
      case Coverage::Kind::kOpen:
        break;
      case Coverage::Kind::kClosed:
        c.closed = true;
        c.Note(std::string(node.Keyword("additionalProperties") != nullptr
                               ? "additionalProperties"
                               : "unevaluatedProperties") +
               " false at " + PointerText(node.pointer));
        break;
      case Coverage::Kind::kPartial:
        for (size_t k = 0; k < coverage.schemas.size(); ++k) {
          c.schemas.push_back(coverage.schemas[k]);
          c.pointers.push_back(coverage.pointers[k]);
        }
        c.Note("covered by " + coverage.text + " at " + PointerText(node.pointer));
        break;
      case Coverage::Kind::kUnknown:
        c.unknown = true;
        c.Note(coverage.text + " at " + PointerText(node.pointer));
        break;
    }
  }
  if (Requires(node, name)) {
    c.required = true;
    c.Note("required at " + node.KeywordPointer("required"));
  }
  EVIDENT_RETURN_IF_ERROR(GatherBranches(doc, node, name, skip, depth + 1, c));
  return GatherMembers(doc, node, name, skip, depth + 1, c);
}

// The subschemas of `node` that apply to some values only: anyOf/oneOf members, then/else,
// dependentSchemas values (`skip` excepted). What they declare of `name` (at any depth of
// their own applicators) old data may hold.
Status Differ::GatherBranches(const SchemaDocument& doc, const Node& node, const std::string& name,
                              const JsonValue* skip, int64_t depth, Context& c) {
  if (depth > kMemberDepthMax || node.value == nullptr || node.value->IsBool()) {
    return Status::Ok();
  }
  const auto visit = [&](const JsonValue* value, const std::string& at) -> Status {
    EVIDENT_ASSIGN_OR_RETURN(const Node branch, doc.View(value, at));
    if (skip != nullptr && branch.value == skip) return Status::Ok();
    return GatherMaybe(doc, branch, name, depth + 1, c);
  };
  for (const char* keyword : {"anyOf", "oneOf"}) {
    const JsonValue* members = node.Keyword(keyword);
    if (members == nullptr || !members->IsArray()) continue;
    const std::string at = node.KeywordPointer(keyword);
    for (size_t k = 0; k < members->array.size(); ++k) {
      EVIDENT_RETURN_IF_ERROR(visit(&members->array[k], AppendToken(at, std::to_string(k))));
    }
  }
  for (const char* keyword : {"then", "else"}) {
    const JsonValue* branch = node.Keyword(keyword);
    if (branch != nullptr) EVIDENT_RETURN_IF_ERROR(visit(branch, node.KeywordPointer(keyword)));
  }
  // dependentSchemas and draft 7's `dependencies` (a schema, or a list of names that the
  // dependency then requires: any value for some objects).
  for (const char* keyword : {"dependentSchemas", "dependencies", "dependentRequired"}) {
    const JsonValue* dependent = node.Keyword(keyword);
    if (dependent == nullptr || !dependent->IsObject()) continue;
    const std::string at = node.KeywordPointer(keyword);
    for (const JsonMember& member : dependent->object) {
      if (!member.value.IsArray()) {
        if (std::string_view(keyword) == "dependentRequired") continue;
        EVIDENT_RETURN_IF_ERROR(visit(&member.value, AppendToken(at, member.name)));
        continue;
      }
      for (const JsonValue& required : member.value.array) {
        if (!required.IsString() || required.string != name) continue;
        c.maybe_schemas.push_back(nullptr);  // any value
        c.maybe_pointers.emplace_back();
        c.Note("required for some values at " + AppendToken(at, member.name));
      }
    }
  }
  return Status::Ok();
}

// A subschema that applies to some values: its declaration of `name`, and its own members'.
Status Differ::GatherMaybe(const SchemaDocument& doc, const Node& node, const std::string& name,
                           int64_t depth, Context& c) {
  if (!c.FirstVisit(kVisitMaybe, node, depth)) return Status::Ok();
  EVIDENT_RETURN_IF_ERROR(ContextStep());
  if (depth > kMemberDepthMax || node.value == nullptr || node.value->IsBool()) {
    return Status::Ok();
  }
  const auto declarations = DeclarationsOf(node, name);
  for (const auto& [declared, at] : declarations) {
    c.maybe_schemas.push_back(declared);
    c.maybe_pointers.push_back(at);
    c.Note("declared for some values at " + at);
  }
  if (declarations.empty()) {
    // Covered by a pattern or an additionalProperties schema, or required with any value.
    EVIDENT_ASSIGN_OR_RETURN(const Coverage coverage, CoverageOf(doc, node, name));
    if (coverage.kind == Coverage::Kind::kPartial) {
      for (size_t k = 0; k < coverage.schemas.size(); ++k) {
        c.maybe_schemas.push_back(coverage.schemas[k]);
        c.maybe_pointers.push_back(coverage.pointers[k]);
      }
      c.Note("covered for some values by " + coverage.text + " at " + PointerText(node.pointer));
    } else if (coverage.kind == Coverage::Kind::kUnknown) {
      c.unknown = true;
      c.Note(coverage.text + " at " + PointerText(node.pointer));
    } else if (Requires(node, name)) {
      c.maybe_schemas.push_back(nullptr);  // any value
      c.maybe_pointers.emplace_back();
      c.Note("required for some values at " + node.KeywordPointer("required"));
    }
  }
  const JsonValue* members = node.Keyword("allOf");
  if (members != nullptr && members->IsArray()) {
    const std::string at = node.KeywordPointer("allOf");
    for (size_t k = 0; k < members->array.size(); ++k) {
      EVIDENT_ASSIGN_OR_RETURN(const Node member,
                               doc.View(&members->array[k], AppendToken(at, std::to_string(k))));
      EVIDENT_RETURN_IF_ERROR(GatherMaybe(doc, member, name, depth + 1, c));
    }
  }
  return GatherBranches(doc, node, name, nullptr, depth, c);
}

// Added (`added`): old values under the name are within every conjunctive schema of the
// context, one within the new schema suffices; and within some maybe-schema, each must be.
// Removed: the same with the sides turned. Without conjunctive schemas, any value may be there
// when the name is required or the reading is strict.
Result<Differ::Verdict> Differ::JudgeInContext(const Context& ctx, bool added,
                                               const JsonValue* schema, const std::string& at,
                                               const std::string& data, int64_t depth) {
  const bool lenient = options_.strictness == Strictness::kLenient && !negated_ && !under_not_;
  Verdict v;
  bool settled = false;  // the conjunctive schemas alone decide: every value is within them
  if (!ctx.schemas.empty()) {
    const Coverage c{
        .kind = Coverage::Kind::kPartial, .schemas = ctx.schemas, .pointers = ctx.pointers};
    EVIDENT_ASSIGN_OR_RETURN(v, JudgeCoverage(c, added, schema, at, data, depth));
    settled = added ? v.backward : v.forward;
  } else if (ctx.required || !lenient) {
    EVIDENT_ASSIGN_OR_RETURN(v, added ? Probe(nullptr, "", schema, at, data, depth)
                                      : Probe(schema, at, nullptr, "", data, depth));
  }
  for (size_t k = 0; k < ctx.maybe_schemas.size() && !settled; ++k) {
    const JsonValue* maybe = ctx.maybe_schemas[k];
    // "Required here, any value": the conjunctive schemas still bound the value.
    if (maybe == nullptr && !ctx.schemas.empty()) continue;
    const std::string& maybe_at = ctx.maybe_pointers[k];
    EVIDENT_ASSIGN_OR_RETURN(Verdict p, added ? Probe(maybe, maybe_at, schema, at, data, depth)
                                              : Probe(schema, at, maybe, maybe_at, data, depth));
    for (Change& change : p.meaning) v.meaning.push_back(std::move(change));
    if (added) v.backward = v.backward && p.backward;
    if (!added) v.forward = v.forward && p.forward;
  }
  return v;
}

// The allOf members of `node` (each applies to the same value), `skip` excepted.
Status Differ::GatherMembers(const SchemaDocument& doc, const Node& node, const std::string& name,
                             const JsonValue* skip, int64_t depth, Context& c) {
  const JsonValue* members = node.Keyword("allOf");
  if (depth > kMemberDepthMax || members == nullptr || !members->IsArray()) return Status::Ok();
  const std::string at = node.KeywordPointer("allOf");
  for (size_t k = 0; k < members->array.size(); ++k) {
    EVIDENT_ASSIGN_OR_RETURN(const Node member,
                             doc.View(&members->array[k], AppendToken(at, std::to_string(k))));
    if (skip != nullptr && member.value == skip) continue;
    EVIDENT_RETURN_IF_ERROR(GatherLevel(doc, member, name, nullptr, depth, c));
  }
  return Status::Ok();
}

}  // namespace evident::compat
