#include "serve/binding.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "core/base64.h"
#include "evident/envelope.h"
#include "json/writer.h"

namespace evident::serve {
namespace {

constexpr std::string_view kStructured = "application/cloudevents+json";
constexpr std::string_view kBatch = "application/cloudevents-batch+json";

std::string_view Trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

BoundEvents Refuse(BodyMode mode, int status, std::string reason, std::string message) {
  BoundEvents bound;
  bound.mode = mode;
  bound.refusal = {status, std::move(reason), std::move(message)};
  return bound;
}

bool IsJsonMediaType(std::string_view media) {
  return media == "application/json" || media == "text/json" ||
         (media.size() > 5 && media.substr(media.size() - 5) == "+json");
}

bool IsText(std::string_view media, std::string_view body) {
  if (media.rfind("text/", 0) != 0) return false;
  return simdjson::validate_utf8(body.data(), body.size());
}

// A header name or value as a JSON string: escaped as JSON asks, but bytes that are not UTF-8 are
// kept as they came (json::AppendQuoted would replace them), so that the envelope refuses the event
// as invalid-utf8 rather than two different values collide in one.
void AppendHeaderValue(std::string& out, std::string_view value) {
  if (simdjson::validate_utf8(value.data(), value.size())) {
    json::AppendQuoted(out, value);
    return;
  }
  out.push_back('"');
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out.append(escaped);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

// Whether `body` is exactly one JSON value.
bool IsOneJsonValue(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  return parser.parse(body.data(), body.size()).get(root) == simdjson::SUCCESS;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 18 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The elements of a batch body, each as the bytes it has in the array.
// The elements of a batch body, each with its own bytes, split as `evident validate` splits a
// batch (EventSplitter: strings and brackets only, no parse). An element that is not a good
// event (bad UTF-8, a broken string, a number out of range) is taken like any other and decided
// by the envelope, kept with its bytes; only a body whose array itself is broken (no closing
// ']', an empty element, content after the array) is refused whole.
BoundEvents SplitBatch(std::string_view body, const BindingLimits& limits) {
  if (Trim(body).empty()) {
    return Refuse(BodyMode::kBatch, 400, "no-event", "the batch body is empty");
  }
  const SplitInput split = SplitEvents(body);
  if (split.layout != InputLayout::kBatch) {
    return Refuse(BodyMode::kBatch, 400, "batch-not-array",
                  "a batch body is a JSON array of events");
  }
  BoundEvents bound;
  bound.mode = BodyMode::kBatch;
  for (const InputSlice& slice : split.slices) {
    if (slice.rejection.has_value()) {
      return Refuse(
          BodyMode::kBatch, 400, "batch-invalid-json",
          "the batch array is broken (" + slice.rejection->message + "); no event was taken");
    }
    if (bound.events.size() == limits.events_max) {
      return Refuse(BodyMode::kBatch, 413, "too-many-events",
                    "a batch holds at most " + std::to_string(limits.events_max) + " events");
    }
    bound.events.emplace_back(slice.bytes);
  }
  if (bound.events.empty()) {
    return Refuse(BodyMode::kBatch, 400, "no-event", "the batch holds no event");
  }
  return bound;
}

// A binary-mode request written as a structured event.
std::string StructuredFromBinary(std::string_view content_type,
                                 const std::vector<std::pair<std::string, std::string>>& headers,
                                 std::string_view body) {
  std::string out;
  out.reserve(body.size() + 256);
  out.push_back('{');
  bool first = true;
  auto key = [&](std::string_view name) {  // as it came, for the envelope to judge
    if (!first) out.push_back(',');
    first = false;
    AppendHeaderValue(out, name);
    out.push_back(':');
  };
  for (const auto& [name, value] : headers) {
    if (name.size() <= 3 || name.rfind("ce-", 0) != 0) continue;
    const std::string_view attribute = std::string_view(name).substr(3);
    const std::string decoded = PercentDecode(value);
    key(attribute);
    if ((attribute == "schemaversion" || attribute == "subjectversion") && AllDigits(decoded)) {
      out += decoded;
    } else {
      AppendHeaderValue(out, decoded);
    }
  }
  const std::string media = MediaType(content_type);
  if (!content_type.empty()) {
    key("datacontenttype");
    json::AppendQuoted(out, Trim(content_type));
  }
  if (!body.empty()) {
    if (IsJsonMediaType(media) || media.empty()) {
      // A body that is not one JSON value is written after a '!', where no JSON can follow
      // a name: the event is then refused as malformed-json and kept with the body as it came,
      // and no body can add members of its own ("...},"subject":"x").
      key("data");
      if (!IsOneJsonValue(body)) out.push_back('!');
      out.append(body);
    } else if (IsText(media, body)) {
      key("data");
      json::AppendQuoted(out, body);
    } else {
      key("data_base64");
      out.push_back('"');
      AppendBase64(body, out);
      out.push_back('"');
    }
  }
  out.push_back('}');
  return out;
}

}  // namespace

std::string MediaType(std::string_view content_type) {
  const size_t semicolon = content_type.find(';');
  std::string media(Trim(content_type.substr(0, semicolon)));
  std::transform(media.begin(), media.end(), media.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return media;
}

std::string PercentDecode(std::string_view value) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '%' && i + 2 < value.size() && hex(value[i + 1]) >= 0 &&
        hex(value[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(value[i + 1]) * 16 + hex(value[i + 2])));
      i += 2;
    } else {
      out.push_back(value[i]);
    }
  }
  return out;
}

BoundEvents BindRequest(std::string_view content_type,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        std::string_view body, const BindingLimits& limits) {
  const std::string media = MediaType(content_type);
  if (media == kBatch) return SplitBatch(body, limits);
  if (media == kStructured) {
    if (Trim(body).empty()) {
      return Refuse(BodyMode::kStructured, 400, "no-event", "the body is empty");
    }
    BoundEvents bound;
    bound.events.emplace_back(body);
    return bound;
  }
  const bool binary = std::any_of(headers.begin(), headers.end(),
                                  [](const auto& h) { return h.first == "ce-specversion"; });
  if (!binary) {
    std::string got = "no Content-Type";
    if (!content_type.empty()) {
      got = "'";
      got.append(content_type);
      got.push_back('\'');
    }
    return Refuse(BodyMode::kBinary, 415, "unsupported-media-type",
                  "expected application/cloudevents+json, application/cloudevents-batch+json, "
                  "or a binary-mode event with a ce-specversion header; got " +
                      got);
  }
  BoundEvents bound;
  bound.mode = BodyMode::kBinary;
  bound.events.push_back(StructuredFromBinary(content_type, headers, body));
  return bound;
}

}  // namespace evident::serve
