// consumer/set_aside.h — a deferred event that can never apply, set aside: shared by the
// pipeline's drain (a foreign source: owner-mismatch) and `projection correct` (a version the
// correction passed: stale).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "evident/consumer.h"
#include "evident/store.h"

namespace evident {

// `consumerId:source:id`, built in one allocation (operator+ would allocate for each part).
std::string LedgerKeyText(std::string_view consumer, std::string_view source, std::string_view id);

// Why a deferred event is set aside, and the projection version it was judged against.
struct SetAsideReason {
  Outcome outcome;
  std::string reason, message;
  int64_t projection_version = 0;
};

// Its deferral and its receipt go (a redelivery is decided afresh), it is kept in quarantine
// with its bytes, and its decision is appended to `decisions`.
Status SetAsideDeferred(Transaction& tx, const DeferredEvent& d, SetAsideReason why, int64_t now_ms,
                        std::vector<Decision>& decisions);

}  // namespace evident
