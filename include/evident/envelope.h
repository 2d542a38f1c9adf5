// evident/envelope.h — the CloudEvents 1.0 envelope: parse, validate, keep the original bytes.
//
// An EnvelopeParser turns the bytes of one event (structured-mode JSON, or another layout read
// through an envelope Profile) into an EventView, or into a Rejection with a stable kebab-case
// reason code. Checks run in a fixed order and stop at the first failure:
//
//   size -> well-formed I-JSON -> required attributes (the core four, then the profile's)
//        -> specversion -> attribute types -> source inside the boundary
//        -> schemaversion present (when required)
//
// The parser never copies or alters the input: EventView::raw is the caller's bytes, untouched,
// which is what quarantine and replay store.
//
// Thread-safety: an EnvelopeParser is not thread-safe (it owns a simdjson parser); use one per
// thread. An EventView borrows from the parser and from the input bytes and is valid until the
// next Parse() on the same parser or until the bytes are freed.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/profile.h"
#include "evident/rejection.h"
#include "evident/status.h"

namespace evident {

// Reads a version (schemaversion, subjectversion, or one at a JSON Pointer): a non-negative
// integer that fits int64, or a whole double up to 9e15 (3.0 is an integer to JSON Schema).
bool ReadVersion(simdjson::dom::element value, int64_t& out);

// One validated event, in the canonical CloudEvents vocabulary, whatever the input layout.
struct EventView {
  std::string_view raw;                            // the original bytes of this event, untouched
  std::string_view specversion, id, source, type;  // always non-empty
  std::optional<std::string_view> subject, time, datacontenttype, dataschema;
  std::optional<int64_t> schemaversion, subjectversion;
  std::optional<std::string_view> traceparent, correlationid, causationid;
  std::optional<simdjson::dom::element> data;  // the payload (`data`, or the profile's)
  std::optional<std::string_view> data_base64;
  simdjson::dom::element root;  // the whole parsed input document
  const Profile* profile = nullptr;

  // Evaluates a JSON Pointer written against the canonical envelope ("/data/orderVersion",
  // "/subject") on the original document, translated through the profile.
  simdjson::simdjson_result<simdjson::dom::element> At(std::string_view pointer) const;
};

struct EnvelopeOptions {
  // Largest accepted event, in bytes. CloudEvents requires accepting at least 64 KiB.
  size_t event_bytes_max = size_t{1} << 20;
  // Deepest accepted nesting of arrays and objects in one event.
  size_t nesting_depth_max = 64;
  // Allowed source prefixes; empty accepts any source. A prefix that does not end in '/', ':',
  // '#' or '?' matches only at a segment end: "https://a.test/orders" accepts
  // "https://a.test/orders" and "https://a.test/orders/eu" but not "https://a.test/orders-x".
  std::vector<std::string> source_boundary;
  // Reject an event without a schemaversion (after the profile's mapping) as
  // missing-schema-version.
  bool require_schema_version = false;
  // How to read the input layout; the default is canonical CloudEvents JSON.
  Profile profile = Profile::CloudEvents();
};
inline constexpr size_t kCloudEventsBytesMin = size_t{64} << 10;

// True when `source` lies inside one of the `boundary` prefixes (see EnvelopeOptions). A source
// with a query or a fragment ('?', '#') lies inside none, unless the prefix itself ends in '?'
// or '#': "https://a.test/orders" does not admit "https://a.test/orders?x=1".
bool SourceInsideBoundary(std::string_view source, const std::vector<std::string>& boundary);

// True when `source` is `prefix` or lies under it: at a segment end ('/'), or followed by a
// query or fragment, or anywhere past a prefix that ends in '/', ':', '?' or '#'. A signature
// required of a source covers every source under it (serve: Standard Webhooks secrets).
bool SourceUnder(std::string_view source, std::string_view prefix);

class EnvelopeParser {
 public:
  // Fails with kInvalidArgument when the options are inconsistent (e.g. event_bytes_max below
  // the 64 KiB that CloudEvents requires, or a malformed pointer in the profile).
  static Result<std::unique_ptr<EnvelopeParser>> Create(EnvelopeOptions options);

  struct Outcome {
    std::optional<Rejection> rejection;  // set when the event was rejected
    EventView event;                     // meaningful only when !rejection
    bool ok() const { return !rejection.has_value(); }
  };
  // Parses and validates one event. `bytes` must stay alive while the EventView is used.
  Outcome Parse(std::string_view bytes);

  const EnvelopeOptions& options() const { return options_; }

 private:
  class ParseRun;  // one Parse call: its state and its checks, in order (envelope.cc)
  explicit EnvelopeParser(EnvelopeOptions options);

  EnvelopeOptions options_;
  simdjson::dom::parser parser_;
  std::string traceparent_scratch_;  // a traceparent composed from trace_id and span_id
  std::vector<simdjson::dom::element> scratch_stack_;  // reused by the duplicate-member check
  std::vector<std::string_view> scratch_keys_;  // member names, for the duplicate-member check
  // The last few sources that passed the URI-reference check, most recent first, each with
  // whether it is inside the source boundary: a stream interleaves a few sources, so both
  // checks run once per new source rather than once per event. Bounded (kValidSourcesMax),
  // replaced oldest first.
  struct ValidSource {
    std::string source;
    bool inside_boundary = false;
  };
  static constexpr size_t kValidSourcesMax = 8;
  std::vector<ValidSource> valid_sources_;
  // The canonical attribute each profile pointer and each profile constant fills, resolved
  // once by Create (in the profile's order).
  std::vector<int> pointer_attrs_, constant_attrs_;
  // The attributes the profile requires beyond the core four, in its order (Profile::required,
  // schemaversion aside: require_schema_version_ covers it).
  std::vector<int> required_attrs_;
  bool require_schema_version_ = false;  // the options' or the profile's
};

// How an input holding several events is laid out.
enum class InputLayout { kSingle, kBatch, kNdjson };

// One event's bytes as an EventSplitter found them, with its position.
struct SplitEvent {
  std::string_view bytes;  // without surrounding whitespace; at most event_bytes_max + 1 bytes
  size_t index;            // batch: position in the array; otherwise: 0-based line it starts on
  uint64_t offset;         // of its first byte in the input
  // Where the input after it begins: past the newline, ',' or ']' that ended it, at the '{' that
  // began the next one, or the input's end (Finish). A reader that resumes after this event
  // resumes here; everything before it belongs to this event or to earlier ones.
  uint64_t next;
  // Set when the splitter already decided the event: larger than event_bytes_max
  // (envelope-too-large), an empty batch element, a batch array the input ends inside, or
  // content after the batch array (malformed-json). Otherwise the bytes go to
  // EnvelopeParser::Parse.
  std::optional<Rejection> rejection;
};

// Splits a stream of bytes into the events it holds, as they arrive, without parsing them: it
// tracks strings (with escapes) and bracket depth, nothing more, so memory is bounded by the
// largest event held (event_bytes_max + 1 bytes), not by the input. The layout rule
// (docs/envelope.md):
//
//   - first non-whitespace byte '[': a batch array. Elements end at a ',' or ']' outside strings
//     and brackets; each is one event, indexed by its position. Content after the closing ']',
//     an empty element, and an input that ends inside the array are rejected as malformed-json.
//   - anything else: a sequence of values, each starting on its own line. A value continues onto
//     the next line only while its brackets are open, except that a line starting with '{' in
//     column 0 always starts a new value; a string never spans a line. So NDJSON is one event
//     per line (a broken line is one malformed event and the next line is read on its own), and
//     a pretty-printed object is one event. Blank lines are skipped.
//
// An event longer than event_bytes_max keeps its first event_bytes_max + 1 bytes, is scanned to
// its end and is rejected as envelope-too-large.
//
// Lifecycle: Feed() any number of chunks (of any size; an event may span chunks), then Finish()
// once. The SplitEvent handed to the sink borrows from the splitter and is valid during the
// call. Not thread-safe.
class EventSplitter {
 public:
  // Receives each event in input order; a non-OK status stops the splitting and is returned by
  // Feed() or Finish().
  using Sink = std::function<Status(const SplitEvent&)>;

  explicit EventSplitter(size_t event_bytes_max = size_t{1} << 20);
  ~EventSplitter();
  EventSplitter(EventSplitter&&) noexcept;
  EventSplitter& operator=(EventSplitter&&) noexcept;

  Status Feed(std::string_view chunk, const Sink& sink);
  // Ends the input: hands over the event it ends inside, if any.
  Status Finish(const Sink& sink);

  // kBatch or kNdjson (a sequence of values) once the first non-whitespace byte was fed;
  // nullopt before.
  std::optional<InputLayout> layout() const;

 private:
  class Impl;  // the scanner's state (split.cc)
  std::unique_ptr<Impl> impl_;
};

// One event's bytes within a larger input, with its position.
struct InputSlice {
  std::string_view bytes;
  size_t index;  // batch: position in the array; otherwise: 0-based line it starts on
  std::optional<Rejection> rejection;  // as SplitEvent::rejection
};

struct SplitInput {
  InputLayout layout;
  std::vector<InputSlice> slices;
};

// Splits an input held whole by EventSplitter's rule, with no size limit: kBatch for an array,
// kSingle for a sequence of one value, kNdjson for any other sequence (also an empty one).
// Slices point into `input`.
SplitInput SplitEvents(std::string_view input);

}  // namespace evident
