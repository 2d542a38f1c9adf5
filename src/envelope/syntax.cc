#include "envelope/syntax.h"

#include <cstdint>

#include "core/rfc3339.h"

namespace evident::syntax {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsLowerHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }

// RFC 3986 unreserved / sub-delims / ':' '@' '/' '?' plus '#' and '%' (escapes checked apart).
bool IsUriChar(char c) {
  if (IsAlpha(c) || IsDigit(c)) return true;
  switch (c) {
    case '-':
    case '.':
    case '_':
    case '~':  // unreserved
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':  // sub-delims
    case '*':
    case '+':
    case ',':
    case ';':
    case '=':
    case ':':
    case '@':
    case '/':
    case '?':
    case '#':
    case '[':
    case ']':
      return true;
    default:
      return false;
  }
}

bool IsTokenChar(char c) {
  if (IsAlpha(c) || IsDigit(c)) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

}  // namespace

bool IsRfc3339Timestamp(std::string_view t) { return rfc3339::IsDateTime(t); }

bool IsUriReference(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size() || !IsHex(text[i + 1]) || !IsHex(text[i + 2])) return false;
      i += 2;
    } else if (!IsUriChar(c)) {
      return false;
    }
  }
  // A ':' before any '/', '?' or '#' ends a scheme, which must be ALPHA *(ALPHA/DIGIT/+/-/.).
  const size_t colon = text.find(':');
  const size_t delimiter = text.find_first_of("/?#");
  if (colon != std::string_view::npos && colon < delimiter) {
    if (colon == 0 || !IsAlpha(text[0])) return false;
    for (size_t i = 1; i < colon; ++i) {
      const char c = text[i];
      if (!IsAlpha(c) && !IsDigit(c) && c != '+' && c != '-' && c != '.') return false;
    }
  }
  return true;
}

bool IsAbsoluteUri(std::string_view text) {
  const size_t colon = text.find(':');
  return colon != std::string_view::npos && colon > 0 && colon < text.find_first_of("/?#") &&
         IsUriReference(text);
}

bool IsMediaType(std::string_view text) {
  size_t pos = 0;
  const auto token = [&] {
    const size_t start = pos;
    while (pos < text.size() && IsTokenChar(text[pos])) ++pos;
    return pos > start;
  };
  if (!token() || pos >= text.size() || text[pos] != '/') return false;
  ++pos;
  if (!token()) return false;
  while (pos < text.size() && text[pos] == ' ') ++pos;
  return pos == text.size() || text[pos] == ';';
}

bool IsBase64(std::string_view text) {
  if (text.size() % 4 != 0) return false;
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '=') {
      if (i + 2 < text.size()) return false;  // '=' only in the last two places
      ++padding;
    } else if (padding > 0 || !(IsAlpha(c) || IsDigit(c) || c == '+' || c == '/')) {
      return false;
    }
  }
  return padding <= 2;
}

// Field by field: version (2 hex), trace id (32, not all zero), parent id (16, not all zero),
// flags (2); lowercase hex only, version ff forbidden.
bool IsTraceparent(std::string_view t) {
  if (t.size() != 55 || t[2] != '-' || t[35] != '-' || t[52] != '-') return false;
  const auto hex = [&t](size_t from, size_t to) {
    bool nonzero = false;
    for (size_t i = from; i < to; ++i) {
      if (!IsLowerHex(t[i])) return -1;
      nonzero |= t[i] != '0';
    }
    return nonzero ? 1 : 0;
  };
  return hex(0, 2) >= 0 && hex(3, 35) == 1 && hex(36, 52) == 1 && hex(53, 55) >= 0 &&
         t.substr(0, 2) != "ff";
}

bool IsExtensionName(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!((c >= 'a' && c <= 'z') || IsDigit(c))) return false;
  }
  return true;
}

}  // namespace evident::syntax
