#include "json/writer.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace evident::json {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  const unsigned char c1 = byte(i + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
  if (c == 0xED && c1 > 0x9F) return 0;  // surrogate
  if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
  if (c == 0xF4 && c1 > 0x8F) return 0;  // above U+10FFFF
  return n;
}

// Skips printable ASCII other than '"' and '\\' eight bytes at a time (a word-wide test, so that
// the common case costs about a quarter of a byte-by-byte loop); returns where the run of such
// bytes may end. The caller finishes the last few bytes one at a time.
size_t PlainRunEnd(std::string_view text, size_t i) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = 0x8080808080808080ULL;
  while (i + 8 <= text.size()) {
    uint64_t w;
    std::memcpy(&w, text.data() + i, 8);
    // A byte is flagged when it is below 0x20, is '"' or '\\', or has its high bit set.
    const uint64_t below_space = (w - kOnes * 0x20) & ~w;
    const uint64_t quote = w ^ (kOnes * '"');
    const uint64_t backslash = w ^ (kOnes * '\\');
    const uint64_t flagged =
        (below_space | ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | w) &
        kHighs;
    if (flagged != 0) break;
    i += 8;
  }
  return i;
}

}  // namespace

void AppendQuoted(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (size_t i = 0; i < text.size();) {
    // Printable ASCII other than '"' and '\\' is copied as one run (most keys and values are
    // nothing else).
    size_t plain = PlainRunEnd(text, i);
    while (plain < text.size()) {
      const unsigned char p = static_cast<unsigned char>(text[plain]);
      if (p < 0x20 || p >= 0x80 || p == '"' || p == '\\') break;
      ++plain;
    }
    if (plain > i) {
      out.append(text.data() + i, plain - i);
      i = plain;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(text, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";
        ++i;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

void Writer::Separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_member_.empty()) {
    if (has_member_.mark()) out_.push_back(',');
  }
}

Writer& Writer::BeginObject() {
  Separate();
  out_.push_back('{');
  has_member_.push();
  return *this;
}

Writer& Writer::EndObject() {
  assert(!has_member_.empty() && !after_key_);
  has_member_.pop();
  out_.push_back('}');
  return *this;
}

Writer& Writer::BeginArray() {
  Separate();
  out_.push_back('[');
  has_member_.push();
  return *this;
}

Writer& Writer::EndArray() {
  assert(!has_member_.empty() && !after_key_);
  has_member_.pop();
  out_.push_back(']');
  return *this;
}

Writer& Writer::Key(std::string_view key) {
  assert(!after_key_);
  Separate();
  AppendQuoted(out_, key);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

Writer& Writer::String(std::string_view value) {
  Separate();
  AppendQuoted(out_, value);
  return *this;
}

Writer& Writer::Int(int64_t value) {
  Separate();
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out_.append(digits, static_cast<size_t>(end - digits));
  return *this;
}

Writer& Writer::Uint(uint64_t value) {
  Separate();
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out_.append(digits, static_cast<size_t>(end - digits));
  return *this;
}

Writer& Writer::Double(double value) {
  Separate();
  if (!std::isfinite(value)) {
    out_ += "null";
    return *this;
  }
  char buffer[32];
  const int n = std::snprintf(buffer, sizeof buffer, "%.17g", value);
  out_.append(buffer, static_cast<size_t>(n));
  return *this;
}

Writer& Writer::Bool(bool value) {
  Separate();
  out_ += value ? "true" : "false";
  return *this;
}

Writer& Writer::Null() {
  Separate();
  out_ += "null";
  return *this;
}

Writer& Writer::Raw(std::string_view json_text) {
  Separate();
  out_.append(json_text);
  return *this;
}

std::string_view Utf8Prefix(std::string_view text, size_t bytes_max) {
  size_t end = std::min(text.size(), bytes_max);
  // Continuation bytes are 10xxxxxx: step back to the start of the sequence being cut.
  while (end > 0 && end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;
  }
  return text.substr(0, end);
}

}  // namespace evident::json
