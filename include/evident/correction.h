// evident/correction.h — a person's correction of a projection, with the facts kept first (seed
// 002: "a manual correction of the projection is acceptable only after these facts are saved
// and with a clear recovery route").
//
// A correction sets one consumer's projection of one subject to a version above its present one,
// with a state and copied fields a person states, in one store transaction that also:
//   - keeps the projection before and after, who, why and what allowed it (ProjectionCorrection);
//   - closes the subject's gap records at or below the new version, as `corrected` (or
//     `skipped` when waiting events fell at or below it), cause `missing`;
//   - re-examines the deferred events: one at or below the new version can never apply (its
//     receipt is removed and it is quarantined as stale, with its bytes, so that a redelivery is
//     decided afresh); the next version, if it waits, applies now with its successors, as after
//     any applied event (their effects are theirs: the correction itself intends nothing).
// It is allowed only while the subject has an open gap or a quarantined input of that consumer,
// or when forced (recorded as such). Guards read the corrected projection like any other.
//
// Thread-safety: as Pipeline (one thread at a time).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "evident/clock.h"
#include "evident/consumer.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

inline constexpr size_t kCorrectionByBytesMax = 256;
inline constexpr size_t kCorrectionNoteBytesMax = 4096;
inline constexpr size_t kCorrectionFieldsMax = 64;

struct CorrectionRequest {
  std::string consumer, subject;
  int64_t version = 0;  // above the projection's present version
  std::string state;    // non-empty
  // (JSON Pointer of a member the consumer's projection copies, its new value as JSON text):
  // the projection's field named by the pointer's last token takes the value.
  std::vector<std::pair<std::string, std::string>> fields;
  std::string by, note;  // required
  bool force = false;    // allowed without an open gap or a quarantined input
  bool dry_run = false;  // everything decided, nothing committed
};

struct CorrectionResult {
  ProjectionCorrection correction;  // before, after, basis (seq 0 on a dry run)
  int64_t gaps_closed = 0;
  // What the re-examination decided: waiting events set aside as stale, the next ones drained.
  std::vector<Decision> decisions;
  bool committed = false;
};

// kInvalidArgument for a request that cannot be carried out as stated (an unknown consumer, a
// field its projection does not copy, JSON that does not parse, empty by/note/state, texts over
// their bounds); kFailedPrecondition when the version is not above the projection's, or nothing
// allows the correction (no open gap, no quarantined input, not forced). Busy stores and write
// conflicts are retried with `clock`'s backoff.
Result<CorrectionResult> CorrectProjection(Pipeline& pipeline, Store& store,
                                           const CorrectionRequest& request, Clock& clock);

}  // namespace evident
