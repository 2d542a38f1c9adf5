// store/retained_entry.h — what every backend's FindLedger and FindIntent answer for a key whose
// receipt or intent retention kept only as a digest (store_retention.h, kLedger and kIntent).
#pragma once

#include <cstdint>
#include <string_view>

#include "evident/store_decisions.h"
#include "evident/store_effects.h"

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

// Its key, effect, consumer, settled state and the second it settled in, and nothing else.
inline EffectIntent RetainedIntentEntry(std::string_view key, std::string_view effect,
                                        std::string_view consumer, EffectState state,
                                        int64_t settled_s) {
  EffectIntent e;
  e.key = key;
  e.effect = effect;
  e.consumer = consumer;
  e.state = state;
  e.settled_at_ms = settled_s * 1000;
  e.retained = true;
  return e;
}

}  // namespace evident
