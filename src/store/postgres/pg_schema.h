// store/postgres/pg_schema.h — the PostgreSQL store's tables, in the connection's search_path:
// layout 1, and the steps from each layout to the next.
//
// The same tables as the SQLite store's (src/store/sqlite/sqlite_store.cc), with three
// differences: evidence records have a table of their own (one row per consumer, subject and
// name; a networked store gains nothing from packing them into the projection's row, and a
// row per record is one upsert); a quarantine record is found again through a unique index on
// its identity and the SHA-256 of its bytes, so that two writers quarantining the same input at
// once meet on the index instead of opening two records; the outbox keeps its bytes in the row
// (PostgreSQL stores a large value out of line, and an UPDATE of the delivery state does not
// copy it).
#pragma once

#include <string>
#include <string_view>

namespace evident::postgres {

inline constexpr const char* kSchemaLayout1 = R"sql(
CREATE TABLE IF NOT EXISTS evident_schema(version bigint NOT NULL);
CREATE TABLE IF NOT EXISTS ledger(
  consumer text NOT NULL, source text NOT NULL, event_id text NOT NULL,
  state text NOT NULL, type text NOT NULL, subject text NOT NULL,
  subject_version bigint, input_schema_version bigint NOT NULL,
  result_version bigint NOT NULL, projection_version bigint,
  committed_at_ms bigint NOT NULL, duplicates bigint NOT NULL DEFAULT 0,
  last_duplicate_at_ms bigint,
  PRIMARY KEY(consumer, source, event_id));
CREATE INDEX IF NOT EXISTS ledger_by_subject ON ledger(subject, consumer);
CREATE TABLE IF NOT EXISTS projection(
  consumer text NOT NULL, subject text NOT NULL, version bigint NOT NULL,
  state text NOT NULL, fields_json text NOT NULL, owner_source text NOT NULL,
  owner_version_seen bigint NOT NULL, updated_at_ms bigint NOT NULL,
  PRIMARY KEY(subject, consumer));
CREATE TABLE IF NOT EXISTS evidence(
  consumer text NOT NULL, subject text NOT NULL, name text NOT NULL, source text NOT NULL,
  event_id text NOT NULL, subject_version bigint, recorded_at_ms bigint NOT NULL,
  detail text NOT NULL,
  PRIMARY KEY(subject, consumer, name));
CREATE TABLE IF NOT EXISTS deferred(
  consumer text NOT NULL, subject text NOT NULL, subject_version bigint NOT NULL,
  source text NOT NULL, event_id text NOT NULL, type text NOT NULL,
  schema_version bigint NOT NULL, expected_version bigint NOT NULL, raw bytea NOT NULL,
  received_at_ms bigint NOT NULL, deadline_at_ms bigint NOT NULL, route text NOT NULL,
  input_index bigint NOT NULL,
  PRIMARY KEY(subject, consumer, subject_version));
CREATE INDEX IF NOT EXISTS deferred_by_deadline
  ON deferred(deadline_at_ms, consumer, subject, subject_version);
CREATE TABLE IF NOT EXISTS journal(
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, consumer text NOT NULL,
  outcome text NOT NULL, source text NOT NULL, event_id text NOT NULL, subject text NOT NULL,
  subject_version bigint, at_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS journal_by_subject ON journal(subject, consumer, seq);
CREATE TABLE IF NOT EXISTS position(source text PRIMARY KEY, position bytea NOT NULL);
CREATE TABLE IF NOT EXISTS outbox(
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, source text NOT NULL,
  event_id text NOT NULL, type text NOT NULL, subject text NOT NULL, subject_version bigint,
  event_partition bigint NOT NULL, bytes bytea NOT NULL, created_at_ms bigint NOT NULL,
  attempts bigint NOT NULL DEFAULT 0, last_error text NOT NULL DEFAULT '',
  last_attempt_at_ms bigint, sent_at_ms bigint, stream text NOT NULL DEFAULT '',
  stream_sequence bigint);
CREATE UNIQUE INDEX IF NOT EXISTS outbox_by_id ON outbox(source, event_id);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox(seq) WHERE sent_at_ms IS NULL;
CREATE INDEX IF NOT EXISTS outbox_sent ON outbox(sent_at_ms) WHERE sent_at_ms IS NOT NULL;
CREATE TABLE IF NOT EXISTS quarantine(
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, consumer text NOT NULL,
  ident_source text NOT NULL, ident_id text NOT NULL, raw_digest bytea NOT NULL,
  outcome text NOT NULL, reason text NOT NULL, message text NOT NULL, source text NOT NULL,
  event_id text NOT NULL, type text NOT NULL, subject text NOT NULL, subject_version bigint,
  schema_version bigint, raw bytea NOT NULL, attempts bigint NOT NULL,
  first_seen_ms bigint NOT NULL, last_seen_ms bigint NOT NULL, status text NOT NULL,
  input_index bigint NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS quarantine_by_ident
  ON quarantine(consumer, ident_source, ident_id, raw_digest);
CREATE INDEX IF NOT EXISTS quarantine_by_subject ON quarantine(subject, id);
CREATE INDEX IF NOT EXISTS quarantine_by_first_seen ON quarantine(first_seen_ms, id);
CREATE TABLE IF NOT EXISTS quarantine_audit(
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, record_id bigint NOT NULL,
  action text NOT NULL, by_whom text NOT NULL, note text NOT NULL, outcome text NOT NULL,
  reason text NOT NULL, status_after text NOT NULL, at_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS quarantine_audit_by_record ON quarantine_audit(record_id, seq);
CREATE TABLE IF NOT EXISTS gap(
  consumer text NOT NULL, subject text NOT NULL, expected_version bigint NOT NULL,
  missing_to bigint NOT NULL, route text NOT NULL, state text NOT NULL,
  deadline_at_ms bigint NOT NULL, acted_at_ms bigint NOT NULL,
  request_event_id text NOT NULL, closed_at_ms bigint, closed_by text NOT NULL,
  note text NOT NULL,
  PRIMARY KEY(consumer, subject, expected_version));
CREATE INDEX IF NOT EXISTS gap_open ON gap(deadline_at_ms) WHERE state <> 'closed';
CREATE TABLE IF NOT EXISTS effect_intent(
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, key text NOT NULL UNIQUE,
  effect text NOT NULL, consumer text NOT NULL, subject text NOT NULL, source text NOT NULL,
  event_id text NOT NULL, subject_version bigint, request bytea NOT NULL, state text NOT NULL,
  attempts bigint NOT NULL, last_error text NOT NULL, http_status bigint,
  response_digest text NOT NULL, intended_at_ms bigint NOT NULL, last_attempt_at_ms bigint,
  next_attempt_at_ms bigint, settled_at_ms bigint, claimed_by text NOT NULL,
  revision bigint NOT NULL);
CREATE INDEX IF NOT EXISTS effect_intent_due ON effect_intent(next_attempt_at_ms, seq)
  WHERE next_attempt_at_ms IS NOT NULL;
CREATE INDEX IF NOT EXISTS effect_intent_by_subject ON effect_intent(subject, consumer, seq);
CREATE TABLE IF NOT EXISTS effect_log(
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, key text NOT NULL, action text NOT NULL,
  by_whom text NOT NULL, state_after text NOT NULL, http_status bigint, detail text NOT NULL,
  at_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS effect_log_by_key ON effect_log(key, seq);
CREATE TABLE IF NOT EXISTS compensation(
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, key text NOT NULL UNIQUE,
  consumer text NOT NULL, subject text NOT NULL, owner_source text NOT NULL,
  owner_version bigint, event_id text NOT NULL, type text NOT NULL,
  recorded_at_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS compensation_by_subject ON compensation(subject, consumer, seq);
)sql";

// Layout 2: consumer groups (consumer_group, group_member, group_lease: group.h), and relays
// that share the store (Transaction::ClaimOutbox). A relay claims outbox partitions
// by locking their rows here (FOR UPDATE SKIP LOCKED) for the transaction that publishes and
// marks their rows; a producer adds its row's partition on append (ON CONFLICT DO NOTHING, which
// does not wait for a relay's lock on an existing row). Partitions already in the outbox are
// added by the step itself.
// The NOTIFY channel of committed outbox rows; the payload is the schema they were written in.
inline constexpr const char* kOutboxChannel = "evident_outbox";

// Layout 3: what each receipt wrote, and the adapter its payload was read through.
inline constexpr const char* kSchemaLayout3 = R"sql(
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS adapter text NOT NULL DEFAULT '';
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS wrote text NOT NULL DEFAULT '';
INSERT INTO evident_schema(version) VALUES(3);
)sql";

// Layout 4: parked outbox rows (Transaction::ParkOutbox).
inline constexpr const char* kSchemaLayout4 = R"sql(
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS parked_at_ms bigint;
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS parked_reason text NOT NULL DEFAULT '';
INSERT INTO evident_schema(version) VALUES(4);
)sql";

// Layout 5: the payload digest that set a projection's version; an intent's basis version; a
// compensation's decision about the effect it compensates (found again by the intent it
// covers); a gap's record from its first deferral (opened, waiting versions, how and why it
// closed, the owner's answer), so acted_at_ms is empty until its deadline is acted on; people's
// corrections of projections. Rows of older layouts read the defaults: no digest, no basis, a
// consumer's compensation with nothing decided, a gap record with no waiting versions known.
inline constexpr const char* kSchemaLayout5 = R"sql(
ALTER TABLE projection ADD COLUMN IF NOT EXISTS applied_digest text NOT NULL DEFAULT '';
ALTER TABLE effect_intent ADD COLUMN IF NOT EXISTS basis_version bigint;
ALTER TABLE compensation ADD COLUMN IF NOT EXISTS recorded_by text NOT NULL DEFAULT 'consumer';
ALTER TABLE compensation ADD COLUMN IF NOT EXISTS decision text NOT NULL DEFAULT '';
ALTER TABLE compensation ADD COLUMN IF NOT EXISTS compensates text NOT NULL DEFAULT '';
ALTER TABLE compensation ADD COLUMN IF NOT EXISTS covers text NOT NULL DEFAULT '';
ALTER TABLE compensation ADD COLUMN IF NOT EXISTS compensate_with text NOT NULL DEFAULT '';
ALTER TABLE compensation ADD COLUMN IF NOT EXISTS compensating_key text NOT NULL DEFAULT '';
ALTER TABLE compensation
  ADD COLUMN IF NOT EXISTS compensating_request bytea NOT NULL DEFAULT ''::bytea;
ALTER TABLE compensation ADD COLUMN IF NOT EXISTS basis_version bigint;
ALTER TABLE compensation ADD COLUMN IF NOT EXISTS state text NOT NULL DEFAULT 'recorded';
ALTER TABLE compensation ADD COLUMN IF NOT EXISTS detail text NOT NULL DEFAULT '';
ALTER TABLE compensation ADD COLUMN IF NOT EXISTS updated_at_ms bigint NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS compensation_by_covers ON compensation(covers);
CREATE INDEX IF NOT EXISTS compensation_by_compensating_key ON compensation(compensating_key);
ALTER TABLE compensation DROP CONSTRAINT IF EXISTS compensation_key_key;
CREATE UNIQUE INDEX IF NOT EXISTS compensation_by_consumer_key ON compensation(consumer, key);
ALTER TABLE gap ALTER COLUMN acted_at_ms DROP NOT NULL;
ALTER TABLE gap ADD COLUMN IF NOT EXISTS opened_at_ms bigint;
ALTER TABLE gap ADD COLUMN IF NOT EXISTS waiting text NOT NULL DEFAULT '';
ALTER TABLE gap ADD COLUMN IF NOT EXISTS how text NOT NULL DEFAULT '';
ALTER TABLE gap ADD COLUMN IF NOT EXISTS cause text NOT NULL DEFAULT '';
ALTER TABLE gap ADD COLUMN IF NOT EXISTS answer text NOT NULL DEFAULT '';
ALTER TABLE gap ADD COLUMN IF NOT EXISTS answered_at_ms bigint;
UPDATE gap SET how = CASE WHEN closed_by = 'arrival' THEN 'drained' ELSE 'resolved' END,
  cause = CASE WHEN closed_by = 'arrival' THEN 'out-of-order' ELSE 'missing' END
  WHERE state = 'closed' AND how = '';
CREATE INDEX IF NOT EXISTS outbox_by_subject ON outbox(subject, subject_version)
  WHERE subject_version IS NOT NULL;
CREATE TABLE IF NOT EXISTS projection_correction(
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, consumer text NOT NULL,
  subject text NOT NULL, before_json text NOT NULL, after_json text NOT NULL,
  by_whom text NOT NULL, note text NOT NULL, basis text NOT NULL, forced boolean NOT NULL,
  at_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS projection_correction_by_subject
  ON projection_correction(subject, consumer, seq);
INSERT INTO evident_schema(version) VALUES(5);
)sql";

// Layout 6: each receipt's trace context (the CloudEvents distributed-tracing extension).
inline constexpr const char* kSchemaLayout6 = R"sql(
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS traceparent text NOT NULL DEFAULT '';
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS tracestate text NOT NULL DEFAULT '';
INSERT INTO evident_schema(version) VALUES(6);
)sql";

// Layout 7: retention (store_retention.h). Closed gaps are found by their close time, and each
// run that removed anything is kept for evidence.
inline constexpr const char* kSchemaLayout7 = R"sql(
CREATE INDEX IF NOT EXISTS gap_closed ON gap(closed_at_ms) WHERE state = 'closed';
CREATE TABLE IF NOT EXISTS retention_run(
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at_ms bigint NOT NULL UNIQUE,
  horizon_ms bigint NOT NULL, archive text NOT NULL, removed bigint NOT NULL);
INSERT INTO evident_schema(version) VALUES(7);
)sql";

// Layout 8: contracts kept in the store (store_contracts.h), one row per pushed set.
inline constexpr const char* kSchemaLayout8 = R"sql(
CREATE TABLE IF NOT EXISTS contract_set(
  version bigint PRIMARY KEY, pushed_at_ms bigint NOT NULL, digest text NOT NULL,
  settings text NOT NULL, files text NOT NULL);
INSERT INTO evident_schema(version) VALUES(8);
)sql";

// Layout 9: consumer sets kept in the store (`consumers push`, stored_consumers.h), numbered on
// their own.
inline constexpr const char* kSchemaLayout9 = R"sql(
CREATE TABLE IF NOT EXISTS consumer_set(
  version bigint PRIMARY KEY, pushed_at_ms bigint NOT NULL, digest text NOT NULL,
  settings text NOT NULL, files text NOT NULL);
INSERT INTO evident_schema(version) VALUES(9);
)sql";

// Grants on table `to` whatever was granted on table `from`: a role that reads or writes the one
// (or a --security-definer role of the SQL functions) must read the other too, or it fails at
// its first look. From the table's own access list (not information_schema, which shows only the
// grants of roles the migrating one is or belongs to); grantee 0 is PUBLIC.
inline std::string CopyGrantsSql(std::string_view from, std::string_view to) {
  return std::string(R"sql(
DO $evident$
DECLARE g record;
BEGIN
  FOR g IN SELECT a.privilege_type, a.is_grantable,
                  CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END AS who
           FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
           LEFT JOIN pg_roles r ON r.oid = a.grantee
           WHERE c.oid = to_regclass(')sql") +
         std::string(from) + R"sql(') AND a.grantee <> c.relowner LOOP
    EXECUTE format('GRANT %s ON )sql" +
         std::string(to) + R"sql( TO %s%s', g.privilege_type, g.who,
                   CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
  END LOOP;
END
$evident$;
)sql";
}

// Layout 10: the keys of receipts retention compacted (store_retention.h, kLedger), each as 16
// bytes of SHA-256 (LedgerKeyDigest) with the second it was committed in, granted as the ledger
// is.
inline const std::string& SchemaLayout10() {
  static const std::string kSql =
      "CREATE TABLE IF NOT EXISTS ledger_digest(\n"
      "  digest bytea PRIMARY KEY, committed_s bigint NOT NULL);" +
      CopyGrantsSql("ledger", "ledger_digest") +
      "INSERT INTO evident_schema(version) VALUES(10);\n";
  return kSql;
}

// Layout 11: the keys of intents retention removed (store_retention.h, kIntent), each as 16
// bytes of SHA-256 (IntentKeyDigest) with its effect, consumer, settled state and the second it
// settled in, granted as the intents are; and each run's forgetting of ledger digests.
inline const std::string& SchemaLayout11() {
  static const std::string kSql =
      "CREATE TABLE IF NOT EXISTS effect_digest(\n"
      "  digest bytea PRIMARY KEY, effect text NOT NULL, consumer text NOT NULL,\n"
      "  state text NOT NULL, settled_s bigint NOT NULL);\n"
      "ALTER TABLE retention_run ADD COLUMN IF NOT EXISTS forgot_before_ms bigint NOT NULL\n"
      "  DEFAULT 0;" +
      CopyGrantsSql("effect_intent", "effect_digest") +
      "INSERT INTO evident_schema(version) VALUES(11);\n";
  return kSql;
}

inline constexpr const char* kSchemaLayout2 = R"sql(
CREATE TABLE IF NOT EXISTS outbox_partition(event_partition bigint PRIMARY KEY);
INSERT INTO outbox_partition(event_partition)
  SELECT DISTINCT event_partition FROM outbox ON CONFLICT DO NOTHING;
CREATE INDEX IF NOT EXISTS outbox_pending_by_partition
  ON outbox(event_partition, seq) WHERE sent_at_ms IS NULL;
CREATE TABLE IF NOT EXISTS consumer_group(
  group_name text PRIMARY KEY, partition_count bigint NOT NULL, created_at_ms bigint NOT NULL);
CREATE TABLE IF NOT EXISTS group_member(
  group_name text NOT NULL, member text NOT NULL, joined_at_ms bigint NOT NULL,
  expires_at_ms bigint NOT NULL, PRIMARY KEY(group_name, member));
CREATE TABLE IF NOT EXISTS group_lease(
  group_name text NOT NULL, event_partition bigint NOT NULL, holder text NOT NULL,
  epoch bigint NOT NULL, acquired_at_ms bigint NOT NULL, expires_at_ms bigint NOT NULL,
  position bigint, lag bigint, PRIMARY KEY(group_name, event_partition));
INSERT INTO evident_schema(version) VALUES(2);
)sql";

}  // namespace evident::postgres
