// evident/retry.h — retrying an operation that failed transiently, with capped exponential
// backoff.
//
// A busy store (another process holds the SQLite write lock past busy_timeout_ms, a PostgreSQL
// serialization failure) reports kUnavailable; the caller runs the whole transaction again after
// a wait. The waits go through a Clock, so under a ManualClock a test knows every wait exactly.
// There is no jitter, for the same reason: a simulation replays the same waits from the same
// seed. (Should many consumers ever contend for one server, add jitter from a seeded source.)
//
// Thread-safety: RetryBusy is reentrant; `op` runs on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "evident/cancel.h"
#include "evident/clock.h"
#include "evident/status.h"

namespace evident {

struct RetryPolicy {
  // Attempts in all, the first included (>= 1; 1 never retries).
  int attempts_max = 8;
  // The wait after the first failed attempt; each later wait doubles, up to backoff_max_ms.
  // With the defaults the waits are 10, 20, ..., 640 ms: 1.27 s in all before giving up.
  int64_t backoff_initial_ms = 10;
  int64_t backoff_max_ms = 1000;
  // The codes worth another attempt; any other code returns at once. A retryable projection
  // write conflict joins this list with its own code.
  std::vector<Code> retryable_codes = {Code::kUnavailable};
};

// `policy`, retrying a write conflict too (kAborted: a deadlock, a serialization failure, a
// conflicting writer), for work that is rolled back whole and decided again.
inline RetryPolicy RetryingConflicts(RetryPolicy policy) {
  policy.retryable_codes.push_back(Code::kAborted);
  return policy;
}

// The wait after failed attempt number `attempt` (1-based): backoff_initial_ms doubled
// attempt - 1 times, capped at backoff_max_ms.
int64_t RetryBackoffMs(const RetryPolicy& policy, int attempt);

// Runs `op` until it succeeds, returns a code outside policy.retryable_codes, has run
// policy.attempts_max times, or `cancel` (may be null) is set. The first attempt always runs:
// cancellation stops the retrying, not an operation the caller already decided to start. Waits
// go through `clock` in slices, so a cancellation cuts a long wait short.
//
// Returns OK, or the last error with its code. Its message ends with " (after N attempts)" when
// more than one attempt ran, or " (cancelled after N attempts)" when the token stopped the
// retrying; a first attempt's error that is not retried is returned unchanged.
Status RetryBusy(const RetryPolicy& policy, Clock& clock, const CancelToken* cancel,
                 const std::function<Status()>& op);

// Waits `duration_ms` through `clock` in short slices; false when `cancel` (may be null) was set
// before the wait ended, which cuts the wait short.
bool SleepUnlessCancelled(Clock& clock, int64_t duration_ms, const CancelToken* cancel);

}  // namespace evident
