// schema/validate.cc — runs a Plan against one instance.
//
// One evaluator serves both entry points: Evaluator<false> answers valid/invalid, stops at the
// first failure and touches no strings; Evaluator<true> also records errors with their instance
// and keyword locations. Validate() runs the fast one first and only re-runs with collection
// when the instance is invalid, so valid instances pay for the fast path only.
//
// Annotations for unevaluatedProperties/unevaluatedItems are kept as a bit set over the
// members (or items) of the instance being evaluated ("Marks"). Only nodes that contain an
// unevaluated* keyword, and the in-place applicators below them, ever touch one.
//
// Work is bounded twice. Every evaluation is charged to a step budget (validation_steps_max);
// when it runs out the instance is invalid and the caller is told why. And results of shared
// nodes (plan.h) are memoized per instance location, so a oneOf whose branches both recurse
// through $ref evaluates each (node, location) once instead of once per path to it.
#include <re2/re2.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "json/writer.h"
#include "schema/format.h"
#include "schema/plan.h"
#include "schema/regex.h"
#include "schema/uri.h"

namespace evident::schema::internal {
namespace {

namespace dom = simdjson::dom;

class Marks {
 public:
  void Set(size_t i) {
    if (i / 64 >= bits_.size()) bits_.resize(i / 64 + 1, 0);
    bits_[i / 64] |= uint64_t{1} << (i % 64);
  }
  bool Get(size_t i) const { return i / 64 < bits_.size() && (bits_[i / 64] >> (i % 64)) & 1; }
  void Merge(const Marks& other) {
    if (other.bits_.size() > bits_.size()) bits_.resize(other.bits_.size(), 0);
    for (size_t i = 0; i < other.bits_.size(); ++i) bits_[i] |= other.bits_[i];
  }

 private:
  std::vector<uint64_t> bits_;
};

struct Collector {
  std::vector<Error> errors;
  size_t errors_max = 0;
  bool truncated = false;
  std::string instance;  // JSON Pointer of the current instance
  std::string keyword;   // keyword location of the current node
};

// Memoized results kept per instance (about 40 bytes each); later results are not stored.
constexpr size_t kMemoEntriesMax = size_t{1} << 16;

// Results of shared nodes by (node, instance value), for one instance (both passes).
//
// A dom::element is a reference into the parsed document (a document pointer and a tape index)
// and simdjson exposes no identity for it, so its two words are the key: equal words are the
// same value at the same location. The static_assert stops a simdjson upgrade that changes it.
class Memo {
 public:
  std::optional<bool> Find(uint32_t node, dom::element inst) const {
    if (results_ == nullptr) return std::nullopt;
    auto it = results_->find(KeyOf(node, inst));
    if (it == results_->end()) return std::nullopt;
    return it->second;
  }
  void Store(uint32_t node, dom::element inst, bool valid) {
    if (results_ == nullptr) results_ = std::make_unique<Table>();
    if (results_->size() < kMemoEntriesMax) results_->emplace(KeyOf(node, inst), valid);
  }

 private:
  struct Words {
    uint64_t first = 0, second = 0;
  };
  static_assert(sizeof(dom::element) == sizeof(Words) && std::is_trivially_copyable_v<dom::element>,
                "dom::element is no longer (document, tape index): revisit Memo's key");
  struct Key {
    uint32_t node = 0;
    Words instance;
    bool operator==(const Key& other) const {
      return node == other.node && instance.first == other.instance.first &&
             instance.second == other.instance.second;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& key) const {
      const uint64_t kMul = 0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(((key.instance.first * kMul) ^ key.instance.second) * kMul +
                                 key.node);
    }
  };
  static Key KeyOf(uint32_t node, dom::element inst) {
    return Key{node, std::bit_cast<Words>(inst)};
  }

  using Table = std::unordered_map<Key, bool, KeyHash>;
  std::unique_ptr<Table> results_;  // created by the first Store: most instances never need it
};

uint8_t InstanceTypeBits(dom::element inst) {
  switch (inst.type()) {
    case dom::element_type::NULL_VALUE:
      return kTypeNull;
    case dom::element_type::BOOL:
      return kTypeBoolean;
    case dom::element_type::OBJECT:
      return kTypeObject;
    case dom::element_type::ARRAY:
      return kTypeArray;
    case dom::element_type::STRING:
      return kTypeString;
    case dom::element_type::INT64:
    case dom::element_type::UINT64:
      return kTypeNumber | kTypeInteger;
    case dom::element_type::DOUBLE: {
      const double d = inst.get_double().value_unsafe();
      return std::isfinite(d) && std::floor(d) == d ? kTypeNumber | kTypeInteger : kTypeNumber;
    }
  }
  return 0;
}

std::string TypeNames(uint8_t mask) {
  static constexpr std::pair<uint8_t, std::string_view> kNames[] = {
      {kTypeNull, "null"},      {kTypeBoolean, "boolean"}, {kTypeObject, "object"},
      {kTypeArray, "array"},    {kTypeNumber, "number"},   {kTypeString, "string"},
      {kTypeInteger, "integer"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (!(mask & bit)) continue;
    if (!out.empty()) out += " or ";
    out += name;
  }
  return out;
}

std::string ActualTypeName(uint8_t bits) {
  if (bits & kTypeInteger) return "integer";
  return TypeNames(bits);
}

size_t CodePointCount(std::string_view text) {
  size_t count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80;
  return count;
}

bool IsNumber(dom::element_type t) {
  return t == dom::element_type::INT64 || t == dom::element_type::UINT64 ||
         t == dom::element_type::DOUBLE;
}

// The unchecked conversions of the ops of a type group. EvalOps runs number_ops, string_ops,
// array_ops and object_ops only on instances of that type, so the type is an invariant here.
std::string_view StringOf(dom::element inst) {
  assert(inst.is_string());
  return inst.get_string().value_unsafe();
}
dom::array ArrayOf(dom::element inst) {
  assert(inst.is_array());
  return inst.get_array().value_unsafe();
}
dom::object ObjectOf(dom::element inst) {
  assert(inst.is_object());
  return inst.get_object().value_unsafe();
}

bool NumbersEqual(dom::element a, dom::element b) {
  const auto ta = a.type();
  const auto tb = b.type();
  if (ta == dom::element_type::INT64 && tb == dom::element_type::INT64) {
    return a.get_int64().value_unsafe() == b.get_int64().value_unsafe();
  }
  if (ta == dom::element_type::UINT64 && tb == dom::element_type::UINT64) {
    return a.get_uint64().value_unsafe() == b.get_uint64().value_unsafe();
  }
  if (ta != dom::element_type::DOUBLE && tb != dom::element_type::DOUBLE) {
    return false;  // one is a negative int64, the other a uint64 above INT64_MAX
  }
  return a.get_double().value_unsafe() == b.get_double().value_unsafe();
}

uint64_t HashValue(dom::element value, size_t depth) {
  const uint64_t kMul = 0x9E3779B97F4A7C15ull;
  switch (value.type()) {
    case dom::element_type::NULL_VALUE:
      return 1;
    case dom::element_type::BOOL:
      return value.get_bool().value_unsafe() ? 2 : 3;
    case dom::element_type::INT64:
    case dom::element_type::UINT64:
    case dom::element_type::DOUBLE: {
      // Hash through double so that 1 and 1.0 collide (they are equal in JSON Schema).
      const double d = value.get_double().value_unsafe();
      uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      return (d == 0 ? 0 : bits) * kMul + 4;
    }
    case dom::element_type::STRING:
      return std::hash<std::string_view>{}(value.get_string().value_unsafe()) + 5;
    case dom::element_type::ARRAY: {
      uint64_t h = 6;
      if (depth == 0) return h;
      for (dom::element item : dom::array(value.get_array().value_unsafe())) {
        h = h * kMul + HashValue(item, depth - 1);
      }
      return h;
    }
    case dom::element_type::OBJECT: {
      uint64_t h = 7;
      if (depth == 0) return h;
      for (auto [key, member] : dom::object(value.get_object().value_unsafe())) {
        // Order-independent: members are summed.
        h += std::hash<std::string_view>{}(key)*kMul + HashValue(member, depth - 1);
      }
      return h;
    }
  }
  return 0;
}

template <bool kCollect>
class Evaluator {
 public:
  Evaluator(const Plan& plan, Collector* collector, Memo* memo)
      : plan_(plan),
        c_(collector),
        memo_(plan.uses_dynamic_scope ? nullptr : memo),
        steps_max_(plan.options.validation_steps_max) {}

  bool Eval(uint32_t index, dom::element inst, Marks* marks) {
    const Node& node = plan_.nodes[index];
    Charge(1);
    if (OutOfSteps()) return false;
    if constexpr (!kCollect) {
      // Most leaf subschemas of payload contracts are {"type": ...} or annotation-only.
      if (node.shortcut == Shortcut::kAlwaysTrue) return true;
      if (node.shortcut == Shortcut::kTypeOnly) {
        return (InstanceTypeBits(inst) & node.shortcut_type_mask) != 0;
      }
    }
    if (depth_ >= plan_.options.validation_depth_max) {
      ++depth_failures_;
      if constexpr (kCollect) {
        AddError(node, "",
                 "validation depth exceeds validation_depth_max (" +
                     std::to_string(plan_.options.validation_depth_max) + ")");
      }
      return false;
    }
    // Annotations (marks) are not memoized, so only evaluations that produce none are.
    const bool memoize = Memoizable(node, marks);
    if (memoize) {
      if (const std::optional<bool> known = memo_->Find(index, inst)) {
        if (*known || ErrorsAreFull()) return *known;
      }
    }
    const size_t depth_failures = depth_failures_;
    ++depth_;
    bool pushed_scope = false;
    if (plan_.uses_dynamic_scope && (scope_.empty() || scope_.back() != node.resource)) {
      scope_.push_back(node.resource);
      pushed_scope = true;
    }
    Marks local;
    Marks* own = node.tracks_evaluated ? &local : marks;
    const bool valid = EvalOps(node, inst, own);
    if (node.tracks_evaluated && marks != nullptr && valid) marks->Merge(local);
    if (pushed_scope) scope_.pop_back();
    --depth_;
    // A result cut short by the depth limit or the budget depends on the path to it: not kept.
    if (memoize && depth_failures == depth_failures_ && !OutOfSteps()) {
      memo_->Store(index, inst, valid);
    }
    return valid;
  }

  bool OutOfSteps() const { return steps_ > steps_max_; }
  uint64_t steps() const { return steps_; }

 private:
  void Charge(uint64_t steps) { steps_ += steps; }

  bool Memoizable(const Node& node, const Marks* marks) const {
    // $dynamicRef targets depend on the path (the dynamic scope); property names are evaluated
    // in a scratch document whose tape positions repeat from name to name.
    return node.shared && marks == nullptr && memo_ != nullptr && steps_ > plan_.memo_steps_min &&
           property_name_depth_ == 0;
  }

  // A valid evaluation leaves no errors behind, so a known valid result can always be reused. An
  // invalid one can only once the error list is full: re-running it would record nothing more.
  bool ErrorsAreFull() const {
    if constexpr (kCollect) return c_->truncated && c_->errors.size() >= c_->errors_max;
    return true;
  }

  bool EvalOps(const Node& node, dom::element inst, Marks* marks) {
    bool valid = true;
    auto run = [&](const std::vector<Op>& ops) {
      for (const Op& op : ops) {
        if (!Apply(node, op, inst, marks)) {
          valid = false;
          if constexpr (!kCollect) return;
        }
      }
    };
    run(node.any_ops);
    if (!kCollect && !valid) return false;
    switch (inst.type()) {
      case dom::element_type::OBJECT:
        run(node.object_ops);
        break;
      case dom::element_type::ARRAY:
        run(node.array_ops);
        break;
      case dom::element_type::STRING:
        run(node.string_ops);
        break;
      case dom::element_type::INT64:
      case dom::element_type::UINT64:
      case dom::element_type::DOUBLE:
        run(node.number_ops);
        break;
      default:
        break;
    }
    if (!kCollect && !valid) return false;
    run(node.final_ops);
    return valid;
  }

  // ---- error bookkeeping (all no-ops in the fast path) ---------------------------------------

  // `message` is a view, so that the fast path, which drops it, builds no string for it.
  void AddError(const Node& node, std::string_view keyword_path, std::string_view message) {
    if constexpr (kCollect) {
      if (c_->errors.size() >= c_->errors_max) {
        c_->truncated = true;
        return;
      }
      Error error;
      error.instance_location = c_->instance;
      error.keyword_location = c_->keyword;
      error.absolute_keyword_location = node.absolute;
      if (!keyword_path.empty()) {
        error.keyword_location += "/";
        error.keyword_location += keyword_path;
        error.absolute_keyword_location += "/";
        error.absolute_keyword_location += keyword_path;
      }
      error.error = std::string(message);
      c_->errors.push_back(std::move(error));
    }
  }
  void AddError(const Node& node, const Op& op, std::string_view message) {
    AddError(node, plan_.keywords[op.keyword].path, message);
  }

  struct Checkpoint {
    size_t errors = 0;
    bool truncated = false;
    size_t keyword = 0;
    size_t instance = 0;
  };
  Checkpoint Save() {
    if constexpr (kCollect) {
      return Checkpoint{c_->errors.size(), c_->truncated, c_->keyword.size(), c_->instance.size()};
    }
    return Checkpoint{};
  }
  // Drops errors recorded since `checkpoint` (a branch whose failure is not a failure).
  void DropErrors(const Checkpoint& checkpoint) {
    if constexpr (kCollect) {
      c_->errors.resize(checkpoint.errors);
      c_->truncated = checkpoint.truncated;
    }
  }
  void Restore(const Checkpoint& checkpoint) {
    if constexpr (kCollect) {
      c_->keyword.resize(checkpoint.keyword);
      c_->instance.resize(checkpoint.instance);
    }
  }
  void PushKeyword(std::string_view a, std::string_view b = {}) {
    if constexpr (kCollect) {
      c_->keyword += '/';
      c_->keyword += a;
      if (!b.empty()) {
        c_->keyword += '/';
        c_->keyword += b;
      }
    }
  }
  void PushKeywordToken(std::string_view a, std::string_view raw_token) {
    if constexpr (kCollect) PushKeyword(a, EscapePointerToken(raw_token));
  }
  void PushKeywordIndex(std::string_view a, size_t index) {
    if constexpr (kCollect) PushKeyword(a, std::to_string(index));
  }
  void PushInstance(std::string_view raw_token) {
    if constexpr (kCollect) {
      c_->instance += '/';
      c_->instance += EscapePointerToken(raw_token);
    }
  }
  void PushInstanceIndex(size_t index) {
    if constexpr (kCollect) {
      c_->instance += '/';
      c_->instance += std::to_string(index);
    }
  }

  const std::string& KeywordPath(const Op& op) const { return plan_.keywords[op.keyword].path; }

  // Evaluates `child` against `inst` under keyword path `a[/b]` (instance unchanged).
  bool InPlace(uint32_t child, dom::element inst, Marks* marks, std::string_view a,
               std::string_view b = {}) {
    const Checkpoint checkpoint = Save();
    PushKeyword(a, b);
    const bool valid = Eval(child, inst, marks);
    Restore(checkpoint);
    return valid;
  }

  // ---- keywords ------------------------------------------------------------------------------

  // The dispatch on the op kind, the innermost step of validation: one case per kind, each a
  // call or one line. It stays one switch on purpose (a jump table, no further indirection).
  bool Apply(const Node& node, const Op& op, dom::element inst, Marks* marks) {
    switch (op.kind) {
      case OpKind::kFalse:
        AddError(node, op, "no value is valid against the schema false");
        return false;
      case OpKind::kType:
        return Type(node, op, inst);
      case OpKind::kConst:
        return Const(node, op, inst);
      case OpKind::kEnum:
        return Enum(node, op, inst);
      case OpKind::kRef:
        return InPlace(op.node, inst, marks, KeywordPath(op));
      case OpKind::kDynamicRef:
        return InPlace(DynamicTarget(plan_.dynamic_refs[op.table]), inst, marks, KeywordPath(op));
      case OpKind::kAllOf:
        return AllOf(op, inst, marks);
      case OpKind::kAnyOf:
        return AnyOf(node, op, inst, marks);
      case OpKind::kOneOf:
        return OneOf(node, op, inst, marks);
      case OpKind::kNot:
        return Not(node, op, inst);
      case OpKind::kIfThenElse:
        return IfThenElse(op, inst, marks);
      case OpKind::kMultipleOf:
      case OpKind::kMaximum:
      case OpKind::kExclusiveMaximum:
      case OpKind::kMinimum:
      case OpKind::kExclusiveMinimum:
        return Number(node, op, inst);
      case OpKind::kMinLength:
      case OpKind::kMaxLength:
      case OpKind::kPattern:
      case OpKind::kFormat:
        return String(node, op, StringOf(inst));
      case OpKind::kMinItems:
      case OpKind::kMaxItems:
        return CountBound(node, op, op.kind == OpKind::kMinItems, ArrayOf(inst).size(), "items");
      case OpKind::kUniqueItems:
        return UniqueItems(node, op, ArrayOf(inst));
      case OpKind::kItems:
        return Items(plan_.items[op.table], ArrayOf(inst), marks);
      case OpKind::kContains:
        return Contains(node, op, ArrayOf(inst), marks);
      case OpKind::kMinProperties:
      case OpKind::kMaxProperties:
        return CountBound(node, op, op.kind == OpKind::kMinProperties, ObjectOf(inst).size(),
                          "properties");
      case OpKind::kProperties:
        return Properties(node, plan_.objects[op.table], ObjectOf(inst), marks);
      case OpKind::kDependentRequired:
        return DependentRequired(node, op, ObjectOf(inst));
      case OpKind::kDependentSchemas:
        return DependentSchemas(op, inst, marks);
      case OpKind::kPropertyNames:
        return PropertyNames(node, op, ObjectOf(inst));
      case OpKind::kUnevaluatedProperties:  // final_ops: any instance type
        if (!inst.is_object()) return true;
        return UnevaluatedProperties(node, op, ObjectOf(inst), marks);
      case OpKind::kUnevaluatedItems:
        if (!inst.is_array()) return true;
        return UnevaluatedItems(op, ArrayOf(inst), marks);
    }
    return true;
  }

  bool Type(const Node& node, const Op& op, dom::element inst) {
    const uint8_t bits = InstanceTypeBits(inst);
    if (bits & op.type_mask) return true;
    if constexpr (kCollect) {
      AddError(node, op, "expected " + TypeNames(op.type_mask) + ", got " + ActualTypeName(bits));
    }
    return false;
  }

  bool Const(const Node& node, const Op& op, dom::element inst) {
    assert(op.table < plan_.consts.size());
    if (JsonEqual(inst, plan_.consts[op.table], plan_.options.validation_depth_max)) return true;
    AddError(node, op, "value is not equal to the const value");
    return false;
  }

  bool Enum(const Node& node, const Op& op, dom::element inst) {
    assert(op.table < plan_.enums.size());
    Charge(plan_.enums[op.table].size());
    for (dom::element value : plan_.enums[op.table]) {
      if (JsonEqual(inst, value, plan_.options.validation_depth_max)) return true;
    }
    AddError(node, op, "value is not one of the enum values");
    return false;
  }

  bool Not(const Node& node, const Op& op, dom::element inst) {
    const Checkpoint checkpoint = Save();
    const bool matched = InPlace(op.node, inst, nullptr, KeywordPath(op));
    DropErrors(checkpoint);
    if (!matched) return true;
    AddError(node, op, "value must not be valid against the schema in not");
    return false;
  }

  uint32_t DynamicTarget(const DynamicRefPlan& dynamic) const {
    if (dynamic.anchor.empty()) return dynamic.target;
    // The outermost resource in the dynamic scope that declares the anchor wins.
    for (uint32_t resource : scope_) {
      const auto& anchors = plan_.resources[resource].dynamic_anchors;
      if (auto it = anchors.find(dynamic.anchor); it != anchors.end()) return it->second;
    }
    return dynamic.target;
  }

  bool AllOf(const Op& op, dom::element inst, Marks* marks) {
    bool valid = true;
    const auto& children = plan_.node_lists[op.table];
    for (size_t i = 0; i < children.size(); ++i) {
      if (!InPlace(children[i], inst, marks, KeywordPath(op), kCollect ? std::to_string(i) : "")) {
        valid = false;
        if constexpr (!kCollect) return false;
      }
    }
    return valid;
  }

  bool AnyOf(const Node& node, const Op& op, dom::element inst, Marks* marks) {
    const Checkpoint checkpoint = Save();
    bool any = false;
    const auto& children = plan_.node_lists[op.table];
    for (size_t i = 0; i < children.size(); ++i) {
      Marks branch;
      if (InPlace(children[i], inst, marks ? &branch : nullptr, KeywordPath(op),
                  kCollect ? std::to_string(i) : "")) {
        any = true;
        // Every valid branch contributes annotations, so all must run when they are needed.
        if (marks == nullptr) break;
        marks->Merge(branch);
      }
    }
    if (any) {
      DropErrors(checkpoint);
      return true;
    }
    AddError(node, op, "value is not valid against any schema in anyOf");
    return false;
  }

  bool OneOf(const Node& node, const Op& op, dom::element inst, Marks* marks) {
    const Checkpoint checkpoint = Save();
    const auto& children = plan_.node_lists[op.table];
    size_t valid_count = 0;
    size_t first_valid = 0, second_valid = 0;
    Marks chosen;
    for (size_t i = 0; i < children.size(); ++i) {
      Marks branch;
      if (InPlace(children[i], inst, marks ? &branch : nullptr, KeywordPath(op),
                  kCollect ? std::to_string(i) : "")) {
        if (valid_count == 0) {
          first_valid = i;
          if (marks) chosen = std::move(branch);
        } else if (valid_count == 1) {
          second_valid = i;
        }
        if (++valid_count > 1) break;
      }
    }
    if (valid_count == 1) {
      DropErrors(checkpoint);
      if (marks) marks->Merge(chosen);
      return true;
    }
    if (valid_count == 0) {
      AddError(node, op, "value is not valid against any schema in oneOf");
    } else {
      DropErrors(checkpoint);
      if constexpr (kCollect) {
        AddError(node, op,
                 "value is valid against more than one schema in oneOf (indexes " +
                     std::to_string(first_valid) + " and " + std::to_string(second_valid) + ")");
      }
    }
    return false;
  }

  bool IfThenElse(const Op& op, dom::element inst, Marks* marks) {
    const Checkpoint checkpoint = Save();
    Marks condition_marks;
    const bool condition =
        InPlace(op.node, inst, marks ? &condition_marks : nullptr, KeywordPath(op));
    DropErrors(checkpoint);
    if (condition) {
      if (marks) marks->Merge(condition_marks);
      return op.node2 == kNoNode || InPlace(op.node2, inst, marks, "then");
    }
    return op.node3 == kNoNode || InPlace(op.node3, inst, marks, "else");
  }

  bool Number(const Node& node, const Op& op, dom::element inst) {
    assert(IsNumber(inst.type()));  // number_ops only (EvalOps)
    const auto type = inst.type();
    const bool is_int = type == dom::element_type::INT64;
    const int64_t xi = is_int ? inst.get_int64().value_unsafe() : 0;
    const double x = inst.get_double().value_unsafe();
    const bool exact = is_int && op.limit_is_integer;
    bool ok = true;
    const char* relation = "";
    switch (op.kind) {
      case OpKind::kMultipleOf:
        if (exact && op.integer != 0) {
          ok = xi % op.integer == 0;
        } else {
          const double q = x / op.number;
          if (!std::isfinite(q)) {
            // Overflow: an integer is still a multiple of 1/n for integer n.
            const double inverse = 1.0 / op.number;
            ok = std::floor(x) == x && std::floor(inverse) == inverse;
          } else {
            ok = std::fabs(q - std::round(q)) <= 8 * DBL_EPSILON * std::max(1.0, std::fabs(q));
          }
        }
        relation = "a multiple of";
        break;
      case OpKind::kMaximum:
        ok = exact ? xi <= op.integer : x <= op.number;
        relation = "at most";
        break;
      case OpKind::kExclusiveMaximum:
        ok = exact ? xi < op.integer : x < op.number;
        relation = "less than";
        break;
      case OpKind::kMinimum:
        ok = exact ? xi >= op.integer : x >= op.number;
        relation = "at least";
        break;
      case OpKind::kExclusiveMinimum:
        ok = exact ? xi > op.integer : x > op.number;
        relation = "greater than";
        break;
      default:
        break;
    }
    if (ok) return true;
    if constexpr (kCollect) {
      char limit[64];
      std::snprintf(limit, sizeof limit, "%.17g", op.number);
      AddError(node, op,
               std::string("value must be ") + relation + " " +
                   (op.limit_is_integer ? std::to_string(op.integer) : limit));
    }
    return false;
  }

  // minItems/maxItems and minProperties/maxProperties: `size` against op.count.
  bool CountBound(const Node& node, const Op& op, bool is_minimum, size_t size,
                  std::string_view what) {
    if (is_minimum ? size >= op.count : size <= op.count) return true;
    if constexpr (kCollect) {
      AddError(node, op,
               std::string(is_minimum ? "expected at least " : "expected at most ") +
                   std::to_string(op.count) + " " + std::string(what) + ", got " +
                   std::to_string(size));
    }
    return false;
  }

  bool String(const Node& node, const Op& op, std::string_view text) {
    Charge(text.size() / 64);  // every string keyword reads the whole string
    switch (op.kind) {
      case OpKind::kMinLength: {
        // Byte length bounds the code point count from above: skip counting when it decides.
        if (text.size() >= op.count * 4 ||
            (text.size() >= op.count && CodePointCount(text) >= op.count)) {
          return true;
        }
        if constexpr (kCollect) {
          AddError(node, op,
                   "expected at least " + std::to_string(op.count) + " characters, got " +
                       std::to_string(CodePointCount(text)));
        }
        return false;
      }
      case OpKind::kMaxLength:
        if (text.size() <= op.count || CodePointCount(text) <= op.count) return true;
        if constexpr (kCollect) {
          AddError(node, op,
                   "expected at most " + std::to_string(op.count) + " characters, got " +
                       std::to_string(CodePointCount(text)));
        }
        return false;
      case OpKind::kPattern:
        if (RegexSearch(*plan_.regexes[op.table], text)) return true;
        if constexpr (kCollect) {
          AddError(node, op, "string does not match pattern " + plan_.regex_sources[op.table]);
        }
        return false;
      case OpKind::kFormat:
        if (CheckFormat(static_cast<FormatKind>(op.table), text)) return true;
        if constexpr (kCollect) {
          AddError(node, op,
                   "string is not a valid " +
                       std::string(FormatName(static_cast<FormatKind>(op.table))));
        }
        return false;
      default:
        return true;
    }
  }

  bool UniqueItems(const Node& node, const Op& op, dom::array array) {
    const size_t size = array.size();
    if (size < 2) return true;
    Charge(size);
    const size_t depth_max = plan_.options.validation_depth_max;
    auto duplicate = [&](size_t i, size_t j) {
      if constexpr (kCollect) {
        AddError(
            node, op,
            "items at indexes " + std::to_string(i) + " and " + std::to_string(j) + " are equal");
      }
      return false;
    };
    if (size <= 16) {
      // Small arrays: pairwise, without allocating.
      size_t i = 0;
      for (auto a = array.begin(); a != array.end(); ++a, ++i) {
        auto b = a;
        size_t j = i + 1;
        for (++b; b != array.end(); ++b, ++j) {
          if (JsonEqual(*a, *b, depth_max)) return duplicate(i, j);
        }
      }
      return true;
    }
    std::vector<dom::element> items(array.begin(), array.end());
    std::vector<std::pair<uint64_t, size_t>> hashes;
    hashes.reserve(size);
    for (size_t i = 0; i < size; ++i) hashes.emplace_back(HashValue(items[i], 8), i);
    std::sort(hashes.begin(), hashes.end());
    for (size_t i = 0; i < size; ++i) {
      for (size_t j = i + 1; j < size && hashes[j].first == hashes[i].first; ++j) {
        if (JsonEqual(items[hashes[i].second], items[hashes[j].second], depth_max)) {
          return duplicate(std::min(hashes[i].second, hashes[j].second),
                           std::max(hashes[i].second, hashes[j].second));
        }
      }
    }
    return true;
  }

  bool Items(const ItemsPlan& items, dom::array array, Marks* marks) {
    bool valid = true;
    size_t i = 0;
    for (dom::element item : array) {
      uint32_t child = kNoNode;
      uint32_t keyword = 0;
      if (i < items.prefix.size()) {
        child = items.prefix[i];
        keyword = items.prefix_keyword;
      } else if (items.rest != kNoNode) {
        child = items.rest;
        keyword = items.rest_keyword;
      } else {
        break;
      }
      const Checkpoint checkpoint = Save();
      if (child == items.rest) {
        PushKeyword(plan_.keywords[keyword].path);
      } else {
        PushKeywordIndex(plan_.keywords[keyword].path, i);
      }
      PushInstanceIndex(i);
      const bool ok = Eval(child, item, nullptr);
      Restore(checkpoint);
      if (marks) marks->Set(i);
      if (!ok) {
        valid = false;
        if constexpr (!kCollect) return false;
      }
      ++i;
    }
    return valid;
  }

  bool Contains(const Node& node, const Op& op, dom::array array, Marks* marks) {
    size_t matches = 0;
    size_t i = 0;
    for (dom::element item : array) {
      const Checkpoint checkpoint = Save();
      PushKeyword(KeywordPath(op));
      PushInstanceIndex(i);
      const bool ok = Eval(op.node, item, nullptr);
      Restore(checkpoint);
      DropErrors(checkpoint);
      if (ok) {
        ++matches;
        if (marks) marks->Set(i);
        // Enough is known once the minimum is met and no maximum or annotation needs more.
        if (!kCollect && marks == nullptr && matches >= op.count && op.count2 == UINT64_MAX) {
          return true;
        }
        if (!kCollect && matches > op.count2) return false;
      }
      ++i;
    }
    if (matches >= op.count && matches <= op.count2) return true;
    if constexpr (kCollect) {
      if (matches < op.count) {
        AddError(node, op,
                 "expected at least " + std::to_string(op.count) +
                     " items valid against contains, got " + std::to_string(matches));
      } else {
        AddError(node, op,
                 "expected at most " + std::to_string(op.count2) +
                     " items valid against contains, got " + std::to_string(matches));
      }
    }
    return false;
  }

  const PropertyEntry* FindProperty(const ObjectPlan& plan, std::string_view key) const {
    if (!plan.index.empty()) {
      auto it = plan.index.find(key);
      return it == plan.index.end() ? nullptr : &plan.entries[it->second];
    }
    for (const PropertyEntry& entry : plan.entries) {
      if (entry.name == key) return &entry;
    }
    return nullptr;
  }

  // Longer than 70 lines: the validator's hottest loop, one pass over an object's members for
  // properties, patternProperties, additionalProperties and the marks; not split yet (its cost
  // is measured by schema_bench, docs/BENCHMARKS.md).
  // NOLINTNEXTLINE(readability-function-size)
  bool Properties(const Node& node, const ObjectPlan& plan, dom::object object, Marks* marks) {
    // Every member is looked up and matched against every pattern.
    Charge(object.size() * (1 + plan.patterns.size()));
    bool valid = true;
    const size_t required_count = plan.required.size();
    uint64_t seen_small = 0;
    std::vector<bool> seen_large;
    if (required_count > 64) seen_large.assign(required_count, false);
    size_t seen_count = 0;
    size_t i = 0;
    for (auto [key, value] : object) {
      bool matched = false;
      if (const PropertyEntry* entry = FindProperty(plan, key)) {
        if (entry->required_index >= 0) {
          const size_t r = static_cast<size_t>(entry->required_index);
          if (required_count > 64) {
            if (!seen_large[r]) ++seen_count;
            seen_large[r] = true;
          } else if (!(seen_small & (uint64_t{1} << r))) {
            seen_small |= uint64_t{1} << r;
            ++seen_count;
          }
        }
        if (entry->node != kNoNode) {
          matched = true;
          if (!Member(entry->node, value, key, plan.properties_keyword, true, key)) {
            valid = false;
            if constexpr (!kCollect) return false;
          }
        }
      }
      for (const PatternEntry& pattern : plan.patterns) {
        if (!RegexSearch(*pattern.regex, key)) continue;
        matched = true;
        if (!Member(pattern.node, value, key, plan.patterns_keyword, true, pattern.source)) {
          valid = false;
          if constexpr (!kCollect) return false;
        }
      }
      if (!matched && plan.additional != kNoNode) {
        bool ok = true;
        if (plan_.nodes[plan.additional].is_false) {
          ok = false;
          if constexpr (kCollect) {
            const Checkpoint checkpoint = Save();
            PushInstance(key);
            AddError(node, plan_.keywords[plan.additional_keyword].path,
                     "property \"" + std::string(key) + "\" is not allowed");
            Restore(checkpoint);
          }
        } else {
          ok = Member(plan.additional, value, key, plan.additional_keyword, false, {});
        }
        if (!ok) {
          valid = false;
          if constexpr (!kCollect) return false;
        }
      }
      if (marks && (matched || plan.additional != kNoNode)) marks->Set(i);
      ++i;
    }
    if (seen_count == required_count) return valid;
    if constexpr (kCollect) {
      for (size_t r = 0; r < required_count; ++r) {
        const bool seen = required_count > 64 ? seen_large[r] : (seen_small >> r) & 1;
        if (seen) continue;
        AddError(node, plan_.keywords[plan.required_keyword].path,
                 "missing required property \"" + plan.required[r] + "\"");
      }
    }
    return false;
  }

  // Evaluates a member value under keyword `keyword[/token]` and instance `/key`.
  bool Member(uint32_t child, dom::element value, std::string_view key, uint32_t keyword,
              bool has_token, std::string_view raw_token) {
    const Checkpoint checkpoint = Save();
    if (has_token) {
      PushKeywordToken(plan_.keywords[keyword].path, raw_token);
    } else {
      PushKeyword(plan_.keywords[keyword].path);
    }
    PushInstance(key);
    const bool ok = Eval(child, value, nullptr);
    Restore(checkpoint);
    return ok;
  }

  bool DependentRequired(const Node& node, const Op& op, dom::object object) {
    Charge(plan_.dependent_required[op.table].size() * object.size());  // lookups scan members
    bool valid = true;
    for (const auto& [name, required] : plan_.dependent_required[op.table]) {
      if (object[name].error() != simdjson::SUCCESS) continue;
      for (const std::string& other : required) {
        if (object[other].error() == simdjson::SUCCESS) continue;
        valid = false;
        if constexpr (!kCollect) return false;
        AddError(node, op,
                 "property \"" + other + "\" is required when \"" + name + "\" is present");
      }
    }
    return valid;
  }

  bool DependentSchemas(const Op& op, dom::element inst, Marks* marks) {
    assert(op.table < plan_.dependent_schemas.size());
    bool valid = true;
    dom::object object = ObjectOf(inst);
    // Each lookup below scans the members.
    Charge(plan_.dependent_schemas[op.table].size() * object.size());
    for (const auto& [name, child] : plan_.dependent_schemas[op.table]) {
      if (object[name].error() != simdjson::SUCCESS) continue;
      // The escaped name is part of an error location: only the collecting pass needs it.
      if (!InPlace(child, inst, marks, KeywordPath(op),
                   kCollect ? EscapePointerToken(name) : std::string())) {
        valid = false;
        if constexpr (!kCollect) return false;
      }
    }
    return valid;
  }

  bool PropertyNames(const Node& node, const Op& op, dom::object object) {
    // A member name is not a document value; parse it as a JSON string to evaluate it. Only
    // schemas with propertyNames pay for this.
    thread_local dom::parser key_parser;
    bool valid = true;
    std::string literal;
    for (auto [key, value] : object) {
      literal.clear();
      json::AppendQuoted(literal, key);
      dom::element name;
      if (key_parser.parse(literal).get(name) != simdjson::SUCCESS) return false;
      const Checkpoint checkpoint = Save();
      ++property_name_depth_;
      const bool ok = InPlace(op.node, name, nullptr, KeywordPath(op));
      --property_name_depth_;
      DropErrors(checkpoint);
      if (!ok) {
        valid = false;
        if constexpr (!kCollect) return false;
        AddError(node, op, "property name \"" + std::string(key) + "\" is not valid");
      }
    }
    return valid;
  }

  bool UnevaluatedProperties(const Node& node, const Op& op, dom::object object, Marks* marks) {
    assert(marks != nullptr);
    Charge(object.size());
    bool valid = true;
    size_t i = 0;
    for (auto [key, value] : object) {
      if (!marks->Get(i)) {
        bool ok = true;
        if (plan_.nodes[op.node].is_false) {
          ok = false;
          if constexpr (kCollect) {
            const Checkpoint checkpoint = Save();
            PushInstance(key);
            AddError(node, op,
                     "property \"" + std::string(key) +
                         "\" is not evaluated and "
                         "unevaluatedProperties forbids it");
            Restore(checkpoint);
          }
        } else {
          ok = Member(op.node, value, key, op.keyword, false, {});
        }
        if (!ok) {
          valid = false;
          if constexpr (!kCollect) return false;
        }
        marks->Set(i);
      }
      ++i;
    }
    return valid;
  }

  bool UnevaluatedItems(const Op& op, dom::array array, Marks* marks) {
    assert(marks != nullptr);
    bool valid = true;
    size_t i = 0;
    for (dom::element item : array) {
      if (!marks->Get(i)) {
        const Checkpoint checkpoint = Save();
        PushKeyword(KeywordPath(op));
        PushInstanceIndex(i);
        const bool ok = Eval(op.node, item, nullptr);
        Restore(checkpoint);
        if (!ok) {
          valid = false;
          if constexpr (!kCollect) return false;
        }
        marks->Set(i);
      }
      ++i;
    }
    return valid;
  }

  const Plan& plan_;
  Collector* c_;
  Memo* memo_;  // null when the plan resolves $dynamicRef through the dynamic scope
  const uint64_t steps_max_;
  size_t depth_ = 0;
  uint64_t steps_ = 0;
  size_t depth_failures_ = 0;       // times the depth limit cut an evaluation short
  size_t property_name_depth_ = 0;  // > 0 while evaluating propertyNames
  std::vector<uint32_t> scope_;
};

}  // namespace

bool JsonEqual(dom::element a, dom::element b, size_t depth_max) {
  const auto ta = a.type();
  const auto tb = b.type();
  if (IsNumber(ta) && IsNumber(tb)) return NumbersEqual(a, b);
  if (ta != tb) return false;
  switch (ta) {
    case dom::element_type::NULL_VALUE:
      return true;
    case dom::element_type::BOOL:
      return a.get_bool().value_unsafe() == b.get_bool().value_unsafe();
    case dom::element_type::STRING:
      return a.get_string().value_unsafe() == b.get_string().value_unsafe();
    case dom::element_type::ARRAY: {
      dom::array x = a.get_array().value_unsafe();
      dom::array y = b.get_array().value_unsafe();
      if (x.size() != y.size()) return false;
      if (depth_max == 0) return false;  // too deep to compare: treat as different
      auto yi = y.begin();
      for (dom::element item : x) {
        if (!JsonEqual(item, *yi, depth_max - 1)) return false;
        ++yi;
      }
      return true;
    }
    case dom::element_type::OBJECT: {
      dom::object x = a.get_object().value_unsafe();
      dom::object y = b.get_object().value_unsafe();
      if (x.size() != y.size()) return false;
      if (depth_max == 0) return false;
      for (auto [key, value] : x) {
        dom::element other;
        if (y[key].get(other) != simdjson::SUCCESS) return false;
        if (!JsonEqual(value, other, depth_max - 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

bool PlanIsValid(const Plan& plan, dom::element instance) {
  Memo memo;
  Evaluator<false> evaluator(plan, nullptr, &memo);
  return evaluator.Eval(plan.root, instance, nullptr);
}

namespace {

// The only error of an output whose errors could not be listed: `what` says why.
void SetSingleError(const Plan& plan, Output& output, size_t errors_max, std::string what) {
  output.errors.clear();
  output.errors_truncated = errors_max == 0;
  if (errors_max > 0) {
    output.errors.push_back(Error{"", "", plan.nodes[plan.root].absolute, std::move(what)});
  }
}

std::string StepsMax(const Plan& plan) {
  return "validation_steps_max (" + std::to_string(plan.options.validation_steps_max) + " steps)";
}

}  // namespace

Output PlanValidate(const Plan& plan, dom::element instance, size_t errors_max) {
  Output output;
  // Both passes share the memo: results the fast pass found need not be found again.
  Memo memo;
  Evaluator<false> fast(plan, nullptr, &memo);
  const bool fast_valid = fast.Eval(plan.root, instance, nullptr);
  output.steps = fast.steps();
  if (fast_valid) return output;
  output.valid = false;
  if (fast.OutOfSteps()) {
    // Fail closed: the instance is not known to be valid. Errors of a pass cut short would be
    // arbitrary, so none are collected.
    output.budget_exceeded = true;
    SetSingleError(plan, output, errors_max,
                   "validation stopped: it needs more than " + StepsMax(plan));
    return output;
  }
  Collector collector;
  collector.errors_max = errors_max;
  Evaluator<true> collecting(plan, &collector, &memo);
  const bool valid = collecting.Eval(plan.root, instance, nullptr);
  output.steps += collecting.steps();
  if (collecting.OutOfSteps()) {
    // The instance is invalid (the fast pass finished), but listing why costs more than the
    // budget; errors recorded before the cut may belong to branches that did not decide.
    SetSingleError(plan, output, errors_max,
                   "instance is invalid; its errors cannot be listed within " + StepsMax(plan));
    output.errors_truncated = true;
    return output;
  }
  assert(!valid && "the collecting pass must agree with the fast pass");
  (void)valid;
  output.errors = std::move(collector.errors);
  output.errors_truncated = collector.truncated;
  if (output.errors.empty() && !output.errors_truncated && errors_max > 0) {
    output.errors.push_back(Error{"", "", plan.nodes[plan.root].absolute, "instance is invalid"});
  }
  return output;
}

}  // namespace evident::schema::internal
