// The PostgreSQL store's Snapshot: one REPEATABLE READ, READ ONLY transaction, ended (rolled
// back) when the snapshot is destroyed. Orders are the SQLite backend's.
#include <cassert>
#include <limits>

#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_transaction.h"

namespace evident::postgres {
namespace {

Params& OptText(Params& p, const std::optional<std::string>& value) { return p.OptText(value); }

}  // namespace

PgSnapshot::PgSnapshot(std::shared_ptr<Session> session) : session_(std::move(session)) {
  static const std::string kBegin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
  Db().Send(kBegin, Params());
}

PgSnapshot::~PgSnapshot() {
  static const std::string kEnd = "ROLLBACK";
  Db().Send(kEnd, Params());
  (void)Db().Sync();
  session_->open = Session::Open::kNone;
}

Result<std::optional<Projection>> PgSnapshot::FindProjection(std::string_view consumer,
                                                             std::string_view subject) {
  static const std::string kSql = std::string("SELECT ") + kProjectionColumns +
                                  " FROM projection WHERE subject=$2 AND consumer=$1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(kSql, Params().Text(consumer).Text(subject)));
  return ReadOne(rows, &ReadProjectionRow);
}

Result<std::optional<LedgerEntry>> PgSnapshot::FindLedger(std::string_view consumer,
                                                          std::string_view source,
                                                          std::string_view event_id) {
  return QueryLedger(Db(), consumer, source, event_id);
}

Result<Rows<Projection>> PgSnapshot::ProjectionsOf(std::string_view subject, int64_t rows_max) {
  static const std::string kSql =
      std::string("SELECT ") + kProjectionColumns +
      " FROM projection WHERE subject=$1 ORDER BY consumer COLLATE \"C\" LIMIT $2";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(kSql, Params().Text(subject).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadProjectionRow);
}

Result<Rows<LedgerEntry>> PgSnapshot::LedgerOf(std::string_view consumer, std::string_view subject,
                                               int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kLedgerColumns +
                                  " FROM ledger WHERE consumer=$1 AND subject=$2"
                                  " ORDER BY subject_version NULLS FIRST, committed_at_ms,"
                                  " source COLLATE \"C\", event_id COLLATE \"C\" LIMIT $3";
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql, Params().Text(consumer).Text(subject).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadLedger);
}

Result<Rows<DeferredEvent>> PgSnapshot::DeferredOf(std::string_view consumer,
                                                   std::string_view subject, int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kDeferredColumns +
                                  " FROM deferred WHERE subject=$2 AND consumer=$1"
                                  " ORDER BY subject_version LIMIT $3";
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql, Params().Text(consumer).Text(subject).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadDeferred);
}

Result<Rows<DeferredEvent>> PgSnapshot::AllDeferred(int64_t rows_max) {
  static const std::string kSql =
      std::string("SELECT ") + kDeferredColumns +
      " FROM deferred ORDER BY deadline_at_ms, consumer COLLATE \"C\", subject COLLATE \"C\","
      " subject_version LIMIT $1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, Params().Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadDeferred);
}

Result<Rows<QuarantineRecord>> PgSnapshot::QuarantineOf(std::string_view subject,
                                                        int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kQuarantineColumns +
                                  " FROM quarantine WHERE subject=$1 ORDER BY id LIMIT $2";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(kSql, Params().Text(subject).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadQuarantine);
}

Result<std::optional<QuarantineRecord>> PgSnapshot::FindQuarantine(int64_t id) {
  return QueryQuarantine(Db(), id);
}

Result<Rows<QuarantineRecord>> PgSnapshot::ListQuarantine(const QuarantineFilter& f,
                                                          QuarantineCursor after,
                                                          int64_t rows_max) {
  // Fixed text: an unset filter is NULL and matches every row.
  static const std::string kSql =
      std::string("SELECT ") + kQuarantineColumns +
      " FROM quarantine WHERE (first_seen_ms, id) > ($1::bigint, $2::bigint)"
      " AND ($3::text IS NULL OR consumer=$3::text) AND ($4::text IS NULL OR reason=$4::text)"
      " AND ($5::text IS NULL OR status=$5::text)"
      " AND ($6::bigint[] IS NULL OR id=ANY($6::bigint[]))"
      " ORDER BY first_seen_ms, id LIMIT $7";
  Params p;
  p.Int(after.first_seen_ms).Int(after.id);
  OptText(p, f.consumer);
  OptText(p, f.reason);
  f.status ? p.Text(QuarantineStatusName(*f.status)) : p.Null();
  f.ids.empty() ? p.Null() : p.IntArray(f.ids);
  p.Int(LimitOf(rows_max));
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, p));
  return ReadRows(rows, rows_max, &ReadQuarantine);
}

Result<Rows<QuarantineAudit>> PgSnapshot::AuditOf(int64_t record_id, int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kAuditColumns +
                                  " FROM quarantine_audit WHERE record_id=$1 ORDER BY seq LIMIT $2";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(kSql, Params().Int(record_id).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadAudit);
}

Result<Rows<GapRecord>> PgSnapshot::GapRecordsOf(std::string_view consumer,
                                                 std::string_view subject, int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kGapColumns +
                                  " FROM gap WHERE consumer=$1 AND subject=$2"
                                  " ORDER BY expected_version LIMIT $3";
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql, Params().Text(consumer).Text(subject).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadGap);
}

Result<Rows<GapRecord>> PgSnapshot::OpenGapRecords(int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kGapColumns +
                                  " FROM gap WHERE state<>'closed' ORDER BY deadline_at_ms,"
                                  " consumer COLLATE \"C\", subject COLLATE \"C\","
                                  " expected_version LIMIT $1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, Params().Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadGap);
}

Result<Rows<JournalEntry>> PgSnapshot::JournalOf(std::string_view consumer,
                                                 std::string_view subject, int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kJournalColumns +
                                  " FROM journal WHERE subject=$2 AND consumer=$1"
                                  " ORDER BY seq LIMIT $3";
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql, Params().Text(consumer).Text(subject).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadJournal);
}

Result<Rows<EvidenceRecord>> PgSnapshot::EvidenceOf(std::string_view consumer,
                                                    std::string_view subject, int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kEvidenceColumns +
                                  " FROM evidence WHERE subject=$2 AND consumer=$1"
                                  " ORDER BY name COLLATE \"C\" LIMIT $3";
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql, Params().Text(consumer).Text(subject).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadEvidence);
}

Result<std::optional<std::string>> PgSnapshot::GetPosition(std::string_view source) {
  return QueryPosition(Db(), source);
}

Result<std::vector<std::pair<std::string, int64_t>>> PgSnapshot::Counts() {
  static const std::string kSql =
      "SELECT (SELECT count(*) FROM ledger), (SELECT count(*) FROM projection),"
      " (SELECT count(*) FROM deferred), (SELECT count(*) FROM quarantine),"
      " (SELECT count(*) FROM journal), (SELECT count(*) FROM effect_intent),"
      " (SELECT count(*) FROM compensation)";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, Params()));
  if (rows.rows() != 1) return Status::Internal("counts returned no row");
  std::vector<std::pair<std::string, int64_t>> out;
  int column = 0;
  for (const char* table :
       {"ledger", "projection", "deferred", "quarantine", "journal", "effect", "compensation"}) {
    out.emplace_back(table, rows.Int(0, column++));
  }
  return out;
}

Result<Rows<OutboxRow>> PgSnapshot::OutboxRows(OutboxSelect select, int64_t after_seq,
                                               int64_t rows_max) {
  const auto build = [](const char* where) {
    return std::string("SELECT ") + kOutboxColumns + " FROM outbox WHERE " + where +
           "seq>$1 ORDER BY seq LIMIT $2";
  };
  static const std::string kAll = build("");
  static const std::string kPending = build("sent_at_ms IS NULL AND parked_at_ms IS NULL AND ");
  static const std::string kParked = build("parked_at_ms IS NOT NULL AND ");
  const std::string& sql = select == OutboxSelect::kPending  ? kPending
                           : select == OutboxSelect::kParked ? kParked
                                                             : kAll;
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(sql, Params().Int(after_seq).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadOutbox);
}

Result<OutboxStats> PgSnapshot::OutboxStatsNow(int64_t now_ms) {
  static const std::string kSql =
      "SELECT count(*) FILTER (WHERE sent_at_ms IS NULL AND parked_at_ms IS NULL),"
      " count(*) FILTER (WHERE sent_at_ms IS NOT NULL),"
      " min(created_at_ms) FILTER (WHERE sent_at_ms IS NULL AND parked_at_ms IS NULL),"
      " max(attempts) FILTER (WHERE sent_at_ms IS NULL AND parked_at_ms IS NULL),"
      " count(*) FILTER (WHERE parked_at_ms IS NOT NULL) FROM outbox";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, Params()));
  OutboxStats stats;
  if (rows.rows() != 1) return stats;
  stats.pending = rows.Int(0, 0);
  stats.sent = rows.Int(0, 1);
  if (const std::optional<int64_t> oldest = rows.OptInt(0, 2)) {
    stats.oldest_pending_age_ms = now_ms - *oldest;
  }
  stats.attempts_max = rows.OptInt(0, 3).value_or(0);
  stats.parked = rows.Int(0, 4);
  return stats;
}

Result<std::optional<OutboxRow>> PgSnapshot::FindOutbox(std::string_view source,
                                                        std::string_view event_id) {
  static const std::string kSql =
      std::string("SELECT ") + kOutboxColumns + " FROM outbox WHERE source=$1 AND event_id=$2";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(kSql, Params().Text(source).Text(event_id)));
  return ReadOne(rows, &ReadOutbox);
}

// Rare (an owner answering a replay request), over the rows the outbox keeps (sent rows are
// deleted in time): no index of its own; the source's rows are filtered by subject.
Result<Rows<OutboxRow>> PgSnapshot::OutboxOfSubject(std::string_view source,
                                                    std::string_view subject, int64_t from_version,
                                                    int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kOutboxColumns +
                                  " FROM outbox WHERE source=$1 AND subject=$2"
                                  " AND subject_version>=$3 ORDER BY subject_version, seq"
                                  " LIMIT $4";
  Params p;
  p.Text(source).Text(subject).Int(from_version).Int(LimitOf(rows_max));
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, p));
  return ReadRows(rows, rows_max, &ReadOutbox);
}

Result<Rows<ProjectionCorrection>> PgSnapshot::CorrectionsOf(std::string_view consumer,
                                                             std::string_view subject,
                                                             int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kCorrectionColumns +
                                  " FROM projection_correction WHERE subject=$2 AND consumer=$1"
                                  " ORDER BY seq LIMIT $3";
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql, Params().Text(consumer).Text(subject).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadCorrection);
}

Result<std::optional<EffectIntent>> PgSnapshot::FindIntent(std::string_view key) {
  return QueryIntent(Db(), key);
}

Result<Rows<EffectIntent>> PgSnapshot::ListIntents(const EffectFilter& f, int64_t after_seq,
                                                   int64_t rows_max) {
  static const std::string kSql =
      std::string("SELECT ") + kIntentColumns +
      " FROM effect_intent WHERE seq>$1::bigint"
      " AND ($2::text IS NULL OR state=$2::text) AND ($3::text IS NULL OR consumer=$3::text)"
      " AND ($4::text IS NULL OR effect=$4::text) AND ($5::text IS NULL OR subject=$5::text)"
      " ORDER BY seq LIMIT $6";
  Params p;
  p.Int(after_seq);
  f.state ? p.Text(EffectStateName(*f.state)) : p.Null();
  OptText(p, f.consumer);
  OptText(p, f.effect);
  OptText(p, f.subject);
  p.Int(LimitOf(rows_max));
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, p));
  return ReadRows(rows, rows_max, &ReadIntent);
}

Result<Rows<EffectLogEntry>> PgSnapshot::IntentLogOf(std::string_view key, int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kEffectLogColumns +
                                  " FROM effect_log WHERE key=$1 ORDER BY seq LIMIT $2";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(kSql, Params().Text(key).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadEffectLog);
}

Result<Rows<CompensationRecord>> PgSnapshot::ListCompensations(std::string_view consumer,
                                                               std::string_view subject,
                                                               int64_t after_seq,
                                                               int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kCompensationColumns +
                                  " FROM compensation WHERE seq>$1::bigint"
                                  " AND ($2::text='' OR consumer=$2::text)"
                                  " AND ($3::text='' OR subject=$3::text) ORDER BY seq LIMIT $4";
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows, Db().Query(kSql, Params().Int(after_seq).Text(consumer).Text(subject).Int(
                                              LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadCompensation);
}

}  // namespace evident::postgres
