// The consume loop: NDJSON in, batches through the pipeline, group commit, outcomes out.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "evident/consumer.h"

namespace evident {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Reads lines from a file descriptor. A line longer than `line_bytes_max` is cut to that many
// bytes plus one (enough for the parser to reject it as too large) and the rest is skipped, so
// one oversized line never holds the whole input in memory.
class LineReader {
 public:
  LineReader(int fd, size_t line_bytes_max) : fd_(fd), line_bytes_max_(line_bytes_max) {}

  enum class Next { kLine, kEnd, kWouldWait };

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
        buffer_.resize(line_bytes_max_ + 1);
        skipping_ = true;
      }
      return;
    }
    const void* nl = std::memchr(data, '\n', n);
    if (nl == nullptr) return;
    skipping_ = false;
    buffer_.push_back('\n');
    const size_t after = static_cast<size_t>(static_cast<const char*>(nl) - data) + 1;
    Append(data + after, n - after);
  }

  // Lines are taken from `start_` on; the consumed prefix is dropped only before a read, so
  // taking a line never moves the rest of the buffer (that was quadratic in lines per chunk).
  void TakeLine(size_t end, std::string& line) {
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
};

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

void PrintProgress(std::FILE* out, const ConsumeSummary& s, double seconds) {
  std::array<int64_t, kOutcomeCount> totals{};
  for (const auto& [consumer, counts] : s.counts) {
    for (int i = 0; i < kOutcomeCount; ++i) totals[i] += counts[i];
  }
  std::fprintf(out, "\r%lld events, %.0f/s", static_cast<long long>(s.events),
               seconds > 0 ? static_cast<double>(s.events) / seconds : 0.0);
  for (int i = 0; i < kOutcomeCount; ++i) {
    if (totals[i] == 0) continue;
    const std::string_view name = OutcomeName(static_cast<Outcome>(i));
    std::fprintf(out, ", %.*s %lld", static_cast<int>(name.size()), name.data(),
                 static_cast<long long>(totals[i]));
  }
  std::fflush(out);
}

}  // namespace

Result<ConsumeSummary> Consume(Pipeline& pipeline, Store& store, const ConsumeOptions& options) {
  const Config& config = pipeline.config();
  int fd = 0;
  std::string input_name = "stdin";
  if (options.input != "-") {
    fd = open(options.input.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return Status::IoError("cannot open " + options.input + ": " + std::strerror(errno));
    input_name = std::filesystem::absolute(options.input).lexically_normal().string();
  }
  struct Closer {
    int fd;
    ~Closer() {
      if (fd > 0) close(fd);
    }
  } closer{fd};

  ConsumeSummary summary;
  int64_t resume_from = 0;
  if (options.resume) {
    EVIDENT_ASSIGN_OR_RETURN(resume_from, store.GetCheckpoint(input_name));
  }
  const auto start = std::chrono::steady_clock::now();
  auto last_progress = start;
  LineReader reader(fd, config.event_bytes_max);
  std::vector<Decision> decisions;
  std::string outcome_text;
  std::string line;
  int64_t line_index = 0;
  size_t batch_events = 0;
  bool in_transaction = false;

  const auto commit = [&]() -> Status {
    if (!in_transaction) return Status::Ok();
    EVIDENT_RETURN_IF_ERROR(store.SetCheckpoint(input_name, line_index));
    EVIDENT_RETURN_IF_ERROR(store.Commit());
    in_transaction = false;
    ++summary.batches;
    batch_events = 0;
    // Acknowledge only now: the decisions are durable.
    outcome_text.clear();
    for (const Decision& d : decisions) {
      summary.counts[d.consumer][static_cast<size_t>(d.outcome)] += 1;
      if (options.outcomes != nullptr) {
        AppendDecisionJson(d, outcome_text);
        outcome_text.push_back('\n');
      }
    }
    decisions.clear();
    if (options.outcomes != nullptr && !outcome_text.empty()) {
      std::fwrite(outcome_text.data(), 1, outcome_text.size(), options.outcomes);
      std::fflush(options.outcomes);
    }
    return Status::Ok();
  };
  const auto fail = [&](const Status& status) -> Status {
    if (in_transaction) (void)store.Rollback();
    return status;
  };

  while (true) {
    const int wait_ms = batch_events > 0 ? static_cast<int>(config.linger_ms) : -1;
    Result<LineReader::Next> next = reader.Read(line, wait_ms);
    if (!next.ok()) return fail(next.status());
    if (*next == LineReader::Next::kWouldWait) {
      if (Status s = commit(); !s.ok()) return fail(s);
      continue;
    }
    if (*next == LineReader::Next::kEnd) break;
    const int64_t index = line_index++;
    if (index < resume_from) {
      ++summary.skipped;
      continue;
    }
    if (IsBlank(line)) continue;
    if (!in_transaction) {
      if (Status s = store.Begin(); !s.ok()) return s;
      in_transaction = true;
    }
    if (Status s = pipeline.Process(store, line, index, NowMs(), decisions); !s.ok()) {
      return fail(s.Annotate("input line " + std::to_string(index)));
    }
    ++summary.events;
    if (++batch_events >= config.batch_count_max) {
      if (Status s = commit(); !s.ok()) return fail(s);
    }
    if (options.progress != nullptr) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_progress > std::chrono::milliseconds(500)) {
        last_progress = now;
        PrintProgress(options.progress, summary,
                      std::chrono::duration<double>(now - start).count());
      }
    }
  }
  if (Status s = commit(); !s.ok()) return fail(s);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.progress != nullptr) {
    PrintProgress(options.progress, summary, summary.seconds);
    std::fputc('\n', options.progress);
  }
  return summary;
}

}  // namespace evident
