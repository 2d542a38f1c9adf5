// evident/evidence.h — reading decisions back: the evidence packet of a subject, the open gaps,
// and guards ("may this action be done to this subject now?"). Each reads one Snapshot, so
// every part of an answer comes from the same committed state. The CLI and the daemon only
// format what these return.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/config.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

// The version a subject's ordered projection waits for next: one past the projection's version
// (1 when there is no projection yet). A gap's missing versions start here; the version stored
// with a deferred event is the one expected when it was deferred, which later applies may
// have passed, so readers use this instead.
inline int64_t ExpectedVersion(const std::optional<Projection>& projection) {
  return (projection ? projection->version : 0) + 1;
}

// The "in sync" rule, the one place it is written: a projection is in sync with its owner when
// it has applied the highest owner version seen (deferred events included) and nothing waits.
bool InSync(const Projection& projection, size_t deferred_count);

// A quarantined input and what operators did to it.
struct QuarantinedInput {
  QuarantineRecord record;
  std::vector<QuarantineAudit> audit;  // by time
};

// The log of one effect intent (attempts and resolutions, by time).
struct EffectWithLog {
  std::vector<EffectLogEntry> log;
};

// A same-version conflict's report to the owner (gaps.h, kConflictDetectedType): routed once a
// relay has published its outbox row, recorded but not yet routed before.
struct ConflictRouting {
  int64_t quarantine_id = 0;  // the conflicting input's record
  std::string report_id;
  bool recorded = false;              // the report's outbox row is there
  std::optional<int64_t> sent_at_ms;  // when a relay marked it sent: routed
  std::string text() const;           // "routed at T", "recorded, not yet routed", ...
};

// Everything the store knows about one consumer's view of one subject.
struct ConsumerEvidence {
  std::string consumer;
  std::optional<Projection> projection;
  std::vector<LedgerEntry> ledger;  // applied and deferred receipts
  std::vector<DeferredEvent> deferred;
  std::vector<JournalEntry> journal;
  std::vector<QuarantinedInput> quarantined;
  std::vector<EvidenceRecord> evidence;
  // The subject's gaps, open and closed: opened, what the route did at the deadline, how and why
  // each closed, the owner's answer to a replay request.
  std::vector<GapRecord> gap_records;
  std::vector<ConflictRouting> conflict_reports;  // one per conflicting input kept
  std::vector<ProjectionCorrection> corrections;  // by seq
  std::vector<EffectIntent> effects;              // by seq
  std::vector<EffectWithLog> effect_logs;         // one per effect, in the same order
  std::vector<CompensationRecord> compensations;  // by seq

  bool in_sync() const { return projection && InSync(*projection, deferred.size()); }
  int64_t duplicate_count() const;
  bool empty() const;  // the store knows nothing of the subject for this consumer
};

struct EvidencePacket {
  std::string subject;
  std::vector<ConsumerEvidence> consumers;   // by consumer id
  std::vector<QuarantinedInput> unassigned;  // quarantined before any consumer was chosen
  // Some list was cut at rows_max: the packet is a prefix of what the store holds.
  bool truncated = false;
  // The store's latest retention run (retention.h): journal entries, closed quarantine records
  // and gap records, settled effects' logs and sent outbox rows settled before its horizon are
  // gone from these lists (into its archive, when it had one); the ledger, projections, intents
  // and everything open stay.
  std::optional<RetentionRun> retention;

  bool known() const;  // the store knows something of the subject
};

// The packet of `subject`: every consumer that has a projection of it or kept one of its
// events, or only `consumer` when given (then no unassigned inputs). Each list holds at most
// `rows_max` rows.
Result<EvidencePacket> ReadEvidence(Snapshot& snapshot, std::string_view subject,
                                    std::string_view consumer = {},
                                    int64_t rows_max = kReadRowsMaxDefault);

// One open gap per (consumer, subject): the version expected now, every waiting version, the
// earliest deadline and the oldest wait.
struct Gap {
  std::string consumer, subject;
  GapRoute route = GapRoute::kWait;
  int64_t expected_version = 0;
  int64_t deadline_at_ms = 0, oldest_received_at_ms = 0;
  std::vector<int64_t> waiting_versions;
  std::optional<GapRecord> record;  // what its route did once the deadline passed (gaps.h)
};
struct Gaps {
  std::vector<Gap> gaps;   // by deadline (overdue first), then consumer and subject
  bool truncated = false;  // more than rows_max deferred events: the gaps of the first ones
};
Result<Gaps> ReadGaps(Snapshot& snapshot, int64_t rows_max = kReadRowsMaxDefault);

// The packet as `evident evidence --format json` prints it: one object, no newline.
void AppendEvidenceJson(const EvidencePacket& packet, int64_t now_ms, std::string& out);
// One gap as `evident gaps --format json` lists it, measured at `now_ms`.
void AppendGapJson(const Gap& gap, int64_t now_ms, std::string& out);
// One gap record as the packet shows it (its "records" entries): one object, no newline.
void AppendGapRecordJson(const GapRecord& record, std::string& out);
// One applied receipt as the packet shows it (its "applied" entries), its consumer and subject
// first: one object, no newline.
void AppendReceiptJson(const LedgerEntry& receipt, std::string& out);

// The answer of a guard: "may `action` be done to `subject` now?"
struct GuardDecision {
  bool allowed = false;
  std::vector<std::string> reasons;  // every reason for a refusal; empty when allowed
};

// Evaluates the guard named `action` of `consumer` against one snapshot. Allowed only when the
// projection exists, is in sync with the owner (when the guard asks), its state is allowed, and
// every required evidence is recorded. Fails (kNotFound) for an unknown action.
Result<GuardDecision> EvaluateGuard(Snapshot& snapshot, const ConsumerConfig& consumer,
                                    std::string_view subject, std::string_view action);

}  // namespace evident
