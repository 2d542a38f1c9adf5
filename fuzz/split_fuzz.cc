// libFuzzer target: EventSplitter, the streaming splitter of `evident validate`.
//
// Invariants checked, whatever the bytes: no crash, leak or sanitizer report; fed in chunks of
// any size (the first byte picks it) it hands over exactly what it hands over for the input in
// one piece; no event holds more than event_bytes_max + 1 bytes; an event the splitter did not
// reject is the input's own bytes at its offset, non-empty and without surrounding whitespace;
// offsets rise; batch indices count 0, 1, 2, ...; line indices rise and name a line of the input;
// SplitEvents' slices lie inside the input; `next` lies past the event, at or before the
// next one, within the chunk the event was handed over in (the end of the input at Finish):
// the file source hashes each chunk up to its events' `next`.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/envelope.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

struct Got {
  std::string bytes;
  size_t index;
  uint64_t offset;
  uint64_t next;
  std::optional<evident::EnvelopeReason> reason;
  bool operator==(const Got&) const = default;
};

constexpr size_t kEventBytesMax = 64;  // small, so that inputs reach it

std::vector<Got> Split(std::string_view input, size_t chunk_bytes,
                       std::optional<evident::InputLayout>& layout) {
  std::vector<Got> got;
  size_t chunk_from = 0, chunk_to = 0;  // the chunk being fed
  const evident::EventSplitter::Sink keep = [&](const evident::SplitEvent& e) {
    Check(e.bytes.size() <= kEventBytesMax + 1);
    Check(e.next >= chunk_from && e.next <= chunk_to);
    got.push_back({std::string(e.bytes), e.index, e.offset, e.next,
                   e.rejection ? std::optional(e.rejection->reason) : std::nullopt});
    return evident::Status::Ok();
  };
  evident::EventSplitter splitter(kEventBytesMax);
  for (size_t at = 0; at < input.size(); at += chunk_bytes) {
    chunk_from = at;
    chunk_to = std::min(input.size(), at + chunk_bytes);
    Check(splitter.Feed(input.substr(at, chunk_bytes), keep).ok());
  }
  chunk_from = chunk_to = input.size();
  Check(splitter.Finish(keep).ok());
  layout = splitter.layout();
  return got;
}

void CheckEvents(std::string_view input, const std::vector<Got>& events,
                 std::optional<evident::InputLayout> layout) {
  size_t lines = 0;
  for (const char c : input) lines += c == '\n' ? 1 : 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const Got& e = events[i];
    Check(e.offset <= input.size());
    if (i > 0) Check(e.offset > events[i - 1].offset && e.offset >= events[i - 1].next);
    Check(e.next >= e.offset && e.next <= input.size());
    if (!e.reason) Check(e.next >= e.offset + e.bytes.size());
    if (layout == evident::InputLayout::kBatch) {
      Check(e.index == i);
    } else {
      Check(e.index <= lines && (i == 0 || e.index > events[i - 1].index));
    }
    if (e.reason) continue;
    Check(!e.bytes.empty() && !IsSpace(e.bytes.front()) && !IsSpace(e.bytes.back()));
    Check(input.substr(e.offset, e.bytes.size()) == e.bytes);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk_bytes = 1 + data[0] % 16;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::optional<evident::InputLayout> whole_layout, chunked_layout;
  const std::vector<Got> whole = Split(input, input.size() + 1, whole_layout);
  CheckEvents(input, whole, whole_layout);
  Check(Split(input, chunk_bytes, chunked_layout) == whole);
  Check(chunked_layout == whole_layout);
  for (const evident::InputSlice& slice : evident::SplitEvents(input).slices) {
    Check(slice.bytes.data() >= input.data() &&
          slice.bytes.data() + slice.bytes.size() <= input.data() + input.size());
  }
  return 0;
}
