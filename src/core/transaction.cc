// The default forms of Transaction's and Store's optional calls (evident/store.h), for every
// backend that answers each insert at once and excludes other writers whole.
#include <chrono>
#include <thread>

#include "evident/store.h"

namespace evident {

Status Transaction::IntendOnce(const EffectIntent& intent) {
  EVIDENT_ASSIGN_OR_RETURN(const Insert inserted, InsertIntent(intent));
  if (inserted == Insert::kInserted) return Status::Ok();
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<EffectIntent> there, FindIntent(intent.key));
  if (there && (there->consumer != intent.consumer || there->effect != intent.effect)) {
    return Status::FailedPrecondition(
        "effect " + intent.effect + " of " + intent.consumer + " keys " + intent.key +
        ", which effect " + there->effect + " of " + there->consumer +
        " already holds: give the two effects key templates that cannot meet");
  }
  return Status::Ok();
}

Result<Rows<OutboxRow>> Transaction::ClaimOutbox(int64_t rows_max, int64_t /*partitions_max*/,
                                                 int64_t /*hold_ms*/, int64_t /*now_ms*/) {
  return PendingOutbox(0, rows_max);
}

Result<bool> Store::WaitForOutbox(int64_t timeout_ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  return false;
}

}  // namespace evident
