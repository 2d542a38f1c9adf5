// Replay and discard of quarantined inputs (evident/quarantine.h).
#include "evident/quarantine.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include "core/base64.h"
#include "core/join.h"
#include "core/rfc3339.h"
#include "evident/envelope.h"
#include "evident/progress.h"
#include "json/writer.h"

namespace evident {
namespace {

constexpr int64_t kReplayBatchCountLimit = 10000;
constexpr int64_t kDryRunRecordsMax = 100000;

// What one record's replay came to: the decision that speaks for the record, and what that
// makes of its status.
struct RecordVerdict {
  Outcome outcome = Outcome::kRejected;
  std::string reason;
  bool settled = false;  // the input went forward: the record is replayed
};

// The decision for the record's own consumer speaks for it (drained successors are extra); for
// a record refused before any consumer was chosen, the input went forward once some consumer
// decided it. A record of a consumer whose input the envelope now refuses gets that refusal,
// made for that consumer (Pipeline::DecideFor), and stays as it was.
RecordVerdict Judge(const QuarantineRecord& record, const std::vector<Decision>& decisions) {
  RecordVerdict v;
  assert(!decisions.empty());  // DecideFor decides every input at least once
  for (const Decision& d : decisions) {
    if (d.drained || d.consumer != record.consumer) continue;
    v.outcome = d.outcome;
    v.reason = d.reason;
    v.settled = d.outcome == Outcome::kApplied || d.outcome == Outcome::kDeferred ||
                d.outcome == Outcome::kDuplicate;
    return v;
  }
  v.outcome = decisions.front().outcome;
  v.reason = decisions.front().reason;
  // No decision without a consumer: every one was made by a consumer, so the envelope and the
  // routing passed (a record with a consumer always finds its own decision above).
  v.settled = record.consumer.empty();
  return v;
}

// One replayed record, for the outcomes output.
struct ReplayLine {
  QuarantineRecord record;  // as it stands after the replay
  RecordVerdict verdict;
  std::vector<Decision> decisions;
};

void AppendReplayLine(const ReplayLine& line, bool dry_run, std::string& out) {
  json::Writer w(out);
  w.BeginObject().Key("quarantine_id").Int(line.record.id);
  w.Key("consumer");
  line.record.consumer.empty() ? w.Null() : w.String(line.record.consumer);
  w.Field("source", line.record.source).Field("event_id", line.record.event_id);
  w.Field("outcome", OutcomeName(line.verdict.outcome)).Key("reason");
  line.verdict.reason.empty() ? w.Null() : w.String(line.verdict.reason);
  w.Field("status", QuarantineStatusName(line.record.status));
  w.Key("attempts").Int(line.record.attempts).Field("dry_run", dry_run);
  w.Key("decisions").BeginArray();
  for (const Decision& d : line.decisions) {
    std::string one;
    AppendDecisionJson(d, one);
    w.Raw(one);
  }
  w.EndArray().EndObject();
  out.push_back('\n');
}

class Replay {
 public:
  Replay(Pipeline& pipeline, Store& store, const ReplayOptions& options)
      : pipeline_(pipeline),
        store_(store),
        options_(options),
        clock_(options.clock != nullptr ? *options.clock : SystemClock()),
        deciding_(pipeline.ConsumerIds()) {}

  Result<ReplaySummary> Run() {
    EVIDENT_ASSIGN_OR_RETURN(slot_, pipeline_.NewPreparedEvent());
    QuarantineFilter filter = options_.select;
    if (filter.ids.empty() && !filter.status) filter.status = QuarantineStatus::kOpen;
    started_ms_ = clock_.NowMs();
    if (options_.progress != nullptr) progress_.emplace(options_.progress, "records", clock_);
    const Result<ReplaySummary> done = options_.dry_run ? DryRun(filter) : Pages(filter);
    if (progress_) {
      ShowProgress();
      progress_->Finish();
    }
    return done;
  }

 private:
  void ShowProgress() {
    const auto total = static_cast<int64_t>(options_.select.ids.size());
    progress_->Update(summary_.records, total > 0 ? total : -1, summary_.records,
                      std::to_string(summary_.refused) + " refused again");
  }

  // The selected records, page by page, a transaction per page.
  Result<ReplaySummary> Pages(const QuarantineFilter& filter) {
    QuarantineCursor after;
    while (true) {
      if (options_.cancel != nullptr && options_.cancel->cancelled()) {
        summary_.stopped = true;
        break;
      }
      Rows<QuarantineRecord> page;
      {
        EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store_.Read());
        EVIDENT_ASSIGN_OR_RETURN(page,
                                 snapshot->ListQuarantine(filter, after, options_.batch_count_max));
      }
      const bool new_since = StartedBefore(page.rows);
      if (page.rows.empty()) break;
      after = {page.rows.back().first_seen_ms, page.rows.back().id};
      EVIDENT_RETURN_IF_ERROR(BatchRetried(page.rows));
      if (progress_ && progress_->Due()) ShowProgress();
      if (!page.truncated || new_since) break;
    }
    return summary_;
  }

  // Every selected record decided in one transaction that is rolled back, so that each decision
  // sees the ones before it, as a real replay would. A store has one open handle at a time, so
  // the records are listed first, all of them: at most kDryRunRecordsMax.
  Result<ReplaySummary> DryRun(const QuarantineFilter& filter) {
    std::vector<QuarantineRecord> all;
    {
      EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store_.Read());
      EVIDENT_ASSIGN_OR_RETURN(Rows<QuarantineRecord> rows,
                               snapshot->ListQuarantine(filter, {}, kDryRunRecordsMax));
      if (rows.truncated) {
        return Status::InvalidArgument("a dry run decides at most " +
                                       std::to_string(kDryRunRecordsMax) +
                                       " records; narrow the selection");
      }
      all = std::move(rows.rows);
      StartedBefore(all);
    }
    if (all.empty()) return summary_;
    EVIDENT_RETURN_IF_ERROR(Batch(all));
    EVIDENT_RETURN_IF_ERROR(tx_->Rollback());
    tx_.reset();
    EVIDENT_RETURN_IF_ERROR(WriteLines());
    return summary_;
  }

  // Drops the records first seen since this replay began (a selection by consumer, reason or
  // --all would otherwise take the records its own refusals open, and replay them again);
  // true when it dropped any: the list, in first-seen order, has no more for this run.
  bool StartedBefore(std::vector<QuarantineRecord>& records) const {
    if (!options_.select.ids.empty()) return false;
    const size_t before = records.size();
    std::erase_if(records,
                  [&](const QuarantineRecord& r) { return r.first_seen_ms >= started_ms_; });
    return records.size() < before;
  }

  // A batch that met another writer (a write conflict, a deadlock, a lock held past the store's
  // wait: kAborted, kUnavailable) was rolled back whole: it is decided again, with backoff, as
  // a consume run's batch is (busy_retry, kAborted added).
  Status BatchRetried(const std::vector<QuarantineRecord>& records) {
    const ReplaySummary before = summary_;
    const RetryPolicy policy = RetryingConflicts(options_.busy_retry);
    return RetryBusy(policy, clock_, options_.cancel, [&]() -> Status {
      summary_ = before;
      lines_.clear();  // written after each commit: none are left from before this batch
      return Batch(records);
    });
  }

  // Decides a batch of records in one transaction (a dry run: all of them in one it never
  // commits).
  Status Batch(const std::vector<QuarantineRecord>& records) {
    if (tx_ == nullptr) {
      EVIDENT_RETURN_IF_ERROR(
          RetryBusy(options_.busy_retry, clock_, options_.cancel, [this]() -> Status {
            Result<std::unique_ptr<Transaction>> begun = store_.Begin();
            if (!begun.ok()) return begun.status();
            tx_ = std::move(begun).value();
            return tx_->WillDecide(deciding_);
          }));
    }
    for (const QuarantineRecord& listed : records) {
      if (Status s = One(listed); !s.ok()) {
        (void)tx_->Rollback();
        tx_.reset();
        return s.Annotate("replaying quarantine record " + std::to_string(listed.id) +
                          " (its batch was rolled back)");
      }
    }
    if (options_.dry_run) return Status::Ok();
    const Status committed = tx_->Commit();
    tx_.reset();
    if (!committed.ok()) return committed.Annotate("committing a replay batch");
    ++summary_.batches;
    return WriteLines();
  }

  // One record: its bytes through the pipeline for its consumer, its status, its audit entry.
  Status One(const QuarantineRecord& listed) {
    // Read again in the transaction: another replay may have settled it since the listing.
    EVIDENT_ASSIGN_OR_RETURN(std::optional<QuarantineRecord> record,
                             tx_->FindQuarantine(listed.id));
    if (!record) return Status::Ok();
    if (options_.select.ids.empty() && record->status != listed.status) return Status::Ok();
    const int64_t now_ms = clock_.NowMs();
    decisions_.clear();
    pipeline_.Prepare(*slot_, record->raw);
    if (slot_->rejection() != nullptr && !record->consumer.empty()) {
      // The envelope refuses what a consumer once got (a smaller size limit, another profile):
      // the refusal is an attempt on this record, whose identity the refusal may not read.
      EVIDENT_RETURN_IF_ERROR(EnvelopeRefusal(*record, *slot_->rejection(), now_ms));
    } else {
      EVIDENT_RETURN_IF_ERROR(pipeline_.DecideFor(*tx_, *slot_, record->consumer,
                                                  record->input_index, now_ms, decisions_));
    }
    const RecordVerdict verdict = Judge(*record, decisions_);
    if (verdict.settled) {
      EVIDENT_RETURN_IF_ERROR(tx_->SetQuarantineStatus(record->id, QuarantineStatus::kReplayed));
    }
    // Refused again: the pipeline counted the attempt on this same record.
    EVIDENT_ASSIGN_OR_RETURN(record, tx_->FindQuarantine(listed.id));
    assert(record.has_value());
    EVIDENT_RETURN_IF_ERROR(
        tx_->AuditQuarantine({.record_id = record->id,
                              .action = QuarantineAction::kReplay,
                              .by = options_.by,
                              .note = options_.note,
                              .outcome = std::string(OutcomeName(verdict.outcome)),
                              .reason = verdict.settled ? "" : verdict.reason,
                              .status_after = record->status,
                              .at_ms = now_ms}));
    ++summary_.records;
    if (!verdict.settled) {
      ++summary_.refused;
    } else if (verdict.outcome == Outcome::kDuplicate) {
      ++summary_.duplicates;
    } else {
      ++summary_.replayed;
    }
    if (options_.outcomes != nullptr) {
      record->raw.clear();  // not printed: the line names the record
      lines_.push_back({std::move(*record), verdict, std::move(decisions_)});
      decisions_ = {};
    }
    return Status::Ok();
  }

  Status EnvelopeRefusal(const QuarantineRecord& record, const Rejection& r, int64_t now_ms) {
    Decision d;
    d.index = record.input_index;
    d.consumer = record.consumer;
    d.outcome = Outcome::kRejected;
    d.reason = std::string(ReasonCode(r.reason));
    d.message = r.message;
    d.subject = record.subject;
    QuarantineRecord attempt = record;
    attempt.outcome = d.outcome;
    attempt.reason = d.reason;
    attempt.message = d.message;
    attempt.last_seen_ms = now_ms;
    EVIDENT_RETURN_IF_ERROR(tx_->Quarantine(attempt).status());
    decisions_.push_back(std::move(d));
    return Status::Ok();
  }

  Status WriteLines() {
    if (options_.outcomes == nullptr) return Status::Ok();
    std::string text;
    for (const ReplayLine& line : lines_) AppendReplayLine(line, options_.dry_run, text);
    lines_.clear();
    if (text.empty()) return Status::Ok();
    Status written = options_.outcomes->Append(text);
    if (written.ok()) written = options_.outcomes->Flush();
    if (!written.ok()) {
      return Status::IoError("cannot write the replay outcomes: " + written.message() +
                             (options_.dry_run ? ""
                                               : " (the batch is committed; `evident evidence` "
                                                 "and `quarantine show` show it)"));
    }
    return Status::Ok();
  }

  Pipeline& pipeline_;
  Store& store_;
  const ReplayOptions& options_;
  Clock& clock_;
  const std::vector<std::string> deciding_;  // the consumers a batch locks (WillDecide)
  std::unique_ptr<PreparedEvent> slot_;
  std::unique_ptr<Transaction> tx_;
  std::vector<Decision> decisions_;
  std::vector<ReplayLine> lines_;
  ReplaySummary summary_;
  std::optional<ProgressBar> progress_;  // with options_.progress
  int64_t started_ms_ = 0;
};

Status CheckActor(const std::string& by, const std::string& note) {
  if (by.empty()) return Status::InvalidArgument("say who does this (--by)");
  if (note.empty()) return Status::InvalidArgument("say why (--note)");
  return Status::Ok();
}

// The consumers (or reasons) of the first `records_max` records, read a page at a time: a
// record keeps its input's bytes (up to an event's size limit), so reading them all at once
// could hold gigabytes for a message.
Result<std::set<std::string>> NamesOfRecords(QuarantineReads& snapshot, bool by_consumer,
                                             int64_t records_max) {
  constexpr int64_t kPageRowsMax = 100;
  std::set<std::string> names;
  QuarantineCursor after;
  for (int64_t read = 0; read < records_max;) {
    EVIDENT_ASSIGN_OR_RETURN(
        const Rows<QuarantineRecord> page,
        snapshot.ListQuarantine({}, after, std::min(kPageRowsMax, records_max - read)));
    for (const QuarantineRecord& r : page.rows) {
      names.insert(by_consumer ? (r.consumer.empty() ? "(no consumer)" : r.consumer) : r.reason);
    }
    if (page.rows.empty() || !page.truncated) break;
    read += static_cast<int64_t>(page.rows.size());
    after = {page.rows.back().first_seen_ms, page.rows.back().id};
  }
  return names;
}

// A --consumer or --reason that no record has, whatever its status, is most likely misspelt:
// kNotFound naming the values the records do have (among the first kNamesScanMax), rather than a
// replay of nothing that reads like success.
Status CheckFilterNamesRecords(Store& store, const ReplayOptions& options) {
  constexpr int64_t kNamesScanMax = 10'000;
  if (!options.select.consumer && !options.select.reason) return Status::Ok();
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
  for (const bool by_consumer : {true, false}) {
    const std::optional<std::string>& wanted =
        by_consumer ? options.select.consumer : options.select.reason;
    if (!wanted) continue;
    QuarantineFilter one;
    (by_consumer ? one.consumer : one.reason) = wanted;
    EVIDENT_ASSIGN_OR_RETURN(const Rows<QuarantineRecord> found,
                             snapshot->ListQuarantine(one, {}, 1));
    if (!found.rows.empty()) continue;
    EVIDENT_ASSIGN_OR_RETURN(const std::set<std::string> names,
                             NamesOfRecords(*snapshot, by_consumer, kNamesScanMax));
    const std::string known = Join(names);
    return Status::NotFound(std::string("no quarantine record has ") +
                            (by_consumer ? "consumer '" : "reason '") + *wanted + "' (" +
                            (names.empty() ? std::string("the quarantine is empty")
                                           : (by_consumer ? "consumers: " : "reasons: ") + known) +
                            "; nothing was replayed)");
  }
  return Status::Ok();
}

}  // namespace

Result<ReplaySummary> ReplayQuarantine(Pipeline& pipeline, Store& store,
                                       const ReplayOptions& options) {
  EVIDENT_RETURN_IF_ERROR(CheckActor(options.by, options.note));
  if (options.batch_count_max < 1 || options.batch_count_max > kReplayBatchCountLimit) {
    return Status::InvalidArgument("batch_count_max must be 1 to " +
                                   std::to_string(kReplayBatchCountLimit));
  }
  if (!options.select.ids.empty()) {  // every id named must be a record: say which is not
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
    for (const int64_t id : options.select.ids) {
      EVIDENT_ASSIGN_OR_RETURN(const std::optional<QuarantineRecord> record,
                               snapshot->FindQuarantine(id));
      if (!record) {
        return Status::NotFound("no quarantine record " + std::to_string(id) +
                                " (nothing was replayed)");
      }
    }
  }
  if (options.select.ids.empty()) EVIDENT_RETURN_IF_ERROR(CheckFilterNamesRecords(store, options));
  Replay replay(pipeline, store, options);
  return replay.Run();
}

Result<int64_t> DiscardQuarantine(Store& store, const std::vector<int64_t>& ids,
                                  const std::string& by, const std::string& note, int64_t now_ms) {
  EVIDENT_RETURN_IF_ERROR(CheckActor(by, note));
  std::vector<int64_t> unique = ids;  // an id named twice is discarded once
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
  for (const int64_t id : unique) {
    EVIDENT_ASSIGN_OR_RETURN(std::optional<QuarantineRecord> record, tx->FindQuarantine(id));
    if (!record) return Status::NotFound("no quarantine record " + std::to_string(id));
    if (record->status != QuarantineStatus::kOpen) {
      return Status::FailedPrecondition("quarantine record " + std::to_string(id) + " is " +
                                        std::string(QuarantineStatusName(record->status)) +
                                        "; only open records are discarded");
    }
    EVIDENT_RETURN_IF_ERROR(tx->SetQuarantineStatus(id, QuarantineStatus::kDiscarded));
    EVIDENT_RETURN_IF_ERROR(tx->AuditQuarantine({.record_id = id,
                                                 .action = QuarantineAction::kDiscard,
                                                 .by = by,
                                                 .note = note,
                                                 .outcome = "discarded",
                                                 .status_after = QuarantineStatus::kDiscarded,
                                                 .at_ms = now_ms}));
  }
  EVIDENT_RETURN_IF_ERROR(tx->Commit());
  return static_cast<int64_t>(unique.size());
}

void AppendQuarantineJson(const QuarantineRecord& r, bool with_bytes, std::string& out) {
  json::Writer w(out);
  const auto text_or_null = [&](std::string_view key, const std::string& value) {
    w.Key(key);
    value.empty() ? w.Null() : w.String(value);
  };
  const auto int_or_null = [&](std::string_view key, const std::optional<int64_t>& value) {
    w.Key(key);
    value ? w.Int(*value) : w.Null();
  };
  w.BeginObject().Key("id").Int(r.id);
  text_or_null("consumer", r.consumer);
  text_or_null("source", r.source);
  text_or_null("event_id", r.event_id);
  text_or_null("type", r.type);
  int_or_null("schema_version", r.schema_version);
  text_or_null("subject", r.subject);
  int_or_null("subject_version", r.subject_version);
  w.Field("outcome", OutcomeName(r.outcome)).Field("reason", r.reason);
  w.Field("message", r.message).Key("attempts").Int(r.attempts);
  w.Field("first_seen", rfc3339::FormatMs(r.first_seen_ms));
  w.Field("last_seen", rfc3339::FormatMs(r.last_seen_ms));
  w.Field("status", QuarantineStatusName(r.status));
  if (with_bytes) {
    std::string encoded;
    AppendBase64(r.raw, encoded);
    w.Field("original_bytes_base64", encoded);
  }
  w.EndObject();
}

}  // namespace evident
