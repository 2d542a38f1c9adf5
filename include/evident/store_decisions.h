// evident/store_decisions.h — the store's decision core: ledger, projections, deferred events,
// gaps, journal, evidence, corrections and source positions. Part of the Store contract
// (store.h), which composes it with quarantine, outbox, effects and groups.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/outcome.h"
#include "evident/status.h"
#include "evident/store_rows.h"

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
  // The event's W3C Trace Context (the CloudEvents distributed-tracing extension), so that a
  // receipt and its evidence name the trace the event belongs to: `traceparent` as validated by
  // the envelope, `tracestate` as given (kTracestateBytesMax at most, printable ASCII); empty
  // when the event carried none.
  std::string traceparent, tracestate;
  // A receipt retention kept only as the digest of its key (store_retention.h, kLedger): found
  // by its key, applied, and nothing else known of it (every other field is empty).
  bool retained = false;
};
inline constexpr size_t kTracestateBytesMax = 512;
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

// The decision core's writes, in the batch's transaction (store.h, Transaction): the ledger with
// its receipts, projections, deferred events, gap records, the journal, evidence, corrections
// and the source's position commit together or not at all.
class DecisionWrites {
 public:
  virtual ~DecisionWrites() = default;

  // Names the consumers this transaction may decide for, before it reads any of their rows. A
  // store that several processes share takes their locks here, all at once and in one order,
  // so that two transactions never wait for each other in a circle (PostgreSQL: StoreOptions::
  // deciders; a consumer not named is still locked when its rows are first read). The others
  // need nothing.
  virtual Status WillDecide(const std::vector<std::string>& consumers) {
    (void)consumers;
    return Status::Ok();
  }
  // Before a decision reads `consumer`'s rows of one subject (`what`: the subject, or the
  // event's ledger key for an event without one). A store whose deciders run inside application
  // transactions (PostgreSQL's evident_decide: StoreOptions-less OpenStoreOver with
  // deciders_by_subject) locks that pair to the transaction's end, so that two transactions
  // deciding one subject take turns while other subjects go on; two deciding overlapping
  // subjects in different orders may deadlock, and one of them fails retryably. Everywhere else
  // the consumer's lock (WillDecide) covers it: nothing to do.
  virtual Status WillDecideSubject(std::string_view consumer, std::string_view what) {
    (void)consumer;
    (void)what;
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

  // A correction of a projection; correction.seq is assigned.
  virtual Status InsertCorrection(const ProjectionCorrection& correction) = 0;

  // Inserts the gap record unless its key is there (a gap opening, store.h's GapRecord).
  virtual Status RecordGap(const GapRecord& record) { return InsertGap(record).status(); }
};

// The decision core as one snapshot sees it (store.h, Snapshot). Lists are ordered as each says
// and cut at `rows_max` (>= 0).
class DecisionReads {
 public:
  virtual ~DecisionReads() = default;

  virtual Result<std::optional<Projection>> FindProjection(std::string_view consumer,
                                                           std::string_view subject) = 0;
  virtual Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer,
                                                        std::string_view source,
                                                        std::string_view event_id) = 0;

  // Lists, each ordered as documented and cut at `rows_max`.
  // Every projection of the subject, by consumer (whether or not a receipt of it is left).
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

  // The corrections of (consumer, subject), by seq.
  virtual Result<Rows<ProjectionCorrection>> CorrectionsOf(
      std::string_view consumer, std::string_view subject,
      int64_t rows_max = kReadRowsMaxDefault) = 0;
};

}  // namespace evident
