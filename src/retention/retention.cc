// Retention over a Store (evident/retention.h): per kind, a look in a snapshot, the archive's
// lines made durable, then the removal in a transaction of its own.
#include "evident/retention.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "core/rfc3339.h"
#include "evident/effects.h"
#include "evident/evidence.h"
#include "evident/outbox.h"
#include "evident/quarantine.h"
#include "json/writer.h"

namespace evident {
namespace {

class FileArchive final : public RetentionArchive {
 public:
  FileArchive(std::string path, std::unique_ptr<WritableFile> file)
      : path_(std::move(path)), file_(std::move(file)) {}
  Status Append(std::string_view lines) override { return file_->Append(lines); }
  Status Sync() override { return file_->Sync(); }
  Status Close() override { return file_->Close(); }
  const std::string& name() const override { return path_; }

 private:
  std::string path_;
  std::unique_ptr<WritableFile> file_;
};

// The record of a journal entry or an effect log entry, in the shapes the evidence packet and
// `evident effects show` give them, with the keys that place them.
void JournalJson(const JournalEntry& j, std::string& out) {
  json::Writer w(out);
  w.BeginObject().Key("seq").Int(j.seq).Field("consumer", j.consumer);
  w.Field("outcome", OutcomeName(j.outcome)).Field("source", j.source).Field("id", j.event_id);
  w.Field("subject", j.subject).Key("subject_version");
  j.subject_version ? w.Int(*j.subject_version) : w.Null();
  w.Field("at", rfc3339::FormatMs(j.at_ms)).EndObject();
}
void EffectLogJson(const EffectLogEntry& l, std::string& out) {
  json::Writer w(out);
  w.BeginObject().Key("seq").Int(l.seq).Field("key", l.key);
  w.Field("action", EffectActionName(l.action)).Field("by", l.by);
  w.Field("state_after", EffectStateName(l.state_after)).Key("http_status");
  l.http_status ? w.Int(*l.http_status) : w.Null();
  w.Field("detail", l.detail).Field("at", rfc3339::FormatMs(l.at_ms)).EndObject();
}
// A quarantine record with its original bytes and its audit entries.
void QuarantineWithAuditJson(const QuarantineRecord& r, const std::vector<QuarantineAudit>& audit,
                             std::string& out) {
  std::string entries;
  json::Writer w(entries);
  w.BeginArray();
  for (const QuarantineAudit& a : audit) {
    if (a.record_id != r.id) continue;
    w.BeginObject().Field("action", QuarantineActionName(a.action)).Field("by", a.by);
    w.Field("note", a.note).Field("outcome", a.outcome).Field("reason", a.reason);
    w.Field("status_after", QuarantineStatusName(a.status_after));
    w.Field("at", rfc3339::FormatMs(a.at_ms)).EndObject();
  }
  w.EndArray();
  const size_t start = out.size();
  AppendQuarantineJson(r, true, out);
  assert(out.size() > start && out.back() == '}');
  out.pop_back();
  out += R"(,"audit":)" + entries + "}";
}

// An intent in the shape `evident effects show --format json` gives it, with the body its calls
// sent (the event, as CloudEvents structured JSON).
void IntentJson(const EffectIntent& e, std::string& out) {
  const size_t start = out.size();
  AppendEffectJson(e, nullptr, out);
  assert(out.size() > start && out.back() == '}');
  out.pop_back();
  out += R"(,"request":)";
  json::Writer(out).String(e.request);
  out.push_back('}');
}

// One archive line per record of `rows`.
std::string ArchiveLines(const RetainedRows& rows, int64_t horizon_ms) {
  std::string out;
  const std::string head = std::string(R"({"retained":")") +
                           std::string(RetainedKindName(rows.kind)) + R"(","horizon":")" +
                           rfc3339::FormatMs(horizon_ms) + R"(","record":)";
  const auto line = [&](auto&& write) {
    out += head;
    write();
    while (!out.empty() && out.back() == '\n') out.pop_back();
    out += "}\n";
  };
  for (const JournalEntry& j : rows.journal) line([&] { JournalJson(j, out); });
  for (const QuarantineRecord& r : rows.quarantine) {
    line([&] { QuarantineWithAuditJson(r, rows.audit, out); });
  }
  for (const GapRecord& g : rows.gaps) {
    line([&] {
      std::string record;
      AppendGapRecordJson(g, record);
      json::Writer w(out);
      w.BeginObject().Field("consumer", g.consumer).Field("subject", g.subject);
      w.Key("gap").Raw(record).EndObject();
    });
  }
  for (const EffectLogEntry& e : rows.effect_log) line([&] { EffectLogJson(e, out); });
  for (const EffectIntent& e : rows.intents) line([&] { IntentJson(e, out); });
  for (const OutboxRow& o : rows.outbox) line([&] { AppendOutboxRowJson(o, out); });
  for (const LedgerEntry& e : rows.ledger) line([&] { AppendReceiptJson(e, out); });
  return out;
}

// Counts what a run would remove of `kind`.
Status CountKind(Store& store, RetainedKind kind, int64_t horizon_ms, RetainSummary& summary) {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
  EVIDENT_ASSIGN_OR_RETURN(const int64_t count, snapshot->CountRetainable(kind, horizon_ms));
  summary.removed[static_cast<size_t>(kind)] = count;
  return Status::Ok();
}

}  // namespace

int64_t RetainSummary::total() const {
  int64_t sum = 0;
  for (const int64_t n : removed) sum += n;
  return sum;
}

// A new archive's name is made durable (its directory synced) before anything is removed; an
// archive whose last line was cut (a full disk, a kill inside a large write) gets the newline it
// lacks, so that the lines appended after it stay whole.
Result<std::unique_ptr<RetentionArchive>> OpenRetentionArchive(Env& env, const std::string& path) {
  EVIDENT_ASSIGN_OR_RETURN(const bool existed, env.FileExists(path));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env.NewAppendableFile(path));
  if (existed) {
    EVIDENT_ASSIGN_OR_RETURN(const std::optional<char> last, env.LastByte(path));
    if (last.has_value() && *last != '\n') {
      EVIDENT_RETURN_IF_ERROR(file->Append("\n"));
      EVIDENT_RETURN_IF_ERROR(file->Sync());
    }
  } else {
    const size_t slash = path.rfind('/');
    EVIDENT_RETURN_IF_ERROR(file->Sync());
    EVIDENT_RETURN_IF_ERROR(env.SyncDir(slash == std::string::npos ? "."
                                        : slash == 0               ? "/"
                                                                   : path.substr(0, slash)));
  }
  return std::unique_ptr<RetentionArchive>(std::make_unique<FileArchive>(path, std::move(file)));
}

namespace {

// Pauses `yield_percent` of `busy_ms` (at most kYieldMsMax) after a transaction, so that a run
// leaves the store's writers (and the machine's other core) the rest of the time; a stop ends
// the pause.
constexpr int64_t kYieldMsMax = 1000;
void YieldAfter(Clock& clock, int64_t busy_ms, const RetainOptions& options) {
  int64_t left = std::min(busy_ms * options.yield_percent / 100, kYieldMsMax);
  while (left > 0 && (options.cancel == nullptr || !options.cancel->cancelled())) {
    const int64_t step = std::min<int64_t>(left, 50);
    clock.SleepMs(step);
    left -= step;
  }
}

// Where a kind's looks go on, and whether none is left.
struct KindCursor {
  int64_t after = std::numeric_limits<int64_t>::min();
  LedgerKey after_key;  // kLedger's
  bool end = false;
};

// One batch of a kind: look, archive and sync, remove and commit. Each removal's transaction
// records the run as it stands (RetentionRun, one per run: the same start time), so the evidence
// names the run from its first removal on, whatever ends it.
Status RetainBatch(Store& store, RetainedKind kind, const RetainOptions& options,
                   RetentionArchive* archive, RetentionRun& run, RetainSummary& summary,
                   KindCursor& cursor) {
  RetainedRows rows;
  {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
    if (kind == RetainedKind::kLedger) {
      EVIDENT_ASSIGN_OR_RETURN(rows,
                               snapshot->RetainableLedger(summary.horizon_ms, cursor.after_key,
                                                          options.batch_count_max));
    } else {
      EVIDENT_ASSIGN_OR_RETURN(rows, snapshot->Retainable(kind, summary.horizon_ms, cursor.after,
                                                          options.batch_count_max));
    }
  }
  assert(rows.kind == kind);
  cursor.end = rows.end;
  cursor.after = rows.next;
  cursor.after_key = std::move(rows.next_key);
  if (rows.size() == 0) return Status::Ok();
  if (archive != nullptr) {
    EVIDENT_RETURN_IF_ERROR(archive->Append(ArchiveLines(rows, summary.horizon_ms)));
    EVIDENT_RETURN_IF_ERROR(archive->Sync());  // durable before the removal commits
    summary.archived += static_cast<int64_t>(rows.size());
  }
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
  EVIDENT_ASSIGN_OR_RETURN(const int64_t removed, tx->RemoveRetained(rows, summary.horizon_ms));
  assert(removed >= 0 && removed <= static_cast<int64_t>(rows.size()));
  if (removed > 0) {
    run.removed = summary.total() + removed;
    EVIDENT_RETURN_IF_ERROR(tx->RecordRetention(run));
  }
  EVIDENT_RETURN_IF_ERROR(tx->Commit());
  summary.removed[static_cast<size_t>(kind)] += removed;
  ++summary.transactions;
  return Status::Ok();
}

// One kind, batch by batch, each followed by its yield.
Status RetainKind(Store& store, RetainedKind kind, const RetainOptions& options, Clock& clock,
                  RetentionArchive* archive, RetentionRun& run, RetainSummary& summary) {
  for (KindCursor cursor; !cursor.end;) {
    if (options.cancel != nullptr && options.cancel->cancelled()) {
      summary.cancelled = true;
      return Status::Ok();
    }
    const int64_t started_ms = clock.MonotonicMs();
    EVIDENT_RETURN_IF_ERROR(RetainBatch(store, kind, options, archive, run, summary, cursor));
    YieldAfter(clock, clock.MonotonicMs() - started_ms, options);
  }
  return Status::Ok();
}

// Drops the digests committed before summary.forget_horizon_ms, a bounded look per transaction.
Status ForgetDigests(Store& store, const RetainOptions& options, Clock& clock, RetentionRun& run,
                     RetainSummary& summary) {
  if (options.dry_run) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
    EVIDENT_ASSIGN_OR_RETURN(summary.digests_forgotten,
                             snapshot->CountLedgerDigests(summary.forget_horizon_ms));
    return Status::Ok();
  }
  std::string after;
  for (bool end = false; !end;) {
    if (options.cancel != nullptr && options.cancel->cancelled()) {
      summary.cancelled = true;
      return Status::Ok();
    }
    const int64_t started_ms = clock.MonotonicMs();
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
    EVIDENT_ASSIGN_OR_RETURN(
        ForgottenDigests done,
        tx->ForgetLedgerDigests(summary.forget_horizon_ms, after, options.batch_count_max));
    if (done.forgotten > 0) {  // the evidence then says that digests before it are gone
      run.forgot_before_ms = summary.forget_horizon_ms;
      run.removed = summary.total();
      EVIDENT_RETURN_IF_ERROR(tx->RecordRetention(run));
    }
    EVIDENT_RETURN_IF_ERROR(tx->Commit());
    summary.digests_forgotten += done.forgotten;
    ++summary.transactions;
    end = done.end || done.next.empty();
    after = std::move(done.next);
    YieldAfter(clock, clock.MonotonicMs() - started_ms, options);
  }
  return Status::Ok();
}

}  // namespace

Result<RetainSummary> Retain(Store& store, const RetainOptions& options,
                             RetentionArchive* archive) {
  assert(options.older_than_ms > 0 && options.batch_count_max > 0 && options.yield_percent >= 0);
  if (options.forget_ledger_after_ms > 0 &&
      options.forget_ledger_after_ms < options.older_than_ms) {
    return Status::InvalidArgument(
        "a ledger digest is forgotten only past the horizon its receipt was compacted at: "
        "forget_ledger_after_ms must be at least older_than_ms");
  }
  Clock& clock = options.clock != nullptr ? *options.clock : SystemClock();
  RetainSummary summary;
  summary.dry_run = options.dry_run;
  const int64_t now_ms = clock.NowMs();
  summary.horizon_ms = now_ms - options.older_than_ms;
  RetentionRun run{.at_ms = now_ms,
                   .horizon_ms = summary.horizon_ms,
                   .archive = archive != nullptr ? archive->name() : std::string()};
  for (const RetainedKind kind : kRetainedKinds) {
    if (!options.kinds.empty() &&
        std::find(options.kinds.begin(), options.kinds.end(), kind) == options.kinds.end()) {
      continue;
    }
    if (options.dry_run) {
      EVIDENT_RETURN_IF_ERROR(CountKind(store, kind, summary.horizon_ms, summary));
      continue;
    }
    EVIDENT_RETURN_IF_ERROR(RetainKind(store, kind, options, clock, archive, run, summary));
    if (summary.cancelled) return summary;
  }
  if (options.forget_ledger_after_ms > 0) {
    summary.forget_horizon_ms = now_ms - options.forget_ledger_after_ms;
    EVIDENT_RETURN_IF_ERROR(ForgetDigests(store, options, clock, run, summary));
  }
  return summary;
}

}  // namespace evident
