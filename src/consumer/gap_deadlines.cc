// Gaps that act on their deadlines (evident/gaps.h): beside the ordering code that defers events
// and records the gaps (pipeline.cc), run by the consume loop, groups and `evident gaps check`.
#include <memory>
#include <string>
#include <vector>

#include "core/fnv1a.h"
#include "core/rfc3339.h"
#include "evident/evidence.h"
#include "evident/gaps.h"
#include "evident/retry.h"
#include "json/writer.h"

namespace evident {
namespace {

// The replay request of one gap: a CloudEvent whose id names what is missing now (the
// projection may have moved into the range since the gap opened: the versions below it are not
// asked for), so that the outbox too would refuse a second one. `gap_from` names the gap's
// record (its first missing version when it opened): the owner's answer carries it back.
OutboxRow ReplayRequest(const GapRecord& g, const Gap& gap, std::string_view owner_source,
                        int64_t now_ms, int64_t partition_count) {
  OutboxRow row;
  row.source = ReplayRequestSource(g.consumer);
  row.event_id = "replay-request:" + g.consumer + ":" + g.subject + ":" +
                 std::to_string(gap.expected_version) + "-" + std::to_string(g.missing_to);
  row.type = kReplayRequestedType;
  row.subject = g.subject;
  row.partition =
      static_cast<int64_t>(Fnv1a(kFnv1aOffset, g.subject) %
                           static_cast<uint64_t>(std::max<int64_t>(partition_count, 1)));
  row.created_at_ms = now_ms;
  json::Writer w(row.bytes);
  w.BeginObject().Field("specversion", "1.0").Field("id", row.event_id);
  w.Field("source", row.source).Field("type", row.type).Field("subject", row.subject);
  w.Field("time", rfc3339::FormatMs(now_ms)).Field("datacontenttype", "application/json");
  w.Key("data").BeginObject().Field("consumer", g.consumer).Field("subject", g.subject);
  w.Field("owner_source", owner_source);
  w.Key("missing_from").Int(gap.expected_version).Key("missing_to").Int(g.missing_to);
  w.Key("gap_from").Int(g.expected_version);
  w.Key("waiting_versions").BeginArray();
  for (const int64_t v : gap.waiting_versions) w.Int(v);
  w.EndArray().Field("deadline_at", rfc3339::FormatMs(g.deadline_at_ms));
  w.EndObject().EndObject();
  return row;
}

GapState StateOf(GapRoute route) {
  switch (route) {
    case GapRoute::kRequestReplay:
      return GapState::kRequested;
    case GapRoute::kManual:
      return GapState::kManual;
    case GapRoute::kWait:
      break;
  }
  return GapState::kReported;
}

// The owner the missing versions are asked of: the projection's, or (a subject whose first
// event waits) the source of the lowest waiting event.
Result<std::string> OwnerOf(Transaction& tx, const Gap& gap, const Projection& projection) {
  if (!projection.owner_source.empty()) return projection.owner_source;
  EVIDENT_ASSIGN_OR_RETURN(
      const std::optional<DeferredEvent> first,
      tx.FindDeferred(gap.consumer, gap.subject, gap.waiting_versions.front()));
  return first ? first->source : std::string();
}

// Acts on one overdue gap unless its record was acted on already, or it closed since the
// snapshot (the transaction sees the projection as it is now). The record the gap opened with
// (or the open one covering it) takes the act; a gap without one (deferred under an older
// layout) gets one now.
Status ActOn(Transaction& tx, const Gap& gap, int64_t now_ms, const GapCheckOptions& options,
             GapCheck& check) {
  EVIDENT_ASSIGN_OR_RETURN(std::optional<GapRecord> there,
                           tx.FindGap(gap.consumer, gap.subject, gap.expected_version));
  if (!there && gap.record && gap.record->state == GapState::kOpen) {
    // The open record covering the gap, read again in this transaction: a person may have
    // closed it since the snapshot.
    EVIDENT_ASSIGN_OR_RETURN(there,
                             tx.FindGap(gap.consumer, gap.subject, gap.record->expected_version));
  }
  if (there && there->state != GapState::kOpen) return Status::Ok();
  Projection now;
  EVIDENT_ASSIGN_OR_RETURN(const bool found, tx.ReadProjection(gap.consumer, gap.subject, now));
  if ((found ? now.version : 0) + 1 != gap.expected_version) return Status::Ok();
  GapRecord g = there ? *there
                      : GapRecord{.consumer = gap.consumer,
                                  .subject = gap.subject,
                                  .expected_version = gap.expected_version};
  g.missing_to = gap.waiting_versions.front() - 1;
  g.route = gap.route;
  g.state = StateOf(gap.route);
  g.deadline_at_ms = gap.deadline_at_ms;
  g.acted_at_ms = now_ms;
  g.waiting_versions = gap.waiting_versions;
  if (gap.route == GapRoute::kRequestReplay) {
    EVIDENT_ASSIGN_OR_RETURN(const std::string owner, OwnerOf(tx, gap, now));
    const OutboxRow request = ReplayRequest(g, gap, owner, now_ms, options.partition_count);
    g.request_event_id = request.event_id;
    EVIDENT_ASSIGN_OR_RETURN(const OutboxAppend appended, tx.AppendOutbox(request));
    if (appended.outcome == OutboxOutcome::kAppended) ++check.requested;
  } else {
    ++(gap.route == GapRoute::kManual ? check.manual : check.reported);
  }
  if (there) return tx.UpdateGap(g);
  return tx.InsertGap(g).status();
}

}  // namespace

Result<GapCheck> CheckGapDeadlines(Store& store, int64_t now_ms, const GapCheckOptions& options) {
  std::vector<Gap> overdue;
  std::vector<GapRecord> arrived;  // open records whose missing versions have arrived
  {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
    EVIDENT_ASSIGN_OR_RETURN(Gaps gaps, ReadGaps(*snapshot, options.deferred_rows_max));
    for (Gap& g : gaps.gaps) {
      // A gap exists while its expected version is below the lowest waiting one; one that has
      // a record (its own, or an open one covering it) was acted on.
      if (g.deadline_at_ms < now_ms && g.expected_version < g.waiting_versions.front() &&
          (!g.record || g.record->state == GapState::kOpen)) {
        overdue.push_back(std::move(g));
      }
    }
    EVIDENT_ASSIGN_OR_RETURN(Rows<GapRecord> open, snapshot->OpenGapRecords());
    for (GapRecord& r : open.rows) {
      EVIDENT_ASSIGN_OR_RETURN(const std::optional<Projection> p,
                               snapshot->FindProjection(r.consumer, r.subject));
      if (ExpectedVersion(p) > r.missing_to) arrived.push_back(std::move(r));
    }
  }
  GapCheck check;
  if (overdue.empty() && arrived.empty()) return check;
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
  std::vector<std::string> consumers;  // their locks all at once (Transaction::WillDecide)
  for (const Gap& gap : overdue) consumers.push_back(gap.consumer);
  for (const GapRecord& r : arrived) consumers.push_back(r.consumer);
  EVIDENT_RETURN_IF_ERROR(tx->WillDecide(consumers));
  for (const Gap& gap : overdue) EVIDENT_RETURN_IF_ERROR(ActOn(*tx, gap, now_ms, options, check));
  for (const GapRecord& r : arrived) {
    EVIDENT_ASSIGN_OR_RETURN(const int64_t closed,
                             tx->CloseGaps(r.consumer, r.subject, r.missing_to,
                                           {.at_ms = now_ms,
                                            .how = GapClosedHow::kDrained,
                                            .cause = GapCause::kOutOfOrder,
                                            .by = "arrival",
                                            .note = ""}));
    check.closed += closed;
  }
  EVIDENT_RETURN_IF_ERROR(tx->Commit());
  return check;
}

Result<int64_t> ResolveGap(Store& store, std::string_view consumer, std::string_view subject,
                           const std::string& by, const std::string& note, Clock& clock) {
  if (by.empty()) return Status::InvalidArgument("say who resolves the gap (--by)");
  if (note.empty()) return Status::InvalidArgument("say how it was resolved (--note)");
  // A consumer's batch holds its lock (PostgreSQL) until it commits: a wait past the store's
  // lock timeout, or a conflict, is tried again with backoff before the resolve gives up.
  const RetryPolicy policy = RetryingConflicts(RetryPolicy{});
  int64_t closed = 0;
  EVIDENT_RETURN_IF_ERROR(RetryBusy(policy, clock, nullptr, [&]() -> Status {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
    EVIDENT_ASSIGN_OR_RETURN(closed, tx->CloseGaps(consumer, subject, INT64_MAX,
                                                   {.at_ms = clock.NowMs(),
                                                    .how = GapClosedHow::kResolved,
                                                    .cause = GapCause::kMissing,
                                                    .by = by,
                                                    .note = note}));
    if (closed == 0) {
      return Status::NotFound("no open gap record of " + std::string(consumer) + " / " +
                              std::string(subject));
    }
    return tx->Commit();
  }));
  return closed;
}

}  // namespace evident
