// serve/binding.h — the CloudEvents HTTP protocol binding (CloudEvents 1.0, "HTTP Protocol
// Binding"): a request's content type, headers and body to the events it carries, each as the
// bytes the consume pipeline decides.
//
//   structured  Content-Type application/cloudevents+json: the body is one event, as sent.
//   batch       Content-Type application/cloudevents-batch+json: the body is a JSON array; each
//               element is one event, its bytes exactly as they stand in the array.
//   binary      any other content type with a ce-specversion header: the ce-* headers are the
//               attributes (percent-decoded), Content-Type is datacontenttype and the body is
//               data. The event is written as a structured event: a JSON body goes in as it is
//               (a body that is not one JSON value goes in after a '!', so that the event is
//               refused as malformed-json and kept with the body as it came: it can never add
//               members of its own), text as a string, anything else as data_base64. Header
//               values that are not UTF-8 stay as they came, for the envelope to refuse.
//               schemaversion and subjectversion, integers to evident, are written as numbers
//               when they are digits.
//
// Anything else is not a CloudEvent: 415. A body that holds no event at all (empty, or a batch
// that is not an array of values, or an empty one) is 400. Whether an event is valid is not
// decided here: the pipeline does that, with its reason codes, and keeps what it refuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace evident::serve {

enum class BodyMode : uint8_t { kStructured, kBinary, kBatch };

// The HTTP status of a request the binding refuses (0: it did not).
struct BindingRefusal {
  int status = 0;
  std::string reason;   // stable code: unsupported-media-type, no-event, batch-not-array, ...
  std::string message;  // for people
};

struct BoundEvents {
  BodyMode mode = BodyMode::kStructured;
  std::vector<std::string> events;
  BindingRefusal refusal;
};

struct BindingLimits {
  size_t events_max = 10'000;  // events in one batch request; more is 413
};

// `headers`: every request header, names lowercased. `content_type` is the Content-Type header's
// value (empty when absent).
BoundEvents BindRequest(std::string_view content_type,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        std::string_view body, const BindingLimits& limits = {});

// The media type of a Content-Type value: before any ';', trimmed, lowercased.
std::string MediaType(std::string_view content_type);

// RFC 3986 percent-decoding as the binding asks of ce-* header values; a '%' not followed by
// two hex digits is kept as it is.
std::string PercentDecode(std::string_view value);

}  // namespace evident::serve
