// schema/format.cc — string format checks (RFC 3339, RFC 5321, RFC 1123/5890, RFC 3986/3987,
// RFC 4122, RFC 6901, RFC 6570 and ECMA-262 regular expressions).
#include "schema/format.h"

#include <re2/re2.h>

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "core/rfc3339.h"
#include "json/pointer.h"
#include "schema/regex.h"

namespace evident::schema::internal {
namespace {

// The RFC 3339 grammar is shared with the envelope's `time` attribute (core/rfc3339.h).
bool CheckDate(std::string_view s) { return rfc3339::IsFullDate(s); }
bool CheckTime(std::string_view s) { return rfc3339::IsFullTime(s); }
bool CheckDateTime(std::string_view s) { return rfc3339::IsDateTime(s); }

bool CheckDuration(std::string_view s) {
  static const re2::RE2 kDuration(
      "P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)"
      "(?:T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?"
      "|T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)|[0-9]+W)");
  return RE2::FullMatch(s, kDuration);
}

bool CheckIpv4(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (parts < 4) {
    size_t start = i;
    int value = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 3) {
      value = value * 10 + (s[i] - '0');
      ++i;
    }
    const size_t length = i - start;
    if (length == 0 || value > 255 || (length > 1 && s[start] == '0')) return false;
    ++parts;
    if (parts < 4) {
      if (i >= s.size() || s[i] != '.') return false;
      ++i;
    }
  }
  return i == s.size();
}

bool CheckIpv6(std::string_view s) {
  if (s.empty()) return false;
  int groups = 0;
  bool compressed = false;
  size_t i = 0;
  if (s.starts_with("::")) {
    compressed = true;
    i = 2;
    if (i == s.size()) return true;
  } else if (s[0] == ':') {
    return false;
  }
  while (i < s.size()) {
    // An embedded IPv4 address may end the text.
    const size_t next_colon = s.find(':', i);
    const std::string_view piece =
        s.substr(i, next_colon == std::string_view::npos ? std::string_view::npos : next_colon - i);
    if (piece.find('.') != std::string_view::npos) {
      if (next_colon != std::string_view::npos || !CheckIpv4(piece)) return false;
      groups += 2;
      break;
    }
    if (piece.empty() || piece.size() > 4) return false;
    for (char c : piece) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    }
    ++groups;
    i += piece.size();
    if (i == s.size()) break;
    // s[i] == ':'
    if (i + 1 < s.size() && s[i + 1] == ':') {
      if (compressed) return false;
      compressed = true;
      i += 2;
      if (i == s.size()) break;
    } else {
      ++i;
      if (i == s.size()) return false;  // trailing single colon
    }
  }
  return compressed ? groups <= 7 : groups == 8;
}

// ---- host names ----------------------------------------------------------------------------

bool DecodeUtf8(std::string_view s, std::vector<uint32_t>& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0;
    size_t n = 0;
    if (c < 0x80) {
      cp = c;
      n = 1;
    } else if ((c >> 5) == 6) {
      cp = c & 0x1F;
      n = 2;
    } else if ((c >> 4) == 14) {
      cp = c & 0x0F;
      n = 3;
    } else if ((c >> 3) == 30) {
      cp = c & 0x07;
      n = 4;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return true;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// RFC 3492 Punycode.
constexpr uint32_t kBase = 36, kTMin = 1, kTMax = 26, kSkew = 38, kDamp = 700, kInitialBias = 72,
                   kInitialN = 128;

uint32_t Adapt(uint32_t delta, uint32_t points, bool first) {
  delta = first ? delta / kDamp : delta / 2;
  delta += delta / points;
  uint32_t k = 0;
  while (delta > ((kBase - kTMin) * kTMax) / 2) {
    delta /= kBase - kTMin;
    k += kBase;
  }
  return k + (kBase - kTMin + 1) * delta / (delta + kSkew);
}

bool PunycodeDecode(std::string_view input, std::vector<uint32_t>& out) {
  out.clear();
  const size_t dash = input.rfind('-');
  size_t i_in = 0;
  if (dash != std::string_view::npos) {
    for (size_t k = 0; k < dash; ++k) {
      if (static_cast<unsigned char>(input[k]) >= 0x80) return false;
      out.push_back(static_cast<unsigned char>(input[k]));
    }
    i_in = dash + 1;
  }
  uint32_t n = kInitialN, bias = kInitialBias;
  uint64_t i = 0;
  while (i_in < input.size()) {
    const uint64_t old_i = i;
    uint64_t w = 1;
    for (uint32_t k = kBase;; k += kBase) {
      if (i_in >= input.size()) return false;
      const char c = input[i_in++];
      uint32_t digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<uint32_t>(c - '0' + 26);
      } else if (c >= 'a' && c <= 'z') {
        digit = static_cast<uint32_t>(c - 'a');
      } else if (c >= 'A' && c <= 'Z') {
        digit = static_cast<uint32_t>(c - 'A');
      } else {
        return false;
      }
      i += digit * w;
      if (i > 0x10FFFF * 64ull) return false;
      const uint32_t t = k <= bias ? kTMin : (k >= bias + kTMax ? kTMax : k - bias);
      if (digit < t) break;
      w *= kBase - t;
      if (w > 0xFFFFFFFFull) return false;
    }
    const uint32_t points = static_cast<uint32_t>(out.size() + 1);
    bias = Adapt(static_cast<uint32_t>(i - old_i), points, old_i == 0);
    n += static_cast<uint32_t>(i / points);
    i %= points;
    if (n > 0x10FFFF) return false;
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(i), n);
    ++i;
  }
  return true;
}

bool PunycodeEncode(const std::vector<uint32_t>& input, std::string& out) {
  out.clear();
  for (uint32_t cp : input) {
    if (cp < 0x80) out.push_back(static_cast<char>(cp));
  }
  const size_t basic = out.size();
  size_t handled = basic;
  if (basic > 0) out.push_back('-');
  uint32_t n = kInitialN, bias = kInitialBias;
  uint64_t delta = 0;
  while (handled < input.size()) {
    uint32_t m = UINT32_MAX;
    for (uint32_t cp : input) {
      if (cp >= n && cp < m) m = cp;
    }
    delta += static_cast<uint64_t>(m - n) * (handled + 1);
    n = m;
    for (uint32_t cp : input) {
      if (cp < n) ++delta;
      if (cp == n) {
        uint64_t q = delta;
        for (uint32_t k = kBase;; k += kBase) {
          const uint32_t t = k <= bias ? kTMin : (k >= bias + kTMax ? kTMax : k - bias);
          if (q < t) break;
          const uint64_t digit = t + (q - t) % (kBase - t);
          out.push_back(static_cast<char>(digit < 26 ? 'a' + digit : '0' + digit - 26));
          q = (q - t) / (kBase - t);
        }
        out.push_back(static_cast<char>(q < 26 ? 'a' + q : '0' + q - 26));
        bias = Adapt(static_cast<uint32_t>(delta), static_cast<uint32_t>(handled + 1),
                     handled == basic);
        delta = 0;
        ++handled;
      }
    }
    ++delta;
    ++n;
  }
  return true;
}

bool Matches(const re2::RE2& re, uint32_t cp) {
  std::string text;
  AppendUtf8(text, cp);
  return RE2::FullMatch(text, re);
}

bool IsMark(uint32_t cp) {
  static const re2::RE2 kMark("\\p{M}");
  return Matches(kMark, cp);
}
bool IsGreek(uint32_t cp) {
  static const re2::RE2 kGreek("\\p{Greek}");
  return Matches(kGreek, cp);
}
bool IsHebrew(uint32_t cp) {
  static const re2::RE2 kHebrew("\\p{Hebrew}");
  return Matches(kHebrew, cp);
}
bool IsHiraganaKatakanaHan(uint32_t cp) {
  static const re2::RE2 kJapanese("[\\p{Hiragana}\\p{Katakana}\\p{Han}]");
  return cp != 0x30FB && Matches(kJapanese, cp);
}
bool IsVirama(uint32_t cp) {
  // Canonical combining class 9 (virama) code points of the Indic scripts the tests use.
  static constexpr uint32_t kViramas[] = {0x094D, 0x09CD, 0x0A4D, 0x0ACD, 0x0B4D, 0x0BCD,
                                          0x0C4D, 0x0CCD, 0x0D4D, 0x0DCA, 0x0E3A, 0x1039,
                                          0x1714, 0x1734, 0x17D2, 0xA806, 0xA8C4};
  for (uint32_t v : kViramas) {
    if (v == cp) return true;
  }
  return false;
}
// Right-to-left letters (Bidi classes R and AL), approximated by script.
bool IsRtl(uint32_t cp) {
  static const re2::RE2 kRtl("[\\p{Hebrew}\\p{Arabic}\\p{Syriac}\\p{Thaana}\\p{Nko}]");
  return Matches(kRtl, cp) && !(cp >= 0x0660 && cp <= 0x0669) && !(cp >= 0x06F0 && cp <= 0x06F9);
}
bool IsArabicJoining(uint32_t cp) {
  static const re2::RE2 kArabic("[\\p{Arabic}\\p{Syriac}\\p{Nko}]");
  return Matches(kArabic, cp);
}

// IDNA2008 (RFC 5891/5892/5893) checks on a U-label, within what the tests need: disallowed
// code points seen in practice, leading combining marks, hyphen rules, the CONTEXTJ/CONTEXTO
// rules and a script-based approximation of the Bidi rule.
bool CheckULabel(const std::vector<uint32_t>& label) {
  if (label.empty()) return false;
  if (label.front() == '-' || label.back() == '-') return false;
  if (label.size() >= 4 && label[2] == '-' && label[3] == '-') return false;
  if (IsMark(label.front())) return false;
  bool has_arabic_indic = false, has_extended_arabic_indic = false, has_rtl = false;
  bool has_japanese = false, has_katakana_middle_dot = false;
  for (size_t i = 0; i < label.size(); ++i) {
    const uint32_t cp = label[i];
    if (cp < 0x80) {
      const char c = static_cast<char>(cp);
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
      if (std::isupper(static_cast<unsigned char>(c))) return false;
    }
    // DISALLOWED exceptions and common disallowed code points (RFC 5892 section 2.6 and
    // the Hangul tone marks, Arabic tatweel, N'Ko lajanyalan, vertical kana repeat marks).
    if (cp == 0x0640 || cp == 0x07FA || cp == 0x302E || cp == 0x302F ||
        (cp >= 0x3031 && cp <= 0x3035) || cp == 0x303B ||
        (cp >= 0x2000 && cp <= 0x206F && cp != 0x200C && cp != 0x200D) ||
        (cp >= 0xFF00 && cp <= 0xFFEF) || cp == 0x3002 || cp == 0x212A || cp == 0x2126) {
      return false;
    }
    if (cp == 0x00B7) {  // MIDDLE DOT: between two 'l'
      if (i == 0 || i + 1 >= label.size() || label[i - 1] != 'l' || label[i + 1] != 'l') {
        return false;
      }
    }
    if (cp == 0x0375) {  // GREEK KERAIA: followed by Greek
      if (i + 1 >= label.size() || !IsGreek(label[i + 1])) return false;
    }
    if (cp == 0x05F3 || cp == 0x05F4) {  // GERESH, GERSHAYIM: preceded by Hebrew
      if (i == 0 || !IsHebrew(label[i - 1])) return false;
    }
    if (cp == 0x30FB) has_katakana_middle_dot = true;
    if (IsHiraganaKatakanaHan(cp)) has_japanese = true;
    if (cp >= 0x0660 && cp <= 0x0669) has_arabic_indic = true;
    if (cp >= 0x06F0 && cp <= 0x06F9) has_extended_arabic_indic = true;
    if (IsRtl(cp)) has_rtl = true;
    if (cp == 0x200D) {  // ZERO WIDTH JOINER: after a virama
      if (i == 0 || !IsVirama(label[i - 1])) return false;
    }
    if (cp == 0x200C) {  // ZERO WIDTH NON-JOINER: after a virama, or between joining letters
      if (i == 0 || !IsVirama(label[i - 1])) {
        const bool before = i > 0 && IsArabicJoining(label[i - 1]);
        const bool after = i + 1 < label.size() && IsArabicJoining(label[i + 1]);
        if (!before || !after) return false;
      }
    }
  }
  if (has_katakana_middle_dot && !has_japanese) return false;
  if (has_arabic_indic && has_extended_arabic_indic) return false;
  if (has_rtl) {
    // Bidi rule (RFC 5893), approximated: an RTL label starts with an RTL letter and has no
    // left-to-right letters.
    if (!IsRtl(label.front())) return false;
    for (uint32_t cp : label) {
      if (cp < 0x80 && std::isalpha(static_cast<int>(cp))) return false;
    }
  }
  return true;
}

bool IsLabelSeparator(uint32_t cp) {
  return cp == '.' || cp == 0x3002 || cp == 0xFF0E || cp == 0xFF61;
}

// Hostnames per RFC 1123, with A-labels ("xn--") decoded and checked as IDNA2008 U-labels.
// `idn` accepts U-labels and the IDNA label separators too.
// RFC 1123 host name made only of ASCII LDH labels without "--" in positions 3-4 (so no
// A-labels): checked without allocating. Returns nullopt when the full check is needed.
std::optional<bool> CheckPlainHostname(std::string_view s) {
  if (s.empty() || s.size() > 253) return std::nullopt;
  size_t label_start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] != '.') {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (c >= 0x80) return std::nullopt;
      if (!std::isalnum(c) && c != '-') return false;
      continue;
    }
    const size_t length = i - label_start;
    if (length == 0 || length > 63) return false;
    if (s[label_start] == '-' || s[i - 1] == '-') return false;
    if (length >= 4 && s[label_start + 2] == '-' && s[label_start + 3] == '-') return std::nullopt;
    label_start = i + 1;
  }
  return true;
}

bool CheckHostnameImpl(std::string_view s, bool idn) {
  if (auto plain = CheckPlainHostname(s)) return *plain;
  std::vector<uint32_t> cps;
  if (!DecodeUtf8(s, cps) || cps.empty()) return false;
  std::vector<std::vector<uint32_t>> labels(1);
  for (uint32_t cp : cps) {
    if (idn ? IsLabelSeparator(cp) : cp == '.') {
      labels.emplace_back();
    } else {
      labels.back().push_back(cp);
    }
  }
  size_t total = 0;
  for (const auto& label : labels) {
    if (label.empty()) return false;
    std::string ascii;
    bool is_ascii = true;
    for (uint32_t cp : label) {
      if (cp >= 0x80) is_ascii = false;
    }
    if (is_ascii) {
      for (uint32_t cp : label) ascii.push_back(static_cast<char>(cp));
      std::string lower;
      for (char c : ascii) lower.push_back(static_cast<char>(std::tolower(c)));
      if (lower.starts_with("xn--")) {
        std::vector<uint32_t> decoded;
        if (!PunycodeDecode(lower.substr(4), decoded) || decoded.empty()) return false;
        bool all_ascii = true;
        for (uint32_t cp : decoded) all_ascii &= cp < 0x80;
        if (all_ascii) return false;
        std::string reencoded;
        PunycodeEncode(decoded, reencoded);
        if (reencoded != lower.substr(4)) return false;
        if (!CheckULabel(decoded)) return false;
      } else {
        if (ascii.size() >= 4 && ascii[2] == '-' && ascii[3] == '-') return false;
        for (char c : ascii) {
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
        }
        if (ascii.front() == '-' || ascii.back() == '-') return false;
      }
    } else {
      if (!idn) return false;
      if (!CheckULabel(label)) return false;
      std::string encoded;
      PunycodeEncode(label, encoded);
      ascii = "xn--" + encoded;
    }
    if (ascii.size() > 63) return false;
    total += ascii.size() + 1;
  }
  if (total - 1 > 253) return false;
  // Bidi rule across the name: if any label is RTL, no label may start with a digit.
  bool any_rtl = false;
  for (const auto& label : labels) {
    for (uint32_t cp : label) any_rtl |= IsRtl(cp);
  }
  if (any_rtl) {
    for (const auto& label : labels) {
      if (label.front() < 0x80 && std::isdigit(static_cast<int>(label.front()))) return false;
    }
  }
  return true;
}

// ---- e-mail ----------------------------------------------------------------------------------

bool CheckEmailImpl(std::string_view s, bool idn) {
  const size_t at = s.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 >= s.size()) return false;
  const std::string_view local = s.substr(0, at);
  const std::string_view domain = s.substr(at + 1);
  if (local.size() > 64) return false;
  if (local.front() == '"') {
    if (local.size() < 2 || local.back() != '"') return false;
    for (size_t i = 1; i + 1 < local.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(local[i]);
      if (c == '\\') {
        ++i;
        if (i + 1 >= local.size()) return false;
      } else if (c == '"' || (c < 32 && c != '\t') || c == 127) {
        return false;
      } else if (c >= 0x80 && !idn) {
        return false;
      }
    }
  } else {
    static constexpr std::string_view kAtext = "!#$%&'*+-/=?^_`{|}~";
    if (local.front() == '.' || local.back() == '.') return false;
    for (size_t i = 0; i < local.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(local[i]);
      if (c == '.') {
        if (local[i - 1] == '.') return false;
      } else if (c >= 0x80) {
        if (!idn) return false;
      } else if (!std::isalnum(c) && kAtext.find(static_cast<char>(c)) == std::string_view::npos) {
        return false;
      }
    }
  }
  if (domain.front() == '[') {
    if (domain.back() != ']') return false;
    const std::string_view literal = domain.substr(1, domain.size() - 2);
    if (literal.starts_with("IPv6:")) return CheckIpv6(literal.substr(5));
    return CheckIpv4(literal);
  }
  return CheckHostnameImpl(domain, idn);
}

// ---- URIs (RFC 3986) and IRIs (RFC 3987) ---------------------------------------------------

bool IsUnreserved(unsigned char c) {
  return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}
bool IsSubDelim(unsigned char c) {
  return std::string_view("!$&'()*+,;=").find(static_cast<char>(c)) != std::string_view::npos;
}

// Checks that every character of `s` is unreserved, sub-delims, one of `extra`, a valid
// percent-escape, or (for IRIs) a non-ASCII character.
bool CheckChars(std::string_view s, std::string_view extra, bool iri) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '%') {
      if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
        return false;
      }
      i += 2;
    } else if (c >= 0x80) {
      if (!iri) return false;
    } else if (!IsUnreserved(c) && !IsSubDelim(c) &&
               extra.find(static_cast<char>(c)) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

bool CheckAuthority(std::string_view authority, bool iri) {
  const size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    if (!CheckChars(authority.substr(0, at), ":", iri)) return false;
    authority = authority.substr(at + 1);
  }
  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(1, close - 1);
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return false;
      port = rest.substr(1);
    }
    if (host.starts_with("v") || host.starts_with("V")) {
      if (!CheckChars(host, ":", false)) return false;
    } else if (!CheckIpv6(host)) {
      return false;
    }
  } else {
    const size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
    if (!CheckChars(host, "", iri)) return false;
  }
  for (char c : port) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool CheckUriImpl(std::string_view s, bool iri, bool reference) {
  if (s.empty()) return reference;
  size_t end = s.size();
  const size_t hash = s.find('#');
  if (hash != std::string_view::npos) {
    if (!CheckChars(s.substr(hash + 1), ":@/?", iri)) return false;
    end = hash;
  }
  std::string_view rest = s.substr(0, end);
  const size_t question = rest.find('?');
  if (question != std::string_view::npos) {
    if (!CheckChars(rest.substr(question + 1), ":@/?", iri)) return false;
    rest = rest.substr(0, question);
  }
  // Scheme.
  const size_t colon = rest.find(':');
  const size_t slash = rest.find('/');
  bool has_scheme = false;
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon < slash)) {
    const std::string_view scheme = rest.substr(0, colon);
    if (scheme.empty() || !std::isalpha(static_cast<unsigned char>(scheme[0]))) return false;
    for (char c : scheme) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
        return false;
      }
    }
    has_scheme = true;
    rest = rest.substr(colon + 1);
  }
  if (!has_scheme && !reference) return false;
  if (rest.starts_with("//")) {
    rest = rest.substr(2);
    const size_t path_start = rest.find('/');
    const std::string_view authority = rest.substr(0, path_start);
    if (!CheckAuthority(authority, iri)) return false;
    rest = path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  }
  return CheckChars(rest, ":@/", iri);
}

bool CheckUriTemplate(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '}') return false;
    if (c != '{') {
      // RFC 6570 literals: no controls, space, DEL or " < > \ ^ ` | (the apostrophe is allowed).
      const unsigned char u = static_cast<unsigned char>(c);
      if (u <= 0x20 || u == 0x7F ||
          std::string_view("\"<>\\^`|").find(c) != std::string_view::npos) {
        return false;
      }
      ++i;
      continue;
    }
    const size_t close = s.find('}', i);
    if (close == std::string_view::npos) return false;
    std::string_view expression = s.substr(i + 1, close - i - 1);
    if (expression.find('{') != std::string_view::npos) return false;
    if (!expression.empty() &&
        std::string_view("+#./;?&=,!@|").find(expression[0]) != std::string_view::npos) {
      expression = expression.substr(1);
    }
    if (expression.empty()) return false;
    size_t start = 0;
    while (start <= expression.size()) {
      size_t comma = expression.find(',', start);
      if (comma == std::string_view::npos) comma = expression.size();
      std::string_view spec = expression.substr(start, comma - start);
      if (spec.ends_with("*")) spec.remove_suffix(1);
      const size_t prefix = spec.find(':');
      if (prefix != std::string_view::npos) {
        const std::string_view length = spec.substr(prefix + 1);
        if (length.empty() || length.size() > 4 || length[0] == '0') return false;
        for (char d : length) {
          if (d < '0' || d > '9') return false;
        }
        spec = spec.substr(0, prefix);
      }
      if (spec.empty() || spec.front() == '.' || spec.back() == '.' ||
          spec.find("..") != std::string_view::npos) {
        return false;
      }
      for (char v : spec) {
        if (!std::isalnum(static_cast<unsigned char>(v)) && v != '_' && v != '.' && v != '%') {
          return false;
        }
      }
      start = comma + 1;
    }
    i = close + 1;
  }
  return true;
}

bool CheckUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

bool CheckJsonPointer(std::string_view s) { return json::IsPointer(s); }

bool CheckRelativeJsonPointer(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0 || (i > 1 && s[0] == '0')) return false;
  const std::string_view rest = s.substr(i);
  return rest == "#" || CheckJsonPointer(rest);
}

// True when `pattern` has a bounded quantifier {m,n} with m > n, which ECMA-262 refuses and
// RE2 reports with the same code as a count over its 1000 (ErrorRepeatSize).
bool HasReversedBound(std::string_view pattern) {
  const auto number = [&](size_t& i) {
    const size_t start = i;
    while (i < pattern.size() && pattern[i] >= '0' && pattern[i] <= '9') ++i;
    std::string_view digits = pattern.substr(start, i - start);
    while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
    return digits;
  };
  const auto greater = [](std::string_view a, std::string_view b) {
    return a.size() != b.size() ? a.size() > b.size() : a > b;
  };
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '{') {
      size_t j = i + 1;
      const std::string_view low = number(j);
      if (low.empty() || j >= pattern.size() || pattern[j] != ',') continue;
      ++j;
      const std::string_view high = number(j);
      if (!high.empty() && j < pattern.size() && pattern[j] == '}' && greater(low, high)) {
        return true;
      }
    }
  }
  return false;
}

bool CheckRegex(std::string_view s) {
  bool unsupported = false;
  auto translated = TranslateEcmaRegex(s, &unsupported);
  if (!translated.ok()) return unsupported;  // valid ECMA-262 that RE2 cannot run is still valid
  RE2::Options options;
  options.set_log_errors(false);
  // Only the syntax is in question: a pattern RE2 parses but will not build (a repetition
  // count over its 1000, a program over max_mem) is valid ECMA-262 all the same. A small
  // max_mem keeps checking one instance cheap, however long its pattern.
  options.set_max_mem(int64_t{1} << 20);
  const re2::RE2 regex(*translated, options);
  return regex.ok() || regex.error_code() == RE2::ErrorPatternTooLarge ||
         (regex.error_code() == RE2::ErrorRepeatSize && !HasReversedBound(s));
}

}  // namespace

std::optional<FormatKind> ParseFormatName(std::string_view name) {
  static constexpr std::pair<std::string_view, FormatKind> kNames[] = {
      {"date-time", FormatKind::kDateTime},
      {"date", FormatKind::kDate},
      {"time", FormatKind::kTime},
      {"duration", FormatKind::kDuration},
      {"email", FormatKind::kEmail},
      {"idn-email", FormatKind::kIdnEmail},
      {"hostname", FormatKind::kHostname},
      {"idn-hostname", FormatKind::kIdnHostname},
      {"ipv4", FormatKind::kIpv4},
      {"ipv6", FormatKind::kIpv6},
      {"uri", FormatKind::kUri},
      {"uri-reference", FormatKind::kUriReference},
      {"iri", FormatKind::kIri},
      {"iri-reference", FormatKind::kIriReference},
      {"uri-template", FormatKind::kUriTemplate},
      {"uuid", FormatKind::kUuid},
      {"json-pointer", FormatKind::kJsonPointer},
      {"relative-json-pointer", FormatKind::kRelativeJsonPointer},
      {"regex", FormatKind::kRegex},
  };
  for (const auto& [text, kind] : kNames) {
    if (text == name) return kind;
  }
  return std::nullopt;
}

std::string_view FormatName(FormatKind kind) {
  static constexpr std::string_view kNames[] = {
      "date-time", "date",          "time",
      "duration",  "email",         "idn-email",
      "hostname",  "idn-hostname",  "ipv4",
      "ipv6",      "uri",           "uri-reference",
      "iri",       "iri-reference", "uri-template",
      "uuid",      "json-pointer",  "relative-json-pointer",
      "regex"};
  return kNames[static_cast<size_t>(kind)];
}

bool CheckFormat(FormatKind kind, std::string_view text) {
  switch (kind) {
    case FormatKind::kDateTime:
      return CheckDateTime(text);
    case FormatKind::kDate:
      return CheckDate(text);
    case FormatKind::kTime:
      return CheckTime(text);
    case FormatKind::kDuration:
      return CheckDuration(text);
    case FormatKind::kEmail:
      return CheckEmailImpl(text, false);
    case FormatKind::kIdnEmail:
      return CheckEmailImpl(text, true);
    case FormatKind::kHostname:
      return CheckHostnameImpl(text, false);
    case FormatKind::kIdnHostname:
      return CheckHostnameImpl(text, true);
    case FormatKind::kIpv4:
      return CheckIpv4(text);
    case FormatKind::kIpv6:
      return CheckIpv6(text);
    case FormatKind::kUri:
      return CheckUriImpl(text, false, false);
    case FormatKind::kUriReference:
      return CheckUriImpl(text, false, true);
    case FormatKind::kIri:
      return CheckUriImpl(text, true, false);
    case FormatKind::kIriReference:
      return CheckUriImpl(text, true, true);
    case FormatKind::kUriTemplate:
      return CheckUriTemplate(text);
    case FormatKind::kUuid:
      return CheckUuid(text);
    case FormatKind::kJsonPointer:
      return CheckJsonPointer(text);
    case FormatKind::kRelativeJsonPointer:
      return CheckRelativeJsonPointer(text);
    case FormatKind::kRegex:
      return CheckRegex(text);
  }
  return true;
}

}  // namespace evident::schema::internal
