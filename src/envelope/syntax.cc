#include "envelope/syntax.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/rfc3339.h"

namespace evident::syntax {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

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

// RFC 3986 allows '[' and ']' only around an IP-literal host: "//[v6]" or "//user@[v6]:port".
// True when every bracket of `text` is such a pair (`rest`: where the part after the scheme
// begins).
bool BracketsOnlyAroundAHost(std::string_view text, size_t rest) {
  size_t open = std::string_view::npos, close = std::string_view::npos;
  if (text.substr(rest, 2) == "//") {
    const size_t start = rest + 2;
    const size_t end = std::min(text.find_first_of("/?#", start), text.size());
    const std::string_view authority = text.substr(start, end - start);
    const size_t at = authority.rfind('@');
    const size_t host = at == std::string_view::npos ? 0 : at + 1;
    if (host < authority.size() && authority[host] == '[') {
      open = start + host;
      close = text.find(']', open);
      if (close == std::string_view::npos || close >= end) return false;
      if (close + 1 < end && text[close + 1] != ':') return false;  // "]" then a port, or end
    }
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if ((text[i] == '[' || text[i] == ']') && i != open && i != close) return false;
  }
  return true;
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
  size_t rest = 0;  // where the hierarchical part begins
  if (colon != std::string_view::npos && colon < delimiter) {
    if (colon == 0 || !IsAlpha(text[0])) return false;
    for (size_t i = 1; i < colon; ++i) {
      const char c = text[i];
      if (!IsAlpha(c) && !IsDigit(c) && c != '+' && c != '-' && c != '.') return false;
    }
    rest = colon + 1;
  }
  // One fragment: a '#' after the first is not a URI character.
  const size_t hash = text.find('#');
  if (hash != std::string_view::npos && text.find('#', hash + 1) != std::string_view::npos) {
    return false;
  }
  return BracketsOnlyAroundAHost(text, rest);
}

bool IsAbsoluteUri(std::string_view text) {
  const size_t colon = text.find(':');
  return colon != std::string_view::npos && colon > 0 && colon < text.find_first_of("/?#") &&
         IsUriReference(text);
}

bool IsMediaType(std::string_view text) {
  if (text == "application/json") return true;  // nearly every event's, checked in one compare
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
// Branch-free over each field (a fixed count of bytes the compiler can vectorize): one test
// per character was 4% of the envelope's time (perf, envelope_bench).
bool IsTraceparent(std::string_view t) {
  if (t.size() != 55 || t[2] != '-' || t[35] != '-' || t[52] != '-') return false;
  // Adds to `bad` for a byte that is not a lowercase hex digit, to `nonzero` for one that is not
  // '0', over the `count` bytes at `from`.
  const auto scan = [&t](size_t from, auto count, unsigned& bad, unsigned& nonzero) {
    for (size_t i = 0; i < decltype(count)::value; ++i) {
      const auto c = static_cast<unsigned char>(t[from + i]);
      const bool digit = static_cast<unsigned char>(c - '0') < 10;
      const bool letter = static_cast<unsigned char>(c - 'a') < 6;
      bad |= static_cast<unsigned>(!(digit || letter));
      nonzero |= static_cast<unsigned>(c != '0');
    }
  };
  unsigned bad = 0, version_nonzero = 0, trace_nonzero = 0, span_nonzero = 0, flags_nonzero = 0;
  scan(0, std::integral_constant<size_t, 2>{}, bad, version_nonzero);
  scan(3, std::integral_constant<size_t, 32>{}, bad, trace_nonzero);
  scan(36, std::integral_constant<size_t, 16>{}, bad, span_nonzero);
  scan(53, std::integral_constant<size_t, 2>{}, bad, flags_nonzero);
  return bad == 0 && trace_nonzero != 0 && span_nonzero != 0 && t.substr(0, 2) != "ff";
}

bool IsExtensionName(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!((c >= 'a' && c <= 'z') || IsDigit(c))) return false;
  }
  return true;
}

// One pass without early exit; then, only when a 0xC2 lead byte was seen, whether one starts
// U+0080-U+009F.
bool HasControlCharacterExactly(std::string_view text) {
  unsigned control = 0, c2 = 0;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    control |= static_cast<unsigned>(c < 0x20 || c == 0x7F);
    c2 |= static_cast<unsigned>(c == 0xC2);
  }
  if (control != 0) return true;
  if (c2 == 0) return false;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    const auto next = static_cast<unsigned char>(text[i + 1]);
    if (static_cast<unsigned char>(text[i]) == 0xC2 && next >= 0x80 && next <= 0x9F) return true;
  }
  return false;
}

}  // namespace evident::syntax
