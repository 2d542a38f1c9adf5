// adapter/generate.h — candidate payloads from a JSON Schema, to try an adapter against.
//
// GenerateInstances walks a schema (a draft 7 / 2020-12 subset: type, properties, required, enum,
// const, items, prefixItems, minItems, maxItems, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, multipleOf, minLength, maxLength, format date / date-time / uuid / email,
// additionalProperties, allOf (merged naively), anyOf / oneOf (one member per candidate), local
// $ref) and writes candidates that vary which optional members appear, which enum value, which
// branch. It is a generator, not a solver: candidates may be invalid for schemas beyond the subset
// (a `pattern` is ignored, uniqueItems too), so a caller keeps only those the real validator
// (evident::schema::Schema::IsValid) accepts.
//
// Bounded: nesting depth 16, $ref chains 8 deep, 64 members per object, 4 items per array, 64 KiB
// of JSON per candidate (a larger one is skipped), count_max * 8 + 16 attempts in all.
// Deterministic: one seed gives the same candidates everywhere (its own PRNG, no std
// distributions). Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "evident/status.h"

namespace evident::adapter {

inline constexpr int kGenerateDepthMax = 16;
inline constexpr int kGenerateRefDepthMax = 8;
inline constexpr size_t kGenerateMembersMax = 64;
inline constexpr size_t kGenerateItemsMax = 4;
inline constexpr size_t kGenerateInstanceBytesMax = size_t{64} << 10;

// Up to `count_max` distinct candidate instances (compact JSON text), the first of them with only
// the required members and the second with every optional one. InvalidArgument when
// `schema_json` is not JSON or not a schema (an object or a boolean).
Result<std::vector<std::string>> GenerateInstances(std::string_view schema_json, size_t count_max,
                                                   uint64_t seed);

}  // namespace evident::adapter
