// The names of the closed vocabularies in evident/outcome.h.
#include "evident/outcome.h"

#include <array>
#include <cstddef>

namespace evident {
namespace {

constexpr std::array<std::string_view, kOutcomeCount> kOutcomeNames = {
    "rejected", "contract-update-required", "payload-invalid", "duplicate",
    "stale",    "same-version-conflict",    "deferred",        "applied",
    "unrouted"};
constexpr std::array<std::string_view, 2> kLedgerStateNames = {"applied", "deferred"};
constexpr std::array<std::string_view, 3> kGapRouteNames = {"wait", "request-replay", "manual"};
constexpr std::array<std::string_view, 3> kQuarantineStatusNames = {"open", "replayed",
                                                                    "discarded"};
constexpr std::array<std::string_view, 2> kQuarantineActionNames = {"replay", "discard"};
constexpr std::array<std::string_view, 5> kGapStateNames = {"requested", "manual", "reported",
                                                            "closed", "open"};
constexpr std::array<std::string_view, 5> kGapClosedHowNames = {"", "drained", "resolved",
                                                                "corrected", "skipped"};
constexpr std::array<std::string_view, 3> kGapCauseNames = {"", "out-of-order", "missing"};

constexpr std::array<std::string_view, kEffectStateCount> kEffectStateNames = {
    "intended", "done", "failed", "unknown", "withdrawn"};
constexpr std::array<std::string_view, 6> kEffectActionNames = {"attempt",  "resolve",  "trigger",
                                                                "postpone", "withdraw", "hold"};
constexpr std::array<std::string_view, 2> kCompensationByNames = {"consumer", "owner"};
constexpr std::array<std::string_view, 8> kCompensationStateNames = {
    "recorded",          "compensating",          "performed",   "waits-for-reconciliation",
    "nothing-performed", "nothing-to-compensate", "compensated", "compensation-failed"};

template <typename Enum, size_t N>
std::optional<Enum> Parse(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace

std::string_view OutcomeName(Outcome outcome) {
  return kOutcomeNames[static_cast<size_t>(outcome)];
}
std::optional<Outcome> ParseOutcome(std::string_view name) {
  return Parse<Outcome>(kOutcomeNames, name);
}

std::string_view LedgerStateName(LedgerState state) {
  return kLedgerStateNames[static_cast<size_t>(state)];
}
std::optional<LedgerState> ParseLedgerState(std::string_view name) {
  return Parse<LedgerState>(kLedgerStateNames, name);
}

std::string_view GapRouteName(GapRoute route) { return kGapRouteNames[static_cast<size_t>(route)]; }
std::optional<GapRoute> ParseGapRoute(std::string_view name) {
  return Parse<GapRoute>(kGapRouteNames, name);
}

std::string_view QuarantineStatusName(QuarantineStatus status) {
  return kQuarantineStatusNames[static_cast<size_t>(status)];
}
std::optional<QuarantineStatus> ParseQuarantineStatus(std::string_view name) {
  return Parse<QuarantineStatus>(kQuarantineStatusNames, name);
}

std::string_view GapStateName(GapState state) { return kGapStateNames[static_cast<size_t>(state)]; }
std::optional<GapState> ParseGapState(std::string_view name) {
  return Parse<GapState>(kGapStateNames, name);
}

std::string_view QuarantineActionName(QuarantineAction action) {
  return kQuarantineActionNames[static_cast<size_t>(action)];
}
std::optional<QuarantineAction> ParseQuarantineAction(std::string_view name) {
  return Parse<QuarantineAction>(kQuarantineActionNames, name);
}

std::string_view EffectStateName(EffectState state) {
  return kEffectStateNames[static_cast<size_t>(state)];
}
std::optional<EffectState> ParseEffectState(std::string_view name) {
  return Parse<EffectState>(kEffectStateNames, name);
}

std::string_view EffectActionName(EffectAction action) {
  return kEffectActionNames[static_cast<size_t>(action)];
}
std::optional<EffectAction> ParseEffectAction(std::string_view name) {
  return Parse<EffectAction>(kEffectActionNames, name);
}

std::string_view GapClosedHowName(GapClosedHow how) {
  return kGapClosedHowNames[static_cast<size_t>(how)];
}
std::optional<GapClosedHow> ParseGapClosedHow(std::string_view name) {
  return Parse<GapClosedHow>(kGapClosedHowNames, name);
}

std::string_view GapCauseName(GapCause cause) { return kGapCauseNames[static_cast<size_t>(cause)]; }
std::optional<GapCause> ParseGapCause(std::string_view name) {
  return Parse<GapCause>(kGapCauseNames, name);
}

std::string_view CompensationByName(CompensationBy by) {
  return kCompensationByNames[static_cast<size_t>(by)];
}
std::optional<CompensationBy> ParseCompensationBy(std::string_view name) {
  return Parse<CompensationBy>(kCompensationByNames, name);
}

std::string_view CompensationStateName(CompensationState state) {
  return kCompensationStateNames[static_cast<size_t>(state)];
}
std::optional<CompensationState> ParseCompensationState(std::string_view name) {
  return Parse<CompensationState>(kCompensationStateNames, name);
}

}  // namespace evident
