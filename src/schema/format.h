// schema/format.h — checks for the "format" keyword's string formats.
//
// Used only when format assertion is on (CompileOptions::format_assertion or the
// format-assertion vocabulary). Non-string instances always pass; unknown formats are not
// checked (the specification makes them annotations).
#pragma once

#include <optional>
#include <string_view>

namespace evident::schema::internal {

enum class FormatKind : uint8_t {
  kDateTime,
  kDate,
  kTime,
  kDuration,
  kEmail,
  kIdnEmail,
  kHostname,
  kIdnHostname,
  kIpv4,
  kIpv6,
  kUri,
  kUriReference,
  kIri,
  kIriReference,
  kUriTemplate,
  kUuid,
  kJsonPointer,
  kRelativeJsonPointer,
  kRegex,
};

// nullopt for a format this implementation does not know.
std::optional<FormatKind> ParseFormatName(std::string_view name);
std::string_view FormatName(FormatKind kind);

bool CheckFormat(FormatKind kind, std::string_view text);

}  // namespace evident::schema::internal
