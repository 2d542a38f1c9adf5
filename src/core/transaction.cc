// The write path's default forms of Transaction's inserts (evident/store.h), for every backend
// that answers each insert at once.
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

}  // namespace evident
