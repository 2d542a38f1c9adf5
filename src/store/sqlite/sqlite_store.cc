// SQLite backend of the consumer store: one file, WAL, durable commits, every statement
// prepared once and bound (never string-built).
#include <fcntl.h>
#include <simdjson.h>
// Built twice: into the library, linked with libsqlite3, and into the SQLite extension
// (src/sqlite_ext), where every sqlite3_* call goes through the loading process's SQLite by the
// extension API's table, so that one process never holds two copies of SQLite (their file locks
// would not see each other).
#ifdef EVIDENT_SQLITE_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
#else
#include <sqlite3.h>
#endif
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/digest.h"
#include "core/fault_point.h"
#include "core/fnv1a.h"
#include "evident/store_sqlite.h"
#include "json/writer.h"
#include "store/outbox_rules.h"
#include "store/projection_copy.h"
#include "store/quarantine_rules.h"
#include "store/retained_entry.h"

namespace evident {
namespace {

// Per-subject tables (projection, deferred, the journal's index) lead their keys with the
// subject: keys then usually differ in their first column, which SQLite compares on a fast path
// (a key led by the consumer id repeats it in every comparison), and one subject's rows for all
// its consumers share a page. A store created with the earlier (consumer, subject) order keeps
// it: every query here names both columns, so either order serves it.
constexpr const char* kCoreSchema = R"sql(
CREATE TABLE IF NOT EXISTS ledger(
  consumer TEXT NOT NULL, source TEXT NOT NULL, event_id TEXT NOT NULL,
  state TEXT NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL,
  subject_version INTEGER, input_schema_version INTEGER NOT NULL,
  result_version INTEGER NOT NULL, projection_version INTEGER,
  committed_at_ms INTEGER NOT NULL, duplicates INTEGER NOT NULL DEFAULT 0,
  last_duplicate_at_ms INTEGER, adapter TEXT NOT NULL DEFAULT '', wrote TEXT NOT NULL DEFAULT '',
  traceparent TEXT NOT NULL DEFAULT '', tracestate TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(consumer, source, event_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ledger_by_subject ON ledger(subject, consumer);
CREATE TABLE IF NOT EXISTS projection(
  consumer TEXT NOT NULL, subject TEXT NOT NULL, version INTEGER NOT NULL,
  state TEXT NOT NULL, fields_json TEXT NOT NULL, owner_source TEXT NOT NULL,
  owner_version_seen INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL,
  evidence_json TEXT NOT NULL DEFAULT '{}', applied_digest TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(subject, consumer)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deferred(
  consumer TEXT NOT NULL, subject TEXT NOT NULL, subject_version INTEGER NOT NULL,
  source TEXT NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL,
  schema_version INTEGER NOT NULL, expected_version INTEGER NOT NULL, raw BLOB NOT NULL,
  received_at_ms INTEGER NOT NULL, deadline_at_ms INTEGER NOT NULL, route TEXT NOT NULL,
  input_index INTEGER NOT NULL,
  PRIMARY KEY(subject, consumer, subject_version)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal(
  seq INTEGER PRIMARY KEY, consumer TEXT NOT NULL, outcome TEXT NOT NULL, source TEXT NOT NULL,
  event_id TEXT NOT NULL, subject TEXT NOT NULL, subject_version INTEGER,
  at_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS journal_by_subject ON journal(subject, consumer);
CREATE TABLE IF NOT EXISTS position(
  source TEXT PRIMARY KEY, position BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS evident_schema(version INTEGER NOT NULL);
)sql";

// Layout 3 adds the outbox (seq AUTOINCREMENT: a seq is never reused, though sent rows are
// deleted). Layout 4 keeps each row's bytes in `outbox_body`, apart from the delivery state: a
// row marked sent (an UPDATE, which SQLite writes as the whole record again) then rewrites
// about a hundred bytes instead of the event too, and a batch of marks dirties a few pages
// instead of every page the batch's events fill (relay_bench, docs/BENCHMARKS.md).
constexpr const char* kOutboxSchema = R"sql(
CREATE TABLE IF NOT EXISTS outbox(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL, event_id TEXT NOT NULL,
  type TEXT NOT NULL, subject TEXT NOT NULL, subject_version INTEGER,
  event_partition INTEGER NOT NULL, created_at_ms INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT NOT NULL DEFAULT '',
  last_attempt_at_ms INTEGER, sent_at_ms INTEGER, stream TEXT NOT NULL DEFAULT '',
  stream_sequence INTEGER, parked_at_ms INTEGER, parked_reason TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS outbox_body(seq INTEGER PRIMARY KEY, bytes BLOB NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS outbox_by_id ON outbox(source, event_id);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox(seq) WHERE sent_at_ms IS NULL;
CREATE INDEX IF NOT EXISTS outbox_sent ON outbox(sent_at_ms) WHERE sent_at_ms IS NOT NULL;
)sql";

// A layout-3 outbox holds the bytes in its rows: they move to outbox_body.
constexpr const char* kMigrateOutboxBody = R"sql(
INSERT INTO outbox_body(seq, bytes) SELECT seq, bytes FROM outbox;
ALTER TABLE outbox DROP COLUMN bytes;
)sql";
constexpr const char* kOutboxBytesColumnSql =
    "SELECT count(*) FROM pragma_table_info('outbox') WHERE name='bytes'";

// Layout 4 adds the gap records, and replaces the `kept` table (a row per refused delivery) with
// the quarantine: one record per input, found again by its identity (consumer; source and id when
// both were read, else empty; a 64-bit FNV-1a hash of the bytes, the bytes themselves compared on a
// match) so that a re-delivery counts an attempt; and the audit of what operators did to each
// record.
constexpr const char* kQuarantineSchema = R"sql(
CREATE TABLE IF NOT EXISTS quarantine(
  id INTEGER PRIMARY KEY, consumer TEXT NOT NULL, ident_source TEXT NOT NULL,
  ident_id TEXT NOT NULL, raw_hash INTEGER NOT NULL, outcome TEXT NOT NULL,
  reason TEXT NOT NULL, message TEXT NOT NULL, source TEXT NOT NULL, event_id TEXT NOT NULL,
  type TEXT NOT NULL, subject TEXT NOT NULL, subject_version INTEGER, schema_version INTEGER,
  raw BLOB NOT NULL, attempts INTEGER NOT NULL, first_seen_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL, status TEXT NOT NULL, input_index INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS quarantine_by_ident
  ON quarantine(consumer, ident_source, ident_id, raw_hash);
CREATE INDEX IF NOT EXISTS quarantine_by_subject ON quarantine(subject, id);
CREATE INDEX IF NOT EXISTS quarantine_by_first_seen ON quarantine(first_seen_ms, id);
CREATE TABLE IF NOT EXISTS quarantine_audit(
  seq INTEGER PRIMARY KEY, record_id INTEGER NOT NULL, action TEXT NOT NULL,
  by_whom TEXT NOT NULL, note TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL,
  status_after TEXT NOT NULL, at_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS quarantine_audit_by_record ON quarantine_audit(record_id, seq);
CREATE TABLE IF NOT EXISTS gap(
  consumer TEXT NOT NULL, subject TEXT NOT NULL, expected_version INTEGER NOT NULL,
  missing_to INTEGER NOT NULL, route TEXT NOT NULL, state TEXT NOT NULL,
  deadline_at_ms INTEGER NOT NULL, acted_at_ms INTEGER,
  request_event_id TEXT NOT NULL, closed_at_ms INTEGER, closed_by TEXT NOT NULL,
  note TEXT NOT NULL, opened_at_ms INTEGER, waiting TEXT NOT NULL DEFAULT '',
  how TEXT NOT NULL DEFAULT '', cause TEXT NOT NULL DEFAULT '', answer TEXT NOT NULL DEFAULT '',
  answered_at_ms INTEGER,
  PRIMARY KEY(consumer, subject, expected_version)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS gap_open ON gap(deadline_at_ms) WHERE state<>'closed';
)sql";

// Layout 5 adds effect intents (one per key; the due index serves the runners' polls, the
// subject index evidence and guards), their logs of attempts and resolutions, and the
// compensation ledger (one record per key). Compensations are never deleted, and the intent of
// the largest seq never is (retention keeps the latest intent of each consumer, subject and
// effect), so a plain rowid never reuses a seq: no AUTOINCREMENT, whose sqlite_sequence row would
// be one more B-tree write per intent on the consumer's hot path (as would an index by state: a
// list by state reads the table).
constexpr const char* kEffectSchema = R"sql(
CREATE TABLE IF NOT EXISTS effect_intent(
  seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, effect TEXT NOT NULL,
  consumer TEXT NOT NULL, subject TEXT NOT NULL, source TEXT NOT NULL, event_id TEXT NOT NULL,
  subject_version INTEGER, request BLOB NOT NULL, state TEXT NOT NULL,
  attempts INTEGER NOT NULL, last_error TEXT NOT NULL, http_status INTEGER,
  response_digest TEXT NOT NULL, intended_at_ms INTEGER NOT NULL, last_attempt_at_ms INTEGER,
  next_attempt_at_ms INTEGER, settled_at_ms INTEGER, claimed_by TEXT NOT NULL,
  revision INTEGER NOT NULL, basis_version INTEGER);
CREATE INDEX IF NOT EXISTS effect_intent_due ON effect_intent(next_attempt_at_ms, seq)
  WHERE next_attempt_at_ms IS NOT NULL;
CREATE INDEX IF NOT EXISTS effect_intent_by_subject ON effect_intent(subject, consumer, seq);
CREATE TABLE IF NOT EXISTS effect_log(
  seq INTEGER PRIMARY KEY, key TEXT NOT NULL, action TEXT NOT NULL, by_whom TEXT NOT NULL,
  state_after TEXT NOT NULL, http_status INTEGER, detail TEXT NOT NULL, at_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS effect_log_by_key ON effect_log(key, seq);
CREATE TABLE IF NOT EXISTS compensation(
  seq INTEGER PRIMARY KEY, key TEXT NOT NULL, consumer TEXT NOT NULL,
  subject TEXT NOT NULL, owner_source TEXT NOT NULL, owner_version INTEGER,
  event_id TEXT NOT NULL, type TEXT NOT NULL, recorded_at_ms INTEGER NOT NULL,
  recorded_by TEXT NOT NULL DEFAULT 'consumer', decision TEXT NOT NULL DEFAULT '',
  compensates TEXT NOT NULL DEFAULT '', covers TEXT NOT NULL DEFAULT '',
  compensate_with TEXT NOT NULL DEFAULT '', compensating_key TEXT NOT NULL DEFAULT '',
  compensating_request BLOB NOT NULL DEFAULT x'', basis_version INTEGER,
  state TEXT NOT NULL DEFAULT 'recorded', detail TEXT NOT NULL DEFAULT '',
  updated_at_ms INTEGER NOT NULL DEFAULT 0, UNIQUE(consumer, key));
CREATE INDEX IF NOT EXISTS compensation_by_subject ON compensation(subject, consumer, seq);
)sql";

// Layout 8: what an effect's intent was intended on and what a compensation did about it
// (effects/compensation.h), gap records from a gap's opening to its close with how and why it
// closed, the payload digest of the event that set a projection's version, and a person's
// corrections of projections. Its indexes name columns an older table gains in the migration,
// so they are created after it.
constexpr const char* kLayout8Schema = R"sql(
CREATE INDEX IF NOT EXISTS compensation_by_covers ON compensation(covers);
CREATE INDEX IF NOT EXISTS compensation_by_compensating_key ON compensation(compensating_key);
CREATE INDEX IF NOT EXISTS outbox_by_subject ON outbox(subject, subject_version)
  WHERE subject_version IS NOT NULL;
CREATE TABLE IF NOT EXISTS projection_correction(
  seq INTEGER PRIMARY KEY, consumer TEXT NOT NULL, subject TEXT NOT NULL,
  before_json TEXT NOT NULL, after_json TEXT NOT NULL, by_whom TEXT NOT NULL,
  note TEXT NOT NULL, basis TEXT NOT NULL, forced INTEGER NOT NULL, at_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS projection_correction_by_subject
  ON projection_correction(subject, consumer, seq);
)sql";

// A compensation table of layout 7 or older (one record per key, none of the layout-8 columns)
// is rebuilt as layout 8's: one record per (consumer, key), so that an owner's record and a
// consumer's of the same decision live side by side.
constexpr const char* kMigrateCompensation8 = R"sql(
ALTER TABLE compensation RENAME TO compensation_7;
DROP INDEX IF EXISTS compensation_by_subject;
CREATE TABLE compensation(
  seq INTEGER PRIMARY KEY, key TEXT NOT NULL, consumer TEXT NOT NULL,
  subject TEXT NOT NULL, owner_source TEXT NOT NULL, owner_version INTEGER,
  event_id TEXT NOT NULL, type TEXT NOT NULL, recorded_at_ms INTEGER NOT NULL,
  recorded_by TEXT NOT NULL DEFAULT 'consumer', decision TEXT NOT NULL DEFAULT '',
  compensates TEXT NOT NULL DEFAULT '', covers TEXT NOT NULL DEFAULT '',
  compensate_with TEXT NOT NULL DEFAULT '', compensating_key TEXT NOT NULL DEFAULT '',
  compensating_request BLOB NOT NULL DEFAULT x'', basis_version INTEGER,
  state TEXT NOT NULL DEFAULT 'recorded', detail TEXT NOT NULL DEFAULT '',
  updated_at_ms INTEGER NOT NULL DEFAULT 0, UNIQUE(consumer, key));
INSERT INTO compensation(seq, key, consumer, subject, owner_source, owner_version, event_id,
  type, recorded_at_ms, updated_at_ms)
SELECT seq, key, consumer, subject, owner_source, owner_version, event_id, type,
  recorded_at_ms, recorded_at_ms FROM compensation_7;
DROP TABLE compensation_7;
CREATE INDEX IF NOT EXISTS compensation_by_subject ON compensation(subject, consumer, seq);
)sql";

// A gap table of layout 7 or older (acted_at_ms NOT NULL, none of the layout-8 columns) is
// rebuilt as layout 8's; its records keep every column they had.
constexpr const char* kMigrateGap8 = R"sql(
ALTER TABLE gap RENAME TO gap_7;
DROP INDEX IF EXISTS gap_open;
CREATE TABLE gap(
  consumer TEXT NOT NULL, subject TEXT NOT NULL, expected_version INTEGER NOT NULL,
  missing_to INTEGER NOT NULL, route TEXT NOT NULL, state TEXT NOT NULL,
  deadline_at_ms INTEGER NOT NULL, acted_at_ms INTEGER,
  request_event_id TEXT NOT NULL, closed_at_ms INTEGER, closed_by TEXT NOT NULL,
  note TEXT NOT NULL, opened_at_ms INTEGER, waiting TEXT NOT NULL DEFAULT '',
  how TEXT NOT NULL DEFAULT '', cause TEXT NOT NULL DEFAULT '', answer TEXT NOT NULL DEFAULT '',
  answered_at_ms INTEGER,
  PRIMARY KEY(consumer, subject, expected_version)) WITHOUT ROWID;
INSERT INTO gap(consumer, subject, expected_version, missing_to, route, state, deadline_at_ms,
  acted_at_ms, request_event_id, closed_at_ms, closed_by, note, how, cause)
SELECT consumer, subject, expected_version, missing_to, route, state, deadline_at_ms,
  acted_at_ms, request_event_id, closed_at_ms, closed_by, note,
  CASE WHEN state='closed' THEN (CASE WHEN closed_by='arrival' THEN 'drained' ELSE 'resolved' END)
    ELSE '' END,
  CASE WHEN state='closed' THEN (CASE WHEN closed_by='arrival' THEN 'out-of-order' ELSE 'missing'
    END) ELSE '' END
FROM gap_7;
DROP TABLE gap_7;
CREATE INDEX IF NOT EXISTS gap_open ON gap(deadline_at_ms) WHERE state<>'closed';
)sql";

// The kept rows of an older layout become records: the deliveries of one input merge into one
// record (attempts = their count, first and last seen = their earliest and latest time, the
// refusal of the latest), in the order each input was first kept.
constexpr const char* kMigrateKept = R"sql(
CREATE TABLE IF NOT EXISTS kept(
  seq INTEGER PRIMARY KEY, consumer TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL,
  message TEXT NOT NULL, source TEXT NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL,
  subject TEXT NOT NULL, subject_version INTEGER, raw BLOB NOT NULL,
  received_at_ms INTEGER NOT NULL, input_index INTEGER NOT NULL);
INSERT INTO quarantine(consumer, ident_source, ident_id, raw_hash, outcome, reason, message,
  source, event_id, type, subject, subject_version, schema_version, raw, attempts,
  first_seen_ms, last_seen_ms, status, input_index)
SELECT consumer, ident_source, ident_id, evident_fnv1a(raw), outcome, reason, message, source,
  event_id, type, subject, subject_version, NULL, CAST(raw AS BLOB), deliveries, first_seen,
  last_seen, 'open',
  input_index
FROM (SELECT k.*, count(*) OVER w AS deliveries, min(received_at_ms) OVER w AS first_seen,
        max(received_at_ms) OVER w AS last_seen, min(seq) OVER w AS first_seq,
        row_number() OVER (PARTITION BY consumer, ident_source, ident_id, raw
                           ORDER BY seq DESC) AS latest
      FROM (SELECT *, CASE WHEN source<>'' AND event_id<>'' THEN source ELSE '' END
                        AS ident_source,
                      CASE WHEN source<>'' AND event_id<>'' THEN event_id ELSE '' END
                        AS ident_id FROM kept) AS k
      WINDOW w AS (PARTITION BY consumer, ident_source, ident_id, raw))
WHERE latest=1 ORDER BY first_seq;
DROP TABLE kept;
)sql";

// Layout 9: consumer groups (group.h). Their members share one file: the processes of one
// machine, or one process whose partitions a broker assigns (Kafka), each batch fenced by the
// lease's epoch as on PostgreSQL; SQLite's single writer orders a fence against a takeover.
constexpr const char* kGroupSchema = R"sql(
CREATE TABLE IF NOT EXISTS consumer_group(
  group_name TEXT PRIMARY KEY, partition_count INTEGER NOT NULL, created_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS group_member(
  group_name TEXT NOT NULL, member TEXT NOT NULL, joined_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL, PRIMARY KEY(group_name, member)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS group_lease(
  group_name TEXT NOT NULL, event_partition INTEGER NOT NULL, holder TEXT NOT NULL,
  epoch INTEGER NOT NULL, acquired_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL,
  position INTEGER, lag INTEGER, PRIMARY KEY(group_name, event_partition)
) WITHOUT ROWID;
)sql";

// Layout 11: retention (store_retention.h). Closed gaps are found by their close time, and each
// run that removed anything is kept for evidence.
constexpr const char* kRetentionSchema = R"sql(
CREATE INDEX IF NOT EXISTS gap_closed ON gap(closed_at_ms) WHERE state='closed';
CREATE TABLE IF NOT EXISTS retention_run(
  seq INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL UNIQUE, horizon_ms INTEGER NOT NULL,
  archive TEXT NOT NULL, removed INTEGER NOT NULL, forgot_before_ms INTEGER NOT NULL DEFAULT 0);
)sql";

// Layout 12: contracts kept in the store (store_contracts.h), one row per pushed set.
constexpr const char* kContractsSchema = R"sql(
CREATE TABLE IF NOT EXISTS contract_set(
  version INTEGER PRIMARY KEY, pushed_at_ms INTEGER NOT NULL, digest TEXT NOT NULL,
  settings TEXT NOT NULL, files TEXT NOT NULL);
)sql";

// Layout 13: consumer sets kept in the store (`consumers push`, stored_consumers.h), one row per
// pushed set, numbered on their own.
constexpr const char* kConsumersSchema = R"sql(
CREATE TABLE IF NOT EXISTS consumer_set(
  version INTEGER PRIMARY KEY, pushed_at_ms INTEGER NOT NULL, digest TEXT NOT NULL,
  settings TEXT NOT NULL, files TEXT NOT NULL);
)sql";

// Layout 14: the keys of receipts retention compacted (store_retention.h, kLedger), each as 16
// bytes of SHA-256 (LedgerKeyDigest) with the second it was committed in, and nothing else.
constexpr const char* kLedgerDigestSchema = R"sql(
CREATE TABLE IF NOT EXISTS ledger_digest(
  digest BLOB PRIMARY KEY, committed_s INTEGER NOT NULL) WITHOUT ROWID;
)sql";

// Layout 15: the keys of intents retention removed (store_retention.h, kIntent), each as 16 bytes
// of SHA-256 (IntentKeyDigest) with its effect, consumer, settled state and the second it
// settled in; and each run's forgetting of ledger digests (retention_run.forgot_before_ms, a
// column the migration adds).
constexpr const char* kEffectDigestSchema = R"sql(
CREATE TABLE IF NOT EXISTS effect_digest(
  digest BLOB PRIMARY KEY, effect TEXT NOT NULL, consumer TEXT NOT NULL, state TEXT NOT NULL,
  settled_s INTEGER NOT NULL) WITHOUT ROWID;
)sql";

// Every table and index of the current layout (each IF NOT EXISTS).
const std::string& Schema() {
  static const std::string kSchema = std::string(kCoreSchema) + kOutboxSchema + kQuarantineSchema +
                                     kEffectSchema + kLayout8Schema + kGroupSchema +
                                     kRetentionSchema + kContractsSchema + kConsumersSchema +
                                     kLedgerDigestSchema + kEffectDigestSchema;
  return kSchema;
}

// The hash Transaction::Quarantine finds a record's bytes by, as a SQL function for the
// migration of kept rows.
void Fnv1aSql(sqlite3_context* context, int, sqlite3_value** args) {
  const auto* bytes = static_cast<const char*>(sqlite3_value_blob(args[0]));
  const auto size = static_cast<size_t>(sqlite3_value_bytes(args[0]));
  const uint64_t hash = Fnv1a(kFnv1aOffset, std::string_view(bytes == nullptr ? "" : bytes, size));
  sqlite3_result_int64(context, static_cast<int64_t>(hash));
}

// Layout 1 (before evident_schema existed) kept file checkpoints as columns of a `checkpoint`
// table; layout 2 keeps every source's position as the source's own text. Layout 1's rows become
// the NDJSON file source's positions ("lines=N bytes=B hash=H", hash as 16 hex digits; a
// checkpoint written before inputs were identified keeps "lines=N" alone, from which that source
// refuses to resume).
constexpr const char* kMigrate1To2 = R"sql(
CREATE TABLE position(source TEXT PRIMARY KEY, position BLOB NOT NULL) WITHOUT ROWID;
INSERT INTO position(source, position) SELECT input, CASE WHEN bytes IS NULL
  THEN 'lines=' || position
  ELSE 'lines=' || position || ' bytes=' || bytes || ' hash=' || printf('%016llx', prefix_hash)
  END FROM checkpoint;
DROP TABLE checkpoint;
CREATE TABLE evident_schema(version INTEGER NOT NULL);
INSERT INTO evident_schema(version) VALUES(2);
)sql";
constexpr const char* kSchemaTableSql =
    "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='evident_schema'";
constexpr const char* kLedgerTableSql =
    "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='ledger'";
// Every table an evident store of any layout has; a database with only some is not one.
constexpr const char* kStoreTablesSql =
    "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN "
    "('ledger','projection','deferred','journal')";
constexpr int64_t kStoreTableCount = 4;

// Runs WAL checkpoints on a thread with a connection of its own, the pattern SQLite documents
// for keeping checkpoints off the writer (https://sqlite.org/wal.html#ckpt): the committing
// thread neither copies pages into the database file nor waits for that file's fsync (about
// 12 ms per checkpoint on the disks measured). A checkpoint is PASSIVE: it copies what no
// reader still needs and never blocks the writer; durability is unchanged, since the commit
// itself still syncs the WAL at synchronous=FULL. The checkpointing connection uses the same
// `synchronous` setting, so it syncs the WAL before copying and the database file after.
class Checkpointer {
 public:
  // Opens the checkpointing connection to the database file at `path` (on the caller's thread;
  // the checkpoint thread starts on the first request and is the only one to use it after).
  static Result<std::unique_ptr<Checkpointer>> Open(const std::string& path,
                                                    const std::string& synchronous) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK) {
      std::string message = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
      sqlite3_close_v2(db);
      return Status::IoError("cannot open the checkpoint connection to " + path + ": " + message);
    }
    auto checkpointer = std::unique_ptr<Checkpointer>(new Checkpointer(db));
    // The page cache is bypassed by checkpoint copies: a small one is enough.
    for (const std::string& pragma :
         {"PRAGMA synchronous=" + synchronous, std::string("PRAGMA cache_size=16")}) {
      if (sqlite3_exec(db, pragma.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
        return Status::IoError("checkpoint connection: " + pragma + ": " + sqlite3_errmsg(db));
      }
    }
    return checkpointer;
  }
  ~Checkpointer() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
    sqlite3_close_v2(db_);
  }
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Asks for a checkpoint and returns at once; false when the thread cannot be started (the
  // caller then checkpoints itself). Called from SQLite's WAL hook: nothing may throw.
  bool Request() noexcept {
    {
      std::lock_guard lock(mutex_);
      if (!thread_.joinable()) {
        try {
          thread_ = std::thread([this] { Run(); });
        } catch (const std::system_error&) {
          return false;
        }
      }
      if (requested_) return true;
      requested_ = true;
    }
    wake_.notify_one();
    return true;
  }

  // Drops a request not yet started and waits for a running checkpoint to end, so that the
  // caller's own checkpoint is not refused as busy.
  void WaitIdle() noexcept {
    std::unique_lock lock(mutex_);
    requested_ = false;
    idle_.wait(lock, [this] { return !running_; });
  }

 private:
  explicit Checkpointer(sqlite3* db) : db_(db) {}

  void Run() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || requested_; });
      if (stop_) break;
      requested_ = false;
      running_ = true;
      lock.unlock();
      // SQLITE_BUSY (another checkpoint is running) and I/O errors are left as SQLite's own
      // automatic checkpoint leaves them: the frames stay in the WAL, the next request retries.
      FaultPoint("before-wal-checkpoint");
      sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      FaultPoint("after-wal-checkpoint");
      lock.lock();
      running_ = false;
      idle_.notify_all();
    }
  }

  sqlite3* const db_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  bool requested_ = false;
  bool running_ = false;
  bool stop_ = false;
  std::thread thread_;
};

// A prepared statement, reset after each use. Binds are 1-based, in call order.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
    prepare_error_ = rc == SQLITE_OK ? "" : sqlite3_errmsg(db);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // A built-in statement prepares on every evident store; on a file whose tables are not
  // evident's (an application's own `ledger` table, a hand-edited store) it cannot, and every
  // use answers that, rather than the process aborting.
  bool prepared() const { return stmt_ != nullptr; }
  Status PrepareFailure() const {
    return Status::FailedPrecondition("this database's tables are not the ones evident writes (" +
                                      prepare_error_ + ")");
  }

  Statement& Bind(std::string_view text) {
    // An empty view may have no data pointer, which SQLite would bind as NULL: "" is text.
    sqlite3_bind_text(stmt_, ++index_, text.data() == nullptr ? "" : text.data(),
                      static_cast<int>(text.size()), SQLITE_STATIC);
    return *this;
  }
  Statement& BindBlob(std::string_view bytes) {
    // As Bind: an empty view may have no data pointer, which SQLite would bind as NULL.
    sqlite3_bind_blob(stmt_, ++index_, bytes.data() == nullptr ? "" : bytes.data(),
                      static_cast<int>(bytes.size()), SQLITE_STATIC);
    return *this;
  }
  Statement& Bind(int64_t value) {
    sqlite3_bind_int64(stmt_, ++index_, value);
    return *this;
  }
  Statement& Bind(const std::optional<int64_t>& value) {
    if (value) return Bind(*value);
    sqlite3_bind_null(stmt_, ++index_);
    return *this;
  }

  // Runs a statement that returns no rows.
  Status Run() {
    if (stmt_ == nullptr) return PrepareFailure();
    NullUnbound();
    const int rc = sqlite3_step(stmt_);
    Reset();
    if (rc == SQLITE_DONE) return Status::Ok();
    return Error(rc);
  }
  // Steps once: true with a row, false when done; errors in `status`.
  bool Step(Status& status) {
    if (stmt_ == nullptr) {
      status = PrepareFailure();
      return false;
    }
    NullUnbound();
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) status = Error(rc);
    return false;
  }
  void Reset() {
    sqlite3_reset(stmt_);
    index_ = 0;
  }

  std::string Text(int column) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return p == nullptr ? std::string()
                        : std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }
  std::string Blob(int column) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
    return p == nullptr ? std::string()
                        : std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }
  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  sqlite3_stmt* handle() const { return stmt_; }
  int bound() const { return index_; }  // parameters bound so far
  std::optional<int64_t> OptionalInt(int column) const {
    if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
    return Int(column);
  }

 private:
  // Parameters this use did not bind are NULL, never the previous use's values. (Cheaper than
  // sqlite3_clear_bindings on every reset: every built-in statement binds all its parameters.)
  void NullUnbound() {
    const int count = sqlite3_bind_parameter_count(stmt_);
    while (index_ < count) sqlite3_bind_null(stmt_, ++index_);
  }

  Status Error(int rc) const {
    const std::string message = std::string("sqlite: ") + sqlite3_errmsg(db_);
    // The extended code whether or not the connection reports extended codes (a caller's own
    // connection, OpenSqliteStoreOnConnection, keeps its setting).
    rc = sqlite3_extended_errcode(db_);
    const int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Status::Unavailable(message);
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) return Status::Corruption(message);
    // Only a unique key says "already there"; NOT NULL or CHECK failures are bugs.
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
      return Status::AlreadyExists(message);
    }
    return Status::IoError(message);
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int index_ = 0;
  std::string prepare_error_;
};

constexpr const char* kQuarantineColumns =
    "id, consumer, outcome, reason, message, source, event_id, type, subject, subject_version,"
    " schema_version, raw, attempts, first_seen_ms, last_seen_ms, status, input_index";

constexpr const char* kIntentColumns =
    "seq, key, effect, consumer, subject, source, event_id, subject_version, request, state, "
    "attempts, last_error, http_status, response_digest, intended_at_ms, last_attempt_at_ms, "
    "next_attempt_at_ms, settled_at_ms, claimed_by, revision, basis_version";
// The same from a layout before 8 (a read-only open): no basis recorded.
constexpr const char* kIntentColumns7 =
    "seq, key, effect, consumer, subject, source, event_id, subject_version, request, state, "
    "attempts, last_error, http_status, response_digest, intended_at_ms, last_attempt_at_ms, "
    "next_attempt_at_ms, settled_at_ms, claimed_by, revision, NULL";
constexpr const char* kCompensationColumns =
    "seq, key, consumer, subject, owner_source, owner_version, event_id, type, recorded_at_ms, "
    "recorded_by, decision, compensates, covers, compensate_with, compensating_key, "
    "compensating_request, basis_version, state, detail, updated_at_ms";
constexpr const char* kCompensationColumns7 =
    "seq, key, consumer, subject, owner_source, owner_version, event_id, type, recorded_at_ms, "
    "'consumer', '', '', '', '', '', x'', NULL, 'recorded', '', recorded_at_ms";

constexpr const char* kLedgerColumns =
    "consumer, source, event_id, state, type, subject, subject_version, input_schema_version, "
    "result_version, projection_version, committed_at_ms, duplicates, last_duplicate_at_ms, "
    "adapter, wrote, traceparent, tracestate";
// The same from a ledger of layout 9 or older (a read-only open is not migrated): no trace.
constexpr const char* kLedgerColumnsBefore10 =
    "consumer, source, event_id, state, type, subject, subject_version, input_schema_version, "
    "result_version, projection_version, committed_at_ms, duplicates, last_duplicate_at_ms, "
    "adapter, wrote, '', ''";
// .. and of layout 5 or older: no adapter, nothing recorded of what was written.
constexpr const char* kLedgerColumnsBefore6 =
    "consumer, source, event_id, state, type, subject, subject_version, input_schema_version, "
    "result_version, projection_version, committed_at_ms, duplicates, last_duplicate_at_ms, "
    "'' AS adapter, '' AS wrote, '', ''";
// Whether a receipt is retainable (store_retention.h, kLedger), over `ledger` with ?1 the horizon:
// applied before it, and no intent of its consumer and subject still unsettled. One rule for the
// look, the count and the removal.
constexpr const char* kReceiptRetainable =
    "state='applied' AND committed_at_ms < ?1 AND NOT EXISTS (SELECT 1 FROM effect_intent i"
    " WHERE i.subject=ledger.subject AND i.consumer=ledger.consumer"
    " AND i.state NOT IN ('done','failed','withdrawn'))";
// Whether an intent is retainable (store_retention.h, kIntent), over `effect_intent i` with ?1
// the horizon: settled before it, its log gone, a later intent of its consumer, subject and
// effect there, and no compensation naming it. One rule for the look, the count and the removal.
constexpr const char* kIntentRetainable =
    "i.state IN ('done','failed','withdrawn') AND i.settled_at_ms < ?1"
    " AND NOT EXISTS (SELECT 1 FROM effect_log l WHERE l.key=i.key)"
    " AND EXISTS (SELECT 1 FROM effect_intent n WHERE n.subject=i.subject"
    " AND n.consumer=i.consumer AND n.seq > i.seq AND n.effect=i.effect)"
    " AND NOT EXISTS (SELECT 1 FROM compensation c WHERE c.covers=i.key)"
    " AND NOT EXISTS (SELECT 1 FROM compensation c WHERE c.compensating_key=i.key)";
// A SELECT of ledger rows with the columns the store's layout has.
struct LedgerSql {
  explicit LedgerSql(const std::string& tail)
      : now(std::string("SELECT ") + kLedgerColumns + tail),
        before10(std::string("SELECT ") + kLedgerColumnsBefore10 + tail),
        before6(std::string("SELECT ") + kLedgerColumnsBefore6 + tail) {}
  const std::string& For(int64_t layout) const {
    return layout >= 10 ? now : layout >= 6 ? before10 : before6;
  }
  std::string now, before10, before6;
};
constexpr const char* kDeferredColumns =
    "consumer, subject, subject_version, source, event_id, type, schema_version, "
    "expected_version, raw, received_at_ms, deadline_at_ms, route, input_index";
// Over `outbox JOIN outbox_body USING(seq)`.
constexpr const char* kOutboxColumns =
    "seq, source, event_id, type, subject, subject_version, event_partition, bytes, "
    "created_at_ms, attempts, last_error, last_attempt_at_ms, sent_at_ms, stream, "
    "stream_sequence, parked_at_ms, parked_reason";
// The same from a layout before 7 (a read-only open), which parks nothing.
constexpr const char* kOutboxColumns6 =
    "seq, source, event_id, type, subject, subject_version, event_partition, bytes, "
    "created_at_ms, attempts, last_error, last_attempt_at_ms, sent_at_ms, stream, "
    "stream_sequence, NULL, ''";
constexpr const char* kProjectionColumns =
    "consumer, subject, version, state, fields_json, owner_source, owner_version_seen, "
    "updated_at_ms, evidence_json, applied_digest";
// The same from a layout before 8 (a read-only open): no digest kept.
constexpr const char* kProjectionColumns7 =
    "consumer, subject, version, state, fields_json, owner_source, owner_version_seen, "
    "updated_at_ms, evidence_json, ''";

// Reads a stored name of a closed vocabulary (outcome.h) into `out`; a name outside it means
// the row was not written by evident, or was changed: `error` says so.
template <typename Enum>
void ReadName(const Statement& s, int column, std::optional<Enum> (*parse)(std::string_view),
              std::string_view what, Enum& out, Status& error) {
  const std::string name = s.Text(column);
  if (const std::optional<Enum> value = parse(name)) {
    out = *value;
  } else {
    error = Status::Corruption("stored " + std::string(what) + " '" + name + "' is unknown");
  }
}

EffectIntent ReadIntent(const Statement& s, Status& error) {
  EffectIntent e;
  e.seq = s.Int(0);
  e.key = s.Text(1);
  e.effect = s.Text(2);
  e.consumer = s.Text(3);
  e.subject = s.Text(4);
  e.source = s.Text(5);
  e.event_id = s.Text(6);
  e.subject_version = s.OptionalInt(7);
  e.request = s.Blob(8);
  ReadName(s, 9, &ParseEffectState, "effect state", e.state, error);
  e.attempts = s.Int(10);
  e.last_error = s.Text(11);
  e.http_status = s.OptionalInt(12);
  e.response_digest = s.Text(13);
  e.intended_at_ms = s.Int(14);
  e.last_attempt_at_ms = s.OptionalInt(15);
  e.next_attempt_at_ms = s.OptionalInt(16);
  e.settled_at_ms = s.OptionalInt(17);
  e.claimed_by = s.Text(18);
  e.revision = s.Int(19);
  e.basis_version = s.OptionalInt(20);
  return e;
}

CompensationRecord ReadCompensation(const Statement& s, Status& error) {
  CompensationRecord c;
  c.seq = s.Int(0);
  c.key = s.Text(1);
  c.consumer = s.Text(2);
  c.subject = s.Text(3);
  c.owner_source = s.Text(4);
  c.owner_version = s.OptionalInt(5);
  c.event_id = s.Text(6);
  c.type = s.Text(7);
  c.recorded_at_ms = s.Int(8);
  ReadName(s, 9, &ParseCompensationBy, "compensation recorder", c.recorded_by, error);
  c.decision = s.Text(10);
  c.compensates = s.Text(11);
  c.covers = s.Text(12);
  c.compensate_with = s.Text(13);
  c.compensating_key = s.Text(14);
  c.compensating_request = s.Blob(15);
  c.basis_version = s.OptionalInt(16);
  ReadName(s, 17, &ParseCompensationState, "compensation state", c.state, error);
  c.detail = s.Text(18);
  c.updated_at_ms = s.Int(19);
  return c;
}

LedgerEntry ReadLedger(const Statement& s, Status& error) {
  LedgerEntry e;
  e.consumer = s.Text(0);
  e.source = s.Text(1);
  e.event_id = s.Text(2);
  ReadName(s, 3, &ParseLedgerState, "ledger state", e.state, error);
  e.type = s.Text(4);
  e.subject = s.Text(5);
  e.subject_version = s.OptionalInt(6);
  e.input_schema_version = s.Int(7);
  e.result_version = s.Int(8);
  e.projection_version = s.OptionalInt(9);
  e.committed_at_ms = s.Int(10);
  e.duplicates = s.Int(11);
  e.last_duplicate_at_ms = s.OptionalInt(12);
  e.adapter = s.Text(13);
  e.wrote_json = s.Text(14);
  e.traceparent = s.Text(15);
  e.tracestate = s.Text(16);
  return e;
}

DeferredEvent ReadDeferred(const Statement& s, Status& error) {
  DeferredEvent d;
  d.consumer = s.Text(0);
  d.subject = s.Text(1);
  d.subject_version = s.Int(2);
  d.source = s.Text(3);
  d.event_id = s.Text(4);
  d.type = s.Text(5);
  d.schema_version = s.Int(6);
  d.expected_version = s.Int(7);
  d.raw = s.Blob(8);
  d.received_at_ms = s.Int(9);
  d.deadline_at_ms = s.Int(10);
  ReadName(s, 11, &ParseGapRoute, "gap route", d.route, error);
  d.input_index = s.Int(12);
  return d;
}

constexpr const char* kGapColumns =
    "consumer, subject, expected_version, missing_to, route, state, deadline_at_ms, acted_at_ms,"
    " request_event_id, closed_at_ms, closed_by, note, opened_at_ms, waiting, how, cause, answer,"
    " answered_at_ms";
// The same from a layout before 8 (a read-only open): records were written at the deadline, and
// how a closed one closed is told by who closed it.
constexpr const char* kGapColumns7 =
    "consumer, subject, expected_version, missing_to, route, state, deadline_at_ms, acted_at_ms,"
    " request_event_id, closed_at_ms, closed_by, note, NULL, '',"
    " CASE WHEN state='closed' THEN (CASE WHEN closed_by='arrival' THEN 'drained' ELSE"
    " 'resolved' END) ELSE '' END, CASE WHEN state='closed' THEN (CASE WHEN closed_by='arrival'"
    " THEN 'out-of-order' ELSE 'missing' END) ELSE '' END, '', NULL";

// "3,5" for versions 3 and 5, as the gap table keeps them; and back. A list that does not parse
// is corruption.
std::string VersionsText(const std::vector<int64_t>& versions) {
  std::string out;
  for (const int64_t v : versions) {
    if (!out.empty()) out.push_back(',');
    out += std::to_string(v);
  }
  return out;
}
std::vector<int64_t> VersionsOf(const std::string& text, Status& error) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || end != part.c_str() + part.size()) {
      error = Status::Corruption("stored gap versions '" + text + "' are not a list of versions");
      return {};
    }
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

GapRecord ReadGap(const Statement& s, Status& error) {
  GapRecord g;
  g.consumer = s.Text(0);
  g.subject = s.Text(1);
  g.expected_version = s.Int(2);
  g.missing_to = s.Int(3);
  ReadName(s, 4, &ParseGapRoute, "gap route", g.route, error);
  ReadName(s, 5, &ParseGapState, "gap state", g.state, error);
  g.deadline_at_ms = s.Int(6);
  g.acted_at_ms = s.OptionalInt(7);
  g.request_event_id = s.Text(8);
  g.closed_at_ms = s.OptionalInt(9);
  g.closed_by = s.Text(10);
  g.note = s.Text(11);
  g.opened_at_ms = s.OptionalInt(12);
  g.waiting_versions = VersionsOf(s.Text(13), error);
  ReadName(s, 14, &ParseGapClosedHow, "gap close", g.how, error);
  ReadName(s, 15, &ParseGapCause, "gap cause", g.cause, error);
  g.answer = s.Text(16);
  g.answered_at_ms = s.OptionalInt(17);
  return g;
}

QuarantineRecord ReadQuarantine(const Statement& s, Status& error) {
  QuarantineRecord r;
  r.id = s.Int(0);
  r.consumer = s.Text(1);
  ReadName(s, 2, &ParseOutcome, "outcome", r.outcome, error);
  r.reason = s.Text(3);
  r.message = s.Text(4);
  r.source = s.Text(5);
  r.event_id = s.Text(6);
  r.type = s.Text(7);
  r.subject = s.Text(8);
  r.subject_version = s.OptionalInt(9);
  r.schema_version = s.OptionalInt(10);
  r.raw = s.Blob(11);
  r.attempts = s.Int(12);
  r.first_seen_ms = s.Int(13);
  r.last_seen_ms = s.Int(14);
  ReadName(s, 15, &ParseQuarantineStatus, "quarantine status", r.status, error);
  r.input_index = s.Int(16);
  return r;
}

Projection ReadProjectionRow(const Statement& s, Status& /*error*/) {
  Projection p;
  p.consumer = s.Text(0);
  p.subject = s.Text(1);
  p.version = s.Int(2);
  p.state = s.Text(3);
  p.fields_json = s.Text(4);
  p.owner_source = s.Text(5);
  p.owner_version_seen = s.Int(6);
  p.updated_at_ms = s.Int(7);
  p.applied_digest = s.Text(9);  // 8 is the evidence, read by the caller
  return p;
}

OutboxRow ReadOutbox(const Statement& s, Status& /*error*/) {
  return OutboxRow{.seq = s.Int(0),
                   .source = s.Text(1),
                   .event_id = s.Text(2),
                   .type = s.Text(3),
                   .subject = s.Text(4),
                   .subject_version = s.OptionalInt(5),
                   .partition = s.Int(6),
                   .bytes = s.Blob(7),
                   .created_at_ms = s.Int(8),
                   .attempts = s.Int(9),
                   .last_error = s.Text(10),
                   .last_attempt_at_ms = s.OptionalInt(11),
                   .sent_at_ms = s.OptionalInt(12),
                   .stream = s.Text(13),
                   .stream_sequence = s.OptionalInt(14),
                   .parked_at_ms = s.OptionalInt(15),
                   .parked_reason = s.Text(16)};
}

constexpr const char* kJournalColumns =
    "seq, consumer, outcome, source, event_id, subject, subject_version, at_ms";
JournalEntry ReadJournal(const Statement& s, Status& error) {
  JournalEntry j;
  j.seq = s.Int(0);
  j.consumer = s.Text(1);
  ReadName(s, 2, &ParseOutcome, "outcome", j.outcome, error);
  j.source = s.Text(3);
  j.event_id = s.Text(4);
  j.subject = s.Text(5);
  j.subject_version = s.OptionalInt(6);
  j.at_ms = s.Int(7);
  return j;
}

constexpr const char* kEffectLogColumns =
    "seq, key, action, by_whom, state_after, http_status, detail, at_ms";
EffectLogEntry ReadEffectLog(const Statement& s, Status& error) {
  EffectLogEntry l;
  l.seq = s.Int(0);
  l.key = s.Text(1);
  ReadName(s, 2, &ParseEffectAction, "effect action", l.action, error);
  l.by = s.Text(3);
  ReadName(s, 4, &ParseEffectState, "effect state", l.state_after, error);
  l.http_status = s.OptionalInt(5);
  l.detail = s.Text(6);
  l.at_ms = s.Int(7);
  return l;
}

QuarantineAudit ReadAudit(const Statement& s, Status& error) {
  QuarantineAudit a;
  a.seq = s.Int(0);
  a.record_id = s.Int(1);
  ReadName(s, 2, &ParseQuarantineAction, "action", a.action, error);
  a.by = s.Text(3);
  a.note = s.Text(4);
  a.outcome = s.Text(5);
  a.reason = s.Text(6);
  ReadName(s, 7, &ParseQuarantineStatus, "status", a.status_after, error);
  a.at_ms = s.Int(8);
  return a;
}

constexpr int64_t kWriteLockByte = 120;  // of the -shm file: SQLite's write lock
constexpr int kLockLinesMax = 100000;    // /proc/locks lists every lock of the machine

bool ParseInt64(const std::string& text, int64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

// Who holds the write lock of the WAL database at `path`: SQLite (unix VFS) takes it as a POSIX
// lock on byte 120 of the -shm file (the first of its eight lock bytes), and /proc/locks names
// the process of every lock on that file. The file itself is never opened here: closing any
// descriptor of a file drops every POSIX lock this process holds on it, SQLite's own among them,
// and a reader in another process would then take the -shm for abandoned and truncate it under
// this process's mapping (SIGBUS). Empty when no process is found.
std::string WriteLockHolder(const std::string& path) {
  struct stat shm {};
  if (::stat((path + "-shm").c_str(), &shm) != 0) return "";
  char file[64];  // as /proc/locks writes it: major and minor in hex, then the inode
  std::snprintf(file, sizeof file, "%02x:%02x:%llu", major(shm.st_dev), minor(shm.st_dev),
                static_cast<unsigned long long>(shm.st_ino));
  std::ifstream locks("/proc/locks");
  std::string line;
  for (int n = 0; n < kLockLinesMax && std::getline(locks, line); ++n) {
    // "<id>: POSIX  ADVISORY  WRITE <pid> <major>:<minor>:<inode> <start> <end|EOF>"; a waiter's
    // line has "->" after the id.
    std::istringstream fields(line);
    std::string id, kind, mode, access, device, end;
    int64_t pid = 0;
    int64_t start = 0;
    if (!(fields >> id >> kind >> mode >> access >> pid >> device >> start >> end)) continue;
    if ((kind != "POSIX" && kind != "OFDLCK") || access != "WRITE" || device != file) continue;
    int64_t last = std::numeric_limits<int64_t>::max();
    if (end != "EOF" && !ParseInt64(end, last)) continue;
    if (start > kWriteLockByte || last < kWriteLockByte || pid <= 0) continue;
    if (pid == static_cast<int64_t>(getpid())) return "this process (another of its connections)";
    // Its id and program name, not its command line: arguments may carry secrets, and this
    // message reaches the daemon's HTTP clients (`ps -p PID` tells the operator the rest).
    std::string holder = "process " + std::to_string(pid);
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    if (std::getline(comm, name) && !name.empty()) holder += " (" + name.substr(0, 64) + ")";
    return holder;
  }
  return "";
}

std::string LockedMessage(const char* path) {
  const std::string file = path != nullptr ? path : "";
  const std::string holder = file.empty() ? "" : WriteLockHolder(file);
  return "the store " + file + " is locked by another writer" +
         (holder.empty() ? "" : ": " + holder) +
         ", which holds a transaction open for longer than this process waits (busy_timeout_ms)";
}

class SqliteEngine {
 public:
  // Evidence lives in its projection's row (one B-tree write per subject and batch, not one
  // per evidence record); the cache keeps it beside the Projection the pipeline reads and puts.
  struct CachedProjection {
    std::optional<Projection> value;
    bool exists = false;    // in the table, or put in this transaction
    bool in_table = false;  // in the table: a write updates the row rather than inserting one
    // Evidence records, one per name, sorted by name. Kept as values so that recording evidence
    // neither parses nor serializes; the row's evidence_json is built when the row is written.
    std::vector<EvidenceRecord> evidence;
    bool dirty = false;
  };

  // Builds the evidence_json column, one compact entry per name:
  //   {"name": ["id", subject_version or null, recorded_at_ms], ...}
  // with the source as a fourth element only when it is not the row's owner_source (nearly
  // always it is: an ordered consumer's events come from the owner). The row is then about half
  // the size it was with named members, and so are the pages each batch writes. LoadEvidence
  // also reads the earlier form, {"name": {"source": ..., "id": ..., "subject_version": ...,
  // "recorded_at_ms": ...}}.
  static void EvidenceJson(const CachedProjection& cached, std::string& out) {
    out.clear();
    json::Writer w(out);
    w.BeginObject();
    for (const EvidenceRecord& r : cached.evidence) {
      w.Key(r.name).BeginArray().String(r.event_id);
      r.subject_version ? w.Int(*r.subject_version) : w.Null();
      w.Int(r.recorded_at_ms);
      const bool own_source = r.source == cached.value->owner_source;
      if (!own_source || !r.detail.empty()) own_source ? w.Null() : w.String(r.source);
      if (!r.detail.empty()) w.String(r.detail);
      w.EndArray();
    }
    w.EndObject();
  }

  // Reads an evidence_json column back into records.
  Status LoadEvidence(std::string_view text, CachedProjection& cached) {
    if (text == "{}") return Status::Ok();
    const auto corrupt = [&](std::string_view what) {
      return Status::Corruption("evidence of " + cached.value->consumer + "/" +
                                cached.value->subject + " " + std::string(what));
    };
    simdjson::dom::object records;
    if (json_parser_.parse(text.data(), text.size()).get(records) != simdjson::SUCCESS) {
      return corrupt("is not a JSON object");
    }
    for (auto field : records) {
      EvidenceRecord r;
      r.consumer = cached.value->consumer;
      r.subject = cached.value->subject;
      r.name = std::string(field.key);
      r.source = cached.value->owner_source;
      std::string_view text_value;
      int64_t number = 0;
      simdjson::dom::array entry;
      if (field.value.get(entry) == simdjson::SUCCESS) {
        const size_t size = entry.size();
        if (size < 3 || size > 5 || entry.at(0).get(text_value) != simdjson::SUCCESS ||
            entry.at(2).get(r.recorded_at_ms) != simdjson::SUCCESS) {
          return corrupt("record '" + r.name +
                         "' is not [id, version, time(, source or null(, detail))]");
        }
        r.event_id = std::string(text_value);
        if (entry.at(1).get(number) == simdjson::SUCCESS) r.subject_version = number;
        if (size >= 4 && !entry.at(3).is_null()) {
          if (entry.at(3).get(text_value) != simdjson::SUCCESS) {
            return corrupt("record '" + r.name + "' has a source that is not a string");
          }
          r.source = std::string(text_value);
        }
        if (size == 5) {
          if (entry.at(4).get(text_value) != simdjson::SUCCESS) {
            return corrupt("record '" + r.name + "' has a detail that is not a string");
          }
          r.detail = std::string(text_value);
        }
      } else {  // the earlier form, with named members
        if (field.value["source"].get(text_value) == simdjson::SUCCESS) {
          r.source = std::string(text_value);
        }
        if (field.value["id"].get(text_value) == simdjson::SUCCESS) {
          r.event_id = std::string(text_value);
        }
        if (field.value["subject_version"].get(number) == simdjson::SUCCESS) {
          r.subject_version = number;
        }
        if (field.value["recorded_at_ms"].get(number) == simdjson::SUCCESS) {
          r.recorded_at_ms = number;
        }
      }
      cached.evidence.push_back(std::move(r));
    }
    std::sort(cached.evidence.begin(), cached.evidence.end(),
              [](const EvidenceRecord& a, const EvidenceRecord& b) { return a.name < b.name; });
    return Status::Ok();
  }

  // The transaction's projection cache: consumer, then subject. Heterogeneous lookup, so a
  // cache hit allocates nothing.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  using SubjectCache =
      std::unordered_map<std::string, CachedProjection, StringHash, std::equal_to<>>;
  // `borrowed`: the caller's connection (OpenSqliteStoreOnConnection), which the engine never
  // closes; a transaction then joins the connection's open one as a savepoint.
  explicit SqliteEngine(sqlite3* db, bool borrowed = false) : db_(db), borrowed_(borrowed) {}
  ~SqliteEngine() {
    checkpointer_.reset();  // its connection closes first: this one then removes the WAL
    statements_.clear();
    if (!borrowed_) sqlite3_close_v2(db_);
  }

  // Replaces SQLite's automatic checkpoint (itself a WAL hook; a later PRAGMA
  // wal_autocheckpoint on this connection would replace this one in turn).
  Status ConfigureCheckpoints(const SqliteOptions& options) {
    checkpoint_wal_pages_ = options.checkpoint_wal_pages;
    checkpoint_thread_commit_pages_ = options.checkpoint_thread_commit_pages;
    wal_pages_max_ = options.wal_pages_max;
    // The file SQLite resolved at open (empty for an in-memory database, which has no WAL).
    const char* file = sqlite3_db_filename(db_, "main");
    if (options.checkpoint_thread && file != nullptr && file[0] != '\0') {
      EVIDENT_ASSIGN_OR_RETURN(checkpointer_, Checkpointer::Open(file, options.synchronous));
    }
    sqlite3_wal_hook(db_, &SqliteEngine::OnWalCommit, this);
    return Status::Ok();
  }

  // After each commit, once the WAL holds `checkpoint_wal_pages` (pages already copied count:
  // while commits keep coming the WAL cannot restart, since it restarts only when a transaction
  // begins with every page copied), a checkpoint runs: on the thread after a commit that wrote
  // `checkpoint_thread_commit_pages` or more, which is bound by CPU the thread frees; on this
  // connection after a smaller one, as SQLite would, since a stream of small commits is bound
  // by each commit's own fsync, which a concurrent fsync of the database file lengthens
  // (measured in docs/BENCHMARKS.md). From `wal_pages_max` on, this connection waits for the
  // thread's checkpoint to end and copies the rest itself, which lets the WAL restart.
  static int OnWalCommit(void* self_pointer, sqlite3* db, const char* schema, int wal_pages) {
    auto* self = static_cast<SqliteEngine*>(self_pointer);
    int written = 0;  // pages this commit wrote to the WAL (the counter is reset here)
    int unused = 0;
    sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_WRITE, &written, &unused, 1);
    if (wal_pages < self->checkpoint_wal_pages_) return SQLITE_OK;
    Checkpointer* thread = self->checkpointer_.get();
    if (thread != nullptr && wal_pages < self->wal_pages_max_ &&
        written >= self->checkpoint_thread_commit_pages_ && thread->Request()) {
      return SQLITE_OK;
    }
    if (thread != nullptr && wal_pages >= self->wal_pages_max_) thread->WaitIdle();
    FaultPoint("before-wal-checkpoint");
    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    FaultPoint("after-wal-checkpoint");
    return SQLITE_OK;
  }

  // What DetectLayout and ReadLayout found, kept by a caller's connection between stores.
  void Remember(SqliteConnectionCache& cache) const {
    cache.layout = layout_;
    cache.subject_first = subject_first_;
    cache.outbox_bytes_in_row = outbox_bytes_in_row_;
  }
  void Adopt(const SqliteConnectionCache& cache) {
    layout_ = cache.layout;
    subject_first_ = cache.subject_first;
    outbox_bytes_in_row_ = cache.outbox_bytes_in_row;
  }

  // Whether the projection table leads its key with the subject (see kSchema).
  Status DetectLayout() {
    static const std::string kSql =
        "SELECT pk FROM pragma_table_info('projection') WHERE name='subject'";
    auto rows =
        Query<int64_t>(kSql, {}, kAll, [](const Statement& s, Status&) { return s.Int(0); });
    if (!rows.ok()) return rows.status();
    subject_first_ = rows->rows.size() == 1 && rows->rows.front() == 1;
    EVIDENT_ASSIGN_OR_RETURN(const int64_t bytes_column, Count(kOutboxBytesColumnSql));
    outbox_bytes_in_row_ = bytes_column != 0;
    return Status::Ok();
  }

  // The layout of the open database: 0 when it has no ledger table (a new store), 1 for a store
  // written before the evident_schema table, else the version recorded there (a version no
  // evident wrote is refused rather than misread).
  Result<int64_t> LayoutOf() {
    EVIDENT_ASSIGN_OR_RETURN(const int64_t versioned, Count(kSchemaTableSql));
    if (versioned == 0) {
      // Tables this layout lacks are created as a new store's; a database whose tables are not
      // evident's is refused when a statement cannot prepare on it (Statement::PrepareFailure).
      EVIDENT_ASSIGN_OR_RETURN(const int64_t ledger, Count(kLedgerTableSql));
      return int64_t{ledger == 0 ? 0 : 1};
    }
    EVIDENT_ASSIGN_OR_RETURN(const int64_t version,
                             Count("SELECT coalesce(max(version), 0) FROM evident_schema"));
    if (version < 2) {
      return Status::FailedPrecondition("not an evident store: its evident_schema table says " +
                                        std::string(version == 0 ? "nothing" : "layout 1") +
                                        ", which no evident wrote");
    }
    if (version > kSqliteLayoutVersion) {
      return Status::FailedPrecondition(
          "the store has layout " + std::to_string(version) + "; this build reads layouts up to " +
          std::to_string(kSqliteLayoutVersion) + " (a newer evident wrote it)");
    }
    return version;
  }

  // Brings the store to kSqliteLayoutVersion: creates a new one, or migrates an older one step
  // by step (layout 1: every store written before the evident_schema table) in one
  // transaction; refuses a newer layout. The layout is read again under the write lock, so two
  // processes opening one old store migrate it once.
  Status Migrate() {
    EVIDENT_ASSIGN_OR_RETURN(int64_t layout, LayoutOf());
    if (layout == kSqliteLayoutVersion) {
      layout_ = layout;
      return Status::Ok();
    }
    EVIDENT_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    Status migrated = MigrateLocked();
    if (migrated.ok()) migrated = Exec("COMMIT");
    if (!migrated.ok()) {
      (void)Exec("ROLLBACK");
      return migrated.Annotate("creating or migrating the store");
    }
    layout_ = kSqliteLayoutVersion;
    return Status::Ok();
  }

  // Inside the write lock: each step from the layout found to the current one.
  Status MigrateLocked() {
    EVIDENT_ASSIGN_OR_RETURN(const int64_t layout, LayoutOf());
    if (layout == 0) {
      // A projection table of a store older than evident_schema lacks later columns.
      EVIDENT_RETURN_IF_ERROR(Exec(Schema()));
      EVIDENT_RETURN_IF_ERROR(AddLayout8Columns());
      EVIDENT_RETURN_IF_ERROR(AddLayout10Columns());
      return Exec("INSERT INTO evident_schema(version) VALUES(" +
                  std::to_string(kSqliteLayoutVersion) + ");");
    }
    if (layout == 1) {
      EVIDENT_RETURN_IF_ERROR(AddCheckpointIdentity());
      EVIDENT_RETURN_IF_ERROR(Exec(kMigrate1To2));
    }
    if (layout <= 3) {
      // Tables and indexes an older layout lacks (the outbox, the quarantine), the kept rows
      // moved into the quarantine; then the version.
      EVIDENT_RETURN_IF_ERROR(Exec(Schema()));
      EVIDENT_ASSIGN_OR_RETURN(const int64_t bytes_column, Count(kOutboxBytesColumnSql));
      if (bytes_column != 0) EVIDENT_RETURN_IF_ERROR(Exec(kMigrateOutboxBody));
      const int rc =
          sqlite3_create_function_v2(db_, "evident_fnv1a", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                     nullptr, &Fnv1aSql, nullptr, nullptr, nullptr);
      if (rc != SQLITE_OK) return Status::IoError("cannot register evident_fnv1a");
      EVIDENT_RETURN_IF_ERROR(
          Exec(std::string(kMigrateKept) + "INSERT INTO evident_schema(version) VALUES(4);"));
    }
    if (layout <= 4) {
      // The effect tables (Schema() creates only what is missing).
      EVIDENT_RETURN_IF_ERROR(Exec(Schema() + "INSERT INTO evident_schema(version) VALUES(5);"));
    }
    if (layout <= 5) {
      // What each receipt wrote, and the adapter its payload was read through (a table that
      // Schema() created above for an older layout has them already).
      EVIDENT_RETURN_IF_ERROR(AddColumn("ledger", "adapter", "TEXT NOT NULL DEFAULT ''"));
      EVIDENT_RETURN_IF_ERROR(AddColumn("ledger", "wrote", "TEXT NOT NULL DEFAULT ''"));
      EVIDENT_RETURN_IF_ERROR(Exec("INSERT INTO evident_schema(version) VALUES(6);"));
    }
    if (layout <= 6) {
      // Parked outbox rows (a table Schema() created above for an older layout has the columns).
      EVIDENT_ASSIGN_OR_RETURN(
          const int64_t present,
          Count("SELECT count(*) FROM pragma_table_info('outbox') WHERE name='parked_at_ms'"));
      if (present == 0) {
        EVIDENT_RETURN_IF_ERROR(
            Exec("ALTER TABLE outbox ADD COLUMN parked_at_ms INTEGER;"
                 "ALTER TABLE outbox ADD COLUMN parked_reason TEXT NOT NULL DEFAULT '';"));
      }
      EVIDENT_RETURN_IF_ERROR(Exec("INSERT INTO evident_schema(version) VALUES(7);"));
    }
    if (layout <= 7) EVIDENT_RETURN_IF_ERROR(MigrateTo8());
    return MigrateFrom8(layout);
  }

  // The steps after layout 8, from `layout` (the one found) on.
  Status MigrateFrom8(int64_t layout) {
    if (layout <= 8) {
      // The group tables (Schema() creates only what is missing).
      EVIDENT_RETURN_IF_ERROR(Exec(Schema() + "INSERT INTO evident_schema(version) VALUES(9);"));
    }
    if (layout <= 9) {
      // Each receipt's trace context.
      EVIDENT_RETURN_IF_ERROR(AddLayout10Columns());
      EVIDENT_RETURN_IF_ERROR(Exec("INSERT INTO evident_schema(version) VALUES(10);"));
    }
    if (layout <= 10) {
      // Retention's index and its runs (Schema() creates only what is missing).
      EVIDENT_RETURN_IF_ERROR(Exec(Schema() + "INSERT INTO evident_schema(version) VALUES(11);"));
    }
    if (layout <= 11) {
      // The contract sets (Schema() creates only what is missing).
      EVIDENT_RETURN_IF_ERROR(Exec(Schema() + "INSERT INTO evident_schema(version) VALUES(12);"));
    }
    if (layout <= 12) {
      // The consumer sets (Schema() creates only what is missing).
      EVIDENT_RETURN_IF_ERROR(Exec(Schema() + "INSERT INTO evident_schema(version) VALUES(13);"));
    }
    if (layout <= 13) {
      // The ledger's compact form (Schema() creates only what is missing).
      EVIDENT_RETURN_IF_ERROR(Exec(Schema() + "INSERT INTO evident_schema(version) VALUES(14);"));
    }
    if (layout <= 14) {
      // The effect keys' compact form (Schema() creates only what is missing), and what a run
      // forgot.
      EVIDENT_RETURN_IF_ERROR(
          AddColumn("retention_run", "forgot_before_ms", "INTEGER NOT NULL DEFAULT 0"));
      EVIDENT_RETURN_IF_ERROR(Exec(Schema() + "INSERT INTO evident_schema(version) VALUES(15);"));
    }
    static_assert(kSqliteLayoutVersion == 15, "a new layout needs its step here");
    return Status::Ok();
  }

  // Layout 8's columns on the tables an older layout made (a table Schema() created above for an
  // older layout has them already), the gap table rebuilt, then its new tables and indexes.
  Status MigrateTo8() {
    EVIDENT_ASSIGN_OR_RETURN(
        const int64_t compensation_is_8,
        Count("SELECT count(*) FROM pragma_table_info('compensation') WHERE name='recorded_by'"));
    if (compensation_is_8 == 0) EVIDENT_RETURN_IF_ERROR(Exec(kMigrateCompensation8));
    EVIDENT_RETURN_IF_ERROR(AddLayout8Columns());
    EVIDENT_ASSIGN_OR_RETURN(
        const int64_t gap_is_8,
        Count("SELECT count(*) FROM pragma_table_info('gap') WHERE name='opened_at_ms'"));
    if (gap_is_8 == 0) EVIDENT_RETURN_IF_ERROR(Exec(kMigrateGap8));
    return Exec(std::string(kLayout8Schema) + "INSERT INTO evident_schema(version) VALUES(8);");
  }

  Status AddLayout10Columns() {
    EVIDENT_RETURN_IF_ERROR(AddColumn("ledger", "traceparent", "TEXT NOT NULL DEFAULT ''"));
    return AddColumn("ledger", "tracestate", "TEXT NOT NULL DEFAULT ''");
  }

  Status AddLayout8Columns() {
    EVIDENT_RETURN_IF_ERROR(AddColumn("projection", "applied_digest", "TEXT NOT NULL DEFAULT ''"));
    EVIDENT_RETURN_IF_ERROR(AddColumn("effect_intent", "basis_version", "INTEGER"));
    constexpr std::pair<const char*, const char*> kCompensation[] = {
        {"recorded_by", "TEXT NOT NULL DEFAULT 'consumer'"},
        {"decision", "TEXT NOT NULL DEFAULT ''"},
        {"compensates", "TEXT NOT NULL DEFAULT ''"},
        {"covers", "TEXT NOT NULL DEFAULT ''"},
        {"compensate_with", "TEXT NOT NULL DEFAULT ''"},
        {"compensating_key", "TEXT NOT NULL DEFAULT ''"},
        {"compensating_request", "BLOB NOT NULL DEFAULT x''"},
        {"basis_version", "INTEGER"},
        {"state", "TEXT NOT NULL DEFAULT 'recorded'"},
        {"detail", "TEXT NOT NULL DEFAULT ''"},
        {"updated_at_ms", "INTEGER NOT NULL DEFAULT 0"},
    };
    for (const auto& [column, declaration] : kCompensation) {
      EVIDENT_RETURN_IF_ERROR(AddColumn("compensation", column, declaration));
    }
    return Status::Ok();
  }

  // ALTER TABLE ... ADD COLUMN unless the table has the column.
  Status AddColumn(const std::string& table, const std::string& column,
                   const std::string& declaration) {
    const std::string sql =
        "SELECT count(*) FROM pragma_table_info('" + table + "') WHERE name='" + column + "'";
    EVIDENT_ASSIGN_OR_RETURN(const int64_t present, Count(sql.c_str()));
    if (present != 0) return Status::Ok();
    return Exec("ALTER TABLE " + table + " ADD COLUMN " + column + " " + declaration + ";");
  }

  // For a read-only open: which layout the file has (nothing is migrated).
  Status ReadLayout() {
    EVIDENT_ASSIGN_OR_RETURN(layout_, LayoutOf());
    if (layout_ == 0) return Status::FailedPrecondition("not an evident store (no evident tables)");
    return Status::Ok();
  }

  // Layout-1 stores created before checkpoints identified their input lack two columns (and
  // the earliest lack the table).
  Status AddCheckpointIdentity() {
    EVIDENT_RETURN_IF_ERROR(
        Exec("CREATE TABLE IF NOT EXISTS checkpoint(input TEXT PRIMARY KEY, position INTEGER NOT "
             "NULL, bytes INTEGER, prefix_hash INTEGER) WITHOUT ROWID"));
    EVIDENT_ASSIGN_OR_RETURN(
        const int64_t present,
        Count("SELECT count(*) FROM pragma_table_info('checkpoint') WHERE name='bytes'"));
    if (present != 0) return Status::Ok();
    return Exec(
        "ALTER TABLE checkpoint ADD COLUMN bytes INTEGER;"
        "ALTER TABLE checkpoint ADD COLUMN prefix_hash INTEGER;");
  }

  // The single integer a query answers (a count). Prepared here, not cached: on a file that is
  // not a database even preparing fails, and that is an answer, not a programmer error.
  Result<int64_t> Count(const char* sql) {
    sqlite3_stmt* statement = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql, -1, &statement, nullptr);
    int64_t count = 0;
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(statement);
      if (rc == SQLITE_ROW) count = sqlite3_column_int64(statement, 0);
    }
    sqlite3_finalize(statement);
    if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) {
      return Status::IoError(std::string("sqlite: ") + sqlite3_errmsg(db_));
    }
    return count;
  }

  Status Exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      std::string message = error != nullptr ? error : "unknown";
      sqlite3_free(error);
      if ((sqlite3_extended_errcode(db_) & 0xFF) == SQLITE_BUSY) {
        return Status::Unavailable(LockedMessage(sqlite3_db_filename(db_, "main")));
      }
      return Status::IoError("sqlite: " + message);
    }
    return Status::Ok();
  }

  // The connection is in one of three states; the Store hands out one handle at a time.
  enum class Open : uint8_t { kNone, kWrite, kRead };
  Open open() const { return open_; }

  // On a borrowed connection inside the caller's transaction, a transaction is a savepoint of
  // it (its writes commit or roll back with the caller's) and a snapshot reads in it.
  bool Joined() const { return joined_; }
  Status BeginOwn(const char* begin) {
    joined_ = borrowed_ && sqlite3_get_autocommit(db_) == 0;
    return Exec(joined_ ? "SAVEPOINT evident" : begin);
  }
  // A savepoint that could not be released is still open: the rollback that follows undoes it.
  // A savepoint that could not be undone leaves evident's writes in the caller's transaction:
  // the caller must roll it back, and is told so.
  Status EndOwn(bool commit) {
    if (!joined_) return Exec(commit ? "COMMIT" : "ROLLBACK");
    Status status = commit ? Status::Ok() : Exec("ROLLBACK TO evident");
    if (!status.ok()) {
      joined_ = false;
      return Status::Aborted(status.message() +
                             " (evident's writes could not be undone: roll your transaction back)");
    }
    status = Exec("RELEASE evident");
    if (status.ok() || !commit) joined_ = false;
    return status;
  }
  bool borrowed() const { return borrowed_; }

  Status BeginRead() {
    assert(open_ == Open::kNone);
    // A deferred transaction takes its snapshot at its first read: read now, so the view is the
    // one committed when Read() returned.
    EVIDENT_RETURN_IF_ERROR(BeginOwn("BEGIN DEFERRED"));
    if (Status pinned = Count(kLedgerTableSql).status(); !pinned.ok()) {
      (void)EndOwn(false);
      return pinned;
    }
    open_ = Open::kRead;
    return Status::Ok();
  }
  void EndRead() {
    assert(open_ == Open::kRead);
    open_ = Open::kNone;
    if (!EndOwn(true).ok()) (void)EndOwn(false);  // a read-only transaction: nothing lost
  }

  Status Begin() {
    assert(open_ == Open::kNone);
    EVIDENT_RETURN_IF_ERROR(BeginOwn("BEGIN IMMEDIATE"));  // busy: names the lock's holder
    open_ = Open::kWrite;
    in_transaction_ = true;
    digests_kept_.reset();
    intent_digests_kept_.reset();
    projections_.clear();
    subjects_read_.clear();
    pending_deferred_.clear();
    return Status::Ok();
  }
  // A commit that fails rolls back: the transaction is over either way.
  Status Commit() {
    assert(open_ == Open::kWrite);
    Status status = Flush();
    if (status.ok()) {
      FaultPoint("before-commit");
      status = EndOwn(true);
    }
    if (!status.ok()) {
      (void)Rollback();
      return status;
    }
    FaultPoint("after-commit");
    open_ = Open::kNone;
    in_transaction_ = false;
    projections_.clear();
    subjects_read_.clear();
    return Status::Ok();
  }
  Status Rollback() {
    assert(open_ == Open::kWrite);
    open_ = Open::kNone;
    in_transaction_ = false;
    projections_.clear();
    subjects_read_.clear();
    pending_deferred_.clear();
    return EndOwn(false);
  }

  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) {
    static const LedgerSql kSql(" FROM ledger WHERE consumer=?1 AND source=?2 AND event_id=?3");
    Statement& s = Prepared(kSql.For(layout_));
    s.Bind(consumer).Bind(source).Bind(event_id);
    Status status;
    std::optional<LedgerEntry> out;
    if (s.Step(status)) out = ReadLedger(s, status);
    s.Reset();
    if (!status.ok()) return status;
    if (out) return out;
    EVIDENT_ASSIGN_OR_RETURN(const bool retained, DigestKept(consumer, source, event_id));
    if (retained) out = RetainedLedgerEntry(consumer, source, event_id);
    return out;
  }

  // Whether retention kept the key's receipt as its digest (layout 14 on).
  Result<bool> DigestKept(std::string_view consumer, std::string_view source,
                          std::string_view event_id) {
    if (layout_ < 14) return false;
    EVIDENT_ASSIGN_OR_RETURN(const std::string digest, LedgerKeyDigest(consumer, source, event_id));
    static const std::string kSql = "SELECT 1 FROM ledger_digest WHERE digest=?1";
    Statement& s = Prepared(kSql);
    s.BindBlob(digest);
    Status status;
    const bool found = s.Step(status);
    s.Reset();
    if (!status.ok()) return status;
    return found;
  }
  // Whether any digest is kept, read once per write transaction (no other writer commits while
  // it is open): a store that never compacted its ledger (or its intents) pays no digest per
  // receipt (or intent).
  Result<bool> AnyDigestKept() {
    static const std::string kSql = "SELECT EXISTS(SELECT 1 FROM ledger_digest)";
    return AnyRowOf(kSql, 14, digests_kept_);
  }
  Result<bool> AnyIntentDigestKept() {
    static const std::string kSql = "SELECT EXISTS(SELECT 1 FROM effect_digest)";
    return AnyRowOf(kSql, 15, intent_digests_kept_);
  }
  Result<bool> AnyRowOf(const std::string& exists_sql, int64_t layout_min,
                        std::optional<bool>& kept) {
    if (layout_ < layout_min) return false;
    if (!kept || !in_transaction_) {
      Statement& s = Prepared(exists_sql);
      Status status;
      const bool any = s.Step(status) && s.Int(0) != 0;
      s.Reset();
      if (!status.ok()) return status;
      kept = any;
    }
    return *kept;
  }

  // ON CONFLICT DO NOTHING: a key already there is an answer, and the transaction goes on (a
  // failed statement would abort it on PostgreSQL).
  Result<Insert> InsertLedger(const LedgerEntry& e) {
    EVIDENT_ASSIGN_OR_RETURN(const bool any_digest, AnyDigestKept());
    if (any_digest) {
      EVIDENT_ASSIGN_OR_RETURN(const bool retained, DigestKept(e.consumer, e.source, e.event_id));
      if (retained) return Insert::kAlreadyThere;
    }
    static const std::string kSql = std::string("INSERT INTO ledger(") + kLedgerColumns +
                                    ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,"
                                    "?16,?17)"
                                    " ON CONFLICT DO NOTHING";
    Statement& s = Prepared(kSql);
    EVIDENT_RETURN_IF_ERROR(s.Bind(e.consumer)
                                .Bind(e.source)
                                .Bind(e.event_id)
                                .Bind(LedgerStateName(e.state))
                                .Bind(e.type)
                                .Bind(e.subject)
                                .Bind(e.subject_version)
                                .Bind(e.input_schema_version)
                                .Bind(e.result_version)
                                .Bind(e.projection_version)
                                .Bind(e.committed_at_ms)
                                .Bind(e.duplicates)
                                .Bind(e.last_duplicate_at_ms)
                                .Bind(e.adapter)
                                .Bind(e.wrote_json)
                                .Bind(e.traceparent)
                                .Bind(e.tracestate)
                                .Run());
    return sqlite3_changes(db_) == 1 ? Insert::kInserted : Insert::kAlreadyThere;
  }

  Status MarkApplied(std::string_view consumer, std::string_view source, std::string_view event_id,
                     int64_t projection_version, int64_t committed_at_ms) {
    static const std::string kSql =
        "UPDATE ledger SET state='applied', projection_version=?4, committed_at_ms=?5 "
        "WHERE consumer=?1 AND source=?2 AND event_id=?3 AND state='deferred'";
    Statement& s = Prepared(kSql);
    EVIDENT_RETURN_IF_ERROR(s.Bind(consumer)
                                .Bind(source)
                                .Bind(event_id)
                                .Bind(projection_version)
                                .Bind(committed_at_ms)
                                .Run());
    if (sqlite3_changes(db_) != 1) return Status::Internal("no deferred ledger row to apply");
    return Status::Ok();
  }

  Status CountDuplicate(std::string_view consumer, std::string_view source,
                        std::string_view event_id, int64_t at_ms) {
    static const std::string kSql =
        "UPDATE ledger SET duplicates=duplicates+1, last_duplicate_at_ms=?4 "
        "WHERE consumer=?1 AND source=?2 AND event_id=?3";
    Statement& s = Prepared(kSql);
    return s.Bind(consumer).Bind(source).Bind(event_id).Bind(at_ms).Run();
  }

  // Inside a transaction, projections are read once and written once per batch: consecutive
  // events of one subject (v1, v2, v3 of an order) then cost one read and one write in all.
  Result<std::optional<Projection>> FindProjection(std::string_view consumer,
                                                   std::string_view subject) {
    EVIDENT_ASSIGN_OR_RETURN(CachedProjection * cached, Cached(consumer, subject));
    if (!cached->exists) return std::optional<Projection>();
    return cached->value;
  }

  // Assigned field by field: the caller's strings keep their capacity from the last event.
  Result<bool> ReadProjection(std::string_view consumer, std::string_view subject,
                              Projection& out) {
    EVIDENT_ASSIGN_OR_RETURN(CachedProjection * cached, Cached(consumer, subject));
    if (!cached->exists) {
      FreshProjection(consumer, subject, out);
      return false;
    }
    AssignProjection(*cached->value, out);
    return true;
  }

  // The cache entry of (consumer, subject), read from the table on first use in a transaction.
  // Outside a transaction the entry is a scratch copy, valid until the next call.
  Result<CachedProjection*> Cached(std::string_view consumer, std::string_view subject) {
    SubjectCache* subjects = nullptr;
    if (in_transaction_) {
      auto consumer_it = projections_.find(consumer);
      if (consumer_it == projections_.end()) {
        consumer_it = projections_.emplace(std::string(consumer), SubjectCache{}).first;
      }
      subjects = &consumer_it->second;
      const auto it = subjects->find(subject);
      if (it != subjects->end()) return &it->second;
      if (subject_first_) return CachedBySubject(*subjects, subject);
    }
    static const std::string kSql = std::string("SELECT ") + kProjectionColumns +
                                    " FROM projection WHERE consumer=?1 AND subject=?2";
    static const std::string kSql7 = std::string("SELECT ") + kProjectionColumns7 +
                                     " FROM projection WHERE consumer=?1 AND subject=?2";
    Statement& s = Prepared(layout_ >= 8 ? kSql : kSql7);
    s.Bind(consumer).Bind(subject);
    Status status;
    CachedProjection entry;
    std::string evidence_json;
    if (s.Step(status)) {
      entry.value = ReadProjectionRow(s, status);
      entry.exists = true;
      entry.in_table = true;
      evidence_json = s.Text(8);
    }
    s.Reset();
    if (!status.ok()) return status;
    if (entry.value) EVIDENT_RETURN_IF_ERROR(LoadEvidence(evidence_json, entry));
    if (subjects == nullptr) {
      scratch_ = std::move(entry);
      return &scratch_;
    }
    return &subjects->emplace(std::string(subject), std::move(entry)).first->second;
  }

  // A transaction's first look-up of a subject reads every consumer's row of it at once (one
  // B-tree seek where the key leads with the subject): consumers of one event, or of one
  // subject's events, then find their projections cached. Rows already cached are not replaced.
  Result<CachedProjection*> CachedBySubject(SubjectCache& subjects, std::string_view subject) {
    if (subjects_read_.find(subject) == subjects_read_.end()) {
      subjects_read_.emplace(subject);
      static const std::string kSql =
          std::string("SELECT ") + kProjectionColumns + " FROM projection WHERE subject=?1";
      Statement& s = Prepared(kSql);
      s.Bind(subject);
      Status status;
      while (s.Step(status)) {
        CachedProjection entry;
        entry.value = ReadProjectionRow(s, status);
        entry.exists = true;
        entry.in_table = true;
        if (Status loaded = LoadEvidence(s.Text(8), entry); !loaded.ok()) {
          s.Reset();
          return loaded;
        }
        auto consumer_it = projections_.find(entry.value->consumer);
        if (consumer_it == projections_.end()) {
          consumer_it = projections_.emplace(entry.value->consumer, SubjectCache{}).first;
        }
        consumer_it->second.try_emplace(entry.value->subject, std::move(entry));
      }
      s.Reset();
      if (!status.ok()) return status;
    }
    // Absent from the table: a new, empty entry.
    return &subjects.try_emplace(std::string(subject)).first->second;
  }

  Status PutProjection(const Projection& p, std::optional<int64_t> expected_version) {
    assert(in_transaction_);
    EVIDENT_ASSIGN_OR_RETURN(CachedProjection * cached, Cached(p.consumer, p.subject));
    const std::optional<int64_t> stored =
        cached->exists ? std::optional<int64_t>(cached->value->version) : std::nullopt;
    if (stored != expected_version) {
      return Status::Aborted("projection " + p.consumer + "/" + p.subject + " is at " +
                             (stored ? "version " + std::to_string(*stored) : "no version") +
                             ", not the one this write expected");
    }
    const int64_t owner_version_seen =
        stored ? std::max(cached->value->owner_version_seen, p.owner_version_seen)
               : p.owner_version_seen;
    if (!cached->value) cached->value.emplace();
    AssignProjection(p, *cached->value);
    cached->value->owner_version_seen = owner_version_seen;
    cached->exists = true;
    cached->dirty = true;
    return Status::Ok();
  }

  Status WriteProjection(CachedProjection& cached) {
    static const std::string kInsert = std::string("INSERT INTO projection(") + kProjectionColumns +
                                       ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)";
    static const std::string kUpdate =
        "UPDATE projection SET version=?3, state=?4, fields_json=?5, owner_source=?6, "
        "owner_version_seen=?7, updated_at_ms=?8, evidence_json=?9, applied_digest=?10 WHERE "
        "consumer=?1 AND subject=?2";
    Statement& s = Prepared(cached.in_table ? kUpdate : kInsert);
    const Projection& p = *cached.value;
    EvidenceJson(cached, evidence_json_);
    EVIDENT_RETURN_IF_ERROR(s.Bind(p.consumer)
                                .Bind(p.subject)
                                .Bind(p.version)
                                .Bind(p.state)
                                .Bind(p.fields_json)
                                .Bind(p.owner_source)
                                .Bind(p.owner_version_seen)
                                .Bind(p.updated_at_ms)
                                .Bind(evidence_json_)
                                .Bind(p.applied_digest)
                                .Run());
    cached.dirty = false;  // only once written: a failed write is still owed at commit
    cached.in_table = true;
    return Status::Ok();
  }

  // Writes what the transaction holds back: dirty projections and deferred events still waiting.
  Status Flush() {
    EVIDENT_RETURN_IF_ERROR(FlushProjections());
    for (const auto& [key, deferred] : pending_deferred_) {
      EVIDENT_RETURN_IF_ERROR(WriteDeferred(deferred));
    }
    pending_deferred_.clear();
    return Status::Ok();
  }

  Status FlushProjections() {
    // In key order (subject, then consumer), so that the B-tree is written front to back.
    std::vector<std::pair<const std::string*, CachedProjection*>> dirty;
    for (auto& [consumer, subjects] : projections_) {
      for (auto& [subject, cached] : subjects) {
        // Evidence without a projection row is not written: the pipeline records evidence only
        // while it applies an event, and every apply puts its projection.
        if (cached.dirty && cached.exists) dirty.emplace_back(&consumer, &cached);
      }
    }
    std::sort(dirty.begin(), dirty.end(), [](const auto& a, const auto& b) {
      const std::string& a_subject = a.second->value->subject;
      const std::string& b_subject = b.second->value->subject;
      if (a_subject != b_subject) return a_subject < b_subject;
      return *a.first < *b.first;
    });
    for (auto& [consumer, cached] : dirty) EVIDENT_RETURN_IF_ERROR(WriteProjection(*cached));
    return Status::Ok();
  }

  Result<std::optional<DeferredEvent>> FindDeferred(std::string_view consumer,
                                                    std::string_view subject,
                                                    int64_t subject_version) {
    if (const auto it = pending_deferred_.find(DeferredView(consumer, subject, subject_version));
        it != pending_deferred_.end()) {
      return std::optional<DeferredEvent>(it->second);
    }
    static const std::string kSql =
        std::string("SELECT ") + kDeferredColumns +
        " FROM deferred WHERE consumer=?1 AND subject=?2 AND subject_version=?3";
    Statement& s = Prepared(kSql);
    s.Bind(consumer).Bind(subject).Bind(subject_version);
    Status status;
    std::optional<DeferredEvent> out;
    if (s.Step(status)) out = ReadDeferred(s, status);
    s.Reset();
    if (!status.ok()) return status;
    return out;
  }

  // A deferred event is held until commit: most gaps close within the batch that opened them
  // (v2 arrives just before v1), and then the row is never written. A key the table holds
  // already is found first, so the clash is an answer here rather than a failed commit.
  Result<Insert> InsertDeferred(const DeferredEvent& d) {
    assert(in_transaction_);
    const DeferredView key(d.consumer, d.subject, d.subject_version);
    if (pending_deferred_.find(key) != pending_deferred_.end()) return Insert::kAlreadyThere;
    EVIDENT_ASSIGN_OR_RETURN(const bool stored,
                             DeferredInTable(d.consumer, d.subject, d.subject_version));
    if (stored) return Insert::kAlreadyThere;
    pending_deferred_.try_emplace(DeferredKey(d.consumer, d.subject, d.subject_version), d);
    return Insert::kInserted;
  }

  // Whether the table holds the key: the primary key's page alone, not the row's bytes.
  Result<bool> DeferredInTable(std::string_view consumer, std::string_view subject,
                               int64_t subject_version) {
    static const std::string kSql =
        "SELECT 1 FROM deferred WHERE consumer=?1 AND subject=?2 AND subject_version=?3";
    Statement& s = Prepared(kSql);
    s.Bind(consumer).Bind(subject).Bind(subject_version);
    Status status;
    const bool found = s.Step(status);
    s.Reset();
    if (!status.ok()) return status;
    return found;
  }

  Status WriteDeferred(const DeferredEvent& d) {
    static const std::string kSql = std::string("INSERT INTO deferred(") + kDeferredColumns +
                                    ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)";
    Statement& s = Prepared(kSql);
    return s.Bind(d.consumer)
        .Bind(d.subject)
        .Bind(d.subject_version)
        .Bind(d.source)
        .Bind(d.event_id)
        .Bind(d.type)
        .Bind(d.schema_version)
        .Bind(d.expected_version)
        .BindBlob(d.raw)
        .Bind(d.received_at_ms)
        .Bind(d.deadline_at_ms)
        .Bind(GapRouteName(d.route))
        .Bind(d.input_index)
        .Run();
  }

  Status DeleteDeferred(std::string_view consumer, std::string_view subject,
                        int64_t subject_version) {
    if (const auto it = pending_deferred_.find(DeferredView(consumer, subject, subject_version));
        it != pending_deferred_.end()) {
      pending_deferred_.erase(it);
      return Status::Ok();
    }
    static const std::string kSql =
        "DELETE FROM deferred WHERE consumer=?1 AND subject=?2 AND subject_version=?3";
    Statement& s = Prepared(kSql);
    return s.Bind(consumer).Bind(subject).Bind(subject_version).Run();
  }

  // The record of the same input (identity and bytes), or a new one (quarantine_rules.h).
  Result<QuarantineKept> Quarantine(const QuarantineRecord& r) {
    assert(r.outcome != Outcome::kApplied && r.outcome != Outcome::kDeferred &&
           r.outcome != Outcome::kDuplicate);
    const bool identified = !r.source.empty() && !r.event_id.empty();
    const std::string_view ident_source = identified ? std::string_view(r.source) : "";
    const std::string_view ident_id = identified ? std::string_view(r.event_id) : "";
    const auto raw_hash = static_cast<int64_t>(Fnv1a(kFnv1aOffset, r.raw));
    static const std::string kFind = std::string("SELECT ") + kQuarantineColumns +
                                     " FROM quarantine WHERE consumer=?1 AND ident_source=?2"
                                     " AND ident_id=?3 AND raw_hash=?4 AND raw=?5 LIMIT ?6";
    // The bytes are compared in SQL, so inputs whose hashes collide cost a comparison each,
    // and only the record of the same input is read.
    EVIDENT_ASSIGN_OR_RETURN(
        Rows<QuarantineRecord> same,
        QueryBound<QuarantineRecord>(
            kFind,
            [&](Statement& s) {
              s.Bind(r.consumer).Bind(ident_source).Bind(ident_id).Bind(raw_hash).BindBlob(r.raw);
            },
            1, ReadQuarantine));
    for (QuarantineRecord& there : same.rows) {
      NoteAttempt(r, there);
      static const std::string kUpdate =
          "UPDATE quarantine SET outcome=?2, reason=?3, message=?4, type=?5, subject=?6,"
          " subject_version=?7, schema_version=?8, attempts=?9, last_seen_ms=?10,"
          " input_index=?11 WHERE id=?1";
      EVIDENT_RETURN_IF_ERROR(Prepared(kUpdate)
                                  .Bind(there.id)
                                  .Bind(OutcomeName(there.outcome))
                                  .Bind(there.reason)
                                  .Bind(there.message)
                                  .Bind(there.type)
                                  .Bind(there.subject)
                                  .Bind(there.subject_version)
                                  .Bind(there.schema_version)
                                  .Bind(there.attempts)
                                  .Bind(there.last_seen_ms)
                                  .Bind(there.input_index)
                                  .Run());
      return QuarantineKept{.id = there.id, .added = false};
    }
    static const std::string kInsert =
        "INSERT INTO quarantine(consumer, ident_source, ident_id, raw_hash, outcome, reason,"
        " message, source, event_id, type, subject, subject_version, schema_version, raw,"
        " attempts, first_seen_ms, last_seen_ms, status, input_index)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,1,?15,?15,'open',?16)";
    EVIDENT_RETURN_IF_ERROR(Prepared(kInsert)
                                .Bind(r.consumer)
                                .Bind(ident_source)
                                .Bind(ident_id)
                                .Bind(raw_hash)
                                .Bind(OutcomeName(r.outcome))
                                .Bind(r.reason)
                                .Bind(r.message)
                                .Bind(r.source)
                                .Bind(r.event_id)
                                .Bind(r.type)
                                .Bind(r.subject)
                                .Bind(r.subject_version)
                                .Bind(r.schema_version)
                                .BindBlob(r.raw)
                                .Bind(r.last_seen_ms)
                                .Bind(r.input_index)
                                .Run());
    return QuarantineKept{.id = sqlite3_last_insert_rowid(db_), .added = true};
  }

  Result<std::optional<GapRecord>> FindGap(std::string_view consumer, std::string_view subject,
                                           int64_t expected_version) {
    static const std::string kSql = std::string("SELECT ") + kGapColumns +
                                    " FROM gap WHERE consumer=?1 AND subject=?2"
                                    " AND expected_version=?3";
    EVIDENT_ASSIGN_OR_RETURN(
        Rows<GapRecord> rows,
        QueryBound<GapRecord>(
            kSql, [&](Statement& s) { s.Bind(consumer).Bind(subject).Bind(expected_version); }, 1,
            ReadGap));
    if (rows.rows.empty()) return std::optional<GapRecord>();
    return std::optional<GapRecord>(std::move(rows.rows.front()));
  }

  Result<Insert> InsertGap(const GapRecord& g) {
    static const std::string kSql =
        std::string("INSERT INTO gap(") + kGapColumns +
        ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18)"
        " ON CONFLICT DO NOTHING";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql)
                                .Bind(g.consumer)
                                .Bind(g.subject)
                                .Bind(g.expected_version)
                                .Bind(g.missing_to)
                                .Bind(GapRouteName(g.route))
                                .Bind(GapStateName(g.state))
                                .Bind(g.deadline_at_ms)
                                .Bind(g.acted_at_ms)
                                .Bind(g.request_event_id)
                                .Bind(g.closed_at_ms)
                                .Bind(g.closed_by)
                                .Bind(g.note)
                                .Bind(g.opened_at_ms)
                                .Bind(VersionsText(g.waiting_versions))
                                .Bind(GapClosedHowName(g.how))
                                .Bind(GapCauseName(g.cause))
                                .Bind(g.answer)
                                .Bind(g.answered_at_ms)
                                .Run());
    return sqlite3_changes(db_) == 1 ? Insert::kInserted : Insert::kAlreadyThere;
  }

  Status UpdateGap(const GapRecord& g) {
    static const std::string kSql =
        "UPDATE gap SET missing_to=?4, route=?5, state=?6, deadline_at_ms=?7, acted_at_ms=?8,"
        " request_event_id=?9, closed_at_ms=?10, closed_by=?11, note=?12, waiting=?13, how=?14,"
        " cause=?15, answer=?16, answered_at_ms=?17"
        " WHERE consumer=?1 AND subject=?2 AND expected_version=?3";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql)
                                .Bind(g.consumer)
                                .Bind(g.subject)
                                .Bind(g.expected_version)
                                .Bind(g.missing_to)
                                .Bind(GapRouteName(g.route))
                                .Bind(GapStateName(g.state))
                                .Bind(g.deadline_at_ms)
                                .Bind(g.acted_at_ms)
                                .Bind(g.request_event_id)
                                .Bind(g.closed_at_ms)
                                .Bind(g.closed_by)
                                .Bind(g.note)
                                .Bind(VersionsText(g.waiting_versions))
                                .Bind(GapClosedHowName(g.how))
                                .Bind(GapCauseName(g.cause))
                                .Bind(g.answer)
                                .Bind(g.answered_at_ms)
                                .Run());
    if (sqlite3_changes(db_) == 1) return Status::Ok();
    return Status::NotFound("no gap record of " + g.consumer + "/" + g.subject + " at version " +
                            std::to_string(g.expected_version));
  }

  Result<int64_t> CloseGaps(std::string_view consumer, std::string_view subject,
                            int64_t through_version, const GapClosing& closing) {
    static const std::string kSql =
        "UPDATE gap SET state='closed', closed_at_ms=?4, closed_by=?5, note=?6, how=?7, cause=?8,"
        " waiting=CASE WHEN ?9='' THEN waiting ELSE ?9 END,"
        " missing_to=CASE WHEN ?10 IS NULL THEN missing_to"
        " ELSE max(expected_version, min(missing_to, ?10)) END"
        " WHERE consumer=?1 AND subject=?2 AND missing_to<=?3 AND state<>'closed'";
    EVIDENT_RETURN_IF_ERROR(
        Prepared(kSql)
            .Bind(consumer)
            .Bind(subject)
            .Bind(through_version)
            .Bind(closing.at_ms)
            .Bind(closing.by)
            .Bind(closing.note)
            .Bind(GapClosedHowName(closing.how))
            .Bind(GapCauseName(closing.cause))
            .Bind(VersionsText(closing.waiting_versions))
            .Bind(closing.waiting_versions.empty()
                      ? std::optional<int64_t>()
                      : std::optional<int64_t>(*std::min_element(closing.waiting_versions.begin(),
                                                                 closing.waiting_versions.end()) -
                                               1))
            .Run());
    return static_cast<int64_t>(sqlite3_changes(db_));
  }

  Result<Rows<GapRecord>> GapRecordsOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) {
    if (layout_ < 4) return Rows<GapRecord>{};  // a read-only open of an older layout
    const auto build = [](const char* columns) {
      return std::string("SELECT ") + columns +
             " FROM gap WHERE consumer=?1 AND subject=?2 ORDER BY expected_version LIMIT ?3";
    };
    static const std::string kSql = build(kGapColumns);
    static const std::string kSql7 = build(kGapColumns7);
    return Query<GapRecord>(layout_ >= 8 ? kSql : kSql7, {consumer, subject}, rows_max, ReadGap);
  }

  Result<Rows<GapRecord>> OpenGapRecords(int64_t rows_max) {
    if (layout_ < 4) return Rows<GapRecord>{};
    const auto build = [](const char* columns) {
      return std::string("SELECT ") + columns +
             " FROM gap WHERE state<>'closed' ORDER BY deadline_at_ms, consumer, subject,"
             " expected_version LIMIT ?1";
    };
    static const std::string kSql = build(kGapColumns);
    static const std::string kSql7 = build(kGapColumns7);
    return Query<GapRecord>(layout_ >= 8 ? kSql : kSql7, {}, rows_max, ReadGap);
  }

  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) {
    EVIDENT_RETURN_IF_ERROR(NeedLayout(4, "the quarantine"));
    static const std::string kSql =
        std::string("SELECT ") + kQuarantineColumns + " FROM quarantine WHERE id=?1";
    EVIDENT_ASSIGN_OR_RETURN(Rows<QuarantineRecord> rows,
                             QueryBound<QuarantineRecord>(
                                 kSql, [&](Statement& s) { s.Bind(id); }, 1, ReadQuarantine));
    if (rows.rows.empty()) return std::optional<QuarantineRecord>();
    return std::optional<QuarantineRecord>(std::move(rows.rows.front()));
  }

  Status SetQuarantineStatus(int64_t id, QuarantineStatus status) {
    static const std::string kSql = "UPDATE quarantine SET status=?2 WHERE id=?1";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql).Bind(id).Bind(QuarantineStatusName(status)).Run());
    if (sqlite3_changes(db_) == 0) {
      return Status::NotFound("no quarantine record " + std::to_string(id));
    }
    return Status::Ok();
  }

  Status AuditQuarantine(const QuarantineAudit& a) {
    EVIDENT_ASSIGN_OR_RETURN(const std::optional<QuarantineRecord> record,
                             FindQuarantine(a.record_id));
    if (!record) return Status::NotFound("no quarantine record " + std::to_string(a.record_id));
    static const std::string kSql =
        "INSERT INTO quarantine_audit(record_id, action, by_whom, note, outcome, reason,"
        " status_after, at_ms) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)";
    return Prepared(kSql)
        .Bind(a.record_id)
        .Bind(QuarantineActionName(a.action))
        .Bind(a.by)
        .Bind(a.note)
        .Bind(a.outcome)
        .Bind(a.reason)
        .Bind(QuarantineStatusName(a.status_after))
        .Bind(a.at_ms)
        .Run();
  }

  Result<Rows<QuarantineRecord>> ListQuarantine(const QuarantineFilter& f, QuarantineCursor after,
                                                int64_t rows_max) {
    EVIDENT_RETURN_IF_ERROR(NeedLayout(4, "the quarantine"));
    // Fixed text: an unset filter binds NULL and matches every row; ids go in as a JSON array.
    static const std::string kSql = std::string("SELECT ") + kQuarantineColumns +
                                    " FROM quarantine WHERE (first_seen_ms, id) > (?1, ?2)"
                                    " AND (?3 IS NULL OR consumer=?3) AND (?4 IS NULL OR reason=?4)"
                                    " AND (?5 IS NULL OR status=?5)"
                                    " AND (?6 IS NULL OR id IN (SELECT value FROM json_each(?6)))"
                                    " ORDER BY first_seen_ms, id LIMIT ?7";
    std::string ids;
    if (!f.ids.empty()) {
      ids = "[";
      for (const int64_t id : f.ids) ids += (ids.size() > 1 ? "," : "") + std::to_string(id);
      ids += "]";
    }
    return QueryBound<QuarantineRecord>(
        kSql,
        [&](Statement& s) {
          s.Bind(after.first_seen_ms).Bind(after.id);
          f.consumer ? s.Bind(*f.consumer) : s.Bind(std::optional<int64_t>());
          f.reason ? s.Bind(*f.reason) : s.Bind(std::optional<int64_t>());
          f.status ? s.Bind(QuarantineStatusName(*f.status)) : s.Bind(std::optional<int64_t>());
          f.ids.empty() ? s.Bind(std::optional<int64_t>()) : s.Bind(std::string_view(ids));
        },
        rows_max, ReadQuarantine);
  }

  Result<Rows<QuarantineAudit>> AuditOf(int64_t record_id, int64_t rows_max) {
    if (layout_ < 4) return Rows<QuarantineAudit>{};  // a read-only open of an older layout
    static const std::string kSql =
        "SELECT seq, record_id, action, by_whom, note, outcome, reason, status_after, at_ms"
        " FROM quarantine_audit WHERE record_id=?1 ORDER BY seq LIMIT ?2";
    return QueryBound<QuarantineAudit>(
        kSql, [&](Statement& s) { s.Bind(record_id); }, rows_max, ReadAudit);
  }

  Result<Insert> InsertIntent(const EffectIntent& e) {
    assert(in_transaction_);
    EVIDENT_ASSIGN_OR_RETURN(const bool any_digest, AnyIntentDigestKept());
    if (any_digest) {
      EVIDENT_ASSIGN_OR_RETURN(const std::optional<EffectIntent> retained, RetainedIntent(e.key));
      if (retained) return Insert::kAlreadyThere;
    }
    static const std::string kSql =
        "INSERT INTO effect_intent(key, effect, consumer, subject, source, event_id,"
        " subject_version, request, state, attempts, last_error, http_status, response_digest,"
        " intended_at_ms, last_attempt_at_ms, next_attempt_at_ms, settled_at_ms, claimed_by,"
        " revision, basis_version)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,1,?19)"
        " ON CONFLICT DO NOTHING";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql)
                                .Bind(e.key)
                                .Bind(e.effect)
                                .Bind(e.consumer)
                                .Bind(e.subject)
                                .Bind(e.source)
                                .Bind(e.event_id)
                                .Bind(e.subject_version)
                                .BindBlob(e.request)
                                .Bind(EffectStateName(e.state))
                                .Bind(e.attempts)
                                .Bind(e.last_error)
                                .Bind(e.http_status)
                                .Bind(e.response_digest)
                                .Bind(e.intended_at_ms)
                                .Bind(e.last_attempt_at_ms)
                                .Bind(e.next_attempt_at_ms)
                                .Bind(e.settled_at_ms)
                                .Bind(e.claimed_by)
                                .Bind(e.basis_version)
                                .Run());
    return sqlite3_changes(db_) == 1 ? Insert::kInserted : Insert::kAlreadyThere;
  }

  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) {
    EVIDENT_RETURN_IF_ERROR(NeedLayout(5, "effects"));
    static const std::string kSql =
        std::string("SELECT ") + kIntentColumns + " FROM effect_intent WHERE key=?1";
    static const std::string kSql7 =
        std::string("SELECT ") + kIntentColumns7 + " FROM effect_intent WHERE key=?1";
    EVIDENT_ASSIGN_OR_RETURN(
        Rows<EffectIntent> rows,
        Query<EffectIntent>(layout_ >= 8 ? kSql : kSql7, {key}, 1, ReadIntent));
    if (rows.rows.empty()) return RetainedIntent(key);
    return std::optional<EffectIntent>(std::move(rows.rows.front()));
  }

  // The retained form of the intent of `key` when retention kept only its digest (layout 15 on).
  Result<std::optional<EffectIntent>> RetainedIntent(std::string_view key) {
    if (layout_ < 15) return std::optional<EffectIntent>();
    EVIDENT_ASSIGN_OR_RETURN(const std::string digest, IntentKeyDigest(key));
    static const std::string kSql =
        "SELECT effect, consumer, state, settled_s FROM effect_digest WHERE digest=?1";
    Statement& s = Prepared(kSql);
    s.BindBlob(digest);
    Status status;
    std::optional<EffectIntent> out;
    if (s.Step(status)) {
      const std::optional<EffectState> state = ParseEffectState(s.Text(2));
      if (!state) {
        status = Status::Corruption("effect_digest: unknown state '" + s.Text(2) + "'");
      } else {
        out = RetainedIntentEntry(key, s.Text(0), s.Text(1), *state, s.Int(3));
      }
    }
    s.Reset();
    if (!status.ok()) return status;
    return out;
  }

  Result<Rows<EffectIntent>> DueIntents(int64_t now_ms, int64_t rows_max) {
    static const std::string kSql = std::string("SELECT ") + kIntentColumns +
                                    " FROM effect_intent WHERE next_attempt_at_ms IS NOT NULL"
                                    " AND next_attempt_at_ms<=?1 ORDER BY next_attempt_at_ms, seq"
                                    " LIMIT ?2";
    return QueryBound<EffectIntent>(
        kSql, [&](Statement& s) { s.Bind(now_ms); }, rows_max, ReadIntent);
  }

  Status UpdateIntent(const EffectIntent& e, int64_t expected_revision) {
    assert(in_transaction_);
    static const std::string kSql =
        "UPDATE effect_intent SET state=?3, attempts=?4, last_error=?5, http_status=?6,"
        " response_digest=?7, last_attempt_at_ms=?8, next_attempt_at_ms=?9, settled_at_ms=?10,"
        " claimed_by=?11, revision=?2+1 WHERE key=?1 AND revision=?2";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql)
                                .Bind(e.key)
                                .Bind(expected_revision)
                                .Bind(EffectStateName(e.state))
                                .Bind(e.attempts)
                                .Bind(e.last_error)
                                .Bind(e.http_status)
                                .Bind(e.response_digest)
                                .Bind(e.last_attempt_at_ms)
                                .Bind(e.next_attempt_at_ms)
                                .Bind(e.settled_at_ms)
                                .Bind(e.claimed_by)
                                .Run());
    if (sqlite3_changes(db_) == 1) return Status::Ok();
    EVIDENT_ASSIGN_OR_RETURN(const std::optional<EffectIntent> there, FindIntent(e.key));
    if (!there) return Status::NotFound("no effect intent " + e.key);
    return Status::Aborted("effect intent " + e.key + " is at revision " +
                           std::to_string(there->revision) + ", not " +
                           std::to_string(expected_revision) + ": changed by another writer");
  }

  // One statement when the intent's row is there (the log entry inserted only if it is); a key
  // retention kept only the digest of is looked up after, as FindIntent answers for it.
  Status LogIntent(const EffectLogEntry& l) {
    EVIDENT_RETURN_IF_ERROR(NeedLayout(5, "effects"));
    static const std::string kIfThere =
        "INSERT INTO effect_log(key, action, by_whom, state_after, http_status, detail, at_ms)"
        " SELECT ?1,?2,?3,?4,?5,?6,?7 WHERE EXISTS(SELECT 1 FROM effect_intent WHERE key=?1)";
    EVIDENT_RETURN_IF_ERROR(BindLogEntry(Prepared(kIfThere), l).Run());
    if (sqlite3_changes(db_) == 1) return Status::Ok();
    EVIDENT_ASSIGN_OR_RETURN(const std::optional<EffectIntent> intent, FindIntent(l.key));
    if (!intent) return Status::NotFound("no effect intent " + l.key);
    static const std::string kSql =
        "INSERT INTO effect_log(key, action, by_whom, state_after, http_status, detail, at_ms)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7)";
    return BindLogEntry(Prepared(kSql), l).Run();
  }

  static Statement& BindLogEntry(Statement& s, const EffectLogEntry& l) {
    return s.Bind(l.key)
        .Bind(EffectActionName(l.action))
        .Bind(l.by)
        .Bind(EffectStateName(l.state_after))
        .Bind(l.http_status)
        .Bind(l.detail)
        .Bind(l.at_ms);
  }

  // The store contract's IntendOnce in two statements where the general form takes four: the
  // insert, and on a key already there the trigger logged on the intent of the same consumer and
  // effect by one INSERT ... SELECT (its state read by the statement itself). Anything else (a
  // key another effect holds, a key kept only as a digest) takes the general form's answer.
  Status IntendOnceFast(const EffectIntent& intent, std::string_view trigger_detail, bool& done) {
    done = false;
    EVIDENT_ASSIGN_OR_RETURN(const Insert inserted, InsertIntent(intent));
    if (inserted == Insert::kInserted) {
      done = true;
      return Status::Ok();
    }
    static const std::string kSql =
        "INSERT INTO effect_log(key, action, by_whom, state_after, http_status, detail, at_ms)"
        " SELECT key, ?6, consumer, state, NULL, ?4, ?5 FROM effect_intent"
        " WHERE key=?1 AND effect=?2 AND consumer=?3";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql)
                                .Bind(intent.key)
                                .Bind(intent.effect)
                                .Bind(intent.consumer)
                                .Bind(trigger_detail)
                                .Bind(intent.intended_at_ms)
                                .Bind(EffectActionName(EffectAction::kTrigger))
                                .Run());
    // The state is copied as stored: the trigger changes none, and reading it back
    // (ReadIntent) is where an unknown state text is reported.
    done = sqlite3_changes(db_) == 1;
    return Status::Ok();
  }

  Result<Insert> InsertCompensation(const CompensationRecord& c) {
    assert(in_transaction_);
    static const std::string kSql =
        "INSERT INTO compensation(key, consumer, subject, owner_source, owner_version, event_id,"
        " type, recorded_at_ms, recorded_by, decision, compensates, covers, compensate_with,"
        " compensating_key, compensating_request, basis_version, state, detail, updated_at_ms)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19)"
        " ON CONFLICT DO NOTHING";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql)
                                .Bind(c.key)
                                .Bind(c.consumer)
                                .Bind(c.subject)
                                .Bind(c.owner_source)
                                .Bind(c.owner_version)
                                .Bind(c.event_id)
                                .Bind(c.type)
                                .Bind(c.recorded_at_ms)
                                .Bind(CompensationByName(c.recorded_by))
                                .Bind(c.decision)
                                .Bind(c.compensates)
                                .Bind(c.covers)
                                .Bind(c.compensate_with)
                                .Bind(c.compensating_key)
                                .BindBlob(c.compensating_request)
                                .Bind(c.basis_version)
                                .Bind(CompensationStateName(c.state))
                                .Bind(c.detail)
                                .Bind(c.updated_at_ms)
                                .Run());
    return sqlite3_changes(db_) == 1 ? Insert::kInserted : Insert::kAlreadyThere;
  }

  Status UpdateCompensation(const CompensationRecord& c) {
    assert(in_transaction_);
    static const std::string kSql =
        "UPDATE compensation SET covers=?2, compensating_key=?3, state=?4, detail=?5,"
        " updated_at_ms=?6 WHERE key=?1 AND consumer=?7";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql)
                                .Bind(c.key)
                                .Bind(c.covers)
                                .Bind(c.compensating_key)
                                .Bind(CompensationStateName(c.state))
                                .Bind(c.detail)
                                .Bind(c.updated_at_ms)
                                .Bind(c.consumer)
                                .Run());
    if (sqlite3_changes(db_) == 1) return Status::Ok();
    return Status::NotFound("no compensation " + c.key);
  }

  Result<std::vector<CompensationRecord>> CompensationsOfIntent(std::string_view key) {
    if (key.empty()) return std::vector<CompensationRecord>();  // an owner's record covers none
    // Two index searches merged in seq order (MERGE (UNION ALL)): the OR of the two columns
    // took a temporary B-tree for the ORDER BY on every call, about twice the time.
    static const std::string kSql = std::string("SELECT ") + kCompensationColumns +
                                    " FROM compensation WHERE covers=?1 UNION ALL SELECT " +
                                    kCompensationColumns +
                                    " FROM compensation WHERE compensating_key=?1 AND covers<>?1"
                                    " ORDER BY seq LIMIT ?2";
    EVIDENT_ASSIGN_OR_RETURN(
        Rows<CompensationRecord> rows,
        Query<CompensationRecord>(kSql, {key}, kCoveringRowsMax, ReadCompensation));
    return std::move(rows.rows);
  }

  Result<std::optional<EffectIntent>> LatestIntentOf(std::string_view consumer,
                                                     std::string_view subject,
                                                     std::string_view effect) {
    static const std::string kSql = std::string("SELECT ") + kIntentColumns +
                                    " FROM effect_intent WHERE subject=?1 AND consumer=?2"
                                    " AND effect=?3 ORDER BY seq DESC LIMIT ?4";
    EVIDENT_ASSIGN_OR_RETURN(Rows<EffectIntent> rows,
                             Query<EffectIntent>(kSql, {subject, consumer, effect}, 1, ReadIntent));
    if (rows.rows.empty()) return std::optional<EffectIntent>();
    return std::optional<EffectIntent>(std::move(rows.rows.front()));
  }

  Status InsertCorrection(const ProjectionCorrection& c) {
    assert(in_transaction_);
    static const std::string kSql =
        "INSERT INTO projection_correction(consumer, subject, before_json, after_json, by_whom,"
        " note, basis, forced, at_ms) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)";
    return Prepared(kSql)
        .Bind(c.consumer)
        .Bind(c.subject)
        .Bind(c.before_json)
        .Bind(c.after_json)
        .Bind(c.by)
        .Bind(c.note)
        .Bind(c.basis)
        .Bind(int64_t{c.forced ? 1 : 0})
        .Bind(c.at_ms)
        .Run();
  }

  Result<Rows<ProjectionCorrection>> CorrectionsOf(std::string_view consumer,
                                                   std::string_view subject, int64_t rows_max) {
    if (layout_ < 8) return Rows<ProjectionCorrection>{};  // a read-only open of an older layout
    static const std::string kSql =
        "SELECT seq, consumer, subject, before_json, after_json, by_whom, note, basis, forced,"
        " at_ms FROM projection_correction WHERE subject=?2 AND consumer=?1 ORDER BY seq"
        " LIMIT ?3";
    return Query<ProjectionCorrection>(kSql, {consumer, subject}, rows_max,
                                       [](const Statement& s, Status&) {
                                         return ProjectionCorrection{.seq = s.Int(0),
                                                                     .consumer = s.Text(1),
                                                                     .subject = s.Text(2),
                                                                     .before_json = s.Text(3),
                                                                     .after_json = s.Text(4),
                                                                     .by = s.Text(5),
                                                                     .note = s.Text(6),
                                                                     .basis = s.Text(7),
                                                                     .forced = s.Int(8) != 0,
                                                                     .at_ms = s.Int(9)};
                                       });
  }

  Status DeleteLedger(std::string_view consumer, std::string_view source,
                      std::string_view event_id) {
    static const std::string kSql =
        "DELETE FROM ledger WHERE consumer=?1 AND source=?2 AND event_id=?3";
    return Prepared(kSql).Bind(consumer).Bind(source).Bind(event_id).Run();
  }

  // The receipts of a subject are few; its index by (subject, consumer) finds them.
  Result<std::optional<LedgerEntry>> AppliedAfter(std::string_view consumer,
                                                  std::string_view subject,
                                                  int64_t after_projection_version,
                                                  const std::vector<std::string>& types) {
    // INDEXED BY, as in LedgerOf: without it SQLite took the primary key's consumer prefix and
    // read every receipt of the consumer, on every same-version conflict and every effect's
    // basis check (a consume of the orders example into a store of 100,000 earlier events ran
    // at 2,200 events/s, against 9,300 into an empty store; perf: B-tree steps and memcmp).
    static const LedgerSql kSql(
        " FROM ledger INDEXED BY ledger_by_subject WHERE subject=?2 AND consumer=?1"
        " AND state='applied' AND projection_version>?3"
        " ORDER BY projection_version, committed_at_ms");
    Statement& s = Prepared(kSql.For(layout_));
    s.Bind(consumer).Bind(subject).Bind(after_projection_version);
    Status status;
    std::optional<LedgerEntry> out;
    while (!out && s.Step(status)) {
      LedgerEntry e = ReadLedger(s, status);
      if (types.empty() || std::find(types.begin(), types.end(), e.type) != types.end()) {
        out = std::move(e);
      }
    }
    s.Reset();
    if (!status.ok()) return status;
    return out;
  }

  Result<Rows<EffectIntent>> ListIntents(const EffectFilter& f, int64_t after_seq,
                                         int64_t rows_max) {
    if (layout_ < 5) return Rows<EffectIntent>{};  // a read-only open of an older layout
    // Fixed text: an unset filter binds NULL and matches every row.
    const auto all = [](const char* columns) {
      return std::string("SELECT ") + columns +
             " FROM effect_intent WHERE seq>?1"
             " AND (?2 IS NULL OR state=?2) AND (?3 IS NULL OR consumer=?3)"
             " AND (?4 IS NULL OR effect=?4) AND (?5 IS NULL OR subject=?5)"
             " ORDER BY seq LIMIT ?6";
    };
    static const std::string kSql = all(kIntentColumns);
    static const std::string kSql7 = all(kIntentColumns7);
    const auto text_or_null = [](Statement& s, const std::optional<std::string>& v) {
      v ? s.Bind(std::string_view(*v)) : s.Bind(std::optional<int64_t>());
    };
    // A subject's intents (evidence, guards) are read through the subject index; a statement
    // whose subject may be NULL could not use it.
    const auto of_subject = [](const char* columns) {
      return std::string("SELECT ") + columns +
             " FROM effect_intent WHERE subject=?5 AND seq>?1"
             " AND (?2 IS NULL OR state=?2)"
             " AND (?3 IS NULL OR consumer=?3)"
             " AND (?4 IS NULL OR effect=?4) ORDER BY seq LIMIT ?6";
    };
    static const std::string kOfSubjectSql = of_subject(kIntentColumns);
    static const std::string kOfSubjectSql7 = of_subject(kIntentColumns7);
    const bool current = layout_ >= 8;
    return QueryBound<EffectIntent>(
        f.subject ? (current ? kOfSubjectSql : kOfSubjectSql7) : (current ? kSql : kSql7),
        [&](Statement& s) {
          s.Bind(after_seq);
          f.state ? s.Bind(EffectStateName(*f.state)) : s.Bind(std::optional<int64_t>());
          text_or_null(s, f.consumer);
          text_or_null(s, f.effect);
          text_or_null(s, f.subject);
        },
        rows_max, ReadIntent);
  }

  Result<Rows<EffectLogEntry>> IntentLogOf(std::string_view key, int64_t rows_max) {
    if (layout_ < 5) return Rows<EffectLogEntry>{};
    static const std::string kSql = std::string("SELECT ") + kEffectLogColumns +
                                    " FROM effect_log WHERE key=?1 ORDER BY seq LIMIT ?2";
    return Query<EffectLogEntry>(kSql, {key}, rows_max, ReadEffectLog);
  }

  Result<Rows<CompensationRecord>> ListCompensations(std::string_view consumer,
                                                     std::string_view subject, int64_t after_seq,
                                                     int64_t rows_max) {
    if (layout_ < 5) return Rows<CompensationRecord>{};
    const auto all = [](const char* columns) {
      return std::string("SELECT ") + columns +
             " FROM compensation WHERE seq>?1"
             " AND (?2='' OR consumer=?2) AND (?3='' OR subject=?3)"
             " ORDER BY seq LIMIT ?4";
    };
    const auto of_subject = [](const char* columns) {
      return std::string("SELECT ") + columns +
             " FROM compensation WHERE subject=?3 AND seq>?1"
             " AND (?2='' OR consumer=?2) ORDER BY seq LIMIT ?4";
    };
    static const std::string kSql = all(kCompensationColumns);
    static const std::string kSql7 = all(kCompensationColumns7);
    static const std::string kOfSubjectSql = of_subject(kCompensationColumns);
    static const std::string kOfSubjectSql7 = of_subject(kCompensationColumns7);
    const bool current = layout_ >= 8;
    return QueryBound<CompensationRecord>(
        subject.empty() ? (current ? kSql : kSql7) : (current ? kOfSubjectSql : kOfSubjectSql7),
        [&](Statement& s) { s.Bind(after_seq).Bind(consumer).Bind(subject); }, rows_max,
        ReadCompensation);
  }

  int64_t layout() const { return layout_; }

  // A read-only open of an older layout lacks the tables `what` needs.
  Status NeedLayout(int64_t layout, std::string_view what) const {
    if (layout_ >= layout) return Status::Ok();
    return Status::FailedPrecondition("the store has layout " + std::to_string(layout_) +
                                      ", without " + std::string(what) +
                                      "; open it for writing once to migrate it");
  }

  Status Journal(const JournalEntry& j) {
    static const std::string kSql =
        "INSERT INTO journal(consumer, outcome, source, event_id, subject, subject_version, "
        "at_ms) VALUES(?1,?2,?3,?4,?5,?6,?7)";
    Statement& s = Prepared(kSql);
    return s.Bind(j.consumer)
        .Bind(OutcomeName(j.outcome))
        .Bind(j.source)
        .Bind(j.event_id)
        .Bind(j.subject)
        .Bind(j.subject_version)
        .Bind(j.at_ms)
        .Run();
  }

  Status PutEvidence(const EvidenceRecord& r) {
    assert(in_transaction_);
    EVIDENT_ASSIGN_OR_RETURN(CachedProjection * cached, Cached(r.consumer, r.subject));
    // One record per name: the latest proof replaces an earlier one.
    auto& records = cached->evidence;
    const auto it = std::lower_bound(
        records.begin(), records.end(), r.name,
        [](const EvidenceRecord& a, const std::string& name) { return a.name < name; });
    if (it != records.end() && it->name == r.name) {
      it->source.assign(r.source);
      it->event_id.assign(r.event_id);
      it->subject_version = r.subject_version;
      it->recorded_at_ms = r.recorded_at_ms;
      it->detail.assign(r.detail);
    } else {
      records.insert(it, r);
    }
    cached->dirty = true;
    return Status::Ok();
  }

  Status SetPosition(std::string_view source, std::string_view position) {
    static const std::string kSql =
        "INSERT INTO position(source, position) VALUES(?1,?2)"
        " ON CONFLICT(source) DO UPDATE SET position=excluded.position";
    Statement& s = Prepared(kSql);
    return s.Bind(source).BindBlob(position).Run();
  }

  Result<std::optional<std::string>> GetPosition(std::string_view source) {
    if (layout_ < 2) {
      return Status::FailedPrecondition(
          "the store has layout 1 (positions in an older table); open it for writing once to "
          "migrate it");
    }
    static const std::string kSql = "SELECT position FROM position WHERE source=?1";
    Statement& s = Prepared(kSql);
    s.Bind(source);
    Status status;
    std::optional<std::string> position;
    if (s.Step(status)) position = s.Blob(0);
    s.Reset();
    if (!status.ok()) return status;
    return position;
  }

  // ---- Consumer groups (store_groups.h): the statements PostgreSQL's pg_group.cc runs ----

  static constexpr const char* kLeaseColumns =
      "group_name, event_partition, holder, epoch, acquired_at_ms, expires_at_ms, position, lag";

  Result<int64_t> GroupPartitionCount(std::string_view group) {
    static const std::string kSql =
        "SELECT partition_count FROM consumer_group WHERE group_name=?1";
    Statement& s = Prepared(kSql);
    s.Bind(group);
    Status status;
    const int64_t count = s.Step(status) ? s.Int(0) : 0;
    s.Reset();
    if (!status.ok()) return status;
    return count;
  }

  Result<std::vector<GroupMember>> JoinGroup(std::string_view group, std::string_view member,
                                             int64_t partition_count, int64_t now_ms,
                                             int64_t expires_at_ms) {
    static const std::string kGroup =
        "INSERT INTO consumer_group(group_name, partition_count, created_at_ms)"
        " VALUES(?1, ?2, ?3) ON CONFLICT DO NOTHING";
    static const std::string kMember =
        "INSERT INTO group_member(group_name, member, joined_at_ms, expires_at_ms)"
        " VALUES(?1, ?2, ?3, ?4) ON CONFLICT (group_name, member)"
        " DO UPDATE SET expires_at_ms=excluded.expires_at_ms";
    static const std::string kForget =
        "DELETE FROM group_member WHERE group_name=?1 AND expires_at_ms<?2";
    EVIDENT_RETURN_IF_ERROR(Prepared(kGroup).Bind(group).Bind(partition_count).Bind(now_ms).Run());
    EVIDENT_ASSIGN_OR_RETURN(const int64_t count, GroupPartitionCount(group));
    if (count != partition_count) {
      return Status::FailedPrecondition(
          "group " + std::string(group) + " has " + std::to_string(count) + " partitions; this " +
          "member was started with " + std::to_string(partition_count) +
          " (every member of a group, and the relay, must agree)");
    }
    EVIDENT_RETURN_IF_ERROR(
        Prepared(kMember).Bind(group).Bind(member).Bind(now_ms).Bind(expires_at_ms).Run());
    // Members gone for an hour are forgotten (every process run is a member of its own).
    EVIDENT_RETURN_IF_ERROR(Prepared(kForget).Bind(group).Bind(now_ms - int64_t{3'600'000}).Run());
    return GroupMembers(group, now_ms);
  }

  Status LeaveGroup(std::string_view group, std::string_view member) {
    static const std::string kSql = "DELETE FROM group_member WHERE group_name=?1 AND member=?2";
    return Prepared(kSql).Bind(group).Bind(member).Run();
  }

  // The members of `group` alive at `alive_at_ms` (every member for INT64_MIN), by name.
  Result<std::vector<GroupMember>> GroupMembers(std::string_view group, int64_t alive_at_ms) {
    static const std::string kSql =
        "SELECT group_name, member, joined_at_ms, expires_at_ms FROM group_member"
        " WHERE group_name=?1 AND expires_at_ms>=?2 ORDER BY member";
    Statement& s = Prepared(kSql);
    s.Bind(group).Bind(alive_at_ms);
    std::vector<GroupMember> out;
    Status status;
    while (s.Step(status)) {
      out.push_back(GroupMember{.group = s.Text(0),
                                .member = s.Text(1),
                                .joined_at_ms = s.Int(2),
                                .expires_at_ms = s.Int(3)});
    }
    s.Reset();
    if (!status.ok()) return status;
    return out;
  }

  // Every lease of `group`, or the one of `partition` (>= 0).
  Result<std::vector<GroupLease>> GroupLeases(std::string_view group, int64_t partition = -1) {
    static const std::string kSql = std::string("SELECT ") + kLeaseColumns +
                                    " FROM group_lease WHERE group_name=?1 AND"
                                    " (?2<0 OR event_partition=?2) ORDER BY event_partition";
    Statement& s = Prepared(kSql);
    s.Bind(group).Bind(partition);
    std::vector<GroupLease> out;
    Status status;
    while (s.Step(status)) {
      out.push_back(GroupLease{.group = s.Text(0),
                               .partition = s.Int(1),
                               .holder = s.Text(2),
                               .epoch = s.Int(3),
                               .acquired_at_ms = s.Int(4),
                               .expires_at_ms = s.Int(5),
                               .position = s.OptionalInt(6),
                               .lag = s.OptionalInt(7)});
    }
    s.Reset();
    if (!status.ok()) return status;
    return out;
  }

  // Takes the lease for `holder` (epoch + 1) when `force`, when nobody holds it, when it expired
  // before `now_ms`, or when `holder` holds it; nullopt when another holds it unexpired.
  Result<std::optional<GroupLease>> TakeLease(std::string_view group, int64_t partition,
                                              std::string_view holder, int64_t now_ms,
                                              int64_t expires_at_ms, bool force) {
    static const std::string kSql =
        "INSERT INTO group_lease AS l(group_name, event_partition, holder, epoch, acquired_at_ms,"
        " expires_at_ms) VALUES(?1, ?2, ?3, 1, ?4, ?5) ON CONFLICT (group_name, event_partition)"
        " DO UPDATE SET epoch=l.epoch+1, acquired_at_ms=?4, holder=excluded.holder,"
        " expires_at_ms=excluded.expires_at_ms"
        " WHERE ?6 OR l.holder=excluded.holder OR l.expires_at_ms<?4";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql)
                                .Bind(group)
                                .Bind(partition)
                                .Bind(holder)
                                .Bind(now_ms)
                                .Bind(expires_at_ms)
                                .Bind(int64_t{force ? 1 : 0})
                                .Run());
    if (sqlite3_changes(db_) == 0) return std::optional<GroupLease>();
    EVIDENT_ASSIGN_OR_RETURN(std::vector<GroupLease> taken, GroupLeases(group, partition));
    if (taken.size() != 1) return Status::IoError("a lease taken is not there to read");
    return std::optional<GroupLease>(std::move(taken.front()));
  }

  // Sets the lease's expiry, or (fence) its position and lag, when `holder` holds it at `epoch`;
  // whether it did.
  Result<bool> TouchLease(std::string_view group, int64_t partition, std::string_view holder,
                          int64_t epoch, std::optional<int64_t> expires_at_ms,
                          std::optional<int64_t> position, std::optional<int64_t> lag) {
    static const std::string kSql =
        "UPDATE group_lease SET expires_at_ms=COALESCE(?5, expires_at_ms),"
        " position=COALESCE(?6, position), lag=COALESCE(?7, lag)"
        " WHERE group_name=?1 AND event_partition=?2 AND holder=?3 AND epoch=?4";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql)
                                .Bind(group)
                                .Bind(partition)
                                .Bind(holder)
                                .Bind(epoch)
                                .Bind(expires_at_ms)
                                .Bind(position)
                                .Bind(lag)
                                .Run());
    return sqlite3_changes(db_) == 1;
  }

  // Everything a batch reads, in one call: each ledger key, each subject's projection (cached
  // for the transaction's writes) and deferred events. SQLite answers from one file in process,
  // so this is the same look-ups the events would make one by one; a networked backend makes it
  // a fixed number of round trips.
  Result<BatchRows> Load(const BatchKeys& keys) {
    // The rows this transaction holds back are written first, once, so the reads see them.
    EVIDENT_RETURN_IF_ERROR(Flush());
    BatchRows out;
    std::set<std::tuple<std::string_view, std::string_view, std::string_view>> ledger_seen;
    for (const LedgerKey& k : keys.ledger) {
      if (!ledger_seen.emplace(k.consumer, k.source, k.event_id).second) continue;
      EVIDENT_ASSIGN_OR_RETURN(std::optional<LedgerEntry> row,
                               FindLedger(k.consumer, k.source, k.event_id));
      if (row) out.ledger.push_back(std::move(*row));
    }
    std::set<std::pair<std::string_view, std::string_view>> subjects_seen;
    for (const SubjectKey& k : keys.subjects) {
      if (!subjects_seen.emplace(k.consumer, k.subject).second) continue;
      EVIDENT_ASSIGN_OR_RETURN(std::optional<Projection> projection,
                               FindProjection(k.consumer, k.subject));
      if (projection) out.projections.push_back(std::move(*projection));
      EVIDENT_ASSIGN_OR_RETURN(Rows<DeferredEvent> deferred,
                               DeferredOf(k.consumer, k.subject, kAll));
      for (DeferredEvent& d : deferred.rows) out.deferred.push_back(std::move(d));
    }
    return out;
  }

  // --- the read path (a Snapshot, which holds nothing back): lists cut at rows_max (one more
  // row is read to tell whether more exist)

  Result<Rows<Projection>> ProjectionsOf(std::string_view subject, int64_t rows_max) {
    // Every projection of the subject, whether or not a receipt of it is left (retention keeps
    // receipts past its horizon as digests, which name no subject). The key leads with the
    // subject; a store created with the earlier (consumer, subject) key reads the whole table
    // here (an operator's query, not the consumer's path).
    const auto build = [](const char* columns) {
      return std::string("SELECT ") + columns +
             " FROM projection WHERE subject=?1 ORDER BY consumer LIMIT ?2";
    };
    static const std::string kSql = build(kProjectionColumns);
    static const std::string kSql7 = build(kProjectionColumns7);
    return Query<Projection>(layout_ >= 8 ? kSql : kSql7, {subject}, rows_max, ReadProjectionRow);
  }
  Result<Rows<LedgerEntry>> LedgerOf(std::string_view consumer, std::string_view subject,
                                     int64_t rows_max) {
    // INDEXED BY: without it SQLite chose the primary key's consumer prefix and read every
    // receipt of the consumer for each subject (the kill -9 test's reads of a 24,000-receipt
    // store took about 25 s; now under half a second).
    constexpr const char* kWhere =
        " FROM ledger INDEXED BY ledger_by_subject WHERE consumer=?1 AND subject=?2"
        " ORDER BY subject_version, committed_at_ms LIMIT ?3";
    static const LedgerSql kSql(kWhere);
    return Query<LedgerEntry>(kSql.For(layout_), {consumer, subject}, rows_max, ReadLedger);
  }
  Result<Rows<DeferredEvent>> DeferredOf(std::string_view consumer, std::string_view subject,
                                         int64_t rows_max) {
    static const std::string kSql = std::string("SELECT ") + kDeferredColumns +
                                    " FROM deferred WHERE consumer=?1 AND subject=?2 "
                                    "ORDER BY subject_version LIMIT ?3";
    return Query<DeferredEvent>(kSql, {consumer, subject}, rows_max, ReadDeferred);
  }
  Result<Rows<DeferredEvent>> AllDeferred(int64_t rows_max) {
    static const std::string kSql = std::string("SELECT ") + kDeferredColumns +
                                    " FROM deferred ORDER BY deadline_at_ms, consumer, subject,"
                                    " subject_version LIMIT ?1";
    return Query<DeferredEvent>(kSql, {}, rows_max, ReadDeferred);
  }
  // On a read-only open of a layout before the quarantine, the kept rows, one record each.
  Result<Rows<QuarantineRecord>> QuarantineOf(std::string_view subject, int64_t rows_max) {
    static const std::string kSql = std::string("SELECT ") + kQuarantineColumns +
                                    " FROM quarantine WHERE subject=?1 ORDER BY id LIMIT ?2";
    static const std::string kKeptSql =
        "SELECT seq, consumer, outcome, reason, message, source, event_id, type, subject,"
        " subject_version, NULL, raw, 1, received_at_ms, received_at_ms, 'open', input_index"
        " FROM kept WHERE subject=?1 ORDER BY seq LIMIT ?2";
    return Query<QuarantineRecord>(layout_ >= 4 ? kSql : kKeptSql, {subject}, rows_max,
                                   ReadQuarantine);
  }
  Result<Rows<JournalEntry>> JournalOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) {
    static const std::string kSql =
        "SELECT seq, consumer, outcome, source, event_id, subject, subject_version, at_ms "
        "FROM journal WHERE consumer=?1 AND subject=?2 ORDER BY seq LIMIT ?3";
    return Query<JournalEntry>(kSql, {consumer, subject}, rows_max, ReadJournal);
  }
  Result<Rows<EvidenceRecord>> EvidenceOf(std::string_view consumer, std::string_view subject,
                                          int64_t rows_max) {
    EVIDENT_ASSIGN_OR_RETURN(CachedProjection * cached, Cached(consumer, subject));
    Rows<EvidenceRecord> out;
    const auto& records = cached->evidence;  // sorted by name
    const size_t count =
        std::min(records.size(), static_cast<size_t>(std::max<int64_t>(rows_max, 0)));
    out.rows.assign(records.begin(), records.begin() + static_cast<ptrdiff_t>(count));
    out.truncated = count < records.size();
    return out;
  }

  Result<std::vector<std::pair<std::string, int64_t>>> Counts() {
    std::vector<std::pair<std::string, int64_t>> out;
    static const char* const kTables[] = {"ledger",  "projection", "deferred",    "quarantine",
                                          "journal", "effect",     "compensation"};
    const char* const kSql[] = {
        "SELECT count(*) FROM ledger",
        "SELECT count(*) FROM projection",
        "SELECT count(*) FROM deferred",
        layout_ >= 4 ? "SELECT count(*) FROM quarantine" : "SELECT count(*) FROM kept",
        "SELECT count(*) FROM journal",
        layout_ >= 5 ? "SELECT count(*) FROM effect_intent" : "SELECT 0",
        layout_ >= 5 ? "SELECT count(*) FROM compensation" : "SELECT 0"};
    for (size_t i = 0; i < std::size(kTables); ++i) {
      EVIDENT_ASSIGN_OR_RETURN(const int64_t count, Count(kSql[i]));
      out.emplace_back(kTables[i], count);
    }
    return out;
  }

  // ON CONFLICT DO NOTHING, then a look-up on no change: a (source, id) already there is an
  // answer, never a failed statement.
  Result<OutboxAppend> AppendOutbox(const OutboxRow& r) {
    assert(in_transaction_);
    static const std::string kInsert =
        "INSERT INTO outbox(source, event_id, type, subject, subject_version, event_partition, "
        "created_at_ms) VALUES(?1,?2,?3,?4,?5,?6,?7) ON CONFLICT DO NOTHING";
    EVIDENT_RETURN_IF_ERROR(Prepared(kInsert)
                                .Bind(r.source)
                                .Bind(r.event_id)
                                .Bind(r.type)
                                .Bind(r.subject)
                                .Bind(r.subject_version)
                                .Bind(r.partition)
                                .Bind(r.created_at_ms)
                                .Run());
    if (sqlite3_changes(db_) == 1) {
      const int64_t seq = sqlite3_last_insert_rowid(db_);
      static const std::string kBody = "INSERT INTO outbox_body(seq, bytes) VALUES(?1,?2)";
      EVIDENT_RETURN_IF_ERROR(Prepared(kBody).Bind(seq).BindBlob(r.bytes).Run());
      return OutboxAppend{.outcome = OutboxOutcome::kAppended, .seq = seq};
    }
    static const std::string kFind =
        "SELECT seq, bytes FROM outbox JOIN outbox_body USING(seq)"
        " WHERE source=?1 AND event_id=?2";
    Statement& s = Prepared(kFind);
    s.Bind(r.source).Bind(r.event_id);
    Status status;
    std::optional<OutboxAppend> out;
    if (s.Step(status)) {
      out = OutboxAppend{
          .outcome = s.Blob(1) == r.bytes ? OutboxOutcome::kDuplicate : OutboxOutcome::kConflict,
          .seq = s.Int(0)};
    }
    s.Reset();
    if (!status.ok()) return status;
    if (!out) return Status::Internal("outbox: an append changed nothing and found no row");
    return *out;
  }

  Result<Rows<OutboxRow>> OutboxRows(OutboxSelect select, int64_t after_seq, int64_t rows_max) {
    if (layout_ < 3) return Rows<OutboxRow>{};  // a read-only open of an older layout
    // Pending: neither sent nor parked. A read-only open of layout 3-6 has no parked rows (and
    // no column for them), and a layout-3 one finds the bytes in the row.
    if (select == OutboxSelect::kParked && layout_ < 7) return Rows<OutboxRow>{};
    const auto build = [](const char* columns, const char* from, const char* where) {
      return std::string("SELECT ") + columns + " FROM " + from + " WHERE " + where +
             "seq > ?1 ORDER BY seq LIMIT ?2";
    };
    constexpr const char* kJoined = "outbox JOIN outbox_body USING(seq)";
    constexpr const char* kPending = "sent_at_ms IS NULL AND parked_at_ms IS NULL AND ";
    constexpr const char* kPending6 = "sent_at_ms IS NULL AND ";
    static const std::string kAllSql = build(kOutboxColumns, kJoined, "");
    static const std::string kPendingSql = build(kOutboxColumns, kJoined, kPending);
    static const std::string kParkedSql =
        build(kOutboxColumns, kJoined, "parked_at_ms IS NOT NULL AND ");
    static const std::string kAll6 = build(kOutboxColumns6, kJoined, "");
    static const std::string kPendingSql6 = build(kOutboxColumns6, kJoined, kPending6);
    static const std::string kAll3 = build(kOutboxColumns6, "outbox", "");
    static const std::string kPendingSql3 = build(kOutboxColumns6, "outbox", kPending6);
    const bool pending = select == OutboxSelect::kPending;
    const std::string& sql = outbox_bytes_in_row_              ? (pending ? kPendingSql3 : kAll3)
                             : layout_ < 7                     ? (pending ? kPendingSql6 : kAll6)
                             : select == OutboxSelect::kParked ? kParkedSql
                                                               : (pending ? kPendingSql : kAllSql);
    return QueryBound<OutboxRow>(
        sql, [&](Statement& s) { s.Bind(after_seq); }, rows_max, ReadOutbox);
  }

  Result<std::optional<OutboxRow>> FindOutbox(std::string_view source, std::string_view event_id) {
    if (layout_ < 3) return std::optional<OutboxRow>();  // a read-only open of an older layout
    const auto build = [](const char* columns, const char* from) {
      return std::string("SELECT ") + columns + " FROM " + from +
             " WHERE source=?1 AND event_id=?2 LIMIT ?3";
    };
    static const std::string kSql = build(kOutboxColumns, "outbox JOIN outbox_body USING(seq)");
    static const std::string kSql6 = build(kOutboxColumns6, "outbox JOIN outbox_body USING(seq)");
    static const std::string kSql3 = build(kOutboxColumns6, "outbox");
    const std::string& sql = outbox_bytes_in_row_ ? kSql3 : layout_ < 7 ? kSql6 : kSql;
    EVIDENT_ASSIGN_OR_RETURN(Rows<OutboxRow> rows,
                             Query<OutboxRow>(sql, {source, event_id}, 1, ReadOutbox));
    if (rows.rows.empty()) return std::optional<OutboxRow>();
    return std::optional<OutboxRow>(std::move(rows.rows.front()));
  }

  // Through the subject index layout 8 adds (an older layout, read-only, scans the outbox).
  Result<Rows<OutboxRow>> OutboxOfSubject(std::string_view source, std::string_view subject,
                                          int64_t from_version, int64_t rows_max) {
    if (layout_ < 3) return Rows<OutboxRow>{};
    const auto build = [](const char* columns, const char* from) {
      return std::string("SELECT ") + columns + " FROM " + from +
             " WHERE subject=?2 AND subject_version>=?3 AND source=?1"
             " ORDER BY subject_version, seq LIMIT ?4";
    };
    static const std::string kSql = build(kOutboxColumns, "outbox JOIN outbox_body USING(seq)");
    static const std::string kSql6 = build(kOutboxColumns6, "outbox JOIN outbox_body USING(seq)");
    static const std::string kSql3 = build(kOutboxColumns6, "outbox");
    const std::string& sql = outbox_bytes_in_row_ ? kSql3 : layout_ < 7 ? kSql6 : kSql;
    return QueryBound<OutboxRow>(
        sql, [&](Statement& s) { s.Bind(source).Bind(subject).Bind(from_version); }, rows_max,
        ReadOutbox);
  }

  // Parks (`park`) or unparks an unsent row: its state read first, so that a refusal says why.
  Status SetOutboxParked(int64_t seq, bool park, std::string_view reason, int64_t at_ms) {
    static const std::string kState =
        "SELECT sent_at_ms IS NOT NULL, parked_at_ms IS NOT NULL FROM outbox WHERE seq=?1";
    using SentParked = std::pair<bool, bool>;
    EVIDENT_ASSIGN_OR_RETURN(
        const Rows<SentParked> found,
        QueryBound<SentParked>(
            kState, [&](Statement& s) { s.Bind(seq); }, 1,
            [](const Statement& s, Status&) { return SentParked(s.Int(0) != 0, s.Int(1) != 0); }));
    if (found.rows.empty()) return Status::NotFound("no outbox row " + std::to_string(seq));
    const auto [sent, parked] = found.rows.front();
    EVIDENT_RETURN_IF_ERROR(OutboxParkRefusal(seq, sent, parked, park));
    static const std::string kPark =
        "UPDATE outbox SET parked_at_ms=?2, parked_reason=?3 WHERE seq=?1";
    static const std::string kUnpark =
        "UPDATE outbox SET parked_at_ms=NULL, parked_reason='' WHERE seq=?1";
    if (park) return Prepared(kPark).Bind(seq).Bind(at_ms).Bind(reason).Run();
    return Prepared(kUnpark).Bind(seq).Run();
  }

  // A row already sent keeps its first acknowledgement.
  Status MarkOutboxSent(int64_t seq, std::string_view stream,
                        std::optional<int64_t> stream_sequence, int64_t at_ms) {
    static const std::string kSql =
        "UPDATE outbox SET sent_at_ms=?2, stream=?3, stream_sequence=?4, parked_at_ms=NULL, "
        "parked_reason='' WHERE seq=?1 AND sent_at_ms IS NULL";
    EVIDENT_RETURN_IF_ERROR(
        Prepared(kSql).Bind(seq).Bind(at_ms).Bind(stream).Bind(stream_sequence).Run());
    if (sqlite3_changes(db_) == 1) return Status::Ok();
    static const std::string kExists = "SELECT seq FROM outbox WHERE seq=?1";
    EVIDENT_ASSIGN_OR_RETURN(const Rows<int64_t> found,
                             QueryBound<int64_t>(
                                 kExists, [&](Statement& s) { s.Bind(seq); }, 1,
                                 [](const Statement& s, Status&) { return s.Int(0); }));
    if (found.rows.empty()) return Status::NotFound("no outbox row " + std::to_string(seq));
    return Status::Ok();
  }

  Status RecordOutboxAttempt(int64_t seq, std::string_view error, int64_t at_ms) {
    static const std::string kSql =
        "UPDATE outbox SET attempts=attempts+1, last_error=?2, last_attempt_at_ms=?3 WHERE seq=?1";
    EVIDENT_RETURN_IF_ERROR(Prepared(kSql).Bind(seq).Bind(error).Bind(at_ms).Run());
    if (sqlite3_changes(db_) != 1) return Status::NotFound("no outbox row " + std::to_string(seq));
    return Status::Ok();
  }

  Result<int64_t> DeleteSentOutbox(int64_t sent_before_ms, int64_t rows_max) {
    assert(rows_max >= 0);
    // The bodies first: the same selection then picks the same rows from the outbox.
    static const std::string kBodies =
        "DELETE FROM outbox_body WHERE seq IN (SELECT seq FROM outbox WHERE sent_at_ms IS NOT NULL "
        "AND sent_at_ms < ?1 ORDER BY seq LIMIT ?2)";
    static const std::string kRows =
        "DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE sent_at_ms IS NOT NULL "
        "AND sent_at_ms < ?1 ORDER BY seq LIMIT ?2)";
    const int64_t limit = std::max<int64_t>(rows_max, 0);
    EVIDENT_RETURN_IF_ERROR(Prepared(kBodies).Bind(sent_before_ms).Bind(limit).Run());
    const int bodies = sqlite3_changes(db_);
    EVIDENT_RETURN_IF_ERROR(Prepared(kRows).Bind(sent_before_ms).Bind(limit).Run());
    const int rows = sqlite3_changes(db_);
    if (rows != bodies) {
      return Status::Corruption("outbox: " + std::to_string(rows) + " sent rows but " +
                                std::to_string(bodies) + " bodies deleted");
    }
    return static_cast<int64_t>(rows);
  }

  // Retention (store_retention.h). Each look reads at most rows_max + 1 rows by an index; the
  // last column of each query says whether a candidate is retainable (?1 the horizon, ?2 the
  // cursor, ?3 the limit).
  Result<RetainedRows> Retainable(RetainedKind kind, int64_t before_ms, int64_t after,
                                  int64_t rows_max) {
    assert(rows_max > 0);
    if (kind == RetainedKind::kLedger) return RetainableLedger(before_ms, LedgerKey{}, rows_max);
    RetainedRows out{.kind = kind};
    if (layout_ < 11) {  // a read-only open of an older layout
      out.end = true;
      return out;
    }
    static const std::string kJournal = std::string("SELECT ") + kJournalColumns +
                                        ", at_ms < ?1 AND seq < (SELECT max(seq) FROM journal)"
                                        " FROM journal WHERE seq > ?2"
                                        " ORDER BY seq LIMIT ?3";
    static const std::string kGap =
        std::string("SELECT ") + kGapColumns +
        ", ?2 = ?2 FROM gap WHERE state='closed' AND closed_at_ms < ?1 AND NOT EXISTS (SELECT 1"
        " FROM deferred d WHERE d.consumer=gap.consumer AND d.subject=gap.subject)"
        " ORDER BY closed_at_ms, consumer, subject, expected_version LIMIT ?3";
    static const std::string kEffectLog =
        "SELECT l.seq, l.key, l.action, l.by_whom, l.state_after, l.http_status, l.detail,"
        " l.at_ms, coalesce(i.state IN ('done','failed','withdrawn') AND i.settled_at_ms < ?1"
        " AND l.seq < (SELECT max(seq) FROM effect_log), 0)"
        " FROM effect_log l LEFT JOIN effect_intent i ON i.key=l.key WHERE l.seq > ?2"
        " ORDER BY l.seq LIMIT ?3";
    static const std::string kIntents =
        std::string("SELECT ") + kIntentColumns + ", " + kIntentRetainable +
        " FROM effect_intent i WHERE seq > ?2 ORDER BY seq LIMIT ?3";
    static const std::string kOutbox =
        std::string("SELECT ") + kOutboxColumns +
        ", ?2 = ?2 FROM outbox JOIN outbox_body USING(seq) WHERE sent_at_ms IS NOT NULL"
        " AND sent_at_ms < ?1 ORDER BY sent_at_ms, seq LIMIT ?3";
    const Window w{before_ms, after, rows_max};
    switch (kind) {
      case RetainedKind::kJournal:
        return Look(kJournal, w, ReadJournal, &RetainedRows::journal, std::move(out));
      case RetainedKind::kQuarantine:
        return RetainableQuarantine(w, std::move(out));
      case RetainedKind::kGap:
        return Look(kGap, w, ReadGap, &RetainedRows::gaps, std::move(out));
      case RetainedKind::kEffectLog:
        return Look(kEffectLog, w, ReadEffectLog, &RetainedRows::effect_log, std::move(out));
      case RetainedKind::kIntent:
        if (layout_ < 15) {  // a read-only open of an older layout
          out.end = true;
          return out;
        }
        return Look(kIntents, w, ReadIntent, &RetainedRows::intents, std::move(out));
      case RetainedKind::kOutbox:
        return Look(kOutbox, w, ReadOutbox, &RetainedRows::outbox, std::move(out));
      case RetainedKind::kLedger:
        break;
    }
    return Status::Internal("unknown retained kind");
  }

  // Receipts in key order past `after`; the last column says whether one is retainable (applied,
  // committed before ?1, no unsettled intent of its consumer and subject).
  Result<RetainedRows> RetainableLedger(int64_t before_ms, const LedgerKey& after,
                                        int64_t rows_max) {
    assert(rows_max > 0);
    RetainedRows out{.kind = RetainedKind::kLedger};
    if (layout_ < 14) {  // a read-only open of an older layout
      out.end = true;
      return out;
    }
    static const std::string kFirst = std::string("SELECT ") + kLedgerColumns + ", " +
                                      kReceiptRetainable +
                                      " FROM ledger ORDER BY consumer, source, event_id LIMIT ?2";
    static const std::string kAfter =
        std::string("SELECT ") + kLedgerColumns + ", " + kReceiptRetainable +
        " FROM ledger WHERE (consumer, source, event_id) > (?2, ?3, ?4)"
        " ORDER BY consumer, source, event_id LIMIT ?5";
    const bool first = after.consumer.empty();
    EVIDENT_ASSIGN_OR_RETURN(Rows<Looked<LedgerEntry>> looked,
                             QueryBound<Looked<LedgerEntry>>(
                                 first ? kFirst : kAfter,
                                 [&](Statement& s) {
                                   s.Bind(before_ms);
                                   if (!first)
                                     s.Bind(after.consumer).Bind(after.source).Bind(after.event_id);
                                 },
                                 rows_max,
                                 [&](const Statement& s, Status& error) {
                                   return Looked<LedgerEntry>{ReadLedger(s, error), s.Int(17) != 0};
                                 }));
    out.end = !looked.truncated;
    for (Looked<LedgerEntry>& l : looked.rows) {
      out.next_key = {l.row.consumer, l.row.source, l.row.event_id};
      if (l.retainable) out.ledger.push_back(std::move(l.row));
    }
    return out;
  }

  struct Window {
    int64_t before_ms, after, rows_max;
  };
  template <typename Row>
  struct Looked {
    Row row;
    bool retainable = false;
  };

  // The candidates `sql` reads in the window, those retainable put in `out.*kept`.
  template <typename Row, typename Reader>
  Result<RetainedRows> Look(const std::string& sql, const Window& w, Reader read,
                            std::vector<Row> RetainedRows::*kept, RetainedRows out) {
    EVIDENT_ASSIGN_OR_RETURN(
        Rows<Looked<Row>> looked,
        QueryBound<Looked<Row>>(
            sql, [&](Statement& s) { s.Bind(w.before_ms).Bind(w.after); }, w.rows_max,
            [&](const Statement& s, Status& error) {
              const int last = sqlite3_column_count(s.handle()) - 1;
              return Looked<Row>{read(s, error), s.Int(last) != 0};
            }));
    out.end = !looked.truncated;
    for (Looked<Row>& l : looked.rows) {
      if constexpr (std::is_same_v<Row, QuarantineRecord>) {
        out.next = l.row.id;
      } else if constexpr (std::is_same_v<Row, JournalEntry> ||
                           std::is_same_v<Row, EffectLogEntry> ||
                           std::is_same_v<Row, EffectIntent>) {
        out.next = l.row.seq;
      }
      if (l.retainable) (out.*kept).push_back(std::move(l.row));
    }
    return out;
  }

  // Quarantine records by id, each with its audit entries when it is retainable.
  Result<RetainedRows> RetainableQuarantine(const Window& w, RetainedRows out) {
    static const std::string kSql =
        std::string("SELECT ") + kQuarantineColumns +
        ", status<>'open' AND last_seen_ms < ?1 AND id < (SELECT max(id) FROM quarantine)"
        " AND NOT EXISTS (SELECT 1 FROM quarantine_audit a"
        " WHERE a.record_id=quarantine.id AND a.at_ms >= ?1) FROM quarantine WHERE id > ?2"
        " ORDER BY id LIMIT ?3";
    EVIDENT_ASSIGN_OR_RETURN(
        out, Look(kSql, w, ReadQuarantine, &RetainedRows::quarantine, std::move(out)));
    for (const QuarantineRecord& r : out.quarantine) {
      EVIDENT_ASSIGN_OR_RETURN(Rows<QuarantineAudit> audit, AuditOf(r.id, kAll));
      for (QuarantineAudit& a : audit.rows) out.audit.push_back(std::move(a));
    }
    return out;
  }

  Result<int64_t> CountRetainable(RetainedKind kind, int64_t before_ms) {
    if (layout_ < 11 || (kind == RetainedKind::kLedger && layout_ < 14) ||
        (kind == RetainedKind::kIntent && layout_ < 15)) {
      return int64_t{0};
    }
    static const std::string kSql[] = {
        "SELECT count(*) FROM journal WHERE at_ms < ?1 AND seq < (SELECT max(seq) FROM journal)",
        "SELECT count(*) FROM quarantine WHERE status<>'open' AND last_seen_ms < ?1"
        " AND id < (SELECT max(id) FROM quarantine) AND NOT EXISTS"
        " (SELECT 1 FROM quarantine_audit a WHERE a.record_id=quarantine.id AND a.at_ms >= ?1)",
        "SELECT count(*) FROM gap WHERE state='closed' AND closed_at_ms < ?1 AND NOT EXISTS"
        " (SELECT 1 FROM deferred d WHERE d.consumer=gap.consumer AND d.subject=gap.subject)",
        "SELECT count(*) FROM effect_log l JOIN effect_intent i ON i.key=l.key"
        " WHERE i.state IN ('done','failed','withdrawn') AND i.settled_at_ms < ?1"
        " AND l.seq < (SELECT max(seq) FROM effect_log)",
        std::string("SELECT count(*) FROM effect_intent i WHERE ") + kIntentRetainable,
        "SELECT count(*) FROM outbox WHERE sent_at_ms IS NOT NULL AND sent_at_ms < ?1",
        std::string("SELECT count(*) FROM ledger WHERE ") + kReceiptRetainable};
    static_assert(std::size(kSql) == kRetainedKindCount);
    const std::string& sql = kSql[static_cast<size_t>(kind)];
    EVIDENT_ASSIGN_OR_RETURN(const Rows<int64_t> count,
                             QueryBound<int64_t>(
                                 sql, [&](Statement& s) { s.Bind(before_ms); }, 1,
                                 [](const Statement& s, Status&) { return s.Int(0); }));
    return count.rows.empty() ? 0 : count.rows.front();
  }

  Result<int64_t> CountLedgerDigests(int64_t before_ms) {
    if (layout_ < 14) return int64_t{0};
    static const std::string kSql = "SELECT count(*) FROM ledger_digest WHERE committed_s < ?1";
    EVIDENT_ASSIGN_OR_RETURN(const Rows<int64_t> count,
                             QueryBound<int64_t>(
                                 kSql, [&](Statement& s) { s.Bind(FloorSeconds(before_ms)); }, 1,
                                 [](const Statement& s, Status&) { return s.Int(0); }));
    return count.rows.empty() ? 0 : count.rows.front();
  }

  // Digests in byte order past `after`; those committed in a second before the horizon's go.
  Result<ForgottenDigests> ForgetLedgerDigests(int64_t before_ms, std::string_view after,
                                               int64_t rows_max) {
    assert(rows_max > 0);
    ForgottenDigests out;
    if (layout_ < 14) {
      out.end = true;
      return out;
    }
    static const std::string kLook =
        "SELECT digest, committed_s < ?1 FROM ledger_digest WHERE digest > ?2"
        " ORDER BY digest LIMIT ?3";
    static const std::string kForget = "DELETE FROM ledger_digest WHERE digest=?1";
    EVIDENT_ASSIGN_OR_RETURN(
        Rows<Looked<std::string>> looked,
        QueryBound<Looked<std::string>>(
            kLook, [&](Statement& s) { s.Bind(FloorSeconds(before_ms)).BindBlob(after); }, rows_max,
            [](const Statement& s, Status&) {
              return Looked<std::string>{s.Blob(0), s.Int(1) != 0};
            }));
    out.end = !looked.truncated;
    for (const Looked<std::string>& l : looked.rows) {
      out.next = l.row;
      if (!l.retainable) continue;
      EVIDENT_RETURN_IF_ERROR(Prepared(kForget).BindBlob(l.row).Run());
      out.forgotten += sqlite3_changes(db_);
    }
    return out;
  }

  Status RecordRetention(const RetentionRun& run) {
    static const std::string kSql =
        "INSERT INTO retention_run(at_ms, horizon_ms, archive, removed, forgot_before_ms)"
        " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(at_ms) DO UPDATE SET"
        " horizon_ms=excluded.horizon_ms, archive=excluded.archive, removed=excluded.removed,"
        " forgot_before_ms=excluded.forgot_before_ms";
    return Prepared(kSql)
        .Bind(run.at_ms)
        .Bind(run.horizon_ms)
        .Bind(run.archive)
        .Bind(run.removed)
        .Bind(run.forgot_before_ms)
        .Run();
  }
  // The file's pages (PRAGMA page_count, freelist_count, page_size, auto_vacuum).
  Result<Store::Space> SpaceNow() {
    EVIDENT_ASSIGN_OR_RETURN(const int64_t pages, Count("PRAGMA page_count"));
    EVIDENT_ASSIGN_OR_RETURN(const int64_t free_pages, Count("PRAGMA freelist_count"));
    EVIDENT_ASSIGN_OR_RETURN(const int64_t page_bytes, Count("PRAGMA page_size"));
    EVIDENT_ASSIGN_OR_RETURN(const int64_t auto_vacuum, Count("PRAGMA auto_vacuum"));
    return Store::Space{.applies = true,
                        .incremental = auto_vacuum == 2,
                        .file_bytes = pages * page_bytes,
                        .free_bytes = free_pages * page_bytes};
  }
  // Each step is a write transaction of its own (at most kPagesPerStep pages), so a writer
  // waits for one step at most; the WAL's checkpoint then shortens the file.
  Result<int64_t> ReturnSpace(int64_t pages_max) {
    EVIDENT_ASSIGN_OR_RETURN(const Store::Space before, SpaceNow());
    if (!before.incremental || before.free_bytes == 0) return int64_t{0};
    constexpr int64_t kPagesPerStep = 2048;
    for (int64_t left = pages_max; left > 0; left -= kPagesPerStep) {
      EVIDENT_ASSIGN_OR_RETURN(const int64_t free_pages, Count("PRAGMA freelist_count"));
      if (free_pages == 0) break;
      EVIDENT_RETURN_IF_ERROR(
          Exec("PRAGMA incremental_vacuum(" + std::to_string(std::min(left, kPagesPerStep)) + ")"));
    }
    // PASSIVE: copies what no reader still needs, never waits for readers nor blocks a writer;
    // the file shrinks once the WAL's frames are all copied (now or at a later checkpoint).
    EVIDENT_RETURN_IF_ERROR(Exec("PRAGMA wal_checkpoint(PASSIVE)"));
    EVIDENT_ASSIGN_OR_RETURN(const Store::Space after, SpaceNow());
    return std::max<int64_t>(before.file_bytes - after.file_bytes, 0);
  }
  Status Compact() {
    EVIDENT_RETURN_IF_ERROR(Exec("PRAGMA auto_vacuum=INCREMENTAL"));
    EVIDENT_RETURN_IF_ERROR(Exec("VACUUM"));
    return Exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }

  // Contract and consumer sets (store_contracts.h), a table each; a read-only open of an older
  // layout has none (contract sets came with layout 12, consumer sets with 13).
  bool HasSets(SetKind kind) const { return layout_ >= (kind == SetKind::kContracts ? 12 : 13); }
  struct SetStatements {
    std::string latest, at, history, push;
  };
  static const SetStatements& SetSql(SetKind kind) {
    const auto make = [](const std::string& table) {
      return SetStatements{
          .latest = "SELECT coalesce(max(version), 0) FROM " + table,
          .at = "SELECT version, pushed_at_ms, digest, settings, files FROM " + table +
                " WHERE version = CASE WHEN ?1 = 0 THEN (SELECT max(version) FROM " + table +
                ") ELSE ?1 END",
          .history = "SELECT version, pushed_at_ms, digest, settings, '' FROM " + table +
                     " ORDER BY version DESC LIMIT ?1",
          .push = "INSERT INTO " + table +
                  "(version, pushed_at_ms, digest, settings, files) VALUES(?1, ?2, ?3, ?4, ?5)"};
    };
    static const SetStatements kContracts = make("contract_set");
    static const SetStatements kConsumers = make("consumer_set");
    return kind == SetKind::kContracts ? kContracts : kConsumers;
  }
  Result<int64_t> LatestSetVersion(SetKind kind) {
    if (!HasSets(kind)) return int64_t{0};
    return Count(SetSql(kind).latest.c_str());
  }
  Result<std::optional<StoredContracts>> SetAt(SetKind kind, int64_t version) {
    if (!HasSets(kind)) return std::optional<StoredContracts>();
    EVIDENT_ASSIGN_OR_RETURN(
        Rows<StoredContracts> rows,
        QueryBound<StoredContracts>(
            SetSql(kind).at, [&](Statement& s) { s.Bind(version); }, 1, &ContractsRow));
    if (rows.rows.empty()) return std::optional<StoredContracts>();
    return std::optional<StoredContracts>(std::move(rows.rows.front()));
  }
  Result<std::vector<StoredContracts>> SetHistory(SetKind kind, int64_t rows_max) {
    if (!HasSets(kind) || rows_max == 0) return std::vector<StoredContracts>();
    EVIDENT_ASSIGN_OR_RETURN(Rows<StoredContracts> rows,
                             QueryBound<StoredContracts>(
                                 SetSql(kind).history, [](Statement&) {}, rows_max, &ContractsRow));
    return std::move(rows.rows);
  }
  // The single writer holds the store from this read to the commit: the next number is free.
  Result<int64_t> PushSet(SetKind kind, const StoredContracts& c) {
    EVIDENT_ASSIGN_OR_RETURN(const int64_t latest, LatestSetVersion(kind));
    if (c.version != latest + 1) {
      return Status::Aborted(std::string(SetKindName(kind)) + " set v" + std::to_string(c.version) +
                             " is not the next: another push came first; push again");
    }
    EVIDENT_RETURN_IF_ERROR(Prepared(SetSql(kind).push)
                                .Bind(latest + 1)
                                .Bind(c.pushed_at_ms)
                                .Bind(c.digest)
                                .Bind(c.settings)
                                .Bind(c.files)
                                .Run());
    return latest + 1;
  }
  static StoredContracts ContractsRow(const Statement& s, Status&) {
    return StoredContracts{.version = s.Int(0),
                           .pushed_at_ms = s.Int(1),
                           .digest = s.Text(2),
                           .settings = s.Text(3),
                           .files = s.Text(4)};
  }

  Result<std::optional<RetentionRun>> LatestRetention() {
    if (layout_ < 11) return std::optional<RetentionRun>();
    static const std::string kSql =
        "SELECT seq, at_ms, horizon_ms, archive, removed, (SELECT max(forgot_before_ms) FROM"
        " retention_run) FROM retention_run ORDER BY seq DESC LIMIT ?1";
    static const std::string kSql14 =  // a read-only open of an older layout
        "SELECT seq, at_ms, horizon_ms, archive, removed, 0 FROM retention_run"
        " ORDER BY seq DESC LIMIT ?1";
    EVIDENT_ASSIGN_OR_RETURN(Rows<RetentionRun> rows,
                             QueryBound<RetentionRun>(
                                 layout_ >= 15 ? kSql : kSql14, [](Statement&) {}, 1,
                                 [](const Statement& s, Status&) {
                                   return RetentionRun{.seq = s.Int(0),
                                                       .at_ms = s.Int(1),
                                                       .horizon_ms = s.Int(2),
                                                       .archive = s.Text(3),
                                                       .removed = s.Int(4),
                                                       .forgot_before_ms = s.Int(5)};
                                 }));
    if (rows.rows.empty()) return std::optional<RetentionRun>();
    return std::optional<RetentionRun>(std::move(rows.rows.front()));
  }

  // Each record again under the write lock, by its key and the rule that made it retainable.
  Result<int64_t> RemoveRetained(const RetainedRows& rows, int64_t before_ms) {
    static const std::string kJournal =
        "DELETE FROM journal WHERE seq=?1 AND at_ms < ?2 AND seq < (SELECT max(seq) FROM journal)";
    static const std::string kQuarantine =
        "DELETE FROM quarantine WHERE id=?1 AND status<>'open' AND last_seen_ms < ?2"
        " AND id < (SELECT max(id) FROM quarantine) AND NOT EXISTS"
        " (SELECT 1 FROM quarantine_audit a WHERE a.record_id=?1 AND a.at_ms >= ?2)";
    static const std::string kAudit = "DELETE FROM quarantine_audit WHERE record_id=?1";
    static const std::string kGap =
        "DELETE FROM gap WHERE consumer=?1 AND subject=?2 AND expected_version=?3"
        " AND state='closed' AND closed_at_ms < ?4 AND NOT EXISTS (SELECT 1 FROM deferred d"
        " WHERE d.consumer=?1 AND d.subject=?2)";
    static const std::string kEffectLog =
        "DELETE FROM effect_log WHERE seq=?1 AND seq < (SELECT max(seq) FROM effect_log)"
        " AND EXISTS (SELECT 1 FROM effect_intent i WHERE"
        " i.key=effect_log.key AND i.state IN ('done','failed','withdrawn')"
        " AND i.settled_at_ms < ?2)";
    static const std::string kOutbox =
        "DELETE FROM outbox WHERE seq=?1 AND sent_at_ms IS NOT NULL AND sent_at_ms < ?2";
    static const std::string kBody = "DELETE FROM outbox_body WHERE seq=?1";
    int64_t removed = 0;
    const auto run = [&](const std::string& sql, auto bind) -> Result<bool> {
      Statement& s = Prepared(sql);
      bind(s);
      EVIDENT_RETURN_IF_ERROR(s.Run());
      return sqlite3_changes(db_) == 1;
    };
    for (const JournalEntry& j : rows.journal) {
      EVIDENT_ASSIGN_OR_RETURN(const bool gone,
                               run(kJournal, [&](Statement& s) { s.Bind(j.seq).Bind(before_ms); }));
      removed += gone;
    }
    for (const QuarantineRecord& r : rows.quarantine) {
      EVIDENT_ASSIGN_OR_RETURN(
          const bool gone, run(kQuarantine, [&](Statement& s) { s.Bind(r.id).Bind(before_ms); }));
      if (gone) EVIDENT_RETURN_IF_ERROR(run(kAudit, [&](Statement& s) { s.Bind(r.id); }).status());
      removed += gone;
    }
    for (const GapRecord& g : rows.gaps) {
      EVIDENT_ASSIGN_OR_RETURN(const bool gone, run(kGap, [&](Statement& s) {
                                 s.Bind(g.consumer).Bind(g.subject).Bind(g.expected_version);
                                 s.Bind(before_ms);
                               }));
      removed += gone;
    }
    for (const EffectLogEntry& e : rows.effect_log) {
      EVIDENT_ASSIGN_OR_RETURN(
          const bool gone, run(kEffectLog, [&](Statement& s) { s.Bind(e.seq).Bind(before_ms); }));
      removed += gone;
    }
    for (const OutboxRow& o : rows.outbox) {
      EVIDENT_ASSIGN_OR_RETURN(const bool gone,
                               run(kOutbox, [&](Statement& s) { s.Bind(o.seq).Bind(before_ms); }));
      if (gone) EVIDENT_RETURN_IF_ERROR(run(kBody, [&](Statement& s) { s.Bind(o.seq); }).status());
      removed += gone;
    }
    EVIDENT_ASSIGN_OR_RETURN(const int64_t intents, RemoveRetainedIntents(rows.intents, before_ms));
    EVIDENT_ASSIGN_OR_RETURN(const int64_t receipts, RemoveRetainedLedger(rows.ledger, before_ms));
    return removed + intents + receipts;
  }

  // An intent goes and its key's digest stays, with its effect, consumer, state and settled
  // second, in the same transaction; the rule checked again in the removal.
  Result<int64_t> RemoveRetainedIntents(const std::vector<EffectIntent>& rows, int64_t before_ms) {
    if (rows.empty()) return int64_t{0};
    if (layout_ < 15) return Status::FailedPrecondition("the store's layout keeps no effect keys");
    static const std::string kIntent =
        std::string(
            "DELETE FROM effect_intent WHERE seq IN (SELECT i.seq FROM effect_intent i"
            " WHERE i.seq=?2 AND ") +
        kIntentRetainable + ") RETURNING key, effect, consumer, state, settled_at_ms";
    static const std::string kDigest =
        "INSERT INTO effect_digest(digest, effect, consumer, state, settled_s)"
        " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING";
    int64_t removed = 0;
    for (const EffectIntent& e : rows) {
      Statement& s = Prepared(kIntent);
      s.Bind(before_ms).Bind(e.seq);
      Status status;
      std::optional<std::array<std::string, 4>> gone;
      int64_t settled_at_ms = 0;
      if (s.Step(status)) {
        gone = {s.Text(0), s.Text(1), s.Text(2), s.Text(3)};
        settled_at_ms = s.Int(4);
      }
      while (status.ok() && s.Step(status)) {
      }
      s.Reset();
      EVIDENT_RETURN_IF_ERROR(status);
      if (!gone) continue;
      EVIDENT_ASSIGN_OR_RETURN(const std::string digest, IntentKeyDigest((*gone)[0]));
      EVIDENT_RETURN_IF_ERROR(Prepared(kDigest)
                                  .BindBlob(digest)
                                  .Bind((*gone)[1])
                                  .Bind((*gone)[2])
                                  .Bind((*gone)[3])
                                  .Bind(FloorSeconds(settled_at_ms))
                                  .Run());
      ++removed;
    }
    intent_digests_kept_.reset();
    return removed;
  }

  // A receipt goes and its key's digest stays, in the same transaction (the receipt's own commit
  // second kept with it for --forget-ledger-after). RETURNING needs SQLite 3.35 (Debian 12 has
  // 3.40).
  Result<int64_t> RemoveRetainedLedger(const std::vector<LedgerEntry>& rows, int64_t before_ms) {
    if (rows.empty()) return int64_t{0};
    if (layout_ < 14) return Status::FailedPrecondition("the store's layout keeps no digests");
    static const std::string kReceipt =
        std::string("DELETE FROM ledger WHERE consumer=?2 AND source=?3 AND event_id=?4 AND ") +
        kReceiptRetainable + " RETURNING committed_at_ms";
    static const std::string kDigest =
        "INSERT INTO ledger_digest(digest, committed_s) VALUES(?1, ?2) ON CONFLICT DO NOTHING";
    int64_t removed = 0;
    for (const LedgerEntry& e : rows) {
      Statement& s = Prepared(kReceipt);
      s.Bind(before_ms).Bind(e.consumer).Bind(e.source).Bind(e.event_id);
      Status status;
      std::optional<int64_t> committed_at_ms;
      if (s.Step(status)) committed_at_ms = s.Int(0);
      while (status.ok() && s.Step(status)) {
      }
      s.Reset();
      EVIDENT_RETURN_IF_ERROR(status);
      if (!committed_at_ms) continue;
      EVIDENT_ASSIGN_OR_RETURN(const std::string digest,
                               LedgerKeyDigest(e.consumer, e.source, e.event_id));
      EVIDENT_RETURN_IF_ERROR(
          Prepared(kDigest).BindBlob(digest).Bind(FloorSeconds(*committed_at_ms)).Run());
      ++removed;
    }
    digests_kept_.reset();
    return removed;
  }

  Result<OutboxStats> OutboxStatsNow(int64_t now_ms) {
    OutboxStats stats;
    if (layout_ < 3) return stats;
    static const std::string kSql =
        "SELECT sum(sent_at_ms IS NULL AND parked_at_ms IS NULL), sum(sent_at_ms IS NOT NULL), "
        "min(CASE WHEN sent_at_ms IS NULL AND parked_at_ms IS NULL THEN created_at_ms END), "
        "max(CASE WHEN sent_at_ms IS NULL AND parked_at_ms IS NULL THEN attempts END), "
        "sum(parked_at_ms IS NOT NULL) FROM outbox";
    static const std::string kSql6 =
        "SELECT sum(sent_at_ms IS NULL), sum(sent_at_ms IS NOT NULL), "
        "min(CASE WHEN sent_at_ms IS NULL THEN created_at_ms END), "
        "max(CASE WHEN sent_at_ms IS NULL THEN attempts END), 0 FROM outbox";
    Statement& s = Prepared(layout_ < 7 ? kSql6 : kSql);
    Status status;
    if (s.Step(status)) {
      stats.pending = s.OptionalInt(0).value_or(0);
      stats.sent = s.OptionalInt(1).value_or(0);
      if (const auto oldest = s.OptionalInt(2)) stats.oldest_pending_age_ms = now_ms - *oldest;
      stats.attempts_max = s.OptionalInt(3).value_or(0);
      stats.parked = s.OptionalInt(4).value_or(0);
    }
    s.Reset();
    if (!status.ok()) return status;
    return stats;
  }

  sqlite3* db() const { return db_; }

  // No row limit, for internal reads bounded by other means (one subject's rows in a batch).
  static constexpr int64_t kAll = std::numeric_limits<int64_t>::max() - 1;

 private:
  // `sql` must have static storage: statements are cached by its address, so the hot path
  // neither hashes nor compares SQL text.
  Statement& Prepared(const std::string& sql) {
    auto it = statements_.find(&sql);
    if (it == statements_.end() || !it->second->prepared()) {  // a failure is tried again
      it = statements_.insert_or_assign(&sql, std::make_unique<Statement>(db_, sql.c_str())).first;
    }
    return *it->second;
  }

  // Runs a list query whose last parameter is its LIMIT: rows_max + 1 rows are asked for, and
  // the extra one only tells that the list was cut.
  template <typename T, typename Reader>
  Result<Rows<T>> Query(const std::string& sql, std::initializer_list<std::string_view> args,
                        int64_t rows_max, Reader read) {
    return QueryBound<T>(
        sql,
        [&](Statement& s) {
          for (std::string_view a : args) s.Bind(a);
        },
        rows_max, read);
  }
  // The same with the parameters before the LIMIT bound by `bind(statement)`.
  template <typename T, typename Binder, typename Reader>
  Result<Rows<T>> QueryBound(const std::string& sql, Binder bind, int64_t rows_max, Reader read) {
    assert(rows_max >= 0);
    // Even where assertions are off, a list stays bounded (SQLite reads a negative LIMIT as
    // none) and rows_max + 1 cannot overflow.
    rows_max = std::clamp<int64_t>(rows_max, 0, kAll);
    Statement& s = Prepared(sql);  // sql has static storage (see Prepared)
    bind(s);
    if (sqlite3_bind_parameter_count(s.handle()) > s.bound()) s.Bind(rows_max + 1);
    Rows<T> out;
    Status status;
    while (status.ok() && s.Step(status)) {
      if (static_cast<int64_t>(out.rows.size()) == rows_max) {
        out.truncated = true;
        break;
      }
      out.rows.push_back(read(s, status));
    }
    s.Reset();
    if (!status.ok()) return status;
    return out;
  }

  sqlite3* db_;
  std::optional<bool> digests_kept_;         // AnyDigestKept's answer in this write transaction
  std::optional<bool> intent_digests_kept_;  // AnyIntentDigestKept's
  std::unique_ptr<Checkpointer> checkpointer_;
  int64_t checkpoint_wal_pages_ = SqliteOptions{}.checkpoint_wal_pages;
  int64_t checkpoint_thread_commit_pages_ = SqliteOptions{}.checkpoint_thread_commit_pages;
  int64_t wal_pages_max_ = SqliteOptions{}.wal_pages_max;
  std::unordered_map<const std::string*, std::unique_ptr<Statement>> statements_;
  bool in_transaction_ = false;
  Open open_ = Open::kNone;
  bool borrowed_ = false;  // the caller's connection: never closed, never reconfigured
  bool joined_ = false;    // the open transaction or snapshot is a savepoint of the caller's
  int64_t layout_ = kSqliteLayoutVersion;
  // The projection key leads with the subject (stores created since the key order changed).
  bool subject_first_ = false;
  // A layout-3 outbox, read-only: the bytes are a column of the row, not in outbox_body.
  bool outbox_bytes_in_row_ = false;
  // Subjects whose projection rows this transaction has read, for every consumer at once.
  std::unordered_set<std::string, StringHash, std::equal_to<>> subjects_read_;
  CachedProjection scratch_;           // Cached() outside a transaction
  simdjson::dom::parser json_parser_;  // evidence records
  std::string evidence_json_;          // scratch: the evidence_json column being written
  // This transaction's projections, by (consumer, subject); bounded by the batch size.
  std::unordered_map<std::string, SubjectCache, StringHash, std::equal_to<>> projections_;
  // This transaction's deferred events not yet written, by (consumer, subject, version); looked
  // up by views, without building the key.
  using DeferredKey = std::tuple<std::string, std::string, int64_t>;
  using DeferredView = std::tuple<std::string_view, std::string_view, int64_t>;
  struct DeferredKeyLess {
    using is_transparent = void;
    static DeferredView View(const DeferredKey& k) {
      return {std::get<0>(k), std::get<1>(k), std::get<2>(k)};
    }
    static DeferredView View(const DeferredView& v) { return v; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return View(a) < View(b);
    }
  };
  std::map<DeferredKey, DeferredEvent, DeferredKeyLess> pending_deferred_;
};

// The Store handles over one engine (one connection). Each handle shares the engine, so a
// handle that outlives its Store still ends cleanly (the connection closes with the last of
// them). Each asserts it is still open: a call after Commit or Rollback is a programmer error.
class SqliteTransaction final : public Transaction {
 public:
  explicit SqliteTransaction(std::shared_ptr<SqliteEngine> engine) : engine_(std::move(engine)) {}
  ~SqliteTransaction() override {
    if (engine_ != nullptr) (void)engine_->Rollback();
  }

  Status Commit() override {
    Open();
    return std::exchange(engine_, nullptr)->Commit();
  }
  Status Rollback() override {
    Open();
    return std::exchange(engine_, nullptr)->Rollback();
  }

  Result<BatchRows> Load(const BatchKeys& keys) override { return Open()->Load(keys); }
  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override {
    return Open()->FindLedger(consumer, source, event_id);
  }
  Result<Insert> InsertLedger(const LedgerEntry& entry) override {
    return Open()->InsertLedger(entry);
  }
  Status DeleteLedger(std::string_view consumer, std::string_view source,
                      std::string_view event_id) override {
    return Open()->DeleteLedger(consumer, source, event_id);
  }
  Result<std::optional<LedgerEntry>> AppliedAfter(std::string_view consumer,
                                                  std::string_view subject,
                                                  int64_t after_projection_version,
                                                  const std::vector<std::string>& types) override {
    return Open()->AppliedAfter(consumer, subject, after_projection_version, types);
  }
  Status MarkApplied(std::string_view consumer, std::string_view source, std::string_view event_id,
                     int64_t projection_version, int64_t committed_at_ms) override {
    return Open()->MarkApplied(consumer, source, event_id, projection_version, committed_at_ms);
  }
  Status CountDuplicate(std::string_view consumer, std::string_view source,
                        std::string_view event_id, int64_t at_ms) override {
    return Open()->CountDuplicate(consumer, source, event_id, at_ms);
  }
  Result<bool> ReadProjection(std::string_view consumer, std::string_view subject,
                              Projection& out) override {
    return Open()->ReadProjection(consumer, subject, out);
  }
  Status PutProjection(const Projection& projection,
                       std::optional<int64_t> expected_version) override {
    return Open()->PutProjection(projection, expected_version);
  }
  Result<std::optional<DeferredEvent>> FindDeferred(std::string_view consumer,
                                                    std::string_view subject,
                                                    int64_t subject_version) override {
    return Open()->FindDeferred(consumer, subject, subject_version);
  }
  Result<Insert> InsertDeferred(const DeferredEvent& event) override {
    return Open()->InsertDeferred(event);
  }
  Status DeleteDeferred(std::string_view consumer, std::string_view subject,
                        int64_t subject_version) override {
    return Open()->DeleteDeferred(consumer, subject, subject_version);
  }
  Result<QuarantineKept> Quarantine(const QuarantineRecord& record) override {
    return Open()->Quarantine(record);
  }
  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) override {
    return Open()->FindQuarantine(id);
  }
  Status SetQuarantineStatus(int64_t id, QuarantineStatus status) override {
    return Open()->SetQuarantineStatus(id, status);
  }
  Status AuditQuarantine(const QuarantineAudit& entry) override {
    return Open()->AuditQuarantine(entry);
  }
  Result<std::optional<GapRecord>> FindGap(std::string_view consumer, std::string_view subject,
                                           int64_t expected_version) override {
    return Open()->FindGap(consumer, subject, expected_version);
  }
  Result<Insert> InsertGap(const GapRecord& record) override { return Open()->InsertGap(record); }
  Result<int64_t> CloseGaps(std::string_view consumer, std::string_view subject,
                            int64_t through_version, const GapClosing& closing) override {
    return Open()->CloseGaps(consumer, subject, through_version, closing);
  }
  Status UpdateGap(const GapRecord& record) override { return Open()->UpdateGap(record); }
  Status Journal(const JournalEntry& entry) override { return Open()->Journal(entry); }
  Status PutEvidence(const EvidenceRecord& record) override { return Open()->PutEvidence(record); }
  Status SetPosition(std::string_view source, std::string_view position) override {
    return Open()->SetPosition(source, position);
  }
  Result<std::optional<std::string>> GetPosition(std::string_view source) override {
    return Open()->GetPosition(source);
  }
  Result<OutboxAppend> AppendOutbox(const OutboxRow& row) override {
    return Open()->AppendOutbox(row);
  }
  Result<Rows<OutboxRow>> PendingOutbox(int64_t after_seq, int64_t rows_max) override {
    return Open()->OutboxRows(OutboxSelect::kPending, after_seq, rows_max);
  }
  Status MarkOutboxSent(int64_t seq, std::string_view stream,
                        std::optional<int64_t> stream_sequence, int64_t at_ms) override {
    return Open()->MarkOutboxSent(seq, stream, stream_sequence, at_ms);
  }
  Status RecordOutboxAttempt(int64_t seq, std::string_view error, int64_t at_ms) override {
    return Open()->RecordOutboxAttempt(seq, error, at_ms);
  }
  Status ParkOutbox(int64_t seq, std::string_view reason, int64_t at_ms) override {
    return Open()->SetOutboxParked(seq, true, reason, at_ms);
  }
  Status UnparkOutbox(int64_t seq) override { return Open()->SetOutboxParked(seq, false, "", 0); }
  Result<int64_t> DeleteSentOutbox(int64_t sent_before_ms, int64_t rows_max) override {
    return Open()->DeleteSentOutbox(sent_before_ms, rows_max);
  }
  Result<int64_t> RemoveRetained(const RetainedRows& rows, int64_t before_ms) override {
    return Open()->RemoveRetained(rows, before_ms);
  }
  Status RecordRetention(const RetentionRun& run) override { return Open()->RecordRetention(run); }
  Result<ForgottenDigests> ForgetLedgerDigests(int64_t before_ms, std::string_view after,
                                               int64_t rows_max) override {
    return Open()->ForgetLedgerDigests(before_ms, after, rows_max);
  }
  Result<int64_t> PushSet(SetKind kind, const StoredContracts& set) override {
    return Open()->PushSet(kind, set);
  }
  Result<int64_t> LatestSetVersion(SetKind kind) override { return Open()->LatestSetVersion(kind); }
  Result<std::optional<StoredContracts>> SetAt(SetKind kind, int64_t version) override {
    return Open()->SetAt(kind, version);
  }
  Result<std::vector<StoredContracts>> SetHistory(SetKind kind, int64_t rows_max) override {
    return Open()->SetHistory(kind, rows_max);
  }
  Result<Insert> InsertIntent(const EffectIntent& intent) override {
    return Open()->InsertIntent(intent);
  }
  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) override {
    return Open()->FindIntent(key);
  }
  Result<Rows<EffectIntent>> DueIntents(int64_t now_ms, int64_t rows_max) override {
    return Open()->DueIntents(now_ms, rows_max);
  }
  Status UpdateIntent(const EffectIntent& intent, int64_t expected_revision) override {
    return Open()->UpdateIntent(intent, expected_revision);
  }
  Status LogIntent(const EffectLogEntry& entry) override { return Open()->LogIntent(entry); }
  Status IntendOnce(const EffectIntent& intent, std::string_view trigger_detail) override {
    bool done = false;
    EVIDENT_RETURN_IF_ERROR(Open()->IntendOnceFast(intent, trigger_detail, done));
    if (done) return Status::Ok();
    return Transaction::IntendOnce(intent, trigger_detail);  // the rare answers, in full
  }
  Result<Insert> InsertCompensation(const CompensationRecord& record) override {
    return Open()->InsertCompensation(record);
  }
  Status UpdateCompensation(const CompensationRecord& record) override {
    return Open()->UpdateCompensation(record);
  }
  Result<std::vector<CompensationRecord>> CompensationsOfIntent(std::string_view key) override {
    return Open()->CompensationsOfIntent(key);
  }
  Result<std::optional<EffectIntent>> LatestIntentOf(std::string_view consumer,
                                                     std::string_view subject,
                                                     std::string_view effect) override {
    return Open()->LatestIntentOf(consumer, subject, effect);
  }
  Status InsertCorrection(const ProjectionCorrection& correction) override {
    return Open()->InsertCorrection(correction);
  }
  Result<std::vector<GroupMember>> JoinGroup(std::string_view group, std::string_view member,
                                             int64_t partition_count, int64_t now_ms,
                                             int64_t expires_at_ms) override {
    return Open()->JoinGroup(group, member, partition_count, now_ms, expires_at_ms);
  }
  Status LeaveGroup(std::string_view group, std::string_view member) override {
    return Open()->LeaveGroup(group, member);
  }
  Result<std::optional<GroupLease>> AcquireLease(std::string_view group, int64_t partition,
                                                 std::string_view holder, int64_t now_ms,
                                                 int64_t expires_at_ms) override {
    return Open()->TakeLease(group, partition, holder, now_ms, expires_at_ms, false);
  }
  Result<GroupLease> SeizeLease(std::string_view group, int64_t partition, std::string_view holder,
                                int64_t now_ms) override {
    EVIDENT_ASSIGN_OR_RETURN(std::optional<GroupLease> lease,
                             Open()->TakeLease(group, partition, holder, now_ms,
                                               std::numeric_limits<int64_t>::max(), true));
    if (!lease.has_value()) return Status::IoError("a lease seized is not there to read");
    return *std::move(lease);
  }
  Result<bool> RenewLease(std::string_view group, int64_t partition, std::string_view holder,
                          int64_t epoch, int64_t expires_at_ms) override {
    return Open()->TouchLease(group, partition, holder, epoch, expires_at_ms, std::nullopt,
                              std::nullopt);
  }
  Status ReleaseLease(std::string_view group, int64_t partition, std::string_view holder,
                      int64_t epoch) override {
    return Open()
        ->TouchLease(group, partition, holder, epoch, 0, std::nullopt, std::nullopt)
        .status();
  }
  // SQLite has one writer: this transaction holds the write lock from its first write to its
  // commit, so a takeover (a SeizeLease or AcquireLease of another connection) comes before the
  // check or after the commit, never between. `hold_ms` has no counterpart here: a stalled
  // writer holds the lock until it ends, and the taker waits for it (busy_timeout_ms).
  Status FenceLease(std::string_view group, int64_t partition, std::string_view holder,
                    int64_t epoch, std::optional<int64_t> position, std::optional<int64_t> lag,
                    int64_t hold_ms) override {
    (void)hold_ms;
    EVIDENT_ASSIGN_OR_RETURN(const bool held, Open()->TouchLease(group, partition, holder, epoch,
                                                                 std::nullopt, position, lag));
    if (held) return Status::Ok();
    return Status::FailedPrecondition("lease lost: partition " + std::to_string(partition) +
                                      " of group " + std::string(group) + " is no longer " +
                                      std::string(holder) + "'s at epoch " + std::to_string(epoch) +
                                      " (another member took it over)");
  }

  sqlite3* connection() const { return engine_ == nullptr ? nullptr : engine_->db(); }

 private:
  SqliteEngine* Open() const {
    assert(engine_ != nullptr && "transaction used after Commit or Rollback");
    return engine_.get();
  }

  std::shared_ptr<SqliteEngine> engine_;  // null once committed or rolled back
};

class SqliteSnapshot final : public Snapshot {
 public:
  explicit SqliteSnapshot(std::shared_ptr<SqliteEngine> engine)
      : owner_(std::move(engine)), engine_(*owner_) {}
  ~SqliteSnapshot() override { engine_.EndRead(); }

  Result<std::optional<Projection>> FindProjection(std::string_view consumer,
                                                   std::string_view subject) override {
    return engine_.FindProjection(consumer, subject);
  }
  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override {
    return engine_.FindLedger(consumer, source, event_id);
  }
  Result<Rows<Projection>> ProjectionsOf(std::string_view subject, int64_t rows_max) override {
    return engine_.ProjectionsOf(subject, rows_max);
  }
  Result<Rows<LedgerEntry>> LedgerOf(std::string_view consumer, std::string_view subject,
                                     int64_t rows_max) override {
    return engine_.LedgerOf(consumer, subject, rows_max);
  }
  Result<Rows<DeferredEvent>> DeferredOf(std::string_view consumer, std::string_view subject,
                                         int64_t rows_max) override {
    return engine_.DeferredOf(consumer, subject, rows_max);
  }
  Result<Rows<DeferredEvent>> AllDeferred(int64_t rows_max) override {
    return engine_.AllDeferred(rows_max);
  }
  Result<Rows<QuarantineRecord>> QuarantineOf(std::string_view subject, int64_t rows_max) override {
    return engine_.QuarantineOf(subject, rows_max);
  }
  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) override {
    return engine_.FindQuarantine(id);
  }
  Result<Rows<QuarantineRecord>> ListQuarantine(const QuarantineFilter& filter,
                                                QuarantineCursor after, int64_t rows_max) override {
    return engine_.ListQuarantine(filter, after, rows_max);
  }
  Result<Rows<QuarantineAudit>> AuditOf(int64_t record_id, int64_t rows_max) override {
    return engine_.AuditOf(record_id, rows_max);
  }
  Result<Rows<GapRecord>> GapRecordsOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) override {
    return engine_.GapRecordsOf(consumer, subject, rows_max);
  }
  Result<Rows<GapRecord>> OpenGapRecords(int64_t rows_max) override {
    return engine_.OpenGapRecords(rows_max);
  }
  Result<Rows<JournalEntry>> JournalOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) override {
    return engine_.JournalOf(consumer, subject, rows_max);
  }
  Result<Rows<EvidenceRecord>> EvidenceOf(std::string_view consumer, std::string_view subject,
                                          int64_t rows_max) override {
    return engine_.EvidenceOf(consumer, subject, rows_max);
  }
  Result<std::optional<std::string>> GetPosition(std::string_view source) override {
    return engine_.GetPosition(source);
  }
  Result<std::vector<GroupLease>> GroupLeases(std::string_view group) override {
    return engine_.GroupLeases(group);
  }
  Result<std::vector<GroupMember>> GroupMembers(std::string_view group) override {
    return engine_.GroupMembers(group, std::numeric_limits<int64_t>::min());
  }
  Result<int64_t> GroupPartitionCount(std::string_view group) override {
    return engine_.GroupPartitionCount(group);
  }
  Result<std::vector<std::pair<std::string, int64_t>>> Counts() override {
    return engine_.Counts();
  }
  Result<RetainedRows> Retainable(RetainedKind kind, int64_t before_ms, int64_t after,
                                  int64_t rows_max) override {
    return engine_.Retainable(kind, before_ms, after, rows_max);
  }
  Result<int64_t> CountRetainable(RetainedKind kind, int64_t before_ms) override {
    return engine_.CountRetainable(kind, before_ms);
  }
  Result<RetainedRows> RetainableLedger(int64_t before_ms, const LedgerKey& after,
                                        int64_t rows_max) override {
    return engine_.RetainableLedger(before_ms, after, rows_max);
  }
  Result<int64_t> CountLedgerDigests(int64_t before_ms) override {
    return engine_.CountLedgerDigests(before_ms);
  }
  Result<std::optional<RetentionRun>> LatestRetention() override {
    return engine_.LatestRetention();
  }
  Result<int64_t> LatestSetVersion(SetKind kind) override { return engine_.LatestSetVersion(kind); }
  Result<std::optional<StoredContracts>> SetAt(SetKind kind, int64_t version) override {
    return engine_.SetAt(kind, version);
  }
  Result<std::vector<StoredContracts>> SetHistory(SetKind kind, int64_t rows_max) override {
    return engine_.SetHistory(kind, rows_max);
  }
  Result<Rows<OutboxRow>> OutboxRows(OutboxSelect select, int64_t after_seq,
                                     int64_t rows_max) override {
    return engine_.OutboxRows(select, after_seq, rows_max);
  }
  Result<OutboxStats> OutboxStatsNow(int64_t now_ms) override {
    return engine_.OutboxStatsNow(now_ms);
  }
  Result<std::optional<OutboxRow>> FindOutbox(std::string_view source,
                                              std::string_view event_id) override {
    return engine_.FindOutbox(source, event_id);
  }
  Result<Rows<OutboxRow>> OutboxOfSubject(std::string_view source, std::string_view subject,
                                          int64_t from_version, int64_t rows_max) override {
    return engine_.OutboxOfSubject(source, subject, from_version, rows_max);
  }
  Result<Rows<ProjectionCorrection>> CorrectionsOf(std::string_view consumer,
                                                   std::string_view subject,
                                                   int64_t rows_max) override {
    return engine_.CorrectionsOf(consumer, subject, rows_max);
  }
  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) override {
    if (engine_.layout() < 5) return std::optional<EffectIntent>();
    return engine_.FindIntent(key);
  }
  Result<Rows<EffectIntent>> ListIntents(const EffectFilter& filter, int64_t after_seq,
                                         int64_t rows_max) override {
    return engine_.ListIntents(filter, after_seq, rows_max);
  }
  Result<Rows<EffectLogEntry>> IntentLogOf(std::string_view key, int64_t rows_max) override {
    return engine_.IntentLogOf(key, rows_max);
  }
  Result<Rows<CompensationRecord>> ListCompensations(std::string_view consumer,
                                                     std::string_view subject, int64_t after_seq,
                                                     int64_t rows_max) override {
    return engine_.ListCompensations(consumer, subject, after_seq, rows_max);
  }

 private:
  std::shared_ptr<SqliteEngine> owner_;
  SqliteEngine& engine_;
};

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::shared_ptr<SqliteEngine> engine) : engine_(std::move(engine)) {}

  Result<std::unique_ptr<Transaction>> Begin() override {
    EVIDENT_RETURN_IF_ERROR(Idle("Begin"));
    EVIDENT_RETURN_IF_ERROR(engine_->Begin());
    return std::unique_ptr<Transaction>(new SqliteTransaction(engine_));
  }
  Result<std::unique_ptr<Snapshot>> Read() override {
    EVIDENT_RETURN_IF_ERROR(Idle("Read"));
    EVIDENT_RETURN_IF_ERROR(engine_->BeginRead());
    return std::unique_ptr<Snapshot>(new SqliteSnapshot(engine_));
  }
  Result<Space> SpaceNow() override {
    EVIDENT_RETURN_IF_ERROR(Idle("SpaceNow"));
    return engine_->SpaceNow();
  }
  Result<int64_t> ReturnSpace(int64_t pages_max) override {
    EVIDENT_RETURN_IF_ERROR(Idle("ReturnSpace"));
    EVIDENT_RETURN_IF_ERROR(Owned("ReturnSpace"));
    return engine_->ReturnSpace(pages_max);
  }
  Status Compact() override {
    EVIDENT_RETURN_IF_ERROR(Idle("Compact"));
    EVIDENT_RETURN_IF_ERROR(Owned("Compact"));
    return engine_->Compact();
  }

 private:
  Status Idle(std::string_view call) const {
    if (engine_->open() == SqliteEngine::Open::kNone) return Status::Ok();
    return Status::FailedPrecondition(
        std::string(call) + ": this store has a " +
        (engine_->open() == SqliteEngine::Open::kWrite ? "transaction" : "snapshot") +
        " open; one at a time per store");
  }

  // Vacuums and checkpoints change the file under a connection that is the caller's.
  Status Owned(std::string_view call) const {
    if (!engine_->borrowed()) return Status::Ok();
    return Status::FailedPrecondition(std::string(call) +
                                      ": the store is over the caller's connection; run it "
                                      "through evident (evident store retain, store vacuum)");
  }

  std::shared_ptr<SqliteEngine> engine_;
};

// Waits for a lock another connection holds, up to the timeout its argument carries (in ms).
// SQLite's own handler (sqlite3_busy_timeout) sleeps 1, 2, 5 .. 100 ms between tries, and a
// lock is not a queue: against a producer that commits a thousand times a second and holds the
// lock through most of each fsync, a relay waiting that way kept missing the free moments (its
// Begin waited p99 19-79 ms, once past a 5 s timeout; bench/latency_bench). This one tries every
// 100 us for the first 50 ms, then every 1 ms up to 1 s, then every 10 ms: at most ~1,500
// wake-ups in the first second and 100 a second after, and in the common case in within 0.1 ms
// of the lock coming free.
int BusyWait(void* timeout, int count) {
  const auto timeout_us = static_cast<int64_t>(reinterpret_cast<intptr_t>(timeout)) * 1000;
  constexpr int kFastTries = 500, kMediumTries = 950;
  int64_t waited_us = 0, sleep_us = 0;
  if (count < kFastTries) {
    waited_us = int64_t{count} * 100;
    sleep_us = 100;
  } else if (count < kFastTries + kMediumTries) {
    waited_us = 50'000 + int64_t{count - kFastTries} * 1000;
    sleep_us = 1000;
  } else {
    waited_us = 1'000'000 + int64_t{count - kFastTries - kMediumTries} * 10'000;
    sleep_us = 10'000;
  }
  if (waited_us >= timeout_us) return 0;  // SQLITE_BUSY to the caller
  ::usleep(static_cast<useconds_t>(std::min(sleep_us, timeout_us - waited_us)));
  return 1;
}

void SetBusyTimeout(sqlite3* db, int64_t timeout_ms) {
  sqlite3_busy_handler(db, timeout_ms > 0 ? &BusyWait : nullptr,
                       reinterpret_cast<void*>(static_cast<intptr_t>(timeout_ms)));
}

// Opens `path` with SQLITE_OPEN_READONLY: nothing is created or changed. A WAL store whose
// directory cannot hold the -shm file (a read-only mount) is opened immutable instead, which is
// exact when no other process writes it (none can, on such a mount).
Result<std::unique_ptr<Store>> OpenSqliteStoreForReading(const std::string& path,
                                                         const SqliteOptions& options) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return Status::NotFound("no evident store at " + path + " (nothing is created on reading)");
  }
  Status last;
  for (const bool immutable : {false, true}) {
    std::string uri = "file:";
    for (const char c : path) {  // a URI: '?', '#' and '%' in the path are escaped
      if (c == '?' || c == '#' || c == '%') {
        char escaped[4];
        std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
        uri += escaped;
      } else {
        uri.push_back(c);
      }
    }
    if (immutable) {
      // Immutable reads the main file only: commits still in a write-ahead log (a writer that
      // ended without its checkpoint) would be missing, and the store read as it was before
      // them. Refused rather than answered stale.
      struct stat wal {};
      if (::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0) {
        return Status::FailedPrecondition(
            path + " cannot be read here: its write-ahead log (" + path +
            "-wal) holds commits, and on a read-only location without its -shm file SQLite can "
            "read the main file only, which would answer as of before them. Open it once where it "
            "can be written (any evident command that writes checkpoints it), or copy the -shm "
            "file along");
      }
    }
    uri += immutable ? "?mode=ro&immutable=1" : "?mode=ro";
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(
        uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
    auto store = std::make_unique<SqliteEngine>(db);  // closes db on every path below
    if (rc != SQLITE_OK) {
      last = Status::IoError("cannot open sqlite store " + path + ": " + sqlite3_errmsg(db));
      continue;
    }
    SetBusyTimeout(db, options.busy_timeout_ms);
    sqlite3_extended_result_codes(db, 1);
    auto tables = store->Count(kStoreTablesSql);
    if (!tables.ok()) {
      const int code = sqlite3_extended_errcode(db) & 0xFF;
      if (code == SQLITE_NOTADB) {
        return Status::FailedPrecondition(path + " is not an evident store (not a SQLite file)");
      }
      last = tables.status();
      if (code == SQLITE_CANTOPEN || code == SQLITE_READONLY) continue;  // try immutable
      return last;
    }
    if (*tables != kStoreTableCount) {
      return Status::FailedPrecondition(path +
                                        " is not an evident store (it lacks evident's tables)");
    }
    EVIDENT_RETURN_IF_ERROR(store->ReadLayout());
    EVIDENT_RETURN_IF_ERROR(store->DetectLayout());
    return std::unique_ptr<Store>(new SqliteStore(std::move(store)));
  }
  return last.Annotate("opening " + path + " for reading");
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteOptions& options) {
  if (options.synchronous != "FULL" && options.synchronous != "NORMAL" &&
      options.synchronous != "OFF") {
    return Status::InvalidArgument("synchronous must be FULL, NORMAL or OFF");
  }
  if (options.checkpoint_wal_pages < 1 || options.checkpoint_thread_commit_pages < 1 ||
      options.wal_pages_max < options.checkpoint_wal_pages) {
    return Status::InvalidArgument(
        "checkpoint_wal_pages and checkpoint_thread_commit_pages must be at least 1, and "
        "wal_pages_max at least checkpoint_wal_pages");
  }
  if (options.read_only) return OpenSqliteStoreForReading(path, options);
  if (struct stat info{}; !options.create && ::stat(path.c_str(), &info) != 0) {
    return Status::NotFound("no evident store at " + path + " (this command creates none)");
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    return Status::IoError("cannot open sqlite store " + path + ": " + message);
  }
  auto store = std::make_unique<SqliteEngine>(db);
  SetBusyTimeout(db, options.busy_timeout_ms);
  sqlite3_extended_result_codes(db, 1);  // tells a duplicate key from other constraint failures
  // On a new, empty file only (before its first table, and before WAL mode writes its header):
  // pages that retention frees then go back to the file system through `PRAGMA
  // incremental_vacuum` (Store::ReturnSpace) without a rewrite. An older store keeps its mode
  // until Store::Compact. (On an existing file the pragma would take the write lock.)
  EVIDENT_ASSIGN_OR_RETURN(const int64_t pages, store->Count("PRAGMA page_count"));
  if (pages == 0) EVIDENT_RETURN_IF_ERROR(store->Exec("PRAGMA auto_vacuum=INCREMENTAL"));
  EVIDENT_RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL"));
  EVIDENT_RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=" + options.synchronous));
  EVIDENT_RETURN_IF_ERROR(store->Exec("PRAGMA cache_size=-" + std::to_string(options.cache_kib)));
  EVIDENT_RETURN_IF_ERROR(store->Exec("PRAGMA foreign_keys=ON"));
  EVIDENT_RETURN_IF_ERROR(store->Migrate());
  EVIDENT_RETURN_IF_ERROR(store->DetectLayout());
  EVIDENT_RETURN_IF_ERROR(store->ConfigureCheckpoints(options));
  return std::unique_ptr<Store>(new SqliteStore(std::move(store)));
}

namespace {

// The text a pragma answers ("wal"), or empty.
std::string PragmaText(sqlite3* db, const char* sql) {
  sqlite3_stmt* statement = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) == SQLITE_OK &&
      sqlite3_step(statement) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
    if (text != nullptr) out = text;
  }
  sqlite3_finalize(statement);
  return out;
}

// A connection evident may write on: WAL (a reader never blocks the writer, and a commit is one
// append) and synchronous FULL or EXTRA (a commit survives power loss, as the store's own).
Status CheckCallerConnection(sqlite3* db) {
  std::string mode = PragmaText(db, "PRAGMA journal_mode");
  for (char& c : mode) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (mode != "wal") {
    return Status::FailedPrecondition(
        "the connection's journal_mode is " + (mode.empty() ? std::string("unknown") : mode) +
        ", not wal: run PRAGMA journal_mode=WAL on it (evident store migrate sets it on the file)");
  }
  const std::string synchronous = PragmaText(db, "PRAGMA synchronous");
  if (synchronous != "2" && synchronous != "3") {
    static const char* const kNames[] = {"OFF", "NORMAL"};
    const std::string name =
        synchronous == "0" || synchronous == "1" ? kNames[synchronous[0] - '0'] : synchronous;
    return Status::FailedPrecondition("the connection runs at synchronous=" + name +
                                      ", below FULL: a commit could be lost at a power cut; run "
                                      "PRAGMA synchronous=FULL on it");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStoreOnConnection(sqlite3* db,
                                                           SqliteConnectionCache* cache) {
  if (db == nullptr) return Status::InvalidArgument("no connection");
  EVIDENT_RETURN_IF_ERROR(CheckCallerConnection(db));
  auto engine = std::make_shared<SqliteEngine>(db, /*borrowed=*/true);
  // The file's schema cookie changes with every change of any table or index in it: the same
  // cookie, the same layout.
  EVIDENT_ASSIGN_OR_RETURN(const int64_t schema_version, engine->Count("PRAGMA schema_version"));
  if (cache != nullptr && cache->schema_version == schema_version) {
    engine->Adopt(*cache);
    return std::unique_ptr<Store>(new SqliteStore(std::move(engine)));
  }
  const Result<int64_t> layout = engine->LayoutOf();
  const char* file = sqlite3_db_filename(db, "main");
  const std::string migrate = std::string("evident store migrate --store sqlite:") +
                              (file != nullptr && file[0] != '\0' ? file : "PATH");
  if (!layout.ok()) return layout.status();
  if (*layout != kSqliteLayoutVersion) {
    return Status::FailedPrecondition(
        *layout == 0 ? "the connection's database is not an evident store: run " + migrate
                     : "the store has layout " + std::to_string(*layout) + "; this build writes " +
                           std::to_string(kSqliteLayoutVersion) + ": run " + migrate);
  }
  EVIDENT_RETURN_IF_ERROR(engine->ReadLayout());
  EVIDENT_RETURN_IF_ERROR(engine->DetectLayout());
  if (cache != nullptr) {
    engine->Remember(*cache);
    cache->schema_version = schema_version;
  }
  return std::unique_ptr<Store>(new SqliteStore(std::move(engine)));
}

sqlite3* SqliteConnection(Transaction& transaction) {
  auto* sqlite = dynamic_cast<SqliteTransaction*>(&transaction);
  return sqlite == nullptr ? nullptr : sqlite->connection();
}

#ifndef EVIDENT_SQLITE_EXTENSION
bool ConfigureSqliteProcess() { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK; }
#endif

}  // namespace evident
