// evident/outcome.h — the small closed vocabularies that the pipeline decides and the store
// keeps: outcomes, ledger states, gap routes. Enums in memory; their names (stable, kebab-case)
// are what stores write and tools print. Parsing a name that is not in the vocabulary yields
// nullopt: a store that reads one reports corruption.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace evident {

// Every (event, consumer) decision ends in exactly one of these (DESIGN.md's order).
enum class Outcome : uint8_t {
  kRejected,
  kContractUpdateRequired,
  kPayloadInvalid,
  kDuplicate,
  kStale,
  kSameVersionConflict,
  kDeferred,
  kApplied,
  kUnrouted,
};
inline constexpr int kOutcomeCount = 9;
static_assert(static_cast<int>(Outcome::kUnrouted) + 1 == kOutcomeCount,
              "kOutcomeCount counts every Outcome");
std::string_view OutcomeName(Outcome outcome);  // "same-version-conflict", ...
std::optional<Outcome> ParseOutcome(std::string_view name);

// A ledger row's state: a receipt ("applied"), or an event waiting for a gap to close
// ("deferred"; it becomes applied when drained).
enum class LedgerState : uint8_t { kApplied, kDeferred };
std::string_view LedgerStateName(LedgerState state);  // "applied", "deferred"
std::optional<LedgerState> ParseLedgerState(std::string_view name);

// What happens to a gap that stays open past its deadline.
enum class GapRoute : uint8_t { kWait, kRequestReplay, kManual };
std::string_view GapRouteName(GapRoute route);  // "wait", "request-replay", "manual"
std::optional<GapRoute> ParseGapRoute(std::string_view name);

// What a gap's record says: the gap is open and its deadline has not passed; the deadline passed
// and the route acted (a replay was requested, a record opened for a person, or the gap only
// reported); or the gap closed.
enum class GapState : uint8_t { kRequested, kManual, kReported, kClosed, kOpen };
// "requested", "manual", "reported", "closed", "open"
std::string_view GapStateName(GapState state);
std::optional<GapState> ParseGapState(std::string_view name);

// How a gap closed: its missing versions arrived and the waiting ones were applied (drained), a
// person closed its record (resolved), a person corrected the projection past it (corrected),
// or its deferred events were set aside without the missing versions (skipped: a correction
// past every waiting version). kNone while it is open.
enum class GapClosedHow : uint8_t { kNone, kDrained, kResolved, kCorrected, kSkipped };
std::string_view GapClosedHowName(GapClosedHow how);  // "", "drained", "resolved", ...
std::optional<GapClosedHow> ParseGapClosedHow(std::string_view name);

// Why a gap was there, as far as the store can tell: the missing version arrived later than a
// later one (out-of-order), or the gap closed without it (missing). kUnknown while it is open.
enum class GapCause : uint8_t { kUnknown, kOutOfOrder, kMissing };
std::string_view GapCauseName(GapCause cause);  // "", "out-of-order", "missing"
std::optional<GapCause> ParseGapCause(std::string_view name);

// A quarantined input's status: waiting for a person or a replay, applied by a replay, or closed
// without being applied.
enum class QuarantineStatus : uint8_t { kOpen, kReplayed, kDiscarded };
std::string_view QuarantineStatusName(QuarantineStatus status);  // "open", "replayed", "discarded"
std::optional<QuarantineStatus> ParseQuarantineStatus(std::string_view name);

// What an operator did to a quarantined input.
enum class QuarantineAction : uint8_t { kReplay, kDiscard };
std::string_view QuarantineActionName(QuarantineAction action);  // "replay", "discard"
std::optional<QuarantineAction> ParseQuarantineAction(std::string_view name);

// An external effect's intent (effects.h): not attempted yet (or its request certainly never
// reached the target), performed with evidence, refused for good by the target, of unknown
// outcome (a timeout, a 5xx, a reset, a crash during the call: it may have happened), or
// withdrawn before any attempt because its basis no longer held (the subject's state no longer
// permits it, a later event withdrew it, or a compensation found it not yet performed): never
// sent.
enum class EffectState : uint8_t { kIntended, kDone, kFailed, kUnknown, kWithdrawn };
inline constexpr int kEffectStateCount = 5;
// "intended", "done", "failed", "unknown", "withdrawn"
std::string_view EffectStateName(EffectState state);
std::optional<EffectState> ParseEffectState(std::string_view name);
// Done, failed and withdrawn intents are settled: no runner takes them again.
inline bool Settled(EffectState state) {
  return state == EffectState::kDone || state == EffectState::kFailed ||
         state == EffectState::kWithdrawn;
}

// What an entry of an intent's log records: a runner's attempt at the target; a person's
// resolution of the outcome; the business operation triggered again by another event (a no-op:
// its key is intended already); an attempt postponed while the subject's projection is behind its
// owner; the intent withdrawn before an attempt; an unknown intent held for a person because its
// basis changed (it may have been performed, so it is not retried).
enum class EffectAction : uint8_t { kAttempt, kResolve, kTrigger, kPostpone, kWithdraw, kHold };
// "attempt", "resolve", "trigger", "postpone", "withdraw", "hold"
std::string_view EffectActionName(EffectAction action);
std::optional<EffectAction> ParseEffectAction(std::string_view name);

// Who recorded a compensation: the owner in its own transaction with its decision (seed 002's
// order service), or a consumer when it applied the owner's deciding event.
enum class CompensationBy : uint8_t { kConsumer, kOwner };
std::string_view CompensationByName(CompensationBy by);  // "consumer", "owner"
std::optional<CompensationBy> ParseCompensationBy(std::string_view name);

// What a compensation did about the effect it compensates (config.h, `compensates`): nothing to
// act on (none declared: kRecorded); the compensated effect was done and the compensating effect
// is intended (kCompensating), then done (kCompensated) or not (kCompensationFailed: it failed,
// or was withdrawn: a person takes it from there), or the compensated effect was done without a
// compensating effect declared (kPerformed: a person compensates); its outcome is unknown
// (kWaitsForReconciliation, until a runner or a person records it); it was never performed
// (kNothingPerformed: withdrawn, failed, or pending and now withdrawn); the subject has no
// intent of that effect (kNothingToCompensate).
enum class CompensationState : uint8_t {
  kRecorded,
  kCompensating,
  kPerformed,
  kWaitsForReconciliation,
  kNothingPerformed,
  kNothingToCompensate,
  kCompensated,
  kCompensationFailed,
};
// "recorded", "compensating", "performed", "waits-for-reconciliation", "nothing-performed",
// "nothing-to-compensate", "compensated", "compensation-failed"
std::string_view CompensationStateName(CompensationState state);
std::optional<CompensationState> ParseCompensationState(std::string_view name);

}  // namespace evident
