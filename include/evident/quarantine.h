// evident/quarantine.h — what an operator does with quarantined inputs: replay them through the
// consumer pipeline once the contract (or the producer) is fixed, or discard them; each act
// leaves an audit entry (who, when, note, outcome) that the evidence shows.
//
// A replay sends each selected record's original bytes through the same pipeline as `consume`,
// with the configuration it is given (today's contracts), for the record's own consumer (every
// consumer for a record refused before one was chosen), in the order the records were first
// seen. Ids, sources and versions are never changed: the bytes are the bytes. Per record:
//   - applied or deferred now: the record becomes `replayed`;
//   - already applied since (the ledger holds the input): `duplicate`, the record `replayed`
//     (nothing is left to do for it);
//   - refused again: the record stays as it was, with one more attempt and the new reason;
//   - a record refused before any consumer was chosen that now passes the envelope and routing
//     becomes `replayed`; a consumer that refuses it opens its own record.
// Records commit in batches: each batch's decisions, statuses and audit entries in one
// transaction, so a replay killed half-way leaves whole batches, and running it again goes on
// from the records still open (the ledger turns anything applied twice into a duplicate).
// A dry run decides everything in one transaction and rolls it back.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "evident/cancel.h"
#include "evident/clock.h"
#include "evident/consumer.h"
#include "evident/env.h"
#include "evident/retry.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

struct ReplayOptions {
  // Which records. With ids, those records whatever their status (an id that is no record:
  // kNotFound, nothing replayed); without, the records of the filter's consumer and reason
  // (unset: all) whose status is the filter's (unset: open).
  QuarantineFilter select;
  std::string by, note;  // who asked, and why: both required (kInvalidArgument when empty)
  bool dry_run = false;
  // Records per transaction (1 .. 10000).
  int64_t batch_count_max = 256;
  // One NDJSON line per record, written and flushed after its batch commits (for a dry run, at
  // the end); may be null. The caller closes it.
  WritableFile* outcomes = nullptr;
  // A progress line here (ProgressBar, evident/progress.h): the records decided, and a bar of
  // them when the selection names its records (select.ids); null: none.
  std::FILE* progress = nullptr;
  Clock* clock = nullptr;               // null: the system clock
  const CancelToken* cancel = nullptr;  // checked between batches
  RetryPolicy busy_retry;               // a busy store when a batch begins
};

struct ReplaySummary {
  int64_t records = 0;     // records replayed (decided)
  int64_t replayed = 0;    // now applied or deferred
  int64_t duplicates = 0;  // applied since
  int64_t refused = 0;     // refused again, still quarantined
  int64_t batches = 0;     // transactions committed (0 for a dry run)
  bool stopped = false;    // cut short by the cancel token (whole batches only)
};

Result<ReplaySummary> ReplayQuarantine(Pipeline& pipeline, Store& store,
                                       const ReplayOptions& options);

// Closes open records without applying them, each with an audit entry, in one transaction: all
// of them or none. A record that does not exist is kNotFound; one that is not open,
// kFailedPrecondition. `by` and `note` are required.
Result<int64_t> DiscardQuarantine(Store& store, const std::vector<int64_t>& ids,
                                  const std::string& by, const std::string& note, int64_t now_ms);

// A record as `quarantine list|show --format json` prints it (no newline); the original bytes
// (base64) only with `with_bytes`.
void AppendQuarantineJson(const QuarantineRecord& record, bool with_bytes, std::string& out);

}  // namespace evident
