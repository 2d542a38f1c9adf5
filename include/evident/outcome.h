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

// What a gap's record says: the deadline passed and the route acted (a replay was requested, a
// record opened for a person, or the gap only reported), or the gap closed.
enum class GapState : uint8_t { kRequested, kManual, kReported, kClosed };
std::string_view GapStateName(GapState state);  // "requested", "manual", "reported", "closed"
std::optional<GapState> ParseGapState(std::string_view name);

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
// reached the target), performed with evidence, refused for good by the target, or of unknown
// outcome (a timeout, a 5xx, a reset, a crash during the call: it may have happened).
enum class EffectState : uint8_t { kIntended, kDone, kFailed, kUnknown };
inline constexpr int kEffectStateCount = 4;
std::string_view EffectStateName(EffectState state);  // "intended", "done", "failed", "unknown"
std::optional<EffectState> ParseEffectState(std::string_view name);

// What an entry of an intent's log records: a runner's attempt at the target, or a person's
// resolution of the outcome.
enum class EffectAction : uint8_t { kAttempt, kResolve };
std::string_view EffectActionName(EffectAction action);  // "attempt", "resolve"
std::optional<EffectAction> ParseEffectAction(std::string_view name);

}  // namespace evident
