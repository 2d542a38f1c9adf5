// The PostgreSQL store's retention calls (store_retention.h): the same rules and orders as the
// SQLite backend's. A look reads at most rows_max + 1 candidates by an index; a removal is one
// statement per kind (a gap, keyed by three columns, one per record), each checking the rule
// again, so a record changed since it was read stays.
#include <cassert>
#include <type_traits>

#include "core/digest.h"
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
    } else if constexpr (std::is_same_v<Row, JournalEntry> || std::is_same_v<Row, EffectLogEntry> ||
                         std::is_same_v<Row, EffectIntent>) {
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
// An intent is retainable when settled before the horizon, its log gone, a later intent of its
// consumer, subject and effect there, and no compensation naming it (store_retention.h, kIntent).
#define EVIDENT_INTENT_RETAINABLE                                        \
  "i.state IN ('done','failed','withdrawn') AND i.settled_at_ms < $1"    \
  " AND NOT EXISTS (SELECT 1 FROM effect_log l WHERE l.key=i.key)"       \
  " AND EXISTS (SELECT 1 FROM effect_intent n WHERE n.subject=i.subject" \
  " AND n.consumer=i.consumer AND n.seq > i.seq AND n.effect=i.effect)"  \
  " AND NOT EXISTS (SELECT 1 FROM compensation c WHERE c.covers=i.key)"  \
  " AND NOT EXISTS (SELECT 1 FROM compensation c WHERE c.compensating_key=i.key)"
const std::string kIntentLook = std::string("SELECT ") + kIntentColumns +
                                ", CASE WHEN " EVIDENT_INTENT_RETAINABLE
                                " THEN 1 ELSE 0 END FROM effect_intent i WHERE i.seq > $2"
                                " ORDER BY i.seq LIMIT $3";
const std::string kIntentCount =
    "SELECT count(*) FROM effect_intent i WHERE " EVIDENT_INTENT_RETAINABLE;
// Each intent again, by its seq and the rule; what the removed ones' digests keep.
const std::string kIntentRemove =
    "DELETE FROM effect_intent i WHERE i.seq = ANY($2) AND " EVIDENT_INTENT_RETAINABLE
    " RETURNING i.key, i.effect, i.consumer, i.state, i.settled_at_ms";
#undef EVIDENT_INTENT_RETAINABLE
// A receipt is retainable when applied before the horizon with no unsettled intent of its
// consumer and subject (store_retention.h, kLedger).
#define EVIDENT_RECEIPT_RETAINABLE                                                             \
  "l.state='applied' AND l.committed_at_ms < $1 AND NOT EXISTS (SELECT 1 FROM effect_intent i" \
  " WHERE i.subject=l.subject AND i.consumer=l.consumer"                                       \
  " AND i.state NOT IN ('done','failed','withdrawn'))"
// In the key's order under the database's collation, which the primary key's index has.
const std::string kLedgerLookFirst = std::string("SELECT ") + kLedgerColumns +
                                     ", CASE WHEN " EVIDENT_RECEIPT_RETAINABLE
                                     " THEN 1 ELSE 0 END FROM ledger l"
                                     " ORDER BY consumer, source, event_id LIMIT $2";
const std::string kLedgerLookAfter =
    std::string("SELECT ") + kLedgerColumns +
    ", CASE WHEN " EVIDENT_RECEIPT_RETAINABLE
    " THEN 1 ELSE 0 END FROM ledger l WHERE (consumer, source, event_id) > ($2, $3, $4)"
    " ORDER BY consumer, source, event_id LIMIT $5";
const std::string kLedgerCount = "SELECT count(*) FROM ledger l WHERE " EVIDENT_RECEIPT_RETAINABLE;
// Each receipt again, by its key and the rule; the removed ones' keys and commit times, whose
// digests the caller keeps.
const std::string kLedgerRemove =
    "DELETE FROM ledger l USING unnest($2::text[], $3::text[], $4::text[]) AS k(c, s, e)"
    " WHERE l.consumer=k.c AND l.source=k.s AND l.event_id=k.e AND " EVIDENT_RECEIPT_RETAINABLE
    " RETURNING l.consumer, l.source, l.event_id, l.committed_at_ms";
#undef EVIDENT_RECEIPT_RETAINABLE

const std::string kOutboxLook = std::string("SELECT ") + kOutboxColumns +
                                ", 1 FROM outbox WHERE sent_at_ms IS NOT NULL AND"
                                " sent_at_ms < $1 AND $2::bigint = $2::bigint"
                                " ORDER BY sent_at_ms, seq LIMIT $3";

}  // namespace

Result<RetainedRows> PgSnapshot::Retainable(RetainedKind kind, int64_t before_ms, int64_t after,
                                            int64_t rows_max) {
  assert(rows_max > 0);
  if (kind == RetainedKind::kLedger) return RetainableLedger(before_ms, LedgerKey{}, rows_max);
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
    case RetainedKind::kIntent:
      return Look(Db(), {kIntentLook, 21}, before_ms, after, rows_max, &ReadIntent,
                  &RetainedRows::intents, std::move(out));
    case RetainedKind::kOutbox:
      return Look(Db(), {kOutboxLook, 17}, before_ms, after, rows_max, &ReadOutbox,
                  &RetainedRows::outbox, std::move(out));
    case RetainedKind::kLedger:
      break;
  }
  return Status::Internal("unknown retained kind");
}

Result<RetainedRows> PgSnapshot::RetainableLedger(int64_t before_ms, const LedgerKey& after,
                                                  int64_t rows_max) {
  assert(rows_max > 0);
  RetainedRows out{.kind = RetainedKind::kLedger};
  const bool first = after.consumer.empty();
  Params params;
  params.Int(before_ms);
  if (!first) params.Text(after.consumer).Text(after.source).Text(after.event_id);
  params.Int(LimitOf(rows_max));
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(first ? kLedgerLookFirst : kLedgerLookAfter, params));
  Status error;
  const int looked = std::min<int>(rows.rows(), static_cast<int>(rows_max));
  out.end = rows.rows() <= rows_max;
  for (int i = 0; i < looked; ++i) {
    LedgerEntry row = ReadLedger(rows, i, error);
    out.next_key = {row.consumer, row.source, row.event_id};
    if (rows.Int(i, 17) != 0) out.ledger.push_back(std::move(row));
  }
  if (!error.ok()) return error;
  if (!rows.problem().ok()) return rows.problem();
  return out;
}

Result<int64_t> PgSnapshot::CountLedgerDigests(int64_t before_ms) {
  static const std::string kSql = "SELECT count(*) FROM ledger_digest WHERE committed_s < $1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(kSql, Params().Int(FloorSeconds(before_ms))));
  if (rows.rows() != 1) return Status::Internal("a count answered no row");
  return rows.Int(0, 0);
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
      kIntentCount,
      "SELECT count(*) FROM outbox WHERE sent_at_ms IS NOT NULL AND sent_at_ms < $1",
      kLedgerCount};
  static_assert(std::size(kSql) == kRetainedKindCount);
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
  EVIDENT_ASSIGN_OR_RETURN(const int64_t intents, RemoveRetainedIntents(rows.intents, before_ms));
  EVIDENT_ASSIGN_OR_RETURN(const int64_t receipts, RemoveRetainedLedger(rows.ledger, before_ms));
  return removed + intents + receipts;
}

// Under the intents' consumers' locks held exclusively, as receipts are (below): no decider of
// theirs intends a key while its intent becomes a digest. The intents go and their keys'
// digests are kept in that transaction.
Result<int64_t> PgTransaction::RemoveRetainedIntents(const std::vector<EffectIntent>& rows,
                                                     int64_t before_ms) {
  if (rows.empty()) return int64_t{0};
  static const std::string kDigests =
      "INSERT INTO effect_digest(digest, effect, consumer, state, settled_s)"
      " SELECT decode(d, 'hex'), e, c, st, s FROM unnest($1::text[], $2::text[], $3::text[],"
      " $4::text[], $5::bigint[]) AS k(d, e, c, st, s) ON CONFLICT DO NOTHING";
  std::vector<std::string_view> consumers;
  std::vector<int64_t> seqs;
  for (const EffectIntent& e : rows) {
    consumers.push_back(e.consumer);
    seqs.push_back(e.seq);
  }
  LockConsumersExclusively(consumers);
  EVIDENT_ASSIGN_OR_RETURN(const Rowset gone,
                           Db().Query(kIntentRemove, Params().Int(before_ms).IntArray(seqs)));
  if (!gone.problem().ok()) return gone.problem();
  std::vector<std::string> digests;
  std::vector<std::string_view> effects, owners, states;
  std::vector<int64_t> seconds;
  for (int i = 0; i < gone.rows(); ++i) {
    EVIDENT_ASSIGN_OR_RETURN(const std::string digest, IntentKeyDigest(gone.Text(i, 0)));
    digests.push_back(LowerHex(digest));
    effects.push_back(gone.Text(i, 1));
    owners.push_back(gone.Text(i, 2));
    states.push_back(gone.Text(i, 3));
    seconds.push_back(FloorSeconds(gone.Int(i, 4)));
  }
  if (!gone.problem().ok()) return gone.problem();
  if (digests.empty()) return int64_t{0};
  Params params;
  params.TextArray(std::vector<std::string_view>(digests.begin(), digests.end()));
  params.TextArray(effects).TextArray(owners).TextArray(states).IntArray(seconds);
  EVIDENT_RETURN_IF_ERROR(Db().Query(kDigests, params).status());
  return static_cast<int64_t>(digests.size());
}

// Under the receipts' consumers' locks held exclusively: the run waits for the deciders of those
// consumers in flight (an evident_decide caller holds its shared lock to its own transaction's
// end), deciders that start meanwhile wait for this one transaction (at most batch_count_max
// receipts), and a wait past the session's lock timeout fails the run, which the next one takes
// up again (its archived lines written twice). The receipts go and their keys' digests are kept
// in that transaction.
Result<int64_t> PgTransaction::RemoveRetainedLedger(const std::vector<LedgerEntry>& rows,
                                                    int64_t before_ms) {
  if (rows.empty()) return int64_t{0};
  static const std::string kDigests =
      "INSERT INTO ledger_digest(digest, committed_s)"
      " SELECT decode(d, 'hex'), s FROM unnest($1::text[], $2::bigint[]) AS k(d, s)"
      " ON CONFLICT DO NOTHING";
  std::vector<std::string_view> consumers, sources, ids;
  for (const LedgerEntry& e : rows) {
    consumers.push_back(e.consumer);
    sources.push_back(e.source);
    ids.push_back(e.event_id);
  }
  LockConsumersExclusively(consumers);
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset gone,
      Db().Query(kLedgerRemove,
                 Params().Int(before_ms).TextArray(consumers).TextArray(sources).TextArray(ids)));
  if (!gone.problem().ok()) return gone.problem();
  std::vector<std::string> digests;
  std::vector<int64_t> seconds;
  for (int i = 0; i < gone.rows(); ++i) {
    EVIDENT_ASSIGN_OR_RETURN(const std::string digest,
                             LedgerKeyDigest(gone.Text(i, 0), gone.Text(i, 1), gone.Text(i, 2)));
    digests.push_back(LowerHex(digest));
    seconds.push_back(FloorSeconds(gone.Int(i, 3)));
  }
  if (!gone.problem().ok()) return gone.problem();
  if (digests.empty()) return int64_t{0};
  EVIDENT_RETURN_IF_ERROR(Db().Query(kDigests, Params()
                                                   .TextArray(std::vector<std::string_view>(
                                                       digests.begin(), digests.end()))
                                                   .IntArray(seconds))
                              .status());
  return static_cast<int64_t>(digests.size());
}

// Digests in byte order past `after`; those committed in a second before the horizon's go.
Result<ForgottenDigests> PgTransaction::ForgetLedgerDigests(int64_t before_ms,
                                                            std::string_view after,
                                                            int64_t rows_max) {
  assert(rows_max > 0);
  // `end` once a look finds fewer than rows_max.
  static const std::string kSql =
      "WITH looked AS (SELECT digest, committed_s FROM ledger_digest WHERE digest > $2"
      " ORDER BY digest LIMIT $3), gone AS (DELETE FROM ledger_digest d USING looked"
      " WHERE d.digest=looked.digest AND looked.committed_s < $1 RETURNING d.digest)"
      " SELECT (SELECT count(*) FROM looked), (SELECT count(*) FROM gone),"
      " coalesce((SELECT encode(digest, 'hex') FROM looked ORDER BY digest DESC LIMIT 1), '')";
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql, Params().Int(FloorSeconds(before_ms)).Bytes(after).Int(rows_max)));
  if (!rows.problem().ok()) return rows.problem();
  if (rows.rows() != 1) return Status::Internal("forgetting digests answered no row");
  ForgottenDigests out;
  out.forgotten = rows.Int(0, 1);
  out.end = rows.Int(0, 0) < rows_max;
  const std::string_view hex = rows.Text(0, 2);
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    const auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    out.next.push_back(static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  }
  return out;
}

Status PgTransaction::RecordRetention(const RetentionRun& run) {
  static const std::string kSql =
      "INSERT INTO retention_run(at_ms, horizon_ms, archive, removed, forgot_before_ms)"
      " VALUES($1, $2, $3, $4, $5) ON CONFLICT (at_ms) DO UPDATE SET"
      " horizon_ms=excluded.horizon_ms, archive=excluded.archive, removed=excluded.removed,"
      " forgot_before_ms=excluded.forgot_before_ms";
  Params params;
  params.Int(run.at_ms).Int(run.horizon_ms).Text(run.archive).Int(run.removed);
  params.Int(run.forgot_before_ms);
  return Db().Query(kSql, params).status();
}

Result<std::optional<RetentionRun>> PgSnapshot::LatestRetention() {
  static const std::string kSql =
      "SELECT seq, at_ms, horizon_ms, archive, removed, (SELECT max(forgot_before_ms) FROM"
      " retention_run) FROM retention_run ORDER BY seq DESC LIMIT 1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, Params()));
  if (rows.rows() == 0) return std::optional<RetentionRun>();
  RetentionRun run{.seq = rows.Int(0, 0),
                   .at_ms = rows.Int(0, 1),
                   .horizon_ms = rows.Int(0, 2),
                   .archive = std::string(rows.Text(0, 3)),
                   .removed = rows.Int(0, 4),
                   .forgot_before_ms = rows.Int(0, 5)};
  if (!rows.problem().ok()) return rows.problem();
  return std::optional<RetentionRun>(std::move(run));
}

}  // namespace evident::postgres
