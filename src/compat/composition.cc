// compat/composition.cc — a plain schema against a composed one (anyOf, oneOf, allOf), or one
// combinator against another, judged by the data the members admit.
//
// Each side is read as a combinator over members: a plain schema is the one member of itself;
// a composed schema's keywords beside the combinator are merged into every member (B ∧ (M1 ∨ M2)
// is (B ∧ M1) ∨ (B ∧ M2), and the same for ∧), when the merge is plain (see MergeInto). Then
// "old ⊆ new" (backward) and "new ⊆ old" (forward) are decided from pairwise probes, "A ⊆ B"
// being a probe diff of A against B whose changes are all backward compatible:
//   any(A) ⊆ any(B)  when every A_i is within some B_j
//   all(A) ⊆ all(B)  when every B_j contains some A_i
//   any(A) ⊆ all(B)  when every A_i is within every B_j
//   all(A) ⊆ any(B)  when some A_i is within some B_j
// and a oneOf on the containing side also needs the chosen B_j to be exclusive: no other member
// can hold a value it holds (ProvablyDisjoint). Every rule is sufficient, not necessary: where
// the members cannot be compared this way the verdict errs towards "incompatible".
#include <algorithm>
#include <bit>
#include <cassert>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "compat/differ.h"
#include "compat/keywords.h"

namespace evident::compat {
namespace {

constexpr const char* kCombinators[] = {"anyOf", "oneOf", "allOf"};

// Keywords that constrain nothing: they stay out of a merge (and out of "has a base").
bool IsInert(std::string_view name) {
  static const std::set<std::string_view> kInert = {
      "$schema",        "$id",        "$defs",    "definitions", "$anchor",
      "$dynamicAnchor", "$comment",   "title",    "description", "examples",
      "default",        "deprecated", "readOnly", "writeOnly",   "$vocabulary",
      "anyOf",          "oneOf",      "allOf",    "$ref"};
  return kInert.count(name) != 0;
}

// The value a merged member starts from: a copy of `member`'s keywords.
JsonValue ObjectOf(const JsonValue& member) {
  if (member.IsObject()) return member;
  JsonValue object;
  object.kind = JsonValue::Kind::kObject;
  return object;
}

// The instance types both `a` and `b` admit ("integer" where one says number, the other integer),
// or nothing when either is not a type keyword evident reads.
std::optional<JsonValue> IntersectTypes(const JsonValue& a, const JsonValue& b) {
  const auto names = [](const JsonValue& type) {
    std::set<std::string> out;
    if (type.IsString()) out.insert(type.string);
    for (const JsonValue& t : type.array) {
      if (t.IsString()) out.insert(t.string);
    }
    return out;
  };
  if (!(a.IsString() || a.IsArray()) || !(b.IsString() || b.IsArray())) return std::nullopt;
  const std::set<std::string> left = names(a);
  const std::set<std::string> right = names(b);
  JsonValue both;
  both.kind = JsonValue::Kind::kArray;
  for (const std::string& name : left) {
    const bool shared = right.count(name) != 0 || (name == "integer" && right.count("number") != 0);
    if (!shared) continue;
    JsonValue v;
    v.kind = JsonValue::Kind::kString;
    v.string = name;
    both.array.push_back(std::move(v));
  }
  if (left.count("number") != 0 && right.count("integer") != 0 && left.count("integer") == 0) {
    JsonValue v;
    v.kind = JsonValue::Kind::kString;
    v.string = "integer";
    both.array.push_back(std::move(v));
  }
  return both;
}

// {"allOf": [a, b]}: both schemas of a property named on both sides of a merge.
JsonValue AllOfPair(const JsonValue& a, const JsonValue& b) {
  JsonValue list;
  list.kind = JsonValue::Kind::kArray;
  list.array = {a, b};
  JsonValue out;
  out.kind = JsonValue::Kind::kObject;
  out.object.push_back(JsonMember{"allOf", std::move(list)});
  return out;
}

// Keywords whose meaning depends on their neighbours: split between the base and a member
// they would mean something else merged (`additionalProperties: false` beside the base's
// properties does not admit a member's). A merge where both sides hold one of a group fails.
bool SplitsAGroup(const JsonValue& base, const JsonValue& member) {
  static const std::vector<std::vector<std::string_view>> kGroups = {
      {"properties", "patternProperties", "additionalProperties"},
      {"items", "additionalItems", "prefixItems"},
      {"contains", "minContains", "maxContains"},
      {"if", "then", "else"}};
  const auto holds = [](const JsonValue& schema, const std::vector<std::string_view>& group) {
    return std::any_of(group.begin(), group.end(),
                       [&](std::string_view k) { return schema.Get(k) != nullptr; });
  };
  for (const JsonValue* side : {&base, &member}) {
    if (side->Get("unevaluatedProperties") != nullptr || side->Get("unevaluatedItems") != nullptr) {
      return true;  // depends on every applicator around it
    }
  }
  for (size_t g = 0; g < kGroups.size(); ++g) {
    if (!holds(base, kGroups[g]) || !holds(member, kGroups[g])) continue;
    // properties on both sides merge by name unless a rest keyword reads them
    const bool rest =
        base.Get("patternProperties") != nullptr || base.Get("additionalProperties") != nullptr ||
        member.Get("patternProperties") != nullptr || member.Get("additionalProperties") != nullptr;
    if (g != 0 || rest) return true;
  }
  return false;
}

// Merges the constraining keywords of `base` into `into` (a member): `required` is the union,
// `properties` the union by name (a name on both sides gets the allOf of its two schemas),
// `type` the intersection; any other keyword must be absent from the member or equal. False
// when the two cannot be merged plainly (the caller then compares unmerged members).
bool MergeInto(const JsonValue& base, JsonValue& into) {
  if (SplitsAGroup(base, into)) return false;
  std::unordered_map<std::string, size_t> mine_at;  // the member's keywords (copies: it grows)
  for (size_t i = 0; i < into.object.size(); ++i) mine_at.emplace(into.object[i].name, i);
  const size_t own_count = into.object.size();
  for (const JsonMember& keyword : base.object) {
    if (IsInert(keyword.name)) continue;
    const auto found = mine_at.find(keyword.name);
    if (found == mine_at.end()) {
      into.object.push_back(keyword);  // (mine_at holds indices below own_count only)
      continue;
    }
    assert(found->second < own_count);
    JsonValue& mine = into.object[found->second].value;
    if (Canonical(mine) == Canonical(keyword.value)) continue;
    if (keyword.name == "required" && mine.IsArray() && keyword.value.IsArray()) {
      for (const JsonValue& name : keyword.value.array) mine.array.push_back(name);
      continue;
    }
    if (keyword.name == "type") {
      std::optional<JsonValue> both = IntersectTypes(mine, keyword.value);
      if (!both) return false;
      mine = std::move(*both);
      continue;
    }
    if (keyword.name != "properties" || !mine.IsObject() || !keyword.value.IsObject()) {
      return false;
    }
    std::unordered_map<std::string, size_t> property_at;
    for (size_t i = 0; i < mine.object.size(); ++i) property_at.emplace(mine.object[i].name, i);
    for (const JsonMember& property : keyword.value.object) {
      const auto same = property_at.find(property.name);
      if (same == property_at.end()) {
        mine.object.push_back(property);
        continue;
      }
      JsonValue& theirs = mine.object[same->second].value;
      if (Canonical(theirs) != Canonical(property.value)) {
        theirs = AllOfPair(property.value, theirs);
      }
    }
  }
  return true;
}

// Whether a type list names distinct types of which no two overlap (integer is a number).
bool SplitsCleanly(const JsonValue& type) {
  std::set<std::string> names;
  for (const JsonValue& t : type.array) {
    if (!t.IsString() || !names.insert(t.string).second) return false;
  }
  return !(names.count("integer") != 0 && names.count("number") != 0);
}

// The number of JSON values in `value` (what copying it costs).
int64_t NodeCount(const JsonValue& value) {
  int64_t count = 1;
  for (const JsonValue& item : value.array) count += NodeCount(item);
  for (const JsonMember& member : value.object) count += NodeCount(member.value);
  return count;
}

bool HasBase(const JsonValue& value) {
  if (!value.IsObject()) return false;
  return std::any_of(value.object.begin(), value.object.end(),
                     [](const JsonMember& m) { return !IsInert(m.name); });
}

// Both nodes restrict their values (const/enum) and no value is allowed by both.
bool ValuesDisjoint(const Node& a, const Node& b) {
  const ValueSet left = ValuesOf(a);
  const ValueSet right = ValuesOf(b);
  if (left.universal || right.universal) return false;
  std::vector<std::string> both;
  std::set_intersection(left.values.begin(), left.values.end(), right.values.begin(),
                        right.values.end(), std::back_inserter(both));
  return both.empty();
}

bool TypesDisjoint(const Node& a, const Node& b) {
  return (WithIntegers(TypeSet(a.Keyword("type"))) & WithIntegers(TypeSet(b.Keyword("type")))) == 0;
}

// Whether `node` admits no value under the property `name`: its schema there is `false`, or
// the object is closed and neither names nor pattern-matches it.
bool Forbids(const SchemaDocument& doc, const Node& node, const std::string& name) {
  const JsonValue* properties = node.Keyword("properties");
  const JsonValue* schema =
      properties != nullptr && properties->IsObject() ? properties->Get(name) : nullptr;
  if (schema != nullptr) {
    const Result<Node> member = doc.View(schema, "");
    return member.ok() && member->IsFalse();
  }
  const JsonValue* rest = node.Keyword("additionalProperties");
  return rest != nullptr && rest->IsBool() && !rest->boolean &&
         node.Keyword("patternProperties") == nullptr;
}

}  // namespace

// Whether no value can be valid under both `a` and `b`, both of `doc` (read from their keywords
// alone; false means "perhaps both"): disjoint types, disjoint const/enum values, a property
// both require with disjoint values or types (a discriminator), or a property one requires and
// the other forbids. `cost` grows by the work done.
namespace {

constexpr int kDisjointDepthMax = 4;  // allOf members looked into, a side's and the other's

// A property both require, with disjoint types or values on the two sides (a tag).
bool TagsDisjoint(const SchemaDocument& doc, const Node& a, const Node& b,
                  const std::set<std::string>& a_required,
                  const std::set<std::string>& b_required) {
  const JsonValue* a_properties = a.Keyword("properties");
  const JsonValue* b_properties = b.Keyword("properties");
  if (a_properties == nullptr || b_properties == nullptr || !a_properties->IsObject() ||
      !b_properties->IsObject()) {
    return false;
  }
  for (const std::string& name : a_required) {
    const JsonValue* a_schema = a_properties->Get(name);
    const JsonValue* b_schema = b_properties->Get(name);
    if (b_required.count(name) == 0 || a_schema == nullptr || b_schema == nullptr) continue;
    const Result<Node> a_member = doc.View(a_schema, "");
    const Result<Node> b_member = doc.View(b_schema, "");
    if (!a_member.ok() || !b_member.ok()) continue;
    if (TypesDisjoint(*a_member, *b_member) || ValuesDisjoint(*a_member, *b_member)) return true;
  }
  return false;
}

bool ProvablyDisjointAt(const SchemaDocument& doc, const Node& a, const Node& b, int64_t& cost,
                        int depth) {
  ++cost;
  if (a.IsFalse() || b.IsFalse()) return true;
  if (TypesDisjoint(a, b) || ValuesDisjoint(a, b)) return true;
  const std::set<std::string> a_required = RequiredNames(a.Keyword("required"));
  const std::set<std::string> b_required = RequiredNames(b.Keyword("required"));
  cost += static_cast<int64_t>(a_required.size() + b_required.size());
  for (const std::string& name : a_required) {
    if (b_required.count(name) == 0 && Forbids(doc, b, name)) return true;
  }
  for (const std::string& name : b_required) {
    if (a_required.count(name) == 0 && Forbids(doc, a, name)) return true;
  }
  if (TagsDisjoint(doc, a, b, a_required, b_required)) return true;
  if (depth >= kDisjointDepthMax) return false;
  // allOf: a value of `a` is a value of each of its members, so one member disjoint from `b`
  // suffices (a union written as allOf: [base, {tag}]); the same for `b`'s members.
  for (const bool a_side : {true, false}) {
    const Node& side = a_side ? a : b;
    const JsonValue* members = side.Keyword("allOf");
    if (members == nullptr || !members->IsArray()) continue;
    for (size_t k = 0; k < members->array.size(); ++k) {
      const Result<Node> member = doc.View(&members->array[k], "");
      if (!member.ok()) continue;
      if (a_side ? ProvablyDisjointAt(doc, *member, b, cost, depth + 1)
                 : ProvablyDisjointAt(doc, a, *member, cost, depth + 1)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

bool ProvablyDisjoint(const SchemaDocument& doc, const Node& a, const Node& b, int64_t& cost) {
  return ProvablyDisjointAt(doc, a, b, cost, 0);
}

namespace {

// Whether any(A)/all(A) is within any(B)/all(B), from `within(i, j)`: A_i is within B_j, and
// `exclusive(j)`: B_j is a member no other member of B overlaps (always true unless B is a
// oneOf). `blocked` is set when containment failed only for want of exclusivity.
template <typename Within, typename Exclusive>
bool Contained(bool a_sum, size_t a_count, bool b_sum, size_t b_count, const Within& within,
               const Exclusive& exclusive, bool& blocked) {
  const auto some_b = [&](size_t i) {
    bool found = false;
    for (size_t j = 0; j < b_count && !found; ++j) {
      if (!within(i, j)) continue;
      if (exclusive(j)) {
        found = true;
      } else {
        blocked = true;
      }
    }
    return found;
  };
  if (a_sum && b_sum) {
    for (size_t i = 0; i < a_count; ++i) {
      if (!some_b(i)) return false;
    }
    return true;
  }
  if (!a_sum && !b_sum) {
    for (size_t j = 0; j < b_count; ++j) {
      bool found = false;
      for (size_t i = 0; i < a_count && !found; ++i) found = within(i, j);
      if (!found) return false;
    }
    return true;
  }
  if (a_sum) {
    for (size_t i = 0; i < a_count; ++i) {
      for (size_t j = 0; j < b_count; ++j) {
        if (!within(i, j)) return false;
      }
    }
    return true;
  }
  for (size_t i = 0; i < a_count; ++i) {
    if (some_b(i)) return true;
  }
  return false;
}

}  // namespace

unsigned CombinatorsOf(const Node& node) {
  unsigned bits = 0;
  for (unsigned i = 0; i < 3; ++i) {
    const JsonValue* list = node.Keyword(kCombinators[i]);
    if (list != nullptr && list->IsArray() && !list->array.empty()) bits |= 1u << i;
  }
  return bits;
}

Status Differ::CheckOneOfOverlap(const Side& s, const Members& olds, const Members& news,
                                 const std::vector<size_t>& old_of) {
  const size_t n = olds.values.size();
  const size_t m = news.values.size();
  comparisons_ += static_cast<int64_t>(m) * static_cast<int64_t>(m) / 2;
  if (comparisons_ > options_.comparisons_max) {
    return Status::LimitExceeded("checking whether the oneOf members of " + DataText(s.data) +
                                 " overlap needs more than comparisons_max=" +
                                 std::to_string(options_.comparisons_max) + " steps");
  }
  std::vector<Node> old_nodes;
  std::vector<Node> new_nodes;
  for (size_t i = 0; i < n; ++i) {
    EVIDENT_ASSIGN_OR_RETURN(Node node, old_doc_.View(olds.values[i], olds.pointers[i]));
    old_nodes.push_back(std::move(node));
  }
  for (size_t j = 0; j < m; ++j) {
    EVIDENT_ASSIGN_OR_RETURN(Node node, new_doc_.View(news.values[j], news.pointers[j]));
    new_nodes.push_back(std::move(node));
  }
  for (size_t j = 0; j < m; ++j) {
    for (size_t k = j + 1; k < m; ++k) {
      if (ProvablyDisjoint(new_doc_, new_nodes[j], new_nodes[k], comparisons_)) continue;
      // The same two members could overlap before: not a change.
      if (old_of[j] < n && old_of[k] < n &&
          !ProvablyDisjoint(old_doc_, old_nodes[old_of[j]], old_nodes[old_of[k]], comparisons_)) {
        continue;
      }
      Add(ChangeCode::kOneOfMembersMayOverlap, s.data, news.pointers[k], false, true,
          "oneOf members " + std::to_string(j) + " and " + std::to_string(k) + " of " +
              DataText(s.data) + " may now both match one value, which oneOf rejects" +
              (old_of[j] < n && old_of[k] < n ? " (before, they could not)"
                                              : " (one of them is new)"));
      return Status::Ok();
    }
  }
  return Status::Ok();
}

bool CombinatorsStacked(const Node& node) {
  if (node.dialect != Dialect::kDraft2020 || node.sites.empty()) return false;
  int holding = 0;
  const auto holds = [](const JsonValue& schema) {
    return schema.IsObject() &&
           std::any_of(std::begin(kCombinators), std::end(kCombinators),
                       [&](const char* k) { return schema.Get(k) != nullptr; });
  };
  for (const JsonValue* site : node.sites) holding += holds(*site) ? 1 : 0;
  holding += holds(*node.value) ? 1 : 0;
  return holding > 1;
}

Differ::Members Differ::UniqueMembers(const JsonValue* list,
                                      const std::string& list_pointer) const {
  Members members;
  if (list == nullptr || !list->IsArray()) return members;
  std::set<std::string> seen;
  for (size_t i = 0; i < list->array.size(); ++i) {
    if (!seen.insert(Canonical(list->array[i])).second) {
      ++members.repeats;
      continue;
    }
    members.values.push_back(&list->array[i]);
    members.pointers.push_back(AppendToken(list_pointer, std::to_string(i)));
  }
  return members;
}

// One side of a lifted comparison: a combinator over members (a plain schema is the one member
// of itself). `exact` when the members carry every keyword of the side.
struct Differ::Composed {
  int kind = -1;  // -1 plain, else an index into kCombinators
  std::string keyword_pointer;
  std::vector<const JsonValue*> values;
  std::vector<std::string> pointers;
  size_t repeats = 0;
  bool exact = true;
  std::vector<bool> exclusive;  // per member: no other member can hold its values (oneOf)

  bool split = false;  // a member's type list was read as one member per type
  bool sum() const { return kind != 2; }
  std::string Describe() const {
    if (kind < 0) return split ? "a schema of several types" : "a schema without a combinator";
    return std::string(kCombinators[kind]) + " of " + std::to_string(values.size()) +
           (values.size() == 1 ? " member" : " members");
  }
};

Result<Differ::Composed> Differ::CompositionOf(const SchemaDocument& doc, const Node& node) {
  EVIDENT_ASSIGN_OR_RETURN(Composed c, MembersOf(doc, node));
  if (c.sum()) EVIDENT_RETURN_IF_ERROR(SplitTypes(doc, c));
  return c;
}

// A member of a sum whose `type` lists several disjoint types is the sum of one copy per type
// (`"type":["string","null"]` is `anyOf` of a string and a null schema), so that a nullable
// type compares member by member with an `anyOf` that spells the null out.
Status Differ::SplitTypes(const SchemaDocument& doc, Composed& c) {
  std::vector<const JsonValue*> values;
  std::vector<std::string> pointers;
  for (size_t i = 0; i < c.values.size(); ++i) {
    EVIDENT_ASSIGN_OR_RETURN(const Node member, doc.View(c.values[i], c.pointers[i]));
    const JsonValue* type = member.Keyword("type");
    const bool splittable = type != nullptr && type->IsArray() && type->array.size() > 1 &&
                            member.value->IsObject() && member.value->Get("type") == type &&
                            !(member.dialect == Dialect::kDraft2020 &&
                              std::any_of(member.sites.begin(), member.sites.end(),
                                          [](const JsonValue* site) { return HasBase(*site); })) &&
                            SplitsCleanly(*type);
    if (!splittable) {
      values.push_back(c.values[i]);
      pointers.push_back(c.pointers[i]);
      continue;
    }
    comparisons_ += static_cast<int64_t>(type->array.size()) * NodeCount(*member.value);
    if (comparisons_ > options_.comparisons_max) {
      return Status::LimitExceeded(
          "reading a type list as one member per type needs more than "
          "comparisons_max=" +
          std::to_string(options_.comparisons_max) + " steps");
    }
    for (const JsonValue& one : type->array) {
      std::unique_ptr<JsonValue>& slot = (*merges_)[{member.value, &one}];
      if (slot == nullptr) {
        JsonValue copy = *member.value;
        for (JsonMember& m : copy.object) {
          if (m.name == "type") m.value = one;
        }
        slot = std::make_unique<JsonValue>(std::move(copy));
      }
      values.push_back(slot.get());
      pointers.push_back(c.pointers[i]);
    }
    c.split = true;
  }
  c.values = std::move(values);
  c.pointers = std::move(pointers);
  return Status::Ok();
}

Result<Differ::Composed> Differ::MembersOf(const SchemaDocument& doc, const Node& node) {
  Composed c;
  const unsigned bits = CombinatorsOf(node);
  if (bits == 0) {
    c.values.push_back(node.sites.empty() ? node.value : node.sites.front());
    c.pointers.push_back(node.sites.empty() ? node.pointer : node.site_pointers.front());
    return c;
  }
  assert(std::popcount(bits) == 1);  // CompareComposition lifts single combinators only
  c.kind = std::countr_zero(bits);
  c.keyword_pointer = node.KeywordPointer(kCombinators[c.kind]);
  Members members = UniqueMembers(node.Keyword(kCombinators[c.kind]), c.keyword_pointer);
  c.repeats = members.repeats;
  c.pointers = members.pointers;
  c.values = members.values;
  const bool site_base = node.dialect == Dialect::kDraft2020 &&
                         std::any_of(node.sites.begin(), node.sites.end(),
                                     [](const JsonValue* site) { return HasBase(*site); });
  if (site_base) c.exact = false;
  if (!HasBase(*node.value) || site_base) return c;
  std::vector<const JsonValue*> merged;
  const int64_t base_cost = NodeCount(*node.value);
  for (size_t i = 0; i < members.values.size() && c.exact; ++i) {
    EVIDENT_ASSIGN_OR_RETURN(const Node member, doc.View(members.values[i], members.pointers[i]));
    const bool member_sites = member.dialect == Dialect::kDraft2020 &&
                              std::any_of(member.sites.begin(), member.sites.end(),
                                          [](const JsonValue* site) { return HasBase(*site); });
    // A member with combinators of its own stays unmerged: merged members never compose
    // further, so merging terminates even through a member that refers to its own schema.
    if (!member.unresolved_ref.empty() || member_sites || CombinatorsOf(member) != 0) {
      c.exact = false;
      break;
    }
    std::unique_ptr<JsonValue>& slot = (*merges_)[{node.value, member.value}];
    if (slot == nullptr) {
      comparisons_ += base_cost + NodeCount(*member.value);  // what the merged copy holds
      if (comparisons_ > options_.comparisons_max) {
        return Status::LimitExceeded("merging the keywords beside " +
                                     std::string(kCombinators[c.kind]) +
                                     " into its members needs "
                                     "more than comparisons_max=" +
                                     std::to_string(options_.comparisons_max) + " steps");
      }
      JsonValue value = member.value->IsBool() && !member.value->boolean ? *member.value
                                                                         : ObjectOf(*member.value);
      if (value.IsObject() && !MergeInto(*node.value, value)) {
        merges_->erase({node.value, member.value});
        c.exact = false;
        break;
      }
      slot = std::make_unique<JsonValue>(std::move(value));
    }
    merged.push_back(slot.get());
  }
  if (c.exact) c.values = std::move(merged);
  return c;
}

Result<Differ::Verdict> Differ::Probe(const JsonValue* old_value, const std::string& old_pointer,
                                      const JsonValue* new_value, const std::string& new_pointer,
                                      const std::string& data, int64_t depth) {
  std::vector<Change> scratch;
  Differ probe(old_doc_, new_doc_, options_, comparisons_, scratch);
  probe.in_progress_ = in_progress_;  // the coinductive reading, as in Equivalent
  // The probe's pair applies at `data` under the same levels, and inside the same `not` (its
  // verdict is turned around by the caller, but the lenient assumption stays off).
  probe.levels_ = levels_;
  probe.under_not_ = under_not_ || negated_;
  probe.merges_ = merges_;
  probe.regexes_ = regexes_;
  EVIDENT_RETURN_IF_ERROR(
      probe.Compare(old_value, old_pointer, new_value, new_pointer, data, Slot::kGeneral, depth));
  Verdict verdict;
  for (Change& change : scratch) {
    if (change.code == ChangeCode::kMeaningChanged) {
      verdict.meaning.push_back(std::move(change));
      continue;
    }
    const auto why = [&] {
      return std::string(ChangeCodeName(change.code)) + " at " + DataText(change.pointer);
    };
    if (!change.backward && verdict.backward) verdict.why_not_backward = why();
    if (!change.forward && verdict.forward) verdict.why_not_forward = why();
    verdict.backward = verdict.backward && change.backward;
    verdict.forward = verdict.forward && change.forward;
  }
  return verdict;
}

// The changes of the keywords beside the combinators (from `own_from` on) said what they say of
// the node as a whole; a side whose members carry all its keywords makes them redundant in the
// direction it decides: an exact new side decides backward, an exact old side forward.
void Differ::SettleOwnChanges(size_t own_from, bool old_exact, bool new_exact) {
  if (old_exact && new_exact) {
    out_.resize(std::min(own_from, out_.size()));
    return;
  }
  for (size_t k = own_from; k < out_.size(); ++k) {
    if (out_[k].code == ChangeCode::kMeaningChanged) continue;
    bool& backward = negated_ ? out_[k].forward : out_[k].backward;
    bool& forward = negated_ ? out_[k].backward : out_[k].forward;
    if (new_exact) backward = true;
    if (old_exact) forward = true;
  }
}

Status Differ::CompareLifted(const Side& s, size_t own_from) {
  EVIDENT_ASSIGN_OR_RETURN(Composed olds, CompositionOf(old_doc_, s.old_node));
  EVIDENT_ASSIGN_OR_RETURN(Composed news, CompositionOf(new_doc_, s.new_node));
  const size_t n = olds.values.size();
  const size_t m = news.values.size();
  if (n == 0 || m == 0) return Status::Ok();  // an empty combinator is not a schema
  const auto over_budget = [&]() -> Status {
    if (comparisons_ <= options_.comparisons_max) return Status::Ok();
    return Status::LimitExceeded(
        "comparing the members of " + DataText(s.data) + " needs more than comparisons_max=" +
        std::to_string(options_.comparisons_max) + " subschema comparisons");
  };
  for (Composed* side : {&olds, &news}) {
    const SchemaDocument& doc = side == &olds ? old_doc_ : new_doc_;
    side->exclusive.assign(side->values.size(), true);
    if (side->kind != 1) continue;
    comparisons_ += static_cast<int64_t>(side->values.size());
    EVIDENT_RETURN_IF_ERROR(over_budget());
    std::vector<Node> nodes;
    for (size_t i = 0; i < side->values.size(); ++i) {
      EVIDENT_ASSIGN_OR_RETURN(Node node, doc.View(side->values[i], side->pointers[i]));
      nodes.push_back(std::move(node));
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (size_t k = 0; k < nodes.size() && side->exclusive[i]; ++k) {
        if (k != i && !ProvablyDisjoint(doc, nodes[i], nodes[k], comparisons_)) {
          side->exclusive[i] = false;
        }
        EVIDENT_RETURN_IF_ERROR(over_budget());
      }
    }
  }
  // Every pair is probed: the count is known before any work, and refused when over the bound.
  comparisons_ += static_cast<int64_t>(n) * static_cast<int64_t>(m) / 2;
  EVIDENT_RETURN_IF_ERROR(over_budget());
  std::vector<Verdict> verdicts;
  verdicts.reserve(n * m);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < m; ++j) {
      EVIDENT_ASSIGN_OR_RETURN(Verdict v, Probe(olds.values[i], olds.pointers[i], news.values[j],
                                                news.pointers[j], s.data, s.depth + 1));
      verdicts.push_back(std::move(v));
    }
  }
  bool blocked = false;
  const bool backward = Contained(
                            olds.sum(), n, news.sum(), m,
                            [&](size_t i, size_t j) { return verdicts[i * m + j].backward; },
                            [&](size_t j) { return news.exclusive[j]; }, blocked) &&
                        !(news.kind == 1 && news.repeats > 0);
  const bool forward = Contained(
                           news.sum(), m, olds.sum(), n,
                           [&](size_t j, size_t i) { return verdicts[i * m + j].forward; },
                           [&](size_t i) { return olds.exclusive[i]; }, blocked) &&
                       !(olds.kind == 1 && olds.repeats > 0);
  SettleOwnChanges(own_from, olds.exact, news.exact);
  ReportLifted(s, olds, news, verdicts, backward, forward, blocked);
  for (Verdict& v : verdicts) {
    if (v.backward || v.forward) AddMeaning(std::move(v.meaning));  // members that meet
  }
  return Status::Ok();
}

void Differ::ReportLifted(const Side& s, const Composed& olds, const Composed& news,
                          const std::vector<Verdict>& verdicts, bool backward, bool forward,
                          bool blocked) {
  const ChangeCode code = olds.kind < 0   ? ChangeCode::kCompositionIntroduced
                          : news.kind < 0 ? ChangeCode::kCompositionRemoved
                                          : ChangeCode::kCombinatorChanged;
  const size_t m = news.values.size();
  // The first pair of members that does not hold, and why, for each direction that fails.
  const auto example = [&](bool backward_side) {
    for (size_t k = 0; k < verdicts.size(); ++k) {
      const Verdict& v = verdicts[k];
      if (backward_side ? v.backward : v.forward) continue;
      return " (old member " + std::to_string(k / m) + " against new member " +
             std::to_string(k % m) + ": " +
             (backward_side ? v.why_not_backward : v.why_not_forward) + ")";
    }
    return std::string();
  };
  std::string text = DataText(s.data) + " changed from " + olds.Describe() + " to " +
                     news.Describe() + ": " +
                     (backward ? "every value the old schema admits is still admitted"
                               : "the old schema admits values the new one rejects" +
                                     (blocked ? std::string() : example(true))) +
                     "; " +
                     (forward ? "every value the new schema admits was admitted before"
                              : "the new schema admits values the old one rejects" +
                                    (blocked ? std::string() : example(false)));
  if (blocked) {
    text += "; oneOf members that may overlap: a value matching two of them is rejected";
  }
  if (olds.repeats > 0 || news.repeats > 0) text += "; a repeated member counts once";
  Add(code, s.data, news.kind >= 0 ? news.keyword_pointer : olds.keyword_pointer, backward, forward,
      std::move(text));
}

}  // namespace evident::compat

namespace evident::compat {

// A oneOf member compared with the one it continues changed from `changes_from` on. A member
// that admits more may now match a value another member matches too, which oneOf rejects (old
// data matching only the other member before: backward); one that admits less may no longer
// match a value that, before, matched it and another member (new data old readers rejected:
// forward). Unless the members are provably disjoint, that is ONE_OF_MEMBERS_MAY_OVERLAP.
Status Differ::CheckOneOfMemberChange(const Side& s, const Members& olds, const Members& news,
                                      size_t old_i, size_t new_i, size_t changes_from) {
  bool widened = false;
  bool narrowed = false;
  for (size_t k = changes_from; k < out_.size(); ++k) {
    if (out_[k].code == ChangeCode::kMeaningChanged) continue;
    // Inside `not` Add stored the flags turned around; the member's own direction is wanted.
    widened = widened || !(negated_ ? out_[k].backward : out_[k].forward);
    narrowed = narrowed || !(negated_ ? out_[k].forward : out_[k].backward);
  }
  const auto check = [&](const SchemaDocument& doc, const Members& members, size_t own,
                         bool is_new) -> Status {
    EVIDENT_ASSIGN_OR_RETURN(const Node member,
                             doc.View(members.values[own], members.pointers[own]));
    for (size_t j = 0; j < members.values.size(); ++j) {
      if (j == own) continue;
      EVIDENT_ASSIGN_OR_RETURN(const Node other, doc.View(members.values[j], members.pointers[j]));
      if (ProvablyDisjoint(doc, member, other, comparisons_)) continue;
      Add(ChangeCode::kOneOfMembersMayOverlap, s.data, members.pointers[own], !is_new, is_new,
          "oneOf member " + std::to_string(own) + " of " + DataText(s.data) +
              (is_new ? " admits more values now and may overlap member "
                      : " admits fewer values now, and before it may have overlapped member ") +
              std::to_string(j) +
              (is_new ? ": old data matching only that member may now match both, which oneOf "
                        "rejects"
                      : ": new data matching only that member may have matched both before, "
                        "which old readers reject"));
      return Status::Ok();
    }
    return Status::Ok();
  };
  if (widened) EVIDENT_RETURN_IF_ERROR(check(new_doc_, news, new_i, true));
  if (narrowed) EVIDENT_RETURN_IF_ERROR(check(old_doc_, olds, old_i, false));
  return Status::Ok();
}

}  // namespace evident::compat
