// evident/gaps.h — gaps that act on their deadlines. A version gap (an ordered consumer waits
// for versions that have not arrived, with later ones deferred) has a deadline and a route from
// the consumer contract. Once the deadline passes, CheckGapDeadlines acts on the gap once:
//   request-replay  appends an `evident.replay.requested` event to the store's outbox (the relay
//                   publishes it to the owner): consumer, subject and the missing version range;
//   manual          opens a record for a person (listed by `evident gaps`, closed by the
//                   missing versions arriving, a replay included, or by `evident gaps resolve`);
//   wait            only records that the deadline passed.
// Each act is a GapRecord, keyed by (consumer, subject, first missing version) and written in the
// same transaction as the outbox row: however often the deadline is checked, and across
// restarts, a gap is acted on once (while part of its range arrives, the open record still
// covers the rest). A record closes when all its missing versions have arrived (the pipeline
// closes it as it applies the last of them) or when a person resolves it.
#pragma once

#include <cstdint>
#include <string>

#include "evident/clock.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

// The type of the replay-request event, and the source it is sent from for consumer `consumer`
// ("evident://consumers/<consumer>"). Its data: consumer, subject, owner_source (the source
// whose outbox holds the missing versions), missing_from, missing_to, waiting_versions,
// deadline_at.
inline constexpr const char* kReplayRequestedType = "evident.replay.requested";
std::string ReplayRequestSource(std::string_view consumer);

// The owner's answer to a replay request (`evident replay-requests serve`), sent from
// "evident://owners/<owner source>"; its data names the request, the consumer and subject, the
// versions published again and the ones no longer kept. A consumer records it on the gap.
inline constexpr const char* kReplayAnsweredType = "evident.replay.answered";

// A same-version conflict reported to the subject's owner, appended to the deciding consumer's
// outbox in the deciding transaction (sent from ReplayRequestSource(consumer)); its data:
// consumer, subject, version, owner_source, reason, and of the event that holds the version
// and of the conflicting one, source, id and payload digest.
inline constexpr const char* kConflictDetectedType = "evident.conflict.detected";
// The report's id: one report per conflicting event and version.
std::string ConflictReportId(std::string_view consumer, std::string_view subject, int64_t version,
                             std::string_view source, std::string_view event_id);

struct GapCheckOptions {
  // Outbox partitions (outbox.h): a request lands in the partition of its subject.
  int64_t partition_count = 1;
  // Deferred events read per check, by deadline: a check acts on the gaps of these rows only
  // (a store with more deferred events than this acts on the others once earlier ones drain).
  int64_t deferred_rows_max = kReadRowsMaxDefault;
};

struct GapCheck {
  int64_t requested = 0;  // replay requests appended
  int64_t manual = 0;     // records opened for a person
  int64_t reported = 0;   // overdue gaps of route wait
  int64_t closed = 0;     // records whose missing versions have arrived since
};

// Acts, at `now_ms`, on every gap whose deadline has passed and that has no record yet, and
// closes the records whose gap has closed. One snapshot read, then one transaction.
Result<GapCheck> CheckGapDeadlines(Store& store, int64_t now_ms,
                                   const GapCheckOptions& options = {});

// A person closes the open records of (consumer, subject), stamped with `clock`'s time. kNotFound
// when there is none; `by` and `note` are required. A busy store, a lock wait past its timeout
// or a write conflict (a consumer's batch holding the records) is tried again with backoff
// (`clock` sleeps) before it gives up.
Result<int64_t> ResolveGap(Store& store, std::string_view consumer, std::string_view subject,
                           const std::string& by, const std::string& note, Clock& clock);

}  // namespace evident
