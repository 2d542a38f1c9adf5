// envelope/syntax.h — the small grammars CloudEvents attribute types need.
//
// Hand-written: each is a few dozen lines of a fixed RFC grammar, on the hot path of every
// event, and none of the chosen libraries offers them (RE2 could match some, at a higher cost
// and without the calendar checks RFC 3339 needs).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace evident::syntax {

// RFC 3339 date-time: 2026-07-31T12:00:00Z, with optional fraction and numeric offset;
// calendar-checked (month lengths, leap years), leap second 60 accepted; 't'/'z' allowed.
bool IsRfc3339Timestamp(std::string_view text);
// RFC 3986 URI-reference (absolute URI or relative reference). Rejects spaces, control bytes,
// non-ASCII, bad percent escapes and a malformed scheme.
bool IsUriReference(std::string_view text);
// RFC 3986 absolute URI: a URI-reference with a scheme.
bool IsAbsoluteUri(std::string_view text);
// RFC 2046 media type: token "/" token, optionally followed by "; parameters".
bool IsMediaType(std::string_view text);
// RFC 4648 base64 with padding (the empty string is valid).
bool IsBase64(std::string_view text);
// W3C Trace Context traceparent: 2 hex version (not ff), 32 hex trace-id (not all zero),
// 16 hex parent-id (not all zero), 2 hex flags, lowercase, dash-separated.
bool IsTraceparent(std::string_view text);
// CloudEvents extension attribute name: one or more of [a-z0-9].
bool IsExtensionName(std::string_view text);
// HasControlCharacter's exact answer, for a string its filter flagged.
bool HasControlCharacterExactly(std::string_view text);

// True when UTF-8 `text` holds a character CloudEvents forbids in a String: a control character,
// U+0000-U+001F or U+007F-U+009F (its type system, "String"). On every event's attributes: a
// filter eight bytes at a time flags any byte below 0x20, 0x7F or 0xC2 (the lead byte of
// U+0080-U+00BF), exact about whether one is there ("Bit Twiddling Hacks": hasless, haszero);
// only a flagged string is looked at byte by byte. A byte at a time it cost 6% of the envelope.
inline bool HasControlCharacter(std::string_view text) {
  constexpr uint64_t kOnes = 0x0101010101010101, kHighs = 0x8080808080808080;
  uint64_t flagged = 0;
  size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, text.data() + i, sizeof w);
    const uint64_t del = w ^ (0x7F * kOnes), lead = w ^ (0xC2 * kOnes);
    flagged |= ((w - 0x20 * kOnes) & ~w) | ((del - kOnes) & ~del) | ((lead - kOnes) & ~lead);
  }
  flagged &= kHighs;
  for (; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    flagged |= static_cast<uint64_t>(c < 0x20 || c == 0x7F || c == 0xC2);
  }
  return flagged != 0 && HasControlCharacterExactly(text);
}

}  // namespace evident::syntax
