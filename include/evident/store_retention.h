// evident/store_retention.h — the store contract's retention concern: settled records older
// than a horizon, read for the archive and then removed (retention.h runs it).
//
// What is settled, per kind (every backend applies exactly these rules; the conformance suite
// holds them to it):
//   kJournal     a journal entry written before the horizon.
//   kQuarantine  a record replayed or discarded whose last delivery and every audit entry came
//                before it, with its audit entries. An open record is never removed.
//   kGap         a gap record closed before it while no event of its consumer and subject
//                waits (a record a person closed with events still deferred stays: it keeps
//                the deadline from being acted on again). An open gap (requested, manual,
//                reported, open) is never removed.
//   kEffectLog   the log entries of an intent settled (done, failed, withdrawn) before it. An
//                intended or unknown intent's log is never removed.
//   kIntent      an intent settled before it whose log went, that a later intent of the same
//                consumer, subject and effect follows (the latest of each stays whole: guards
//                and compensations decide on it) and that no compensation names (covers or
//                compensating_key). The intent goes; the digest of its key (IntentKeyDigest)
//                stays, with its effect, consumer, state and the second it settled in, so that
//                InsertIntent still answers kAlreadyThere and IntendOnce a no-op for that key
//                (or kFailedPrecondition for another consumer's or effect's): a retained key is
//                never intended a second time. Effect key digests are never dropped.
//   kOutbox      an outbox row sent before it. A pending or parked row is never removed.
//   kLedger      an applied receipt committed before it, unless an effect intent of its consumer
//                and subject is intended or unknown (a later event's receipt may be what
//                withdraws it). The receipt goes; the digest of its key (LedgerKeyDigest: 128
//                bits of SHA-256 over consumer, source and event id) stays, with the second it
//                was committed in, so that InsertLedger still answers kAlreadyThere and
//                FindLedger a `retained` entry for that key: a redelivery is still a duplicate.
//                A deferred receipt is never compacted. Digests go only through
//                ForgetLedgerDigests (`--forget-ledger-after`).
// Projections, deferred events and compensations are never removed here, nor the newest journal
// entry, quarantine record and effect log entry (a store that numbers them by the
// largest plus one then never gives a removed one's seq or id again).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/retained_kind.h"
#include "evident/status.h"
#include "evident/store_decisions.h"
#include "evident/store_effects.h"
#include "evident/store_outbox.h"
#include "evident/store_quarantine.h"

namespace evident {

// One retention run, as the store keeps it for evidence: what it removed, up to which horizon,
// and where it archived it (empty: nowhere).
struct RetentionRun {
  int64_t seq = 0;  // assigned by the store
  int64_t at_ms = 0;
  int64_t horizon_ms = 0;  // records settled before it were removed
  std::string archive;
  int64_t removed = 0;
  // > 0: the run dropped ledger digests of receipts committed before it (ForgetLedgerDigests).
  // LatestRetention answers the latest such horizon of any run, so that the evidence says it
  // whatever ran since.
  int64_t forgot_before_ms = 0;
};

// Records of one kind, read for removal: only the vectors of that kind are filled (a
// quarantine record's audit entries come with it).
struct RetainedRows {
  RetainedKind kind = RetainedKind::kJournal;
  std::vector<JournalEntry> journal;         // by seq
  std::vector<QuarantineRecord> quarantine;  // by id
  std::vector<QuarantineAudit> audit;        // of those records, by seq
  std::vector<GapRecord> gaps;               // by close time, consumer, subject, version
  std::vector<EffectLogEntry> effect_log;    // by seq
  std::vector<EffectIntent> intents;         // by seq
  std::vector<OutboxRow> outbox;             // by send time, seq
  std::vector<LedgerEntry> ledger;           // by key (consumer, source, event id)
  // Where the next look goes on (see RetentionReads), and whether nothing is left to look at.
  int64_t next = 0;
  LedgerKey next_key;  // kLedger: the last key looked at
  bool end = false;
  // The records of the kind (audit entries are part of their record).
  size_t size() const {
    return journal.size() + quarantine.size() + gaps.size() + effect_log.size() + intents.size() +
           outbox.size() + ledger.size();
  }
};

// What one ForgetLedgerDigests call did: digests dropped, the last looked at (raw bytes), and
// whether none is left past it.
struct ForgottenDigests {
  int64_t forgotten = 0;
  std::string next;
  bool end = false;
};

// Candidates are looked at in the kind's order: journal entries by seq, quarantine records by
// id, effect log entries by seq (each a candidate whatever its intent's state), intents by seq
// (each a candidate whatever its state), closed gaps
// closed before the horizon by close time, sent outbox rows sent before it by send time. A
// look reads a bounded number of rows, whatever the store holds.
class RetentionReads {
 public:
  virtual ~RetentionReads() = default;
  // Looks at up to `rows_max` (> 0) candidates of `kind` past `after` (a seq or an id; gaps and
  // outbox rows, every one of which is retainable, ignore it: what is removed is not looked at
  // again) and returns the retainable ones; `next` is the last candidate's seq or id, `end` set
  // when no candidate is left past them (a store may say so only once a look finds fewer than
  // `rows_max`).
  virtual Result<RetainedRows> Retainable(RetainedKind kind, int64_t before_ms, int64_t after,
                                          int64_t rows_max) = 0;
  // kLedger's look: up to `rows_max` receipts past `after` in key order (an empty consumer: from
  // the first), the retainable ones returned, `next_key` the last looked at. Retainable(kLedger)
  // looks from the first key.
  virtual Result<RetainedRows> RetainableLedger(int64_t before_ms, const LedgerKey& after,
                                                int64_t rows_max) = 0;
  // How many retainable records of `kind` there are (a whole scan, for a dry run).
  virtual Result<int64_t> CountRetainable(RetainedKind kind, int64_t before_ms) = 0;
  // How many ledger key digests were committed before `before_ms` (a whole scan, for a dry run
  // of ForgetLedgerDigests; 0 on a store of a layout without them).
  virtual Result<int64_t> CountLedgerDigests(int64_t before_ms) = 0;
  // The latest run that removed anything (nullopt: none ever did).
  virtual Result<std::optional<RetentionRun>> LatestRetention() = 0;
};

class RetentionWrites {
 public:
  virtual ~RetentionWrites() = default;
  // Removes the records of `rows` (read by Retainable) that are still settled and older than
  // `before_ms` (one changed since it was read stays), and returns how many records went.
  virtual Result<int64_t> RemoveRetained(const RetainedRows& rows, int64_t before_ms) = 0;
  // Keeps `run` (its seq assigned), or updates the run of the same start time (at_ms): a run
  // records itself in each of its removals' transactions.
  virtual Status RecordRetention(const RetentionRun& run) = 0;
  // Drops the ledger key digests committed before `before_ms` among up to `rows_max` looked at
  // past `after` (raw digest bytes; empty: from the first) in digest order. A redelivery of a
  // forgotten key is decided afresh.
  virtual Result<ForgottenDigests> ForgetLedgerDigests(int64_t before_ms, std::string_view after,
                                                       int64_t rows_max) = 0;
};

}  // namespace evident
