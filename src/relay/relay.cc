// The relay (evident/relay.h): outbox rows to a Publisher, marked sent on acceptance.
#include "evident/relay.h"

#include <simdjson.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "core/fnv1a.h"
#include "evident/progress.h"
#include "evident/retry.h"

namespace evident {
namespace {

bool SubjectTokenByte(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

void AppendEscaped(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= '!' && b <= '~' && b != '%') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xF]);
    }
  }
}

// A store too busy to answer now is worth another round; anything else ends the run.
bool Busy(const Status& s) { return s.code() == Code::kUnavailable || s.code() == Code::kAborted; }

class Relay {
 public:
  Relay(Store& store, const PublisherFactory& open, const RelayOptions& options)
      : store_(store),
        open_(open),
        options_(options),
        clock_(options.clock != nullptr ? *options.clock : SystemClock()),
        jitter_(std::random_device{}()) {
    assert(options.batch_count_max >= 1 && options.delete_count_max >= 1);
    assert(options.backoff_initial_ms >= 1 && options.backoff_max_ms >= options.backoff_initial_ms);
  }

  Result<RelaySummary> Run() {
    const int64_t start_ms = clock_.MonotonicMs();
    last_retention_ms_ = clock_.NowMs();
    if (options_.once && options_.progress != nullptr) {
      progress_.emplace(options_.progress, "rows", clock_);
      EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store_.Read());
      EVIDENT_ASSIGN_OR_RETURN(const OutboxStats stats, snapshot->OutboxStatsNow(clock_.NowMs()));
      pending_at_start_ = stats.pending;
    }
    Status ended = Loop();
    if (progress_) {
      progress_->Update(summary_.sent, pending_at_start_, summary_.sent);
      progress_->Finish();
    }
    if (in_flight_.valid()) (void)in_flight_.get();  // an error left it: published, not marked
    if (publisher_ != nullptr) {
      const Status closed = publisher_->Close();
      if (ended.ok() && !closed.ok()) ended = closed.Annotate("closing the destination");
    }
    if (ended.ok() && options_.once) ended = Retain(true);
    EVIDENT_RETURN_IF_ERROR(ended);
    summary_.seconds = static_cast<double>(clock_.MonotonicMs() - start_ms) / 1000.0;
    return summary_;
  }

 private:
  enum class Round : uint8_t { kProgress, kIdle, kFailed };

  bool Cancelled() const { return options_.cancel != nullptr && options_.cancel->cancelled(); }

  Status Loop() {
    int failures = 0;
    while (true) {
      if (Cancelled()) {
        if (in_flight_.valid()) {  // the batch on its way is waited for and marked
          EVIDENT_ASSIGN_OR_RETURN(const Round last, Finish(/*launch_next=*/false));
          (void)last;
        }
        summary_.stopped = true;
        return Status::Ok();
      }
      EVIDENT_ASSIGN_OR_RETURN(const Round round, Step());
      if (round == Round::kProgress) {
        failures = 0;
        // A relay that never runs out of rows still deletes what is past keep_sent_ms.
        EVIDENT_RETURN_IF_ERROR(Retain(false));
        continue;
      }
      if (round == Round::kIdle) {
        failures = 0;
        if (options_.once) return Status::Ok();
        EVIDENT_RETURN_IF_ERROR(Retain(false));
        WaitIdle();
        continue;
      }
      ++failures;
      ++summary_.failed_rounds;
      if (options_.log != nullptr && (failures == 1 || failures % 10 == 0)) {
        std::fprintf(options_.log, "evident relay: a round failed (%d in a row): %s\n", failures,
                     summary_.last_error.c_str());
        std::fflush(options_.log);  // a log line: nothing to do if it cannot be written
      }
      if (options_.once && failures >= options_.once_failures_max) {
        return Status(Code::kUnavailable,
                      "gave up after " + std::to_string(failures) +
                          " failed rounds in a row; last: " + summary_.last_error);
      }
      SleepUnlessCancelled(clock_, BackoffMs(failures), options_.cancel);
    }
  }

  // One round: publish the oldest pending rows (unless the last round already sent them on
  // their way), wait for the destination's answer, start the next batch's publish, then record
  // what became of this one while the next is in flight. Marking (a write transaction and its
  // fsync) thus overlaps publishing; a row is still marked only after its acceptance.
  Result<Round> Step() {
    if (publisher_ == nullptr) {
      Result<std::unique_ptr<Publisher>> opened = open_();
      const Code code = opened.status().code();
      if (code == Code::kInvalidArgument || code == Code::kFailedPrecondition) {
        return opened.status();  // a destination that does not fit the relay: retrying is no use
      }
      if (!opened.ok()) return Failed(opened.status().ToString());
      publisher_ = std::move(opened).value();
    }
    if (store_.RelaysShare()) return ClaimStep();
    if (!in_flight_.valid()) {
      Result<Rows<OutboxRow>> rows = ReadPending(0);
      if (!rows.ok()) return Busy(rows.status()) ? Failed(rows.status().ToString()) : rows.status();
      if (rows->rows.empty()) return Round::kIdle;
      Launch(std::move(rows->rows));
    }
    return Finish(/*launch_next=*/true);
  }

  // One round on a store that relays share: claim partitions and their oldest rows, publish
  // them, mark them and commit, all in the claiming transaction, so that no other relay
  // publishes or marks those partitions meanwhile (and a relay whose claim lapsed cannot mark).
  Result<Round> ClaimStep() {
    Result<std::unique_ptr<Transaction>> tx = store_.Begin();
    if (!tx.ok()) return Busy(tx.status()) ? Failed(tx.status().ToString()) : tx.status();
    Result<Rows<OutboxRow>> rows =
        (*tx)->ClaimOutbox(options_.batch_count_max, options_.claim_partitions_max,
                           options_.claim_hold_ms, clock_.NowMs());
    if (!rows.ok()) return Busy(rows.status()) ? Failed(rows.status().ToString()) : rows.status();
    if (rows->rows.empty()) {
      (void)(*tx)->Rollback();  // it wrote nothing
      return Round::kIdle;
    }
    BuildMessages(rows->rows, messages_[0]);
    const Result<size_t> published = publisher_->Publish(messages_[0]);
    return Settle(published, rows->rows, publisher_->acks(), std::move(*tx));
  }

  // Waits for the batch in flight and records its fate; with `launch_next`, first sends the
  // next pending rows on their way when this batch was accepted whole. Those rows are read and
  // their messages built while this batch is still in flight, so that the destination is not
  // left without work between batches; they are dropped if this batch was not accepted whole.
  Result<Round> Finish(bool launch_next) {
    assert(in_flight_.valid());
    const int next_slot = 1 - current_;
    bool next_ready = false;
    if (launch_next) {
      assert(!rows_[current_].empty());  // Launch never starts an empty batch
      Result<Rows<OutboxRow>> next = ReadPending(rows_[current_].back().seq);
      if (next.ok() && !next->rows.empty()) {
        rows_[next_slot] = std::move(next->rows);
        BuildMessages(rows_[next_slot], messages_[next_slot]);
        next_ready = true;
      }
    }
    const Result<size_t> published = in_flight_.get();
    std::vector<OutboxRow> rows = std::move(rows_[current_]);
    std::vector<PublishAck> acks = publisher_->acks();
    if (next_ready && published.ok() && *published == rows.size()) {
      Start(next_slot);
    } else {
      rows_[next_slot].clear();
    }
    return Settle(published, rows, acks, nullptr);
  }

  // Records what became of published `rows` (in `claim`, or else in a transaction of its own)
  // and what it means for the round.
  Result<Round> Settle(const Result<size_t>& published, const std::vector<OutboxRow>& rows,
                       const std::vector<PublishAck>& acks, std::unique_ptr<Transaction> claim) {
    const size_t accepted = published.ok() ? *published : 0;
    assert(accepted <= rows.size());
    std::string error;
    if (!published.ok()) {
      error = published.status().ToString();
    } else if (accepted < rows.size()) {
      error = "not acknowledged (the destination accepted " + std::to_string(accepted) + " of " +
              std::to_string(rows.size()) + ")";
    }
    // The destination refuses the first row for what it is (Publisher: kInvalidArgument), and
    // will again: a row past its attempts is parked, so that the rows behind it go out.
    const bool refused_for_what_it_is =
        !published.ok() && published.status().code() == Code::kInvalidArgument;
    const Result<bool> parked =
        Mark(rows, accepted, error, refused_for_what_it_is, acks, std::move(claim));
    const Status& marked = parked.status();
    if (!marked.ok()) {
      // The batch in flight (if any) is published but the rows before it are unmarked: finish
      // it without marking; the next round reads from the oldest pending row again.
      if (in_flight_.valid()) (void)in_flight_.get();
      if (!Busy(marked)) return marked.Annotate("marking published rows");
    }
    if (accepted < rows.size()) {
      // A destination that refused may be broken (a closed connection): open it again.
      (void)publisher_->Close();
      publisher_.reset();
    }
    if (!marked.ok()) return Failed(marked.ToString());  // published, re-offered: ids dedupe
    // A row parked is progress: the rows behind it go out next, at once (a run of poison rows
    // is parked one per round, with no backoff, and does not make --once give up).
    if (accepted == 0 && !*parked) return Failed(error);
    return Round::kProgress;
  }

  // An idle relay waits for the store's word of a committed row where the store gives it (up to
  // notify_wait_ms, in slices so that a cancel is seen), and otherwise poll_ms.
  void WaitIdle() {
    if (!store_.RelaysShare()) {
      SleepUnlessCancelled(clock_, options_.poll_ms, options_.cancel);
      return;
    }
    for (int64_t left = options_.notify_wait_ms; left > 0 && !Cancelled();) {
      const int64_t slice = std::min<int64_t>(left, 100);
      const Result<bool> told = store_.WaitForOutbox(slice);
      if (!told.ok()) {  // the next claim says whether the store itself is down
        summary_.last_error = told.status().ToString();
        SleepUnlessCancelled(clock_, options_.poll_ms, options_.cancel);
        return;
      }
      if (*told) return;
      left -= slice;
    }
  }

  // Starts publishing `rows` on the worker (the publisher is the worker's alone until Finish).
  void Launch(std::vector<OutboxRow> rows) {
    const int slot = 1 - current_;
    rows_[slot] = std::move(rows);
    BuildMessages(rows_[slot], messages_[slot]);
    Start(slot);
  }

  // Publishes the messages built in `slot` on the worker; `slot` becomes the current one.
  void Start(int slot) {
    assert(!in_flight_.valid() && !rows_[slot].empty());
    assert(messages_[slot].size() == rows_[slot].size());
    current_ = slot;
    in_flight_ = std::async(std::launch::async,
                            [this, slot] { return publisher_->Publish(messages_[slot]); });
  }

  Result<Rows<OutboxRow>> ReadPending(int64_t after_seq) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store_.Read());
    return snapshot->OutboxRows(OutboxSelect::kPending, after_seq, options_.batch_count_max);
  }

  // The batch's span: from the read of its rows (BuildMessages) to their marking, linked to the
  // traces its events carry.
  void TraceBatch(const std::vector<OutboxRow>& rows, size_t accepted, const std::string& error) {
    Span span;
    span.name = "evident.relay";
    span.end_unix_ns = UnixNanosNow();
    const auto started = batch_started_ns_.find(rows.front().seq);
    span.start_unix_ns = started == batch_started_ns_.end() ? span.end_unix_ns : started->second;
    // Only this batch's and older: the next one may be read already (two are in flight).
    batch_started_ns_.erase(batch_started_ns_.begin(),
                            batch_started_ns_.upper_bound(rows.back().seq));
    simdjson::dom::parser parser;
    for (const OutboxRow& row : rows) {
      if (span.links.size() >= kSpanLinksMax) break;
      simdjson::dom::element event;
      std::string_view traceparent;
      if (parser.parse(row.bytes).get(event) != simdjson::SUCCESS ||
          event["traceparent"].get(traceparent) != simdjson::SUCCESS) {
        continue;
      }
      if (auto c = TraceContext::Parse(traceparent)) span.links.push_back(std::move(*c));
    }
    const bool one = span.links.size() == 1;
    span.trace_id = one ? span.links[0].trace_id : NewTraceId();
    span.parent_span_id = one ? span.links[0].span_id : std::string();
    span.span_id = NewSpanId();
    span.attributes = {{"evident.destination", options_.destination_name}};
    span.int_attributes = {{"evident.rows", static_cast<int64_t>(rows.size())},
                           {"evident.sent", static_cast<int64_t>(accepted)}};
    span.error = accepted < rows.size();
    if (span.error) span.status_message = error;
    options_.tracer->Record(std::move(span));
  }

  void BuildMessages(const std::vector<OutboxRow>& rows, std::vector<OutgoingMessage>& messages) {
    if (options_.tracer != nullptr && !rows.empty()) {
      batch_started_ns_[rows.front().seq] = UnixNanosNow();
    }
    messages.resize(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const OutboxRow& row = rows[i];
      const int64_t partition =
          options_.partition_count.has_value()
              ? static_cast<int64_t>(Fnv1a(kFnv1aOffset, row.subject) %
                                     static_cast<uint64_t>(*options_.partition_count))
              : row.partition;
      messages[i].destination = RelayDestination(partition, row.type);
      messages[i].id = RelayMessageId(row.source, row.event_id);
      messages[i].bytes = row.bytes;
      messages[i].key = row.subject;
      messages[i].source = row.source;
      messages[i].type = row.type;
      messages[i].event_id = row.event_id;
    }
  }

  // In one transaction (`tx`, or one begun here): the accepted prefix marked sent, an attempt
  // counted on the rest, and the first row parked when it was `refused` for what it is and has
  // reached its attempts; then only that row counts an attempt (the rows behind it were held
  // back by it, not refused, and keep their own last error). Returns whether it parked.
  Result<bool> Mark(const std::vector<OutboxRow>& rows, size_t accepted, const std::string& error,
                    bool refused, const std::vector<PublishAck>& acks,
                    std::unique_ptr<Transaction> tx) {
    if (tx == nullptr) {
      EVIDENT_ASSIGN_OR_RETURN(tx, store_.Begin());
    }
    const int64_t now_ms = clock_.NowMs();
    int64_t duplicates = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (i < accepted) {
        std::optional<int64_t> sequence;
        if (i < acks.size()) {
          sequence = static_cast<int64_t>(acks[i].sequence);
          duplicates += acks[i].duplicate ? 1 : 0;
        }
        EVIDENT_RETURN_IF_ERROR(
            tx->MarkOutboxSent(rows[i].seq, options_.destination_name, sequence, now_ms));
      } else if (!refused || i == 0) {
        EVIDENT_RETURN_IF_ERROR(tx->RecordOutboxAttempt(rows[i].seq, error, now_ms));
      }
    }
    std::optional<int64_t> parked;
    if (refused) {
      assert(accepted == 0);  // Publisher: an error only when nothing was accepted
      EVIDENT_ASSIGN_OR_RETURN(parked, ParkIfDue(*tx, rows.front(), error, now_ms));
    }
    EVIDENT_RETURN_IF_ERROR(tx->Commit());
    if (options_.tracer != nullptr) TraceBatch(rows, accepted, error);
    summary_.sent += static_cast<int64_t>(accepted);
    summary_.duplicates += duplicates;
    if (progress_ && progress_->Due()) {
      progress_->Update(summary_.sent, pending_at_start_, summary_.sent);
    }
    if (parked.has_value()) NoteParked(*parked, rows.front().attempts + 1, error);
    return parked.has_value();
  }

  // Parks `row`, refused for what it is with `error`, when the attempt just counted brings it
  // to park_refused_after_attempts; returns its seq when it did. A row the operator parked
  // meanwhile stays as they parked it.
  Result<std::optional<int64_t>> ParkIfDue(OutboxWrites& tx, const OutboxRow& row,
                                           const std::string& error, int64_t now_ms) {
    const int64_t attempts = row.attempts + 1;
    if (options_.park_refused_after_attempts == 0 ||
        attempts < options_.park_refused_after_attempts) {
      return std::optional<int64_t>();
    }
    const std::string reason = "parked by the relay: the destination refused it for what it is, " +
                               std::to_string(attempts) + " attempts; last: " + error;
    const Status parked = tx.ParkOutbox(row.seq, reason, now_ms);
    if (parked.code() == Code::kFailedPrecondition) return std::optional<int64_t>();
    EVIDENT_RETURN_IF_ERROR(parked);
    return std::optional<int64_t>(row.seq);
  }

  void NoteParked(int64_t seq, int64_t attempts, const std::string& error) {
    ++summary_.parked;
    if (options_.log == nullptr) return;
    std::fprintf(options_.log,
                 "evident relay: parked outbox row %lld after %lld attempts: the destination "
                 "refuses it for what it is (%s); the rows behind it go out. `evident outbox "
                 "list --parked` shows it, `evident outbox unpark` offers it again\n",
                 static_cast<long long>(seq), static_cast<long long>(attempts), error.c_str());
    std::fflush(options_.log);  // a log line: nothing to do if it cannot be written
  }

  Result<Round> Failed(std::string error) {
    summary_.last_error = std::move(error);
    return Round::kFailed;
  }

  // Deletes sent rows kept keep_sent_ms or longer (sent at or before now - keep_sent_ms, so
  // `--keep-sent 0s` deletes a row sent in this very millisecond too), in bounded transactions;
  // at most once per retention_interval_ms unless `now`.
  Status Retain(bool now) {
    if (!options_.delete_sent) return Status::Ok();
    const int64_t now_ms = clock_.NowMs();
    if (!now && now_ms - last_retention_ms_ < options_.retention_interval_ms) return Status::Ok();
    last_retention_ms_ = now_ms;
    while (!Cancelled()) {
      Result<int64_t> deleted = DeleteOnce(now_ms - options_.keep_sent_ms + 1);
      if (!deleted.ok()) return Busy(deleted.status()) ? Status::Ok() : deleted.status();
      summary_.deleted += *deleted;
      if (*deleted < options_.delete_count_max) break;
    }
    return Status::Ok();
  }

  Result<int64_t> DeleteOnce(int64_t sent_before_ms) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store_.Begin());
    EVIDENT_ASSIGN_OR_RETURN(const int64_t deleted,
                             tx->DeleteSentOutbox(sent_before_ms, options_.delete_count_max));
    EVIDENT_RETURN_IF_ERROR(tx->Commit());
    return deleted;
  }

  // The wait after the nth failed round in a row: doubling, capped, drawn from [half, all].
  int64_t BackoffMs(int failures) {
    int64_t ms = options_.backoff_initial_ms;
    for (int i = 1; i < failures && ms < options_.backoff_max_ms; ++i) ms *= 2;
    ms = std::min(ms, options_.backoff_max_ms);
    std::uniform_int_distribution<int64_t> pick(ms / 2, ms);
    return pick(jitter_);
  }

  Store& store_;
  const PublisherFactory& open_;
  const RelayOptions& options_;
  Clock& clock_;
  std::mt19937_64 jitter_;
  std::unique_ptr<Publisher> publisher_;
  // Two batches at most: the one in flight and the one being marked, in alternating slots.
  std::vector<OutboxRow> rows_[2];
  std::vector<OutgoingMessage> messages_[2];
  std::map<int64_t, int64_t> batch_started_ns_;  // by a batch's first seq, with a tracer
  int current_ = 0;                              // the slot of the batch in flight
  std::future<Result<size_t>> in_flight_;        // its Publish, on a worker thread
  RelaySummary summary_;
  std::optional<ProgressBar> progress_;  // --once with options_.progress
  int64_t pending_at_start_ = -1;
  int64_t last_retention_ms_ = 0;
};

}  // namespace

Result<RelaySummary> RunRelay(Store& store, const PublisherFactory& open_publisher,
                              const RelayOptions& options) {
  if (options.batch_count_max < 1 || options.delete_count_max < 1 || options.poll_ms < 0 ||
      options.backoff_initial_ms < 1 || options.backoff_max_ms < options.backoff_initial_ms ||
      options.keep_sent_ms < 0 || options.once_failures_max < 1 ||
      options.claim_partitions_max < 1 || options.claim_hold_ms < 1 || options.notify_wait_ms < 0 ||
      options.park_refused_after_attempts < 0 ||
      (options.partition_count.has_value() && *options.partition_count < 1)) {
    return Status::InvalidArgument(
        "relay options out of range: batch_count_max, delete_count_max, backoff_initial_ms, "
        "once_failures_max, claim_partitions_max and claim_hold_ms must be >= 1, "
        "partition_count >= 1, backoff_max_ms >= backoff_initial_ms, poll_ms, notify_wait_ms, "
        "keep_sent_ms and park_refused_after_attempts >= 0");
  }
  return Relay(store, open_publisher, options).Run();
}

std::string RelayDestination(int64_t partition, std::string_view type) {
  std::string out = "p" + std::to_string(partition);
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(type.find('.', begin), type.size());
    const std::string_view token = type.substr(begin, end - begin);
    out.push_back('.');
    if (token.empty()) out.push_back('_');
    for (const char c : token) out.push_back(SubjectTokenByte(c) ? c : '_');
    if (end == type.size()) break;
    begin = end + 1;
  }
  return out;
}

std::string RelayMessageId(std::string_view source, std::string_view id) {
  std::string out;
  out.reserve(source.size() + id.size() + 1);
  AppendEscaped(out, source);
  out.push_back(' ');
  AppendEscaped(out, id);
  return out;
}

}  // namespace evident
