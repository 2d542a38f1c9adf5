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
