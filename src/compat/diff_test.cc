// Table-driven cases of DiffSchemas: each row is an old and a new schema body, the change code
// expected at a data pointer, and its backward/forward compatibility. Rows in kBothDialects run
// once as draft 7 and once as draft 2020-12; the dialect-specific tables run once.
#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "evident/compat.h"

namespace evident {
namespace {

using C = ChangeCode;
constexpr Strictness kLenient = Strictness::kLenient;
constexpr Strictness kStrict = Strictness::kStrict;

struct DiffCase {
  const char* name;
  const char* old_body;  // members of the schema object, without "$schema"
  const char* new_body;
  std::optional<ChangeCode> code;  // nullopt: the diff must be empty
  const char* pointer;
  bool backward;
  bool forward;
  Strictness strictness;
};

DiffCase Row(const char* name, const char* old_body, const char* new_body, ChangeCode code,
             const char* pointer, bool backward, bool forward, Strictness s = kLenient) {
  return {name, old_body, new_body, code, pointer, backward, forward, s};
}
DiffCase Same(const char* name, const char* old_body, const char* new_body) {
  return {name, old_body, new_body, std::nullopt, "", true, true, kLenient};
}

enum class Dialect { kDraft7, kDraft2020 };

std::string Wrap(Dialect dialect, const char* body) {
  std::string out = dialect == Dialect::kDraft7
                        ? R"({"$schema":"http://json-schema.org/draft-07/schema#")"
                        : R"({"$schema":"https://json-schema.org/draft/2020-12/schema")";
  if (body[0] != '\0') out += std::string(",") + body;
  return out + "}";
}

const std::
    vector<DiffCase>
        kBothDialects =
            {
                // ---- type ----
                Row("type_widened_nullable", R"("type":"string")", R"("type":["string","null"])",
                    C::kTypeWidened, "", true, false),
                Row("type_narrowed_nullable", R"("type":["string","null"])", R"("type":"string")",
                    C::kTypeNarrowed, "", false, true),
                Row("type_changed", R"("type":"string")", R"("type":"integer")", C::kTypeChanged,
                    "", false, false),
                Row("integer_to_number_widens", R"("type":"integer")", R"("type":"number")",
                    C::kTypeWidened, "", true, false),
                Row("number_to_integer_narrows", R"("type":"number")", R"("type":"integer")",
                    C::kTypeNarrowed, "", false, true),
                Row("type_added_narrows", R"("minLength":0)", R"("type":"string")",
                    C::kTypeNarrowed, "", false, true),
                Row("type_removed_widens", R"("type":"string")", R"("description":"any")",
                    C::kTypeWidened, "", true, false),
                Row("nested_property_type_changed",
                    R"("type":"object","properties":{"a":{"type":"string"}})",
                    R"("type":"object","properties":{"a":{"type":"integer"}})", C::kTypeChanged,
                    "/a", false, false),
                Row("deep_property_type_narrowed",
                    R"("properties":{"a":{"properties":{"b":{"type":["integer","string"]}}}})",
                    R"("properties":{"a":{"properties":{"b":{"type":"integer"}}}})",
                    C::kTypeNarrowed, "/a/b", false, true),
                Same("number_with_integer_is_number", R"("type":"number")",
                     R"("type":["integer","number"])"),
                Same("identical_schemas", R"("type":"object","properties":{"a":{"type":"string"}})",
                     R"("type":"object","properties":{"a":{"type":"string"}})"),
                Same("title_and_description_ignored", R"("title":"A","description":"old")",
                     R"("title":"B","description":"new")"),
                Row("boolean_true_to_false", R"("properties":{"a":true})",
                    R"("properties":{"a":false})", C::kTypeNarrowed, "/a", false, true),
                Row("boolean_false_to_true", R"("properties":{"a":false})",
                    R"("properties":{"a":true})", C::kTypeWidened, "/a", true, false),
                // ---- properties: additions ----
                Row("optional_added_open_lenient",
                    R"("type":"object","properties":{"a":{"type":"string"}})",
                    R"("type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/b", true, true),
                Row("optional_added_open_strict",
                    R"("type":"object","properties":{"a":{"type":"string"}})",
                    R"("type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/b", false, true, kStrict),
                Row("optional_added_closed_lenient",
                    R"("type":"object","properties":{"a":{}},"additionalProperties":false)",
                    R"("type":"object","properties":{"a":{},"b":{"type":"integer"}},"additionalProperties":false)",
                    C::kOptionalPropertyAddedToClosedContentModel, "/b", true, false),
                Row("optional_added_closed_strict",
                    R"("type":"object","properties":{"a":{}},"additionalProperties":false)",
                    R"("type":"object","properties":{"a":{},"b":{"type":"integer"}},"additionalProperties":false)",
                    C::kOptionalPropertyAddedToClosedContentModel, "/b", true, false, kStrict),
                Row("required_property_added_new", R"("properties":{"a":{"type":"string"}})",
                    R"("properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"])",
                    C::kRequiredPropertyAdded, "/b", false, true),
                Row("required_property_added_to_closed",
                    R"("properties":{"a":{"type":"string"}},"additionalProperties":false)",
                    R"("properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"],"additionalProperties":false)",
                    C::kRequiredPropertyAdded, "/b", false, false),
                Row("existing_property_made_required", R"("properties":{"a":{"type":"string"}})",
                    R"("properties":{"a":{"type":"string"}},"required":["a"])",
                    C::kRequiredPropertyAdded, "/a", false, true),
                Row("required_only_name_added", R"("type":"object")",
                    R"("type":"object","required":["z"])", C::kRequiredPropertyAdded, "/z", false,
                    true),
                Row("nested_optional_added",
                    R"("properties":{"address":{"type":"object","properties":{"city":{"type":"string"}}}})",
                    R"("properties":{"address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}}}})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/address/zip", true, true),
                Row("nested_optional_added_strict",
                    R"("properties":{"address":{"type":"object","properties":{"city":{"type":"string"}}}})",
                    R"("properties":{"address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}}}})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/address/zip", false, true,
                    kStrict),
                Row("pointer_escapes_slash_and_tilde", R"("properties":{})",
                    R"("properties":{"a/b~c":{"type":"string"}})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/a~1b~0c", true, true),
                // ---- properties: removals and requiredness ----
                Row("required_made_optional",
                    R"("properties":{"a":{"type":"string"}},"required":["a"])",
                    R"("properties":{"a":{"type":"string"}})", C::kRequiredPropertyRemoved, "/a",
                    true, false),
                Row("optional_removed_lenient",
                    R"("properties":{"a":{"type":"string"},"b":{"type":"integer"}})",
                    R"("properties":{"a":{"type":"string"}})", C::kPropertyRemoved, "/b", true,
                    true),
                Row("optional_removed_strict",
                    R"("properties":{"a":{"type":"string"},"b":{"type":"integer"}})",
                    R"("properties":{"a":{"type":"string"}})", C::kPropertyRemoved, "/b", true,
                    false, kStrict),
                Row("required_removed",
                    R"("properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"])",
                    R"("properties":{"a":{"type":"string"}})", C::kPropertyRemoved, "/b", true,
                    false),
                Row("removed_from_closed_model",
                    R"("properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":false)",
                    R"("properties":{"a":{"type":"string"}},"additionalProperties":false)",
                    C::kPropertyRemoved, "/b", false, true),
                Row("removed_from_closed_model_strict",
                    R"("properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":false)",
                    R"("properties":{"a":{"type":"string"}},"additionalProperties":false)",
                    C::kPropertyRemoved, "/b", false, true, kStrict),
                // ---- renames ----
                Row("rename_same_position",
                    R"("properties":{"orderId":{"type":"string"},"status":{"type":"string"}},"required":["orderId","status"])",
                    R"("properties":{"orderId":{"type":"string"},"state":{"type":"string"}},"required":["orderId","state"])",
                    C::kLikelyRename, "/status", false, false),
                Row("rename_only_candidate_other_position",
                    R"("properties":{"status":{"type":"string"},"n":{"type":"integer"}})",
                    R"("properties":{"n":{"type":"integer"},"flag":{"type":"boolean"},"state":{"type":"string"}})",
                    C::kLikelyRename, "/status", false, false),
                Row("rename_in_nested_object",
                    R"("properties":{"o":{"properties":{"amountCents":{"type":"integer"}}}})",
                    R"("properties":{"o":{"properties":{"amountMinor":{"type":"integer"}}}})",
                    C::kLikelyRename, "/o/amountCents", false, false),
                Row("rename_of_untyped_equal_schemas", R"("properties":{"a":{"minLength":2}})",
                    R"("properties":{"b":{"minLength":2}})", C::kLikelyRename, "/a", false, false),
                Row("no_rename_when_type_differs", R"("properties":{"a":{"type":"string"}})",
                    R"("properties":{"b":{"type":"integer"}})", C::kPropertyRemoved, "/a", true,
                    true),
                Row("no_rename_when_type_differs_added_side",
                    R"("properties":{"a":{"type":"string"}})",
                    R"("properties":{"b":{"type":"integer"}})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/b", true, true),
                Row("rename_ambiguous_is_not_guessed",
                    R"("properties":{"x":{"type":"integer"},"a":{"type":"string"}})",
                    R"("properties":{"b":{"type":"string"},"x":{"type":"integer"},"c":{"type":"string"}})",
                    C::kPropertyRemoved, "/a", true, true),
                // ---- additionalProperties / patternProperties / dependencies ----
                Row("additional_properties_closed", R"("type":"object")",
                    R"("type":"object","additionalProperties":false)",
                    C::kAdditionalPropertiesNarrowed, "/*", false, true),
                Row("additional_properties_opened",
                    R"("type":"object","additionalProperties":false)", R"("type":"object")",
                    C::kAdditionalPropertiesWidened, "/*", true, false),
                Row("additional_properties_false_to_schema", R"("additionalProperties":false)",
                    R"("additionalProperties":{"type":"string"})", C::kAdditionalPropertiesWidened,
                    "/*", true, false),
                Row("additional_properties_schema_to_false",
                    R"("additionalProperties":{"type":"string"})",
                    R"("additionalProperties":false)", C::kAdditionalPropertiesNarrowed, "/*",
                    false, true),
                Row("additional_properties_schema_widened",
                    R"("additionalProperties":{"type":"string"})",
                    R"("additionalProperties":{"type":["string","null"]})", C::kTypeWidened, "/*",
                    true, false),
                Row("additional_properties_true_to_schema", R"("additionalProperties":true)",
                    R"("additionalProperties":{"type":"string"})", C::kTypeNarrowed, "/*", false,
                    true),
                Row("pattern_property_added", R"("type":"object")",
                    R"("type":"object","patternProperties":{"^x-":{"type":"string"}})",
                    C::kPatternPropertyAdded, "", true, true),
                Row("pattern_property_added_strict", R"("type":"object")",
                    R"("type":"object","patternProperties":{"^x-":{"type":"string"}})",
                    C::kPatternPropertyAdded, "", false, true, kStrict),
                Row("pattern_property_added_to_a_closed_model",
                    R"("type":"object","properties":{"a":{}},"additionalProperties":false)",
                    R"("type":"object","properties":{"a":{}},"additionalProperties":false,"patternProperties":{"^x-":{"type":"string"}})",
                    C::kPatternPropertyAdded, "", true, false, kStrict),
                Row("pattern_property_added_over_a_declared_property",
                    R"("type":"object","properties":{"x-a":{"type":"integer"}},"additionalProperties":false)",
                    R"("type":"object","properties":{"x-a":{"type":"integer"}},"additionalProperties":false,"patternProperties":{"^x-":{"type":"string"}})",
                    C::kPatternPropertyAdded, "", false, false),
                Row("pattern_property_added_under_an_additional_properties_schema",
                    R"("type":"object","additionalProperties":{"type":"string","maxLength":3})",
                    R"("type":"object","additionalProperties":{"type":"string","maxLength":3},"patternProperties":{"^x-":{"type":"string"}})",
                    C::kPatternPropertyAdded, "", true, false, kStrict),
                Row("pattern_property_removed", R"("patternProperties":{"^x-":{"type":"string"}})",
                    R"("type":"object")", C::kPatternPropertyRemoved, "", true, true),
                Row("pattern_property_removed_strict",
                    R"("patternProperties":{"^x-":{"type":"string"}})", R"("type":"object")",
                    C::kPatternPropertyRemoved, "", true, false, kStrict),
                Row("pattern_property_removed_from_a_closed_model",
                    R"("type":"object","additionalProperties":false,"patternProperties":{"^x-":{"type":"string"}})",
                    R"("type":"object","additionalProperties":false)", C::kPatternPropertyRemoved,
                    "", false, true, kStrict),
                Row("pattern_property_schema_changed",
                    R"("patternProperties":{"^x-":{"type":"string"}})",
                    R"("patternProperties":{"^x-":{"type":"integer"}})", C::kTypeChanged, "/*",
                    false, false),
                Row("property_names_constrained", R"("type":"object")",
                    R"("type":"object","propertyNames":{"maxLength":8})", C::kMaxLengthDecreased,
                    "", false, true),
                // ---- enum / const ----
                Row("enum_widened", R"("enum":["a","b"])", R"("enum":["a","b","c"])",
                    C::kEnumWidened, "", true, false),
                Row("enum_narrowed", R"("enum":["a","b","c"])", R"("enum":["a","b"])",
                    C::kEnumNarrowed, "", false, true),
                Row("enum_changed", R"("enum":["a","b"])", R"("enum":["a","c"])", C::kEnumChanged,
                    "", false, false),
                Row("enum_added", R"("type":"string")", R"("type":"string","enum":["a"])",
                    C::kEnumNarrowed, "", false, true),
                Row("enum_removed", R"("type":"string","enum":["a"])", R"("type":"string")",
                    C::kEnumWidened, "", true, false),
                Same("enum_reordered", R"("enum":["a","b",1])", R"("enum":[1,"b","a"])"),
                Same("enum_number_spelling", R"("enum":[1,2.5])", R"("enum":[1.0,2.5])"),
                Row("enum_of_property", R"("properties":{"status":{"enum":["new","paid"]}})",
                    R"("properties":{"status":{"enum":["new","paid","refunded"]}})",
                    C::kEnumWidened, "/status", true, false),
                Row("const_changed", R"("properties":{"kind":{"const":"a"}})",
                    R"("properties":{"kind":{"const":"b"}})", C::kConstChanged, "/kind", false,
                    false),
                Row("const_added", R"("properties":{"kind":{"type":"string"}})",
                    R"("properties":{"kind":{"type":"string","const":"b"}})", C::kConstAdded,
                    "/kind", false, true),
                Row("const_removed", R"("properties":{"kind":{"type":"string","const":"b"}})",
                    R"("properties":{"kind":{"type":"string"}})", C::kConstRemoved, "/kind", true,
                    false),
                Row("const_to_enum_widens", R"("const":"a")", R"("enum":["a","b"])",
                    C::kEnumWidened, "", true, false),
                Row("enum_to_const_narrows", R"("enum":["a","b"])", R"("const":"a")",
                    C::kEnumNarrowed, "", false, true),
                Same("const_object_member_order", R"("const":{"a":1,"b":[1,2]})",
                     R"("const":{"b":[1,2],"a":1})"),
                Row("version_marker_changed",
                    R"("properties":{"schemaVersion":{"type":"integer","const":1}})",
                    R"("properties":{"schemaVersion":{"type":"integer","const":2}})",
                    C::kVersionMarkerChanged, "/schemaVersion", true, true),
                Row("other_integer_const_is_not_a_marker", R"("properties":{"level":{"const":1}})",
                    R"("properties":{"level":{"const":2}})", C::kConstChanged, "/level", false,
                    false),
                // ---- numeric and size bounds ----
                Row("max_length_decreased", R"("maxLength":10)", R"("maxLength":5)",
                    C::kMaxLengthDecreased, "", false, true),
                Row("max_length_increased", R"("maxLength":5)", R"("maxLength":10)",
                    C::kMaxLengthIncreased, "", true, false),
                Row("max_length_added", R"("type":"string")", R"("type":"string","maxLength":64)",
                    C::kMaxLengthDecreased, "", false, true),
                Row("max_length_removed", R"("type":"string","maxLength":64)", R"("type":"string")",
                    C::kMaxLengthIncreased, "", true, false),
                Row("min_length_increased", R"("minLength":1)", R"("minLength":3)",
                    C::kMinLengthIncreased, "", false, true),
                Row("min_length_decreased", R"("minLength":3)", R"("minLength":1)",
                    C::kMinLengthDecreased, "", true, false),
                Same("min_length_zero_is_absent", R"("type":"string")",
                     R"("type":"string","minLength":0)"),
                Row("maximum_decreased", R"("maximum":100)", R"("maximum":50)",
                    C::kMaximumDecreased, "", false, true),
                Row("maximum_increased", R"("maximum":50)", R"("maximum":100.5)",
                    C::kMaximumIncreased, "", true, false),
                Row("maximum_added", R"("type":"number")", R"("type":"number","maximum":1)",
                    C::kMaximumDecreased, "", false, true),
                Row("minimum_increased", R"("minimum":0)", R"("minimum":1)", C::kMinimumIncreased,
                    "", false, true),
                Row("minimum_decreased", R"("minimum":1)", R"("minimum":-1)", C::kMinimumDecreased,
                    "", true, false),
                Row("minimum_removed", R"("minimum":1)", R"("type":"number")", C::kMinimumDecreased,
                    "", true, false),
                Row("exclusive_maximum_decreased", R"("exclusiveMaximum":10)",
                    R"("exclusiveMaximum":5)", C::kExclusiveMaximumDecreased, "", false, true),
                Row("exclusive_maximum_increased", R"("exclusiveMaximum":5)",
                    R"("exclusiveMaximum":10)", C::kExclusiveMaximumIncreased, "", true, false),
                Row("exclusive_minimum_increased", R"("exclusiveMinimum":0)",
                    R"("exclusiveMinimum":1)", C::kExclusiveMinimumIncreased, "", false, true),
                Row("exclusive_minimum_decreased", R"("exclusiveMinimum":1)",
                    R"("exclusiveMinimum":0)", C::kExclusiveMinimumDecreased, "", true, false),
                Row("max_items_decreased", R"("maxItems":10)", R"("maxItems":3)",
                    C::kMaxItemsDecreased, "", false, true),
                Row("max_items_increased", R"("maxItems":3)", R"("maxItems":10)",
                    C::kMaxItemsIncreased, "", true, false),
                Row("min_items_increased", R"("minItems":0)", R"("minItems":1)",
                    C::kMinItemsIncreased, "", false, true),
                Row("min_items_decreased", R"("minItems":2)", R"("type":"array")",
                    C::kMinItemsDecreased, "", true, false),
                Row("max_properties_decreased", R"("maxProperties":10)", R"("maxProperties":3)",
                    C::kMaxPropertiesDecreased, "", false, true),
                Row("max_properties_increased", R"("maxProperties":3)", R"("maxProperties":10)",
                    C::kMaxPropertiesIncreased, "", true, false),
                Row("min_properties_increased", R"("type":"object")",
                    R"("type":"object","minProperties":1)", C::kMinPropertiesIncreased, "", false,
                    true),
                Row("min_properties_decreased", R"("minProperties":2)", R"("minProperties":1)",
                    C::kMinPropertiesDecreased, "", true, false),
                Row("bound_on_nested_item_property",
                    R"("properties":{"lines":{"type":"array","items":{"properties":{"qty":{"maximum":99}}}}})",
                    R"("properties":{"lines":{"type":"array","items":{"properties":{"qty":{"maximum":9}}}}})",
                    C::kMaximumDecreased, "/lines/*/qty", false, true),
                Row("multiple_of_narrowed", R"("multipleOf":2)", R"("multipleOf":4)",
                    C::kMultipleOfChanged, "", false, true),
                Row("multiple_of_widened", R"("multipleOf":0.5)", R"("multipleOf":0.25)",
                    C::kMultipleOfChanged, "", true, false),
                Row("multiple_of_unrelated", R"("multipleOf":2)", R"("multipleOf":3)",
                    C::kMultipleOfChanged, "", false, false),
                Row("multiple_of_added", R"("type":"integer")",
                    R"("type":"integer","multipleOf":5)", C::kMultipleOfChanged, "", false, true),
                Row("multiple_of_removed", R"("type":"integer","multipleOf":5)",
                    R"("type":"integer")", C::kMultipleOfChanged, "", true, false),
                // ---- strings ----
                Row("pattern_added", R"("type":"string")",
                    R"("type":"string","pattern":"^[A-Z]+$")", C::kPatternAdded, "", false, true),
                Row("pattern_removed", R"("type":"string","pattern":"^[A-Z]+$")",
                    R"("type":"string")", C::kPatternRemoved, "", true, false),
                Row("pattern_changed", R"("pattern":"^[A-Z]+$")", R"("pattern":"^[A-Z0-9]+$")",
                    C::kPatternChanged, "", false, false),
                Row("format_added", R"("type":"string")", R"("type":"string","format":"date-time")",
                    C::kFormatAdded, "", false, true),
                Row("format_removed", R"("type":"string","format":"uuid")", R"("type":"string")",
                    C::kFormatRemoved, "", true, false),
                Row("format_changed", R"("properties":{"at":{"format":"date"}})",
                    R"("properties":{"at":{"format":"date-time"}})", C::kFormatChanged, "/at",
                    false, false),
                // ---- arrays ----
                Row("items_type_changed", R"("type":"array","items":{"type":"string"})",
                    R"("type":"array","items":{"type":"integer"})", C::kTypeChanged, "/*", false,
                    false),
                Row("items_added_narrows", R"("type":"array")",
                    R"("type":"array","items":{"type":"string"})", C::kTypeNarrowed, "/*", false,
                    true),
                Row("items_made_false", R"("type":"array","items":{"type":"string"})",
                    R"("type":"array","items":false)", C::kItemsChanged, "/*", false, true),
                Row("items_false_opened", R"("type":"array","items":false)", R"("type":"array")",
                    C::kItemsChanged, "/*", true, false),
                Row("items_optional_property_added",
                    R"("items":{"type":"object","properties":{"sku":{"type":"string"}}})",
                    R"("items":{"type":"object","properties":{"sku":{"type":"string"},"note":{"type":"string"}}})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/*/note", true, true),
                Row("unique_items_added", R"("type":"array")",
                    R"("type":"array","uniqueItems":true)", C::kUniqueItemsAdded, "", false, true),
                Row("unique_items_removed", R"("type":"array","uniqueItems":true)",
                    R"("type":"array","uniqueItems":false)", C::kUniqueItemsRemoved, "", true,
                    false),
                Row("contains_added", R"("type":"array")",
                    R"("type":"array","contains":{"const":"x"})", C::kContainsAdded, "", false,
                    true),
                Row("contains_removed", R"("type":"array","contains":{"const":"x"})",
                    R"("type":"array")", C::kContainsRemoved, "", true, false),
                Row("contains_schema_changed", R"("contains":{"type":"string"})",
                    R"("contains":{"type":["string","integer"]})", C::kTypeWidened, "/*",
                    true, false),
                // ---- composition ----
                Row("any_of_branch_added", R"("anyOf":[{"type":"string"},{"type":"integer"}])",
                    R"("anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}])",
                    C::kAnyOfBranchAdded, "", true, false),
                Row("any_of_branch_removed",
                    R"("anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}])",
                    R"("anyOf":[{"type":"string"},{"type":"null"}])", C::kAnyOfBranchRemoved,
                    "", false, true),
                Same("any_of_reordered",
                     R"("anyOf":[{"type":"string"},{"type":"integer"},{"enum":[1,2]}])",
                     R"("anyOf":[{"enum":[2,1]},{"type":"integer"},{"type":"string"}])"),
                Row("any_of_branch_modified",
                    R"("anyOf":[{"type":"string","maxLength":5},{"type":"integer"}])",
                    R"("anyOf":[{"type":"string","maxLength":3},{"type":"integer"}])",
                    C::kMaxLengthDecreased, "", false, true),
                Row("one_of_branch_added", R"("oneOf":[{"type":"string"}])",
                    R"("oneOf":[{"type":"string"},{"type":"integer"}])", C::kOneOfBranchAdded,
                    "", true, false),
                Row("one_of_branch_removed", R"("oneOf":[{"type":"string"},{"type":"integer"}])",
                    R"("oneOf":[{"type":"integer"}])", C::kOneOfBranchRemoved, "", false, true),
                Row("all_of_schema_added", R"("allOf":[{"type":"object"}])",
                    R"("allOf":[{"type":"object"},{"required":["id"]}])", C::kAllOfSchemaAdded,
                    "", false, true),
                Row("all_of_schema_removed", R"("allOf":[{"type":"object"},{"required":["id"]}])",
                    R"("allOf":[{"type":"object"}])", C::kAllOfSchemaRemoved, "", true, false),
                Row("all_of_first_added", R"("type":"object")",
                    R"("type":"object","allOf":[{"minProperties":1}])", C::kCompositionIntroduced,
                    "", false, true),
                Row("mixed_combinators_changed",
                    R"("anyOf":[{"type":"string"}],"allOf":[{"minLength":1}])",
                    R"("oneOf":[{"type":"string"}],"allOf":[{"minLength":1}])",
                    C::kCompositionChanged, "", false, false),
                // ---- composition judged by the data its members admit ----
                Row("any_of_introduced", R"("type":"string")",
                    R"("anyOf":[{"type":"string"},{"type":"null"}])", C::kCompositionIntroduced,
                    "", true, false),
                Row("any_of_introduced_without_the_old_type", R"("type":"string")",
                    R"("anyOf":[{"type":"integer"},{"type":"null"}])", C::kCompositionIntroduced,
                    "", false, false),
                Row("any_of_introduced_strict", R"("type":"string")",
                    R"("anyOf":[{"type":"string"},{"type":"null"}])", C::kCompositionIntroduced,
                    "", true, false, kStrict),
                Row("one_of_dropped", R"("oneOf":[{"type":"string"},{"type":"null"}])",
                    R"("type":"string")", C::kCompositionRemoved, "", false, true),
                Row("any_of_dropped_for_a_wider_type",
                    R"("anyOf":[{"type":"integer"},{"type":"null"}])",
                    R"("type":["number","null"])", C::kCompositionRemoved, "", true, false),
                Row("one_of_introduced_with_overlapping_members", R"("type":"number")",
                    R"("oneOf":[{"type":"number"},{"type":"integer"}])", C::kCompositionIntroduced,
                    "", false, true),
                Row("one_of_introduced_with_a_discriminator",
                    R"("type":"object","properties":{"kind":{"const":"card"}},"required":["kind"])",
                    R"("oneOf":[{"type":"object","properties":{"kind":{"const":"card"}},"required":["kind"]},{"type":"object","properties":{"kind":{"const":"iban"}},"required":["kind"]}])",
                    C::kCompositionIntroduced, "", true, false),
                Row("one_of_to_any_of_disjoint",
                    R"("oneOf":[{"type":"string"},{"type":"integer"}])",
                    R"("anyOf":[{"type":"string"},{"type":"integer"}])", C::kCombinatorChanged,
                    "", true, true),
                Row("one_of_to_any_of_overlapping",
                    R"("oneOf":[{"type":"number"},{"type":"integer"}])",
                    R"("anyOf":[{"type":"number"},{"type":"integer"}])", C::kCombinatorChanged,
                    "", true, false),
                Row("any_of_to_one_of_overlapping",
                    R"("anyOf":[{"type":"number"},{"type":"integer"}])",
                    R"("oneOf":[{"type":"number"},{"type":"integer"}])", C::kCombinatorChanged,
                    "", false, true),
                Row("all_of_to_any_of", R"("allOf":[{"minimum":0},{"maximum":10}])",
                    R"("anyOf":[{"minimum":0},{"maximum":10}])", C::kCombinatorChanged, "", true,
                    false),
                Row("any_of_to_all_of", R"("anyOf":[{"minimum":0},{"maximum":10}])",
                    R"("allOf":[{"minimum":0},{"maximum":10}])", C::kCombinatorChanged, "", false,
                    true),
                Row("one_of_to_any_of_member_gained_a_property",
                    R"("oneOf":[{"type":"object","properties":{"a":{"type":"string"}}}])",
                    R"("anyOf":[{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}])",
                    C::kCombinatorChanged, "", true, true),
                Row("one_of_to_any_of_member_gained_a_property_strict",
                    R"("oneOf":[{"type":"object","properties":{"a":{"type":"string"}}}])",
                    R"("anyOf":[{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}])",
                    C::kCombinatorChanged, "", false, true, kStrict),
                Row("singleton_all_of_unwrapped", R"("allOf":[{"type":"string","maxLength":5}])",
                    R"("type":"string","maxLength":5)", C::kCompositionRemoved, "", true, true),
                Row("singleton_one_of_to_all_of", R"("oneOf":[{"type":"string"}])",
                    R"("allOf":[{"type":"string"}])", C::kCombinatorChanged, "", true, true),
                Row("required_moved_into_all_of",
                    R"("type":"object","properties":{"a":{"type":"string"}},"required":["a"])",
                    R"("type":"object","properties":{"a":{"type":"string"}},"allOf":[{"required":["a"]}])",
                    C::kCompositionIntroduced, "", true, true),
                Row("required_added_through_all_of",
                    R"("type":"object","properties":{"a":{"type":"string"}})",
                    R"("type":"object","properties":{"a":{"type":"string"}},"allOf":[{"required":["a"]}])",
                    C::kCompositionIntroduced, "", false, true),
                Row("required_added_inside_all_of",
                    R"("type":"object","properties":{"a":{},"b":{}},"allOf":[{"required":["a"]}])",
                    R"("type":"object","properties":{"a":{},"b":{}},"allOf":[{"required":["a","b"]}])",
                    C::kRequiredPropertyAdded, "/b", false, true),
                Row("required_removed_inside_single_one_of",
                    R"("oneOf":[{"type":"object","properties":{"a":{}},"required":["a"]}])",
                    R"("oneOf":[{"type":"object","properties":{"a":{}}}])",
                    C::kRequiredPropertyRemoved, "/a", true, false),
                Same("any_of_repeated_member_dropped",
                     R"("anyOf":[{"type":"string"},{"type":"string"}])",
                     R"("anyOf":[{"type":"string"}])"),
                Row("one_of_member_repeated", R"("oneOf":[{"type":"string"},{"type":"integer"}])",
                    R"("oneOf":[{"type":"string"},{"type":"integer"},{"type":"string"}])",
                    C::kOneOfMemberRepeated, "", false, true),
                Row("nullable_type_spelled_as_any_of", R"("type":["string","null"])",
                    R"("anyOf":[{"type":"string"},{"type":"null"}])", C::kCompositionIntroduced,
                    "", true, true),
                Row("any_of_spelled_as_a_nullable_type",
                    R"("oneOf":[{"type":"string"},{"type":"null"}])",
                    R"("type":["string","null"],"maxLength":5)", C::kCompositionRemoved, "", false,
                    true),
                Row("nullable_type_into_any_of_of_a_narrower_string",
                    R"("type":["string","null"],"maxLength":5)",
                    R"("anyOf":[{"type":"string","maxLength":3},{"type":"null"}])",
                    C::kCompositionIntroduced, "", false, true),
                Same(
                    "keywords_of_a_type_not_admitted_constrain_nothing",
                    R"("type":"null","maxLength":5,"minimum":1,"minItems":2,"required":["a"],"pattern":"^a")",
                    R"("type":"null","maxLength":3,"minimum":2,"minItems":1,"pattern":"^b")"),
                Row("one_of_discriminator_removed",
                    R"("oneOf":[{"properties":{"k":{"const":"a"},"v":{"type":"string"}},"required":["k"]},{"properties":{"k":{"const":"b"},"v":{"type":"integer"}},"required":["k"]}])",
                    R"("oneOf":[{"properties":{"k":{"const":"a"},"v":{"type":"string"}},"required":["k"]},{"properties":{"k":{},"v":{"type":"integer"}},"required":["k"]}])",
                    C::kOneOfMembersMayOverlap, "", false, true),
                Row("one_of_member_widened_into_another",
                    R"("oneOf":[{"type":"string"},{"type":"null"}])",
                    R"("oneOf":[{"type":"string"},{"type":["null","string"]}])",
                    C::kOneOfMembersMayOverlap, "", false, true),
                Row("one_of_overlapping_branch_added",
                    R"("oneOf":[{"type":"string"},{"type":"null"}])",
                    R"("oneOf":[{"type":"string"},{"type":"null"},{"maxLength":3}])",
                    C::kOneOfMembersMayOverlap, "", false, true),
                Row("one_of_members_that_overlapped_before_change_inside",
                    R"("oneOf":[{"type":"object","properties":{"a":{}}},{"type":"object","properties":{"b":{}}}])",
                    R"("oneOf":[{"type":"object","properties":{"a":{}}},{"type":"object","properties":{"b":{},"c":{}}}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/c", true, true),
                Row("integer_bound_beyond_double_precision",
                    R"("type":"integer","maximum":9007199254740993)",
                    R"("type":"integer","maximum":9007199254740992)", C::kMaximumDecreased,
                    "", false, true),
                Row("closed_object_split_around_any_of_is_not_merged",
                    R"("properties":{"a":{"type":"string"},"b":{"type":"string"}},"additionalProperties":false)",
                    R"("properties":{"a":{"type":"string"}},"additionalProperties":false,"anyOf":[{"properties":{"b":{"type":"string"}}}])",
                    C::kPropertyRemoved, "/b", false, true),
                Row("one_of_member_not_requiring_the_discriminator_overlaps",
                    R"("type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind"])",
                    R"("oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]},{"type":"object","properties":{"x":{"type":"integer"}}}])",
                    C::kCompositionIntroduced, "", false, false),
                Row("one_of_member_forbidding_the_discriminator_is_exclusive",
                    R"("type":"object","properties":{"kind":{"const":"a"}},"required":["kind"])",
                    R"("oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]},{"type":"object","properties":{"kind":false,"x":{"type":"integer"}}}])",
                    C::kCompositionIntroduced, "", true, false),
                Row("nested_version_marker_is_not_the_payload_one",
                    R"("properties":{"payload":{"type":"object","properties":{"schemaVersion":{"const":1}},"required":["schemaVersion"]}})",
                    R"("properties":{"payload":{"anyOf":[{"type":"object","properties":{"schemaVersion":{"const":2}},"required":["schemaVersion"]}]}})",
                    C::kCompositionIntroduced, "/payload", false, false),
                Row("meaning_changed_inside_a_composition",
                    R"("properties":{"total":{"type":"integer","x-unit":"cents"}})",
                    R"("properties":{"total":{"anyOf":[{"type":"integer","x-unit":"euros"},{"type":"null"}]}})",
                    C::kMeaningChanged, "/total", false, false),
                Row("meaning_changed_against_the_additional_schema",
                    R"("type":"object","additionalProperties":{"type":"integer","x-unit":"cents"})",
                    R"("type":"object","properties":{"total":{"type":"integer","x-unit":"euros"}},"additionalProperties":{"type":"integer","x-unit":"cents"})",
                    C::kMeaningChanged, "/total", false, false),
                // ---- partially open content models ----
                Row("property_added_under_its_pattern",
                    R"("type":"object","patternProperties":{"^x-":{"type":"string"}})",
                    R"("type":"object","properties":{"x-trace":{"type":"string"}},"patternProperties":{"^x-":{"type":"string"}})",
                    C::kPropertyAddedToPartiallyOpenContentModel, "/x-trace", true, true, kStrict),
                Row("property_added_under_its_pattern_lenient",
                    R"("type":"object","patternProperties":{"^x-":{"type":"string"}})",
                    R"("type":"object","properties":{"x-trace":{"type":"string","maxLength":8}},"patternProperties":{"^x-":{"type":"string"}})",
                    C::kPropertyAddedToPartiallyOpenContentModel, "/x-trace", false, true),
                Row("property_added_under_additional_schema",
                    R"("type":"object","additionalProperties":{"type":"integer"})",
                    R"("type":"object","properties":{"n":{"type":"number"}},"additionalProperties":{"type":"integer"})",
                    C::kPropertyAddedToPartiallyOpenContentModel, "/n", true, false),
                Row("required_property_added_under_additional_schema",
                    R"("type":"object","additionalProperties":{"type":"integer"})",
                    R"("type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":{"type":"integer"})",
                    C::kRequiredPropertyAdded, "/n", false, true),
                Row("property_removed_into_additional_schema",
                    R"("type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":{"type":"integer"})",
                    R"("type":"object","additionalProperties":{"type":"integer"})",
                    C::kPropertyRemovedFromPartiallyOpenContentModel, "/n", true, true, kStrict),
                Row("property_removed_into_a_narrower_pattern",
                    R"("type":"object","properties":{"x-a":{"type":"string"}},"patternProperties":{"^x-":{"type":"string","maxLength":2}})",
                    R"("type":"object","patternProperties":{"^x-":{"type":"string","maxLength":2}})",
                    C::kPropertyRemovedFromPartiallyOpenContentModel, "/x-a", false, true),
                Row("empty_schema_added_to_open_model_strict", R"("type":"object")",
                    R"("type":"object","properties":{"extra":{}})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/extra", true, true, kStrict),
                Row("true_schema_added_to_open_model_strict", R"("type":"object")",
                    R"("type":"object","properties":{"extra":true})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/extra", true, true, kStrict),
                Row("false_removed_from_closed_model",
                    R"("properties":{"a":{"type":"string"},"legacy":false},"additionalProperties":false)",
                    R"("properties":{"a":{"type":"string"}},"additionalProperties":false)",
                    C::kPropertyRemoved, "/legacy", true, true, kStrict),
                Row("empty_schema_removed_from_open_model_strict",
                    R"("type":"object","properties":{"a":{"type":"string"},"any":{}})",
                    R"("type":"object","properties":{"a":{"type":"string"}})", C::kPropertyRemoved,
                    "/any", true, true, kStrict),
                Row("not_inner_widened_narrows", R"("not":{"type":"string"})",
                    R"("not":{"type":["string","integer"]})", C::kTypeWidened, "", false, true),
                Row("not_inner_narrowed_widens", R"("not":{"enum":["a","b"]})",
                    R"("not":{"enum":["a"]})", C::kEnumNarrowed, "", true, false),
                Row("not_added", R"("type":"string")", R"("type":"string","not":{"const":""})",
                    C::kNotChanged, "", false, true),
                Row("not_removed", R"("type":"string","not":{"const":""})", R"("type":"string")",
                    C::kNotChanged, "", true, false),
                Row("if_changed",
                    R"("if":{"properties":{"k":{"const":"a"}}},"then":{"required":["x"]})",
                    R"("if":{"properties":{"k":{"const":"b"}}},"then":{"required":["x"]})",
                    C::kConditionalChanged, "", false, false),
                Row("then_branch_narrowed",
                    R"("if":{"properties":{"k":{"const":"a"}}},"then":{"minProperties":1})",
                    R"("if":{"properties":{"k":{"const":"a"}}},"then":{"minProperties":2})",
                    C::kMinPropertiesIncreased, "", false, true),
                // ---- meaning ----
                Row("unit_changed",
                    R"("properties":{"amount":{"type":"integer","x-unit":"cents"}})",
                    R"("properties":{"amount":{"type":"integer","x-unit":"euros"}})",
                    C::kMeaningChanged, "/amount", false, false),
                Row("currency_changed",
                    R"("properties":{"price":{"type":"number","x-currency":"EUR"}})",
                    R"("properties":{"price":{"type":"number","x-currency":"USD"}})",
                    C::kMeaningChanged, "/price", false, false),
                Row("rounding_changed",
                    R"("properties":{"tax":{"type":"number","x-rounding":"half-up"}})",
                    R"("properties":{"tax":{"type":"number","x-rounding":"half-even"}})",
                    C::kMeaningChanged, "/tax", false, false),
                Row("meaning_changed",
                    R"("properties":{"status":{"type":"string","x-meaning":"payment status"}})",
                    R"("properties":{"status":{"type":"string","x-meaning":"fulfilment status"}})",
                    C::kMeaningChanged, "/status", false, false),
                Row("unit_added_to_existing", R"("properties":{"weight":{"type":"number"}})",
                    R"("properties":{"weight":{"type":"number","x-unit":"kg"}})",
                    C::kMeaningChanged, "/weight", false, false),
                Row("unit_removed", R"("properties":{"weight":{"type":"number","x-unit":"kg"}})",
                    R"("properties":{"weight":{"type":"number"}})", C::kMeaningChanged, "/weight",
                    false, false),
                Row("unit_changed_strict", R"("properties":{"d":{"x-unit":"ms"}})",
                    R"("properties":{"d":{"x-unit":"s"}})", C::kMeaningChanged, "/d", false, false,
                    kStrict),
                Row("meaning_in_array_items",
                    R"("items":{"properties":{"p":{"x-currency":"EUR"}}})",
                    R"("items":{"properties":{"p":{"x-currency":"GBP"}}})", C::kMeaningChanged,
                    "/*/p", false, false),
                Same("meaning_object_annotation_same",
                     R"("properties":{"a":{"x-meaning":{"of":"x","v":1}}})",
                     R"("properties":{"a":{"x-meaning":{"v":1,"of":"x"}}})"),
                // ---- references ----
                Row("external_ref_changed", R"("properties":{"a":{"$ref":"common.json#/money"}})",
                    R"("properties":{"a":{"$ref":"common.json#/price"}})", C::kUnresolvedRefChanged,
                    "/a", false, false),
                Same("external_ref_same",
                     R"("properties":{"a":{"$ref":"https://example.test/common.json"}})",
                     R"("properties":{"a":{"$ref":"https://example.test/common.json"}})"),
                Row("root_id_absolute_ref",
                    R"("$id":"https://example.test/s","properties":{"a":{"$ref":"https://example.test/s#/properties/b"},"b":{"type":"string"}})",
                    R"("$id":"https://example.test/s","properties":{"a":{"$ref":"https://example.test/s#/properties/b"},"b":{"type":"integer"}})",
                    C::kTypeChanged, "/a", false, false),
                Row("ref_into_properties",
                    R"("properties":{"a":{"type":"string"},"b":{"$ref":"#/properties/a"}})",
                    R"("properties":{"a":{"type":"string","maxLength":3},"b":{"$ref":"#/properties/a"}})",
                    C::kMaxLengthDecreased, "/b", false, true),
                Row("not_everything_added", "", R"("not":{})", C::kNotChanged, "", false, true),
                // ---- a oneOf member that changes may overlap another ----
                Row("one_of_member_widened_may_overlap_another",
                    R"("oneOf":[{"required":["a","b"]},{"required":["c"]}])",
                    R"("oneOf":[{"required":["a"]},{"required":["c"]}])",
                    C::kOneOfMembersMayOverlap, "", false, true),
                Row("one_of_member_narrowed_may_have_overlapped_another",
                    R"("oneOf":[{"properties":{"a":{}},"required":["a"]},{"properties":{"b":{}},"required":["b"]}])",
                    R"("oneOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{}},"required":["b"]}])",
                    C::kOneOfMembersMayOverlap, "", true, false),
                Row("one_of_member_widened_beside_a_disjoint_member",
                    R"("oneOf":[{"properties":{"kind":{"const":"card"},"n":{"maxLength":4}},"required":["kind"]},{"properties":{"kind":{"const":"bank"}},"required":["kind"]}])",
                    R"("oneOf":[{"properties":{"kind":{"const":"card"},"n":{"maxLength":8}},"required":["kind"]},{"properties":{"kind":{"const":"bank"}},"required":["kind"]}])",
                    C::kMaxLengthIncreased, "/n", true, false),
                Row("tagged_union_member_inserted_and_another_extended",
                    R"("oneOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"a"},"x":{"type":"string"}}},{"type":"object","required":["kind"],"properties":{"kind":{"const":"b"},"y":{"type":"string"}}}])", R"("oneOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"a"},"x":{"type":"string"}}},{"type":"object","required":["kind"],"properties":{"kind":{"const":"c"},"z":{"type":"string"}}},{"type":"object","required":["kind"],"properties":{"kind":{"const":"b"},"y":{"type":"string"},"w":{"type":"string"}}}])",
                    C::kOneOfBranchAdded, "", true, false),
                // ---- a property another level at the same data position already has ----
                Row("base_property_narrowed_in_an_all_of_member",
                    R"("type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"b":{}}}])",
                    R"("type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"b":{},"a":{"maxLength":3}}}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/a", false, true),
                Row("base_property_narrowed_in_an_all_of_member_strict",
                    R"("type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"b":{}}}])",
                    R"("type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"b":{},"a":{"maxLength":3}}}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/a", false, true, kStrict),
                Row("base_property_narrowed_in_a_one_of_member",
                    R"("type":"object","properties":{"a":{"type":"string"}},"oneOf":[{"properties":{"b":{}}},{"required":["c"]}])",
                    R"("type":"object","properties":{"a":{"type":"string"}},"oneOf":[{"properties":{"b":{},"a":{"maxLength":3}}},{"required":["c"]}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/a", false, true),
                Row("base_property_narrowed_in_then",
                    R"("type":"object","properties":{"a":{"type":"string"}},"if":{"required":["a"]},"then":{"properties":{"b":{}}})",
                    R"("type":"object","properties":{"a":{"type":"string"}},"if":{"required":["a"]},"then":{"properties":{"b":{},"a":{"maxLength":3}}})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/a", false, true),
                Row("base_property_repeated_wider_in_an_all_of_member",
                    R"("type":"object","properties":{"a":{"type":"string","maxLength":3}},"allOf":[{"properties":{"b":{}}}])",
                    R"("type":"object","properties":{"a":{"type":"string","maxLength":3}},"allOf":[{"properties":{"b":{},"a":{"type":"string"}}}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/a", true, true, kStrict),
                Row("base_required_property_required_again_in_an_all_of_member",
                    R"("type":"object","properties":{"a":{"type":"string"}},"required":["a"],"allOf":[{"properties":{"b":{}}}])",
                    R"("type":"object","properties":{"a":{"type":"string"}},"required":["a"],"allOf":[{"properties":{"b":{},"a":{"type":"string"}},"required":["a"]}])",
                    C::kRequiredPropertyAdded, "/a", true, true),
                Row("base_optional_property_required_in_an_all_of_member",
                    R"("type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"b":{}}}])",
                    R"("type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"b":{},"a":{"type":"string"}},"required":["a"]}])",
                    C::kRequiredPropertyAdded, "/a", false, true, kStrict),
                Row("member_requires_a_name_the_base_requires",
                    R"("type":"object","properties":{"a":{}},"required":["a"],"allOf":[{"properties":{"a":{}}}])",
                    R"("type":"object","properties":{"a":{}},"required":["a"],"allOf":[{"properties":{"a":{}},"required":["a"]}])",
                    C::kRequiredPropertyAdded, "/a", true, true),
                Row("member_no_longer_requires_a_name_the_base_requires",
                    R"("type":"object","properties":{"a":{}},"required":["a"],"allOf":[{"properties":{"a":{}},"required":["a"]}])",
                    R"("type":"object","properties":{"a":{}},"required":["a"],"allOf":[{"properties":{"a":{}}}])",
                    C::kRequiredPropertyRemoved, "/a", true, true),
                Row("member_constraint_on_a_base_property_removed",
                    R"("type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"a":{"maxLength":3},"b":{}}}])",
                    R"("type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"b":{}}}])",
                    C::kPropertyRemoved, "/a", true, false),
                Row("property_added_beside_an_additional_properties_schema_in_an_all_of_member",
                    R"("type":"object","allOf":[{"additionalProperties":{"type":"string"}}])",
                    R"("type":"object","properties":{"a":{"type":"integer"}},"allOf":[{"additionalProperties":{"type":"string"}}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/a", false, true),
                Row("property_added_beside_an_additional_properties_schema_in_an_all_of_member_"
                    "strict",
                    R"("type":"object","allOf":[{"additionalProperties":{"type":"string"}}])",
                    R"("type":"object","properties":{"a":{"type":"string","maxLength":9}},"allOf":[{"additionalProperties":{"type":"string"}}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/a", false, true, kStrict),
                Row("property_added_inside_not_is_judged_strictly",
                    R"("type":"object","not":{"properties":{"a":{"type":"string"}},"required":["a"]})",
                    R"("type":"object","not":{"properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"]})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/b", true, false),
                Row("property_removed_inside_not_is_judged_strictly",
                    R"("type":"object","not":{"properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"]})",
                    R"("type":"object","not":{"properties":{"a":{"type":"string"}},"required":["a"]})",
                    C::kPropertyRemoved, "/b", false, true),
                // An array item has levels too: an allOf member's `items`, and `contains` for some
                // items.
                Row("item_property_added_beside_an_all_of_items_that_declares_it",
                    R"("type":"array","items":{"type":"object"},"allOf":[{"items":{"properties":{"a":{"type":"string"}}}}])",
                    R"("type":"array","items":{"type":"object","properties":{"a":{"type":"integer"}}},"allOf":[{"items":{"properties":{"a":{"type":"string"}}}}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/*/a", false, true),
                Row("item_property_added_as_an_all_of_items_declares_it_strict",
                    R"("type":"array","items":{"type":"object"},"allOf":[{"items":{"properties":{"a":{"type":"string"}}}}])",
                    R"("type":"array","items":{"type":"object","properties":{"a":{"type":"string"}}},"allOf":[{"items":{"properties":{"a":{"type":"string"}}}}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/*/a", true, true, kStrict),
                Row("item_property_added_beside_contains_that_declares_it",
                    R"("type":"array","items":{"type":"object"},"contains":{"properties":{"a":{"type":"string"}},"required":["a"]})",
                    R"("type":"array","items":{"type":"object","properties":{"a":{"type":"integer"}}},"contains":{"properties":{"a":{"type":"string"}},"required":["a"]})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/*/a", false, true),
                Row("item_property_added_to_a_referenced_items_schema_beside_an_all_of_items",
                    R"("type":"array","items":{"$ref":"#/definitions/it"},"allOf":[{"items":{"properties":{"a":{"type":"string"}}}}],"definitions":{"it":{"type":"object"}})",
                    R"("type":"array","items":{"$ref":"#/definitions/it"},"allOf":[{"items":{"properties":{"a":{"type":"string"}}}}],"definitions":{"it":{"type":"object","properties":{"a":{"type":"integer"}}}})",
                    C::kOptionalPropertyAddedToOpenContentModel, "/*/a", false, true),
                Row("item_property_added_beside_an_any_of_member_items_that_declares_it",
                    R"("type":"array","items":{"type":"object"},"anyOf":[{"items":{"properties":{"a":{"type":"string"}}}},{"maxItems":3}])",
                    R"("type":"array","items":{"type":"object","properties":{"a":{"type":"integer"}}},"anyOf":[{"items":{"properties":{"a":{"type":"string"}}}},{"maxItems":3}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/*/a", false, true),
                Row("item_schema_added_whole_beside_an_all_of_items_that_declares_its_property",
                    R"("type":"array","allOf":[{"items":{"properties":{"a":{"type":"string"}}}}])",
                    R"("type":"array","items":{"properties":{"a":{"type":"integer"}}},"allOf":[{"items":{"properties":{"a":{"type":"string"}}}}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/*/a", false, true),
                Row("property_named_star_gains_a_member_its_all_of_twin_declares",
                    R"("type":"object","properties":{"*":{"type":"object"}},"allOf":[{"properties":{"*":{"properties":{"a":{"type":"string"}}}}}])",
                    R"("type":"object","properties":{"*":{"type":"object","properties":{"a":{"type":"integer"}}}},"allOf":[{"properties":{"*":{"properties":{"a":{"type":"string"}}}}}])",
                    C::kOptionalPropertyAddedToOpenContentModel, "/*/a", false, true),
                Row("item_property_removed_beside_an_all_of_items_that_declares_it",
                    R"("type":"array","items":{"type":"object","properties":{"a":{"type":"string","maxLength":3}}},"allOf":[{"items":{"properties":{"a":{"type":"string"}}}}])",
                    R"("type":"array","items":{"type":"object"},"allOf":[{"items":{"properties":{"a":{"type":"string"}}}}])",
                    C::kPropertyRemoved, "/*/a", true, false),
};

// Draft 7: `definitions`, items arrays, additionalItems, `$id` anchors, siblings of `$ref`
// ignored, `dependencies`.
const std::vector<DiffCase> kDraft7Only = {
    Row("d7_tuple_item_property_added_beside_an_all_of_tuple_that_declares_it",
        R"("type":"array","items":[{"type":"object"}],"allOf":[{"items":[{"properties":{"a":{"type":"string"}}}]}])",
        R"("type":"array","items":[{"type":"object","properties":{"a":{"type":"integer"}}}],"allOf":[{"items":[{"properties":{"a":{"type":"string"}}}]}])",
        C::kOptionalPropertyAddedToOpenContentModel, "/0/a", false, true),
    Row("d7_dependencies_list_name_added_as_a_property",
        R"("type":"object","properties":{"card":{"type":"string"}},"dependencies":{"card":["billing"]})",
        R"("type":"object","properties":{"card":{"type":"string"},"billing":{"type":"object"}},"dependencies":{"card":["billing"]})",
        C::kOptionalPropertyAddedToOpenContentModel, "/billing", false, true),
    Row("d7_dependencies_schema_declaring_a_name_added_at_the_root",
        R"("type":"object","properties":{"card":{"type":"string"}},"dependencies":{"card":{"properties":{"billing":{"type":"string"}}}})",
        R"("type":"object","properties":{"card":{"type":"string"},"billing":{"type":"integer"}},"dependencies":{"card":{"properties":{"billing":{"type":"string"}}}})",
        C::kOptionalPropertyAddedToOpenContentModel, "/billing", false, true),
    Row("d7_definitions_ref_type_changed",
        R"("definitions":{"id":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/id"}})",
        R"("definitions":{"id":{"type":"integer"}},"properties":{"a":{"$ref":"#/definitions/id"}})",
        C::kTypeChanged, "/a", false, false),
    Row("d7_tuple_position_changed",
        R"("type":"array","items":[{"type":"string"},{"type":"integer"}])",
        R"("type":"array","items":[{"type":"string"},{"type":"string"}])", C::kTypeChanged, "/1",
        false, false),
    Row("d7_tuple_grows_into_closed_rest", R"("items":[{"type":"string"}],"additionalItems":false)",
        R"("items":[{"type":"string"},{"type":"integer"}],"additionalItems":false)",
        C::kItemsChanged, "/1", true, false),
    Row("d7_additional_items_false_removed",
        R"("items":[{"type":"string"}],"additionalItems":false)", R"("items":[{"type":"string"}])",
        C::kItemsChanged, "/*", true, false),
    Row("d7_additional_items_false_to_true",
        R"("items":[{"type":"string"}],"additionalItems":false)",
        R"("items":[{"type":"string"}],"additionalItems":true)", C::kItemsChanged, "/*", true,
        false),
    Same("d7_tuple_grows_under_its_rest",
         R"("items":[{"type":"string"}],"additionalItems":{"type":"integer"})",
         R"("items":[{"type":"string"},{"type":"integer"}],"additionalItems":{"type":"integer"})"),
    Same("d7_open_tuple_grows_by_an_empty_schema", R"("items":[{"type":"string"}])",
         R"("items":[{"type":"string"},{}])"),
    Row("d7_open_tuple_grows_by_a_schema", R"("items":[{"type":"string"}])",
        R"("items":[{"type":"string"},{"type":"integer"}])", C::kTypeNarrowed, "/1", false, true),
    Row("d7_tuple_shrinks_into_its_rest",
        R"("items":[{"type":"string"},{"type":"integer"}],"additionalItems":{"type":"number"})",
        R"("items":[{"type":"string"}],"additionalItems":{"type":"number"})", C::kTypeWidened, "/1",
        true, false),
    Row("d7_unevaluated_properties_is_not_a_keyword_there",
        R"("unevaluatedProperties":{"type":"integer"})",
        R"("properties":{"x":{"type":"integer"}},"unevaluatedProperties":{"type":"integer"})",
        C::kOptionalPropertyAddedToOpenContentModel, "/x", false, true, kStrict),
    Row("d7_additional_items_narrowed", R"("items":[{"type":"string"}])",
        R"("items":[{"type":"string"}],"additionalItems":{"type":"integer"})", C::kTypeNarrowed,
        "/*", false, true),
    Row("d7_id_anchor_ref",
        R"("definitions":{"m":{"$id":"#money","type":"integer"}},"properties":{"p":{"$ref":"#money"}})",
        R"("definitions":{"m":{"$id":"#money","type":"number"}},"properties":{"p":{"$ref":"#money"}})",
        C::kTypeWidened, "/p", true, false),
    Same(
        "d7_ref_siblings_ignored",
        R"("definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","maxLength":5}})",
        R"("definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","maxLength":2}})"),
    Row("d7_ref_sibling_unit_counts",
        R"("definitions":{"m":{"type":"integer"}},"properties":{"a":{"$ref":"#/definitions/m","x-unit":"cents"}})",
        R"("definitions":{"m":{"type":"integer"}},"properties":{"a":{"$ref":"#/definitions/m","x-unit":"euros"}})",
        C::kMeaningChanged, "/a", false, false),
    Row("d7_dependencies_removed", R"("dependencies":{"card":["billing"]})", R"("type":"object")",
        C::kDependencyRemoved, "", true, false),
    Row("d7_dependencies_added", R"("type":"object")", R"("dependencies":{"card":["billing"]})",
        C::kDependencyAdded, "", false, true),
    Row("d7_recursive_tree",
        R"("definitions":{"node":{"type":"object","properties":{"v":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/definitions/node"}}}}},"$ref":"#/definitions/node")",
        R"("definitions":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/definitions/node"}}}}},"$ref":"#/definitions/node")",
        C::kTypeChanged, "/v", false, false),
};

// Draft 2020-12: `$defs`, prefixItems, `$anchor`, siblings of `$ref` apply, dependentRequired,
// unevaluatedProperties, min/maxContains.
const std::vector<DiffCase> kDraft2020Only =
    {
        Row("d20_defs_ref_type_changed",
            R"("$defs":{"id":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/id"}})",
            R"("$defs":{"id":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/id"}})",
            C::kTypeChanged, "/a", false, false),
        Row("d20_ref_chain",
            R"("$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/c"},"c":{"enum":[1,2]}},"properties":{"x":{"$ref":"#/$defs/a"}})",
            R"("$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/c"},"c":{"enum":[1]}},"properties":{"x":{"$ref":"#/$defs/a"}})",
            C::kEnumNarrowed, "/x", false, true),
        Same(
            "d20_def_renamed_same_content",
            R"("$defs":{"money":{"type":"integer"}},"properties":{"p":{"$ref":"#/$defs/money"}})",
            R"("$defs":{"amount":{"type":"integer"}},"properties":{"p":{"$ref":"#/$defs/amount"}})"),
        Row("d20_shared_def_reported_at_each_use",
            R"("$defs":{"m":{"type":"integer","x-currency":"EUR"}},"properties":{"a":{"$ref":"#/$defs/m"},"b":{"$ref":"#/$defs/m"}})",
            R"("$defs":{"m":{"type":"integer","x-currency":"USD"}},"properties":{"a":{"$ref":"#/$defs/m"},"b":{"$ref":"#/$defs/m"}})",
            C::kMeaningChanged, "/b", false, false),
        Row("d20_ref_siblings_apply",
            R"("$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s","maxLength":5}})",
            R"("$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s","maxLength":2}})",
            C::kMaxLengthDecreased, "/a", false, true),
        Row("d20_anchor_ref",
            R"("$defs":{"m":{"$anchor":"money","type":"integer"}},"properties":{"p":{"$ref":"#money"}})",
            R"("$defs":{"m":{"$anchor":"money","type":"string"}},"properties":{"p":{"$ref":"#money"}})",
            C::kTypeChanged, "/p", false, false),
        Row("d20_embedded_id_ref",
            R"("$defs":{"addr":{"$id":"address.json","properties":{"zip":{"type":"string"}}}},"properties":{"a":{"$ref":"address.json"}})",
            R"("$defs":{"addr":{"$id":"address.json","properties":{"zip":{"type":"integer"}}}},"properties":{"a":{"$ref":"address.json"}})",
            C::kTypeChanged, "/a/zip", false, false),
        Row("d20_prefix_items_changed", R"("prefixItems":[{"type":"string"},{"type":"integer"}])",
            R"("prefixItems":[{"type":"string"},{"type":"number"}])", C::kTypeWidened, "/1", true,
            false),
        Same("d20_tuple_grows_under_its_rest",
             R"("prefixItems":[{"type":"string"}],"items":{"type":"integer"})",
             R"("prefixItems":[{"type":"string"},{"type":"integer"}],"items":{"type":"integer"})"),
        Same("d20_open_tuple_grows_by_an_empty_schema", R"("prefixItems":[{"type":"string"}])",
             R"("prefixItems":[{"type":"string"},true])"),
        Row("d20_items_false_removed", R"("prefixItems":[{"type":"string"}],"items":false)",
            R"("prefixItems":[{"type":"string"}])", C::kItemsChanged, "/*", true, false),
        Row("d20_tuple_shrinks_into_a_closed_rest",
            R"("prefixItems":[{"type":"string"},{"type":"integer"}],"items":false)",
            R"("prefixItems":[{"type":"string"}],"items":false)", C::kItemsChanged, "/1", false,
            true),
        Row("d20_unevaluated_properties_schema_covers_added",
            R"("type":"object","unevaluatedProperties":{"type":"string"})",
            R"("type":"object","properties":{"s":{"type":"string"}},"unevaluatedProperties":{"type":"string"})",
            C::kPropertyAddedToPartiallyOpenContentModel, "/s", true, true, kStrict),
        Row("d20_unevaluated_properties_beside_an_any_of_declaring_the_name_is_not_judged",
            R"("anyOf":[{"properties":{"x":{"type":"string"}}},{}],"unevaluatedProperties":{"type":"integer"})",
            R"("anyOf":[{"properties":{"x":{"type":"string"}}},{}],"properties":{"x":{"type":"integer"}},"unevaluatedProperties":{"type":"integer"})",
            C::kPropertyAddedToPartiallyOpenContentModel, "/x", false, false, kStrict),
        Row("d20_unevaluated_properties_beside_an_all_of_member_declaring_the_name",
            R"("allOf":[{"properties":{"x":{"type":"string"}}}],"unevaluatedProperties":{"type":"integer"})",
            R"("allOf":[{"properties":{"x":{"type":"string"}}}],"properties":{"x":{"type":"integer"}},"unevaluatedProperties":{"type":"integer"})",
            C::kOptionalPropertyAddedToOpenContentModel, "/x", false, true, kStrict),
        Row("d20_combinators_on_a_ref_site_and_its_target_are_not_lifted", R"("type":"object")",
            R"("$ref":"#/$defs/T","anyOf":[{"minProperties":0}],"$defs":{"T":{"type":"object","anyOf":[{"required":["id"]}]}})",
            C::kCompositionChanged, "", false, false),
        Row("d20_keyword_beside_ref_repeats_the_target",
            R"("properties":{"a":{},"b":{}},"required":["a"])",
            R"("$defs":{"n":{"required":["b"]}},"$ref":"#/$defs/n","properties":{"a":{},"b":{}},"required":["a"])",
            C::kUnresolvedRefChanged, "", false, false),
        Same("d20_keyword_beside_ref_repeating_the_target_unchanged",
             R"("$defs":{"n":{"required":["b"]}},"$ref":"#/$defs/n","required":["a"])",
             R"("$defs":{"n":{"required":["b"]}},"$ref":"#/$defs/n","required":["a"])"),
        Row("d20_prefix_items_closed_rest_grows",
            R"("prefixItems":[{"type":"string"}],"items":false)",
            R"("prefixItems":[{"type":"string"},{"type":"string"}],"items":false)",
            C::kItemsChanged, "/1", true, false),
        Row("d20_dependent_required_grew", R"("dependentRequired":{"card":["billing"]})",
            R"("dependentRequired":{"card":["billing","cvc"]})", C::kDependencyChanged, "", false,
            true),
        Row("d20_dependent_required_shrank", R"("dependentRequired":{"card":["billing","cvc"]})",
            R"("dependentRequired":{"card":["cvc"]})", C::kDependencyChanged, "", true, false),
        Row("d20_dependent_required_changed", R"("dependentRequired":{"card":["billing"]})",
            R"("dependentRequired":{"card":["cvc"]})", C::kDependencyChanged, "", false, false),
        Row("d20_dependent_schema_widened", R"("dependentSchemas":{"card":{"required":["cvc"]}})",
            R"("dependentSchemas":{"card":{"required":[]}})", C::kRequiredPropertyRemoved, "/cvc",
            true, false),
        Row("d20_dependent_schemas_added", R"("type":"object")",
            R"("dependentSchemas":{"card":{"required":["cvc"]}})", C::kDependencyAdded, "", false,
            true),
        Row("d20_unevaluated_properties_closed", R"("type":"object")",
            R"("type":"object","unevaluatedProperties":false)", C::kAdditionalPropertiesNarrowed,
            "/*", false, true),
        Row("d20_unevaluated_closed_then_added",
            R"("properties":{"a":{}},"unevaluatedProperties":false)",
            R"("properties":{"a":{},"b":{}},"unevaluatedProperties":false)",
            C::kOptionalPropertyAddedToClosedContentModel, "/b", true, false),
        Row("d20_max_contains_decreased", R"("contains":{"type":"string"},"maxContains":3)",
            R"("contains":{"type":"string"},"maxContains":2)", C::kMaxContainsDecreased, "", false,
            true),
        Row("d20_max_contains_increased", R"("contains":{"type":"string"},"maxContains":2)",
            R"("contains":{"type":"string"},"maxContains":3)", C::kMaxContainsIncreased, "", true,
            false),
        Row("d20_min_contains_increased", R"("contains":{"type":"string"})",
            R"("contains":{"type":"string"},"minContains":2)", C::kMinContainsIncreased, "", false,
            true),
        Row("d20_min_contains_decreased", R"("contains":{"type":"string"},"minContains":2)",
            R"("contains":{"type":"string"},"minContains":0)", C::kMinContainsDecreased, "", true,
            false),
        Row("d20_recursive_linked_list",
            R"("$defs":{"node":{"properties":{"v":{"type":"string"},"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node")",
            R"("$defs":{"node":{"properties":{"v":{"type":"string","x-unit":"m"},"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node")",
            C::kMeaningChanged, "/v", false, false),
        Row("d20_mutual_recursion",
            R"("$defs":{"a":{"properties":{"b":{"$ref":"#/$defs/b"},"n":{"type":"integer"}}},"b":{"properties":{"a":{"$ref":"#/$defs/a"}}}},"$ref":"#/$defs/a")",
            R"("$defs":{"a":{"properties":{"b":{"$ref":"#/$defs/b"},"n":{"type":"integer","maximum":9}}},"b":{"properties":{"a":{"$ref":"#/$defs/a"}}}},"$ref":"#/$defs/a")",
            C::kMaximumDecreased, "/n", false, true),
        Row("d20_self_referencing_any_of",
            R"("$defs":{"n":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"string"}]}},"$ref":"#/$defs/n")",
            R"("$defs":{"n":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"integer"}]}},"$ref":"#/$defs/n")",
            C::kTypeChanged, "", false, false),
        Row("d20_dynamic_ref_changed", R"("properties":{"n":{"$dynamicRef":"#node"}})",
            R"("properties":{"n":{"$dynamicRef":"#leaf"}})", C::kUnresolvedRefChanged, "/n", false,
            false),
        Row("d20_percent_encoded_ref",
            R"("$defs":{"a b":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a%20b"}})",
            R"("$defs":{"a b":{"type":"boolean"}},"properties":{"x":{"$ref":"#/$defs/a%20b"}})",
            C::kTypeChanged, "/x", false, false),
        Row("d20_recursive_node_narrowed_where_it_recurs_under_not",
            R"("$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"child":{"$ref":"#/$defs/node"}},"not":{"type":"object","properties":{"neg":{"$ref":"#/$defs/node"}},"required":["neg"]}}})",
            R"("$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"name":{"type":"string","maxLength":3},"child":{"$ref":"#/$defs/node"}},"not":{"type":"object","properties":{"neg":{"$ref":"#/$defs/node"}},"required":["neg"]}}})",
            C::kMaxLengthDecreased, "/neg/name", true, false),
        Row("d20_tuple_item_property_added_beside_an_all_of_tuple_that_declares_it",
            R"("type":"array","prefixItems":[{"type":"object"}],"allOf":[{"prefixItems":[{"properties":{"a":{"type":"string"}}}]}])",
            R"("type":"array","prefixItems":[{"type":"object","properties":{"a":{"type":"integer"}}}],"allOf":[{"prefixItems":[{"properties":{"a":{"type":"string"}}}]}])",
            C::kOptionalPropertyAddedToOpenContentModel, "/0/a", false, true),
        Row("d20_referenced_tuple_entry_is_not_property_0",
            R"("type":"array","prefixItems":[{"$ref":"#/$defs/it"}],"properties":{"0":{"required":["a"]}},"$defs":{"it":{"type":"object"}})",
            R"("type":"array","prefixItems":[{"$ref":"#/$defs/it"}],"properties":{"0":{"required":["a"]}},"$defs":{"it":{"type":"object","required":["a"]}})",
            C::kRequiredPropertyAdded, "/0/a", false, true, kStrict),
        Row("d20_tuple_position_added_whole_beside_an_all_of_tuple_that_declares_it",
            R"("type":"array","prefixItems":[{"type":"object"}],"allOf":[{"prefixItems":[{},{"properties":{"a":{"type":"string"}}}]}])",
            R"("type":"array","prefixItems":[{"type":"object"},{"properties":{"a":{"type":"integer"}}}],"allOf":[{"prefixItems":[{},{"properties":{"a":{"type":"string"}}}]}])",
            C::kOptionalPropertyAddedToOpenContentModel, "/1/a", false, true),
        Row("d20_rest_item_property_added_past_a_tuple_entry_that_declares_it",
            R"("type":"array","prefixItems":[{"type":"object","properties":{"a":{"type":"string"}}}],"items":{"type":"object"})",
            R"("type":"array","prefixItems":[{"type":"object","properties":{"a":{"type":"string"}}}],"items":{"type":"object","properties":{"a":{"type":"integer"}}})",
            C::kOptionalPropertyAddedToOpenContentModel, "/*/a", true, true),
        Row("d20_rest_item_property_added_beside_an_all_of_tuple_that_may_declare_it",
            R"("type":"array","items":{"type":"object"},"allOf":[{"prefixItems":[{},{"properties":{"a":{"type":"string"}}}]}])",
            R"("type":"array","items":{"type":"object","properties":{"a":{"type":"integer"}}},"allOf":[{"prefixItems":[{},{"properties":{"a":{"type":"string"}}}]}])",
            C::kOptionalPropertyAddedToOpenContentModel, "/*/a", false, true),
        Row("d20_tuple_grows_under_unevaluated_items_it_matches",
            R"("type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"unevaluatedItems":{"type":"string"})",
            R"("type":"array","prefixItems":[{"type":"string"},{"type":"number"},{"type":"string","maxLength":4}],"unevaluatedItems":{"type":"string"})",
            C::kMaxLengthDecreased, "/2", false, true, kStrict),
        Same(
            "d20_tuple_grows_into_the_unevaluated_items_schema",
            R"("type":"array","prefixItems":[{"type":"string"}],"unevaluatedItems":{"type":"string"})",
            R"("type":"array","prefixItems":[{"type":"string"},{"type":"string"}],"unevaluatedItems":{"type":"string"})"),
        Row("d20_tuple_shrinks_into_an_unevaluated_items_schema_of_another_type",
            R"("type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"unevaluatedItems":{"type":"string"})",
            R"("type":"array","prefixItems":[{"type":"string"}],"unevaluatedItems":{"type":"string"})",
            C::kTypeChanged, "/1", false, false),
        Row("d20_property_added_beside_a_then_that_declares_it",
            R"("type":"object","properties":{"k":{"type":"integer"}},"if":{"properties":{"k":{"const":1}},"required":["k"]},"then":{"properties":{"a":{"type":"string"}}})",
            R"("type":"object","properties":{"k":{"type":"integer"},"a":{"type":"string","maxLength":3}},"if":{"properties":{"k":{"const":1}},"required":["k"]},"then":{"properties":{"a":{"type":"string"}}})",
            C::kOptionalPropertyAddedToOpenContentModel, "/a", false, true),
        Row("d20_property_added_beside_an_any_of_member_that_declares_it",
            R"("type":"object","properties":{"k":{"type":"integer"}},"anyOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"required":["k"]}])",
            R"("type":"object","properties":{"k":{"type":"integer"},"a":{"type":"integer"}},"anyOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"required":["k"]}])",
            C::kOptionalPropertyAddedToOpenContentModel, "/a", false, true),
        Row("d20_property_removed_beside_dependent_schemas_that_declare_it",
            R"("type":"object","properties":{"k":{"type":"integer"},"a":{"type":"string","maxLength":3}},"dependentSchemas":{"k":{"properties":{"a":{"type":"string"}}}})",
            R"("type":"object","properties":{"k":{"type":"integer"}},"dependentSchemas":{"k":{"properties":{"a":{"type":"string"}}}})",
            C::kPropertyRemoved, "/a", true, false),
        Row("d20_property_added_beside_a_layered_ref_member_that_declares_it",
            R"("$defs":{"base":{"type":"object","properties":{"a":{"type":"string"}}}},"allOf":[{"$ref":"#/$defs/base","properties":{"b":{"type":"integer"}}},{"properties":{"c":{"type":"string"}}}])", R"("$defs":{"base":{"type":"object","properties":{"a":{"type":"string"}}}},"allOf":[{"$ref":"#/$defs/base","properties":{"b":{"type":"integer"}}},{"properties":{"c":{"type":"string"},"a":{"type":"string","maxLength":3}}}])",
            C::kOptionalPropertyAddedToOpenContentModel, "/a", false, true),
        Row("d20_composition_introduced_inside_not_is_judged_strictly",
            R"("not":{"type":"object","required":["k"]})",
            R"("not":{"anyOf":[{"type":"object","required":["k"],"properties":{"a":{"type":"string"}}},{"type":"object","required":["k"],"properties":{"a":{"type":"string"}},"minProperties":5}]})",
            C::kCompositionIntroduced, "", true, false),
        Row("d20_combinator_change_probes_see_the_parent_declaration",
            R"("type":"object","properties":{"a":{"type":"string"}},"anyOf":[{"properties":{"k":{"const":1}},"required":["k"],"allOf":[{"minProperties":1}]},{"properties":{"k":{"const":2}},"required":["k"]}])",
            R"("type":"object","properties":{"a":{"type":"string"}},"oneOf":[{"properties":{"k":{"const":1},"a":{"maxLength":3}},"required":["k"],"allOf":[{"minProperties":1}]},{"properties":{"k":{"const":2}},"required":["k"]}])",
            C::kCombinatorChanged, "", false, true),
        Row("d20_member_declares_a_property_it_already_required",
            R"("properties":{"a":{"type":"string"}},"allOf":[{"required":["a"]}])",
            R"("properties":{"a":{"type":"string"}},"allOf":[{"required":["a"],"properties":{"a":{"type":"string"}}}])",
            C::kRequiredPropertyAdded, "/a", true, true),
        Row("d20_unevaluated_properties_beside_a_dynamic_ref_is_not_judged",
            R"("$defs":{"ext":{"$dynamicAnchor":"ext","properties":{"c":{"type":"string"}}}},"$dynamicRef":"#ext","properties":{"b":{"type":"integer"}},"unevaluatedProperties":false)",
            R"("$defs":{"ext":{"$dynamicAnchor":"ext","properties":{"c":{"type":"string"}}}},"$dynamicRef":"#ext","properties":{"b":{"type":"integer"},"c":{"type":"integer"}},"unevaluatedProperties":false)",
            C::kPropertyAddedToPartiallyOpenContentModel, "/c", false, false),
        Row("d20_ref_to_an_object_closed_by_unevaluated_properties_gains_an_optional_"
            "property",
            R"("$defs":{"Address":{"type":"object","properties":{"city":{"type":"string"}},"unevaluatedProperties":false}},"type":"object","properties":{"address":{"$ref":"#/$defs/Address"}})",
            R"("$defs":{"Address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}},"unevaluatedProperties":false}},"type":"object","properties":{"address":{"$ref":"#/$defs/Address"}})",
            C::kOptionalPropertyAddedToClosedContentModel, "/address/zip", true, false),
        Row("d20_unevaluated_false_beside_a_plain_ref_member_gains_an_optional_property",
            R"("$defs":{"base":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}},"allOf":[{"$ref":"#/$defs/base"}],"properties":{"b":{"type":"integer"}},"unevaluatedProperties":false)",
            R"("$defs":{"base":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}},"allOf":[{"$ref":"#/$defs/base"}],"properties":{"b":{"type":"integer"},"c":{"type":"string"}},"unevaluatedProperties":false)",
            C::kOptionalPropertyAddedToClosedContentModel, "/c", true, false),
        Row("d20_unevaluated_false_beside_a_pattern_that_cannot_match_gains_a_property",
            R"("properties":{"a":{}},"patternProperties":{"^x-":{}},"unevaluatedProperties":false)",
            R"("properties":{"a":{},"b":{"type":"string"}},"patternProperties":{"^x-":{}},"unevaluatedProperties":false)",
            C::kOptionalPropertyAddedToClosedContentModel, "/b", true, false),
        Row("d20_all_of_member_that_evaluated_a_property_removed_beside_unevaluated_false",
            R"("type":"object","properties":{"a":{}},"unevaluatedProperties":false,"allOf":[{"type":"object"},{"properties":{"b":{}}}])",
            R"("type":"object","properties":{"a":{}},"unevaluatedProperties":false,"allOf":[{"type":"object"}])",
            C::kAllOfSchemaRemoved, "", false, false),
        Row("d20_all_of_member_that_evaluates_a_property_added_beside_unevaluated_false",
            R"("type":"object","properties":{"a":{}},"unevaluatedProperties":false,"allOf":[{"type":"object"}])",
            R"("type":"object","properties":{"a":{}},"unevaluatedProperties":false,"allOf":[{"type":"object"},{"properties":{"c":{"type":"integer"}}}])",
            C::kAllOfSchemaAdded, "", false, false),
        Row("d20_all_of_member_that_evaluated_items_removed_beside_unevaluated_items_false",
            R"("type":"array","prefixItems":[{}],"unevaluatedItems":false,"allOf":[{"type":"array"},{"prefixItems":[{},{}]}])",
            R"("type":"array","prefixItems":[{}],"unevaluatedItems":false,"allOf":[{"type":"array"}])",
            C::kAllOfSchemaRemoved, "", false, false),
        Row("d20_one_of_member_removed_that_overlapped_a_kept_one",
            R"("oneOf":[{"type":"number"},{"type":"integer","minimum":0},{"type":"string"}])",
            R"("oneOf":[{"type":"number"},{"type":"string"}])", C::kOneOfBranchRemoved, "", false,
            false),
        Row("d20_one_of_object_member_removed_that_overlapped_a_kept_one",
            R"("oneOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"a"}}},{"type":"object","required":["legacy"]},{"type":"object","required":["kind"],"properties":{"kind":{"const":"b"}}}])",
            R"("oneOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"a"}}},{"type":"object","required":["kind"],"properties":{"kind":{"const":"b"}}}])",
            C::kOneOfBranchRemoved, "", false, false),
        Row("d20_pattern_added_over_a_name_an_all_of_member_declares",
            R"("type":"object","allOf":[{"properties":{"xa":{"type":"string"}}}])",
            R"("type":"object","allOf":[{"properties":{"xa":{"type":"string"}}}],"patternProperties":{"^x":{"type":"integer"}})",
            C::kPatternPropertyAdded, "", false, true),
        Row("d20_pattern_added_in_an_all_of_member_over_a_name_the_base_declares",
            R"("type":"object","properties":{"xa":{"type":"string"}},"allOf":[{}])",
            R"("type":"object","properties":{"xa":{"type":"string"}},"allOf":[{"patternProperties":{"^x":{"type":"integer"}}}])",
            C::kPatternPropertyAdded, "", false, true),
        Row("d20_pattern_added_over_a_required_undeclared_name",
            R"("type":"object","required":["xa"])",
            R"("type":"object","required":["xa"],"patternProperties":{"^x":{"type":"integer"}})",
            C::kPatternPropertyAdded, "", false, true),
        Row("d20_property_added_beside_an_any_of_branch_pattern_that_covers_it",
            R"("type":"object","anyOf":[{"required":["kind"]},{"patternProperties":{"^v":{"type":"integer"}}}])",
            R"("type":"object","properties":{"v":{"type":"string"}},"anyOf":[{"required":["kind"]},{"patternProperties":{"^v":{"type":"integer"}}}])",
            C::kOptionalPropertyAddedToOpenContentModel, "/v", false, true),
        Row("d20_property_added_beside_an_any_of_branch_that_requires_it",
            R"("type":"object","anyOf":[{"required":["v"]},{"required":["w"]}])",
            R"("type":"object","properties":{"v":{"type":"string"}},"anyOf":[{"required":["v"]},{"required":["w"]}])",
            C::kOptionalPropertyAddedToOpenContentModel, "/v", false, true),
        Row("d20_property_added_beside_a_then_whose_additional_properties_cover_it",
            R"("type":"object","properties":{"kind":{"type":"string"}},"if":{"properties":{"kind":{"const":"m"}}},"then":{"additionalProperties":{"type":"integer"},"properties":{"kind":{}}})",
            R"("type":"object","properties":{"kind":{"type":"string"},"v":{"type":"string"}},"if":{"properties":{"kind":{"const":"m"}}},"then":{"additionalProperties":{"type":"integer"},"properties":{"kind":{}}})",
            C::kOptionalPropertyAddedToOpenContentModel, "/v", false, true),
        Row("d20_one_of_member_declares_a_name_another_member_covers_by_pattern", R"("oneOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"a"}}},{"type":"object","required":["v"],"patternProperties":{"^v$":{"type":"integer"}}}])", R"("oneOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"a"},"v":{"type":"string"}}},{"type":"object","required":["v"],"patternProperties":{"^v$":{"type":"integer"}}}])",
            C::kOptionalPropertyAddedToOpenContentModel, "/v", false, true),
        Row("d20_dependent_required_name_added_as_a_property",
            R"("type":"object","properties":{"card":{"type":"string"}},"dependentRequired":{"card":["billing"]})",
            R"("type":"object","properties":{"card":{"type":"string"},"billing":{"type":"object"}},"dependentRequired":{"card":["billing"]})",
            C::kOptionalPropertyAddedToOpenContentModel, "/billing", false, true),
        Row("d20_dependent_required_name_removed_as_a_property",
            R"("type":"object","properties":{"card":{"type":"string"},"billing":{"type":"object"}},"dependentRequired":{"card":["billing"]})",
            R"("type":"object","properties":{"card":{"type":"string"}},"dependentRequired":{"card":["billing"]})",
            C::kPropertyRemoved, "/billing", true, false),
        Row("d20_tuple_in_an_all_of_member_shrinks_beside_unevaluated_items_false",
            R"("type":"array","allOf":[{"prefixItems":[{"type":"string"},{"type":"integer"}]}],"unevaluatedItems":false)",
            R"("type":"array","allOf":[{"prefixItems":[{"type":"string"}]}],"unevaluatedItems":false)",
            C::kItemsChanged, "/1", false, true),
        Row("d20_items_in_an_all_of_member_become_a_tuple_beside_unevaluated_items_false",
            R"("type":"array","allOf":[{"items":{"type":"string"}}],"unevaluatedItems":false)",
            R"("type":"array","allOf":[{"prefixItems":[{"type":"string"}]}],"unevaluatedItems":false)",
            C::kItemsChanged, "/*", false, true),
        Row("d20_member_of_a_value_declared_again_in_an_all_of_base_is_narrowed",
            R"("$defs":{"base":{"type":"object","properties":{"id":{"type":"string"},"data":{"type":"object","properties":{"tenant":{"type":"string"}}}},"required":["id","data"]}},"allOf":[{"$ref":"#/$defs/base"}],"properties":{"data":{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}})",
            R"("$defs":{"base":{"type":"object","properties":{"id":{"type":"string"},"data":{"type":"object","properties":{"tenant":{"type":"string"}}}},"required":["id","data"]}},"allOf":[{"$ref":"#/$defs/base"}],"properties":{"data":{"type":"object","properties":{"orderId":{"type":"string"},"tenant":{"type":"integer"}},"required":["orderId"]}})",
            C::kOptionalPropertyAddedToOpenContentModel, "/data/tenant", false, true),
        Row("d20_member_of_a_value_declared_again_in_an_all_of_base_is_removed",
            R"("$defs":{"base":{"type":"object","properties":{"id":{"type":"string"},"data":{"type":"object","properties":{"tenant":{"type":"string"}}}},"required":["id","data"]}},"allOf":[{"$ref":"#/$defs/base"}],"properties":{"data":{"type":"object","properties":{"orderId":{"type":"string"},"tenant":{"type":"string","minLength":2}},"required":["orderId"]}})",
            R"("$defs":{"base":{"type":"object","properties":{"id":{"type":"string"},"data":{"type":"object","properties":{"tenant":{"type":"string"}}}},"required":["id","data"]}},"allOf":[{"$ref":"#/$defs/base"}],"properties":{"data":{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}})",
            C::kPropertyRemoved, "/data/tenant", true, false),
        Same(
            "d20_unevaluated_items_false_beside_items_false_is_no_change",
            R"("type":"array","prefixItems":[{"type":"string"}],"items":false)",
            R"("type":"array","prefixItems":[{"type":"string"}],"items":false,"unevaluatedItems":false)"),
        Same(
            "d20_unevaluated_properties_beside_additional_properties_is_no_change",
            R"("type":"object","properties":{"a":{}},"additionalProperties":{"type":"string"})",
            R"("type":"object","properties":{"a":{}},"additionalProperties":{"type":"string"},"unevaluatedProperties":false)"),
        Row("d20_base_property_narrowed_in_dependent_schemas",
            R"("type":"object","properties":{"a":{"type":"string"}},"dependentSchemas":{"a":{"properties":{"b":{}}}})",
            R"("type":"object","properties":{"a":{"type":"string"}},"dependentSchemas":{"a":{"properties":{"b":{},"a":{"maxLength":3}}}})",
            C::kOptionalPropertyAddedToOpenContentModel, "/a", false, true),
        Row("d20_unevaluated_false_property_removed_from_an_all_of_member",
            R"("type":"object","unevaluatedProperties":false,"allOf":[{"properties":{"a":{},"b":{}}}])",
            R"("type":"object","unevaluatedProperties":false,"allOf":[{"properties":{"b":{}}}])",
            C::kPropertyRemoved, "/a", false, true),
        Row("d20_unevaluated_false_property_removed_from_an_all_of_member_strict",
            R"("type":"object","unevaluatedProperties":false,"allOf":[{"properties":{"a":{},"b":{}}}])",
            R"("type":"object","unevaluatedProperties":false,"allOf":[{"properties":{"b":{}}}])",
            C::kPropertyRemoved, "/a", false, true, kStrict),
        Row("d20_unevaluated_false_property_added_to_an_all_of_member",
            R"("type":"object","unevaluatedProperties":false,"allOf":[{"properties":{"b":{}}}])",
            R"("type":"object","unevaluatedProperties":false,"allOf":[{"properties":{"b":{},"a":{}}}])",
            C::kOptionalPropertyAddedToClosedContentModel, "/a", true, false),
        Row("d20_unevaluated_false_property_moved_from_a_member_to_the_base",
            R"("type":"object","unevaluatedProperties":false,"allOf":[{"properties":{"a":{"type":"string"}}}])",
            R"("type":"object","unevaluatedProperties":false,"properties":{"a":{"type":"string"}},"allOf":[{}])",
            C::kPropertyRemoved, "/a", true, true),
};

struct Param {
  DiffCase c;
  Dialect dialect;
};

std::vector<Param> AllParams() {
  std::vector<Param> params;
  for (const DiffCase& c : kBothDialects) {
    params.push_back({c, Dialect::kDraft7});
    params.push_back({c, Dialect::kDraft2020});
  }
  for (const DiffCase& c : kDraft7Only) params.push_back({c, Dialect::kDraft7});
  for (const DiffCase& c : kDraft2020Only) params.push_back({c, Dialect::kDraft2020});
  return params;
}

std::string Describe(const std::vector<Change>& changes) {
  std::string out;
  for (const Change& c : changes) {
    out += std::string(ChangeCodeName(c.code)) + " '" + c.pointer +
           "' b=" + (c.backward ? "1" : "0") + " f=" + (c.forward ? "1" : "0") + ": " + c.message +
           "\n";
  }
  return out;
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << (p.dialect == Dialect::kDraft7 ? "draft 7: " : "draft 2020-12: ") << p.c.name;
}

class DiffTable : public ::testing::TestWithParam<Param> {};

TEST_P(DiffTable, ReportsTheExpectedChange) {
  const DiffCase& c = GetParam().c;
  DiffOptions options;
  options.strictness = c.strictness;
  const std::string old_schema = Wrap(GetParam().dialect, c.old_body);
  const std::string new_schema = Wrap(GetParam().dialect, c.new_body);
  auto diff = DiffSchemas(old_schema, new_schema, options);
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  if (!c.code) {
    EXPECT_TRUE(diff->changes.empty()) << Describe(diff->changes);
    EXPECT_TRUE(diff->CompatibleUnder(CompatMode::kFull));
    return;
  }
  const Change* found = nullptr;
  for (const Change& change : diff->changes) {
    if (change.code == *c.code && change.pointer == c.pointer) found = &change;
  }
  ASSERT_NE(found, nullptr) << "want " << ChangeCodeName(*c.code) << " at '" << c.pointer
                            << "', got:\n"
                            << Describe(diff->changes);
  EXPECT_EQ(found->backward, c.backward) << found->message;
  EXPECT_EQ(found->forward, c.forward) << found->message;
  EXPECT_FALSE(found->message.empty());
  EXPECT_EQ(found->CompatibleUnder(CompatMode::kBackward),
            c.backward && *c.code != C::kMeaningChanged);
  EXPECT_EQ(found->CompatibleUnder(CompatMode::kFull),
            c.backward && c.forward && *c.code != C::kMeaningChanged);
}

INSTANTIATE_TEST_SUITE_P(Cases, DiffTable, ::testing::ValuesIn(AllParams()),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           return std::string(param_info.param.dialect == Dialect::kDraft7
                                                  ? "d7_"
                                                  : "d2020_") +
                                  param_info.param.c.name;
                         });

TEST(DiffTableCoverage, EveryChangeCodeHasARow) {
  std::vector<bool> seen(kChangeCodeCount, false);
  for (const Param& p : AllParams()) {
    if (p.c.code) seen[static_cast<int>(*p.c.code)] = true;
  }
  for (int i = 0; i < kChangeCodeCount; ++i) {
    EXPECT_TRUE(seen[i]) << "no diff case for " << ChangeCodeName(static_cast<ChangeCode>(i));
  }
  EXPECT_GE(AllParams().size(), 120u);
}

}  // namespace
}  // namespace evident

namespace evident {
namespace {

// Members left unmatched are paired by their `type` first: the string member that widened is
// compared with the string member, not with a boolean added at its index.
// A tagged union re-ordered, a member inserted and another extended: paired by tag, nothing
// reads as a changed const or a rename.
// A base schema shared by two union members (both reach it by `$ref`) reports a change of its
// own once, not once per member.
TEST(DiffMembers, AChangeInASharedBaseIsReportedOnce) {
  const auto schema = [](const char* pet_properties, const char* extra_member) {
    return std::string(R"({"$defs":{"Pet":{"type":"object","properties":{)") + pet_properties +
           R"(}},"Cat":{"allOf":[{"$ref":"#/$defs/Pet"},{"properties":{"kind":{"const":"cat"}},"required":["kind"]}]},)"
           R"("Dog":{"allOf":[{"$ref":"#/$defs/Pet"},{"properties":{"kind":{"const":"dog"}},"required":["kind"]}]}},)"
           R"("oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"})" +
           extra_member + "]}";
  };
  auto diff = DiffSchemas(schema(R"("name":{"type":"string"})", ""),
                          schema(R"("name":{"type":"string"},"age":{"type":"integer"})", ""),
                          DiffOptions{});
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  ASSERT_EQ(diff->changes.size(), 1u) << Describe(diff->changes);
  EXPECT_EQ(diff->changes[0].code, ChangeCode::kOptionalPropertyAddedToOpenContentModel);
  EXPECT_EQ(diff->changes[0].pointer, "/age");
}

TEST(DiffMembers, TaggedUnionMembersArePairedByTheirTag) {
  const std::string old_schema =
      R"({"oneOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"a"},"x":{}}},)"
      R"({"type":"object","required":["kind"],"properties":{"kind":{"const":"b"},"y":{}}}]})";
  const std::string new_schema =
      R"({"oneOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"b"},"y":{}}},)"
      R"({"type":"object","required":["kind"],"properties":{"kind":{"const":"c"},"z":{}}},)"
      R"({"type":"object","required":["kind"],"properties":{"kind":{"const":"a"},"x":{},"w":{}}}]})";
  auto diff = DiffSchemas(old_schema, new_schema, DiffOptions{});
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_TRUE(diff->CompatibleUnder(CompatMode::kBackward)) << Describe(diff->changes);
  for (const Change& change : diff->changes) {
    EXPECT_NE(change.code, ChangeCode::kConstChanged) << Describe(diff->changes);
    EXPECT_NE(change.code, ChangeCode::kLikelyRename) << Describe(diff->changes);
  }
}

// An OpenAPI-style union: each member is allOf [base, {tag}]. A member appended: its tag keeps
// it apart from the others (no overlap), and nothing pairs unrelated members.
TEST(DiffMembers, AUnionOfAllOfMembersWithTagsGainsAMember) {
  const std::string old_schema =
      R"({"$defs":{"Pet":{"type":"object","properties":{"petType":{"type":"string"},"name":{"type":)"
      R"("string"}},"required":["petType","name"]},"Cat":{"allOf":[{"$ref":"#/$defs/Pet"},{"type":")"
      R"(object","properties":{"petType":{"const":"cat"},"lives":{"type":"integer"}},"required":["p)"
      R"(etType"]}]},"Dog":{"allOf":[{"$ref":"#/$defs/Pet"},{"type":"object","properties":{"petType)"
      R"(":{"const":"dog"},"bark":{"type":"string"}},"required":["petType"]}]}},"oneOf":[{"$ref":"#)"
      R"(/$defs/Cat"},{"$ref":"#/$defs/Dog"}]})";
  const std::string new_schema =
      R"({"$defs":{"Pet":{"type":"object","properties":{"petType":{"type":"string"},"name":{"type":)"
      R"("string"},"age":{"type":"integer"}},"required":["petType","name"]},"Cat":{"allOf":[{"$ref")"
      R"(:"#/$defs/Pet"},{"type":"object","properties":{"petType":{"const":"cat"},"lives":{"type":")"
      R"(integer"}},"required":["petType"]}]},"Dog":{"allOf":[{"$ref":"#/$defs/Pet"},{"type":"objec)"
      R"(t","properties":{"petType":{"const":"dog"},"bark":{"type":"string"}},"required":["petType")"
      R"(]}]},"Bird":{"allOf":[{"$ref":"#/$defs/Pet"},{"type":"object","properties":{"petType":{"co)"
      R"(nst":"bird"},"wings":{"type":"integer"}},"required":["petType"]}]}},"oneOf":[{"$ref":"#/$d)"
      R"(efs/Cat"},{"$ref":"#/$defs/Dog"},{"$ref":"#/$defs/Bird"}]})";
  auto diff = DiffSchemas(old_schema, new_schema, DiffOptions{});
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_TRUE(diff->CompatibleUnder(CompatMode::kBackward)) << Describe(diff->changes);
  for (const Change& change : diff->changes) {
    EXPECT_NE(change.code, ChangeCode::kOneOfMembersMayOverlap) << Describe(diff->changes);
    EXPECT_NE(change.code, ChangeCode::kConstChanged) << Describe(diff->changes);
  }
}

TEST(DiffMembers, AWidenedMemberDisjointFromTheOthersKeepsTheOneOfBackwardCompatible) {
  const std::string old_schema =
      R"({"oneOf":[{"properties":{"kind":{"const":"card"},"n":{"maxLength":4}},"required":["kind"]},)"
      R"({"properties":{"kind":{"const":"bank"}},"required":["kind"]}]})";
  const std::string new_schema =
      R"({"oneOf":[{"properties":{"kind":{"const":"card"},"n":{"maxLength":8}},"required":["kind"]},)"
      R"({"properties":{"kind":{"const":"bank"}},"required":["kind"]}]})";
  auto diff = DiffSchemas(old_schema, new_schema, DiffOptions{});
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_TRUE(diff->CompatibleUnder(CompatMode::kBackward)) << Describe(diff->changes);
  for (const Change& change : diff->changes) {
    EXPECT_NE(change.code, ChangeCode::kOneOfMembersMayOverlap) << Describe(diff->changes);
  }
}

TEST(DiffMembers, AWidenedMemberAmongAddedMembersOfOtherTypesIsPairedByType) {
  const std::string old_schema =
      R"({"type":"object","properties":{"p":{"oneOf":[{"type":"string","maxLength":5}]}}})";
  const std::string new_schema =
      R"({"type":"object","properties":{"p":{"oneOf":[{"type":"boolean"},{"type":"number"},)"
      R"({"title":"t","type":"string","maxLength":8}]}}})";
  auto diff = DiffSchemas(old_schema, new_schema, DiffOptions{});
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_TRUE(diff->CompatibleUnder(CompatMode::kBackward)) << Describe(diff->changes);
  EXPECT_FALSE(diff->CompatibleUnder(CompatMode::kForward)) << Describe(diff->changes);
  bool widened = false;
  for (const Change& change : diff->changes) {
    EXPECT_NE(change.code, ChangeCode::kTypeChanged) << Describe(diff->changes);
    widened = widened || change.code == ChangeCode::kMaxLengthIncreased;
  }
  EXPECT_TRUE(widened) << Describe(diff->changes);
  // Narrowed instead: backward incompatible, whatever the order.
  auto narrowed = DiffSchemas(new_schema, old_schema, DiffOptions{});
  ASSERT_TRUE(narrowed.ok());
  EXPECT_FALSE(narrowed->CompatibleUnder(CompatMode::kBackward)) << Describe(narrowed->changes);
}

}  // namespace
}  // namespace evident
