#include "store/postgres/pg_transaction.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "core/digest.h"
#include "core/fault_point.h"
#include "store/outbox_rules.h"
#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_schema.h"
#include "store/projection_copy.h"
#include "store/retained_entry.h"

namespace evident::postgres {
namespace {

std::string Key(std::string_view a, std::string_view b) {
  std::string key;
  key.reserve(a.size() + b.size() + 1);
  key.append(a).push_back('\0');
  key.append(b);
  return key;
}
std::string Key(std::string_view a, std::string_view b, std::string_view c) {
  std::string key = Key(a, b);
  key.push_back('\0');
  key.append(c);
  return key;
}
std::string Key(std::string_view a, std::string_view b, int64_t version) {
  return Key(a, b, std::to_string(version));
}

// A column list with every column qualified by `prefix` ("l.").
std::string Qualified(std::string_view columns, std::string_view prefix) {
  std::string out(prefix);
  for (const char c : columns) {
    out += c;
    if (c == ' ') out += prefix;
  }
  return out;
}

const std::string kRollbackSql = "ROLLBACK";
// The first key of the consumers' advisory locks (LockConsumers): "EVDC".
constexpr int32_t kConsumerLockClass = 0x45564443;
// The first key of the (consumer, subject) locks of WillDecideSubject: "EVDS".
constexpr int32_t kSubjectLockClass = 0x45564453;

const std::string kCompensationInsert =
    "INSERT INTO compensation(key, consumer, subject, owner_source, owner_version, event_id,"
    " type, recorded_at_ms, recorded_by, decision, compensates, covers, compensate_with,"
    " compensating_key, compensating_request, basis_version, state, detail, updated_at_ms)"
    " VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,"
    " $19) ON CONFLICT (consumer, key) DO NOTHING";

Params CompensationParams(const CompensationRecord& c) {
  Params p;
  p.Text(c.key).Text(c.consumer).Text(c.subject).Text(c.owner_source).OptInt(c.owner_version);
  p.Text(c.event_id).Text(c.type).Int(c.recorded_at_ms).Text(CompensationByName(c.recorded_by));
  p.Text(c.decision).Text(c.compensates).Text(c.covers).Text(c.compensate_with);
  p.Text(c.compensating_key).Bytes(c.compensating_request).OptInt(c.basis_version);
  p.Text(CompensationStateName(c.state)).Text(c.detail).Int(c.updated_at_ms);
  return p;
}

// The LIMIT of a list: one row more than asked, so that a cut list knows it was cut.
const std::string kLedgerByKey = std::string("SELECT ") + kLedgerColumns +
                                 " FROM ledger WHERE consumer=$1 AND source=$2 AND event_id=$3";
const std::string kLedgerInsertValues =
    "INSERT INTO ledger(consumer, source, event_id, state, type, subject, subject_version,"
    " input_schema_version, result_version, projection_version, committed_at_ms, duplicates,"
    " last_duplicate_at_ms, adapter, wrote, traceparent, tracestate)"
    " VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)";
const std::string kLedgerInsertIfAbsent = kLedgerInsertValues + " ON CONFLICT DO NOTHING";

Params LedgerParams(const LedgerEntry& e) {
  Params p;
  p.Text(e.consumer).Text(e.source).Text(e.event_id).Text(LedgerStateName(e.state)).Text(e.type);
  p.Text(e.subject).OptInt(e.subject_version).Int(e.input_schema_version).Int(e.result_version);
  p.OptInt(e.projection_version).Int(e.committed_at_ms).Int(e.duplicates);
  p.OptInt(e.last_duplicate_at_ms).Text(e.adapter).Text(e.wrote_json).Text(e.traceparent);
  p.Text(e.tracestate);
  return p;
}

const std::string kDeferredInsertValues =
    "INSERT INTO deferred(consumer, subject, subject_version, source, event_id, type,"
    " schema_version, expected_version, raw, received_at_ms, deadline_at_ms, route, input_index)"
    " VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";
const std::string kDeferredInsert = kDeferredInsertValues;
const std::string kDeferredInsertIfAbsent = kDeferredInsertValues + " ON CONFLICT DO NOTHING";

Params DeferredParams(const DeferredEvent& d) {
  Params p;
  p.Text(d.consumer).Text(d.subject).Int(d.subject_version).Text(d.source).Text(d.event_id);
  p.Text(d.type).Int(d.schema_version).Int(d.expected_version).Bytes(d.raw);
  p.Int(d.received_at_ms).Int(d.deadline_at_ms).Text(GapRouteName(d.route)).Int(d.input_index);
  return p;
}

Status ProjectionMoved(const Projection& p) {
  return Status::Aborted("projection " + p.consumer + "/" + p.subject +
                         " is not at the version this write expected (another writer changed it)");
}

}  // namespace

namespace {

// Whether retention kept the key's receipt as its digest.
Result<bool> DigestKept(Connection& db, std::string_view consumer, std::string_view source,
                        std::string_view event_id) {
  static const std::string kSql = "SELECT 1 FROM ledger_digest WHERE digest=$1";
  EVIDENT_ASSIGN_OR_RETURN(const std::string digest, LedgerKeyDigest(consumer, source, event_id));
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, db.Query(kSql, Params().Bytes(digest)));
  if (!rows.problem().ok()) return rows.problem();
  return rows.rows() > 0;
}

}  // namespace

Result<std::optional<LedgerEntry>> QueryLedger(Connection& db, std::string_view consumer,
                                               std::string_view source, std::string_view event_id) {
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      db.Query(kLedgerByKey, Params().Text(consumer).Text(source).Text(event_id)));
  EVIDENT_ASSIGN_OR_RETURN(std::optional<LedgerEntry> row, ReadOne(rows, &ReadLedger));
  if (row) return row;
  EVIDENT_ASSIGN_OR_RETURN(const bool retained, DigestKept(db, consumer, source, event_id));
  if (retained) row = RetainedLedgerEntry(consumer, source, event_id);
  return row;
}

Result<std::optional<QuarantineRecord>> QueryQuarantine(Connection& db, int64_t id) {
  static const std::string kSql =
      std::string("SELECT ") + kQuarantineColumns + " FROM quarantine WHERE id=$1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, db.Query(kSql, Params().Int(id)));
  return ReadOne(rows, &ReadQuarantine);
}

Result<std::optional<EffectIntent>> QueryIntent(Connection& db, std::string_view key) {
  static const std::string kSql =
      std::string("SELECT ") + kIntentColumns + " FROM effect_intent WHERE key=$1";
  static const std::string kRetained =
      "SELECT effect, consumer, state, settled_s FROM effect_digest WHERE digest=$1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, db.Query(kSql, Params().Text(key)));
  EVIDENT_ASSIGN_OR_RETURN(std::optional<EffectIntent> row, ReadOne(rows, &ReadIntent));
  if (row) return row;
  EVIDENT_ASSIGN_OR_RETURN(const std::string digest, IntentKeyDigest(key));
  EVIDENT_ASSIGN_OR_RETURN(const Rowset kept, db.Query(kRetained, Params().Bytes(digest)));
  if (!kept.problem().ok()) return kept.problem();
  if (kept.rows() == 0) return row;
  const std::optional<EffectState> state = ParseEffectState(kept.Text(0, 2));
  if (!state) return Status::Corruption("effect_digest: unknown state of " + std::string(key));
  row = RetainedIntentEntry(key, kept.Text(0, 0), kept.Text(0, 1), *state, kept.Int(0, 3));
  if (!kept.problem().ok()) return kept.problem();
  return row;
}

Result<std::optional<std::string>> QueryPosition(Connection& db, std::string_view source) {
  static const std::string kSql = "SELECT position FROM position WHERE source=$1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, db.Query(kSql, Params().Text(source)));
  if (rows.rows() == 0) return std::optional<std::string>();
  std::string position = rows.Bytes(0, 0);
  if (!rows.problem().ok()) return rows.problem();
  return std::optional<std::string>(std::move(position));
}

// --- PgTransaction ---

PgTransaction::PgTransaction(std::shared_ptr<Session> session) : session_(std::move(session)) {
  static const std::string kBegin = "BEGIN ISOLATION LEVEL READ COMMITTED";
  session_->connection->Send(kBegin, Params());
}

PgTransaction::~PgTransaction() {
  if (session_ != nullptr) (void)Rollback();
}

Connection& PgTransaction::Conn() {
  assert(session_ != nullptr && "transaction used after Commit or Rollback");
  // Lent to the caller (Lend): taken back first; a failure is the transaction's (failure()).
  (void)session_->connection->Resume();
  return *session_->connection;
}

Connection& PgTransaction::Db() {
  FlushWrites();
  return Conn();
}

void PgTransaction::FlushWrites() {
  static const std::string kLedgerRows =
      "INSERT INTO ledger(consumer, source, event_id, state, type, subject, adapter, wrote,"
      " traceparent, tracestate, subject_version, input_schema_version, result_version,"
      " projection_version, committed_at_ms, duplicates, last_duplicate_at_ms)"
      " SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],"
      " $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[],"
      " $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[],"
      " $17::bigint[])";
  if (!ledger_inserts_.empty()) {
    std::vector<std::string_view> text[10];
    std::vector<std::optional<int64_t>> number[7];
    for (const LedgerEntry& e : ledger_inserts_) {
      for (const auto& [column, value] : {std::pair{0, std::string_view(e.consumer)},
                                          {1, e.source},
                                          {2, e.event_id},
                                          {3, LedgerStateName(e.state)},
                                          {4, e.type},
                                          {5, e.subject},
                                          {6, e.adapter},
                                          {7, e.wrote_json},
                                          {8, e.traceparent},
                                          {9, e.tracestate}}) {
        text[column].push_back(value);
      }
      number[0].push_back(e.subject_version);
      number[1].push_back(e.input_schema_version);
      number[2].push_back(e.result_version);
      number[3].push_back(e.projection_version);
      number[4].push_back(e.committed_at_ms);
      number[5].push_back(e.duplicates);
      number[6].push_back(e.last_duplicate_at_ms);
    }
    Params p;
    for (const auto& column : text) p.TextArray(column);
    for (const auto& column : number) p.OptIntArray(column);
    Conn().Send(kLedgerRows, p, Expect{.unique_is_conflict = true});
    ++session_->buffered_inserts;
    ledger_inserts_.clear();
    ledger_buffered_.clear();
  }
  if (!projection_puts_.empty()) FlushProjections();
}

// New projections in one INSERT (a key another writer inserted meanwhile aborts the
// transaction). Changed ones one UPDATE each, sent without waiting, each failing on the server
// unless its row is at the version expected: a multi-row UPDATE joined to unnest() was planned
// as a hash join over the whole table (1.5 ms a statement at 20,000 projections, against 14 us
// a row this way; pg_stat_statements, docs/BENCHMARKS.md).
void PgTransaction::FlushProjections() {
  static const std::string kInsertRows =
      "INSERT INTO projection(consumer, subject, version, state, fields_json, owner_source,"
      " owner_version_seen, updated_at_ms, applied_digest) SELECT * FROM unnest($1::text[],"
      " $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[],"
      " $8::bigint[], $9::text[])";
  static const std::string kUpdate =
      "WITH changed AS (UPDATE projection SET version=$3, state=$4, fields_json=$5,"
      " owner_source=$6, owner_version_seen=GREATEST(owner_version_seen, $7), updated_at_ms=$8,"
      " applied_digest=$10 WHERE subject=$2 AND consumer=$1 AND version=$9 RETURNING 1)"
      " SELECT 1 / (SELECT count(*) FROM changed)::int";
  std::vector<std::string_view> text[6];
  std::vector<int64_t> number[3];
  for (const auto& [key, put] : projection_puts_) {
    const Projection& v = put.value;
    if (put.expected) {
      Params p;
      p.Text(v.consumer).Text(v.subject).Int(v.version).Text(v.state).Text(v.fields_json);
      p.Text(v.owner_source).Int(v.owner_version_seen).Int(v.updated_at_ms).Int(*put.expected);
      p.Text(v.applied_digest);
      Conn().Send(kUpdate, p, Expect{.checked_on_server = true, .otherwise = ProjectionMoved(v)});
      continue;
    }
    for (const auto& [column, value] : {std::pair{0, std::string_view(v.consumer)},
                                        {1, v.subject},
                                        {2, v.state},
                                        {3, v.fields_json},
                                        {4, v.owner_source},
                                        {5, v.applied_digest}}) {
      text[column].push_back(value);
    }
    number[0].push_back(v.version);
    number[1].push_back(v.owner_version_seen);
    number[2].push_back(v.updated_at_ms);
  }
  if (!text[0].empty()) {
    Params p;
    p.TextArray(text[0]).TextArray(text[1]).IntArray(number[0]).TextArray(text[2]);
    p.TextArray(text[3]).TextArray(text[4]).IntArray(number[1]).IntArray(number[2]);
    p.TextArray(text[5]);
    Conn().Send(kInsertRows, p, Expect{.unique_is_conflict = true});
    ++session_->buffered_inserts;
  }
  projection_puts_.clear();
}

// Ends the transaction with COMMIT or ROLLBACK. A failure of any statement sent before it
// aborted the server's transaction: it is rolled back, and the failure returned.
Status PgTransaction::End(const std::string& sql) {
  Connection& db = Db();
  // A statement that failed earlier (refused by the server, or never sent) fails the commit:
  // COMMIT of an aborted transaction would answer ROLLBACK as if it were a success.
  const Status failed = db.failure();
  const bool rolling_back = &sql == &kRollbackSql || !failed.ok();
  if (!rolling_back) FaultPoint("before-commit");
  db.Send(rolling_back ? kRollbackSql : sql, Params());
  Status status = db.Sync();
  if (status.ok() && !rolling_back) FaultPoint("after-commit");
  if (!status.ok() && !rolling_back && !db.broken()) {  // COMMIT never ran: the block is open
    db.Send(kRollbackSql, Params());
    (void)db.Sync();
  }
  if (status.ok() && &sql != &kRollbackSql) status = failed;
  session_->open = Session::Open::kNone;
  session_ = nullptr;
  return status;
}

// Evidence goes in last, for the subjects whose projection exists by then (put in this
// transaction or committed before); the rest is dropped, as the interface says. OFFSET 0 keeps
// the EXISTS an index lookup per row (see Load): as a semi-join it was planned as a hash join
// over the whole projection table, 6 ms a commit at 50,000 projections.
Status PgTransaction::Commit() {
  static const std::string kEvidenceRows =
      "INSERT INTO evidence(consumer, subject, name, source, event_id, subject_version,"
      " recorded_at_ms, detail) SELECT e.* FROM unnest($1::text[], $2::text[], $3::text[],"
      " $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::text[]) AS e(consumer, subject,"
      " name, source, event_id, subject_version, recorded_at_ms, detail) WHERE EXISTS("
      "SELECT 1 FROM projection p WHERE p.subject=e.subject AND p.consumer=e.consumer OFFSET 0)"
      " ON CONFLICT (subject, consumer, name) DO UPDATE SET source=EXCLUDED.source,"
      " event_id=EXCLUDED.event_id, subject_version=EXCLUDED.subject_version,"
      " recorded_at_ms=EXCLUDED.recorded_at_ms, detail=EXCLUDED.detail";
  static const std::string kCommit = "COMMIT";
  Connection& db = Db();
  if (!evidence_.empty()) {  // one record per (consumer, subject, name): one row each
    std::vector<std::string_view> text[6];
    std::vector<std::optional<int64_t>> number[2];
    for (const auto& [key, r] : evidence_) {
      for (const auto& [column, value] : {std::pair{0, std::string_view(r.consumer)},
                                          {1, r.subject},
                                          {2, r.name},
                                          {3, r.source},
                                          {4, r.event_id},
                                          {5, r.detail}}) {
        text[column].push_back(value);
      }
      number[0].push_back(r.subject_version);
      number[1].push_back(r.recorded_at_ms);
    }
    Params p;
    p.TextArray(text[0]).TextArray(text[1]).TextArray(text[2]).TextArray(text[3]);
    p.TextArray(text[4]).OptIntArray(number[0]).OptIntArray(number[1]).TextArray(text[5]);
    db.Send(kEvidenceRows, p);
  }
  // Not inside a caller's transaction (evident_pg.so): a NOTIFY there would take PostgreSQL's
  // notify lock through the caller's commit (one appending transaction committing at a time,
  // and PREPARE TRANSACTION refused); relays find those rows within their notify wait.
  const bool notify = outbox_appended_ && !db.InCallersTransaction();
  const std::shared_ptr<Session> session = session_;  // End lets go of it
  const Status committed = End(kCommit);
  if (committed.ok() && notify) Notify(*session->connection);
  return committed;
}

// Wakes the relays that LISTEN (Store::WaitForOutbox) after a commit that appended outbox rows.
// Sent after the COMMIT, in a transaction of its own: a NOTIFY inside the transaction would take
// PostgreSQL's notify lock from before its commit until the commit is flushed, one committing
// transaction at a time. Its failure is not the commit's: a relay looks again within a second.
void PgTransaction::Notify(Connection& db) {
  static const std::string kNotify =
      "SELECT pg_notify('" + std::string(kOutboxChannel) + "', current_schema())";
  db.Send(kNotify, Params());
  (void)db.Sync();
}

// One statement for the consumers not locked yet, in the order of their lock keys. Two
// transactions that take several in one statement never wait for each other in a circle;
// deciders name all of theirs up front (WillDecide) for that reason, since locks taken one by
// one as rows are first read can come in any order (a deadlock then aborts one of them after
// the server's deadlock_timeout, and its batch is retried). Advisory locks are the
// database's, so the key is the schema (the deployment) and the consumer's name: deployments of
// one database do not wait for each other (PostgreSQL layout 4 took the schema's length into
// the key; no process of an older layout shares a store of this one). The two-int4 form (class,
// hash) keeps clear of the bigint keys (the schema lock); two names of one hash only take turns
// they need not. Held to the transaction's end.
void PgTransaction::LockConsumers(std::vector<std::string_view> consumers, bool exclusive) {
  // The schema's length first: schema "a.b" with consumer "c" and schema "a" with consumer "b.c"
  // have keys of their own.
  const auto statement = [](const char* lock) {
    return std::string("SELECT ") + lock + "(" + std::to_string(kConsumerLockClass) +
           ", k) FROM (SELECT DISTINCT hashtext(length(s) || ':' || s || c) AS k"
           " FROM unnest($1::text[]) AS c, coalesce(current_schema(), '') AS s ORDER BY 1) x";
  };
  static const std::string kExclusive = statement("pg_advisory_xact_lock");
  static const std::string kShared = statement("pg_advisory_xact_lock_shared");
  // Those held already out first: a batch's Load names each key's consumer, nearly always
  // locked by WillDecide at the batch's start.
  std::erase_if(consumers, [this](std::string_view c) { return locked_consumers_.contains(c); });
  if (consumers.empty()) return;
  std::sort(consumers.begin(), consumers.end());
  consumers.erase(std::unique(consumers.begin(), consumers.end()), consumers.end());
  locked_consumers_.insert(consumers.begin(), consumers.end());
  const bool shared = !exclusive && (session_->deciders_shared || session_->deciders_by_subject);
  Conn().Send(shared ? kShared : kExclusive, Params().TextArray(consumers));
}

// The consumer's lock shared, then the pair's exclusively: the key is the schema, the consumer
// and the subject, each length-prefixed; two pairs of one hash only take turns they need not.
namespace {

// The key of a (consumer, subject) lock, below the schema: the consumer length-prefixed.
std::string SubjectLockKey(std::string_view consumer, std::string_view what) {
  std::string pair = std::to_string(consumer.size()) + ':';
  pair.append(consumer).append(what);
  return pair;
}

}  // namespace

// A group member's batch (consumers' locks shared: StoreOptions::deciders) takes the locks of
// its subjects before it reads them, in one statement and in one order, so that a service
// deciding one of them with evident_decide at the same time takes turns with it. (Members of one
// group never share a subject: its partition is one member's.)
void PgTransaction::LockSubjects(const std::vector<SubjectKey>& subjects) {
  std::vector<std::string> pairs;
  for (const SubjectKey& k : subjects) {
    std::string pair = SubjectLockKey(k.consumer, k.subject);
    if (!locked_subjects_.contains(pair)) pairs.push_back(std::move(pair));
  }
  if (pairs.empty()) return;
  static const std::string kLock =
      "SELECT pg_advisory_xact_lock(" + std::to_string(kSubjectLockClass) +
      ", k) FROM (SELECT DISTINCT hashtext(length(s) || ':' || s || p) AS k"
      " FROM unnest($1::text[]) AS p, coalesce(current_schema(), '') AS s ORDER BY 1) x";
  Conn().Send(kLock, Params().TextArray(std::vector<std::string_view>(pairs.begin(), pairs.end())));
  for (std::string& pair : pairs) locked_subjects_.insert(std::move(pair));
}

Status PgTransaction::WillDecideSubject(std::string_view consumer, std::string_view what) {
  // A group member's batch locked its subjects in Load.
  if (!session_->deciders_by_subject) return Status::Ok();
  std::string pair = SubjectLockKey(consumer, what);
  if (locked_subjects_.contains(pair)) return Status::Ok();
  const auto statement = [](bool with_consumer) {
    const std::string key = "hashtext(length(s) || ':' || s || ";
    return std::string("SELECT ") +
           (with_consumer ? "pg_advisory_xact_lock_shared(" + std::to_string(kConsumerLockClass) +
                                ", " + key + "$2)), "
                          : std::string()) +
           "pg_advisory_xact_lock(" + std::to_string(kSubjectLockClass) + ", " + key +
           "$1)) FROM coalesce(current_schema(), '') AS s";
  };
  // One statement for both while the consumer is not locked yet: its lock first (the target
  // list is evaluated in order), as LockConsumers takes it.
  static const std::string kPair = statement(true);
  static const std::string kSubject = statement(false);
  if (locked_consumers_.contains(consumer)) {
    Conn().Send(kSubject, Params().Text(pair));
  } else {
    locked_consumers_.emplace(consumer);
    Conn().Send(kPair, Params().Text(pair).Text(consumer));
  }
  locked_subjects_.insert(std::move(pair));
  return Status::Ok();
}

Status PgTransaction::WillDecide(const std::vector<std::string>& consumers) {
  LockConsumers(std::vector<std::string_view>(consumers.begin(), consumers.end()));
  return Status::Ok();
}

void PgTransaction::LockConsumer(std::string_view consumer) {
  if (!locked_consumers_.contains(consumer)) LockConsumers({consumer});
}

Status PgTransaction::Rollback() {
  ledger_inserts_.clear();  // never sent
  ledger_buffered_.clear();
  projection_puts_.clear();
  return End(kRollbackSql);
}

// Five statements, one round trip. Every key asked for is known afterwards: its row, or that
// it has none.
//
// The ledger and projection rows are read one index lookup per key: a LATERAL subquery per key,
// fenced with LIMIT so that the planner cannot flatten it into a join. Written as a join or an
// IN list, the planner took a hash join over a sequential scan of the whole table whenever that
// looked cheaper than a thousand index lookups: a read that grew with the table (6.8 ms a batch
// for the projections at 50,000 rows; postgres_bench with EVIDENT_BENCH_STATEMENTS).
namespace {

// The six statements of a batch load, sent in one pipeline: the ledger rows of the keys, the
// projections, deferred events, their ledger rows and the open gaps of the subjects, and the
// digests kept of the keys' compacted receipts (after the ledger's statement: a receipt that
// retention compacted before that statement ran has its digest seen by this one).
struct LoadStatements {
  std::string ledger, projections, deferred, deferred_ledger, open_gaps, digests;
};

LoadStatements MakeLoadStatements() {
  LoadStatements out;
  out.ledger =
      std::string("SELECT ") + Qualified(kLedgerColumns, "l.") +
      " FROM (SELECT DISTINCT * FROM unnest($1::text[], $2::text[], $3::text[])) AS k(c, s, e)"
      " CROSS JOIN LATERAL (SELECT " +
      kLedgerColumns + " FROM ledger WHERE consumer=k.c AND source=k.s AND event_id=k.e LIMIT 1) l";
  out.projections = std::string("SELECT ") + Qualified(kProjectionColumns, "p.") +
                    " FROM (SELECT DISTINCT * FROM unnest($1::text[], $2::text[])) AS k(c, s)"
                    " CROSS JOIN LATERAL (SELECT " +
                    kProjectionColumns +
                    " FROM projection WHERE subject=k.s AND consumer=k.c LIMIT 1) p";
  // The deferred rows are few (each waits for its predecessor): a hash join over them is right.
  out.deferred =
      std::string("SELECT ") + kDeferredColumns +
      " FROM deferred WHERE (subject, consumer) IN"
      " (SELECT * FROM unnest($2::text[], $1::text[])) ORDER BY consumer, subject, subject_version";
  out.deferred_ledger =
      std::string("SELECT ") + Qualified(kLedgerColumns, "l.") +
      " FROM deferred d JOIN ledger l ON l.consumer=d.consumer AND l.source=d.source"
      " AND l.event_id=d.event_id WHERE (d.subject, d.consumer) IN"
      " (SELECT * FROM unnest($2::text[], $1::text[]))";
  out.open_gaps =
      "SELECT consumer, subject, missing_to FROM gap WHERE state<>'closed' AND (consumer, subject)"
      " IN (SELECT * FROM unnest($1::text[], $2::text[]))";
  out.digests =
      "SELECT encode(d.digest, 'hex') FROM (SELECT DISTINCT decode(h, 'hex') AS v"
      " FROM unnest($1::text[]) AS h) AS k CROSS JOIN LATERAL"
      " (SELECT digest FROM ledger_digest WHERE digest=k.v LIMIT 1) d";
  return out;
}

}  // namespace

Result<BatchRows> PgTransaction::Load(const BatchKeys& keys) {
  static const LoadStatements kLoad = MakeLoadStatements();
  std::vector<std::string_view> consumers, sources, ids, subject_consumers, subjects;
  for (const LedgerKey& k : keys.ledger) {
    consumers.push_back(k.consumer);
    sources.push_back(k.source);
    ids.push_back(k.event_id);
  }
  for (const SubjectKey& k : keys.subjects) {
    subject_consumers.push_back(k.consumer);
    subjects.push_back(k.subject);
  }
  std::vector<std::string_view> deciding = consumers;
  deciding.insert(deciding.end(), subject_consumers.begin(), subject_consumers.end());
  LockConsumers(std::move(deciding));
  if (session_->deciders_shared) LockSubjects(keys.subjects);
  std::vector<std::string> digests;
  digests.reserve(keys.ledger.size());
  for (const LedgerKey& k : keys.ledger) {
    EVIDENT_ASSIGN_OR_RETURN(const std::string digest,
                             LedgerKeyDigest(k.consumer, k.source, k.event_id));
    digests.push_back(LowerHex(digest));
  }
  Connection& db = Db();
  db.SendWanted(kLoad.ledger, Params().TextArray(consumers).TextArray(sources).TextArray(ids));
  for (const std::string* sql :
       {&kLoad.projections, &kLoad.deferred, &kLoad.deferred_ledger, &kLoad.open_gaps}) {
    db.SendWanted(*sql, Params().TextArray(subject_consumers).TextArray(subjects));
  }
  db.SendWanted(kLoad.digests,
                Params().TextArray(std::vector<std::string_view>(digests.begin(), digests.end())));
  EVIDENT_ASSIGN_OR_RETURN(const std::vector<Rowset> found, db.Fetch());
  assert(found.size() == 6);
  // The open gap records of the subjects, which an apply that closes a gap closes.
  // A subject loaded twice in one transaction is read afresh: the server's answer already holds
  // what this transaction changed (the statements before it ran first), so it replaces the list.
  for (const SubjectKey& k : keys.subjects) open_gaps_[Key(k.consumer, k.subject)].clear();
  for (int i = 0; i < found[4].rows(); ++i) {
    open_gaps_[Key(found[4].Text(i, 0), found[4].Text(i, 1))].push_back(found[4].Int(i, 2));
  }
  if (!found[4].problem().ok()) return found[4].problem();
  // The ledger rows of the waiting events, which a drain marks applied: known, not returned.
  EVIDENT_ASSIGN_OR_RETURN(Rows<LedgerEntry> waiting,
                           ReadRows(found[3], LimitOf(found[3].rows()), &ReadLedger));
  for (LedgerEntry& e : waiting.rows) {
    std::string key = Key(e.consumer, e.source, e.event_id);
    ledger_.insert_or_assign(std::move(key), std::move(e));
  }
  BatchRows out;
  EVIDENT_ASSIGN_OR_RETURN(Rows<LedgerEntry> ledger,
                           ReadRows(found[0], LimitOf(found[0].rows()), &ReadLedger));
  out.ledger = std::move(ledger.rows);
  EVIDENT_ASSIGN_OR_RETURN(Rows<Projection> projections,
                           ReadRows(found[1], LimitOf(found[1].rows()), &ReadProjectionRow));
  EVIDENT_ASSIGN_OR_RETURN(Rows<DeferredEvent> deferred,
                           ReadRows(found[2], LimitOf(found[2].rows()), &ReadDeferred));
  for (const LedgerKey& k : keys.ledger) ledger_[Key(k.consumer, k.source, k.event_id)];
  for (const LedgerEntry& e : out.ledger) ledger_[Key(e.consumer, e.source, e.event_id)] = e;
  EVIDENT_RETURN_IF_ERROR(KeepRetainedKeys(keys.ledger, digests, found[5]));
  for (const SubjectKey& k : keys.subjects) {
    projections_[Key(k.consumer, k.subject)];
    deferred_subjects_.insert(Key(k.consumer, k.subject));
  }
  for (const Projection& p : projections.rows) projections_[Key(p.consumer, p.subject)] = p;
  for (const DeferredEvent& d : deferred.rows) {
    deferred_[Key(d.consumer, d.subject, d.subject_version)] = d;
  }
  out.projections = std::move(projections.rows);
  out.deferred = std::move(deferred.rows);
  return out;
}

// The keys whose digests the load found (`found`: their hex) and that have no receipt: known as
// retained.
Status PgTransaction::KeepRetainedKeys(const std::vector<LedgerKey>& keys,
                                       const std::vector<std::string>& digests,
                                       const Rowset& found) {
  if (found.rows() == 0) return found.problem();
  std::unordered_set<std::string> kept;
  for (int i = 0; i < found.rows(); ++i) kept.emplace(found.Text(i, 0));
  if (!found.problem().ok()) return found.problem();
  for (size_t i = 0; i < keys.size(); ++i) {
    if (kept.count(digests[i]) == 0) continue;
    std::optional<LedgerEntry>& row =
        ledger_[Key(keys[i].consumer, keys[i].source, keys[i].event_id)];
    if (!row) row = RetainedLedgerEntry(keys[i].consumer, keys[i].source, keys[i].event_id);
  }
  return Status::Ok();
}

Result<std::optional<LedgerEntry>> PgTransaction::FindLedger(std::string_view consumer,
                                                             std::string_view source,
                                                             std::string_view event_id) {
  LockConsumer(consumer);
  std::string key = Key(consumer, source, event_id);
  if (const auto it = ledger_.find(key); it != ledger_.end()) return it->second;
  EVIDENT_ASSIGN_OR_RETURN(std::optional<LedgerEntry> row,
                           QueryLedger(Db(), consumer, source, event_id));
  ledger_.emplace(std::move(key), row);
  return row;
}

// A key known to be absent is inserted without waiting: should another writer insert it first,
// the transaction fails (kAborted) and the batch is retried.
Result<Insert> PgTransaction::InsertLedger(const LedgerEntry& entry) {
  LockConsumer(entry.consumer);
  std::string key = Key(entry.consumer, entry.source, entry.event_id);
  const auto it = ledger_.find(key);
  if (it != ledger_.end() && it->second) return Insert::kAlreadyThere;
  if (it != ledger_.end()) {
    ledger_buffered_[it->first] = ledger_inserts_.size();
    ledger_inserts_.push_back(entry);  // sent with the next statement (FlushWrites)
    it->second = entry;
    return Insert::kInserted;
  }
  // Not loaded: a compacted receipt's digest answers too. Retention removes a receipt under its
  // consumer's lock held exclusively, which this transaction holds (shared or not) from here on.
  EVIDENT_ASSIGN_OR_RETURN(const bool retained,
                           DigestKept(Db(), entry.consumer, entry.source, entry.event_id));
  if (retained) {
    ledger_.emplace(std::move(key),
                    RetainedLedgerEntry(entry.consumer, entry.source, entry.event_id));
    return Insert::kAlreadyThere;
  }
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done,
                           Db().Query(kLedgerInsertIfAbsent, LedgerParams(entry)));
  if (done.affected() == 0) return Insert::kAlreadyThere;
  ledger_.emplace(std::move(key), entry);
  return Insert::kInserted;
}

// Sent without waiting, after the buffered inserts (one of them may be the row): the key is
// then known to have no row.
Status PgTransaction::DeleteLedger(std::string_view consumer, std::string_view source,
                                   std::string_view event_id) {
  LockConsumer(consumer);
  static const std::string kSql =
      "DELETE FROM ledger WHERE consumer=$1 AND source=$2 AND event_id=$3";
  Db().Send(kSql, Params().Text(consumer).Text(source).Text(event_id));
  ledger_.insert_or_assign(Key(consumer, source, event_id), std::nullopt);
  return Status::Ok();
}

// An empty `types` is any type. The ledger's index on (subject, consumer) finds the subject's
// rows; a subject has few.
Result<std::optional<LedgerEntry>> PgTransaction::AppliedAfter(
    std::string_view consumer, std::string_view subject, int64_t after_projection_version,
    const std::vector<std::string>& types) {
  LockConsumer(consumer);
  static const std::string kSql =
      std::string("SELECT ") + kLedgerColumns +
      " FROM ledger WHERE subject=$2 AND consumer=$1 AND state='applied'"
      " AND projection_version>$3 AND (cardinality($4::text[])=0 OR type=ANY($4::text[]))"
      " ORDER BY projection_version, committed_at_ms, source COLLATE \"C\","
      " event_id COLLATE \"C\" LIMIT 1";
  Params p;
  p.Text(consumer).Text(subject).Int(after_projection_version);
  p.TextArray(std::vector<std::string_view>(types.begin(), types.end()));
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, p));
  return ReadOne(rows, &ReadLedger);
}

// A row this transaction knows is checked here and updated without waiting (a row still buffered
// is changed in the buffer); another is updated at once, and a row that is not there or not
// deferred is refused with the transaction still usable.
Status PgTransaction::MarkApplied(std::string_view consumer, std::string_view source,
                                  std::string_view event_id, int64_t projection_version,
                                  int64_t committed_at_ms) {
  LockConsumer(consumer);
  static const std::string kSql =
      "UPDATE ledger SET state='applied', projection_version=$4, committed_at_ms=$5"
      " WHERE consumer=$1 AND source=$2 AND event_id=$3 AND state='deferred'";
  // The same, failing on the server when no row changed (Expect::checked_on_server).
  static const std::string kChecked =
      "WITH changed AS (" + kSql + " RETURNING 1) SELECT 1 / (SELECT count(*) FROM changed)::int";
  const Status missing = Status::Internal("no deferred ledger row to apply");
  Params params;
  params.Text(consumer).Text(source).Text(event_id).Int(projection_version).Int(committed_at_ms);
  const auto it = ledger_.find(Key(consumer, source, event_id));
  if (it == ledger_.end()) {
    EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Db().Query(kSql, params));
    return done.affected() == 1 ? Status::Ok() : missing;
  }
  if (!it->second || it->second->state != LedgerState::kDeferred) return missing;
  it->second->state = LedgerState::kApplied;
  it->second->projection_version = projection_version;
  it->second->committed_at_ms = committed_at_ms;
  if (LedgerEntry* buffered = BufferedLedger(it->first)) {
    *buffered = *it->second;
    return Status::Ok();
  }
  // This transaction read the row as deferred: when the server finds it otherwise, another
  // writer applied it meanwhile (a member that took over this partition), a conflict the batch
  // is retried on, as a ledger insert that another writer beat is. Not kInternal: this statement
  // goes out ahead of buffered inserts whose own conflict would otherwise have been reported.
  Conn().Send(kChecked, params,
              Expect{.checked_on_server = true,
                     .otherwise = Status::Aborted(
                         "ledger row " + std::string(event_id) +
                         " is no longer deferred (another writer applied it); the batch is "
                         "retried")});
  return Status::Ok();
}

Status PgTransaction::CountDuplicate(std::string_view consumer, std::string_view source,
                                     std::string_view event_id, int64_t at_ms) {
  LockConsumer(consumer);
  static const std::string kSql =
      "UPDATE ledger SET duplicates=duplicates+1, last_duplicate_at_ms=$4"
      " WHERE consumer=$1 AND source=$2 AND event_id=$3";
  if (const auto it = ledger_.find(Key(consumer, source, event_id));
      it != ledger_.end() && it->second) {
    it->second->duplicates += 1;
    it->second->last_duplicate_at_ms = at_ms;
    if (LedgerEntry* buffered = BufferedLedger(it->first)) {
      *buffered = *it->second;
      return Status::Ok();
    }
  }
  Conn().Send(kSql, Params().Text(consumer).Text(source).Text(event_id).Int(at_ms));
  return Status::Ok();
}

LedgerEntry* PgTransaction::BufferedLedger(const std::string& key) {
  const auto it = ledger_buffered_.find(key);
  if (it == ledger_buffered_.end()) return nullptr;
  assert(it->second < ledger_inserts_.size());
  return &ledger_inserts_[it->second];
}

Result<bool> PgTransaction::ReadProjection(std::string_view consumer, std::string_view subject,
                                           Projection& out) {
  LockConsumer(consumer);
  static const std::string kSql = std::string("SELECT ") + kProjectionColumns +
                                  " FROM projection WHERE subject=$2 AND consumer=$1";
  std::string key = Key(consumer, subject);
  auto it = projections_.find(key);
  if (it == projections_.end()) {
    EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                             Db().Query(kSql, Params().Text(consumer).Text(subject)));
    EVIDENT_ASSIGN_OR_RETURN(std::optional<Projection> row, ReadOne(rows, &ReadProjectionRow));
    it = projections_.emplace(std::move(key), std::move(row)).first;
  }
  if (!it->second) {
    FreshProjection(consumer, subject, out);
    return false;
  }
  AssignProjection(*it->second, out);
  return true;
}

// Read from the server, FOR SHARE: a transaction that changes the row (a decision) commits before
// this read returns, or waits for this transaction to end. The cache keeps what was read.
Result<bool> PgTransaction::ReadProjectionLocked(std::string_view consumer,
                                                 std::string_view subject, Projection& out) {
  LockConsumer(consumer);
  static const std::string kSql = std::string("SELECT ") + kProjectionColumns +
                                  " FROM projection WHERE subject=$2 AND consumer=$1 FOR SHARE";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(kSql, Params().Text(consumer).Text(subject)));
  EVIDENT_ASSIGN_OR_RETURN(std::optional<Projection> row, ReadOne(rows, &ReadProjectionRow));
  auto& cached = projections_[Key(consumer, subject)];
  cached = std::move(row);
  if (!cached) {
    FreshProjection(consumer, subject, out);
    return false;
  }
  AssignProjection(*cached, out);
  return true;
}

// The expected version is checked here against the projection as this transaction knows it
// (read first when it was not loaded), and again by the server when the put is sent
// (FlushProjections: the row's version in the UPDATE, or the primary key of a new row).
Status PgTransaction::PutProjection(const Projection& projection,
                                    std::optional<int64_t> expected_version) {
  LockConsumer(projection.consumer);
  const std::string key = Key(projection.consumer, projection.subject);
  auto it = projections_.find(key);
  if (it == projections_.end()) {  // not loaded: read it, so that a mismatch leaves no trace
    Projection scratch;
    EVIDENT_RETURN_IF_ERROR(
        ReadProjection(projection.consumer, projection.subject, scratch).status());
    it = projections_.find(key);
    assert(it != projections_.end());
  }
  const std::optional<int64_t> version =
      it->second ? std::optional<int64_t>(it->second->version) : std::nullopt;
  if (version != expected_version) return ProjectionMoved(projection);
  Projection stored = projection;
  if (it->second) {
    stored.owner_version_seen =
        std::max(it->second->owner_version_seen, projection.owner_version_seen);
  }
  // Buffered (FlushProjections): the server checks again, since a writer elsewhere may have
  // changed the row since it was read. Later puts of the key in this transaction replace the
  // value and keep the version the first one expected of the stored row.
  const auto [put, fresh] =
      projection_puts_.try_emplace(key, ProjectionPut{expected_version, stored});
  if (!fresh) put->second.value = stored;
  it->second = std::move(stored);
  return Status::Ok();
}

Result<std::optional<DeferredEvent>> PgTransaction::FindDeferred(std::string_view consumer,
                                                                 std::string_view subject,
                                                                 int64_t subject_version) {
  LockConsumer(consumer);
  static const std::string kSql =
      std::string("SELECT ") + kDeferredColumns +
      " FROM deferred WHERE subject=$2 AND consumer=$1 AND subject_version=$3";
  std::string key = Key(consumer, subject, subject_version);
  if (const auto it = deferred_.find(key); it != deferred_.end()) return it->second;
  if (deferred_subjects_.count(Key(consumer, subject)) != 0) return std::optional<DeferredEvent>();
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql, Params().Text(consumer).Text(subject).Int(subject_version)));
  EVIDENT_ASSIGN_OR_RETURN(std::optional<DeferredEvent> row, ReadOne(rows, &ReadDeferred));
  deferred_.emplace(std::move(key), row);
  return row;
}

Result<Insert> PgTransaction::InsertDeferred(const DeferredEvent& event) {
  LockConsumer(event.consumer);
  std::string key = Key(event.consumer, event.subject, event.subject_version);
  const auto it = deferred_.find(key);
  const bool known =
      it != deferred_.end() || deferred_subjects_.count(Key(event.consumer, event.subject)) != 0;
  if (it != deferred_.end() && it->second) return Insert::kAlreadyThere;
  if (known) {
    Conn().Send(kDeferredInsert, DeferredParams(event), Expect{.unique_is_conflict = true});
    deferred_.insert_or_assign(std::move(key), event);
    return Insert::kInserted;
  }
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done,
                           Db().Query(kDeferredInsertIfAbsent, DeferredParams(event)));
  if (done.affected() == 0) return Insert::kAlreadyThere;
  deferred_.insert_or_assign(std::move(key), event);
  return Insert::kInserted;
}

Status PgTransaction::DeleteDeferred(std::string_view consumer, std::string_view subject,
                                     int64_t subject_version) {
  LockConsumer(consumer);
  static const std::string kSql =
      "DELETE FROM deferred WHERE subject=$2 AND consumer=$1 AND subject_version=$3";
  Conn().Send(kSql, Params().Text(consumer).Text(subject).Int(subject_version));
  deferred_.insert_or_assign(Key(consumer, subject, subject_version), std::nullopt);
  return Status::Ok();
}

// One statement: the unique index on the input's identity and the SHA-256 of its bytes finds
// the record of the same input, or a new one opens (xmax is 0 on a row this statement inserted).
Result<QuarantineKept> PgTransaction::Quarantine(const QuarantineRecord& r) {
  assert(r.outcome != Outcome::kApplied && r.outcome != Outcome::kDeferred &&
         r.outcome != Outcome::kDuplicate);
  static const std::string kSql =
      "INSERT INTO quarantine AS q(consumer, ident_source, ident_id, raw_digest, outcome, reason,"
      " message, source, event_id, type, subject, subject_version, schema_version, raw, attempts,"
      " first_seen_ms, last_seen_ms, status, input_index)"
      " VALUES($1, $2, $3, sha256($13), $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 1, $14, $14,"
      " 'open', $15)"
      " ON CONFLICT (consumer, ident_source, ident_id, raw_digest) DO UPDATE SET"
      " attempts=q.attempts+1, last_seen_ms=GREATEST(q.last_seen_ms, EXCLUDED.last_seen_ms),"
      " outcome=EXCLUDED.outcome, reason=EXCLUDED.reason, message=EXCLUDED.message,"
      " type=CASE WHEN EXCLUDED.type<>'' THEN EXCLUDED.type ELSE q.type END,"
      " subject=CASE WHEN EXCLUDED.subject<>'' THEN EXCLUDED.subject ELSE q.subject END,"
      " subject_version=COALESCE(EXCLUDED.subject_version, q.subject_version),"
      " schema_version=COALESCE(EXCLUDED.schema_version, q.schema_version),"
      " input_index=EXCLUDED.input_index"
      " RETURNING id, xmax = 0";
  const bool identified = !r.source.empty() && !r.event_id.empty();
  Params p;
  p.Text(r.consumer).Text(identified ? r.source : "").Text(identified ? r.event_id : "");
  p.Text(OutcomeName(r.outcome)).Text(r.reason).Text(r.message).Text(r.source).Text(r.event_id);
  p.Text(r.type).Text(r.subject).OptInt(r.subject_version).OptInt(r.schema_version).Bytes(r.raw);
  p.Int(r.last_seen_ms).Int(r.input_index);
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, p));
  if (rows.rows() != 1) return Status::Internal("quarantine upsert returned no row");
  return QuarantineKept{.id = rows.Int(0, 0), .added = rows.Int(0, 1) == 1};
}

Result<std::optional<QuarantineRecord>> PgTransaction::FindQuarantine(int64_t id) {
  return QueryQuarantine(Db(), id);
}

Result<std::optional<GapRecord>> PgTransaction::FindGap(std::string_view consumer,
                                                        std::string_view subject,
                                                        int64_t expected_version) {
  LockConsumer(consumer);
  static const std::string kSql =
      std::string("SELECT ") + kGapColumns +
      " FROM gap WHERE consumer=$1 AND subject=$2 AND expected_version=$3";
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql, Params().Text(consumer).Text(subject).Int(expected_version)));
  return ReadOne(rows, &ReadGap);
}

namespace {

const std::string kGapInsert =
    "INSERT INTO gap(consumer, subject, expected_version, missing_to, route, state,"
    " deadline_at_ms, acted_at_ms, request_event_id, closed_at_ms, closed_by, note,"
    " opened_at_ms, waiting, how, cause, answer, answered_at_ms)"
    " VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)"
    " ON CONFLICT DO NOTHING";

Params GapParams(const GapRecord& g) {
  Params p;
  p.Text(g.consumer).Text(g.subject).Int(g.expected_version).Int(g.missing_to);
  p.Text(GapRouteName(g.route)).Text(GapStateName(g.state)).Int(g.deadline_at_ms);
  p.OptInt(g.acted_at_ms).Text(g.request_event_id).OptInt(g.closed_at_ms).Text(g.closed_by);
  p.Text(g.note).OptInt(g.opened_at_ms).Text(JoinVersions(g.waiting_versions));
  p.Text(GapClosedHowName(g.how)).Text(GapCauseName(g.cause)).Text(g.answer);
  p.OptInt(g.answered_at_ms);
  return p;
}

}  // namespace

// A gap opening on the write path: sent without waiting, so that an ordered batch keeps its
// fixed number of round trips. A loaded subject counts the record as open (a key already
// there, which the server then keeps, is a closed record of a gap that opened again: rare, and
// its only cost is one close the server finds nothing for).
Status PgTransaction::RecordGap(const GapRecord& g) {
  LockConsumer(g.consumer);
  Conn().Send(kGapInsert, GapParams(g));  // as InsertGap: the buffered rows stay buffered
  const auto known = open_gaps_.find(Key(g.consumer, g.subject));
  if (known != open_gaps_.end() && g.state != GapState::kClosed) {
    known->second.push_back(g.missing_to);
  }
  return Status::Ok();
}

// Gap records touch neither buffered table (ledger, projection): they go out without sending the
// buffered rows first (Conn, not Db), so a batch's deferrals do not split its multi-row inserts.
Result<Insert> PgTransaction::InsertGap(const GapRecord& g) {
  LockConsumer(g.consumer);
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Conn().Query(kGapInsert, GapParams(g)));
  if (done.affected() != 1) return Insert::kAlreadyThere;
  const auto known = open_gaps_.find(Key(g.consumer, g.subject));
  if (known != open_gaps_.end() && g.state != GapState::kClosed) {
    known->second.push_back(g.missing_to);
  }
  return Insert::kInserted;
}

// The waiting versions are replaced only when `closing` names some ($9 NULL keeps them).
Result<int64_t> PgTransaction::CloseGaps(std::string_view consumer, std::string_view subject,
                                         int64_t through_version, const GapClosing& closing) {
  LockConsumer(consumer);
  static const std::string kSql =
      "UPDATE gap SET state='closed', closed_at_ms=$4, closed_by=$5, note=$6, how=$7, cause=$8,"
      " waiting=COALESCE($9::text, waiting),"
      " missing_to=GREATEST(expected_version, LEAST(missing_to, COALESCE($10::bigint, missing_to)))"
      " WHERE consumer=$1 AND subject=$2 AND state<>'closed' AND missing_to<=$3";
  Params params;
  params.Text(consumer).Text(subject).Int(through_version).Int(closing.at_ms).Text(closing.by);
  params.Text(closing.note).Text(GapClosedHowName(closing.how));
  params.Text(GapCauseName(closing.cause));
  if (closing.waiting_versions.empty()) {
    params.Null().Null();
  } else {
    params.Text(JoinVersions(closing.waiting_versions));
    params.Int(*std::min_element(closing.waiting_versions.begin(), closing.waiting_versions.end()) -
               1);
  }
  const auto known = open_gaps_.find(Key(consumer, subject));
  if (known == open_gaps_.end()) {
    EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Conn().Query(kSql, params));
    return done.affected();
  }
  // A subject whose open records were loaded: counted here, and closed without waiting.
  std::vector<int64_t>& open = known->second;
  const auto closed_from = std::partition(
      open.begin(), open.end(), [&](int64_t missing_to) { return missing_to > through_version; });
  const auto closed = static_cast<int64_t>(open.end() - closed_from);
  open.erase(closed_from, open.end());
  if (closed > 0) Conn().Send(kSql, params);  // as InsertGap: the buffered rows stay buffered
  return closed;
}

// Waits for the answer (a record not there is kNotFound). The subject's loaded open records
// are forgotten: the update may have moved or closed one of them.
Status PgTransaction::UpdateGap(const GapRecord& g) {
  LockConsumer(g.consumer);
  static const std::string kSql =
      "UPDATE gap SET missing_to=$4, route=$5, state=$6, deadline_at_ms=$7, acted_at_ms=$8,"
      " request_event_id=$9, closed_at_ms=$10, closed_by=$11, note=$12, waiting=$13, how=$14,"
      " cause=$15, answer=$16, answered_at_ms=$17"
      " WHERE consumer=$1 AND subject=$2 AND expected_version=$3";
  Params p;
  p.Text(g.consumer).Text(g.subject).Int(g.expected_version).Int(g.missing_to);
  p.Text(GapRouteName(g.route)).Text(GapStateName(g.state)).Int(g.deadline_at_ms);
  p.OptInt(g.acted_at_ms).Text(g.request_event_id).OptInt(g.closed_at_ms).Text(g.closed_by);
  p.Text(g.note).Text(JoinVersions(g.waiting_versions)).Text(GapClosedHowName(g.how));
  p.Text(GapCauseName(g.cause)).Text(g.answer).OptInt(g.answered_at_ms);
  open_gaps_.erase(Key(g.consumer, g.subject));
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Db().Query(kSql, p));
  if (done.affected() == 0) {
    return Status::NotFound("no gap record " + g.consumer + "/" + g.subject + " at version " +
                            std::to_string(g.expected_version));
  }
  return Status::Ok();
}

Status PgTransaction::SetQuarantineStatus(int64_t id, QuarantineStatus status) {
  static const std::string kSql = "UPDATE quarantine SET status=$2 WHERE id=$1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done,
                           Db().Query(kSql, Params().Int(id).Text(QuarantineStatusName(status))));
  if (done.affected() == 0) return Status::NotFound("no quarantine record " + std::to_string(id));
  return Status::Ok();
}

Status PgTransaction::AuditQuarantine(const QuarantineAudit& a) {
  static const std::string kSql =
      "INSERT INTO quarantine_audit(record_id, action, by_whom, note, outcome, reason,"
      " status_after, at_ms) SELECT $1::bigint, $2::text, $3::text, $4::text, $5::text,"
      " $6::text, $7::text, $8::bigint"
      " WHERE EXISTS(SELECT 1 FROM quarantine WHERE id=$1)";
  Params p;
  p.Int(a.record_id).Text(QuarantineActionName(a.action)).Text(a.by).Text(a.note);
  p.Text(a.outcome).Text(a.reason).Text(QuarantineStatusName(a.status_after)).Int(a.at_ms);
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Db().Query(kSql, p));
  if (done.affected() == 0) {
    return Status::NotFound("no quarantine record " + std::to_string(a.record_id));
  }
  return Status::Ok();
}

Status PgTransaction::Journal(const JournalEntry& e) {
  static const std::string kSql =
      "INSERT INTO journal(consumer, outcome, source, event_id, subject, subject_version, at_ms)"
      " VALUES($1, $2, $3, $4, $5, $6, $7)";
  Conn().Send(kSql, Params()
                        .Text(e.consumer)
                        .Text(OutcomeName(e.outcome))
                        .Text(e.source)
                        .Text(e.event_id)
                        .Text(e.subject)
                        .OptInt(e.subject_version)
                        .Int(e.at_ms));
  return Status::Ok();
}

Status PgTransaction::PutEvidence(const EvidenceRecord& record) {
  (void)Conn();  // the transaction is open (asserted); nothing is sent
  evidence_.insert_or_assign(Key(record.consumer, record.subject, record.name), record);
  return Status::Ok();
}

Status PgTransaction::SetPosition(std::string_view source, std::string_view position) {
  static const std::string kSql =
      "INSERT INTO position(source, position) VALUES($1, $2)"
      " ON CONFLICT (source) DO UPDATE SET position=EXCLUDED.position";
  Db().Send(kSql, Params().Text(source).Bytes(position));
  return Status::Ok();
}

Result<std::optional<std::string>> PgTransaction::GetPosition(std::string_view source) {
  return QueryPosition(Db(), source);
}

Result<OutboxAppend> PgTransaction::AppendOutbox(const OutboxRow& row) {
  static const std::string kInsert =
      "INSERT INTO outbox(source, event_id, type, subject, subject_version, event_partition,"
      " bytes, created_at_ms) VALUES($1, $2, $3, $4, $5, $6, $7, $8)"
      " ON CONFLICT (source, event_id) DO NOTHING RETURNING seq";
  static const std::string kThere =
      "SELECT seq, bytes=$3 FROM outbox WHERE source=$1 AND event_id=$2";
  Params p;
  p.Text(row.source).Text(row.event_id).Text(row.type).Text(row.subject);
  p.OptInt(row.subject_version).Int(row.partition).Bytes(row.bytes).Int(row.created_at_ms);
  static const std::string kPartition =
      "INSERT INTO outbox_partition(event_partition) VALUES($1) ON CONFLICT DO NOTHING";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset added, Db().Query(kInsert, p));
  if (added.rows() == 1) {
    Db().Send(kPartition, Params().Int(row.partition));  // for the relays' claims
    outbox_appended_ = true;
    return OutboxAppend{.outcome = OutboxOutcome::kAppended, .seq = added.Int(0, 0)};
  }
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset there,
      Db().Query(kThere, Params().Text(row.source).Text(row.event_id).Bytes(row.bytes)));
  if (there.rows() != 1) {
    return Status::Aborted("outbox row " + row.source + "/" + row.event_id +
                           " was deleted while appending it again (retry)");
  }
  return OutboxAppend{
      .outcome = there.Int(0, 1) == 1 ? OutboxOutcome::kDuplicate : OutboxOutcome::kConflict,
      .seq = there.Int(0, 0)};
}

Result<Rows<OutboxRow>> PgTransaction::PendingOutbox(int64_t after_seq, int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kOutboxColumns +
                                  " FROM outbox WHERE sent_at_ms IS NULL AND parked_at_ms IS NULL"
                                  " AND seq>$1"
                                  " ORDER BY seq LIMIT $2";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Db().Query(kSql, Params().Int(after_seq).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadOutbox);
}

// Sent without waiting (a relay marks a batch in one round trip, at commit); a seq with no row
// fails on the server (Expect::checked_on_server), and so the commit.
Status PgTransaction::MarkOutboxSent(int64_t seq, std::string_view stream,
                                     std::optional<int64_t> stream_sequence, int64_t at_ms) {
  static const std::string kSql =
      "WITH marked AS (UPDATE outbox SET sent_at_ms=$4, stream=$2, stream_sequence=$3,"
      " parked_at_ms=NULL, parked_reason='' WHERE seq=$1 AND sent_at_ms IS NULL RETURNING 1)"
      " SELECT 1 / (CASE WHEN EXISTS(SELECT 1 FROM outbox WHERE seq=$1) THEN 1 ELSE 0 END)";
  Db().Send(kSql, Params().Int(seq).Text(stream).OptInt(stream_sequence).Int(at_ms),
            Expect{.checked_on_server = true,
                   .otherwise = Status::NotFound("no outbox row " + std::to_string(seq))});
  return Status::Ok();
}

Status PgTransaction::RecordOutboxAttempt(int64_t seq, std::string_view error, int64_t at_ms) {
  static const std::string kSql =
      "WITH counted AS (UPDATE outbox SET attempts=attempts+1, last_error=$2,"
      " last_attempt_at_ms=$3 WHERE seq=$1 RETURNING 1)"
      " SELECT 1 / (SELECT count(*) FROM counted)::int";
  Db().Send(kSql, Params().Int(seq).Text(error).Int(at_ms),
            Expect{.checked_on_server = true,
                   .otherwise = Status::NotFound("no outbox row " + std::to_string(seq))});
  return Status::Ok();
}

// Parks (`park`) or unparks an unsent row: its state read first (and locked), so that a refusal
// says why.
Status PgTransaction::SetOutboxParked(int64_t seq, bool park, std::string_view reason,
                                      int64_t at_ms) {
  static const std::string kState =
      "SELECT (sent_at_ms IS NOT NULL)::int, (parked_at_ms IS NOT NULL)::int FROM outbox"
      " WHERE seq=$1 FOR UPDATE";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset state, Db().Query(kState, Params().Int(seq)));
  if (state.rows() == 0) return Status::NotFound("no outbox row " + std::to_string(seq));
  EVIDENT_RETURN_IF_ERROR(OutboxParkRefusal(seq, state.Int(0, 0) != 0, state.Int(0, 1) != 0, park));
  static const std::string kPark =
      "UPDATE outbox SET parked_at_ms=$2, parked_reason=$3 WHERE seq=$1";
  static const std::string kUnpark =
      "UPDATE outbox SET parked_at_ms=NULL, parked_reason='' WHERE seq=$1";
  return (park ? Db().Query(kPark, Params().Int(seq).Int(at_ms).Text(reason))
               : Db().Query(kUnpark, Params().Int(seq)))
      .status();
}

// Two statements, two round trips: the partitions are locked (FOR UPDATE SKIP LOCKED in
// outbox_partition) by the first, and the rows read by the second, whose snapshot is taken once
// the locks are held. (Read in one statement, the rows would come from a snapshot older than the
// lock: a partition its last holder had just marked and released would be read as still
// pending, and its rows published and "marked" a second time.) A claim whose partitions turned
// out to be emptied meanwhile goes on to others, a few times at most.
Result<Rows<OutboxRow>> PgTransaction::ClaimOutbox(int64_t rows_max, int64_t partitions_max,
                                                   int64_t hold_ms, int64_t /*now_ms*/) {
  assert(rows_max >= 0 && partitions_max >= 1 && hold_ms >= 1);
  static const std::string kHold =
      "SELECT set_config('idle_in_transaction_session_timeout', $1, true)";
  static const std::string kClaim =
      "SELECT p.event_partition FROM outbox_partition p WHERE EXISTS(SELECT 1 FROM outbox o"
      " WHERE o.event_partition=p.event_partition AND o.sent_at_ms IS NULL"
      " AND o.parked_at_ms IS NULL)"
      " ORDER BY p.event_partition<=$2, p.event_partition LIMIT $1 FOR UPDATE OF p SKIP LOCKED";
  // Round the claimed partitions: each one's oldest row, then each one's second, and so on (each
  // partition's rows stay in seq order), so that one partition's backlog does not take the
  // whole batch while the other claimed partitions wait. At most $1 rows read per partition.
  static const std::string kRows =
      std::string("SELECT ") + Qualified(kOutboxColumns, "r.") +
      " FROM unnest($2::bigint[]) AS p(part) CROSS JOIN LATERAL (SELECT x.*, row_number() OVER"
      " (ORDER BY x.seq) AS turn FROM (SELECT " +
      kOutboxColumns +
      " FROM outbox WHERE sent_at_ms IS NULL AND parked_at_ms IS NULL AND event_partition=p.part"
      " ORDER BY seq LIMIT $1) x)"
      " r ORDER BY r.turn, r.seq LIMIT $1";
  constexpr int kAttemptsMax = 4;
  Db().Send(kHold, Params().Text(std::to_string(hold_ms)));
  for (int attempt = 0; attempt < kAttemptsMax; ++attempt) {
    EVIDENT_ASSIGN_OR_RETURN(
        const Rowset locked,
        Db().Query(kClaim, Params().Int(partitions_max).Int(session_->last_claimed_partition)));
    std::vector<int64_t> partitions;
    for (int i = 0; i < locked.rows(); ++i) partitions.push_back(locked.Int(i, 0));
    EVIDENT_RETURN_IF_ERROR(locked.problem());
    if (partitions.empty()) break;
    EVIDENT_ASSIGN_OR_RETURN(
        const Rowset rows, Db().Query(kRows, Params().Int(LimitOf(rows_max)).IntArray(partitions)));
    EVIDENT_ASSIGN_OR_RETURN(Rows<OutboxRow> claimed, ReadRows(rows, rows_max, &ReadOutbox));
    if (!claimed.rows.empty()) {
      // The next claim starts above these partitions: one relay goes round them all.
      session_->last_claimed_partition = *std::max_element(partitions.begin(), partitions.end());
      return claimed;
    }
  }
  session_->last_claimed_partition = -1;
  return Rows<OutboxRow>{};
}

Result<int64_t> PgTransaction::DeleteSentOutbox(int64_t sent_before_ms, int64_t rows_max) {
  assert(rows_max >= 0);
  static const std::string kSql =
      "DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE sent_at_ms IS NOT NULL"
      " AND sent_at_ms<$1 ORDER BY seq LIMIT $2)";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done,
                           Db().Query(kSql, Params().Int(sent_before_ms).Int(rows_max)));
  return done.affected();
}

namespace {

// Nothing is inserted for a key retention kept as a digest ($20).
const std::string kIntentInsert =
    "INSERT INTO effect_intent(key, effect, consumer, subject, source, event_id,"
    " subject_version, request, state, attempts, last_error, http_status, response_digest,"
    " intended_at_ms, last_attempt_at_ms, next_attempt_at_ms, settled_at_ms, claimed_by,"
    " revision, basis_version) SELECT $1::text, $2::text, $3::text, $4::text, $5::text,"
    " $6::text, $7::bigint, $8::bytea, $9::text, $10::bigint, $11::text, $12::bigint,"
    " $13::text, $14::bigint, $15::bigint, $16::bigint, $17::bigint, $18::text, 1, $19::bigint"
    " WHERE NOT EXISTS (SELECT 1 FROM effect_digest WHERE digest=$20::bytea)"
    " ON CONFLICT (key) DO NOTHING";

// Whether the key is both an intent and a digest, which only an insert that raced a retention run
// removing another consumer's intent of that key can make: a statement of its own, whose
// snapshot sees that run's commit (the insert's did not, and waited for it on the key's index).
const std::string kIntentKeyRetainedMeanwhile =
    "SELECT 1 / (CASE WHEN EXISTS(SELECT 1 FROM effect_digest WHERE digest=$1::bytea)"
    " AND EXISTS(SELECT 1 FROM effect_intent WHERE key=$2::text) THEN 0 ELSE 1 END)";

Status KeyRetainedMeanwhile(const EffectIntent& intent) {
  return Status::FailedPrecondition(
      "effect " + intent.effect + " of " + intent.consumer + " keys " + intent.key +
      ", which retention kept as another intent's digest while this one was intended: give the "
      "two effects key templates that cannot meet");
}

// The intent's columns, $1 to $19, and its key's digest (IntentKeyDigest), $20.
Params IntentParams(const EffectIntent& e, std::string_view digest) {
  Params p;
  p.Text(e.key).Text(e.effect).Text(e.consumer).Text(e.subject).Text(e.source).Text(e.event_id);
  p.OptInt(e.subject_version).Bytes(e.request).Text(EffectStateName(e.state)).Int(e.attempts);
  p.Text(e.last_error).OptInt(e.http_status).Text(e.response_digest).Int(e.intended_at_ms);
  p.OptInt(e.last_attempt_at_ms).OptInt(e.next_attempt_at_ms).OptInt(e.settled_at_ms);
  p.Text(e.claimed_by).OptInt(e.basis_version).Bytes(digest);
  return p;
}

}  // namespace

// The effects' statements, from here to InsertCorrection, touch none of the buffered tables
// (ledger, projection): like the gap records they go out without sending the buffered rows first
// (Conn, not Db), so a batch's intents and compensations do not split its multi-row inserts.

// Sent without waiting: the statement inserts the intent; or finds its key held by the same
// consumer and effect and logs the trigger on that intent (every part of the statement sees the
// table as it was before it, so `logged` finds the key only when `added` did not insert it), or
// kept as a digest of the same consumer and effect (nothing to log on); or fails on the server
// (checked_on_server) when another consumer or effect holds the key.
Status PgTransaction::IntendOnce(const EffectIntent& intent, std::string_view trigger_detail) {
  static const std::string kSql =
      "WITH added AS (" + kIntentInsert +
      " RETURNING 1), logged AS (INSERT INTO effect_log(key, action, by_whom, state_after,"
      " http_status, detail, at_ms) SELECT key, 'trigger', consumer, state, NULL::bigint,"
      " $21::text, $14::bigint FROM effect_intent WHERE key=$1 AND effect=$2 AND consumer=$3"
      " AND NOT EXISTS(SELECT 1 FROM added) RETURNING 1)"
      " SELECT 1 / (CASE WHEN EXISTS(SELECT 1 FROM added) OR EXISTS(SELECT 1 FROM"
      " effect_intent WHERE key=$1 AND effect=$2 AND consumer=$3) OR EXISTS(SELECT 1 FROM"
      " effect_digest WHERE digest=$20 AND effect=$2 AND consumer=$3) THEN 1 ELSE 0 END)";
  EVIDENT_ASSIGN_OR_RETURN(const std::string digest, IntentKeyDigest(intent.key));
  Params p = IntentParams(intent, digest);
  p.Text(trigger_detail);
  Conn().Send(
      kSql, p,
      Expect{.checked_on_server = true,
             .otherwise = Status::FailedPrecondition(
                 "effect " + intent.effect + " of " + intent.consumer + " keys " + intent.key +
                 ", which another effect already holds: give the two effects key "
                 "templates that cannot meet")});
  SendKeyRetainedMeanwhile(intent, digest);
  return Status::Ok();
}

void PgTransaction::SendKeyRetainedMeanwhile(const EffectIntent& intent, std::string_view digest) {
  Conn().Send(kIntentKeyRetainedMeanwhile, Params().Bytes(digest).Text(intent.key),
              Expect{.checked_on_server = true, .otherwise = KeyRetainedMeanwhile(intent)});
}

Status PgTransaction::RecordCompensation(const CompensationRecord& c) {
  Conn().Send(kCompensationInsert, CompensationParams(c));
  return Status::Ok();
}

Result<Insert> PgTransaction::InsertIntent(const EffectIntent& e) {
  EVIDENT_ASSIGN_OR_RETURN(const std::string digest, IntentKeyDigest(e.key));
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Conn().Query(kIntentInsert, IntentParams(e, digest)));
  if (done.affected() != 1) return Insert::kAlreadyThere;
  SendKeyRetainedMeanwhile(e, digest);  // a race with retention fails at the latest at commit
  return Insert::kInserted;
}

Result<std::optional<EffectIntent>> PgTransaction::FindIntent(std::string_view key) {
  return QueryIntent(Conn(), key);
}

Result<Rows<EffectIntent>> PgTransaction::DueIntents(int64_t now_ms, int64_t rows_max) {
  static const std::string kSql = std::string("SELECT ") + kIntentColumns +
                                  " FROM effect_intent WHERE next_attempt_at_ms IS NOT NULL"
                                  " AND next_attempt_at_ms<=$1 ORDER BY next_attempt_at_ms, seq"
                                  " LIMIT $2";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Conn().Query(kSql, Params().Int(now_ms).Int(LimitOf(rows_max))));
  return ReadRows(rows, rows_max, &ReadIntent);
}

Status PgTransaction::UpdateIntent(const EffectIntent& e, int64_t expected_revision) {
  static const std::string kSql =
      "UPDATE effect_intent SET state=$2, attempts=$3, last_error=$4, http_status=$5,"
      " response_digest=$6, last_attempt_at_ms=$7, next_attempt_at_ms=$8, settled_at_ms=$9,"
      " claimed_by=$10, revision=revision+1 WHERE key=$1 AND revision=$11";
  static const std::string kChecked =
      "WITH changed AS (" + kSql + " RETURNING 1) SELECT 1 / (SELECT count(*) FROM changed)::int";
  Params p;
  p.Text(e.key).Text(EffectStateName(e.state)).Int(e.attempts).Text(e.last_error);
  p.OptInt(e.http_status).Text(e.response_digest).OptInt(e.last_attempt_at_ms);
  p.OptInt(e.next_attempt_at_ms).OptInt(e.settled_at_ms).Text(e.claimed_by);
  p.Int(expected_revision);
  const auto locked = locked_intents_.find(e.key);
  if (locked != locked_intents_.end() && locked->second == expected_revision) {
    // Held locked at that revision since this transaction read it: the update cannot miss, and
    // goes out without waiting (a miss would still fail the commit, saying so).
    Conn().Send(
        kChecked, p,
        Expect{.checked_on_server = true,
               .otherwise = Status::Aborted("effect intent " + e.key + " is not at revision " +
                                            std::to_string(expected_revision) +
                                            " though this transaction holds it locked")});
    locked->second = expected_revision + 1;
    return Status::Ok();
  }
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Conn().Query(kSql, p));
  if (done.affected() == 1) {
    if (locked != locked_intents_.end()) locked->second = expected_revision + 1;
    return Status::Ok();
  }
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<EffectIntent> there, QueryIntent(Conn(), e.key));
  if (!there) return Status::NotFound("no effect intent " + e.key);
  return Status::Aborted("effect intent " + e.key + " is at revision " +
                         std::to_string(there->revision) + ", not " +
                         std::to_string(expected_revision) + ": changed by another writer");
}

Status PgTransaction::LogIntent(const EffectLogEntry& e) {
  static const std::string kSql =
      "INSERT INTO effect_log(key, action, by_whom, state_after, http_status, detail, at_ms)"
      " SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint, $6::text, $7::bigint"
      " WHERE EXISTS(SELECT 1 FROM effect_intent WHERE key=$1)";
  static const std::string kChecked =
      "WITH logged AS (" + kSql + " RETURNING 1) SELECT 1 / (SELECT count(*) FROM logged)::int";
  Params p;
  p.Text(e.key).Text(EffectActionName(e.action)).Text(e.by).Text(EffectStateName(e.state_after));
  p.OptInt(e.http_status).Text(e.detail).Int(e.at_ms);
  if (locked_intents_.count(e.key) > 0) {  // it exists until the transaction ends
    Conn().Send(kChecked, p,
                Expect{.checked_on_server = true,
                       .otherwise = Status::NotFound("no effect intent " + e.key)});
    return Status::Ok();
  }
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Conn().Query(kSql, p));
  if (done.affected() == 0) return Status::NotFound("no effect intent " + e.key);
  return Status::Ok();
}

Result<Insert> PgTransaction::InsertCompensation(const CompensationRecord& c) {
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done,
                           Conn().Query(kCompensationInsert, CompensationParams(c)));
  return done.affected() == 1 ? Insert::kInserted : Insert::kAlreadyThere;
}

// Locked (FOR UPDATE) until the transaction ends: a runner's UpdateIntent of it and a
// compensation deciding on it take turns, so neither decides on a state the other is changing.
Result<std::optional<EffectIntent>> PgTransaction::LatestIntentOf(std::string_view consumer,
                                                                  std::string_view subject,
                                                                  std::string_view effect) {
  static const std::string kSql =
      std::string("SELECT ") + kIntentColumns +
      " FROM effect_intent WHERE subject=$2 AND consumer=$1 AND effect=$3"
      " ORDER BY seq DESC LIMIT 1 FOR UPDATE";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Conn().Query(kSql, Params().Text(consumer).Text(subject).Text(effect)));
  EVIDENT_ASSIGN_OR_RETURN(std::optional<EffectIntent> latest, ReadOne(rows, &ReadIntent));
  if (latest) locked_intents_[latest->key] = latest->revision;
  return latest;
}

Status PgTransaction::UpdateCompensation(const CompensationRecord& c) {
  static const std::string kSql =
      "UPDATE compensation SET covers=$2, compensating_key=$3, state=$4, detail=$5,"
      " updated_at_ms=$6 WHERE key=$1 AND consumer=$7";
  Params p;
  p.Text(c.key).Text(c.covers).Text(c.compensating_key).Text(CompensationStateName(c.state));
  p.Text(c.detail).Int(c.updated_at_ms).Text(c.consumer);
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Conn().Query(kSql, p));
  if (done.affected() == 0) return Status::NotFound("no compensation " + c.key);
  return Status::Ok();
}

// Through the indexes compensation_by_covers and compensation_by_compensating_key; an empty key
// names none (an owner's record covers nothing).
Result<std::vector<CompensationRecord>> PgTransaction::CompensationsOfIntent(std::string_view key) {
  if (key.empty()) return std::vector<CompensationRecord>();
  // Two index searches, each row once (the second branch leaves out what the first found), then
  // sorted: `covers=$1 OR compensating_key=$1 ORDER BY seq LIMIT $2` let a generic plan made
  // while the table was small walk the primary key in seq order, filtering, to the end of the
  // table whenever nothing matched (most intents): 0.65 ms a call on average over a run of
  // 20,000 events, growing with the table (pg_stat_statements, docs/BENCHMARKS.md).
  static const std::string kSql =
      std::string("SELECT * FROM (SELECT ") + kCompensationColumns +
      " FROM compensation WHERE covers=$1 UNION ALL SELECT " + kCompensationColumns +
      " FROM compensation WHERE compensating_key=$1 AND covers<>$1) AS c ORDER BY seq LIMIT $2";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows,
                           Conn().Query(kSql, Params().Text(key).Int(kCoveringRowsMax)));
  EVIDENT_ASSIGN_OR_RETURN(Rows<CompensationRecord> covering,
                           ReadRows(rows, kCoveringRowsMax, &ReadCompensation));
  return std::move(covering.rows);
}

// Sent without waiting: a correction has no key to collide on, and a failure fails the commit.
Status PgTransaction::InsertCorrection(const ProjectionCorrection& c) {
  static const std::string kSql =
      "INSERT INTO projection_correction(consumer, subject, before_json, after_json, by_whom,"
      " note, basis, forced, at_ms) VALUES($1, $2, $3, $4, $5, $6, $7, $8::boolean, $9)";
  Params p;
  p.Text(c.consumer).Text(c.subject).Text(c.before_json).Text(c.after_json).Text(c.by);
  p.Text(c.note).Text(c.basis).Text(c.forced ? "true" : "false").Int(c.at_ms);
  Db().Send(kSql, p);
  return Status::Ok();
}

}  // namespace evident::postgres
