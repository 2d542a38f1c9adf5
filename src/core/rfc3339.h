// core/rfc3339.h — RFC 3339 date and time syntax, shared by the envelope's `time` attribute and
// the JSON Schema "date-time", "date" and "time" formats, so that both accept the same strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace evident::rfc3339 {

// full-date: YYYY-MM-DD, a real calendar day (leap years included).
bool IsFullDate(std::string_view text);
// full-time: HH:MM:SS[.frac](Z|+HH:MM|-HH:MM). A leap second (:60) only at 23:59 UTC, that is,
// at 23:59 once the offset is taken away. 'Z' may be lowercase.
bool IsFullTime(std::string_view text);
// date-time: full-date 'T' full-time ('T' may be lowercase).
bool IsDateTime(std::string_view text);

// Milliseconds since the Unix epoch as "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC).
std::string FormatMs(int64_t ms);
}  // namespace evident::rfc3339
