// consumer/intents.h — what an applied event triggers beyond its projection: the effect intents
// and compensations its consumer declares (config.h), keyed by their templates.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "evident/config.h"
#include "evident/envelope.h"
#include "evident/store_decisions.h"

namespace evident {

// A key longer than this is refused like an unresolved one: keys are identities, not payloads.
inline constexpr size_t kIntentKeyBytesMax = 1024;

// What a key template is expanded from.
struct KeyInputs {
  std::string_view consumer, subject;
  std::optional<int64_t> subject_version;
  const EventView* event = nullptr;
};

// The key, or nullopt with `why` set when a placeholder has no value in this event (no subject,
// no version, a payload member absent or not a scalar) or the key is too long.
std::optional<std::string> ExpandKey(const KeyTemplate& key, const KeyInputs& in, std::string& why);

// True when every condition holds on the event's payload.
bool ConditionsHold(const std::vector<PayloadCondition>& when, const EventView& event);

// The event as CloudEvents structured JSON: its own bytes when they are that already (the
// cloudevents profile), else the envelope rebuilt from what the profile read.
std::string CloudEventJson(const EventView& event);

// The event's `tracestate` (CloudEvents distributed tracing) as evident keeps and passes it on:
// printable ASCII up to kTracestateBytesMax, else nothing (W3C Trace Context: vendors' entries,
// never a reason to refuse the event).
std::string_view TracestateOf(const EventView& event);

// For every effect and compensation of `consumer` that `event` triggers by type and payload
// conditions (states are known only once applied, so not checked here): the first key that
// does not expand, as a message; empty when all expand.
std::string UnresolvedKey(const ConsumerConfig& consumer, const KeyInputs& in);

}  // namespace evident
