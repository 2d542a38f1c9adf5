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

// HasControlCharacter's filter for eight bytes: non-zero when one of them is below 0x20, 0x7F or
// 0xC2, exact about whether one is ("Bit Twiddling Hacks": hasless, haszero).
inline uint64_t ControlCharacterFilter(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101, kHighs = 0x8080808080808080;
  const uint64_t del = w ^ (0x7F * kOnes), lead = w ^ (0xC2 * kOnes);
  return (((w - 0x20 * kOnes) & ~w) | ((del - kOnes) & ~del) | ((lead - kOnes) & ~lead)) & kHighs;
}

// True when UTF-8 `text` holds a character CloudEvents forbids in a String: a control character,
// U+0000-U+001F or U+007F-U+009F (its type system, "String"). On every event's attributes: the
// filter above flags any byte below 0x20, 0x7F or 0xC2 (the lead byte of U+0080-U+00BF) eight
// bytes at a time, the last eight overlapping the ones before (a byte loop for the tail was a
// quarter of the check's instructions); only a flagged string is looked at byte by byte. A byte
// at a time it cost 6% of the envelope.
inline bool HasControlCharacter(std::string_view text) {
  const auto load = [&](size_t at, auto word) {
    std::memcpy(&word, text.data() + at, sizeof word);
    return static_cast<uint64_t>(word);
  };
  const size_t size = text.size();
  uint64_t flagged = 0;
  if (size >= 8) {
    for (size_t i = 0; i + 8 <= size; i += 8)
      flagged |= ControlCharacterFilter(load(i, uint64_t{}));
    flagged |= ControlCharacterFilter(load(size - 8, uint64_t{}));
  } else if (size >= 4) {  // two four-byte halves, overlapping for fewer than eight bytes
    flagged = ControlCharacterFilter(load(0, uint32_t{}) | load(size - 4, uint32_t{}) << 32);
  } else if (size > 0) {  // the first, middle and last byte cover 1-3; the rest are spaces
    const auto byte = [&](size_t at) { return uint64_t{static_cast<unsigned char>(text[at])}; };
    flagged = ControlCharacterFilter(0x2020202020000000 | byte(0) | byte(size / 2) << 8 |
                                     byte(size - 1) << 16);
  }
  return flagged != 0 && HasControlCharacterExactly(text);
}

}  // namespace evident::syntax
