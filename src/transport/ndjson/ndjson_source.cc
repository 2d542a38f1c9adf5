// The file source: the events of a file or of standard input, split as `evident validate`
// splits them (EventSplitter: one JSON value, a batch array or NDJSON), with a position that
// identifies the consumed prefix (evident/source.h).
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/fnv1a.h"
#include "evident/envelope.h"
#include "evident/source.h"

namespace evident {
namespace {

// A prefix of the input: its size, its newlines and its hash. A last line without a newline
// counts as if it had one, so that appending to the input keeps the prefix.
struct Consumed {
  int64_t lines = 0;
  int64_t bytes = 0;
  uint64_t prefix_hash = kFnv1aOffset;  // 64-bit FNV-1a of those bytes
  // False for a position written before inputs were identified (only `lines` is known).
  bool identified = true;

  void Take(std::string_view text) {
    bytes += static_cast<int64_t>(text.size());
    lines += std::count(text.begin(), text.end(), '\n');
    prefix_hash = Fnv1a(prefix_hash, text);
  }
};

// Reads events from a file descriptor as they complete: each chunk read goes through an
// EventSplitter, and the events it completes wait in a queue (the events of one chunk: at most
// the chunk and one event's bytes, kept in one reused arena) with the prefix they end.
class EventReader {
 public:
  EventReader(int fd, size_t event_bytes_max) : fd_(fd), splitter_(event_bytes_max) {}

  enum class Next : uint8_t { kEvent, kEnd, kWouldWait };

  // Where the prefix ending `mark` bytes into the input should be kept (mark_reached(),
  // at_mark()): how a resumed run checks that the input begins with the bytes it decided.
  void SetMark(int64_t mark) {
    mark_ = mark;
    if (mark == consumed_.bytes) at_mark_ = consumed_;
  }
  bool mark_reached() const { return at_mark_.has_value(); }
  const Consumed& at_mark() const { return *at_mark_; }
  // The whole input read so far.
  const Consumed& consumed() const { return consumed_; }
  bool ended() const { return finished_; }

  // The next event into `out`. With `wait_ms` >= 0, kWouldWait when none completes in time.
  Result<Next> Read(Message& out, int wait_ms) {
    while (taken_ == pending_.size()) {
      if (finished_) return Next::kEnd;
      EVIDENT_ASSIGN_OR_RETURN(const bool waited, ReadChunk(wait_ms));
      if (waited) return Next::kWouldWait;
    }
    Pending& p = pending_[taken_++];
    out.bytes.assign(arena_, p.begin, p.size);
    out.index = p.index;
    out.cursor = Cursor{p.after.lines, p.after.bytes, p.after.prefix_hash};
    out.rejection = std::move(p.rejection);
    return Next::kEvent;
  }

 private:
  struct Pending {
    size_t begin = 0, size = 0;  // its bytes in arena_
    int64_t index = 0;
    uint64_t next = 0;  // SplitEvent::next
    Consumed after;     // the prefix through `next`
    std::optional<Rejection> rejection;
  };

  // Reads and splits one chunk (or ends the input). True when nothing came within wait_ms.
  Result<bool> ReadChunk(int wait_ms) {
    pending_.clear();
    arena_.clear();
    taken_ = 0;
    if (wait_ms >= 0) {
      pollfd pfd{fd_, POLLIN, 0};
      const int ready = poll(&pfd, 1, wait_ms);
      if (ready == 0) return true;
      if (ready < 0) {
        // A signal (SIGTERM asking for a stop) interrupts poll even under SA_RESTART: wait
        // again from the caller, which looks at the stop first; never fall into a read().
        if (errno == EINTR) return true;
        return Status::IoError(std::string("waiting for input: ") + std::strerror(errno));
      }
    }
    ssize_t n = 0;
    do {
      n = read(fd_, chunk_, sizeof chunk_);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return Status::IoError(std::string("reading input: ") + std::strerror(errno));
    const auto keep = [this](const SplitEvent& event) { return Keep(event); };
    if (n == 0) {
      finished_ = true;
      // The end of the input ends its last line.
      if (consumed_.bytes > 0 && last_byte_ != '\n') TakeToMark("\n");
      EVIDENT_RETURN_IF_ERROR(splitter_.Finish(keep));
      for (Pending& p : pending_) p.after = consumed_;
      return false;
    }
    const std::string_view chunk(chunk_, static_cast<size_t>(n));
    EVIDENT_RETURN_IF_ERROR(splitter_.Feed(chunk, keep));
    Account(chunk);
    last_byte_ = chunk.back();
    return false;
  }

  Status Keep(const SplitEvent& event) {
    Pending& p = pending_.emplace_back();
    p.begin = arena_.size();
    p.size = event.bytes.size();
    p.index = static_cast<int64_t>(event.index);
    p.next = event.next;
    p.rejection = event.rejection;
    arena_.append(event.bytes);
    return Status::Ok();
  }

  // Hashes `chunk` (the input from consumed_.bytes on), keeping the prefix each event of it
  // ends with: every event's `next` lies within the chunk, as the splitter met it there.
  void Account(std::string_view chunk) {
    const int64_t start = consumed_.bytes;
    for (Pending& p : pending_) {
      const auto next = static_cast<int64_t>(p.next);
      assert(next >= consumed_.bytes && next <= start + static_cast<int64_t>(chunk.size()));
      TakeToMark(chunk.substr(static_cast<size_t>(consumed_.bytes - start),
                              static_cast<size_t>(next - consumed_.bytes)));
      p.after = consumed_;
    }
    TakeToMark(chunk.substr(static_cast<size_t>(consumed_.bytes - start)));
  }

  // Takes `text` into consumed_, keeping the prefix at the mark when it lies within.
  void TakeToMark(std::string_view text) {
    if (mark_ && !at_mark_ && *mark_ <= consumed_.bytes + static_cast<int64_t>(text.size())) {
      const size_t before = static_cast<size_t>(*mark_ - consumed_.bytes);
      consumed_.Take(text.substr(0, before));
      at_mark_ = consumed_;
      text.remove_prefix(before);
    }
    consumed_.Take(text);
  }

  int fd_;
  EventSplitter splitter_;
  char chunk_[1 << 16];
  std::vector<Pending> pending_;  // the events of the last chunk
  size_t taken_ = 0;              // of them, handed out
  std::string arena_;             // their bytes
  Consumed consumed_;
  char last_byte_ = '\n';
  bool finished_ = false;
  std::optional<int64_t> mark_;
  std::optional<Consumed> at_mark_;
};

// "lines=N bytes=B hash=H" (H: 16 hex digits), or "lines=N" from a store that predates input
// identity.
std::string Encode(const Consumed& c) {
  char text[96];
  std::snprintf(text, sizeof text, "lines=%" PRId64 " bytes=%" PRId64 " hash=%016" PRIx64, c.lines,
                c.bytes, c.prefix_hash);
  return text;
}

Result<Consumed> Decode(const std::string& text) {
  Consumed c;
  int used = 0;
  if (std::sscanf(text.c_str(), "lines=%" SCNd64 " bytes=%" SCNd64 " hash=%" SCNx64 "%n", &c.lines,
                  &c.bytes, &c.prefix_hash, &used) == 3 &&
      static_cast<size_t>(used) == text.size() && c.lines >= 0 && c.bytes >= c.lines) {
    return c;
  }
  used = 0;
  if (std::sscanf(text.c_str(), "lines=%" SCNd64 "%n", &c.lines, &used) == 1 &&
      static_cast<size_t>(used) == text.size() && c.lines >= 0) {
    c.identified = false;
    return c;
  }
  return Status::Corruption("stored position '" + text + "' is not a file source's position");
}

constexpr std::string_view kRunAgain =
    " (nothing was decided; run without --resume to decide it all, the ledger absorbs what was "
    "applied before)";

class FileSource final : public Source {
 public:
  FileSource(int fd, std::string name, size_t event_bytes_max)
      : fd_(fd), name_(std::move(name)), reader_(fd, event_bytes_max) {
    struct stat info {};
    if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) total_bytes_ = info.st_size;
  }
  ~FileSource() override {
    if (fd_ > 0) close(fd_);
  }

  const std::string& name() const override { return name_; }

  Status Start(const std::optional<std::string>& position) override {
    if (!position) return Status::Ok();
    EVIDENT_ASSIGN_OR_RETURN(resume_, Decode(*position));
    if (!resume_->identified) {
      return Status::FailedPrecondition(
          "cannot resume: the checkpoint was written by an earlier evident and does not identify "
          "its input (nothing was decided; run without --resume once, the ledger absorbs what "
          "was applied before)");
    }
    reader_.SetMark(resume_->bytes);
    return Status::Ok();
  }

  Result<Fetched> Fetch(Message& out, int wait_ms) override {
    while (true) {
      if (stopped_.load(std::memory_order_relaxed)) return Fetched::kEnd;
      EVIDENT_ASSIGN_OR_RETURN(const EventReader::Next next, reader_.Read(out, wait_ms));
      if (next == EventReader::Next::kWouldWait) return Fetched::kWouldWait;
      EVIDENT_RETURN_IF_ERROR(CheckResume());
      if (next == EventReader::Next::kEnd) {
        done_bytes_.store(reader_.consumed().bytes, std::memory_order_relaxed);
        return Fetched::kEnd;
      }
      if (resume_ && out.cursor.b <= resume_->bytes) {  // decided by the run resumed
        ++skipped_;
        continue;
      }
      done_bytes_.store(out.cursor.b, std::memory_order_relaxed);
      return Fetched::kMessage;
    }
  }

  InputProgress input_progress() const override {
    return {.done = done_bytes_.load(std::memory_order_relaxed), .total = total_bytes_};
  }

  std::string EncodePosition(const Cursor& cursor) const override {
    return Encode(Consumed{.lines = cursor.a, .bytes = cursor.b, .prefix_hash = cursor.c});
  }
  // A file keeps nothing to acknowledge: its position is the stored text.
  Status Acknowledge(const Cursor& /*cursor*/) override { return Status::Ok(); }
  Status Reject(const Cursor& /*cursor*/, int64_t /*delay_ms*/) override {
    return Status::FailedPrecondition("a file source cannot redeliver; resume the run instead");
  }
  void Stop() override { stopped_.store(true, std::memory_order_relaxed); }
  int64_t skipped() const override { return skipped_; }

 private:
  // Once the input is read past the resumed prefix (or has ended short of it): is that prefix
  // the position's? The events of a chunk are handed out only after the whole chunk is hashed,
  // so no event past the prefix is handed out before this is known. Checked once.
  Status CheckResume() {
    if (!resume_ || resume_checked_) return Status::Ok();
    const Consumed& was = *resume_;
    if (!reader_.mark_reached()) {
      if (!reader_.ended()) return Status::Ok();
      resume_checked_ = true;
      const Consumed& is = reader_.consumed();
      return Status::FailedPrecondition(
          "cannot resume: the checkpoint covers " + std::to_string(was.lines) + " lines (" +
          std::to_string(was.bytes) + " bytes) but the input has only " + std::to_string(is.lines) +
          " lines (" + std::to_string(is.bytes) +
          " bytes); it is a different input, or one cut short" + std::string(kRunAgain));
    }
    resume_checked_ = true;
    const Consumed& is = reader_.at_mark();
    if (is.lines != was.lines || is.prefix_hash != was.prefix_hash) {
      return Status::FailedPrecondition(
          "cannot resume: the first " + std::to_string(was.bytes) + " bytes of the input (" +
          std::to_string(is.lines) + " lines) differ from the " + std::to_string(was.bytes) +
          " bytes (" + std::to_string(was.lines) +
          " lines) the checkpoint was taken from; it is a different input" +
          std::string(kRunAgain));
    }
    return Status::Ok();
  }

  int fd_;
  std::string name_;
  EventReader reader_;
  std::optional<Consumed> resume_;
  bool resume_checked_ = false;
  int64_t skipped_ = 0;
  std::atomic<bool> stopped_{false};
  int64_t total_bytes_ = -1;            // a regular file's size; -1 for a pipe or a terminal
  std::atomic<int64_t> done_bytes_{0};  // through the last event handed out
};

}  // namespace

Result<std::unique_ptr<Source>> OpenNdjsonSource(const std::string& path,
                                                 const NdjsonSourceOptions& options) {
  if (path == "-") {
    return std::unique_ptr<Source>(new FileSource(0, "stdin", options.event_bytes_max));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot open " + path + ": " + std::strerror(errno));
  std::string name = std::filesystem::absolute(path).lexically_normal().string();
  return std::unique_ptr<Source>(new FileSource(fd, std::move(name), options.event_bytes_max));
}

}  // namespace evident
