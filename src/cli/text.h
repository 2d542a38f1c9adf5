// cli/text.h — making stored text safe to print on a terminal.
//
// Everything the store holds came from an event: ids, sources, states, reasons. Printed raw, an
// event could move the cursor, clear the screen or rewrite a line ("denied" shown as "allowed"),
// and two ids that differ after a NUL would print alike. Text output escapes such bytes.
#pragma once

#include <string>
#include <string_view>

namespace evident::cli {

// `text` with every control character (C0, DEL, C1), bidirectional override and isolate
// (U+202A..U+202E, U+2066..U+2069), byte that is not UTF-8 and the backslash itself escaped:
// \\, \t, \n, \r, \xNN for bytes, \u{NNNN} for code points. Printable text is unchanged.
std::string Printable(std::string_view text);

// For JSON text printed inside text output: C1 controls and bidirectional controls become
// \uNNNN escapes, which keep the JSON valid; the JSON writer already escapes C0 controls.
std::string PrintableJson(std::string_view json);

}  // namespace evident::cli
