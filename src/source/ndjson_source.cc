// The NDJSON source: lines of a file or of standard input, with a position that identifies the
// consumed prefix (evident/source.h).
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/fnv1a.h"
#include "evident/source.h"

namespace evident {
namespace {

// How far a run got through one input: the lines taken, and the size and hash of exactly those
// bytes (each line counted with its newline; a last line without one counts as if it had it).
struct Consumed {
  int64_t lines = 0;
  int64_t bytes = 0;
  uint64_t prefix_hash = 0;  // 64-bit FNV-1a of those bytes
  // False for a position written before inputs were identified (only `lines` is known).
  bool identified = true;
};

// Reads lines from a file descriptor. A line longer than `line_bytes_max` is cut to that many
// bytes plus one (enough for the parser to reject it as too large) and the rest is skipped, so
// one oversized line never holds the whole input in memory.
class LineReader {
 public:
  LineReader(int fd, size_t line_bytes_max) : fd_(fd), line_bytes_max_(line_bytes_max) {}

  enum class Next { kLine, kEnd, kWouldWait };

  // The lines taken so far and the size and hash of their bytes (each counted with a newline).
  const Consumed& consumed() const { return consumed_; }
  bool eof() const { return eof_; }

  // Produces the next complete line into `line`. With `wait_ms` >= 0, returns kWouldWait when no
  // complete line arrives within that time.
  Result<Next> Read(std::string& line, int wait_ms) {
    while (true) {
      const size_t newline = buffer_.find('\n', scan_from_);
      if (newline != std::string::npos) {
        TakeLine(newline, line);
        return Next::kLine;
      }
      scan_from_ = buffer_.size();
      if (eof_) {
        if (start_ == buffer_.size()) return Next::kEnd;
        TakeLine(buffer_.size(), line);  // a last line without a newline
        skipping_ = false;
        return Next::kLine;
      }
      if (wait_ms >= 0) {
        pollfd pfd{fd_, POLLIN, 0};
        const int ready = poll(&pfd, 1, wait_ms);
        if (ready == 0) return Next::kWouldWait;
        if (ready < 0) {
          // A signal (SIGTERM asking for a stop) interrupts poll even under SA_RESTART: wait
          // again from the caller, which looks at the stop first; never fall into a read().
          if (errno == EINTR) return Next::kWouldWait;
          return Status::IoError(std::string("waiting for input: ") + std::strerror(errno));
        }
      }
      char chunk[1 << 16];
      const ssize_t n = read(fd_, chunk, sizeof chunk);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::IoError(std::string("reading input: ") + std::strerror(errno));
      }
      if (n == 0) {
        eof_ = true;
        continue;
      }
      Compact();
      Append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  void Append(const char* data, size_t n) {
    if (!skipping_) {
      buffer_.append(data, n);
      // Cut an oversized line: keep line_bytes_max + 1 bytes, drop the rest up to its newline.
      if (buffer_.find('\n', scan_from_) == std::string::npos &&
          buffer_.size() > line_bytes_max_ + 1) {
        // The line's bytes are hashed as they go by: the kept ones now, the skipped ones next.
        Consume(std::string_view(buffer_).substr(start_));
        buffer_.resize(line_bytes_max_ + 1);
        skipping_ = true;
        hashed_ = true;
      }
      return;
    }
    const void* nl = std::memchr(data, '\n', n);
    const size_t skipped =
        nl == nullptr ? n : static_cast<size_t>(static_cast<const char*>(nl) - data);
    Consume(std::string_view(data, skipped));
    if (nl == nullptr) return;
    skipping_ = false;
    buffer_.push_back('\n');
    const size_t after = skipped + 1;
    Append(data + after, n - after);
  }

  void Consume(std::string_view bytes) {
    consumed_.bytes += static_cast<int64_t>(bytes.size());
    consumed_.prefix_hash = Fnv1a(consumed_.prefix_hash, bytes);
  }

  // Lines are taken from `start_` on; the consumed prefix is dropped only before a read, so
  // taking a line never moves the rest of the buffer (that was quadratic in lines per chunk).
  void TakeLine(size_t end, std::string& line) {
    if (!hashed_) Consume(std::string_view(buffer_).substr(start_, end - start_));
    Consume("\n");  // also for a last line without one: appending to the input keeps the prefix
    hashed_ = false;
    ++consumed_.lines;
    line.assign(buffer_, start_, end - start_);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    start_ = std::min(end + 1, buffer_.size());
    scan_from_ = start_;
  }

  void Compact() {
    buffer_.erase(0, start_);
    scan_from_ -= start_;
    start_ = 0;
  }

  int fd_;
  size_t line_bytes_max_;
  std::string buffer_;
  size_t start_ = 0;  // where the next line begins
  size_t scan_from_ = 0;
  bool eof_ = false;
  bool skipping_ = false;
  bool hashed_ = false;  // the current (cut) line's bytes are already in consumed_
  Consumed consumed_{.prefix_hash = kFnv1aOffset};
};

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

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
  return Status::Corruption("stored position '" + text + "' is not an NDJSON source's position");
}

class NdjsonSource final : public Source {
 public:
  NdjsonSource(int fd, std::string name, size_t line_bytes_max)
      : fd_(fd), name_(std::move(name)), reader_(fd, line_bytes_max) {}
  ~NdjsonSource() override {
    if (fd_ > 0) close(fd_);
  }

  const std::string& name() const override { return name_; }

  Status Start(const std::optional<std::string>& position) override {
    if (!position) return Status::Ok();
    EVIDENT_ASSIGN_OR_RETURN(resume_, Decode(*position));
    return Status::Ok();
  }

  Result<Fetched> Fetch(Message& out, int wait_ms) override {
    while (true) {
      if (stopped_.load(std::memory_order_relaxed)) return Fetched::kEnd;
      EVIDENT_ASSIGN_OR_RETURN(const LineReader::Next next, reader_.Read(out.bytes, wait_ms));
      if (next == LineReader::Next::kWouldWait) return Fetched::kWouldWait;
      if (next == LineReader::Next::kEnd) {
        EVIDENT_RETURN_IF_ERROR(CheckResume());
        return Fetched::kEnd;
      }
      const int64_t index = line_index_++;
      if (resume_ && index < resume_->lines) {
        ++skipped_;
        if (index + 1 == resume_->lines) EVIDENT_RETURN_IF_ERROR(CheckResume());
        continue;
      }
      if (IsBlank(out.bytes)) continue;
      out.index = index;
      const Consumed& consumed = reader_.consumed();
      out.cursor = Cursor{consumed.lines, consumed.bytes, consumed.prefix_hash};
      return Fetched::kMessage;
    }
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
  // Once the resumed lines are read (or the input ended first): are they the position's?
  // Checked once; afterwards (or without a position) there is nothing to check.
  Status CheckResume() {
    if (!resume_ || resume_checked_) return Status::Ok();
    resume_checked_ = true;
    const Consumed& was = *resume_;
    const Consumed& is = reader_.consumed();
    if (is.lines < was.lines) {
      return Status::FailedPrecondition(
          "cannot resume: the checkpoint covers " + std::to_string(was.lines) +
          " lines but the input has only " + std::to_string(is.lines) + " lines" +
          "; it is not the input the checkpoint was taken from (nothing was decided; run "
          "without --resume to decide it all, the ledger absorbs what was applied before)");
    }
    if (!was.identified) {
      return Status::FailedPrecondition(
          "cannot resume: the checkpoint was written by an earlier evident and does not identify "
          "its input (nothing was decided; run without --resume once, the ledger absorbs what "
          "was applied before)");
    }
    if (is.bytes != was.bytes || is.prefix_hash != was.prefix_hash) {
      return Status::FailedPrecondition(
          "cannot resume: the first " + std::to_string(was.lines) + " lines of the input (" +
          std::to_string(is.bytes) + " bytes) differ from the " + std::to_string(was.bytes) +
          " bytes the checkpoint was taken from; it is a different input (nothing was decided; "
          "run without --resume to decide it all, the ledger absorbs what was applied before)");
    }
    return Status::Ok();
  }

  int fd_;
  std::string name_;
  LineReader reader_;
  std::optional<Consumed> resume_;
  bool resume_checked_ = false;
  int64_t line_index_ = 0;
  int64_t skipped_ = 0;
  std::atomic<bool> stopped_{false};
};

}  // namespace

Result<std::unique_ptr<Source>> OpenNdjsonSource(const std::string& path,
                                                 const NdjsonSourceOptions& options) {
  if (path == "-")
    return std::unique_ptr<Source>(new NdjsonSource(0, "stdin", options.line_bytes_max));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot open " + path + ": " + std::strerror(errno));
  std::string name = std::filesystem::absolute(path).lexically_normal().string();
  return std::unique_ptr<Source>(new NdjsonSource(fd, std::move(name), options.line_bytes_max));
}

}  // namespace evident
