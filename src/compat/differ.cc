#include "compat/differ.h"

#include <re2/re2.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "compat/keywords.h"
#include "schema/regex.h"

namespace evident::compat {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// RE2's memory for one compiled patternProperties pattern.
constexpr size_t kPatternProgramBytesMax = size_t{1} << 20;
// Subschemas looked at to tell whether unevaluatedProperties applies to one name.
constexpr int64_t kEvaluationStepsMax = 256;

// ---- type sets ------------------------------------------------------------------------------

// Every instance type `inner` admits is admitted by `outer` (integer is a number).
bool TypesWithin(unsigned inner, unsigned outer) {
  if ((outer & kNumber) != 0) outer |= kInteger;
  return (inner & ~outer) == 0;
}

std::string TypeText(const JsonValue* type) {
  return type == nullptr ? std::string("any type") : Canonical(*type);
}

// ---- helpers --------------------------------------------------------------------------------

std::string NumberText(double value) {
  JsonValue v;
  v.kind = JsonValue::Kind::kNumber;
  v.number = value;
  return Canonical(v);
}

bool Contains(const std::set<std::string>& names, const std::string& name) {
  return names.count(name) != 0;
}

// The members of an object by name (the first one when a name repeats, as JsonValue::Get).
std::unordered_map<std::string_view, const JsonValue*> MembersByName(const JsonValue* object) {
  std::unordered_map<std::string_view, const JsonValue*> members;
  if (object == nullptr || !object->IsObject()) return members;
  members.reserve(object->object.size());
  for (const JsonMember& member : object->object) members.emplace(member.name, &member.value);
  return members;
}

const JsonValue* Lookup(const std::unordered_map<std::string_view, const JsonValue*>& members,
                        std::string_view name) {
  const auto found = members.find(name);
  return found == members.end() ? nullptr : found->second;
}

// Which keyword closes a closed object, for messages.
std::string ClosingKeyword(const Node& node) {
  const JsonValue* value = node.Keyword("additionalProperties");
  return value != nullptr && value->IsBool() && !value->boolean ? "additionalProperties"
                                                                : "unevaluatedProperties";
}

// An object admits no property beyond those it names.
bool IsClosed(const Node& node) {
  for (const char* keyword : {"additionalProperties", "unevaluatedProperties"}) {
    const JsonValue* value = node.Keyword(keyword);
    if (value != nullptr && value->IsBool() && !value->boolean) return true;
  }
  return false;
}

struct Bound {
  const char* keyword;
  bool upper;     // a maximum: a smaller value narrows
  double absent;  // the value an absent keyword stands for
  ChangeCode tighter;
  ChangeCode looser;
  unsigned applies;  // the instance types the keyword constrains
};

constexpr Bound kBounds[] = {
    {"maximum", true, kInfinity, ChangeCode::kMaximumDecreased, ChangeCode::kMaximumIncreased,
     kNumber | kInteger},
    {"exclusiveMaximum", true, kInfinity, ChangeCode::kExclusiveMaximumDecreased,
     ChangeCode::kExclusiveMaximumIncreased, kNumber | kInteger},
    {"minimum", false, -kInfinity, ChangeCode::kMinimumIncreased, ChangeCode::kMinimumDecreased,
     kNumber | kInteger},
    {"exclusiveMinimum", false, -kInfinity, ChangeCode::kExclusiveMinimumIncreased,
     ChangeCode::kExclusiveMinimumDecreased, kNumber | kInteger},
    {"maxLength", true, kInfinity, ChangeCode::kMaxLengthDecreased, ChangeCode::kMaxLengthIncreased,
     kString},
    {"minLength", false, 0, ChangeCode::kMinLengthIncreased, ChangeCode::kMinLengthDecreased,
     kString},
    {"maxItems", true, kInfinity, ChangeCode::kMaxItemsDecreased, ChangeCode::kMaxItemsIncreased,
     kArray},
    {"minItems", false, 0, ChangeCode::kMinItemsIncreased, ChangeCode::kMinItemsDecreased, kArray},
    {"maxProperties", true, kInfinity, ChangeCode::kMaxPropertiesDecreased,
     ChangeCode::kMaxPropertiesIncreased, kObject},
    {"minProperties", false, 0, ChangeCode::kMinPropertiesIncreased,
     ChangeCode::kMinPropertiesDecreased, kObject},
    {"maxContains", true, kInfinity, ChangeCode::kMaxContainsDecreased,
     ChangeCode::kMaxContainsIncreased, kArray},
    {"minContains", false, 1, ChangeCode::kMinContainsIncreased, ChangeCode::kMinContainsDecreased,
     kArray},
};

double BoundValue(const JsonValue* value, double absent) {
  // Draft 4's boolean exclusiveMaximum modifies maximum; it is compared as its own keyword.
  return value != nullptr && value->IsNumber() ? value->number : absent;
}

// The order of two bounds (-1, 0, 1), exact when both are written as integers: doubles lose
// the digits above 2^53, and 9007199254740993 must stay above 9007199254740992.
int BoundOrder(const JsonValue* a, const JsonValue* b, double a_bound, double b_bound) {
  struct Exact {
    bool negative = false;
    uint64_t magnitude = 0;
  };
  const auto exact = [](const JsonValue* v, Exact& out) {
    if (v == nullptr || !v->IsNumber()) return false;
    if (v->is_unsigned) {
      out = {false, v->unsigned_integer};
      return true;
    }
    if (!v->is_integer) return false;
    out.negative = v->integer < 0;
    out.magnitude = out.negative ? static_cast<uint64_t>(-(v->integer + 1)) + 1
                                 : static_cast<uint64_t>(v->integer);
    return true;
  };
  Exact x;
  Exact y;
  if (!exact(a, x) || !exact(b, y)) return a_bound < b_bound ? -1 : a_bound > b_bound ? 1 : 0;
  if (x.negative != y.negative) return x.negative ? -1 : 1;
  if (x.magnitude == y.magnitude) return 0;
  return (x.magnitude < y.magnitude) != x.negative ? -1 : 1;
}

std::string ListText(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ",";
    out += values[i];
  }
  return out + "]";
}

// 2020-12: without a rest schema and without in-place applicators (whose annotations would
// count), unevaluatedItems governs the positions beyond the tuple.
void UseUnevaluatedItemsAsRest(const Node& node, ArrayForm& form) {
  if (form.rest != nullptr || node.dialect != Dialect::kDraft2020 || !node.sites.empty()) return;
  if (CombinatorsOf(node) != 0) return;
  for (const char* keyword : {"if", "contains", "$dynamicRef", "$recursiveRef"}) {
    if (node.Keyword(keyword) != nullptr) return;
  }
  form.rest = node.Keyword("unevaluatedItems");
  form.rest_pointer = node.KeywordPointer("unevaluatedItems");
  form.rest_is_unevaluated = form.rest != nullptr;
}

// In 2020-12 every layer of a `$ref` chain applies, while Node::Keyword reads the outermost one:
// a constraining keyword on two layers with different values is a conjunction the comparison
// does not see (`"$ref":"#/$defs/n","required":["a"]` with `n` requiring `b`).
bool ShadowsALayer(const Node& node) {
  if (node.dialect != Dialect::kDraft2020 || node.sites.empty()) return false;
  std::unordered_map<std::string_view, const JsonValue*> seen;
  const auto layer = [&](const JsonValue* value) {
    if (!value->IsObject()) return false;
    for (const JsonMember& m : value->object) {
      const std::string_view name = m.name;
      if (name == "$ref" || name == "$defs" || name == "$id" || name == "$schema" ||
          name == "$anchor" || name == "$dynamicAnchor" || name == "$comment" || name == "title" ||
          name == "description" || name == "default" || name == "examples" ||
          name.starts_with("x-")) {
        continue;
      }
      const auto [at, inserted] = seen.emplace(name, &m.value);
      if (!inserted && Canonical(*at->second) != Canonical(m.value)) return true;
    }
    return false;
  };
  for (const JsonValue* site : node.sites) {
    if (layer(site)) return true;
  }
  return layer(node.value);
}

// Every layer of a node, canonical: two nodes with the same layers admit the same data.
std::string LayersText(const Node& node) {
  std::string out;
  for (const JsonValue* site : node.sites) out += Canonical(*site) + "\n";
  return out + Canonical(*node.value);
}

}  // namespace

ArrayForm ArrayFormOf(const Node& node) {
  ArrayForm form;
  const JsonValue* items = node.Keyword("items");
  if (items != nullptr && items->IsArray()) {
    // Draft 7 tuple (also accepted in a 2020-12 document, where it was the pre-2020 spelling).
    form.prefix = items;
    form.prefix_pointer = node.KeywordPointer("items");
    form.rest = node.Keyword("additionalItems");
    form.rest_pointer = node.KeywordPointer("additionalItems");
    UseUnevaluatedItemsAsRest(node, form);
    return form;
  }
  if (const JsonValue* prefix = node.Keyword("prefixItems");
      prefix != nullptr && prefix->IsArray()) {
    form.prefix = prefix;
    form.prefix_pointer = node.KeywordPointer("prefixItems");
  }
  form.rest = items;
  form.rest_pointer = node.KeywordPointer("items");
  UseUnevaluatedItemsAsRest(node, form);
  return form;
}

// ---- Differ ---------------------------------------------------------------------------------

void Differ::Add(ChangeCode code, const std::string& data_pointer, std::string schema_pointer,
                 bool backward, bool forward, std::string message) {
  if (Done()) return;
  if (negated_ && code != ChangeCode::kMeaningChanged) {
    std::swap(backward, forward);
    message += " (inside 'not', so the direction is reversed)";
  }
  out_.push_back(
      Change{code, data_pointer, std::move(schema_pointer), backward, forward, std::move(message)});
}

bool Differ::IsVersionMarker(const std::string& data_pointer) const {
  if (!options_.version_at.empty()) return data_pointer == options_.version_at;
  return data_pointer == "/schemaVersion" || data_pointer == "/schema_version" ||
         data_pointer == "/schemaversion";
}

Status Differ::Compare(const JsonValue* old_value, const std::string& old_pointer,
                       const JsonValue* new_value, const std::string& new_pointer,
                       const std::string& data_pointer, Slot slot, int64_t depth) {
  const bool scope_start = std::exchange(next_scope_start_, false);
  if (Done() || (old_value == nullptr && new_value == nullptr)) return Status::Ok();
  if (++comparisons_ > options_.comparisons_max) {
    return Status::LimitExceeded(
        "the diff needs more than comparisons_max=" + std::to_string(options_.comparisons_max) +
        " subschema comparisons (deep or wide anyOf/oneOf/allOf nesting); simplify the schema "
        "or raise the limit");
  }
  if (depth > options_.depth_max) {
    return Status::LimitExceeded(
        "the schemas nest deeper than depth_max=" + std::to_string(options_.depth_max) +
        " levels at " + DataText(data_pointer));
  }
  EVIDENT_ASSIGN_OR_RETURN(Node old_node, old_doc_.View(old_value, old_pointer));
  EVIDENT_ASSIGN_OR_RETURN(Node new_node, new_doc_.View(new_value, new_pointer));
  const ProgressKey key{old_node.value, new_node.value, negated_, under_not_};
  // The same pair already being compared further up, with the same polarity: a cycle through
  // `$ref`. Its differences are reported where the cycle was entered.
  if (!in_progress_.insert(key).second) return Status::Ok();
  levels_.push_back(Level{&old_node, &new_node, &data_pointer, scope_start});
  const Status status = CompareNodes(old_node, new_node, data_pointer, slot, depth);
  levels_.pop_back();
  in_progress_.erase(key);
  return status;
}

Status Differ::CompareNodes(const Node& old_node, const Node& new_node, const std::string& data,
                            Slot slot, int64_t depth) {
  if (!old_node.unresolved_ref.empty() || !new_node.unresolved_ref.empty()) {
    if (old_node.unresolved_ref != new_node.unresolved_ref) {
      Add(ChangeCode::kUnresolvedRefChanged, data, new_node.pointer, false, false,
          "the reference to another document changed from '" + old_node.unresolved_ref + "' to '" +
              new_node.unresolved_ref + "'; evident does not fetch it to compare");
    }
    return Status::Ok();
  }
  if (old_node.IsFalse() || new_node.IsFalse()) {
    CompareBoolean(old_node, new_node, data, slot);
    return Status::Ok();
  }
  // Dynamic references resolve at validation time through the dynamic scope; evident compares
  // their text only.
  for (const char* keyword : {"$dynamicRef", "$recursiveRef"}) {
    const JsonValue* old_ref = old_node.Keyword(keyword);
    const JsonValue* new_ref = new_node.Keyword(keyword);
    const std::string old_text = old_ref != nullptr ? Canonical(*old_ref) : "(none)";
    const std::string new_text = new_ref != nullptr ? Canonical(*new_ref) : "(none)";
    if (old_text == new_text) continue;
    Add(ChangeCode::kUnresolvedRefChanged, data,
        new_ref != nullptr ? new_node.KeywordPointer(keyword) : old_node.KeywordPointer(keyword),
        false, false,
        std::string(keyword) + " of " + DataText(data) + " changed from " + old_text + " to " +
            new_text + "; evident does not follow dynamic references");
  }
  if ((ShadowsALayer(old_node) || ShadowsALayer(new_node)) &&
      LayersText(old_node) != LayersText(new_node)) {
    Add(ChangeCode::kUnresolvedRefChanged, data, new_node.pointer, false, false,
        "keywords beside a $ref at " + DataText(data) +
            " repeat keywords of the schema it refers to with other values; all of them apply, "
            "and evident compares such layers only for being unchanged");
  }
  // Keywords of a type neither side admits constrain nothing (maxLength beside "type":"null").
  const unsigned types = TypeSet(old_node.Keyword("type")) | TypeSet(new_node.Keyword("type"));
  const Side s{old_node, new_node, data, depth, WithIntegers(types)};
  const size_t own_from = out_.size();
  CompareMeaning(s);
  CompareTypes(s);
  CompareValues(s);
  CompareBounds(s);
  CompareStrings(s);
  EVIDENT_RETURN_IF_ERROR(CompareObjects(s));
  EVIDENT_RETURN_IF_ERROR(CompareArrays(s));
  return CompareComposition(s, own_from);
}

void Differ::CompareBoolean(const Node& old_node, const Node& new_node, const std::string& data,
                            Slot slot) {
  if (old_node.IsFalse() && new_node.IsFalse()) return;
  const bool narrowed = new_node.IsFalse();
  ChangeCode code = narrowed ? ChangeCode::kTypeNarrowed : ChangeCode::kTypeWidened;
  std::string what = DataText(data);
  if (slot == Slot::kAdditionalProperties) {
    code = narrowed ? ChangeCode::kAdditionalPropertiesNarrowed
                    : ChangeCode::kAdditionalPropertiesWidened;
    what = "a property beyond the declared ones at " + DataText(data);
  } else if (slot == Slot::kItems) {
    code = ChangeCode::kItemsChanged;
    what = "an array item at " + DataText(data);
  }
  Add(code, data, narrowed ? new_node.pointer : old_node.pointer, !narrowed, narrowed,
      narrowed ? what + " is no longer allowed (schema false)"
               : what + " was not allowed (schema false) and now is");
}

void Differ::CompareMeaning(const Side& s) {
  for (const char* keyword : {"x-unit", "x-currency", "x-rounding", "x-meaning"}) {
    const JsonValue* old_value = s.old_node.Keyword(keyword);
    const JsonValue* new_value = s.new_node.Keyword(keyword);
    if (old_value == nullptr && new_value == nullptr) continue;
    const std::string old_text = old_value == nullptr ? "(none)" : Canonical(*old_value);
    const std::string new_text = new_value == nullptr ? "(none)" : Canonical(*new_value);
    if (old_text == new_text) continue;
    Add(ChangeCode::kMeaningChanged, s.data,
        new_value != nullptr ? s.new_node.KeywordPointer(keyword)
                             : s.old_node.KeywordPointer(keyword),
        false, false,
        std::string(keyword) + " of " + DataText(s.data) + " changed from " + old_text + " to " +
            new_text +
            ": the same JSON now means something else; publish a new contract "
            "version or an adapter, never reinterpret silently");
  }
}

void Differ::CompareTypes(const Side& s) {
  const JsonValue* old_type = s.old_node.Keyword("type");
  const JsonValue* new_type = s.new_node.Keyword("type");
  const unsigned old_set = TypeSet(old_type);
  const unsigned new_set = TypeSet(new_type);
  const bool widened = TypesWithin(old_set, new_set);
  const bool narrowed = TypesWithin(new_set, old_set);
  if (widened && narrowed) return;
  const std::string text = "type of " + DataText(s.data) + " changed from " + TypeText(old_type) +
                           " to " + TypeText(new_type);
  const std::string where =
      new_type != nullptr ? s.new_node.KeywordPointer("type") : s.old_node.KeywordPointer("type");
  if (widened) {
    Add(ChangeCode::kTypeWidened, s.data, where, true, false,
        text + ": old readers do not expect the new types");
  } else if (narrowed) {
    Add(ChangeCode::kTypeNarrowed, s.data, where, false, true,
        text + ": data written under the old schema may have a type the new one rejects");
  } else {
    Add(ChangeCode::kTypeChanged, s.data, where, false, false, text);
  }
}

void Differ::CompareValues(const Side& s) {
  const JsonValue* old_const = s.old_node.Keyword("const");
  const JsonValue* new_const = s.new_node.Keyword("const");
  const bool old_enum = s.old_node.Keyword("enum") != nullptr;
  const bool new_enum = s.new_node.Keyword("enum") != nullptr;
  const std::string const_at = new_const != nullptr ? s.new_node.KeywordPointer("const")
                                                    : s.old_node.KeywordPointer("const");
  if (old_const != nullptr && new_const != nullptr) {
    const std::string old_text = Canonical(*old_const);
    const std::string new_text = Canonical(*new_const);
    if (old_text == new_text) return;
    if (IsVersionMarker(s.data) && old_const->IsNumber() && new_const->IsNumber()) {
      Add(ChangeCode::kVersionMarkerChanged, s.data, const_at, true, true,
          "the version marker " + s.data + " changed from " + old_text + " to " + new_text +
              "; a consumer picks the schema by it, so it differs between versions by design");
      return;
    }
    Add(ChangeCode::kConstChanged, s.data, const_at, false, false,
        "const of " + DataText(s.data) + " changed from " + old_text + " to " + new_text);
    return;
  }
  if (new_const != nullptr && old_const == nullptr && !old_enum) {
    Add(ChangeCode::kConstAdded, s.data, const_at, false, true,
        DataText(s.data) + " must now equal " + Canonical(*new_const));
    return;
  }
  if (old_const != nullptr && new_const == nullptr && !new_enum) {
    Add(ChangeCode::kConstRemoved, s.data, const_at, true, false,
        DataText(s.data) + " no longer has to equal " + Canonical(*old_const));
    return;
  }
  const ValueSet old_values = ValuesOf(s.old_node);
  const ValueSet new_values = ValuesOf(s.new_node);
  if (old_values.universal && new_values.universal) return;
  const std::string where = new_enum ? s.new_node.KeywordPointer("enum")
                            : new_const != nullptr
                                ? const_at
                                : s.old_node.KeywordPointer(old_enum ? "enum" : "const");
  if (old_values.universal) {
    Add(ChangeCode::kEnumNarrowed, s.data, where, false, true,
        DataText(s.data) + " is now limited to " + ListText(new_values.values));
    return;
  }
  if (new_values.universal) {
    Add(ChangeCode::kEnumWidened, s.data, where, true, false,
        DataText(s.data) + " is no longer limited to " + ListText(old_values.values));
    return;
  }
  if (old_values.values == new_values.values) return;
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::set_difference(new_values.values.begin(), new_values.values.end(), old_values.values.begin(),
                      old_values.values.end(), std::back_inserter(added));
  std::set_difference(old_values.values.begin(), old_values.values.end(), new_values.values.begin(),
                      new_values.values.end(), std::back_inserter(removed));
  std::string text = "allowed values of " + DataText(s.data) + ":";
  if (!added.empty()) text += " added " + ListText(added);
  if (!removed.empty()) text += " removed " + ListText(removed);
  if (removed.empty()) {
    Add(ChangeCode::kEnumWidened, s.data, where, true, false,
        text + "; old readers do not know the new values");
  } else if (added.empty()) {
    Add(ChangeCode::kEnumNarrowed, s.data, where, false, true,
        text + "; data written under the old schema may hold a removed value");
  } else {
    Add(ChangeCode::kEnumChanged, s.data, where, false, false, text);
  }
}

void Differ::CompareBounds(const Side& s) {
  for (const Bound& bound : kBounds) {
    if ((s.types & bound.applies) == 0) continue;
    const JsonValue* old_value = s.old_node.Keyword(bound.keyword);
    const JsonValue* new_value = s.new_node.Keyword(bound.keyword);
    const double old_bound = BoundValue(old_value, bound.absent);
    const double new_bound = BoundValue(new_value, bound.absent);
    const int order = BoundOrder(old_value, new_value, old_bound, new_bound);  // old vs new
    if (order == 0) continue;
    const bool tighter = bound.upper ? order > 0 : order < 0;
    const auto text = [](const JsonValue* value, double bound_value) {
      if (std::isinf(bound_value)) return std::string("(none)");
      return value != nullptr && value->IsNumber() ? Canonical(*value) : NumberText(bound_value);
    };
    const std::string old_text = text(old_value, old_bound);
    const std::string new_text = text(new_value, new_bound);
    Add(tighter ? bound.tighter : bound.looser, s.data,
        new_value != nullptr ? s.new_node.KeywordPointer(bound.keyword)
                             : s.old_node.KeywordPointer(bound.keyword),
        !tighter, tighter,
        std::string(bound.keyword) + " of " + DataText(s.data) + " changed from " + old_text +
            " to " + new_text);
  }
  if ((s.types & (kNumber | kInteger)) == 0) return;
  const JsonValue* old_multiple = s.old_node.Keyword("multipleOf");
  const JsonValue* new_multiple = s.new_node.Keyword("multipleOf");
  const double old_step =
      old_multiple != nullptr && old_multiple->IsNumber() ? old_multiple->number : 0;
  const double new_step =
      new_multiple != nullptr && new_multiple->IsNumber() ? new_multiple->number : 0;
  if (old_step == new_step) return;
  // Every multiple of a multiple of k is a multiple of k: new = n * old narrows.
  const auto divides = [](double step, double value) {
    if (step == 0) return value == 0;
    if (value == 0) return false;
    const double ratio = value / step;
    return std::fabs(ratio - std::round(ratio)) < 1e-9;
  };
  const bool narrowed = old_step == 0 || divides(old_step, new_step);
  const bool widened = new_step == 0 || divides(new_step, old_step);
  Add(ChangeCode::kMultipleOfChanged, s.data,
      new_multiple != nullptr ? s.new_node.KeywordPointer("multipleOf")
                              : s.old_node.KeywordPointer("multipleOf"),
      widened && !narrowed, narrowed && !widened,
      "multipleOf of " + DataText(s.data) + " changed from " +
          (old_step == 0 ? std::string("(none)") : NumberText(old_step)) + " to " +
          (new_step == 0 ? std::string("(none)") : NumberText(new_step)));
}

void Differ::CompareStrings(const Side& s) {
  struct Keyword {
    const char* name;
    ChangeCode added, removed, changed;
  };
  for (const Keyword& k : {Keyword{"pattern", ChangeCode::kPatternAdded,
                                   ChangeCode::kPatternRemoved, ChangeCode::kPatternChanged},
                           Keyword{"format", ChangeCode::kFormatAdded, ChangeCode::kFormatRemoved,
                                   ChangeCode::kFormatChanged}}) {
    if ((s.types & kString) == 0) break;  // every format evident knows is a string format
    const JsonValue* old_value = s.old_node.Keyword(k.name);
    const JsonValue* new_value = s.new_node.Keyword(k.name);
    if (old_value == nullptr && new_value == nullptr) continue;
    if (old_value == nullptr) {
      Add(k.added, s.data, s.new_node.KeywordPointer(k.name), false, true,
          std::string(k.name) + " " + Canonical(*new_value) + " added to " + DataText(s.data));
    } else if (new_value == nullptr) {
      Add(k.removed, s.data, s.old_node.KeywordPointer(k.name), true, false,
          std::string(k.name) + " " + Canonical(*old_value) + " removed from " + DataText(s.data));
    } else if (Canonical(*old_value) != Canonical(*new_value)) {
      // Whether one regular expression (or format) admits a subset of another is not decided.
      Add(k.changed, s.data, s.new_node.KeywordPointer(k.name), false, false,
          std::string(k.name) + " of " + DataText(s.data) + " changed from " +
              Canonical(*old_value) + " to " + Canonical(*new_value));
    }
  }
  if ((s.types & kArray) == 0) return;
  const auto unique = [](const Node& node) {
    const JsonValue* value = node.Keyword("uniqueItems");
    return value != nullptr && value->IsBool() && value->boolean;
  };
  if (unique(s.old_node) != unique(s.new_node)) {
    const bool added = unique(s.new_node);
    Add(added ? ChangeCode::kUniqueItemsAdded : ChangeCode::kUniqueItemsRemoved, s.data,
        added ? s.new_node.KeywordPointer("uniqueItems") : s.old_node.KeywordPointer("uniqueItems"),
        !added, added,
        std::string("uniqueItems ") + (added ? "added to " : "removed from ") + DataText(s.data));
  }
}

Status Differ::CompareObjects(const Side& s) {
  if ((s.types & kObject) == 0) return Status::Ok();
  EVIDENT_RETURN_IF_ERROR(CompareProperties(s));
  // unevaluatedProperties beside additionalProperties applies to no name (every name is
  // evaluated); with both sides so, it is not compared.
  const bool both_moot = s.old_node.Keyword("additionalProperties") != nullptr &&
                         s.new_node.Keyword("additionalProperties") != nullptr;
  for (const char* keyword : {"additionalProperties", "unevaluatedProperties"}) {
    if (both_moot && std::string_view(keyword) == "unevaluatedProperties") continue;
    EVIDENT_RETURN_IF_ERROR(Compare(s.old_node.Keyword(keyword), s.old_node.KeywordPointer(keyword),
                                    s.new_node.Keyword(keyword), s.new_node.KeywordPointer(keyword),
                                    AppendToken(s.data, "*"), Slot::kAdditionalProperties,
                                    s.depth + 1));
  }
  EVIDENT_RETURN_IF_ERROR(ComparePatternProperties(s));
  next_scope_start_ = true;  // it constrains the names, not the value
  EVIDENT_RETURN_IF_ERROR(
      Compare(s.old_node.Keyword("propertyNames"), s.old_node.KeywordPointer("propertyNames"),
              s.new_node.Keyword("propertyNames"), s.new_node.KeywordPointer("propertyNames"),
              s.data, Slot::kGeneral, s.depth + 1));
  return CompareDependencies(s);
}

// patternProperties: the same pattern is compared; an added one constrains more names.
Status Differ::ComparePatternProperties(const Side& s) {
  const JsonValue* old_patterns = s.old_node.Keyword("patternProperties");
  const JsonValue* new_patterns = s.new_node.Keyword("patternProperties");
  if (old_patterns == nullptr && new_patterns == nullptr) return Status::Ok();
  static const JsonValue kEmpty = [] {
    JsonValue v;
    v.kind = JsonValue::Kind::kObject;
    return v;
  }();
  const JsonValue& olds =
      old_patterns != nullptr && old_patterns->IsObject() ? *old_patterns : kEmpty;
  const JsonValue& news =
      new_patterns != nullptr && new_patterns->IsObject() ? *new_patterns : kEmpty;
  const auto old_by_pattern = MembersByName(&olds);
  const auto new_by_pattern = MembersByName(&news);
  for (const auto& [pattern, schema] : news.object) {
    const std::string new_at = AppendToken(s.new_node.KeywordPointer("patternProperties"), pattern);
    if (const JsonValue* old_schema = Lookup(old_by_pattern, pattern)) {
      EVIDENT_RETURN_IF_ERROR(
          Compare(old_schema, AppendToken(s.old_node.KeywordPointer("patternProperties"), pattern),
                  &schema, new_at, AppendToken(s.data, "*"), Slot::kGeneral, s.depth + 1));
      continue;
    }
    EVIDENT_ASSIGN_OR_RETURN(const Verdict v, JudgePattern(s, pattern, &schema, new_at, true));
    Add(ChangeCode::kPatternPropertyAdded, s.data, new_at, v.backward, v.forward,
        "properties of " + DataText(s.data) + " matching " + Quote(pattern) +
            " are now constrained");
  }
  for (const auto& [pattern, schema] : olds.object) {
    if (Lookup(new_by_pattern, pattern) != nullptr) continue;
    const std::string old_at = AppendToken(s.old_node.KeywordPointer("patternProperties"), pattern);
    EVIDENT_ASSIGN_OR_RETURN(const Verdict v, JudgePattern(s, pattern, &schema, old_at, false));
    Add(ChangeCode::kPatternPropertyRemoved, s.data, old_at, v.backward, v.forward,
        "properties of " + DataText(s.data) + " matching " + Quote(pattern) +
            " are no longer constrained");
  }
  return Status::Ok();
}

// A pattern only one side has (`added`: the new one): its schema now constrains, or no longer
// constrains, the names matching it. Judged by what the other side admitted under such names
// that it does not declare (nothing when closed, anything when open, else its
// additionalProperties schema) and, for the names the other side declares that match, by
// their declarations. Other patterns, or unevaluatedProperties, on the other side: names may
// fall under both, which evident does not decide (backward no for an added pattern, forward no
// for a removed one).
// Whether the names `other` matches reach past what a pattern's judgement looks into: patterns
// of its own, applicators, layers, conditionals, dynamic references, unevaluatedProperties.
static bool NamesOutOfReach(const Node& other) {
  const JsonValue* patterns = other.Keyword("patternProperties");
  if (patterns != nullptr && patterns->IsObject() && !patterns->object.empty()) return true;
  if (CombinatorsOf(other) != 0 || !other.sites.empty()) return true;
  for (const char* keyword :
       {"if", "dependentSchemas", "$dynamicRef", "$recursiveRef", "unevaluatedProperties"}) {
    if (other.Keyword(keyword) != nullptr) return true;
  }
  return false;
}

Result<Differ::Verdict> Differ::JudgePattern(const Side& s, const std::string& pattern,
                                             const JsonValue* schema, const std::string& at,
                                             bool added) {
  const Node& other = added ? s.old_node : s.new_node;
  const re2::RE2* regex = RegexOf(pattern);
  const JsonValue* rest = other.Keyword("additionalProperties");
  // Names the other side declares in the levels around this one (an allOf member's parent) are
  // not looked into here either.
  const bool nested = levels_.size() >= 2 && *levels_[levels_.size() - 2].data == s.data;
  if (regex == nullptr || nested || NamesOutOfReach(other)) {
    return Verdict{.backward = !added, .forward = added};
  }
  const std::string data = AppendToken(s.data, "*");
  const bool lenient = options_.strictness == Strictness::kLenient && !negated_ && !under_not_;
  Verdict v;
  // The names neither side declares: the other side's rest against the pattern's schema.
  if (rest != nullptr && rest->IsBool() && !rest->boolean) {
    v.backward = added;  // closed: old data holds none (added); new data holds none (removed)
    v.forward = !added;
  } else if (rest == nullptr || rest->IsBool()) {
    EVIDENT_ASSIGN_OR_RETURN(const Verdict p,
                             added ? Probe(nullptr, "", schema, at, data, s.depth + 1)
                                   : Probe(schema, at, nullptr, "", data, s.depth + 1));
    v.backward = added ? lenient || p.backward : true;
    v.forward = added ? true : lenient || p.forward;
  } else {
    const std::string rest_at = other.KeywordPointer("additionalProperties");
    EVIDENT_ASSIGN_OR_RETURN(v, added ? Probe(rest, rest_at, schema, at, data, s.depth + 1)
                                      : Probe(schema, at, rest, rest_at, data, s.depth + 1));
    AddMeaning(std::move(v.meaning));
    v.why_not_backward.clear();
    v.why_not_forward.clear();
  }
  // The names the other side requires without declaring them: any value.
  const JsonValue* properties = other.Keyword("properties");
  const JsonValue* required = other.Keyword("required");
  if (required != nullptr && required->IsArray()) {
    for (const JsonValue& name : required->array) {
      if (!name.IsString() || !schema::internal::RegexSearch(*regex, name.string)) continue;
      if (properties != nullptr && properties->IsObject() &&
          properties->Get(name.string) != nullptr) {
        continue;  // declared: below
      }
      EVIDENT_ASSIGN_OR_RETURN(const Verdict p,
                               added ? Probe(nullptr, "", schema, at, data, s.depth + 1)
                                     : Probe(schema, at, nullptr, "", data, s.depth + 1));
      if (added) v.backward = v.backward && p.backward;
      if (!added) v.forward = v.forward && p.forward;
    }
  }
  // The names the other side declares that match: their declarations against the schema.
  if (properties == nullptr || !properties->IsObject()) return v;
  const std::string properties_at = other.KeywordPointer("properties");
  for (const JsonMember& member : properties->object) {
    if (!schema::internal::RegexSearch(*regex, member.name)) continue;
    const std::string member_at = AppendToken(properties_at, member.name);
    const std::string member_data = AppendToken(s.data, member.name);
    EVIDENT_ASSIGN_OR_RETURN(
        const Verdict p,
        added ? Probe(&member.value, member_at, schema, at, member_data, s.depth + 1)
              : Probe(schema, at, &member.value, member_at, member_data, s.depth + 1));
    if (added) v.backward = v.backward && p.backward;
    if (!added) v.forward = v.forward && p.forward;
  }
  return v;
}

// Dependencies: dependentRequired / dependentSchemas (2020-12), dependencies (draft 7), per
// member name. A list of names that grows requires more (narrows); one that shrinks widens; a
// schema on both sides is compared as a schema (it applies to the whole object).
Status Differ::CompareDependencies(const Side& s) {
  for (const char* keyword : {"dependentRequired", "dependentSchemas", "dependencies"}) {
    const JsonValue* olds = s.old_node.Keyword(keyword);
    const JsonValue* news = s.new_node.Keyword(keyword);
    if (olds == nullptr && news == nullptr) continue;
    std::map<std::string, std::pair<const JsonValue*, const JsonValue*>> by_name;  // old, new
    if (olds != nullptr && olds->IsObject()) {
      for (const auto& [name, v] : olds->object) by_name[name].first = &v;
    }
    if (news != nullptr && news->IsObject()) {
      for (const auto& [name, v] : news->object) by_name[name].second = &v;
    }
    for (const auto& [name, values] : by_name) {
      const auto& [old_value, new_value] = values;
      const std::string where = AppendToken(
          news != nullptr ? s.new_node.KeywordPointer(keyword) : s.old_node.KeywordPointer(keyword),
          name);
      const std::string what = std::string(keyword) + " for " + Quote(name);
      if (old_value == nullptr) {
        Add(ChangeCode::kDependencyAdded, s.data, where, false, true,
            what + " added to " + DataText(s.data));
        continue;
      }
      if (new_value == nullptr) {
        Add(ChangeCode::kDependencyRemoved, s.data, where, true, false,
            what + " removed from " + DataText(s.data));
        continue;
      }
      const std::string old_text = Canonical(*old_value);
      const std::string new_text = Canonical(*new_value);
      if (old_text == new_text) continue;
      if (!old_value->IsArray() && !new_value->IsArray()) {
        EVIDENT_RETURN_IF_ERROR(Compare(old_value,
                                        AppendToken(s.old_node.KeywordPointer(keyword), name),
                                        new_value, where, s.data, Slot::kGeneral, s.depth + 1));
        continue;
      }
      const std::set<std::string> old_names = RequiredNames(old_value);
      const std::set<std::string> new_names = RequiredNames(new_value);
      const bool both_lists = old_value->IsArray() && new_value->IsArray();
      const bool grew = both_lists && std::includes(new_names.begin(), new_names.end(),
                                                    old_names.begin(), old_names.end());
      const bool shrank = both_lists && std::includes(old_names.begin(), old_names.end(),
                                                      new_names.begin(), new_names.end());
      Add(ChangeCode::kDependencyChanged, s.data, where, shrank && !grew, grew && !shrank,
          what + " of " + DataText(s.data) + " changed from " + old_text + " to " + new_text +
              (grew ? ": more properties are required with it" : "") +
              (shrank ? ": fewer properties are required with it" : ""));
    }
  }
  return Status::Ok();
}

// The `properties` and `required` keywords of both sides of one object comparison, and what
// CompareProperties found on the way. Sets and maps: see RequiredNames.
struct Differ::PropertyDiff {
  struct Entry {
    std::string name;
    const JsonValue* schema;
    size_t position;  // in its side's `properties`
  };

  explicit PropertyDiff(const Side& s)
      : old_properties(ObjectOrNull(s.old_node.Keyword("properties"))),
        new_properties(ObjectOrNull(s.new_node.Keyword("properties"))),
        old_required(RequiredNames(s.old_node.Keyword("required"))),
        new_required(RequiredNames(s.new_node.Keyword("required"))),
        old_by_name(MembersByName(old_properties)),
        new_by_name(MembersByName(new_properties)),
        old_closed(IsClosed(s.old_node)),
        new_closed(IsClosed(s.new_node)),
        old_at(s.old_node.KeywordPointer("properties")),
        new_at(s.new_node.KeywordPointer("properties")) {}

  static const JsonValue* ObjectOrNull(const JsonValue* value) {
    return value != nullptr && value->IsObject() ? value : nullptr;
  }

  const JsonValue* old_properties;  // null when absent or not an object
  const JsonValue* new_properties;
  const std::set<std::string> old_required, new_required;
  const std::unordered_map<std::string_view, const JsonValue*> old_by_name, new_by_name;
  const bool old_closed, new_closed;  // additionalProperties or unevaluatedProperties false
  const std::string old_at, new_at;   // the pointers of the two `properties` keywords
  std::vector<Entry> added;           // only in the new `properties`, in its order
  std::vector<Entry> removed;         // only in the old `properties`, in its order
  std::vector<bool> added_used;       // added[j] was reported as half of a likely rename
  std::vector<Entry> removed_left;    // removed and not half of a likely rename
};

namespace {

// What decides whether a removed and an added property look like one renamed: its type, or
// the whole schema when it names none. Empty when the schema cannot be read.
std::string TypeSignature(const SchemaDocument& doc, const std::string& name,
                          const JsonValue* schema, const std::string& properties_at) {
  Result<Node> node = doc.View(schema, AppendToken(properties_at, name));
  if (!node.ok() || !node->unresolved_ref.empty()) return {};
  const JsonValue* type = node->Keyword("type");
  return type != nullptr ? "type:" + Canonical(*type) : "schema:" + Canonical(*node->value);
}

}  // namespace

Status Differ::CompareProperties(const Side& s) {
  PropertyDiff p(s);
  EVIDENT_RETURN_IF_ERROR(CompareCommonProperties(s, p));
  ReportLikelyRenames(s, p);
  EVIDENT_RETURN_IF_ERROR(ReportAddedProperties(s, p));
  EVIDENT_RETURN_IF_ERROR(ReportRemovedProperties(s, p));
  return CompareRequiredness(s, p);
}

// Compares the properties both sides define; lists those only one side defines.
Status Differ::CompareCommonProperties(const Side& s, PropertyDiff& p) {
  if (p.new_properties != nullptr) {
    for (size_t i = 0; i < p.new_properties->object.size(); ++i) {
      const auto& [name, schema] = p.new_properties->object[i];
      const JsonValue* old_schema = Lookup(p.old_by_name, name);
      if (old_schema == nullptr) {
        p.added.push_back({name, &schema, i});
        continue;
      }
      EVIDENT_RETURN_IF_ERROR(Compare(old_schema, AppendToken(p.old_at, name), &schema,
                                      AppendToken(p.new_at, name), AppendToken(s.data, name),
                                      Slot::kGeneral, s.depth + 1));
    }
  }
  if (p.old_properties != nullptr) {
    for (size_t i = 0; i < p.old_properties->object.size(); ++i) {
      const auto& [name, schema] = p.old_properties->object[i];
      if (Lookup(p.new_by_name, name) == nullptr) {
        p.removed.push_back({name, &schema, i});
      }
    }
  }
  return Status::Ok();
}

// A removed property and an added one with the same type, at the same position (or the only
// such pair), is most likely a rename: the JSON still validates, the contract does not hold.
// Fills p.added_used and p.removed_left.
void Differ::ReportLikelyRenames(const Side& s, PropertyDiff& p) {
  // Buckets of unused added properties by type signature, and by (signature, position).
  p.added_used.assign(p.added.size(), false);
  std::map<std::string, std::set<size_t>> unused_by_signature;
  std::map<std::pair<std::string, size_t>, size_t> by_signature_position;
  for (size_t j = 0; j < p.added.size(); ++j) {
    std::string signature = TypeSignature(new_doc_, p.added[j].name, p.added[j].schema, p.new_at);
    unused_by_signature[signature].insert(j);
    by_signature_position.emplace(std::make_pair(std::move(signature), p.added[j].position), j);
  }
  for (const PropertyDiff::Entry& gone : p.removed) {
    const std::string signature = TypeSignature(old_doc_, gone.name, gone.schema, p.old_at);
    std::set<size_t>& candidates = unused_by_signature[signature];
    size_t chosen = p.added.size();
    const auto same_position = by_signature_position.find({signature, gone.position});
    if (same_position != by_signature_position.end() &&
        candidates.count(same_position->second) != 0) {
      chosen = same_position->second;
    } else if (candidates.size() == 1) {
      chosen = *candidates.begin();
    }
    if (chosen == p.added.size()) {
      p.removed_left.push_back(gone);
      continue;
    }
    assert(chosen < p.added.size() && !p.added_used[chosen]);  // candidates hold unused ones
    candidates.erase(chosen);
    p.added_used[chosen] = true;
    const PropertyDiff::Entry& replacement = p.added[chosen];
    Add(ChangeCode::kLikelyRename, AppendToken(s.data, gone.name),
        AppendToken(p.new_at, replacement.name), false, false,
        Quote(gone.name) + " was removed and " + Quote(replacement.name) +
            " added with the same type" +
            (replacement.position == gone.position ? " at the same position" : "") +
            ": likely a rename of " + AppendToken(s.data, gone.name) + " to " +
            AppendToken(s.data, replacement.name) +
            "; a rename changes the contract: publish a new contract version or an adapter");
    // An adapter step names one member: no suggestion under an array's items or additional
    // properties ("*"), and none when Add stopped before adding this change.
    const std::string gone_at = AppendToken(s.data, gone.name);
    if (!out_.empty() && out_.back().code == ChangeCode::kLikelyRename &&
        out_.back().pointer == gone_at && gone_at.find("/*") == std::string::npos) {
      out_.back().suggestion =
          "adapter step (new version to old): - move: {from: " +
          AppendToken(s.data, replacement.name) + ", to: " + AppendToken(s.data, gone.name) +
          ", required: " + (p.new_required.count(replacement.name) != 0 ? "true" : "false") + "}";
    }
  }
  assert(p.removed_left.size() +
             static_cast<size_t>(std::count(p.added_used.begin(), p.added_used.end(), true)) ==
         p.removed.size());  // each removed property is a rename or left, never both
}

// `pattern` compiled once per diff, or null when RE2 cannot evaluate it.
const re2::RE2* Differ::RegexOf(const std::string& pattern) {
  auto [found, inserted] = regexes_->try_emplace(pattern);
  if (inserted) {
    Result<std::shared_ptr<const re2::RE2>> compiled =
        schema::internal::CompileEcmaRegex(pattern, kPatternProgramBytesMax);
    if (compiled.ok()) found->second = std::move(*compiled);
  }
  return found->second.get();
}

// What `node`'s content model says of a property `name` it does not declare: open (any value),
// closed (none), or partially open (the schemas of the matching patternProperties, else the
// additionalProperties or unevaluatedProperties schema).
Result<Differ::Coverage> Differ::CoverageOf(const SchemaDocument& doc, const Node& node,
                                            const std::string& name) {
  Coverage c;
  const JsonValue* patterns = node.Keyword("patternProperties");
  if (patterns != nullptr && patterns->IsObject()) {
    const std::string at = node.KeywordPointer("patternProperties");
    for (const JsonMember& pattern : patterns->object) {
      if (++comparisons_ > options_.comparisons_max) {
        return Status::LimitExceeded(
            "matching property names against patternProperties needs "
            "more than comparisons_max=" +
            std::to_string(options_.comparisons_max) + " steps");
      }
      const re2::RE2* regex = RegexOf(pattern.name);
      if (regex == nullptr) {
        c.kind = Coverage::Kind::kUnknown;
        c.text = "the pattern " + Quote(pattern.name) + " (which evident cannot evaluate)";
        return c;
      }
      if (!schema::internal::RegexSearch(*regex, name)) continue;
      c.kind = Coverage::Kind::kPartial;
      c.schemas.push_back(&pattern.value);
      c.pointers.push_back(AppendToken(at, pattern.name));
      c.text += (c.text.empty() ? "the pattern " : " and the pattern ") + Quote(pattern.name);
    }
    if (c.kind == Coverage::Kind::kPartial) return c;
  }
  for (const char* keyword : {"additionalProperties", "unevaluatedProperties"}) {
    const JsonValue* rest = node.Keyword(keyword);
    if (rest == nullptr) continue;
    if (std::string_view(keyword) == "unevaluatedProperties") {
      if (node.dialect == Dialect::kDraft7) break;  // not a draft 7 keyword: the model is open
      // Beside in-place applicators it applies to the names none of them evaluates; which
      // those are can depend on the value (an anyOf member declaring the name).
      int64_t steps_left = kEvaluationStepsMax;
      const Evaluation evaluation = EvaluationOf(doc, node, name, 0, steps_left);
      if (evaluation == Evaluation::kAlways) break;  // another level declares it: see ContextOf
      if (evaluation == Evaluation::kSometimes) {
        c.kind = Coverage::Kind::kUnknown;
        c.text = "unevaluatedProperties beside an applicator that may or may not evaluate " +
                 Quote(name);
        return c;
      }
    }
    if (rest->IsBool()) {
      c.kind = rest->boolean ? Coverage::Kind::kOpen : Coverage::Kind::kClosed;
      return c;
    }
    c.kind = Coverage::Kind::kPartial;
    c.schemas.push_back(rest);
    c.pointers.push_back(node.KeywordPointer(keyword));
    c.text = std::string("the ") + keyword + " schema";
    return c;
  }
  return c;  // open
}

// Whether the old side's coverage of a name admits no more (`backward`) and no less
// (`forward`) than `schema` at `pointer` of the new side: every matching schema applies, so
// the old values are within the new schema when one of them is, and the new values within
// the old ones when they are within each.
Result<Differ::Verdict> Differ::JudgeCoverage(const Coverage& c, bool old_is_coverage,
                                              const JsonValue* schema, const std::string& pointer,
                                              const std::string& data, int64_t depth) {
  Verdict verdict{.backward = false, .forward = true};
  for (size_t k = 0; k < c.schemas.size(); ++k) {
    EVIDENT_ASSIGN_OR_RETURN(
        Verdict v, old_is_coverage
                       ? Probe(c.schemas[k], c.pointers[k], schema, pointer, data, depth)
                       : Probe(schema, pointer, c.schemas[k], c.pointers[k], data, depth));
    for (Change& change : v.meaning) verdict.meaning.push_back(std::move(change));
    // coverage ⊆ schema: one of the schemas suffices; schema ⊆ coverage: all are needed.
    const bool coverage_within = old_is_coverage ? v.backward : v.forward;
    const bool schema_within = old_is_coverage ? v.forward : v.backward;
    verdict.backward = verdict.backward || coverage_within;
    verdict.forward = verdict.forward && schema_within;
  }
  if (!old_is_coverage) std::swap(verdict.backward, verdict.forward);
  return verdict;
}

// JudgeCoverage for a partially open model, its changes of meaning reported; a model whose
// coverage cannot be read is neither backward nor forward compatible.
Result<Differ::Verdict> Differ::JudgeCovered(const Coverage& c, bool old_is_coverage,
                                             const JsonValue* schema, const std::string& pointer,
                                             const std::string& data, int64_t depth) {
  if (c.kind != Coverage::Kind::kPartial) return Verdict{.backward = false, .forward = false};
  EVIDENT_ASSIGN_OR_RETURN(Verdict v,
                           JudgeCoverage(c, old_is_coverage, schema, pointer, data, depth));
  AddMeaning(std::move(v.meaning));
  return v;
}

// Changes of meaning a probe found: reported as they are, whatever the verdict.
void Differ::AddMeaning(std::vector<Change> meaning) {
  for (Change& change : meaning) {
    Add(ChangeCode::kMeaningChanged, change.pointer, std::move(change.schema_pointer), false, false,
        std::move(change.message));
  }
}

// Added properties that are not half of a rename: breaking as the old content model says, or,
// when another level at this data position declares, covers or forbids the name, as that
// level says (ReportAddedInContext).
Status Differ::ReportAddedProperties(const Side& s, const PropertyDiff& p) {
  assert(p.added_used.size() == p.added.size());  // ReportLikelyRenames ran
  // Inside `not` the lenient assumption (old data lacks an undeclared property) would hold of
  // the negated schema, i.e. of data that the whole rejects: not assumed there.
  const bool lenient = options_.strictness == Strictness::kLenient && !negated_ && !under_not_;
  for (size_t j = 0; j < p.added.size(); ++j) {
    if (p.added_used[j]) continue;
    const PropertyDiff::Entry& e = p.added[j];
    const std::string data = AppendToken(s.data, e.name);
    const std::string where = AppendToken(p.new_at, e.name);
    const bool required = Contains(p.new_required, e.name);
    EVIDENT_ASSIGN_OR_RETURN(const Coverage c, CoverageOf(old_doc_, s.old_node, e.name));
    if (c.kind == Coverage::Kind::kPartial || c.kind == Coverage::Kind::kUnknown) {
      EVIDENT_ASSIGN_OR_RETURN(const Verdict v,
                               JudgeCovered(c, true, e.schema, where, data, s.depth + 1));
      Add(required ? ChangeCode::kRequiredPropertyAdded
                   : ChangeCode::kPropertyAddedToPartiallyOpenContentModel,
          data, where, v.backward && !required, v.forward,
          std::string(required ? "required" : "optional") + " property " + Quote(e.name) +
              " added to " + DataText(s.data) + ", where the old schema admitted it under " +
              c.text + ": " +
              (v.backward ? "every old value is valid under the new property's schema"
               : required ? "data written under the old schema may lack it"
                          : "old values under that name may violate its new schema") +
              (v.forward ? "" : "; the new schema admits values the old one rejected"));
      continue;
    }
    const bool closed = c.kind == Coverage::Kind::kClosed;
    if (!closed) {
      EVIDENT_ASSIGN_OR_RETURN(Context ctx, ContextOf(true, e.name));
      if (Contains(p.old_required, e.name)) {  // required here before, declared only now
        ctx.required = true;
        ctx.Note("required at " + s.old_node.KeywordPointer("required"));
      }
      if (!ctx.Empty()) {
        EVIDENT_RETURN_IF_ERROR(ReportAddedInContext(s, p, j, ctx));
        continue;
      }
    }
    if (required) {
      Add(ChangeCode::kRequiredPropertyAdded, data, where, false, !closed,
          "required property " + Quote(e.name) + " added to " + DataText(s.data) +
              ": data written under the old schema lacks it");
    } else if (closed) {
      Add(ChangeCode::kOptionalPropertyAddedToClosedContentModel, data, where, true, false,
          "optional property " + Quote(e.name) + " added to " + DataText(s.data) +
              ", which the old schema closes (" + ClosingKeyword(s.old_node) +
              ": false): old readers reject it");
    } else {
      // Strict: the open model admitted any value under the name; a schema that admits any
      // value too (`{}`, `true`) keeps all of it.
      bool admits_all = lenient;
      if (!lenient) {
        EVIDENT_ASSIGN_OR_RETURN(const Verdict v,
                                 Probe(nullptr, "", e.schema, where, data, s.depth + 1));
        admits_all = v.backward;
      }
      Add(ChangeCode::kOptionalPropertyAddedToOpenContentModel, data, where, admits_all, true,
          "optional property " + Quote(e.name) + " added to " + DataText(s.data) +
              (lenient      ? ""
               : admits_all ? "; its schema admits any value, as the open model did"
                            : "; strict: the old, open schema allowed any value under that "
                              "name, so old data may violate the new property's schema"));
    }
  }
  return Status::Ok();
}

// A property added to an open level while another level of the old schema at the same data
// position declares, requires, covers or forbids it: old data holds what that level admits.
Status Differ::ReportAddedInContext(const Side& s, const PropertyDiff& p, size_t j,
                                    const Context& ctx) {
  const PropertyDiff::Entry& e = p.added[j];
  const std::string data = AppendToken(s.data, e.name);
  const std::string where = AppendToken(p.new_at, e.name);
  const bool required = Contains(p.new_required, e.name);
  const std::string what = std::string(required ? "required" : "optional") + " property " +
                           Quote(e.name) + " added to " + DataText(s.data) + " at " + where;
  const ChangeCode code = required ? ChangeCode::kRequiredPropertyAdded
                                   : ChangeCode::kOptionalPropertyAddedToOpenContentModel;
  if (ctx.unknown) {
    Add(code, data, where, false, false,
        what + "; whether the old schema admitted it depends on the value: " + ctx.text);
    return Status::Ok();
  }
  if (ctx.closed) {
    Add(required ? code : ChangeCode::kOptionalPropertyAddedToClosedContentModel, data, where,
        !required, false,
        what + "; the old schema rejects it (" + ctx.text + "): " +
            (required ? "data written under the old schema lacks it, and old readers reject it"
                      : "old readers reject it"));
    return Status::Ok();
  }
  EVIDENT_ASSIGN_OR_RETURN(Verdict v,
                           JudgeInContext(ctx, true, e.schema, where, data, s.depth + 1));
  AddMeaning(std::move(v.meaning));
  const bool present = !required || ctx.required;
  Add(code, data, where, v.backward && present, true,
      what + "; the old schema already has it (" + ctx.text + "): " +
          (!present     ? "data written under the old schema may lack it"
           : v.backward ? "every old value is valid under the new property's schema"
                        : "old values under that name may violate its new schema"));
  return Status::Ok();
}

// Removed properties that are not half of a rename: judged by what the new content model
// admits under the name, or by what another level of the new schema at the same data position
// says of it (ReportRemovedInContext).
Status Differ::ReportRemovedProperties(const Side& s, const PropertyDiff& p) {
  const bool lenient = options_.strictness == Strictness::kLenient && !negated_ && !under_not_;
  for (size_t k = 0; k < p.removed_left.size(); ++k) {
    const PropertyDiff::Entry& gone = p.removed_left[k];
    const bool was_required = Contains(p.old_required, gone.name);
    const std::string data = AppendToken(s.data, gone.name);
    const std::string where = AppendToken(p.old_at, gone.name);
    const std::string what = std::string(was_required ? "required" : "optional") + " property " +
                             Quote(gone.name) + " removed from " + DataText(s.data);
    EVIDENT_ASSIGN_OR_RETURN(const Coverage c, CoverageOf(new_doc_, s.new_node, gone.name));
    if (c.kind == Coverage::Kind::kPartial || c.kind == Coverage::Kind::kUnknown) {
      EVIDENT_ASSIGN_OR_RETURN(const Verdict v,
                               JudgeCovered(c, false, gone.schema, where, data, s.depth + 1));
      Add(ChangeCode::kPropertyRemovedFromPartiallyOpenContentModel, data, where, v.backward,
          v.forward && !was_required,
          what + "; the new schema admits it under " + c.text + ": " +
              (v.backward ? "every old value stays valid" : "old values may be rejected") +
              (was_required ? "; old readers require it" : ""));
      continue;
    }
    if (c.kind == Coverage::Kind::kOpen) {
      EVIDENT_ASSIGN_OR_RETURN(Context ctx, ContextOf(false, gone.name));
      if (Contains(p.new_required, gone.name)) {  // still required here, no longer declared
        ctx.required = true;
        ctx.Note("required at " + s.new_node.KeywordPointer("required"));
      }
      if (!ctx.Empty()) {
        EVIDENT_RETURN_IF_ERROR(ReportRemovedInContext(s, p, k, ctx));
        continue;
      }
    }
    bool backward = c.kind == Coverage::Kind::kOpen;
    bool forward = !was_required && (c.kind == Coverage::Kind::kClosed || lenient);
    if (c.kind == Coverage::Kind::kClosed || (!forward && !was_required)) {
      // A property the old schema forbade (`false`) can go from a closed model; one the old
      // schema admitted with any value (`{}`) can go from an open one, even strictly.
      EVIDENT_ASSIGN_OR_RETURN(const Verdict v,
                               Probe(gone.schema, where, nullptr, "", data, s.depth + 1));
      if (c.kind == Coverage::Kind::kClosed) {
        Result<Node> node = old_doc_.View(gone.schema, where);
        backward = node.ok() && node->IsFalse();
      } else {
        forward = v.forward;
      }
    }
    Add(ChangeCode::kPropertyRemoved, data, where, backward, forward,
        what + (was_required ? ": old readers require it" : "") +
            (c.kind == Coverage::Kind::kClosed && !backward
                 ? "; the new schema is closed and rejects old data holding it"
                 : ""));
  }
  return Status::Ok();
}

// A property removed from an open level while another level of the new schema at the same
// data position declares, requires, covers or forbids it: new data holds what that level
// admits, and old readers still apply the removed schema to it.
Status Differ::ReportRemovedInContext(const Side& s, const PropertyDiff& p, size_t k,
                                      const Context& ctx) {
  const PropertyDiff::Entry& gone = p.removed_left[k];
  const bool was_required = Contains(p.old_required, gone.name);
  const std::string data = AppendToken(s.data, gone.name);
  const std::string where = AppendToken(p.old_at, gone.name);
  const std::string what = std::string(was_required ? "required" : "optional") + " property " +
                           Quote(gone.name) + " removed from " + DataText(s.data) + " at " + where;
  if (ctx.unknown) {
    Add(ChangeCode::kPropertyRemoved, data, where, false, false,
        what + "; whether the new schema admits it depends on the value: " + ctx.text);
    return Status::Ok();
  }
  if (ctx.closed) {
    Result<Node> node = old_doc_.View(gone.schema, where);
    const bool was_forbidden = node.ok() && node->IsFalse();
    Add(ChangeCode::kPropertyRemoved, data, where, was_forbidden, !was_required,
        what + "; the new schema rejects it (" + ctx.text + ")" +
            (was_forbidden ? "" : ": old data holding it is rejected") +
            (was_required ? "; old readers require it" : ""));
    return Status::Ok();
  }
  // New values under the name are within what the context admits; old readers still apply
  // the removed schema to them.
  EVIDENT_ASSIGN_OR_RETURN(Verdict v,
                           JudgeInContext(ctx, false, gone.schema, where, data, s.depth + 1));
  AddMeaning(std::move(v.meaning));
  const bool present = !was_required || ctx.required;
  Add(ChangeCode::kPropertyRemoved, data, where, true, v.forward && present,
      what + "; the new schema still has it (" + ctx.text + "): " +
          (!present    ? "new data may lack it, and old readers require it"
           : v.forward ? "every new value is valid under the removed schema"
                       : "new values under that name may violate the removed schema"));
  return Status::Ok();
}

// Requiredness of properties that exist on both sides (or are only listed in `required`). A
// name another level of the same side already requires stays present whatever this level says.
Status Differ::CompareRequiredness(const Side& s, const PropertyDiff& p) {
  const auto defined_on_one_side_only = [&](const std::string& name) {
    const bool in_old = Lookup(p.old_by_name, name) != nullptr;
    const bool in_new = Lookup(p.new_by_name, name) != nullptr;
    return in_old != in_new;
  };
  for (const std::string& name : p.new_required) {
    if (Contains(p.old_required, name) || defined_on_one_side_only(name)) continue;
    EVIDENT_ASSIGN_OR_RETURN(const Context ctx, ContextOf(true, name));
    Add(ChangeCode::kRequiredPropertyAdded, AppendToken(s.data, name),
        s.new_node.KeywordPointer("required"), ctx.required, true,
        "property " + Quote(name) + " of " + DataText(s.data) + " is now required at " +
            s.new_node.KeywordPointer("required") +
            (ctx.required ? "; the old schema already required it (" + ctx.text + ")"
                          : ": data written under the old schema may lack it"));
  }
  for (const std::string& name : p.old_required) {
    if (Contains(p.new_required, name) || defined_on_one_side_only(name)) continue;
    EVIDENT_ASSIGN_OR_RETURN(const Context ctx, ContextOf(false, name));
    Add(ChangeCode::kRequiredPropertyRemoved, AppendToken(s.data, name),
        s.old_node.KeywordPointer("required"), true, ctx.required,
        "property " + Quote(name) + " of " + DataText(s.data) + " is no longer required at " +
            s.old_node.KeywordPointer("required") +
            (ctx.required ? "; the new schema still requires it (" + ctx.text + ")"
                          : ": old readers expect it to be present"));
  }
  return Status::Ok();
}

Status Differ::CompareArrays(const Side& s) {
  if ((s.types & kArray) == 0) return Status::Ok();
  ArrayForm olds = ArrayFormOf(s.old_node);
  ArrayForm news = ArrayFormOf(s.new_node);
  // A member without a rest schema, inside a level that closes unevaluated items: positions
  // beyond its tuple fall to that level's unevaluatedItems unless another member evaluates
  // them; taken as governed by it (a tuple that shrinks there narrows).
  const auto inherit_rest = [&](bool old_side, ArrayForm& form) {
    const Node& here = old_side ? s.old_node : s.new_node;
    if (form.rest != nullptr || here.dialect != Dialect::kDraft2020 || levels_.empty()) return;
    for (size_t i = levels_.size() - 1; i-- > 0;) {
      const Level& level = levels_[i];
      if (*level.data != s.data) break;
      const Node& node = old_side ? *level.old_node : *level.new_node;
      const JsonValue* rest = node.Keyword("unevaluatedItems");
      if (rest != nullptr && !(rest->IsBool() && rest->boolean)) {
        form.rest = rest;
        form.rest_pointer = node.KeywordPointer("unevaluatedItems");
        form.rest_is_unevaluated = true;
        return;
      }
      if (level.scope_start) break;
    }
  };
  inherit_rest(true, olds);
  inherit_rest(false, news);
  const size_t old_count = olds.prefix != nullptr ? olds.prefix->array.size() : 0;
  const size_t new_count = news.prefix != nullptr ? news.prefix->array.size() : 0;
  // Position i is governed by the tuple entry i when there is one, else by the rest schema.
  for (size_t i = 0; i < std::max(old_count, new_count); ++i) {
    const std::string index = std::to_string(i);
    const JsonValue* old_value = i < old_count ? &olds.prefix->array[i] : olds.rest;
    const std::string old_at =
        i < old_count ? AppendToken(olds.prefix_pointer, index) : olds.rest_pointer;
    const JsonValue* new_value = i < new_count ? &news.prefix->array[i] : news.rest;
    const std::string new_at =
        i < new_count ? AppendToken(news.prefix_pointer, index) : news.rest_pointer;
    EVIDENT_RETURN_IF_ERROR(Compare(old_value, old_at, new_value, new_at,
                                    AppendToken(s.data, index), Slot::kItems, s.depth + 1));
  }
  EVIDENT_RETURN_IF_ERROR(Compare(olds.rest, olds.rest_pointer, news.rest, news.rest_pointer,
                                  AppendToken(s.data, "*"), Slot::kItems, s.depth + 1));
  // unevaluatedItems beside a rest schema (items, additionalItems) applies to no position; one
  // that is the rest was compared just above. With both sides so, it is not compared again.
  if (olds.rest == nullptr || news.rest == nullptr) {
    EVIDENT_RETURN_IF_ERROR(Compare(
        s.old_node.Keyword("unevaluatedItems"), s.old_node.KeywordPointer("unevaluatedItems"),
        s.new_node.Keyword("unevaluatedItems"), s.new_node.KeywordPointer("unevaluatedItems"),
        AppendToken(s.data, "*"), Slot::kItems, s.depth + 1));
  }
  const JsonValue* old_contains = s.old_node.Keyword("contains");
  const JsonValue* new_contains = s.new_node.Keyword("contains");
  if (old_contains == nullptr && new_contains != nullptr) {
    Add(ChangeCode::kContainsAdded, s.data, s.new_node.KeywordPointer("contains"), false, true,
        "the array at " + DataText(s.data) + " must now contain a matching item");
  } else if (old_contains != nullptr && new_contains == nullptr) {
    Add(ChangeCode::kContainsRemoved, s.data, s.old_node.KeywordPointer("contains"), true, false,
        "the array at " + DataText(s.data) + " no longer has to contain a matching item");
  } else if (old_contains != nullptr) {
    EVIDENT_RETURN_IF_ERROR(Compare(old_contains, s.old_node.KeywordPointer("contains"),
                                    new_contains, s.new_node.KeywordPointer("contains"),
                                    AppendToken(s.data, "*"), Slot::kGeneral, s.depth + 1));
  }
  return Status::Ok();
}

Result<bool> Differ::Equivalent(const JsonValue* old_value, const std::string& old_pointer,
                                const JsonValue* new_value, const std::string& new_pointer,
                                int64_t depth) {
  std::vector<Change> scratch;
  Differ probe(old_doc_, new_doc_, options_, comparisons_, scratch);
  probe.StopAtFirstChange();
  // Pairs under comparison further up count as equal inside the probe (the coinductive reading
  // of a recursive schema); without this a self-referencing anyOf would probe forever.
  probe.in_progress_ = in_progress_;
  probe.merges_ = merges_;  // the same merged members, so that cycles through them are met
  probe.regexes_ = regexes_;
  EVIDENT_RETURN_IF_ERROR(
      probe.Compare(old_value, old_pointer, new_value, new_pointer, "", Slot::kGeneral, depth));
  return scratch.empty();
}

// What identifies a member among its siblings, for pairing: its `type`, and (kDiscriminated)
// also the `const` (or one-value `enum`) of every property it requires, a tagged union's tag.
// Empty when it names no type (and, for kDiscriminated, no tag).
// The tags of `node`: the `const` (or one-value `enum`) of each property it requires.
std::string TagsOf(const Node& node) {
  const JsonValue* properties = node.Keyword("properties");
  const JsonValue* required = node.Keyword("required");
  if (properties == nullptr || !properties->IsObject() || required == nullptr ||
      !required->IsArray()) {
    return {};
  }
  std::string tags;
  for (const JsonValue& name : required->array) {
    const JsonValue* property = name.IsString() ? properties->Get(name.string) : nullptr;
    if (property == nullptr || !property->IsObject()) continue;
    const JsonValue* tag = property->Get("const");
    const JsonValue* one_of = property->Get("enum");
    if (tag == nullptr && one_of != nullptr && one_of->IsArray() && one_of->array.size() == 1) {
      tag = &one_of->array[0];
    }
    if (tag != nullptr) tags += "|" + name.string + "=" + Canonical(*tag);
  }
  return tags;
}

std::string MemberSignature(const SchemaDocument& doc, const JsonValue* value,
                            const std::string& pointer, bool discriminated) {
  Result<Node> node = doc.View(value, pointer);
  if (!node.ok()) return {};
  const JsonValue* type = node->Keyword("type");
  std::string signature = type != nullptr ? Canonical(*type) : std::string();
  if (!discriminated) return signature;
  // The member's own tags and its allOf members' (a union written as allOf: [base, {tag}]).
  std::string tags = TagsOf(*node);
  const JsonValue* members = node->Keyword("allOf");
  if (members != nullptr && members->IsArray()) {
    const std::string at = node->KeywordPointer("allOf");
    for (size_t k = 0; k < members->array.size(); ++k) {
      Result<Node> member = doc.View(&members->array[k], AppendToken(at, std::to_string(k)));
      if (member.ok()) tags += TagsOf(*member);
    }
  }
  return tags.empty() ? std::string() : signature + tags;
}

// Orders the members left unmatched so that old and new members with the same tag (a required
// property's `const`), then the same `type`, come first, in pairs: a tagged union's members
// re-ordered or with a member inserted are compared member by member, and a string member that
// widened, among members of other types added beside it, is compared with the string member.
// The rest keeps its order.
void Differ::PairByType(const Members& olds, const Members& news, std::vector<size_t>& old_left,
                        std::vector<size_t>& new_left) const {
  std::vector<size_t> old_paired, new_paired;
  std::vector<bool> old_used(old_left.size(), false), new_used(new_left.size(), false);
  for (const bool discriminated : {true, false}) {
    // Each member's signature once (a list of thousands stays linear), new ones by signature.
    std::map<std::string, std::vector<size_t>> new_by_signature;
    for (size_t k = new_left.size(); k-- > 0;) {
      if (new_used[k]) continue;
      std::string signature = MemberSignature(new_doc_, news.values[new_left[k]],
                                              news.pointers[new_left[k]], discriminated);
      if (!signature.empty()) new_by_signature[std::move(signature)].push_back(k);
    }
    for (size_t a = 0; a < old_left.size(); ++a) {
      if (old_used[a]) continue;
      const size_t i = old_left[a];
      const auto found = new_by_signature.find(
          MemberSignature(old_doc_, olds.values[i], olds.pointers[i], discriminated));
      if (found == new_by_signature.end() || found->second.empty()) continue;
      const size_t k = found->second.back();  // the first in order: pushed in reverse
      found->second.pop_back();
      old_used[a] = new_used[k] = true;
      old_paired.push_back(i);
      new_paired.push_back(new_left[k]);
    }
  }
  for (size_t a = 0; a < old_left.size(); ++a) {
    if (!old_used[a]) old_paired.push_back(old_left[a]);
  }
  for (size_t k = 0; k < new_left.size(); ++k) {
    if (!new_used[k]) new_paired.push_back(new_left[k]);
  }
  old_left = std::move(old_paired);
  new_left = std::move(new_paired);
}

Status Differ::CompareList(const Side& s, const char* keyword, ChangeCode added_code,
                           ChangeCode removed_code, bool added_backward) {
  const Members olds =
      UniqueMembers(s.old_node.Keyword(keyword), s.old_node.KeywordPointer(keyword));
  const Members news =
      UniqueMembers(s.new_node.Keyword(keyword), s.new_node.KeywordPointer(keyword));
  const size_t old_count = olds.values.size();
  const size_t new_count = news.values.size();
  if (old_count == 0 && new_count == 0) return Status::Ok();
  // A repeated member changes nothing for anyOf and allOf; for oneOf a value matching it matches
  // twice and is rejected, so a repeat added narrows and a repeat removed widens.
  if (std::string_view(keyword) == "oneOf" && olds.repeats != news.repeats) {
    const bool more = news.repeats > olds.repeats;
    Add(ChangeCode::kOneOfMemberRepeated, s.data,
        more ? s.new_node.KeywordPointer(keyword) : s.old_node.KeywordPointer(keyword), !more, more,
        "oneOf of " + DataText(s.data) + (more ? " now repeats" : " no longer repeats") +
            " a member; a value matching a repeated member matches twice, which oneOf rejects");
  }
  // First pair the members that did not change (at the same index first), then pair what is
  // left in order and report its differences, then report the rest as added or removed. The
  // equivalence tests are what may grow combinatorially; comparisons_max bounds them.
  std::vector<size_t> old_match(old_count, new_count);
  std::vector<bool> new_matched(new_count, false);
  for (size_t j = 0; j < new_count; ++j) {
    for (size_t step = 0; step < old_count; ++step) {
      const size_t i = (j + step) % old_count;
      if (old_match[i] != new_count) continue;
      EVIDENT_ASSIGN_OR_RETURN(const bool same,
                               Equivalent(olds.values[i], olds.pointers[i], news.values[j],
                                          news.pointers[j], s.depth + 1));
      if (same) {
        old_match[i] = j;
        new_matched[j] = true;
        break;
      }
    }
  }
  std::vector<size_t> old_left;
  std::vector<size_t> new_left;
  for (size_t i = 0; i < old_count; ++i) {
    if (old_match[i] == new_count) old_left.push_back(i);
  }
  for (size_t j = 0; j < new_count; ++j) {
    if (!new_matched[j]) new_left.push_back(j);
  }
  PairByType(olds, news, old_left, new_left);
  const size_t paired = std::min(old_left.size(), new_left.size());
  if (std::string_view(keyword) == "oneOf") {
    // Which old member each new one continues (unchanged, or paired for comparison).
    std::vector<size_t> old_of(new_count, old_count);
    for (size_t i = 0; i < old_count; ++i) {
      if (old_match[i] != new_count) old_of[old_match[i]] = i;
    }
    for (size_t k = 0; k < paired; ++k) old_of[new_left[k]] = old_left[k];
    EVIDENT_RETURN_IF_ERROR(CheckOneOfOverlap(s, olds, news, old_of));
  }
  for (size_t k = 0; k < paired; ++k) {
    const size_t changes_from = out_.size();
    EVIDENT_RETURN_IF_ERROR(Compare(olds.values[old_left[k]], olds.pointers[old_left[k]],
                                    news.values[new_left[k]], news.pointers[new_left[k]], s.data,
                                    Slot::kGeneral, s.depth + 1));
    if (std::string_view(keyword) == "oneOf" && !Done()) {
      EVIDENT_RETURN_IF_ERROR(
          CheckOneOfMemberChange(s, olds, news, old_left[k], new_left[k], changes_from));
    }
  }
  return ReportUnpaired(s, keyword, olds, news,
                        std::vector<size_t>(old_left.begin() + paired, old_left.end()),
                        std::vector<size_t>(new_left.begin() + paired, new_left.end()), added_code,
                        removed_code, added_backward);
}

// The members CompareList could not pair: added (`added`, of `news`) or removed (`removed`, of
// `olds`).
Status Differ::ReportUnpaired(const Side& s, const char* keyword, const Members& olds,
                              const Members& news, const std::vector<size_t>& removed,
                              const std::vector<size_t>& added, ChangeCode added_code,
                              ChangeCode removed_code, bool added_backward) {
  const bool all_of = std::string_view(keyword) == "allOf";
  const bool one_of = std::string_view(keyword) == "oneOf";
  for (const size_t j : added) {
    // An allOf member that evaluates names or items beside unevaluated*: false also admits
    // what it evaluates, which the old schema rejected.
    const bool evaluates = all_of && EvaluatesBesideUnevaluated(new_doc_, s.new_node, news, j);
    Add(added_code, s.data, news.pointers[j], added_backward, !added_backward && !evaluates,
        std::string(keyword) + " of " + DataText(s.data) + " gained the member " +
            Canonical(*news.values[j]) +
            (evaluates ? "; it evaluates properties or items beside unevaluatedProperties/"
                         "unevaluatedItems, so the new schema also admits what it evaluates"
                       : ""));
  }
  for (const size_t i : removed) {
    const bool evaluates = all_of && EvaluatesBesideUnevaluated(old_doc_, s.old_node, olds, i);
    // A removed oneOf member that may have overlapped a kept one: a value matching both was
    // rejected before and matches one member now.
    std::string overlap;
    if (one_of) {
      EVIDENT_ASSIGN_OR_RETURN(overlap, OverlapWithOthers(olds, i));
    }
    Add(removed_code, s.data, olds.pointers[i], !added_backward && !evaluates,
        added_backward && overlap.empty(),
        std::string(keyword) + " of " + DataText(s.data) + " lost the member " +
            Canonical(*olds.values[i]) +
            (evaluates ? "; it evaluated properties or items beside unevaluatedProperties/"
                         "unevaluatedItems, which the new schema now rejects"
                       : "") +
            (overlap.empty() ? ""
                             : "; it may have overlapped member " + overlap +
                                   ": a value matching both, which old readers reject, now "
                                   "matches one"));
  }
  return Status::Ok();
}

// Whether allOf member `k` of `members` evaluates properties or items while `node` closes
// what is not evaluated (unevaluatedProperties or unevaluatedItems other than `true`).
bool Differ::EvaluatesBesideUnevaluated(const SchemaDocument& doc, const Node& node,
                                        const Members& members, size_t k) const {
  bool closes = false;
  for (const char* keyword : {"unevaluatedProperties", "unevaluatedItems"}) {
    const JsonValue* value = node.Keyword(keyword);
    closes = closes || (value != nullptr && !(value->IsBool() && value->boolean));
  }
  if (!closes || node.dialect != Dialect::kDraft2020) return false;
  Result<Node> member = doc.View(members.values[k], members.pointers[k]);
  if (!member.ok()) return true;
  static constexpr std::string_view kEvaluating[] = {"properties",
                                                     "patternProperties",
                                                     "additionalProperties",
                                                     "unevaluatedProperties",
                                                     "prefixItems",
                                                     "items",
                                                     "additionalItems",
                                                     "unevaluatedItems",
                                                     "contains",
                                                     "allOf",
                                                     "anyOf",
                                                     "oneOf",
                                                     "if",
                                                     "dependentSchemas",
                                                     "$ref",
                                                     "$dynamicRef"};
  for (const std::string_view keyword : kEvaluating) {
    if (member->Keyword(keyword) != nullptr) return true;
  }
  return !member->sites.empty();
}

// The index of another member of `members` that member `k` may share a value with (not provably
// disjoint), as text, or empty.
Result<std::string> Differ::OverlapWithOthers(const Members& members, size_t k) {
  EVIDENT_ASSIGN_OR_RETURN(const Node member,
                           old_doc_.View(members.values[k], members.pointers[k]));
  for (size_t j = 0; j < members.values.size(); ++j) {
    if (j == k) continue;
    EVIDENT_ASSIGN_OR_RETURN(const Node other,
                             old_doc_.View(members.values[j], members.pointers[j]));
    if (!ProvablyDisjoint(old_doc_, member, other, comparisons_)) return std::to_string(j);
  }
  return std::string();
}

Status Differ::CompareComposition(const Side& s, size_t own_from) {
  const unsigned old_combinators = CombinatorsOf(s.old_node);
  const unsigned new_combinators = CombinatorsOf(s.new_node);
  if (old_combinators != new_combinators && std::popcount(old_combinators) <= 1 &&
      std::popcount(new_combinators) <= 1 && !CombinatorsStacked(s.old_node) &&
      !CombinatorsStacked(s.new_node)) {
    // A plain schema against a composed one, or one combinator against another: judged by the
    // data the members admit (composition.cc), which the keywords beside them are part of.
    EVIDENT_RETURN_IF_ERROR(CompareNotAndConditional(s));
    return CompareLifted(s, own_from);
  }
  EVIDENT_RETURN_IF_ERROR(CompareCombinators(s));
  return CompareNotAndConditional(s);
}

// The same combinators on both sides: their members are paired and compared.
Status Differ::CompareCombinators(const Side& s) {
  // allOf: every member constrains, so an added member narrows.
  EVIDENT_RETURN_IF_ERROR(CompareList(s, "allOf", ChangeCode::kAllOfSchemaAdded,
                                      ChangeCode::kAllOfSchemaRemoved, false));
  for (const char* keyword : {"anyOf", "oneOf"}) {
    const bool in_old = s.old_node.Keyword(keyword) != nullptr;
    const bool in_new = s.new_node.Keyword(keyword) != nullptr;
    if (in_old != in_new) {
      Add(ChangeCode::kCompositionChanged, s.data,
          in_new ? s.new_node.KeywordPointer(keyword) : s.old_node.KeywordPointer(keyword), false,
          false,
          std::string(keyword) + (in_new ? " added to " : " removed from ") + DataText(s.data) +
              " beside other combinators; such a mixture is not compared member by member");
      continue;
    }
    const bool any = std::string_view(keyword) == "anyOf";
    // An added alternative admits more data. (For oneOf an added branch that overlaps an old one
    // can also reject data; the code says so in docs/contracts.md.)
    EVIDENT_RETURN_IF_ERROR(
        CompareList(s, keyword, any ? ChangeCode::kAnyOfBranchAdded : ChangeCode::kOneOfBranchAdded,
                    any ? ChangeCode::kAnyOfBranchRemoved : ChangeCode::kOneOfBranchRemoved, true));
  }
  return Status::Ok();
}

Status Differ::CompareNotAndConditional(const Side& s) {
  const JsonValue* old_not = s.old_node.Keyword("not");
  const JsonValue* new_not = s.new_node.Keyword("not");
  if ((old_not == nullptr) != (new_not == nullptr)) {
    const bool added = new_not != nullptr;
    Add(ChangeCode::kNotChanged, s.data,
        added ? s.new_node.KeywordPointer("not") : s.old_node.KeywordPointer("not"), !added, added,
        std::string("'not' ") + (added ? "added to " : "removed from ") + DataText(s.data));
  } else if (old_not != nullptr) {
    negated_ = !negated_;
    next_scope_start_ = true;
    const Status status =
        Compare(old_not, s.old_node.KeywordPointer("not"), new_not,
                s.new_node.KeywordPointer("not"), s.data, Slot::kGeneral, s.depth + 1);
    negated_ = !negated_;
    EVIDENT_RETURN_IF_ERROR(status);
  }
  const JsonValue* old_if = s.old_node.Keyword("if");
  const JsonValue* new_if = s.new_node.Keyword("if");
  const std::string old_if_text = old_if != nullptr ? Canonical(*old_if) : "";
  const std::string new_if_text = new_if != nullptr ? Canonical(*new_if) : "";
  if (old_if_text != new_if_text) {
    Add(ChangeCode::kConditionalChanged, s.data,
        new_if != nullptr ? s.new_node.KeywordPointer("if") : s.old_node.KeywordPointer("if"),
        false, false, "the condition ('if') of " + DataText(s.data) + " changed");
  } else if (old_if != nullptr) {
    for (const char* branch : {"then", "else"}) {
      EVIDENT_RETURN_IF_ERROR(Compare(s.old_node.Keyword(branch), s.old_node.KeywordPointer(branch),
                                      s.new_node.Keyword(branch), s.new_node.KeywordPointer(branch),
                                      s.data, Slot::kGeneral, s.depth + 1));
    }
  }
  return Status::Ok();
}

}  // namespace evident::compat
