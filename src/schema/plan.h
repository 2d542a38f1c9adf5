// schema/plan.h — the compiled validation plan (private to src/schema).
//
// A Plan is a flat array of Nodes, one per compiled subschema. Each Node holds its assertions
// and applicators as Ops grouped by the instance type they apply to, so validation dispatches
// once on the instance type and never looks at keywords that cannot apply. Applicators refer to
// other Nodes by index; $ref is just an index, resolved at compile time. Everything a Node needs
// at validation time (regexes, enum values, property tables) is owned by the Plan, including
// the parsed schema documents that enum/const values point into.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "evident/schema.h"

namespace re2 {
class RE2;
}

namespace evident::schema::internal {

inline constexpr uint32_t kNoNode = UINT32_MAX;

enum TypeBit : uint8_t {
  kTypeNull = 1,
  kTypeBoolean = 2,
  kTypeObject = 4,
  kTypeArray = 8,
  kTypeNumber = 16,
  kTypeString = 32,
  kTypeInteger = 64,
};

enum class OpKind : uint8_t {
  // Any instance type.
  kFalse,
  kType,
  kEnum,
  kConst,
  kRef,
  kDynamicRef,
  kAllOf,
  kAnyOf,
  kOneOf,
  kNot,
  kIfThenElse,
  // Numbers.
  kMultipleOf,
  kMaximum,
  kExclusiveMaximum,
  kMinimum,
  kExclusiveMinimum,
  // Strings.
  kMinLength,
  kMaxLength,
  kPattern,
  kFormat,
  // Arrays.
  kMinItems,
  kMaxItems,
  kUniqueItems,
  kItems,
  kContains,
  // Objects.
  kMinProperties,
  kMaxProperties,
  kProperties,  // properties + patternProperties + additionalProperties + required, one pass
  kDependentRequired,
  kDependentSchemas,
  kPropertyNames,
  // After every other keyword of the node (they read its annotations).
  kUnevaluatedProperties,
  kUnevaluatedItems,
};

struct Op {
  OpKind kind;
  uint8_t type_mask = 0;  // kType
  bool limit_is_integer = false;
  uint32_t keyword = 0;          // index into Plan::keywords
  uint32_t node = kNoNode;       // child (kRef, kNot, kContains, kPropertyNames, if-node, ...)
  uint32_t node2 = kNoNode;      // then
  uint32_t node3 = kNoNode;      // else
  uint32_t table = 0;            // index into a side table chosen by `kind`
  double number = 0;             // numeric limit
  int64_t integer = 0;           // the same limit when it is an integer
  uint64_t count = 0;            // length/count limit; kContains: minimum
  uint64_t count2 = UINT64_MAX;  // kContains: maximum
};

// A node whose whole meaning is one cheap check, answered without walking its op lists.
enum class Shortcut : uint8_t { kNone, kAlwaysTrue, kTypeOnly };

struct Node {
  uint32_t resource = 0;
  Shortcut shortcut = Shortcut::kNone;
  uint8_t shortcut_type_mask = 0;
  bool is_false = false;          // the boolean schema `false`
  bool tracks_evaluated = false;  // has unevaluated* ops: collects its own annotations
  // Reached through more than one edge (two $refs, or a $ref and its parent's keyword): the only
  // nodes that can be evaluated twice at one instance location, so the only ones memoized.
  bool shared = false;
  std::string absolute;  // "uri#/json/pointer" of this subschema
  std::vector<Op> any_ops, number_ops, string_ops, array_ops, object_ops, final_ops;
};

struct Keyword {
  std::string path;  // relative to its node, e.g. "minLength" or "properties"
};

struct PropertyEntry {
  std::string name;
  uint32_t node = kNoNode;      // kNoNode: only listed in "required"
  int32_t required_index = -1;  // position in ObjectPlan::required, or -1
};

struct PatternEntry {
  std::shared_ptr<const re2::RE2> regex;
  std::string source;  // for keyword locations
  uint32_t node = kNoNode;
};

struct ObjectPlan {
  std::vector<PropertyEntry> entries;
  std::unordered_map<std::string_view, uint32_t> index;  // name -> entry, when entries are many
  std::vector<PatternEntry> patterns;
  uint32_t additional = kNoNode;
  std::vector<std::string> required;
  uint32_t properties_keyword = 0, patterns_keyword = 0, additional_keyword = 0,
           required_keyword = 0;
};

struct ItemsPlan {
  std::vector<uint32_t> prefix;
  uint32_t rest = kNoNode;
  uint32_t prefix_keyword = 0, rest_keyword = 0;
};

struct DynamicRefPlan {
  uint32_t target = kNoNode;  // the static resolution
  std::string anchor;         // non-empty: resolve through the dynamic scope
};

struct Resource {
  std::string uri;
  std::unordered_map<std::string, uint32_t> dynamic_anchors;  // name -> node
};

enum class FormatKind : uint8_t;

// Memoization starts once an instance has taken this many steps, so that small instances never
// pay for hashing; at most this much work is repeated before it starts.
inline constexpr uint64_t kMemoStepsMinDefault = 1024;

struct Plan {
  CompileOptions options;
  uint64_t memo_steps_min = kMemoStepsMinDefault;  // tests set 0 to memoize from the first step
  Dialect dialect = Dialect::kDraft2020_12;
  uint32_t root = 0;
  bool uses_dynamic_scope = false;
  std::vector<Node> nodes;
  std::vector<Keyword> keywords;
  std::vector<Resource> resources;
  std::vector<std::vector<uint32_t>> node_lists;
  std::vector<ObjectPlan> objects;
  std::vector<ItemsPlan> items;
  std::vector<DynamicRefPlan> dynamic_refs;
  std::vector<std::shared_ptr<const re2::RE2>> regexes;
  std::vector<std::string> regex_sources;
  std::vector<std::vector<simdjson::dom::element>> enums;
  std::vector<std::vector<std::pair<std::string, std::vector<std::string>>>> dependent_required;
  std::vector<std::vector<std::pair<std::string, uint32_t>>> dependent_schemas;
  std::vector<simdjson::dom::element> consts;
  // Keeps every schema document alive: enum/const elements point into them.
  std::vector<std::unique_ptr<simdjson::dom::parser>> documents;
};

// Compiles a schema into a Plan (compile.cc; Schema::Compile wraps it).
Result<std::unique_ptr<Plan>> CompilePlan(std::string_view schema_json, const Registry& registry,
                                          const CompileOptions& options, std::string base_uri);

// Validation entry points (validate.cc).
bool PlanIsValid(const Plan& plan, simdjson::dom::element instance);
Output PlanValidate(const Plan& plan, simdjson::dom::element instance, size_t errors_max);

// JSON equality as JSON Schema defines it (1 == 1.0; object member order ignored).
bool JsonEqual(simdjson::dom::element a, simdjson::dom::element b, size_t depth_max);

}  // namespace evident::schema::internal
