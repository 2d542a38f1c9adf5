// store/quarantine_rules.h — what Transaction::Quarantine does to a record, in one place for
// every backend: how a new record starts, and what a re-delivery of the same input changes.
#pragma once

#include <algorithm>
#include <cstdint>

#include "evident/store.h"

namespace evident {

// A record as the store opens it: open, one attempt, first and last seen at the delivery's time.
inline void OpenedRecord(int64_t id, QuarantineRecord& record) {
  record.id = id;
  record.attempts = 1;
  record.first_seen_ms = record.last_seen_ms;
  record.status = QuarantineStatus::kOpen;
}

// One more delivery of the input `there` holds: an attempt, the latest refusal and coordinates
// (those the delivery could read), the latest time. Identity, bytes, status and the first-seen
// time stay.
inline void NoteAttempt(const QuarantineRecord& delivery, QuarantineRecord& there) {
  there.attempts += 1;
  there.last_seen_ms = std::max(there.last_seen_ms, delivery.last_seen_ms);
  there.outcome = delivery.outcome;
  there.reason = delivery.reason;
  there.message = delivery.message;
  if (!delivery.type.empty()) there.type = delivery.type;
  if (!delivery.subject.empty()) there.subject = delivery.subject;
  if (delivery.subject_version) there.subject_version = delivery.subject_version;
  if (delivery.schema_version) there.schema_version = delivery.schema_version;
  there.input_index = delivery.input_index;
}

}  // namespace evident
