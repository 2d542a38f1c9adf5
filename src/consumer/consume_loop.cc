// The consume loop: a Source in, batches through the pipeline, group commit, acknowledgement
// and outcomes out.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/fault_point.h"
#include "evident/consumer.h"
#include "evident/progress.h"

namespace evident {
namespace {

// A committed batch's span, from its first event to its commit: its counts by outcome, linked
// to the traces of its events (a child of the one trace when they share it).
void TraceBatch(Tracer& tracer, const std::vector<Decision>& decisions, size_t events,
                double commit_seconds, int64_t batch_ms) {
  Span span;
  span.name = "evident.decide";
  span.end_unix_ns = UnixNanosNow();
  span.start_unix_ns = span.end_unix_ns - std::max<int64_t>(batch_ms, 0) * 1'000'000;
  std::array<int64_t, kOutcomeCount> counts{};
  std::set<std::string_view> traces;
  for (const Decision& d : decisions) {
    ++counts[static_cast<size_t>(d.outcome)];
    if (d.traceparent.empty() || span.links.size() >= kSpanLinksMax) continue;
    if (!traces.insert(d.traceparent).second) continue;
    if (std::optional<TraceContext> c = TraceContext::Parse(d.traceparent)) {
      span.links.push_back(std::move(*c));
    }
  }
  const bool one_trace = span.links.size() == 1;
  span.trace_id = one_trace ? span.links[0].trace_id : NewTraceId();
  span.parent_span_id = one_trace ? span.links[0].span_id : std::string();
  span.span_id = NewSpanId();
  span.int_attributes = {{"evident.events", static_cast<int64_t>(events)},
                         {"evident.decisions", static_cast<int64_t>(decisions.size())},
                         {"evident.commit_us", static_cast<int64_t>(commit_seconds * 1e6)}};
  for (size_t i = 0; i < kOutcomeCount; ++i) {
    if (counts[i] == 0) continue;
    span.int_attributes.emplace_back(
        "evident.outcome." + std::string(OutcomeName(static_cast<Outcome>(i))), counts[i]);
  }
  tracer.Record(std::move(span));
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
    int64_t index = 0;                 // where the message stands in its source
    Cursor cursor;                     // the source's position just after it
    Status status;                     // kError
    std::optional<Rejection> refused;  // the source's own rejection (Message::rejection)
  };

  // The source has been started: its Fetch skips what the start position covers. Without a
  // thread (`threaded` false), Next fetches and prepares on the caller's thread.
  PrepareAhead(Pipeline& pipeline, Source& source,
               std::vector<std::unique_ptr<PreparedEvent>> slots, size_t bytes_max, bool threaded)
      : pipeline_(pipeline),
        source_(source),
        slots_(std::move(slots)),
        hand_off_count_(std::clamp<size_t>(slots_.size() / 4, 1, kHandOffCount)),
        bytes_max_(bytes_max),
        threaded_(threaded) {
    for (auto& slot : slots_) free_.push_back(slot.get());
    if (threaded_) thread_ = std::thread([this] { Run(); });
  }
  ~PrepareAhead() {
    if (!threaded_) return;
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
    if (!threaded_) return FetchHere(wait_ms);
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

  // Without a thread: one fetch, on this thread, waiting as the source waits. nullopt as well
  // when every slot holds an event not yet decided (the caller took events ahead).
  std::optional<Item> FetchHere(int wait_ms) {
    std::lock_guard<std::mutex> lock(mutex_);  // uncontended: GiveBack's invariant holds
    GiveBack();
    if (ended_ || free_.empty()) return std::nullopt;
    Message& message = here_;
    Result<Source::Fetched> next = source_.Fetch(message, wait_ms);
    if (next.ok() && *next == Source::Fetched::kWouldWait) return std::nullopt;
    Item item;
    if (!next.ok() || *next == Source::Fetched::kEnd) {
      ended_ = true;
      item.kind = next.ok() ? Item::Kind::kEnd : Item::Kind::kError;
      item.status = next.status();
      return item;
    }
    item.event = free_.back();
    free_.pop_back();
    pipeline_.Prepare(*item.event, message.bytes,
                      message.rejection ? &*message.rejection : nullptr);
    item.index = message.index;
    item.cursor = message.cursor;
    item.refused = std::move(message.rejection);
    message.rejection.reset();
    return item;
  }

  void Run() {
    Message message;
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
      Result<Source::Fetched> next = source_.Fetch(message, done.empty() ? 200 : 0);
      if (next.ok() && *next == Source::Fetched::kWouldWait) {
        if (!done.empty()) {
          hand_over();
          continue;
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_) return;
        continue;
      }
      if (!next.ok() || *next == Source::Fetched::kEnd) {
        Item last;
        last.kind = next.ok() ? Item::Kind::kEnd : Item::Kind::kError;
        last.status = next.status();
        done.push_back(std::move(last));
        hand_over();
        return;
      }
      PreparedEvent* slot = mine.back();
      mine.pop_back();
      pipeline_.Prepare(*slot, message.bytes, message.rejection ? &*message.rejection : nullptr);
      Item item;
      item.event = slot;
      item.index = message.index;
      item.cursor = message.cursor;
      item.refused = std::move(message.rejection);
      message.rejection.reset();
      done.push_back(std::move(item));
    }
  }

  Pipeline& pipeline_;
  Source& source_;  // Fetch: the reading thread's alone

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
  const bool threaded_;
  Message here_;        // without a thread: the message being fetched
  bool ended_ = false;  // without a thread: the end (or an error) was handed over
  std::thread thread_;  // last: starts after every member above exists
};

// "applied 120, duplicate 3": each outcome so far, over every consumer (the progress line's
// detail).
std::string OutcomeTotals(const ConsumeSummary& s) {
  std::array<int64_t, kOutcomeCount> totals{};
  for (const auto& [consumer, counts] : s.counts) {
    for (int i = 0; i < kOutcomeCount; ++i) totals[i] += counts[i];
  }
  std::string out;
  for (int i = 0; i < kOutcomeCount; ++i) {
    if (totals[i] == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::string(OutcomeName(static_cast<Outcome>(i))) + " " + std::to_string(totals[i]);
  }
  return out;
}

// One run of the loop: batches of prepared events decided in one transaction each; the
// source's position written in it; commit; then acknowledgement and outcomes.
class ConsumeLoop {
  // A decided input of the open batch, copied (see KeepInput).
  struct Input {
    std::string bytes;
    int64_t index = 0;
    Cursor cursor;
    std::optional<Rejection> refused;
  };

 public:
  ConsumeLoop(Pipeline& pipeline, Store& store, Source& source, const ConsumeOptions& options)
      : pipeline_(pipeline),
        store_(store),
        source_(source),
        options_(options),
        clock_(options.clock != nullptr ? *options.clock : SystemClock()),
        deciding_(pipeline.ConsumerIds()) {}

  // What the run committed so far (its summary, before the end of the run fills it in).
  const ConsumeSummary& summary() const { return summary_; }

  Result<ConsumeSummary> Run() {
    const Config& config = pipeline_.config();
    start_ms_ = Mono();
    if (options_.progress != nullptr) progress_.emplace(options_.progress, "events", clock_, 500);
    last_decided_ms_ = start_ms_;  // --until-idle counts from the start until the first event
    // Slots for events read ahead: enough to keep the deciding thread busy, few enough that an
    // event is still in the CPU cache when it is decided.
    // On a store where batch loads pay, enough for a whole batch of up to 1,024 events, so that
    // one Load reads the rows of as many of them as are prepared by then.
    const size_t kSlotsMax = store_.BatchLoadPays() ? 1024 : 128;
    constexpr size_t kAheadBytesMax = size_t{32} << 20;
    std::vector<std::unique_ptr<PreparedEvent>> slots;
    const size_t slot_count =
        std::clamp<size_t>(static_cast<size_t>(config.batch_count_max), 2, kSlotsMax);
    for (size_t i = 0; i < slot_count; ++i) {
      EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<PreparedEvent> slot, pipeline_.NewPreparedEvent());
      slots.push_back(std::move(slot));
    }
    {
      PrepareAhead ahead(pipeline_, source_, std::move(slots), kAheadBytesMax, options_.read_ahead);
      EVIDENT_RETURN_IF_ERROR(Loop(ahead));
    }  // the reading thread has ended: the source is this thread's alone
    summary_.skipped = source_.skipped();
    if (Status s = Commit(); !s.ok()) return Fail(s);
    last_gap_check_ms_.reset();  // once more at the end, whatever the interval
    EVIDENT_RETURN_IF_ERROR(MaybeCheckGaps());
    // A source that ended the run by being unreachable is not waited for once more.
    const Status flushed = source_.FlushAcknowledgements(
        summary_.unreachable_error.empty() ? options_.acknowledgement_wait_ms : 0);
    if (!flushed.ok()) summary_.acknowledgement_error = flushed.ToString();
    summary_.seconds = static_cast<double>(Mono() - start_ms_) / 1000.0;
    if (progress_) {
      const Source::InputProgress input = source_.input_progress();
      progress_->Update(input.done, input.total, summary_.events, OutcomeTotals(summary_));
      progress_->Finish();
    }
    return summary_;
  }

 private:
  bool StopRequested() const { return options_.cancel != nullptr && options_.cancel->cancelled(); }

  // Now on the clock's monotonic scale: every duration the loop acts on is measured so.
  int64_t Mono() const { return clock_.MonotonicMs(); }

  // Decides events until the source ends or a stop is asked for (then after the current batch's
  // commit: a stop never leaves decided events uncommitted).
  Status Loop(PrepareAhead& ahead) {
    const Config& config = pipeline_.config();
    while (true) {
      if (StopRequested()) return Stop();
      std::optional<PrepareAhead::Item> item = NextItem(ahead);
      if (!item) {  // the input paused: close the batch once it lingered linger_ms
        if (batch_events_ > 0 &&
            (IdleMs() >= config.linger_ms || BatchAgeMs() >= config.batch_ms_max)) {
          if (Status s = Commit(); !s.ok()) return Fail(s);
        }
        EVIDENT_RETURN_IF_ERROR(MaybeCheckGaps());
        if (options_.until_idle_ms >= 0 && IdleEnough()) {
          source_.Stop();  // ends as the source's end would
          return Status::Ok();
        }
        continue;
      }
      if (item->kind == PrepareAhead::Item::Kind::kError) return Fail(item->status);
      if (item->kind == PrepareAhead::Item::Kind::kEnd) return Status::Ok();
      taken_thru_ = item->cursor;
      if (tx_ == nullptr) {
        batch_started_ms_ = Mono();
        const Status begun = Begin();
        if (!begun.ok() && StopRequested()) return Stop();  // the retry was cut short
        EVIDENT_RETURN_IF_ERROR(begun);
      }
      Status decided = LoadAhead(ahead, *item);
      if (decided.ok()) {
        decided = pipeline_.Decide(*tx_, *item->event, item->index, clock_.NowMs(), decisions_);
      }
      KeepInput(item->event->bytes(), item->index, item->cursor, item->refused);
      ahead.Release(item->event);
      if (!decided.ok()) {
        // The index the outcomes give it (0-based); a file's line is one more.
        const std::string where = "input index " + std::to_string(item->index);
        if (!Transient(decided)) return Fail(decided.Annotate(where));
        failed_ = decided.Annotate(where);
      }
      decided_thru_ = item->cursor;
      last_decided_ms_ = Mono();
      unreachable_since_ms_.reset();  // an event came: the source is reachable
      ++summary_.events;
      if (!failed_.ok() || ++batch_events_ >= static_cast<size_t>(config.batch_count_max) ||
          BatchAgeMs() >= config.batch_ms_max) {
        if (Status s = Commit(); !s.ok()) return Fail(s);
      }
      MaybeProgress();
    }
  }

  // The next item: one taken ahead by LoadAhead, or the source's next.
  std::optional<PrepareAhead::Item> NextItem(PrepareAhead& ahead) {
    if (!loaded_ahead_.empty()) {
      PrepareAhead::Item item = std::move(loaded_ahead_.front().item);
      item_loaded_in_ = loaded_ahead_.front().loaded_in;
      loaded_ahead_.pop_front();
      return item;
    }
    item_loaded_in_ = -1;
    return ahead.Next(WaitMs());
  }

  // On a store where batch loads pay (a server a round trip away): before `current` is
  // decided, unless this transaction loaded its rows already, every event prepared by now (as
  // many as the batch has room for) is taken ahead and the rows of all of them are read with
  // one Transaction::Load. A steady stream of events then costs one Load per batch, however
  // large the batch, instead of reads per event.
  Status LoadAhead(PrepareAhead& ahead, const PrepareAhead::Item& current) {
    if (!store_.BatchLoadPays() || item_loaded_in_ == transaction_number_) return Status::Ok();
    const size_t room = static_cast<size_t>(pipeline_.config().batch_count_max) - batch_events_;
    while (loaded_ahead_.size() + 1 < room) {
      std::optional<PrepareAhead::Item> more = ahead.Next(0);
      if (!more) break;
      const bool event = more->kind == PrepareAhead::Item::Kind::kEvent;
      loaded_ahead_.push_back(LoadedItem{std::move(*more), -1});
      if (!event) break;
    }
    BatchKeys keys;
    pipeline_.AddKeys(*current.event, keys);
    for (LoadedItem& ahead_item : loaded_ahead_) {
      if (ahead_item.item.kind != PrepareAhead::Item::Kind::kEvent) continue;
      if (ahead_item.loaded_in == transaction_number_) continue;
      pipeline_.AddKeys(*ahead_item.item.event, keys);
      ahead_item.loaded_in = transaction_number_;
    }
    return tx_->Load(keys).status();
  }

  // Ends the run on request, after committing what is decided.
  Status Stop() {
    source_.Stop();
    if (Status s = Commit(); !s.ok()) return Fail(s);
    summary_.stopped = true;
    return Status::Ok();
  }

  // How long the input has been silent since the last decided event.
  int64_t IdleMs() const { return Mono() - last_decided_ms_; }

  // What --until-idle counts: the silence since the last decided event, or since the source
  // last found its broker unreachable (a down server is not an empty one), whichever is later.
  int64_t UntilIdleMs() const { return Mono() - std::max(last_decided_ms_, reachable_since_ms_); }

  // While the input pauses, with --until-idle: true once the source was idle that long and
  // says so itself (Source::ConfirmIdle), or once its broker was unreachable that long without
  // a break (then the summary says so). An outage ends with a fetch that reaches the broker
  // again, a decided event or the source's answer.
  bool IdleEnough() {
    const int64_t now_ms = Mono();
    const bool flagged = source_.unreachable();
    if (flagged) {
      MarkUnreachable(now_ms, "");
    } else if (flagged_unreachable_) {
      unreachable_since_ms_.reset();  // back
    }
    flagged_unreachable_ = flagged;
    if (!flagged && UntilIdleMs() >= options_.until_idle_ms) {
      const Result<bool> confirmed = source_.ConfirmIdle();
      if (!confirmed.ok()) {
        MarkUnreachable(now_ms, confirmed.status().ToString());
      } else if (*confirmed) {
        return true;
      } else {
        unreachable_since_ms_.reset();
        reachable_since_ms_ = Mono();  // messages wait: idle time anew
      }
    }
    if (!unreachable_since_ms_) return false;
    const int64_t unreachable_ms = Mono() - *unreachable_since_ms_;
    if (unreachable_ms < options_.until_idle_ms) return false;
    summary_.unreachable_error =
        "the source (" + source_.name() + ") has not been reachable for at least " +
        std::to_string(unreachable_ms) +
        " ms, as long as --until-idle: it may hold messages this run did not read" +
        (unreachable_why_.empty() ? std::string() : " (" + unreachable_why_ + ")");
    return true;
  }

  // The source could not be reached at `at` (`why`, when known): the idle time starts anew.
  void MarkUnreachable(int64_t at_ms, const std::string& why) {
    reachable_since_ms_ = Mono();
    if (!unreachable_since_ms_) unreachable_since_ms_ = at_ms;
    if (!why.empty()) unreachable_why_ = why;
  }

  // How long the open batch has been open (since its first event was taken).
  int64_t BatchAgeMs() const { return Mono() - batch_started_ms_; }

  // How long to wait for the next event: with a batch open, what is left of linger_ms (and of
  // batch_ms_max); with a
  // stop to watch for, never longer than kStopPollMs; else until one comes (-1).
  int WaitMs() const {
    int64_t wait_ms = -1;
    if (batch_events_ > 0) {
      const Config& config = pipeline_.config();
      wait_ms = std::max<int64_t>(
          0, std::min(config.linger_ms - IdleMs(), config.batch_ms_max - BatchAgeMs()));
    }
    if (options_.cancel != nullptr) {
      wait_ms = wait_ms < 0 ? kStopPollMs : std::min<int64_t>(wait_ms, kStopPollMs);
    }
    if (options_.until_idle_ms >= 0) {
      const int64_t left_ms = std::max<int64_t>(0, options_.until_idle_ms - UntilIdleMs());
      wait_ms = wait_ms < 0 ? left_ms : std::min(wait_ms, left_ms);
    }
    return static_cast<int>(wait_ms);
  }

  // A busy store is tried again with backoff (RetryBusy) before the run gives up.
  Status Begin() {
    return RetryBusy(options_.busy_retry, clock_, options_.cancel, [this]() -> Status {
      Result<std::unique_ptr<Transaction>> begun = store_.Begin();
      if (!begun.ok()) return begun.status();
      tx_ = std::move(begun).value();
      ++transaction_number_;
      return tx_->WillDecide(deciding_);
    });
  }

  Status Commit() {
    if (tx_ == nullptr) return Status::Ok();
    Status committed = failed_;  // a decision that failed transiently: the batch is redone
    failed_ = Status::Ok();
    if (committed.ok()) {
      FaultPoint("before-checkpoint");
      if (options_.record_position) {
        committed = tx_->SetPosition(source_.name(), source_.EncodePosition(decided_thru_));
      }
      if (committed.ok() && options_.before_commit) {
        committed = options_.before_commit(*tx_, decided_thru_);
      }
      FaultPoint("after-checkpoint");
    }
    const bool commit_ran = committed.ok();
    // The commit's own cost, a measure of the machine (metrics), not a time the loop acts on.
    const auto commit_started = std::chrono::steady_clock::now();
    if (commit_ran) committed = tx_->Commit();
    commit_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - commit_started).count();
    committed_events_ = batch_events_;
    if (!committed.ok() && !commit_ran) (void)tx_->Rollback();
    tx_.reset();  // finished either way: a commit that fails rolls back
    if (!committed.ok()) {
      committed = Transient(committed) ? Recover(committed) : committed;
      if (!committed.ok()) return RolledBack(committed);
    }
    ++summary_.batches;
    batch_events_ = 0;
    inputs_used_ = 0;
    // Only now are the outcomes written and the batch acknowledged: the decisions are durable.
    // (Outcomes first: an acknowledgement that fails must not lose a committed batch's lines.)
    EVIDENT_RETURN_IF_ERROR(WriteOutcomes());
    const Status acknowledged = source_.Acknowledge(decided_thru_);
    if (!acknowledged.ok()) {
      return acknowledged.Annotate(
          "acknowledging a committed batch (its decisions stand; the source delivers it again "
          "and the ledger answers duplicate)");
    }
    return MaybeCheckGaps();
  }

  // Acts on overdue gaps (gaps.h) when no batch is open and the interval has passed.
  Status MaybeCheckGaps() {
    if (options_.gap_check_interval_ms < 0 || tx_ != nullptr) return Status::Ok();
    const int64_t now_ms = clock_.NowMs();
    if (last_gap_check_ms_ && now_ms - *last_gap_check_ms_ < options_.gap_check_interval_ms) {
      return Status::Ok();
    }
    last_gap_check_ms_ = now_ms;
    // Housekeeping: a check that fails (a busy store) is tried again at the next interval, and
    // never fails the run whose batches are committed; the run's summary keeps the last error.
    Result<GapCheck> checked =
        CheckGapDeadlines(store_, now_ms, {.partition_count = options_.outbox_partition_count});
    if (!checked.ok()) {
      summary_.gap_check_error = checked.status().ToString();
      return Status::Ok();
    }
    const GapCheck& check = *checked;
    GapCheck& total = summary_.gap_actions;
    total.requested += check.requested;
    total.manual += check.manual;
    total.reported += check.reported;
    total.closed += check.closed;
    return Status::Ok();
  }

  // A failure worth another attempt: a busy or unreachable store, a write conflict.
  static bool Transient(const Status& status) {
    return status.code() == Code::kUnavailable || status.code() == Code::kAborted;
  }

  // A copy of each decided input of the open batch, to decide it again after a transient
  // failure (the prepared slots are reused at once). Strings keep their capacity.
  void KeepInput(std::string_view bytes, int64_t index, const Cursor& cursor,
                 const std::optional<Rejection>& refused) {
    if (inputs_used_ == inputs_.size()) inputs_.emplace_back();
    Input& input = inputs_[inputs_used_++];
    input.bytes.assign(bytes);
    input.index = index;
    input.cursor = cursor;
    input.refused = refused;
  }

  // The batch failed transiently and was rolled back. It is decided again, whole, with backoff
  // (busy_retry); when those attempts are spent, input by input, each in its own transaction
  // with the same retries, and an input that still cannot be decided is quarantined with reason
  // `retries-exhausted` (the rest of the batch goes on). Fails only when even that cannot be
  // written, or on an error that is not transient.
  Status Recover(Status error) {
    const RetryPolicy& policy = options_.busy_retry;
    decisions_.clear();  // the rolled-back batch's: it is decided again
    for (int attempt = 1; attempt < policy.attempts_max; ++attempt) {
      if (!SleepUnlessCancelled(clock_, RetryBackoffMs(policy, attempt), options_.cancel)) {
        return error;
      }
      error = DecideInputs(0, inputs_used_);
      if (error.ok() || !Transient(error)) return error;
    }
    const RetryPolicy per_input = RetryingConflicts(policy);
    for (size_t i = 0; i < inputs_used_; ++i) {
      Status one =
          RetryBusy(per_input, clock_, options_.cancel, [&] { return DecideInputs(i, i + 1); });
      if (one.ok()) continue;
      if (Transient(one)) {
        const Status cause = one;
        // Each attempt decides the input once more before it quarantines it: the writer it met
        // (another process's batch on the same consumers) may be gone by now, and an event that
        // process applied is then answered duplicate here rather than kept as exhausted.
        one = RetryBusy(per_input, clock_, options_.cancel, [&] {
          const Status decided = DecideInputs(i, i + 1);
          if (decided.ok() || !Transient(decided)) return decided;
          return QuarantineInput(inputs_[i], cause);
        });
      }
      if (!one.ok()) return Settled(i, one);
    }
    return Status::Ok();
  }

  // Input by input, inputs [0, committed) of the batch are committed and `error` stopped the
  // rest: the committed ones are reported and acknowledged (their decisions stand), and the
  // error names what is not.
  Status Settled(size_t committed, const Status& error) {
    if (committed == 0) return error;
    decided_thru_ = inputs_[committed - 1].cursor;
    EVIDENT_RETURN_IF_ERROR(WriteOutcomes());
    EVIDENT_RETURN_IF_ERROR(source_.Acknowledge(decided_thru_));
    return Status(error.code(), error.message() + " (the batch's first " +
                                    std::to_string(committed) +
                                    " input(s) were committed one by one and acknowledged)");
  }

  // Decides inputs [from, to) of the batch in one transaction and commits them with the
  // position after the last; on failure nothing of it stays.
  Status DecideInputs(size_t from, size_t to) {
    const size_t decided_before = decisions_.size();
    Status s = WithTransaction(inputs_[to - 1].cursor, [&](Transaction& tx) -> Status {
      for (size_t i = from; i < to; ++i) {
        const Input& input = inputs_[i];
        EVIDENT_RETURN_IF_ERROR(pipeline_.Process(tx, input.bytes, input.index, clock_.NowMs(),
                                                  decisions_,
                                                  input.refused ? &*input.refused : nullptr));
      }
      return Status::Ok();
    });
    if (!s.ok()) decisions_.resize(decided_before);
    return s;
  }

  Status QuarantineInput(const Input& input, const Status& error) {
    Decision d;
    d.index = input.index;
    d.outcome = Outcome::kRejected;
    d.reason = "retries-exhausted";
    d.message = "could not be decided: " + error.ToString();
    Status s = WithTransaction(input.cursor, [&](Transaction& tx) -> Status {
      QuarantineRecord record = pipeline_.Identify(input.bytes);  // source, id, type, subject
      d.subject = record.subject;
      record.reason = d.reason;
      record.message = d.message;
      record.last_seen_ms = clock_.NowMs();
      record.input_index = input.index;
      return tx.Quarantine(record).status();
    });
    if (s.ok()) decisions_.push_back(std::move(d));
    return s;
  }

  // Runs `work` in a transaction of its own that records the source at `cursor`, and commits.
  template <typename Work>
  Status WithTransaction(const Cursor& cursor, Work work) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store_.Begin());
    Status s = tx->WillDecide(deciding_);
    if (s.ok()) s = work(*tx);
    if (s.ok() && options_.record_position) {
      s = tx->SetPosition(source_.name(), source_.EncodePosition(cursor));
    }
    if (s.ok() && options_.before_commit) s = options_.before_commit(*tx, cursor);
    if (s.ok()) return tx->Commit();
    (void)tx->Rollback();
    return s;
  }

  Status WriteOutcomes() {
    outcome_text_.clear();
    for (const Decision& d : decisions_) {
      summary_.counts[d.consumer][static_cast<size_t>(d.outcome)] += 1;
      if (options_.outcomes != nullptr) {
        AppendDecisionJson(d, outcome_text_);
        outcome_text_.push_back('\n');
      }
    }
    if (options_.tracer != nullptr) {
      TraceBatch(*options_.tracer, decisions_, committed_events_, commit_seconds_,
                 Mono() - batch_started_ms_);
    }
    if (options_.on_committed) {
      const Status told = options_.on_committed(CommittedBatch{
          .decisions = decisions_, .events = committed_events_, .commit_seconds = commit_seconds_});
      if (!told.ok()) {
        decisions_.clear();
        return told;
      }
    }
    decisions_.clear();
    FaultPoint("before-ack");
    if (options_.outcomes != nullptr && !outcome_text_.empty()) {
      Status written = options_.outcomes->Append(outcome_text_);
      if (written.ok()) written = options_.outcomes->Flush();
      if (!written.ok()) {
        return Status::IoError("cannot write the outcomes: " + written.message() +
                               " (the decisions are committed; `evident evidence` shows them)");
      }
    }
    FaultPoint("after-ack");
    return Status::Ok();
  }

  Status Fail(const Status& status) {
    inputs_used_ = 0;
    if (tx_ == nullptr) return status;
    (void)tx_->Rollback();
    tx_.reset();
    return RolledBack(status);
  }

  // The open batch is gone: a broker redelivers its messages; a file cannot (its Reject says
  // so, and the run ends here either way: a --resume run decides them again).
  Status RolledBack(const Status& status) {
    (void)source_.Reject(taken_thru_, kRedeliverDelayMs);
    return Status(status.code(), status.message() +
                                     " (the open batch was rolled back; its lines are not "
                                     "acknowledged and a --resume run decides them again)");
  }

  void MaybeProgress() {
    if (!progress_ || !progress_->Due()) return;
    const Source::InputProgress input = source_.input_progress();
    progress_->Update(input.done, input.total, summary_.events, OutcomeTotals(summary_));
  }

  static constexpr int kStopPollMs = 100;
  static constexpr int64_t kRedeliverDelayMs = 1000;

  Pipeline& pipeline_;
  Store& store_;
  Source& source_;
  const ConsumeOptions& options_;
  Clock& clock_;
  const std::vector<std::string> deciding_;  // the pipeline's consumers (Transaction::WillDecide)
  ConsumeSummary summary_;
  std::unique_ptr<Transaction> tx_;  // the open batch's, when one is open
  int64_t transaction_number_ = 0;   // raised by each Begin
  // Items taken ahead of their turn by LoadAhead, with the transaction that loaded their rows.
  struct LoadedItem {
    PrepareAhead::Item item;
    int64_t loaded_in = -1;
  };
  std::deque<LoadedItem> loaded_ahead_;
  int64_t item_loaded_in_ = -1;  // of the item being decided
  std::vector<Decision> decisions_;
  std::string outcome_text_;
  Cursor decided_thru_;  // the source up to the last event decided: the position to store
  Cursor taken_thru_;    // .. up to the last event taken, decided or not: what a rollback rejects
  // Times on the clock's monotonic scale (Clock::MonotonicMs), in milliseconds.
  int64_t last_decided_ms_ = 0;
  int64_t reachable_since_ms_ = 0;  // when the source last was not
  // Since when the source has been unreachable without a break; nullopt while it is reachable.
  std::optional<int64_t> unreachable_since_ms_;
  bool flagged_unreachable_ = false;  // Source::unreachable, when IdleEnough last looked
  std::string unreachable_why_;       // the last failed ConfirmIdle's account
  int64_t batch_started_ms_ = 0;      // when the open batch began
  size_t batch_events_ = 0;
  size_t committed_events_ = 0;  // the events of the batch whose commit ran last
  double commit_seconds_ = 0;    // how long that commit took
  int64_t start_ms_ = 0;
  std::optional<ProgressBar> progress_;  // with options_.progress
  std::vector<Input> inputs_;            // the open batch's decided inputs: the first inputs_used_
  size_t inputs_used_ = 0;
  Status failed_;  // a decision of the open batch failed transiently: redo it at the commit
  std::optional<int64_t> last_gap_check_ms_;
};

}  // namespace

Result<ConsumeSummary> Consume(Pipeline& pipeline, Store& store, Source& source,
                               const ConsumeOptions& options) {
  std::optional<std::string> position;
  if (options.resume) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
    EVIDENT_ASSIGN_OR_RETURN(position, snapshot->GetPosition(source.name()));
  }
  EVIDENT_RETURN_IF_ERROR(source.Start(position));
  if (options.outbox_partition_count < 1) {
    return Status::InvalidArgument("outbox_partition_count must be at least 1");
  }
  pipeline.SetOutboxPartitionCount(options.outbox_partition_count);
  ConsumeLoop loop(pipeline, store, source, options);
  Result<ConsumeSummary> ran = loop.Run();
  if (!ran.ok() && options.partial != nullptr) *options.partial = loop.summary();
  return ran;
}

Result<ConsumeSummary> Consume(Pipeline& pipeline, Store& store, const ConsumeOptions& options) {
  EVIDENT_ASSIGN_OR_RETURN(
      std::unique_ptr<Source> source,
      OpenNdjsonSource(options.input, {.event_bytes_max = static_cast<size_t>(
                                           pipeline.config().event_bytes_max)}));
  return Consume(pipeline, store, *source, options);
}

}  // namespace evident
