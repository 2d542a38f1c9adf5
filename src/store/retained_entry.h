// store/retained_entry.h — what every backend's FindLedger answers for a key whose receipt
// retention kept only as a digest (store_retention.h, kLedger).
#pragma once

#include <string_view>

#include "evident/store_decisions.h"

namespace evident {

// Applied, its key and nothing else known of it.
inline LedgerEntry RetainedLedgerEntry(std::string_view consumer, std::string_view source,
                                       std::string_view event_id) {
  LedgerEntry e;
  e.consumer = consumer;
  e.source = source;
  e.event_id = event_id;
  e.state = LedgerState::kApplied;
  e.retained = true;
  return e;
}

}  // namespace evident
