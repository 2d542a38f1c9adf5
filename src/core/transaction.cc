// The default forms of the store contract's optional calls (evident/store*.h), for every
// backend that answers each insert at once and excludes other writers whole.
#include <chrono>
#include <thread>

#include "evident/store.h"

namespace evident {

Status EffectWrites::IntendOnce(const EffectIntent& intent, std::string_view trigger_detail) {
  EVIDENT_ASSIGN_OR_RETURN(const Insert inserted, InsertIntent(intent));
  if (inserted == Insert::kInserted) return Status::Ok();
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<EffectIntent> there, FindIntent(intent.key));
  if (!there) return Status::Internal("effect intent " + intent.key + " was there, then not");
  if (there->consumer != intent.consumer || there->effect != intent.effect) {
    return Status::FailedPrecondition(
        "effect " + intent.effect + " of " + intent.consumer + " keys " + intent.key +
        ", which effect " + there->effect + " of " + there->consumer +
        " already holds: give the two effects key templates that cannot meet");
  }
  if (there->retained) return Status::Ok();  // only the key's digest is left: nothing to log on
  return LogIntent({.key = intent.key,
                    .action = EffectAction::kTrigger,
                    .by = intent.consumer,
                    .state_after = there->state,
                    .detail = std::string(trigger_detail),
                    .at_ms = intent.intended_at_ms});
}

Result<Rows<OutboxRow>> OutboxWrites::ClaimOutbox(int64_t rows_max, int64_t /*partitions_max*/,
                                                  int64_t /*hold_ms*/, int64_t /*now_ms*/) {
  return PendingOutbox(0, rows_max);
}

namespace {

Status NoGroups() {
  return Status::FailedPrecondition(
      "consumer groups need a store that keeps them (postgresql://... or sqlite:PATH)");
}

}  // namespace

Result<std::vector<GroupMember>> GroupWrites::JoinGroup(std::string_view, std::string_view, int64_t,
                                                        int64_t, int64_t) {
  return NoGroups();
}
Status GroupWrites::LeaveGroup(std::string_view, std::string_view) { return NoGroups(); }
Result<std::optional<GroupLease>> GroupWrites::AcquireLease(std::string_view, int64_t,
                                                            std::string_view, int64_t, int64_t) {
  return NoGroups();
}
Result<bool> GroupWrites::RenewLease(std::string_view, int64_t, std::string_view, int64_t,
                                     int64_t) {
  return NoGroups();
}
Status GroupWrites::ReleaseLease(std::string_view, int64_t, std::string_view, int64_t) {
  return NoGroups();
}
Status GroupWrites::FenceLease(std::string_view, int64_t, std::string_view, int64_t,
                               std::optional<int64_t>, std::optional<int64_t>, int64_t) {
  return NoGroups();
}
Result<GroupLease> GroupWrites::SeizeLease(std::string_view, int64_t, std::string_view, int64_t) {
  return NoGroups();
}
Result<std::vector<GroupLease>> GroupReads::GroupLeases(std::string_view) { return NoGroups(); }
Result<std::vector<GroupMember>> GroupReads::GroupMembers(std::string_view) { return NoGroups(); }
Result<int64_t> GroupReads::GroupPartitionCount(std::string_view) { return NoGroups(); }

Result<bool> Store::WaitForOutbox(int64_t timeout_ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  return false;
}

}  // namespace evident
