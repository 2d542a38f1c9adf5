#include "store/postgres/pg_rows.h"

#include <charconv>

namespace evident::postgres {
namespace {

template <typename Enum>
void ReadName(const Rowset& r, int i, int column, std::optional<Enum> (*parse)(std::string_view),
              std::string_view what, Enum& out, Status& error) {
  const std::string_view name = r.Text(i, column);
  if (const std::optional<Enum> value = parse(name)) {
    out = *value;
  } else if (error.ok()) {
    error = Status::Corruption("stored " + std::string(what) + " '" + std::string(name) +
                               "' is unknown");
  }
}

std::string Str(const Rowset& r, int i, int column) { return std::string(r.Text(i, column)); }

// The versions of a gap record's `waiting` column (JoinVersions); text that is not a list of
// versions is reported in `error`.
std::vector<int64_t> ReadVersions(const Rowset& r, int i, int column, Status& error) {
  const std::string_view text = r.Text(i, column);
  std::vector<int64_t> out;
  size_t start = 0;
  while (!text.empty() && start <= text.size()) {  // one version per pass
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view part = text.substr(start, comma - start);
    int64_t version = 0;
    const auto [end, failed] = std::from_chars(part.data(), part.data() + part.size(), version);
    if (part.empty() || failed != std::errc() || end != part.data() + part.size()) {
      if (error.ok()) {
        error = Status::Corruption("stored waiting versions '" + std::string(text) +
                                   "' are not a list of versions");
      }
      return {};
    }
    out.push_back(version);
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::string JoinVersions(const std::vector<int64_t>& versions) {
  std::string out;
  for (const int64_t version : versions) {
    if (!out.empty()) out += ',';
    out += std::to_string(version);
  }
  return out;
}

LedgerEntry ReadLedger(const Rowset& r, int i, Status& error) {
  LedgerEntry e;
  e.consumer = Str(r, i, 0);
  e.source = Str(r, i, 1);
  e.event_id = Str(r, i, 2);
  ReadName(r, i, 3, &ParseLedgerState, "ledger state", e.state, error);
  e.type = Str(r, i, 4);
  e.subject = Str(r, i, 5);
  e.subject_version = r.OptInt(i, 6);
  e.input_schema_version = r.Int(i, 7);
  e.result_version = r.Int(i, 8);
  e.projection_version = r.OptInt(i, 9);
  e.committed_at_ms = r.Int(i, 10);
  e.duplicates = r.Int(i, 11);
  e.last_duplicate_at_ms = r.OptInt(i, 12);
  e.adapter = Str(r, i, 13);
  e.wrote_json = Str(r, i, 14);
  e.traceparent = Str(r, i, 15);
  e.tracestate = Str(r, i, 16);
  return e;
}

Projection ReadProjectionRow(const Rowset& r, int i, Status& /*error*/) {
  Projection p;
  p.consumer = Str(r, i, 0);
  p.subject = Str(r, i, 1);
  p.version = r.Int(i, 2);
  p.state = Str(r, i, 3);
  p.fields_json = Str(r, i, 4);
  p.owner_source = Str(r, i, 5);
  p.owner_version_seen = r.Int(i, 6);
  p.updated_at_ms = r.Int(i, 7);
  p.applied_digest = Str(r, i, 8);
  return p;
}

DeferredEvent ReadDeferred(const Rowset& r, int i, Status& error) {
  DeferredEvent d;
  d.consumer = Str(r, i, 0);
  d.subject = Str(r, i, 1);
  d.subject_version = r.Int(i, 2);
  d.source = Str(r, i, 3);
  d.event_id = Str(r, i, 4);
  d.type = Str(r, i, 5);
  d.schema_version = r.Int(i, 6);
  d.expected_version = r.Int(i, 7);
  d.raw = r.Bytes(i, 8);
  d.received_at_ms = r.Int(i, 9);
  d.deadline_at_ms = r.Int(i, 10);
  ReadName(r, i, 11, &ParseGapRoute, "gap route", d.route, error);
  d.input_index = r.Int(i, 12);
  return d;
}

QuarantineRecord ReadQuarantine(const Rowset& r, int i, Status& error) {
  QuarantineRecord q;
  q.id = r.Int(i, 0);
  q.consumer = Str(r, i, 1);
  ReadName(r, i, 2, &ParseOutcome, "outcome", q.outcome, error);
  q.reason = Str(r, i, 3);
  q.message = Str(r, i, 4);
  q.source = Str(r, i, 5);
  q.event_id = Str(r, i, 6);
  q.type = Str(r, i, 7);
  q.subject = Str(r, i, 8);
  q.subject_version = r.OptInt(i, 9);
  q.schema_version = r.OptInt(i, 10);
  q.raw = r.Bytes(i, 11);
  q.attempts = r.Int(i, 12);
  q.first_seen_ms = r.Int(i, 13);
  q.last_seen_ms = r.Int(i, 14);
  ReadName(r, i, 15, &ParseQuarantineStatus, "quarantine status", q.status, error);
  q.input_index = r.Int(i, 16);
  return q;
}

GapRecord ReadGap(const Rowset& r, int i, Status& error) {
  GapRecord g;
  g.consumer = Str(r, i, 0);
  g.subject = Str(r, i, 1);
  g.expected_version = r.Int(i, 2);
  g.missing_to = r.Int(i, 3);
  ReadName(r, i, 4, &ParseGapRoute, "gap route", g.route, error);
  ReadName(r, i, 5, &ParseGapState, "gap state", g.state, error);
  g.deadline_at_ms = r.Int(i, 6);
  g.acted_at_ms = r.OptInt(i, 7);
  g.request_event_id = Str(r, i, 8);
  g.closed_at_ms = r.OptInt(i, 9);
  g.closed_by = Str(r, i, 10);
  g.note = Str(r, i, 11);
  g.opened_at_ms = r.OptInt(i, 12);
  g.waiting_versions = ReadVersions(r, i, 13, error);
  ReadName(r, i, 14, &ParseGapClosedHow, "gap close", g.how, error);
  ReadName(r, i, 15, &ParseGapCause, "gap cause", g.cause, error);
  g.answer = Str(r, i, 16);
  g.answered_at_ms = r.OptInt(i, 17);
  return g;
}

OutboxRow ReadOutbox(const Rowset& r, int i, Status& /*error*/) {
  return OutboxRow{.seq = r.Int(i, 0),
                   .source = Str(r, i, 1),
                   .event_id = Str(r, i, 2),
                   .type = Str(r, i, 3),
                   .subject = Str(r, i, 4),
                   .subject_version = r.OptInt(i, 5),
                   .partition = r.Int(i, 6),
                   .bytes = r.Bytes(i, 7),
                   .created_at_ms = r.Int(i, 8),
                   .attempts = r.Int(i, 9),
                   .last_error = Str(r, i, 10),
                   .last_attempt_at_ms = r.OptInt(i, 11),
                   .sent_at_ms = r.OptInt(i, 12),
                   .stream = Str(r, i, 13),
                   .stream_sequence = r.OptInt(i, 14),
                   .parked_at_ms = r.OptInt(i, 15),
                   .parked_reason = Str(r, i, 16)};
}

EffectIntent ReadIntent(const Rowset& r, int i, Status& error) {
  EffectIntent e;
  e.seq = r.Int(i, 0);
  e.key = Str(r, i, 1);
  e.effect = Str(r, i, 2);
  e.consumer = Str(r, i, 3);
  e.subject = Str(r, i, 4);
  e.source = Str(r, i, 5);
  e.event_id = Str(r, i, 6);
  e.subject_version = r.OptInt(i, 7);
  e.request = r.Bytes(i, 8);
  ReadName(r, i, 9, &ParseEffectState, "effect state", e.state, error);
  e.attempts = r.Int(i, 10);
  e.last_error = Str(r, i, 11);
  e.http_status = r.OptInt(i, 12);
  e.response_digest = Str(r, i, 13);
  e.intended_at_ms = r.Int(i, 14);
  e.last_attempt_at_ms = r.OptInt(i, 15);
  e.next_attempt_at_ms = r.OptInt(i, 16);
  e.settled_at_ms = r.OptInt(i, 17);
  e.claimed_by = Str(r, i, 18);
  e.revision = r.Int(i, 19);
  e.basis_version = r.OptInt(i, 20);
  return e;
}

CompensationRecord ReadCompensation(const Rowset& r, int i, Status& error) {
  CompensationRecord c;
  c.seq = r.Int(i, 0);
  c.key = Str(r, i, 1);
  c.consumer = Str(r, i, 2);
  c.subject = Str(r, i, 3);
  c.owner_source = Str(r, i, 4);
  c.owner_version = r.OptInt(i, 5);
  c.event_id = Str(r, i, 6);
  c.type = Str(r, i, 7);
  c.recorded_at_ms = r.Int(i, 8);
  ReadName(r, i, 9, &ParseCompensationBy, "compensation recorder", c.recorded_by, error);
  c.decision = Str(r, i, 10);
  c.compensates = Str(r, i, 11);
  c.covers = Str(r, i, 12);
  c.compensate_with = Str(r, i, 13);
  c.compensating_key = Str(r, i, 14);
  c.compensating_request = r.Bytes(i, 15);
  c.basis_version = r.OptInt(i, 16);
  ReadName(r, i, 17, &ParseCompensationState, "compensation state", c.state, error);
  c.detail = Str(r, i, 18);
  c.updated_at_ms = r.Int(i, 19);
  return c;
}

JournalEntry ReadJournal(const Rowset& r, int i, Status& error) {
  JournalEntry j;
  j.seq = r.Int(i, 0);
  j.consumer = Str(r, i, 1);
  ReadName(r, i, 2, &ParseOutcome, "outcome", j.outcome, error);
  j.source = Str(r, i, 3);
  j.event_id = Str(r, i, 4);
  j.subject = Str(r, i, 5);
  j.subject_version = r.OptInt(i, 6);
  j.at_ms = r.Int(i, 7);
  return j;
}

EvidenceRecord ReadEvidence(const Rowset& r, int i, Status& /*error*/) {
  EvidenceRecord e;
  e.consumer = Str(r, i, 0);
  e.subject = Str(r, i, 1);
  e.name = Str(r, i, 2);
  e.source = Str(r, i, 3);
  e.event_id = Str(r, i, 4);
  e.subject_version = r.OptInt(i, 5);
  e.recorded_at_ms = r.Int(i, 6);
  e.detail = Str(r, i, 7);
  return e;
}

QuarantineAudit ReadAudit(const Rowset& r, int i, Status& error) {
  QuarantineAudit a;
  a.seq = r.Int(i, 0);
  a.record_id = r.Int(i, 1);
  ReadName(r, i, 2, &ParseQuarantineAction, "quarantine action", a.action, error);
  a.by = Str(r, i, 3);
  a.note = Str(r, i, 4);
  a.outcome = Str(r, i, 5);
  a.reason = Str(r, i, 6);
  ReadName(r, i, 7, &ParseQuarantineStatus, "quarantine status", a.status_after, error);
  a.at_ms = r.Int(i, 8);
  return a;
}

EffectLogEntry ReadEffectLog(const Rowset& r, int i, Status& error) {
  EffectLogEntry e;
  e.seq = r.Int(i, 0);
  e.key = Str(r, i, 1);
  ReadName(r, i, 2, &ParseEffectAction, "effect action", e.action, error);
  e.by = Str(r, i, 3);
  ReadName(r, i, 4, &ParseEffectState, "effect state", e.state_after, error);
  e.http_status = r.OptInt(i, 5);
  e.detail = Str(r, i, 6);
  e.at_ms = r.Int(i, 7);
  return e;
}

ProjectionCorrection ReadCorrection(const Rowset& r, int i, Status& /*error*/) {
  ProjectionCorrection c;
  c.seq = r.Int(i, 0);
  c.consumer = Str(r, i, 1);
  c.subject = Str(r, i, 2);
  c.before_json = Str(r, i, 3);
  c.after_json = Str(r, i, 4);
  c.by = Str(r, i, 5);
  c.note = Str(r, i, 6);
  c.basis = Str(r, i, 7);
  c.forced = r.Int(i, 8) != 0;  // a boolean column: 't' or 'f'
  c.at_ms = r.Int(i, 9);
  return c;
}

}  // namespace evident::postgres
