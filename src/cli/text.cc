// cli/text.cc — escaping stored text for terminal output (see text.h).
#include "cli/text.h"

#include <cstdint>
#include <cstdio>

namespace evident::cli {
namespace {

// The length of the UTF-8 sequence at text[i] and its code point; 0 when it is not valid UTF-8
// (overlong forms, surrogates and values past U+10FFFF are invalid).
size_t DecodeUtf8(std::string_view text, size_t i, uint32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
  const uint8_t lead = byte(0);
  size_t length = 0;
  uint32_t min = 0;
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, code_point = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code_point = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code_point = lead & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(k) & 0x3F);
  }
  if (code_point < min || code_point > 0x10FFFF) return 0;
  if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;
  return length;
}

// Code points a terminal acts on rather than shows.
bool IsControl(uint32_t c) {
  return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069);
}

void AppendFormat(std::string& out, const char* format, uint32_t value) {
  char buffer[16];
  const int n = std::snprintf(buffer, sizeof buffer, format, static_cast<unsigned>(value));
  out.append(buffer, static_cast<size_t>(n));
}

// Escapes what a terminal would act on. For plain text (`json` false) also the backslash and the
// common whitespace controls, as \\ \t \n \r, and code points as \u{NNNN}; inside JSON text
// as \uNNNN, which keeps the JSON valid.
std::string Escape(std::string_view text, bool json) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t c = 0;
    const size_t length = DecodeUtf8(text, i, c);
    if (length == 0) {
      AppendFormat(out, "\\x%02X", static_cast<uint8_t>(text[i]));
      ++i;
      continue;
    }
    if (json) {
      if (IsControl(c)) {
        AppendFormat(out, "\\u%04X", c);
      } else {
        out.append(text.substr(i, length));
      }
    } else if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
      out += c == '\\' ? "\\\\" : c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r";
    } else if (IsControl(c)) {
      AppendFormat(out, c < 0x80 ? "\\x%02X" : "\\u{%04X}", c);
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace

std::string Printable(std::string_view text) { return Escape(text, false); }

std::string PrintableJson(std::string_view json) { return Escape(json, true); }

}  // namespace evident::cli
