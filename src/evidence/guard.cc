#include <algorithm>

#include "core/join.h"
#include "evident/evidence.h"

namespace evident {
namespace {

// An effect's evidence counts only when its latest intent for the subject is done: a later
// version that intends the effect again (a new order version to reserve) is not covered by the
// earlier one's result.
Status PendingEffect(Snapshot& store, const std::string& consumer, std::string_view subject,
                     const std::string& effect, GuardDecision& decision) {
  EffectFilter filter;
  filter.consumer = consumer;
  filter.effect = effect;
  filter.subject = std::string(subject);
  // The latest is the last by seq: pages are read to the end (a subject has few intents of one
  // effect; the bound of each page keeps memory flat however many).
  std::optional<EffectIntent> last;
  for (int64_t after = 0;;) {
    EVIDENT_ASSIGN_OR_RETURN(Rows<EffectIntent> page, store.ListIntents(filter, after, 256));
    if (!page.rows.empty()) {
      after = page.rows.back().seq;
      last = std::move(page.rows.back());
    }
    if (!page.truncated) break;
  }
  if (!last) return Status::Ok();
  const EffectIntent& latest = *last;
  if (latest.state == EffectState::kDone) return Status::Ok();
  decision.reasons.push_back("effect '" + effect + "' is " +
                             std::string(EffectStateName(latest.state)) + " for " + latest.key +
                             " (the latest intent), not done");
  return Status::Ok();
}

}  // namespace

Result<GuardDecision> EvaluateGuard(Snapshot& store, const ConsumerConfig& consumer,
                                    std::string_view subject, std::string_view action) {
  const auto guard_it = consumer.guards.find(std::string(action));
  if (guard_it == consumer.guards.end()) {
    const std::string known = JoinEach(
        consumer.guards, [](const auto& entry) -> const std::string& { return entry.first; });
    return Status::NotFound("consumer '" + consumer.contract.id + "' has no guard '" +
                            std::string(action) + "' (guards: " + (known.empty() ? "none" : known) +
                            ")");
  }
  const Guard& guard = guard_it->second;
  const std::string& id = consumer.contract.id;
  GuardDecision decision;
  EVIDENT_ASSIGN_OR_RETURN(std::optional<Projection> projection, store.FindProjection(id, subject));
  if (!projection || projection->version == 0) {
    decision.reasons.push_back("no projection of " + std::string(subject) + " in " + id +
                               ": nothing from its owner has been applied");
    return decision;
  }
  if (guard.in_sync) {
    EVIDENT_ASSIGN_OR_RETURN(const Rows<DeferredEvent> deferred, store.DeferredOf(id, subject));
    // InSync's two parts, each with its own reason.
    if (projection->version != projection->owner_version_seen) {
      decision.reasons.push_back(
          "not in sync: projection version " + std::to_string(projection->version) +
          " is behind the owner version seen " + std::to_string(projection->owner_version_seen));
    }
    if (!deferred.rows.empty()) {
      decision.reasons.push_back(
          "gap open: version " + std::to_string(ExpectedVersion(projection)) + " expected, " +
          std::to_string(deferred.rows.size()) + (deferred.truncated ? " or more" : "") +
          " event(s) deferred, route " + std::string(GapRouteName(deferred.rows.front().route)));
    }
  }
  if (!guard.states.empty() && std::find(guard.states.begin(), guard.states.end(),
                                         projection->state) == guard.states.end()) {
    const std::string allowed = Join(guard.states);
    decision.reasons.push_back("state '" + projection->state + "' (version " +
                               std::to_string(projection->version) + ") is not one of: " + allowed);
  }
  if (!guard.evidence.empty()) {
    // Evidence names are few (the contract lists them); a bound far above any contract's.
    EVIDENT_ASSIGN_OR_RETURN(const Rows<EvidenceRecord> evidence, store.EvidenceOf(id, subject));
    const std::vector<EvidenceRecord>& recorded = evidence.rows;
    for (const std::string& name : guard.evidence) {
      const bool present = std::any_of(recorded.begin(), recorded.end(),
                                       [&](const EvidenceRecord& r) { return r.name == name; });
      if (!present) {
        decision.reasons.push_back("evidence '" + name + "' is not recorded");
      } else if (consumer.FindEffect(name) != nullptr) {
        EVIDENT_RETURN_IF_ERROR(PendingEffect(store, id, subject, name, decision));
      }
    }
  }
  decision.allowed = decision.reasons.empty();
  return decision;
}

}  // namespace evident
