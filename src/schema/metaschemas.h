// schema/metaschemas.h — the official meta-schemas, built into the binary.
//
// 2020-12 (schema and its seven vocabulary meta-schemas) and draft-07, so that "$schema" and
// "$ref" to them resolve without a registry entry and without any network access. The JSON
// files live in src/schema/metaschemas/ and are embedded by CMake (metaschemas.cmake).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace evident::schema::internal {

// The meta-schema document for `uri` (no fragment), if it is one of the built-in ones.
std::optional<std::string_view> BuiltinMetaschema(const std::string& uri);

}  // namespace evident::schema::internal
