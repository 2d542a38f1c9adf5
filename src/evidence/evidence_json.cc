// The JSON of `evident evidence --format json` and `evident gaps --format json`, shared by the
// command line and the daemon's admin API (docs/evidence.md describes the fields).
#include <string>
#include <vector>

#include "core/rfc3339.h"
#include "evident/effects.h"
#include "evident/evidence.h"
#include "evident/gaps.h"
#include "json/writer.h"

namespace evident {
namespace {

std::string FormatTime(int64_t ms) { return rfc3339::FormatMs(ms); }

// A gap record's fields (evident/gaps.h), inside an object or as one.
void OptionalTime(json::Writer& w, std::string_view key, const std::optional<int64_t>& ms) {
  w.Key(key);
  ms ? w.String(FormatTime(*ms)) : w.Null();
}

void GapRecordFields(const GapRecord& g, json::Writer& w) {
  w.Key("missing_from").Int(g.expected_version).Key("missing_to").Int(g.missing_to);
  w.Key("waiting_versions").BeginArray();
  for (const int64_t v : g.waiting_versions) w.Int(v);
  w.EndArray();
  w.Field("route", GapRouteName(g.route)).Field("state", GapStateName(g.state));
  OptionalTime(w, "opened_at", g.opened_at_ms);
  w.Field("deadline_at", FormatTime(g.deadline_at_ms));
  OptionalTime(w, "acted_at", g.acted_at_ms);
  w.Key("request_event_id");
  g.request_event_id.empty() ? w.Null() : w.String(g.request_event_id);
  w.Key("closed_at");
  g.closed_at_ms ? w.String(FormatTime(*g.closed_at_ms)) : w.Null();
  w.Key("closed_by");
  g.closed_by.empty() ? w.Null() : w.String(g.closed_by);
  w.Key("note");
  g.note.empty() ? w.Null() : w.String(g.note);
  w.Key("how");
  g.how == GapClosedHow::kNone ? w.Null() : w.String(GapClosedHowName(g.how));
  w.Key("cause");
  g.cause == GapCause::kUnknown ? w.Null() : w.String(GapCauseName(g.cause));
  w.Key("replay_answer");
  g.answer.empty() ? w.Null() : w.String(g.answer);
  OptionalTime(w, "answered_at", g.answered_at_ms);
}
void GapRecordJson(const GapRecord& g, json::Writer& w) {
  w.BeginObject();
  GapRecordFields(g, w);
  w.EndObject();
}

void ReadinessJson(const ConsumerEvidence& c, json::Writer& w);

// Why the projection is not in sync, in one sentence; empty when it is.
std::string GapReason(const ConsumerEvidence& c) {
  if (!c.projection) return "no projection: nothing from the owner has been applied";
  if (!c.deferred.empty()) {
    return "version " + std::to_string(ExpectedVersion(c.projection)) + " has not arrived; " +
           std::to_string(c.deferred.size()) + " later version(s) wait (route " +
           std::string(GapRouteName(c.deferred.front().route)) + ")";
  }
  if (c.projection->version != c.projection->owner_version_seen) {
    return "projection version " + std::to_string(c.projection->version) +
           " is behind the owner version seen " + std::to_string(c.projection->owner_version_seen);
  }
  return {};
}

// Seed 002's readiness test in one object: the owner and its version, the applied event ids,
// the projection version, why a gap is open, the compensation keys and the effects' states.
void ReadinessJson(const ConsumerEvidence& c, json::Writer& w) {
  w.BeginObject().Key("owner_id");
  c.projection ? w.String(c.projection->owner_source) : w.Null();
  w.Key("owner_version");
  c.projection ? w.Int(c.projection->owner_version_seen) : w.Null();
  w.Key("applied_event_ids").BeginArray();
  for (const LedgerEntry& e : c.ledger) {
    if (e.state == LedgerState::kApplied) w.String(e.source + ":" + e.event_id);
  }
  w.EndArray().Key("projection_version");
  c.projection ? w.Int(c.projection->version) : w.Null();
  const std::string gap = GapReason(c);
  w.Key("gap_reason");
  gap.empty() ? w.Null() : w.String(gap);
  w.Key("gap_history").BeginArray();
  for (const GapRecord& g : c.gap_records) {
    w.BeginObject().Key("missing_from").Int(g.expected_version);
    w.Key("missing_to").Int(g.missing_to).Key("waiting_versions").BeginArray();
    for (const int64_t v : g.waiting_versions) w.Int(v);
    w.EndArray();
    OptionalTime(w, "opened_at", g.opened_at_ms);
    OptionalTime(w, "closed_at", g.closed_at_ms);
    w.Key("how");
    g.how == GapClosedHow::kNone ? w.Null() : w.String(GapClosedHowName(g.how));
    w.Key("cause");
    g.cause == GapCause::kUnknown ? w.Null() : w.String(GapCauseName(g.cause));
    w.EndObject();
  }
  w.EndArray().Key("compensation_keys").BeginArray();
  for (const CompensationRecord& r : c.compensations) w.String(r.key);
  w.EndArray().Key("compensations").BeginArray();
  for (const CompensationRecord& r : c.compensations) {
    w.BeginObject().Field("key", r.key).Field("state", CompensationStateName(r.state));
    w.Key("covers").BeginArray();
    if (!r.covers.empty()) w.String(r.covers);
    w.EndArray().Key("compensating_key");
    // Named only once it was intended: a key kept for a reconciliation that never came is none.
    const bool intended = r.state == CompensationState::kCompensating ||
                          r.state == CompensationState::kCompensated ||
                          r.state == CompensationState::kCompensationFailed;
    intended ? w.String(r.compensating_key) : w.Null();
    w.EndObject();
  }
  w.EndArray().Key("effects").BeginArray();
  for (const EffectIntent& e : c.effects) {
    w.BeginObject().Field("key", e.key).Field("effect", e.effect);
    w.Field("state", EffectStateName(e.state)).EndObject();
  }
  w.EndArray().EndObject();
}

void OptionalInt(json::Writer& w, std::string_view key, const std::optional<int64_t>& v) {
  w.Key(key);
  v ? w.Int(*v) : w.Null();
}

// A quarantine record ("kept": the name this list has had since before the quarantine).
void KeptJson(const QuarantinedInput& q, json::Writer& w) {
  const QuarantineRecord& k = q.record;
  w.BeginObject()
      .Key("quarantine_id")
      .Int(k.id)
      .Field("outcome", OutcomeName(k.outcome))
      .Field("reason", k.reason)
      .Field("message", k.message);
  w.Field("source", k.source).Field("id", k.event_id).Field("type", k.type);
  OptionalInt(w, "subject_version", k.subject_version);
  OptionalInt(w, "schema_version", k.schema_version);
  w.Field("status", QuarantineStatusName(k.status)).Key("attempts").Int(k.attempts);
  w.Field("first_seen", FormatTime(k.first_seen_ms)).Field("last_seen", FormatTime(k.last_seen_ms));
  w.Field("received_at", FormatTime(k.last_seen_ms)).Key("input_index").Int(k.input_index);
  w.Field("original_bytes", k.raw).Key("audit").BeginArray();
  for (const QuarantineAudit& a : q.audit) {
    w.BeginObject().Field("action", QuarantineActionName(a.action)).Field("by", a.by);
    w.Field("note", a.note).Field("outcome", a.outcome).Key("reason");
    a.reason.empty() ? w.Null() : w.String(a.reason);
    w.Field("status_after", QuarantineStatusName(a.status_after));
    w.Field("at", FormatTime(a.at_ms)).EndObject();
  }
  w.EndArray().EndObject();
}

// One applied receipt; `placed`: with its consumer and subject first (the archive's record).
void ReceiptJson(const LedgerEntry& e, bool placed, json::Writer& w) {
  w.BeginObject();
  if (placed) w.Field("consumer", e.consumer).Field("subject", e.subject);
  w.Field("source", e.source).Field("id", e.event_id).Field("type", e.type);
  OptionalInt(w, "subject_version", e.subject_version);
  w.Key("input_schema_version").Int(e.input_schema_version);
  w.Key("result_version").Int(e.result_version);
  OptionalInt(w, "projection_version", e.projection_version);
  w.Field("committed_at", FormatTime(e.committed_at_ms));
  w.Field("key", e.consumer + ":" + e.source + ":" + e.event_id);
  w.Key("adapter");
  e.adapter.empty() ? w.Null() : w.String(e.adapter);
  // What this event set in the projection (store.h: LedgerEntry::wrote_json), as written.
  w.Key("wrote");
  e.wrote_json.empty() ? w.Null() : w.Raw(e.wrote_json);
  // The event's trace context (CloudEvents distributed tracing), null when it had none.
  w.Key("traceparent");
  e.traceparent.empty() ? w.Null() : w.String(e.traceparent);
  w.Key("tracestate");
  e.tracestate.empty() ? w.Null() : w.String(e.tracestate);
  w.Key("duplicates").Int(e.duplicates).EndObject();
}

// One consumer's part of the packet.
// The consumer's applied receipts of the subject, as array elements.
void AppliedJson(const ConsumerEvidence& c, json::Writer& w) {
  for (const LedgerEntry& e : c.ledger) {
    if (e.state == LedgerState::kApplied) ReceiptJson(e, false, w);
  }
}

// The consumer's deferred events of the subject, as array elements.
void DeferredJson(const ConsumerEvidence& c, int64_t now_ms, json::Writer& w) {
  for (const DeferredEvent& d : c.deferred) {
    w.BeginObject().Field("source", d.source).Field("id", d.event_id).Field("type", d.type);
    w.Key("subject_version").Int(d.subject_version);
    w.Key("expected_version").Int(ExpectedVersion(c.projection));
    w.Field("received_at", FormatTime(d.received_at_ms));
    w.Key("age_seconds").Int((now_ms - d.received_at_ms) / 1000);
    w.Field("deadline_at", FormatTime(d.deadline_at_ms));
    w.Field("overdue", now_ms > d.deadline_at_ms).Field("route", GapRouteName(d.route)).EndObject();
  }
}

void ConsumerJson(const ConsumerEvidence& c, int64_t now_ms, json::Writer& w) {
  w.BeginObject().Field("consumer", c.consumer);
  if (c.projection) {
    w.Field("owner_source", c.projection->owner_source);
    w.Key("projection_version").Int(c.projection->version);
    w.Key("owner_version_seen").Int(c.projection->owner_version_seen);
    w.Field("state", c.projection->state).Key("fields").Raw(c.projection->fields_json);
    w.Field("in_sync", c.in_sync());
  } else {
    w.Key("owner_source").Null().Key("projection_version").Null();
    w.Key("owner_version_seen").Null().Key("state").Null();
  }
  w.Key("applied").BeginArray();
  AppliedJson(c, w);
  w.EndArray().Key("deferred").BeginArray();
  DeferredJson(c, now_ms, w);
  w.EndArray().Key("duplicates").BeginObject().Key("count").Int(c.duplicate_count());
  w.Key("deliveries").BeginArray();
  for (const JournalEntry& j : c.journal) {
    if (j.outcome != Outcome::kDuplicate) continue;
    w.BeginObject().Field("source", j.source).Field("id", j.event_id);
    w.Field("at", FormatTime(j.at_ms)).EndObject();
  }
  w.EndArray().EndObject().Key("conflicts").BeginArray();
  for (const QuarantinedInput& q : c.quarantined) {
    if (q.record.outcome == Outcome::kSameVersionConflict) KeptJson(q, w);
  }
  w.EndArray().Key("conflict_reports").BeginArray();
  for (const ConflictRouting& r : c.conflict_reports) {
    w.BeginObject().Key("quarantine_id").Int(r.quarantine_id).Field("report_id", r.report_id);
    w.Field("recorded", r.recorded).Field("routed", r.sent_at_ms.has_value());
    OptionalTime(w, "sent_at", r.sent_at_ms);
    w.EndObject();
  }
  w.EndArray().Key("corrections").BeginArray();
  for (const ProjectionCorrection& k : c.corrections) {
    w.BeginObject().Key("seq").Int(k.seq).Field("by", k.by).Field("note", k.note);
    w.Field("basis", k.basis).Field("forced", k.forced).Field("at", FormatTime(k.at_ms));
    w.Key("before").Raw(k.before_json).Key("after").Raw(k.after_json).EndObject();
  }
  w.EndArray().Key("kept").BeginArray();
  for (const QuarantinedInput& q : c.quarantined) KeptJson(q, w);
  w.EndArray().Key("gaps").BeginArray();
  for (const GapRecord& g : c.gap_records) GapRecordJson(g, w);
  w.EndArray().Key("evidence").BeginArray();
  for (const EvidenceRecord& r : c.evidence) {
    w.BeginObject().Field("name", r.name).Field("source", r.source).Field("id", r.event_id);
    OptionalInt(w, "subject_version", r.subject_version);
    w.Field("recorded_at", FormatTime(r.recorded_at_ms)).Key("detail");
    r.detail.empty() ? w.Null() : w.String(r.detail);
    w.EndObject();
  }
  w.EndArray().Key("effects").BeginArray();
  for (size_t i = 0; i < c.effects.size(); ++i) {
    std::string one;
    AppendEffectJson(c.effects[i], &c.effect_logs[i].log, one);
    w.Raw(one);
  }
  w.EndArray().Key("compensations").BeginArray();
  for (const CompensationRecord& r : c.compensations) {
    std::string one;
    AppendCompensationJson(r, one);
    w.Raw(one);
  }
  w.EndArray().Key("readiness");
  ReadinessJson(c, w);
  w.EndObject();
}

}  // namespace

void AppendEvidenceJson(const EvidencePacket& packet, int64_t now_ms, std::string& out) {
  json::Writer w(out);
  w.BeginObject().Field("subject", packet.subject).Key("consumers").BeginArray();
  for (const ConsumerEvidence& c : packet.consumers) ConsumerJson(c, now_ms, w);
  w.EndArray().Key("kept").BeginArray();  // inputs quarantined before any consumer was chosen
  for (const QuarantinedInput& q : packet.unassigned) KeptJson(q, w);
  w.EndArray().Key("retention");
  if (const std::optional<RetentionRun>& r = packet.retention; r.has_value()) {
    w.BeginObject().Field("horizon", FormatTime(r->horizon_ms)).Field("at", FormatTime(r->at_ms));
    w.Key("archive");
    r->archive.empty() ? w.Null() : w.String(r->archive);
    w.Key("removed").Int(r->removed).Key("ledger_digests_forgotten_before");
    r->forgot_before_ms > 0 ? w.String(FormatTime(r->forgot_before_ms)) : w.Null();
    w.EndObject();
  } else {
    w.Null();
  }
  w.EndObject();
}

void AppendGapRecordJson(const GapRecord& record, std::string& out) {
  json::Writer w(out);
  GapRecordJson(record, w);
}

void AppendReceiptJson(const LedgerEntry& receipt, std::string& out) {
  json::Writer w(out);
  ReceiptJson(receipt, true, w);
}

void AppendGapJson(const Gap& g, int64_t now_ms, std::string& out) {
  json::Writer w(out);
  const int64_t left_ms = g.deadline_at_ms - now_ms;
  w.BeginObject().Field("consumer", g.consumer).Field("subject", g.subject);
  w.Key("expected_version").Int(g.expected_version).Key("waiting_versions").BeginArray();
  for (int64_t v : g.waiting_versions) w.Int(v);
  w.EndArray().Field("oldest_received_at", FormatTime(g.oldest_received_at_ms));
  w.Field("deadline_at", FormatTime(g.deadline_at_ms)).Field("overdue", left_ms < 0);
  w.Key("seconds_left").Int(left_ms / 1000).Field("route", GapRouteName(g.route));
  w.Key("record");
  if (g.record) {
    GapRecordJson(*g.record, w);
  } else {
    w.Null();
  }
  w.EndObject();
}

}  // namespace evident
