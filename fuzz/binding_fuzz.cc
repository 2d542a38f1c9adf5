// libFuzzer target: the CloudEvents HTTP binding of `evident serve` (serve/binding.h).
//
// Input: the first byte picks the Content-Type; then header lines "name: value" up to an empty
// line; the rest is the body. Invariants, whatever the bytes: no crash, leak or sanitizer
// report; a refusal is 400, 413 or 415 and carries no event; otherwise at least one event and at
// most events_max; structured mode hands the body over as it is; a batch element is a non-empty
// piece of the body, and a body that is a well-formed array gives exactly its elements, each
// valid JSON (an element that is not is still handed over, for the envelope to reject); a
// binary-mode event that parses is an object whose members are exactly the ce-* attributes,
// datacontenttype when a Content-Type was given and data or data_base64 when there is a body (a
// body can never add members of its own).
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serve/binding.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

constexpr size_t kEventsMax = 16;

void CheckBinary(const std::string& event, const std::string& content_type,
                 const std::vector<std::pair<std::string, std::string>>& headers,
                 std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(event).get(object) != simdjson::SUCCESS) return;  // refused by the envelope
  std::map<std::string, int> expected;
  for (const auto& [name, value] : headers) {
    if (name.size() > 3 && name.rfind("ce-", 0) == 0) ++expected[name.substr(3)];
  }
  if (!content_type.empty()) ++expected["datacontenttype"];
  if (!body.empty()) {
    const std::string media = evident::serve::MediaType(content_type);
    const bool json = media.empty() || media == "application/json" || media == "text/json" ||
                      (media.size() > 5 && media.substr(media.size() - 5) == "+json");
    const bool text =
        media.rfind("text/", 0) == 0 && simdjson::validate_utf8(body.data(), body.size());
    ++expected[json || text ? "data" : "data_base64"];
  }
  std::map<std::string, int> got;
  for (auto [key, value] : object) ++got[std::string(key)];
  Check(got == expected);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kTypes[] = {"application/cloudevents+json",
                                       "application/cloudevents-batch+json",
                                       "application/json",
                                       "text/plain; charset=utf-8",
                                       "application/octet-stream",
                                       "",
                                       "application/vnd.x+json",
                                       "APPLICATION/CLOUDEVENTS-BATCH+JSON ; x=y"};
  const std::string content_type = kTypes[data[0] % 8];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::pair<std::string, std::string>> headers;
  while (true) {
    const size_t end = rest.find('\n');
    if (end == std::string_view::npos || end == 0) {
      rest = end == 0 ? rest.substr(1) : rest;
      break;
    }
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name(line.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    headers.emplace_back(std::move(name), std::string(line.substr(colon + 1)));
  }
  const std::string body(rest);
  const evident::serve::BoundEvents bound =
      evident::serve::BindRequest(content_type, headers, body, {.events_max = kEventsMax});
  if (bound.refusal.status != 0) {
    Check(bound.refusal.status == 400 || bound.refusal.status == 413 ||
          bound.refusal.status == 415);
    Check(!bound.refusal.reason.empty());
    return 0;
  }
  Check(!bound.events.empty() && bound.events.size() <= kEventsMax);
  switch (bound.mode) {
    case evident::serve::BodyMode::kStructured:
      Check(bound.events.size() == 1 && bound.events[0] == body);
      break;
    case evident::serve::BodyMode::kBatch: {
      for (const std::string& event : bound.events) {
        Check(!event.empty() && body.find(event) != std::string::npos);
      }
      // A body that is a well-formed array is split into exactly its elements, each whole.
      simdjson::dom::parser parser;
      simdjson::dom::array array;
      if (parser.parse(body).get(array) == simdjson::SUCCESS) {
        Check(bound.events.size() == array.size());
        for (const std::string& event : bound.events) {
          simdjson::dom::parser element_parser;
          simdjson::dom::element element;
          Check(element_parser.parse(event).get(element) == simdjson::SUCCESS);
        }
      }
      break;
    }
    case evident::serve::BodyMode::kBinary:
      Check(bound.events.size() == 1);
      CheckBinary(bound.events[0], content_type, headers, body);
      break;
  }
  return 0;
}
