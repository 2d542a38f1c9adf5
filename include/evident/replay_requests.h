// evident/replay_requests.h — the owner's side of a gap's `request-replay` route: answering the
// replay requests consumers send (gaps.h, kReplayRequestedType) with the events they miss.
//
// A consumer whose ordered projection waits at a gap past its deadline appends an
// `evident.replay.requested` event to its own outbox; its relay publishes it. The owner reads
// those requests (`evident replay-requests serve`) and, for a request naming a source it owns,
// publishes again every outbox row it still keeps of that source and subject from the first
// missing version on: the original bytes (same CloudEvents id: the consumer's ledger absorbs a
// repeat) under a message id of its own, "replay:<request id>:<seq>", so that the broker's
// duplicate window cannot swallow what it already saw once. The version of a row is the one read
// when it was appended (Outbox's subject_version_at, or the subjectversion attribute). Then it
// publishes the answer, `evident.replay.answered` (ReplayAnswerJson), which the consumer records
// on its gap: what was published again and which missing versions the owner no longer keeps
// (`gone`: sent rows deleted after the relay's --keep-sent, or never appended).
//
// A request is acknowledged to its source only once the publisher accepted every message of its
// answer: a crash in between answers it again (the same message ids). Requests for sources the
// owner does not own are acknowledged and counted, not answered.
//
// Thread-safety: ServeReplayRequests runs on the calling thread with a Store of its own.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "evident/cancel.h"
#include "evident/clock.h"
#include "evident/publisher.h"
#include "evident/relay.h"
#include "evident/source.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

// What one request asked and what the owner can answer.
struct ReplayAnswer {
  enum class Kind : uint8_t {
    kRepublished,  // every missing version is kept and published again (with the later ones)
    kPartlyGone,   // some missing versions are no longer kept; the kept ones are published
    kGone,         // none of the missing versions is kept
    kNotOurs,      // the request names a source this owner does not serve: not answered
    kRefused,      // not a replay request evident can read (reason in `error`): not answered
  };
  Kind kind = Kind::kRefused;
  std::string request_id, consumer, subject, owner_source;
  int64_t missing_from = 0, missing_to = 0;
  int64_t gap_from = 0;  // the consumer's gap record (its first missing version), echoed back
  std::vector<int64_t> republished;  // the versions published again, missing and later
  std::vector<int64_t> gone;         // missing versions the outbox no longer keeps
  bool truncated = false;            // more rows than rows_max: the first ones were published
  std::string error;                 // kRefused: why
};
std::string_view ReplayAnswerKindName(ReplayAnswer::Kind kind);  // "republished", "gone", ...

// The messages that answer one request: the rows published again, then the answer event.
struct ReplayPlan {
  ReplayAnswer answer;
  std::vector<OutgoingMessage> messages;
};

struct ReplayServeOptions {
  std::vector<std::string> owner_sources;  // the sources this owner answers for; at least one
  int64_t rows_max = 10000;                // outbox rows published again per request, at most
  int64_t until_idle_ms = -1;              // end once no request came for this long; -1 never
  // Start from the position the store keeps for the source (a file's requests answered by an
  // earlier run are skipped); a broker's durable consumer remembers it by itself.
  bool resume = false;
  int64_t publish_attempts_max = 8;  // per request, with backoff between, then the run fails
  Clock* clock = nullptr;            // null: the system clock
  const CancelToken* cancel = nullptr;
  std::FILE* log = nullptr;  // one line per request answered or skipped; may be null
};

struct ReplayServeSummary {
  int64_t requests = 0, republished = 0, gone = 0, not_ours = 0, refused = 0;
  int64_t messages = 0;  // rows published again
  bool stopped = false;
};

// Decides one request (the bytes of an `evident.replay.requested` event) against `snapshot`.
Result<ReplayPlan> PlanReplay(Snapshot& snapshot, std::string_view request_bytes,
                              const ReplayServeOptions& options, int64_t now_ms);

// Reads requests from `source` and answers each through a publisher from `open_publisher`, as
// above; the source's position is kept in `store` when the source has one to keep (a file).
Result<ReplayServeSummary> ServeReplayRequests(Store& store, Source& source,
                                               const PublisherFactory& open_publisher,
                                               const ReplayServeOptions& options);

}  // namespace evident
