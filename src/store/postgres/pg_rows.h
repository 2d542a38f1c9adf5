// store/postgres/pg_rows.h — the PostgreSQL store's column lists and the readers that turn a
// result row into the store's structs. A stored name outside its closed vocabulary (outcome.h)
// means the row was not written by evident, or was changed: the reader says so in `error`.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "evident/store.h"
#include "store/postgres/pg_connection.h"

namespace evident::postgres {

inline constexpr const char* kLedgerColumns =
    "consumer, source, event_id, state, type, subject, subject_version, input_schema_version, "
    "result_version, projection_version, committed_at_ms, duplicates, last_duplicate_at_ms, "
    "adapter, wrote, traceparent, tracestate";
inline constexpr const char* kProjectionColumns =
    "consumer, subject, version, state, fields_json, owner_source, owner_version_seen, "
    "updated_at_ms, applied_digest";
inline constexpr const char* kDeferredColumns =
    "consumer, subject, subject_version, source, event_id, type, schema_version, "
    "expected_version, raw, received_at_ms, deadline_at_ms, route, input_index";
inline constexpr const char* kQuarantineColumns =
    "id, consumer, outcome, reason, message, source, event_id, type, subject, subject_version,"
    " schema_version, raw, attempts, first_seen_ms, last_seen_ms, status, input_index";
inline constexpr const char* kGapColumns =
    "consumer, subject, expected_version, missing_to, route, state, deadline_at_ms, acted_at_ms,"
    " request_event_id, closed_at_ms, closed_by, note, opened_at_ms, waiting, how, cause, answer,"
    " answered_at_ms";
inline constexpr const char* kOutboxColumns =
    "seq, source, event_id, type, subject, subject_version, event_partition, bytes, "
    "created_at_ms, attempts, last_error, last_attempt_at_ms, sent_at_ms, stream, "
    "stream_sequence, parked_at_ms, parked_reason";
inline constexpr const char* kIntentColumns =
    "seq, key, effect, consumer, subject, source, event_id, subject_version, request, state, "
    "attempts, last_error, http_status, response_digest, intended_at_ms, last_attempt_at_ms, "
    "next_attempt_at_ms, settled_at_ms, claimed_by, revision, basis_version";
inline constexpr const char* kCompensationColumns =
    "seq, key, consumer, subject, owner_source, owner_version, event_id, type, recorded_at_ms, "
    "recorded_by, decision, compensates, covers, compensate_with, compensating_key, "
    "compensating_request, basis_version, state, detail, updated_at_ms";
inline constexpr const char* kJournalColumns =
    "seq, consumer, outcome, source, event_id, subject, subject_version, at_ms";
inline constexpr const char* kEvidenceColumns =
    "consumer, subject, name, source, event_id, subject_version, recorded_at_ms, detail";
inline constexpr const char* kAuditColumns =
    "seq, record_id, action, by_whom, note, outcome, reason, status_after, at_ms";
inline constexpr const char* kEffectLogColumns =
    "seq, key, action, by_whom, state_after, http_status, detail, at_ms";
inline constexpr const char* kCorrectionColumns =
    "seq, consumer, subject, before_json, after_json, by_whom, note, basis, forced, at_ms";

// The LIMIT of a list read: one row more than asked for, so that a cut list says so.
inline int64_t LimitOf(int64_t rows_max) {
  assert(rows_max >= 0);
  return std::min(rows_max, std::numeric_limits<int64_t>::max() - 1) + 1;
}

LedgerEntry ReadLedger(const Rowset& r, int i, Status& error);
Projection ReadProjectionRow(const Rowset& r, int i, Status& error);
DeferredEvent ReadDeferred(const Rowset& r, int i, Status& error);
QuarantineRecord ReadQuarantine(const Rowset& r, int i, Status& error);
GapRecord ReadGap(const Rowset& r, int i, Status& error);
OutboxRow ReadOutbox(const Rowset& r, int i, Status& error);
EffectIntent ReadIntent(const Rowset& r, int i, Status& error);
CompensationRecord ReadCompensation(const Rowset& r, int i, Status& error);
JournalEntry ReadJournal(const Rowset& r, int i, Status& error);
EvidenceRecord ReadEvidence(const Rowset& r, int i, Status& error);
QuarantineAudit ReadAudit(const Rowset& r, int i, Status& error);
EffectLogEntry ReadEffectLog(const Rowset& r, int i, Status& error);
ProjectionCorrection ReadCorrection(const Rowset& r, int i, Status& error);

// A gap record's waiting versions as its `waiting` column keeps them: "3,5", "" for none.
std::string JoinVersions(const std::vector<int64_t>& versions);

// Every row of `rows` read with `read`, cut at `rows_max` (the query asked for one more, so
// that a cut list says it was cut).
template <typename T>
Result<Rows<T>> ReadRows(const Rowset& rows, int64_t rows_max,
                         T (*read)(const Rowset&, int, Status&)) {
  Rows<T> out;
  Status error;
  for (int i = 0; i < rows.rows(); ++i) {
    if (static_cast<int64_t>(out.rows.size()) >= rows_max) {
      out.truncated = true;
      break;
    }
    out.rows.push_back(read(rows, i, error));
  }
  if (!error.ok()) return error;
  if (!rows.problem().ok()) return rows.problem();
  return out;
}

// The first row of `rows` read with `read`, or nullopt when there is none.
template <typename T>
Result<std::optional<T>> ReadOne(const Rowset& rows, T (*read)(const Rowset&, int, Status&)) {
  if (rows.rows() == 0) return std::optional<T>();
  Status error;
  T row = read(rows, 0, error);
  if (!error.ok()) return error;
  if (!rows.problem().ok()) return rows.problem();
  return std::optional<T>(std::move(row));
}

}  // namespace evident::postgres
