// evident/store_effects.h — the store's effects: intents, their logs, and compensations
// (effects.h). Part of the Store contract (store.h).
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
  // An intent retention removed and kept only as the digest of its key (store_retention.h,
  // kIntent): found by its key, with its effect, consumer, settled state and the second it
  // settled in (settled_at_ms, a whole second); every other field is empty.
  bool retained = false;
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

// Compensations returned by Transaction::CompensationsOfIntent: one intent is covered by a few
// owner decisions at most.
inline constexpr int64_t kCoveringRowsMax = 64;

// Effect and compensation writes (store.h, Transaction): intents join the batch that applied
// their event; a runner's answers commit in transactions of its own.
class EffectWrites {
 public:
  virtual ~EffectWrites() = default;

  // Effect intents (EffectIntent). A key already there, or kept as a digest by retention:
  // kAlreadyThere, nothing written. FindIntent answers a `retained` intent for such a key.
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

  // The write path's forms of the two inserts above, for a store that may send them without
  // waiting for an answer (a networked store overrides them; the rest of the transaction learns
  // of a failure at the latest from its commit). IntendOnce inserts the intent unless its key
  // is there; a key another consumer's or effect's intent holds fails with kFailedPrecondition
  // (two effects whose key templates meet: a configuration that would lose an effect). A key
  // the same consumer's same effect holds already is the business operation triggered again: a
  // no-op, logged on that intent (EffectAction::kTrigger, state unchanged) with `trigger_detail`
  // (nothing is logged when retention kept only the key's digest).
  virtual Status IntendOnce(const EffectIntent& intent, std::string_view trigger_detail);

  // Inserts the record unless its key is there.
  virtual Status RecordCompensation(const CompensationRecord& record) {
    return InsertCompensation(record).status();
  }
};

// Effects and compensations as one snapshot sees them (store.h, Snapshot).
class EffectReads {
 public:
  virtual ~EffectReads() = default;

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

}  // namespace evident
