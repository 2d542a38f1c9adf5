// schema/regex.h — ECMA-262 regular expressions (as used by JSON Schema) on top of RE2.
//
// RE2 matches in time linear in the input, so no pattern can cause catastrophic backtracking. The
// price: RE2 cannot express lookaround or backreferences. Those patterns are rejected with a
// clear error instead of being silently approximated. See docs/json-schema.md for the exact
// differences between ECMA-262 and what this translation accepts.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "evident/status.h"

namespace re2 {
class RE2;
}

namespace evident::schema::internal {

// Rewrites an ECMA-262 (unicode mode) pattern into RE2 syntax with ECMA semantics where they
// differ (\s, '.', \uXXXX, [^], named groups). Fails with kInvalidArgument for constructs RE2
// cannot express (lookahead, lookbehind, backreferences) or that are not valid ECMA-262.
// `unsupported`, when given, is set when the failure is a valid ECMA-262 construct RE2 lacks.
Result<std::string> TranslateEcmaRegex(std::string_view pattern, bool* unsupported = nullptr);

// Translates and compiles. `program_bytes_max` bounds RE2's memory for the compiled program.
Result<std::shared_ptr<const re2::RE2>> CompileEcmaRegex(std::string_view pattern,
                                                         size_t program_bytes_max);

// Unanchored search, like ECMA-262 RegExp.prototype.test.
bool RegexSearch(const re2::RE2& regex, std::string_view text);

}  // namespace evident::schema::internal
