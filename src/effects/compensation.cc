// What a compensation does about the effect it compensates (effects/compensation.h).
#include "effects/compensation.h"

#include <cassert>

namespace evident {
namespace {

// The state a new compensation takes from the compensated intent, and its words for people.
void Decide(const std::optional<EffectIntent>& latest, CompensationRecord& record) {
  if (!latest) {
    record.state = CompensationState::kNothingToCompensate;
    record.detail = "no intent of " + record.compensates + " for " + record.subject;
    return;
  }
  record.covers = latest->key;
  const std::string& key = latest->key;
  switch (latest->state) {
    case EffectState::kDone:
      if (record.compensate_with.empty()) {
        record.state = CompensationState::kPerformed;
        record.detail =
            key + " was done; no compensating effect is declared: compensate it by hand";
      } else {
        record.state = CompensationState::kCompensating;
        record.detail = key + " was done: " + record.compensate_with + " intended as " +
                        record.compensating_key;
      }
      return;
    case EffectState::kUnknown:
      record.state = CompensationState::kWaitsForReconciliation;
      record.detail = "the outcome of " + key + " is unknown: waits for reconciliation (evident " +
                      "effects resolve " + key + ")";
      return;
    case EffectState::kIntended:
      record.state = CompensationState::kNothingPerformed;
      record.detail = key + " was never performed: withdrawn";
      return;
    case EffectState::kWithdrawn:
      record.state = CompensationState::kNothingPerformed;
      record.detail = key + " was withdrawn before any attempt: nothing performed";
      return;
    case EffectState::kFailed:
      record.state = CompensationState::kNothingPerformed;
      record.detail = key + " failed (the target refused it): nothing performed";
      return;
  }
}

Status IntendCompensating(EffectWrites& tx, const CompensationRecord& record, int64_t now_ms) {
  assert(!record.compensating_key.empty());
  return tx.IntendOnce(CompensatingIntent(record, now_ms),
                       "intended again by compensation " + record.key + ": no-op");
}

}  // namespace

Status WithdrawIntent(EffectWrites& tx, EffectIntent& intent, std::string_view by,
                      const std::string& why, int64_t now_ms) {
  assert(!Settled(intent.state));
  const int64_t revision = intent.revision;
  intent.state = EffectState::kWithdrawn;
  intent.next_attempt_at_ms = std::nullopt;
  intent.settled_at_ms = now_ms;
  intent.last_error = why;
  EVIDENT_RETURN_IF_ERROR(tx.UpdateIntent(intent, revision));
  intent.revision = revision + 1;
  EVIDENT_RETURN_IF_ERROR(tx.LogIntent({.key = intent.key,
                                        .action = EffectAction::kWithdraw,
                                        .by = std::string(by),
                                        .state_after = EffectState::kWithdrawn,
                                        .detail = why,
                                        .at_ms = now_ms}));
  return SettleCompensations(tx, intent, now_ms).status();
}

EffectIntent CompensatingIntent(const CompensationRecord& record, int64_t now_ms) {
  EffectIntent intent;
  intent.key = record.compensating_key;
  intent.effect = record.compensate_with;
  intent.consumer = record.consumer;
  intent.subject = record.subject;
  intent.source = record.owner_source;
  intent.event_id = record.event_id;
  intent.subject_version = record.owner_version;
  intent.request = record.compensating_request;
  intent.intended_at_ms = now_ms;
  intent.next_attempt_at_ms = now_ms;
  intent.basis_version = record.basis_version;
  return intent;
}

Result<bool> RecordConsumerCompensation(EffectWrites& tx, CompensationRecord record,
                                        int64_t now_ms) {
  assert(record.recorded_by == CompensationBy::kConsumer);
  std::optional<EffectIntent> latest;
  if (!record.compensates.empty()) {
    EVIDENT_ASSIGN_OR_RETURN(
        latest, tx.LatestIntentOf(record.consumer, record.subject, record.compensates));
    Decide(latest, record);
  }
  record.updated_at_ms = now_ms;
  EVIDENT_ASSIGN_OR_RETURN(const Insert inserted, tx.InsertCompensation(record));
  if (inserted == Insert::kAlreadyThere) return false;
  if (record.state == CompensationState::kCompensating) {
    EVIDENT_RETURN_IF_ERROR(IntendCompensating(tx, record, now_ms));
  }
  if (latest && latest->state == EffectState::kIntended) {
    EVIDENT_RETURN_IF_ERROR(WithdrawIntent(
        tx, *latest, record.consumer,
        "withdrawn by compensation " + record.key + " before any attempt: never performed",
        now_ms));
  }
  return true;
}

Result<std::optional<CompensationRecord>> CompensationCovering(EffectWrites& tx,
                                                               const EffectIntent& intent) {
  EVIDENT_ASSIGN_OR_RETURN(std::vector<CompensationRecord> records,
                           tx.CompensationsOfIntent(intent.key));
  for (CompensationRecord& record : records) {
    if (record.consumer == intent.consumer && record.covers == intent.key) {
      return std::optional<CompensationRecord>(std::move(record));
    }
  }
  return std::optional<CompensationRecord>();
}

namespace {

// The compensating effect `intent` of `record` settled: the compensation is over, one way or
// the other.
void SettleCompensating(const EffectIntent& intent, CompensationRecord& record) {
  if (intent.state == EffectState::kDone) {
    record.state = CompensationState::kCompensated;
    record.detail = intent.key + " was done: " + record.covers + " is compensated";
    return;
  }
  record.state = CompensationState::kCompensationFailed;
  record.detail = intent.key + " became " + std::string(EffectStateName(intent.state)) + ": " +
                  record.covers + " is not compensated; a person takes it from here";
}

}  // namespace

Result<int64_t> SettleCompensations(EffectWrites& tx, const EffectIntent& intent, int64_t now_ms) {
  if (!Settled(intent.state)) return int64_t{0};
  EVIDENT_ASSIGN_OR_RETURN(std::vector<CompensationRecord> covering,
                           tx.CompensationsOfIntent(intent.key));
  int64_t acted = 0;
  for (CompensationRecord& record : covering) {
    if (record.consumer != intent.consumer) continue;
    if (record.compensating_key == intent.key && record.state == CompensationState::kCompensating) {
      SettleCompensating(intent, record);
      record.updated_at_ms = now_ms;
      EVIDENT_RETURN_IF_ERROR(tx.UpdateCompensation(record));
      ++acted;
      continue;
    }
    if (record.covers != intent.key || record.state != CompensationState::kWaitsForReconciliation) {
      continue;
    }
    const bool done = intent.state == EffectState::kDone;
    if (done && !record.compensate_with.empty()) {
      record.state = CompensationState::kCompensating;
      record.detail = intent.key + " was reconciled as done: " + record.compensate_with +
                      " intended as " + record.compensating_key;
      EVIDENT_RETURN_IF_ERROR(IntendCompensating(tx, record, now_ms));
    } else if (done) {
      record.state = CompensationState::kPerformed;
      record.detail = intent.key +
                      " was reconciled as done; no compensating effect is declared: "
                      "compensate it by hand";
    } else {
      record.state = CompensationState::kNothingPerformed;
      record.detail = intent.key + " became " + std::string(EffectStateName(intent.state)) +
                      ": nothing performed";
    }
    record.updated_at_ms = now_ms;
    EVIDENT_RETURN_IF_ERROR(tx.UpdateCompensation(record));
    ++acted;
  }
  return acted;
}

}  // namespace evident
