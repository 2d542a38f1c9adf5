// store/outbox_rules.h — what Transaction::ParkOutbox and UnparkOutbox accept, in one place for
// every backend.
#pragma once

#include <cstdint>
#include <string>

#include "evident/status.h"

namespace evident {

// Whether outbox row `seq`, sent or not and parked or not, may be parked (`park`) or made
// pending again (`!park`): Ok, or kFailedPrecondition saying why not.
inline Status OutboxParkRefusal(int64_t seq, bool sent, bool parked, bool park) {
  const std::string row = "outbox row " + std::to_string(seq);
  if (sent) return Status::FailedPrecondition(row + " is sent already: there is nothing to hold");
  if (park && parked) return Status::FailedPrecondition(row + " is parked already");
  if (!park && !parked) return Status::FailedPrecondition(row + " is not parked");
  return Status::Ok();
}

}  // namespace evident
