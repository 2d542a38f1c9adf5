// The PostgreSQL store's retention calls (store_retention.h): the same rules and orders as the
// SQLite backend's. A look reads at most rows_max + 1 candidates by an index; a removal is one
// statement per kind (a gap, keyed by three columns, one per record), each checking the rule
// again, so a record changed since it was read stays.
#include <cassert>
#include <type_traits>

#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_transaction.h"

namespace evident::postgres {
namespace {

// The candidates' query: ?1 the horizon, ?2 the cursor, ?3 the limit; its column `retainable`
// (after the kind's columns, at index `flag`) says whether each is.
struct LookSql {
  const std::string& sql;
  int flag;
};

template <typename Row>
Result<RetainedRows> Look(Connection& db, const LookSql& look, int64_t before_ms, int64_t after,
                          int64_t rows_max, Row (*read)(const Rowset&, int, Status&),
                          std::vector<Row> RetainedRows::*kept, RetainedRows out) {
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      db.Query(look.sql, Params().Int(before_ms).Int(after).Int(LimitOf(rows_max))));
  Status error;
  const int looked = std::min<int>(rows.rows(), static_cast<int>(rows_max));
  out.end = rows.rows() <= rows_max;
  for (int i = 0; i < looked; ++i) {
    Row row = read(rows, i, error);
    if constexpr (std::is_same_v<Row, QuarantineRecord>) {
      out.next = row.id;
    } else if constexpr (std::is_same_v<Row, JournalEntry> || std::is_same_v<Row, EffectLogEntry>) {
      out.next = row.seq;
    }
    if (rows.Int(i, look.flag) != 0) (out.*kept).push_back(std::move(row));
  }
  if (!error.ok()) return error;
  if (!rows.problem().ok()) return rows.problem();
  return out;
}

const std::string kJournalLook =
    std::string("SELECT ") + kJournalColumns +
    ", CASE WHEN at_ms < $1 AND seq < (SELECT max(seq) FROM journal) THEN 1"
    " ELSE 0 END FROM journal"
    " WHERE seq > $2 ORDER BY seq LIMIT $3";
const std::string kQuarantineLook =
    std::string("SELECT ") + kQuarantineColumns +
    ", CASE WHEN status<>'open' AND last_seen_ms < $1 AND id < (SELECT max(id) FROM"
    " quarantine) AND NOT EXISTS (SELECT 1 FROM"
    " quarantine_audit a WHERE a.record_id=q.id AND a.at_ms >= $1) THEN 1 ELSE 0 END"
    " FROM quarantine q WHERE id > $2 ORDER BY id LIMIT $3";
const std::string kGapLook = std::string("SELECT ") + kGapColumns +
                             ", 1 FROM gap WHERE state='closed' AND closed_at_ms < $1"
                             " AND NOT EXISTS (SELECT 1 FROM deferred d WHERE"
                             " d.consumer=gap.consumer AND d.subject=gap.subject)"
                             " AND $2::bigint = $2::bigint ORDER BY closed_at_ms,"
                             " consumer COLLATE \"C\", subject COLLATE \"C\", expected_version"
                             " LIMIT $3";
const std::string kEffectLogLook =
    "SELECT l.seq, l.key, l.action, l.by_whom, l.state_after, l.http_status, l.detail, l.at_ms,"
    " CASE WHEN i.state IN ('done','failed','withdrawn') AND i.settled_at_ms < $1"
    " AND l.seq < (SELECT max(seq) FROM effect_log) THEN 1"
    " ELSE 0 END FROM effect_log l LEFT JOIN effect_intent i ON i.key=l.key WHERE l.seq > $2"
    " ORDER BY l.seq LIMIT $3";
const std::string kOutboxLook = std::string("SELECT ") + kOutboxColumns +
                                ", 1 FROM outbox WHERE sent_at_ms IS NOT NULL AND"
                                " sent_at_ms < $1 AND $2::bigint = $2::bigint"
                                " ORDER BY sent_at_ms, seq LIMIT $3";

}  // namespace

Result<RetainedRows> PgSnapshot::Retainable(RetainedKind kind, int64_t before_ms, int64_t after,
                                            int64_t rows_max) {
  assert(rows_max > 0);
  RetainedRows out{.kind = kind};
  switch (kind) {
    case RetainedKind::kJournal:
      return Look(Db(), {kJournalLook, 8}, before_ms, after, rows_max, &ReadJournal,
                  &RetainedRows::journal, std::move(out));
    case RetainedKind::kQuarantine: {
      EVIDENT_ASSIGN_OR_RETURN(
          out, Look(Db(), {kQuarantineLook, 17}, before_ms, after, rows_max, &ReadQuarantine,
                    &RetainedRows::quarantine, std::move(out)));
      for (const QuarantineRecord& r : out.quarantine) {
        EVIDENT_ASSIGN_OR_RETURN(Rows<QuarantineAudit> audit,
                                 AuditOf(r.id, std::numeric_limits<int64_t>::max() - 1));
        for (QuarantineAudit& a : audit.rows) out.audit.push_back(std::move(a));
      }
      return out;
    }
    case RetainedKind::kGap:
      return Look(Db(), {kGapLook, 18}, before_ms, after, rows_max, &ReadGap, &RetainedRows::gaps,
                  std::move(out));
    case RetainedKind::kEffectLog:
      return Look(Db(), {kEffectLogLook, 8}, before_ms, after, rows_max, &ReadEffectLog,
                  &RetainedRows::effect_log, std::move(out));
    case RetainedKind::kOutbox:
      return Look(Db(), {kOutboxLook, 17}, before_ms, after, rows_max, &ReadOutbox,
                  &RetainedRows::outbox, std::move(out));
  }
  return Status::Internal("unknown retained kind");
}

Result<int64_t> PgSnapshot::CountRetainable(RetainedKind kind, int64_t before_ms) {
  static const std::string kSql[] = {
      "SELECT count(*) FROM journal WHERE at_ms < $1 AND seq < (SELECT max(seq) FROM journal)",
      "SELECT count(*) FROM quarantine q WHERE status<>'open' AND last_seen_ms < $1"
      " AND id < (SELECT max(id) FROM quarantine) AND NOT"
      " EXISTS (SELECT 1 FROM quarantine_audit a WHERE a.record_id=q.id AND a.at_ms >= $1)",
      "SELECT count(*) FROM gap WHERE state='closed' AND closed_at_ms < $1 AND NOT EXISTS"
      " (SELECT 1 FROM deferred d WHERE d.consumer=gap.consumer AND d.subject=gap.subject)",
      "SELECT count(*) FROM effect_log l JOIN effect_intent i ON i.key=l.key"
      " WHERE i.state IN ('done','failed','withdrawn') AND i.settled_at_ms < $1"
      " AND l.seq < (SELECT max(seq) FROM effect_log)",
      "SELECT count(*) FROM outbox WHERE sent_at_ms IS NOT NULL AND sent_at_ms < $1"};
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(kSql[static_cast<size_t>(kind)], Params().Int(before_ms)));
  if (rows.rows() != 1) return Status::Internal("a count answered no row");
  return rows.Int(0, 0);
}

namespace {

template <typename Row, typename Key>
std::vector<int64_t> KeysOf(const std::vector<Row>& rows, Key key) {
  std::vector<int64_t> out;
  out.reserve(rows.size());
  for (const Row& row : rows) out.push_back(key(row));
  return out;
}

const std::string kJournalRemove =
    "DELETE FROM journal WHERE seq = ANY($1) AND at_ms < $2 AND seq < (SELECT max(seq) FROM"
    " journal)";
const std::string kQuarantineRemove =
    "WITH gone AS (DELETE FROM quarantine q WHERE id = ANY($1) AND status<>'open' AND"
    " id < (SELECT max(id) FROM quarantine) AND"
    " last_seen_ms < $2 AND NOT EXISTS (SELECT 1 FROM quarantine_audit a WHERE"
    " a.record_id=q.id AND a.at_ms >= $2) RETURNING id), audit AS (DELETE FROM quarantine_audit"
    " WHERE record_id IN (SELECT id FROM gone)) SELECT count(*) FROM gone";
const std::string kQuarantineLock =
    "WITH locked AS (SELECT id FROM quarantine WHERE id = ANY($1) AND $2::bigint = $2::bigint"
    " ORDER BY id FOR UPDATE) SELECT count(*) FROM locked";
const std::string kGapRemove =
    "DELETE FROM gap WHERE consumer=$1 AND subject=$2 AND expected_version=$3"
    " AND state='closed' AND closed_at_ms < $4 AND NOT EXISTS (SELECT 1 FROM deferred d"
    " WHERE d.consumer=$1 AND d.subject=$2)";
const std::string kEffectLogRemove =
    "DELETE FROM effect_log l WHERE seq = ANY($1) AND seq < (SELECT max(seq) FROM effect_log)"
    " AND EXISTS (SELECT 1 FROM effect_intent i"
    " WHERE i.key=l.key AND i.state IN ('done','failed','withdrawn') AND i.settled_at_ms < $2)";
const std::string kOutboxRemove =
    "DELETE FROM outbox WHERE seq = ANY($1) AND sent_at_ms IS NOT NULL AND sent_at_ms < $2";

}  // namespace

Result<int64_t> PgTransaction::RemoveRetained(const RetainedRows& rows, int64_t before_ms) {
  int64_t removed = 0;
  // `counted`: the statement answers its count in a row (a DELETE in a WITH does not report it).
  const auto by_keys = [&](const std::string& sql, std::vector<int64_t> keys,
                           bool counted) -> Status {
    if (keys.empty()) return Status::Ok();
    EVIDENT_ASSIGN_OR_RETURN(const Rowset done,
                             Db().Query(sql, Params().IntArray(keys).Int(before_ms)));
    removed += counted ? done.Int(0, 0) : done.affected();
    return Status::Ok();
  };
  // The records locked first, in a statement of their own: the delete's snapshot, taken after
  // the lock, then sees an audit entry a replay or discard committed meanwhile.
  EVIDENT_RETURN_IF_ERROR(
      by_keys(kQuarantineLock,
              KeysOf(rows.quarantine, [](const QuarantineRecord& r) { return r.id; }), true));
  removed = 0;
  const auto seq = [](const auto& row) { return row.seq; };
  EVIDENT_RETURN_IF_ERROR(by_keys(kJournalRemove, KeysOf(rows.journal, seq), false));
  EVIDENT_RETURN_IF_ERROR(
      by_keys(kQuarantineRemove,
              KeysOf(rows.quarantine, [](const QuarantineRecord& r) { return r.id; }), true));
  EVIDENT_RETURN_IF_ERROR(by_keys(kEffectLogRemove, KeysOf(rows.effect_log, seq), false));
  EVIDENT_RETURN_IF_ERROR(by_keys(kOutboxRemove, KeysOf(rows.outbox, seq), false));
  for (const GapRecord& g : rows.gaps) {
    EVIDENT_ASSIGN_OR_RETURN(
        const Rowset done,
        Db().Query(
            kGapRemove,
            Params().Text(g.consumer).Text(g.subject).Int(g.expected_version).Int(before_ms)));
    removed += done.affected();
  }
  return removed;
}

Status PgTransaction::RecordRetention(const RetentionRun& run) {
  static const std::string kSql =
      "INSERT INTO retention_run(at_ms, horizon_ms, archive, removed) VALUES($1, $2, $3, $4)"
      " ON CONFLICT (at_ms) DO UPDATE SET horizon_ms=excluded.horizon_ms,"
      " archive=excluded.archive, removed=excluded.removed";
  return Db()
      .Query(kSql, Params().Int(run.at_ms).Int(run.horizon_ms).Text(run.archive).Int(run.removed))
      .status();
}

Result<std::optional<RetentionRun>> PgSnapshot::LatestRetention() {
  static const std::string kSql =
      "SELECT seq, at_ms, horizon_ms, archive, removed FROM retention_run ORDER BY seq DESC"
      " LIMIT 1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, Params()));
  if (rows.rows() == 0) return std::optional<RetentionRun>();
  RetentionRun run{.seq = rows.Int(0, 0),
                   .at_ms = rows.Int(0, 1),
                   .horizon_ms = rows.Int(0, 2),
                   .archive = std::string(rows.Text(0, 3)),
                   .removed = rows.Int(0, 4)};
  if (!rows.problem().ok()) return rows.problem();
  return std::optional<RetentionRun>(std::move(run));
}

}  // namespace evident::postgres
