// evident/store.h — the consumer store: ledger with receipts, projections, deferred events,
// quarantine, journal, evidence and source positions, behind one narrow interface.
//
// Writes happen through a Transaction (Store::Begin): the pipeline puts every write of a batch
// in one — receipts + ledger + projection + deferred + quarantine + journal + source position
// commit together or not at all — and a caller's own writes can join it (an outbox row, a business
// table) through the backend's native handle (store_sqlite.h). Reads for evidence, gaps and
// guards go through a Snapshot (Store::Read): one consistent view, every list bounded.
//
// Outcomes of the write path are values: an insert that finds its key reports kAlreadyThere and
// the transaction stays usable on every database; a projection put whose expected version no
// longer holds fails with Code::kAborted (another writer got there first: roll back and retry the
// batch). Everything else that fails is the store failing.
//
// Backends: SQLite (embedded default, store_sqlite.h), PostgreSQL (store_postgres.h), memory
// (store_memory.h); wrappers of any of them derive from store_wrapper.h. OpenStore(uri)
// dispatches on the URI's scheme. One conformance suite (src/store/store_conformance_test.cc)
// runs against every backend.
//
// Thread-safety: a Store, its Transaction and its Snapshot are used by one thread at a time; a
// process with several workers opens one Store per worker. A Store has at most one open
// Transaction or Snapshot at a time (Begin or Read while one is open: kFailedPrecondition);
// this is the one statement of that rule, the backends' headers refer to it.
// A Transaction or Snapshot may outlive its Store: it still ends cleanly.
// Times are milliseconds since the Unix epoch (UTC).
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/outbox.h"
#include "evident/outcome.h"
#include "evident/status.h"

namespace evident {

// A ledger row: the consumer saw this input and decided.
struct LedgerEntry {
  std::string consumer, source, event_id;
  LedgerState state = LedgerState::kApplied;
  std::string type;
  std::string subject;  // empty when the event names none
  std::optional<int64_t> subject_version;
  int64_t input_schema_version = 0;
  int64_t result_version = 0;
  std::optional<int64_t> projection_version;  // after apply
  int64_t committed_at_ms = 0;
  int64_t duplicates = 0;
  std::optional<int64_t> last_duplicate_at_ms;
  // The version adapters the payload was read through, "a" or "a,b" for a declared chain; empty
  // when the consumer read the event's own schema version (contract.h, via_adapter).
  std::string adapter;
  // What the event set in the projection when it applied (JSON, kReceiptWroteBytesMax at most):
  // {"state":..,"fields":{..},"defaulted":[..]}; empty when its type has no projection step.
  std::string wrote_json;
};
// The largest `wrote_json` kept. A larger one keeps the state (its first 512 bytes) and the
// names of the members it set, {"state":..,"members":[..],"truncated_bytes":N}, instead of their
// values; should even that be too large, {"truncated_bytes":N}.
inline constexpr size_t kReceiptWroteBytesMax = 4096;

struct Projection {
  std::string consumer, subject;
  int64_t version = 0;
  std::string state;
  std::string fields_json = "{}";  // copied payload fields, a JSON object
  std::string owner_source;
  int64_t owner_version_seen = 0;
  int64_t updated_at_ms = 0;
  // "sha256:<hex>" of the payload (the event's `data`, minified as parsed) of the event that set
  // the projection's version, for an ordered consumer: a same-version conflict reports both
  // payloads' digests to the owner. Empty when not known (an unordered consumer, a baseline, a
  // correction, a store of an older layout).
  std::string applied_digest;
};

struct DeferredEvent {
  std::string consumer, subject;
  int64_t subject_version = 0;
  std::string source, event_id, type;
  int64_t schema_version = 0;
  int64_t expected_version = 0;
  std::string raw;  // original bytes
  int64_t received_at_ms = 0;
  int64_t deadline_at_ms = 0;
  GapRoute route = GapRoute::kWait;
  int64_t input_index = 0;  // where the event stood in its input
};

// An input that was not applied, quarantined with its reason and original bytes. One record per
// (consumer, source, id) and exact bytes, or per (consumer, exact bytes) when no id could be
// read: a re-delivery of the same input adds an attempt, not a second record.
struct QuarantineRecord {
  int64_t id = 0;                        // assigned by the store
  std::string consumer;                  // empty when refused before any consumer was chosen
  Outcome outcome = Outcome::kRejected;  // never kApplied, kDeferred or kDuplicate
  std::string reason;                    // stable code
  std::string message;
  std::string source, event_id, type, subject;  // empty when they could not be read
  std::optional<int64_t> subject_version;
  std::optional<int64_t> schema_version;
  std::string raw;  // the original bytes
  int64_t attempts = 1;
  int64_t first_seen_ms = 0, last_seen_ms = 0;
  QuarantineStatus status = QuarantineStatus::kOpen;
  int64_t input_index = 0;  // where the input stood in its source at its last delivery
};

// What Transaction::Quarantine did: opened a record, or counted one more attempt on the record
// that holds the same input.
struct QuarantineKept {
  int64_t id = 0;
  bool added = true;  // false: an existing record counted an attempt
};

// Which records a list selects; every field set narrows it.
struct QuarantineFilter {
  std::optional<std::string> consumer;
  std::optional<std::string> reason;
  std::optional<QuarantineStatus> status;
  std::vector<int64_t> ids;  // non-empty: only these
};

// Where a list of records in first-seen order resumes: after (first_seen_ms, id).
struct QuarantineCursor {
  int64_t first_seen_ms = INT64_MIN;
  int64_t id = 0;
};

// An operator's act on a quarantined record: who, when, why, and what came of it.
struct QuarantineAudit {
  int64_t seq = 0;  // assigned by the store
  int64_t record_id = 0;
  QuarantineAction action = QuarantineAction::kReplay;
  std::string by, note;
  std::string outcome;  // the decision's outcome name ("applied", "duplicate", ...), "discarded"
  std::string reason;   // the decision's reason when it was refused again
  QuarantineStatus status_after = QuarantineStatus::kOpen;
  int64_t at_ms = 0;
};

// A version gap of an ordered projection, from the first deferral that opened it to its close:
// what its route did once its deadline passed, and how and why it closed. One record per
// (consumer, subject, expected version): the first missing version when the gap opened (or,
// for a gap whose record an older layout only wrote at the deadline, when the deadline passed),
// so a gap is acted on once.
struct GapRecord {
  std::string consumer, subject;
  int64_t expected_version = 0;  // the first missing version
  int64_t missing_to = 0;        // the last missing version (below the lowest waiting one)
  GapRoute route = GapRoute::kWait;
  GapState state = GapState::kReported;  // kOpen until the deadline is acted on or it closes
  int64_t deadline_at_ms = 0;
  std::optional<int64_t> acted_at_ms;  // when the deadline was acted on
  std::string request_event_id;        // request-replay: the replay-request event's id
  std::optional<int64_t> closed_at_ms;
  std::string closed_by;  // "arrival": the missing versions arrived; else who closed it
  std::string note;
  // When the first deferral opened it; nullopt for a record an older layout wrote.
  std::optional<int64_t> opened_at_ms;
  // The versions that waited for it: as known when it opened or its deadline was acted on, and
  // the ones applied when it drained.
  std::vector<int64_t> waiting_versions;
  GapClosedHow how = GapClosedHow::kNone;
  GapCause cause = GapCause::kUnknown;
  // The owner's answer to its replay request (replay-requests serve): what was published again,
  // or what was gone; empty until an answer arrived.
  std::string answer;
  std::optional<int64_t> answered_at_ms;
};

// How CloseGaps closes the records it closes.
struct GapClosing {
  int64_t at_ms = 0;
  GapClosedHow how = GapClosedHow::kDrained;
  GapCause cause = GapCause::kOutOfOrder;
  std::string_view by;    // "arrival", or who closed it
  std::string_view note;  // a person's words; may be empty
  // Drained: the versions applied as it closed. They replace the record's waiting versions, and
  // its last missing version becomes at most the one below the lowest of them (a lower version
  // deferred after the gap opened narrowed it); empty: the record's are kept.
  std::vector<int64_t> waiting_versions;
};

// A person's correction of a projection (`evident projection correct`): the facts kept first,
// the projection before and after, who and why, and what allowed it.
struct ProjectionCorrection {
  int64_t seq = 0;  // assigned by the store
  std::string consumer, subject;
  std::string before_json, after_json;  // {"version":..,"state":..,"fields":{..},"owner":..}
  std::string by, note;
  std::string basis;  // what allowed it: an open gap, a quarantine record, or "forced"
  bool forced = false;
  int64_t at_ms = 0;
};

// One delivery decision that has no ledger row of its own (an applied delivery's ledger row is
// its journal entry): duplicates and deferrals.
struct JournalEntry {
  int64_t seq = 0;
  std::string consumer;
  Outcome outcome = Outcome::kDuplicate;
  std::string source, event_id, subject;
  std::optional<int64_t> subject_version;
  int64_t at_ms = 0;
};

struct EvidenceRecord {
  std::string consumer, subject, name, source, event_id;
  std::optional<int64_t> subject_version;
  int64_t recorded_at_ms = 0;
  // What backs it, for people: empty for a projection step's evidence; an effect's answer
  // ("HTTP 200, sha256:...") or who resolved it.
  std::string detail;
};

// An external effect a consumer intends because of an event it applied (effects.h). One intent
// per key in the whole store, written in the transaction of the decision that triggers it; the
// key never changes, however often the intent is attempted.
struct EffectIntent {
  int64_t seq = 0;  // assigned by the store, in the order intents were written
  std::string key;
  std::string effect, consumer, subject;
  std::string source, event_id;  // the event that triggered it
  std::optional<int64_t> subject_version;
  std::string request;  // the body sent: the event as CloudEvents structured JSON
  EffectState state = EffectState::kIntended;
  int64_t attempts = 0;  // calls started
  std::string last_error;
  std::optional<int64_t> http_status;  // of the last answer
  std::string response_digest;         // "sha256:<hex>" of the last answer's body
  int64_t intended_at_ms = 0;
  std::optional<int64_t> last_attempt_at_ms;
  // When a runner may take the intent (intended, or unknown on a target that honours the key);
  // nullopt: it waits for a person (unknown) or is settled (done, failed).
  std::optional<int64_t> next_attempt_at_ms;
  std::optional<int64_t> settled_at_ms;  // when it became done, failed or withdrawn
  std::string claimed_by;                // the runner of the last attempt
  int64_t revision = 0;                  // assigned by the store; every update raises it by one
  // The basis it was intended on: the subject's projection version right after the triggering
  // event applied (an ordered consumer: the event's subject version; an unordered one: its count
  // of applied events). A runner withdraws the intent when an event its effect lists under
  // `withdrawn_by` applied above it. nullopt without a subject (never withdrawn).
  std::optional<int64_t> basis_version;
};

// One entry of an intent's log: an attempt and what came of it, or a person's resolution.
struct EffectLogEntry {
  int64_t seq = 0;  // assigned by the store
  std::string key;
  EffectAction action = EffectAction::kAttempt;
  std::string by;  // the runner, or the person who resolved it
  EffectState state_after = EffectState::kUnknown;
  std::optional<int64_t> http_status;
  std::string detail;  // the error, the answer's digest, or the person's note
  int64_t at_ms = 0;
};

// Which intents a list selects; every field set narrows it.
struct EffectFilter {
  std::optional<EffectState> state;
  std::optional<std::string> consumer, effect, subject;
};

// A compensation the owner's decision requires, keyed by that decision
// ("compensation:order-417:reservation:v2"): inserted once per (consumer, key), whatever the
// deliveries.
// The owner records its own in the transaction of its decision (recorded_by owner); a consumer
// records one when it applies the deciding event, and, when its declaration names the effect it
// compensates, acts on facts only (CompensationState): the subject's latest intent of that
// effect decides whether a compensating effect is intended, waits for reconciliation, or was
// never needed.
struct CompensationRecord {
  int64_t seq = 0;  // assigned by the store
  std::string key;
  std::string consumer, subject;         // consumer: empty for an owner's record
  std::string owner_source;              // the source of the deciding event (the owner)
  std::optional<int64_t> owner_version;  // its subject version
  std::string event_id, type;            // the deciding event; empty for an owner's record
  int64_t recorded_at_ms = 0;
  CompensationBy recorded_by = CompensationBy::kConsumer;
  std::string decision;  // the owner's decision in its words ("reservation-rejected"); may be empty
  // The effect it compensates and the key of the intent it covers (empty: none declared, or the
  // subject had no intent of it); the compensating effect, its key and the body its intent sends
  // (kept so that a later reconciliation can intend it without the configuration).
  std::string compensates, covers;
  std::string compensate_with, compensating_key, compensating_request;
  std::optional<int64_t> basis_version;  // of the compensating intent
  CompensationState state = CompensationState::kRecorded;
  std::string detail;  // for people: what came of it
  int64_t updated_at_ms = 0;
};

// Keys of everything one batch of events touches, and the rows the store holds for them: a
// networked store answers a batch in a fixed number of round trips instead of one per event.
struct LedgerKey {
  std::string consumer, source, event_id;
};
struct SubjectKey {
  std::string consumer, subject;
};
struct BatchKeys {
  std::vector<LedgerKey> ledger;
  std::vector<SubjectKey> subjects;
};
struct BatchRows {
  std::vector<LedgerEntry> ledger;      // the rows of the keys that exist, any order
  std::vector<Projection> projections;  // the projections of the subjects that exist
  std::vector<DeferredEvent> deferred;  // every deferred event of those subjects
};

// What an insert found: the key was free and the row is written, or a row holds the key already
// (nothing written; the transaction goes on).
enum class Insert : uint8_t { kInserted, kAlreadyThere };

// Which outbox rows a list holds: every row; the pending ones (neither sent nor parked: what a
// relay publishes); the parked ones (set aside unsent by an operator).
enum class OutboxSelect : uint8_t { kAll, kPending, kParked };

// A bounded list: at most the `rows_max` asked for, and whether more rows exist.
template <typename T>
struct Rows {
  std::vector<T> rows;
  bool truncated = false;
};

// Rows returned by one Snapshot list call unless the caller asks otherwise.
inline constexpr int64_t kReadRowsMaxDefault = 10000;
// Compensations returned by Transaction::CompensationsOfIntent: one intent is covered by a few
// owner decisions at most.
inline constexpr int64_t kCoveringRowsMax = 64;

// Consumer groups (group.h): a stream's partitions leased to the processes of a group, each
// lease with a fencing epoch that goes up whenever the partition changes hands.
struct GroupLease {
  std::string group;
  int64_t partition = 0;
  std::string holder;  // a member's name
  int64_t epoch = 0;   // 1 for the first holder; +1 at each change of holder
  int64_t acquired_at_ms = 0;
  int64_t expires_at_ms = 0;  // renewed by its holder; past it, another member may take it
  // As of the holder's last commit (FenceLease): the last stream sequence decided, and how many
  // messages of the partition were behind it in the stream then (nullopt: not known yet).
  std::optional<int64_t> position, lag;
};
struct GroupMember {
  std::string group, member;
  int64_t joined_at_ms = 0;
  int64_t expires_at_ms = 0;  // renewed while the member runs; past it, it counts as gone
};

// One open write transaction. Destroying it without Commit rolls it back.
class Transaction {
 public:
  virtual ~Transaction() = default;

  // Makes every write durable (per the backend's durability setting) or none of them. After
  // Commit or Rollback the transaction is finished; any further call is a programmer error.
  virtual Status Commit() = 0;
  virtual Status Rollback() = 0;

  // Names the consumers this transaction may decide for, before it reads any of their rows. A
  // store that several processes share takes their locks here, all at once and in one order,
  // so that two transactions never wait for each other in a circle (PostgreSQL: StoreOptions::
  // deciders; a consumer not named is still locked when its rows are first read). The others
  // need nothing.
  virtual Status WillDecide(const std::vector<std::string>& consumers) {
    (void)consumers;
    return Status::Ok();
  }

  // Everything a batch needs, read in one call: each row once, however often its key is listed.
  // Its duty is to prime this transaction: a backend that answers later reads from what Load
  // read (PostgreSQL: the ledger rows, projections, deferred events and open gaps of the keys,
  // one round trip for the batch instead of one per call) keeps them, and FindLedger,
  // ReadProjection, FindDeferred and the gap calls of those keys are then answered without the
  // server, with what this transaction wrote since laid over them. The consume loop calls it
  // only when BatchLoadPays() and throws the returned rows away; `projection correct` and the
  // reopening of a gap read them (the deferred versions of a subject). A backend without such a
  // cache just returns the rows.
  virtual Result<BatchRows> Load(const BatchKeys& keys) = 0;

  virtual Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer,
                                                        std::string_view source,
                                                        std::string_view event_id) = 0;
  virtual Result<Insert> InsertLedger(const LedgerEntry& entry) = 0;
  // Removes a ledger row (a deferred event a correction made stale: its redelivery is then
  // decided afresh); nothing happens for a key with no row.
  virtual Status DeleteLedger(std::string_view consumer, std::string_view source,
                              std::string_view event_id) = 0;
  // The first applied receipt of (consumer, subject) above `after_projection_version` whose type
  // is one of `types`, by projection version: the event that withdrew an intent made at that
  // version (effects.h). nullopt when none.
  virtual Result<std::optional<LedgerEntry>> AppliedAfter(
      std::string_view consumer, std::string_view subject, int64_t after_projection_version,
      const std::vector<std::string>& types) = 0;
  // Marks a deferred ledger row applied, with its receipt fields. kInternal when the row is
  // not there or not deferred (the pipeline drains only what it deferred).
  virtual Status MarkApplied(std::string_view consumer, std::string_view source,
                             std::string_view event_id, int64_t projection_version,
                             int64_t committed_at_ms) = 0;
  // Counts one more delivery of a ledger row; nothing happens for a key with no row.
  virtual Status CountDuplicate(std::string_view consumer, std::string_view source,
                                std::string_view event_id, int64_t at_ms) = 0;

  // Reads the projection of (consumer, subject) into `out`, assigning every field (strings keep
  // their capacity: the hot path allocates nothing). False, with `out` a fresh projection of
  // version 0 for that key, when none is stored.
  virtual Result<bool> ReadProjection(std::string_view consumer, std::string_view subject,
                                      Projection& out) = 0;
  // ReadProjection, and a store that several processes share keeps the row from changing until
  // this transaction ends (PostgreSQL: FOR SHARE): an effect runner's basis check is then
  // ordered against the decision that changes the projection. Default: ReadProjection.
  virtual Result<bool> ReadProjectionLocked(std::string_view consumer, std::string_view subject,
                                            Projection& out) {
    return ReadProjection(consumer, subject, out);
  }
  // Writes a projection, expecting the stored one (as seen by this transaction) to have
  // `expected_version`, or to be absent when nullopt. A mismatch fails with kAborted and writes
  // nothing: another writer changed the projection since it was read. owner_version_seen never
  // goes down: the stored value is the larger of the two.
  virtual Status PutProjection(const Projection& projection,
                               std::optional<int64_t> expected_version) = 0;

  virtual Result<std::optional<DeferredEvent>> FindDeferred(std::string_view consumer,
                                                            std::string_view subject,
                                                            int64_t subject_version) = 0;
  // One event per (consumer, subject, version) waits.
  virtual Result<Insert> InsertDeferred(const DeferredEvent& event) = 0;
  // Nothing happens for a key with no waiting event.
  virtual Status DeleteDeferred(std::string_view consumer, std::string_view subject,
                                int64_t subject_version) = 0;

  // Quarantines an input that was not applied (`record.outcome` is never kApplied, kDeferred or
  // kDuplicate: a programmer error). The record's identity is its consumer, its source and id
  // when both are set, and its exact bytes. A new input opens a record (status open, one
  // attempt, first and last seen at record.last_seen_ms); the same input again counts an
  // attempt on its record and takes the new outcome, reason, message, coordinates and last-seen
  // time, keeping its status and first-seen time. record.id, attempts, first_seen_ms and status
  // are ignored.
  virtual Result<QuarantineKept> Quarantine(const QuarantineRecord& record) = 0;
  virtual Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) = 0;
  // Gap records (GapRecord). A key already there: kAlreadyThere, nothing written.
  virtual Result<std::optional<GapRecord>> FindGap(std::string_view consumer,
                                                   std::string_view subject,
                                                   int64_t expected_version) = 0;
  virtual Result<Insert> InsertGap(const GapRecord& record) = 0;
  // Closes the records of (consumer, subject) not closed yet whose missing versions are all at
  // or below `through_version` (missing_to <= through_version) as `closing` says; returns how
  // many.
  virtual Result<int64_t> CloseGaps(std::string_view consumer, std::string_view subject,
                                    int64_t through_version, const GapClosing& closing) = 0;
  // Writes a record's changing fields (missing_to, route, state, deadline, acted, request,
  // waiting versions, the close and the answer), found by (consumer, subject, expected
  // version); kNotFound when there is none.
  virtual Status UpdateGap(const GapRecord& record) = 0;

  // No record of that id: kNotFound.
  virtual Status SetQuarantineStatus(int64_t id, QuarantineStatus status) = 0;
  // `entry.seq` is ignored; no record of entry.record_id: kNotFound.
  virtual Status AuditQuarantine(const QuarantineAudit& entry) = 0;
  virtual Status Journal(const JournalEntry& entry) = 0;
  // Records named evidence for (consumer, subject); one record per name, the latest wins. The
  // evidence belongs to that subject's projection: it commits when the projection exists (put
  // in this transaction or committed before); evidence of a subject with no projection is
  // dropped at commit. (The pipeline always puts the projection it records evidence for.)
  virtual Status PutEvidence(const EvidenceRecord& record) = 0;

  // How far a source has been consumed: an opaque position that only the source reads (a line
  // count and hash for a file, a stream sequence for a broker), written in the batch's
  // transaction so it commits with the decisions it covers.
  virtual Status SetPosition(std::string_view source, std::string_view position) = 0;
  virtual Result<std::optional<std::string>> GetPosition(std::string_view source) = 0;

  // The outbox (outbox.h): rows appended in the caller's transaction commit with its other
  // writes. `row.seq` is ignored (the store assigns it), and so are the delivery fields
  // (attempts, last error and time, sent time, stream, stream sequence: a new row has none).
  virtual Result<OutboxAppend> AppendOutbox(const OutboxRow& row) = 0;
  // Unsent rows with a seq above `after_seq`, by seq. rows_max >= 0.
  virtual Result<Rows<OutboxRow>> PendingOutbox(int64_t after_seq, int64_t rows_max) = 0;
  // Records the broker's acknowledgement: the stream (or file) and the sequence it gave, nullopt
  // for a destination that numbers nothing. A row parked meanwhile (ParkOutbox while a relay
  // had it in hand) is sent, no longer parked: the broker has it. A row already sent keeps its
  // first acknowledgement;
  // no row of that seq: kNotFound (from this call, or from the commit of a store that sends the
  // call without waiting for its answer, as PostgreSQL does so that a relay's batch of marks
  // costs one round trip; the transaction then commits nothing).
  virtual Status MarkOutboxSent(int64_t seq, std::string_view stream,
                                std::optional<int64_t> stream_sequence, int64_t at_ms) = 0;
  // Counts a failed publish attempt. No row of that seq: kNotFound (as MarkOutboxSent).
  virtual Status RecordOutboxAttempt(int64_t seq, std::string_view error, int64_t at_ms) = 0;
  // Sets an unsent row aside, for a row the destination keeps refusing (a poison row): no relay
  // round that begins after the commit publishes it (one that had it in hand may still send it
  // and mark it sent), the rows behind it in its partition go out, and it is kept whole with the
  // operator's `reason` until UnparkOutbox makes it pending again (its attempts kept). No row
  // of that seq: kNotFound; a sent or an already parked row: kFailedPrecondition (for Unpark: a
  // row that is not parked).
  virtual Status ParkOutbox(int64_t seq, std::string_view reason, int64_t at_ms) = 0;
  virtual Status UnparkOutbox(int64_t seq) = 0;
  // Deletes at most `rows_max` sent rows, oldest seq first, sent before `sent_before_ms`;
  // returns how many. Called in bounded batches until it returns fewer than rows_max.
  virtual Result<int64_t> DeleteSentOutbox(int64_t sent_before_ms, int64_t rows_max) = 0;
  // The rows a relay publishes in this transaction, for a store several relays share
  // (Store::RelaysShare): it claims up to `partitions_max` outbox partitions that have pending
  // rows and that no other open transaction holds (round the partitions, from above the last
  // claimed through this store), and returns at most `rows_max` of their pending rows, the
  // partitions taking turns (each one's oldest row, then each one's second, ...; each
  // partition's rows in seq order) so that one partition's backlog does not fill the batch while
  // the others wait. A claimed partition
  // is this transaction's until it ends, so its rows go out in order through one relay at a time
  // and no other relay marks them; a transaction that says nothing to the store for `hold_ms`
  // (a relay paused or cut off mid-publish) loses its claims and cannot commit. Empty when
  // nothing is pending or other relays hold every partition with pending rows.
  // Default: the oldest pending rows (a store whose transactions exclude each other whole).
  virtual Result<Rows<OutboxRow>> ClaimOutbox(int64_t rows_max, int64_t partitions_max,
                                              int64_t hold_ms, int64_t now_ms);

  // Effect intents (EffectIntent). A key already there: kAlreadyThere, nothing written.
  // intent.seq and intent.revision are assigned (revision 1).
  virtual Result<Insert> InsertIntent(const EffectIntent& intent) = 0;
  virtual Result<std::optional<EffectIntent>> FindIntent(std::string_view key) = 0;
  // The intents a runner may take at `now_ms`: next_attempt_at_ms set and at or before now_ms,
  // by next_attempt_at_ms, then seq. rows_max >= 0.
  virtual Result<Rows<EffectIntent>> DueIntents(int64_t now_ms, int64_t rows_max) = 0;
  // Writes the intent's changing fields (state, attempts, last error, HTTP status, digest, the
  // times, claimed_by) when the stored revision is `expected_revision`, raising it by one. A
  // mismatch fails with kAborted and writes nothing: another runner or a person changed the
  // intent since it was read. No intent of that key: kNotFound. The key, seq, effect,
  // consumer, subject, event and request never change.
  virtual Status UpdateIntent(const EffectIntent& intent, int64_t expected_revision) = 0;
  // `entry.seq` is ignored; no intent of entry.key: kNotFound.
  virtual Status LogIntent(const EffectLogEntry& entry) = 0;
  // The subject's latest intent (highest seq) of `effect` for `consumer`, or nullopt. A store
  // that several processes share locks it until the transaction ends, so that a runner's answer
  // and a compensation deciding on the intent take turns.
  virtual Result<std::optional<EffectIntent>> LatestIntentOf(std::string_view consumer,
                                                             std::string_view subject,
                                                             std::string_view effect) = 0;
  // One record per (consumer, key): an owner's record (consumer empty) and a consumer's of the
  // same decision live side by side, and so do two consumers'. That pair already there:
  // kAlreadyThere, nothing written. record.seq is assigned.
  virtual Result<Insert> InsertCompensation(const CompensationRecord& record) = 0;
  // Writes a compensation's changing fields (covers, the compensating key, state, detail,
  // updated time), found by (consumer, key); kNotFound when there is none.
  virtual Status UpdateCompensation(const CompensationRecord& record) = 0;
  // The compensations that cover the intent `key` (CompensationRecord::covers) or intend it as
  // their compensating effect (compensating_key), by seq; at most kCoveringRowsMax. An empty
  // key names none.
  virtual Result<std::vector<CompensationRecord>> CompensationsOfIntent(std::string_view key) = 0;
  // A correction of a projection; correction.seq is assigned.
  virtual Status InsertCorrection(const ProjectionCorrection& correction) = 0;

  // Consumer groups (group.h). A store that processes cannot share (SQLite, memory) refuses
  // them with kFailedPrecondition; the defaults do that.
  //
  // Records `member` of `group` as alive until `expires_at_ms` (joining, or renewing), and the
  // group's partition count: a member that names another count than the group's is refused
  // (kFailedPrecondition). Returns the members alive at `now_ms`, by name, itself included.
  virtual Result<std::vector<GroupMember>> JoinGroup(std::string_view group,
                                                     std::string_view member,
                                                     int64_t partition_count, int64_t now_ms,
                                                     int64_t expires_at_ms);
  // Removes the member (leaving); nothing happens for one not there.
  virtual Status LeaveGroup(std::string_view group, std::string_view member);
  // Takes `partition` for `holder` until `expires_at_ms` when nobody holds it, when its lease
  // expired before `now_ms`, or when `holder` holds it (a member of that name run again): the
  // epoch goes up every time, so that whatever held it before is fenced off. nullopt when another
  // member holds it unexpired.
  virtual Result<std::optional<GroupLease>> AcquireLease(std::string_view group, int64_t partition,
                                                         std::string_view holder, int64_t now_ms,
                                                         int64_t expires_at_ms);
  // Extends the lease `holder` holds at `epoch` to `expires_at_ms`; false when it holds it no
  // longer (another member took it over, or a run of the same name took it again).
  virtual Result<bool> RenewLease(std::string_view group, int64_t partition,
                                  std::string_view holder, int64_t epoch, int64_t expires_at_ms);
  // Gives the lease up (it expires at once), if `holder` still holds it at `epoch`.
  virtual Status ReleaseLease(std::string_view group, int64_t partition, std::string_view holder,
                              int64_t epoch);
  // The fence of a batch: this transaction commits only if `holder` still holds `partition` at
  // `epoch` when it commits (kFailedPrecondition "lease lost" otherwise, from this call or from
  // the commit), and the lease records `position` and `lag`. A transaction that then says
  // nothing to the store for `hold_ms` is ended by it, so that a stalled holder cannot keep
  // a taker waiting.
  virtual Status FenceLease(std::string_view group, int64_t partition, std::string_view holder,
                            int64_t epoch, std::optional<int64_t> position,
                            std::optional<int64_t> lag, int64_t hold_ms);

  // The write path's forms of the two inserts above, for a store that may send them without
  // waiting for an answer (a networked store overrides them; the rest of the transaction learns
  // of a failure at the latest from its commit). IntendOnce inserts the intent unless its key
  // is there; a key another consumer's or effect's intent holds fails with kFailedPrecondition
  // (two effects whose key templates meet: a configuration that would lose an effect). A key
  // the same consumer's same effect holds already is the business operation triggered again: a
  // no-op, logged on that intent (EffectAction::kTrigger, state unchanged) with `trigger_detail`.
  virtual Status IntendOnce(const EffectIntent& intent, std::string_view trigger_detail);
  // Inserts the record unless its key is there.
  virtual Status RecordCompensation(const CompensationRecord& record) {
    return InsertCompensation(record).status();
  }
  // Inserts the gap record unless its key is there (a gap opening, store.h's GapRecord).
  virtual Status RecordGap(const GapRecord& record) { return InsertGap(record).status(); }
};

// One consistent read view, taken when Read() returns: every call sees the same committed state.
// Destroy it to release the view (on SQLite it holds the WAL from being checkpointed past it).
// rows_max must be >= 0.
class Snapshot {
 public:
  virtual ~Snapshot() = default;

  virtual Result<std::optional<Projection>> FindProjection(std::string_view consumer,
                                                           std::string_view subject) = 0;
  virtual Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer,
                                                        std::string_view source,
                                                        std::string_view event_id) = 0;
  // Lists, each ordered as documented and cut at `rows_max`.
  // The projections of the consumers that hold a receipt of the subject, by consumer.
  virtual Result<Rows<Projection>> ProjectionsOf(std::string_view subject,
                                                 int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<Rows<LedgerEntry>> LedgerOf(  // by subject version, then commit time
      std::string_view consumer, std::string_view subject,
      int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<Rows<DeferredEvent>> DeferredOf(  // by subject version
      std::string_view consumer, std::string_view subject,
      int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<Rows<DeferredEvent>> AllDeferred(  // by deadline, consumer, subject, version
      int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<Rows<QuarantineRecord>> QuarantineOf(std::string_view subject,  // by id
                                                      int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) = 0;
  // The records `filter` selects after `after`, by first-seen time, then id.
  virtual Result<Rows<QuarantineRecord>> ListQuarantine(const QuarantineFilter& filter,
                                                        QuarantineCursor after = {},
                                                        int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<Rows<QuarantineAudit>> AuditOf(int64_t record_id,  // by seq
                                                int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<Rows<GapRecord>> GapRecordsOf(  // by expected version
      std::string_view consumer, std::string_view subject,
      int64_t rows_max = kReadRowsMaxDefault) = 0;
  // The records not closed, by deadline, then consumer, subject and expected version.
  virtual Result<Rows<GapRecord>> OpenGapRecords(int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<Rows<JournalEntry>> JournalOf(  // by seq
      std::string_view consumer, std::string_view subject,
      int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<Rows<EvidenceRecord>> EvidenceOf(  // by name
      std::string_view consumer, std::string_view subject,
      int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<std::optional<std::string>> GetPosition(std::string_view source) = 0;
  // Rows per table, for tests and summaries: ledger, projection, deferred, quarantine, journal,
  // effect, compensation.
  virtual Result<std::vector<std::pair<std::string, int64_t>>> Counts() = 0;
  // Outbox rows with a seq above `after_seq`, by seq: all, the pending ones or the parked ones.
  virtual Result<Rows<OutboxRow>> OutboxRows(OutboxSelect select, int64_t after_seq,
                                             int64_t rows_max = kReadRowsMaxDefault) = 0;
  // Counts over the whole outbox; ages are measured at `now_ms`.
  virtual Result<OutboxStats> OutboxStatsNow(int64_t now_ms) = 0;
  // The outbox row of (source, id), sent or not, while the store keeps it.
  virtual Result<std::optional<OutboxRow>> FindOutbox(std::string_view source,
                                                      std::string_view event_id) = 0;
  // The kept outbox rows of `source` and `subject` from subject version `from_version` on, by
  // subject version, then seq (a row without a version is not listed).
  virtual Result<Rows<OutboxRow>> OutboxOfSubject(std::string_view source, std::string_view subject,
                                                  int64_t from_version,
                                                  int64_t rows_max = kReadRowsMaxDefault) = 0;
  // The corrections of (consumer, subject), by seq.
  virtual Result<Rows<ProjectionCorrection>> CorrectionsOf(
      std::string_view consumer, std::string_view subject,
      int64_t rows_max = kReadRowsMaxDefault) = 0;
  // A consumer group's leases by partition, and its members by name (group.h); a store
  // without groups: kFailedPrecondition. The partition count the group was started with, 0 when
  // no member ever joined.
  virtual Result<std::vector<GroupLease>> GroupLeases(std::string_view group);
  virtual Result<std::vector<GroupMember>> GroupMembers(std::string_view group);
  virtual Result<int64_t> GroupPartitionCount(std::string_view group);

  virtual Result<std::optional<EffectIntent>> FindIntent(std::string_view key) = 0;
  // The intents `filter` selects with a seq above `after_seq`, by seq.
  virtual Result<Rows<EffectIntent>> ListIntents(const EffectFilter& filter, int64_t after_seq = 0,
                                                 int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<Rows<EffectLogEntry>> IntentLogOf(std::string_view key,  // by seq
                                                   int64_t rows_max = kReadRowsMaxDefault) = 0;
  // The compensations of `consumer` and `subject` (empty: any) with a seq above `after_seq`,
  // by seq.
  virtual Result<Rows<CompensationRecord>> ListCompensations(
      std::string_view consumer, std::string_view subject, int64_t after_seq = 0,
      int64_t rows_max = kReadRowsMaxDefault) = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  virtual Result<std::unique_ptr<Transaction>> Begin() = 0;
  virtual Result<std::unique_ptr<Snapshot>> Read() = 0;
  // True when reading a batch's rows at once (Transaction::Load) saves round trips to a server:
  // the consume loop then loads each batch before deciding it. An embedded store answers row by
  // row as fast, and a Load would only read everything twice.
  virtual bool BatchLoadPays() const { return false; }
  // True when several relays (relay.h) may run on this store at once: each takes its rows with
  // Transaction::ClaimOutbox and publishes them inside that transaction. False: one relay per
  // store, reading pending rows from snapshots so that its publishing holds no write lock.
  virtual bool RelaysShare() const { return false; }
  // Waits until an outbox row may have been committed since the last call (true), or until
  // `timeout_ms` passed (false), for an idle relay. Default: sleeps `timeout_ms` and says false
  // (the relay then looks again); a store that can be told of commits returns at once.
  virtual Result<bool> WaitForOutbox(int64_t timeout_ms);
};

// Options every backend understands; a backend's own header adds its own.
struct StoreOptions {
  // How long to wait for a lock held by another process or connection, in milliseconds. A
  // writer that finds the store locked past this is refused (kUnavailable, naming the holder
  // when the backend can).
  int64_t busy_timeout_ms = 5000;
  // A write transaction left open without a word to the store for this long is ended by the
  // store, so that a stalled process (stopped, cut off) cannot hold the locks of its writes
  // while another takes its work over; 0: never. PostgreSQL only (a consumer group sets it to
  // its lease); an embedded store ends with its process.
  int64_t idle_transaction_timeout_ms = 0;
  // Open an existing store for reading only: never create it, never change it. A missing
  // store, or one that is not an evident store, is refused (kNotFound, kFailedPrecondition).
  bool read_only = false;
  // Create the store when it is absent. false: a missing store is refused (kNotFound), for a
  // program that only works on a store others made (a relay: a mistyped path must not become
  // an empty store it then watches forever).
  bool create = true;
  // How deciders of one consumer in several processes keep apart (PostgreSQL; an embedded
  // store has one writer at a time). kExclusive: a write transaction takes its consumers' lock
  // before it reads their ledger, projections or deferred events, and holds it to its end, so
  // two processes deciding for one consumer take turns batch by batch and never decide a subject
  // from rows the other is changing. kShared: the caller keeps them apart itself (a consumer
  // group's leases give each subject to one member); its transactions run side by side, and
  // wait only for an exclusive holder (a replay, a consume outside the group).
  enum class Deciders : uint8_t { kExclusive, kShared };
  Deciders deciders = Deciders::kExclusive;
  // SQLite's PRAGMA synchronous ("FULL", "NORMAL", "OFF"; empty: FULL). A server store keeps its
  // own durability settings and does not read it.
  std::string synchronous;
};

// Opens a store from a URI, dispatching on its scheme through the registry (registry.h):
// "sqlite:PATH" (store_sqlite.h), "memory:NAME" (store_memory.h; one process-wide store per
// name), "postgresql://..." (store_postgres.h). kInvalidArgument for a URI of no known scheme.
Result<std::unique_ptr<Store>> OpenStore(std::string_view uri, const StoreOptions& options = {});

// What MigrateStore did: the layout the store had (nullopt when the backend does not say, or 0
// for a store it created) and the layout it has now.
struct StoreMigration {
  std::optional<int64_t> layout_before;
  int64_t layout = 0;
};
// Brings the store at `uri` to the layout this build writes, creating it when absent; refuses a
// store of a newer layout (kFailedPrecondition). A SQLite store migrates whenever it is opened
// for writing; a PostgreSQL store, shared by processes that may run an older build, only here.
Result<StoreMigration> MigrateStore(std::string_view uri);

}  // namespace evident
