// Splitting an input into the byte ranges of its events.
#include <simdjson.h>

#include "evident/envelope.h"

namespace evident {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Returns the end of the JSON value starting at text[pos]. Only called on text simdjson has
// already accepted, so it needs to track strings and bracket depth, nothing more. simdjson's DOM
// keeps no source offsets, which is why the byte ranges of batch elements are found here.
size_t ValueEnd(std::string_view text, size_t pos) {
  int depth = 0;
  bool in_string = false;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (in_string) {
      if (c == '\\')
        ++pos;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '{':
      case '[':
        ++depth;
        break;
      case '}':
      case ']':
        if (depth == 0) return pos;
        --depth;
        break;
      case ',':
        if (depth == 0) return pos;
        break;
      default:
        break;
    }
  }
  return pos;
}

std::vector<InputSlice> SplitArray(std::string_view text) {
  std::vector<InputSlice> slices;
  size_t pos = text.find('[') + 1;
  size_t index = 0;
  while (pos < text.size()) {
    while (pos < text.size() && IsSpace(text[pos])) ++pos;
    if (pos >= text.size() || text[pos] == ']') break;
    const size_t end = ValueEnd(text, pos);
    slices.push_back({Trim(text.substr(pos, end - pos)), index++});
    pos = end + 1;  // past ',' (or ']', which ends the loop next)
    if (end < text.size() && text[end] == ']') break;
  }
  return slices;
}

bool ParsesAlone(simdjson::dom::parser& parser, std::string_view text) {
  simdjson::dom::element ignored;
  return parser.parse(text.data(), text.size()).get(ignored) == simdjson::SUCCESS;
}

std::vector<InputSlice> SplitLines(std::string_view input) {
  std::vector<InputSlice> slices;
  size_t line = 0;
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view text = Trim(input.substr(start, end - start));
    if (!text.empty()) slices.push_back({text, line});
    ++line;
    start = end + 1;
  }
  return slices;
}

}  // namespace

SplitInput SplitEvents(std::string_view input, size_t nesting_depth_max) {
  const std::string_view trimmed = Trim(input);
  if (trimmed.empty()) return {InputLayout::kNdjson, {}};
  simdjson::dom::parser parser;
  if (parser.allocate(trimmed.size(), nesting_depth_max + 1) != simdjson::SUCCESS) {
    return {InputLayout::kSingle, {{trimmed, 0}}};
  }

  // NDJSON when the first line is a whole JSON value and more follows it. This avoids parsing a
  // large NDJSON stream as one document first.
  const size_t newline = trimmed.find('\n');
  if (newline != std::string_view::npos) {
    const std::string_view first = Trim(trimmed.substr(0, newline));
    if (!first.empty() && ParsesAlone(parser, first)) {
      return {InputLayout::kNdjson, SplitLines(input)};
    }
  }
  simdjson::dom::element root;
  if (parser.parse(trimmed.data(), trimmed.size()).get(root) == simdjson::SUCCESS) {
    if (root.is_array()) return {InputLayout::kBatch, SplitArray(trimmed)};
    return {InputLayout::kSingle, {{trimmed, 0}}};
  }
  // Not one document. NDJSON whose first line is broken still has lines that parse alone.
  if (newline != std::string_view::npos) {
    std::vector<InputSlice> lines = SplitLines(input);
    for (const InputSlice& slice : lines) {
      if (ParsesAlone(parser, slice.bytes)) return {InputLayout::kNdjson, std::move(lines)};
    }
  }
  return {InputLayout::kSingle, {{trimmed, 0}}};
}

}  // namespace evident
