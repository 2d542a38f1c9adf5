// core/join.h — lists in messages: "a, b, c".
#pragma once

#include <string>
#include <string_view>

namespace evident {

// The items of `range`, each made text by `text(item)`, with `separator` between them (an empty
// item still gets its separator).
template <typename Range, typename Text>
std::string JoinEach(const Range& range, Text&& text, std::string_view separator = ", ") {
  std::string out;
  bool first = true;
  for (const auto& item : range) {
    if (!first) out += separator;
    first = false;
    out += text(item);
  }
  return out;
}

// The items of `range`, text already (std::string, std::string_view, const char*).
template <typename Range>
std::string Join(const Range& range, std::string_view separator = ", ") {
  return JoinEach(
      range, [](const auto& item) -> std::string_view { return item; }, separator);
}

}  // namespace evident
