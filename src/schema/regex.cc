#include "schema/regex.h"

#include <re2/re2.h>

#include <cassert>
#include <cctype>
#include <cstdio>

namespace evident::schema::internal {
namespace {

// ECMA-262 WhiteSpace and LineTerminator code points (what \s matches there); RE2's \s is ASCII.
constexpr std::string_view kEcmaSpaceClassBody =
    "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}\\x{FEFF}";
// ECMA-262 '.' (without the s flag) excludes every line terminator, not just \n.
constexpr std::string_view kEcmaDot = "[^\\n\\r\\x{2028}\\x{2029}]";

std::string CodePoint(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\x{%X}", cp);
  return buf;
}

bool ParseHex(std::string_view text, size_t count, uint32_t& value) {
  if (text.size() < count) return false;
  value = 0;
  for (size_t i = 0; i < count; ++i) {
    const char c = text[i];
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    value = value * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(c))
                                                   ? c - '0'
                                                   : std::tolower(c) - 'a' + 10);
  }
  return true;
}

std::string_view GeneralCategory(std::string_view name) {
  struct Alias {
    std::string_view ecma, re2;
  };
  static constexpr Alias kAliases[] = {
      {"Letter", "L"},
      {"Lowercase_Letter", "Ll"},
      {"Uppercase_Letter", "Lu"},
      {"Titlecase_Letter", "Lt"},
      {"Modifier_Letter", "Lm"},
      {"Other_Letter", "Lo"},
      {"Mark", "M"},
      {"Number", "N"},
      {"Decimal_Number", "Nd"},
      {"digit", "Nd"},
      {"Letter_Number", "Nl"},
      {"Other_Number", "No"},
      {"Punctuation", "P"},
      {"punct", "P"},
      {"Symbol", "S"},
      {"Separator", "Z"},
      {"Space_Separator", "Zs"},
      {"Other", "C"},
      {"Control", "Cc"},
      {"cntrl", "Cc"},
      {"Format", "Cf"},
      {"Private_Use", "Co"},
      {"Surrogate", "Cs"},
      {"Math_Symbol", "Sm"},
      {"Currency_Symbol", "Sc"},
  };
  for (const Alias& alias : kAliases) {
    if (alias.ecma == name) return alias.re2;
  }
  return name;
}

class Translator {
 public:
  explicit Translator(std::string_view pattern) : p_(pattern) {}

  bool unsupported() const { return unsupported_; }

  Result<std::string> Run() {
    while (i_ < p_.size()) {
      const char c = p_[i_];
      [[maybe_unused]] const size_t before = i_;
      if (c == '\\') {
        EVIDENT_RETURN_IF_ERROR(Escape(/*in_class=*/false));
      } else if (c == '[') {
        EVIDENT_RETURN_IF_ERROR(Class());
      } else if (c == '(') {
        EVIDENT_RETURN_IF_ERROR(Group());
      } else if (c == '.') {
        out_ += kEcmaDot;
        ++i_;
      } else {
        out_.push_back(c);
        ++i_;
      }
      assert(i_ > before && i_ <= p_.size());  // each step consumes input, within the pattern
    }
    return out_;
  }

 private:
  Status Unsupported(std::string_view what) {
    unsupported_ = true;
    return Status::InvalidArgument("pattern \"" + std::string(p_) + "\": " + std::string(what) +
                                   " is not supported (RE2 matches in linear time and cannot "
                                   "express it)");
  }
  Status Invalid(std::string_view what) {
    return Status::InvalidArgument("pattern \"" + std::string(p_) + "\": " + std::string(what));
  }

  Status Group() {
    std::string_view rest = p_.substr(i_);
    if (rest.starts_with("(?=") || rest.starts_with("(?!")) return Unsupported("lookahead");
    if (rest.starts_with("(?<=") || rest.starts_with("(?<!")) return Unsupported("lookbehind");
    if (rest.starts_with("(?<")) {
      out_ += "(?P<";
      i_ += 3;
      return Status::Ok();
    }
    if (rest.starts_with("(?:")) {
      out_ += "(?:";
      i_ += 3;
      return Status::Ok();
    }
    if (rest.starts_with("(?")) return Invalid("unknown group syntax");
    out_.push_back('(');
    ++i_;
    return Status::Ok();
  }

  // Reads \u escapes (with surrogate pairs and \u{...}) into a code point.
  Status UnicodeEscape(uint32_t& cp) {
    std::string_view rest = p_.substr(i_);  // starts after "\u"
    if (!rest.empty() && rest[0] == '{') {
      const size_t close = rest.find('}');
      if (close == std::string_view::npos || close == 1 || close > 7) {
        return Invalid("bad \\u{...} escape");
      }
      if (!ParseHex(rest.substr(1), close - 1, cp) || cp > 0x10FFFF) {
        return Invalid("bad \\u{...} escape");
      }
      i_ += close + 1;
      return Status::Ok();
    }
    if (!ParseHex(rest, 4, cp)) return Invalid("bad \\u escape");
    i_ += 4;
    if (cp >= 0xD800 && cp <= 0xDBFF && p_.substr(i_).starts_with("\\u")) {
      uint32_t low = 0;
      if (ParseHex(p_.substr(i_ + 2), 4, low) && low >= 0xDC00 && low <= 0xDFFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        i_ += 6;
      }
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return Unsupported("a lone surrogate escape");
    return Status::Ok();
  }

  // One escape sequence, from its backslash; inside a character class when `in_class`. Grouped
  // as ECMA-262's grammar groups them.
  Status Escape(bool in_class) {
    if (i_ + 1 >= p_.size()) return Invalid("trailing backslash");
    const char c = p_[i_ + 1];
    i_ += 2;
    switch (c) {
      case 'd':
      case 'D':
      case 'w':
      case 'W':
      case 's':
      case 'S':
        CharacterClassEscape(c, in_class);
        return Status::Ok();
      case 'p':
      case 'P':
        return PropertyEscape(c);
      case 'b':
      case 'B':
        return BoundaryEscape(c, in_class);
      case 't':
      case 'n':
      case 'r':
      case 'f':
      case 'v':
      case '0':
      case 'c':
      case 'x':
      case 'u':
        return CharacterEscape(c);
      case 'k':
        return Unsupported("a named backreference");
      default:
        break;
    }
    if (c >= '1' && c <= '9') return Unsupported("a backreference");
    if (std::isalnum(static_cast<unsigned char>(c))) {
      return Invalid(std::string("unknown escape \\") + c);
    }
    // Identity escape of a syntax character or other punctuation: RE2 accepts the same.
    out_ += '\\';
    out_ += c;
    return Status::Ok();
  }

  // \d \D \w \W as RE2 has them; \s \S with ECMA-262's wider white space.
  void CharacterClassEscape(char c, bool in_class) {
    if (c == 's') {
      if (in_class) {
        out_ += kEcmaSpaceClassBody;
      } else {
        out_ += "[" + std::string(kEcmaSpaceClassBody) + "]";
      }
    } else if (c == 'S') {
      if (in_class) {
        // A negated set inside a class has no RE2 spelling; fall back to RE2's ASCII \S.
        out_ += "\\S";
      } else {
        out_ += "[^" + std::string(kEcmaSpaceClassBody) + "]";
      }
    } else {
      assert(c == 'd' || c == 'D' || c == 'w' || c == 'W');
      out_ += '\\';
      out_ += c;
    }
  }

  // \p{...} and \P{...}: a General_Category (ECMA-262 long names mapped to RE2's short ones) or
  // a Script; other Unicode properties are unsupported.
  Status PropertyEscape(char c) {
    assert(c == 'p' || c == 'P');
    if (i_ >= p_.size() || p_[i_] != '{') return Invalid("bad \\p escape");
    const size_t close = p_.find('}', i_);
    if (close == std::string_view::npos) return Invalid("bad \\p escape");
    std::string_view name = p_.substr(i_ + 1, close - i_ - 1);
    const size_t equals = name.find('=');
    if (equals != std::string_view::npos) {
      std::string_view key = name.substr(0, equals);
      name = name.substr(equals + 1);
      if (key == "General_Category" || key == "gc") {
        name = GeneralCategory(name);
      } else if (key != "Script" && key != "sc") {
        return Unsupported("the Unicode property \"" + std::string(key) + "\"");
      }
    } else {
      name = GeneralCategory(name);
    }
    out_ += '\\';
    out_ += c;
    out_ += '{';
    out_ += name;
    out_ += '}';
    i_ = close + 1;
    return Status::Ok();
  }

  // \b and \B are word-boundary assertions outside a class; inside one \b is a backspace.
  Status BoundaryEscape(char c, bool in_class) {
    if (c == 'b') {
      out_ += in_class ? "\\x{8}" : "\\b";
      return Status::Ok();
    }
    assert(c == 'B');
    if (in_class) return Invalid("\\B inside a class");
    out_ += "\\B";
    return Status::Ok();
  }

  // A single character: a control escape (\t \n \r \f \v), \0, \cX, \xHH or \u.
  Status CharacterEscape(char c) {
    switch (c) {
      case 't':
        out_ += "\\t";
        return Status::Ok();
      case 'n':
        out_ += "\\n";
        return Status::Ok();
      case 'r':
        out_ += "\\r";
        return Status::Ok();
      case 'f':
        out_ += "\\f";
        return Status::Ok();
      case 'v':
        out_ += "\\x{0B}";
        return Status::Ok();
      case '0':
        if (i_ < p_.size() && std::isdigit(static_cast<unsigned char>(p_[i_]))) {
          return Invalid("octal escape");
        }
        out_ += "\\x{0}";
        return Status::Ok();
      case 'c':
        if (i_ >= p_.size() || !std::isalpha(static_cast<unsigned char>(p_[i_]))) {
          return Invalid("bad \\c escape");
        }
        out_ += CodePoint(static_cast<uint32_t>(p_[i_]) % 32);
        ++i_;
        return Status::Ok();
      case 'x': {
        uint32_t cp = 0;
        if (!ParseHex(p_.substr(i_), 2, cp)) return Invalid("bad \\x escape");
        i_ += 2;
        out_ += CodePoint(cp);
        return Status::Ok();
      }
      default: {
        assert(c == 'u');
        uint32_t cp = 0;
        EVIDENT_RETURN_IF_ERROR(UnicodeEscape(cp));
        assert(cp <= 0x10FFFF);  // both forms of UnicodeEscape are bounded
        out_ += CodePoint(cp);
        return Status::Ok();
      }
    }
  }

  Status Class() {
    std::string_view rest = p_.substr(i_);
    if (rest.starts_with("[^]")) {
      out_ += "(?s:.)";
      i_ += 3;
      return Status::Ok();
    }
    if (rest.starts_with("[]")) {
      out_ += "[^\\x{0}-\\x{10FFFF}]";  // matches nothing, like ECMA-262
      i_ += 2;
      return Status::Ok();
    }
    out_ += '[';
    ++i_;
    if (i_ < p_.size() && p_[i_] == '^') {
      out_ += '^';
      ++i_;
    }
    while (i_ < p_.size()) {
      const char c = p_[i_];
      if (c == ']') {
        out_ += ']';
        ++i_;
        return Status::Ok();
      }
      if (c == '\\') {
        EVIDENT_RETURN_IF_ERROR(Escape(/*in_class=*/true));
      } else if (c == '[') {
        out_ += "\\[";  // literal in ECMA-262; RE2 would read "[:" as a POSIX class
        ++i_;
      } else {
        out_.push_back(c);
        ++i_;
      }
    }
    return Invalid("unterminated character class");
  }

  std::string_view p_;
  bool unsupported_ = false;
  size_t i_ = 0;
  std::string out_;
};

}  // namespace

Result<std::string> TranslateEcmaRegex(std::string_view pattern, bool* unsupported) {
  Translator translator(pattern);
  Result<std::string> result = translator.Run();
  if (unsupported != nullptr) *unsupported = !result.ok() && translator.unsupported();
  return result;
}

Result<std::shared_ptr<const re2::RE2>> CompileEcmaRegex(std::string_view pattern,
                                                         size_t program_bytes_max) {
  EVIDENT_ASSIGN_OR_RETURN(std::string translated, TranslateEcmaRegex(pattern));
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(static_cast<int64_t>(program_bytes_max));
  options.set_encoding(RE2::Options::EncodingUTF8);
  auto regex = std::make_shared<const re2::RE2>(translated, options);
  if (!regex->ok()) {
    return Status::InvalidArgument("pattern \"" + std::string(pattern) +
                                   "\" does not compile: " + regex->error());
  }
  return std::shared_ptr<const re2::RE2>(std::move(regex));
}

bool RegexSearch(const re2::RE2& regex, std::string_view text) {
  return RE2::PartialMatch(text, regex);
}

}  // namespace evident::schema::internal
