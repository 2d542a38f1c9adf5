#include "json/pointer.h"

namespace evident::json {

void AppendPointerToken(std::string& out, std::string_view token) {
  for (const char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
}

std::string EscapePointerToken(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  AppendPointerToken(out, token);
  return out;
}

bool IsPointer(std::string_view text) {
  if (text.empty()) return true;
  if (text[0] != '/') return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '~' && (i + 1 >= text.size() || (text[i + 1] != '0' && text[i + 1] != '1'))) {
      return false;
    }
  }
  return true;
}

std::string PercentDecode(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

bool SplitPointer(std::string_view pointer, std::vector<std::string>& tokens) {
  tokens.clear();
  if (pointer.empty()) return true;
  if (pointer[0] != '/') return false;
  std::string token;
  for (size_t i = 1;; ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      tokens.push_back(token);
      token.clear();
      if (i == pointer.size()) return true;
      continue;
    }
    if (pointer[i] != '~') {
      token.push_back(pointer[i]);
      continue;
    }
    if (i + 1 >= pointer.size()) return false;
    if (pointer[i + 1] == '0') {
      token.push_back('~');
    } else if (pointer[i + 1] == '1') {
      token.push_back('/');
    } else {
      return false;
    }
    ++i;
  }
}

}  // namespace evident::json
