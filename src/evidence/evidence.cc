// The evidence packet and the open gaps, each read from one snapshot.
#include "evident/evidence.h"

#include <algorithm>
#include <map>
#include <set>

#include "evident/gaps.h"

namespace evident {

bool InSync(const Projection& projection, size_t deferred_count) {
  return projection.version == projection.owner_version_seen && deferred_count == 0;
}

int64_t ConsumerEvidence::duplicate_count() const {
  return std::count_if(journal.begin(), journal.end(),
                       [](const JournalEntry& j) { return j.outcome == Outcome::kDuplicate; });
}

bool ConsumerEvidence::empty() const {
  return !projection && ledger.empty() && deferred.empty() && journal.empty() &&
         quarantined.empty() && gap_records.empty() && evidence.empty() && effects.empty() &&
         compensations.empty() && corrections.empty();
}

std::string ConflictRouting::text() const {
  if (sent_at_ms) return "routed to the owner (report " + report_id + " sent)";
  if (recorded) return "recorded, not yet routed (report " + report_id + " waits for a relay)";
  return "no report in the outbox (recorded before reports existed, or sent and removed since)";
}

bool EvidencePacket::known() const {
  return !unassigned.empty() || std::any_of(consumers.begin(), consumers.end(),
                                            [](const ConsumerEvidence& c) { return !c.empty(); });
}

namespace {

// Moves a bounded list's rows into `out`, noting a cut; or passes a read's failure on.
template <typename T>
Status Take(Result<Rows<T>> rows, std::vector<T>& out, bool& truncated) {
  if (!rows.ok()) return rows.status();
  out = std::move(rows->rows);
  truncated = truncated || rows->truncated;
  return Status::Ok();
}

Status ReadConsumer(Snapshot& snapshot, std::string_view subject, int64_t rows_max,
                    ConsumerEvidence& c, bool& truncated) {
  EVIDENT_ASSIGN_OR_RETURN(c.projection, snapshot.FindProjection(c.consumer, subject));
  EVIDENT_RETURN_IF_ERROR(
      Take(snapshot.LedgerOf(c.consumer, subject, rows_max), c.ledger, truncated));
  EVIDENT_RETURN_IF_ERROR(
      Take(snapshot.DeferredOf(c.consumer, subject, rows_max), c.deferred, truncated));
  EVIDENT_RETURN_IF_ERROR(
      Take(snapshot.JournalOf(c.consumer, subject, rows_max), c.journal, truncated));
  EVIDENT_RETURN_IF_ERROR(
      Take(snapshot.GapRecordsOf(c.consumer, subject, rows_max), c.gap_records, truncated));
  EffectFilter of_subject;
  of_subject.consumer = c.consumer;
  of_subject.subject = std::string(subject);
  EVIDENT_RETURN_IF_ERROR(
      Take(snapshot.ListIntents(of_subject, 0, rows_max), c.effects, truncated));
  for (const EffectIntent& e : c.effects) {
    EffectWithLog& logged = c.effect_logs.emplace_back();
    EVIDENT_RETURN_IF_ERROR(Take(snapshot.IntentLogOf(e.key, rows_max), logged.log, truncated));
  }
  EVIDENT_RETURN_IF_ERROR(Take(snapshot.ListCompensations(c.consumer, subject, 0, rows_max),
                               c.compensations, truncated));
  EVIDENT_RETURN_IF_ERROR(
      Take(snapshot.CorrectionsOf(c.consumer, subject, rows_max), c.corrections, truncated));
  return Take(snapshot.EvidenceOf(c.consumer, subject, rows_max), c.evidence, truncated);
}

// Whether each conflicting input's report reached a relay (gaps.h: its id names the input).
Status ReadConflictReports(Snapshot& snapshot, std::string_view subject, ConsumerEvidence& c) {
  for (const QuarantinedInput& q : c.quarantined) {
    const QuarantineRecord& r = q.record;
    if (r.outcome != Outcome::kSameVersionConflict || !r.subject_version) continue;
    ConflictRouting routing{.quarantine_id = r.id,
                            .report_id = ConflictReportId(c.consumer, subject, *r.subject_version,
                                                          r.source, r.event_id)};
    EVIDENT_ASSIGN_OR_RETURN(
        const std::optional<OutboxRow> row,
        snapshot.FindOutbox(ReplayRequestSource(c.consumer), routing.report_id));
    routing.recorded = row.has_value();
    if (row) routing.sent_at_ms = row->sent_at_ms;
    c.conflict_reports.push_back(std::move(routing));
  }
  return Status::Ok();
}

}  // namespace

Result<EvidencePacket> ReadEvidence(Snapshot& snapshot, std::string_view subject,
                                    std::string_view consumer, int64_t rows_max) {
  EvidencePacket packet;
  packet.subject = std::string(subject);
  EVIDENT_ASSIGN_OR_RETURN(Rows<Projection> projections, snapshot.ProjectionsOf(subject, rows_max));
  EVIDENT_ASSIGN_OR_RETURN(Rows<QuarantineRecord> kept, snapshot.QuarantineOf(subject, rows_max));
  packet.truncated = projections.truncated || kept.truncated;
  std::set<std::string> consumers;
  for (const Projection& p : projections.rows) consumers.insert(p.consumer);
  std::vector<QuarantinedInput> quarantined;
  for (QuarantineRecord& k : kept.rows) {
    QuarantinedInput& q = quarantined.emplace_back();
    EVIDENT_RETURN_IF_ERROR(Take(snapshot.AuditOf(k.id, rows_max), q.audit, packet.truncated));
    q.record = std::move(k);
    if (q.record.consumer.empty()) {
      packet.unassigned.push_back(q);
    } else {
      consumers.insert(q.record.consumer);
    }
  }
  if (!consumer.empty()) {
    consumers = {std::string(consumer)};
    packet.unassigned.clear();
  }
  for (const std::string& id : consumers) {
    ConsumerEvidence c;
    c.consumer = id;
    EVIDENT_RETURN_IF_ERROR(ReadConsumer(snapshot, subject, rows_max, c, packet.truncated));
    for (const QuarantinedInput& q : quarantined) {
      if (q.record.consumer == id) c.quarantined.push_back(q);
    }
    EVIDENT_RETURN_IF_ERROR(ReadConflictReports(snapshot, subject, c));
    packet.consumers.push_back(std::move(c));
  }
  EVIDENT_ASSIGN_OR_RETURN(packet.retention, snapshot.LatestRetention());
  return packet;
}

Result<Gaps> ReadGaps(Snapshot& snapshot, int64_t rows_max) {
  EVIDENT_ASSIGN_OR_RETURN(Rows<DeferredEvent> deferred, snapshot.AllDeferred(rows_max));
  std::map<std::pair<std::string, std::string>, Gap> by_key;
  for (const DeferredEvent& d : deferred.rows) {
    Gap& g = by_key[{d.consumer, d.subject}];
    if (g.waiting_versions.empty()) {
      // expected_version is set below, from the projection as it is now.
      g = Gap{d.consumer, d.subject, d.route, 0, d.deadline_at_ms, d.received_at_ms, {}};
    }
    g.deadline_at_ms = std::min(g.deadline_at_ms, d.deadline_at_ms);
    g.oldest_received_at_ms = std::min(g.oldest_received_at_ms, d.received_at_ms);
    g.waiting_versions.push_back(d.subject_version);
  }
  Gaps out;
  out.truncated = deferred.truncated;
  for (auto& [key, g] : by_key) {  // what is missing now, not when the first event was deferred
    EVIDENT_ASSIGN_OR_RETURN(const std::optional<Projection> projection,
                             snapshot.FindProjection(g.consumer, g.subject));
    g.expected_version = ExpectedVersion(projection);
    std::sort(g.waiting_versions.begin(), g.waiting_versions.end());
    EVIDENT_ASSIGN_OR_RETURN(Rows<GapRecord> records,
                             snapshot.GapRecordsOf(g.consumer, g.subject, rows_max));
    // The record of this gap: the one made for its expected version, or an open one whose
    // range still covers it (some of that range arrived since, the rest is still missing).
    for (GapRecord& r : records.rows) {
      const bool covers = r.state != GapState::kClosed &&
                          r.expected_version <= g.expected_version &&
                          g.expected_version <= r.missing_to;
      if (r.expected_version == g.expected_version || covers) g.record = std::move(r);
    }
    out.gaps.push_back(std::move(g));
  }
  std::stable_sort(out.gaps.begin(), out.gaps.end(),
                   [](const Gap& a, const Gap& b) { return a.deadline_at_ms < b.deadline_at_ms; });
  return out;
}

}  // namespace evident
