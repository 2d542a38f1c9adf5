// Splitting an input into the byte ranges of its events, as it streams (EventSplitter), and the
// same for an input held whole (SplitEvents).
#include <algorithm>
#include <array>
#include <cassert>

#include "evident/envelope.h"

namespace evident {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool IsStringStop(char c) { return c == '"' || c == '\\' || c == '\n'; }

// The bytes ScanLine looks at one by one: a string's or a bracket's, a separator, a newline.
// Whitespace and every other byte are taken in the loop's stride.
enum ByteClass : uint8_t { kPlain, kWhite, kSpecial };
constexpr std::array<uint8_t, 256> kByteClass = [] {
  std::array<uint8_t, 256> table{};
  for (const char c : {' ', '\t', '\r'}) table[static_cast<unsigned char>(c)] = kWhite;
  for (const char c : {'"', '\\', '{', '[', '}', ']', ',', '\n'}) {
    table[static_cast<unsigned char>(c)] = kSpecial;
  }
  return table;
}();

// The bytes that end a string's plain run: its closing quote, an escape, a newline.
constexpr std::array<bool, 256> kStringStop = [] {
  std::array<bool, 256> table{};
  for (const char c : {'"', '\\', '\n'}) table[static_cast<unsigned char>(c)] = true;
  return table;
}();

Rejection Malformed(std::string message) {
  return Rejection{EnvelopeReason::kMalformedJson, std::move(message), {}, {}};
}

}  // namespace

// The scanner behind EventSplitter: a state per byte, the event being split, and the strings
// and brackets it is inside.
class EventSplitter::Impl {
 public:
  using Sink = EventSplitter::Sink;
  explicit Impl(size_t event_bytes_max) : event_bytes_max_(event_bytes_max) {}

  Status Feed(std::string_view chunk, const Sink& sink);
  Status Finish(const Sink& sink);
  std::optional<InputLayout> layout() const { return layout_; }

 private:
  enum class State : uint8_t {
    kStart,           // before the first non-whitespace byte
    kBatchGap,        // inside the array, between elements
    kBatchElement,    // inside an element
    kAfterBatch,      // after the closing ']'
    kTrailing,        // content after the closing ']', held as one rejected event
    kLineGap,         // between values, outside any
    kValue,           // inside a value
    kValueLineStart,  // at column 0 inside a value whose brackets are open
  };

  Status Step(std::string_view chunk, size_t at, const Sink& sink);
  Status StepStart(std::string_view chunk, size_t at, const Sink& sink);
  Status StepBatchGap(std::string_view chunk, size_t at, const Sink& sink);
  Status StepBatchElement(std::string_view chunk, size_t at, const Sink& sink);
  Status StepValue(std::string_view chunk, size_t at, const Sink& sink);
  Status StepValueLineStart(std::string_view chunk, size_t at, const Sink& sink);
  void Begin(size_t at, size_t index);
  size_t SkipStringBytes(std::string_view chunk, size_t at);
  size_t ScanLine(std::string_view chunk, size_t at);
  void Track(char c, uint64_t offset);
  void Structure(char c);
  void Close(char opener);
  Status End(std::string_view chunk, size_t at, const Sink& sink,
             std::optional<Rejection> rejection = std::nullopt);
  Status EmitEmpty(uint64_t offset, bool at_end, std::string message, const Sink& sink);
  bool InEvent() const;

  size_t event_bytes_max_;
  State state_ = State::kStart;
  std::optional<InputLayout> layout_;
  uint64_t consumed_ = 0;     // bytes fed before the current chunk
  size_t line_ = 0;           // 0-based line of the byte being scanned
  size_t next_index_ = 0;     // batch: the index of the next element
  bool after_comma_ = false;  // batch: an element must follow (a ',' was the last separator)
  // The event being split.
  std::string held_;      // its first bytes, at most event_bytes_max + 1
  size_t run_start_ = 0;  // where its bytes not yet held begin in the current chunk
  size_t event_index_ = 0;
  uint64_t event_offset_ = 0;
  uint64_t last_solid_ = 0;  // offset of its last non-whitespace byte
  uint64_t depth_ = 0;       // open brackets (a closer at depth 0 is left to the parser)
  // The kinds of the first kTypedDepthMax open brackets, innermost last: a closer of the other
  // kind closes through the nearest opener it matches ("[1}" ends the '{' it is in).
  std::string open_;
  static constexpr size_t kTypedDepthMax = 4096;
  char last_solid_char_ = 0;         // the byte at last_solid_
  uint64_t solid_before_comma_ = 0;  // last_solid_ before the latest ',' outside strings
  bool in_string_ = false, escaped_ = false;
  // A batch element's string met a raw newline: where it goes on is decided at the next solid
  // byte (StepBatchElement).
  bool string_broken_ = false;
};

EventSplitter::EventSplitter(size_t event_bytes_max)
    : impl_(std::make_unique<Impl>(event_bytes_max)) {}
EventSplitter::~EventSplitter() = default;
EventSplitter::EventSplitter(EventSplitter&&) noexcept = default;
EventSplitter& EventSplitter::operator=(EventSplitter&&) noexcept = default;

Status EventSplitter::Feed(std::string_view chunk, const Sink& sink) {
  return impl_->Feed(chunk, sink);
}
Status EventSplitter::Finish(const Sink& sink) { return impl_->Finish(sink); }
std::optional<InputLayout> EventSplitter::layout() const { return impl_->layout(); }

bool EventSplitter::Impl::InEvent() const {
  return state_ == State::kBatchElement || state_ == State::kTrailing || state_ == State::kValue ||
         state_ == State::kValueLineStart;
}

Status EventSplitter::Impl::Feed(std::string_view chunk, const Sink& sink) {
  for (size_t at = 0; at < chunk.size(); ++at) {
    if (in_string_ && !escaped_) {  // most of an event is strings: cross their plain bytes fast
      at = SkipStringBytes(chunk, at);
      if (at == chunk.size()) break;
    }
    if (state_ == State::kValue) {  // most of an NDJSON input: to the line's end in one loop
      at = ScanLine(chunk, at);
      if (at == chunk.size()) break;
    }
    EVIDENT_RETURN_IF_ERROR(Step(chunk, at, sink));
    if (chunk[at] == '\n') ++line_;
  }
  if (InEvent()) {  // the event goes on in the next chunk: hold what this one has of it
    const size_t room = event_bytes_max_ + 1 - std::min(held_.size(), event_bytes_max_ + 1);
    held_.append(chunk.substr(run_start_, std::min(room, chunk.size() - run_start_)));
  }
  run_start_ = 0;  // an event open now goes on from the start of the next chunk
  consumed_ += chunk.size();
  return Status::Ok();
}

Status EventSplitter::Impl::Finish(const Sink& sink) {
  const std::string_view none;
  const State state = state_;
  state_ = State::kAfterBatch;  // nothing more is split, whatever is fed
  switch (state) {
    case State::kBatchGap:
      return EmitEmpty(consumed_, true, "the input ended inside the batch array (no closing ']')",
                       sink);
    case State::kBatchElement:
      return End(none, 0, sink, Malformed("the input ended inside the batch array"));
    case State::kTrailing:
      return End(none, 0, sink, Malformed("content after the batch array's closing ']'"));
    case State::kValue:
    case State::kValueLineStart:
      return End(none, 0, sink);
    default:
      return Status::Ok();
  }
}

Status EventSplitter::Impl::Step(std::string_view chunk, size_t at, const Sink& sink) {
  const char c = chunk[at];
  switch (state_) {
    case State::kStart:
      return StepStart(chunk, at, sink);
    case State::kBatchGap:
      return StepBatchGap(chunk, at, sink);
    case State::kBatchElement:
      return StepBatchElement(chunk, at, sink);
    case State::kAfterBatch:
      if (!IsSpace(c)) {
        Begin(at, next_index_);
        state_ = State::kTrailing;
        Track(c, consumed_ + at);
      }
      return Status::Ok();
    case State::kTrailing:
      Track(c, consumed_ + at);
      return Status::Ok();
    case State::kLineGap:
      if (IsSpace(c)) return Status::Ok();
      Begin(at, line_);
      state_ = State::kValue;
      return StepValue(chunk, at, sink);
    case State::kValue:
      return StepValue(chunk, at, sink);
    case State::kValueLineStart:
      return StepValueLineStart(chunk, at, sink);
  }
  return Status::Ok();
}

Status EventSplitter::Impl::StepStart(std::string_view chunk, size_t at, const Sink& sink) {
  const char c = chunk[at];
  if (IsSpace(c)) return Status::Ok();
  if (c == '[') {
    layout_ = InputLayout::kBatch;
    state_ = State::kBatchGap;
    return Status::Ok();
  }
  layout_ = InputLayout::kNdjson;
  state_ = State::kLineGap;
  return Step(chunk, at, sink);
}

Status EventSplitter::Impl::StepBatchGap(std::string_view chunk, size_t at, const Sink& sink) {
  const char c = chunk[at];
  if (IsSpace(c)) return Status::Ok();
  if (c == ']') {
    state_ = State::kAfterBatch;
    if (!after_comma_) return Status::Ok();
    return EmitEmpty(consumed_ + at, false, "an empty batch element before ']'", sink);
  }
  if (c == ',') {  // "[,": an element is missing; the one after the ',' still follows
    after_comma_ = true;
    return EmitEmpty(consumed_ + at, false, "an empty batch element before ','", sink);
  }
  after_comma_ = false;
  Begin(at, next_index_++);
  state_ = State::kBatchElement;
  Track(c, consumed_ + at);
  return Status::Ok();
}

Status EventSplitter::Impl::StepBatchElement(std::string_view chunk, size_t at, const Sink& sink) {
  const char c = chunk[at];
  if (string_broken_ && !IsSpace(c)) {
    // A raw newline inside a string (not JSON: the element is malformed either way); the next
    // line's first solid byte tells how it goes on. '{' right after a ',' starts the next
    // element (a pretty-printed batch; the string was never closed). A byte of JSON's structure
    // ('}', ']', '[', '{', ',', ':', '"') means the string ended with its line (cut short) and
    // the structure resumes. Anything else is more of the string, which held a raw newline and
    // closes at its own quote.
    string_broken_ = false;
    if (c == '{' && last_solid_char_ == ',') {  // (the ',' was read as the string's: kept)
      EVIDENT_RETURN_IF_ERROR(End(chunk, at, sink));
      Begin(at, next_index_++);
      Track(c, consumed_ + at);
      return Status::Ok();
    }
    constexpr std::string_view kStructure = "{}[],:\"";
    if (kStructure.find(c) == std::string_view::npos) in_string_ = true;
  }
  if (!in_string_ && c == '{' && last_solid_char_ == ',' && depth_ == 1 && open_ == "{") {
    // "{"a":1,{" in the element's own object: after a member an object wants a name, never a
    // '{'. The element was cut short (a missing '}') and the next element begins here; read on,
    // it would have swallowed every element after it. Deeper in, the same bytes are as often a
    // nested value missing its name as a cut: left to the closers' rule (Close), which keeps
    // the elements after it whole.
    last_solid_ = solid_before_comma_;  // the ',' separates: it is no byte of either element
    EVIDENT_RETURN_IF_ERROR(End(chunk, at, sink));
    Begin(at, next_index_++);
    Track(c, consumed_ + at);
    return Status::Ok();
  }
  if (!in_string_ && depth_ == 0 && (c == ',' || c == ']')) {
    after_comma_ = c == ',';
    EVIDENT_RETURN_IF_ERROR(End(chunk, at, sink));
    state_ = c == ',' ? State::kBatchGap : State::kAfterBatch;
    return Status::Ok();
  }
  Track(c, consumed_ + at);
  return Status::Ok();
}

Status EventSplitter::Impl::StepValue(std::string_view chunk, size_t at, const Sink& sink) {
  const char c = chunk[at];
  if (c != '\n') {
    Track(c, consumed_ + at);
    return Status::Ok();
  }
  // A line ends. The value ends with it when its brackets are closed, or inside a string (a raw
  // newline is not JSON, so the value is malformed; the next line is decided on its own).
  if (depth_ == 0 || in_string_) {
    state_ = State::kLineGap;
    return End(chunk, at, sink);
  }
  state_ = State::kValueLineStart;
  return Status::Ok();
}

Status EventSplitter::Impl::StepValueLineStart(std::string_view chunk, size_t at,
                                               const Sink& sink) {
  // Pretty-printers indent nested objects, so '{' in column 0 is a new value: the open one was
  // cut short (a truncated NDJSON line) and is handed over as it is.
  if (chunk[at] == '{') {
    EVIDENT_RETURN_IF_ERROR(End(chunk, at, sink));
    Begin(at, line_);
  }
  state_ = State::kValue;
  return StepValue(chunk, at, sink);
}

void EventSplitter::Impl::Begin(size_t at, size_t index) {
  assert(held_.empty());
  run_start_ = at;
  event_index_ = index;
  event_offset_ = consumed_ + at;
  last_solid_ = event_offset_;
  depth_ = 0;
  open_.clear();
  in_string_ = false;
  escaped_ = false;
  string_broken_ = false;
}

// Returns the position of the first byte at or after `at` that a string's state depends on ('"',
// '\\', a newline), or the chunk's end, keeping last_solid_ as Track would have over the bytes
// skipped (the same result, without a call per byte).
size_t EventSplitter::Impl::SkipStringBytes(std::string_view chunk, size_t at) {
  size_t end = at;
  while (end < chunk.size() && !IsStringStop(chunk[end])) ++end;
  for (size_t solid = end; solid > at; --solid) {
    if (!IsSpace(chunk[solid - 1])) {
      last_solid_ = consumed_ + solid - 1;
      last_solid_char_ = chunk[solid - 1];
      break;
    }
  }
  return end;
}

// Follows a value (State::kValue) from chunk[at] up to the next newline or the chunk's end, and
// returns where it stopped: the same state as Track over each of those bytes, in one tight loop
// that looks only at the bytes of JSON's structure (Track's per-byte dispatch made splitting
// cost 35 instructions per byte, most of a file source's reading). The newline is left to
// StepValue.
size_t EventSplitter::Impl::ScanLine(std::string_view chunk, size_t at) {
  const size_t n = chunk.size();
  size_t solid = std::string_view::npos;          // the last non-whitespace byte scanned
  if (escaped_ && at < n && chunk[at] != '\n') {  // a backslash ended the last chunk
    escaped_ = false;
    if (!IsSpace(chunk[at])) solid = at;
    ++at;
  }
  for (; at < n; ++at) {
    if (in_string_) {  // a string's plain bytes in a stride of their own
      const size_t from = at;
      while (at < n && !kStringStop[static_cast<unsigned char>(chunk[at])]) ++at;
      for (size_t last = at; last > from; --last) {
        if (!IsSpace(chunk[last - 1])) {
          solid = last - 1;
          break;
        }
      }
      if (at == n || chunk[at] == '\n') break;
      solid = at;
      if (chunk[at] == '"') {
        in_string_ = false;
      } else if (at + 1 < n && chunk[at + 1] != '\n') {
        ++at;  // a backslash: the byte after it is the string's, whatever it is
        if (!IsSpace(chunk[at])) solid = at;
      } else {
        escaped_ = true;
      }
      continue;
    }
    const char c = chunk[at];
    const uint8_t kind = kByteClass[static_cast<unsigned char>(c)];
    if (kind == kPlain) {
      solid = at;
      continue;
    }
    if (kind == kWhite) continue;
    if (c == '\n') break;
    if (c == ',')
      solid_before_comma_ = solid == std::string_view::npos ? last_solid_ : consumed_ + solid;
    solid = at;
    Structure(c);
  }
  if (solid != std::string_view::npos) {
    last_solid_ = consumed_ + solid;
    last_solid_char_ = chunk[solid];
  }
  return at;
}

// Follows strings and brackets over one byte of an event; nothing else of JSON matters to where
// events end.
void EventSplitter::Impl::Track(char c, uint64_t offset) {
  if (!IsSpace(c)) {
    if (c == ',' && !in_string_) solid_before_comma_ = last_solid_;
    last_solid_ = offset;
    last_solid_char_ = c;
  }
  if (in_string_) {
    if (c == '\n') {  // a raw newline: the string is broken (StepBatchElement decides the rest)
      in_string_ = false;
      escaped_ = false;
      string_broken_ = true;
    } else if (escaped_) {
      escaped_ = false;
    } else if (c == '\\') {
      escaped_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return;
  }
  Structure(c);
}

// A byte outside strings: a string or a bracket opens, a bracket closes; others change nothing.
void EventSplitter::Impl::Structure(char c) {
  switch (c) {
    case '"':
      in_string_ = true;
      break;
    case '{':
    case '[':
      if (depth_ < kTypedDepthMax) open_.push_back(c);
      ++depth_;
      break;
    case '}':
    case ']':
      Close(c == '}' ? '{' : '[');
      break;
    default:
      break;
  }
}

// A closer of `opener`'s kind: closes the innermost bracket when it matches, else every bracket
// down to the nearest one that does (a closer that matches none closes one, as before).
void EventSplitter::Impl::Close(char opener) {
  if (depth_ == 0) return;      // a closer at depth 0 is left to the parser
  if (depth_ > open_.size()) {  // deeper than the kinds are kept: any closer closes one
    --depth_;
    return;
  }
  assert(open_.size() == depth_);
  const size_t match = open_.rfind(opener);
  const size_t keep = match == std::string::npos ? open_.size() - 1 : match;
  open_.resize(keep);
  depth_ = keep;
}

// Hands over the event whose bytes end before chunk[at] (a separator, a newline, or the end of
// the input when `chunk` is empty).
Status EventSplitter::Impl::End(std::string_view chunk, size_t at, const Sink& sink,
                                std::optional<Rejection> rejection) {
  const size_t room = event_bytes_max_ + 1 - std::min(held_.size(), event_bytes_max_ + 1);
  held_.append(chunk.substr(run_start_, std::min(room, at - std::min(at, run_start_))));
  const uint64_t length = last_solid_ + 1 - event_offset_;  // without trailing whitespace
  // The byte that ends it is consumed with it, unless it begins the next event ('{').
  const uint64_t next = chunk.empty() ? consumed_ : consumed_ + at + (chunk[at] == '{' ? 0 : 1);
  SplitEvent event{std::string_view(held_), event_index_, event_offset_, next,
                   std::move(rejection)};
  if (length > event_bytes_max_) {
    event.rejection =
        Rejection{EnvelopeReason::kEnvelopeTooLarge,
                  "event of " + std::to_string(length) + " bytes exceeds the limit of " +
                      std::to_string(event_bytes_max_) + " bytes",
                  {},
                  {}};
  } else {
    event.bytes = event.bytes.substr(0, length);
  }
  const Status status = sink(event);
  held_.clear();  // the capacity stays: bounded by event_bytes_max + 1
  in_string_ = false;
  escaped_ = false;
  string_broken_ = false;
  depth_ = 0;
  open_.clear();
  return status;
}

// `offset`: the separator it stands before (consumed with it), or the input's end.
Status EventSplitter::Impl::EmitEmpty(uint64_t offset, bool at_end, std::string message,
                                      const Sink& sink) {
  const SplitEvent event{
      {}, next_index_++, offset, at_end ? offset : offset + 1, Malformed(std::move(message))};
  return sink(event);
}

SplitInput SplitEvents(std::string_view input) {
  SplitInput split{InputLayout::kNdjson, {}};
  const EventSplitter::Sink keep = [&](const SplitEvent& event) {
    split.slices.push_back(
        {input.substr(event.offset, event.bytes.size()), event.index, event.rejection});
    return Status::Ok();
  };
  EventSplitter splitter(input.size());  // no event is larger than the input
  const Status fed = splitter.Feed(input, keep);
  const Status finished = splitter.Finish(keep);
  assert(fed.ok() && finished.ok());  // `keep` never fails
  (void)fed;
  (void)finished;
  if (splitter.layout() == InputLayout::kBatch) {
    split.layout = InputLayout::kBatch;
  } else if (split.slices.size() == 1) {
    split.layout = InputLayout::kSingle;
  }
  return split;
}

}  // namespace evident
