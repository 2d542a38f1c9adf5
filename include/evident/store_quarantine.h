// evident/store_quarantine.h — the store's quarantine: inputs not applied, with their reason, their
// original bytes and an audit of what operators did with them. Part of the Store contract
// (store.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/outcome.h"
#include "evident/status.h"
#include "evident/store_rows.h"

namespace evident {

// An input that was not applied, quarantined with its reason and original bytes. One record per
// (consumer, source, id) and exact bytes, or per (consumer, exact bytes) when no id could be
// read: a re-delivery of the same input adds an attempt, not a second record.
struct QuarantineRecord {
  int64_t id = 0;                        // assigned by the store
  std::string consumer;                  // empty when refused before any consumer was chosen
  Outcome outcome = Outcome::kRejected;  // never kApplied, kDeferred or kDuplicate
  std::string reason;                    // stable code
  std::string message;
  std::string source, event_id, type, subject;  // empty when they could not be read
  std::optional<int64_t> subject_version;
  std::optional<int64_t> schema_version;
  std::string raw;  // the original bytes
  int64_t attempts = 1;
  int64_t first_seen_ms = 0, last_seen_ms = 0;
  QuarantineStatus status = QuarantineStatus::kOpen;
  int64_t input_index = 0;  // where the input stood in its source at its last delivery
};

// What Transaction::Quarantine did: opened a record, or counted one more attempt on the record
// that holds the same input.
struct QuarantineKept {
  int64_t id = 0;
  bool added = true;  // false: an existing record counted an attempt
};

// Which records a list selects; every field set narrows it.
struct QuarantineFilter {
  std::optional<std::string> consumer;
  std::optional<std::string> reason;
  std::optional<QuarantineStatus> status;
  std::vector<int64_t> ids;  // non-empty: only these
};

// Where a list of records in first-seen order resumes: after (first_seen_ms, id).
struct QuarantineCursor {
  int64_t first_seen_ms = INT64_MIN;
  int64_t id = 0;
};

// An operator's act on a quarantined record: who, when, why, and what came of it.
struct QuarantineAudit {
  int64_t seq = 0;  // assigned by the store
  int64_t record_id = 0;
  QuarantineAction action = QuarantineAction::kReplay;
  std::string by, note;
  std::string outcome;  // the decision's outcome name ("applied", "duplicate", ...), "discarded"
  std::string reason;   // the decision's reason when it was refused again
  QuarantineStatus status_after = QuarantineStatus::kOpen;
  int64_t at_ms = 0;
};

// Quarantine writes, in the batch's transaction or an operator's (store.h, Transaction).
class QuarantineWrites {
 public:
  virtual ~QuarantineWrites() = default;

  // Quarantines an input that was not applied (`record.outcome` is never kApplied, kDeferred or
  // kDuplicate: a programmer error). The record's identity is its consumer, its source and id
  // when both are set, and its exact bytes. A new input opens a record (status open, one
  // attempt, first and last seen at record.last_seen_ms); the same input again counts an
  // attempt on its record and takes the new outcome, reason, message, coordinates and last-seen
  // time, keeping its status and first-seen time. record.id, attempts, first_seen_ms and status
  // are ignored.
  virtual Result<QuarantineKept> Quarantine(const QuarantineRecord& record) = 0;
  virtual Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) = 0;

  // No record of that id: kNotFound.
  virtual Status SetQuarantineStatus(int64_t id, QuarantineStatus status) = 0;

  // `entry.seq` is ignored; no record of entry.record_id: kNotFound.
  virtual Status AuditQuarantine(const QuarantineAudit& entry) = 0;
};

// Quarantine as one snapshot sees it (store.h, Snapshot).
class QuarantineReads {
 public:
  virtual ~QuarantineReads() = default;

  virtual Result<Rows<QuarantineRecord>> QuarantineOf(std::string_view subject,  // by id
                                                      int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) = 0;

  // The records `filter` selects after `after`, by first-seen time, then id.
  virtual Result<Rows<QuarantineRecord>> ListQuarantine(const QuarantineFilter& filter,
                                                        QuarantineCursor after = {},
                                                        int64_t rows_max = kReadRowsMaxDefault) = 0;
  virtual Result<Rows<QuarantineAudit>> AuditOf(int64_t record_id,  // by seq
                                                int64_t rows_max = kReadRowsMaxDefault) = 0;
};

}  // namespace evident
