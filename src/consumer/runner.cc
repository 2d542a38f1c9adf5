// The consume loop: NDJSON in, batches through the pipeline, group commit, outcomes out.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "core/fault_point.h"
#include "evident/consumer.h"

namespace evident {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;

// 64-bit FNV-1a, continued from `hash` over `data`: the identity of an input's consumed prefix
// (InputCheckpoint). Streaming, so a prefix hashes alike however it was read in chunks; it
// guards against resuming on a different input by mistake, not against an adversary.
uint64_t Fnv1a(uint64_t hash, std::string_view data) {
  for (const char c : data) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// Reads lines from a file descriptor. A line longer than `line_bytes_max` is cut to that many
// bytes plus one (enough for the parser to reject it as too large) and the rest is skipped, so
// one oversized line never holds the whole input in memory.
class LineReader {
 public:
  LineReader(int fd, size_t line_bytes_max) : fd_(fd), line_bytes_max_(line_bytes_max) {}

  enum class Next { kLine, kEnd, kWouldWait };

  // The lines taken so far and the size and hash of their bytes (each counted with a newline).
  const InputCheckpoint& consumed() const { return consumed_; }

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
  InputCheckpoint consumed_{.prefix_hash = kFnvOffset};
};

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// Reads and prepares events (Pipeline::Prepare: parse, payload checks) on a thread of its own,
// ahead of the thread that decides them against the store: while that thread works in SQLite or
// waits for a commit to reach the disk, this one parses the next events.
//
// The two threads hand events over in runs of up to kHandOffCount under one lock, so neither
// takes a lock or wakes the other per event. Bounded: at most `slots` events and about
// `bytes_max` bytes of them are held at once, and a slot that held an event larger than
// kSlotBytesKeep gives its memory back when it is released.
class PrepareAhead {
 public:
  struct Item {
    enum class Kind { kEvent, kEnd, kError } kind = Kind::kEvent;
    PreparedEvent* event = nullptr;
    int64_t index = 0;          // the input line
    InputCheckpoint read_thru;  // the input up to and including this line
    Status status;              // kError
  };

  // With `resume`, its lines are skipped once the input is shown to begin with the same bytes;
  // an input that does not ends the run (kError) before anything is decided.
  PrepareAhead(Pipeline& pipeline, int fd, size_t line_bytes_max,
               std::optional<InputCheckpoint> resume,
               std::vector<std::unique_ptr<PreparedEvent>> slots, size_t bytes_max)
      : pipeline_(pipeline),
        reader_(fd, line_bytes_max),
        resume_(resume),
        slots_(std::move(slots)),
        hand_off_count_(std::clamp<size_t>(slots_.size() / 4, 1, kHandOffCount)),
        bytes_max_(bytes_max) {
    for (auto& slot : slots_) free_.push_back(slot.get());
    thread_ = std::thread([this] { Run(); });
  }
  ~PrepareAhead() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    free_cv_.notify_all();
    thread_.join();
  }
  PrepareAhead(const PrepareAhead&) = delete;
  PrepareAhead& operator=(const PrepareAhead&) = delete;

  // The next item in input order; nullopt when none arrives within `wait_ms` (-1: no limit).
  std::optional<Item> Next(int wait_ms) {
    if (taken_.empty()) {
      std::unique_lock<std::mutex> lock(mutex_);
      GiveBack();  // the slots decided since the last hand-off
      if (ready_.empty()) {
        consumer_waiting_ = true;
        const auto has_item = [this] { return !ready_.empty(); };
        if (wait_ms < 0) {
          ready_cv_.wait(lock, has_item);
        } else {
          ready_cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), has_item);
        }
        consumer_waiting_ = false;
        if (ready_.empty()) return std::nullopt;
      }
      taken_.swap(ready_);
    }
    Item item = std::move(taken_.front());
    taken_.pop_front();
    return item;
  }

  // Gives a decided event's slot back (handed to the reading thread with the next Next).
  void Release(PreparedEvent* event) { released_.push_back(event); }

  int64_t skipped() const { return skipped_; }  // read after kEnd

 private:
  static constexpr size_t kHandOffCount = 64;
  static constexpr size_t kSlotBytesKeep = size_t{64} << 10;

  // Under mutex_: returns the released slots to the free list.
  void GiveBack() {
    for (PreparedEvent* event : released_) {
      bytes_held_ -= std::min(bytes_held_, event->size());
      if (event->size() > kSlotBytesKeep) {
        for (auto& slot : slots_) {
          if (slot.get() != event) continue;
          auto fresh = pipeline_.NewPreparedEvent();
          if (fresh.ok()) slot = std::move(fresh).value();  // else keep the large one
          event = slot.get();
          break;
        }
      }
      free_.push_back(event);
    }
    released_.clear();
    if (producer_waiting_ && !free_.empty()) free_cv_.notify_one();
  }

  void Run() {
    std::string line;
    int64_t line_index = 0;
    std::vector<PreparedEvent*> mine;  // free slots taken, not yet filled
    std::deque<Item> done;             // prepared, not yet handed over
    const auto hand_over = [&] {
      std::lock_guard<std::mutex> lock(mutex_);
      for (Item& item : done) {
        if (item.event != nullptr) bytes_held_ += item.event->size();
        ready_.push_back(std::move(item));
      }
      done.clear();
      if (consumer_waiting_ && !ready_.empty()) ready_cv_.notify_one();
    };
    while (true) {
      if (done.size() >= hand_off_count_) hand_over();
      if (mine.empty()) {
        if (!done.empty()) hand_over();
        std::unique_lock<std::mutex> lock(mutex_);
        producer_waiting_ = true;
        free_cv_.wait(lock,
                      [this] { return stop_ || (!free_.empty() && bytes_held_ < bytes_max_); });
        producer_waiting_ = false;
        if (stop_) return;
        while (!free_.empty() && mine.size() < hand_off_count_) {
          mine.push_back(free_.back());
          free_.pop_back();
        }
      }
      // Events in hand are handed over before the reader may block on a silent input.
      Result<LineReader::Next> next = reader_.Read(line, done.empty() ? 200 : 0);
      if (next.ok() && *next == LineReader::Next::kWouldWait) {
        if (!done.empty()) {
          hand_over();
          continue;
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_) return;
        continue;
      }
      const bool ended = next.ok() && *next == LineReader::Next::kEnd;
      Status resumed = ended ? CheckResume() : Status::Ok();
      if (!next.ok() || !resumed.ok() || ended) {
        Item last;
        last.kind = next.ok() && resumed.ok() ? Item::Kind::kEnd : Item::Kind::kError;
        last.status = next.ok() ? resumed : next.status();
        done.push_back(std::move(last));
        hand_over();
        return;
      }
      const int64_t index = line_index++;
      if (resume_ && index < resume_->lines) {
        ++skipped_;
        if (index + 1 < resume_->lines) continue;
        if (Status same = CheckResume(); !same.ok()) {
          Item last{.kind = Item::Kind::kError, .status = same};
          done.push_back(std::move(last));
          hand_over();
          return;
        }
        continue;
      }
      if (IsBlank(line)) continue;
      PreparedEvent* slot = mine.back();
      mine.pop_back();
      pipeline_.Prepare(*slot, line);
      Item item;
      item.event = slot;
      item.index = index;
      item.read_thru = reader_.consumed();
      done.push_back(std::move(item));
    }
  }

  // Once the resumed lines are read (or the input ended first): are they the checkpoint's?
  // Checked once; afterwards (or without a checkpoint) there is nothing to check.
  Status CheckResume() {
    if (!resume_ || resume_checked_) return Status::Ok();
    resume_checked_ = true;
    const InputCheckpoint& was = *resume_;
    const InputCheckpoint& is = reader_.consumed();
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

  Pipeline& pipeline_;
  LineReader reader_;  // the reading thread's alone
  const std::optional<InputCheckpoint> resume_;
  bool resume_checked_ = false;  // the reading thread's
  int64_t skipped_ = 0;          // the reading thread's until it hands over kEnd

  std::deque<Item> taken_;                // the deciding thread's: handed over, not yet decided
  std::vector<PreparedEvent*> released_;  // the deciding thread's: decided, not yet given back

  std::mutex mutex_;  // guards everything below
  std::condition_variable ready_cv_, free_cv_;
  std::vector<std::unique_ptr<PreparedEvent>> slots_;
  const size_t hand_off_count_;
  std::vector<PreparedEvent*> free_;
  std::deque<Item> ready_;
  const size_t bytes_max_;
  size_t bytes_held_ = 0;
  bool consumer_waiting_ = false, producer_waiting_ = false, stop_ = false;
  std::thread thread_;  // last: starts after every member above exists
};

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
  std::optional<InputCheckpoint> resume;
  if (options.resume) {
    EVIDENT_ASSIGN_OR_RETURN(resume, store.GetCheckpoint(input_name));
  }
  const auto start = std::chrono::steady_clock::now();
  auto last_progress = start;
  // Slots for events read ahead: enough to keep the deciding thread busy, few enough that an
  // event is still in the CPU cache when it is decided.
  constexpr size_t kSlotsMax = 128;
  constexpr size_t kAheadBytesMax = size_t{32} << 20;
  std::vector<std::unique_ptr<PreparedEvent>> slots;
  const size_t slot_count =
      std::clamp<size_t>(static_cast<size_t>(config.batch_count_max), 2, kSlotsMax);
  for (size_t i = 0; i < slot_count; ++i) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<PreparedEvent> slot, pipeline.NewPreparedEvent());
    slots.push_back(std::move(slot));
  }
  PrepareAhead ahead(pipeline, fd, config.event_bytes_max, resume, std::move(slots),
                     kAheadBytesMax);
  std::vector<Decision> decisions;
  std::string outcome_text;
  InputCheckpoint decided_thru;  // the input up to the last line decided: the checkpoint
  size_t batch_events = 0;
  bool in_transaction = false;

  const auto commit = [&]() -> Status {
    if (!in_transaction) return Status::Ok();
    FaultPoint("before-checkpoint");
    EVIDENT_RETURN_IF_ERROR(store.SetCheckpoint(input_name, decided_thru));
    FaultPoint("after-checkpoint");
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
    FaultPoint("before-ack");
    if (options.outcomes != nullptr && !outcome_text.empty()) {
      const size_t written =
          std::fwrite(outcome_text.data(), 1, outcome_text.size(), options.outcomes);
      if (written != outcome_text.size() || std::fflush(options.outcomes) != 0) {
        return Status::IoError(std::string("cannot write the outcomes: ") + std::strerror(errno) +
                               " (the decisions are committed; `evident evidence` shows them)");
      }
    }
    FaultPoint("after-ack");
    return Status::Ok();
  };
  const auto fail = [&](const Status& status) -> Status {
    if (!in_transaction) return status;
    (void)store.Rollback();
    return Status(status.code(), status.message() +
                                     " (the open batch was rolled back; its lines are not "
                                     "acknowledged and a --resume run decides them again)");
  };

  while (true) {
    const int wait_ms = batch_events > 0 ? static_cast<int>(config.linger_ms) : -1;
    std::optional<PrepareAhead::Item> item = ahead.Next(wait_ms);
    if (!item) {  // the input paused for linger_ms: close the batch
      if (Status s = commit(); !s.ok()) return fail(s);
      continue;
    }
    if (item->kind == PrepareAhead::Item::Kind::kError) return fail(item->status);
    if (item->kind == PrepareAhead::Item::Kind::kEnd) break;
    if (!in_transaction) {
      if (Status s = store.Begin(); !s.ok()) return s;
      in_transaction = true;
    }
    Status decided = pipeline.Decide(store, *item->event, item->index, NowMs(), decisions);
    ahead.Release(item->event);
    if (!decided.ok()) return fail(decided.Annotate("input line " + std::to_string(item->index)));
    assert(item->read_thru.lines == item->index + 1);
    decided_thru = item->read_thru;
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
  summary.skipped = ahead.skipped();
  if (Status s = commit(); !s.ok()) return fail(s);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.progress != nullptr) {
    PrintProgress(options.progress, summary, summary.seconds);
    std::fputc('\n', options.progress);
  }
  return summary;
}

}  // namespace evident
