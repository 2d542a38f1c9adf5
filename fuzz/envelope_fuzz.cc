// libFuzzer target: the envelope splitter and parser must never crash, leak or hang, and every
// accepted event must satisfy the envelope's invariants, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "evident/envelope.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

void ParseAll(evident::EnvelopeParser& parser, std::string_view input) {
  const evident::SplitInput split = evident::SplitEvents(input);
  for (const evident::InputSlice& slice : split.slices) {
    Check(slice.bytes.data() >= input.data() &&
          slice.bytes.data() + slice.bytes.size() <= input.data() + input.size());
    const auto outcome = parser.Parse(slice.bytes);
    Check(outcome.event.raw == slice.bytes);
    if (!outcome.ok()) {
      Check(!evident::ReasonCode(outcome.rejection->reason).empty());
      Check(!outcome.rejection->message.empty());
      continue;
    }
    const evident::EventView& e = outcome.event;
    Check(!e.id.empty() && !e.source.empty() && !e.type.empty() && e.specversion == "1.0");
    Check(!(e.data && e.data_base64));
    Check(evident::SourceInsideBoundary(e.source, parser.options().source_boundary));
    (void)e.At("/data/orderVersion");
    (void)e.At("/subject");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto cloudevents =
      evident::EnvelopeParser::Create({.source_boundary = {"https://example.test/order-service"}})
          .value();
  static auto flat = evident::EnvelopeParser::Create(
                         {.require_schema_version = true, .profile = evident::Profile::Flat()})
                         .value();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  ParseAll(*cloudevents, input);
  ParseAll(*flat, input);
  return 0;
}
