// evident/outbox.h — the transactional outbox: an event is appended in the same local
// transaction as the state change it announces, so both commit or neither does; a relay later
// publishes the unchanged bytes and marks the row sent on the broker's acknowledgement.
//
// The rows live in the store (Transaction::AppendOutbox and the calls beside it, store.h). An
// Outbox checks each event before it is appended: the envelope checks of `evident validate`,
// then the payload against its schema in the contracts directory.
//
// Invariants: the bytes of a row never change. One row per (source, id): appending the same
// (source, id) again with the same bytes is a duplicate and writes nothing (an idempotent
// producer); with other bytes it is a conflict and writes nothing. Seqs are assigned by the
// store, increase with every append and are never reused.
//
// Partitions: an event's partition is FNV-1a 64 of its subject's bytes modulo the partition
// count (an event without a subject hashes the empty string). One subject therefore always
// lands in one partition, which keeps a subject's events in order for the relay.
//
// Thread-safety: an Outbox is used by one thread at a time (it owns a parser); a process with
// several producing threads creates one Outbox per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "evident/profile.h"
#include "evident/status.h"

namespace evident {

class Transaction;

// One event waiting to be published, or published.
struct OutboxRow {
  int64_t seq = 0;  // assigned by the store
  std::string source, event_id, type;
  std::string subject;  // empty when the event names none
  std::optional<int64_t> subject_version;
  int64_t partition = 0;
  std::string bytes;  // the event exactly as appended; never changed
  int64_t created_at_ms = 0;
  int64_t attempts = 0;    // publish attempts recorded
  std::string last_error;  // of the last failed attempt; empty when none
  std::optional<int64_t> last_attempt_at_ms;
  std::optional<int64_t> sent_at_ms;       // set once the broker acknowledged it
  std::string stream;                      // the broker's acknowledgement: stream name ..
  std::optional<int64_t> stream_sequence;  // .. and sequence in it
  // Set aside by an operator (Transaction::ParkOutbox): not pending, not sent, kept whole.
  std::optional<int64_t> parked_at_ms;
  std::string parked_reason;  // the operator's words; empty when not parked
};

// What an append found.
enum class OutboxOutcome : uint8_t {
  kAppended,   // a new row
  kDuplicate,  // (source, id) holds the same bytes already: nothing written
  kConflict,   // (source, id) holds other bytes: nothing written
};
struct OutboxAppend {
  OutboxOutcome outcome = OutboxOutcome::kAppended;
  int64_t seq = 0;  // of the new row, or of the row already there
};

struct OutboxStats {
  int64_t pending = 0;  // neither sent nor parked
  int64_t sent = 0;
  int64_t parked = 0;
  std::optional<int64_t> oldest_pending_age_ms;  // nullopt when nothing is pending
  int64_t attempts_max = 0;                      // over pending rows; 0 when none
};

// What Outbox::Append decided.
enum class OutboxDecisionOutcome : uint8_t {
  kAppended,
  kDuplicate,
  // The envelope failed a check (reason: its code in envelope.h, e.g. "missing-id"), or the
  // contracts directory has no schema for its type ("unknown-type") or its schema version
  // ("unaccepted-schema-version").
  kRejected,
  kPayloadInvalid,  // the payload fails its schema ("schema-violation", "binary-payload", ..)
  kConflict,        // (source, id) already holds other bytes ("id-conflict")
};
std::string_view OutboxDecisionName(OutboxDecisionOutcome outcome);  // "appended", ...

// One outbox row as `evident outbox list --format json` prints it: one object, then a newline.
void AppendOutboxRowJson(const OutboxRow& row, std::string& out);

struct OutboxDecision {
  OutboxDecisionOutcome outcome = OutboxDecisionOutcome::kAppended;
  std::optional<int64_t> seq;  // appended, duplicate, conflict: the row's seq
  std::string reason;          // stable code; empty when appended
  std::string message;         // for a person
};

struct OutboxOptions {
  // Where payload schemas live: <dir>/<type>/v<N>.schema.json (docs/contracts.md).
  std::string contracts_dir;
  // Or, when not empty, the directory's files themselves (path in it -> text), as a set of
  // contracts kept in the store holds them (stored_contracts.h): nothing is read from disk, and
  // a schema's $ref reaches the set's other files only.
  std::map<std::string, std::string> contracts_files;
  // How events are laid out. Default: CloudEvents structured mode.
  Profile profile = Profile::CloudEvents();
  // Partitions events are spread over by subject (see above); at least 1. Default: 1.
  int64_t partition_count = 1;
  // Largest event appended, in bytes. Default: 1 MiB (as `evident validate`).
  int64_t event_bytes_max = int64_t{1} << 20;
};

// The owner's side of seed 002: a compensation keyed by the owner's decision
// ("compensation:order-417:reservation:v2"), recorded in the same local transaction as the
// decision itself (the conditional update and the announcing outbox row), inserted once per key.
struct OwnerCompensation {
  std::string key;                       // names the decision: at most 1,024 bytes, no control
  std::string subject;                   // the object the decision is about
  std::string owner_source;              // the owner (the source of its events)
  std::optional<int64_t> owner_version;  // the version the decision compensates
  std::string decision;                  // the owner's words for it ("reservation-rejected")
};
inline constexpr size_t kCompensationKeyBytesMax = 1024;

// Records `compensation` in the caller's transaction (recorded_by owner): true when it was
// inserted, false when its key is there already (a retried decision inserts nothing twice).
// kInvalidArgument for an empty key, subject or owner, a key over kCompensationKeyBytesMax or
// holding a control character, or a text field that is not UTF-8.
Result<bool> RecordOwnerCompensation(Transaction& transaction,
                                     const OwnerCompensation& compensation, int64_t now_ms);

class Outbox {
 public:
  // Loads and compiles every payload schema of the contracts directory.
  static Result<std::unique_ptr<Outbox>> Create(const OutboxOptions& options);
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Checks `bytes` and appends them to the outbox inside `transaction` (the caller's own writes
  // in it commit with the row). A refused event writes nothing and is a decision, not an error;
  // an error is the store failing.
  Result<OutboxDecision> Append(Transaction& transaction, std::string_view bytes, int64_t now_ms);

  // The partition of a subject: FNV-1a 64 of its bytes modulo the partition count.
  int64_t PartitionOf(std::string_view subject) const;

 private:
  struct Impl;
  explicit Outbox(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace evident
