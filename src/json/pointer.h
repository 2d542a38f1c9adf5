// json/pointer.h — JSON Pointer (RFC 6901) reference tokens: escaping and splitting.
//
// One implementation for the schema compiler and validator, the schema diff and the consumer
// pipeline. simdjson evaluates pointers (at_pointer) but does not build or split them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace evident::json {

// Appends `token` escaped as one reference token: "~" becomes "~0", "/" becomes "~1".
void AppendPointerToken(std::string& out, std::string_view token);

// `token` escaped as one reference token.
std::string EscapePointerToken(std::string_view token);

// Whether `text` is a JSON Pointer: empty, or "/"-separated tokens in which every "~" is
// followed by 0 or 1. Allocates nothing.
bool IsPointer(std::string_view text);

// Decodes the %XX escapes of a URI fragment (a pointer written as "#/a%20b"); an invalid
// escape is kept as it is.
std::string PercentDecode(std::string_view text);

// Splits a JSON Pointer into unescaped tokens: "/a/b~1c" gives {"a", "b/c"}; "" gives none.
// False when the text is not a JSON Pointer (no leading "/", or a "~" not followed by 0 or 1).
bool SplitPointer(std::string_view pointer, std::vector<std::string>& tokens);

}  // namespace evident::json
